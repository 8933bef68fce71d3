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
//!
//! Both take `Pi_neq` as the populations' own stress less the equilibrium's
//! in closed form (`non_equilibrium_stress`), not as the stress of
//! `f - feq`: the populations are then summed once and no array of
//! non-equilibrium parts is live beside them, which in 16-bit storage, where
//! these kernels are short of registers, is the difference that counts.

use super::Collision;
use crate::cell::{density_velocity_scaled, equilibrium_over_weights, no_force, relax_bgk, GuoSource};
use crate::lattice::Lattice;
use crate::real::Real;
use crate::regularized::{stress, stress_part, PAIRS};

/// `-Pi_neq`, the stress `sum_i c_i c_i (feq_i - f_i - S_i / 2)` (components
/// as [`stress`]) of the shifted populations `f` (times `scale`) of a cell of
/// density `rho` and velocity `u`, with Guo's source `S` for `force` when
/// `FORCED`. The equilibrium's stress is `rho_bar / 3 I + rho u u` and the
/// source's `u F + F u` on each of the lattices here (their weights are
/// isotropic to fourth order), so only the populations are summed;
/// `rho_bar` is `rho - 1` as the equilibrium takes it.
#[inline(always)]
pub(crate) fn non_equilibrium_stress<L: Lattice<Q>, const Q: usize, T: Real, const FORCED: bool>(
    f: &[T; Q],
    rho: T,
    u: [T; 3],
    force: [T; 3],
    scale: T,
) -> [T; 6] {
    let own = stress::<L, Q, T>(f);
    let third_rho_bar = T::from_f64(1.0 / 3.0) * (rho - T::ONE);
    let mut pi = [T::ZERO; 6];
    for k in 0..6 {
        let (a, b) = PAIRS[k];
        if a >= L::D || b >= L::D {
            continue; // out of a two-dimensional lattice's plane: zero
        }
        let mut eq = (rho * u[a]).mul_add(u[b], if a == b { third_rho_bar } else { T::ZERO });
        if FORCED {
            eq = T::from_f64(-0.5).mul_add(u[a].mul_add(force[b], u[b] * force[a]), eq);
        }
        pi[k] = eq.mul_add(scale, -own[k]);
    }
    pi
}

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
        // `1 / rho` is the reciprocal the velocity took (the compiler keeps
        // one), and `2 / (2 tau_eff)` is `1 / tau_eff` to the bit (halving is
        // exact): one division in place of two, where the 16-bit kernels
        // are limited by instructions.
        let strain = self.factor * norm * (T::ONE / rho);
        T::from_f64(2.0) / (tau + tau.mul_add(tau, strain).sqrt())
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
        let force = if FORCED { force } else { no_force() };
        let (rho, u) = density_velocity_scaled::<L, Q, T>(f, force, scale);
        let pi = non_equilibrium_stress::<L, Q, T, FORCED>(f, rho, u, force, scale);
        let omega = if self.les.factor == T::ZERO { self.omega } else { self.les.rate(&pi, rho, scale) };
        // -(f - feq)'s projection; the collided state is feq + (1 - omega) times the projection of f - feq.
        let projected = stress_part::<L, Q, T>(&pi);
        let keep = omega - T::ONE;
        let x = equilibrium_over_weights::<L, Q, T>(rho, u);
        let guo = GuoSource::new(T::ZERO, force, u, scale);
        for i in 0..Q {
            let feq = T::from_f64(L::W[i]) * scale * x[i];
            f[i] = keep.mul_add(projected[i], feq);
            if FORCED {
                f[i] = T::from_f64(0.5).mul_add(guo.term::<L, Q>(i), f[i]);
            }
        }
        (rho, u)
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
        let force = if FORCED { force } else { no_force() };
        let (rho, u) = density_velocity_scaled::<L, Q, T>(f, force, scale);
        let pi = non_equilibrium_stress::<L, Q, T, FORCED>(f, rho, u, force, scale);
        // Guo's BGK update at the cell's rate, as BGK writes it.
        relax_bgk::<L, Q, T, FORCED>(f, rho, u, self.les.rate(&pi, rho, scale), force, scale);
        (rho, u)
    }
}
