//! Regularized open boundaries (Latt, Chopard, Malaspinas, Deville &
//! Michler 2008), as pure functions on a cell's populations.
//!
//! An equilibrium open boundary replaces a cell's populations by the
//! equilibrium of its density and velocity, dropping the non-equilibrium
//! part that carries the viscous stress: a first-order error. The
//! regularized boundary keeps that part. Each population arriving from
//! outside the domain (unknown) is taken as its opposite's non-equilibrium
//! part on top of its own equilibrium, `f_i = feq_i + fneq_opp(i)` (bounce-back
//! of the non-equilibrium part, exact for the even, stress-carrying part);
//! from the non-equilibrium parts the stress `Pi = sum_i c_i c_i fneq_i`
//! follows, and every population is rebuilt from the density, the velocity
//! and that stress alone,
//!
//! `f_i = feq_i(rho, u) + w_i / (2 c_s^4) Q_i : Pi`, with `Q_i = c_i c_i - c_s^2 I`,
//!
//! which is the state of a cell in the Navier-Stokes limit (Chapman-Enskog
//! to first order). The cell then collides like any fluid cell.
//!
//! Populations are shifted by their weights (see [`crate::cell`]); the
//! non-equilibrium parts are differences of shifted values, so the shift
//! cancels.

use crate::cell::{dot_c, equilibrium};
use crate::collision::{Collision, Trt};
use crate::lattice::{opposite, Lattice};
use crate::real::Real;

/// The components of a symmetric tensor, as index pairs: `xx, yy, zz, xy, xz, yz`.
pub(crate) const PAIRS: [(usize, usize); 6] = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)];

/// Component `k` ([`PAIRS`]) of `c c` for an integer velocity `c`.
#[inline(always)]
const fn cc(c: [i32; 3], k: usize) -> i32 {
    c[PAIRS[k].0] * c[PAIRS[k].1]
}

/// Adds `sign * v` to `s` for a constant `sign` of -1, 0 or 1, with no multiplication.
#[inline(always)]
fn add_signed<T: Real>(s: &mut T, sign: i32, v: T) {
    if sign == 1 {
        *s += v;
    } else if sign == -1 {
        *s -= v;
    }
}

/// `sum_i c_i c_i n_i` (`PAIRS`) of a cell's populations (or their
/// non-equilibrium parts) `n`, per opposite pair as [`boundary_stress`].
#[inline(always)]
pub fn stress<L: Lattice<Q>, const Q: usize, T: Real>(n: &[T; Q]) -> [T; 6] {
    let mut pi = [-T::ZERO; 6];
    let mut a = 1;
    while a < Q {
        let pair = n[a] + n[opposite(a)];
        for k in 0..6 {
            add_signed(&mut pi[k], cc(L::C[a], k), pair);
        }
        a += 2;
    }
    pi
}

/// Non-equilibrium stress `Pi = sum_i c_i c_i (f_i - feq_i)` of a boundary
/// cell with inward normal `normal`, components as `PAIRS`, taking each
/// population with `c_i . normal > 0` (unknown: it arrives from outside) as
/// its opposite's non-equilibrium part. `c c` is even in `c`, so per opposite
/// pair `(a, b)` the stress takes `fneq_a + fneq_b`, which is `2 fneq` of the
/// known one where one of the two is unknown.
#[inline(always)]
pub fn boundary_stress<L: Lattice<Q>, const Q: usize, T: Real>(f: &[T; Q], feq: &[T; Q], normal: [T; 3]) -> [T; 6] {
    let mut pi = [-T::ZERO; 6];
    let mut a = 1;
    while a < Q {
        let b = opposite(a);
        let (na, nb) = (f[a] - feq[a], f[b] - feq[b]);
        let cn = dot_c(L::C[a], normal);
        let pair = if cn > T::ZERO {
            nb + nb
        } else if cn < T::ZERO {
            na + na
        } else {
            na + nb
        };
        for k in 0..6 {
            add_signed(&mut pi[k], cc(L::C[a], k), pair);
        }
        a += 2;
    }
    pi
}

/// The non-equilibrium part that a stress `pi` (`PAIRS`) gives population
/// `i`: `w_i / (2 c_s^4) Q_i : Pi = w_i (9/2 c_i.Pi.c_i - 3/2 tr Pi)` (with
/// `c_s^2 = 1/3`). It is even in `c`: opposite populations get the same.
#[inline(always)]
pub fn stress_part<L: Lattice<Q>, const Q: usize, T: Real>(pi: &[T; 6]) -> [T; Q] {
    let rest = T::from_f64(-1.5) * (pi[0] + pi[1] + pi[2]);
    let mut out = [T::from_f64(L::W[0]) * rest; Q];
    let mut a = 1;
    while a < Q {
        let (mut diagonal, mut off) = (-T::ZERO, -T::ZERO);
        for k in 0..3 {
            add_signed(&mut diagonal, cc(L::C[a], k), pi[k]);
            add_signed(&mut off, cc(L::C[a], k + 3), pi[k + 3]);
        }
        // c.Pi.c = diagonal + 2 off.
        let cpc = T::from_f64(4.5).mul_add(diagonal, T::from_f64(9.0).mul_add(off, rest));
        out[a] = T::from_f64(L::W[a]) * cpc;
        out[opposite(a)] = out[a];
        a += 2;
    }
    out
}

/// The regularized state of a boundary cell with inward normal `normal`
/// from the (unscaled, shifted) populations `f` that arrived, for density
/// `rho` and velocity `u`: `feq(rho, u)` plus the non-equilibrium part of the
/// stress [`boundary_stress`]. The populations with `c . normal > 0` are not
/// read. It has density `rho` and momentum `rho u`.
#[inline(always)]
pub fn regularized<L: Lattice<Q>, const Q: usize, T: Real>(f: &[T; Q], rho: T, u: [T; 3], normal: [T; 3]) -> [T; Q] {
    let feq = equilibrium::<L, Q, T>(rho, u);
    let neq = stress_part::<L, Q, T>(&boundary_stress::<L, Q, T>(f, &feq, normal));
    // A loop, not `array::from_fn`, which is not always inlined (see `Trt`).
    let mut f = feq;
    for i in 0..Q {
        f[i] += neq[i];
    }
    f
}

/// The post-collision populations of a regularized boundary cell: the
/// [`regularized`] state relaxed at `rates`, with Guo forcing when `force` is
/// not zero (as the bulk kernels collide). The bulk's BGK arrives here as TRT
/// with equal rates, which gives BGK's populations bit for bit. Without a
/// force the regularized non-equilibrium part is even in `c`, so TRT's odd
/// rate acts only on round-off and the cell relaxes as BGK at `omega_plus`
/// would; with a force, the odd rate relaxes the force's share as in the bulk.
#[inline(always)]
pub fn regularized_collided<L: Lattice<Q>, const Q: usize, T: Real>(
    f: &[T; Q],
    rho: T,
    u: [T; 3],
    normal: [T; 3],
    rates: &Trt<T>,
    force: [T; 3],
) -> [T; Q] {
    let mut g = regularized::<L, Q, T>(f, rho, u, normal);
    if force[0] == T::ZERO && force[1] == T::ZERO && force[2] == T::ZERO {
        rates.collide::<L, Q, false>(&mut g, force, T::ONE);
    } else {
        rates.collide::<L, Q, true>(&mut g, force, T::ONE);
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::moments;
    use crate::lattice::{D2Q9, D3Q19, D3Q27};

    /// Slow, obvious reference: `feq_i + w_i / (2 c_s^4) (c_i c_i - c_s^2 I) : Pi`
    /// with `Pi` summed over every population, the unknown ones replaced
    /// one by one by bounce-back of their opposite's non-equilibrium part.
    fn reference<L: Lattice<Q>, const Q: usize>(f: &[f64; Q], rho: f64, u: [f64; 3], normal: [i32; 3]) -> [f64; Q] {
        let feq = equilibrium::<L, Q, f64>(rho, u);
        let unknown = |i: usize| (0..3).map(|a| L::C[i][a] * normal[a]).sum::<i32>() > 0;
        let fneq: [f64; Q] =
            core::array::from_fn(|i| if unknown(i) { f[opposite(i)] - feq[opposite(i)] } else { f[i] - feq[i] });
        let mut pi = [[0.0; 3]; 3];
        for i in 0..Q {
            for a in 0..3 {
                for b in 0..3 {
                    pi[a][b] += (L::C[i][a] * L::C[i][b]) as f64 * fneq[i];
                }
            }
        }
        let cs2 = 1.0 / 3.0;
        core::array::from_fn(|i| {
            let mut qpi = 0.0;
            for a in 0..3 {
                for b in 0..3 {
                    let q = (L::C[i][a] * L::C[i][b]) as f64 - if a == b { cs2 } else { 0.0 };
                    qpi += q * pi[a][b];
                }
            }
            feq[i] + L::W[i] / (2.0 * cs2 * cs2) * qpi
        })
    }

    /// Every face's inward normal in the lattice's dimension.
    fn normals<L: Lattice<Q>, const Q: usize>() -> impl Iterator<Item = [i32; 3]> {
        (0..L::D).flat_map(|a| {
            [1, -1].map(|s| {
                let mut n = [0; 3];
                n[a] = s;
                n
            })
        })
    }

    fn perturbed<L: Lattice<Q>, const Q: usize>(rho: f64, u: [f64; 3]) -> [f64; Q] {
        let mut f = equilibrium::<L, Q, f64>(rho, u);
        for i in 0..Q {
            f[i] += 1e-3 * ((i * 7 % 5) as f64 - 2.0) * L::W[i];
        }
        f
    }

    fn check<L: Lattice<Q>, const Q: usize>() {
        let (rho, u) = (1.02, [0.04, -0.03, if L::D == 3 { 0.02 } else { 0.0 }]);
        let f = perturbed::<L, Q>(rho, u);
        for normal in normals::<L, Q>() {
            let n = normal.map(|v| v as f64);
            let g = regularized::<L, Q, f64>(&f, rho, u, n);
            let want = reference::<L, Q>(&f, rho, u, normal);
            for i in 0..Q {
                assert!((g[i] - want[i]).abs() < 1e-16, "{} normal {normal:?} population {i}", L::NAME);
            }
            // Density and momentum are those given.
            let (r, j) = moments::<L, Q, f64>(&g);
            assert!((1.0 + r - rho).abs() < 1e-15, "{} normal {normal:?}: density", L::NAME);
            for a in 0..3 {
                assert!((j[a] - rho * u[a]).abs() < 1e-15, "{} normal {normal:?}: momentum", L::NAME);
            }
            // Unknown populations are not read.
            let mut h = f;
            for i in 1..Q {
                if dot_c(L::C[i], n) > 0.0 {
                    h[i] = 0.5;
                }
            }
            assert_eq!(regularized::<L, Q, f64>(&h, rho, u, n), g, "{} normal {normal:?}: read an unknown", L::NAME);
            // A regularized state is its own regularization: its
            // non-equilibrium part is even, so bounce-back restores it exactly.
            let again = regularized::<L, Q, f64>(&g, rho, u, n);
            for i in 0..Q {
                assert!((again[i] - g[i]).abs() < 1e-16, "{} normal {normal:?}: not a projection", L::NAME);
            }
        }
    }

    #[test]
    fn regularization_matches_the_tensor_formula() {
        check::<D2Q9, 9>();
        check::<D3Q19, 19>();
        check::<D3Q27, 27>();
    }

    /// Unforced, TRT relaxes a regularized state as BGK at `omega_plus` does:
    /// `feq + (1 - omega_plus) fneq`, whatever `omega_minus`.
    fn trt_relaxes_the_even_part<L: Lattice<Q>, const Q: usize>() {
        let (rho, u) = (0.99, [-0.02, 0.05, if L::D == 3 { -0.01 } else { 0.0 }]);
        let f = perturbed::<L, Q>(rho, u);
        let n = [1.0, 0.0, 0.0];
        let g = regularized::<L, Q, f64>(&f, rho, u, n);
        let feq = equilibrium::<L, Q, f64>(rho, u);
        let rates = Trt::from_tau_and_magic(0.8, 3.0 / 16.0);
        let post = regularized_collided::<L, Q, f64>(&f, rho, u, n, &rates, [0.0; 3]);
        for i in 0..Q {
            let want = feq[i] + (1.0 - rates.omega_plus) * (g[i] - feq[i]);
            assert!((post[i] - want).abs() < 1e-16, "{} population {i}", L::NAME);
        }
        // Forced: mass kept, momentum changed by the force.
        let force = [1e-4, -2e-4, if L::D == 3 { 1e-4 } else { 0.0 }];
        let post = regularized_collided::<L, Q, f64>(&f, rho, u, n, &rates, force);
        let (r, j) = moments::<L, Q, f64>(&post);
        assert!((1.0 + r - rho).abs() < 1e-15, "{}: forced density", L::NAME);
        for a in 0..3 {
            assert!((j[a] - rho * u[a] - force[a]).abs() < 1e-15, "{}: forced momentum", L::NAME);
        }
    }

    #[test]
    fn collision_of_the_regularized_state() {
        trt_relaxes_the_even_part::<D2Q9, 9>();
        trt_relaxes_the_even_part::<D3Q19, 19>();
        trt_relaxes_the_even_part::<D3Q27, 27>();
    }
}
