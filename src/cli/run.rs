//! `lbm run CASE.toml`: the time loop with outputs, health checks,
//! checkpoints, Ctrl-C and resume.

use super::forces::{self, ForceLog, ForceMean};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lbm::host::case::{Case, Setup};
use lbm::host::cell_blocks::CellBlocks;
use lbm::host::fields::Fields;
use lbm::host::files::write_atomic;
use lbm::host::groups::BoundaryGroups;
use lbm::host::solver::GridLayout;
use lbm::host::sparse::SparseLayout;
use lbm::host::{checkpoint, picture, porous, probe, vtk};
use lbm::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Above this speed (lattice units, Mach 0.87) a run is taken as diverging.
pub(super) const RUNAWAY_SPEED: f64 = 0.5;

/// How the run reports progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Report {
    /// A progress bar with steps, MLUPS and time left.
    Bar,
    /// Only the final line (and errors).
    Quiet,
    /// One JSON object per line on stdout, for scripts.
    JsonLines,
}

/// Command-line overrides of a case.
pub struct RunOptions {
    /// `--backend`, overriding the case's.
    pub backend: Option<crate::cli::BackendChoice>,
    /// `--device`, overriding the case's.
    pub device: Option<usize>,
    /// `--exchange`, overriding the case's.
    pub exchange: Option<lbm::host::multi_gpu::Exchange>,
    pub size: Option<u32>,
    pub steps: Option<u64>,
    pub output: Option<PathBuf>,
    pub resume: bool,
    pub report: Report,
    /// `--rendezvous`: run as one rank of an NCCL job.
    pub rendezvous: Option<String>,
}

/// This process's place in the NCCL job its launcher started, for `--rendezvous`.
pub fn launcher_ranks() -> Result<lbm::host::nccl::Ranks> {
    lbm::host::nccl::Ranks::from_env()?.ok_or_else(|| {
        Error::Setup(
            "--rendezvous needs launcher variables: start one process per GPU with mpirun, srun or \
             scripts/nccl-local.sh (or set RANK, WORLD_SIZE and LOCAL_RANK)"
                .into(),
        )
    })
}

/// Prints rank 0's report of an `lbm nccl` check (`what` ran `steps` steps,
/// `bytes` per `unit` update) and fails where the ranks differ from one GPU.
pub fn print_nccl_report(
    r: &lbm::host::nccl::NcclReport,
    what: &str,
    steps: u64,
    bytes: f64,
    unit: &str,
) -> Result<()> {
    let per_gpu = r.mlups * 1e6 * bytes / r.world as f64 / r.copy_bandwidth;
    println!(
        "NCCL, {} ranks: {what} x {steps} steps: {:.0} MLUPS over the last {} steps \
         ({:.1}% of {} x {:.0} GB/s copy bandwidth, {bytes} B per {unit} update); \
         {} of {} populations differ from one GPU",
        r.world,
        r.mlups,
        r.timed_steps,
        100.0 * per_gpu,
        r.world,
        r.copy_bandwidth / 1e9,
        r.differ,
        r.total
    );
    if r.differ > 0 {
        return Err(Error::Setup("the NCCL run differs from one GPU".into()));
    }
    Ok(())
}

/// How a run ended without error.
pub enum Outcome {
    Finished,
    Interrupted,
}

pub fn run(path: &Path, o: RunOptions) -> Result<Outcome> {
    if lbm::host::thermal::case::is_thermal(path)? {
        return super::thermal::run(path, o);
    }
    if lbm::host::binary::case::is_binary(path)? {
        return super::binary::run(path, o);
    }
    if lbm::host::colloids::case::is_colloids(path)? {
        return super::colloids::run(path, o);
    }
    let case = Case::load(path)?;
    let mut setup = case.setup(path, o.size)?;
    if let Some(s) = o.steps {
        setup.steps = s;
    }
    if let Some(dir) = o.output.clone() {
        setup.output.directory = dir;
    }
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("case").to_string();
    if setup.refinement.is_some() {
        if o.rendezvous.is_some() {
            return Err(Error::Setup("a refined domain runs on the GPUs of one process or the CPU, not over NCCL ranks: list the GPUs in [simulation] devices".into()));
        }
        return super::refined::run(path, &name, setup, o);
    }
    // In an NCCL job only rank 0 reports and writes; the others serve it.
    let ranks = match &o.rendezvous {
        None => None,
        Some(_) => Some(launcher_ranks()?),
    };
    let root = ranks.is_none_or(|r| r.rank == 0);
    let say = |line: String| {
        if o.report == Report::Bar && root {
            println!("{line}");
        }
    };
    for line in describe_setup(&name, &setup) {
        say(line);
    }
    for o in &setup.objects {
        say(format!("geometry `{}`: {} cells", o.name, o.cells.count(|c| c)));
        for note in o.notes.iter().filter(|_| root) {
            eprintln!("warning: {note}");
        }
    }
    for note in setup.notes.iter().filter(|_| root) {
        eprintln!("warning: {note}");
    }
    // Installed before an NCCL job starts, so that one Ctrl-C under a
    // launcher leaves every rank running until rank 0 has checkpointed.
    let interrupted = interrupt_flag();
    let masks: Vec<CellBlocks<bool>> = setup.objects.iter().map(|o| o.cells.clone()).collect();
    // A sparse grid's VTK files hold its stored blocks only, when that is
    // the smaller file.
    let sparse = match setup.config.grid {
        GridLayout::Dense => None,
        GridLayout::Sparse { block } => Some(SparseLayout::build(
            &setup.config.domain,
            block,
            setup.config.lattice.near_wall_radius(),
            setup.config.groups,
        )?)
        .filter(vtk::sparse_file_is_smaller),
    };
    let dir = setup.output.directory.clone();
    if root {
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
    }
    let checkpoint_path = dir.join("checkpoint.lbm");
    let devices = o.device.map_or(setup.devices.clone(), |d| vec![d]);
    let exchange = o.exchange.unwrap_or(setup.exchange);
    let backend = o.backend.unwrap_or(setup.backend.into()).resolve(devices[0])?;
    let (mut solver, device) = match (ranks, &o.rendezvous) {
        (Some(ranks), Some(rendezvous)) => {
            let ptx = lbm::ptx::active();
            let joined = lbm::host::nccl_run::join(setup.config.clone(), &masks, ranks, rendezvous, &ptx)?;
            // Every rank but 0 has served the whole run when `join` returns.
            let Some(solver) = joined else { return Ok(Outcome::Finished) };
            (solver, format!("{} ranks over NCCL, split along z (rank 0 on GPU {})", ranks.world, ranks.local))
        }
        _ => match backend {
            lbm::BackendKind::Gpu(_) if devices.len() > 1 => (
                lbm::build_multi_gpu(setup.config.clone(), &devices, exchange)?,
                format!("{} GPUs {devices:?}, split along z, {} halo exchange", devices.len(), exchange.name()),
            ),
            _ => (lbm::build_solver(setup.config.clone(), backend)?, crate::cli::describe_backend(backend)),
        },
    };
    say(format!("backend: {device}"));
    if o.resume {
        let state = checkpoint::read(&checkpoint_path, &setup.config)?;
        solver.restore_state(&state)?;
        say(format!("resumed from {} at step {}", checkpoint_path.display(), state.time));
    }
    let mut force_log = ForceLog::new(&dir, &name, &setup, o.resume.then(|| solver.time()))?;

    let total = setup.steps;
    let every = setup.output.every;
    let ckpt_every = setup.output.checkpoint_every;
    let check_every = setup.output.check_every;
    let due = |t: u64, n: u64| n > 0 && t.is_multiple_of(n);
    let forces_every = setup.output.forces_every;
    let next_event = |t: u64| next_event(t, total, [every, ckpt_every, check_every, forces_every]);
    let bar = progress_bar(total, o.report);
    bar.set_position(solver.time());
    // Cells updated per step: the box's on a dense grid, the flow cells on a
    // sparse one (as `lbm bench` counts them; its box may be mostly solid).
    let cells = match setup.config.grid {
        GridLayout::Dense => setup.config.domain.dims.cells(),
        GridLayout::Sparse { .. } => setup.config.domain.fluid_cells(),
    } as f64;
    let start = Instant::now();
    let (mut stepping, mut steps_run) = (0.0, 0u64);
    let mut outcome = Outcome::Finished;
    let mut previous: Option<CellBlocks<[f64; 3]>> = None;
    let mut steady = false;
    while solver.time() < total {
        let n = next_event(solver.time()).min(total) - solver.time();
        let t0 = Instant::now();
        solver.step(n)?;
        solver.synchronize()?;
        let dt = t0.elapsed().as_secs_f64();
        stepping += dt;
        steps_run += n;
        let t = solver.time();
        report_progress(&bar, o.report, t, total, cells * n as f64 / dt / 1e6, (total - t) as f64 * dt / n as f64);
        let stop = interrupted.load(Ordering::SeqCst);
        let write_fields = due(t, every) || t == total;
        let write_ckpt = due(t, ckpt_every) || t == total || stop;
        let sampled = !masks.is_empty() && forces::due(&setup.output, t, total);
        if sampled {
            force_log.push(&setup, t, &solver.forces(&masks)?);
        }
        if write_fields || write_ckpt || due(t, check_every) {
            force_log.save()?;
            let fields = solver.fields()?;
            if let Err(e) = check_health(&fields, t) {
                bar.abandon();
                let kept = if checkpoint_path.exists() {
                    format!("; the last good checkpoint is {}", checkpoint_path.display())
                } else {
                    String::new()
                };
                eprintln!("diverged{kept}");
                return Err(e);
            }
            if let Some(tol) = setup.steady_tolerance {
                if due(t, check_every) {
                    if let Some(prev) = &previous {
                        let (change, speed) = (fields.max_change(prev), fields.max_speed());
                        steady = speed > 0.0 && change < tol * speed;
                    }
                    previous = Some(fields.u.clone());
                }
            }
            let write_fields = write_fields || steady;
            let write_ckpt = write_ckpt || steady;
            if steady && !sampled && !masks.is_empty() {
                force_log.push(&setup, t, &solver.forces(&masks)?);
            }
            if write_fields {
                let flags = &setup.config.domain.flags;
                if setup.output.vtk {
                    let view = vtk::View {
                        region: setup.output.region.map(|r| (r.min, r.max)),
                        si: if setup.output.vtk_units == "physical" { setup.units } else { None },
                    };
                    let title = format!("{name} step {t}");
                    match &sparse {
                        None => {
                            vtk::write_fields(&dir.join(format!("{name}_{t:08}.vtk")), &fields, flags, &title, &view)?
                        }
                        Some(layout) => {
                            let file = dir.join(format!("{name}_{t:08}.vtu"));
                            vtk::write_sparse_fields(&file, &fields, flags, layout, &title, &view)?
                        }
                    }
                }
                for p in &setup.output.pictures {
                    let slice = p.slice(fields.dims)?;
                    let quantity = format!("{:?}", p.quantity).to_lowercase();
                    let file = dir.join(format!("{name}_{quantity}_{}{}_{t:08}.png", p.normal, slice.index));
                    picture::write_slice(&file, &fields, flags, p.quantity, slice)?;
                }
                for p in &setup.output.probes {
                    let si = setup.units.map(|u| (u.dx, u.dt));
                    probe::write_csv(&dir.join(format!("{name}_probe_{}_{t:08}.csv", p.name)), &fields, p, t, si)?;
                }
            }
            if write_ckpt {
                checkpoint::write(&checkpoint_path, &setup.config, &solver.save_state()?)?;
            }
        }
        if steady {
            say(format!(
                "steady at step {t}: the velocity changed by less than the steady_tolerance since the last check"
            ));
            break;
        }
        if stop {
            outcome = Outcome::Interrupted;
            break;
        }
    }
    bar.finish_and_clear();
    let mlups = if stepping > 0.0 { cells * steps_run as f64 / stepping / 1e6 } else { 0.0 };
    let permeability = match &setup.porous {
        Some(sample) => {
            let fields = solver.fields()?;
            let c = &setup.config;
            porous::measure(&fields, &c.domain.flags, c.force, setup.viscosity, sample.diameter)
        }
        None => None,
    };
    if let Some(k) = &permeability {
        for line in describe_permeability(k, setup.units) {
            println!("{line}");
        }
    }
    let forces_mean = force_log.finish(&setup, solver.time(), o.report == Report::Bar)?;
    write_summary(
        &dir.join("summary.json"),
        &name,
        &setup,
        &device,
        solver.time(),
        start.elapsed().as_secs_f64(),
        mlups,
        permeability.as_ref(),
        forces_mean.as_ref(),
    )?;
    match outcome {
        Outcome::Finished => println!(
            "done: step {} in {:.1} s ({:.1} s stepping), {mlups:.1} MLUPS; output in {}",
            solver.time(),
            start.elapsed().as_secs_f64(),
            stepping,
            dir.display()
        ),
        Outcome::Interrupted => eprintln!(
            "interrupted at step {}: checkpoint written to {}; continue with `lbm run {} --resume`",
            solver.time(),
            checkpoint_path.display(),
            path.display()
        ),
    }
    Ok(outcome)
}

/// A flag the first Ctrl-C raises, asking for a checkpoint at the next
/// output step; a second Ctrl-C ends the process at once.
pub(super) fn interrupt_flag() -> Arc<AtomicBool> {
    let interrupted = Arc::new(AtomicBool::new(false));
    let flag = interrupted.clone();
    // A second handler cannot be installed in the same process (tests); ignore that.
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    interrupted
}

/// The next step after `t` at which something is due: an output of one of
/// the intervals `every` (0: never), the end, or a progress report (every
/// hundredth of the run).
pub(super) fn next_event<const N: usize>(t: u64, total: u64, every: [u64; N]) -> u64 {
    every
        .into_iter()
        .filter(|&n| n > 0)
        .map(|n| (t / n + 1) * n)
        .chain([total, t + (total / 100).max(1)])
        .min()
        .unwrap()
}

/// Shows step `t` of `total` at `mlups` with `eta` seconds left, as `report` asks.
pub(super) fn report_progress(bar: &ProgressBar, report: Report, t: u64, total: u64, mlups: f64, eta: f64) {
    bar.set_position(t);
    bar.set_message(format!("{mlups:.0} MLUPS"));
    if report == Report::JsonLines {
        println!("{{\"step\":{t},\"total\":{total},\"mlups\":{mlups:.1},\"eta_s\":{eta:.1}}}");
    }
}

/// The lines describing a set-up before it runs.
pub(super) fn describe_setup(name: &str, s: &Setup) -> Vec<String> {
    let c = &s.config;
    let d = c.domain.dims;
    vec![
        format!(
            "{name}: {} {} {}, {}x{}x{} cells ({} fluid), {} steps",
            c.lattice.name().to_uppercase(),
            c.precision.name(),
            c.streaming.name(),
            d.nx,
            d.ny,
            d.nz,
            c.domain.fluid_cells(),
            s.steps
        ),
        format!(
            "physics: tau {:.4}, viscosity {:.5} (lattice units){}, wall Mach {:.3}",
            c.tau,
            s.viscosity,
            s.reynolds.map(|r| format!(", Reynolds {r:.1}")).unwrap_or_default(),
            s.mach
        ),
        format!("collision: {}", c.collision.describe(c.lattice)),
        match s.units {
            Some(u) => format!(
                "units: dx = {:.4e} m, dt = {:.4e} s, lattice velocity 1 = {:.4e} m/s, density {} kg/m^3",
                u.dx,
                u.dt,
                u.dx / u.dt,
                u.density
            ),
            None => "units: lattice units (give [units] in the case file for SI)".to_string(),
        },
        match c.grid {
            GridLayout::Dense => format!(
                "memory: {:.2} GiB of state ({} B per cell)",
                c.state_bytes() as f64 / (1u64 << 30) as f64,
                c.state_bytes() / d.cells()
            ),
            GridLayout::Sparse { block } => {
                SparseLayout::build(&c.domain, block, c.lattice.near_wall_radius(), c.groups)
                    .map_or_else(|e| format!("grid: sparse ({e})"), |layout| layout.describe(c))
            }
        },
    ]
    .into_iter()
    .chain(
        (c.groups != BoundaryGroups::Lists || !c.domain.open.is_empty())
            .then(|| format!("boundary groups: {} ({} inlets and outlets)", c.groups.name(), c.domain.open.len())),
    )
    .chain(s.boundary_lines.iter().cloned())
    .chain(s.grid_choice.clone())
    .collect()
}

/// The permeability report of a porous sample (lattice units, and m^2 with `[units]`).
fn describe_permeability(k: &porous::Permeability, units: Option<lbm::host::case::UnitConversion>) -> Vec<String> {
    let si = units.map(|u| format!(" = {:.4e} m^2", k.permeability * u.dx * u.dx)).unwrap_or_default();
    let mut lines = vec![format!(
        "permeability: k = nu <u> / g = {:.4e} cells^2{si} (porosity {:.4}, superficial velocity {:.4e})",
        k.permeability, k.porosity, k.superficial_velocity
    )];
    if let (Some(d), Some(kc), Some(re)) = (k.diameter, k.kozeny_carman, k.reynolds) {
        lines.push(format!(
            "Kozeny-Carman for spheres of diameter {d:.2} cells at this porosity: {kc:.4e} cells^2; measured / \
             Kozeny-Carman = {:.3} (the correlation holds to about 20-30% for random packings); Reynolds <u> d / nu = {re:.2e}{}",
            k.permeability / kc,
            if re > 1.0 { " (above 1: inertia matters, Darcy's law no longer holds: lower the force)" } else { "" }
        ));
    }
    lines
}

/// Fails on a non-finite value or a runaway velocity, naming the first bad cell.
fn check_health(f: &Fields, step: u64) -> Result<()> {
    match f.first_unhealthy(RUNAWAY_SPEED) {
        Some([x, y, z]) => Err(Error::Diverged { step, cell: (x, y, z) }),
        None => Ok(()),
    }
}

pub(super) fn progress_bar(total: u64, report: Report) -> ProgressBar {
    let bar = ProgressBar::new(total);
    if report != Report::Bar {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {msg}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

#[allow(clippy::too_many_arguments)]
pub(super) fn write_summary(
    path: &Path,
    name: &str,
    s: &Setup,
    device: &str,
    steps: u64,
    wall_seconds: f64,
    mlups: f64,
    permeability: Option<&porous::Permeability>,
    forces: Option<&ForceMean>,
) -> Result<()> {
    let c = &s.config;
    let d = c.domain.dims;
    let summary = serde_json::json!({
        "case": name,
        "lattice": c.lattice.name(),
        "precision": c.precision.name(),
        "streaming": c.streaming.name(),
        "size": [d.nx, d.ny, d.nz],
        "fluid_cells": c.domain.fluid_cells(),
        "units": {
            "tau": c.tau,
            "viscosity_lattice": s.viscosity,
            "reynolds": s.reynolds,
            "wall_mach": s.mach,
            "force_lattice": c.force,
            "si": s.units,
        },
        "steps": steps,
        "wall_time_s": wall_seconds,
        "mlups": mlups,
        "device": device,
        "permeability": permeability,
        "forces_mean": forces.map(|m| m.json(s)),
        "lbm_version": env!("CARGO_PKG_VERSION"),
    });
    let text =
        serde_json::to_string_pretty(&summary).map_err(|e| Error::Setup(format!("cannot encode the summary: {e}")))?;
    write_atomic(path, text.as_bytes())
}
