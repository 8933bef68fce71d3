//! Reads of populations and flags with an L2 prefetch-size hint, and the
//! load macro they share with the read-only tables ([`crate::readonly`]).
//!
//! Every kernel reads populations (`Storage::fetch`) and flags
//! (`flags::flag_of`) with `ld.global.L2::256B`: L2 fetches the whole
//! aligned 256 bytes around each access from DRAM. A warp's load
//! covers 32 (flags) to 256 bytes, and the warps of the next cells along x
//! read the rest soon after; fetching it in one go, as DRAM works best,
//! raised Esoteric Pull on an H100 from 84.2-85.5% to 87.1-88.5% of copy
//! bandwidth (16-bit, periodic box), from 47-60% to 82.5-83.4% in a walled cavity,
//! and f32 by 2.5-3.2 points (`docs/bench/h100-2026-11-22-3ce32c0-l2-prefetch.txt`).

/// `*$at` as a `$ty`, read on the GPU by the load instruction `$op` (up to
/// its type suffix, `$ptx`) into a `$reg` register, with the `asm!` options
/// `$opt`; a plain read on the host.
macro_rules! asm_load {
    ($op:literal, $at:expr, $ty:ty, $ptx:literal, $reg:ident, $($opt:ident),*) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            let v: $ty;
            // SAFETY: the caller guarantees `$at` is valid for reads; the
            // load touches only that value (cache hints are hints).
            unsafe {
                core::arch::asm!(
                    concat!($op, ".", $ptx, " {v}, [{a}];"),
                    v = out($reg) v,
                    a = in(reg64) $at,
                    options($($opt),*),
                );
            }
            v
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            // SAFETY: as above.
            unsafe { *$at }
        }
    }};
}
pub(crate) use asm_load;

/// `*at` as a `$ty`, with `ld.global.L2::256B` on the GPU.
macro_rules! fetch {
    ($at:expr, $ty:ty, $ptx:literal, $reg:ident) => {
        $crate::fetch::asm_load!("ld.global.L2::256B", $at, $ty, $ptx, $reg, pure, readonly, nostack, preserves_flags)
    };
}
pub(crate) use fetch;

/// `at`, as a value the compiler cannot see into: what is added to it
/// afterwards is added last, where a load takes a constant as an immediate
/// offset instead of an instruction. A `mov` on the GPU, which ptxas removes.
#[inline(always)]
pub(crate) fn address_barrier<T>(at: *const T) -> *const T {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: *const T;
        // SAFETY: a register move; nothing is read or written.
        unsafe {
            core::arch::asm!("mov.b64 {o}, {i};", o = out(reg64) out, i = in(reg64) at, options(pure, nomem, nostack, preserves_flags));
        }
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        at
    }
}
