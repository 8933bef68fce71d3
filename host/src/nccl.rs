//! One process per GPU over NCCL, the path to clusters: each process owns
//! one z-partition (the plan of [`crate::halo`]) and exchanges its halo
//! planes with `ncclSend`/`ncclRecv` on a stream of its own, overlapped with
//! its interior as in [`crate::multi_gpu`].
//!
//! Ranks come from the launcher: `RANK`/`WORLD_SIZE`/`LOCAL_RANK`
//! (torchrun-style), Open MPI's `OMPI_COMM_WORLD_*`, or Slurm's
//! `SLURM_PROCID`/`SLURM_NTASKS`/`SLURM_LOCALID`. The NCCL unique id travels
//! through a rendezvous the user names: `file:PATH` (rank 0 writes it; the
//! file must not exist before the run, and rank 0 removes it at the end) or
//! `tcp:HOST:PORT` (rank 0 listens there).

use crate::bench::COPY_BYTES;
use crate::error::{CudaContextExt, Error, Result};
use crate::gpu::{DeviceStorage, GpuDevice, GpuSolver};
use crate::halo::halo_copies;
use crate::overlap::SplitStep;
use crate::partition::{local_config, local_layers, split, write_own_layers};
use crate::solver::{Solver, SolverConfig};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};
use cudarc::nccl::sys as nccl;
use kernels_gpu::lattice::z_pairs;
use kernels_gpu::layout::population_index;
use kernels_gpu::Lattice;
use std::io::{Read, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Layers rank 0 stages at a time when it gathers or scatters populations:
/// a few, so that it needs little device memory beyond its partition.
pub const CHUNK_LAYERS: usize = 4;

/// NCCL moves halos as bytes: the ranges are raw population storage.
const BYTES: nccl::ncclDataType_t = nccl::ncclDataType_t::ncclUint8;

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

pub(crate) fn nccl_result(r: nccl::ncclResult_t, what: &str) -> Result<()> {
    if r == nccl::ncclResult_t::ncclSuccess {
        Ok(())
    } else {
        Err(Error::Nccl { context: what.into(), code: format!("{r:?}") })
    }
}

/// An NCCL communicator, owned by one partition.
struct Comm(nccl::ncclComm_t);

// SAFETY: NCCL lets a communicator move between threads as long as no two
// use it at once; it is only reached through `&mut NcclPartition`.
unsafe impl Send for Comm {}

/// This process's partition of a domain split over the job's ranks.
pub struct NcclPartition<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    config: SolverConfig,
    ranks: Ranks,
    /// Every rank's global layers.
    ranges: Vec<Range<u32>>,
    solver: GpuSolver<L, Q, S>,
    comm: Comm,
    copies: Arc<CudaStream>,
    split: SplitStep,
    /// Recorded after the last exchange (sends and receives) of this rank.
    exchanged: CudaEvent,
    /// Whether [`Self::abort`] ended the communicator.
    aborted: bool,
    t: u64,
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> NcclPartition<L, Q, S> {
    /// Joins the job: opens GPU `ranks.local`, builds this rank's partition of
    /// `config` and the NCCL communicator.
    pub fn new(config: SolverConfig, ranks: Ranks, rendezvous: &str, ptx: &str) -> Result<Self> {
        config.validate()?;
        let d = config.domain.dims;
        if z_pairs(&L::C) == 0 || d.nz < 2 * ranks.world as u32 {
            return Err(Error::Setup(format!(
                "{} layers along z cannot be split over {} ranks: each needs at least 2 layers of a 3D lattice",
                d.nz, ranks.world
            )));
        }
        let ranges = split(d.nz, ranks.world as u32)?;
        let device = GpuDevice::open(ranks.local, ptx)?;
        // SAFETY: only probes whether libnccl can be loaded.
        if !unsafe { nccl::is_culib_present() } {
            return Err(Error::Setup(
                "the NCCL library (libnccl.so.2) was not found: install NCCL or add its directory to LD_LIBRARY_PATH"
                    .into(),
            ));
        }
        let local = local_config(&config, &ranges[ranks.rank])?;
        let mut solver = GpuSolver::<L, Q, S>::new(local, device.clone())
            .map_err(|e| crate::multi_gpu::in_partition(e, format!("rank {} on GPU {}", ranks.rank, ranks.local)))?;
        solver.own_layers_only()?;
        let ctx = device.context().clone();
        // NCCL moves data with kernels: the highest priority lets them start
        // while the interior kernel still fills the GPU.
        ctx.bind_to_thread().ctx("binding the device")?;
        let (_, highest) = cudarc::driver::result::stream::get_priority_range().ctx("reading stream priorities")?;
        let copies = ctx.new_stream_with_priority(highest).ctx("creating the NCCL stream")?;
        let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).ctx("creating an event");
        let (split, exchanged) = (SplitStep::new(&ctx)?, event()?);
        let id = share_id(ranks, rendezvous)?;
        ctx.bind_to_thread().ctx("binding the device")?;
        let mut comm = std::ptr::null_mut();
        // ncclCommInitRank blocks until every rank joins: a rank that failed
        // would leave the others waiting forever, so a watchdog ends them.
        let joined = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watch = joined.clone();
        std::thread::spawn(move || {
            std::thread::sleep(RENDEZVOUS_TIMEOUT);
            if !watch.load(std::sync::atomic::Ordering::SeqCst) {
                eprintln!(
                    "error: rank {} of {}: not every rank joined NCCL within {} s; another rank has probably failed (see its messages)",
                    ranks.rank,
                    ranks.world,
                    RENDEZVOUS_TIMEOUT.as_secs()
                );
                std::process::exit(1);
            }
        });
        // SAFETY: `comm` receives the communicator; every rank passes the same id.
        let joining = unsafe { nccl::ncclCommInitRank(&mut comm, ranks.world as i32, id, ranks.rank as i32) };
        joined.store(true, std::sync::atomic::Ordering::SeqCst);
        nccl_result(joining, "joining the job")?;
        if ranks.rank == 0 {
            if let Some(path) = rendezvous.strip_prefix("file:") {
                std::fs::remove_file(path).ok();
            }
        }
        Ok(Self { config, ranks, ranges, solver, comm: Comm(comm), copies, split, exchanged, aborted: false, t: 0 })
    }

    /// Runs `steps` time steps.
    pub fn step(&mut self, steps: u64) -> Result<()> {
        let len = self.ranges[self.ranks.rank].len() as u32;
        let w = self.ranks.world;
        let (up_peer, down_peer) = ((self.ranks.rank + 1) % w, (self.ranks.rank + w - 1) % w);
        let d = self.config.domain.dims;
        let elem = std::mem::size_of::<S::Elem>();
        let plane = d.nx * d.ny;
        let stream = self.copies.cu_stream() as nccl::cudaStream_t;
        for _ in 0..steps {
            self.split.launch(&mut self.solver, len, &[&self.exchanged], None)?;
            self.solver.swap_buffers();
            self.copies.wait(self.split.boundary_done()).ctx("waiting for boundary layers")?;
            let base = self.solver.buffer_address();
            let at = |i: usize| (base + (i * elem) as u64) as *mut std::ffi::c_void;
            let copies = halo_copies(self.config.streaming, self.t, z_pairs(&L::C));
            // SAFETY: group calls; every range lies inside this rank's buffer
            // (each rank places what it sends and receives in its own layers).
            unsafe {
                nccl_result(nccl::ncclGroupStart(), "starting a group")?;
                let mut queued = Ok(());
                for c in &copies {
                    let (from, _) = c.ranges(len, len, plane, Q);
                    let peer = if c.up { up_peer } else { down_peer };
                    let sent =
                        nccl::ncclSend(at(from.start), from.len() * elem, BYTES, peer as i32, self.comm.0, stream);
                    queued = queued.and(nccl_result(sent, "sending halo planes"));
                }
                for c in &copies {
                    // The copy `c` that this rank receives comes from the other side.
                    let (_, to) = c.ranges(len, len, plane, Q);
                    let peer = if c.up { down_peer } else { up_peer };
                    let received =
                        nccl::ncclRecv(at(to.start), to.len() * elem, BYTES, peer as i32, self.comm.0, stream);
                    queued = queued.and(nccl_result(received, "receiving halo planes"));
                }
                // Close the group whatever failed, so later calls are not queued into it.
                let ended = nccl_result(nccl::ncclGroupEnd(), "ending a group");
                queued.and(ended)?;
            }
            self.exchanged.record(&self.copies).ctx("recording an event")?;
            self.solver.advance();
            self.t += 1;
        }
        Ok(())
    }

    /// This rank's place in the job.
    pub fn ranks(&self) -> Ranks {
        self.ranks
    }

    /// Time steps done.
    pub fn time(&self) -> u64 {
        self.t
    }

    /// The whole simulation's configuration.
    pub fn config(&self) -> &SolverConfig {
        &self.config
    }

    /// Rank 0's `words` reach every rank (the others pass anything): the
    /// small messages that keep the ranks in step.
    pub fn broadcast(&mut self, words: [u64; 2]) -> Result<[u64; 2]> {
        self.synchronize()?;
        let mut buf = self.copies.clone_htod(&words).ctx("staging a message")?;
        let stream = self.copies.cu_stream() as nccl::cudaStream_t;
        let (ptr, guard) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut buf, &self.copies);
        // SAFETY: in place over the two words of `buf`, on the stream that owns it.
        let sent = unsafe {
            nccl::ncclBroadcast(
                ptr as *const _,
                ptr as *mut _,
                2,
                nccl::ncclDataType_t::ncclUint64,
                0,
                self.comm.0,
                stream,
            )
        };
        drop(guard);
        nccl_result(sent, "broadcasting a message")?;
        let got = self.copies.clone_dtoh(&buf).ctx("reading a message")?;
        Ok([got[0], got[1]])
    }

    /// Sets every rank's populations (halos included) from the global
    /// buffer `global`, which rank 0 passes (the others pass `None`), and
    /// the time to `time`. Rank 0 stages [`CHUNK_LAYERS`] layers at a time.
    pub fn scatter(&mut self, global: Option<&[S]>, time: u64) -> Result<()> {
        self.synchronize()?;
        let d = self.config.domain.dims;
        let layer = Q * (d.nx * d.ny) as usize;
        let elem = std::mem::size_of::<S::Elem>();
        let stream = self.copies.cu_stream() as nccl::cudaStream_t;
        if self.ranks.rank == 0 {
            let global = global.ok_or_else(|| Error::Setup("rank 0 scatters without populations".into()))?;
            for (r, range) in self.ranges.iter().enumerate().skip(1) {
                let local: Vec<S::Elem> = local_layers(global, d, Q, range).into_iter().map(S::to_elem).collect();
                for chunk in local.chunks(CHUNK_LAYERS * layer) {
                    let mut buf = self.copies.clone_htod(chunk).ctx("staging populations")?;
                    let (ptr, guard) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut buf, &self.copies);
                    // SAFETY: `buf` holds the chunk; the stream is synchronised before `buf` is freed.
                    let sent = unsafe {
                        nccl::ncclSend(
                            ptr as *const _,
                            std::mem::size_of_val(chunk),
                            BYTES,
                            r as i32,
                            self.comm.0,
                            stream,
                        )
                    };
                    drop(guard);
                    nccl_result(sent, "sending populations")?;
                    self.copies.synchronize().ctx("sending populations")?;
                }
            }
            self.solver.upload_populations(&local_layers(global, d, Q, &self.ranges[0]))?;
        } else {
            let base = self.solver.buffer_address();
            let total = layer * (self.ranges[self.ranks.rank].len() + 2);
            for start in (0..total).step_by(CHUNK_LAYERS * layer) {
                let n = (total - start).min(CHUNK_LAYERS * layer);
                let ptr = (base + (start * elem) as u64) as *mut std::ffi::c_void;
                // SAFETY: `start + n` values lie inside the population buffer (own layers and halos).
                let received = unsafe { nccl::ncclRecv(ptr, n * elem, BYTES, 0, self.comm.0, stream) };
                nccl_result(received, "receiving populations")?;
            }
        }
        self.synchronize()?;
        self.t = time;
        self.solver.set_time(time);
        Ok(())
    }

    /// Waits for all queued work of this rank.
    pub fn synchronize(&mut self) -> Result<()> {
        self.solver.synchronize()?;
        self.split.synchronize()?;
        self.copies.synchronize().ctx("finishing the halo exchange")
    }

    /// The global populations on rank 0 (`None` on the others): every other
    /// rank sends its own layers, which rank 0 stages [`CHUNK_LAYERS`]
    /// layers at a time.
    pub fn gather(&mut self) -> Result<Option<Vec<S>>> {
        self.synchronize()?;
        let d = self.config.domain.dims;
        let (plane, elem) = (d.nx * d.ny, std::mem::size_of::<S::Elem>());
        let layer = Q * plane as usize;
        let stream = self.copies.cu_stream() as nccl::cudaStream_t;
        // Chunks of own layers: local layers `1 ..= len`, CHUNK_LAYERS at a time.
        let chunks = |len: usize| (0..len).step_by(CHUNK_LAYERS).map(move |c| (1 + c, CHUNK_LAYERS.min(len - c)));
        if self.ranks.rank != 0 {
            let base = self.solver.buffer_address();
            for (first, layers) in chunks(self.ranges[self.ranks.rank].len()) {
                let ptr = (base + (first * layer * elem) as u64) as *const std::ffi::c_void;
                // SAFETY: the chunk lies inside the population buffer; the stream is synchronised below.
                let sent = unsafe { nccl::ncclSend(ptr, layers * layer * elem, BYTES, 0, self.comm.0, stream) };
                nccl_result(sent, "sending populations")?;
            }
            self.copies.synchronize().ctx("sending populations")?;
            return Ok(None);
        }
        let mut f = vec![S::ZERO; Q * d.cells()];
        write_own_layers(&self.solver.read_populations()?, d, Q, &self.ranges[0], &mut f);
        let mut buf = self.copies.alloc_zeros::<S::Elem>(CHUNK_LAYERS * layer).ctx("staging populations")?;
        for (r, range) in self.ranges.iter().enumerate().skip(1) {
            for (first, layers) in chunks(range.len()) {
                let (ptr, guard) = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut buf, &self.copies);
                // SAFETY: `buf` holds CHUNK_LAYERS layers.
                let received = unsafe {
                    nccl::ncclRecv(ptr as *mut _, layers * layer * elem, BYTES, r as i32, self.comm.0, stream)
                };
                drop(guard);
                nccl_result(received, "receiving populations")?;
                let staged = self.copies.clone_dtoh(&buf).ctx("reading populations")?;
                // Local layer `first` is global layer `range.start + first - 1`; layers are contiguous.
                let at = population_index(plane, Q, 0, range.start + first as u32 - 1, 0);
                for (to, from) in f[at..at + layers * layer].iter_mut().zip(staged) {
                    *to = S::from_elem(from);
                }
            }
        }
        Ok(Some(f))
    }

    /// Ends this rank's part in the job at once, after an error: pending
    /// NCCL work is abandoned rather than waited for.
    pub fn abort(&mut self) {
        if !self.aborted {
            // SAFETY: the communicator is valid until `Drop`, which skips an aborted one.
            unsafe { nccl::ncclCommAbort(self.comm.0) };
            self.aborted = true;
        }
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Drop for NcclPartition<L, Q, S> {
    fn drop(&mut self) {
        if !self.aborted {
            // SAFETY: the communicator was created in `new` and is destroyed once.
            unsafe { nccl::ncclCommDestroy(self.comm.0) };
        }
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
        let mut part = NcclPartition::<L, Q, S>::new(config.clone(), ranks, rendezvous, ptx)?;
        // NCCL connects peers on their first send: untimed warm-up steps
        // keep that out of the speed (they count towards the comparison).
        let warm_up = (steps / 2).min(10);
        part.step(warm_up)?;
        part.synchronize()?;
        let start = Instant::now();
        part.step(steps - warm_up)?;
        part.synchronize()?;
        let seconds = start.elapsed().as_secs_f64();
        let Some(got) = part.gather()? else { return Ok(None) };
        let mut one = GpuSolver::<L, Q, S>::new(config.clone(), GpuDevice::open(ranks.local, ptx)?)?;
        one.step(steps)?;
        let want = one.read_populations()?;
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
