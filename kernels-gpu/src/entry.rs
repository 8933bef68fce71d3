//! PTX entry points: thin shims that find their cell and call the per-cell
//! functions of [`crate::stream`]. Names follow [`crate::KernelKind::prefix`].

use crate::kernels::blocks_per_row;
use crate::lattice::{D2Q9, D3Q19, D3Q27};
use crate::layout::{Cell, Dims};
use crate::params::{OpenParams, StepParams};
use crate::storage::{F16s, Storage};
use crate::stream::{self, Streaming};
use core::arch::nvptx::{_block_dim_x, _block_idx_x, _block_idx_y, _block_idx_z, _thread_idx_x};

/// This thread's cell, for the launch shape [`blocks_per_row`] picks: with
/// blocks per row, x from the block and thread along x and y from the grid's
/// y; otherwise the position in the layer from the block and thread, split
/// into x and y. z from the grid's z. `None` past the box.
#[inline(always)]
fn this_cell(dims: Dims) -> Option<Cell> {
    this_cell_from(dims, 0)
}

/// As [`this_cell`] for a launch over the layers `z0 ..`: the stream-collide
/// kernels of a partition run its boundary layers and its interior as
/// separate launches, so that halo copies overlap the interior.
#[inline(always)]
fn this_cell_from(dims: Dims, z0: u32) -> Option<Cell> {
    // SAFETY: reading special registers has no preconditions.
    let (i, j, z) = unsafe { (_block_idx_x() * _block_dim_x() + _thread_idx_x(), _block_idx_y(), z0 + _block_idx_z()) };
    let (x, y) = if blocks_per_row(dims.nx) {
        (i, j)
    } else {
        let y = i / dims.nx;
        (i - y * dims.nx, y)
    };
    if x < dims.nx && y < dims.ny {
        Some(Cell::at(dims, x, y, z))
    } else {
        None
    }
}

/// Index of this thread in a one-dimensional launch.
#[inline(always)]
fn thread_index() -> u32 {
    // SAFETY: reading special registers has no preconditions.
    unsafe { _block_idx_x() * _block_dim_x() + _thread_idx_x() }
}

macro_rules! entry_points {
    ($lattice:ty, $q:literal, $s:ty, $ep:ident, $ab:ident, $open:ident, $init:ident, $fields:ident) => {
        /// Esoteric Pull stream-collide, one thread per cell of layers `z0 ..`.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $ep(
            f: *mut $s,
            flags: *const u8,
            p: StepParams<<$s as Storage>::Real>,
            z0: u32,
        ) {
            if let Some(n) = this_cell_from(p.dims, z0) {
                stream::stream_collide_esoteric::<$lattice, $q, $s>(&p, f, flags, n);
            }
        }

        /// Two-lattice stream-collide, one thread per cell of layers `z0 ..`.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $ab(
            src: *const $s,
            dst: *mut $s,
            flags: *const u8,
            p: StepParams<<$s as Storage>::Real>,
            z0: u32,
        ) {
            if let Some(n) = this_cell_from(p.dims, z0) {
                stream::stream_collide_two_lattice::<$lattice, $q, $s>(&p, src, dst, flags, n);
            }
        }

        /// Open-boundary cells, one thread per entry of `cells` (`count`
        /// cell indices). Esoteric Pull passes a null `src`: it works in `dst`.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $open(
            src: *const $s,
            dst: *mut $s,
            flags: *const u8,
            cells: *const u32,
            count: u32,
            p: StepParams<<$s as Storage>::Real>,
            open: OpenParams<<$s as Storage>::Real>,
            scheme: u32,
        ) {
            let i = thread_index();
            if i < count {
                let cell = Cell::from_index(p.dims, *cells.add(i as usize));
                let scheme = Streaming::from_u32(scheme);
                let src = if src.is_null() { dst as *const $s } else { src };
                stream::open_boundary_update::<$lattice, $q, $s>(scheme, &p, &open, src, dst, flags, cell);
            }
        }

        /// Equilibrium initialisation from `rho, ux, uy, uz` planes.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $init(
            f: *mut $s,
            flags: *const u8,
            fields: *const <$s as Storage>::Real,
            p: StepParams<<$s as Storage>::Real>,
            scheme: u32,
        ) {
            if let Some(n) = this_cell(p.dims) {
                stream::init_equilibrium::<$lattice, $q, $s>(Streaming::from_u32(scheme), &p, f, flags, fields, n);
            }
        }

        /// Density and velocity into `rho, ux, uy, uz` planes.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $fields(
            f: *const $s,
            flags: *const u8,
            out: *mut <$s as Storage>::Real,
            p: StepParams<<$s as Storage>::Real>,
            scheme: u32,
        ) {
            if let Some(n) = this_cell(p.dims) {
                stream::fields::<$lattice, $q, $s>(Streaming::from_u32(scheme), &p, f, flags, out, n);
            }
        }
    };
}

#[rustfmt::skip]
mod instances {
    use super::*;
    entry_points!(D2Q9, 9, f32, stream_collide_ep_d2q9_f32, stream_collide_ab_d2q9_f32, open_boundary_d2q9_f32, init_equilibrium_d2q9_f32, fields_d2q9_f32);
    entry_points!(D2Q9, 9, f64, stream_collide_ep_d2q9_f64, stream_collide_ab_d2q9_f64, open_boundary_d2q9_f64, init_equilibrium_d2q9_f64, fields_d2q9_f64);
    entry_points!(D2Q9, 9, F16s, stream_collide_ep_d2q9_f16s, stream_collide_ab_d2q9_f16s, open_boundary_d2q9_f16s, init_equilibrium_d2q9_f16s, fields_d2q9_f16s);
    entry_points!(D3Q19, 19, f32, stream_collide_ep_d3q19_f32, stream_collide_ab_d3q19_f32, open_boundary_d3q19_f32, init_equilibrium_d3q19_f32, fields_d3q19_f32);
    entry_points!(D3Q19, 19, f64, stream_collide_ep_d3q19_f64, stream_collide_ab_d3q19_f64, open_boundary_d3q19_f64, init_equilibrium_d3q19_f64, fields_d3q19_f64);
    entry_points!(D3Q19, 19, F16s, stream_collide_ep_d3q19_f16s, stream_collide_ab_d3q19_f16s, open_boundary_d3q19_f16s, init_equilibrium_d3q19_f16s, fields_d3q19_f16s);
    entry_points!(D3Q27, 27, f32, stream_collide_ep_d3q27_f32, stream_collide_ab_d3q27_f32, open_boundary_d3q27_f32, init_equilibrium_d3q27_f32, fields_d3q27_f32);
    entry_points!(D3Q27, 27, f64, stream_collide_ep_d3q27_f64, stream_collide_ab_d3q27_f64, open_boundary_d3q27_f64, init_equilibrium_d3q27_f64, fields_d3q27_f64);
    entry_points!(D3Q27, 27, F16s, stream_collide_ep_d3q27_f16s, stream_collide_ab_d3q27_f16s, open_boundary_d3q27_f16s, init_equilibrium_d3q27_f16s, fields_d3q27_f16s);
}

/// Layout check: every population slot of every cell gets its probe value.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn layout_probe(out: *mut u64, dims: Dims, q: u32) {
    if let Some(n) = this_cell(dims) {
        stream::write_layout_probe(dims, q as usize, out, n);
    }
}
