//! The GPU backend on `cudarc`: loads the embedded PTX, allocates, initialises,
//! launches stream-ordered steps and reads fields back.

use crate::cpu::planes_to_fields;
use crate::error::{CudaContextExt, Error, Result};
use crate::fields::Fields;
use crate::solver::{
    mass_of, restore_storage, storage_bytes, BackendKind, CollisionParams, SavedState, Solver, SolverConfig,
};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg,
    ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use kernels_gpu::stream::FIELD_COMPONENTS;
use kernels_gpu::{F16s, Grid, KernelKind, Lattice, OpenParams, Real, StepParams, Storage, Streaming};
use std::marker::PhantomData;
use std::sync::Arc;

/// Threads per block of kernel `kind`: the measured default
/// [`kernels_gpu::kernels::block_size`], or `LBM_BLOCK_SIZE` for every
/// per-cell kernel (a tuning knob for benchmarks; a multiple of 32 up to 1024).
pub fn block_size(kind: KernelKind) -> u32 {
    std::env::var("LBM_BLOCK_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|b: &u32| *b >= 32 && *b <= 1024 && b.is_multiple_of(32))
        .unwrap_or(kernels_gpu::kernels::block_size(kind))
}

/// Resources and occupancy of a kernel as launched.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KernelReport {
    /// Registers per thread.
    pub registers: u32,
    /// Threads per block.
    pub block_size: u32,
    /// Resident threads per multiprocessor over the hardware maximum.
    pub occupancy: f64,
}

/// A kernel argument passed by value: the `#[repr(C)]` structs of `kernels-gpu`.
#[repr(transparent)]
#[derive(Clone, Copy)]
struct ByValue<P: Copy>(P);
// SAFETY: only instantiated with `#[repr(C)]` plain-data structs from
// `kernels_gpu::params` / `layout`, whose layout the PTX entry points share.
unsafe impl<P: Copy> DeviceRepr for ByValue<P> {}

/// Number of CUDA devices, or why none can be used.
pub fn device_count() -> Result<usize> {
    // SAFETY: only probes whether libcuda can be loaded.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(Error::NoGpu("the CUDA driver library (libcuda.so) was not found".into()));
    }
    let n = CudaContext::device_count().ctx("counting CUDA devices").map_err(|e| Error::NoGpu(e.to_string()))?;
    if n <= 0 {
        return Err(Error::NoGpu("the CUDA driver reports no devices".into()));
    }
    Ok(n as usize)
}

/// What `lbm info` reports about a device.
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceInfo {
    /// Ordinal.
    pub ordinal: usize,
    /// Marketing name.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Multiprocessors.
    pub multiprocessors: i32,
    /// Total memory, bytes.
    pub total_memory: usize,
    /// Free memory, bytes.
    pub free_memory: usize,
}

/// An open device with the kernels loaded.
#[derive(Clone)]
pub struct GpuDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    ordinal: usize,
}

impl GpuDevice {
    /// Opens device `ordinal` and loads `ptx` into it.
    pub fn open(ordinal: usize, ptx: &str) -> Result<Self> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::NoGpu(format!("device {ordinal} asked for, but only {count} device(s) exist")));
        }
        let ctx = CudaContext::new(ordinal).ctx(format!("opening device {ordinal}"))?;
        // Explicit synchronisation: cudarc's per-buffer event tracking only
        // adds launch overhead here.
        // SAFETY: work on a buffer from a second stream (the partitions'
        // boundary and copy streams) is ordered by events the callers record
        // (`crate::overlap`, `crate::multi_gpu`, `crate::nccl`).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let module = ctx.load_module(Ptx::from_src(ptx)).ctx(format!(
            "loading the kernels on device {ordinal} (is the PTX built for this GPU? see LBM_CUDA_ARCH)"
        ))?;
        Ok(Self { ctx, stream, module, ordinal })
    }

    /// The device's properties.
    pub fn info(&self) -> Result<DeviceInfo> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let (free, total) = self.ctx.mem_get_info().ctx("reading device memory")?;
        Ok(DeviceInfo {
            ordinal: self.ordinal,
            name: self.ctx.name().ctx("reading the device name")?,
            compute_capability: self.ctx.compute_capability().ctx("reading compute capability")?,
            multiprocessors: self
                .ctx
                .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .ctx("reading multiprocessor count")?,
            total_memory: total,
            free_memory: free,
        })
    }

    /// Looks a kernel up by its full name.
    pub fn function(&self, name: &str) -> Result<CudaFunction> {
        self.module.load_function(name).ctx(format!("looking up kernel `{name}` (is the embedded PTX out of date?)"))
    }

    /// The kernel `kind` for lattice `L` and precision `T`.
    pub fn kernel<L: Lattice<Q>, const Q: usize, S: Storage>(&self, kind: KernelKind) -> Result<CudaFunction> {
        self.function(&kernel_name(kind, L::NAME, S::NAME))
    }

    /// The CUDA context.
    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The device's main stream: uploads, read-backs and the single-domain
    /// kernels; partitions order their other streams against it with events.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Device-to-device copy bandwidth in bytes per second (read + write
    /// counted), from `reps` copies of a `bytes` buffer timed with events.
    pub fn copy_bandwidth(&self, bytes: usize, reps: usize) -> Result<f64> {
        let s = &self.stream;
        let src = s.alloc_zeros::<u8>(bytes).ctx("allocating the bandwidth test buffer")?;
        let mut dst = s.alloc_zeros::<u8>(bytes).ctx("allocating the bandwidth test buffer")?;
        s.memcpy_dtod(&src, &mut dst).ctx("warm-up copy")?;
        let start =
            self.ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).ctx("creating an event")?;
        let stop =
            self.ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT)).ctx("creating an event")?;
        start.record(s).ctx("recording an event")?;
        for _ in 0..reps {
            s.memcpy_dtod(&src, &mut dst).ctx("timed copy")?;
        }
        stop.record(s).ctx("recording an event")?;
        stop.synchronize().ctx("waiting for the copies")?;
        let ms = start.elapsed_ms(&stop).ctx("reading the event timer")? as f64;
        // Free the buffers before returning, so the caller sees the memory free.
        drop((src, dst));
        s.synchronize().ctx("freeing the bandwidth test buffers")?;
        Ok(2.0 * bytes as f64 * reps as f64 / (ms * 1e-3))
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Result<(usize, usize)> {
        self.ctx.mem_get_info().ctx("reading device memory")
    }
}

/// Full entry-point name of a kernel (see [`KernelKind::prefix`] and
/// [`kernels_gpu::for_each_instance`]).
pub fn kernel_name(kind: KernelKind, lattice: &str, precision: &str) -> String {
    format!("{}_{lattice}_{precision}", kind.prefix())
}

/// One thread per cell of `units` launch units of `grid` (layers of a box),
/// at most `block` threads per block, as the grid lays launches out
/// ([`Grid::launch`]).
fn launch_config(grid: &impl Grid, units: u32, block: u32) -> LaunchConfig {
    let shape = grid.launch(units, block);
    let [x, y, z] = shape.blocks;
    LaunchConfig { grid_dim: (x, y, z), block_dim: (shape.threads, 1, 1), shared_mem_bytes: 0 }
}

/// [`launch_config`] over the whole grid.
fn launch_all(grid: &impl Grid, block: u32) -> LaunchConfig {
    launch_config(grid, grid.units(), block)
}

/// A storage format together with the element type its device buffers hold
/// (cudarc's traits cover plain numbers, so [`F16s`] travels as `u16`).
pub trait DeviceStorage: Storage<Real: DeviceRepr + ValidAsZeroBits> {
    /// Device buffer element.
    type Elem: DeviceRepr + ValidAsZeroBits + Copy + Unpin + Send + Sync + 'static;
    /// Reinterprets an element read back from the device.
    fn from_elem(e: Self::Elem) -> Self;
    /// The element to send to the device.
    fn to_elem(self) -> Self::Elem;
}
impl DeviceStorage for f32 {
    type Elem = f32;
    fn from_elem(e: f32) -> Self {
        e
    }
    fn to_elem(self) -> f32 {
        self
    }
}
impl DeviceStorage for f64 {
    type Elem = f64;
    fn from_elem(e: f64) -> Self {
        e
    }
    fn to_elem(self) -> f64 {
        self
    }
}
impl DeviceStorage for F16s {
    type Elem = u16;
    fn from_elem(e: u16) -> Self {
        F16s(e)
    }
    fn to_elem(self) -> u16 {
        self.0
    }
}

/// A simulation on one GPU.
pub struct GpuSolver<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    config: SolverConfig,
    device: GpuDevice,
    f: CudaSlice<S::Elem>,
    /// Second buffer of the two-lattice scheme (empty for Esoteric Pull).
    f_next: Option<CudaSlice<S::Elem>>,
    flags: CudaSlice<u8>,
    step_kernel: CudaFunction,
    /// Threads per block of `step_kernel`.
    step_block: u32,
    /// The collision operator's parameters, passed to `step_kernel`.
    collision: CollisionParams<S::Real>,
    fields_kernel: CudaFunction,
    /// The open-boundary cells, updated by their own kernel after the bulk.
    open: Option<OpenGroup<S::Real>>,
    t: u64,
    _lattice: PhantomData<L>,
}

/// A boundary group: the list of open-boundary cells and their kernel.
struct OpenGroup<T: Copy> {
    cells: CudaSlice<u32>,
    count: u32,
    kernel: CudaFunction,
    params: ByValue<OpenParams<T>>,
}

/// Threads per block of the open-boundary kernel (a one-dimensional list).
const OPEN_BLOCK_SIZE: u32 = 128;

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> GpuSolver<L, Q, S> {
    /// Builds the solver on `device` and initialises the populations to equilibrium.
    pub fn new(config: SolverConfig, device: GpuDevice) -> Result<Self> {
        config.validate()?;
        let cells = config.domain.dims.cells();
        let info = device.info()?;
        let need = config.state_bytes() + FIELD_COMPONENTS * cells * std::mem::size_of::<S::Real>();
        if need > info.free_memory {
            return Err(Error::OutOfMemory {
                device: format!("GPU {} ({})", info.ordinal, info.name),
                need_gib: need as f64 / (1u64 << 30) as f64,
                free_gib: info.free_memory as f64 / (1u64 << 30) as f64,
            });
        }
        let s = device.stream().clone();
        let alloc = |what: &str| s.alloc_zeros::<S::Elem>(Q * cells).ctx(format!("allocating {what}"));
        let mut f = alloc("populations")?;
        let f_next = match config.streaming {
            Streaming::TwoLattice => Some(alloc("the second population buffer")?),
            Streaming::EsotericPull => None,
        };
        let flags = s.clone_htod(&config.kernel_flags()).ctx("uploading cell flags")?;
        let planes = s.clone_htod(&config.initial_planes::<S::Real>()).ctx("uploading initial fields")?;
        let init = device.kernel::<L, Q, S>(KernelKind::InitEquilibrium)?;
        let p = ByValue(config.step_params::<S::Real>(0));
        let scheme = config.streaming as u32;
        let mut launch = s.launch_builder(&init);
        launch.arg(&mut f).arg(&flags).arg(&planes).arg(&p).arg(&scheme);
        let cfg = launch_all(&config.domain.dims, block_size(KernelKind::InitEquilibrium));
        // SAFETY: argument list matches the `init_equilibrium_*` entry points.
        unsafe { launch.launch(cfg) }.ctx("launching initialisation")?;
        s.synchronize().ctx("initialising populations")?;
        let step_kind = KernelKind::StreamCollide(config.streaming, config.collision.kind());
        let collision = config.collision_params::<S::Real>();
        let step_kernel = device.kernel::<L, Q, S>(step_kind)?;
        let step_block = block_size(step_kind);
        let fields_kernel = device.kernel::<L, Q, S>(KernelKind::Fields)?;
        let open_cells = config.domain.open_cells();
        let open = if open_cells.is_empty() {
            None
        } else {
            Some(OpenGroup {
                cells: s.clone_htod(&open_cells).ctx("uploading the open-boundary cells")?,
                count: open_cells.len() as u32,
                kernel: device.kernel::<L, Q, S>(KernelKind::OpenBoundary)?,
                params: ByValue(config.open_params::<S::Real>()),
            })
        };
        Ok(Self {
            config,
            device,
            f,
            f_next,
            flags,
            step_kernel,
            step_block,
            collision,
            fields_kernel,
            open,
            t: 0,
            _lattice: PhantomData,
        })
    }

    /// The device this solver runs on.
    pub fn device(&self) -> &GpuDevice {
        &self.device
    }

    fn params(&self) -> ByValue<StepParams<S::Real>> {
        ByValue(self.config.step_params::<S::Real>(self.t))
    }

    /// Queues the stream-collide kernel of the current step for the layers
    /// `z0 .. z0 + layers`; the buffers are not swapped and the time not advanced.
    pub(crate) fn launch_layers(&mut self, z0: u32, layers: u32) -> Result<()> {
        let s = self.device.stream().clone();
        self.launch_layers_on(&s, z0, layers)
    }

    /// As [`Self::launch_layers`], on stream `s` of this solver's device
    /// (the caller orders it against the others).
    pub(crate) fn launch_layers_on(&mut self, s: &Arc<CudaStream>, z0: u32, layers: u32) -> Result<()> {
        if layers == 0 {
            return Ok(());
        }
        let cfg = launch_config(&self.config.domain.dims, layers, self.step_block);
        let p = self.params().0;
        // Declared before the launch, which borrows the one that is set.
        let (bgk, trt);
        let mut launch = s.launch_builder(&self.step_kernel);
        match self.f_next.as_mut() {
            None => launch.arg(&mut self.f).arg(&self.flags),
            Some(next) => launch.arg(&self.f).arg(next).arg(&self.flags),
        };
        match self.collision {
            CollisionParams::Bgk(c) => {
                bgk = ByValue(p.with_collision(c));
                launch.arg(&bgk)
            }
            CollisionParams::Trt(c) => {
                trt = ByValue(p.with_collision(c));
                launch.arg(&trt)
            }
        };
        launch.arg(&z0);
        // SAFETY: argument lists match the `stream_collide_*` entry points.
        unsafe { launch.launch(cfg) }.ctx("launching stream-collide")?;
        Ok(())
    }

    /// Queues the open-boundary group of the current step, if the domain has one.
    fn launch_open_boundaries(&mut self) -> Result<()> {
        let s = self.device.stream().clone();
        self.launch_open_boundaries_on(&s)
    }

    /// As [`Self::launch_open_boundaries`], on stream `s` of this solver's device.
    pub(crate) fn launch_open_boundaries_on(&mut self, s: &Arc<CudaStream>) -> Result<()> {
        let Some(open) = &self.open else { return Ok(()) };
        let p = self.params();
        let scheme = self.config.streaming as u32;
        let mut launch = s.launch_builder(&open.kernel);
        let null = 0u64;
        match self.f_next.as_mut() {
            None => launch.arg(&null).arg(&mut self.f),
            Some(next) => launch.arg(&self.f).arg(next),
        };
        launch.arg(&self.flags).arg(&open.cells).arg(&open.count).arg(&p).arg(&open.params).arg(&scheme);
        let grid = open.count.div_ceil(OPEN_BLOCK_SIZE);
        let cfg = LaunchConfig { block_dim: (OPEN_BLOCK_SIZE, 1, 1), grid_dim: (grid, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: argument list matches the `open_boundary_*` entry points.
        unsafe { launch.launch(cfg) }.ctx("launching the open-boundary kernel")?;
        Ok(())
    }

    /// Makes the buffer just written the current one (two-lattice pull).
    pub(crate) fn swap_buffers(&mut self) {
        if let Some(next) = self.f_next.as_mut() {
            std::mem::swap(&mut self.f, next);
        }
    }

    /// Advances the step counter by one (for a caller that queued the step itself).
    pub(crate) fn advance(&mut self) {
        self.t += 1;
    }

    /// Sets the step counter (after a caller restored the buffers itself).
    pub(crate) fn set_time(&mut self, t: u64) {
        self.t = t;
    }

    /// Device address of the current population buffer.
    pub(crate) fn buffer_address(&self) -> u64 {
        let (ptr, _sync) = self.f.device_ptr(self.device.stream());
        ptr
    }

    /// Keeps only the open-boundary cells of layers `1 ..= nz - 2`: a
    /// partition updates its own layers, and its halos mirror cells its
    /// neighbours update.
    pub(crate) fn own_layers_only(&mut self) -> Result<()> {
        let own = self.config.domain.own_open_cells();
        match (&mut self.open, own.is_empty()) {
            (None, _) => {}
            (Some(_), true) => self.open = None,
            (Some(open), false) => {
                open.cells = self.device.stream().clone_htod(&own).ctx("uploading the open-boundary cells")?;
                open.count = own.len() as u32;
            }
        }
        Ok(())
    }

    /// Uploads a whole population buffer (the layout of [`Self::read_populations`]).
    pub(crate) fn upload_populations(&mut self, host: &[S]) -> Result<()> {
        let elems: Vec<S::Elem> = host.iter().map(|&v| S::to_elem(v)).collect();
        self.device.stream().memcpy_htod(&elems, &mut self.f).ctx("uploading populations")
    }

    pub(crate) fn read_populations(&self) -> Result<Vec<S>> {
        let host = self.device.stream().clone_dtoh(&self.f).ctx("reading populations back")?;
        Ok(host.into_iter().map(S::from_elem).collect())
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Solver for GpuSolver<L, Q, S> {
    fn step(&mut self, steps: u64) -> Result<()> {
        let nz = self.config.domain.dims.nz;
        for _ in 0..steps {
            self.launch_layers(0, nz)?;
            self.launch_open_boundaries()?;
            self.swap_buffers();
            self.t += 1;
        }
        Ok(())
    }

    fn synchronize(&mut self) -> Result<()> {
        self.device.stream().synchronize().ctx("running time steps")
    }

    fn time(&self) -> u64 {
        self.t
    }

    fn fields(&mut self) -> Result<Fields> {
        let cells = self.config.domain.dims.cells();
        let s = self.device.stream().clone();
        let mut out = s.alloc_zeros::<S::Real>(FIELD_COMPONENTS * cells).ctx("allocating the fields buffer")?;
        let p = self.params();
        let scheme = self.config.streaming as u32;
        let mut launch = s.launch_builder(&self.fields_kernel);
        launch.arg(&self.f).arg(&self.flags).arg(&mut out).arg(&p).arg(&scheme);
        // SAFETY: argument list matches the `fields_*` entry points.
        let cfg = launch_all(&self.config.domain.dims, block_size(KernelKind::Fields));
        unsafe { launch.launch(cfg) }.ctx("launching the fields kernel")?;
        let host = s.clone_dtoh(&out).ctx("reading fields back")?;
        Ok(planes_to_fields(self.config.domain.dims, &host))
    }

    fn populations(&mut self) -> Result<Vec<f64>> {
        Ok(self.read_populations()?.iter().map(|v| v.load().to_f64()).collect())
    }

    fn forces(&mut self, objects: &[Vec<bool>]) -> Result<Vec<[f64; 3]>> {
        // Reads the populations back: fine at output intervals, not per step.
        let f = self.read_populations()?;
        Ok(crate::forces::momentum_exchange::<L, Q, S>(&self.config, &f, self.t, objects))
    }

    fn save_state(&mut self) -> Result<SavedState> {
        Ok(SavedState { time: self.t, populations: storage_bytes(&self.read_populations()?).to_vec() })
    }

    fn restore_state(&mut self, state: &SavedState) -> Result<()> {
        let mut host = vec![S::ZERO; self.f.len()];
        restore_storage(&mut host, &state.populations)?;
        self.upload_populations(&host)?;
        self.t = state.time;
        Ok(())
    }

    fn mass(&mut self) -> Result<f64> {
        Ok(mass_of::<L, Q, S>(&self.config, &self.read_populations()?, self.t))
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Gpu(self.device.ordinal)
    }

    fn kernel_report(&self) -> Option<KernelReport> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        // As launched: narrow boxes get narrower blocks.
        let block = launch_all(&self.config.domain.dims, self.step_block).block_dim.0;
        let registers = self.step_kernel.num_regs().ok()? as u32;
        let blocks = self.step_kernel.occupancy_max_active_blocks_per_multiprocessor(block, 0, None).ok()?;
        let max_threads = self.device.ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR).ok()?;
        Some(KernelReport { registers, block_size: block, occupancy: (blocks * block) as f64 / max_threads as f64 })
    }

    fn config(&self) -> &SolverConfig {
        &self.config
    }
}

/// Runs the layout-check kernel on a box of `dims` with `q` populations per
/// cell and returns what it wrote.
pub fn layout_probe(device: &GpuDevice, dims: kernels_gpu::Dims, q: usize) -> Result<Vec<u64>> {
    let s = device.stream();
    let f = device.function(kernels_gpu::kernels::LAYOUT_PROBE_KERNEL)?;
    let mut out = s.alloc_zeros::<u64>(q * dims.cells()).ctx("allocating the probe buffer")?;
    let d = ByValue(dims);
    let qq = q as u32;
    let mut launch = s.launch_builder(&f);
    launch.arg(&mut out).arg(&d).arg(&qq);
    // SAFETY: argument list matches the `layout_probe` entry point.
    unsafe { launch.launch(launch_all(&dims, kernels_gpu::kernels::DEFAULT_BLOCK_SIZE)) }
        .ctx("launching the layout probe")?;
    s.clone_dtoh(&out).ctx("reading the probe back")
}
