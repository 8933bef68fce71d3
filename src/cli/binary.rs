//! `lbm run` of a binary-fluid case (`model = "binary-fluid"`): Ludwig's
//! symmetric binary fluid in a periodic box on the CPU or a GPU, with
//! pictures of the order parameter and a log of what the run measures
//! (its total, the spurious currents, a droplet's Laplace pressure, the
//! domain size of a separating mixture and its growth exponent).

use super::run::{Outcome, Report, RunOptions};
use super::BackendChoice;
use lbm::host::binary::case::{BinaryCase, Initial};
use lbm::host::binary::measure::{self, Droplet};
use lbm::host::binary::{BinaryFields, BinarySolver};
use lbm::host::files::write_atomic;
use lbm::host::picture;
use lbm::{Error, Result};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

pub fn run(path: &Path, o: RunOptions) -> Result<Outcome> {
    let case = BinaryCase::load(path)?;
    if o.exchange.is_some() || o.resume || o.size.is_some() || o.rendezvous.is_some() {
        return Err(Error::Setup(
            "a binary-fluid case runs without --exchange, --resume, --size or --rendezvous: \
             set the size and devices in [simulation]"
                .into(),
        ));
    }
    let steps = o.steps.unwrap_or(case.simulation.steps);
    let dir = o.output.clone().unwrap_or_else(|| case.output.directory.clone());
    // `--device` runs the case on that one GPU.
    let gpus = o.device.map_or_else(|| case.simulation.gpus(), |d| vec![d]);
    let backend = o.backend.unwrap_or(BackendChoice::Auto).resolve(gpus[0])?;
    let (devices, on) = super::split_devices(gpus, backend);
    let config = case.config()?;
    let fe = config.free_energy;
    let quiet = o.report != Report::Bar;
    if !quiet {
        let [nx, ny, nz] = config.size;
        println!(
            "{}: binary fluid, {:?} {nx} x {ny} x {nz} periodic, {:?}, {:?}, {on}",
            path.display(),
            config.lattice,
            config.collision,
            config.precision,
        );
        println!(
            "  A {:.4e}, B {:.4e}, kappa {:.4e}: phases at phi = +-{:.4}, interface width xi = {:.3} sites, \
             surface tension sigma = {:.4e}",
            fe.a,
            fe.b,
            fe.kappa,
            fe.phi_star(),
            fe.width(),
            fe.surface_tension()
        );
        println!(
            "  mobility {:.4e}, tau {:.3} (viscosity {:.4e}); the phases' diffusivity M (A + 3 B phi*^2) = {:.4e}",
            config.mobility,
            config.tau,
            (config.tau - 0.5) / 3.0,
            config.mobility * -2.0 * fe.a
        );
    }
    let ptx = lbm::ptx::active();
    let mut solver = BinarySolver::on_devices(config, &devices, &ptx, case.initial())?;
    if !quiet {
        for link in solver.links() {
            println!("  {link}");
        }
    }
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
    let mut log = Log::new(&case);
    let every = if case.output.every == 0 { steps.max(1) } else { case.output.every };
    let start = Instant::now();
    log.sample(&solver, &dir)?;
    while solver.time() < steps {
        solver.step(every.min(steps - solver.time()))?;
        let line = log.sample(&solver, &dir)?;
        if o.report == Report::JsonLines {
            println!("{{\"step\": {}, \"seconds\": {:.3}, {line}}}", solver.time(), start.elapsed().as_secs_f64());
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let mlups = solver.config().sites() as f64 * steps as f64 / seconds.max(1e-9) / 1e6;
    log.finish(&dir, steps, seconds, mlups, o.report)?;
    Ok(Outcome::Finished)
}

/// The measurements through a run, written as `binary.csv`.
struct Log {
    droplet: bool,
    csv: String,
    first_total: Option<f64>,
    sizes: Vec<(u64, f64)>,
    last: Option<(f64, f64, Option<Droplet>)>,
}

impl Log {
    fn new(case: &BinaryCase) -> Self {
        Self {
            droplet: matches!(case.initial, Initial::Droplet { .. }),
            csv: "step,sum_phi,max_speed,domain_size,droplet_radius,pressure_jump,laplace_jump\n".into(),
            first_total: None,
            sizes: Vec::new(),
            last: None,
        }
    }

    /// Measures the current state, draws `φ`, and returns the JSON fields.
    fn sample(&mut self, solver: &BinarySolver, dir: &Path) -> Result<String> {
        let f = solver.fields()?;
        check_finite(&f, solver.time())?;
        let config = solver.config();
        let (total, speed) = (measure::total_phi(&f), measure::max_speed(&f));
        self.first_total.get_or_insert(total);
        let size = measure::domain_size(config, &f.phi);
        if let Some(l) = size {
            self.sizes.push((solver.time(), l));
        }
        let drop = if self.droplet { measure::droplet(config, &f) } else { None };
        let t = solver.time();
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6e}"));
        let _ = writeln!(
            self.csv,
            "{t},{total:.12e},{speed:.4e},{},{},{},{}",
            opt(size),
            opt(drop.map(|d| d.radius)),
            opt(drop.map(|d| d.jump)),
            opt(drop.map(|d| d.laplace))
        );
        write_atomic(&dir.join("binary.csv"), self.csv.as_bytes())?;
        self.picture(solver, &f, dir)?;
        self.last = Some((total, speed, drop));
        let json = |v: Option<f64>| v.map_or("null".to_string(), |v| format!("{v:e}"));
        Ok(format!(
            "\"sum_phi\": {total:e}, \"max_speed\": {speed:e}, \"domain_size\": {}, \"pressure_jump\": {}",
            json(size),
            json(drop.map(|d| d.jump))
        ))
    }

    /// `φ` on the middle z slice, `−φ*` to `φ*`.
    fn picture(&self, solver: &BinarySolver, f: &BinaryFields, dir: &Path) -> Result<()> {
        let config = solver.config();
        let [nx, ny, nz] = config.size;
        let plane = (nx * ny) as usize * (nz / 2) as usize;
        let values: Vec<Option<f64>> = f.phi[plane..plane + (nx * ny) as usize].iter().map(|&p| Some(p)).collect();
        let s = config.free_energy.phi_star();
        picture::write_range(&dir.join(format!("phi_{:08}.png", solver.time())), nx, ny, &values, -s, s)
    }

    fn finish(&self, dir: &Path, steps: u64, seconds: f64, mlups: f64, report: Report) -> Result<()> {
        if report != Report::Bar {
            return Ok(());
        }
        let (total, speed, drop) = self.last.unwrap_or((0.0, 0.0, None));
        let first = self.first_total.unwrap_or(total);
        println!("{steps} steps in {seconds:.1} s ({mlups:.1} MLUPS); pictures and binary.csv in {}", dir.display());
        println!("  sum of phi {first:.10e} -> {total:.10e}; largest speed {speed:.3e}");
        if let Some(d) = drop {
            println!(
                "  droplet radius {:.3}: pressure jump {:.4e} against the Laplace law's {:.4e} ({:+.2}%)",
                d.radius,
                d.jump,
                d.laplace,
                100.0 * (d.jump / d.laplace - 1.0)
            );
        }
        if let Some(&(t, l)) = self.sizes.last() {
            let alpha = measure::growth_exponent(&self.sizes)
                .map_or("too few samples to fit (lower [output] every)".into(), |a| format!("{a:.3}"));
            println!("  domain size {l:.2} sites at step {t}; growth exponent over the later half: {alpha}");
        }
        Ok(())
    }
}

/// A clear error where the run has diverged.
fn check_finite(f: &BinaryFields, step: u64) -> Result<()> {
    match f.phi.iter().chain(&f.rho).position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(k) => Err(Error::Setup(format!(
            "the run diverged by step {step} (site {}): raise tau towards 1, or lower the mobility or |A|",
            k % f.phi.len()
        ))),
    }
}
