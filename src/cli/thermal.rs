//! `lbm run` of a thermal case (`model = "d2q37"`): a Rayleigh–Taylor run
//! with temperature pictures, on the CPU or one GPU.

use super::run::{Outcome, Report, RunOptions};
use super::BackendChoice;
use lbm::host::picture;
use lbm::host::thermal::case::ThermalCase;
use lbm::host::thermal::ThermalSolver;
use lbm::{Error, Result};
use std::path::Path;
use std::time::Instant;

pub fn run(path: &Path, o: RunOptions) -> Result<Outcome> {
    let case = ThermalCase::load(path)?;
    if o.rendezvous.is_some() || o.exchange.is_some() || o.resume || o.size.is_some() {
        return Err(Error::Setup(
            "a thermal case runs on the CPU or one GPU, without --rendezvous, --exchange, --resume or --size: set the size in [simulation]".into(),
        ));
    }
    let steps = o.steps.unwrap_or(case.simulation.steps);
    let dir = o.output.clone().unwrap_or_else(|| case.output.directory.clone());
    let backend = o.backend.unwrap_or(BackendChoice::Auto).resolve(o.device.unwrap_or(0))?;
    let config = case.config();
    let n = case.numbers();
    let [nx, ny] = case.simulation.size;
    let quiet = o.report != Report::Bar;
    if !quiet {
        println!(
            "{}: D2Q37 thermal, {nx} x {ny} sites, {:?}, {}",
            path.display(),
            config.precision,
            super::describe_backend(backend)
        );
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
    let mut solver =
        ThermalSolver::new(config.clone(), backend, &lbm::ptx::active(), |x, y| initial[(y * nx + x) as usize])?;
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
