//! The binary fluid's per-site physics: the symmetric free energy of Ludwig
//! (Desplat, Pagonabarraga and Bladon 2001),
//!
//! ```text
//! f(φ, ∇φ) = A/2 φ² + B/4 φ⁴ + κ/2 |∇φ|²,   μ = A φ + B φ³ − κ ∇²φ,
//! ```
//!
//! with `A < 0 < B`: two phases at `φ = ±φ*`, `φ* = sqrt(−A/B)`, joined by
//! the profile `φ* tanh(x/ξ)`, `ξ = sqrt(−2κ/A)`, of surface tension
//! `σ = sqrt(−8κA³/(9B²))`; and the finite-difference stencils that give
//! `∇φ`, `∇²φ` and `∇μ` from a site's lattice neighbours.
//!
//! The stencils weigh the neighbours by the lattice weights, which makes
//! them isotropic to the order the lattice is: a force `−φ∇μ` computed so
//! keeps the spurious currents around a droplet small. [`site`] puts them
//! together into a step.

use crate::lattice::{Lattice, CS2};
use crate::real::Real;

#[cfg(target_arch = "nvptx64")]
pub(crate) mod entry;
pub mod site;

pub use site::BinaryParams;

/// The binary fluid's kernels: the entry point of `kernel` on lattice `l`
/// in precision `p` is `binary_<kernel>_<l>_<p>`.
pub const KERNELS: [&str; 4] = ["mu", "collide_bgk", "collide_mrt", "phi"];

/// The symmetric free energy's parameters (lattice units), in the
/// arithmetic's precision.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FreeEnergy<T> {
    /// `A` (negative: the mixture separates).
    pub a: T,
    /// `B` (positive).
    pub b: T,
    /// `κ`, the gradient term's weight (positive).
    pub kappa: T,
}

impl<T: Real> FreeEnergy<T> {
    /// The parameters `a`, `b`, `kappa` in `T`.
    pub fn new(a: f64, b: f64, kappa: f64) -> Self {
        Self { a: T::from_f64(a), b: T::from_f64(b), kappa: T::from_f64(kappa) }
    }

    /// The chemical potential `μ = A φ + B φ³ − κ ∇²φ`.
    #[inline(always)]
    pub fn chemical_potential(&self, phi: T, laplacian: T) -> T {
        let cubic = self.b * phi * phi;
        (self.a + cubic) * phi - self.kappa * laplacian
    }

    /// The bulk free energy density `A/2 φ² + B/4 φ⁴`.
    #[inline(always)]
    pub fn bulk(&self, phi: T) -> T {
        let p2 = phi * phi;
        let (half, quarter) = (T::from_f64(0.5), T::from_f64(0.25));
        (half * self.a + quarter * self.b * p2) * p2
    }

    /// The thermodynamic pressure `φ μ − A/2 φ² − B/4 φ⁴` where `φ` is
    /// uniform (away from interfaces), to add to the fluid's `ρ c_s²`.
    #[inline(always)]
    pub fn bulk_pressure(&self, phi: T, mu: T) -> T {
        phi * mu - self.bulk(phi)
    }
}

impl FreeEnergy<f64> {
    /// The order parameter of the two phases, `φ* = sqrt(−A/B)`.
    pub fn phi_star(&self) -> f64 {
        Real::sqrt(-self.a / self.b)
    }

    /// The interface width `ξ = sqrt(−2κ/A)` of the profile `φ* tanh(x/ξ)`.
    pub fn width(&self) -> f64 {
        Real::sqrt(-2.0 * self.kappa / self.a)
    }

    /// The surface tension `σ = sqrt(−8κA³/(9B²))`.
    pub fn surface_tension(&self) -> f64 {
        Real::sqrt(-8.0 * self.kappa * self.a * self.a * self.a / (9.0 * self.b * self.b))
    }
}

/// `∇v` at a site from `v(x + c_i)`, the values at its lattice neighbours
/// in the order of `L::C`: `Σ w_i c_i v_i / c_s²`, exact for fields of
/// degree two.
#[inline(always)]
pub fn gradient<L: Lattice<Q>, const Q: usize, T: Real>(v: &[T; Q]) -> [T; 3] {
    let mut g = [T::ZERO; 3];
    for i in 0..Q {
        let wv = T::from_f64(L::W[i] / CS2) * v[i];
        for a in 0..3 {
            if L::C[i][a] != 0 {
                g[a] = T::from_f64(L::C[i][a] as f64).mul_add(wv, g[a]);
            }
        }
    }
    g
}

/// `∇²v` at a site from `v(x + c_i)` as for [`gradient`] (`v[0]`, the
/// rest velocity's in every lattice, is the site's own): `2 Σ w_i (v_i − v_0) / c_s²`, exact for
/// fields of degree three.
#[inline(always)]
pub fn laplacian<L: Lattice<Q>, const Q: usize, T: Real>(v: &[T; Q]) -> T {
    let own = v[0];
    let mut sum = T::ZERO;
    for i in 0..Q {
        if L::C[i] != [0; 3] {
            sum = T::from_f64(L::W[i]).mul_add(v[i] - own, sum);
        }
    }
    T::from_f64(2.0 / CS2) * sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::{D2Q9, D3Q19, D3Q27};

    /// A quadratic field and its gradient (exact for the gradient stencil).
    fn quadratic([x, y, z]: [f64; 3]) -> (f64, [f64; 3]) {
        let v = 0.3 + 0.7 * x - 1.1 * y + 0.4 * z + 0.5 * x * x - 0.2 * x * y + 0.9 * z * z - 0.3 * y * z;
        (v, [0.7 + x - 0.2 * y, -1.1 - 0.2 * x - 0.3 * z, 0.4 + 1.8 * z - 0.3 * y])
    }

    /// A cubic field and its Laplacian (exact for the Laplacian stencil).
    fn cubic([x, y, z]: [f64; 3]) -> (f64, f64) {
        let v = 0.5 * x * x - 0.2 * x * y + 0.9 * z * z + 0.25 * x * x * x - 0.6 * y * y * z + 0.1 * x * y * z;
        (v, 1.0 + 1.8 + 1.5 * x - 1.2 * z)
    }

    fn check<L: Lattice<Q>, const Q: usize>() {
        let p = [0.4, -1.3, if L::D == 3 { 2.1 } else { 0.0 }];
        let at = |i: usize| core::array::from_fn(|a| p[a] + L::C[i][a] as f64);
        let (_, g) = quadratic(p);
        let got = gradient::<L, Q, f64>(&core::array::from_fn(|i| quadratic(at(i)).0));
        for a in 0..L::D {
            assert!((got[a] - g[a]).abs() < 1e-12, "{}: gradient {a}: {} vs {}", L::NAME, got[a], g[a]);
        }
        let (_, lap) = cubic(p);
        let got = laplacian::<L, Q, f64>(&core::array::from_fn(|i| cubic(at(i)).0));
        // In 2D the z terms are absent: z = 0 and no c_z.
        let lap = if L::D == 3 { lap } else { 1.0 + 1.5 * p[0] };
        assert!((got - lap).abs() < 1e-12, "{}: laplacian {got} vs {lap}", L::NAME);
    }

    #[test]
    fn stencils_are_exact_to_their_order() {
        check::<D2Q9, 9>();
        check::<D3Q19, 19>();
        check::<D3Q27, 27>();
    }

    #[test]
    fn the_two_phases_and_their_interface() {
        let fe = FreeEnergy::<f64>::new(-0.0625, 0.0625, 0.04);
        assert!((fe.phi_star() - 1.0).abs() < 1e-15);
        assert!((fe.width() - 1.131_370_849_898_476).abs() < 1e-12);
        // Bulk phases: μ = 0 and the same pressure.
        for phi in [1.0, -1.0] {
            assert!(fe.chemical_potential(phi, 0.0).abs() < 1e-15);
            assert!((fe.bulk_pressure(phi, 0.0) - 0.0625 / 4.0).abs() < 1e-15);
        }
        // σ is the excess free energy of the tanh profile, ∫ κ φ'² dx.
        let (xi, k) = (fe.width(), fe.kappa);
        let integral: f64 = (-4000..4000)
            .map(|n| {
                let x = n as f64 * 0.01;
                let d = 1.0 / (xi * (x / xi).cosh().powi(2));
                k * d * d * 0.01
            })
            .sum();
        assert!((integral - fe.surface_tension()).abs() < 1e-9 * integral.max(1.0) + 1e-6, "{integral}");
    }
}
