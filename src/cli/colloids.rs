//! `lbm run` of a colloid case (`model = "colloids"`): solid spheres in one
//! fluid, periodic or between walls, on the CPU or a GPU, with a record of
//! every colloid (`colloids.csv`), of the whole run (`summary.csv`) and
//! pictures of the speed on the middle y slice.

use super::run::{next_event, progress_bar, report_progress, Outcome, Report, RunOptions, RUNAWAY_SPEED};
use super::BackendChoice;
use lbm::host::colloids::case::{volume_fraction, ColloidCase};
use lbm::host::colloids::dynamics::close_pairs;
use lbm::host::colloids::{Suspension, SuspensionConfig, SuspensionFields};
use lbm::host::files::write_atomic;
use lbm::host::picture;
use lbm::{Error, Result};
use std::f64::consts::PI;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

/// Gaps up to this many sites count in `summary.csv`'s smallest pair gap.
const GAP_REACH: f64 = 2.0;

pub fn run(path: &Path, o: RunOptions) -> Result<Outcome> {
    let case = ColloidCase::load(path)?;
    if o.exchange.is_some() || o.resume || o.size.is_some() || o.rendezvous.is_some() {
        return Err(Error::Setup(
            "a colloid case runs without --exchange, --resume, --size or --rendezvous: \
             set the size and devices in [simulation]"
                .into(),
        ));
    }
    let steps = o.steps.unwrap_or(case.simulation.steps);
    let dir = o.output.clone().unwrap_or_else(|| case.output.directory.clone());
    // `--device` runs the case on that one GPU.
    let gpus = o.device.map_or_else(|| case.simulation.gpus(), |d| vec![d]);
    let backend = o.backend.unwrap_or(BackendChoice::Auto).resolve(gpus[0])?;
    let (devices, device) = super::split_devices(gpus, backend);
    let config = case.config()?;
    if o.report == Report::Bar {
        for line in describe(path, &config, &device) {
            println!("{line}");
        }
    }
    let ptx = lbm::ptx::active();
    let mut suspension = Suspension::on_devices(config, &devices, &ptx)?;
    if o.report == Report::Bar {
        for link in suspension.links() {
            println!("  {link}");
        }
    }
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
    let every = case.every(steps);
    let mut log = Log::new(case.output.pictures);
    log.record(&suspension, &dir)?;
    let bar = progress_bar(steps, o.report);
    let sites = suspension.config().sites() as f64;
    let start = Instant::now();
    let mut stepping = 0.0;
    while suspension.time() < steps {
        let n = next_event(suspension.time(), steps, [every]) - suspension.time();
        let t0 = Instant::now();
        let stepped = suspension.step(n).and_then(|_| suspension.synchronize());
        if let Err(e) = stepped {
            bar.abandon();
            eprintln!(
                "stopped by step {}; the records up to step {} are in {}",
                suspension.time(),
                log.last_step,
                dir.display()
            );
            return Err(e);
        }
        let dt = t0.elapsed().as_secs_f64();
        stepping += dt;
        let t = suspension.time();
        report_progress(
            &bar,
            o.report,
            t,
            steps,
            sites * n as f64 / dt.max(1e-9) / 1e6,
            (steps - t) as f64 * dt / n as f64,
        );
        if t.is_multiple_of(every) || t == steps {
            if let Err(e) = log.record(&suspension, &dir) {
                bar.abandon();
                return Err(e);
            }
        }
    }
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let mlups = if stepping > 0.0 { sites * steps as f64 / stepping / 1e6 } else { 0.0 };
    let host = suspension.host_seconds();
    let share = if stepping > 0.0 { host / stepping } else { 0.0 };
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("case");
    write_summary(&dir, name, &suspension, &device, seconds, stepping, mlups)?;
    match o.report {
        Report::JsonLines => println!(
            "{{\"done\":true,\"steps\":{steps},\"seconds\":{seconds:.3},\"mlups\":{mlups:.2},\"host_share\":{share:.4}}}"
        ),
        Report::Quiet => println!(
            "done: {steps} steps in {seconds:.1} s, {mlups:.1} MLUPS (the host's share {:.1}%); output in {}",
            100.0 * share,
            dir.display()
        ),
        Report::Bar => log.finish(&suspension, &dir, steps, seconds, stepping, mlups),
    }
    Ok(Outcome::Finished)
}

/// The lines describing a set-up before it runs.
fn describe(path: &Path, c: &SuspensionConfig, device: &str) -> Vec<String> {
    let [nx, ny, nz] = c.size;
    let walls = match c.walls {
        None => "periodic".to_string(),
        Some([bottom, top]) => format!("walls at z = -1/2 and {} (velocities {bottom:?} and {top:?})", nz as f64 - 0.5),
    };
    let n = c.colloids.len();
    let radii = c.colloids.iter().map(|s| s.radius);
    let (a_min, a_max) = radii.fold((f64::INFINITY, 0.0f64), |(lo, hi), a| (lo.min(a), hi.max(a)));
    let sizes = match n {
        0 => String::new(),
        _ if a_min == a_max => format!(" of radius {a_min}"),
        _ => format!(" of radius {a_min} to {a_max}"),
    };
    let eta = c.viscosity();
    let mut lines = vec![
        format!(
            "{}: colloids, {} {nx} x {ny} x {nz}, {walls}, {:?}, {}, {device}",
            path.display(),
            c.lattice.name().to_uppercase(),
            c.collision,
            c.precision.name()
        ),
        format!(
            "  {n} colloid{}{sizes}, volume fraction {:.4}; tau {:.3}, viscosity {eta:.4e}; body force {:?}{}",
            if n == 1 { "" } else { "s" },
            volume_fraction(c),
            c.tau,
            c.force,
            if c.balance && c.walls.is_none() { " (balancing the colloids' forces)" } else { "" }
        ),
    ];
    // The Stokes speed and Reynolds number of the colloid pushed hardest.
    let pushed = c.colloids.iter().filter(|s| !s.fixed).max_by(|p, q| norm(p.force).total_cmp(&norm(q.force)));
    if let Some(s) = pushed.filter(|s| norm(s.force) > 0.0) {
        let u = norm(s.force) / (6.0 * PI * eta * s.radius);
        lines.push(format!(
            "  external force {:.4e} on radius {}: Stokes speed F / (6 pi eta a) = {u:.4e}, Reynolds 2 a U / nu = {:.3e}",
            norm(s.force),
            s.radius,
            2.0 * s.radius * u / eta
        ));
    }
    let i = c.interactions;
    let soft = i.soft.map_or("no soft sphere".into(), |s| {
        format!("soft sphere epsilon {}, sigma {}, nu {}, cut-off {}", s.epsilon, s.sigma, s.nu, s.cutoff)
    });
    let lub = i.lubrication.map_or("no lubrication".into(), |l| {
        format!("lubrication below gaps of {} (pairs) and {} (walls)", l.pair_cutoff, l.wall_cutoff)
    });
    lines.push(format!("  {soft}; {lub}"));
    lines
}

fn norm(v: [f64; 3]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// The records of a run: `colloids.csv` (a row per colloid per record) and
/// `summary.csv` (a row per record), rewritten atomically at each.
struct Log {
    pictures: bool,
    colloids: String,
    summary: String,
    first_mass: Option<f64>,
    last_step: u64,
    last: Option<Summary>,
}

/// What `summary.csv` records at one step.
#[derive(Clone, Copy)]
struct Summary {
    fluid_mass: f64,
    held_mass: f64,
    max_speed: f64,
    mean_velocity: [f64; 3],
    min_pair_gap: Option<f64>,
    min_wall_gap: Option<f64>,
}

impl Log {
    fn new(pictures: bool) -> Self {
        Self {
            pictures,
            colloids: "step,id,x,y,z,ux,uy,uz,wx,wy,wz,fx,fy,fz,contact_fx,contact_fy,contact_fz\n".into(),
            summary:
                "step,fluid_mass,held_mass,total_mass,max_speed,mean_ux,mean_uy,mean_uz,min_pair_gap,min_wall_gap\n"
                    .into(),
            first_mass: None,
            last_step: 0,
            last: None,
        }
    }

    /// Records the state now, draws it, and rewrites the files.
    fn record(&mut self, s: &Suspension, dir: &Path) -> Result<()> {
        let t = s.time();
        let f = s.fields()?;
        let max_speed = check_health(&f, s, t)?;
        let colloids = s.colloids();
        for (k, c) in colloids.iter().enumerate() {
            let _ = write!(self.colloids, "{t},{k}");
            for v in [c.centre, c.velocity, c.spin, c.hydrodynamic_force, c.contact_force] {
                let _ = write!(self.colloids, ",{:.9e},{:.9e},{:.9e}", v[0], v[1], v[2]);
            }
            self.colloids.push('\n');
        }
        let (fluid_mass, held_mass) = s.mass()?;
        self.first_mass.get_or_insert(fluid_mass + held_mass);
        let count = colloids.len().max(1) as f64;
        let mean_velocity: [f64; 3] =
            std::array::from_fn(|a| colloids.iter().map(|c| c.velocity[a]).sum::<f64>() / count);
        let config = s.config();
        let space = config.space();
        let min_pair_gap = close_pairs(&space, colloids, GAP_REACH)
            .into_iter()
            .map(|(i, j, d)| norm(d) - colloids[i].radius - colloids[j].radius)
            .reduce(f64::min);
        let nz = config.size[2] as f64;
        let min_wall_gap = config.walls.and_then(|_| {
            colloids
                .iter()
                .map(|c| (c.centre[2] + 0.5 - c.radius).min(nz - 0.5 - c.centre[2] - c.radius))
                .reduce(f64::min)
        });
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6e}"));
        let _ = writeln!(
            self.summary,
            "{t},{fluid_mass:.12e},{held_mass:.12e},{:.12e},{max_speed:.6e},{:.6e},{:.6e},{:.6e},{},{}",
            fluid_mass + held_mass,
            mean_velocity[0],
            mean_velocity[1],
            mean_velocity[2],
            opt(min_pair_gap),
            opt(min_wall_gap)
        );
        write_atomic(&dir.join("colloids.csv"), self.colloids.as_bytes())?;
        write_atomic(&dir.join("summary.csv"), self.summary.as_bytes())?;
        if self.pictures {
            picture_speed(s, &f, dir)?;
        }
        self.last_step = t;
        self.last = Some(Summary { fluid_mass, held_mass, max_speed, mean_velocity, min_pair_gap, min_wall_gap });
        Ok(())
    }

    fn finish(&self, s: &Suspension, dir: &Path, steps: u64, seconds: f64, stepping: f64, mlups: f64) {
        let host = s.host_seconds();
        println!(
            "{steps} steps in {seconds:.1} s ({stepping:.1} s stepping, {mlups:.1} MLUPS); the host's share {host:.2} s \
             ({:.1}%); colloids.csv, summary.csv{} in {}",
            100.0 * host / stepping.max(1e-9),
            if self.pictures { " and pictures" } else { "" },
            dir.display()
        );
        let Some(last) = self.last else { return };
        let total = last.fluid_mass + last.held_mass;
        let first = self.first_mass.unwrap_or(total);
        println!(
            "  mass (fluid and held by the colloids) {first:.10e} -> {total:.10e} ({:+.2e}); largest fluid speed {:.3e}",
            total - first,
            last.max_speed
        );
        let gap = |v: Option<f64>, what: &str| v.map(|g| format!(", smallest gap {g:.3} ({what})")).unwrap_or_default();
        println!(
            "  colloids' mean velocity [{:.4e}, {:.4e}, {:.4e}]{}{}",
            last.mean_velocity[0],
            last.mean_velocity[1],
            last.mean_velocity[2],
            gap(last.min_pair_gap, "pairs"),
            gap(last.min_wall_gap, "walls")
        );
    }
}

/// The largest fluid speed, or a clear error where the run has diverged.
fn check_health(f: &SuspensionFields, s: &Suspension, step: u64) -> Result<f64> {
    let mut max = 0.0f64;
    for (k, (rho, u)) in f.rho.iter().zip(&f.u).enumerate() {
        if f.solid[k].is_some() {
            continue;
        }
        let speed = norm(*u);
        if !(rho.is_finite() && speed.is_finite()) || speed > RUNAWAY_SPEED {
            let [nx, ny, _] = s.config().size.map(|n| n as usize);
            return Err(Error::Setup(format!(
                "the run diverged by step {step} (site {}, {}, {}: density {rho:e}, speed {speed:e}): lower the \
                 forces or the walls' speed, or raise tau",
                k % nx,
                k / nx % ny,
                k / (nx * ny)
            )));
        }
        max = max.max(speed);
    }
    if let Some(k) = s.colloids().iter().position(|c| !c.velocity.iter().chain(&c.centre).all(|v| v.is_finite())) {
        return Err(Error::Setup(format!("the run diverged by step {step}: colloid {k} has no finite velocity")));
    }
    Ok(max)
}

/// The speed `|u|` on the slice `y = ny/2`, x across and z up; solid sites
/// drawn as solid.
fn picture_speed(s: &Suspension, f: &SuspensionFields, dir: &Path) -> Result<()> {
    let [nx, ny, nz] = s.config().size.map(|n| n as usize);
    let y = ny / 2;
    let values: Vec<Option<f64>> = (0..nz)
        .flat_map(|z| (0..nx).map(move |x| x + nx * (y + ny * z)))
        .map(|k| f.solid[k].is_none().then(|| norm(f.u[k])))
        .collect();
    picture::write_values(&dir.join(format!("speed_{:08}.png", s.time())), nx as u32, nz as u32, &values)
}

/// `summary.json`: the run's set-up and speed.
fn write_summary(
    dir: &Path,
    name: &str,
    s: &Suspension,
    device: &str,
    seconds: f64,
    stepping: f64,
    mlups: f64,
) -> Result<()> {
    let c = s.config();
    let summary = serde_json::json!({
        "case": name,
        "model": lbm::host::colloids::case::MODEL,
        "lattice": c.lattice.name(),
        "precision": c.precision.name(),
        "size": c.size,
        "walls": c.walls,
        "tau": c.tau,
        "viscosity": c.viscosity(),
        "colloids": c.colloids.len(),
        "volume_fraction": volume_fraction(c),
        "steps": s.time(),
        "wall_time_s": seconds,
        "stepping_s": stepping,
        "host_s": s.host_seconds(),
        "mlups": mlups,
        "device": device,
        "lbm_version": env!("CARGO_PKG_VERSION"),
    });
    let text =
        serde_json::to_string_pretty(&summary).map_err(|e| Error::Setup(format!("cannot encode the summary: {e}")))?;
    write_atomic(&dir.join("summary.json"), text.as_bytes())
}
