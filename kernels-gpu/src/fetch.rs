//! Reads of populations and flags with an L2 prefetch-size hint.
//!
//! Every kernel reads populations (`Storage::fetch`) and flags
//! (`flags::flag_of`) with `ld.global.L2::256B`: L2 fetches the whole
//! aligned 256 bytes around each access from DRAM. A warp's load
//! covers 32 (flags) to 256 bytes, and the warps of the next cells along x
//! read the rest soon after; fetching it in one go, as DRAM works best,
//! raised Esoteric Pull on an H100 from 84.2-85.5% to 87.1-88.5% of copy
//! bandwidth (16-bit, periodic box), from 47-60% to 82.5-83.4% in a walled cavity,
//! and f32 by 2.5-3.2 points (`docs/bench/h100-2026-11-22-3ce32c0-l2-prefetch.txt`).

/// `*at` as a `$ty`, with `ld.global.L2::256B` on the GPU.
macro_rules! fetch {
    ($at:expr, $ty:ty, $ptx:literal, $reg:ident) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            let v: $ty;
            // SAFETY: the caller guarantees `$at` is valid for reads; the
            // load touches only that value (the prefetch is a cache hint).
            unsafe {
                core::arch::asm!(
                    concat!("ld.global.L2::256B.", $ptx, " {v}, [{a}];"),
                    v = out($reg) v,
                    a = in(reg64) $at,
                    options(pure, readonly, nostack, preserves_flags),
                );
            }
            v
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            *$at
        }
    }};
}
pub(crate) use fetch;
