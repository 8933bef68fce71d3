//! Parameter structs passed by value to the kernels (`#[repr(C)]`, `Copy`).

use crate::collision::Trt;
use crate::flags::MAX_MOVING_WALLS;
use crate::layout::Dims;

/// Everything one step needs besides the buffers: the stream-collide
/// kernels take the collision operator's parameters `C` ([`crate::collision`])
/// in it, the other kernels `()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepParams<T, C = ()> {
    /// Grid size.
    pub dims: Dims,
    /// Time step (its low 32 bits): Esoteric Pull alternates its access
    /// pattern with its parity, and 16-bit storage seeds its rounding with it.
    pub step: u32,
    /// Global z of local layer 0, wrapping (0 for a whole domain): a
    /// partition's cells round as the same cells of the whole domain do.
    pub z_offset: u32,
    /// Zero: keeps what follows 8-byte aligned with no implicit padding.
    pub reserved: u32,
    /// The collision operator's parameters. They sit where the relaxation
    /// rate always sat: with the same layout, ptxas allocates the BGK
    /// kernels' registers as before (a separate kernel argument cost D3Q27
    /// 16-bit two-lattice 6 more registers and 4 to 5% on an H100).
    pub collision: C,
    /// Body force density (Guo forcing), lattice units.
    pub force: [T; 3],
    /// Velocities of the moving walls, indexed by [`crate::flags::moving_wall_id`].
    pub wall_velocity: [[T; 3]; MAX_MOVING_WALLS],
}

impl<T: Copy> StepParams<T> {
    /// These parameters with a collision operator's, for the stream-collide kernels.
    pub const fn with_collision<C: Copy>(self, collision: C) -> StepParams<T, C> {
        let StepParams { dims, step, z_offset, reserved, collision: (), force, wall_velocity } = self;
        StepParams { dims, step, z_offset, reserved, collision, force, wall_velocity }
    }
}

/// An open-boundary group's parameters: what its inlet or outlet imposes,
/// and which way the domain lies from it. Passed only to the open-boundary
/// kernel, once per group, so the bulk kernels' parameters stay small.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenBoundary<T> {
    /// Density an outlet imposes (`1 + 3 p` for gauge pressure `p`).
    pub rho: T,
    /// Velocity an inlet imposes.
    pub u: [T; 3],
    /// Unit normal pointing into the domain (components -1, 0 or 1): the
    /// populations with `c . normal > 0` arrive from outside and are unknown.
    pub normal: [T; 3],
    /// [`INLET`] (imposes `u`) or [`OUTLET`] (imposes `rho`).
    pub kind: u32,
    /// [`EQUILIBRIUM`] or [`REGULARIZED`]: how the cells are rebuilt.
    pub scheme: u32,
    /// The rates a regularized cell collides at, the bulk's operator: TRT's
    /// own, or BGK's `omega` as both (TRT with equal rates is BGK bit for
    /// bit). An equilibrium cell does not collide.
    pub rates: Trt<T>,
}

/// [`OpenBoundary::kind`] of a velocity inlet.
pub const INLET: u32 = 0;
/// [`OpenBoundary::kind`] of a pressure outlet.
pub const OUTLET: u32 = 1;
/// [`OpenBoundary::scheme`] of an equilibrium boundary: its cells store the
/// equilibrium of their density and velocity, without colliding (first order).
pub const EQUILIBRIUM: u32 = 0;
/// [`OpenBoundary::scheme`] of a regularized boundary
/// ([`crate::regularized`]): its cells keep the non-equilibrium stress and
/// collide (second order).
pub const REGULARIZED: u32 = 1;

// The host sends these bytes verbatim: pin the sizes so a layout change is seen.
const _: () =
    assert!(core::mem::size_of::<StepParams<f32, crate::collision::Bgk<f32>>>() == 24 + 4 + 12 + 12 * MAX_MOVING_WALLS);
const _: () = assert!(core::mem::size_of::<StepParams<f32>>() == 24 + 12 + 12 * MAX_MOVING_WALLS);
const _: () = assert!(core::mem::size_of::<OpenBoundary<f32>>() == 44);
const _: () =
    assert!(core::mem::size_of::<StepParams<f64, crate::collision::Bgk<f64>>>() == 24 + 8 + 24 + 24 * MAX_MOVING_WALLS);
const _: () = assert!(core::mem::size_of::<StepParams<f64>>() == 24 + 24 + 24 * MAX_MOVING_WALLS);
const _: () = assert!(core::mem::size_of::<OpenBoundary<f64>>() == 80);
const _: () = assert!(core::mem::size_of::<crate::collision::Bgk<f32>>() == 4);
const _: () = assert!(core::mem::size_of::<crate::collision::Trt<f64>>() == 16);
