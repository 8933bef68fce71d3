//! The PTX of every kernel, built from `kernels-gpu` by `build.rs` and embedded.

/// PTX text of all kernels.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
/// GPU architecture the PTX was built for (`LBM_CUDA_ARCH`, default `sm_90`).
pub const CUDA_ARCH: &str = env!("LBM_CUDA_ARCH");
