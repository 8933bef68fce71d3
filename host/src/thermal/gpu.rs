//! The thermal model on one GPU: the `d2q37_*` entry points, one stream.

use super::{initial_populations, interior, Executor, ThermalConfig, ThermalPhase};
use crate::error::{CudaContextExt, Result};
use crate::gpu::{launch_config, GpuDevice};
use crate::launch::ByValue;
use crate::solver::KernelReport;
use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};
use kernels_gpu::grid::Grid;
use kernels_gpu::thermal::step::HALO_COLUMNS;
use kernels_gpu::Real;
use std::ops::Range;

/// Threads per block along a column.
const ROW_THREADS: u32 = 128;
/// Threads per block of the one-dimensional kernels (halo, walls).
const LINE_THREADS: u32 = 128;

/// The kernels of one precision.
struct Kernels {
    propagate: CudaFunction,
    collide: CudaFunction,
    fused: CudaFunction,
    wall: CudaFunction,
    halo_x: CudaFunction,
    halo_y: CudaFunction,
}

/// A thermal box in device memory.
pub(super) struct GpuThermal<T: DeviceRepr> {
    config: ThermalConfig,
    device: GpuDevice,
    kernels: Kernels,
    f: CudaSlice<T>,
    next: CudaSlice<T>,
}

/// Name of precision `T` in kernel names.
fn precision<T>() -> &'static str {
    if std::mem::size_of::<T>() == 8 {
        "f64"
    } else {
        "f32"
    }
}

impl<T: Real + DeviceRepr + ValidAsZeroBits + Unpin> GpuThermal<T> {
    pub(super) fn new(
        config: &ThermalConfig,
        ordinal: usize,
        ptx: &str,
        initial: &(impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync),
    ) -> Result<Self> {
        let device = GpuDevice::open(ordinal, ptx)?;
        let name = |k: &str| device.function(&format!("d2q37_{k}_{}", precision::<T>()));
        let kernels = Kernels {
            propagate: name("propagate")?,
            collide: name("collide")?,
            fused: name("propagate_collide")?,
            wall: name("wall")?,
            halo_x: name("halo_x")?,
            halo_y: name("halo_y")?,
        };
        let host = initial_populations::<T>(config, initial);
        let s = device.stream();
        let f = s.clone_htod(&host).ctx("uploading the thermal populations")?;
        let next = s.clone_htod(&host).ctx("allocating the second thermal buffer")?;
        Ok(Self { config: config.clone(), device, kernels, f, next })
    }

    /// A launch over the rows `rows` of every interior column.
    fn rows(&self, kernel: &CudaFunction, rows: Range<u32>, in_place: bool) -> Result<()> {
        let p = ByValue(self.config.params::<T>(rows));
        let cfg = launch_config(&p.0.frame, p.0.frame.units(), ROW_THREADS);
        let first = 0u32;
        let mut launch = self.device.stream().launch_builder(kernel);
        launch.arg(&p).arg(&first);
        if in_place {
            launch.arg(&self.next);
        } else {
            launch.arg(&self.f).arg(&self.next);
        }
        // SAFETY: the argument lists of `d2q37_{propagate,propagate_collide}`
        // (params, first, src, dst) and `d2q37_collide` (params, first, f).
        unsafe { launch.launch(cfg) }.ctx("launching a thermal kernel")?;
        Ok(())
    }

    /// A one-dimensional launch of `n` threads (`sides` blocks along y).
    fn line(n: u32, sides: u32) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (n.div_ceil(LINE_THREADS), sides, 1),
            block_dim: (LINE_THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }
}

impl<T: Real + DeviceRepr + ValidAsZeroBits + Unpin> Executor for GpuThermal<T> {
    fn run(&mut self, phase: &ThermalPhase) -> Result<()> {
        let s = self.device.stream();
        let p = ByValue(self.config.params::<T>(0..self.config.ny));
        let frame = p.0.frame;
        match phase {
            ThermalPhase::Swap => std::mem::swap(&mut self.f, &mut self.next),
            ThermalPhase::Halo => {
                if self.config.walls.is_none() {
                    let mut launch = s.launch_builder(&self.kernels.halo_y);
                    launch.arg(&p).arg(&mut self.f);
                    // SAFETY: `d2q37_halo_y(params, f)`.
                    unsafe { launch.launch(Self::line(HALO_COLUMNS * frame.nx, 1)) }.ctx("launching the y halo")?;
                }
                let mut launch = s.launch_builder(&self.kernels.halo_x);
                launch.arg(&p).arg(&mut self.f);
                // SAFETY: `d2q37_halo_x(params, f)`.
                unsafe { launch.launch(Self::line(HALO_COLUMNS * frame.stride, 1)) }.ctx("launching the x halo")?;
            }
            ThermalPhase::Propagate(rows) => self.rows(&self.kernels.propagate, rows.clone(), false)?,
            ThermalPhase::Collide(rows) => self.rows(&self.kernels.collide, rows.clone(), true)?,
            ThermalPhase::PropagateCollide(rows) => self.rows(&self.kernels.fused, rows.clone(), false)?,
            ThermalPhase::Walls => {
                let (first, columns) = (0u32, frame.nx);
                let mut launch = s.launch_builder(&self.kernels.wall);
                launch.arg(&p).arg(&first).arg(&columns).arg(&self.f).arg(&mut self.next);
                // SAFETY: `d2q37_wall(params, first, columns, src, dst)`, two sides.
                unsafe { launch.launch(Self::line(columns, 2)) }.ctx("launching the walls")?;
            }
        }
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        self.device.stream().synchronize().ctx("waiting for the thermal steps")
    }

    fn kernel_report(&self) -> Option<KernelReport> {
        self.device.kernel_resources(&self.kernels.fused, ROW_THREADS)
    }

    fn peak_flops(&self) -> Result<Option<f64>> {
        self.device.peak_flops(std::mem::size_of::<T>() == 8)
    }

    fn populations(&self) -> Result<Vec<f64>> {
        let host = self.device.stream().clone_dtoh(&self.f).ctx("reading the thermal populations back")?;
        Ok(interior(&self.config.frame(), &host))
    }
}
