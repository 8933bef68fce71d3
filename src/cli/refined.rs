//! `lbm run` of a case with `[refinement]`: the same loop as a uniform
//! grid's (outputs, health checks, checkpoints, Ctrl-C, resume), over the
//! levels: one VTK file per level under a `.vtm`, pictures and probes from
//! the finest level owning each point, forces averaged over a coarse step.

use super::forces::{self, ForceLog};
use super::run::{
    describe_setup, interrupt_flag, next_event, progress_bar, report_progress, write_summary, Outcome, Report,
    RunOptions, RUNAWAY_SPEED,
};
use lbm::host::case::Setup;
use lbm::host::levels::{build_refined, output, LevelFields};
use lbm::host::{checkpoint, picture, probe, vtk};
use lbm::{Error, Result};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

pub fn run(path: &Path, name: &str, mut setup: Setup, o: RunOptions) -> Result<Outcome> {
    if let Some(s) = o.steps {
        setup.steps = s;
    }
    if let Some(dir) = o.output.clone() {
        setup.output.directory = dir;
    }
    let refined = setup.refinement.clone().expect("a refined set-up");
    let say = |line: String| {
        if o.report == Report::Bar {
            println!("{line}");
        }
    };
    // The uniform report's case, physics and units lines; the levels
    // report their own cells and memory.
    for line in describe_setup(name, &setup).into_iter().take(3) {
        say(line);
    }
    for note in &setup.notes {
        eprintln!("warning: {note}");
    }
    let devices = o.device.map_or(setup.devices.clone(), |d| vec![d]);
    let backend = o.backend.unwrap_or(setup.backend.into()).resolve(devices[0])?;
    // Several GPUs split the levels; the CPU runs them whole, as it does a uniform grid.
    let split: &[usize] = if matches!(backend, lbm::BackendKind::Gpu(_)) { &devices } else { &[] };
    let mut solver =
        build_refined(&setup.config, &refined.refinement, refined.edge, backend, split, &lbm::ptx::active())?;
    for line in solver.levels().describe(&setup.config).lines() {
        say(line.to_string());
    }
    say(format!(
        "refinement: {} levels, {} step, blocks of {}^{}",
        solver.levels().len(),
        refined.refinement.fusion.name(),
        refined.edge,
        if setup.config.domain.dims.nz == 1 { 2 } else { 3 }
    ));
    let description = match split.len() {
        0 | 1 => crate::cli::describe_backend(backend),
        n => format!("{n} GPUs {split:?}, every level split along z"),
    };
    say(format!("backend: {description}"));
    let levels = solver.levels().len();
    let masks: Vec<Vec<_>> = match &refined.refinement.geometry {
        Some(g) => (0..levels).map(|l| g.objects_on(l)).collect(),
        None => Vec::new(),
    };
    for (o, g) in setup.objects.iter().zip(&setup.geometry) {
        say(format!("geometry `{}`: {} level-0 cells", g.name, o.cells.count(|c| c)));
    }
    let interrupted = interrupt_flag();
    let dir = setup.output.directory.clone();
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir.clone(), source })?;
    let checkpoint_path = dir.join("checkpoint.lbm");
    let set_up = solver.levels().fingerprint(&setup.config);
    if o.resume {
        let state = checkpoint::read_for(&checkpoint_path, &set_up)?;
        solver.restore_state(&state)?;
        say(format!("resumed from {} at step {}", checkpoint_path.display(), state.time));
    }
    let mut force_log = ForceLog::new(&dir, name, &setup, o.resume.then(|| solver.time()))?;
    let total = setup.steps;
    let (every, ckpt_every, check_every) =
        (setup.output.every, setup.output.checkpoint_every, setup.output.check_every);
    let due = |t: u64, n: u64| n > 0 && t.is_multiple_of(n);
    let forces_every = setup.output.forces_every;
    let next_event = |t: u64| next_event(t, total, [every, ckpt_every, check_every, forces_every]);
    // Updates per coarse step: a level-l cell updates 2^l times.
    let cells: f64 = solver.levels().own_cells().iter().enumerate().map(|(l, &n)| (n as u64) << l).sum::<u64>() as f64;
    let bar = progress_bar(total, o.report);
    bar.set_position(solver.time());
    let start = Instant::now();
    let (mut stepping, mut steps_run) = (0.0, 0u64);
    let mut outcome = Outcome::Finished;
    let mut previous: Option<LevelFields> = None;
    let mut steady = false;
    while solver.time() < total {
        let target = next_event(solver.time()).min(total);
        let n = target - solver.time();
        // Forces are averaged over the fine steps of the coarse step before
        // a sample (and before a steady-state check, which may end the run).
        let forces_due = !masks.is_empty()
            && (forces::due(&setup.output, target, total)
                || setup.steady_tolerance.is_some() && due(target, check_every));
        let t0 = Instant::now();
        let forces = if forces_due {
            solver.step(n - 1)?;
            Some(solver.step_with_forces(&masks)?)
        } else {
            solver.step(n)?;
            None
        };
        solver.synchronize()?;
        let dt = t0.elapsed().as_secs_f64();
        stepping += dt;
        steps_run += n;
        let t = solver.time();
        report_progress(&bar, o.report, t, total, cells * n as f64 / dt / 1e6, (total - t) as f64 * dt / n as f64);
        let stop = interrupted.load(Ordering::SeqCst);
        let write_fields = due(t, every) || t == total;
        let write_ckpt = due(t, ckpt_every) || t == total || stop;
        let sampled = forces::due(&setup.output, t, total);
        if let (Some(forces), true) = (&forces, sampled) {
            force_log.push(&setup, t, forces);
        }
        if !(write_fields || write_ckpt || due(t, check_every)) {
            continue;
        }
        force_log.save()?;
        let fields = solver.fields()?;
        if let Some([x, y, z]) = output::first_unhealthy(&fields, RUNAWAY_SPEED) {
            bar.abandon();
            if checkpoint_path.exists() {
                eprintln!("diverged; the last good checkpoint is {}", checkpoint_path.display());
            }
            return Err(Error::Diverged { step: t, cell: (x, y, z) });
        }
        if let (Some(tol), true) = (setup.steady_tolerance, due(t, check_every)) {
            if let Some(prev) = &previous {
                let (change, speed) = (output::max_change(&fields, prev), output::max_speed(&fields));
                steady = speed > 0.0 && change < tol * speed;
            }
            previous = Some(fields.clone());
        }
        if write_fields || steady {
            write_outputs(&dir, name, &setup, solver.levels(), &fields, t)?;
            if let (Some(forces), true) = (&forces, steady && !sampled) {
                force_log.push(&setup, t, forces);
            }
        }
        if write_ckpt || steady {
            checkpoint::write_for(&checkpoint_path, &set_up, &solver.save_state()?)?;
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
    let forces_mean = force_log.finish(&setup, solver.time(), o.report == Report::Bar)?;
    write_summary(
        &dir.join("summary.json"),
        name,
        &setup,
        &description,
        solver.time(),
        start.elapsed().as_secs_f64(),
        mlups,
        None,
        forces_mean.as_ref(),
    )?;
    match outcome {
        Outcome::Finished => println!(
            "done: step {} in {:.1} s ({stepping:.1} s stepping), {mlups:.1} MLUPS over {levels} levels; output in {}",
            solver.time(),
            start.elapsed().as_secs_f64(),
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

/// The VTK collection, pictures and probes of step `t`.
fn write_outputs(
    dir: &Path,
    name: &str,
    setup: &Setup,
    levels: &lbm::host::levels::Levels,
    fields: &LevelFields,
    t: u64,
) -> Result<()> {
    if setup.output.vtk {
        let view =
            vtk::View { region: None, si: if setup.output.vtk_units == "physical" { setup.units } else { None } };
        output::write_vtm(&dir.join(format!("{name}_{t:08}")), levels, fields, &format!("{name} step {t}"), &view)?;
    }
    for p in &setup.output.pictures {
        let slice = p.slice(setup.config.domain.dims)?;
        let quantity = format!("{:?}", p.quantity).to_lowercase();
        let file = dir.join(format!("{name}_{quantity}_{}{}_{t:08}.png", p.normal, slice.index));
        let (w, h, values) = output::slice_values(levels, fields, p.quantity, slice);
        picture::write_values(&file, w, h, &values)?;
    }
    for p in &setup.output.probes {
        let file = dir.join(format!("{name}_probe_{}_{t:08}.csv", p.name));
        let points = p.points(setup.config.domain.dims);
        let si = setup.units.map(|u| (u.dx, u.dt));
        probe::write_samples(&file, &points, |x| output::velocity_at(levels, fields, x), t, si)?;
    }
    Ok(())
}
