//! The GPU backend on `cudarc`: a device with the kernels loaded, and one
//! partition's buffers, boundary groups and launches
//! (`GpuPart`); the executors that step partitions live in
//! [`crate::multi_gpu`] (the GPUs of one process) and [`crate::nccl`].

use crate::cell_blocks::CellBlocks;
use crate::curved::CurvedTables;
use crate::domain;
use crate::error::{CudaContextExt, Error, Result};
use crate::fields::PartFields;
use crate::forces::momentum_exchange;
use crate::groups::{passes, BoundaryGroups, OpenTables, Pass};
use crate::launch::{self, Buffers};
use crate::part_grid::{with_grid, ListRegions, PartGrid};
use crate::partition::{local_config, own_values, Slab};
use crate::plan::Region;
use crate::solver::{mass_of, CollisionParams, KernelReport, SavedPart, SavedState, SolverConfig};
use crate::sparse::SparseLayout;
use crate::sponge::SpongeTables;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig,
    ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;
use kernels_gpu::curved::CurvedCells;
use kernels_gpu::grid::LaunchShape;
use kernels_gpu::groups::OpenCells;
use kernels_gpu::sparse::SparseTables;
use kernels_gpu::sponge::SpongeCells;
use kernels_gpu::stream::FIELD_COMPONENTS;
use kernels_gpu::{F16s, Grid, GridKind, KernelKind, Lattice, OpenBoundary, Real, Storage, Streaming};
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::{Arc, Mutex};

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
    /// Opens device `ordinal` with the kernels of `ptx` loaded. A process
    /// loads a PTX once per device and hands out that device again: loading
    /// is what takes the time (the driver compiles tens of megabytes of PTX,
    /// or reads them back from its cache), and a process may build many
    /// solvers (`lbm bench`, `lbm validate`, the tests). Its solvers share
    /// the context and its default stream, as before.
    pub fn open(ordinal: usize, ptx: &str) -> Result<Self> {
        /// The devices opened so far, with the PTX each loaded.
        static OPENED: Mutex<Vec<(Box<str>, GpuDevice)>> = Mutex::new(Vec::new());
        let mut opened = OPENED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((_, device)) = opened.iter().find(|(p, d)| d.ordinal == ordinal && **p == *ptx) {
            return Ok(device.clone());
        }
        let device = Self::load(ordinal, ptx)?;
        opened.push((ptx.into(), device.clone()));
        Ok(device)
    }

    fn load(ordinal: usize, ptx: &str) -> Result<Self> {
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
        // Developer knob: `LBM_CUBIN_FILE`, a cubin `ptxas` built from this
        // PTX, spares a fresh machine the driver's compilation (minutes).
        let image = match std::env::var_os("LBM_CUBIN_FILE") {
            None => Ptx::from_src(ptx),
            Some(path) => {
                Ptx::from_binary(std::fs::read(&path).map_err(|source| Error::Io { path: path.into(), source })?)
            }
        };
        let module = ctx.load_module(image).ctx(format!(
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

    /// The kernel `kind` on grid `grid` for lattice `L` and precision `T`.
    pub fn kernel<L: Lattice<Q>, const Q: usize, S: Storage>(
        &self,
        kind: KernelKind,
        grid: GridKind,
    ) -> Result<CudaFunction> {
        self.function(&kernel_name(kind, grid, L::NAME, S::NAME))
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

    /// Peak floating-point rate in FLOP/s (a fused multiply-add is two) of
    /// the device's vector units in f64 (`double`) or f32, from its
    /// multiprocessors, boost clock and the FMA units per multiprocessor of
    /// its architecture; `None` for an architecture not in the table.
    pub fn peak_flops(&self, double: bool) -> Result<Option<f64>> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let attr = |a| self.ctx.attribute(a).ctx("reading a device attribute");
        let sms = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as f64;
        let khz = attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as f64;
        // FMA units per multiprocessor (f64, f32), from NVIDIA's
        // architecture whitepapers (A100: 32, 64; H100: 64, 128).
        let units = match self.ctx.compute_capability().ctx("reading compute capability")? {
            (8, 0) => Some((32.0, 64.0)),
            (9, 0) => Some((64.0, 128.0)),
            _ => None,
        };
        Ok(units.map(|(d, s)| 2.0 * sms * khz * 1e3 * if double { d } else { s }))
    }

    /// Registers, occupancy and local memory of `kernel` launched in blocks
    /// of `block` threads (`None` where the driver does not say).
    pub(crate) fn kernel_resources(&self, kernel: &CudaFunction, block: u32) -> Option<KernelReport> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        use cudarc::driver::sys::CUfunction_attribute as F;
        let max_threads = self.ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR).ok()?;
        let blocks = kernel.occupancy_max_active_blocks_per_multiprocessor(block, 0, None).ok()?;
        Some(KernelReport {
            registers: kernel.num_regs().ok()? as u32,
            block_size: block,
            occupancy: (blocks * block) as f64 / max_threads as f64,
            local_bytes: kernel.get_attribute(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES).ok()? as u32,
            with_open: None,
        })
    }

    /// Free and total device memory in bytes.
    pub fn memory(&self) -> Result<(usize, usize)> {
        self.ctx.mem_get_info().ctx("reading device memory")
    }
}

/// Full entry-point name of a kernel (see [`KernelKind::prefix`] and
/// [`kernels_gpu::for_each_instance`]).
pub fn kernel_name(kind: KernelKind, grid: GridKind, lattice: &str, precision: &str) -> String {
    format!("{}_{}{lattice}_{precision}", kind.prefix(), grid.infix())
}

/// One thread per cell of `units` launch units of `grid` (layers of a box),
/// at most `block` threads per block, as the grid lays launches out
/// ([`Grid::launch`]).
pub(crate) fn launch_config(grid: &impl Grid, units: u32, block: u32) -> LaunchConfig {
    config_of(grid.launch(units, block))
}

/// The launch configuration of `shape`.
fn config_of(shape: LaunchShape) -> LaunchConfig {
    let [x, y, z] = shape.blocks;
    LaunchConfig { grid_dim: (x, y, z), block_dim: (shape.threads, 1, 1), shared_mem_bytes: 0 }
}

/// [`launch_config`] over the whole grid.
pub(crate) fn launch_all(grid: &impl Grid, block: u32) -> LaunchConfig {
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

/// One partition on a GPU: its configuration, buffers, kernels and
/// boundary groups. Launches are queued on the stream the caller names;
/// the executors order the streams.
pub(crate) struct GpuPart<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    /// The partition's configuration (the whole one when unsplit).
    config: SolverConfig,
    slab: Slab,
    device: GpuDevice,
    f: CudaSlice<S::Elem>,
    /// Second buffer of the two-lattice scheme (none for Esoteric Pull).
    f_next: Option<CudaSlice<S::Elem>>,
    /// Flag bytes in storage order.
    flags: CudaSlice<u8>,
    /// The same flag bytes on the host, for read-backs computed there.
    host_flags: Vec<u8>,
    /// The grid, as the host sees it.
    grid: PartGrid,
    /// A sparse grid's tables on the device, and the grid referring to them.
    sparse: Option<DeviceSparse>,
    step_kernel: CudaFunction,
    /// Threads per block of `step_kernel`.
    step_block: u32,
    /// The collision operator's parameters, passed to `step_kernel`.
    collision: CollisionParams<S::Real>,
    fields_kernel: CudaFunction,
    /// The open-boundary groups (own cells), updated after the bulk.
    open: Vec<OpenGroup<S::Real>>,
    /// The kernel that updates open cells with the fluid ones (every
    /// boundary-group variant but `lists`).
    with_open: Option<OpenKernel<S::Real>>,
    /// Where that kernel runs beside the bulk one (`memory`, `bitmask`).
    beside: Option<Beside>,
    /// The curved-wall group.
    curved: Option<DeviceCurved<S::Real>>,
    /// The sponge bands, and their kernel (loaded when there is one).
    sponges: Vec<DeviceSponge<S::Real>>,
    sponge_kernel: Option<CudaFunction>,
    /// Steps ended.
    t: u64,
    _lattice: PhantomData<L>,
}

/// A block-sparse grid's tables in device memory, and the kernel argument
/// that refers to them (valid while the tables live).
pub(crate) struct DeviceSparse {
    _neighbour: CudaSlice<u32>,
    _origin: CudaSlice<u32>,
    _seed: CudaSlice<u32>,
    _mask: Option<CudaSlice<u32>>,
    pub(crate) tables: SparseTables,
}

impl DeviceSparse {
    /// Uploads `layout`'s tables.
    pub(crate) fn upload(s: &Arc<CudaStream>, layout: &SparseLayout) -> Result<Self> {
        let neighbour = s.clone_htod(&layout.neighbour).ctx("uploading the neighbour-block table")?;
        let flat: Vec<u32> = layout.origin.iter().flatten().copied().collect();
        let origin = s.clone_htod(&flat).ctx("uploading the block origins")?;
        let seed = s.clone_htod(&layout.seed).ctx("uploading the block seeds")?;
        let mask = layout
            .mask
            .as_ref()
            .map(|m| s.clone_htod(&m.words))
            .transpose()
            .ctx("uploading the boundary-block bitmask")?;
        let (n, _) = neighbour.device_ptr(s);
        let (o, _) = origin.device_ptr(s);
        let (r, _) = seed.device_ptr(s);
        let m = mask.as_ref().map(|m| m.device_ptr(s).0 as *const u32);
        // SAFETY: the device tables are copies of `layout`'s and live as long as these tables do.
        let tables = unsafe { layout.tables_at(n as *const u32, o as *const [u32; 3], r as *const u32, m) };
        Ok(Self { _neighbour: neighbour, _origin: origin, _seed: seed, _mask: mask, tables })
    }
}

/// The kernel that updates open cells too, and the tables it reads.
struct OpenKernel<T> {
    kernel: CudaFunction,
    tables: DeviceOpenCells<T>,
}

/// A second stream for the kernel that updates open cells too, when the
/// bulk kernel updates the other cells of the same step (`memory`,
/// `bitmask`): the two update different cells, and queued one after the
/// other the second waited for the first one's last thread blocks and
/// launch. High priority, so that the fewer, heavier thread blocks start
/// first and the bulk kernel's fill in around them.
struct Beside {
    stream: Arc<CudaStream>,
    /// Recorded on the caller's stream before the step's kernels.
    ready: CudaEvent,
    /// Recorded on `stream` after the step's open cells.
    done: CudaEvent,
}

impl Beside {
    fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        let (_, highest) = cudarc::driver::result::stream::get_priority_range().ctx("reading stream priorities")?;
        let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).ctx("creating an event");
        Ok(Self {
            stream: ctx.new_stream_with_priority(highest).ctx("creating the open cells' stream")?,
            ready: event()?,
            done: event()?,
        })
    }
}

/// The open cells' tables ([`OpenTables`]) in device memory, and the kernel
/// argument that refers to them (valid while they live).
struct DeviceOpenCells<T> {
    _groups: CudaSlice<u8>,
    _group_of: CudaSlice<u16>,
    _slot: Option<CudaSlice<u32>>,
    _order: Option<CudaSlice<u16>>,
    cells: OpenCells<T>,
}

impl<T: Real> DeviceOpenCells<T> {
    /// Uploads `tables`.
    fn upload(s: &Arc<CudaStream>, tables: &OpenTables<T>) -> Result<Self> {
        // SAFETY: `OpenBoundary` is `#[repr(C)]` plain data without padding
        // (its size is pinned in `kernels_gpu::params`), so its bytes are
        // initialised; the kernels read them back as the same type.
        let bytes = unsafe {
            std::slice::from_raw_parts(
                tables.groups.as_ptr() as *const u8,
                std::mem::size_of_val(tables.groups.as_slice()),
            )
        };
        // Allocations are never empty: a grid with no open cell still passes valid addresses.
        let groups = s.clone_htod(&[bytes, &[0; 1]].concat()).ctx("uploading the open-boundary groups")?;
        let group_of = s.clone_htod(&[&tables.group_of[..], &[0]].concat()).ctx("uploading the open cells' groups")?;
        let slot = (!tables.slot.is_empty())
            .then(|| s.clone_htod(&tables.slot))
            .transpose()
            .ctx("uploading the boundary blocks' slots")?;
        let order = (!tables.order.is_empty())
            .then(|| s.clone_htod(&tables.order))
            .transpose()
            .ctx("uploading the boundary blocks' order")?;
        let at = |p: u64| p as usize;
        let (g, o) = (at(groups.device_ptr(s).0), at(group_of.device_ptr(s).0));
        let sl = slot.as_ref().map_or(0, |x| at(x.device_ptr(s).0));
        let w = order.as_ref().map_or(0, |x| at(x.device_ptr(s).0));
        // SAFETY: copies of `tables`, which satisfy `OpenCells::new`
        // (`OpenTables::build`), living as long as these cells do.
        let cells = unsafe {
            let (groups, order) = (g as *const OpenBoundary<T>, w as *const u16);
            OpenCells::new(groups, o as *const u16, sl as *const u32, order, tables.order_mask)
        };
        Ok(Self { _groups: groups, _group_of: group_of, _slot: slot, _order: order, cells })
    }
}

/// A sponge band in device memory: its tables, the addresses the kernel
/// arguments over them point into, and which cells each region damps.
struct DeviceSponge<T> {
    _cells: CudaSlice<u32>,
    _strength: CudaSlice<T>,
    addresses: (usize, usize),
    density: T,
    velocity: [T; 3],
    regions: ListRegions,
}

impl<T: Real + DeviceRepr> DeviceSponge<T> {
    /// Uploads `tables`.
    fn new(s: &Arc<CudaStream>, tables: &SpongeTables<T>) -> Result<Self> {
        let cells = s.clone_htod(&tables.cells).ctx("uploading the sponge cells")?;
        let strength = s.clone_htod(&tables.strength).ctx("uploading the sponge strengths")?;
        let addresses = (cells.device_ptr(s).0 as usize, strength.device_ptr(s).0 as usize);
        let (density, velocity, regions) = (tables.density, tables.velocity, tables.regions);
        Ok(Self { _cells: cells, _strength: strength, addresses, density, velocity, regions })
    }

    /// The kernel argument over the cells `region` damps (valid while this lives).
    fn band(&self, region: Region) -> SpongeCells<T> {
        let entries = self.regions.of(region);
        let first = entries.start as usize;
        let (c, st) = self.addresses;
        let (c, st) = (c + first * std::mem::size_of::<u32>(), st + first * std::mem::size_of::<T>());
        // SAFETY: one strength per cell, distinct flow cells that are not
        // open (`sponge::add`), `entries` within the tables, living as long as `self`.
        unsafe { SpongeCells::new(c as *const u32, st as *const T, self.density, self.velocity, entries.len() as u32) }
    }
}

/// The curved-wall group in device memory: its tables, its kernels and the
/// kernel argument that refers to the tables (valid while they live).
pub(crate) struct DeviceCurved<T> {
    _cells: CudaSlice<u32>,
    _q: CudaSlice<T>,
    _carried: CudaSlice<T>,
    /// The kernel argument over every cell.
    pub(crate) links: CurvedCells<T>,
    /// The tables' addresses, for the arguments over part of the list.
    addresses: [usize; 3],
    /// Which cells each region of the partition updates.
    regions: ListRegions,
    pub(crate) gather: CudaFunction,
    pub(crate) update: CudaFunction,
    fields: CudaFunction,
}

impl<T: Real + DeviceRepr + ValidAsZeroBits> DeviceCurved<T> {
    /// Uploads `tables` and loads the kernels for lattice `L` stored as `S` on grid `on`.
    pub(crate) fn new<L: Lattice<Q>, const Q: usize, S: DeviceStorage<Real = T>>(
        device: &GpuDevice,
        tables: &CurvedTables<T>,
        collision: kernels_gpu::CollisionKind,
        on: GridKind,
    ) -> Result<Self> {
        let s = device.stream();
        let cells = s.clone_htod(&tables.cells).ctx("uploading the curved-wall cells")?;
        let q = s.clone_htod(&tables.q).ctx("uploading the curved-wall fractions")?;
        let carried = s.alloc_zeros::<T>(tables.q.len()).ctx("allocating the curved-wall carried values")?;
        let at = |p: u64| p as usize;
        let (c, qp, cp) = (at(cells.device_ptr(s).0), at(q.device_ptr(s).0), at(carried.device_ptr(s).0));
        // SAFETY: `count` cells and `Q` values per cell, distinct fluid cells
        // of the grid (`curved::mark`), living as long as `links` does.
        let links = unsafe { CurvedCells::new(c as *const u32, qp as *const T, cp as *mut T, tables.count()) };
        Ok(Self {
            _cells: cells,
            _q: q,
            _carried: carried,
            links,
            addresses: [c, qp, cp],
            regions: tables.regions,
            gather: device.kernel::<L, Q, S>(KernelKind::CurvedGather, on)?,
            update: device.kernel::<L, Q, S>(KernelKind::curved_wall(collision), on)?,
            fields: device.kernel::<L, Q, S>(KernelKind::CurvedFields, on)?,
        })
    }
}

impl<T: Real> DeviceCurved<T> {
    /// The kernel argument over the cells `region` updates (valid while this lives).
    fn links_in<const Q: usize>(&self, region: Region) -> CurvedCells<T> {
        let entries = self.regions.of(region);
        let first = entries.start as usize;
        let [c, qp, cp] = self.addresses;
        let values = Q * first * std::mem::size_of::<T>();
        let c = c + first * std::mem::size_of::<u32>();
        // SAFETY: as `links`, from entry `first` on, `entries` within the tables.
        unsafe {
            CurvedCells::new(c as *const u32, (qp + values) as *const T, (cp + values) as *mut T, entries.len() as u32)
        }
    }
}

/// A boundary group: an inlet's or outlet's cells, its kernel and what it imposes.
struct OpenGroup<T: Copy> {
    cells: CudaSlice<u32>,
    /// A profile's velocities, three per cell; `None`: uniform.
    velocities: Option<CudaSlice<T>>,
    count: u32,
    kernel: CudaFunction,
    params: OpenBoundary<T>,
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> GpuPart<L, Q, S> {
    /// Partition `slab` of `global` on `device`, initialised to equilibrium.
    pub(crate) fn new(global: &SolverConfig, slab: Slab, device: GpuDevice) -> Result<Self> {
        let config = local_config(global, &slab)?;
        let grid = PartGrid::new(&config, slab.halo > 0)?;
        let cells = grid.cells();
        let info = device.info()?;
        let tables = grid.sparse().map_or(0, SparseLayout::table_bytes);
        let need = config.state_bytes_on(cells) + tables + FIELD_COMPONENTS * cells * std::mem::size_of::<S::Real>();
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
        let host_flags = grid.kernel_flags(&config);
        let flags = s.clone_htod(&host_flags).ctx("uploading cell flags")?;
        let planes = grid.initial_planes::<S::Real>(&config);
        let planes = s.clone_htod(&planes).ctx("uploading initial fields")?;
        let sparse = grid.sparse().map(|layout| DeviceSparse::upload(&s, layout)).transpose()?;
        let on = config.grid.kind();
        let init = device.kernel::<L, Q, S>(KernelKind::InitEquilibrium, on)?;
        let cfg = with_grid!(&grid, |g| launch_all(&g, block_size(KernelKind::InitEquilibrium)));
        let p = config.step_params::<S::Real>(0);
        let kernel_grid = sparse.as_ref().map(|d| d.tables);
        launch::init_equilibrium(&s, &init, &mut f, &flags, &planes, p, config.streaming, kernel_grid, cfg)?;
        s.synchronize().ctx("initialising populations")?;
        let step_kind = KernelKind::StreamCollide(config.streaming, config.collision.kind());
        // The other variants find open cells through `with_open`.
        let lists = if config.groups == BoundaryGroups::Lists { config.domain.open.as_slice() } else { &[] };
        let open = (lists.iter())
            .map(|g| {
                let velocities = domain::OpenGroup::kernel_velocities::<S::Real>(&g.velocities);
                Ok(OpenGroup {
                    cells: s.clone_htod(&grid.stored_cells(&g.cells)).ctx("uploading the open-boundary cells")?,
                    velocities: velocities.map(|v| s.clone_htod(&v)).transpose().ctx("uploading an inlet profile")?,
                    count: g.cells.len() as u32,
                    kernel: device.kernel::<L, Q, S>(KernelKind::OpenBoundary, on)?,
                    params: g.state.kernel_params(config.collision_params()),
                })
            })
            .collect::<Result<_>>()?;
        let step_block = block_size(step_kind);
        let with_open = match OpenTables::<S::Real>::build(&config, &grid)? {
            Some(tables) => {
                let kind = KernelKind::stream_collide_open(config.streaming, config.collision.kind());
                let kernel = device.kernel::<L, Q, S>(kind, on)?;
                Some(OpenKernel { kernel, tables: DeviceOpenCells::upload(&s, &tables)? })
            }
            None => None,
        };
        let beside = match (&with_open, config.groups) {
            (Some(_), BoundaryGroups::Memory | BoundaryGroups::Bitmask) => Some(Beside::new(device.context())?),
            _ => None,
        };
        let curved = CurvedTables::build(&config.domain.curved, &grid, &slab)
            .map(|t| DeviceCurved::new::<L, Q, S>(&device, &t, config.collision.kind(), on))
            .transpose()?;
        let sponges = (SpongeTables::build(&config.domain.sponges, &grid, &slab).iter())
            .map(|t| DeviceSponge::new(&s, t))
            .collect::<Result<Vec<_>>>()?;
        let sponge_kernel =
            (!sponges.is_empty()).then(|| device.kernel::<L, Q, S>(KernelKind::Sponge, on)).transpose()?;
        let mut part = Self {
            with_open,
            beside,
            curved,
            sponges,
            sponge_kernel,
            step_kernel: device.kernel::<L, Q, S>(step_kind, on)?,
            step_block,
            collision: config.collision_params::<S::Real>(),
            fields_kernel: device.kernel::<L, Q, S>(KernelKind::Fields, on)?,
            config,
            slab,
            device,
            f,
            f_next,
            flags,
            host_flags,
            grid,
            sparse,
            open,
            t: 0,
            _lattice: PhantomData,
        };
        part.seed_curved()?;
        Ok(part)
    }

    /// The device this partition lives on.
    pub(crate) fn device(&self) -> &GpuDevice {
        &self.device
    }

    /// The grid the partition's cells are stored on.
    pub(crate) fn grid(&self) -> &PartGrid {
        &self.grid
    }

    /// The partition's layers.
    pub(crate) fn slab(&self) -> &Slab {
        &self.slab
    }

    fn plane(&self) -> u32 {
        self.config.domain.dims.nx * self.config.domain.dims.ny
    }

    /// Queues `region`'s update of step `t` on stream `s`: the passes of
    /// the boundary-group variant ([`passes`]) over its units, then the
    /// region's curved-wall and sponge cells.
    pub(crate) fn launch(&mut self, s: &Arc<CudaStream>, region: Region, t: u64) -> Result<()> {
        let units = self.grid.region_units(&self.slab, region);
        let boundary_blocks = self.grid.sparse().map_or(0, |l| l.boundary_blocks().len() as u32);
        let passes = passes(self.config.groups, &units, region != Region::Interior, boundary_blocks);
        let both =
            passes.iter().any(|p| matches!(p, Pass::Any(_))) && passes.iter().any(|p| matches!(p, Pass::Bulk(_)));
        let beside = match &self.beside {
            Some(b) if both => {
                b.ready.record(s).ctx("recording an event")?;
                b.stream.wait(&b.ready).ctx("waiting for the step's stream")?;
                Some(b.stream.clone())
            }
            _ => None,
        };
        for pass in passes {
            match pass {
                Pass::Bulk(units) => self.launch_bulk(s, units, t, false)?,
                Pass::Any(units) => self.launch_bulk(beside.as_ref().unwrap_or(s), units, t, true)?,
                Pass::Lists => {
                    for k in 0..self.open.len() {
                        self.launch_open(s, k, t)?;
                    }
                }
            }
        }
        if let (Some(b), Some(_)) = (&self.beside, &beside) {
            b.done.record(&b.stream).ctx("recording an event")?;
            s.wait(&b.done).ctx("waiting for the open cells")?;
        }
        let grid = self.kernel_grid();
        let p = self.config.step_params::<S::Real>(t);
        if let Some(links) = self.curved.as_ref().map(|c| c.links_in::<Q>(region)).filter(|l| l.count > 0) {
            let c = self.curved.as_ref().expect("links come from it");
            let b = Buffers { f: &mut self.f, next: self.f_next.as_mut() };
            let collision = self.collision;
            launch::curved_wall(s, &c.update, b, &self.flags, p, collision, links, self.config.streaming, grid)?;
        }
        if let Some(kernel) = self.sponge_kernel.as_ref() {
            let f = self.f_next.as_mut().unwrap_or(&mut self.f);
            for band in self.sponges.iter().map(|b| b.band(region)).filter(|b| b.count > 0) {
                launch::sponge(s, kernel, f, p, band, self.config.streaming, grid)?;
            }
        }
        // The next step's carried values, taken as soon as these cells have
        // stored (and damped) them: with Esoteric Pull a top-layer cell keeps
        // some in the upper halo, which a neighbour's next exchange overwrites.
        self.gather_curved(s, region, t + 1, true)
    }

    /// Every curved-wall cell's carried values for the step about to run,
    /// from the current buffer: after initialisation and after a restore.
    fn seed_curved(&mut self) -> Result<()> {
        let s = self.device.stream().clone();
        self.gather_curved(&s, Region::Whole, self.t, false)?;
        s.synchronize().ctx("taking the curved walls' carried values")
    }

    /// Queues [`kernels_gpu::curved::gather`] of `region`'s curved-wall
    /// cells for step `step` on `s`, from the buffer the step before wrote
    /// (`output`: the one being written now; else the current one).
    fn gather_curved(&self, s: &Arc<CudaStream>, region: Region, step: u64, output: bool) -> Result<()> {
        let Some(c) = self.curved.as_ref() else { return Ok(()) };
        let links = c.links_in::<Q>(region);
        if links.count == 0 {
            return Ok(());
        }
        let f = match (&self.f_next, output) {
            (Some(next), true) => next,
            _ => &self.f,
        };
        let p = self.config.step_params::<S::Real>(step);
        launch::curved_gather(s, &c.gather, f, p, links, self.config.streaming, self.kernel_grid())
    }

    /// The kernel grid argument: the sparse grid's, none for the dense box
    /// (its kernels take the box from the step parameters).
    fn kernel_grid(&self) -> Option<SparseTables> {
        self.sparse.as_ref().map(|d| d.tables)
    }

    /// Queues the stream-collide kernel of step `t` for the local units
    /// `units`: the bulk one, or with `with_open` the one of open cells too.
    fn launch_bulk(&mut self, s: &Arc<CudaStream>, units: Range<u32>, t: u64, with_open: bool) -> Result<()> {
        if units.is_empty() {
            return Ok(());
        }
        let (count, block) = (units.len() as u32, self.step_block);
        let (kernel, open, cfg) = match (&self.with_open, with_open) {
            (Some(k), true) => {
                let shape = with_grid!(&self.grid, |g| g.launch_open(units.clone(), block));
                (&k.kernel, Some(k.tables.cells), config_of(shape))
            }
            (None, true) => unreachable!("the open cells' kernel is loaded for every variant that runs it"),
            (_, false) => (&self.step_kernel, None, with_grid!(&self.grid, |g| launch_config(&g, count, block))),
        };
        let p = self.config.step_params::<S::Real>(t);
        let grid = self.kernel_grid();
        let b = Buffers { f: &mut self.f, next: self.f_next.as_mut() };
        let collision = self.collision;
        launch::stream_collide(s, kernel, b, &self.flags, p, collision, grid, open, units, cfg)
    }

    /// Queues open-boundary group `k` for step `t`.
    fn launch_open(&mut self, s: &Arc<CudaStream>, k: usize, t: u64) -> Result<()> {
        let open = &self.open[k];
        let p = self.config.step_params::<S::Real>(t);
        let grid = self.sparse.as_ref().map(|d| d.tables);
        let b = Buffers { f: &mut self.f, next: self.f_next.as_mut() };
        launch::open_boundary(
            s,
            &open.kernel,
            b,
            &self.flags,
            (&open.cells, open.velocities.as_ref(), open.count),
            p,
            open.params,
            self.config.streaming,
            grid,
        )
    }

    /// Ends the current step: the buffer written becomes the current one.
    pub(crate) fn end_step(&mut self) {
        if let Some(next) = self.f_next.as_mut() {
            std::mem::swap(&mut self.f, next);
        }
        self.t += 1;
    }

    /// Device address of the buffer that holds, or is receiving, the output
    /// of step `t` (see `CpuPart::step_output_mut`).
    pub(crate) fn output_address(&self, t: u64) -> u64 {
        let buffer = match &self.f_next {
            Some(next) if self.t <= t => next,
            _ => &self.f,
        };
        let (ptr, _sync) = buffer.device_ptr(self.device.stream());
        ptr
    }

    /// The own cells' density and velocity at step `t`.
    pub(crate) fn fields(&mut self, t: u64) -> Result<PartFields> {
        let s = self.device.stream().clone();
        let mut out =
            s.alloc_zeros::<S::Real>(FIELD_COMPONENTS * self.grid.cells()).ctx("allocating the fields buffer")?;
        let cfg = with_grid!(&self.grid, |g| launch_all(&g, block_size(KernelKind::Fields)));
        let p = self.config.step_params::<S::Real>(t);
        let (scheme, grid) = (self.config.streaming, self.kernel_grid());
        launch::fields(&s, &self.fields_kernel, &self.f, &self.flags, &mut out, p, scheme, grid, cfg)?;
        if let Some(c) = &self.curved {
            launch::curved_fields(&s, &c.fields, &self.f, &self.flags, &mut out, p, c.links, scheme, grid)?;
        }
        let stored = s.clone_dtoh(&out).ctx("reading fields back")?;
        Ok(self.grid.own_fields(&self.slab, &stored))
    }

    /// The current population buffer, halos included.
    pub(crate) fn read_populations(&self) -> Result<Vec<S>> {
        let host = self.device.stream().clone_dtoh(&self.f).ctx("reading populations back")?;
        Ok(host.into_iter().map(S::from_elem).collect())
    }

    /// The own layers of the current population buffer, in the dense layout.
    pub(crate) fn own_populations(&self) -> Result<Vec<S>> {
        let f = self.read_populations()?;
        let dense = match &self.grid {
            PartGrid::Dense(_) => f,
            sparse => sparse.dense_populations(&f, Q, S::ZERO),
        };
        Ok(own_values(&dense, self.plane(), Q, &self.slab).to_vec())
    }

    /// The own cells' share of a saved state.
    pub(crate) fn saved_part(&self) -> Result<SavedPart> {
        Ok(self.grid.saved_part(&self.slab, &self.read_populations()?, Q))
    }

    /// Storage numbers of the own cells.
    fn own_cells(&self) -> Vec<Range<usize>> {
        self.grid.region_cells(&self.slab, Region::Whole)
    }

    /// The fluid mass of the own cells at step `t`, from the populations
    /// read back (summed in f64 on the host: output intervals, not steps).
    pub(crate) fn mass(&self, t: u64) -> Result<f64> {
        let f = self.read_populations()?;
        Ok(mass_of::<L, Q, S>(&self.config, &self.grid, &self.host_flags, &f, t, &self.own_cells()))
    }

    /// Momentum-exchange forces through the own cells' links at step `t`
    /// (`objects` over the whole domain), from the populations read back.
    pub(crate) fn forces(&self, t: u64, objects: &[CellBlocks<bool>]) -> Result<Vec<[f64; 3]>> {
        let f = self.read_populations()?;
        let (grid, slab, flags) = (&self.grid, &self.slab, &self.host_flags);
        Ok(momentum_exchange::<L, Q, S>(&self.config, grid, slab, flags, &f, t, objects, &self.own_cells()))
    }

    /// Sets the populations (halos included) from a saved state of the whole
    /// domain `global`, and the time to `t`.
    pub(crate) fn restore(&mut self, state: &SavedState, global: kernels_gpu::Dims, t: u64) -> Result<()> {
        let local = self.grid.restored::<S>(state, &self.slab, global, Q)?;
        let elems: Vec<S::Elem> = local.iter().map(|&v| S::to_elem(v)).collect();
        self.device.stream().memcpy_htod(&elems, &mut self.f).ctx("uploading populations")?;
        self.t = t;
        self.seed_curved()
    }

    /// Registers and occupancy of the stream-collide kernels as launched.
    pub(crate) fn kernel_report(&self) -> Option<KernelReport> {
        // As launched: narrow boxes get narrower blocks.
        let block = with_grid!(&self.grid, |g| launch_all(&g, self.step_block).block_dim.0);
        let report = |k: &CudaFunction| self.device.kernel_resources(k, block);
        let with_open = self.with_open.as_ref().and_then(|k| report(&k.kernel)).map(Box::new);
        Some(KernelReport { with_open, ..report(&self.step_kernel)? })
    }
}

/// Runs the layout-check kernel on a box of `dims` with `q` populations per
/// cell and returns what it wrote.
pub fn layout_probe(device: &GpuDevice, dims: kernels_gpu::Dims, q: usize) -> Result<Vec<u64>> {
    let s = device.stream();
    let f = device.function(kernels_gpu::kernels::LAYOUT_PROBE_KERNEL)?;
    let mut out = s.alloc_zeros::<u64>(q * dims.cells()).ctx("allocating the probe buffer")?;
    let cfg = launch_all(&dims, kernels_gpu::kernels::DEFAULT_BLOCK_SIZE);
    launch::layout_probe(s, &f, &mut out, dims, q as u32, cfg)?;
    s.clone_dtoh(&out).ctx("reading the probe back")
}
