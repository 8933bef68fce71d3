//! The forces on the case's objects through a run: the rows of
//! `NAME_forces.csv` and their mean over the trailing window of the run,
//! which `NAME_forces_mean.csv`, the summary and the last report line give. A single step's force
//! carries the pressure waves that an impulsive start leaves bouncing
//! between inlet and outlet; the window's mean does not.

use lbm::host::case::{OutputSection, Setup};
use lbm::host::files::write_atomic;
use lbm::{Error, Result};
use std::path::{Path, PathBuf};

/// Whether step `t` of a run of `total` steps samples the forces: every
/// `forces_every` steps, or at each output, and at the end.
pub fn due(o: &OutputSection, t: u64, total: u64) -> bool {
    let n = if o.forces_every > 0 { o.forces_every } else { o.every };
    (n > 0 && t.is_multiple_of(n)) || t == total
}

/// Every force sample of a run, in step order.
pub struct ForceLog {
    file: PathBuf,
    /// `NAME_forces_mean.csv`: the trailing window's means, one row per object.
    mean_file: PathBuf,
    header: String,
    rows: String,
    /// Step and force (lattice units) on each object.
    samples: Vec<(u64, Vec<[f64; 3]>)>,
}

/// The mean force on each object over the last `window` steps of a run.
pub struct ForceMean {
    /// First and last step averaged, and the number of samples.
    pub from: u64,
    pub to: u64,
    pub samples: usize,
    /// Per object: mean force (lattice units) and coefficients, if the
    /// object gives a reference area and velocity.
    pub force: Vec<[f64; 3]>,
    pub coefficients: Vec<Option<[f64; 3]>>,
    /// Per object: the shedding its lift shows over the window, if any.
    pub shedding: Vec<Option<Shedding>>,
}

/// Periodic shedding seen in the force across the flow (the lift).
pub struct Shedding {
    /// The axis of the lift: of the two across the mean force, the one
    /// whose force varies most.
    pub axis: usize,
    /// Full periods between the first and last upward zero crossing.
    pub periods: usize,
    /// The period, in steps.
    pub period: f64,
    /// `f L / U` with the object's reference length and velocity, if it has both.
    pub strouhal: Option<f64>,
}

/// The shedding in `samples` (step and force) about their mean `mean`: the
/// upward zero crossings of the lift, each counted once the lift has gone
/// a quarter of its standard deviation below the mean (so noise does not
/// count twice), interpolated linearly between samples; at least two full
/// periods, else `None`.
fn shedding(samples: &[(u64, [f64; 3])], mean: [f64; 3]) -> Option<(usize, usize, f64)> {
    let drag = (0..3).max_by(|&a, &b| mean[a].abs().total_cmp(&mean[b].abs()))?;
    let n = samples.len() as f64;
    let std = |a: usize| (samples.iter().map(|(_, f)| (f[a] - mean[a]).powi(2)).sum::<f64>() / n).sqrt();
    let axis = (0..3).filter(|&a| a != drag).max_by(|&a, &b| std(a).total_cmp(&std(b)))?;
    let h = 0.25 * std(axis);
    if h == 0.0 {
        return None;
    }
    let (mut armed, mut crossings) = (false, Vec::new());
    for w in samples.windows(2) {
        let ((t0, f0), (t1, f1)) = (w[0], w[1]);
        let (s0, s1) = (f0[axis] - mean[axis], f1[axis] - mean[axis]);
        armed |= s0 < -h;
        if armed && s0 < 0.0 && s1 >= 0.0 {
            crossings.push(t0 as f64 + (t1 - t0) as f64 * (-s0) / (s1 - s0));
            armed = false;
        }
    }
    let periods = crossings.len().checked_sub(1).filter(|&p| p >= 2)?;
    Some((axis, periods, (crossings[periods] - crossings[0]) / periods as f64))
}

impl ForceLog {
    /// A log writing `NAME_forces.csv` in `dir`. Resuming at step `resumed`
    /// keeps the rows a previous run wrote up to that step, so the file and
    /// the mean cover the whole run.
    pub fn new(dir: &Path, name: &str, setup: &Setup, resumed: Option<u64>) -> Result<Self> {
        let file = dir.join(format!("{name}_forces.csv"));
        let mean_file = dir.join(format!("{name}_forces_mean.csv"));
        let mut log = ForceLog { file, mean_file, header: header(setup), rows: String::new(), samples: Vec::new() };
        if let Some(t) = resumed {
            log.keep_rows_until(setup, t)?;
        }
        Ok(log)
    }

    /// Reads back the rows up to step `t` of an existing file (none if it
    /// is missing: a run whose objects were never sampled).
    fn keep_rows_until(&mut self, setup: &Setup, t: u64) -> Result<()> {
        let text = match std::fs::read_to_string(&self.file) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => return Err(Error::Io { path: self.file.clone(), source }),
        };
        let objects = setup.objects.len();
        let mut current: Option<(u64, Vec<[f64; 3]>)> = None;
        for line in text.lines().skip(1) {
            let bad = || {
                Error::Setup(format!(
                    "{} has a line `{line}` that is not a force row: move the file away to start its rows afresh",
                    self.file.display()
                ))
            };
            let cols: Vec<&str> = line.split(',').collect();
            let step: u64 = cols.first().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
            if step > t {
                break;
            }
            let f = |k: usize| cols.get(k).and_then(|s| s.parse::<f64>().ok()).ok_or_else(bad);
            let force = [f(2)?, f(3)?, f(4)?];
            match &mut current {
                Some((s, v)) if *s == step => v.push(force),
                _ => {
                    if let Some(done) = current.take() {
                        self.samples.push(done);
                    }
                    current = Some((step, vec![force]));
                }
            }
            self.rows.push_str(line);
            self.rows.push('\n');
        }
        self.samples.extend(current);
        self.samples.retain(|(_, v)| v.len() == objects);
        Ok(())
    }

    /// Adds the forces at step `t`.
    pub fn push(&mut self, setup: &Setup, t: u64, forces: &[[f64; 3]]) {
        self.rows.push_str(&lines(setup, t, forces));
        self.samples.push((t, forces.to_vec()));
    }

    /// Writes the file (atomically) with every row so far; nothing while
    /// there are none. Called at outputs, checks and checkpoints rather
    /// than per sample, so frequent samples do not rewrite it each time.
    pub fn save(&self) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        write_atomic(&self.file, format!("{}{}", self.header, self.rows).as_bytes())
    }

    /// Saves the file at the end of a run at step `end`, and returns the
    /// mean over the case's trailing window, printed when `say`.
    pub fn finish(&self, setup: &Setup, end: u64, say: bool) -> Result<Option<ForceMean>> {
        self.save()?;
        let window = match setup.output.force_window {
            0 => setup.steps.div_ceil(2),
            w => w,
        };
        let mean = self.mean(setup, end, window);
        if let Some(mean) = &mean {
            write_atomic(&self.mean_file, mean.csv(setup).as_bytes())?;
        }
        if let (Some(mean), true) = (&mean, say) {
            for line in mean.describe(setup) {
                println!("{line}");
            }
        }
        Ok(mean)
    }

    /// The mean over the samples of the last `window` steps before `end`
    /// (`None` without samples there).
    pub fn mean(&self, setup: &Setup, end: u64, window: u64) -> Option<ForceMean> {
        let from = end.saturating_sub(window);
        let kept: Vec<_> = self.samples.iter().filter(|(s, _)| *s > from && *s <= end).collect();
        let (first, last) = (kept.first()?.0, kept.last()?.0);
        let n = kept.len() as f64;
        let force: Vec<[f64; 3]> = (0..setup.objects.len())
            .map(|k| {
                let mut sum = [0.0; 3];
                for (_, v) in &kept {
                    for a in 0..3 {
                        sum[a] += v[k][a] / n;
                    }
                }
                sum
            })
            .collect();
        let coefficients = force.iter().zip(&setup.geometry).map(|(f, g)| coefficients(setup, g, f)).collect();
        let shedding = (force.iter().zip(&setup.geometry).enumerate())
            .map(|(k, (mean, g))| {
                let series: Vec<(u64, [f64; 3])> = kept.iter().map(|(t, v)| (*t, v[k])).collect();
                let (axis, periods, period) = shedding(&series, *mean)?;
                // f L / U in lattice units: L in cells, U in cells per step.
                let strouhal = g.strouhal_length().zip(g.reference_velocity).map(|(l, v)| match setup.units {
                    Some(u) => (l / u.dx) / period / (v * u.dt / u.dx),
                    None => l / period / v,
                });
                Some(Shedding { axis, periods, period, strouhal })
            })
            .collect();
        Some(ForceMean { from: first, to: last, samples: kept.len(), force, coefficients, shedding })
    }
}

impl ForceMean {
    /// One report line per object.
    pub fn describe(&self, setup: &Setup) -> Vec<String> {
        let span = format!("steps {} to {} ({} samples)", self.from, self.to, self.samples);
        setup
            .objects
            .iter()
            .zip(self.force.iter().zip(&self.coefficients))
            .zip(&self.shedding)
            .map(|((o, (f, c)), shed)| {
                let mut line = match c {
                    Some(c) => format!("{}: mean c = ({:.4}, {:.4}, {:.4}) over {span}", o.name, c[0], c[1], c[2]),
                    None => format!("{}: mean force = ({:e}, {:e}, {:e}) over {span}", o.name, f[0], f[1], f[2]),
                };
                if let Some(s) = shed {
                    let st = s.strouhal.map(|st| format!("Strouhal {st:.4}, ")).unwrap_or_default();
                    let axis = ["x", "y", "z"][s.axis];
                    line += &format!(
                        "; {st}lift along {axis} with a period of {:.1} steps ({} periods)",
                        s.period, s.periods
                    );
                }
                line
            })
            .collect()
    }

    /// `NAME_forces_mean.csv`: per object the window, the mean force (and
    /// in newtons with `[units]`), the mean coefficients, and the shedding
    /// period and Strouhal number (empty where there are none).
    pub fn csv(&self, setup: &Setup) -> String {
        let si = if setup.units.is_some() { ",fx_N,fy_N,fz_N" } else { "" };
        let mut out = format!(
            "object,from_step,to_step,samples,fx,fy,fz{si},c_x,c_y,c_z,lift_axis,period_steps,periods,strouhal\n"
        );
        let blank = |v: Option<String>| v.unwrap_or_default();
        for ((o, (f, c)), shed) in
            setup.objects.iter().zip(self.force.iter().zip(&self.coefficients)).zip(&self.shedding)
        {
            out += &format!("{},{},{},{},{:e},{:e},{:e}", o.name, self.from, self.to, self.samples, f[0], f[1], f[2]);
            if let Some(u) = setup.units {
                let newton = u.density * u.dx.powi(4) / (u.dt * u.dt);
                out += &format!(",{:e},{:e},{:e}", f[0] * newton, f[1] * newton, f[2] * newton);
            }
            let c = c.map(|c| c.map(|v| format!("{v:e}")).join(","));
            out += &format!(",{}", c.unwrap_or_else(|| ",,".into()));
            let shed = shed.as_ref().map(|s| {
                let st = blank(s.strouhal.map(|v| format!("{v:e}")));
                format!("{},{:e},{},{st}", ["x", "y", "z"][s.axis], s.period, s.periods)
            });
            out += &format!(",{}\n", shed.unwrap_or_else(|| ",,,".into()));
        }
        out
    }

    /// The summary's `forces_mean`.
    pub fn json(&self, setup: &Setup) -> serde_json::Value {
        let objects: Vec<_> = setup
            .objects
            .iter()
            .zip(self.force.iter().zip(&self.coefficients))
            .zip(&self.shedding)
            .map(|((o, (f, c)), shed)| {
                let shedding = shed.as_ref().map(|s| {
                    let axis = ["x", "y", "z"][s.axis];
                    serde_json::json!({ "lift_axis": axis, "period_steps": s.period, "periods": s.periods, "strouhal": s.strouhal })
                });
                serde_json::json!({ "object": o.name, "force_lattice": f, "coefficients": c, "shedding": shedding })
            })
            .collect();
        serde_json::json!({ "from_step": self.from, "to_step": self.to, "samples": self.samples, "objects": objects })
    }
}

fn header(s: &Setup) -> String {
    let si = if s.units.is_some() { ",fx_N,fy_N,fz_N" } else { "" };
    format!("step,object,fx,fy,fz{si},c_x,c_y,c_z\n")
}

/// `2 F / (rho U^2 A)` when the object gives a reference area and velocity
/// (drag and lift are the components along and across the flow).
fn coefficients(s: &Setup, g: &lbm::host::geometry::GeometrySpec, f: &[f64; 3]) -> Option<[f64; 3]> {
    let (area, vel) = (g.reference_area?, g.reference_velocity?);
    // To lattice units: area in cells^2, velocity in cells per step.
    let (a, v) = match s.units {
        Some(u) => (area / (u.dx * u.dx), vel * u.dt / u.dx),
        None => (area, vel),
    };
    let q = 0.5 * v * v * a;
    Some(f.map(|x| x / q))
}

/// One CSV line per object: force in lattice units (and newtons with
/// `[units]`), and the coefficients.
fn lines(s: &Setup, step: u64, forces: &[[f64; 3]]) -> String {
    let mut out = String::new();
    for ((o, g), f) in s.objects.iter().zip(&s.geometry).zip(forces) {
        out.push_str(&format!("{step},{},{:e},{:e},{:e}", o.name, f[0], f[1], f[2]));
        if let Some(u) = s.units {
            let newton = u.density * u.dx.powi(4) / (u.dt * u.dt);
            out.push_str(&format!(",{:e},{:e},{:e}", f[0] * newton, f[1] * newton, f[2] * newton));
        }
        match coefficients(s, g, f) {
            Some(c) => out.push_str(&format!(",{:e},{:e},{:e}\n", c[0], c[1], c[2])),
            None => out.push_str(",,,\n"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::shedding;

    /// A sine of period 40 steps sampled every 3 steps, with noise that
    /// crosses zero on its own: the period comes out to the sampling's
    /// interpolation error, and noise does not double the crossings.
    #[test]
    fn shedding_finds_the_lift_period() {
        let samples: Vec<(u64, [f64; 3])> = (0..200)
            .map(|k| {
                let t = 3 * k as u64;
                let noise = if k % 2 == 0 { 0.02 } else { -0.02 };
                (t, [2.0, 0.3 * (2.0 * std::f64::consts::PI * t as f64 / 40.0).sin() + noise, 0.001 * noise])
            })
            .collect();
        let (axis, periods, period) = shedding(&samples, [2.0, 0.0, 0.0]).unwrap();
        // Upward crossings at 40, 80, ..., 560 steps (the samples end at 597).
        assert_eq!((axis, periods), (1, 13));
        assert!((period - 40.0).abs() < 0.1, "{period}");
        // A steady force has no period.
        let steady: Vec<(u64, [f64; 3])> = (0..50).map(|k| (k, [2.0, 0.1, 0.0])).collect();
        assert!(shedding(&steady, [2.0, 0.1, 0.0]).is_none());
    }
}
