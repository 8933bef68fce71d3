//! The thermal model over NCCL, one process per tile: rank `r` runs tile
//! `r` on its GPU (`LOCAL_RANK`) and exchanges halos with `ncclSend` /
//! `ncclRecv` on a high-priority stream of its own while its bulk runs, in
//! the order of the single-process GPU executor (rows, then columns with
//! the corners).
//!
//! NCCL sends contiguous bytes. Column halos go where they lie, one message
//! per population: three columns of every stored row are contiguous in the
//! buffer. Row halos are not (three values per column), so they are packed
//! by the gather kernel and unpacked by the scatter kernel, Calore et al.'s
//! pack / unpack; a case's `row_halo` does not apply. A tile's copies to
//! itself (one tile across a periodic side) stay on its GPU.
//!
//! Every rank lists the copies in one global order, so the messages between
//! two ranks are posted in the same order on both.

use super::gpu::{address, GpuTile};
use super::tiles::{column_copies, row_copies, HaloCopy, Tile, Tiling};
use super::{interior, Executor, ThermalConfig, ThermalPhase, ThermalPrecision, ThermalSolver};
use crate::error::{CudaContextExt, Error, Result};
use crate::gpu::GpuDevice;
use crate::launch::{exchange_gather, exchange_scatter};
use crate::nccl::{Comm, NcclReport, Ranks};
use crate::peer;
use crate::solver::KernelReport;
use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use kernels_gpu::storage::Storage;
use kernels_gpu::thermal::d2q37::{Q, THETA0};
use kernels_gpu::Real;
use std::sync::Arc;
use std::time::Instant;

/// A copy this rank takes part in, with what it needs here.
enum Part<T: DeviceRepr> {
    /// Between this rank's tile and itself: a copy on its GPU.
    Own,
    /// Sent to another rank from `values`, for a row halo packed there by
    /// the `indices` table (a column halo is sent where it lies).
    Send { values: Option<(CudaSlice<T>, CudaSlice<u64>)> },
    /// Received from another rank, into `values` for a row halo unpacked
    /// by the `indices` table (a column halo arrives where it goes).
    Receive { values: Option<(CudaSlice<T>, CudaSlice<u64>)> },
}

/// This rank's tile of a thermal box split over an NCCL job.
pub(super) struct NcclTile<T: DeviceRepr> {
    config: ThermalConfig,
    tiles: Vec<Tile>,
    ranks: Ranks,
    gpu: GpuTile<T>,
    comm: Comm,
    /// The row halo copies this rank takes part in, in the global order.
    rows: Vec<(HaloCopy, Part<T>)>,
    /// The column halo copies, likewise.
    columns: Vec<(HaloCopy, Part<T>)>,
}

/// Every copy of `copies(tiles, k)` over all tiles `k` that rank `me`
/// takes part in, in that order.
fn involving(tiles: &[Tile], me: usize, copies: fn(&[Tile], usize) -> Vec<HaloCopy>) -> Vec<HaloCopy> {
    (0..tiles.len()).flat_map(|k| copies(tiles, k)).filter(|c| c.from == me || c.to == me).collect()
}

impl<T: Real + Storage + DeviceRepr + ValidAsZeroBits + Unpin + bytemuck::Pod> NcclTile<T> {
    fn new(
        config: &ThermalConfig,
        tiles: Vec<Tile>,
        ranks: Ranks,
        rendezvous: &str,
        ptx: &str,
        initial: &(impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync),
    ) -> Result<Self> {
        let me = ranks.rank;
        let device = GpuDevice::open(ranks.local, ptx)?;
        crate::nccl::require_library()?;
        let gpu = GpuTile::<T>::new(config, &tiles[me], device, initial)
            .map_err(|e| crate::multi_gpu::in_partition(e, format!("rank {me} on GPU {}", ranks.local)))?;
        let s = gpu.device.stream();
        let staging = |c: &HaloCopy, at| -> Result<(CudaSlice<T>, CudaSlice<u64>)> {
            let values = s.alloc_zeros::<T>(c.shape.values()).ctx("allocating a halo staging buffer")?;
            Ok((values, s.clone_htod(&c.indices(at)).ctx("uploading a halo index table")?))
        };
        let part = |c: &HaloCopy, packed: bool| -> Result<Part<T>> {
            Ok(if c.from == c.to {
                Part::Own
            } else if c.from == me {
                Part::Send { values: packed.then(|| staging(c, c.src)).transpose()? }
            } else {
                Part::Receive { values: packed.then(|| staging(c, c.dst)).transpose()? }
            })
        };
        let rows =
            involving(&tiles, me, row_copies).into_iter().map(|c| Ok((c, part(&c, true)?))).collect::<Result<_>>()?;
        let columns = involving(&tiles, me, column_copies)
            .into_iter()
            .map(|c| Ok((c, part(&c, false)?)))
            .collect::<Result<_>>()?;
        s.synchronize().ctx("waiting for the uploads")?;
        let peers: Vec<usize> = tiles[me].neighbours.to_vec();
        let comm = Comm::connect(ranks, rendezvous, gpu.device.context(), &peers)?;
        Ok(Self { config: config.clone(), tiles, ranks, gpu, comm, rows, columns })
    }

    /// The stream the halos travel on.
    fn halo(&self) -> Arc<CudaStream> {
        self.gpu.sync.halo.clone()
    }

    /// Queues the messages of `copies` as one group: packed values from
    /// their staging, column halos one message per population in place.
    fn messages(&self, copies: &[(HaloCopy, Part<T>)], halo: &CudaStream) -> Result<()> {
        let elem = std::mem::size_of::<T>();
        let base = address(&self.gpu.f, halo);
        self.comm.group(|comm| {
            for (c, part) in copies {
                match part {
                    Part::Own => {}
                    Part::Send { values: Some((v, _)) } => {
                        // SAFETY: the staging holds the copy's values, untouched until the stream passes the send.
                        unsafe { comm.send(address(v, halo), v.len() * elem, c.to, halo, "sending a row halo")? }
                    }
                    Part::Receive { values: Some((v, _)) } => {
                        // SAFETY: as above, for the incoming staging.
                        unsafe { comm.recv(address(v, halo), v.len() * elem, c.from, halo, "receiving a row halo")? }
                    }
                    Part::Send { values: None } | Part::Receive { values: None } => {
                        let (at, send) = match part {
                            Part::Send { .. } => (c.src, true),
                            _ => (c.dst, false),
                        };
                        let bytes = c.shape.width * elem;
                        for r in 0..c.shape.rows {
                            let ptr = base + ((at.start + r * at.row_pitch) * elem) as u64;
                            // SAFETY: each run lies in the tile's buffer (`column_copies`);
                            // the compute stream waits for `halo_in` before touching it.
                            unsafe {
                                if send {
                                    comm.send(ptr, bytes, c.to, halo, "sending a column halo")?
                                } else {
                                    comm.recv(ptr, bytes, c.from, halo, "receiving a column halo")?
                                }
                            }
                        }
                    }
                }
            }
            Ok(())
        })
    }

    /// The copies of `copies` from this tile to itself, on its GPU.
    fn own_copies(&self, copies: &[(HaloCopy, Part<T>)], halo: &CudaStream) -> Result<()> {
        let (dev, base) = (&self.gpu.device, address(&self.gpu.f, halo));
        for (c, _) in copies.iter().filter(|(_, p)| matches!(p, Part::Own)) {
            // SAFETY: both placements lie in the tile's buffer (`row_copies`, `column_copies`).
            unsafe {
                peer::copy_placed_async(
                    (dev, base, c.src),
                    (dev, base, c.dst),
                    &c.shape,
                    std::mem::size_of::<T>(),
                    halo,
                )?
            };
        }
        Ok(())
    }
}

impl<T: Real + Storage + DeviceRepr + ValidAsZeroBits + Unpin + bytemuck::Pod> Executor for NcclTile<T> {
    fn run(&mut self, k: usize, phase: &ThermalPhase) -> Result<()> {
        let _busy = self.comm.busy();
        let s = self.gpu.device.stream().clone();
        self.gpu.run(&self.config, &self.tiles[k], phase, &s)
    }

    fn owns(&self, tile: usize) -> bool {
        tile == self.ranks.rank
    }

    fn begin(&mut self, _tile: usize) -> Result<()> {
        // The last sends out of (and receives into) the buffer this step
        // writes are done: both are on this rank's halo stream.
        let sync = &self.gpu.sync;
        self.gpu.device.stream().wait(&sync.halo_in).ctx("waiting for the last halo exchange")
    }

    fn exchange(&mut self) -> Result<()> {
        let _busy = self.comm.busy();
        let halo = self.halo();
        let sync = &self.gpu.sync;
        halo.wait(&sync.done).ctx("waiting for the tile's step")?;
        let g = &mut self.gpu;
        for (c, part) in &mut self.rows {
            if let Part::Send { values: Some((v, at)) } = part {
                exchange_gather(&halo, &g.kernels.gather, &g.f, at, v, c.shape.values() as u32)?;
            }
        }
        self.messages(&self.rows, &halo)?;
        self.own_copies(&self.rows, &halo)?;
        let g = &mut self.gpu;
        for (c, part) in &self.rows {
            if let Part::Receive { values: Some((v, at)) } = part {
                exchange_scatter(&halo, &g.kernels.scatter, &mut g.f, at, v, c.shape.values() as u32)?;
            }
        }
        // Columns carry the corners: after the row halos are in.
        self.messages(&self.columns, &halo)?;
        self.own_copies(&self.columns, &halo)?;
        let sync = &self.gpu.sync;
        sync.halo_in.record(&halo).ctx("recording an event")
    }

    fn await_halo(&mut self, _tile: usize) -> Result<()> {
        let sync = &self.gpu.sync;
        self.gpu.device.stream().wait(&sync.halo_in).ctx("waiting for the tile's halo")
    }

    fn finish(&mut self, _tile: usize) -> Result<()> {
        self.gpu.finish()
    }

    fn synchronize(&self) -> Result<()> {
        self.comm.waiting(|| {
            self.gpu.device.stream().synchronize().ctx("waiting for the thermal steps")?;
            self.halo().synchronize().ctx("waiting for the halo exchange")
        })
    }

    fn populations(&self) -> Result<Option<Vec<f64>>> {
        self.synchronize()?;
        let stream = self.halo();
        let mine = stream.clone_dtoh(&self.gpu.f).ctx("reading the thermal populations back")?;
        let size = std::mem::size_of::<T>();
        let tiles = &self.tiles;
        let mine = bytemuck::cast_slice::<T, u8>(&mine).to_vec();
        let all = self.comm.gather_bytes(self.ranks, &stream, mine, |r| Q * tiles[r].frame.plane() * size)?;
        if self.ranks.rank != 0 {
            return Ok(None);
        }
        let buffers: Vec<Vec<T>> = all.iter().map(|b| bytemuck::pod_collect_to_vec::<u8, T>(b)).collect();
        Ok(Some(interior(&self.config, &self.tiles, &buffers)))
    }

    fn abort(&mut self) {
        self.comm.abort();
    }

    fn kernel_report(&self) -> Option<KernelReport> {
        self.gpu.kernel_report()
    }

    fn peak_flops(&self) -> Result<Option<f64>> {
        self.gpu.peak_flops()
    }

    fn links(&self) -> Vec<String> {
        let mut peers: Vec<usize> = self.tiles[self.ranks.rank].neighbours.to_vec();
        peers.sort_unstable();
        peers.dedup();
        peers.retain(|&p| p != self.ranks.rank);
        peers.iter().map(|p| format!("rank {} <-> rank {p}: NCCL", self.ranks.rank)).collect()
    }
}

impl ThermalSolver {
    /// This process's part of `config` split over an NCCL job: one tile
    /// per rank (`config.tiling` must make as many tiles as the job has
    /// ranks), on GPU `ranks.local`, the NCCL id shared through
    /// `rendezvous` (`file:PATH` or `tcp:HOST:PORT`). Stepping and the
    /// read-backs are collective: every rank must make the same calls.
    pub fn join(
        config: ThermalConfig,
        ranks: Ranks,
        rendezvous: &str,
        ptx: &str,
        initial: impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync,
    ) -> Result<Self> {
        let n = config.tiling.count();
        if n != ranks.world {
            return Err(Error::Setup(format!(
                "{} tiles ({}) for {} NCCL ranks: give one rank per tile (set tiles in [simulation] or start {n} processes)",
                n,
                config.tiling.name(),
                ranks.world
            )));
        }
        Self::with_executor(config, |config, tiles| {
            Ok(match config.precision {
                ThermalPrecision::F32 => {
                    Box::new(NcclTile::<f32>::new(config, tiles, ranks, rendezvous, ptx, &initial)?)
                }
                ThermalPrecision::F64 => {
                    Box::new(NcclTile::<f64>::new(config, tiles, ranks, rendezvous, ptx, &initial)?)
                }
            })
        })
    }
}

/// A state that exercises every halo: the two layers of the benchmark box
/// with a temperature and velocity that vary along x and y.
pub fn check_state(config: &ThermalConfig) -> impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync {
    let (nx, ny) = (config.nx as f64, config.ny as f64);
    move |x, y| {
        let (a, b) = (std::f64::consts::TAU * x as f64 / nx, std::f64::consts::TAU * y as f64 / ny);
        let layer = if (y as f64) < ny / 2.0 { 1.1 } else { 0.9 };
        let t = THETA0 * (layer + 0.01 * a.sin() * b.cos());
        (1.0 + 0.01 * b.sin(), [0.01 * b.sin(), 0.005 * a.cos()], t)
    }
}

/// Runs `steps` steps of `config` as this rank of the job, times them, and
/// on rank 0 compares the gathered populations with one domain on its GPU
/// (what `lbm nccl --model d2q37` reports; its MLUPS count sites).
pub fn run_and_check(
    config: ThermalConfig,
    ranks: Ranks,
    rendezvous: &str,
    steps: u64,
    ptx: &str,
) -> Result<Option<NcclReport>> {
    let copy_bandwidth = if ranks.rank == 0 {
        GpuDevice::open(ranks.local, ptx)?.copy_bandwidth(crate::bench::COPY_BYTES, 20)?
    } else {
        0.0
    };
    let mut s = ThermalSolver::join(config.clone(), ranks, rendezvous, ptx, check_state(&config))?;
    // NCCL connects peers on their first messages: warm-up steps keep that
    // out of the timing (they count towards the comparison).
    let warm_up = (steps / 2).min(10);
    let result = (|| {
        s.step(warm_up)?;
        s.synchronize()?;
        let start = Instant::now();
        s.step(steps - warm_up)?;
        s.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        Ok((seconds, s.gather_populations()?))
    })();
    let (seconds, got) = match result {
        Ok(r) => r,
        Err(e) => {
            s.abort();
            return Err(e);
        }
    };
    let Some(got) = got else { return Ok(None) };
    drop(s);
    let one = ThermalConfig { tiling: Tiling::ONE, ..config.clone() };
    let mut reference =
        ThermalSolver::new(one, crate::solver::BackendKind::Gpu(ranks.local), ptx, check_state(&config))?;
    reference.step(steps)?;
    let want = reference.populations()?;
    let differ = want.iter().zip(&got).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
    Ok(Some(NcclReport {
        world: ranks.world,
        mlups: config.nx as f64 * config.ny as f64 * (steps - warm_up) as f64 / seconds / 1e6,
        timed_steps: steps - warm_up,
        copy_bandwidth,
        differ,
        total: want.len(),
    }))
}
