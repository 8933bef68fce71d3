//! Command-line interface.

mod bench;
mod info;
mod run;

use clap::{Parser, Subcommand, ValueEnum};
use lbm::{BackendKind, Result};
use std::path::PathBuf;

/// Lattice Boltzmann fluid solver (GPU kernels in Rust, CPU fallback).
#[derive(Parser, Debug)]
#[command(version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Show the GPUs found, their memory and copy bandwidth, and the build settings.
    Info,
    /// Run a case file.
    Run {
        /// The case file (TOML), e.g. cases/cavity3d.toml.
        case: PathBuf,
        #[command(flatten)]
        backend: BackendArgs,
        /// Replace the size of every axis longer than one cell (boundary cells included).
        #[arg(long)]
        size: Option<u32>,
        /// Replace the number of time steps.
        #[arg(long)]
        steps: Option<u64>,
        /// Replace the output directory.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Measure the device copy bandwidth and the stream-collide MLUPS.
    Bench {
        #[command(flatten)]
        backend: BackendArgs,
        /// Cube sizes to measure.
        #[arg(long, value_delimiter = ',', default_values_t = [128u32, 256])]
        sizes: Vec<u32>,
        /// Time steps per measurement.
        #[arg(long, default_value_t = 200)]
        steps: u64,
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
enum BackendChoice {
    Auto,
    Cpu,
    Gpu,
}

impl BackendArgs {
    fn resolve(self) -> Result<BackendKind> {
        Ok(match self.backend {
            BackendChoice::Cpu => BackendKind::Cpu,
            BackendChoice::Gpu => {
                lbm::host::gpu::device_count()?;
                BackendKind::Gpu(self.device)
            }
            BackendChoice::Auto => match lbm::default_backend() {
                BackendKind::Gpu(_) => BackendKind::Gpu(self.device),
                cpu => cpu,
            },
        })
    }
}

/// Runs a parsed command line.
pub fn execute(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Info => info::info(),
        Command::Run {
            case,
            backend,
            size,
            steps,
            output,
        } => run::run(&case, backend.resolve()?, size, steps, output),
        Command::Bench {
            backend,
            sizes,
            steps,
        } => bench::bench(backend.resolve()?, &sizes, steps),
    }
}
