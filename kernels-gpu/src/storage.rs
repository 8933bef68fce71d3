//! How populations are stored in memory, apart from the arithmetic type.
//!
//! All formats store populations shifted by their weight (`f_i - w_i`, see
//! [`crate::cell`]). The 16-bit format keeps those small values in IEEE half
//! precision, scaled by 2^15 so that typical deviations (1e-4 .. 1e-1) use
//! the normal range of the format (Lehmann et al. 2022, "FP16S"); arithmetic
//! stays in f32. Conversions are correctly rounded on CPU and GPU alike.

use crate::real::Real;

/// A storage format for populations.
///
/// # Safety
/// Implementors must be plain old data: no padding, and every bit pattern a
/// valid value. The host copies population buffers as raw bytes (device
/// transfers, checkpoints).
pub unsafe trait Storage: Copy + Send + Sync + 'static {
    /// The type the physics is computed in.
    type Real: Real;
    /// Name in kernel names and reports (`f32`, `f64`, `f16s`).
    const NAME: &'static str;
    /// Bytes per stored population.
    const BYTES: usize;
    /// The stored zero.
    const ZERO: Self;
    /// Decodes a stored value.
    fn load(self) -> Self::Real;
    /// Encodes a value for storage (rounding to nearest).
    fn store(v: Self::Real) -> Self;
}

// SAFETY: f32 is plain old data.
unsafe impl Storage for f32 {
    type Real = f32;
    const NAME: &'static str = "f32";
    const BYTES: usize = 4;
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn load(self) -> f32 {
        self
    }
    #[inline(always)]
    fn store(v: f32) -> Self {
        v
    }
}

// SAFETY: f64 is plain old data.
unsafe impl Storage for f64 {
    type Real = f64;
    const NAME: &'static str = "f64";
    const BYTES: usize = 8;
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn load(self) -> f64 {
        self
    }
    #[inline(always)]
    fn store(v: f64) -> Self {
        v
    }
}

/// Scale applied before rounding to half precision (a power of two: exact).
pub const F16S_SCALE: f32 = 32768.0;

/// A population stored as an IEEE half, shifted by its weight and scaled by
/// [`F16S_SCALE`]; computed in f32.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct F16s(pub u16);

// SAFETY: F16s is a transparent u16.
unsafe impl Storage for F16s {
    type Real = f32;
    const NAME: &'static str = "f16s";
    const BYTES: usize = 2;
    const ZERO: Self = F16s(0);
    #[inline(always)]
    fn load(self) -> f32 {
        (f16::from_bits(self.0) as f32) * (1.0 / F16S_SCALE)
    }
    #[inline(always)]
    fn store(v: f32) -> Self {
        F16s(((v * F16S_SCALE) as f16).to_bits())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16s_round_trips_within_half_an_ulp() {
        for &v in &[0.0f32, 1e-4, -3.3e-3, 0.05, -0.3, 1.5] {
            let back = F16s::store(v).load();
            // 11 significant bits: relative error at most 2^-11.
            assert!((back - v).abs() <= v.abs() * 2f32.powi(-11), "{v} -> {back}");
        }
        assert_eq!(F16s::store(0.0), F16s::ZERO);
    }
}
