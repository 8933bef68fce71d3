//! PTX entry points of the thermal model: `d2q37_<kernel>_<f32|f64>`. The
//! launches over rows take the first interior column of their region;
//! [`crate::thermal::frame::Frame::launch`] gives their shape.

use crate::entry::launch_index;
use crate::grid::Grid;
use crate::thermal::step::{self, ThermalParams, HALO_COLUMNS};
use core::arch::nvptx::{_block_dim_x, _block_idx_x, _block_idx_y, _thread_idx_x};

/// This thread's index in a one-dimensional launch, and `blockIdx.y`.
#[inline(always)]
fn thread_and_side() -> (u32, u32) {
    // SAFETY: reading special registers has no preconditions.
    unsafe { (_block_idx_x() * _block_dim_x() + _thread_idx_x(), _block_idx_y()) }
}

macro_rules! thermal_entries {
    ($($real:ident => $propagate:ident, $collide:ident, $fused:ident, $wall:ident, $halo_x:ident, $halo_y:ident;)*) => {$(
        /// Pull over the window's rows of the columns from `first`.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $propagate(p: ThermalParams<$real>, first: u32, src: *const $real, dst: *mut $real) {
            if let Some(cell) = p.frame.launch_cell(first, launch_index()) {
                // SAFETY: the host passes two buffers of the frame.
                unsafe { step::propagate(&p.frame, src, dst, cell) }
            }
        }

        /// Collision in place over the window's rows of the columns from `first`.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $collide(p: ThermalParams<$real>, first: u32, f: *mut $real) {
            if let Some(cell) = p.frame.launch_cell(first, launch_index()) {
                // SAFETY: as above.
                unsafe { step::collide(&p.frame, &p.collision, f, cell) }
            }
        }

        /// Fused pull and collision over the window's rows of the columns from `first`.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $fused(p: ThermalParams<$real>, first: u32, src: *const $real, dst: *mut $real) {
            if let Some(cell) = p.frame.launch_cell(first, launch_index()) {
                // SAFETY: as above.
                unsafe { step::propagate_collide(&p.frame, &p.collision, src, dst, cell) }
            }
        }

        /// The walls: a thread per column (`first + x`), `blockIdx.y` 0 for
        /// the bottom, 1 for the top, where `p.walls` says that side is one.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $wall(p: ThermalParams<$real>, first: u32, columns: u32, src: *const $real, dst: *mut $real) {
            let (x, side) = thread_and_side();
            if x < columns && (p.walls >> side) & 1 != 0 {
                // SAFETY: as above.
                unsafe { step::wall(&p.frame, src, dst, first + x, side == 1, p.wall_temperature[side as usize]) }
            }
        }

        /// The periodic x halo: a thread per halo cell.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $halo_x(p: ThermalParams<$real>, f: *mut $real) {
            let (k, _) = thread_and_side();
            if k < HALO_COLUMNS * p.frame.stride {
                let (halo, from) = step::x_halo_cell(&p.frame, k);
                // SAFETY: as above.
                unsafe { step::periodic_halo(&p.frame, f, halo, from) }
            }
        }

        /// The periodic y halo of the interior columns: a thread per halo cell.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $halo_y(p: ThermalParams<$real>, f: *mut $real) {
            let (k, _) = thread_and_side();
            if k < HALO_COLUMNS * p.frame.nx {
                let (halo, from) = step::y_halo_cell(&p.frame, k);
                // SAFETY: as above.
                unsafe { step::periodic_halo(&p.frame, f, halo, from) }
            }
        }
    )*};
}

thermal_entries! {
    f32 => d2q37_propagate_f32, d2q37_collide_f32, d2q37_propagate_collide_f32, d2q37_wall_f32, d2q37_halo_x_f32, d2q37_halo_y_f32;
    f64 => d2q37_propagate_f64, d2q37_collide_f64, d2q37_propagate_collide_f64, d2q37_wall_f64, d2q37_halo_x_f64, d2q37_halo_y_f64;
}
