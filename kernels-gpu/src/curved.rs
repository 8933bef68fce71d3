//! Interpolated bounce-back on curved walls (Bouzidi, Firdaouss & Lallemand
//! 2001): a boundary group of the fluid cells with a link that crosses a
//! curved surface, updated by its own kernel over a list, as the open
//! boundaries are ([`crate::groups`]), so the bulk kernels never hold it.
//!
//! Population `i` arrives at fluid cell `x` along the link from `x - c_i`;
//! when that cell is solid, the wall crosses the link at a fraction `q` of
//! its length from `x` (`0 < q <= 1`). Halfway bounce-back puts every wall
//! at `q = 1/2`; the interpolation puts it where it is, which makes the
//! wall second-order accurate. With post-collision populations `f*` of the
//! previous step,
//!
//! - `q < 1/2`: `f_i(x) = 2q f*_ib(x) + (1 - 2q) f*_ib(x + c_i)`,
//! - `q >= 1/2`: `f_i(x) = [f*_ib(x) + (2q - 1) f*_i(x)] / 2q`,
//!
//! where `ib` is the opposite of `i`. In the solver's terms `f*_ib(x)` is the
//! value halfway bounce-back gives ([`crate::stream::load`] yields it) and
//! `f*_ib(x + c_i)` the one ordinary streaming gives direction `ib`, both the
//! cell's own reads. `f*_i(x)` is different: it is what the fluid cell
//! `x + c_i` pulls this step, and with Esoteric Pull that cell overwrites
//! it in place. So [`gather`] copies those values for every listed cell
//! before the step that reads them changes any population, and [`update`]
//! then reads the copies: both streaming schemes take the same path. The
//! host's partitions gather right after each cell's own update, for the
//! next step (a halo slot that holds one is overwritten by the next
//! exchange); refinement levels gather at the start of the step.
//!
//! Each listed cell has `Q` link fractions; [`NOT_CURVED`] (any negative
//! value) marks a link that is not on a curved wall (fluid, or a plain wall
//! with halfway bounce-back). Walls of the list do not move.

use crate::cell::density_velocity;
use crate::collision::Collision;
use crate::grid::{Grid, Neighbourhood};
use crate::lattice::{opposite, Lattice};
use crate::params::StepParams;
use crate::real::Real;
use crate::storage::Storage;
use crate::stream::{
    collide, load, neighbours, rescaled, store, stored_slot, unless_saturated, write_fields, Streaming,
};

/// The link fraction of a link that is not on a curved wall.
pub const NOT_CURVED: f64 = -1.0;

/// A curved-wall group: `#[repr(C)]`, a kernel argument by value. The
/// tables live in the memory of whoever runs the per-cell functions.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurvedCells<T> {
    /// Storage number of each listed cell.
    cells: *const u32,
    /// `Q` link fractions per listed cell (negative: not a curved link).
    q: *const T,
    /// `Q` values per listed cell: [`gather`]'s copies of `f*_i(x)`.
    carried: *mut T,
    /// Number of listed cells.
    pub count: u32,
}

// SAFETY: the tables outlive every use (the contract of `CurvedCells::new`);
// `carried` is written by `gather` only, one entry per thread.
unsafe impl<T> Send for CurvedCells<T> {}
unsafe impl<T> Sync for CurvedCells<T> {}

impl<T: Real> CurvedCells<T> {
    /// The group of `count` cells at `cells`, their `Q` link fractions each
    /// at `q` and room for `Q` carried values each at `carried`.
    ///
    /// # Safety
    /// The tables must hold `count` (cells) and `Q * count` (the others)
    /// values and stay valid while this (or a copy) is used; the cells must
    /// be distinct fluid cells of the grid the kernels run on.
    pub const unsafe fn new(cells: *const u32, q: *const T, carried: *mut T, count: u32) -> Self {
        Self { cells, q, carried, count }
    }

    /// Link fraction of direction `i` of listed cell `k` (a lattice of `Q` directions).
    #[inline(always)]
    unsafe fn q<const Q: usize>(&self, k: u32, i: usize) -> T {
        *self.q.add(Q * k as usize + i)
    }
}

/// Whether a link fraction is one [`gather`] copies `f*_i(x)` for.
#[inline(always)]
fn needs_carried<T: Real>(q: T) -> bool {
    q >= T::from_f64(0.5)
}

/// The interpolated population from `a = f*_ib(x)`, `b = f*_ib(x + c_i)`
/// and `c = f*_i(x)` for a wall at fraction `q` (see the module docs).
/// At `q = 1/2` it is `a` exactly: halfway bounce-back.
#[inline(always)]
pub fn interpolated<T: Real>(q: T, a: T, b: T, c: T) -> T {
    let two_q = q + q;
    if two_q == T::ONE {
        // The formula below would give `+0 c + a`, which turns an `a` of -0
        // into +0 where the bounce-back of the bulk path keeps it.
        a
    } else if needs_carried(q) {
        (two_q - T::ONE).mul_add(c, a) / two_q
    } else {
        two_q.mul_add(a - b, b)
    }
}

/// Copies `f*_i(x)` (storage units of `S`) of listed cell `k` for each of its
/// curved links that needs it, before step `p.step` changes any population.
///
/// # Safety
/// `f` must hold the current populations of the grid; `k < links.count`.
#[inline(always)]
pub unsafe fn gather<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    f: *const S,
    links: &CurvedCells<S::Real>,
    k: u32,
) {
    let cell = grid.cell_of(*links.cells.add(k as usize));
    let nb = neighbours::<L, Q, G>(grid, cell);
    for i in 1..Q {
        if needs_carried(links.q::<Q>(k, i)) {
            *links.carried.add(Q * k as usize + i) = carried_value::<L, Q, S>(scheme, p.step, f, &nb, i);
        }
    }
}

/// `f*_i(x)` of the cell with neighbours `nb`, between the step before
/// `step` and `step` (storage units of `S`): where the previous step stored
/// it; step 0 reads what initialisation wrote.
///
/// # Safety
/// `f` must hold the grid's populations; `nb` must be a cell's neighbours.
#[inline(always)]
pub unsafe fn carried_value<L: Lattice<Q>, const Q: usize, S: Storage>(
    scheme: Streaming,
    step: u32,
    f: *const S,
    nb: &impl Neighbourhood<Q>,
    i: usize,
) -> S::Real {
    let previous_odd = step & 1 == 0;
    S::fetch(f.add(stored_slot::<L, Q>(scheme, previous_odd, nb, i))).load_scaled()
}

/// Density and velocity of listed cell `k` between steps (before step
/// `p.step`), from its interpolated populations, into the `rho, ux, uy, uz`
/// planes of `out` ([`crate::stream::fields`] gives them from halfway
/// bounce-back; this overwrites them for the listed cells).
///
/// # Safety
/// As [`gather`]; `out` must hold `4 * cells` values.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one per kernel argument, plus the grid
pub unsafe fn fields<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    f: *const S,
    flags: *const u8,
    links: &CurvedCells<S::Real>,
    out: *mut S::Real,
    k: u32,
) {
    let n = *links.cells.add(k as usize);
    let nb = neighbours::<L, Q, G>(grid, grid.cell_of(n));
    let arrived = load::<L, Q, S, true, _>(scheme, p, f, flags, &nb);
    // Between steps `f*_i(x)` is still in the buffer: no gather needed.
    let fi = interpolate_links(&arrived, links, k, |i| carried_value::<L, Q, S>(scheme, p.step, f, &nb, i));
    let (rho, u) = density_velocity::<L, Q, S::Real>(&rescaled(fi, 1.0 / S::SCALE), p.force);
    write_fields(out, grid.cells(), n, unless_saturated::<S, Q>(rho, &arrived), u);
}

/// Step of listed cell `k`: streams as a fluid cell next to walls does,
/// replaces the populations arriving over curved links by their
/// interpolation, collides and stores.
///
/// # Safety
/// As [`crate::stream::stream_collide_esoteric`] (`src == dst`) or
/// [`crate::stream::stream_collide_two_lattice`]; [`gather`] must have run
/// for this step; `k < links.count`.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one per kernel argument, plus the grid
pub unsafe fn update<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, C>,
    src: *const S,
    dst: *mut S,
    flags: *const u8,
    links: &CurvedCells<S::Real>,
    k: u32,
) {
    let cell = grid.cell_of(*links.cells.add(k as usize));
    let nb = neighbours::<L, Q, G>(grid, cell);
    let arrived = load::<L, Q, S, true, _>(scheme, p, src, flags, &nb);
    let carried = |i| *links.carried.add(Q * k as usize + i);
    let mut fi = interpolate_links(&arrived, links, k, carried);
    collide::<L, Q, S, C>(&mut fi, p);
    store::<L, Q, S>(scheme, p, dst, &nb, &fi);
}

/// The populations `arrived` at listed cell `k` (bounce-back on every wall
/// link) with those of its curved links interpolated, `carried(i)` giving
/// `f*_i(x)` where the fraction needs it.
///
/// # Safety
/// `k < links.count`.
#[inline(always)]
unsafe fn interpolate_links<const Q: usize, T: Real>(
    arrived: &[T; Q],
    links: &CurvedCells<T>,
    k: u32,
    carried: impl Fn(usize) -> T,
) -> [T; Q] {
    let mut fi = *arrived;
    for i in 1..Q {
        let q = links.q::<Q>(k, i);
        if q >= T::ZERO {
            let c = if needs_carried(q) { carried(i) } else { T::ZERO };
            fi[i] = interpolated(q, arrived[i], arrived[opposite(i)], c);
        }
    }
    fi
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_is_bounce_back_at_half_and_linear_in_the_wall_position() {
        let (a, b, c) = (0.3f64, 0.1, 0.7);
        assert_eq!(interpolated(0.5, a, b, c), a, "halfway: plain bounce-back, exactly");
        // q -> 0: the wall sits on the cell, the population is the neighbour's.
        assert!((interpolated(1e-12, a, b, c) - b).abs() < 1e-11);
        // q = 1: the wall sits on the next cell, the average of both directions.
        assert!((interpolated(1.0, a, b, c) - 0.5 * (a + c)).abs() < 1e-15);
        // Bouzidi's two formulas, each on its side of q = 1/2.
        for q in [0.1, 0.25, 0.4, 0.6, 0.8, 0.95] {
            let two_q: f64 = 2.0 * q;
            let lo = two_q * a + (1.0 - two_q) * b;
            let hi = (a + (two_q - 1.0) * c) / two_q;
            let want = if q < 0.5 { lo } else { hi };
            assert!((interpolated(q, a, b, c) - want).abs() < 1e-15, "q {q}");
        }
    }
}
