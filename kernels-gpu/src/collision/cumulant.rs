//! The cumulant operator of Geier, Schönherr, Pasquali & Krafczyk (2015),
//! Comput. Math. Appl. 70, 507, for the lattices whose velocities are all
//! of `{-1, 0, 1}^D` (D2Q9, D3Q27).
//!
//! The populations go to central moments `k_abc = sum f (c_x - u_x)^a
//! (c_y - u_y)^b (c_z - u_z)^c` (each exponent 0 to 2) by the chimera
//! transform: three passes of 1D transforms along z, y and x, 3 populations
//! at a time, rather than a 27 x 27 matrix. The transform is the
//! well-conditioned one of the paper's appendix: it works on the shifted
//! populations `f - w` and yields the moments less their values at rest
//! (`prod m(a)`, `m = 1, 0, 1/3`), so that no large constant is added and
//! taken away again in single precision.
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

use super::chimera::{self, k};
use super::Collision;
use crate::cell::density_velocity_scaled;
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
/// Per-axis central moments of the rest weights, orders 0, 1, 2.
const M1: [f64; 3] = [1.0, 0.0, 1.0 / 3.0];

/// `x + k` for a constant `k`, with nothing added for `k = 0` (adding `+0.0`
/// does not fold away: `-0 + 0 = +0`).
#[inline(always)]
fn plus_const<T: Real>(x: T, k: f64) -> T {
    if k == 0.0 {
        x
    } else {
        x + T::from_f64(k)
    }
}

/// One line of the forward chimera transform: the shifted populations at
/// `c = -1, 0, 1` (whose rest values sum to `k`) to their central moments of
/// orders 0, 1, 2 about `u`, less the rest values' moments about 0.
#[inline(always)]
fn forward<T: Real>(v: [T; 3], u: T, k: f64) -> [T; 3] {
    let sum = v[0] + v[1] + v[2];
    let diff = v[2] - v[0];
    let total = plus_const(sum, k);
    let k1 = (-u).mul_add(total, diff);
    let k2 = (u * u).mul_add(total, (T::from_f64(-2.0) * u).mul_add(diff, v[0] + v[2]));
    [sum, k1, k2]
}

/// The inverse of [`forward`].
#[inline(always)]
fn backward<T: Real>(m: [T; 3], u: T, k: f64) -> [T; 3] {
    let total = plus_const(m[0], k);
    let half = T::from_f64(0.5);
    let even = u.mul_add(m[1], half * (u * u).mul_add(total, m[2]));
    let odd = half * u.mul_add(total, m[1]);
    [even - odd, T::from_f64(-2.0).mul_add(even, m[0]), even + odd]
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

/// The central moments (less their rest values) of the shifted populations
/// `g` about `u`, at `9a + 3b + c` for `k_abc`: passes along z (in 3D), y
/// and x.
#[inline(always)]
pub(crate) fn central_moments<L: Lattice<Q>, const Q: usize, T: Real>(g: &[T; Q], u: [T; 3]) -> [T; 27] {
    let mut m = chimera::gather::<L, Q, T>(g);
    unrolled!(axis P < L::D => {
        let axis = L::D - 1 - P;
        chimera::pass(&mut m, axis, |v, line| forward(v, u[axis], rest_sum(axis, line)));
    });
    m
}

/// The shifted populations of the central moments `m` about `u` (the
/// inverse of [`central_moments`]).
#[inline(always)]
pub(crate) fn populations<L: Lattice<Q>, const Q: usize, T: Real>(mut m: [T; 27], u: [T; 3]) -> [T; Q] {
    unrolled!(axis AXIS < L::D => {
        chimera::pass(&mut m, AXIS, |v, line| backward(v, u[AXIS], rest_sum(AXIS, line)));
    });
    chimera::scatter::<L, Q, T>(&m)
}

impl<T: Real> Collision<T> for Cumulant<T> {
    #[inline(always)]
    fn collide<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        let force = if FORCED { force } else { [T::ZERO; 3] };
        let (rho, u) = density_velocity_scaled::<L, Q, T>(f, force, scale);
        let unscale = T::ONE / scale;
        let mut g = [T::ZERO; Q];
        for i in 0..Q {
            g[i] = f[i] * unscale;
        }
        let m = central_moments::<L, Q, T>(&g, u);
        let rho_bar = m[0];
        let three_d = L::D == 3;
        let (w, wb) = (self.shear, self.bulk);
        let (one, half, third) = (T::ONE, T::from_f64(0.5), T::from_f64(1.0 / 3.0));
        let inv_rho = one / rho;

        // Second order: deviators, trace's distance from equilibrium, and
        // the velocity gradients they imply (Eqs. 58-60 of the paper).
        let (xx, yy, zz) = (m[k(2, 0, 0)], m[k(0, 2, 0)], if three_d { m[k(0, 0, 2)] } else { T::ZERO });
        let dev_y = xx - yy;
        let dev_z = if three_d { xx - zz } else { T::ZERO };
        let dim = T::from_f64(L::D as f64);
        // Rest trace D/3 less the equilibrium D rho/3.
        let trace = xx + yy + zz - dim * third * rho_bar;
        let d = if three_d {
            let dxu = -half * inv_rho * (w * (dev_y + dev_z) + wb * trace);
            let k = T::from_f64(1.5) * w * inv_rho;
            [dxu, k.mul_add(dev_y, dxu), k.mul_add(dev_z, dxu)]
        } else {
            let dxu = T::from_f64(-0.75) * inv_rho * (w * dev_y + wb * trace);
            [dxu, (T::from_f64(1.5) * w * inv_rho).mul_add(dev_y, dxu), T::ZERO]
        };
        // The normal stresses' correction -3 rho u_a^2 D_a (Eqs. 61-63).
        let c = [0, 1, 2].map(|a| T::from_f64(-3.0) * rho * u[a] * u[a] * d[a]);
        let (keep, keep_b) = (one - w, one - wb);
        let (src, src_b) = (one - half * w, one - half * wb);
        let dev_y = keep.mul_add(dev_y, src * (c[0] - c[1]));
        let dev_z = keep.mul_add(dev_z, src * (c[0] - c[2]));
        let trace = keep_b.mul_add(trace, src_b * (c[0] + c[1] + c[2])) + dim * third * rho_bar;
        // Post-collision normal moments from trace and deviators.
        let (xx, yy, zz) = if three_d {
            (
                third * (trace + dev_y + dev_z),
                third * (trace - T::from_f64(2.0) * dev_y + dev_z),
                third * (trace + dev_y - T::from_f64(2.0) * dev_z),
            )
        } else {
            (half * (trace + dev_y), half * (trace - dev_y), T::ZERO)
        };
        let xy = keep * m[k(1, 1, 0)];
        let (xz, yz) = if three_d { (keep * m[k(1, 0, 1)], keep * m[k(0, 1, 1)]) } else { (T::ZERO, T::ZERO) };

        let mut post = [T::ZERO; 27];
        post[k(0, 0, 0)] = rho_bar;
        post[k(1, 0, 0)] = half * force[0];
        post[k(0, 1, 0)] = half * force[1];
        post[k(2, 0, 0)] = xx;
        post[k(0, 2, 0)] = yy;
        post[k(1, 1, 0)] = xy;
        // Higher orders: a Gaussian's moments of the second-order ones,
        // less their rest values, written so that the rest parts cancel
        // exactly (`P_aa = 1/3 + aa`).
        let ninth = T::from_f64(1.0 / 9.0);
        let two = T::from_f64(2.0);
        let fourth = |a: T, b: T, ab: T| inv_rho * (third.mul_add(a + b, a * b) + two * ab * ab - ninth * rho_bar);
        post[k(2, 2, 0)] = fourth(xx, yy, xy);
        if three_d {
            post[k(0, 0, 1)] = half * force[2];
            post[k(0, 0, 2)] = zz;
            post[k(1, 0, 1)] = xz;
            post[k(0, 1, 1)] = yz;
            post[k(2, 0, 2)] = fourth(xx, zz, xz);
            post[k(0, 2, 2)] = fourth(yy, zz, yz);
            let (pxx, pyy, pzz) = (third + xx, third + yy, third + zz);
            post[k(2, 1, 1)] = inv_rho * pxx.mul_add(yz, two * xy * xz);
            post[k(1, 2, 1)] = inv_rho * pyy.mul_add(xz, two * xy * yz);
            post[k(1, 1, 2)] = inv_rho * pzz.mul_add(xy, two * xz * yz);
            let sixth = ninth * (xx + yy + zz)
                + third * (xx * yy + yy * zz + zz * xx)
                + xx * yy * zz
                + two * (pxx * yz * yz + pyy * xz * xz + pzz * xy * xy)
                + T::from_f64(8.0) * xy * xz * yz
                - T::from_f64(1.0 / 27.0) * rho_bar * (two + rho_bar);
            post[k(2, 2, 2)] = sixth * inv_rho * inv_rho;
        }
        let g = populations::<L, Q, T>(post, u);
        for i in 0..Q {
            f[i] = g[i] * scale;
        }
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

    fn transform_inverts<L: Lattice<Q>, const Q: usize>() {
        let f = perturbed::<L, Q>();
        let u = [0.07, -0.02, if L::D == 3 { 0.04 } else { 0.0 }];
        let back = populations::<L, Q, f64>(central_moments::<L, Q, f64>(&f, u), u);
        for i in 0..Q {
            assert!((back[i] - f[i]).abs() < 1e-16, "{} population {i}: {} vs {}", L::NAME, back[i], f[i]);
        }
        // The moments are those of the definition, less the rest values.
        let m = central_moments::<L, Q, f64>(&f, u);
        for (a, b, c) in [(0, 0, 0), (1, 0, 0), (2, 0, 0), (1, 1, 0), (2, 2, 0), (2, 1, 1), (2, 2, 2)] {
            if L::D == 2 && c > 0 {
                continue;
            }
            let exact: f64 = (0..Q)
                .map(|i| {
                    let p = |axis: usize, n: i32| (L::C[i][axis] as f64 - u[axis]).powi(n);
                    (f[i] + L::W[i]) * p(0, a) * p(1, b) * p(2, c)
                })
                .sum();
            let rest = [a, b, c].map(|n| M1[n as usize]).iter().product::<f64>();
            let got = m[k(a as usize, b as usize, c as usize)];
            assert!((got + rest - exact).abs() < 1e-15, "{} k_{a}{b}{c}: {} vs {exact}", L::NAME, got + rest);
        }
    }

    #[test]
    fn chimera_transform_inverts_and_gives_the_central_moments() {
        transform_inverts::<D2Q9, 9>();
        transform_inverts::<D3Q27, 27>();
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
                assert!((g[i] - eq[i]).abs() < 1e-16, "{} population {i} left equilibrium", L::NAME);
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
