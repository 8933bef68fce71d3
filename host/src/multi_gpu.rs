//! A dense domain split along z over several GPUs of one process: the
//! partitions of [`crate::partition`] on devices, with the halo plan of
//! [`crate::halo`] moved by peer copies on a stream of their own.
//!
//! Each step, every partition computes its two boundary layers on a
//! high-priority stream while its interior runs on the device's stream
//! (`crate::overlap::SplitStep`); its copy stream waits for the boundary
//! layers and sends the crossing planes to both neighbours, then records
//! `copied`. The next step's boundary layers wait for the `copied` events of
//! the partition and of both neighbours, so halos are complete and its
//! buffers free again. What a step sends is written by the boundary layers
//! only, and no cell of the receiver touches the received planes during the
//! step (see [`crate::halo`]), so the copies overlap the interiors.
//!
//! [`Exchange`] selects the copies: one contiguous copy per neighbour
//! (`cuMemcpyPeerAsync` of the `k` adjacent crossing planes the layer-blocked
//! layout puts together), one copy per crossing population (the SoA baseline
//! of Mahmoud et al. 2025, Table 3), or the single copy without overlap (the whole
//! partition first, then the copies). Peer access is enabled between neighbouring devices where the
//! hardware allows it; elsewhere the driver stages peer copies through the host.

use crate::error::{CudaContextExt, Error, Result};
use crate::fields::Fields;
use crate::gpu::{DeviceStorage, GpuDevice, GpuSolver};
use crate::halo::{halo_copies, HaloCopy};
use crate::overlap::SplitStep;
use crate::partition::{local_config, local_layers, split, write_own_layers};
use crate::solver::{BackendKind, SavedState, Solver, SolverConfig};
use crate::{cpu::CpuSolver, domain::Domain};
use cudarc::driver::sys::{self, CUevent_flags};
use cudarc::driver::{CudaEvent, CudaStream};
use kernels_gpu::lattice::z_pairs;
use kernels_gpu::{Dims, Lattice, Real};
use std::ops::Range;
use std::sync::Arc;

/// How the halo planes travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exchange {
    /// One contiguous copy per neighbour per step, overlapped with the interior.
    Disaggregated,
    /// One copy per crossing population, overlapped (the SoA baseline).
    Soa,
    /// One contiguous copy per neighbour, after the whole partition is computed.
    NoOverlap,
}

impl Exchange {
    /// All modes, for benchmarks.
    pub const ALL: [Exchange; 3] = [Exchange::Disaggregated, Exchange::Soa, Exchange::NoOverlap];

    /// The mode named `name` (as on the command line), or a message listing the names.
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name).ok_or_else(|| Error::UnknownName {
            what: "exchange",
            name: name.into(),
            choices: Self::ALL.map(|e| e.name()).join(", "),
        })
    }

    /// Name as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Exchange::Disaggregated => "disaggregated",
            Exchange::Soa => "soa",
            Exchange::NoOverlap => "no-overlap",
        }
    }
}

/// Thinnest partition the GPU path takes: two boundary layers (the interior may be empty).
pub const MIN_GPU_THICKNESS: u32 = 2;

struct Part<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    /// Global layers owned.
    z: Range<u32>,
    solver: GpuSolver<L, Q, S>,
    /// Stream of the outgoing copies.
    copies: Arc<CudaStream>,
    /// Boundary layers beside the interior (overlapped exchanges).
    split: SplitStep,
    /// Recorded after the whole partition (no overlap).
    boundary_done: CudaEvent,
    /// Whether the exchange overlaps the interior.
    overlap: bool,
    /// Recorded after the outgoing copies of the last step.
    copied: CudaEvent,
    /// Timing events (compute start, compute end, copies start, copies end), when timing.
    timing: Option<[CudaEvent; 4]>,
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Part<L, Q, S> {
    /// Recorded once the planes this partition sends are written: after its
    /// boundary layers, or after the whole partition without overlap.
    fn ready(&self) -> &CudaEvent {
        if self.overlap {
            self.split.boundary_done()
        } else {
            &self.boundary_done
        }
    }
}

/// Per-step time split measured with events, in milliseconds (averages over partitions).
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct StepTiming {
    /// From the step's first kernel to the end of its last kernel or copy.
    pub step_ms: f64,
    /// The step's kernels (boundary layers and interior).
    pub compute_ms: f64,
    /// Outgoing halo copies of one partition.
    pub halo_ms: f64,
}

/// A simulation split along z over several GPUs.
pub struct MultiGpu<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    config: SolverConfig,
    parts: Vec<Part<L, Q, S>>,
    exchange: Exchange,
    /// For read-backs (fields, mass, forces): built on first use.
    global: Option<CpuSolver<L, Q, S>>,
    /// How each neighbouring pair of devices is connected, for reports.
    links: Vec<String>,
    t: u64,
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> MultiGpu<L, Q, S> {
    /// Splits `config`'s domain along z over `devices` (one partition per
    /// entry; an ordinal may repeat, which runs several partitions on one GPU).
    pub fn new(config: SolverConfig, devices: &[GpuDevice], exchange: Exchange, timing: bool) -> Result<Self> {
        config.validate()?;
        let d = config.domain.dims;
        if z_pairs(&L::C) == 0 || d.nz < 2 * devices.len() as u32 {
            return Err(Error::Setup(format!(
                "{} layers along z cannot be split over {} GPUs: each needs at least {MIN_GPU_THICKNESS} layers of a 3D lattice",
                d.nz,
                devices.len()
            )));
        }
        let ranges = split(d.nz, devices.len() as u32)?;
        let mut parts = Vec::new();
        for (z, device) in ranges.into_iter().zip(devices) {
            let local = local_config(&config, &z)?;
            let ctx = device.context().clone();
            let mut solver = GpuSolver::<L, Q, S>::new(local, device.clone())
                .map_err(|e| in_partition(e, format!("GPU {} (layers {z:?})", device.ordinal())))?;
            solver.own_layers_only()?;
            let event = |flags| ctx.new_event(Some(flags)).ctx("creating an event");
            let timing = if timing {
                Some([
                    event(CUevent_flags::CU_EVENT_DEFAULT)?,
                    event(CUevent_flags::CU_EVENT_DEFAULT)?,
                    event(CUevent_flags::CU_EVENT_DEFAULT)?,
                    event(CUevent_flags::CU_EVENT_DEFAULT)?,
                ])
            } else {
                None
            };
            parts.push(Part {
                z,
                copies: ctx.new_stream().ctx("creating the copy stream")?,
                split: SplitStep::new(&ctx)?,
                boundary_done: event(CUevent_flags::CU_EVENT_DISABLE_TIMING)?,
                overlap: exchange != Exchange::NoOverlap,
                copied: event(CUevent_flags::CU_EVENT_DISABLE_TIMING)?,
                timing,
                solver,
            });
        }
        let links = enable_peer_access(devices)?;
        Ok(Self { config, parts, exchange, global: None, links, t: 0 })
    }

    /// How neighbouring devices exchange data ("GPU 0 <-> GPU 1: peer access").
    pub fn links(&self) -> &[String] {
        &self.links
    }

    /// Runs one step with timing events and returns the measured split (the
    /// solver must have been built with `timing`).
    pub fn timed_step(&mut self) -> Result<StepTiming> {
        self.step_once()?;
        let mut t = StepTiming::default();
        for p in &self.parts {
            let [start, compute_end, copy_start, copy_end] =
                p.timing.as_ref().ok_or_else(|| Error::Setup("built without timing".into()))?;
            copy_end.synchronize().ctx("waiting for the timed step")?;
            compute_end.synchronize().ctx("waiting for the timed step")?;
            let compute = start.elapsed_ms(compute_end).ctx("reading step time")? as f64;
            let copies = start.elapsed_ms(copy_end).ctx("reading step time")? as f64;
            t.step_ms += compute.max(copies);
            t.compute_ms += compute;
            t.halo_ms += copy_start.elapsed_ms(copy_end).ctx("reading copy time")? as f64;
        }
        let n = self.parts.len() as f64;
        Ok(StepTiming { step_ms: t.step_ms / n, compute_ms: t.compute_ms / n, halo_ms: t.halo_ms / n })
    }

    fn step_once(&mut self) -> Result<()> {
        let n = self.parts.len();
        let scheme = self.config.streaming;
        for k in 0..n {
            let neighbours = [(k + n - 1) % n, k, (k + 1) % n];
            let (before, rest) = self.parts.split_at_mut(k);
            let (part, after) = rest.split_first_mut().expect("partition k exists");
            // The last copies into and out of this partition (none before the
            // first step; with one or two partitions some are the same).
            let copied = neighbours.map(|m| match m.cmp(&k) {
                std::cmp::Ordering::Less => &before[m].copied,
                std::cmp::Ordering::Equal => &part.copied,
                std::cmp::Ordering::Greater => &after[m - k - 1].copied,
            });
            let exchanged: &[&CudaEvent] = if self.t > 0 { &copied } else { &[] };
            let compute = part.solver.device().stream().clone();
            let len = part.z.len() as u32;
            if let Some([start, ..]) = &part.timing {
                start.record(&compute).ctx("recording an event")?;
            }
            if self.exchange == Exchange::NoOverlap {
                // Everything in order on one stream, after the copies.
                for event in exchanged {
                    compute.wait(event).ctx("waiting for halo copies")?;
                }
                part.solver.launch_layers_on(&compute, 1, len)?;
                part.solver.launch_open_boundaries_on(&compute)?;
                part.boundary_done.record(&compute).ctx("recording an event")?;
            } else {
                let start = part.timing.as_ref().map(|[start, ..]| start);
                part.split.launch(&mut part.solver, len, exchanged, start)?;
            }
            if let Some([_, compute_end, ..]) = &part.timing {
                // The step's kernels end with the later of both streams.
                compute.wait(part.ready()).ctx("waiting for boundary layers")?;
                compute_end.record(&compute).ctx("recording an event")?;
            }
            part.solver.swap_buffers();
        }
        // Copies: each partition sends its planes to both neighbours.
        let copies = halo_copies(scheme, self.t, z_pairs(&L::C));
        for k in 0..n {
            let part = &self.parts[k];
            part.copies.wait(part.ready()).ctx("waiting for boundary layers")?;
            if let Some([_, _, copy_start, _]) = &part.timing {
                copy_start.record(&part.copies).ctx("recording an event")?;
            }
            for copy in &copies {
                let to = if copy.up { (k + 1) % n } else { (k + n - 1) % n };
                self.send(k, to, copy)?;
            }
            let part = &self.parts[k];
            if let Some([.., copy_end]) = &part.timing {
                copy_end.record(&part.copies).ctx("recording an event")?;
            }
            part.copied.record(&part.copies).ctx("recording an event")?;
        }
        for part in &mut self.parts {
            part.solver.advance();
        }
        self.t += 1;
        self.global = None;
        Ok(())
    }

    /// Queues `copy` from partition `from` to partition `to` on `from`'s copy stream.
    fn send(&self, from: usize, to: usize, copy: &HaloCopy) -> Result<()> {
        let (src, dst) = (&self.parts[from], &self.parts[to]);
        let d = self.config.domain.dims;
        let elem = std::mem::size_of::<S::Elem>();
        let plane = d.nx * d.ny;
        let (src_base, dst_base) = (src.solver.buffer_address(), dst.solver.buffer_address());
        let (src_ctx, dst_ctx) = (src.solver.device().context().cu_ctx(), dst.solver.device().context().cu_ctx());
        src.solver.device().context().bind_to_thread().ctx("binding the device")?;
        let stream = src.copies.cu_stream();
        let (from_range, to_range) = copy.ranges(src.z.len() as u32, dst.z.len() as u32, plane, Q);
        let peer_copy = |offset: usize, values: usize| {
            let (s, t) = ((from_range.start + offset) * elem, (to_range.start + offset) * elem);
            // SAFETY: both ranges lie inside the partitions' population buffers.
            unsafe {
                sys::cuMemcpyPeerAsync(
                    dst_base + t as u64,
                    dst_ctx,
                    src_base + s as u64,
                    src_ctx,
                    values * elem,
                    stream,
                )
            }
            .result()
            .ctx("queuing a halo copy")
        };
        if self.exchange == Exchange::Soa {
            // The baseline: one copy per crossing population plane.
            for row in 0..copy.count {
                peer_copy(row * plane as usize, plane as usize)?;
            }
            Ok(())
        } else {
            // The slots a neighbour needs are adjacent planes: one copy.
            peer_copy(0, from_range.len())
        }
    }

    /// The global population buffer from every partition's own layers.
    fn gather(&mut self) -> Result<Vec<S>> {
        let d = self.config.domain.dims;
        let mut f = vec![S::ZERO; Q * d.cells()];
        // A neighbour's copy writes into a partition's own layers: finish
        // every partition's work before reading any.
        self.synchronize()?;
        for p in &mut self.parts {
            write_own_layers(&p.solver.read_populations()?, d, Q, &p.z, &mut f);
        }
        Ok(f)
    }

    /// Every partition's layers, halos included, from a global buffer.
    fn scatter(&mut self, f: &[S]) -> Result<()> {
        let d = self.config.domain.dims;
        for p in &mut self.parts {
            p.solver.upload_populations(&local_layers(f, d, Q, &p.z))?;
        }
        Ok(())
    }

    /// The global state on the CPU, for read-backs.
    fn global(&mut self) -> Result<&mut CpuSolver<L, Q, S>> {
        if self.global.is_none() {
            let f = self.gather()?;
            self.global = Some(CpuSolver::holding(self.config.clone(), &f, self.t)?);
        }
        Ok(self.global.as_mut().expect("set above"))
    }
}

/// Names the partition in a set-up error; out-of-memory errors (which name
/// their device already) stay what they are, so callers can tell them apart.
pub(crate) fn in_partition(e: Error, which: String) -> Error {
    match e {
        Error::OutOfMemory { device, need_gib, free_gib } => {
            Error::OutOfMemory { device: format!("{device}, {which}"), need_gib, free_gib }
        }
        other => Error::Setup(format!("{which}: {other}")),
    }
}

/// Enables peer access between neighbouring devices where possible and
/// says, for each neighbouring pair, how copies travel.
fn enable_peer_access(devices: &[GpuDevice]) -> Result<Vec<String>> {
    let n = devices.len();
    let mut links = Vec::new();
    for k in 0..n {
        let (a, b) = (&devices[k], &devices[(k + 1) % n]);
        if a.ordinal() == b.ordinal() || (n == 2 && k == 1) {
            if a.ordinal() == b.ordinal() && n > 1 {
                links.push(format!("GPU {} <-> GPU {}: same device", a.ordinal(), b.ordinal()));
            }
            continue;
        }
        let mut can = 0;
        // SAFETY: plain queries of two valid device handles.
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, a.context().cu_device(), b.context().cu_device()) }
            .result()
            .ctx("querying peer access")?;
        if can == 0 {
            links.push(format!("GPU {} <-> GPU {}: no peer access, staged through the host", a.ordinal(), b.ordinal()));
            continue;
        }
        for (from, to) in [(a, b), (b, a)] {
            from.context().bind_to_thread().ctx("binding the device")?;
            // SAFETY: `to`'s context is valid for the lifetime of the devices.
            let r = unsafe { sys::cuCtxEnablePeerAccess(to.context().cu_ctx(), 0) };
            if r != sys::CUresult::CUDA_SUCCESS && r != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                r.result().ctx(format!("enabling peer access from GPU {} to GPU {}", from.ordinal(), to.ordinal()))?;
            }
        }
        links.push(format!("GPU {} <-> GPU {}: peer access", a.ordinal(), b.ordinal()));
    }
    Ok(links)
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Solver for MultiGpu<L, Q, S> {
    fn step(&mut self, steps: u64) -> Result<()> {
        for _ in 0..steps {
            self.step_once()?;
        }
        Ok(())
    }

    fn synchronize(&mut self) -> Result<()> {
        for p in &mut self.parts {
            p.solver.synchronize()?;
            p.split.synchronize()?;
            p.copies.synchronize().ctx("finishing halo copies")?;
        }
        Ok(())
    }

    fn time(&self) -> u64 {
        self.t
    }

    fn fields(&mut self) -> Result<Fields> {
        self.global()?.fields()
    }

    fn populations(&mut self) -> Result<Vec<f64>> {
        Ok(self.gather()?.iter().map(|v| v.load().to_f64()).collect())
    }

    fn mass(&mut self) -> Result<f64> {
        self.global()?.mass()
    }

    fn forces(&mut self, objects: &[Vec<bool>]) -> Result<Vec<[f64; 3]>> {
        self.global()?.forces(objects)
    }

    fn save_state(&mut self) -> Result<SavedState> {
        Ok(SavedState { time: self.t, populations: crate::solver::storage_bytes(&self.gather()?).to_vec() })
    }

    fn restore_state(&mut self, state: &SavedState) -> Result<()> {
        let mut f = vec![S::ZERO; Q * self.config.domain.dims.cells()];
        crate::solver::restore_storage(&mut f, &state.populations)?;
        self.synchronize()?;
        self.scatter(&f)?;
        self.t = state.time;
        for p in &mut self.parts {
            p.solver.set_time(state.time);
        }
        self.global = None;
        Ok(())
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Gpu(self.parts[0].solver.device().ordinal())
    }

    fn config(&self) -> &SolverConfig {
        &self.config
    }
}

/// One multi-GPU measurement.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ScalingResult {
    /// Velocity set.
    pub lattice: &'static str,
    /// Cells along x, y, z.
    pub size: [u32; 3],
    /// GPUs (partitions).
    pub gpus: usize,
    /// Halo exchange.
    pub exchange: Exchange,
    /// Million cell updates per second over the whole domain.
    pub mlups: f64,
    /// Event-timed step (first kernel to last copy), ms, averaged over partitions.
    pub step_ms: f64,
    /// Event-timed kernels of one partition per step, ms.
    pub compute_ms: f64,
    /// Event-timed outgoing halo copies of one partition per step, ms.
    pub halo_ms: f64,
    /// Bytes one partition sends per step (both neighbours).
    pub halo_bytes: usize,
    /// Copies one partition queues per step.
    pub transfers: usize,
    /// How neighbouring devices are linked.
    pub links: Vec<String>,
}

/// Runs a 3D cavity of `size` cells (f32, Esoteric Pull) over `devices`
/// for `steps` timed steps, then `timed` steps with events for the split.
pub fn measure(
    lattice: crate::LatticeKind,
    size: [u32; 3],
    devices: &[GpuDevice],
    exchange: Exchange,
    steps: u64,
) -> Result<ScalingResult> {
    fn run<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
        c: SolverConfig,
        devices: &[GpuDevice],
        exchange: Exchange,
        steps: u64,
    ) -> Result<(f64, StepTiming, Vec<String>, usize, usize)> {
        let plane_bytes = (c.domain.dims.nx * c.domain.dims.ny) as usize * std::mem::size_of::<S::Elem>();
        // One partition per step sends k planes to each neighbour, in one
        // copy per neighbour, or one per plane for SoA.
        let k = z_pairs(&L::C);
        let transfers = if exchange == Exchange::Soa { 2 * k } else { 2 };
        let mut s = MultiGpu::<L, Q, S>::new(c, devices, exchange, true)?;
        s.step(10)?;
        s.synchronize()?;
        let t0 = std::time::Instant::now();
        s.step(steps)?;
        s.synchronize()?;
        let seconds = t0.elapsed().as_secs_f64();
        let samples = 20;
        let mut sum = StepTiming::default();
        for _ in 0..samples {
            let t = s.timed_step()?;
            sum.step_ms += t.step_ms / samples as f64;
            sum.compute_ms += t.compute_ms / samples as f64;
            sum.halo_ms += t.halo_ms / samples as f64;
        }
        Ok((seconds, sum, s.links().to_vec(), 2 * k * plane_bytes, transfers))
    }
    let mut config = crate::validation::cavity_config(
        lattice,
        crate::Precision::F32,
        kernels_gpu::Streaming::EsotericPull,
        size[0] - 2,
        1000.0,
        0.05,
    )?;
    // A box of any shape (weak scaling stretches z): walls, lid on y_max.
    let mut faces = [crate::domain::FaceBoundary::Wall; 6];
    faces[3] = crate::domain::FaceBoundary::MovingWall([0.05, 0.0, 0.0]);
    config.domain = Domain::with_faces(Dims::new(size[0], size[1], size[2]), faces)?;
    let (seconds, timing, links, halo_bytes, transfers) =
        crate::dispatch!(lattice, crate::Precision::F32, run(config, devices, exchange, steps))?;
    let cells = size.iter().map(|&n| n as f64).product::<f64>();
    Ok(ScalingResult {
        lattice: lattice.name(),
        size,
        gpus: devices.len(),
        exchange,
        mlups: cells * steps as f64 / seconds / 1e6,
        step_ms: timing.step_ms,
        compute_ms: timing.compute_ms,
        halo_ms: timing.halo_ms,
        halo_bytes,
        transfers,
        links,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A partition's set-up error names the partition's device and layers,
    /// and an out-of-memory error stays one (benchmarks report "does not fit").
    #[test]
    fn partition_errors_name_the_device() {
        let oom = Error::OutOfMemory { device: "GPU 2 (H200)".into(), need_gib: 200.0, free_gib: 139.0 };
        match in_partition(oom, "GPU 2 (layers 512..768)".into()) {
            Error::OutOfMemory { device, .. } => assert_eq!(device, "GPU 2 (H200), GPU 2 (layers 512..768)"),
            other => panic!("expected out of memory, got {other}"),
        }
        let other = in_partition(Error::Setup("no kernel".into()), "GPU 1 (layers 0..8)".into()).to_string();
        assert!(other.contains("GPU 1 (layers 0..8)") && other.contains("no kernel"), "{other}");
    }
}
