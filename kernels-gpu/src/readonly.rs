//! Loads of tables through the GPU's read-only data cache
//! (`ld.global.nc`): a grid's neighbour-block table, the open cells' groups.
//! Many threads of a block read the same entries, and no kernel writes
//! them while it runs. On the host a load is a plain read.

/// A value of a read-only table.
pub trait ReadOnly: Copy {
    /// `*at`.
    ///
    /// # Safety
    /// `at` must be valid for reads, and the value unchanged while the kernel runs.
    unsafe fn load(at: *const Self) -> Self;

    /// [`ReadOnly::load`] that LLVM keeps where it is written, not moved
    /// into a branch below: a kernel starts loading its tables before its
    /// cell's flag says whether it needs them.
    ///
    /// # Safety
    /// As [`ReadOnly::load`].
    unsafe fn load_early(at: *const Self) -> Self;
}

/// Implements [`ReadOnly`] for `$t` with `ld.global.nc.$ptx` into a `$reg` register.
macro_rules! read_only {
    ($($t:ty, $ptx:literal, $reg:ident;)*) => {$(
        impl ReadOnly for $t {
            #[inline(always)]
            unsafe fn load(at: *const $t) -> $t {
                crate::fetch::asm_load!("ld.global.nc", at, $t, $ptx, $reg, pure, readonly, nostack, preserves_flags)
            }

            /// Not `pure`: the compiler keeps it where it is.
            #[inline(always)]
            unsafe fn load_early(at: *const $t) -> $t {
                crate::fetch::asm_load!("ld.global.nc", at, $t, $ptx, $reg, readonly, nostack, preserves_flags)
            }
        }
    )*};
}

read_only! {
    u16, "u16", reg16;
    u32, "u32", reg32;
    f32, "f32", reg32;
    f64, "f64", reg64;
}

impl<T: ReadOnly, const N: usize> ReadOnly for [T; N] {
    #[inline(always)]
    unsafe fn load(at: *const [T; N]) -> [T; N] {
        let p = at as *const T;
        // SAFETY: the caller guarantees the `N` values are valid for reads.
        core::array::from_fn(|k| unsafe { T::load(p.add(k)) })
    }

    #[inline(always)]
    unsafe fn load_early(at: *const [T; N]) -> [T; N] {
        let p = at as *const T;
        // SAFETY: as `load`.
        core::array::from_fn(|k| unsafe { T::load_early(p.add(k)) })
    }
}
