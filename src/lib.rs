//! `lbm`: a lattice Boltzmann solver whose GPU kernels are written in Rust
//! (`kernels-gpu`, compiled to PTX by `build.rs` and embedded here) and whose
//! host side (`lbm-host`) runs them on a GPU or, with the same per-cell code,
//! on the CPU.

pub mod ptx;

pub use kernels_gpu as kernels;
pub use lbm_host as host;
pub use lbm_host::{BackendKind, Error, ExecutorKind, Result, Solver, SolverConfig};

/// Builds a solver with the embedded kernels.
pub fn build_solver(config: SolverConfig, backend: BackendKind) -> Result<Box<dyn Solver>> {
    lbm_host::build_solver(config, backend, &ptx::active())
}

/// [`lbm_host::build_on`] with the embedded kernels.
pub fn build_on(config: SolverConfig, kind: ExecutorKind) -> Result<Box<dyn Solver>> {
    lbm_host::build_on(config, kind, &ptx::active())
}

/// The GPU if one can be used, else the CPU.
pub fn default_backend() -> BackendKind {
    match lbm_host::gpu::device_count() {
        Ok(_) => BackendKind::Gpu(0),
        Err(_) => BackendKind::Cpu,
    }
}

/// [`lbm_host::build_multi_gpu`] with the embedded PTX.
pub fn build_multi_gpu(
    config: SolverConfig,
    ordinals: &[usize],
    exchange: lbm_host::multi_gpu::Exchange,
) -> Result<Box<dyn Solver>> {
    lbm_host::build_multi_gpu(config, ordinals, exchange, &ptx::active())
}
