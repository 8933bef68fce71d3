//! `lbm run CASE.toml`

use indicatif::{ProgressBar, ProgressStyle};
use lbm::host::case::Case;
use lbm::host::solver::streaming_name;
use lbm::host::vtk;
use lbm::{BackendKind, Error, Result};
use std::path::{Path, PathBuf};
use std::time::Instant;

pub fn run(
    path: &Path,
    backend: BackendKind,
    size: Option<u32>,
    steps: Option<u64>,
    output: Option<PathBuf>,
) -> Result<()> {
    let case = Case::load(path)?;
    let mut setup = case.setup(path, size)?;
    if let Some(s) = steps {
        setup.steps = s;
    }
    if let Some(o) = output {
        setup.output.directory = o;
    }
    let c = &setup.config;
    let d = c.domain.dims;
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("case")
        .to_string();
    println!(
        "{name}: {} {} {}, {}x{}x{} cells ({} fluid), {} steps",
        c.lattice.name().to_uppercase(),
        c.precision.name(),
        streaming_name(c.streaming),
        d.nx,
        d.ny,
        d.nz,
        c.domain.fluid_cells(),
        setup.steps
    );
    println!(
        "physics: tau {:.4}, viscosity {:.5} (lattice units){}, wall Mach {:.3}",
        c.tau,
        setup.viscosity,
        setup
            .reynolds
            .map(|r| format!(", Reynolds {r:.1}"))
            .unwrap_or_default(),
        setup.mach
    );
    println!(
        "memory: {:.2} GiB of state ({} B per cell)",
        c.state_bytes() as f64 / (1u64 << 30) as f64,
        c.state_bytes() / d.cells()
    );
    let dir = &setup.output.directory;
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    let mut solver = lbm::build_solver(setup.config.clone(), backend)?;
    println!("backend: {}", describe(backend));

    let total = setup.steps;
    let every = if setup.output.every == 0 {
        total.max(1)
    } else {
        setup.output.every
    };
    let chunk = (total / 100).clamp(1, every);
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {msg}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let cells = d.cells() as f64;
    let start = Instant::now();
    let mut compute_secs = 0.0;
    while solver.time() < total {
        let n = chunk
            .min(total - solver.time())
            .min(every - solver.time() % every);
        let t0 = Instant::now();
        solver.step(n)?;
        solver.synchronize()?;
        let dt = t0.elapsed().as_secs_f64();
        compute_secs += dt;
        bar.inc(n);
        bar.set_message(format!("{:.0} MLUPS", cells * n as f64 / dt / 1e6));
        if solver.time() % every == 0 || solver.time() == total {
            let fields = solver.fields()?;
            if let Some(bad) = fields
                .rho
                .iter()
                .zip(&fields.u)
                .position(|(r, u)| !r.is_finite() || u.iter().any(|v| !v.is_finite()))
            {
                bar.abandon();
                return Err(Error::Diverged {
                    step: solver.time(),
                    cell: d.coords(bad as u32),
                });
            }
            let file = dir.join(format!("{name}_{:08}.vtk", solver.time()));
            vtk::write_fields(
                &file,
                &fields,
                &setup.config.domain.flags,
                &format!("{name} step {}", solver.time()),
            )?;
        }
    }
    bar.finish();
    let mlups = cells * total as f64 / compute_secs / 1e6;
    println!(
        "done: {total} steps in {:.1} s ({:.1} s stepping), {mlups:.1} MLUPS; fields in {}",
        start.elapsed().as_secs_f64(),
        compute_secs,
        dir.display()
    );
    Ok(())
}

pub fn describe(backend: BackendKind) -> String {
    match backend {
        BackendKind::Cpu => format!("CPU ({} threads)", rayon::current_num_threads()),
        BackendKind::Gpu(i) => {
            match lbm::host::gpu::GpuDevice::open(i, lbm::ptx::PTX).and_then(|d| d.info()) {
                Ok(info) => format!("GPU {i} ({})", info.name),
                Err(_) => format!("GPU {i}"),
            }
        }
    }
}
