//! The cumulant operator of Geier, Schönherr, Pasquali & Krafczyk (2015),
//! Comput. Math. Appl. 70, 507, for the lattices whose velocities are all
//! of `{-1, 0, 1}^D` (D2Q9, D3Q27).
//!
//! The collision needs only the central moments `k_abc = sum f (c_x -
//! u_x)^a (c_y - u_y)^b (c_z - u_z)^c` up to second order, and those come in
//! closed form from the raw moments of the populations, which passes
//! of 1D sums along z (in 3D), y and x give (the chimera transform of the paper,
//! without the velocity: `second_order`). The passes work on the shifted
//! populations `f - w`, so no value of size 1/3 is added and taken away
//! again in single precision (the concern of the paper's appendix). The
//! way back is the inverse central transform by passes along x, y and z (in 3D)
//! (`populations`), on the moments less their rest values (`prod m(a)`,
//! `m = 1, 0, 1/3`), with the halves it takes per axis taken first, and
//! with the moments that are zero after every collision skipped.
//!
//! Relaxation:
//! - density and momentum are kept; with a force `F` the moments are taken
//!   about `u = (j + F/2) / rho`, where the first-order ones are `-F/2`,
//!   and they leave as `+F/2`. That is Guo's forcing in central moments
//!   (his source has no second-order central moment);
//! - the second-order cumulants (equal to the central moments) relax as the
//!   paper's Eqs. (58)-(63): the deviators and off-diagonals at `shear = 1 /
//!   tau`, the trace at `bulk`, with its correction of the normal stresses
//!   for the missing third-order moments `c_x^3` of these lattices (which
//!   makes the viscosity Galilean invariant);
//! - every higher cumulant relaxes at rate 1, to its equilibrium 0, the
//!   paper's standard choice: the post-collision third and fifth-order
//!   central moments are then 0 and the fourth and sixth-order ones are the
//!   products of the second-order ones (a Gaussian's). Other higher rates
//!   are not offered.

use super::chimera::{self, k, MOMENTUM};
use super::Collision;
use crate::cell::{density_velocity_of_moments, no_force};
use crate::lattice::Lattice;
use crate::real::Real;

/// Cumulant collision: the rates of the second-order cumulants (the higher
/// ones relax at 1, see the module's notes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cumulant<T> {
    /// Rate of the shear moments, `1 / tau`.
    pub shear: T,
    /// Rate of the trace of the second-order moments (bulk viscosity).
    pub bulk: T,
}

impl Cumulant<f64> {
    /// Bulk rate 1, as the paper runs it.
    pub const DEFAULT_BULK: f64 = 1.0;

    /// The operator for relaxation time `tau`, bulk rate [`Self::DEFAULT_BULK`].
    pub fn new(tau: f64) -> Self {
        Self { shear: 1.0 / tau, bulk: Self::DEFAULT_BULK }
    }
}

/// Whether a velocity set is all of `{-1, 0, 1}^D`: the lattices the
/// cumulant operator is built for (and MRT's D3Q27 transform, see
/// [`super::mrt`]).
pub const fn is_tensor_product<const Q: usize>(c: &[[i32; 3]; Q], d: usize) -> bool {
    let mut n = 1;
    let mut a = 0;
    while a < d {
        n *= 3;
        a += 1;
    }
    n == Q && max_component(c) == 1 && all_distinct(c)
}

const fn max_component<const Q: usize>(c: &[[i32; 3]; Q]) -> i32 {
    let mut m = 0;
    let mut i = 0;
    while i < Q {
        let mut a = 0;
        while a < 3 {
            let v = c[i][a].abs();
            if v > m {
                m = v;
            }
            a += 1;
        }
        i += 1;
    }
    m
}

const fn all_distinct<const Q: usize>(c: &[[i32; 3]; Q]) -> bool {
    let mut i = 0;
    while i < Q {
        let mut j = 0;
        while j < i {
            if c[i][0] == c[j][0] && c[i][1] == c[j][1] && c[i][2] == c[j][2] {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

/// Per-axis rest weights `w(c)` for `c = -1, 0, 1`: each lattice weight is
/// their product.
const W1: [f64; 3] = [1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0];
/// Per-axis moments of the rest weights, orders 0, 1, 2 (raw and central
/// about 0 alike).
const M1: [f64; 3] = [1.0, 0.0, 1.0 / 3.0];
/// Per-axis factors the post-collision moments are given times (see
/// [`populations`]): the passes back halve the first and second-order
/// moments along their axis, so taking the halves first saves an operation.
const HALVES: [f64; 3] = [1.0, 0.5, 0.5];

/// A value that may be known to be zero at compile time: `None` takes no
/// operation where it enters, where a literal `0.0` would take a whole one
/// (IEEE arithmetic does not let `x * 0 + y` fold to `y`).
type Term<T> = Option<T>;

#[inline(always)]
fn add<T: Real>(a: Term<T>, b: Term<T>) -> Term<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, None) => a,
        (None, b) => b,
    }
}

#[inline(always)]
fn sub<T: Real>(a: Term<T>, b: Term<T>) -> Term<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a - b),
        (a, None) => a,
        (None, b) => b.map(|b| -b),
    }
}

/// `a b + c`.
#[inline(always)]
fn mul_add<T: Real>(a: T, b: Term<T>, c: Term<T>) -> Term<T> {
    match (b, c) {
        (Some(b), Some(c)) => Some(a.mul_add(b, c)),
        (Some(b), None) => Some(a * b),
        (None, c) => c,
    }
}

/// The rest sum of a line in the pass along `axis`, in the order z, y, x
/// forward: along z the lines hold weights `W1(x) W1(y)`, along y the
/// products `W1(x) M1(k_z)`, along x `M1(k_y) M1(k_z)`.
#[inline(always)]
const fn rest_sum(axis: usize, line: usize) -> f64 {
    let (hi, lo) = (line / 3, line % 3);
    match axis {
        2 => W1[hi] * W1[lo],
        1 => W1[hi] * M1[lo],
        _ => M1[hi] * M1[lo],
    }
}

/// The factor ([`HALVES`]) a line of the pass back along `axis` still
/// carries from the axes after it (x, y and z are taken in that order).
#[inline(always)]
const fn halves_ahead(axis: usize, line: usize) -> f64 {
    let (hi, lo) = (line / 3, line % 3);
    match axis {
        0 => HALVES[hi] * HALVES[lo],
        1 => HALVES[lo],
        _ => 1.0,
    }
}

/// Which of a line's three post-collision moments are zero whatever the
/// state, in the pass back along x (the first): after the collision every
/// central moment with an odd number of first-order exponents is zero (the
/// third and fifth orders and `k_111`), but for the first-order ones
/// themselves when a force makes them `F/2`. Every line along x holds either
/// `k_1bc` alone or `k_0bc` and `k_2bc`.
#[inline(always)]
const fn zero_after_collision<const FORCED: bool>(line: usize) -> [bool; 3] {
    let (b, c) = (line / 3, line % 3);
    let odd_line = (b == 1) != (c == 1);
    // The first-order moment on the line, if any: `k_1bc` or `k_0bc`.
    let first_order = FORCED && b + c <= 1;
    [odd_line && !first_order, !odd_line && !first_order, odd_line]
}

/// The second-order central moments of a cell and the density and velocity
/// they are taken about: from the populations `f` (shifted, given times
/// `scale`), the raw moments of `1, c, c^2` per axis by passes along z (in
/// 3D), y and x (none of which needs the velocity), then the central ones in
/// closed form: `k_ab = R_ab - u_a j_b + u_b F_a / 2` (with `rho u = j + F /
/// 2`), less the rest value 1/3 on the diagonal. Shifted populations keep
/// every term small, so nothing of size 1/3 is added and taken away again in
/// single precision. Returns `rho - 1`, `rho`, `u` and the moments at
/// `[xx, yy, zz, xy, xz, yz]`, `rho - 1` and the moments times `scale`, as
/// the populations are given (so that none is multiplied by `1 / scale`).
#[inline(always)]
pub(crate) fn second_order<L: Lattice<Q>, const Q: usize, T: Real, const FORCED: bool>(
    f: &[T; Q],
    force: [T; 3],
    scale: T,
) -> (T, T, [T; 3], [T; 6]) {
    let mut r = chimera::gather::<L, Q, T>(f);
    unrolled!(axis P < L::D => {
        chimera::pass(&mut r, L::D - 1 - P, |v, _| {
            let even = v[0] + v[2];
            [even + v[1], v[2] - v[0], even]
        });
    });
    let (rho, u) = density_velocity_of_moments(r[k(0, 0, 0)], MOMENTUM.map(|i| r[i]), force, scale, L::D);
    let half_scale = T::from_f64(0.5) * scale;
    let central = |a: usize, b: usize| {
        let mut e = [0; 3];
        e[a] += 1;
        e[b] += 1;
        let k = (-u[a]).mul_add(r[MOMENTUM[b]], r[k(e[0], e[1], e[2])]);
        if FORCED {
            (half_scale * u[b]).mul_add(force[a], k)
        } else {
            k
        }
    };
    let zz = if L::D == 3 { [central(2, 2), central(0, 2), central(1, 2)] } else { [T::ZERO; 3] };
    let pi = [central(0, 0), central(1, 1), zz[0], central(0, 1), zz[1], zz[2]];
    (r[k(0, 0, 0)], rho, u, pi)
}

/// The shifted populations (times `scale`) of the post-collision central
/// moments `p` about `u`, each given less its rest value and times `scale`
/// and [`HALVES`] of its three exponents, with the moments of
/// [`zero_after_collision`] zero (they are not read): passes along x, y and
/// z (in 3D) of the inverse of the central transform, `R1 = k1 + u k0`, `R2
/// = k2 + 2 u k1 + u^2 k0` and `f(-1, 0, 1) = ((R2 - R1) / 2, k0 - R2, (R2 +
/// R1) / 2)`: 7 operations a line with the halves taken first (9
/// without), 3 to 6 on the lines along x with zeros.
#[inline(always)]
pub(crate) fn populations<L: Lattice<Q>, const Q: usize, T: Real, const FORCED: bool>(
    mut p: [T; 27],
    u: [T; 3],
    scale: T,
) -> [T; Q] {
    let (half, minus_two) = (T::from_f64(0.5), T::from_f64(-2.0));
    unrolled!(axis AXIS < L::D => {
        chimera::pass(&mut p, AXIS, |v, line| {
            let zero = if AXIS == 0 { zero_after_collision::<FORCED>(line) } else { [false; 3] };
            if zero[0] && zero[2] {
                // `k1` alone (rest 0 on these lines): `R1 = k1`, `R2 = 2 u k1`.
                let two_u = u[AXIS] + u[AXIS];
                let k1 = v[1];
                return [two_u.mul_add(k1, -k1), (minus_two * two_u) * k1, two_u.mul_add(k1, k1)];
            }
            let [k0, k1, k2] = [0, 1, 2].map(|i| (!zero[i]).then_some(v[i]));
            let rest = rest_sum(AXIS, line) * halves_ahead(AXIS, line) * 0.5;
            let rest = (rest != 0.0).then(|| T::from_f64(rest) * scale);
            // Half the raw moments, R1 / 2 and R2 / 2, from the total k0 / 2 + rest.
            let total = mul_add(half, k0, rest);
            let odd = mul_add(u[AXIS], total, k1);
            let even = mul_add(u[AXIS], add(k1, odd), k2);
            [sub(even, odd), mul_add(minus_two, even, k0), add(even, odd)].map(|x| x.unwrap_or(T::ZERO))
        });
    });
    chimera::scatter::<L, Q, T>(&p)
}

impl<T: Real> Collision<T> for Cumulant<T> {
    #[inline(always)]
    fn collide<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        let force = if FORCED { force } else { no_force() };
        // `rho - 1` and the moments come times `scale`, as the populations,
        // and the post-collision moments go back so: every constant below
        // that is not a pure number carries its power of `scale` (a power of
        // two, exact), and no moment is multiplied by `scale` or its inverse.
        let (rho_bar, rho, u, [xx, yy, zz, xy, xz, yz]) = second_order::<L, Q, T, FORCED>(f, force, scale);
        let three_d = L::D == 3;
        let d = L::D as f64;
        let (w, wb) = (self.shear, self.bulk);
        let (one, half) = (T::ONE, T::from_f64(0.5));
        let inv_rho = one / rho;
        let per_scale = |n: f64| T::from_f64(n) / scale;

        // Second order: deviators and the trace's distance from equilibrium.
        let dev_y = xx - yy;
        let dev_z = if three_d { xx - zz } else { T::ZERO };
        // Rest trace D/3 less the equilibrium D rho/3.
        let rest_trace = T::from_f64(d / 3.0);
        let trace = xx + yy + zz - rest_trace * rho_bar;
        // The normal stresses' correction -3 rho u_a^2 D_a (Eqs. 61-63),
        // with the velocity gradients D_a of Eqs. 58-60 taken times -3 rho:
        // the density they are divided by cancels.
        let g = if three_d {
            let gx = T::from_f64(1.5) * (w * (dev_y + dev_z) + wb * trace);
            let k = T::from_f64(-4.5) * w;
            [gx, k.mul_add(dev_y, gx), k.mul_add(dev_z, gx)]
        } else {
            let gx = T::from_f64(2.25) * (w * dev_y + wb * trace);
            [gx, (T::from_f64(-4.5) * w).mul_add(dev_y, gx), T::ZERO]
        };
        let c = [0, 1, 2].map(|a| u[a] * u[a] * g[a]);
        let (keep, keep_b) = (one - w, one - wb);
        let (src, src_b) = (one - half * w, one - half * wb);
        let dev_y = keep.mul_add(dev_y, src * (c[0] - c[1]));
        let dev_z = keep.mul_add(dev_z, src * (c[0] - c[2]));
        let trace = keep_b.mul_add(trace, src_b * (c[0] + c[1] + c[2])) + rest_trace * rho_bar;
        // Post-collision normal moments, each times D (`n`), from trace and
        // deviators; the off-diagonal ones (`p`).
        let two = T::from_f64(2.0);
        let n = if three_d {
            [trace + dev_y + dev_z, (-two).mul_add(dev_y, trace + dev_z), (-two).mul_add(dev_z, trace + dev_y)]
        } else {
            [trace + dev_y, trace - dev_y, T::ZERO]
        };
        let p_xy = keep * xy;
        let (p_xz, p_yz) = if three_d { (keep * xz, keep * yz) } else { (T::ZERO, T::ZERO) };

        // The moments go back times their HALVES, each a power of two.
        let normal = T::from_f64(0.5 / d);
        let mut post = [T::ZERO; 27];
        post[k(0, 0, 0)] = rho_bar;
        if FORCED {
            let quarter = T::from_f64(0.25) * scale;
            post[k(1, 0, 0)] = quarter * force[0];
            post[k(0, 1, 0)] = quarter * force[1];
            if three_d {
                post[k(0, 0, 1)] = quarter * force[2];
            }
        }
        post[k(2, 0, 0)] = normal * n[0];
        post[k(0, 2, 0)] = normal * n[1];
        post[k(1, 1, 0)] = T::from_f64(0.25) * p_xy;
        // Higher orders: a Gaussian's moments of the second-order ones, less
        // their rest values, written so that the rest parts cancel exactly.
        // Unscaled, with `a = n_a / D`, `ab` off-diagonal and `P_aa = 1/3 +
        // a`: `k_aabb = (a/3 + b/3 + a b + 2 ab^2 - rho_bar/9) / rho`,
        // `k_aabc = (P_aa bc + 2 ab ac) / rho` and `k_222 = (P_xx P_yy P_zz
        // + 2 (P_xx yz^2 + P_yy xz^2 + P_zz xy^2) + 8 xy xz yz - rho^2 /
        // 27) / rho^2`, each multiplied out over a common denominator.
        let squares = [p_yz * p_yz, p_xz * p_xz, p_xy * p_xy];
        let (c1, c2, c3) = (T::from_f64(d / 3.0) * scale, T::from_f64(2.0 * d * d), T::from_f64(d * d / 9.0) * scale);
        let rest_fourth = c3 * rho_bar;
        let fourth_by = inv_rho * per_scale(0.25 / (d * d));
        let fourth = |na: T, nb: T, square: T| {
            let pair = c1.mul_add(na + nb, na * nb);
            fourth_by * (c2.mul_add(square, pair) - rest_fourth)
        };
        post[k(2, 2, 0)] = fourth(n[0], n[1], squares[2]);
        if three_d {
            post[k(0, 0, 2)] = normal * n[2];
            post[k(1, 0, 1)] = T::from_f64(0.25) * p_xz;
            post[k(0, 1, 1)] = T::from_f64(0.25) * p_yz;
            post[k(2, 0, 2)] = fourth(n[0], n[2], squares[1]);
            post[k(0, 2, 2)] = fourth(n[1], n[2], squares[0]);
            // `3 P_aa` times `scale`.
            let [px, py, pz] = n.map(|n| scale + n);
            let six = T::from_f64(6.0);
            let (six_xy, six_xz) = (six * p_xy, six * p_xz);
            let third_by = inv_rho * per_scale(1.0 / 24.0);
            post[k(2, 1, 1)] = third_by * px.mul_add(p_yz, six_xy * p_xz);
            post[k(1, 2, 1)] = third_by * py.mul_add(p_xz, six_xy * p_yz);
            post[k(1, 1, 2)] = third_by * pz.mul_add(p_xy, six_xz * p_yz);
            // 27 scale^3 times the unscaled k_222 rho^2 (`trace` is the sum
            // of the three `n` over 3).
            let pairs = n[0] * n[1] + n[1] * n[2] + n[2] * n[0];
            let first = (T::from_f64(3.0) * scale).mul_add(trace, pairs);
            let sum = scale.mul_add(first, n[0] * n[1] * n[2]);
            let sum = T::from_f64(18.0).mul_add(px * squares[0] + py * squares[1] + pz * squares[2], sum);
            let sum = T::from_f64(36.0).mul_add(six_xy * p_xz * p_yz, sum);
            let rest = scale * rho_bar * (two * scale + rho_bar);
            post[k(2, 2, 2)] = (inv_rho * inv_rho * (per_scale(1.0 / 216.0) / scale)) * (sum - rest);
        }
        *f = populations::<L, Q, T, FORCED>(post, u, scale);
        (rho, u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::moments;
    use crate::lattice::{D2Q9, D3Q19, D3Q27};

    /// Shifted populations of the product of the per-axis equilibria
    /// `(1/3 + u^2 -+ u) / 2, 2/3 - u^2`: the cumulant operator's equilibrium.
    fn product_equilibrium<L: Lattice<Q>, const Q: usize>(rho: f64, u: [f64; 3]) -> [f64; Q] {
        let one_d = |c: i32, u: f64| match c {
            0 => 2.0 / 3.0 - u * u,
            _ => 0.5 * (1.0 / 3.0 + u * u + c as f64 * u),
        };
        core::array::from_fn(|i| {
            let c = L::C[i];
            rho * (0..L::D).map(|a| one_d(c[a], u[a])).product::<f64>() - L::W[i]
        })
    }

    fn perturbed<L: Lattice<Q>, const Q: usize>() -> [f64; Q] {
        let mut f = product_equilibrium::<L, Q>(1.03, [0.05, -0.04, if L::D == 3 { 0.03 } else { 0.0 }]);
        for i in 0..Q {
            f[i] += 2e-3 * ((i * 5 % 7) as f64 - 3.0) * L::W[i];
        }
        f
    }

    /// `k_abc` of the shifted populations `f` about `u` by its definition,
    /// less the rest value: a sum of `Q` terms of size up to 1, so within
    /// [`DEFINITION_ROUND_OFF`] of the exact value.
    fn central<L: Lattice<Q>, const Q: usize>(f: &[f64; Q], u: [f64; 3], e: [usize; 3]) -> f64 {
        let sum: f64 = (0..Q)
            .map(|i| {
                let p = |axis: usize| (L::C[i][axis] as f64 - u[axis]).powi(e[axis] as i32);
                (f[i] + L::W[i]) * p(0) * p(1) * p(2)
            })
            .sum();
        sum - e.map(|n| M1[n]).iter().product::<f64>()
    }

    const DEFINITION_ROUND_OFF: f64 = 27.0 * f64::EPSILON;

    fn exponents(d: usize) -> impl Iterator<Item = [usize; 3]> {
        (0..27).map(|n| [n / 9, n / 3 % 3, n % 3]).filter(move |e| d == 3 || e[2] == 0)
    }

    fn second_order_as_defined<L: Lattice<Q>, const Q: usize>() {
        let force = [1e-4, -2e-4, if L::D == 3 { 1.5e-4 } else { 0.0 }];
        let f = perturbed::<L, Q>();
        let (rho_bar, rho, u, pi) = second_order::<L, Q, f64, true>(&f.map(|x| x * 1024.0), force, 1024.0);
        // Density and moments come times the scale, as the populations.
        let (rho_bar, pi) = (rho_bar / 1024.0, pi.map(|x| x / 1024.0));
        let (r, j) = moments::<L, Q, f64>(&f);
        assert!((rho_bar - r).abs() < 1e-16 && (rho - 1.0 - r).abs() < 1e-16, "{}: density", L::NAME);
        for a in 0..L::D {
            assert!((rho * u[a] - j[a] - force[a] / 2.0).abs() < 1e-16, "{}: velocity {a}", L::NAME);
        }
        let at = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)];
        for (n, (a, b)) in at.into_iter().enumerate().filter(|(_, (a, b))| *a < L::D && *b < L::D) {
            let mut e = [0; 3];
            e[a] += 1;
            e[b] += 1;
            let exact = central::<L, Q>(&f, u, e);
            assert!((pi[n] - exact).abs() < DEFINITION_ROUND_OFF, "{} k_{e:?}: {} vs {exact}", L::NAME, pi[n]);
        }
        // Unforced, the same moments about the plain velocity.
        let (_, _, u, pi) = second_order::<L, Q, f64, false>(&f, [0.0; 3], 1.0);
        assert!((pi[3] - central::<L, Q>(&f, u, [1, 1, 0])).abs() < DEFINITION_ROUND_OFF, "{}: unforced", L::NAME);
    }

    #[test]
    fn second_order_moments_are_those_of_the_definition() {
        second_order_as_defined::<D2Q9, 9>();
        second_order_as_defined::<D3Q27, 27>();
    }

    /// Central moments with the zeros of a post-collision state go back to
    /// populations that have them.
    fn populations_as_defined<L: Lattice<Q>, const Q: usize, const FORCED: bool>() {
        let u = [0.07, -0.02, if L::D == 3 { 0.04 } else { 0.0 }];
        let f = perturbed::<L, Q>();
        let scale = 1024.0;
        let mut want = [0.0; 27];
        let mut given = [0.0; 27];
        for e in exponents(L::D) {
            let ones = e.iter().filter(|&&n| n == 1).count();
            let first_order = FORCED && e.iter().sum::<usize>() == 1;
            if ones % 2 == 0 || first_order {
                want[k(e[0], e[1], e[2])] = central::<L, Q>(&f, u, e);
                given[k(e[0], e[1], e[2])] =
                    want[k(e[0], e[1], e[2])] * scale * e.map(|n| HALVES[n]).iter().product::<f64>();
            }
        }
        let g = populations::<L, Q, f64, FORCED>(given, u, scale).map(|x| x / scale);
        for e in exponents(L::D) {
            let got = central::<L, Q>(&g, u, e);
            let exact = want[k(e[0], e[1], e[2])];
            assert!(
                (got - exact).abs() < 2.0 * DEFINITION_ROUND_OFF,
                "{} k_{e:?} (forced {FORCED}): {got} vs {exact}",
                L::NAME
            );
        }
    }

    #[test]
    fn populations_have_the_central_moments_given() {
        populations_as_defined::<D2Q9, 9, false>();
        populations_as_defined::<D2Q9, 9, true>();
        populations_as_defined::<D3Q27, 27, false>();
        populations_as_defined::<D3Q27, 27, true>();
    }

    fn invariants<L: Lattice<Q>, const Q: usize>() {
        let force = [1e-4, -2e-4, if L::D == 3 { 1.5e-4 } else { 0.0 }];
        let op = Cumulant::new(0.7);
        let mut f = perturbed::<L, Q>();
        let (r0, j0) = moments::<L, Q, f64>(&f);
        op.collide::<L, Q, true>(&mut f, force, 1.0);
        let (r1, j1) = moments::<L, Q, f64>(&f);
        assert!((r1 - r0).abs() < 1e-15, "{}: mass", L::NAME);
        for a in 0..3 {
            assert!((j1[a] - j0[a] - force[a]).abs() < 1e-15, "{}: momentum {a}", L::NAME);
        }
        // The product equilibrium is a fixed point, at any rates.
        let eq = product_equilibrium::<L, Q>(0.97, [-0.06, 0.08, if L::D == 3 { 0.05 } else { 0.0 }]);
        for op in [Cumulant::new(0.52), Cumulant { shear: 1.3, bulk: 0.8 }] {
            let mut g = eq;
            op.collide::<L, Q, false>(&mut g, [0.0; 3], 1.0);
            for i in 0..Q {
                assert!(
                    (g[i] - eq[i]).abs() < 1e-16,
                    "{} population {i} left equilibrium by {:e}",
                    L::NAME,
                    g[i] - eq[i]
                );
            }
        }
        // Populations given times a power of two collide to that multiple.
        let (mut a, mut b) = (perturbed::<L, Q>(), perturbed::<L, Q>().map(|x| x * 1024.0));
        op.collide::<L, Q, true>(&mut a, force, 1.0);
        op.collide::<L, Q, true>(&mut b, force, 1024.0);
        assert_eq!(a.map(|x| (x * 1024.0).to_bits()), b.map(f64::to_bits), "{}: scaled", L::NAME);
    }

    #[test]
    fn cumulant_conserves_and_keeps_its_equilibrium() {
        invariants::<D2Q9, 9>();
        invariants::<D3Q27, 27>();
    }

    #[test]
    fn built_for_the_tensor_product_lattices() {
        assert!(is_tensor_product(&D2Q9::C, 2));
        assert!(is_tensor_product(&D3Q27::C, 3));
        assert!(!is_tensor_product(&D3Q19::C, 3));
        use crate::CollisionKind::Cumulant;
        assert!(Cumulant.built_for(9) && Cumulant.built_for(27) && !Cumulant.built_for(19));
    }
}
