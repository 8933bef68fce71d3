//! MRT on d'Humieres et al.'s D3Q19 basis by velocity classes: the
//! correction of [`Mrt::relax_by_matrix`] (BGK at the shear rate plus one
//! term per moment whose rate differs), with each moment's sums shared
//! where the basis repeats itself, about 130 operations a cell where the
//! row-by-row sums take 200.
//!
//! - D3Q19's velocities are the rest one, the six along an axis and the
//!   twelve in the plane of two axes (named here by the axis they lack). Every
//!   even row (`e`, `epsilon`, `3 pi_xx`, `pi_ww`) depends on `c_x^2, c_y^2,
//!   c_z^2` alone, so it takes one value per class ([`ClassValues`]): its
//!   moment is a sum over 7 class sums, and most classes of a kind share
//!   their value, which then multiplies the kind's total.
//! - The moments are those of the non-equilibrium parts `n = feq - f`, which
//!   the BGK update forms anyway, pair by pair. Their density is zero, which
//!   takes the rest population out of every even row; their momentum is
//!   `F / 2`, so the energy fluxes `q_a = (5 c^2 - 9) c_a`, which are the
//!   momentum on the planes, need only the axis pair.
//! - Back, each class's even part is a shared base plus the rows that differ
//!   from it there; each plane pair's odd part is `c_a U_a + c_b U_b`, with
//!   `U_a = z_qa +- z_ma` one sum per axis and plane.

use super::{add_multiple, equilibrium_and_source, weight_moments, Mrt, RateClass, WeightMoments};
use crate::cell::{density_velocity_scaled, equilibrium_pair, equilibrium_parts, non_equilibrium_part, uf3, GuoSource};
use crate::lattice::{opposite, Lattice};
use crate::real::Real;

/// The rows of the basis ([`super::dhumieres`]) by position: the even
/// corrected ones, and the flux and ghost rows by axis.
const E: usize = 1;
const EPSILON: usize = 2;
const PI_XX: usize = 10;
const PI_WW: usize = 12;
const EVEN: [usize; 4] = [E, EPSILON, PI_XX, PI_WW];
const Q_ROWS: [usize; 3] = [4, 6, 8];
const M_ROWS: [usize; 3] = [16, 17, 18];

/// Whether `L` is the lattice this module is for: the other lattices'
/// (never taken) instances of [`Mrt::relax_by_classes`] see zeros from the
/// functions here instead of failing to compile.
pub(super) const fn is_d3q19<L: Lattice<Q>, const Q: usize>() -> bool {
    L::D == 3 && Q == 19
}

/// The class of velocity `i` of `L` ([`class_of`]), `None` past `Q`.
const fn class_at<L: Lattice<Q>, const Q: usize>(i: usize) -> Option<(bool, usize)> {
    if i < Q {
        class_of(L::C[i])
    } else {
        None
    }
}

/// A velocity's class: `None` at rest, `Some((true, a))` along axis `a`,
/// `Some((false, a))` in the plane that lacks axis `a`.
const fn class_of(c: [i32; 3]) -> Option<(bool, usize)> {
    let nonzero = (c[0] != 0) as usize + (c[1] != 0) as usize + (c[2] != 0) as usize;
    let mut a = 0;
    while a < 3 {
        let hit = if nonzero == 1 { c[a] != 0 } else { c[a] == 0 };
        if hit {
            return Some((nonzero == 1, a));
        }
        a += 1;
    }
    None
}

/// An even row's value on each class: at rest, along each axis, on each
/// plane (by the axis it lacks).
#[derive(Clone, Copy)]
struct ClassValues {
    rest: i32,
    axis: [i32; 3],
    plane: [i32; 3],
}

/// [`ClassValues`] of row `k` of `L`'s basis; fails to compile if the row
/// is not one value per class.
const fn class_values<L: Lattice<Q>, const Q: usize>(k: usize) -> ClassValues {
    let row = L::MOMENTS.rows[k];
    let mut v = ClassValues { rest: row[0], axis: [i32::MIN; 3], plane: [i32::MIN; 3] };
    let mut i = 1;
    while i < Q {
        let slot = match class_of(L::C[i]) {
            Some((true, a)) => &mut v.axis[a],
            Some((false, a)) => &mut v.plane[a],
            None => panic!("a second rest velocity"),
        };
        assert!(*slot == i32::MIN || *slot == row[i], "an even row differs within a class");
        *slot = row[i];
        i += 1;
    }
    v
}

/// [`ClassValues`] of row `k` if it is one of [`EVEN`] (of D3Q19's basis).
const fn even_values<L: Lattice<Q>, const Q: usize>(k: usize) -> Option<ClassValues> {
    let mut i = 0;
    while i < EVEN.len() {
        if EVEN[i] == k && is_d3q19::<L, Q>() {
            return Some(class_values::<L, Q>(k));
        }
        i += 1;
    }
    None
}

/// The value two of three entries share, or 0 (then nothing is shared).
const fn shared(v: [i32; 3]) -> i32 {
    if v[0] == v[1] || v[0] == v[2] {
        v[0]
    } else if v[1] == v[2] {
        v[1]
    } else {
        0
    }
}

/// Each entry of `v` less `r`.
const fn less(v: [i32; 3], r: i32) -> [i32; 3] {
    [v[0] - r, v[1] - r, v[2] - r]
}

/// `s + base * total + sum_a (v_a - base) x_a` with `base` the value the
/// entries of `v` share, the zero terms left out.
#[inline(always)]
fn by_class<T: Real>(mut s: T, v: [i32; 3], x: [T; 3], total: T) -> T {
    let base = shared(v);
    add_multiple(&mut s, base, total);
    unrolled!(axis A < 3 => {
        add_multiple(&mut s, v[A] - base, x[A]);
    });
    s
}

/// What [`Mrt::amplitude`] needs of a row of `L`'s basis.
#[derive(Clone, Copy)]
struct RowConstants {
    weights: WeightMoments,
    class: RateClass,
    inverse_norm: f64,
}

impl RowConstants {
    /// Row `k`'s (zeros past `Q`, which branches never taken name).
    const fn of<L: Lattice<Q>, const Q: usize>(k: usize) -> Self {
        if k < Q {
            Self {
                weights: weight_moments::<L, Q>(k),
                class: L::MOMENTS.class[k],
                inverse_norm: 1.0 / L::MOMENTS.norm(k) as f64,
            }
        } else {
            Self { weights: weight_moments::<L, Q>(k), class: RateClass::Conserved, inverse_norm: 0.0 }
        }
    }
}

/// BGK's update of population `i` from its non-equilibrium part `n`, as
/// [`crate::cell::relax_bgk`] forms it.
#[inline(always)]
fn bgk<L: Lattice<Q>, const Q: usize, T: Real, const FORCED: bool>(
    f: T,
    n: T,
    omega: T,
    guo: &GuoSource<T>,
    i: usize,
) -> T {
    let f = omega.mul_add(n, f);
    if FORCED {
        f + guo.term::<L, Q>(i)
    } else {
        f
    }
}

impl<T: Real> Mrt<T> {
    /// A row's moment of `n - S/2`, given that of `n` (storage units),
    /// times `(s_k - omega) / |M_k|^2`: its correction's amplitude. The
    /// row's constants come as [`RowConstants`] (evaluated at compile time:
    /// the kernels that pick their operator at run time would otherwise
    /// compute them in a call).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn amplitude<const FORCED: bool>(
        &self,
        row: RowConstants,
        moment: T,
        parts: (T, T, T),
        u: [T; 3],
        force: [T; 3],
        uf3: T,
        scale: T,
    ) -> T {
        let moment = if FORCED {
            let (_, source) = equilibrium_and_source(row.weights, parts, u, force, uf3);
            (T::from_f64(-0.5) * scale).mul_add(source, moment)
        } else {
            moment
        };
        moment * ((self.rate(row.class) - self.shear) * T::from_f64(row.inverse_norm))
    }

    /// [`Mrt::relax_by_matrix`] on D3Q19 by classes (see the module's notes):
    /// the same update up to round-off, and BGK's bit for bit at equal rates
    /// (the BGK part is formed as BGK forms it, and every correction is then
    /// a signed zero).
    #[inline(always)]
    pub(super) fn relax_by_classes<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        let force = if FORCED { force } else { [T::ZERO; 3] };
        let (rho, u) = density_velocity_scaled::<L, Q, T>(f, force, scale);
        let parts = equilibrium_parts(rho, u);
        let omega = self.shear;
        let guo = GuoSource::new(omega, force, u, scale);
        f[0] = bgk::<L, Q, T, FORCED>(f[0], non_equilibrium_part::<L, Q, T>(0, f[0], parts.0, scale), omega, &guo, 0);
        // Pair by pair: BGK's update, and of `n` the class sums of the pair
        // sums (`axis`, `plane`), the axis pairs' differences along their
        // axis, and the ghost moments `m_a`, which live on the planes.
        let (mut axis, mut plane, mut along, mut ghost) = ([-T::ZERO; 3], [-T::ZERO; 3], [-T::ZERO; 3], [-T::ZERO; 3]);
        unrolled!(A < Q => {
            if A % 2 == 1 {
                let b = opposite(A);
                let (xa, xb) = equilibrium_pair::<L, Q, T>(parts, u, A);
                let na = non_equilibrium_part::<L, Q, T>(A, f[A], xa, scale);
                let nb = non_equilibrium_part::<L, Q, T>(b, f[b], xb, scale);
                f[A] = bgk::<L, Q, T, FORCED>(f[A], na, omega, &guo, A);
                f[b] = bgk::<L, Q, T, FORCED>(f[b], nb, omega, &guo, b);
                let (sum, difference) = (na + nb, na - nb);
                match const { class_at::<L, Q>(A) } {
                    Some((true, a)) => {
                        axis[a] = sum;
                        along[a] = if L::C[A][a] == 1 { difference } else { -difference };
                    }
                    Some((false, a)) => {
                        plane[a] += sum;
                        unrolled!(axis G < 3 => {
                            add_multiple(&mut ghost[G], L::MOMENTS.rows[M_ROWS[G]][A], difference);
                        });
                    }
                    None => {}
                }
            }
        });
        let uf3 = uf3(u, force);
        // Even rows: the density of `n` is zero, so the rest value comes off
        // every class and the rest population drops out.
        let (axes, planes) = (axis[0] + axis[1] + axis[2], plane[0] + plane[1] + plane[2]);
        // Each corrected row's amplitude at its position.
        let mut z = [T::ZERO; Q];
        unrolled!(K < Q => {
            if let Some(v) = const { even_values::<L, Q>(K) } {
                let moment = by_class(-T::ZERO, less(v.axis, v.rest), axis, axes);
                let moment = by_class(moment, less(v.plane, v.rest), plane, planes);
                let row = const { RowConstants::of::<L, Q>(K) };
                z[K] = self.amplitude::<FORCED>(row, moment, parts, u, force, uf3, scale);
            }
        });
        // Odd rows: the momentum of `n` is F / 2 and `q_a` is the momentum on
        // the planes, so `q_a . n` is `F_a / 2` plus `(q_a - 1)` on the axis pair.
        unrolled!(axis A < 3 => {
            let on_axis = const { flux_on_axis::<L, Q>(A) };
            let mut moment = T::from_f64((on_axis - 1) as f64) * along[A];
            if FORCED {
                moment = (T::from_f64(0.5) * scale).mul_add(force[A], moment);
            }
            let (flux, ghost_row) = const { (RowConstants::of::<L, Q>(Q_ROWS[A]), RowConstants::of::<L, Q>(M_ROWS[A])) };
            z[Q_ROWS[A]] = self.amplitude::<FORCED>(flux, moment, parts, u, force, uf3, scale);
            z[M_ROWS[A]] = self.amplitude::<FORCED>(ghost_row, ghost[A], parts, u, force, uf3, scale);
        });
        // Back. The even part of each class: a base its kind shares plus the
        // rows that differ from it there.
        let (mut rest, mut axis_base, mut plane_base) = (-T::ZERO, -T::ZERO, -T::ZERO);
        let (mut axis_own, mut plane_own) = ([-T::ZERO; 3], [-T::ZERO; 3]);
        unrolled!(K < Q => {
            if let Some(v) = const { even_values::<L, Q>(K) } {
                add_multiple(&mut rest, v.rest, z[K]);
                add_multiple(&mut axis_base, shared(v.axis), z[K]);
                add_multiple(&mut plane_base, shared(v.plane), z[K]);
                unrolled!(axis A < 3 => {
                    add_multiple(&mut axis_own[A], v.axis[A] - shared(v.axis), z[K]);
                    add_multiple(&mut plane_own[A], v.plane[A] - shared(v.plane), z[K]);
                });
            }
        });
        f[0] += rest;
        // The odd part of a pair: `sum_a c_a U_a` over its axes, with `U_a`
        // the flux and ghost rows' oriented values times their amplitudes
        // (one sum per axis and class, shared by the pairs of a plane).
        unrolled!(A < Q => {
            if A % 2 == 1 {
                let b = opposite(A);
                let c = L::C[A];
                let even = match const { class_at::<L, Q>(A) } {
                    Some((true, a)) => axis_base + axis_own[a],
                    Some((false, a)) => plane_base + plane_own[a],
                    None => T::ZERO,
                };
                let mut odd = -T::ZERO;
                unrolled!(axis G < 3 => {
                    if c[G] != 0 {
                        let mut along_g = -T::ZERO;
                        add_multiple(&mut along_g, L::MOMENTS.rows[Q_ROWS[G]][A] * c[G], z[Q_ROWS[G]]);
                        add_multiple(&mut along_g, L::MOMENTS.rows[M_ROWS[G]][A] * c[G], z[M_ROWS[G]]);
                        add_multiple(&mut odd, c[G], along_g);
                    }
                });
                f[A] += even + odd;
                f[b] += even - odd;
            }
        });
        (rho, u)
    }
}

/// The value of flux row `q_a` at the velocity `+e_a`; on the planes `q_a`
/// is `c_a` (fails to compile otherwise), which the momentum identity uses.
const fn flux_on_axis<L: Lattice<Q>, const Q: usize>(a: usize) -> i32 {
    if !is_d3q19::<L, Q>() {
        return 0;
    }
    let row = L::MOMENTS.rows[Q_ROWS[a]];
    let mut on_axis = 0;
    let mut i = 1;
    while i < Q {
        let c = L::C[i];
        match class_of(c) {
            Some((true, b)) if b == a => {
                if c[a] == 1 {
                    on_axis = row[i];
                }
            }
            Some((false, _)) => assert!(row[i] == c[a], "a flux row is not the momentum on the planes"),
            _ => assert!(row[i] == 0, "a flux row is not zero on the other axes"),
        }
        i += 1;
    }
    on_axis
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::D3Q19;

    /// By classes and by rows the update is the same up to round-off: the
    /// two sum each correction's moment (at most 19 terms of `n` with
    /// weights up to `|M|max = 30`) and its way back in different orders, at
    /// rates up to 2 over norms of 8 and more: within `19 |M|max^2 eps |n|`.
    #[test]
    fn classes_give_the_rows_update() {
        let rates = [
            Mrt::published(0.53, "d3q19"),
            Mrt { shear: 1.7, bulk: 0.9, flux: 1.3, fourth: 1.1, ghost: 1.6 },
            Mrt { shear: 0.6, bulk: 1.9, flux: 0.4, fourth: 1.95, ghost: 0.2 },
        ];
        let force = [2e-4, -1e-4, 3e-4];
        for (s, mrt) in rates.iter().enumerate() {
            for state in 0..4 {
                let u = [0.05 - 0.03 * state as f64, -0.02 * state as f64, 0.04];
                let mut start = crate::cell::equilibrium::<D3Q19, 19, f64>(1.03 - 0.02 * state as f64, u);
                for i in 0..19 {
                    start[i] += 2e-3 * (((i + state) * 7 % 5) as f64 - 2.0) * D3Q19::W[i];
                }
                let n = crate::collision::non_equilibrium::<D3Q19, 19, f64, true>(&start, force, 1.0).n;
                let bound = 19.0 * 900.0 * f64::EPSILON * n.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                for forced in [false, true] {
                    let (mut a, mut b) = (start, start);
                    if forced {
                        mrt.relax_by_classes::<D3Q19, 19, true>(&mut a, force, 1.0);
                        mrt.relax_by_matrix::<D3Q19, 19, true>(&mut b, force, 1.0);
                    } else {
                        mrt.relax_by_classes::<D3Q19, 19, false>(&mut a, [0.0; 3], 1.0);
                        mrt.relax_by_matrix::<D3Q19, 19, false>(&mut b, [0.0; 3], 1.0);
                    }
                    for i in 0..19 {
                        assert!(
                            (a[i] - b[i]).abs() < bound,
                            "rates {s} state {state} forced {forced} population {i}: {} vs {}",
                            a[i],
                            b[i]
                        );
                    }
                }
            }
        }
    }
}
