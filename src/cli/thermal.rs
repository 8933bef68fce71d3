//! `lbm run` of a thermal case (`model = "d2q37"`): a Rayleigh–Taylor run
//! with temperature pictures, on the CPU, one GPU or the tiles' GPUs.

use super::run::{Outcome, Report, RunOptions};
use super::BackendChoice;
use lbm::host::picture;
use lbm::host::thermal::case::ThermalCase;
use lbm::host::thermal::ThermalSolver;
use lbm::{BackendKind, Error, Result};
use std::path::Path;
use std::time::Instant;

pub fn run(path: &Path, o: RunOptions) -> Result<Outcome> {
    let case = ThermalCase::load(path)?;
    if o.rendezvous.is_some() || o.exchange.is_some() || o.resume || o.size.is_some() {
        return Err(Error::Setup(
            "a thermal case runs without --rendezvous, --exchange, --resume or --size: set the size, devices and tiles in [simulation]".into(),
        ));
    }
    let steps = o.steps.unwrap_or(case.simulation.steps);
    let dir = o.output.clone().unwrap_or_else(|| case.output.directory.clone());
    let devices = &case.simulation.devices;
    let backend = o.backend.unwrap_or(BackendChoice::Auto).resolve(o.device.unwrap_or(devices[0]))?;
    let config = case.config();
    let n = case.numbers();
    let [nx, ny] = case.simulation.size;
    let quiet = o.report != Report::Bar;
    if !quiet {
        let t = config.tiling;
        let on = match backend {
            BackendKind::Gpu(_) if devices.len() > 1 => {
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
    let mut solver = match backend {
        BackendKind::Gpu(_) if devices.len() > 1 => ThermalSolver::on_gpus(config.clone(), devices, &ptx, at)?,
        _ => ThermalSolver::new(config.clone(), backend, &ptx, at)?,
    };
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
    let walls = config.walls.unwrap_or_default();
    let (t_min, t_max) = (walls[1], walls[0]);
    let picture = |s: &ThermalSolver| -> Result<()> {
        let f = s.fields()?;
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
    picture(&solver)?;
    let every = if case.output.every == 0 { steps.max(1) } else { case.output.every };
    let start = Instant::now();
    while solver.time() < steps {
        let chunk = every.min(steps - solver.time());
        solver.step(chunk)?;
        picture(&solver)?;
        if o.report == Report::JsonLines {
            println!("{{\"step\": {}, \"seconds\": {:.3}}}", solver.time(), start.elapsed().as_secs_f64());
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let mlups = nx as f64 * ny as f64 * steps as f64 / seconds.max(1e-9) / 1e6;
    println!("{steps} steps in {seconds:.1} s ({mlups:.1} MLUPS); temperature maps in {}", dir.display());
    Ok(Outcome::Finished)
}
