//! Host side of the `lbm` solver: domains, the CPU and GPU backends, case
//! files and output. The GPU kernels themselves live in `kernels-gpu`.
#![warn(missing_docs)]

pub mod bench;
pub mod binary;
pub mod case;
pub mod cases;
pub mod cell_blocks;
pub mod checkpoint;
pub mod colloids;
pub mod cpu;
pub mod curved;
pub mod domain;
pub mod error;
pub mod fields;
pub mod files;
pub mod flowpath;
pub mod forces;
pub mod geometry;
pub mod gpu;
pub mod groups;
pub mod halo;
pub mod image;
mod launch;
pub mod levels;
pub mod multi_gpu;
pub mod nccl;
pub mod nccl_run;
pub mod overlap;
pub mod packing;
pub mod part_grid;
pub mod partition;
mod peer;
pub mod picture;
pub mod plan;
pub mod porous;
pub mod probe;
pub mod profile;
pub mod ptxas;
pub mod reference;
pub mod saved;
pub mod simulation;
pub mod solver;
pub mod sparse;
pub mod sponge;
pub mod stl;
pub mod thermal;
pub mod validation;
pub mod voxel;
pub mod vtk;

pub use error::{Error, Result};
pub use reference::Profile;
pub use solver::{BackendKind, Initial, LatticeKind, Named, Precision, Solver, SolverConfig};

use cpu::CpuSolver;
use gpu::{DeviceStorage, GpuDevice};
use kernels_gpu::{Lattice, Storage};
use multi_gpu::GpuSolver;
use plan::Schedule;

/// Which executor of the step plan runs a simulation: the ways a domain can
/// be stepped, for the conformance tests that run every case on each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExecutorKind {
    /// The whole domain on the CPU.
    Cpu,
    /// The CPU, split along z into up to this many partitions (overlapped order).
    CpuPartitions(u32),
    /// The whole domain on the GPU with this ordinal.
    Gpu(usize),
    /// The GPU with this ordinal, split along z into up to this many
    /// partitions with overlapped peer copies (the multi-GPU path on one device).
    GpuPartitions(usize, u32),
    /// A one-rank NCCL job on the GPU with this ordinal: the NCCL executor,
    /// its halos sent to itself through NCCL.
    Nccl(usize),
}

/// Builds a solver for `config` on executor `kind`, with the kernels `ptx`.
/// A split executor takes as many partitions as the domain has room for,
/// up to the number asked: a 2D lattice (no z-crossing populations) or a
/// domain too thin to split runs unsplit.
pub fn build_on(config: SolverConfig, kind: ExecutorKind, ptx: &str) -> Result<Box<dyn Solver>> {
    fn cpu_split<L: Lattice<Q>, const Q: usize, S: Storage>(c: SolverConfig, n: u32) -> Result<Box<dyn Solver>> {
        Ok(Box::new(CpuSolver::<L, Q, S>::partitioned(c, n, Schedule::Overlapped)?))
    }
    // A sparse grid's partitions own whole block layers.
    let room = |thickness: u32| match config.grid {
        _ if config.lattice.dimension() == 2 => 1,
        solver::GridLayout::Sparse { block } => {
            let (nz, edge) = (config.domain.dims.nz, block.edges(config.domain.dims.nz)[2]);
            if nz.is_multiple_of(edge) {
                nz / thickness.max(edge)
            } else {
                1
            }
        }
        solver::GridLayout::Dense => config.domain.dims.nz / thickness,
    };
    let (lattice, precision) = (config.lattice, config.precision);
    match kind {
        ExecutorKind::Cpu => build_solver(config, BackendKind::Cpu, ptx),
        ExecutorKind::Gpu(o) => build_solver(config, BackendKind::Gpu(o), ptx),
        ExecutorKind::CpuPartitions(n) => match n.min(room(partition::MIN_THICKNESS)) {
            0 | 1 => build_solver(config, BackendKind::Cpu, ptx),
            n => dispatch!(lattice, precision, cpu_split(config, n)),
        },
        ExecutorKind::GpuPartitions(o, n) => match n.min(room(multi_gpu::MIN_GPU_THICKNESS)) {
            0 | 1 => build_solver(config, BackendKind::Gpu(o), ptx),
            n => build_multi_gpu(config, &vec![o; n as usize], multi_gpu::Exchange::Disaggregated, ptx),
        },
        ExecutorKind::Nccl(o) if room(multi_gpu::MIN_GPU_THICKNESS) == 0 || config.lattice.dimension() == 2 => {
            build_solver(config, BackendKind::Gpu(o), ptx)
        }
        ExecutorKind::Nccl(o) => {
            static JOBS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let job = JOBS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let id = std::env::temp_dir().join(format!("lbm-nccl-{}-{job}", std::process::id()));
            let ranks = nccl::Ranks { rank: 0, world: 1, local: o };
            nccl_run::join(config, &[], ranks, &format!("file:{}", id.display()), ptx)?
                .ok_or_else(|| Error::Setup("rank 0 of a one-rank job has no solver".into()))
        }
    }
}

/// Builds a solver for `config` on `backend`; `ptx` is the kernels' PTX
/// (embedded by the `lbm` crate).
pub fn build_solver(config: SolverConfig, backend: BackendKind, ptx: &str) -> Result<Box<dyn Solver>> {
    fn cpu<L: Lattice<Q>, const Q: usize, S: Storage>(c: SolverConfig) -> Result<Box<dyn Solver>> {
        Ok(Box::new(CpuSolver::<L, Q, S>::new(c)?))
    }
    fn gpu<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(c: SolverConfig, d: GpuDevice) -> Result<Box<dyn Solver>> {
        Ok(Box::new(GpuSolver::<L, Q, S>::new(c, d)?))
    }
    let (lattice, precision) = (config.lattice, config.precision);
    match backend {
        BackendKind::Cpu => dispatch!(lattice, precision, cpu(config)),
        BackendKind::Gpu(ordinal) => {
            let device = GpuDevice::open(ordinal, ptx)?;
            dispatch!(lattice, precision, gpu(config, device))
        }
    }
}

/// Builds a solver for `config` split along z over the GPUs `ordinals` (one
/// partition per entry; repeats put several partitions on one GPU), with the
/// halo exchange `exchange`.
pub fn build_multi_gpu(
    config: SolverConfig,
    ordinals: &[usize],
    exchange: multi_gpu::Exchange,
    ptx: &str,
) -> Result<Box<dyn Solver>> {
    fn multi<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
        c: SolverConfig,
        d: &[GpuDevice],
        e: multi_gpu::Exchange,
    ) -> Result<Box<dyn Solver>> {
        Ok(Box::new(GpuSolver::<L, Q, S>::split(c, d, e, false)?))
    }
    let devices = ordinals.iter().map(|&o| GpuDevice::open(o, ptx)).collect::<Result<Vec<_>>>()?;
    let (lattice, precision) = (config.lattice, config.precision);
    dispatch!(lattice, precision, multi(config, &devices, exchange))
}
