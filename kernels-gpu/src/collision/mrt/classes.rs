//! MRT on d'Humieres et al.'s D3Q19 basis by velocity classes: the
//! correction of [`Mrt::relax_by_matrix`] (BGK at the shear rate plus, for
//! each moment whose rate differs, its part of the non-equilibrium times
//! the difference), as one linear map whose few coefficients the host forms
//! from the rates ([`ClassCoefficients`]): about 105 operations a cell on top of
//! BGK's update, where the same corrections summed row by row per class
//! took 140 (and over the whole rows 200).
//!
//! - D3Q19's velocities are the rest one, the six along an axis and the
//!   twelve in the plane of two axes (named here by the axis they lack).
//!   Every corrected even row (`e`, `epsilon`, `3 pi_xx`, `pi_ww`) depends on
//!   `c_x^2, c_y^2, c_z^2` alone, so it takes one value per class, and the
//!   even correction of a class is a map of the class sums of the
//!   non-equilibrium parts. The rows' rates do not tell the axes apart
//!   (`pi_xx` and `pi_ww` share one), so the map commutes with swapping
//!   axes: an axis class's correction is its own sum, the sum of the plane
//!   that lacks its axis and the two totals, each times a coefficient, and
//!   so is a plane's.
//! - The moments are taken of `n' = feq - f - S/2` (Guo's source `S`, zero
//!   without a force), which the BGK update forms pair by pair. Its density
//!   and momentum are zero, which takes the rest population out of every
//!   even row, and makes the energy flux `q_a`, which is the momentum on the
//!   planes, `(q_a(e_a) - 1)` times the axis pair's difference.
//! - The odd rows `q_a` and the ghosts `m_a` have one amplitude per axis;
//!   back, each plane pair's odd part is `c_a U_a + c_b U_b`, with `U_a =
//!   z_qa +- z_ma` one sum per axis and plane.

use super::{add_multiple, Mrt, RateClass};
use crate::cell::{
    density_velocity_scaled, equilibrium_pair, equilibrium_parts, no_force, non_equilibrium_part, GuoSource,
};
use crate::lattice::{opposite, Lattice, D3Q19};
use crate::real::Real;

/// The rows of the basis ([`super::dhumieres`]) by position: the even
/// corrected ones, and the flux and ghost rows by axis.
const EVEN: [usize; 4] = [1, 2, 10, 12];
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

/// Row `k`'s value on each class, `[rest, axis 0..3, plane 0..3]`; fails
/// to compile if the row is not one value per class.
const fn class_values(k: usize) -> [i32; 7] {
    let row = D3Q19::MOMENTS.rows[k];
    let mut v = [i32::MIN; 7];
    v[0] = row[0];
    let mut i = 1;
    while i < 19 {
        let slot = match class_of(D3Q19::C[i]) {
            Some((true, a)) => 1 + a,
            Some((false, a)) => 4 + a,
            None => panic!("a second rest velocity"),
        };
        assert!(v[slot] == i32::MIN || v[slot] == row[i], "an even row differs within a class");
        v[slot] = row[i];
        i += 1;
    }
    v
}

// One flux and one ghost coefficient serve every axis: their rows' value on
// the axis, norm and rate class are the same for all three.
const _: () = {
    let m = &D3Q19::MOMENTS;
    let mut a = 0;
    while a < 3 {
        assert!(flux_on_axis::<D3Q19, 19>(a) == flux_on_axis::<D3Q19, 19>(0));
        assert!(m.norm(Q_ROWS[a]) == m.norm(Q_ROWS[0]) && m.norm(M_ROWS[a]) == m.norm(M_ROWS[0]));
        assert!(matches!(m.class[Q_ROWS[a]], RateClass::Flux) && matches!(m.class[M_ROWS[a]], RateClass::Ghost));
        a += 1;
    }
};

/// The coefficients of the update by classes for one set of rates, formed
/// on the host ([`Mrt::new`]): a cell multiplies by them and forms no rate
/// itself. With `r_k = (s_k - omega) / |M_k|^2` of row `k`, the even
/// part is a map of the class sums of `n'` (each class's entry is what it
/// gets beyond the totals' shares):
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ClassCoefficients<T> {
    /// An axis class's even correction per its own sum, the axes' total,
    /// the sum of the plane that lacks its axis and the planes' total.
    axis: [T; 4],
    /// A plane's per the sum of the axis it lacks, the axes' total, its
    /// own sum and the planes' total.
    plane: [T; 4],
    /// The rest population's per the axes' and the planes' totals.
    rest: [T; 2],
    /// Per oriented difference of an axis pair: the flux row's amplitude
    /// `r_q (q(e_a) - 1)`, and the pair's odd part, `q(e_a)` times that.
    flux: [T; 2],
    /// The ghost rows' `r_m`.
    ghost: T,
    /// `-1/2 / (1 - omega/2)`: Guo's term times it is `-S/2`.
    source: T,
}

impl<T: Real> ClassCoefficients<T> {
    /// The coefficients for the rates `[shear, bulk, flux, fourth, ghost]`,
    /// summed in f64 from the basis and rounded once. Equal rates make
    /// every coefficient of the map zero (all but `source`), and so give
    /// BGK's update bit for bit.
    pub(super) fn new(rates: [f64; 5]) -> Self {
        let [shear, bulk, flux, fourth, ghost] = rates;
        let excess = |k: usize| {
            let s = match D3Q19::MOMENTS.class[k] {
                RateClass::Bulk => bulk,
                RateClass::Flux => flux,
                RateClass::Fourth => fourth,
                RateClass::Ghost => ghost,
                RateClass::Shear | RateClass::Conserved => shear,
            };
            (s - shear) / D3Q19::MOMENTS.norm(k) as f64
        };
        let b = even_map(excess);
        let t = T::from_f64;
        let on_axis = flux_on_axis::<D3Q19, 19>(0) as f64;
        let flux = excess(Q_ROWS[0]) * (on_axis - 1.0);
        let half = 1.0 - 0.5 * shear;
        Self {
            axis: [b[1][1] - b[1][2], b[1][2], b[1][4] - b[1][5], b[1][5]].map(t),
            plane: [b[4][1] - b[4][2], b[4][2], b[4][4] - b[4][5], b[4][5]].map(t),
            rest: [t(b[0][1]), t(b[0][4])],
            flux: [t(flux), t(on_axis * flux)],
            ghost: t(excess(M_ROWS[0])),
            // `omega = 2` has no viscosity: the host never runs it.
            source: t(if half != 0.0 { -0.5 / half } else { 0.0 }),
        }
    }
}

/// The even correction as a map of class sums: entry `[c][d]` is what sum
/// `d` (`[-, axis 0..3, plane 0..3]`, the rest one taken out by the zero
/// density of `n'`) adds to class `c` (`[rest, axis 0..3, plane 0..3]`),
/// `sum_k r_k v_k(c) (v_k(d) - v_k(rest))` over the corrected even rows.
fn even_map(excess: impl Fn(usize) -> f64) -> [[f64; 7]; 7] {
    const VALUES: [[i32; 7]; 4] =
        [class_values(EVEN[0]), class_values(EVEN[1]), class_values(EVEN[2]), class_values(EVEN[3])];
    let mut b = [[0.0; 7]; 7];
    for (&k, v) in EVEN.iter().zip(VALUES) {
        let r = excess(k);
        for c in 0..7 {
            for d in 1..7 {
                b[c][d] += r * (v[c] as f64) * ((v[d] - v[0]) as f64);
            }
        }
    }
    b
}

/// BGK's update of population `i` from its non-equilibrium part `n`, as
/// [`crate::cell::relax_bgk`] forms it, and `n'` (`n - S/2`).
#[inline(always)]
fn bgk<L: Lattice<Q>, const Q: usize, T: Real, const FORCED: bool>(
    f: &mut T,
    n: T,
    omega: T,
    guo: &GuoSource<T>,
    source: T,
    i: usize,
) -> T {
    *f = omega.mul_add(n, *f);
    if FORCED {
        let term = guo.term::<L, Q>(i);
        *f += term;
        source.mul_add(term, n)
    } else {
        n
    }
}

impl<T: Real> Mrt<T> {
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
        let k = &self.classes;
        let force = if FORCED { force } else { no_force() };
        let (rho, u) = density_velocity_scaled::<L, Q, T>(f, force, scale);
        let parts = equilibrium_parts(rho, u);
        let omega = self.rates.shear;
        let guo = GuoSource::new(omega, force, u, scale);
        let n0 = non_equilibrium_part::<L, Q, T>(0, f[0], parts.0, scale);
        bgk::<L, Q, T, FORCED>(&mut f[0], n0, omega, &guo, k.source, 0);
        // Pair by pair: BGK's update, and of `n'` the class sums of the
        // pair sums (`axis_sum`, `plane_sum`), the axis pairs' differences along
        // their axis, and the planes' differences summed along each of
        // their axes (`along_plane[plane][axis]`).
        let (mut axis_sum, mut plane_sum, mut along) = ([-T::ZERO; 3], [-T::ZERO; 3], [-T::ZERO; 3]);
        let mut along_plane = [[-T::ZERO; 3]; 3];
        unrolled!(A < Q => {
            if A % 2 == 1 {
                let b = opposite(A);
                let (xa, xb) = equilibrium_pair::<L, Q, T>(parts, u, A);
                let na = non_equilibrium_part::<L, Q, T>(A, f[A], xa, scale);
                let nb = non_equilibrium_part::<L, Q, T>(b, f[b], xb, scale);
                let na = bgk::<L, Q, T, FORCED>(&mut f[A], na, omega, &guo, k.source, A);
                let nb = bgk::<L, Q, T, FORCED>(&mut f[b], nb, omega, &guo, k.source, b);
                let (sum, difference) = (na + nb, na - nb);
                match const { class_at::<L, Q>(A) } {
                    Some((true, a)) => {
                        axis_sum[a] = sum;
                        along[a] = if L::C[A][a] == 1 { difference } else { -difference };
                    }
                    Some((false, p)) => {
                        plane_sum[p] += sum;
                        unrolled!(axis G < 3 => {
                            add_multiple(&mut along_plane[p][G], L::C[A][G], difference);
                        });
                    }
                    None => {}
                }
            }
        });
        // Even: the map of the class sums.
        let (axes, planes) = (axis_sum[0] + axis_sum[1] + axis_sum[2], plane_sum[0] + plane_sum[1] + plane_sum[2]);
        let axis_base = k.axis[1].mul_add(axes, k.axis[3] * planes);
        let plane_base = k.plane[1].mul_add(axes, k.plane[3] * planes);
        f[0] += k.rest[0].mul_add(axes, k.rest[1] * planes);
        let (mut even_axis, mut even_plane) = ([T::ZERO; 3], [T::ZERO; 3]);
        unrolled!(axis A < 3 => {
            even_axis[A] = k.axis[0].mul_add(axis_sum[A], k.axis[2].mul_add(plane_sum[A], axis_base));
            even_plane[A] = k.plane[0].mul_add(axis_sum[A], k.plane[2].mul_add(plane_sum[A], plane_base));
        });
        // Odd: per axis the flux and ghost amplitudes, and back the
        // oriented sums `U` per plane and axis.
        let mut odd_plane = [[-T::ZERO; 3]; 3];
        unrolled!(axis G < 3 => {
            let mut ghost = -T::ZERO;
            unrolled!(axis P < 3 => {
                if P != G {
                    add_multiple(&mut ghost, const { ghost_sign::<L, Q>(P, G) }, along_plane[P][G]);
                }
            });
            let z_q = k.flux[0] * along[G];
            unrolled!(axis P < 3 => {
                if P != G {
                    let z_m = if const { ghost_sign::<L, Q>(P, G) } == 1 { k.ghost } else { -k.ghost };
                    odd_plane[P][G] = z_m.mul_add(ghost, z_q);
                }
            });
        });
        unrolled!(A < Q => {
            if A % 2 == 1 {
                let b = opposite(A);
                let c = L::C[A];
                match const { class_at::<L, Q>(A) } {
                    Some((true, a)) => {
                        // Even part plus the oriented odd part `q(e_a) z_qa`, fused.
                        let odd = if c[a] == 1 { k.flux[1] } else { -k.flux[1] };
                        f[A] += odd.mul_add(along[a], even_axis[a]);
                        f[b] += (-odd).mul_add(along[a], even_axis[a]);
                    }
                    Some((false, p)) => {
                        let mut odd = -T::ZERO;
                        unrolled!(axis G < 3 => {
                            add_multiple(&mut odd, c[G], odd_plane[p][G]);
                        });
                        f[A] += even_plane[p] + odd;
                        f[b] += even_plane[p] - odd;
                    }
                    None => {}
                }
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

/// Ghost row `m_g` on the plane that lacks axis `p`, over `c_g` (`+-1`; the
/// same at the plane's four velocities, and `m_g` is zero off the planes:
/// fails to compile otherwise).
const fn ghost_sign<L: Lattice<Q>, const Q: usize>(p: usize, g: usize) -> i32 {
    if !is_d3q19::<L, Q>() || p == g {
        return 0;
    }
    let row = L::MOMENTS.rows[M_ROWS[g]];
    let mut sign = 0;
    let mut i = 1;
    while i < Q {
        let c = L::C[i];
        match class_of(c) {
            Some((false, q)) if q == p => {
                let s = row[i] * c[g];
                assert!(s * s == 1 && (sign == 0 || sign == s), "a ghost row is not +-c_g on a plane");
                sign = s;
            }
            Some((false, q)) if q == g => assert!(row[i] == 0, "a ghost row is not zero on its own plane"),
            Some((false, _)) => {}
            _ => assert!(row[i] == 0, "a ghost row is not zero off the planes"),
        }
        i += 1;
    }
    sign
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::MrtRates;
    use crate::lattice::D3Q19;

    /// By classes and by rows the update is the same up to round-off: the
    /// two sum each correction's moment (at most 19 terms of `n` with
    /// weights up to `|M|max = 30`) and its way back in different orders, at
    /// rates up to 2 over norms of 8 and more: within `19 |M|max^2 eps |n|`.
    #[test]
    fn classes_give_the_rows_update() {
        let rates = [
            Mrt::published(0.53, "d3q19"),
            Mrt::new(MrtRates { shear: 1.7, bulk: 0.9, flux: 1.3, fourth: 1.1, ghost: 1.6 }),
            Mrt::new(MrtRates { shear: 0.6, bulk: 1.9, flux: 0.4, fourth: 1.95, ghost: 0.2 }),
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

    /// The even map commutes with swapping axes, which is what lets four
    /// coefficients per kind of class stand for it: an entry depends only
    /// on the kinds of its two classes and on whether their axes agree.
    #[test]
    fn the_even_map_does_not_tell_the_axes_apart() {
        let rates = [1.7, 0.9, 1.3, 1.1, 1.6];
        let excess = |k: usize| {
            let s = match D3Q19::MOMENTS.class[k] {
                RateClass::Bulk => rates[1],
                RateClass::Fourth => rates[3],
                _ => unreachable!("row {k} is not even"),
            };
            (s - rates[0]) / D3Q19::MOMENTS.norm(k) as f64
        };
        let b = even_map(excess);
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-15 * (1.0 + x.abs().max(y.abs()));
        for a in 0..3 {
            for d in 0..3 {
                for (c, kind) in [(1 + a, 1), (4 + a, 4)] {
                    for (e, other) in [(1 + d, 1), (4 + d, 4)] {
                        let expected = if a == d { b[kind][other] } else { b[kind][other + 1] };
                        assert!(close(b[c][e], expected), "class {c} from sum {e}: {} vs {expected}", b[c][e]);
                    }
                }
                assert!(close(b[0][1 + d], b[0][1]) && close(b[0][4 + d], b[0][4]), "rest from sum {d}");
            }
        }
        assert!(b.iter().flatten().any(|&x| x.abs() > 1e-3), "the map is not all zeros");
    }
}
