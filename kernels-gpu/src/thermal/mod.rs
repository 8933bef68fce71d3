//! The thermal, compressible model of Sbragaglia et al. (2009) and
//! Scagliarini et al. (2010): the D2Q37 lattice, whose equilibrium is
//! expanded to fourth order so that the model recovers the
//! thermo-hydrodynamic equations of an ideal gas (`p = rho T`, `gamma = 2`
//! in two dimensions), with gravity brought in by shifting the
//! equilibrium's velocity and temperature.
//!
//! The code follows the GPU design of Calore et al. (2016): two buffers,
//! a pull `propagate`, a `bc` step at the walls, `collide`, and a fused
//! propagate-collide for the bulk, on a column-major box with a frame of
//! three halo cells ([`frame`]). The box is a [`crate::grid::Grid`]; the
//! operator a [`step::ThermalCollision`].

pub mod d2q37;
#[cfg(target_arch = "nvptx64")]
pub(crate) mod entry;
pub mod frame;
pub mod step;

pub use frame::Frame;

/// The thermal model's kernels, each built in `f32` and `f64`: the entry
/// point of `kernel` in precision `p` is `d2q37_<kernel>_<p>`.
pub const KERNELS: [&str; 6] = ["propagate", "collide", "propagate_collide", "wall", "halo_x", "halo_y"];
pub use step::{ThermalBgk, ThermalCollision, ThermalParams};
