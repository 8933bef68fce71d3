//! The thermal model on GPUs: the `d2q37_*` entry points.
//!
//! One tile fills its halo with the halo kernels on a second stream and
//! runs its frame there too, while its bulk runs on the device's stream:
//! the frame's small kernels hide behind the bulk. Several tiles (one per
//! GPU, or several on one)
//! copy their halos on a stream of their own per tile while their bulk
//! runs, ordered by events:
//!
//! - a tile's bulk waits until its neighbours' last halo copies, which read
//!   the buffer it is about to write, are done;
//! - its row halos wait until the sending tile's step is done (packed: the
//!   sender gathers and sends once its step is done and the receiver has
//!   unpacked the last ones);
//! - its column halos wait until the sending tile's row halos are in;
//! - its edges wait for its halos.

use super::tiles::{column_copies, row_copies, HaloCopy, RowHalo, Tile};
use super::{initial_populations, interior, Executor, ThermalConfig, ThermalPhase};
use crate::error::{CudaContextExt, Error, Result};
use crate::gpu::{launch_config, GpuDevice};
use crate::launch::{exchange_gather, exchange_scatter, ByValue};
use crate::peer;
use crate::solver::KernelReport;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use kernels_gpu::storage::Storage;
use kernels_gpu::thermal::step::HALO_COLUMNS;
use kernels_gpu::Real;
use std::sync::Arc;

/// Threads per block along a column.
const ROW_THREADS: u32 = 128;
/// Threads per block of the one-dimensional kernels (halo, walls).
const LINE_THREADS: u32 = 128;

/// The kernels of one precision on one device.
pub(super) struct Kernels {
    propagate: CudaFunction,
    collide: CudaFunction,
    fused: CudaFunction,
    wall: CudaFunction,
    halo_x: CudaFunction,
    halo_y: CudaFunction,
    pub(super) gather: CudaFunction,
    pub(super) scatter: CudaFunction,
}

impl Kernels {
    pub(super) fn load<T: Storage>(device: &GpuDevice) -> Result<Self> {
        let name = |k: &str| device.function(&format!("d2q37_{k}_{}", T::NAME));
        let (gather, scatter) = kernels_gpu::exchange::kernels_for(std::mem::size_of::<T>())
            .ok_or_else(|| Error::Setup("no halo pack kernels for this precision".into()))?;
        Ok(Self {
            propagate: name("propagate")?,
            collide: name("collide")?,
            fused: name("propagate_collide")?,
            wall: name("wall")?,
            halo_x: name("halo_x")?,
            halo_y: name("halo_y")?,
            gather: device.function(gather)?,
            scatter: device.function(scatter)?,
        })
    }
}

/// The halo stream and events of a tile.
pub(super) struct TileSync {
    /// Where its halo copies (and packing) run.
    pub(super) halo: Arc<CudaStream>,
    /// Its step is done (its current buffer final).
    pub(super) done: CudaEvent,
    /// Its row halos are in.
    rows_in: CudaEvent,
    /// Its whole halo is in.
    pub(super) halo_in: CudaEvent,
    /// Its packed row halos are sent.
    sent: CudaEvent,
}

impl TileSync {
    pub(super) fn new(device: &GpuDevice) -> Result<Self> {
        let ctx = device.context();
        ctx.bind_to_thread().ctx("binding the device")?;
        // Copies first: the edges of every tile wait for them.
        let (_, greatest) = cudarc::driver::result::stream::get_priority_range().ctx("reading stream priorities")?;
        let halo = ctx.new_stream_with_priority(greatest).ctx("creating the halo stream")?;
        let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).ctx("creating an event");
        Ok(Self { halo, done: event()?, rows_in: event()?, halo_in: event()?, sent: event()? })
    }
}

/// One tile in device memory.
pub(super) struct GpuTile<T: DeviceRepr> {
    pub(super) device: GpuDevice,
    pub(super) kernels: Kernels,
    /// The current populations.
    pub(super) f: CudaSlice<T>,
    /// Where the step writes.
    pub(super) next: CudaSlice<T>,
    /// Its halo stream and events: halo copies (and, for one tile, the
    /// frame) run there beside its bulk.
    pub(super) sync: TileSync,
}

/// A packed row halo: gathered on the sender, sent, scattered on the receiver.
struct Packed<T: DeviceRepr> {
    /// On the sender: the values, packed.
    send: CudaSlice<T>,
    /// On the sender: where they lie in its buffer.
    gather: CudaSlice<u64>,
    /// On the receiver: the values, arrived.
    receive: CudaSlice<T>,
    /// On the receiver: where they go in its buffer.
    scatter: CudaSlice<u64>,
}

/// The tiles of a thermal box on one GPU or several.
pub(super) struct GpuTiles<T: DeviceRepr> {
    config: ThermalConfig,
    tiles: Vec<Tile>,
    gpus: Vec<GpuTile<T>>,
    /// Every tile's row halo copies, with their staging when packed.
    rows: Vec<(HaloCopy, Option<Packed<T>>)>,
    /// Every tile's column halo copies.
    columns: Vec<HaloCopy>,
    /// Each tile's neighbours and itself, once each: whose last halo
    /// copies read the buffer its step writes.
    around: Vec<Vec<usize>>,
    links: Vec<String>,
    /// One tile, between its halo and the end of its step: its phases
    /// (the frame) go to its halo stream.
    framing: bool,
}

/// A one-dimensional launch of `n` threads (`sides` blocks along y).
fn line(n: u32, sides: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(LINE_THREADS), sides, 1),
        block_dim: (LINE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Queues the copy `c` of current-buffer values between `gpus` on `stream`.
fn copy<T: DeviceRepr>(gpus: &[GpuTile<T>], c: &HaloCopy, stream: &CudaStream) -> Result<()> {
    let elem = std::mem::size_of::<T>();
    let (from, to) = (&gpus[c.from], &gpus[c.to]);
    let (src, dst) = (address(&from.f, stream), address(&to.f, stream));
    // SAFETY: the placements lie inside both tiles' buffers, which the
    // events keep untouched until the copy is done.
    unsafe { peer::copy_placed_async((&from.device, src, c.src), (&to.device, dst, c.dst), &c.shape, elem, stream) }
}

/// The device address of `buffer`.
pub(super) fn address<T>(buffer: &CudaSlice<T>, s: &CudaStream) -> u64 {
    let (ptr, _sync) = buffer.device_ptr(s);
    ptr
}

impl<T: Real + Storage + DeviceRepr> GpuTile<T> {
    /// Tile `tile` of `config` on `device`, its sites at `initial`'s state.
    pub(super) fn new(
        config: &ThermalConfig,
        tile: &Tile,
        device: GpuDevice,
        initial: &(impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync),
    ) -> Result<Self> {
        let kernels = Kernels::load::<T>(&device)?;
        let host = initial_populations::<T>(config, tile, initial);
        let s = device.stream();
        let f = s.clone_htod(&host).ctx("uploading the thermal populations")?;
        let next = s.clone_htod(&host).ctx("allocating the second thermal buffer")?;
        let sync = TileSync::new(&device)?;
        Ok(Self { device, kernels, f, next, sync })
    }

    /// Queues `phase` of `tile` (this tile of `config`) on `s`, a stream
    /// of this tile's device.
    pub(super) fn run(
        &mut self,
        config: &ThermalConfig,
        tile: &Tile,
        phase: &ThermalPhase,
        s: &CudaStream,
    ) -> Result<()> {
        match phase {
            ThermalPhase::Walls => {
                let p = ByValue(config.params::<T>(tile, 0..tile.frame.nx, 0..tile.frame.ny));
                let (first, columns) = (0u32, tile.frame.nx);
                let mut launch = s.launch_builder(&self.kernels.wall);
                launch.arg(&p).arg(&first).arg(&columns).arg(&self.f).arg(&mut self.next);
                // SAFETY: `d2q37_wall(params, first, columns, src, dst)`, two sides.
                unsafe { launch.launch(line(columns, 2)) }.ctx("launching the walls")?;
            }
            ThermalPhase::Propagate(w) | ThermalPhase::Collide(w) | ThermalPhase::PropagateCollide(w) => {
                let p = ByValue(config.params::<T>(tile, w.columns.clone(), w.rows.clone()));
                let cfg = launch_config(&p.0.frame, w.columns.len() as u32, ROW_THREADS);
                let first = w.columns.start;
                let kernel = match phase {
                    ThermalPhase::Propagate(_) => &self.kernels.propagate,
                    ThermalPhase::Collide(_) => &self.kernels.collide,
                    _ => &self.kernels.fused,
                };
                let mut launch = s.launch_builder(kernel);
                launch.arg(&p).arg(&first);
                if matches!(phase, ThermalPhase::Collide(_)) {
                    launch.arg(&mut self.next);
                } else {
                    launch.arg(&self.f).arg(&mut self.next);
                }
                // SAFETY: the argument lists of `d2q37_{propagate,propagate_collide}`
                // (params, first, src, dst) and `d2q37_collide` (params, first, f).
                unsafe { launch.launch(cfg) }.ctx("launching a thermal kernel")?;
            }
        }
        Ok(())
    }

    /// The step is done: the other buffer becomes the current one, and
    /// `done` marks it.
    pub(super) fn finish(&mut self) -> Result<()> {
        std::mem::swap(&mut self.f, &mut self.next);
        self.sync.done.record(self.device.stream()).ctx("recording an event")?;
        Ok(())
    }

    /// Registers and occupancy of the fused kernel.
    pub(super) fn kernel_report(&self) -> Option<KernelReport> {
        self.device.kernel_resources(&self.kernels.fused, ROW_THREADS)
    }

    /// The device's peak arithmetic rate in `T`.
    pub(super) fn peak_flops(&self) -> Result<Option<f64>> {
        self.device.peak_flops(std::mem::size_of::<T>() == 8)
    }
}

impl<T: Real + Storage + DeviceRepr + ValidAsZeroBits + Unpin> GpuTiles<T> {
    pub(super) fn new(
        config: &ThermalConfig,
        tiles: Vec<Tile>,
        ordinals: &[usize],
        ptx: &str,
        initial: &(impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync),
    ) -> Result<Self> {
        let several = tiles.len() > 1;
        let mut gpus: Vec<GpuTile<T>> = Vec::with_capacity(tiles.len());
        for (tile, &ordinal) in tiles.iter().zip(ordinals) {
            // Tiles on one GPU share its module (loaded once) and stream.
            let device = match gpus.iter().find(|g| g.device.ordinal() == ordinal) {
                Some(g) => g.device.clone(),
                None => GpuDevice::open(ordinal, ptx)?,
            };
            gpus.push(GpuTile::new(config, tile, device, initial)?);
        }
        let n = tiles.len();
        let (mut rows, mut columns) = (Vec::new(), Vec::new());
        if several {
            for k in 0..n {
                for c in row_copies(&tiles, k) {
                    let packed = match config.tiling.rows {
                        RowHalo::Strided => None,
                        RowHalo::Packed => Some(Self::packed(&gpus, &c)?),
                    };
                    rows.push((c, packed));
                }
                columns.extend(column_copies(&tiles, k));
            }
        }
        // Peer access between every pair of GPUs whose tiles exchange, once.
        let ordinal = |k: usize| gpus[k].device.ordinal();
        let mut pairs: Vec<(usize, usize, usize, usize)> = columns
            .iter()
            .chain(rows.iter().map(|(c, _)| c))
            .filter(|c| ordinal(c.from) != ordinal(c.to))
            .map(|c| {
                let (a, b) = if ordinal(c.from) < ordinal(c.to) { (c.from, c.to) } else { (c.to, c.from) };
                (ordinal(a), ordinal(b), a, b)
            })
            .collect();
        pairs.sort_unstable();
        pairs.dedup_by_key(|p| (p.0, p.1));
        let mut links = Vec::new();
        for (_, _, a, b) in pairs {
            links.extend(peer::enable_pair(&gpus[a].device, &gpus[b].device, false)?);
        }
        let around = (0..n)
            .map(|k| {
                let mut m = tiles[k].neighbours.to_vec();
                m.push(k);
                m.sort_unstable();
                m.dedup();
                m
            })
            .collect();
        for g in &gpus {
            g.device.stream().synchronize().ctx("waiting for the uploads")?;
        }
        Ok(Self { config: config.clone(), tiles, gpus, rows, columns, around, links, framing: false })
    }

    /// Staging buffers and index tables for packing the row halo `c`.
    fn packed(gpus: &[GpuTile<T>], c: &HaloCopy) -> Result<Packed<T>> {
        let (from, to) = (gpus[c.from].device.stream(), gpus[c.to].device.stream());
        let n = c.shape.values();
        Ok(Packed {
            send: from.alloc_zeros::<T>(n).ctx("allocating a halo staging buffer")?,
            gather: from.clone_htod(&c.indices(c.src)).ctx("uploading a halo index table")?,
            receive: to.alloc_zeros::<T>(n).ctx("allocating a halo staging buffer")?,
            scatter: to.clone_htod(&c.indices(c.dst)).ctx("uploading a halo index table")?,
        })
    }

    /// The halo of the one tile, by the periodic halo kernels on its halo
    /// stream.
    fn own_halo(&mut self) -> Result<()> {
        let s = self.gpus[0].sync.halo.clone();
        let g = &mut self.gpus[0];
        let p = ByValue(self.config.params::<T>(&self.tiles[0], 0..self.tiles[0].frame.nx, 0..self.tiles[0].frame.ny));
        let frame = p.0.frame;
        if self.config.walls.is_none() {
            let mut launch = s.launch_builder(&g.kernels.halo_y);
            launch.arg(&p).arg(&mut g.f);
            // SAFETY: `d2q37_halo_y(params, f)`.
            unsafe { launch.launch(line(HALO_COLUMNS * frame.nx, 1)) }.ctx("launching the y halo")?;
        }
        let mut launch = s.launch_builder(&g.kernels.halo_x);
        launch.arg(&p).arg(&mut g.f);
        // SAFETY: `d2q37_halo_x(params, f)`.
        unsafe { launch.launch(line(HALO_COLUMNS * frame.stride, 1)) }.ctx("launching the x halo")?;
        Ok(())
    }

    /// Gathers and sends the packed row halos of every tile.
    fn send_packed(&mut self) -> Result<()> {
        let elem = std::mem::size_of::<T>();
        for k in 0..self.gpus.len() {
            let halo = self.gpus[k].sync.halo.clone();
            halo.wait(&self.gpus[k].sync.done).ctx("waiting for a tile's step")?;
            // The receivers have unpacked the last ones.
            for (c, _) in self.rows.iter().filter(|(c, _)| c.from == k) {
                halo.wait(&self.gpus[c.to].sync.rows_in).ctx("waiting for a tile's row halos")?;
            }
            let gpus = &self.gpus;
            for (c, packed) in self.rows.iter_mut().filter(|(c, _)| c.from == k) {
                let p = packed.as_mut().expect("packed row halos");
                let (from, to) = (&gpus[c.from], &gpus[c.to]);
                let count = c.shape.values() as u32;
                exchange_gather(&halo, &from.kernels.gather, &from.f, &p.gather, &mut p.send, count)?;
                let (src, dst) = (address(&p.send, &halo), address(&p.receive, &halo));
                // SAFETY: both staging buffers hold the copy's values; the
                // receiver waits for `sent` before unpacking.
                unsafe { peer::copy_async((&from.device, src), (&to.device, dst), c.shape.values() * elem, &halo)? };
            }
            gpus[k].sync.sent.record(&halo).ctx("recording an event")?;
        }
        Ok(())
    }
}

impl<T: Real + Storage + DeviceRepr + ValidAsZeroBits + Unpin> Executor for GpuTiles<T> {
    fn run(&mut self, k: usize, phase: &ThermalPhase) -> Result<()> {
        let s = if self.framing { self.gpus[k].sync.halo.clone() } else { self.gpus[k].device.stream().clone() };
        self.gpus[k].run(&self.config, &self.tiles[k], phase, &s)
    }

    fn begin(&mut self, k: usize) -> Result<()> {
        if self.gpus.len() == 1 {
            // The halo stream writes the halo of the buffer the last step
            // wrote, and reads it: after that step.
            let sync = &self.gpus[0].sync;
            return sync.halo.wait(&sync.done).ctx("waiting for the last step");
        }
        // The last copies out of the buffer this step writes are done.
        let compute = self.gpus[k].device.stream();
        for &m in &self.around[k] {
            compute.wait(&self.gpus[m].sync.halo_in).ctx("waiting for a neighbour's halo copies")?;
        }
        Ok(())
    }

    fn exchange(&mut self) -> Result<()> {
        if self.gpus.len() == 1 {
            return self.own_halo();
        }
        if self.config.tiling.rows == RowHalo::Packed {
            self.send_packed()?;
        }
        let gpus = &mut self.gpus;
        for k in 0..gpus.len() {
            let halo = gpus[k].sync.halo.clone();
            halo.wait(&gpus[k].sync.done).ctx("waiting for a tile's step")?;
            for (c, packed) in self.rows.iter().filter(|(c, _)| c.to == k) {
                match packed {
                    None => {
                        halo.wait(&gpus[c.from].sync.done).ctx("waiting for a tile's step")?;
                        copy(gpus, c, &halo)?;
                    }
                    Some(p) => {
                        halo.wait(&gpus[c.from].sync.sent).ctx("waiting for a packed halo")?;
                        let GpuTile { kernels, f, .. } = &mut gpus[k];
                        exchange_scatter(&halo, &kernels.scatter, f, &p.scatter, &p.receive, c.shape.values() as u32)?;
                    }
                }
            }
            gpus[k].sync.rows_in.record(&halo).ctx("recording an event")?;
        }
        for k in 0..gpus.len() {
            let halo = gpus[k].sync.halo.clone();
            for c in self.columns.iter().filter(|c| c.to == k) {
                halo.wait(&gpus[c.from].sync.rows_in).ctx("waiting for a tile's row halos")?;
                copy(gpus, c, &halo)?;
            }
            gpus[k].sync.halo_in.record(&halo).ctx("recording an event")?;
        }
        Ok(())
    }

    fn await_halo(&mut self, k: usize) -> Result<()> {
        if self.gpus.len() == 1 {
            // The frame follows the halo on its stream, beside the bulk.
            self.framing = true;
        } else {
            let compute = self.gpus[k].device.stream();
            compute.wait(&self.gpus[k].sync.halo_in).ctx("waiting for a tile's halo")?;
        }
        Ok(())
    }

    fn finish(&mut self, k: usize) -> Result<()> {
        if self.framing {
            // The next step writes the buffer the frame reads.
            self.framing = false;
            let sync = &self.gpus[k].sync;
            sync.halo_in.record(&sync.halo).ctx("recording an event")?;
            self.gpus[k].device.stream().wait(&sync.halo_in).ctx("waiting for the frame")?;
        }
        self.gpus[k].finish()
    }

    fn synchronize(&self) -> Result<()> {
        for g in &self.gpus {
            g.device.stream().synchronize().ctx("waiting for the thermal steps")?;
            g.sync.halo.synchronize().ctx("waiting for the halo copies")?;
        }
        Ok(())
    }

    fn kernel_report(&self) -> Option<KernelReport> {
        self.gpus[0].kernel_report()
    }

    fn peak_flops(&self) -> Result<Option<f64>> {
        self.gpus[0].peak_flops()
    }

    fn links(&self) -> Vec<String> {
        self.links.clone()
    }

    fn populations(&self) -> Result<Option<Vec<f64>>> {
        self.synchronize()?;
        let mut host = Vec::with_capacity(self.gpus.len());
        for g in &self.gpus {
            host.push(g.device.stream().clone_dtoh(&g.f).ctx("reading the thermal populations back")?);
        }
        Ok(Some(interior(&self.config, &self.tiles, &host)))
    }
}
