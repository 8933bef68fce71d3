//! The floating-point type the physics is computed and stored in.
//!
//! Only plain IEEE operations (`+ - * /`) are used in the physics, in a fixed
//! order: they round identically on the CPU and on the GPU (LLVM emits
//! `add.rn`/`mul.rn`/`div.rn`, which ptxas does not fuse), so both backends
//! produce bit-identical populations.

use core::ops::{Add, AddAssign, Div, Mul, Neg, Sub, SubAssign};

/// A real number type usable for populations and arithmetic (f32 or f64).
pub trait Real:
    Copy
    + Default
    + PartialOrd
    + Send
    + Sync
    + 'static
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// Conversion from f64 (rounds to nearest).
    fn from_f64(x: f64) -> Self;
    /// Conversion to f64 (exact).
    fn to_f64(self) -> f64;
    /// Whether the value is finite (not NaN or infinite).
    fn is_finite(self) -> bool;
}

macro_rules! impl_real {
    ($t:ty) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
        }
    };
}
impl_real!(f32);
impl_real!(f64);
