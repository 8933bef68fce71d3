//! Host side of the `lbm` solver: domains, the CPU and GPU backends, case
//! files and output. The GPU kernels themselves live in `kernels-gpu`.
#![warn(missing_docs)]

pub mod bench;
pub mod case;
pub mod checkpoint;
pub mod cpu;
pub mod domain;
pub mod error;
pub mod fields;
pub mod files;
pub mod forces;
pub mod geometry;
pub mod gpu;
pub mod halo;
pub mod multi_gpu;
pub mod nccl;
pub mod nccl_run;
pub mod overlap;
pub mod partition;
pub mod picture;
pub mod probe;
pub mod ptxas;
pub mod reference;
pub mod solver;
pub mod stl;
pub mod validation;
pub mod voxel;
pub mod vtk;

pub use error::{Error, Result};
pub use reference::Profile;
pub use solver::{BackendKind, Initial, LatticeKind, Named, Precision, Solver, SolverConfig};

use cpu::CpuSolver;
use gpu::{DeviceStorage, GpuDevice, GpuSolver};
use kernels_gpu::{Lattice, Storage};

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
        Ok(Box::new(multi_gpu::MultiGpu::<L, Q, S>::new(c, d, e, false)?))
    }
    let devices = ordinals.iter().map(|&o| GpuDevice::open(o, ptx)).collect::<Result<Vec<_>>>()?;
    let (lattice, precision) = (config.lattice, config.precision);
    dispatch!(lattice, precision, multi(config, &devices, exchange))
}
