//! Sponge layers: an absorbing band of cells in front of an outlet that
//! damps pressure waves before they reach it, so they do not reflect back
//! into the domain.
//!
//! After each step, each listed cell's post-collision populations take
//!
//! `f_i <- f_i - sigma [feq_i(rho, u) - feq_i(rho_out, u_out)]`,
//!
//! with `rho`, `u` the cell's density and velocity, `rho_out` the outlet's
//! density, `u_out` the band's target velocity (the mean outflow) and
//! `sigma` the cell's strength, largest next to the outlet and falling to
//! zero across the band. The equilibrium's density and momentum are `rho`
//! and `rho u`, so this moves both a fraction `sigma` of the way to the
//! target: the density and the velocity of a sound wave decay together,
//! which keeps the wave's own ratio between them, so the band takes it in
//! instead of turning it round. (Damping the density alone reflects: the
//! velocity left behind is half a wave going back.) Vortices that reach the
//! band decay too, before they meet the outlet.
//!
//! The update is a boundary group of its own, run over its list after the
//! step's other updates, as the open boundaries and curved walls are
//! ([`crate::groups`], [`crate::curved`]): the bulk kernels do not change.

use crate::cell::{density_velocity, equilibrium, no_force};
use crate::grid::{Grid, Neighbourhood};
use crate::lattice::Lattice;
use crate::params::StepParams;
use crate::readonly::ReadOnly;
use crate::real::Real;
use crate::storage::{cell_noise, store_noise, Storage};
use crate::stream::{rescaled, stored_slot, Streaming};

/// A sponge group: `#[repr(C)]`, a kernel argument by value. The tables
/// live in the memory of whoever runs [`absorb`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpongeCells<T> {
    /// Storage number of each listed cell.
    cells: *const u32,
    /// The strength `sigma` (0 to 1) of each listed cell.
    strength: *const T,
    /// The density the band relaxes to: the outlet's.
    density: T,
    /// The velocity the band relaxes to: the mean outflow.
    velocity: [T; 3],
    /// Number of listed cells.
    pub count: u32,
}

// SAFETY: the tables are read-only and outlive every use (the contract of
// `SpongeCells::new`).
unsafe impl<T> Send for SpongeCells<T> {}
unsafe impl<T> Sync for SpongeCells<T> {}

impl<T: Real> SpongeCells<T> {
    /// The group of `count` cells at `cells` with their strengths at
    /// `strength`, relaxing towards `density` and `velocity`.
    ///
    /// # Safety
    /// Both tables must hold `count` values and stay valid and unchanged
    /// while this (or a copy) is used; the cells must be distinct flow
    /// cells of the grid the kernels run on, none of them open.
    pub const unsafe fn new(cells: *const u32, strength: *const T, density: T, velocity: [T; 3], count: u32) -> Self {
        Self { cells, strength, density, velocity, count }
    }
}

/// Damps listed cell `k` after step `p.step`: reads its post-collision
/// populations where the step stored them, relaxes their density and
/// velocity towards the band's and stores them back in place (16-bit
/// formats with their own rounding noise, drawn from the step's
/// bit-complement so that it differs from the step's).
///
/// # Safety
/// `f` must hold the populations step `p.step` wrote (the one buffer of
/// Esoteric Pull, the written one of two-lattice pull); `k < sponge.count`.
#[inline(always)]
pub unsafe fn absorb<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    f: *mut S,
    sponge: &SpongeCells<S::Real>,
    k: u32,
) {
    let cell = grid.cell_of(*sponge.cells.add(k as usize));
    let nb = crate::stream::neighbours::<L, Q, G>(grid, cell);
    let odd = p.step & 1 == 1;
    let mut fi = [S::Real::ZERO; Q];
    for (i, v) in fi.iter_mut().enumerate() {
        *v = S::fetch(f.add(stored_slot::<L, Q>(scheme, odd, &nb, i))).load_scaled();
    }
    let fi = rescaled(fi, 1.0 / S::SCALE);
    let (rho, u) = density_velocity::<L, Q, S::Real>(&fi, no_force());
    let (now, target) =
        (equilibrium::<L, Q, S::Real>(rho, u), equilibrium::<L, Q, S::Real>(sponge.density, sponge.velocity));
    let sigma = S::Real::load(sponge.strength.add(k as usize));
    let mut damped = fi;
    for i in 0..Q {
        damped[i] -= sigma * (now[i] - target[i]);
    }
    let damped = rescaled(damped, S::SCALE);
    let noise = if S::STOCHASTIC && !damped[0].is_nan() { cell_noise(nb.seed_cell(p.z_offset), !p.step) } else { 0 };
    for (i, &v) in damped.iter().enumerate() {
        *f.add(stored_slot::<L, Q>(scheme, odd, &nb, i)) = S::store_scaled_dithered(v, store_noise(noise, i));
    }
}
