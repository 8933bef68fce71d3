//! The regularized operator (Latt & Chopard 2006, Math. Comput. Simul. 72,
//! 165) and Smagorinsky's eddy viscosity (Hou, Sterling, Chen & Doolen
//! 1996) on top of it or of BGK.
//!
//! Regularized: only the non-equilibrium part a Navier-Stokes fluid has,
//! the second-order Hermite projection of the stress, survives the
//! collision, `f_i = feq_i + (1 - omega) w_i / (2 c_s^4) Q_i : Pi_neq`; the
//! higher-order non-equilibrium (ghost) parts are dropped, that is relaxed
//! at rate 1. At `omega = 1` it is BGK.
//!
//! Smagorinsky: the relaxation time grows with the local strain, which
//! the non-equilibrium stress gives without derivatives:
//! `tau_eff = (tau + sqrt(tau^2 + 18 sqrt(2) C^2 |Pi_neq| / rho)) / 2`,
//! the eddy viscosity `nu_t = (C Delta)^2 |S|` with `Delta` one cell.
//!
//! Forcing as Guo's: with `S_i` his source term (without `1 - omega/2`),
//! the populations `f + S/2` are collided and `S/2` added after; in BGK this
//! is Guo's update exactly, and it makes `Pi_neq` the stress of the strain,
//! with the force's share `(u F + F u) / 2` taken out.

use super::{non_equilibrium, Collision};
use crate::lattice::Lattice;
use crate::real::Real;
use crate::regularized::{stress, stress_part};

/// `18 sqrt(2) C^2`, the factor of `|Pi_neq| / rho` in the Smagorinsky
/// relaxation time, for the constant `c`.
pub fn smagorinsky_factor(c: f64) -> f64 {
    18.0 * core::f64::consts::SQRT_2 * c * c
}

/// The eddy-viscosity parameters shared by [`Regularized`] and [`Smagorinsky`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Les<T> {
    /// Molecular relaxation time `tau`.
    pub tau: T,
    /// [`smagorinsky_factor`] of the constant; 0 turns the model off.
    pub factor: T,
}

impl<T: Real> Les<T> {
    /// The relaxation rate `1 / tau_eff` for the non-equilibrium stress
    /// `pi` (components as [`crate::regularized::stress`], in storage units
    /// `scale`) of a cell of density `rho`.
    #[inline(always)]
    fn rate(&self, pi: &[T; 6], rho: T, scale: T) -> T {
        let diagonal = pi[0].mul_add(pi[0], pi[1].mul_add(pi[1], pi[2] * pi[2]));
        let off = pi[3].mul_add(pi[3], pi[4].mul_add(pi[4], pi[5] * pi[5]));
        let norm = (off + off + diagonal).sqrt() / scale;
        let tau = self.tau;
        let tau_eff = T::from_f64(0.5) * (tau + tau.mul_add(tau, self.factor * norm / rho).sqrt());
        T::ONE / tau_eff
    }
}

/// Regularized collision, with a Smagorinsky eddy viscosity when
/// `les.factor` is not zero.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Regularized<T> {
    /// `1 / tau`, the rate without eddy viscosity.
    pub omega: T,
    /// The eddy-viscosity model.
    pub les: Les<T>,
}

impl<T: Real> Collision<T> for Regularized<T> {
    #[inline(always)]
    fn collide<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        let c = non_equilibrium::<L, Q, T, FORCED, false>(f, force, scale);
        // The stress of feq - f - S/2, which is -Pi_neq.
        let pi = stress::<L, Q, T>(&c.n);
        let omega = if self.les.factor == T::ZERO { self.omega } else { self.les.rate(&pi, c.rho, scale) };
        // -(f - feq)'s projection; the collided state is feq + (1 - omega) times the projection of f - feq.
        let projected = stress_part::<L, Q, T>(&pi);
        let keep = omega - T::ONE;
        for i in 0..Q {
            f[i] = keep.mul_add(projected[i], c.feq[i]);
            if FORCED {
                f[i] = T::from_f64(0.5).mul_add(c.source[i], f[i]);
            }
        }
        (c.rho, c.u)
    }
}

/// BGK with a Smagorinsky eddy viscosity.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Smagorinsky<T> {
    /// The eddy-viscosity model (its `factor` is not zero).
    pub les: Les<T>,
}

impl<T: Real> Collision<T> for Smagorinsky<T> {
    #[inline(always)]
    fn collide<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        let c = non_equilibrium::<L, Q, T, FORCED, false>(f, force, scale);
        let omega = self.les.rate(&stress::<L, Q, T>(&c.n), c.rho, scale);
        // f + omega (feq - f - S/2) + S: Guo's BGK update at omega.
        for i in 0..Q {
            let relaxed = omega.mul_add(c.n[i], f[i]);
            f[i] = if FORCED { relaxed + c.source[i] } else { relaxed };
        }
        (c.rho, c.u)
    }
}
