//! Timing the binary fluid on a GPU: MLUPS of whole steps, and each of the
//! step's three kernels alone, against the copy bandwidth measured in the
//! same run. The bytes are the values each kernel must move once:
//!
//! - `μ`: `φ` read, `μ` written (2);
//! - the fluid: `Q` populations read and written, `φ` and `μ` read, the
//!   density and three velocity components written (`2Q + 6`);
//! - `φ`: `φ`, `μ` and the `D` velocity components along the faces read,
//!   `φ` written (`3 + D`).
//!
//! The neighbours' `φ` and `μ` the stencils read come from the caches.

use super::{BinaryCollision, BinaryConfig, BinarySolver, KernelSeconds};
use crate::error::{Error, Result};
use crate::solver::{BackendKind, KernelReport, LatticeKind, Precision};
use kernels_gpu::binary::FreeEnergy;
use std::time::Instant;

/// One measurement.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BinaryBenchResult {
    /// `d2q9`, `d3q19` or `d3q27`.
    pub lattice: &'static str,
    /// Sites along each axis.
    pub size: [u32; 3],
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// `bgk` or `mrt`.
    pub collision: &'static str,
    /// Steps timed.
    pub steps: u64,
    /// Million site updates per second, whole steps.
    pub mlups: f64,
    /// Bytes a whole step moves per site.
    pub bytes_per_site: usize,
    /// Of the copy bandwidth, whole steps.
    pub fraction_of_copy: f64,
    /// Bytes the fluid's kernel moves per site.
    pub fluid_bytes_per_site: usize,
    /// Each kernel alone, milliseconds per launch.
    pub kernel_ms: KernelSeconds,
    /// Each kernel's bytes over its time, as a fraction of the copy bandwidth.
    pub kernel_fraction_of_copy: KernelSeconds,
    /// Registers and occupancy of the fluid's kernel.
    pub kernel: Option<KernelReport>,
}

/// The benchmark box: a cube of side `n` (a square in 2D) holding a
/// droplet, MRT, the free energy of the Laplace tests.
pub fn bench_config(n: u32, lattice: LatticeKind, precision: Precision, collision: BinaryCollision) -> BinaryConfig {
    BinaryConfig {
        size: if lattice == LatticeKind::D2Q9 { [n, n, 1] } else { [n; 3] },
        lattice,
        tau: 1.0,
        collision,
        free_energy: FreeEnergy::new(-0.02, 0.02, 0.04),
        mobility: 0.5,
        precision,
    }
}

/// Times `steps` steps of `config` on GPU `ordinal`, then each kernel
/// alone, against `copy_bandwidth` (bytes/s).
pub fn measure(
    config: BinaryConfig,
    ordinal: usize,
    ptx: &str,
    steps: u64,
    copy_bandwidth: f64,
) -> Result<BinaryBenchResult> {
    let [nx, ny, nz] = config.size;
    let r = nx.min(ny) as f64 / 4.0;
    let droplet = move |x: u32, y: u32, z: u32| {
        let d2 = (x as f64 - nx as f64 / 2.0).powi(2)
            + (y as f64 - ny as f64 / 2.0).powi(2)
            + (z as f64 - nz as f64 / 2.0).powi(2);
        -((d2.sqrt() - r) / 2.0).tanh()
    };
    let mut s = BinarySolver::on(config.clone(), BackendKind::Gpu(ordinal), ptx, droplet)?;
    s.step(2)?;
    s.synchronize()?;
    let t0 = Instant::now();
    s.step(steps)?;
    s.synchronize()?;
    let seconds = t0.elapsed().as_secs_f64();
    let kernel_ms = s
        .kernel_seconds(steps.clamp(1, 200) as u32)?
        .ok_or_else(|| Error::Setup("the binary-fluid benchmark times GPU kernels".into()))?;
    let sites = config.sites() as f64;
    let q = config.lattice.q();
    let d = config.lattice.dimension();
    let size = if config.precision == Precision::F32 { 4 } else { 8 };
    let values = [2, 2 * q + 6, 3 + d];
    let bytes_per_site = values.iter().sum::<usize>() * size;
    let mlups = sites * steps as f64 / seconds / 1e6;
    let fraction = |values: usize, seconds: f64| sites * (values * size) as f64 / seconds / copy_bandwidth;
    Ok(BinaryBenchResult {
        lattice: config.lattice.name(),
        size: config.size,
        precision: if size == 4 { "f32" } else { "f64" },
        collision: if config.collision == BinaryCollision::Mrt { "mrt" } else { "bgk" },
        steps,
        mlups,
        bytes_per_site,
        fraction_of_copy: mlups * 1e6 * bytes_per_site as f64 / copy_bandwidth,
        fluid_bytes_per_site: values[1] * size,
        kernel_fraction_of_copy: KernelSeconds {
            chemical_potential: fraction(values[0], kernel_ms.chemical_potential),
            fluid: fraction(values[1], kernel_ms.fluid),
            order_parameter: fraction(values[2], kernel_ms.order_parameter),
        },
        kernel_ms: KernelSeconds {
            chemical_potential: kernel_ms.chemical_potential * 1e3,
            fluid: kernel_ms.fluid * 1e3,
            order_parameter: kernel_ms.order_parameter * 1e3,
        },
        kernel: s.kernel_report(),
    })
}
