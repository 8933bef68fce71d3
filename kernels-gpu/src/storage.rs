//! How populations are stored in memory, apart from the arithmetic type.
//!
//! All formats store populations shifted by their weight (`f_i - w_i`, see
//! [`crate::cell`]). The 16-bit format keeps those small values in IEEE half
//! precision, scaled by 2^15 so that typical deviations (1e-4 .. 1e-1) use
//! the normal range of the format (Lehmann et al. 2022, "FP16S"); arithmetic
//! stays in f32.
//!
//! **Stochastic rounding.** A half keeps 11 significant bits, so a change
//! smaller than half a unit in the last place of a stored value would be
//! rounded away every step: a slow flow (a force-driven channel, say) then
//! stalls short of its steady state, the worse the finer the grid. The
//! stream-collide updates therefore round 16-bit values up or down with
//! probabilities that make the stored value exact on average
//! ([`Storage::store_scaled_dithered`]), from pseudo-random bits that depend only
//! on the cell, the population and the time step: runs stay reproducible,
//! and CPU, GPU and partitioned runs stay bit-identical.

use crate::fetch::fetch;
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
    /// What the format stores is the population times this power of two
    /// ("storage units"). The stream-collide kernels compute in storage
    /// units, with the scale folded into the equilibrium weights, which
    /// saves a multiplication per load and per store; scaling by a power of
    /// two is exact, so the values are those of computing unscaled.
    const SCALE: f64 = 1.0;
    /// Decodes a stored value, in storage units.
    fn load_scaled(self) -> Self::Real;
    /// Encodes a value given in storage units (rounding to nearest).
    fn store_scaled(v: Self::Real) -> Self;
    /// Whether [`Self::store_scaled_dithered`] uses its random bits.
    const STOCHASTIC: bool = false;
    /// Whether a decoded value (in storage units) is where
    /// [`Self::store_scaled_dithered`] leaves a value too large for the
    /// format (which then saturates rather than overflowing to infinity):
    /// no population of a healthy run comes near it, so a cell holding one
    /// has blown up.
    #[inline(always)]
    fn saturated(_v: Self::Real) -> bool {
        false
    }
    /// Encodes a value given in storage units, rounding with the random
    /// bits `noise` where the format rounds stochastically (to nearest
    /// otherwise).
    #[inline(always)]
    fn store_scaled_dithered(v: Self::Real, _noise: u32) -> Self {
        Self::store_scaled(v)
    }
    /// Reads the population at `at` in device memory with an L2 prefetch
    /// hint (see the `fetch` module); a plain read on the host.
    ///
    /// # Safety
    /// `at` must be valid for reads.
    unsafe fn fetch(at: *const Self) -> Self;
    /// Decodes a stored value.
    #[inline(always)]
    fn load(self) -> Self::Real {
        self.load_scaled() * Self::Real::from_f64(1.0 / Self::SCALE)
    }
    /// Encodes a value for storage (rounding to nearest).
    #[inline(always)]
    fn store(v: Self::Real) -> Self {
        Self::store_scaled(v * Self::Real::from_f64(Self::SCALE))
    }
}

// SAFETY: f32 is plain old data.
unsafe impl Storage for f32 {
    type Real = f32;
    const NAME: &'static str = "f32";
    const BYTES: usize = 4;
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn load_scaled(self) -> f32 {
        self
    }
    #[inline(always)]
    fn store_scaled(v: f32) -> Self {
        v
    }
    #[inline(always)]
    unsafe fn fetch(at: *const Self) -> Self {
        fetch!(at, f32, "b32", reg32)
    }
}

// SAFETY: f64 is plain old data.
unsafe impl Storage for f64 {
    type Real = f64;
    const NAME: &'static str = "f64";
    const BYTES: usize = 8;
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn load_scaled(self) -> f64 {
        self
    }
    #[inline(always)]
    fn store_scaled(v: f64) -> Self {
        v
    }
    #[inline(always)]
    unsafe fn fetch(at: *const Self) -> Self {
        fetch!(at, f64, "b64", reg64)
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
    const NAME: &'static str = "f16";
    const BYTES: usize = 2;
    const ZERO: Self = F16s(0);
    const SCALE: f64 = F16S_SCALE as f64;
    #[inline(always)]
    fn load_scaled(self) -> f32 {
        f16::from_bits(self.0) as f32
    }
    #[inline(always)]
    fn store_scaled(v: f32) -> Self {
        F16s((v as f16).to_bits())
    }
    #[inline(always)]
    unsafe fn fetch(at: *const Self) -> Self {
        F16s(fetch!(at as *const u16, u16, "b16", reg16))
    }
    const STOCHASTIC: bool = true;
    /// Stochastic rounding: the top 13 bits of `noise` are added to the 13
    /// bits of the f32 that a half drops, and the sum is converted rounding
    /// toward zero, which cuts those bits off (one conversion, `cvt.rz`, and
    /// no mask). Adding to the bit pattern raises the magnitude whatever the
    /// sign (sign and magnitude are separate fields, and a carry moves into
    /// the exponent as it should). This is exact stochastic rounding for
    /// normal halves; below them (|v| < 2^-14) the noise spans only part of
    /// the bits dropped, so such tiny values lean toward zero. A value beyond
    /// the largest half (65504) is stored as that value, not as an infinity
    /// ([`Storage::saturated`]), and an infinity with noise becomes a NaN.
    /// Only a NaN's mantissa can carry into the sign bit (the GPU's NaN, all
    /// mantissa bits set, would come out as -0), so callers pass zero noise
    /// for NaN cells, which keeps a NaN a NaN ([`crate::stream`]).
    #[inline(always)]
    fn store_scaled_dithered(v: f32, noise: u32) -> Self {
        F16s(half_toward_zero(f32::from_bits(v.to_bits().wrapping_add(noise >> 19))))
    }
    #[inline(always)]
    fn saturated(v: f32) -> bool {
        v.abs() == f16::MAX as f32
    }
}

/// The bits of `v` in half precision, rounded toward zero: the GPU's
/// `cvt.rz.f16.f32`, and on the host the nearest half stepped back toward
/// zero where it lies further from zero than `v` (an overflow to infinity
/// included).
#[inline(always)]
fn half_toward_zero(v: f32) -> u16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let h: u16;
        // SAFETY: a conversion between registers.
        unsafe {
            core::arch::asm!("cvt.rz.f16.f32 {h}, {v};", h = out(reg16) h, v = in(reg32) v, options(pure, nomem, nostack));
        }
        h
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let h = v as f16;
        if (h as f32).abs() > v.abs() {
            h.to_bits() - 1
        } else {
            h.to_bits()
        }
    }
}

/// The random bits for the stores of one cell in one step: a hash of the
/// cell's index in the whole domain and of the time step. [`store_noise`]
/// gives the bits for each store.
#[inline(always)]
pub fn cell_noise(global_cell: u32, step: u32) -> u32 {
    mix(global_cell.wrapping_mul(0x9e37_79b9) ^ mix(step))
}

/// The random bits for store `k` of a cell with noise `cell`: the cell's bits
/// times an odd constant of its own per store (a bijection, so uniform bits
/// stay uniform; [`Storage::store_scaled_dithered`] uses only the high bits,
/// which are good). One multiplication, with no chain from store to store.
#[inline(always)]
pub fn store_noise(cell: u32, k: usize) -> u32 {
    cell.wrapping_mul(mix(k as u32 + 1) | 1)
}

/// A 32-bit integer hash (Wellons' "lowbias32").
#[inline(always)]
const fn mix(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^ (h >> 16)
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

    /// Stochastic rounding lands on one of the two halves around a value,
    /// and on average (over the noise) on the value itself.
    #[test]
    fn f16s_stochastic_rounding_is_unbiased() {
        for &v in &[1.0e-4f32, -3.3e-3, 0.0123, 0.3] {
            let (lo, hi) = {
                let nearest = F16s::store(v).load();
                let ulp = nearest.abs() * 2f32.powi(-10);
                (nearest - ulp, nearest + ulp)
            };
            let n = 1 << 14;
            let mut sum = 0.0f64;
            for cell in 0..n {
                let noise = store_noise(cell_noise(cell, 11), 5);
                let got = F16s::store_scaled_dithered(v * F16S_SCALE, noise).load();
                assert!(got >= lo && got <= hi, "{v} -> {got} outside [{lo}, {hi}]");
                sum += got as f64;
            }
            let mean = sum / n as f64;
            // The spread of one rounding is below one ulp: the mean of n is within a few ulp / sqrt(n).
            let ulp = (v.abs() * 2f32.powi(-10)) as f64;
            assert!((mean - v as f64).abs() < 4.0 * ulp / (n as f64).sqrt(), "{v}: mean {mean}");
        }
        assert_eq!(F16s::store_scaled_dithered(0.0, u32::MAX), F16s::ZERO);
        assert_eq!(F16s::store_scaled_dithered(-0.0, u32::MAX).0, 0x8000);
    }

    /// Zero noise keeps every NaN a NaN, the GPU's (all mantissa bits set,
    /// which noise would carry into the sign bit) and the CPU's.
    #[test]
    fn f16s_nan_survives_zero_noise() {
        for bits in [0x7fff_ffffu32, 0xffff_ffff, 0xffc0_0000, 0x7fc0_0000] {
            assert!(F16s::store_scaled_dithered(f32::from_bits(bits), 0).load().is_nan(), "{bits:#x}");
        }
    }

    /// What is not finite stays so: an infinity with noise becomes a NaN.
    #[test]
    fn f16s_stochastic_rounding_keeps_infinity_non_finite() {
        for noise in [0, 1 << 19, u32::MAX] {
            for inf in [f32::INFINITY, f32::NEG_INFINITY] {
                let got = F16s::store_scaled_dithered(inf, noise).load();
                assert!(!got.is_finite(), "noise {noise:#x}: {got}");
                if noise == 0 {
                    assert_eq!(got, inf);
                }
            }
        }
    }

    /// A value beyond the largest half is stored as the largest half, of its
    /// sign, which `saturated` recognises; values below it are not.
    #[test]
    fn f16s_stochastic_rounding_saturates() {
        for v in [65504.0f32, 65519.0, 65520.0, 1e6, 1e30] {
            for noise in [0, 1 << 19, u32::MAX] {
                for v in [v, -v] {
                    let got = F16s::store_scaled_dithered(v, noise).load_scaled();
                    assert_eq!(got, 65504.0f32.copysign(v), "{v} with noise {noise:#x}");
                    assert!(F16s::saturated(got));
                }
            }
        }
        assert!(!F16s::saturated(65472.0) && !F16s::saturated(1.0) && !F16s::saturated(f32::INFINITY));
        assert!(!f32::saturated(f32::MAX) && !f64::saturated(65504.0));
    }

    /// The host's rounding toward zero picks the half of largest magnitude
    /// not above the value's, as the GPU's conversion does: over values
    /// spread across the whole half range (subnormals, normals, overflow).
    #[test]
    fn halves_round_toward_zero() {
        let mut x = 0x2545_f491u32;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // Exponents from well below the subnormal halves to above the largest.
            let v = f32::from_bits((x & 0x807f_ffff) | ((96 + (x >> 23) % 50) << 23));
            let bits = half_toward_zero(v);
            let h = f16::from_bits(bits) as f32;
            assert!(h.abs() <= v.abs() && h.is_sign_negative() == v.is_sign_negative(), "{v:e} -> {h:e}");
            if h.abs() < 65504.0 {
                // The next half away from zero.
                let next = f16::from_bits((bits & 0x7fff) + 1) as f32;
                assert!(next > v.abs(), "{v:e} -> {h:e}, next {next:e}");
            }
        }
    }
}
