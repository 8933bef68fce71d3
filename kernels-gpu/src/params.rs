//! Parameter structs passed by value to the kernels (`#[repr(C)]`, `Copy`).

use crate::collision::Trt;
use crate::flags::MAX_MOVING_WALLS;
use crate::layout::Dims;
use crate::real::Real;

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
    /// Steps over which an inlet's velocity ramps up from rest
    /// ([`OpenBoundary::at_step`]); 0: the full velocity from the start.
    pub ramp_steps: u32,
    /// Zero: keeps the struct free of implicit padding (its bytes are uploaded as they are).
    pub reserved: u32,
}

impl<T: Real> OpenBoundary<T> {
    /// What the boundary imposes at time step `step`: an inlet ramping up
    /// over [`Self::ramp_steps`] imposes its velocity times the smoothstep
    /// `s^2 (3 - 2 s)` of `s = step / ramp_steps`, which starts and ends with
    /// zero slope so that neither end of the ramp sends a pressure wave.
    #[inline(always)]
    pub fn at_step(&self, step: u32) -> Self {
        if self.kind != INLET || step >= self.ramp_steps {
            return *self;
        }
        let s = T::from_u32(step) / T::from_u32(self.ramp_steps);
        let factor = s * s * (T::from_f64(3.0) - (s + s));
        Self { u: self.u.map(|u| u * factor), ..*self }
    }
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
const _: () = assert!(core::mem::size_of::<OpenBoundary<f32>>() == 52);
const _: () =
    assert!(core::mem::size_of::<StepParams<f64, crate::collision::Bgk<f64>>>() == 24 + 8 + 24 + 24 * MAX_MOVING_WALLS);
const _: () = assert!(core::mem::size_of::<StepParams<f64>>() == 24 + 24 + 24 * MAX_MOVING_WALLS);
const _: () = assert!(core::mem::size_of::<OpenBoundary<f64>>() == 88);
const _: () = assert!(core::mem::size_of::<crate::collision::Bgk<f32>>() == 4);
const _: () = assert!(core::mem::size_of::<crate::collision::Trt<f64>>() == 16);

#[cfg(test)]
mod tests {
    use super::*;

    /// An inlet ramps its velocity up along the smoothstep and then holds
    /// it; an outlet and an inlet without a ramp impose theirs from the start.
    #[test]
    fn inlets_ramp_up_smoothly() {
        let inlet = OpenBoundary {
            rho: 1.0f64,
            u: [0.08, -0.02, 0.0],
            normal: [1.0, 0.0, 0.0],
            kind: INLET,
            scheme: EQUILIBRIUM,
            rates: Trt { omega_plus: 1.0, omega_minus: 1.0 },
            ramp_steps: 100,
            reserved: 0,
        };
        let at = |b: &OpenBoundary<f64>, step| b.at_step(step).u;
        assert_eq!(at(&inlet, 0), [0.0, -0.0, 0.0]);
        assert_eq!(at(&inlet, 50), [0.04, -0.01, 0.0], "the smoothstep is 1/2 half way");
        let early = at(&inlet, 10)[0] / 0.08;
        assert!((early - (0.01 * (3.0 - 0.2))).abs() < 1e-15, "s^2 (3 - 2 s) at s = 0.1: {early}");
        assert_eq!(at(&inlet, 100), inlet.u);
        assert_eq!(at(&inlet, u32::MAX), inlet.u);
        let steady = OpenBoundary { ramp_steps: 0, ..inlet };
        assert_eq!(at(&steady, 0), inlet.u);
        let outlet = OpenBoundary { kind: OUTLET, ..inlet };
        assert_eq!(at(&outlet, 0), inlet.u);
    }
}
