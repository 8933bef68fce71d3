//! The PTX of every kernel, built from `kernels-gpu` by `build.rs` and embedded.

/// PTX text of all kernels.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));
/// GPU architecture the PTX was built for (`LBM_CUDA_ARCH`, default `sm_90`).
pub const CUDA_ARCH: &str = env!("LBM_CUDA_ARCH");

/// The PTX to load: the embedded one, or the file named by `LBM_PTX_FILE` (a
/// developer knob for trying kernel variants on a GPU machine without a
/// toolchain). An unreadable file is reported and the embedded PTX used.
pub fn active() -> std::borrow::Cow<'static, str> {
    match std::env::var_os("LBM_PTX_FILE") {
        None => PTX.into(),
        Some(path) => match std::fs::read_to_string(&path) {
            Ok(text) => text.into(),
            Err(e) => {
                eprintln!("warning: LBM_PTX_FILE {}: {e}; using the embedded PTX", path.to_string_lossy());
                PTX.into()
            }
        },
    }
}
