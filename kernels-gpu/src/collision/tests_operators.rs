//! Invariants of the operators of [`super::mrt`] and [`super::regularized`]:
//! conservation, the forms they reduce to, and exact scaling in storage units.

use super::mrt::RateClass;
use super::*;
use crate::cell::{equilibrium, moments};
use crate::lattice::{D2Q9, D3Q19, D3Q27};
use crate::regularized::{stress, stress_part};

fn force_of<L: Lattice<Q>, const Q: usize>() -> [f64; 3] {
    [1e-4, 2e-4, if L::D == 3 { -1e-4 } else { 0.0 }]
}

/// An equilibrium with a non-equilibrium part in every moment.
fn perturbed<L: Lattice<Q>, const Q: usize>() -> [f64; Q] {
    let mut f = equilibrium::<L, Q, f64>(1.02, [0.04, -0.03, if L::D == 3 { 0.02 } else { 0.0 }]);
    for i in 0..Q {
        f[i] += 1e-3 * ((i * 5 % 7) as f64 - 3.0) * L::W[i];
    }
    f
}

fn collide<L: Lattice<Q>, const Q: usize, C: Collision<f64>>(c: &C, f: &mut [f64; Q], force: Option<[f64; 3]>) {
    match force {
        Some(force) => c.collide::<L, Q, true>(f, force, 1.0),
        None => c.collide::<L, Q, false>(f, [0.0; 3], 1.0),
    };
}

fn les(tau: f64, c: f64) -> Les<f64> {
    Les { tau, factor: regularized::smagorinsky_factor(c) }
}

/// Mass kept, momentum changed by exactly the force (round-off of a few
/// ulp of the populations' size).
fn conserves<L: Lattice<Q>, const Q: usize, C: Collision<f64>>(c: &C, name: &str) {
    let force = force_of::<L, Q>();
    let mut f = perturbed::<L, Q>();
    let (r0, j0) = moments::<L, Q, f64>(&f);
    collide::<L, Q, C>(c, &mut f, Some(force));
    let (r1, j1) = moments::<L, Q, f64>(&f);
    assert!((r1 - r0).abs() < 1e-15, "{} {name}: mass {r0} -> {r1}", L::NAME);
    for a in 0..3 {
        assert!((j1[a] - j0[a] - force[a]).abs() < 1e-15, "{} {name}: momentum {a}", L::NAME);
    }
}

/// Largest difference between two population sets.
fn max_diff<const Q: usize>(a: &[f64; Q], b: &[f64; Q]) -> f64 {
    (0..Q).map(|i| (a[i] - b[i]).abs()).fold(0.0, f64::max)
}

/// Every operator and lattice: conservation, and the reductions the
/// operators promise, within round-off bounds stated with each.
fn operators<L: Lattice<Q>, const Q: usize>() {
    let tau = 0.8;
    conserves::<L, Q, _>(&Mrt::published(tau, L::NAME), "MRT");
    conserves::<L, Q, _>(&Regularized { omega: 1.0 / tau, les: les(tau, 0.0) }, "regularized");
    conserves::<L, Q, _>(&Regularized { omega: 1.0 / tau, les: les(tau, 0.16) }, "regularized LES");
    conserves::<L, Q, _>(&Smagorinsky { les: les(tau, 0.16) }, "Smagorinsky");

    let basis = L::MOMENTS;
    for omega in [1.0 / 0.55, 1.0, 1.0 / 0.8, 1.0 / 3.0] {
        for force in [None, Some(force_of::<L, Q>())] {
            let bgk = |mut f: [f64; Q]| {
                collide::<L, Q, _>(&Bgk { omega }, &mut f, force);
                f
            };
            let start = perturbed::<L, Q>();
            let want = bgk(start);
            // MRT at equal rates. D2Q9 and D3Q19 take BGK's update and
            // correct it by signed zeros: bit for bit. D3Q27 relaxes in
            // moment space and comes back; each moment sums Q terms with
            // integer weights up to |M|max and the way back as many: a
            // bound of 4 Q |M|max^2 ulp of the populations' size.
            let mut f = start;
            collide::<L, Q, _>(&Mrt::all(omega), &mut f, force);
            if Q == 27 {
                let m_max = basis.rows.iter().flatten().map(|m| m.abs()).max().unwrap() as f64;
                let size = start.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                let bound = 4.0 * Q as f64 * m_max * m_max * f64::EPSILON * size;
                assert!(max_diff(&f, &want) < bound, "{} omega {omega}: MRT at equal rates is not BGK", L::NAME);
            } else {
                assert_eq!(
                    f.map(f64::to_bits),
                    want.map(f64::to_bits),
                    "{} omega {omega}: MRT at equal rates",
                    L::NAME
                );
            }
            // The regularized state (equilibrium plus the stress's part)
            // has no ghost part to drop: there the regularized operator is BGK.
            let (rho, u) = {
                let (r, j) = moments::<L, Q, f64>(&start);
                (1.0 + r, j.map(|v| v / (1.0 + r)))
            };
            let feq = equilibrium::<L, Q, f64>(rho, u);
            let neq: [f64; Q] = core::array::from_fn(|i| start[i] - feq[i]);
            let part = stress_part::<L, Q, f64>(&stress::<L, Q, f64>(&neq));
            let regular: [f64; Q] = core::array::from_fn(|i| feq[i] + part[i]);
            if force.is_none() {
                let mut f = regular;
                collide::<L, Q, _>(&Regularized { omega, les: les(1.0 / omega, 0.0) }, &mut f, None);
                assert!(
                    max_diff(&f, &bgk(regular)) < 1e-17,
                    "{} omega {omega}: regularized on a regular state",
                    L::NAME
                );
            }
            // At rate 1 every operator leaves the equilibrium (and half the source).
            if omega == 1.0 {
                let mut f = start;
                collide::<L, Q, _>(&Regularized { omega, les: les(1.0, 0.0) }, &mut f, force);
                assert!(max_diff(&f, &want) < 1e-17, "{}: regularized at rate 1", L::NAME);
            }
            // Smagorinsky with a zero constant: tau_eff = tau exactly (the
            // correctly rounded square root of tau^2 is tau), and at that
            // rate it is BGK's update, bit for bit.
            let tau = 1.0 / omega;
            let mut f = start;
            collide::<L, Q, _>(&Smagorinsky { les: les(tau, 0.0) }, &mut f, force);
            let mut at_tau = start;
            collide::<L, Q, _>(&Bgk { omega: 1.0 / tau }, &mut at_tau, force);
            assert_eq!(
                f.map(f64::to_bits),
                at_tau.map(f64::to_bits),
                "{} omega {omega}: Smagorinsky at C = 0",
                L::NAME
            );
        }
    }
    // Smagorinsky relaxes at the rate of the closed form, with the strain
    // taken from the stress of `f - feq` less the force's share.
    let (c_s, tau) = (0.17, 0.52);
    let force = force_of::<L, Q>();
    let start = perturbed::<L, Q>();
    let (r, j) = moments::<L, Q, f64>(&start);
    let rho = 1.0 + r;
    let u: [f64; 3] = core::array::from_fn(|a| (j[a] + 0.5 * force[a]) / rho);
    let feq = equilibrium::<L, Q, f64>(rho, u);
    let mut pi = [[0.0; 3]; 3];
    for i in 0..Q {
        for a in 0..3 {
            for b in 0..3 {
                pi[a][b] += (L::C[i][a] * L::C[i][b]) as f64 * (start[i] - feq[i]);
            }
        }
    }
    let mut norm2 = 0.0;
    for a in 0..3 {
        for b in 0..3 {
            let p = pi[a][b] + 0.5 * (u[a] * force[b] + u[b] * force[a]);
            norm2 += p * p;
        }
    }
    let tau_eff = 0.5 * (tau + (tau * tau + 18.0 * 2f64.sqrt() * c_s * c_s * norm2.sqrt() / rho).sqrt());
    assert!(tau_eff > tau + 1e-4, "{}: the test state has too little strain", L::NAME);
    let mut want = start;
    collide::<L, Q, _>(&Bgk { omega: 1.0 / tau_eff }, &mut want, Some(force));
    let mut f = start;
    collide::<L, Q, _>(&Smagorinsky { les: les(tau, c_s) }, &mut f, Some(force));
    assert!(max_diff(&f, &want) < 1e-16, "{}: Smagorinsky's rate", L::NAME);
    // The regularized operator drops the ghosts: its output is equilibrium
    // plus a stress part (plus half the source), so regularizing it again
    // changes nothing.
    let mut f = start;
    collide::<L, Q, _>(&Regularized { omega: 1.0 / tau, les: les(tau, 0.0) }, &mut f, None);
    let (r, j) = moments::<L, Q, f64>(&f);
    let feq = equilibrium::<L, Q, f64>(1.0 + r, j.map(|v| v / (1.0 + r)));
    let neq: [f64; Q] = core::array::from_fn(|i| f[i] - feq[i]);
    let part = stress_part::<L, Q, f64>(&stress::<L, Q, f64>(&neq));
    for i in 0..Q {
        assert!((neq[i] - part[i]).abs() < 1e-17, "{}: regularized output has a ghost part", L::NAME);
    }
    // MRT's ghost rates act: at the published rates it differs from BGK.
    assert!(basis.class.iter().any(|&c| c == RateClass::Ghost || c == RateClass::Fourth));
    let (mut a, mut b) = (start, start);
    collide::<L, Q, _>(&Mrt::published(tau, L::NAME), &mut a, None);
    collide::<L, Q, _>(&Bgk { omega: 1.0 / tau }, &mut b, None);
    assert!(max_diff(&a, &b) > 1e-6, "{}: MRT at the published rates is BGK", L::NAME);
}

#[test]
fn operators_conserve_and_reduce_to_bgk() {
    operators::<D2Q9, 9>();
    operators::<D3Q19, 19>();
    operators::<D3Q27, 27>();
}

/// Colliding populations given times a power of two (the 16-bit kernels'
/// storage units) gives exactly that multiple of the unscaled result.
fn scaled<L: Lattice<Q>, const Q: usize, C: Collision<f32>>(c: &C, name: &str) {
    let mut f = equilibrium::<L, Q, f32>(1.02, [0.04, -0.03, if L::D == 3 { 0.02 } else { 0.0 }]);
    for i in 0..Q {
        f[i] += 1e-3 * ((i * 5 % 7) as f32 - 3.0) * L::W[i] as f32;
    }
    let scale = 32768.0f32;
    let force = [3e-5, -2e-5, if L::D == 3 { 1e-5 } else { 0.0 }];
    let (mut a, mut b) = (f, f.map(|v| v * scale));
    c.collide::<L, Q, true>(&mut a, force, 1.0);
    c.collide::<L, Q, true>(&mut b, force, scale);
    for i in 0..Q {
        assert_eq!((a[i] * scale).to_bits(), b[i].to_bits(), "{} {name} population {i}", L::NAME);
    }
}

fn all_scaled<L: Lattice<Q>, const Q: usize>() {
    let mrt: Mrt<f32> = Mrt::published(0.8, L::NAME).cast();
    scaled::<L, Q, _>(&mrt, "MRT");
    let les = Les { tau: 0.55f32, factor: regularized::smagorinsky_factor(0.17) as f32 };
    scaled::<L, Q, _>(&Regularized { omega: 1.0 / 0.55f32, les }, "regularized LES");
    scaled::<L, Q, _>(&Smagorinsky { les }, "Smagorinsky");
}

#[test]
fn operators_in_storage_units_are_exact() {
    all_scaled::<D2Q9, 9>();
    all_scaled::<D3Q19, 19>();
    all_scaled::<D3Q27, 27>();
}
