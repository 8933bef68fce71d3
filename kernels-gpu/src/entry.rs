//! PTX entry points: thin shims that find their cell and call the per-cell
//! functions of [`crate::stream`]. Names follow [`crate::KernelKind::prefix`].

use crate::collision::{Bgk, Collision, Trt};
use crate::kernels::blocks_per_row;
use crate::lattice::{D2Q9, D3Q19, D3Q27};
use crate::layout::{Cell, Dims};
use crate::params::{OpenBoundary, StepParams};
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

/// Stamps the entry points of every row of [`crate::for_each_instance`]:
/// each row's kernels in a module of its own, named for the PTX by
/// [`crate::KernelKind::prefix`] and the row's name.
macro_rules! entry_points {
    ([] $(($id:ident, $lattice:ident, $q:literal, $s:ty, $p:ident))*) => {$(
        pub mod $id {
            use super::*;
            type Real = <$s as Storage>::Real;

            /// Esoteric Pull stream-collide with `C`, one thread per cell of layers `z0 ..`.
            #[inline(always)]
            unsafe fn ep<C: Collision<Real>>(f: *mut $s, flags: *const u8, p: StepParams<Real, C>, z0: u32) {
                if let Some(n) = this_cell_from(p.dims, z0) {
                    stream::stream_collide_esoteric::<$lattice, $q, $s, C>(&p, f, flags, n);
                }
            }

            /// Two-lattice stream-collide with `C`, one thread per cell of layers `z0 ..`.
            #[inline(always)]
            unsafe fn ab<C: Collision<Real>>(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, C>,
                z0: u32,
            ) {
                if let Some(n) = this_cell_from(p.dims, z0) {
                    stream::stream_collide_two_lattice::<$lattice, $q, $s, C>(&p, src, dst, flags, n);
                }
            }

            #[export_name = concat!("stream_collide_ep_bgk_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ep_bgk(f: *mut $s, flags: *const u8, p: StepParams<Real, Bgk<Real>>, z0: u32) {
                ep(f, flags, p, z0)
            }

            #[export_name = concat!("stream_collide_ep_trt_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ep_trt(f: *mut $s, flags: *const u8, p: StepParams<Real, Trt<Real>>, z0: u32) {
                ep(f, flags, p, z0)
            }

            #[export_name = concat!("stream_collide_ab_bgk_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ab_bgk(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Bgk<Real>>,
                z0: u32,
            ) {
                ab(src, dst, flags, p, z0)
            }

            #[export_name = concat!("stream_collide_ab_trt_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ab_trt(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Trt<Real>>,
                z0: u32,
            ) {
                ab(src, dst, flags, p, z0)
            }

            /// An open-boundary group: its cells, one thread per entry of
            /// `cells` (`count` cell indices), and what it imposes. Esoteric
            /// Pull passes a null `src`: it works in `dst`.
            #[export_name = concat!("open_boundary_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_boundary(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                cells: *const u32,
                count: u32,
                p: StepParams<Real>,
                open: OpenBoundary<Real>,
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
            #[export_name = concat!("init_equilibrium_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn init_equilibrium(
                f: *mut $s,
                flags: *const u8,
                fields: *const Real,
                p: StepParams<Real>,
                scheme: u32,
            ) {
                if let Some(n) = this_cell(p.dims) {
                    stream::init_equilibrium::<$lattice, $q, $s>(Streaming::from_u32(scheme), &p, f, flags, fields, n);
                }
            }

            /// Density and velocity into `rho, ux, uy, uz` planes.
            #[export_name = concat!("fields_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn fields(
                f: *const $s,
                flags: *const u8,
                out: *mut Real,
                p: StepParams<Real>,
                scheme: u32,
            ) {
                if let Some(n) = this_cell(p.dims) {
                    stream::fields::<$lattice, $q, $s>(Streaming::from_u32(scheme), &p, f, flags, out, n);
                }
            }
        }
    )*};
}

crate::for_each_instance!(entry_points;);

/// Layout check: every population slot of every cell gets its probe value.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn layout_probe(out: *mut u64, dims: Dims, q: u32) {
    if let Some(n) = this_cell(dims) {
        stream::write_layout_probe(dims, q as usize, out, n);
    }
}
