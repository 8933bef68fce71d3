//! Command-line interface.

mod bench;
mod binary;
mod colloids;
mod forces;
mod info;
mod names;
mod refined;
mod run;
mod thermal;

use clap::{Parser, Subcommand, ValueEnum};
use lbm::host::bench::BenchGeometry;
use lbm::host::groups::BoundaryGroups;
use lbm::host::levels::Fusion;
use lbm::host::solver::GridLayout;
use lbm::host::{LatticeKind, Named, Precision};
use lbm::kernels::{CollisionKind, Streaming};
use lbm::{BackendKind, Result};
use names::{exchange_names, exchanges, help, lattices_3d};
use std::path::PathBuf;

/// Lattice Boltzmann fluid solver (GPU kernels in Rust, CPU fallback).
#[derive(Parser, Debug)]
#[command(version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the bench's many options cost nothing to hold.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// Show the GPUs found, their memory and copy bandwidth, and the build settings.
    Info,
    /// Run a case file.
    Run {
        /// The case file (TOML), e.g. cases/cavity3d.toml.
        case: PathBuf,
        /// Where to run, overriding the case's `backend`: the GPU if there is one (auto), or force one.
        #[arg(long, value_enum)]
        backend: Option<BackendChoice>,
        /// CUDA device ordinal, overriding the case's `devices` (one GPU).
        #[arg(long)]
        device: Option<usize>,
        #[arg(long, help = format!("Halo exchange between GPUs ({}), overriding the case's", exchanges()))]
        exchange: Option<String>,
        /// Replace the size of every axis longer than one cell (boundary cells included).
        #[arg(long)]
        size: Option<u32>,
        /// Replace the number of time steps.
        #[arg(long)]
        steps: Option<u64>,
        /// Replace the output directory.
        #[arg(long)]
        output: Option<PathBuf>,
        /// Continue from the checkpoint in the output directory.
        #[arg(long)]
        resume: bool,
        /// Progress reporting: a bar, quiet, or JSON lines for scripts.
        #[arg(long, value_enum, default_value_t = run::Report::Bar)]
        report: run::Report,
        /// Run as one rank of an NCCL job (one process per GPU, started by
        /// mpirun, srun or scripts/nccl-local.sh): where ranks find rank 0's
        /// NCCL id, file:PATH (must not exist yet) or tcp:HOST:PORT. Rank 0
        /// writes every output; the case's backend and devices are ignored.
        #[arg(long)]
        rendezvous: Option<String>,
    },
    /// Run the built-in validation cases (Poiseuille, Taylor-Green, lid-driven
    /// cavities against Ghia et al. and Wong & Baker, the thermal model's
    /// Rayleigh-Taylor growth and Rayleigh-Benard onset, the binary fluid's
    /// planar interface and Laplace law, a colloid's Stokes drag, spin in
    /// shear and mass) and print their errors.
    Validate {
        #[command(flatten)]
        backend: BackendArgs,
        #[arg(long, default_value = Precision::F32.name(), help = help("Storage precision", Precision::all()))]
        precision: String,
        /// Also run the Re 1000 cavity (a few seconds on a GPU, minutes on a CPU).
        #[arg(long)]
        full: bool,
    },
    /// One partition per process over NCCL (launch one process per GPU with
    /// mpirun, srun or scripts/nccl-local.sh): times a 3D cavity, or the
    /// thermal D2Q37 box tiled one tile per rank, and checks, on rank 0, its
    /// populations against one GPU bit for bit.
    Nccl {
        /// Where ranks find rank 0's NCCL id: file:PATH (must not exist yet) or tcp:HOST:PORT.
        #[arg(long)]
        rendezvous: String,
        #[arg(long, default_value = LatticeKind::D3Q19.name(), help = help("Lattice", &lattices_3d()))]
        lattice: String,
        #[arg(long, default_value = Streaming::EsotericPull.name(), help = help("Streaming scheme", Streaming::all()))]
        streaming: String,
        #[arg(long, default_value = GridLayout::Dense.name(), help = help("Grid", GridLayout::all()))]
        grid: String,
        /// Cube side, cells (with d2q37: the square box's side).
        #[arg(long, default_value_t = 64)]
        size: u32,
        /// Time steps.
        #[arg(long, default_value_t = 1000)]
        steps: u64,
        /// isothermal (the lattice above), or d2q37, the thermal model
        /// between walls under gravity, one tile per rank.
        #[arg(long, default_value = "isothermal")]
        model: String,
        /// With d2q37: tiles along x and y, as many as ranks [default: the
        /// ranks side by side along x].
        #[arg(long, value_delimiter = ',')]
        tiles: Option<Vec<u32>>,
        /// With d2q37: f64 or f32.
        #[arg(long, default_value = "f64")]
        precision: String,
    },
    /// Measure the device copy bandwidth, then stream-collide MLUPS and the
    /// fraction of copy bandwidth for each lattice, storage, scheme and
    /// collision operator.
    Bench {
        #[command(flatten)]
        backend: BackendArgs,
        /// Cube sizes (cells per side) [default: 256,512, or none with
        /// --max-size, which then only reports the largest cubes].
        #[arg(long, value_delimiter = ',')]
        sizes: Option<Vec<u32>>,
        /// Time steps per measurement.
        #[arg(long, default_value_t = 200)]
        steps: u64,
        #[arg(long, value_delimiter = ',', default_values_t = names::names(&lattices_3d()),
              help = help("Lattices", LatticeKind::all()))]
        lattices: Vec<String>,
        #[arg(long, value_delimiter = ',', default_values_t = names::names(Precision::all()),
              help = help("Storage precisions", Precision::all()))]
        precisions: Vec<String>,
        #[arg(long, value_delimiter = ',', default_values_t = names::names(Streaming::all()),
              help = help("Streaming schemes", Streaming::all()))]
        streaming: Vec<String>,
        #[arg(long, value_delimiter = ',', default_values_t = names::names(&[CollisionKind::Bgk]),
              help = help("Collision operators", CollisionKind::all()))]
        collisions: Vec<String>,
        #[arg(long, value_delimiter = ',', default_values_t = names::names(&[GridLayout::Dense]),
              help = format!("{}, or multires: a refined cavity (GPU, 3D lattices; see --levels, --fusion)",
                             help("Grid layouts (sparse4, sparse8: blocks of 4^3 or 8^3 cells; sparse32x4: 32 x 4 x 4)", GridLayout::all())))]
        grids: Vec<String>,
        #[arg(long, value_delimiter = ',', value_name = "VARIANTS", default_values_t = names::names(&[BoundaryGroups::Lists]),
              help = help("Boundary-group variants (memory, bitmask: sparse grids only)", BoundaryGroups::all()))]
        boundary_groups: Vec<String>,
        /// What fills the cube: cavity (walls, a lid), periodic (no walls),
        /// bed (packed spheres) or tunnel (a sphere, open ends).
        #[arg(long, value_delimiter = ',', default_values_t = [BenchGeometry::Cavity.name().to_string()])]
        geometry: Vec<String>,
        /// Also write the results as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Report the largest cube that fits the device for each storage type.
        #[arg(long)]
        max_size: bool,
        /// With --grids multires: the numbers of levels of the refined cavity
        /// (level k covers the middle 1/2^k of the cube along each axis).
        #[arg(long, value_delimiter = ',', default_values_t = [3, 4])]
        levels: Vec<u32>,
        #[arg(long, value_delimiter = ',', default_values_t = names::names(Fusion::all()),
              help = help("With --grids multires: refined steps (split: the unfused baseline, two-lattice f32/f64 only)", Fusion::all()))]
        fusion: Vec<String>,
        /// Multi-GPU scaling instead: GPU counts to run each size on (3D
        /// lattices, f32, Esoteric Pull, BGK), e.g. 1,2,4; devices 0 .. N-1.
        /// With --grids multires: the refined cases with their levels split
        /// over those GPUs.
        #[arg(long, value_delimiter = ',')]
        gpus: Vec<usize>,
        #[arg(long, value_delimiter = ',', default_values_t = exchange_names(),
              help = format!("Halo exchanges to compare with --gpus ({})", exchanges()))]
        exchange: Vec<String>,
        /// With --gpus: weak scaling, each size per GPU (the domain grows along z).
        #[arg(long)]
        weak: bool,
        /// The model: isothermal (the lattices above), or d2q37, the
        /// thermal model, on square boxes of the --sizes (default
        /// 1024,2048,4096,8192) in f64 and f32; with --gpus, tiled over
        /// that many GPUs along x, along y and in a mesh (default size 4096,
        /// the whole box, or per GPU with --weak); or binary-fluid, the
        /// symmetric binary fluid on cubes of the --sizes (default 256,512)
        /// of the --lattices, f64 and f32, bgk or mrt (--collisions); with
        /// --gpus, split along z over that many GPUs (default size 512,
        /// MRT, halo copies overlapped and not); or
        /// colloids, 1,000 free colloids of radius 4 in cubes of the
        /// --sizes (default 256), each pass timed against the fluid step;
        /// with --gpus, whole steps split along z over that many GPUs.
        #[arg(long, default_value = "isothermal")]
        model: String,
    },
}

#[derive(clap::Args, Debug, Clone, Copy)]
struct BackendArgs {
    /// Where to run: the GPU if there is one (auto), or force one.
    #[arg(long, value_enum, default_value_t = BackendChoice::Auto)]
    backend: BackendChoice,
    /// CUDA device ordinal for the GPU backend.
    #[arg(long, default_value_t = 0)]
    device: usize,
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    Auto,
    Cpu,
    Gpu,
}

impl BackendArgs {
    fn resolve(self) -> Result<BackendKind> {
        self.backend.resolve(self.device)
    }
}

impl BackendChoice {
    /// The backend to run on, with GPU `device` when it is a GPU.
    fn resolve(self, device: usize) -> Result<BackendKind> {
        Ok(match self {
            BackendChoice::Cpu => BackendKind::Cpu,
            BackendChoice::Gpu => {
                lbm::host::gpu::device_count()?;
                BackendKind::Gpu(device)
            }
            BackendChoice::Auto => match lbm::default_backend() {
                BackendKind::Gpu(_) => BackendKind::Gpu(device),
                cpu => cpu,
            },
        })
    }
}

impl From<lbm::host::case::BackendRequest> for BackendChoice {
    fn from(r: lbm::host::case::BackendRequest) -> Self {
        use lbm::host::case::BackendRequest;
        match r {
            BackendRequest::Auto => BackendChoice::Auto,
            BackendRequest::Cpu => BackendChoice::Cpu,
            BackendRequest::Gpu => BackendChoice::Gpu,
        }
    }
}

/// One line naming the backend and its device.
pub fn describe_backend(backend: BackendKind) -> String {
    match backend {
        BackendKind::Cpu => format!("CPU ({} threads)", rayon::current_num_threads()),
        BackendKind::Gpu(i) => match lbm::host::gpu::GpuDevice::open(i, &lbm::ptx::active()).and_then(|d| d.info()) {
            Ok(info) => format!("GPU {i} ({})", info.name),
            Err(_) => format!("GPU {i}"),
        },
    }
}

/// Where a case that may split its box along z over the GPUs `gpus` runs
/// on `backend` (the first of them, or the CPU), and how to say so.
pub fn split_devices(gpus: Vec<usize>, backend: BackendKind) -> (lbm::host::binary::Devices, String) {
    use lbm::host::binary::Devices;
    match backend {
        BackendKind::Cpu => (Devices::Cpu(1), describe_backend(backend)),
        BackendKind::Gpu(_) if gpus.len() > 1 => {
            let on = format!("{} GPUs {gpus:?}, split along z", gpus.len());
            (Devices::Gpus { ordinals: gpus, overlap: true }, on)
        }
        BackendKind::Gpu(_) => (Devices::Gpus { ordinals: gpus, overlap: true }, describe_backend(backend)),
    }
}

/// Runs a parsed command line.
pub fn execute(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Info => info::info(),
        Command::Run { case, backend, device, exchange, size, steps, output, resume, report, rendezvous } => {
            let exchange = exchange.map(|e| lbm::host::multi_gpu::Exchange::from_name(&e)).transpose()?;
            let o = run::RunOptions { backend, device, exchange, size, steps, output, resume, report, rendezvous };
            match run::run(&case, o)? {
                run::Outcome::Finished => Ok(()),
                run::Outcome::Interrupted => std::process::exit(130),
            }
        }
        Command::Validate { backend, precision, full } => {
            let precision = Precision::from_name(&precision)?;
            let backend = backend.resolve()?;
            println!("validating on {}", describe_backend(backend));
            let mut checks = lbm::host::validation::suite(&|c, b| lbm::build_solver(c, b), backend, precision, full)?;
            checks.extend(lbm::host::thermal::validation::checks(backend, &lbm::ptx::active())?);
            checks.extend(lbm::host::binary::validation::checks(backend, &lbm::ptx::active())?);
            checks.extend(lbm::host::colloids::validation::checks(backend, &lbm::ptx::active())?);
            println!("{:<58} {:>11}  {:<10} result", "case", "measured", "criterion");
            for c in &checks {
                println!(
                    "{:<58} {:>11.4e}  {:<10} {}",
                    c.case,
                    c.value,
                    c.criterion,
                    if c.pass { "pass" } else { "FAIL" }
                );
            }
            let failed = checks.iter().filter(|c| !c.pass).count();
            if failed > 0 {
                return Err(lbm::Error::Setup(format!("{failed} validation check(s) failed")));
            }
            println!("all {} checks passed", checks.len());
            Ok(())
        }
        Command::Nccl { rendezvous, model, tiles, precision, size, steps, .. }
            if model.eq_ignore_ascii_case("d2q37") =>
        {
            let precision = names::parse(&[precision], &[Precision::F64, Precision::F32])?[0];
            let ranks = run::launcher_ranks()?;
            thermal::nccl(ranks, &rendezvous, tiles, precision, size, steps)
        }
        Command::Nccl { rendezvous, lattice, streaming, grid, size, steps, model, .. } => {
            if !model.eq_ignore_ascii_case("isothermal") {
                return Err(lbm::Error::UnknownName {
                    what: "model",
                    name: model,
                    choices: "isothermal, d2q37".into(),
                });
            }
            // Names first: a typo is reported before the launcher is looked for.
            let lattice = LatticeKind::from_name_in(&lattice, &lattices_3d())?;
            let streaming = lbm::host::case::parse_streaming(&streaming)?;
            let grid = GridLayout::from_name(&grid)?;
            let ranks = lbm::host::nccl::Ranks::from_env()?.ok_or_else(|| {
                lbm::Error::Setup(
                    "no launcher variables: start one process per GPU with mpirun, srun or scripts/nccl-local.sh \
                     (or set RANK, WORLD_SIZE and LOCAL_RANK)"
                        .into(),
                )
            })?;
            let mut config = lbm::host::validation::cavity_config(
                lattice,
                Precision::F32,
                streaming,
                size.saturating_sub(2).max(1),
                100.0,
                0.08,
            )?;
            config.force = [2e-5, 1e-5, -1e-5];
            config.grid = grid;
            let report = lbm::host::nccl::run_and_check(config, ranks, &rendezvous, steps, &lbm::ptx::active())?;
            if let Some(r) = report {
                let bytes = lbm::host::bench::bytes_per_cell_update(lattice, Precision::F32) as f64;
                let what = format!("{} {} {size}^3", lattice.name(), streaming.name());
                run::print_nccl_report(&r, &what, steps, bytes, "cell")?;
            }
            Ok(())
        }
        Command::Bench {
            backend,
            sizes,
            steps,
            lattices,
            precisions,
            streaming,
            collisions,
            grids,
            boundary_groups,
            geometry,
            json,
            max_size,
            levels,
            fusion,
            gpus,
            exchange,
            weak,
            model,
        } => {
            if model.eq_ignore_ascii_case("d2q37") {
                let precisions = names::parse(&precisions, Precision::all())?;
                if !gpus.is_empty() {
                    let sizes = sizes.unwrap_or_else(|| vec![4096]);
                    return bench::thermal_scaling(&sizes, &precisions, &gpus, weak, steps, json);
                }
                let sizes = sizes.unwrap_or_else(|| vec![1024, 2048, 4096, 8192]);
                return bench::thermal(backend.resolve()?, &sizes, &precisions, steps, json);
            }
            if model.eq_ignore_ascii_case(lbm::host::binary::case::MODEL) {
                let precisions = names::parse(&precisions, Precision::all())?;
                if !gpus.is_empty() {
                    let lattices = names::parse(&lattices, &lattices_3d())?;
                    let sizes = sizes.unwrap_or_else(|| vec![512]);
                    return bench::binary_scaling(&sizes, &lattices, &precisions, &gpus, steps, json);
                }
                let lattices = names::parse(&lattices, LatticeKind::all())?;
                let collisions = names::parse(&collisions, CollisionKind::all())?;
                let sizes = sizes.unwrap_or_else(|| vec![256, 512]);
                return bench::binary(backend.resolve()?, &sizes, &lattices, &precisions, &collisions, steps, json);
            }
            if model.eq_ignore_ascii_case("colloids") {
                let lattices = names::parse(&lattices, &lattices_3d())?;
                let precisions = names::parse(&precisions, Precision::all())?;
                if !gpus.is_empty() {
                    let sizes = sizes.unwrap_or_else(|| vec![256]);
                    return bench::colloids_scaling(&sizes, &lattices, &precisions, &gpus, steps, json);
                }
                let sizes = sizes.unwrap_or_else(|| vec![256]);
                return bench::colloids(backend.resolve()?, &sizes, &lattices, &precisions, steps, json);
            }
            if !model.eq_ignore_ascii_case("isothermal") {
                return Err(lbm::Error::UnknownName {
                    what: "model",
                    name: model,
                    choices: "isothermal, d2q37, binary-fluid, colloids".into(),
                });
            }
            // Scaling splits along z, so it takes the 3D lattices only.
            let three_d = lattices_3d();
            let offered = if gpus.is_empty() { LatticeKind::all() } else { &three_d };
            let lattices = names::parse(&lattices, offered)?;
            let precisions = names::parse(&precisions, Precision::all())?;
            let streaming =
                streaming.iter().map(|s| lbm::host::case::parse_streaming(s)).collect::<Result<Vec<_>>>()?;
            let collisions = names::parse(&collisions, CollisionKind::all())?;
            let multires = grids.iter().any(|g| g.eq_ignore_ascii_case(bench::MULTIRES));
            let grids: Vec<String> = grids.into_iter().filter(|g| !g.eq_ignore_ascii_case(bench::MULTIRES)).collect();
            let grids = names::parse(&grids, GridLayout::all())?;
            let fusion = names::parse(&fusion, Fusion::all())?;
            if multires && levels.iter().any(|&l| !(2..=lbm::host::levels::MAX_LEVELS).contains(&l)) {
                return Err(lbm::Error::Setup(format!(
                    "--levels takes 2 to {} levels for the refined cavity",
                    lbm::host::levels::MAX_LEVELS
                )));
            }
            let groups = names::parse(&boundary_groups, BoundaryGroups::all())?;
            let geometries = geometry.iter().map(|g| BenchGeometry::from_name(g)).collect::<Result<Vec<_>>>()?;
            let sizes = sizes.unwrap_or_else(|| if max_size && gpus.is_empty() { vec![] } else { vec![256, 512] });
            if sizes.iter().any(|&n| n < 3) {
                return Err(lbm::Error::Setup("bench sizes must be at least 3".into()));
            }
            let o = bench::BenchOptions {
                sizes,
                steps,
                lattices,
                precisions,
                streaming,
                collisions,
                grids,
                groups,
                geometries,
                json,
                max_size,
                multires: multires.then_some(bench::Multires { levels, fusion }),
            };
            if gpus.is_empty() {
                return bench::bench(backend.resolve()?, o);
            }
            if multires {
                return bench::scaling_multires(o, &gpus);
            }
            if o.groups.iter().any(|&g| g != BoundaryGroups::Lists) {
                return Err(lbm::Error::Setup(
                    "--boundary-groups applies to one-GPU benchmarks: --gpus measures the lists variant".into(),
                ));
            }
            if o.collisions.iter().any(|&c| c != CollisionKind::Bgk) {
                return Err(lbm::Error::Setup(
                    "--collisions applies to one-GPU benchmarks: --gpus measures BGK only".into(),
                ));
            }
            let exchange =
                exchange.iter().map(|e| lbm::host::multi_gpu::Exchange::from_name(e)).collect::<Result<Vec<_>>>()?;
            bench::scaling(bench::ScalingOptions {
                sizes: o.sizes,
                steps,
                lattices: o.lattices,
                gpus,
                exchange,
                grids: o.grids,
                weak,
                json: o.json,
            })
        }
    }
}
