//! One process per GPU over NCCL, the path to clusters: the NCCL executor
//! of the step plan. Each process owns one z-partition (the plan of
//! [`crate::halo`]) and exchanges its halo planes with `ncclSend`/`ncclRecv`
//! on a stream of its own, overlapped with its interior as in
//! [`crate::multi_gpu`]. Read-backs are collective: every rank computes its
//! own cells' fields, mass or forces, and rank 0 receives only those.
//!
//! The raw NCCL calls live in `Comm`, a thin wrapper: cudarc's safe
//! communicator takes typed slices and gives no access to the handle, which
//! polling for a dead peer (`ncclCommGetAsyncError`) and aborting from a
//! watchdog thread need.
//!
//! Ranks come from the launcher: `RANK`/`WORLD_SIZE`/`LOCAL_RANK`
//! (torchrun-style), Open MPI's `OMPI_COMM_WORLD_*`, or Slurm's
//! `SLURM_PROCID`/`SLURM_NTASKS`/`SLURM_LOCALID`. The NCCL unique id travels
//! through a rendezvous the user names: `file:PATH` (rank 0 writes it; the
//! file must not exist before the run, and rank 0 removes it at the end) or
//! `tcp:HOST:PORT` (rank 0 listens there).

use crate::bench::COPY_BYTES;
use crate::cell_blocks::CellBlocks;
use crate::checkpoint;
use crate::error::{CudaContextExt, Error, Result};
use crate::fields::PartFields;
use crate::gpu::{DeviceStorage, GpuDevice, GpuPart};
use crate::halo::{halo_copies, HaloRun};
use crate::multi_gpu::GpuSolver;
use crate::overlap::SplitStep;
use crate::part_grid::PartGrid;
use crate::partition::{local_config, Slab};
use crate::peer;
use crate::plan::{Executor, Plan, Region, Schedule};
use crate::simulation::{Partitions, Simulation};
use crate::solver::{storage_bytes, BackendKind, SavedPart, SavedState, Solver, SolverConfig};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use cudarc::nccl::sys as nccl;
use kernels_gpu::lattice::z_pairs;
use kernels_gpu::Lattice;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes staged on the device at a time when a rank sends host data to
/// another (read-backs, restores): little memory beyond the partition.
pub const CHUNK_BYTES: usize = 64 << 20;

/// NCCL moves everything as bytes: halos are raw population storage.
const BYTES: nccl::ncclDataType_t = nccl::ncclDataType_t::ncclUint8;

/// How often the watchdog asks NCCL whether a peer has failed.
const WATCH_INTERVAL: Duration = Duration::from_millis(200);

/// How long a rank waits for NCCL work (a step's exchange, a read-back, rank
/// 0's next command) before it takes a peer for dead, unless
/// `LBM_NCCL_TIMEOUT` (seconds) says otherwise: a peer killed outright does
/// not always raise NCCL's asynchronous error, it just never answers.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// The wait limit: `LBM_NCCL_TIMEOUT` seconds, or [`DEFAULT_TIMEOUT`].
fn wait_limit() -> Duration {
    std::env::var("LBM_NCCL_TIMEOUT")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64)
}

/// How long a rank waits for the rendezvous.
const RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(120);

/// This process's place in the job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranks {
    /// Global rank.
    pub rank: usize,
    /// Number of processes.
    pub world: usize,
    /// Rank on this node: the GPU ordinal to use.
    pub local: usize,
}

impl Ranks {
    /// The ranks the launcher set, or `None` when no launcher variables are present.
    pub fn from_env() -> Result<Option<Ranks>> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Option<Ranks>> {
        let schemes = [
            ["RANK", "WORLD_SIZE", "LOCAL_RANK"],
            ["OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"],
            ["SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"],
        ];
        for names in schemes {
            let values: Vec<Option<String>> = names.iter().map(|n| get(n)).collect();
            if values.iter().all(Option::is_none) {
                continue;
            }
            let mut parsed = [0usize; 3];
            for ((name, value), out) in names.iter().zip(&values).zip(&mut parsed) {
                let v = value.as_deref().ok_or_else(|| {
                    Error::Setup(format!("{} is set but {name} is not: set all of {}", names[0], names.join(", ")))
                })?;
                *out = v.trim().parse().map_err(|_| Error::Setup(format!("{name} = `{v}` is not a number")))?;
            }
            let [rank, world, local] = parsed;
            if world == 0 || rank >= world {
                return Err(Error::Setup(format!("{} = {rank} is not below {} = {world}", names[0], names[1])));
            }
            return Ok(Some(Ranks { rank, world, local }));
        }
        Ok(None)
    }
}

/// Shares rank 0's NCCL unique id through `rendezvous` (`file:PATH` or `tcp:HOST:PORT`).
fn share_id(ranks: Ranks, rendezvous: &str) -> Result<nccl::ncclUniqueId> {
    let bad = |m: String| Error::Setup(format!("rendezvous `{rendezvous}`: {m}"));
    let mut id = nccl::ncclUniqueId { internal: [0; 128] };
    if ranks.rank == 0 {
        // SAFETY: writes 128 bytes into `id`.
        nccl_result(unsafe { nccl::ncclGetUniqueId(&mut id) }, "creating the NCCL id")?;
    }
    let bytes: Vec<u8> = id.internal.iter().map(|&c| c as u8).collect();
    let received = if let Some(path) = rendezvous.strip_prefix("file:") {
        let path = Path::new(path);
        if ranks.rank == 0 {
            crate::files::write_atomic(path, &bytes)?;
            bytes
        } else {
            let start = Instant::now();
            loop {
                match std::fs::read(path) {
                    Ok(b) if b.len() == 128 => break b,
                    _ if start.elapsed() > RENDEZVOUS_TIMEOUT => {
                        return Err(bad(format!("rank 0 wrote no id within {} s", RENDEZVOUS_TIMEOUT.as_secs())))
                    }
                    _ => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        }
    } else if let Some(addr) = rendezvous.strip_prefix("tcp:") {
        if ranks.rank == 0 {
            let listener = std::net::TcpListener::bind(addr).map_err(|e| bad(format!("cannot listen: {e}")))?;
            for _ in 1..ranks.world {
                let (mut s, _) = listener.accept().map_err(|e| bad(format!("accepting a rank: {e}")))?;
                s.write_all(&bytes).map_err(|e| bad(format!("sending the id: {e}")))?;
            }
            bytes
        } else {
            let start = Instant::now();
            loop {
                match std::net::TcpStream::connect(addr) {
                    Ok(mut s) => {
                        let mut b = vec![0u8; 128];
                        s.read_exact(&mut b).map_err(|e| bad(format!("reading the id: {e}")))?;
                        break b;
                    }
                    Err(_) if start.elapsed() < RENDEZVOUS_TIMEOUT => std::thread::sleep(Duration::from_millis(100)),
                    Err(e) => {
                        return Err(bad(format!("rank 0 not reachable within {} s: {e}", RENDEZVOUS_TIMEOUT.as_secs())))
                    }
                }
            }
        }
    } else {
        return Err(bad("use file:PATH or tcp:HOST:PORT".into()));
    };
    for (c, b) in id.internal.iter_mut().zip(received) {
        *c = b as _;
    }
    Ok(id)
}

/// Whether the NCCL library (libnccl.so.2) can be loaded.
pub fn library_present() -> bool {
    // SAFETY: only probes whether the library can be loaded.
    unsafe { nccl::is_culib_present() }
}

/// An error unless the NCCL library can be loaded.
pub(crate) fn require_library() -> Result<()> {
    if library_present() {
        return Ok(());
    }
    Err(Error::Setup(
        "the NCCL library (libnccl.so.2) was not found: install NCCL or add its directory to LD_LIBRARY_PATH".into(),
    ))
}

pub(crate) fn nccl_result(r: nccl::ncclResult_t, what: &str) -> Result<()> {
    if r == nccl::ncclResult_t::ncclSuccess {
        Ok(())
    } else {
        Err(Error::Nccl { context: what.into(), code: format!("{r:?}") })
    }
}

/// A raw NCCL communicator: the one place the NCCL API is called.
pub(crate) struct Comm {
    raw: nccl::ncclComm_t,
    /// Set once the communicator has been aborted (by an error or the watchdog).
    aborted: Arc<AtomicBool>,
    /// When this rank began waiting for NCCL work, in milliseconds since
    /// `started`; 0 while it is not waiting.
    waiting_since: Arc<std::sync::atomic::AtomicU64>,
    started: Instant,
}

/// The communicator handle, for the watchdog thread.
#[derive(Clone, Copy)]
struct RawComm(nccl::ncclComm_t);
// SAFETY: NCCL lets a communicator move between threads; the watchdog only
// polls `ncclCommGetAsyncError` and calls `ncclCommAbort`, which NCCL
// documents as safe beside calls on other threads.
unsafe impl Send for RawComm {}
// SAFETY: as for `RawComm`; the main thread's calls go through `&mut NcclParts`.
unsafe impl Send for Comm {}

impl Comm {
    /// Joins the communicator of `ranks.world` ranks sharing `id` (blocks
    /// until every rank has joined).
    fn join(ranks: Ranks, id: nccl::ncclUniqueId) -> Result<Self> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: `raw` receives the communicator; every rank passes the same id.
        let joined = unsafe { nccl::ncclCommInitRank(&mut raw, ranks.world as i32, id, ranks.rank as i32) };
        nccl_result(joined, "joining the job")?;
        Ok(Self {
            raw,
            aborted: Arc::new(AtomicBool::new(false)),
            waiting_since: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            started: Instant::now(),
        })
    }

    /// Joins the job of `ranks` on the device of `ctx`, the NCCL id shared
    /// through `rendezvous`, and starts the dead-peer watchdog (which names
    /// `peers`, the ranks this one exchanges with).
    pub(crate) fn connect(
        ranks: Ranks,
        rendezvous: &str,
        ctx: &Arc<cudarc::driver::CudaContext>,
        peers: &[usize],
    ) -> Result<Self> {
        require_library()?;
        let id = share_id(ranks, rendezvous)?;
        ctx.bind_to_thread().ctx("binding the device")?;
        // ncclCommInitRank blocks until every rank joins: a rank that failed
        // would leave the others waiting forever, so a watchdog ends them.
        let joined = Arc::new(AtomicBool::new(false));
        let watch = joined.clone();
        std::thread::spawn(move || {
            std::thread::sleep(RENDEZVOUS_TIMEOUT);
            if !watch.load(Ordering::SeqCst) {
                eprintln!(
                    "error: rank {} of {}: not every rank joined NCCL within {} s; another rank has probably failed (see its messages)",
                    ranks.rank,
                    ranks.world,
                    RENDEZVOUS_TIMEOUT.as_secs()
                );
                std::process::exit(1);
            }
        });
        let comm = Self::join(ranks, id);
        joined.store(true, Ordering::SeqCst);
        let comm = comm?;
        comm.watch(ranks, peers);
        if ranks.rank == 0 {
            if let Some(path) = rendezvous.strip_prefix("file:") {
                std::fs::remove_file(path).ok();
            }
        }
        Ok(comm)
    }

    /// Starts the watchdog's clock until the guard drops: around every call
    /// that may block on NCCL work (a launch into a full queue behind an
    /// exchange, a synchronisation, a message). Healthy calls return within
    /// a step; one blocked past the limit means a peer is gone.
    pub(crate) fn busy(&self) -> Busy {
        let now = self.started.elapsed().as_millis() as u64;
        self.waiting_since.store(now.max(1), Ordering::SeqCst);
        Busy(self.waiting_since.clone())
    }

    /// Runs `wait` under the watchdog's clock.
    pub(crate) fn waiting<T>(&self, wait: impl FnOnce() -> T) -> T {
        let _busy = self.busy();
        wait()
    }

    /// Watches for a failed peer from a thread of its own: a rank that
    /// died shows as NCCL's asynchronous error, or only as work that never
    /// completes, while this rank is blocked waiting for it. The watchdog
    /// then aborts the communicator, which ends the wait, and the process
    /// (exit status 3), naming this rank and the neighbours it exchanges with.
    fn watch(&self, ranks: Ranks, peers: &[usize]) {
        let (raw, aborted) = (RawComm(self.raw), self.aborted.clone());
        let mut peers: Vec<usize> = peers.iter().copied().filter(|&p| p != ranks.rank).collect();
        peers.sort_unstable();
        peers.dedup();
        let (waiting_since, started, limit) = (self.waiting_since.clone(), self.started, wait_limit());
        std::thread::spawn(move || {
            let raw = raw;
            loop {
                std::thread::sleep(WATCH_INTERVAL);
                if aborted.load(Ordering::SeqCst) {
                    return;
                }
                let mut state = nccl::ncclResult_t::ncclSuccess;
                // SAFETY: polls a live communicator (the flag says when it is gone).
                let polled = unsafe { nccl::ncclCommGetAsyncError(raw.0, &mut state) };
                let failed = polled != nccl::ncclResult_t::ncclSuccess
                    || !matches!(state, nccl::ncclResult_t::ncclSuccess | nccl::ncclResult_t::ncclInProgress);
                let since = waiting_since.load(Ordering::SeqCst);
                let waited = Duration::from_millis((started.elapsed().as_millis() as u64).saturating_sub(since));
                let stuck = since != 0 && waited > limit;
                if !(failed || stuck) || aborted.swap(true, Ordering::SeqCst) {
                    continue;
                }
                // SAFETY: aborting ends any NCCL work this rank is blocked in.
                unsafe { nccl::ncclCommAbort(raw.0) };
                let why = if failed {
                    format!("NCCL reports {state:?}")
                } else {
                    format!("no NCCL progress for {} s (LBM_NCCL_TIMEOUT)", waited.as_secs())
                };
                let names: Vec<String> = peers.iter().map(|p| p.to_string()).collect();
                let peers = match names.len() {
                    0 => "no other rank".to_string(),
                    1 => format!("rank {}", names[0]),
                    n => format!("ranks {} and {}", names[..n - 1].join(", "), names[n - 1]),
                };
                eprintln!(
                    "error: rank {} of {}: {why}: a peer rank died or became unreachable \
                     (this rank exchanges with {peers}); aborting the job",
                    ranks.rank, ranks.world
                );
                std::process::exit(3);
            }
        });
    }

    /// Queues the sends and receives `f` issues as one group.
    pub(crate) fn group(&self, f: impl FnOnce(&Self) -> Result<()>) -> Result<()> {
        // SAFETY: plain group markers.
        nccl_result(unsafe { nccl::ncclGroupStart() }, "starting a group")?;
        let queued = f(self);
        // Close the group whatever failed, so later calls are not queued into it.
        // SAFETY: as above.
        let ended = nccl_result(unsafe { nccl::ncclGroupEnd() }, "ending a group");
        queued.and(ended)
    }

    /// Queues a send of `bytes` bytes at device address `at` to `peer` on `stream`.
    ///
    /// # Safety
    /// The range must stay valid and unwritten until the stream reaches the send.
    pub(crate) unsafe fn send(
        &self,
        at: u64,
        bytes: usize,
        peer: usize,
        stream: &CudaStream,
        what: &str,
    ) -> Result<()> {
        let s = stream.cu_stream() as nccl::cudaStream_t;
        nccl_result(unsafe { nccl::ncclSend(at as *const _, bytes, BYTES, peer as i32, self.raw, s) }, what)
    }

    /// Queues a receive of `bytes` bytes into device address `at` from `peer` on `stream`.
    ///
    /// # Safety
    /// The range must stay valid and untouched until the stream reaches the receive.
    pub(crate) unsafe fn recv(
        &self,
        at: u64,
        bytes: usize,
        peer: usize,
        stream: &CudaStream,
        what: &str,
    ) -> Result<()> {
        let s = stream.cu_stream() as nccl::cudaStream_t;
        nccl_result(unsafe { nccl::ncclRecv(at as *mut _, bytes, BYTES, peer as i32, self.raw, s) }, what)
    }

    /// Rank 0's two words reach every rank, in place in the device buffer `buf`.
    fn broadcast(&self, buf: &mut cudarc::driver::CudaSlice<u64>, stream: &Arc<CudaStream>) -> Result<()> {
        let (ptr, guard) = buf.device_ptr_mut(stream);
        // SAFETY: in place over the words of `buf`, on the stream that owns it.
        let sent = unsafe {
            nccl::ncclBroadcast(
                ptr as *const _,
                ptr as *mut _,
                2,
                nccl::ncclDataType_t::ncclUint64,
                0,
                self.raw,
                stream.cu_stream() as nccl::cudaStream_t,
            )
        };
        drop(guard);
        nccl_result(sent, "broadcasting a message")
    }

    /// Sends host bytes to `peer` on `stream`, staged through the device in chunks.
    pub(crate) fn send_bytes(&self, stream: &Arc<CudaStream>, peer: usize, bytes: &[u8]) -> Result<()> {
        for chunk in bytes.chunks(CHUNK_BYTES) {
            let buf = stream.clone_htod(chunk).ctx("staging data")?;
            let (ptr, _guard) = buf.device_ptr(stream);
            // SAFETY: `buf` holds the chunk until the stream is synchronised below.
            unsafe { self.send(ptr, chunk.len(), peer, stream, "sending data")? };
            self.waiting(|| stream.synchronize()).ctx("sending data")?;
        }
        Ok(())
    }

    /// Receives `len` host bytes from `peer` on `stream` (sent by [`Self::send_bytes`]).
    pub(crate) fn recv_bytes(&self, stream: &Arc<CudaStream>, peer: usize, len: usize) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(len);
        let mut buf = stream.alloc_zeros::<u8>(CHUNK_BYTES.min(len).max(1)).ctx("staging data")?;
        while out.len() < len {
            let n = (len - out.len()).min(CHUNK_BYTES);
            {
                let (ptr, _guard) = buf.device_ptr_mut(stream);
                // SAFETY: `buf` holds at least `n` bytes; the stream is synchronised by the read below.
                unsafe { self.recv(ptr, n, peer, stream, "receiving data")? };
            }
            let staged = self.waiting(|| stream.clone_dtoh(&buf.slice(..n))).ctx("reading received data")?;
            out.extend_from_slice(&staged);
        }
        Ok(out)
    }

    /// Every rank's `mine` on rank 0 (`len(r)` bytes from rank `r`); an
    /// empty list on the others.
    pub(crate) fn gather_bytes(
        &self,
        ranks: Ranks,
        stream: &Arc<CudaStream>,
        mine: Vec<u8>,
        len: impl Fn(usize) -> usize,
    ) -> Result<Vec<Vec<u8>>> {
        if ranks.rank != 0 {
            self.send_bytes(stream, 0, &mine)?;
            return Ok(Vec::new());
        }
        let mut all = vec![mine];
        for r in 1..ranks.world {
            all.push(self.recv_bytes(stream, r, len(r))?);
        }
        Ok(all)
    }

    /// Rank 0's two words reach every rank through the staging of `stream`.
    pub(crate) fn broadcast_words(&self, stream: &Arc<CudaStream>, words: [u64; 2]) -> Result<[u64; 2]> {
        let mut buf = stream.clone_htod(&words).ctx("staging a message")?;
        self.broadcast(&mut buf, stream)?;
        let got = self.waiting(|| stream.clone_dtoh(&buf)).ctx("reading a message")?;
        Ok([got[0], got[1]])
    }

    /// Ends this rank's part at once: pending NCCL work is abandoned.
    pub(crate) fn abort(&self) {
        if !self.aborted.swap(true, Ordering::SeqCst) {
            // SAFETY: the communicator is valid until `Drop`, which skips an aborted one.
            unsafe { nccl::ncclCommAbort(self.raw) };
        }
    }
}

/// Stops the watchdog's clock when dropped (see [`Comm::busy`]).
pub(crate) struct Busy(Arc<std::sync::atomic::AtomicU64>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.store(0, Ordering::SeqCst);
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        if !self.aborted.swap(true, Ordering::SeqCst) {
            // SAFETY: the communicator was created in `join` and is destroyed once.
            unsafe { nccl::ncclCommDestroy(self.raw) };
        }
    }
}

/// This process's partition of a domain split over the job's ranks: the
/// NCCL executor. Its [`Partitions`] read-backs are collective: every rank
/// must call the same one (rank 0 through its solver, the others as
/// [`crate::nccl_run`] tells them); rank 0 gets every partition's result,
/// the others empty lists.
pub struct NcclParts<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    config: SolverConfig,
    ranks: Ranks,
    /// Every rank's layers.
    slabs: Vec<Slab>,
    gpu: GpuPart<L, Q, S>,
    comm: Comm,
    copies: Arc<CudaStream>,
    split: SplitStep,
    /// Recorded after the last exchange (sends and receives) of this rank.
    exchanged: CudaEvent,
    /// A sparse grid's halo runs and staging buffers (none for the dense box).
    packed: Option<PackedHalo<S::Elem>>,
}

/// A sparse grid's halo over NCCL, which sends contiguous ranges only: per
/// step parity and copy ([`halo_copies`] order), the runs this rank sends
/// and those it receives, packed back to back into staging buffers by
/// strided copies on the NCCL stream before the send and unpacked after the
/// receive.
struct PackedHalo<E> {
    sends: [[Vec<HaloRun>; 2]; 2],
    recvs: [[Vec<HaloRun>; 2]; 2],
    /// Staging of each copy's outgoing and incoming values.
    out: [CudaSlice<E>; 2],
    into: [CudaSlice<E>; 2],
}

impl<E: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits> PackedHalo<E> {
    /// The runs of rank `ranks.rank` (`gpu`) of `config` split into
    /// `slabs`, paired with its neighbours' grids (built here on the host).
    fn new<L: Lattice<Q>, const Q: usize, S: DeviceStorage<Elem = E>>(
        config: &SolverConfig,
        slabs: &[Slab],
        ranks: Ranks,
        gpu: &GpuPart<L, Q, S>,
    ) -> Result<Self> {
        let w = ranks.world;
        let (up, down) = ((ranks.rank + 1) % w, (ranks.rank + w - 1) % w);
        let grid_of = |r: usize| -> Result<PartGrid> {
            if r == ranks.rank {
                return Ok(gpu.grid().clone());
            }
            PartGrid::new(&local_config(config, &slabs[r])?, true)
        };
        let (g_up, g_down) = (grid_of(up)?, grid_of(down)?);
        let (me, len) = (gpu.grid(), |r: usize| slabs[r].len());
        let mut sends: [[Vec<HaloRun>; 2]; 2] = Default::default();
        let mut recvs: [[Vec<HaloRun>; 2]; 2] = Default::default();
        for parity in 0..2 {
            for (ci, c) in halo_copies(config.streaming, parity, z_pairs(&L::C)).iter().enumerate() {
                let (to, g_to) = if c.up { (up, &g_up) } else { (down, &g_down) };
                sends[parity as usize][ci] = me.halo_runs(c, len(ranks.rank), g_to, len(to), Q);
                let (from, g_from) = if c.up { (down, &g_down) } else { (up, &g_up) };
                recvs[parity as usize][ci] = g_from.halo_runs(c, len(from), me, len(ranks.rank), Q);
            }
        }
        let most = |all: &[[Vec<HaloRun>; 2]; 2], ci: usize| {
            all.iter().map(|p| p[ci].iter().map(HaloRun::values).sum::<usize>()).max().unwrap_or(0).max(1)
        };
        let s = gpu.device().stream();
        let alloc = |n: usize| s.alloc_zeros::<E>(n).ctx("allocating halo staging");
        let out = [alloc(most(&sends, 0))?, alloc(most(&sends, 1))?];
        let into = [alloc(most(&recvs, 0))?, alloc(most(&recvs, 1))?];
        Ok(Self { sends, recvs, out, into })
    }
}

/// This rank's simulation.
pub type NcclSolver<L, const Q: usize, S> = Simulation<NcclParts<L, Q, S>>;

/// Joins the job: opens GPU `ranks.local`, builds this rank's partition of
/// `config` and the NCCL communicator, and starts the dead-peer watchdog.
pub fn join<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
    config: SolverConfig,
    ranks: Ranks,
    rendezvous: &str,
    ptx: &str,
) -> Result<NcclSolver<L, Q, S>> {
    config.validate()?;
    let d = config.domain.dims;
    if z_pairs(&L::C) == 0 || d.nz < 2 * ranks.world as u32 {
        return Err(Error::Setup(format!(
            "{} layers along z cannot be split over {} ranks: each needs at least 2 layers of a 3D lattice",
            d.nz, ranks.world
        )));
    }
    let slabs = Slab::split_grid(&config, ranks.world as u32, kernels_gpu::grid::halo_width::<L, Q>())?;
    let device = GpuDevice::open(ranks.local, ptx)?;
    require_library()?;
    let gpu = GpuPart::<L, Q, S>::new(&config, slabs[ranks.rank].clone(), device.clone())
        .map_err(|e| crate::multi_gpu::in_partition(e, format!("rank {} on GPU {}", ranks.rank, ranks.local)))?;
    let packed = match gpu.grid() {
        PartGrid::Dense(_) => None,
        PartGrid::Sparse(_) => Some(PackedHalo::new(&config, &slabs, ranks, &gpu)?),
    };
    let ctx = device.context().clone();
    // NCCL moves data with kernels: the highest priority lets them start
    // while the interior kernel still fills the GPU.
    ctx.bind_to_thread().ctx("binding the device")?;
    let (_, highest) = cudarc::driver::result::stream::get_priority_range().ctx("reading stream priorities")?;
    let copies = ctx.new_stream_with_priority(highest).ctx("creating the NCCL stream")?;
    let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).ctx("creating an event");
    let (split, exchanged) = (SplitStep::new(&ctx)?, event()?);
    let w = ranks.world;
    let comm = Comm::connect(ranks, rendezvous, &ctx, &[(ranks.rank + w - 1) % w, (ranks.rank + 1) % w])?;
    let exec = NcclParts { config: config.clone(), ranks, slabs, gpu, comm, copies, split, exchanged, packed };
    Ok(Simulation::from_parts(config, exec, Plan::split(1, Schedule::Overlapped)))
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> NcclParts<L, Q, S> {
    /// This rank's place in the job.
    pub fn ranks(&self) -> Ranks {
        self.ranks
    }

    /// Rank 0's `words` reach every rank (the others pass anything): the
    /// small messages that keep the ranks in step.
    pub fn broadcast(&mut self, words: [u64; 2]) -> Result<[u64; 2]> {
        Partitions::synchronize(self)?;
        self.comm.broadcast_words(&self.copies, words)
    }

    /// Ends this rank's part in the job at once, after an error: pending
    /// NCCL work is abandoned rather than waited for.
    pub fn abort(&mut self) {
        self.comm.abort();
    }

    /// [`Comm::gather_bytes`] of messages whose sizes only their senders
    /// know (a sparse partition's stored cells): each size goes first.
    fn gather_sized(&self, mine: Vec<u8>) -> Result<Vec<Vec<u8>>> {
        let sizes = self.gather_bytes((mine.len() as u64).to_ne_bytes().to_vec(), |_| 8)?;
        let sizes: Vec<usize> = sizes.iter().map(|b| bytemuck::pod_read_unaligned::<u64>(b) as usize).collect();
        self.gather_bytes(mine, |r| sizes[r])
    }

    fn gather_bytes(&self, mine: Vec<u8>, len: impl Fn(usize) -> usize) -> Result<Vec<Vec<u8>>> {
        self.comm.gather_bytes(self.ranks, &self.copies, mine, len)
    }

    fn send_bytes(&self, peer: usize, bytes: &[u8]) -> Result<()> {
        self.comm.send_bytes(&self.copies, peer, bytes)
    }

    fn recv_bytes(&self, peer: usize, len: usize) -> Result<Vec<u8>> {
        self.comm.recv_bytes(&self.copies, peer, len)
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Executor for NcclParts<L, Q, S> {
    fn update(&mut self, _part: usize, region: Region, t: u64) -> Result<()> {
        let _busy = self.comm.busy();
        let compute = self.gpu.device().stream().clone();
        match region {
            Region::Boundary => {
                self.split.begin(&compute, &[&self.exchanged])?;
                let boundary = self.split.stream().clone();
                self.gpu.launch(&boundary, region, t)?;
                self.split.end_boundary()
            }
            _ => self.gpu.launch(&compute, region, t),
        }
    }

    fn exchange(&mut self, _part: usize, t: u64) -> Result<()> {
        let _busy = self.comm.busy();
        let w = self.ranks.world;
        let (up_peer, down_peer) = ((self.ranks.rank + 1) % w, (self.ranks.rank + w - 1) % w);
        self.copies.wait(self.split.boundary_done()).ctx("waiting for boundary layers")?;
        if let Some(packed) = &self.packed {
            return self.exchange_packed(packed, t, [up_peer, down_peer]);
        }
        // The dense box's planes are contiguous: sent in place.
        let len = self.gpu.slab().len();
        let d = self.config.domain.dims;
        let (elem, plane) = (std::mem::size_of::<S::Elem>(), d.nx * d.ny);
        let base = self.gpu.output_address(t);
        let at = |i: usize| base + (i * elem) as u64;
        let copies = halo_copies(self.config.streaming, t, z_pairs(&L::C));
        self.comm.group(|comm| {
            for c in &copies {
                let (from, _) = c.ranges(len, len, plane, Q);
                let peer = if c.up { up_peer } else { down_peer };
                // SAFETY: the range lies inside this rank's buffer, which the
                // boundary stream does not touch again before `exchanged`.
                unsafe { comm.send(at(from.start), from.len() * elem, peer, &self.copies, "sending halo planes")? };
            }
            for c in &copies {
                // The copy `c` that this rank receives comes from the other side.
                let (_, to) = c.ranges(len, len, plane, Q);
                let peer = if c.up { down_peer } else { up_peer };
                // SAFETY: as above; no cell touches the received planes this step.
                unsafe { comm.recv(at(to.start), to.len() * elem, peer, &self.copies, "receiving halo planes")? };
            }
            Ok(())
        })?;
        self.exchanged.record(&self.copies).ctx("recording an event")
    }

    fn end_step(&mut self, _t: u64) -> Result<()> {
        self.gpu.end_step();
        Ok(())
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> NcclParts<L, Q, S> {
    /// The halo exchange of step `t` of a sparse grid (`packed`), with the
    /// neighbours `[up, down]`: pack, send and receive, unpack.
    fn exchange_packed(&self, packed: &PackedHalo<S::Elem>, t: u64, [up, down]: [usize; 2]) -> Result<()> {
        let (dev, elem, parity) = (self.gpu.device(), std::mem::size_of::<S::Elem>(), (t % 2) as usize);
        let base = self.gpu.output_address(t);
        let copies = halo_copies(self.config.streaming, t, z_pairs(&L::C));
        let address = |b: &CudaSlice<S::Elem>| b.device_ptr(&self.copies).0;
        let (out, into) = (packed.out.each_ref().map(address), packed.into.each_ref().map(address));
        let values = |runs: &[HaloRun]| runs.iter().map(HaloRun::values).sum::<usize>();
        for (ci, runs) in packed.sends[parity].iter().enumerate() {
            let mut at = 0;
            for run in runs {
                // SAFETY: the run lies in this rank's buffer (`PartGrid::halo_runs`)
                // and in the staging buffer, sized for the most values.
                unsafe {
                    peer::copy_placed_async(
                        (dev, base, run.sender()),
                        (dev, out[ci], run.packed(at)),
                        run,
                        elem,
                        &self.copies,
                    )?
                };
                at += run.values();
            }
        }
        self.comm.group(|comm| {
            for (ci, c) in copies.iter().enumerate() {
                let (n, peer) = (values(&packed.sends[parity][ci]), if c.up { up } else { down });
                if n > 0 {
                    // SAFETY: the staging buffer holds `n` values, untouched until the stream passes the send.
                    unsafe { comm.send(out[ci], n * elem, peer, &self.copies, "sending halo values")? };
                }
            }
            for (ci, c) in copies.iter().enumerate() {
                let (n, peer) = (values(&packed.recvs[parity][ci]), if c.up { down } else { up });
                if n > 0 {
                    // SAFETY: as above, for the incoming staging buffer.
                    unsafe { comm.recv(into[ci], n * elem, peer, &self.copies, "receiving halo values")? };
                }
            }
            Ok(())
        })?;
        for (ci, runs) in packed.recvs[parity].iter().enumerate() {
            let mut at = 0;
            for run in runs {
                // SAFETY: as for the packing; no cell touches the received values this step.
                unsafe {
                    peer::copy_placed_async(
                        (dev, into[ci], run.packed(at)),
                        (dev, base, run.receiver()),
                        run,
                        elem,
                        &self.copies,
                    )?
                };
                at += run.values();
            }
        }
        self.exchanged.record(&self.copies).ctx("recording an event")
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Partitions for NcclParts<L, Q, S> {
    type Storage = S;

    fn slabs(&self) -> &[Slab] {
        &self.slabs
    }

    fn synchronize(&mut self) -> Result<()> {
        self.comm.waiting(|| {
            self.gpu.device().stream().synchronize().ctx("running time steps")?;
            self.split.synchronize()?;
            self.copies.synchronize().ctx("finishing the halo exchange")
        })
    }

    fn fields(&mut self, t: u64) -> Result<Vec<PartFields>> {
        self.synchronize()?;
        let mine = self.gpu.fields(t)?.to_bytes();
        let all = self.gather_sized(mine)?;
        all.iter().map(|b| PartFields::from_bytes(b)).collect()
    }

    fn masses(&mut self, t: u64) -> Result<Vec<f64>> {
        self.synchronize()?;
        let mine = self.gpu.mass(t)?.to_ne_bytes().to_vec();
        Ok(self.gather_bytes(mine, |_| 8)?.iter().map(|b| bytemuck::pod_collect_to_vec::<u8, f64>(b)[0]).collect())
    }

    /// Every rank holds the objects' masks (built from the case file, as its
    /// configuration is: [`crate::nccl_run::join`]), so nothing but the
    /// forces travels.
    fn forces(&mut self, t: u64, objects: &[CellBlocks<bool>]) -> Result<Vec<Vec<[f64; 3]>>> {
        self.synchronize()?;
        let own = self.gpu.forces(t, objects)?;
        let mine = bytemuck::cast_slice::<[f64; 3], u8>(&own).to_vec();
        let all = self.gather_bytes(mine, |_| 24 * objects.len())?;
        Ok(all.iter().map(|b| bytemuck::pod_collect_to_vec::<u8, [f64; 3]>(b)).collect())
    }

    fn populations(&mut self) -> Result<Vec<Vec<S>>> {
        self.synchronize()?;
        let mine = storage_bytes(&self.gpu.own_populations()?).to_vec();
        let layer = Q * (self.config.domain.dims.nx * self.config.domain.dims.ny) as usize * S::BYTES;
        let slabs = self.slabs.clone();
        let all = self.gather_bytes(mine, |r| layer * slabs[r].z.len())?;
        all.iter()
            .map(|b| {
                let mut v = vec![S::ZERO; b.len() / S::BYTES];
                crate::solver::restore_storage(&mut v, b).map(|_| v)
            })
            .collect()
    }

    fn saved_parts(&mut self) -> Result<Vec<SavedPart>> {
        self.synchronize()?;
        let all = self.gather_sized(self.gpu.saved_part()?.to_bytes())?;
        all.iter().map(|b| SavedPart::from_bytes(b)).collect()
    }

    /// Rank 0 holds the state and sends it to every rank, which takes the
    /// cells it needs; the others pass any state (an empty one) and receive.
    fn restore(&mut self, state: &SavedState, t: u64) -> Result<()> {
        self.synchronize()?;
        let d = self.config.domain.dims;
        if self.ranks.rank == 0 {
            let bytes = checkpoint::to_bytes(&self.config, state);
            for r in 1..self.ranks.world {
                self.send_bytes(r, &(bytes.len() as u64).to_ne_bytes())?;
                self.send_bytes(r, &bytes)?;
            }
            self.gpu.restore(state, d, t)
        } else {
            let len = bytemuck::pod_read_unaligned::<u64>(&self.recv_bytes(0, 8)?) as usize;
            let bytes = self.recv_bytes(0, len)?;
            let state = checkpoint::decode(&bytes, &self.config).map_err(Error::Setup)?;
            self.gpu.restore(&state, d, t)
        }
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Gpu(self.ranks.local)
    }

    fn kernel_report(&self) -> Option<crate::solver::KernelReport> {
        self.gpu.kernel_report()
    }
}

/// What `lbm nccl` reports on rank 0.
#[derive(Clone, Debug)]
pub struct NcclReport {
    /// Processes.
    pub world: usize,
    /// Million cell updates per second over the whole domain, timed over
    /// `timed_steps` (after untimed warm-up steps).
    pub mlups: f64,
    /// Steps timed.
    pub timed_steps: u64,
    /// Device-to-device copy bandwidth of rank 0's GPU, bytes read plus
    /// written per second, measured before the run.
    pub copy_bandwidth: f64,
    /// Populations that differ from a one-GPU run of the same steps.
    pub differ: usize,
    /// Populations compared.
    pub total: usize,
}

/// Runs `config` for `steps` steps as this rank, times it, and on rank 0
/// compares the gathered populations with a one-GPU run on its own GPU.
pub fn run_and_check(
    config: SolverConfig,
    ranks: Ranks,
    rendezvous: &str,
    steps: u64,
    ptx: &str,
) -> Result<Option<NcclReport>> {
    fn go<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
        config: SolverConfig,
        ranks: Ranks,
        rendezvous: &str,
        steps: u64,
        ptx: &str,
    ) -> Result<Option<NcclReport>> {
        // Rank 0's copy bandwidth, before the partition takes memory.
        let copy_bandwidth =
            if ranks.rank == 0 { GpuDevice::open(ranks.local, ptx)?.copy_bandwidth(COPY_BYTES, 20)? } else { 0.0 };
        let mut part = join::<L, Q, S>(config.clone(), ranks, rendezvous, ptx)?;
        // NCCL connects peers on their first send: untimed warm-up steps
        // keep that out of the speed (they count towards the comparison).
        let warm_up = (steps / 2).min(10);
        part.step(warm_up)?;
        part.synchronize()?;
        let start = Instant::now();
        part.step(steps - warm_up)?;
        part.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        // Collective: every rank sends its own layers to rank 0.
        let got = part.executor().populations()?.concat();
        if ranks.rank != 0 {
            return Ok(None);
        }
        let mut one = GpuSolver::<L, Q, S>::new(config.clone(), GpuDevice::open(ranks.local, ptx)?)?;
        one.step(steps)?;
        let want = one.executor().populations()?.concat();
        let size = std::mem::size_of::<S>();
        let (a, b) = (crate::solver::storage_bytes(&want), crate::solver::storage_bytes(&got));
        let differ = a.chunks(size).zip(b.chunks(size)).filter(|(x, y)| x != y).count();
        let cells = config.domain.dims.cells() as f64;
        Ok(Some(NcclReport {
            world: ranks.world,
            mlups: cells * (steps - warm_up) as f64 / seconds / 1e6,
            timed_steps: steps - warm_up,
            copy_bandwidth,
            differ,
            total: want.len(),
        }))
    }
    let (lattice, precision) = (config.lattice, config.precision);
    crate::dispatch!(lattice, precision, go(config, ranks, rendezvous, steps, ptx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_come_from_any_launcher_and_half_set_variables_are_errors() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
        };
        assert_eq!(Ranks::from_lookup(env(&[])).unwrap(), None);
        let torch = Ranks::from_lookup(env(&[("RANK", "1"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "1")])).unwrap();
        assert_eq!(torch, Some(Ranks { rank: 1, world: 4, local: 1 }));
        const OMPI: [(&str, &str); 3] =
            [("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_SIZE", "4"), ("OMPI_COMM_WORLD_LOCAL_RANK", "3")];
        assert_eq!(Ranks::from_lookup(env(&OMPI)).unwrap(), Some(Ranks { rank: 3, world: 4, local: 3 }));
        const SLURM: [(&str, &str); 3] = [("SLURM_PROCID", "5"), ("SLURM_NTASKS", "8"), ("SLURM_LOCALID", "1")];
        assert_eq!(Ranks::from_lookup(env(&SLURM)).unwrap(), Some(Ranks { rank: 5, world: 8, local: 1 }));
        let half = Ranks::from_lookup(env(&[("RANK", "0")])).unwrap_err().to_string();
        assert!(half.contains("WORLD_SIZE"), "{half}");
        let beyond = Ranks::from_lookup(env(&[("RANK", "4"), ("WORLD_SIZE", "4"), ("LOCAL_RANK", "0")]));
        assert!(beyond.unwrap_err().to_string().contains("not below"));
    }
}
