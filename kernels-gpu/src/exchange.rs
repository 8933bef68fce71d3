//! Moving chosen stored values between the buffers of two partitions of a
//! refined domain: the sender gathers them into a packed buffer, which is
//! copied to the receiver, which scatters them. The lists of positions come
//! from the host (`host/src/levels/split.rs`), which works out which values
//! a partition's neighbours wrote that it reads.

/// Entry points by the bytes of a stored value (16-bit, `f32`, `f64`
/// storage): `(bytes, gather, scatter)`.
pub const KERNELS: [(usize, &str, &str); 3] = [
    (2, "exchange_gather_b16", "exchange_scatter_b16"),
    (4, "exchange_gather_b32", "exchange_scatter_b32"),
    (8, "exchange_gather_b64", "exchange_scatter_b64"),
];

/// The gather and scatter kernels for stored values of `bytes` bytes.
pub fn kernels_for(bytes: usize) -> Option<(&'static str, &'static str)> {
    KERNELS.iter().find(|k| k.0 == bytes).map(|k| (k.1, k.2))
}

/// `out[k] = src[index[k]]`.
///
/// # Safety
/// `index` and `out` must hold more than `k` entries, and `src` more than
/// `index[k]`.
#[inline(always)]
pub unsafe fn gather<T: Copy>(src: *const T, index: *const u64, out: *mut T, k: u32) {
    let k = k as usize;
    *out.add(k) = *src.add(*index.add(k) as usize);
}

/// `dst[index[k]] = values[k]`.
///
/// # Safety
/// As [`gather`], with `dst` for `src` and `values` for `out`.
#[inline(always)]
pub unsafe fn scatter<T: Copy>(dst: *mut T, index: *const u64, values: *const T, k: u32) {
    let k = k as usize;
    *dst.add(*index.add(k) as usize) = *values.add(k);
}
