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
//!
//! A box split over several GPUs ([`measure_split`]) is timed by whole
//! steps, against the copy bandwidth of all its GPUs together; its slabs
//! also send a plane of `Q + 3` values each way per step.

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

/// A droplet of a quarter of the box's width in its middle.
fn droplet(config: &BinaryConfig) -> impl Fn(u32, u32, u32) -> f64 + Sync {
    let [nx, ny, nz] = config.size;
    let r = nx.min(ny) as f64 / 4.0;
    move |x: u32, y: u32, z: u32| {
        let d2 = (x as f64 - nx as f64 / 2.0).powi(2)
            + (y as f64 - ny as f64 / 2.0).powi(2)
            + (z as f64 - nz as f64 / 2.0).powi(2);
        -((d2.sqrt() - r) / 2.0).tanh()
    }
}

/// Seconds `steps` steps of `s` take, after two untimed.
fn timed_steps(s: &mut BinarySolver, steps: u64) -> Result<f64> {
    s.step(2)?;
    s.synchronize()?;
    let t0 = Instant::now();
    s.step(steps)?;
    s.synchronize()?;
    Ok(t0.elapsed().as_secs_f64())
}

/// Values each of a step's three kernels moves per site (module docs).
fn step_values(config: &BinaryConfig) -> [usize; 3] {
    let (q, d) = (config.lattice.q(), config.lattice.dimension());
    [2, 2 * q + 6, 3 + d]
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
    let mut s = BinarySolver::on(config.clone(), BackendKind::Gpu(ordinal), ptx, droplet(&config))?;
    let seconds = timed_steps(&mut s, steps)?;
    let kernel_ms = s
        .kernel_seconds(steps.clamp(1, 200) as u32)?
        .ok_or_else(|| Error::Setup("the binary-fluid benchmark times GPU kernels".into()))?;
    let sites = config.sites() as f64;
    let size = if config.precision == Precision::F32 { 4 } else { 8 };
    let values = step_values(&config);
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

/// One measurement of a box split over GPUs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SplitBenchResult {
    /// `d3q19` or `d3q27`.
    pub lattice: &'static str,
    /// Sites along each axis (the whole box).
    pub size: [u32; 3],
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// GPUs (a slab each).
    pub gpus: usize,
    /// Whether each pass's halo copies overlap its interior.
    pub overlap: bool,
    /// Steps timed.
    pub steps: u64,
    /// Milliseconds per step.
    pub step_ms: f64,
    /// Million site updates per second, all GPUs together.
    pub mlups: f64,
    /// Bytes a step moves per site (as [`BinaryBenchResult::bytes_per_site`]).
    pub bytes_per_site: usize,
    /// Of the GPUs' copy bandwidth together (`gpus` times GPU 0's).
    pub fraction_of_copy: f64,
    /// Bytes each slab sends each step, both ways together.
    pub halo_bytes_per_step: usize,
    /// How neighbouring GPUs are connected.
    pub links: Vec<String>,
}

/// Times `steps` steps of `config` split over GPUs `ordinals` (one: the
/// whole box on it), against `copy_bandwidth` (bytes/s) of one GPU.
pub fn measure_split(
    config: BinaryConfig,
    ordinals: &[usize],
    overlap: bool,
    ptx: &str,
    steps: u64,
    copy_bandwidth: f64,
) -> Result<SplitBenchResult> {
    let devices = super::Devices::Gpus { ordinals: ordinals.to_vec(), overlap };
    let mut s = BinarySolver::on_devices(config.clone(), &devices, ptx, droplet(&config))?;
    let seconds = timed_steps(&mut s, steps)?;
    let size = if config.precision == Precision::F32 { 4 } else { 8 };
    let bytes_per_site = step_values(&config).iter().sum::<usize>() * size;
    let mlups = config.sites() as f64 * steps as f64 / seconds / 1e6;
    let gpus = ordinals.len();
    // Per pass, a plane each way: μ; Q populations and a velocity; φ.
    let plane = (config.size[0] * config.size[1]) as usize;
    let halo = if gpus > 1 { 2 * plane * (config.lattice.q() + 3) * size } else { 0 };
    Ok(SplitBenchResult {
        lattice: config.lattice.name(),
        size: config.size,
        precision: if size == 4 { "f32" } else { "f64" },
        gpus,
        overlap,
        steps,
        step_ms: seconds * 1e3 / steps as f64,
        mlups,
        bytes_per_site,
        fraction_of_copy: mlups * 1e6 * bytes_per_site as f64 / (gpus as f64 * copy_bandwidth),
        halo_bytes_per_step: halo,
        links: s.links(),
    })
}
