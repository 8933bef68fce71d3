//! Throughput measurement: MLUPS, bytes moved, and the fraction of the
//! device's copy bandwidth, for any lattice, storage and streaming scheme.

use crate::error::Result;
use crate::gpu::KernelReport;
use crate::solver::{streaming_name, BackendKind, LatticeKind, Precision, Solver, SolverConfig};
use crate::validation::cavity_config;
use kernels_gpu::Streaming;
use std::time::Instant;

/// Copy buffer for the bandwidth reference: 4 GiB, far beyond the L2 cache.
pub const COPY_BYTES: usize = 4 << 30;

/// Bytes one cell update moves at least: every population read and written
/// once, plus the flag byte. (`2 Q b + 1`; the formula `lbm bench` prints.)
pub const fn bytes_per_cell_update(lattice: LatticeKind, precision: Precision) -> usize {
    2 * lattice.q() * precision.bytes() + 1
}

/// One measured configuration.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchResult {
    /// Velocity set.
    pub lattice: &'static str,
    /// Storage.
    pub precision: &'static str,
    /// Streaming scheme.
    pub streaming: &'static str,
    /// Cube side, cells.
    pub size: u32,
    /// Time steps timed.
    pub steps: u64,
    /// Seconds for those steps.
    pub seconds: f64,
    /// Million lattice-cell updates per second (all cells of the cube).
    pub mlups: f64,
    /// Bytes per cell update, [`bytes_per_cell_update`].
    pub bytes_per_cell: usize,
    /// Effective bandwidth, GB/s.
    pub gb_per_s: f64,
    /// Effective bandwidth over the copy bandwidth measured in the same run.
    pub fraction_of_copy: Option<f64>,
    /// Kernel resources (GPU).
    pub kernel: Option<KernelReport>,
}

/// One configuration to measure.
#[derive(Clone, Copy, Debug)]
pub struct BenchCase {
    /// Velocity set.
    pub lattice: LatticeKind,
    /// Storage.
    pub precision: Precision,
    /// Streaming scheme.
    pub streaming: Streaming,
    /// Cube side, cells.
    pub size: u32,
}

/// Runs a lid-driven cavity of `size`^3 cells for `10 + steps` steps and
/// times the last `steps`.
pub fn measure(
    make: &dyn Fn(SolverConfig, BackendKind) -> Result<Box<dyn Solver>>,
    backend: BackendKind,
    case: BenchCase,
    steps: u64,
    copy_bandwidth: Option<f64>,
) -> Result<BenchResult> {
    let BenchCase { lattice, precision, streaming, size } = case;
    let config = cavity_config(lattice, precision, streaming, size - 2, 1000.0, 0.05)?;
    let mut s = make(config, backend)?;
    s.step(10)?;
    s.synchronize()?;
    let t0 = Instant::now();
    s.step(steps)?;
    s.synchronize()?;
    let seconds = t0.elapsed().as_secs_f64();
    let cells = (size as f64).powi(3);
    let mlups = cells * steps as f64 / seconds / 1e6;
    let bytes_per_cell = bytes_per_cell_update(lattice, precision);
    let gb_per_s = mlups * 1e6 * bytes_per_cell as f64 / 1e9;
    Ok(BenchResult {
        lattice: lattice.name(),
        precision: precision.name(),
        streaming: streaming_name(streaming),
        size,
        steps,
        seconds,
        mlups,
        bytes_per_cell,
        gb_per_s,
        fraction_of_copy: copy_bandwidth.map(|bw| gb_per_s * 1e9 / bw),
        kernel: s.kernel_report(),
    })
}

/// Largest cube side whose Esoteric-Pull state (populations and flags) fits
/// in `free_bytes`.
pub fn max_cube(lattice: LatticeKind, precision: Precision, free_bytes: usize) -> u32 {
    let per_cell = (lattice.q() * precision.bytes() + 1) as f64;
    let mut n = (free_bytes as f64 / per_cell).cbrt() as u32;
    while n > 0 && (n as usize).pow(3) * (per_cell as usize) > free_bytes {
        n -= 1;
    }
    n
}
