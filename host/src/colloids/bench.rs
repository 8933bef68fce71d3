//! Timing colloids on a GPU: whole steps of a box holding many free
//! colloids, against its fluid step alone, and each colloid pass alone.
//!
//! The fluid step's bytes per site are the populations read and written,
//! the density and velocity written and the map read (`2Q + 4` values and
//! 4 bytes); the neighbours' map entries come from the caches. The colloid
//! passes and the host's share are reported in milliseconds per step: they
//! scale with the colloids, not the sites.

use super::{ColloidSpec, Interactions, Lubrication, SoftSphere, Suspension, SuspensionConfig};
use crate::binary::bench::SplitBenchResult;
use crate::binary::{BinaryCollision, Devices};
use crate::error::{Error, Result};
use crate::solver::{BackendKind, KernelReport, LatticeKind, Precision};
use std::time::Instant;

/// One measurement.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ColloidBenchResult {
    /// `d3q19` or `d3q27`.
    pub lattice: &'static str,
    /// Sites along each axis.
    pub size: [u32; 3],
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// Colloids in the box.
    pub colloids: usize,
    /// Their radius.
    pub radius: f64,
    /// Steps timed.
    pub steps: u64,
    /// Million site updates per second, whole steps.
    pub mlups: f64,
    /// Milliseconds per whole step.
    pub step_ms: f64,
    /// The fluid step alone, milliseconds per launch.
    pub fluid_ms: f64,
    /// Bytes the fluid step moves per site.
    pub fluid_bytes_per_site: usize,
    /// The fluid step's bytes over its time, as a fraction of the copy bandwidth.
    pub fluid_fraction_of_copy: f64,
    /// The links' sums alone, milliseconds per step.
    pub links_ms: f64,
    /// A move (clear, paint, cover) alone, milliseconds per step.
    pub move_ms: f64,
    /// The host's share (sums down, update, colloids up), milliseconds per step.
    pub host_ms: f64,
    /// Registers and occupancy of the fluid's kernel.
    pub kernel: Option<KernelReport>,
}

/// A cube of side `n` holding `count` free colloids of radius `radius` on
/// a jittered cubic array (none closer than a site to another), each pulled
/// by a small force in its own direction, MRT at tau 1.
pub fn bench_config(
    n: u32,
    lattice: LatticeKind,
    precision: Precision,
    count: usize,
    radius: f64,
) -> Result<SuspensionConfig> {
    let per_side = (count as f64).cbrt().ceil() as usize;
    let spacing = n as f64 / per_side as f64;
    let room = spacing - 2.0 * radius - 1.0;
    if count > 0 && room < 0.0 {
        return Err(Error::Setup(format!(
            "{count} colloids of radius {radius} do not fit a cube of side {n}: fewer, smaller, or a larger box"
        )));
    }
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut uniform = move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let colloids = (0..count)
        .map(|k| {
            let cell = [k % per_side, (k / per_side) % per_side, k / (per_side * per_side)];
            let centre = cell.map(|c| (c as f64 + 0.5) * spacing + room * 0.5 * uniform());
            let mut c = ColloidSpec::at(centre, radius);
            c.force = [1e-3 * uniform(), 1e-3 * uniform(), 1e-3 * uniform()];
            c
        })
        .collect();
    Ok(SuspensionConfig {
        size: [n; 3],
        lattice,
        tau: 1.0,
        collision: BinaryCollision::Mrt,
        precision,
        walls: None,
        force: [0.0; 3],
        balance: true,
        colloids,
        interactions: Interactions {
            soft: Some(SoftSphere::LUDWIG),
            lubrication: Some(Lubrication { pair_cutoff: 0.5, wall_cutoff: 0.5 }),
        },
    })
}

/// Bytes the fluid step moves per site in values of `size` bytes (module docs).
fn fluid_bytes(config: &SuspensionConfig, size: usize) -> usize {
    (2 * config.lattice.q() + 4) * size + 4
}

/// Seconds `steps` whole steps of `s` take, after two untimed and then
/// `before(s)`.
fn timed_steps(s: &mut Suspension, steps: u64, mut before: impl FnMut(&Suspension)) -> Result<f64> {
    s.step(2)?;
    s.synchronize()?;
    before(s);
    let t0 = Instant::now();
    s.step(steps)?;
    s.synchronize()?;
    Ok(t0.elapsed().as_secs_f64())
}

/// Times `steps` whole steps of `config` split over GPUs `ordinals` (one:
/// the whole box on it), against `copy_bandwidth` (bytes/s) of one GPU.
/// The fraction of copy counts the fluid step's bytes against the whole
/// step's time.
pub fn measure_split(
    config: SuspensionConfig,
    ordinals: &[usize],
    ptx: &str,
    steps: u64,
    copy_bandwidth: f64,
) -> Result<SplitBenchResult> {
    let devices = Devices::Gpus { ordinals: ordinals.to_vec(), overlap: false };
    let mut s = Suspension::on_devices(config.clone(), &devices, ptx)?;
    let seconds = timed_steps(&mut s, steps, |_| ())?;
    let size = if config.precision == Precision::F32 { 4 } else { 8 };
    let bytes_per_site = fluid_bytes(&config, size);
    let mlups = config.sites() as f64 * steps as f64 / seconds / 1e6;
    let gpus = ordinals.len();
    // Twice a step (after the fluid step and after the move), the `Q`
    // populations of a plane each way; the carried lane sums come on top.
    let plane = (config.size[0] * config.size[1]) as usize;
    let halo = if gpus > 1 { 4 * plane * config.lattice.q() * size } else { 0 };
    Ok(SplitBenchResult {
        lattice: config.lattice.name(),
        size: config.size,
        precision: if size == 4 { "f32" } else { "f64" },
        gpus,
        overlap: false,
        steps,
        step_ms: seconds * 1e3 / steps as f64,
        mlups,
        bytes_per_site,
        fraction_of_copy: mlups * 1e6 * bytes_per_site as f64 / (gpus as f64 * copy_bandwidth),
        halo_bytes_per_step: halo,
        links: s.links(),
    })
}

/// Times `steps` steps of `config` on GPU `ordinal`, then each pass alone,
/// against `copy_bandwidth` (bytes/s).
pub fn measure(
    config: SuspensionConfig,
    ordinal: usize,
    ptx: &str,
    steps: u64,
    copy_bandwidth: f64,
) -> Result<ColloidBenchResult> {
    let mut s = Suspension::on(config.clone(), BackendKind::Gpu(ordinal), ptx)?;
    let mut host0 = 0.0;
    let seconds = timed_steps(&mut s, steps, |s| host0 = s.host_seconds())?;
    let host = (s.host_seconds() - host0) / steps as f64;
    let [fluid, links, moves] = s
        .kernel_seconds(steps.clamp(1, 200) as u32)?
        .ok_or_else(|| Error::Setup("the colloid benchmark times GPU kernels".into()))?;
    let sites = config.sites() as f64;
    let size = if config.precision == Precision::F32 { 4 } else { 8 };
    let fluid_bytes = fluid_bytes(&config, size);
    Ok(ColloidBenchResult {
        lattice: config.lattice.name(),
        size: config.size,
        precision: if size == 4 { "f32" } else { "f64" },
        colloids: config.colloids.len(),
        radius: config.colloids.first().map_or(0.0, |c| c.radius),
        steps,
        mlups: sites * steps as f64 / seconds / 1e6,
        step_ms: seconds / steps as f64 * 1e3,
        fluid_ms: fluid * 1e3,
        fluid_bytes_per_site: fluid_bytes,
        fluid_fraction_of_copy: sites * fluid_bytes as f64 / fluid / copy_bandwidth,
        links_ms: links * 1e3,
        move_ms: moves * 1e3,
        host_ms: host * 1e3,
        kernel: s.kernel_report(),
    })
}
