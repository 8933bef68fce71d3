//! `lbm run` of a thermal case (`model = "d2q37"`): a Rayleigh–Taylor run
//! with temperature pictures, on the CPU, one GPU, the tiles' GPUs, or one
//! tile per rank of an NCCL job (every rank runs the same loop; rank 0
//! reports and draws).

use super::run::{Outcome, Report, RunOptions};
use super::BackendChoice;
use lbm::host::picture;
use lbm::host::thermal::case::ThermalCase;
use lbm::host::thermal::tiles::{RowHalo, Tiling};
use lbm::host::thermal::ThermalSolver;
use lbm::kernels::thermal::d2q37 as kernels;
use lbm::{BackendKind, Error, Result};
use std::path::Path;
use std::time::Instant;

pub fn run(path: &Path, o: RunOptions) -> Result<Outcome> {
    let case = ThermalCase::load(path)?;
    if o.exchange.is_some() || o.resume || o.size.is_some() {
        return Err(Error::Setup(
            "a thermal case runs without --exchange, --resume or --size: set the size, devices and tiles in [simulation]"
                .into(),
        ));
    }
    let ranks = o.rendezvous.as_ref().map(|_| super::run::launcher_ranks()).transpose()?;
    let root = ranks.is_none_or(|r| r.rank == 0);
    let steps = o.steps.unwrap_or(case.simulation.steps);
    let dir = o.output.clone().unwrap_or_else(|| case.output.directory.clone());
    let devices = &case.simulation.devices;
    let backend = o.backend.unwrap_or(BackendChoice::Auto).resolve(o.device.unwrap_or(devices[0]))?;
    let mut config = case.config();
    if let Some(r) = ranks {
        // A tile per rank, side by side along x unless the case says; NCCL
        // sends contiguous bytes, so row halos are packed.
        let [x, y] = case.simulation.tiles.unwrap_or([r.world as u32, 1]);
        config.tiling = Tiling { x, y, rows: RowHalo::Packed };
    }
    let n = case.numbers();
    let [nx, ny] = case.simulation.size;
    let quiet = o.report != Report::Bar || !root;
    if !quiet {
        let t = config.tiling;
        let on = match (ranks, backend) {
            (Some(r), _) => {
                format!("{} tiles on {} NCCL ranks (rank 0 on GPU {}; row halos packed)", t.name(), r.world, r.local)
            }
            (None, BackendKind::Gpu(_)) if devices.len() > 1 => {
                format!("{} tiles on GPUs {devices:?} (row halos {})", t.name(), t.rows.name())
            }
            _ if t.count() > 1 => format!("{}, {} tiles", super::describe_backend(backend), t.name()),
            _ => super::describe_backend(backend),
        };
        println!("{}: D2Q37 thermal, {nx} x {ny} sites, {:?}, {on}", path.display(), config.precision);
        println!(
            "  Atwood number {:.4}, Prandtl number {:.1}, dimensionless gravity g Ly / T0 = {:.4e}",
            n.atwood, n.prandtl, n.gravity
        );
        println!(
            "  viscosity {:.4e}, Grashof sqrt(At g Lx^3) / nu = {:.1}, growth time of the longest mode {:.0} steps",
            n.viscosity, n.grashof, n.growth_time
        );
    }
    let initial = case.initial();
    let at = |x: u32, y: u32| initial[(y * nx + x) as usize];
    let ptx = lbm::ptx::active();
    let mut solver = match (ranks, &o.rendezvous, backend) {
        (Some(r), Some(rendezvous), _) => ThermalSolver::join(config.clone(), r, rendezvous, &ptx, at)?,
        (_, _, BackendKind::Gpu(_)) if devices.len() > 1 => ThermalSolver::on_gpus(config.clone(), devices, &ptx, at)?,
        _ => ThermalSolver::new(config.clone(), backend, &ptx, at)?,
    };
    if root {
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
    }
    let result = steps_and_pictures(&mut solver, &dir, steps, case.output.every, o.report, root);
    if result.is_err() {
        // The other ranks would wait for this one's messages.
        solver.abort();
    }
    result
}

/// Runs `steps` steps, drawing the temperature every `every` steps (and
/// at the start and end); only rank 0 of an NCCL job draws and reports.
fn steps_and_pictures(
    solver: &mut ThermalSolver,
    dir: &Path,
    steps: u64,
    every: u64,
    report: Report,
    root: bool,
) -> Result<Outcome> {
    let config = solver.config().clone();
    let (nx, ny) = (config.nx, config.ny);
    let walls = config.walls.unwrap_or_default();
    let (t_min, t_max) = (walls[1], walls[0]);
    let picture = |s: &ThermalSolver| -> Result<()> {
        // Collective over NCCL ranks: only rank 0 gets the fields.
        let Some(f) = s.gather_fields()? else { return Ok(()) };
        if let Some(k) = f.temperature.iter().position(|t| !t.is_finite()) {
            return Err(Error::Setup(format!(
                "the run diverged by step {} (temperature {} at site {k}): lower the gravity or the Atwood number, or raise tau",
                s.time(),
                f.temperature[k]
            )));
        }
        let values: Vec<Option<f64>> = f.temperature.iter().map(|&t| Some(t)).collect();
        let file = dir.join(format!("temperature_{:08}.png", s.time()));
        picture::write_range(&file, nx, ny, &values, t_min, t_max)
    };
    picture(solver)?;
    let every = if every == 0 { steps.max(1) } else { every };
    let start = Instant::now();
    while solver.time() < steps {
        let chunk = every.min(steps - solver.time());
        solver.step(chunk)?;
        picture(solver)?;
        if report == Report::JsonLines && root {
            println!("{{\"step\": {}, \"seconds\": {:.3}}}", solver.time(), start.elapsed().as_secs_f64());
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let mlups = nx as f64 * ny as f64 * steps as f64 / seconds.max(1e-9) / 1e6;
    if !root {
        return Ok(Outcome::Finished);
    }
    println!("{steps} steps in {seconds:.1} s ({mlups:.1} MLUPS); temperature maps in {}", dir.display());
    Ok(Outcome::Finished)
}

/// `lbm nccl --model d2q37`: the thermal benchmark box, `size` x `size`,
/// one tile per rank, timed and compared on rank 0 with one GPU.
pub fn nccl(
    ranks: lbm::host::nccl::Ranks,
    rendezvous: &str,
    tiles: Option<Vec<u32>>,
    precision: super::Precision,
    size: u32,
    steps: u64,
) -> Result<()> {
    use lbm::host::thermal::{bench, nccl, ThermalPrecision};
    let precision = if precision == super::Precision::F32 { ThermalPrecision::F32 } else { ThermalPrecision::F64 };
    let [x, y] = match tiles.as_deref() {
        None => [ranks.world as u32, 1],
        Some(&[x, y]) => [x, y],
        Some(t) => return Err(Error::Setup(format!("--tiles {t:?}: give two numbers, tiles along x and y, e.g. 2,1"))),
    };
    let config = lbm::host::thermal::ThermalConfig {
        tiling: Tiling { x, y, rows: RowHalo::Packed },
        ..bench::bench_config(size, precision, true)
    };
    let Some(r) = nccl::run_and_check(config.clone(), ranks, rendezvous, steps, &lbm::ptx::active())? else {
        return Ok(());
    };
    let bytes = (2 * kernels::Q * precision.bytes()) as f64;
    let what = format!("D2Q37 {} {size}^2 in {x}x{y} tiles", precision.name());
    super::run::print_nccl_report(&r, &what, steps, bytes, "site")
}
