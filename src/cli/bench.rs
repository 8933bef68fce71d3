//! `lbm bench`: the copy bandwidth, then stream-collide throughput of a
//! cavity or a periodic box for every chosen lattice, storage, scheme and
//! collision operator, in one run.

use lbm::host::bench::{
    bytes_per_cell_update, max_cube, measure, measure_refined, measure_refined_split, BenchCase, BenchGeometry,
    BenchResult, RefinedCase, RefinedResult,
};
use lbm::host::files::write_atomic;
use lbm::host::groups::BoundaryGroups;
use lbm::host::levels::Fusion;
use lbm::host::solver::{CollisionModel, GridLayout};
use lbm::host::{LatticeKind, Precision};
use lbm::kernels::{CollisionKind, Streaming};
use lbm::{BackendKind, Error, Result};
use std::path::PathBuf;

use lbm::host::bench::COPY_BYTES;

/// What to measure.
pub struct BenchOptions {
    pub sizes: Vec<u32>,
    pub steps: u64,
    pub lattices: Vec<LatticeKind>,
    pub precisions: Vec<Precision>,
    pub streaming: Vec<Streaming>,
    pub collisions: Vec<CollisionKind>,
    pub grids: Vec<GridLayout>,
    pub groups: Vec<BoundaryGroups>,
    pub geometries: Vec<BenchGeometry>,
    pub json: Option<PathBuf>,
    pub max_size: bool,
    pub multires: Option<Multires>,
}

/// The grid name that asks for the refined cavity.
pub const MULTIRES: &str = "multires";

/// The refined cavities to time: every size, 3D lattice, precision and
/// streaming scheme, with each number of levels and each refined step.
pub struct Multires {
    pub levels: Vec<u32>,
    pub fusion: Vec<Fusion>,
}

/// Block edge of the refined cavities' levels.
const MULTIRES_BLOCK: u32 = 8;

#[derive(serde::Serialize)]
struct Report {
    device: String,
    copy_bandwidth_gb_per_s: Option<f64>,
    bytes_per_cell_formula: &'static str,
    results: Vec<BenchResult>,
    max_cube: Vec<(String, String, u32)>,
    refined: Vec<RefinedResult>,
}

pub fn bench(backend: BackendKind, o: BenchOptions) -> Result<()> {
    let (device, copy, free) = match backend {
        BackendKind::Gpu(i) => {
            let d = lbm::host::gpu::GpuDevice::open(i, &lbm::ptx::active())?;
            let info = d.info()?;
            let bw = d.copy_bandwidth(COPY_BYTES, 20)?;
            (format!("GPU {i} {}", info.name), Some(bw), Some(d.memory()?.0))
        }
        BackendKind::Cpu => (format!("CPU ({} threads)", rayon::current_num_threads()), None, None),
    };
    // Checked before anything is measured or printed.
    let max_size_free = match (o.max_size, free) {
        (true, None) => {
            return Err(Error::Setup(
                "--max-size needs the GPU backend (use --backend gpu on a machine with a GPU)".into(),
            ))
        }
        (true, Some(free)) => Some(free),
        (false, _) => None,
    };
    let refined_device = match (&o.multires, backend) {
        (None, _) => None,
        (Some(_), BackendKind::Gpu(i)) => Some(lbm::host::gpu::GpuDevice::open(i, &lbm::ptx::active())?),
        (Some(_), BackendKind::Cpu) => {
            return Err(Error::Setup("--grids multires times the GPU's refined step: use --backend gpu".into()))
        }
    };
    println!("device: {device}");
    match copy {
        Some(bw) => println!("copy bandwidth: {:.1} GB/s (cuMemcpyDtoD of 4 GiB x 20, bytes read + written)", bw / 1e9),
        None => println!("copy bandwidth: not measured on the CPU"),
    }
    let formula = "bytes per cell update = 2 x Q x bytes per population + 1 flag byte";
    println!("{formula}; fraction = MLUPS x bytes per cell update / copy bandwidth");
    if !o.sizes.is_empty() {
        println!(
            "{:<6} {:<4} {:<13} {:<8} {:>5} {:>9} {:>5} {:>8} {:>7} {:>7} {:>6} {:>7} {:<9} {:<7} {:>9} {:>7} {:<7} {:>5}",
            "lattice",
            "prec",
            "streaming",
            "geometry",
            "size",
            "MLUPS",
            "B/cel",
            "GB/s",
            "of copy",
            "regs",
            "block",
            "occ",
            "collision",
            "grid",
            "act.MLUPS",
            "of copy",
            "groups",
            "spill"
        );
        println!("(act.: per flow cell updated; the first MLUPS counts every cell of the cube;");
        println!(" regs, occ and spill (local bytes per thread): bulk kernel / kernel that updates open cells too)");
    }
    let mut results = Vec::new();
    let mut cases = Vec::new();
    for &size in &o.sizes {
        for &lattice in &o.lattices {
            for &precision in &o.precisions {
                for &streaming in &o.streaming {
                    for &geometry in &o.geometries {
                        // The cumulant operator has no D3Q19 kernels.
                        for &kind in o.collisions.iter().filter(|k| k.built_for(lattice.q())) {
                            for &grid in &o.grids {
                                // The block variants need a sparse grid's blocks.
                                for &groups in
                                    o.groups.iter().filter(|g| !g.needs_blocks() || grid != GridLayout::Dense)
                                {
                                    let collision = CollisionModel::of_kind(kind);
                                    cases.push(BenchCase {
                                        lattice,
                                        precision,
                                        streaming,
                                        size,
                                        geometry,
                                        collision,
                                        grid,
                                        groups,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for case in cases {
        let BenchCase { lattice, precision, streaming, size, geometry, collision, grid, groups } = case;
        let r = measure(&|c, b| lbm::build_solver(c, b), backend, case, o.steps, copy);
        let r = match r {
            Ok(r) => r,
            Err(Error::OutOfMemory { .. }) => {
                println!(
                    "{:<6} {:<4} {:<13} {:<8} {:>5} does not fit ({}, {}, {})",
                    lattice.name(),
                    precision.name(),
                    streaming.name(),
                    geometry.name(),
                    size,
                    collision.kind().name(),
                    grid.name(),
                    groups.name()
                );
                continue;
            }
            Err(e) => return Err(e),
        };
        let k = r.kernel.as_ref();
        // A kernel figure, and the open cells' kernel's after a slash where it runs.
        let both = |f: &dyn Fn(&lbm::host::solver::KernelReport) -> String| {
            k.map(|k| match &k.with_open {
                Some(o) => format!("{}/{}", f(k), f(o)),
                None => f(k),
            })
            .unwrap_or_else(|| "-".into())
        };
        println!(
            "{:<6} {:<4} {:<13} {:<8} {:>5} {:>9.0} {:>5} {:>8.1} {:>7} {:>7} {:>6} {:>7} {:<9} {:<7} {:>9.0} {:>7} {:<7} {:>5}",
            r.lattice,
            r.precision,
            r.streaming,
            r.geometry,
            r.size,
            r.mlups,
            r.bytes_per_cell,
            r.gb_per_s,
            r.fraction_of_copy.map(|f| format!("{:.1}%", 100.0 * f)).unwrap_or_else(|| "-".into()),
            both(&|k| k.registers.to_string()),
            k.map(|k| k.block_size.to_string()).unwrap_or_else(|| "-".into()),
            both(&|k| format!("{:.0}%", 100.0 * k.occupancy)),
            r.collision,
            r.grid,
            r.mlups_active,
            r.active_fraction_of_copy.map(|f| format!("{:.1}%", 100.0 * f)).unwrap_or_else(|| "-".into()),
            r.groups,
            both(&|k| k.local_bytes.to_string()),
        );
        results.push(r);
    }

    let mut refined = Vec::new();
    if let (Some(d), Some(m)) = (&refined_device, &o.multires) {
        refined = bench_multires(d, &o, m, copy)?;
    }

    let mut cubes = Vec::new();
    if let Some(free) = max_size_free {
        println!(
            "largest cube that fits ({:.1} GiB free), Esoteric Pull, state = populations + flag byte:",
            free as f64 / (1u64 << 30) as f64
        );
        for &lattice in &o.lattices {
            for &precision in &o.precisions {
                let n = max_cube(lattice, precision, free);
                println!(
                    "  {:<6} {:<4} {n}^3 ({} B per cell)",
                    lattice.name(),
                    precision.name(),
                    bytes_per_cell_update(lattice, precision) / 2 + 1
                );
                cubes.push((lattice.name().to_string(), precision.name().to_string(), n));
            }
        }
    }
    if let Some(path) = o.json {
        let report = Report {
            device,
            copy_bandwidth_gb_per_s: copy.map(|b| b / 1e9),
            bytes_per_cell_formula: formula,
            results,
            max_cube: cubes,
            refined,
        };
        write_report(&path, &report)?;
    }
    Ok(())
}

/// What `lbm bench --gpus` measures.
pub struct ScalingOptions {
    pub sizes: Vec<u32>,
    pub steps: u64,
    pub lattices: Vec<LatticeKind>,
    pub gpus: Vec<usize>,
    pub exchange: Vec<lbm::host::multi_gpu::Exchange>,
    pub grids: Vec<GridLayout>,
    pub weak: bool,
    pub json: Option<PathBuf>,
}

#[derive(serde::Serialize)]
struct ScalingReport {
    device: String,
    copy_bandwidth_gb_per_s: f64,
    weak: bool,
    single_gpu: Vec<BenchResult>,
    results: Vec<lbm::host::multi_gpu::ScalingResult>,
    model_setup_us: Option<f64>,
    model_bandwidth_gb_per_s: Option<f64>,
}

/// Strong (or weak) scaling over GPU counts and halo exchanges, with the
/// one-GPU solver as the reference, and a fit of the halo-copy times to
/// the model of Mahmoud et al. 2025, Eq. 1: `t = n_copies t_setup + bytes / bandwidth`.
pub fn scaling(o: ScalingOptions) -> Result<()> {
    use lbm::host::multi_gpu::{measure as measure_multi, Exchange};
    let (ptx, copy, device) = scaling_devices(&o.gpus)?;
    println!("devices: {device}; copy bandwidth of GPU 0: {:.1} GB/s", copy / 1e9);
    println!(
        "{} scaling; f32, Esoteric Pull, BGK; efficiency = MLUPS on N GPUs / (N x MLUPS of the one-GPU solver); \
         of copy = MLUPS x bytes per cell update / (N x copy bandwidth of GPU 0)",
        if o.weak { "weak" } else { "strong" }
    );
    println!(
        "{:<6} {:<7} {:>16} {:>4} {:<13} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>6}",
        "lattice",
        "grid",
        "cells",
        "gpus",
        "exchange",
        "MLUPS",
        "eff",
        "of copy",
        "step ms",
        "kernel ms",
        "halo ms",
        "halo MB",
        "copies"
    );
    let most = o.gpus.iter().copied().max().unwrap_or(1);
    let devices: Vec<_> = (0..most).map(|i| lbm::host::gpu::GpuDevice::open(i, &ptx)).collect::<Result<_>>()?;
    let (mut singles, mut results) = (Vec::new(), Vec::new());
    let mut links_shown = false;
    for (&lattice, &grid) in o.lattices.iter().flat_map(|l| o.grids.iter().map(move |g| (l, g))) {
        for &size in &o.sizes {
            let case = BenchCase {
                lattice,
                precision: Precision::F32,
                streaming: Streaming::EsotericPull,
                size,
                geometry: BenchGeometry::Cavity,
                collision: CollisionModel::Bgk,
                grid,
                groups: lbm::host::groups::BoundaryGroups::Lists,
            };
            let one = measure(&|c, b| lbm::build_solver(c, b), BackendKind::Gpu(0), case, o.steps, Some(copy))?;
            let of_copy = |mlups: f64, gpus: usize| {
                let bytes = lbm::host::bench::bytes_per_cell_update(lattice, Precision::F32) as f64;
                format!("{:.1}%", 100.0 * mlups * 1e6 * bytes / (gpus as f64 * copy))
            };
            println!(
                "{:<6} {:<7} {:>16} {:>4} {:<13} {:>9.0} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>6}",
                lattice.name(),
                grid.name(),
                format!("{size}^3"),
                1,
                "one-gpu",
                one.mlups,
                "100.0%",
                of_copy(one.mlups, 1),
                "-",
                "-",
                "-",
                "-",
                "-"
            );
            for &n in o.gpus.iter().filter(|&&n| n > 1) {
                let dims = if o.weak { [size, size, size * n as u32] } else { [size; 3] };
                for &exchange in &o.exchange {
                    let r = match measure_multi(lattice, grid, dims, &devices[..n], exchange, o.steps) {
                        Ok(r) => r,
                        Err(Error::OutOfMemory { .. }) => {
                            println!(
                                "{:<6} {:<7} {:>16} {:>4} {:<13} does not fit",
                                lattice.name(),
                                grid.name(),
                                format!("{dims:?}"),
                                n,
                                exchange.name()
                            );
                            continue;
                        }
                        Err(e) => return Err(e),
                    };
                    if !links_shown {
                        for l in &r.links {
                            println!("  link: {l}");
                        }
                        links_shown = true;
                    }
                    let eff = r.mlups / (n as f64 * one.mlups);
                    println!(
                        "{:<6} {:<7} {:>16} {:>4} {:<13} {:>9.0} {:>6.1}% {:>7} {:>9.3} {:>9.3} {:>9.3} {:>9.2} {:>6}",
                        r.lattice,
                        r.grid,
                        format!("{}x{}x{}", dims[0], dims[1], dims[2]),
                        n,
                        exchange.name(),
                        r.mlups,
                        100.0 * eff,
                        of_copy(r.mlups, n),
                        r.step_ms,
                        r.compute_ms,
                        r.halo_ms,
                        r.halo_bytes as f64 / 1e6,
                        r.transfers
                    );
                    results.push(r);
                }
            }
            singles.push(one);
        }
    }
    // Least squares of halo_ms = copies * t_setup + bytes / bandwidth over the overlapped modes.
    let pts: Vec<(f64, f64, f64)> = results
        .iter()
        .filter(|r| r.exchange != Exchange::NoOverlap)
        .map(|r| (r.transfers as f64, r.halo_bytes as f64, r.halo_ms * 1e-3))
        .collect();
    let (a11, a12, a22) = pts.iter().fold((0.0, 0.0, 0.0), |s, p| (s.0 + p.0 * p.0, s.1 + p.0 * p.1, s.2 + p.1 * p.1));
    let (b1, b2) = pts.iter().fold((0.0, 0.0), |s, p| (s.0 + p.0 * p.2, s.1 + p.1 * p.2));
    let det = a11 * a22 - a12 * a12;
    let (setup_us, bandwidth) = if pts.len() >= 2 && det.abs() > 0.0 {
        let t0 = (b1 * a22 - b2 * a12) / det;
        let inv_bw = (a11 * b2 - a12 * b1) / det;
        println!(
            "halo model (Mahmoud et al. 2025, Eq. 1) fitted to {} measurements: setup {:.1} us per copy, bandwidth {:.1} GB/s",
            pts.len(),
            t0 * 1e6,
            1e-9 / inv_bw
        );
        (Some(t0 * 1e6), Some(1e-9 / inv_bw))
    } else {
        (None, None)
    };
    if let Some(path) = o.json {
        let report = ScalingReport {
            device,
            copy_bandwidth_gb_per_s: copy / 1e9,
            weak: o.weak,
            single_gpu: singles,
            results,
            model_setup_us: setup_us,
            model_bandwidth_gb_per_s: bandwidth,
        };
        write_report(&path, &report)?;
    }
    Ok(())
}

/// The refined geometries of `o` (the cavity and the tunnel), at least one.
fn refined_geometries(o: &BenchOptions) -> Result<Vec<BenchGeometry>> {
    let geometries: Vec<BenchGeometry> =
        o.geometries.iter().copied().filter(|g| matches!(g, BenchGeometry::Cavity | BenchGeometry::Tunnel)).collect();
    if geometries.is_empty() {
        return Err(Error::Setup(
            "--grids multires refines the cavity or the tunnel: add cavity or tunnel to --geometry".into(),
        ));
    }
    Ok(geometries)
}

/// Every refined case of `o` and `m` on `geometries`, in table order; the
/// split step only where it runs (two-lattice, f32 or f64).
fn refined_cases(o: &BenchOptions, m: &Multires, geometries: &[BenchGeometry]) -> Vec<RefinedCase> {
    let mut cases = Vec::new();
    for (&geometry, &size) in geometries.iter().flat_map(|g| o.sizes.iter().map(move |s| (g, s))) {
        for &levels in &m.levels {
            for &lattice in o.lattices.iter().filter(|l| l.dimension() == 3) {
                for &precision in &o.precisions {
                    for &streaming in &o.streaming {
                        for &fusion in &m.fusion {
                            let exact = matches!(precision, Precision::F32 | Precision::F64);
                            if fusion == Fusion::Split && (streaming != Streaming::TwoLattice || !exact) {
                                continue;
                            }
                            // The cumulant operator has no D3Q19 kernels.
                            for &kind in o.collisions.iter().filter(|k| k.built_for(lattice.q())) {
                                cases.push(RefinedCase {
                                    geometry,
                                    lattice,
                                    precision,
                                    streaming,
                                    fusion,
                                    collision: CollisionModel::of_kind(kind),
                                    size,
                                    levels,
                                    block: MULTIRES_BLOCK,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    cases
}

/// Times the refined cavities of `m` on `device` and prints a row each.
fn bench_multires(
    device: &lbm::host::gpu::GpuDevice,
    o: &BenchOptions,
    m: &Multires,
    copy: Option<f64>,
) -> Result<Vec<RefinedResult>> {
    let geometries = refined_geometries(o)?;
    println!(
        "refined cavity (--grids multires): level k covers the middle 1/2^k of the cube along each axis; refined \
         tunnel: level k covers a cube around the sphere reaching (levels - k) x size/16 cells past it; \
         blocks of {MULTIRES_BLOCK}^3 on every level"
    );
    println!(" MLUPS counts cell updates summed over levels (a level-l cell updates 2^l times per coarse step);");
    println!(
        " split = streaming and collision as two kernels over every block (the unfused baseline; two-lattice f32/f64);"
    );
    println!(
        " jump / levels ms = time per coarse step at resolution jumps (transit, explode, coalesce) / within levels,"
    );
    println!(" from events around every launch of 20 further steps");
    println!(
        "{:<8} {:<6} {:<4} {:<13} {:<5} {:<11} {:>5} {:>3} {:>36} {:>10} {:>8} {:>7} {:>8} {:>9}",
        "geometry",
        "lattice",
        "prec",
        "streaming",
        "step",
        "collision",
        "size",
        "lv",
        "cells per level",
        "upd/step",
        "MLUPS",
        "of copy",
        "jump ms",
        "levels ms"
    );
    let mut out = Vec::new();
    for case in refined_cases(o, m, &geometries) {
        let r = measure_refined(device, case, o.steps, copy)?;
        let cells = r.cells.iter().map(|c| c.to_string()).collect::<Vec<_>>().join("/");
        let (jump, within) = r.jump_and_levels_ms();
        println!(
            "{:<8} {:<6} {:<4} {:<13} {:<5} {:<11} {:>5} {:>3} {:>36} {:>10} {:>8.0} {:>7} {:>8.3} {:>9.3}",
            r.geometry,
            r.lattice,
            r.precision,
            r.streaming,
            r.fusion,
            r.collision,
            r.size,
            r.levels,
            cells,
            r.updates_per_step,
            r.mlups,
            r.fraction_of_copy.map(|f| format!("{:.1}%", 100.0 * f)).unwrap_or_else(|| "-".into()),
            jump,
            within,
        );
        let parts: Vec<String> = r.profile_ms.iter().map(|(name, ms)| format!("{name} {ms:.3}")).collect();
        println!("    ms per coarse step: {}", parts.join(", "));
        out.push(r);
    }
    for split in out.iter().filter(|r| r.fusion == Fusion::Split.name()) {
        let same = |r: &&RefinedResult| {
            (r.geometry, r.lattice, r.precision, r.size, r.levels, r.collision)
                == (split.geometry, split.lattice, split.precision, split.size, split.levels, split.collision)
                && r.fusion == Fusion::Fused.name()
        };
        for fused in out.iter().filter(same) {
            println!(
                "fused {} {} {} {} {}^3 {} levels, {}: {:+.1}% MLUPS against split",
                fused.geometry,
                fused.lattice,
                fused.precision,
                fused.collision,
                fused.size,
                fused.levels,
                fused.streaming,
                100.0 * (fused.mlups / split.mlups - 1.0)
            );
        }
    }
    Ok(out)
}

#[derive(serde::Serialize)]
struct RefinedScalingReport {
    device: String,
    copy_bandwidth_gb_per_s: f64,
    results: Vec<RefinedResult>,
}

/// Strong scaling of the refined cavity or tunnel: every case of `o` with
/// its levels split along z over GPUs 0 .. N-1 for each N of `gpus`, as
/// `lbm run` splits them, against the same step on GPU 0 alone.
pub fn scaling_multires(o: BenchOptions, gpus: &[usize]) -> Result<()> {
    let m = o.multires.as_ref().expect("refined scaling asks for --grids multires");
    let geometries = refined_geometries(&o)?;
    let (ptx, copy, device) = scaling_devices(gpus)?;
    println!("devices: {device}; copy bandwidth of GPU 0: {:.1} GB/s", copy / 1e9);
    println!(
        "refined strong scaling: every level split along z over GPUs 0 .. N-1; MLUPS counts cell updates summed over \
         levels; efficiency = MLUPS on N GPUs / (N x MLUPS on GPU 0 alone); of copy = MLUPS x bytes per cell update \
         / (N x copy bandwidth of GPU 0)"
    );
    println!(
        "{:<8} {:<6} {:<4} {:<13} {:<5} {:<11} {:>5} {:>3} {:>4} {:>9} {:>7} {:>7} {:>9}",
        "geometry",
        "lattice",
        "prec",
        "streaming",
        "step",
        "collision",
        "size",
        "lv",
        "gpus",
        "MLUPS",
        "eff",
        "of copy",
        "ms/step"
    );
    let mut results = Vec::new();
    for case in refined_cases(&o, m, &geometries) {
        let mut one = None;
        for n in std::iter::once(1).chain(gpus.iter().copied().filter(|&n| n > 1)) {
            let devices: Vec<usize> = (0..n).collect();
            let r = measure_refined_split(&devices, &ptx, case, o.steps, Some(copy))?;
            let base = *one.get_or_insert(r.mlups);
            println!(
                "{:<8} {:<6} {:<4} {:<13} {:<5} {:<11} {:>5} {:>3} {:>4} {:>9.0} {:>6.1}% {:>7} {:>9.3}",
                r.geometry,
                r.lattice,
                r.precision,
                r.streaming,
                r.fusion,
                r.collision,
                r.size,
                r.levels,
                n,
                r.mlups,
                100.0 * r.mlups / (n as f64 * base),
                r.fraction_of_copy.map(|f| format!("{:.1}%", 100.0 * f)).unwrap_or_default(),
                1e3 * r.seconds / r.steps as f64,
            );
            results.push(r);
        }
    }
    if let Some(path) = o.json {
        let report = RefinedScalingReport { device, copy_bandwidth_gb_per_s: copy / 1e9, results };
        write_report(&path, &report)?;
    }
    Ok(())
}

/// The precisions of `precisions` the thermal model runs in (it has no
/// 16-bit storage; f16 is skipped, and said so).
fn thermal_precisions(precisions: &[Precision]) -> Vec<lbm::host::thermal::ThermalPrecision> {
    use lbm::host::thermal::ThermalPrecision;
    precisions
        .iter()
        .filter_map(|p| match p {
            Precision::F64 => Some(ThermalPrecision::F64),
            Precision::F32 => Some(ThermalPrecision::F32),
            Precision::F16 => {
                println!("f16: the thermal model runs in f32 and f64; skipped");
                None
            }
        })
        .collect()
}

/// `lbm bench --model d2q37`: the thermal model on square boxes of side
/// `sizes`, fused bulk, in the precisions asked for (f32, f64).
pub fn thermal(
    backend: BackendKind,
    sizes: &[u32],
    precisions: &[Precision],
    steps: u64,
    json: Option<PathBuf>,
) -> Result<()> {
    use lbm::host::thermal::bench::{bench_config, measure_thermal};
    let ptx = lbm::ptx::active();
    let (ordinal, device, copy) = model_gpu(backend, "d2q37", &ptx)?;
    println!(
        "{:>11} {:>5} {:>9} {:>7} {:>8} {:>10} {:>9} {:>8} {:>11} {:>5} {:>6}",
        "sites", "prec", "MLUPS", "copy%", "FLOP/site", "GFLOP/s", "peak%", "roofline", "binds", "regs", "occup"
    );
    let mut results = Vec::new();
    for p in thermal_precisions(precisions) {
        for &n in sizes {
            let r = measure_thermal(bench_config(n, p, true), ordinal, &ptx, steps, Some(copy))?;
            let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}", 100.0 * v));
            println!(
                "{:>11} {:>5} {:>9.1} {:>7} {:>8} {:>10} {:>9} {:>8} {:>11} {:>5} {:>6}",
                format!("{n}x{n}"),
                r.precision,
                r.mlups,
                pct(r.fraction_of_copy),
                r.flops_per_site.map_or("-".into(), |f| f.to_string()),
                r.gflops.map_or("-".into(), |g| format!("{g:.0}")),
                pct(r.fraction_of_peak),
                pct(r.fraction_of_roofline),
                r.binding_limit.unwrap_or("-"),
                registers(&r.kernel),
                occupancy(&r.kernel),
            );
            results.push(r);
        }
    }
    if let Some(path) = json {
        #[derive(serde::Serialize)]
        struct ThermalReport {
            device: String,
            copy_bandwidth_gb_per_s: f64,
            bytes_per_site_formula: &'static str,
            results: Vec<lbm::host::thermal::bench::ThermalBenchResult>,
        }
        let report = ThermalReport {
            device,
            copy_bandwidth_gb_per_s: copy / 1e9,
            bytes_per_site_formula: "2 * 37 * sizeof(real): every population read and written once",
            results,
        };
        write_report(&path, &report)?;
    }
    Ok(())
}

/// What a scaling benchmark over GPUs 0 .. N-1 needs, once the largest N
/// of `gpus` is checked against this machine: the embedded PTX, the copy
/// bandwidth of GPU 0 (bytes/s) and the devices in words.
fn scaling_devices(gpus: &[usize]) -> Result<(std::borrow::Cow<'static, str>, f64, String)> {
    let available = lbm::host::gpu::device_count()?;
    let most = gpus.iter().copied().max().unwrap_or(1);
    if most > available {
        return Err(Error::Setup(format!("--gpus asks for {most} GPUs, this machine has {available}")));
    }
    let ptx = lbm::ptx::active();
    let d0 = lbm::host::gpu::GpuDevice::open(0, &ptx)?;
    let copy = d0.copy_bandwidth(COPY_BYTES, 20)?;
    let device = format!("{available} x {}", d0.info()?.name);
    Ok((ptx, copy, device))
}

/// The tilings `lbm bench --model d2q37 --gpus` compares on `n` GPUs:
/// along x (contiguous column halos), along y and, for 4 or more, a mesh
/// (row halos strided and packed).
fn tilings(n: u32) -> Vec<lbm::host::thermal::tiles::Tiling> {
    use lbm::host::thermal::tiles::{RowHalo, Tiling};
    if n == 1 {
        return vec![Tiling::ONE];
    }
    let mut out = vec![Tiling::new(n, 1)];
    let mut meshes = vec![(1, n)];
    let side = (1..=n).rev().find(|&d| n.is_multiple_of(d) && d * d <= n).unwrap_or(1);
    if side > 1 {
        meshes.push((n / side, side));
    }
    for (x, y) in meshes {
        for rows in [RowHalo::Strided, RowHalo::Packed] {
            out.push(Tiling { x, y, rows });
        }
    }
    out
}

/// `lbm bench --model d2q37 --gpus`: the thermal model tiled over GPUs
/// 0 .. N-1 for each N of `gpus`, strong (an `n x n` box) or weak (`n x n`
/// per GPU), with the step time Calore et al.'s model predicts from the
/// one-GPU rate and the measured exchange.
pub fn thermal_scaling(
    sizes: &[u32],
    precisions: &[Precision],
    gpus: &[usize],
    weak: bool,
    steps: u64,
    json: Option<PathBuf>,
) -> Result<()> {
    use lbm::host::thermal::bench::{bench_config, measure_tiled, model_step_ms, TiledBenchResult};
    let (ptx, copy, device) = scaling_devices(gpus)?;
    println!(
        "{device}: copy bandwidth of GPU 0 {:.1} GB/s; {} scaling",
        copy / 1e9,
        if weak { "weak" } else { "strong" }
    );
    println!(
        "{:>13} {:>5} {:>5} {:>8} {:>8} {:>10} {:>7} {:>6} {:>9} {:>9} {:>9} {:>9}",
        "sites",
        "prec",
        "gpus",
        "tiles",
        "rows",
        "MLUPS",
        "copy%",
        "eff%",
        "ms/step",
        "exch ms",
        "model ms",
        "no-ovl ms"
    );
    #[derive(serde::Serialize)]
    struct Row {
        #[serde(flatten)]
        result: TiledBenchResult,
        efficiency: f64,
        model_ms: f64,
        model_without_overlap_ms: f64,
    }
    let mut rows = Vec::new();
    for p in thermal_precisions(precisions) {
        for &n in sizes {
            // Seconds per site and MLUPS on one GPU, for the model and the efficiency.
            let mut one: Option<(f64, f64)> = None;
            for g in std::iter::once(1).chain(gpus.iter().copied().filter(|&g| g > 1)) {
                for tiling in tilings(g as u32) {
                    let (nx, ny) = if weak { (n * tiling.x, n * tiling.y) } else { (n, n) };
                    let mut config = bench_config(n, p, true);
                    (config.nx, config.ny, config.tiling) = (nx, ny, tiling);
                    let ordinals: Vec<usize> = (0..g).collect();
                    let r = measure_tiled(config, &ordinals, &ptx, steps, Some(copy))?;
                    let (beta, base) = *one.get_or_insert((r.step_ms * 1e-3 / (nx as f64 * ny as f64), r.mlups));
                    let efficiency = r.mlups / (base * g as f64);
                    let (without, with) = model_step_ms(&r, beta);
                    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.1}", 100.0 * v));
                    println!(
                        "{:>13} {:>5} {:>5} {:>8} {:>8} {:>10.1} {:>7} {:>6.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                        format!("{nx}x{ny}"),
                        r.precision,
                        g,
                        r.tiling,
                        r.row_halo,
                        r.mlups,
                        pct(r.fraction_of_copy),
                        100.0 * efficiency,
                        r.step_ms,
                        r.exchange_ms,
                        with,
                        without
                    );
                    rows.push(Row { result: r, efficiency, model_ms: with, model_without_overlap_ms: without });
                }
            }
        }
    }
    if let Some(link) = rows.iter().flat_map(|r| r.result.links.iter()).next() {
        println!("links: {link} (and the like)");
    }
    if let Some(path) = json {
        #[derive(serde::Serialize)]
        struct Report<R> {
            device: String,
            copy_bandwidth_gb_per_s: f64,
            scaling: &'static str,
            model: &'static str,
            results: Vec<R>,
        }
        let report = Report {
            device,
            copy_bandwidth_gb_per_s: copy / 1e9,
            scaling: if weak { "weak: the size per GPU" } else { "strong: the size in all" },
            model: "Calore et al. (2016) Eqs. 15-20 with the measured exchange time for S/B: \
                    without overlap bulk + edges + exchange, with overlap max(bulk, exchange) + edges, \
                    bulk and edges of the largest tile at the one-GPU time per site",
            results: rows,
        };
        write_report(&path, &report)?;
    }
    Ok(())
}

/// Writes `report` as JSON to `path` (atomically) and says so.
/// The JSON report of a bench whose rows need no more than the device.
#[derive(serde::Serialize)]
struct DeviceReport<R> {
    device: String,
    copy_bandwidth_gb_per_s: f64,
    results: Vec<R>,
}

fn write_report(path: &std::path::Path, report: &impl serde::Serialize) -> Result<()> {
    let text =
        serde_json::to_string_pretty(report).map_err(|e| Error::Setup(format!("cannot encode the report: {e}")))?;
    write_atomic(path, text.as_bytes())?;
    println!("wrote {}", path.display());
    Ok(())
}

/// A kernel's registers per thread, for a table ("-" where unknown).
fn registers(k: &Option<lbm::host::solver::KernelReport>) -> String {
    k.as_ref().map_or("-".into(), |k| k.registers.to_string())
}

/// The GPU `lbm bench --model {model}` times (refused on the CPU backend):
/// its ordinal, its name and its copy bandwidth in bytes per second, which
/// it prints.
fn model_gpu(backend: BackendKind, model: &str, ptx: &str) -> Result<(usize, String, f64)> {
    let BackendKind::Gpu(ordinal) = backend else {
        return Err(Error::Setup(format!(
            "lbm bench --model {model} times the GPU kernels: run it with a GPU (--backend gpu)"
        )));
    };
    let d = lbm::host::gpu::GpuDevice::open(ordinal, ptx)?;
    let copy = d.copy_bandwidth(COPY_BYTES, 20)?;
    let device = format!("GPU {ordinal} {}", d.info()?.name);
    println!("{device}: copy bandwidth {:.1} GB/s", copy / 1e9);
    Ok((ordinal, device, copy))
}

/// A kernel's occupancy, for a table ("-" where unknown).
fn occupancy(k: &Option<lbm::host::solver::KernelReport>) -> String {
    k.as_ref().map_or("-".into(), |k| format!("{:.2}", k.occupancy))
}

/// `lbm bench --model colloids`: 1,000 free colloids of radius 4 in cubes
/// of side `sizes`: whole steps, the fluid step alone and each colloid pass.
pub fn colloids(
    backend: BackendKind,
    sizes: &[u32],
    lattices: &[LatticeKind],
    precisions: &[Precision],
    steps: u64,
    json: Option<PathBuf>,
) -> Result<()> {
    use lbm::host::colloids::bench::{bench_config, measure, ColloidBenchResult};
    let ptx = lbm::ptx::active();
    let (ordinal, device, copy) = model_gpu(backend, "colloids", &ptx)?;
    println!("fluid bytes per site: 2Q+4 values and the map's 4 bytes; the other columns are ms per step");
    println!(
        "{:>6} {:>5} {:>4} {:>9} {:>9} {:>9} {:>6} {:>7} {:>9} {:>9} {:>9} {:>9} {:>5} {:>6}",
        "lattice",
        "size",
        "prec",
        "colloids",
        "MLUPS",
        "step ms",
        "B/site",
        "copy%",
        "fluid ms",
        "links ms",
        "move ms",
        "host ms",
        "regs",
        "occup"
    );
    let mut results: Vec<ColloidBenchResult> = Vec::new();
    for &lattice in lattices {
        for &p in precisions.iter().filter(|p| matches!(p, Precision::F64 | Precision::F32)) {
            for &n in sizes {
                let r = measure(bench_config(n, lattice, p, 1000, 4.0)?, ordinal, &ptx, steps, copy)?;
                println!(
                    "{:>6} {:>5} {:>4} {:>9} {:>9.1} {:>9.3} {:>6} {:>7.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>5} {:>6}",
                    r.lattice,
                    n,
                    r.precision,
                    r.colloids,
                    r.mlups,
                    r.step_ms,
                    r.fluid_bytes_per_site,
                    100.0 * r.fluid_fraction_of_copy,
                    r.fluid_ms,
                    r.links_ms,
                    r.move_ms,
                    r.host_ms,
                    registers(&r.kernel),
                    occupancy(&r.kernel),
                );
                results.push(r);
            }
        }
    }
    if let Some(path) = json {
        write_report(&path, &DeviceReport { device, copy_bandwidth_gb_per_s: copy / 1e9, results })?;
    }
    Ok(())
}

/// `lbm bench --model binary-fluid`: the binary fluid on cubes of side
/// `sizes` (squares for D2Q9), whole steps and each kernel alone.
pub fn binary(
    backend: BackendKind,
    sizes: &[u32],
    lattices: &[LatticeKind],
    precisions: &[Precision],
    collisions: &[CollisionKind],
    steps: u64,
    json: Option<PathBuf>,
) -> Result<()> {
    use lbm::host::binary::bench::{bench_config, measure};
    use lbm::host::binary::BinaryCollision;
    let collisions: Vec<BinaryCollision> = collisions
        .iter()
        .map(|c| match c {
            CollisionKind::Bgk => Ok(BinaryCollision::Bgk),
            CollisionKind::Mrt => Ok(BinaryCollision::Mrt),
            other => Err(Error::Setup(format!("the binary fluid collides with bgk or mrt, not {}", other.name()))),
        })
        .collect::<Result<_>>()?;
    let ptx = lbm::ptx::active();
    let (ordinal, device, copy) = model_gpu(backend, "binary-fluid", &ptx)?;
    println!("bytes per site: mu 2, fluid 2Q+6, phi 3+D values; copy% of each kernel timed alone");
    println!(
        "{:>6} {:>5} {:>4} {:>5} {:>9} {:>6} {:>7} {:>9} {:>7} {:>9} {:>7} {:>9} {:>7} {:>5} {:>6}",
        "lattice",
        "size",
        "prec",
        "coll",
        "MLUPS",
        "B/site",
        "copy%",
        "mu ms",
        "copy%",
        "fluid ms",
        "copy%",
        "phi ms",
        "copy%",
        "regs",
        "occup"
    );
    let mut results = Vec::new();
    for &lattice in lattices {
        for &p in precisions.iter().filter(|p| matches!(p, Precision::F64 | Precision::F32)) {
            for &c in &collisions {
                for &n in sizes {
                    let r = measure(bench_config(n, lattice, p, c), ordinal, &ptx, steps, copy)?;
                    let (ms, f) = (&r.kernel_ms, &r.kernel_fraction_of_copy);
                    println!(
                        "{:>6} {:>5} {:>4} {:>5} {:>9.1} {:>6} {:>7.1} {:>9.3} {:>7.1} {:>9.3} {:>7.1} {:>9.3} {:>7.1} {:>5} {:>6}",
                        r.lattice,
                        n,
                        r.precision,
                        r.collision,
                        r.mlups,
                        r.bytes_per_site,
                        100.0 * r.fraction_of_copy,
                        ms.chemical_potential,
                        100.0 * f.chemical_potential,
                        ms.fluid,
                        100.0 * f.fluid,
                        ms.order_parameter,
                        100.0 * f.order_parameter,
                        registers(&r.kernel),
                        occupancy(&r.kernel),
                    );
                    results.push(r);
                }
            }
        }
    }
    if let Some(path) = json {
        write_report(&path, &DeviceReport { device, copy_bandwidth_gb_per_s: copy / 1e9, results })?;
    }
    Ok(())
}

/// `lbm bench --model binary-fluid --gpus`: the binary fluid (MRT) on
/// cubes of `sizes` split along z over GPUs 0 .. N-1 for each N of `gpus`
/// (strong scaling), with each pass's halo copies overlapping its interior
/// and after it.
pub fn binary_scaling(
    sizes: &[u32],
    lattices: &[LatticeKind],
    precisions: &[Precision],
    gpus: &[usize],
    steps: u64,
    json: Option<PathBuf>,
) -> Result<()> {
    use lbm::host::binary::bench::{bench_config, measure_split};
    use lbm::host::binary::BinaryCollision;
    let (ptx, copy, device) = scaling_devices(gpus)?;
    println!("{device}: copy bandwidth of GPU 0 {:.1} GB/s; strong scaling, MRT", copy / 1e9);
    let measure = |lattice, p, n, ordinals: &[usize], overlap| {
        measure_split(bench_config(n, lattice, p, BinaryCollision::Mrt), ordinals, overlap, &ptx, steps, copy)
    };
    split_scaling(sizes, lattices, precisions, gpus, &[true, false], measure, (device, copy), json)
}

/// `lbm bench --model colloids --gpus`: 1,000 free colloids of radius 4
/// in cubes of `sizes` split along z over GPUs 0 .. N-1 for each N of
/// `gpus` (strong scaling), whole steps.
pub fn colloids_scaling(
    sizes: &[u32],
    lattices: &[LatticeKind],
    precisions: &[Precision],
    gpus: &[usize],
    steps: u64,
    json: Option<PathBuf>,
) -> Result<()> {
    use lbm::host::colloids::bench::{bench_config, measure_split};
    let (ptx, copy, device) = scaling_devices(gpus)?;
    println!(
        "{device}: copy bandwidth of GPU 0 {:.1} GB/s; strong scaling, 1,000 colloids of radius 4, MRT; \
         copy% counts the fluid step's bytes against the whole step",
        copy / 1e9
    );
    let measure = |lattice, p, n, ordinals: &[usize], _| {
        measure_split(bench_config(n, lattice, p, 1000, 4.0)?, ordinals, &ptx, steps, copy)
    };
    split_scaling(sizes, lattices, precisions, gpus, &[false], measure, (device, copy), json)
}

/// Strong scaling of a box split along z: `measure(lattice, precision,
/// side, ordinals, overlap)` on one GPU, then on GPUs 0 .. N-1 for each N
/// of `gpus`, with each of `overlaps` (whether halo copies overlap the
/// passes); a row each, efficiency against one GPU.
#[allow(clippy::too_many_arguments)]
fn split_scaling(
    sizes: &[u32],
    lattices: &[LatticeKind],
    precisions: &[Precision],
    gpus: &[usize],
    overlaps: &[bool],
    measure: impl Fn(LatticeKind, Precision, u32, &[usize], bool) -> Result<lbm::host::binary::bench::SplitBenchResult>,
    (device, copy): (String, f64),
    json: Option<PathBuf>,
) -> Result<()> {
    use lbm::host::binary::bench::SplitBenchResult;
    println!(
        "{:>7} {:>5} {:>4} {:>4} {:>7} {:>9} {:>7} {:>6} {:>9} {:>8}",
        "lattice", "size", "prec", "gpus", "overlap", "MLUPS", "copy%", "eff%", "ms/step", "halo MB"
    );
    #[derive(serde::Serialize)]
    struct Row {
        #[serde(flatten)]
        result: SplitBenchResult,
        efficiency: f64,
    }
    let mut rows = Vec::new();
    for &lattice in lattices {
        for &p in precisions.iter().filter(|p| matches!(p, Precision::F64 | Precision::F32)) {
            for &n in sizes {
                let mut one = None;
                for g in std::iter::once(1).chain(gpus.iter().copied().filter(|&g| g > 1)) {
                    let ordinals: Vec<usize> = (0..g).collect();
                    for &overlap in if g == 1 { &[true][..] } else { overlaps } {
                        let r = measure(lattice, p, n, &ordinals, overlap)?;
                        let base = *one.get_or_insert(r.mlups);
                        let efficiency = r.mlups / (base * g as f64);
                        println!(
                            "{:>7} {:>5} {:>4} {:>4} {:>7} {:>9.1} {:>7.1} {:>6.1} {:>9.3} {:>8.2}",
                            r.lattice,
                            n,
                            r.precision,
                            g,
                            if g == 1 {
                                "-"
                            } else if overlap {
                                "yes"
                            } else {
                                "no"
                            },
                            r.mlups,
                            100.0 * r.fraction_of_copy,
                            100.0 * efficiency,
                            r.step_ms,
                            r.halo_bytes_per_step as f64 / 1e6
                        );
                        rows.push(Row { result: r, efficiency });
                    }
                }
            }
        }
    }
    if let Some(link) = rows.iter().flat_map(|r| r.result.links.iter()).next() {
        println!("links: {link} (and the like)");
    }
    if let Some(path) = json {
        #[derive(serde::Serialize)]
        struct Report<R> {
            device: String,
            copy_bandwidth_gb_per_s: f64,
            scaling: &'static str,
            results: Vec<R>,
        }
        let report = Report {
            device,
            copy_bandwidth_gb_per_s: copy / 1e9,
            scaling: "strong: the size in all; efficiency against one GPU",
            results: rows,
        };
        write_report(&path, &report)?;
    }
    Ok(())
}
