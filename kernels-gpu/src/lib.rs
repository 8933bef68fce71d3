//! Everything host and GPU must agree on, written once: velocity sets, the
//! grid interface and the dense memory layout behind it, cell flags, kernel
//! parameter structs, and the per-cell lattice Boltzmann physics
//! (equilibrium, BGK collision with Guo forcing, moments, boundary handling,
//! Esoteric Pull and two-lattice streaming).
//!
//! The crate is compiled twice: for the host (an ordinary `rlib`, so the CPU
//! backend and the tests call these very functions) and for
//! `nvptx64-nvidia-cuda` by the root `build.rs`, where `entry` adds thin
//! `extern "ptx-kernel"` entry points around the same functions.
#![no_std]
#![feature(f16, core_float_math)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx, asm_experimental_arch))]
#![warn(missing_docs)]
// Per-cell loops index several parallel tables (c_i, w_i, f_i) by direction;
// the index form says so, and unrolls to constants.
#![allow(clippy::needless_range_loop)]

/// Runs `$body` with `$k` a constant `usize`, for each of `0..$q` up to 27
/// (or up to 3, over the axes): loops written out, so that every table entry
/// they index is a constant (LLVM leaves 27 x 27 transforms rolled and reads
/// the matrix from memory).
macro_rules! unrolled {
    (axis $k:ident < $q:expr => $body:block) => {
        unrolled!(@ $k, $q, $body; 0 1 2)
    };
    ($k:ident < $q:expr => $body:block) => {
        unrolled!(@ $k, $q, $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26)
    };
    (@ $k:ident, $q:expr, $body:block; $($n:literal)*) => {$(
        if $n < $q {
            const $k: usize = $n;
            $body
        }
    )*};
}

pub mod binary;
pub mod cell;
pub mod collision;
pub mod colloids;
pub mod curved;
pub mod exchange;
mod fetch;
pub mod flags;
pub mod grid;
pub mod groups;
pub mod kernels;
pub mod lattice;
pub mod layout;
pub mod levels;
pub mod params;
pub mod readonly;
pub mod real;
pub mod regularized;
pub mod sparse;
pub mod sponge;
pub mod storage;
pub mod stream;
pub mod thermal;
pub mod warp;

#[cfg(target_arch = "nvptx64")]
mod entry;

pub use collision::{
    Bgk, Chosen, Collision, CollisionKind, Cumulant, Les, Mrt, MrtRates, Regularized, Smagorinsky, Trt,
};
pub use flags::CellKind;
pub use grid::Grid;
pub use kernels::{GridKind, KernelKind, LevelKernel};
pub use lattice::{Lattice, D2Q9, D3Q19, D3Q27};
pub use layout::Dims;
pub use params::{OpenBoundary, StepParams, EQUILIBRIUM, INLET, OUTLET, REGULARIZED};
pub use real::Real;
pub use storage::{F16s, Storage};
pub use stream::Streaming;

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: trap aborts the kernel; nothing runs after it.
    unsafe { core::arch::nvptx::trap() }
}
