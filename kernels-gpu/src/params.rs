//! Parameter structs passed by value to the kernels (`#[repr(C)]`, `Copy`).

use crate::flags::MAX_MOVING_WALLS;
use crate::layout::Dims;

/// Everything one stream-collide step needs besides the buffers.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepParams<T> {
    /// Grid size.
    pub dims: Dims,
    /// Time step modulo 2 (Esoteric Pull alternates its access pattern).
    pub parity: u32,
    /// Relaxation rate `omega = 1 / tau`.
    pub omega: T,
    /// Body force density (Guo forcing), lattice units.
    pub force: [T; 3],
    /// Velocities of the moving walls, indexed by [`crate::flags::moving_wall_id`].
    pub wall_velocity: [[T; 3]; MAX_MOVING_WALLS],
}

// The host sends these bytes verbatim: pin the sizes so a layout change is seen.
const _: () = assert!(core::mem::size_of::<StepParams<f32>>() == 16 + 4 + 12 + 12 * MAX_MOVING_WALLS);
const _: () = assert!(core::mem::size_of::<StepParams<f64>>() == 16 + 8 + 24 + 24 * MAX_MOVING_WALLS);
