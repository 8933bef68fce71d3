//! The thermal model's per-cell functions, the kernels of Calore et al.
//! (2016) on the framed box ([`crate::thermal::frame`]):
//!
//! - [`propagate`]: pull, `f_i(x) <- f_i(x - c_i)` from one buffer into the other;
//! - [`wall`]: the populations that enter the three rows next to a wall
//!   from outside, after propagate (see there);
//! - [`collide`]: BGK with the shifted equilibrium, in place;
//! - [`propagate_collide`]: the two fused, for rows no wall reaches;
//! - [`periodic_halo`]: a halo cell's copy of the site it wraps to.
//!
//! The buffers hold post-collision populations between steps, as the
//! fused pull scheme leaves them.

use crate::grid::{Grid, Neighbourhood};
use crate::lattice::opposite;
use crate::real::Real;
use crate::thermal::d2q37::{equilibrium, moments, C, D, Q};
use crate::thermal::frame::{Frame, FrameCell, HALO, PAD};

/// A collision operator of the thermal model (the seam other operators,
/// such as one with a free Prandtl number, would take).
pub trait ThermalCollision<T: Real>: Copy + Send + Sync + 'static {
    /// Relaxes a cell's populations in place.
    fn collide(&self, f: &mut [T; Q]);
}

/// Single-relaxation-time collision towards the equilibrium at the shifted
/// velocity and temperature of Sbragaglia et al. (2009), which brings in a
/// body force `g` per unit mass:
///
/// `f_i <- f_i + (feq_i(rho, u + tau g, T + tau (1 - tau) g^2 / D) - f_i) / tau`.
///
/// The shifts add `rho g` to the momentum and `rho g . (u + g / 2)` to the
/// energy each step: the work of the force over the step. The hydrodynamic
/// fields are `u + g / 2` and `T + g^2 / (4 D)` ([`ThermalBgk::fields`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct ThermalBgk<T> {
    /// Relaxation rate `1 / tau`.
    pub omega: T,
    /// Temperature shift `tau (1 - tau) g^2 / D`.
    pub shift_t: T,
    /// Velocity shift `tau g`.
    pub shift_u: [T; 2],
    /// Body force per unit mass `g`.
    pub gravity: [T; 2],
}

impl<T: Real> ThermalBgk<T> {
    /// The operator of relaxation time `tau` under the acceleration `gravity`
    /// (lattice units; the shifts are computed in f64 and rounded once).
    pub fn new(tau: f64, gravity: [f64; 2]) -> Self {
        let g2 = gravity[0] * gravity[0] + gravity[1] * gravity[1];
        Self {
            omega: T::from_f64(1.0 / tau),
            shift_t: T::from_f64(tau * (1.0 - tau) * g2 / D as f64),
            shift_u: [T::from_f64(tau * gravity[0]), T::from_f64(tau * gravity[1])],
            gravity: [T::from_f64(gravity[0]), T::from_f64(gravity[1])],
        }
    }

    /// Density, velocity and temperature of a cell whose populations `f`
    /// just collided: the state before the collision, `rho`, `u = u' - g`
    /// and the energy less the force's work, with the hydrodynamic shifts
    /// `u + g / 2` and `T + g^2 / (4 D)`.
    pub fn fields(&self, f: &[T; Q]) -> (T, [T; 2], T) {
        let (rho, u_post, t_post) = moments(f);
        let g = self.gravity;
        let u = [u_post[0] - g[0], u_post[1] - g[1]];
        let half = T::from_f64(0.5);
        let g2 = g[0].mul_add(g[0], g[1] * g[1]);
        // Specific energies (per unit mass, times 2): after = before + 2 g.u + g^2.
        let e_post = u_post[0].mul_add(u_post[0], u_post[1].mul_add(u_post[1], T::from_f64(D as f64) * t_post));
        let e = e_post - T::from_f64(2.0) * g[0].mul_add(u[0], g[1] * u[1]) - g2;
        let t = (e - u[0].mul_add(u[0], u[1] * u[1])) * T::from_f64(1.0 / D as f64);
        let hydro_u = [g[0].mul_add(half, u[0]), g[1].mul_add(half, u[1])];
        (rho, hydro_u, g2.mul_add(T::from_f64(1.0 / (4.0 * D as f64)), t))
    }

    /// Populations that, read back by [`ThermalBgk::fields`], give the
    /// density `rho`, hydrodynamic velocity `u` and temperature `t`: the
    /// equilibrium of the state just after a collision.
    pub fn initial(&self, rho: T, u: [T; 2], t: T) -> [T; Q] {
        let g = self.gravity;
        let half = T::from_f64(0.5);
        let g2 = g[0].mul_add(g[0], g[1] * g[1]);
        let before = [u[0] - half * g[0], u[1] - half * g[1]];
        let t_before = t - g2 * T::from_f64(1.0 / (4.0 * D as f64));
        let after = [before[0] + g[0], before[1] + g[1]];
        // Twice the specific energy after: before's plus 2 g.u + g^2.
        let e = before[0].mul_add(before[0], before[1].mul_add(before[1], T::from_f64(D as f64) * t_before))
            + T::from_f64(2.0) * g[0].mul_add(before[0], g[1] * before[1])
            + g2;
        let t_after = (e - after[0].mul_add(after[0], after[1] * after[1])) * T::from_f64(1.0 / D as f64);
        equilibrium(rho, after, t_after)
    }
}

impl<T: Real> ThermalCollision<T> for ThermalBgk<T> {
    #[inline(always)]
    fn collide(&self, f: &mut [T; Q]) {
        let (rho, u, temp) = moments(f);
        let shifted = [u[0] + self.shift_u[0], u[1] + self.shift_u[1]];
        let feq = equilibrium(rho, shifted, temp + self.shift_t);
        for i in 0..Q {
            f[i] = (feq[i] - f[i]).mul_add(self.omega, f[i]);
        }
    }
}

/// Everything the thermal kernels take by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct ThermalParams<T> {
    /// The box and the rows a launch covers.
    pub frame: Frame,
    /// Which sides of the box are walls: [`WALL_BOTTOM`], [`WALL_TOP`]
    /// (a tile of a larger box may have one, both or none).
    pub walls: u32,
    /// Zero: no implicit padding.
    pub reserved: u32,
    /// The collision operator.
    pub collision: ThermalBgk<T>,
    /// Temperatures of the bottom and top walls.
    pub wall_temperature: [T; 2],
}

/// [`ThermalParams::walls`]: the box's bottom (`y = 0`) side is a wall.
pub const WALL_BOTTOM: u32 = 1;
/// [`ThermalParams::walls`]: the box's top (`y = ny - 1`) side is a wall.
pub const WALL_TOP: u32 = 2;

/// Pulls the populations of `cell` from `src` into `dst`.
///
/// # Safety
/// `src` and `dst` are buffers of `Q * grid.cells()` values; the cells
/// `cell - c_i` lie in the grid.
#[inline(always)]
pub unsafe fn propagate<T: Real, G: Grid>(grid: &G, src: *const T, dst: *mut T, cell: G::Cell) {
    let nb = grid.neighbours(cell, &C);
    for i in 0..Q {
        // SAFETY: as the caller guarantees.
        unsafe { *dst.add(grid.population(Q, cell, i)) = T::load(src.add(nb.population(opposite(i), i))) };
    }
}

/// Collides the populations of `cell` in place.
///
/// # Safety
/// `f` is a buffer of `Q * grid.cells()` values.
#[inline(always)]
pub unsafe fn collide<T: Real, K: ThermalCollision<T>, G: Grid>(grid: &G, collision: &K, f: *mut T, cell: G::Cell) {
    let mut v = [T::ZERO; Q];
    for i in 0..Q {
        // SAFETY: as the caller guarantees.
        v[i] = unsafe { *f.add(grid.population(Q, cell, i)) };
    }
    collision.collide(&mut v);
    for i in 0..Q {
        // SAFETY: as above.
        unsafe { *f.add(grid.population(Q, cell, i)) = v[i] };
    }
}

/// [`propagate`] then [`collide`], in registers.
///
/// # Safety
/// As [`propagate`].
#[inline(always)]
pub unsafe fn propagate_collide<T: Real, K: ThermalCollision<T>, G: Grid>(
    grid: &G,
    collision: &K,
    src: *const T,
    dst: *mut T,
    cell: G::Cell,
) {
    let nb = grid.neighbours(cell, &C);
    let mut v = [T::ZERO; Q];
    for i in 0..Q {
        // SAFETY: as the caller guarantees.
        v[i] = unsafe { T::load(src.add(nb.population(opposite(i), i))) };
    }
    collision.collide(&mut v);
    for i in 0..Q {
        // SAFETY: as above.
        unsafe { *dst.add(grid.population(Q, cell, i)) = v[i] };
    }
}

/// Rows next to each wall whose populations may come from outside.
pub const WALL_ROWS: u32 = HALO;

/// The wall at the bottom (`0`, below row 0) or the top (`1`, above row
/// `ny - 1`) of column `x`, after [`propagate`] filled `dst` from `src`:
/// a diffuse wall at rest and at temperature `temperature` (the kinetic
/// boundary of Ansumali and Karlin 2002). In the three rows a population
/// can reach from beyond the wall, each population that came from outside
/// is replaced by the wall's Maxwellian `rho_w feq_i(1, 0, T_w)`; `rho_w`
/// makes the mass that enters the column equal the mass its three rows sent
/// out through the wall, so the walls conserve mass exactly and carry no
/// flux.
///
/// # Safety
/// `src` and `dst` are buffers of `Q * frame.cells()` values; `x < nx`;
/// `ny >= 2 WALL_ROWS`.
#[inline(always)]
pub unsafe fn wall<T: Real>(frame: &Frame, src: *const T, dst: *mut T, x: u32, top: bool, temperature: T) {
    let maxwellian = equilibrium(T::ONE, [T::ZERO; 2], temperature);
    let row = |k: u32| if top { frame.ny - 1 - k } else { k };
    // `inward * c_y`: how far a population moves away from the wall.
    let inward = if top { -1 } else { 1 };
    let (mut sent, mut norm) = (T::ZERO, T::ZERO);
    for k in 0..WALL_ROWS {
        let cell = frame.site(x as i32, row(k) as i32);
        for i in 0..Q {
            let away = inward * C[i][1];
            if -away > k as i32 {
                // SAFETY: as the caller guarantees.
                sent += unsafe { T::load(src.add(frame.population_index(i, cell))) };
            }
            if away > k as i32 {
                norm += maxwellian[i];
            }
        }
    }
    let rho_w = sent / norm;
    for k in 0..WALL_ROWS {
        let cell = frame.site(x as i32, row(k) as i32);
        for i in 0..Q {
            if inward * C[i][1] > k as i32 {
                // SAFETY: as above.
                unsafe { *dst.add(frame.population_index(i, cell)) = rho_w * maxwellian[i] };
            }
        }
    }
}

/// Halo cells along x per stored row: `HALO` columns on each side.
pub const HALO_COLUMNS: u32 = 2 * HALO;

/// The `k`-th cell of the x halo (`k < HALO_COLUMNS * stride`, every stored
/// row of the six halo columns) and the cell it copies on a periodic axis.
#[inline(always)]
pub fn x_halo_cell(frame: &Frame, k: u32) -> (FrameCell, FrameCell) {
    let (h, row) = (k / frame.stride, k % frame.stride);
    let column = if h < HALO { h } else { frame.nx + h };
    let from = if h < HALO { column + frame.nx } else { column - frame.nx };
    (FrameCell { column, row }, FrameCell { column: from, row })
}

/// The `k`-th cell of the y halo of the interior columns (`k < nx
/// HALO_COLUMNS`) and the cell it copies when y is periodic.
#[inline(always)]
pub fn y_halo_cell(frame: &Frame, k: u32) -> (FrameCell, FrameCell) {
    let (column, h) = (HALO + k / HALO_COLUMNS, k % HALO_COLUMNS);
    let row = if h < HALO { PAD - HALO + h } else { PAD + frame.ny + h - HALO };
    let from = if h < HALO { row + frame.ny } else { row - frame.ny };
    (FrameCell { column, row }, FrameCell { column, row: from })
}

/// Copies every population of `from` into `halo`.
///
/// # Safety
/// `f` is a buffer of `Q * frame.cells()` values; both cells are stored.
#[inline(always)]
pub unsafe fn periodic_halo<T: Real>(frame: &Frame, f: *mut T, halo: FrameCell, from: FrameCell) {
    for i in 0..Q {
        // SAFETY: as the caller guarantees.
        unsafe { *f.add(frame.population_index(i, halo)) = *f.add(frame.population_index(i, from)) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thermal::d2q37::THETA0;

    /// One collision keeps the mass, adds `rho g` to the momentum and
    /// `rho g . (u + g / 2)` to the energy; the fields read back are the
    /// ones the populations were made from.
    #[test]
    fn the_shifted_collision_does_the_work_of_the_force() {
        let (tau, g) = (0.8, [3e-4, -2e-3]);
        let op = ThermalBgk::<f64>::new(tau, g);
        let (rho, u, t) = (1.2, [0.03, -0.02], 0.9 * THETA0);
        let f = op.initial(rho, u, t);
        let (r, fu, ft) = op.fields(&f);
        assert!((r - rho).abs() < 1e-15 && (fu[0] - u[0]).abs() < 1e-15 && (fu[1] - u[1]).abs() < 1e-15);
        assert!((ft - t).abs() < 1e-14, "{ft} != {t}");
        // A state off equilibrium: the moments still move as the force says.
        let mut f = op.initial(rho, u, t);
        f[5] += 1e-3;
        f[6] += 1e-3;
        f[13] -= 2e-3 * 0.5;
        f[14] -= 2e-3 * 0.5;
        let (r0, u0, t0) = moments(&f);
        let e0 = r0 * (u0[0] * u0[0] + u0[1] * u0[1] + 2.0 * t0) / 2.0;
        op.collide(&mut f);
        let (r1, u1, t1) = moments(&f);
        let e1 = r1 * (u1[0] * u1[0] + u1[1] * u1[1] + 2.0 * t1) / 2.0;
        assert!((r1 - r0).abs() < 1e-15);
        for a in 0..2 {
            assert!((r1 * u1[a] - r0 * (u0[a] + g[a])).abs() < 1e-15, "momentum {a}");
        }
        let work = r0 * (g[0] * (u0[0] + g[0] / 2.0) + g[1] * (u0[1] + g[1] / 2.0));
        assert!((e1 - e0 - work).abs() < 1e-14, "energy gained {} != work {work}", e1 - e0);
    }
}
