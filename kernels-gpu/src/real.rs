//! The floating-point type the physics is computed in.
//!
//! The physics uses only correctly rounded IEEE operations (`+ - * /` and
//! fused multiply-add), written out in a fixed order: they round identically
//! on the CPU and on the GPU (LLVM emits `add.rn`/`mul.rn`/`div.rn`/`fma.rn`,
//! which ptxas does not re-associate), so both backends produce
//! bit-identical populations.

use core::ops::{Add, AddAssign, Div, Mul, Neg, Sub, SubAssign};

/// A real number type usable for populations and arithmetic (f32 or f64).
pub trait Real:
    Copy
    + crate::readonly::ReadOnly
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
    /// Conversion from u32 (rounds to nearest, as the GPU's `cvt.rn` does).
    fn from_u32(x: u32) -> Self;
    /// Conversion to f64 (exact).
    fn to_f64(self) -> f64;
    /// Whether the value is finite (not NaN or infinite).
    fn is_finite(self) -> bool;
    /// Whether the value is NaN.
    fn is_nan(self) -> bool;
    /// `self * a + b` with one rounding (IEEE fused multiply-add: the same
    /// result on CPU and GPU).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// Square root, correctly rounded (`sqrt.rn` on the GPU).
    fn sqrt(self) -> Self;
}

macro_rules! impl_real {
    ($t:ident) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            #[inline(always)]
            fn from_u32(x: u32) -> Self {
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
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                core::$t::math::mul_add(self, a, b)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                core::$t::math::sqrt(self)
            }
        }
    };
}
impl_real!(f32);
impl_real!(f64);
