//! Timing the thermal model: on one GPU, MLUPS, the fraction of the copy
//! bandwidth and of the arithmetic peak, with the floating-point
//! operations per site counted in the fused kernel's PTX; on several, the
//! step and the halo exchange alone for Calore et al.'s performance model.

use super::tiles::Tiling;
use super::{tiles, ThermalConfig, ThermalPhase, ThermalPrecision, ThermalSolver};
use crate::error::Result;
use crate::solver::KernelReport;
use kernels_gpu::thermal::d2q37::{Q, THETA0};
use std::time::Instant;

/// One measurement.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ThermalBenchResult {
    /// Sites along x.
    pub nx: u32,
    /// Sites along y.
    pub ny: u32,
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// Whether the bulk ran the fused propagate-collide.
    pub fused: bool,
    /// Steps timed.
    pub steps: u64,
    /// Seconds for them.
    pub seconds: f64,
    /// Million site updates per second.
    pub mlups: f64,
    /// Bytes a site update moves: `2 Q` populations read and written.
    pub bytes_per_site: u32,
    /// `mlups * bytes_per_site`, GB/s.
    pub gb_per_s: f64,
    /// Over the copy bandwidth measured in the same run.
    pub fraction_of_copy: Option<f64>,
    /// Floating-point operations per site of the fused kernel (a fused
    /// multiply-add counts two), counted in its PTX.
    pub flops_per_site: Option<u64>,
    /// `mlups * flops_per_site`, GFLOP/s.
    pub gflops: Option<f64>,
    /// The device's peak arithmetic rate in this precision, GFLOP/s.
    pub peak_gflops: Option<f64>,
    /// `gflops / peak_gflops`.
    pub fraction_of_peak: Option<f64>,
    /// Which roofline limit is lower: `bandwidth` or `arithmetic`.
    pub binding_limit: Option<&'static str>,
    /// MLUPS over the lower of the two limits.
    pub fraction_of_roofline: Option<f64>,
    /// Registers and occupancy of the fused kernel.
    pub kernel: Option<KernelReport>,
}

/// The benchmark box: `n x n` sites between walls at the temperatures of a
/// Rayleigh–Taylor run, under gravity, at rest.
pub fn bench_config(n: u32, precision: ThermalPrecision, fused: bool) -> ThermalConfig {
    ThermalConfig {
        nx: n,
        ny: n,
        tau: 0.8,
        gravity: [0.0, -1e-5],
        walls: Some([1.1 * THETA0, 0.9 * THETA0]),
        fused,
        precision,
        tiling: Tiling::ONE,
    }
}

/// A solver of `config` with tile `k` on GPU `ordinals[k]`, at rest with
/// the lower half hot and the upper cold, and the seconds `steps` steps
/// take after 5 untimed.
fn timed_run(config: &ThermalConfig, ordinals: &[usize], ptx: &str, steps: u64) -> Result<(ThermalSolver, f64)> {
    let ny = config.ny;
    let mut s = ThermalSolver::on_gpus(config.clone(), ordinals, ptx, |_, y| {
        (1.0, [0.0; 2], if y < ny / 2 { 1.1 * THETA0 } else { 0.9 * THETA0 })
    })?;
    s.step(5)?;
    s.synchronize()?;
    let t0 = Instant::now();
    s.step(steps)?;
    s.synchronize()?;
    Ok((s, t0.elapsed().as_secs_f64()))
}

/// Times `steps` steps of `config` on GPU `ordinal` (after 5 untimed).
pub fn measure_thermal(
    config: ThermalConfig,
    ordinal: usize,
    ptx: &str,
    steps: u64,
    copy_bandwidth: Option<f64>,
) -> Result<ThermalBenchResult> {
    let (s, seconds) = timed_run(&config, &[ordinal], ptx, steps)?;
    let sites = config.nx as f64 * config.ny as f64;
    let mlups = sites * steps as f64 / seconds / 1e6;
    let size = config.precision.bytes();
    let bytes_per_site = (2 * Q * size) as u32;
    let gb_per_s = mlups * 1e6 * bytes_per_site as f64 / 1e9;
    let name = config.precision.name();
    let flops_per_site = ptx_flops(ptx, &format!("d2q37_propagate_collide_{name}"), name);
    let peak_gflops = s.peak_flops()?.map(|p| p / 1e9);
    let gflops = flops_per_site.map(|n| mlups * 1e6 * n as f64 / 1e9);
    let fraction_of_peak = gflops.zip(peak_gflops).map(|(g, p)| g / p);
    let limits = copy_bandwidth
        .map(|bw| bw / bytes_per_site as f64 / 1e6)
        .zip(flops_per_site.zip(peak_gflops).map(|(n, p)| p * 1e9 / n as f64 / 1e6));
    Ok(ThermalBenchResult {
        nx: config.nx,
        ny: config.ny,
        precision: name,
        fused: config.fused,
        steps,
        seconds,
        mlups,
        bytes_per_site,
        gb_per_s,
        fraction_of_copy: copy_bandwidth.map(|bw| gb_per_s * 1e9 / bw),
        flops_per_site,
        gflops,
        peak_gflops,
        fraction_of_peak,
        binding_limit: limits.map(|(bw, fp)| if bw <= fp { "bandwidth" } else { "arithmetic" }),
        fraction_of_roofline: limits.map(|(bw, fp)| mlups / bw.min(fp)),
        kernel: s.kernel_report(),
    })
}

/// One measurement of a tiled box on several GPUs.
#[derive(Clone, Debug, serde::Serialize)]
pub struct TiledBenchResult {
    /// Tiles along x and y, e.g. `2x2`.
    pub tiling: String,
    /// How row halos travel: `strided` or `packed` (`-` without any).
    pub row_halo: &'static str,
    /// GPUs (one per tile).
    pub gpus: usize,
    /// Sites along x.
    pub nx: u32,
    /// Sites along y.
    pub ny: u32,
    /// `f32` or `f64`.
    pub precision: &'static str,
    /// Steps timed.
    pub steps: u64,
    /// Milliseconds per step.
    pub step_ms: f64,
    /// Million site updates per second, all GPUs.
    pub mlups: f64,
    /// Per GPU, over the copy bandwidth of one.
    pub fraction_of_copy: Option<f64>,
    /// Milliseconds one halo exchange takes alone.
    pub exchange_ms: f64,
    /// Bytes one exchange moves (every tile's halo).
    pub halo_bytes: u64,
    /// Sites of the largest tile's bulk (run while the halos travel).
    pub bulk_sites: u64,
    /// Sites of its frame (run after).
    pub edge_sites: u64,
    /// How the GPUs reach each other.
    pub links: Vec<String>,
}

/// Times `steps` steps of `config` with tile `k` on GPU `ordinals[k]`
/// (after 5 untimed), and one halo exchange alone.
pub fn measure_tiled(
    config: ThermalConfig,
    ordinals: &[usize],
    ptx: &str,
    steps: u64,
    copy_bandwidth: Option<f64>,
) -> Result<TiledBenchResult> {
    let (mut s, seconds) = timed_run(&config, ordinals, ptx, steps)?;
    let exchange = s.time_exchange(20)?;
    let sites = config.nx as f64 * config.ny as f64;
    let mlups = sites * steps as f64 / seconds / 1e6;
    let size = config.precision.bytes();
    let tiles = tiles::tiles(&config);
    let n = tiles.len();
    let halo_values: usize = if n > 1 {
        (0..n)
            .flat_map(|k| tiles::row_copies(&tiles, k).into_iter().chain(tiles::column_copies(&tiles, k)))
            .map(|c| c.shape.values())
            .sum()
    } else {
        0
    };
    let window_sites = |phases: &[ThermalPhase]| -> u64 {
        phases
            .iter()
            .map(|p| match p {
                ThermalPhase::PropagateCollide(w) | ThermalPhase::Propagate(w) => w.sites(),
                _ => 0,
            })
            .sum()
    };
    let (mut bulk_sites, mut edge_sites) = (0, 0);
    for t in &tiles {
        let plan = tiles::tile_plan(&config, t);
        let (b, e) = (window_sites(&plan.bulk), window_sites(&plan.edges));
        if b + e > bulk_sites + edge_sites {
            (bulk_sites, edge_sites) = (b, e);
        }
    }
    let per_gpu_gb = mlups * 1e6 * (2 * Q * size) as f64 / n as f64;
    let rows_travel = config.tiling.y > 1 || (n > 1 && config.walls.is_none());
    Ok(TiledBenchResult {
        tiling: config.tiling.name(),
        row_halo: if rows_travel { config.tiling.rows.name() } else { "-" },
        gpus: n,
        nx: config.nx,
        ny: config.ny,
        precision: config.precision.name(),
        steps,
        step_ms: seconds / steps as f64 * 1e3,
        mlups,
        fraction_of_copy: copy_bandwidth.map(|bw| per_gpu_gb / bw),
        exchange_ms: exchange * 1e3,
        halo_bytes: (halo_values * size) as u64,
        bulk_sites,
        edge_sites,
        links: s.links(),
    })
}

/// The step time Calore et al.'s model predicts for a tiling (their Eqs.
/// 15-16 without overlap, 19-20 with), in milliseconds: the largest tile's
/// bulk and frame at `beta` seconds per site (one GPU's rate), and the
/// measured exchange time `exchange_ms` in place of `S / B` over the tile's
/// sides. Returns (without overlap, with overlap).
pub fn model_step_ms(r: &TiledBenchResult, beta: f64) -> (f64, f64) {
    let (bulk, edges) = (beta * r.bulk_sites as f64 * 1e3, beta * r.edge_sites as f64 * 1e3);
    (bulk + edges + r.exchange_ms, bulk.max(r.exchange_ms) + edges)
}

/// Floating-point operations of precision `precision` (`f32`, `f64`) in
/// the body of PTX entry `entry`: add, sub, mul, neg and div count one, a
/// fused multiply-add two. `None` if the entry is missing or loops (a
/// static count would then not be what a thread runs).
pub fn ptx_flops(ptx: &str, entry: &str, precision: &str) -> Option<u64> {
    let start = ptx.find(&format!(".entry {entry}("))?;
    let body = &ptx[start..];
    let body = &body[..body.find("\n}\n").unwrap_or(body.len())];
    let mut labels = Vec::new();
    let mut flops = 0;
    for line in body.lines().map(str::trim) {
        if let Some(label) = line.strip_suffix(':') {
            labels.push(label.to_string());
            continue;
        }
        // An instruction, after its predicate (`@%p1`, `@!%p1`) if any.
        let mut words = line.split_whitespace().skip_while(|w| w.starts_with('@'));
        let Some(op) = words.next() else { continue };
        let target = line.split_whitespace().last().unwrap_or("").trim_end_matches(';');
        if op.starts_with("bra") && labels.iter().any(|l| l == target) {
            return None;
        }
        let typed = |name: &str| op.starts_with(name) && op.ends_with(&format!(".{precision}"));
        if typed("fma") {
            flops += 2;
        } else if typed("add") || typed("sub") || typed("mul") || typed("neg") || typed("div") {
            flops += 1;
        }
    }
    (flops > 0).then_some(flops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flops_are_counted_in_the_entry_and_loops_refuse_a_count() {
        let ptx = "\n.visible .entry k_f64(\n)\n{\n\tadd.rn.f64 %fd1, %fd2, %fd3;\n\tfma.rn.f64 %fd4, %fd1, %fd2, %fd3;\n\
                   \t@%p1 bra $L__BB0_2;\n\tmul.rn.f32 %f1, %f2, %f3;\n$L__BB0_2:\n\tneg.f64 %fd5, %fd4;\n\tret;\n}\n\
                   .visible .entry loop_f64(\n)\n{\n$L__BB1_1:\n\tdiv.rn.f64 %fd1, %fd2, %fd3;\n\tbra.uni $L__BB1_1;\n}\n";
        assert_eq!(ptx_flops(ptx, "k_f64", "f64"), Some(4));
        assert_eq!(ptx_flops(ptx, "k_f64", "f32"), Some(1));
        assert_eq!(ptx_flops(ptx, "loop_f64", "f64"), None);
        assert_eq!(ptx_flops(ptx, "missing", "f64"), None);
    }
}
