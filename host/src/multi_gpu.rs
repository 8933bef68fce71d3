//! The GPU executor of the step plan: one unsplit domain on one GPU, or a
//! dense domain split along z over the GPUs of one process (the partitions
//! of [`crate::partition`] on devices), with the halo plan of
//! [`crate::halo`] moved by peer copies on a stream of their own.
//!
//! Each step, every partition of a split domain computes its two boundary
//! layers on a high-priority stream while its interior runs on the device's
//! stream (`crate::overlap::SplitStep`); its copy stream waits for the boundary
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

use crate::cell_blocks::CellBlocks;
use crate::error::{CudaContextExt, Error, Result};
use crate::fields::PartFields;
use crate::gpu::{DeviceStorage, GpuDevice, GpuPart};
use crate::halo::{HaloRun, HaloSends};
use crate::overlap::SplitStep;
use crate::partition::Slab;
use crate::peer;
use crate::plan::{Executor, Plan, Region, Schedule};
use crate::simulation::{Partitions, Simulation};
use crate::solver::{BackendKind, KernelReport, SavedPart, SavedState, Solver, SolverConfig};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};
use kernels_gpu::lattice::z_pairs;
use kernels_gpu::{Dims, Lattice};
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

/// The streams and events of a split partition.
struct Overlap {
    /// Stream of the outgoing copies.
    copies: Arc<CudaStream>,
    /// Boundary layers beside the interior (overlapped exchanges).
    split: SplitStep,
    /// Recorded after the whole partition (no overlap).
    boundary_done: CudaEvent,
    /// Recorded after the outgoing copies of the last step.
    copied: CudaEvent,
    /// Timing events (compute start, compute end, copies start, copies end), when timing.
    timing: Option<[CudaEvent; 4]>,
}

struct Part<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    gpu: GpuPart<L, Q, S>,
    /// None for an unsplit domain: it runs on the device's stream alone.
    overlap: Option<Overlap>,
}

/// Partitions on the GPUs of this process: the GPU executor of the step plan.
pub struct GpuParts<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    config: SolverConfig,
    parts: Vec<Part<L, Q, S>>,
    slabs: Vec<Slab>,
    exchange: Exchange,
    /// How each neighbouring pair of devices is connected, for reports.
    links: Vec<String>,
    /// What each partition sends its neighbours after a step.
    sends: HaloSends,
}

/// A simulation on one GPU, or split over several.
pub type GpuSolver<L, const Q: usize, S> = Simulation<GpuParts<L, Q, S>>;

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> GpuSolver<L, Q, S> {
    /// The whole domain on `device`, initialised to equilibrium.
    pub fn new(config: SolverConfig, device: GpuDevice) -> Result<Self> {
        config.validate()?;
        let slab = Slab::whole(config.domain.dims.nz);
        let gpu = GpuPart::new(&config, slab.clone(), device)?;
        let exec = GpuParts {
            config: config.clone(),
            parts: vec![Part { gpu, overlap: None }],
            slabs: vec![slab],
            exchange: Exchange::NoOverlap,
            links: Vec::new(),
            sends: HaloSends::default(),
        };
        Ok(Simulation::from_parts(config, exec, Plan::single()))
    }

    /// Splits `config`'s domain along z over `devices` (one partition per
    /// entry; an ordinal may repeat, which runs several partitions on one
    /// GPU), exchanging halos by `exchange`; `timing` records the events
    /// [`Self::timed_step`] reads.
    pub fn split(config: SolverConfig, devices: &[GpuDevice], exchange: Exchange, timing: bool) -> Result<Self> {
        config.validate()?;
        let d = config.domain.dims;
        if z_pairs(&L::C) == 0 || d.nz < MIN_GPU_THICKNESS * devices.len() as u32 {
            return Err(Error::Setup(format!(
                "{} layers along z cannot be split over {} GPUs: each needs at least {MIN_GPU_THICKNESS} layers of a 3D lattice",
                d.nz,
                devices.len()
            )));
        }
        let slabs = Slab::split_grid(&config, devices.len() as u32, kernels_gpu::grid::halo_width::<L, Q>())?;
        let mut parts = Vec::new();
        for (slab, device) in slabs.iter().zip(devices) {
            let ctx = device.context().clone();
            let which = format!("GPU {} (layers {:?})", device.ordinal(), slab.z);
            let gpu = GpuPart::new(&config, slab.clone(), device.clone()).map_err(|e| in_partition(e, which))?;
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
            let overlap = Overlap {
                copies: ctx.new_stream().ctx("creating the copy stream")?,
                split: SplitStep::new(&ctx)?,
                boundary_done: event(CUevent_flags::CU_EVENT_DISABLE_TIMING)?,
                copied: event(CUevent_flags::CU_EVENT_DISABLE_TIMING)?,
                timing,
            };
            parts.push(Part { gpu, overlap: Some(overlap) });
        }
        let links = peer::enable_access(devices)?;
        let sends = HaloSends::new(config.streaming, z_pairs(&L::C), parts.len(), |from, to, copy| {
            let (a, b): (&GpuPart<L, Q, S>, &GpuPart<L, Q, S>) = (&parts[from].gpu, &parts[to].gpu);
            a.grid().halo_runs(copy, a.slab().len(), b.grid(), b.slab().len(), Q)
        });
        let schedule = if exchange == Exchange::NoOverlap { Schedule::InOrder } else { Schedule::Overlapped };
        let plan = Plan::split(parts.len(), schedule);
        Ok(Simulation::from_parts(config.clone(), GpuParts { config, parts, slabs, exchange, links, sends }, plan))
    }

    /// How neighbouring devices exchange data ("GPU 0 <-> GPU 1: peer access").
    pub fn links(&self) -> &[String] {
        &self.executor_ref().links
    }

    /// What partition 0 sends per step (after an even step): bytes, and
    /// copies queued for them.
    pub fn halo_traffic(&self) -> (usize, usize) {
        let exec = self.executor_ref();
        let runs = exec.sends.of(0, 0).iter().flat_map(|(_, runs)| runs);
        let elem = std::mem::size_of::<S::Elem>();
        let per_row = exec.exchange == Exchange::Soa;
        runs.fold((0, 0), |(bytes, copies), r| (bytes + r.values() * elem, copies + if per_row { r.rows } else { 1 }))
    }

    /// Runs one step with timing events and returns the measured split (the
    /// solver must have been split with `timing`).
    pub fn timed_step(&mut self) -> Result<StepTiming> {
        crate::solver::Solver::step(self, 1)?;
        self.executor().timing()
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> GpuParts<L, Q, S> {
    /// The partitions whose last exchanges partition `k`'s next step waits
    /// for: the copies into it (from both neighbours) and out of it.
    fn neighbourhood(&self, k: usize) -> [usize; 3] {
        let n = self.parts.len();
        [(k + n - 1) % n, k, (k + 1) % n]
    }

    /// Makes `stream` wait for the last exchanges around partition `k`.
    fn wait_for_exchanges(&self, k: usize, stream: &CudaStream) -> Result<()> {
        for m in self.neighbourhood(k) {
            if let Some(o) = &self.parts[m].overlap {
                stream.wait(&o.copied).ctx("waiting for halo copies")?;
            }
        }
        Ok(())
    }

    /// The event recorded once the planes partition `k` sends are written.
    fn ready(&self, k: usize) -> Option<&CudaEvent> {
        let o = self.parts[k].overlap.as_ref()?;
        Some(if self.exchange == Exchange::NoOverlap { &o.boundary_done } else { o.split.boundary_done() })
    }

    /// The split of the last step, read from the timing events.
    fn timing(&self) -> Result<StepTiming> {
        let mut t = StepTiming::default();
        for p in &self.parts {
            let timing = p.overlap.as_ref().and_then(|o| o.timing.as_ref());
            let [start, compute_end, copy_start, copy_end] =
                timing.ok_or_else(|| Error::Setup("built without timing".into()))?;
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

    /// Queues the runs `runs` of step `t` from partition `from` to partition
    /// `to` on `from`'s copy stream.
    fn send(&self, from: usize, to: usize, runs: &[HaloRun], t: u64) -> Result<()> {
        let (src, dst) = (&self.parts[from], &self.parts[to]);
        let stream = &src.overlap.as_ref().expect("split partitions have a copy stream").copies;
        let elem = std::mem::size_of::<S::Elem>();
        let (from, to) = ((src.gpu.device(), src.gpu.output_address(t)), (dst.gpu.device(), dst.gpu.output_address(t)));
        for run in runs {
            if self.exchange == Exchange::Soa {
                // The baseline: one copy per crossing population.
                for row in run.per_row() {
                    // SAFETY: the runs lie inside the partitions' population buffers (`PartGrid::halo_runs`).
                    unsafe { peer::copy_run_async(from, to, &row, elem, stream)? }
                }
            } else {
                // The slots a neighbour needs are adjacent planes (one
                // copy on the dense box), or a strided run of blocks.
                // SAFETY: as above.
                unsafe { peer::copy_run_async(from, to, run, elem, stream)? }
            }
        }
        Ok(())
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Executor for GpuParts<L, Q, S> {
    fn update(&mut self, k: usize, region: Region, t: u64) -> Result<()> {
        let compute = self.parts[k].gpu.device().stream().clone();
        if self.parts[k].overlap.is_none() {
            return self.parts[k].gpu.launch(&compute, region, t);
        }
        match region {
            Region::Whole => {
                // No overlap: everything in order on one stream, after the copies.
                if let Some([start, ..]) = self.parts[k].overlap.as_ref().and_then(|o| o.timing.as_ref()) {
                    start.record(&compute).ctx("recording an event")?;
                }
                self.wait_for_exchanges(k, &compute)?;
                let part = &mut self.parts[k];
                part.gpu.launch(&compute, region, t)?;
                let o = part.overlap.as_ref().expect("split");
                o.boundary_done.record(&compute).ctx("recording an event")?;
                if let Some([_, compute_end, ..]) = &o.timing {
                    compute_end.record(&compute).ctx("recording an event")?;
                }
            }
            Region::Boundary => {
                if let Some([start, ..]) = self.parts[k].overlap.as_ref().and_then(|o| o.timing.as_ref()) {
                    start.record(&compute).ctx("recording an event")?;
                }
                let ns = self.neighbourhood(k);
                {
                    // The last exchanges around this partition, then the step's ordering.
                    let (o, others) = split_one(&mut self.parts, k);
                    let copied: Vec<&CudaEvent> =
                        ns.iter().map(|&m| if m == k { &o.copied } else { &others(m).copied }).collect();
                    o.split.begin(&compute, &copied)?;
                }
                let part = &mut self.parts[k];
                let boundary = part.overlap.as_ref().expect("split").split.stream().clone();
                part.gpu.launch(&boundary, region, t)?;
                part.overlap.as_mut().expect("split").split.end_boundary()?;
            }
            Region::Interior => {
                let part = &mut self.parts[k];
                part.gpu.launch(&compute, region, t)?;
                let o = part.overlap.as_ref().expect("split");
                if let Some([_, compute_end, ..]) = &o.timing {
                    // The step's kernels end with the later of both streams.
                    compute.wait(o.split.boundary_done()).ctx("waiting for boundary layers")?;
                    compute_end.record(&compute).ctx("recording an event")?;
                }
            }
        }
        Ok(())
    }

    fn exchange(&mut self, k: usize, t: u64) -> Result<()> {
        let ready = self.ready(k).expect("split partitions exchange");
        let o = self.parts[k].overlap.as_ref().expect("split");
        o.copies.wait(ready).ctx("waiting for boundary layers")?;
        if let Some([_, _, copy_start, _]) = &o.timing {
            copy_start.record(&o.copies).ctx("recording an event")?;
        }
        for (to, runs) in self.sends.of(k, t) {
            self.send(k, *to, runs, t)?;
        }
        let o = self.parts[k].overlap.as_ref().expect("split");
        if let Some([.., copy_end]) = &o.timing {
            copy_end.record(&o.copies).ctx("recording an event")?;
        }
        o.copied.record(&o.copies).ctx("recording an event")
    }

    fn end_step(&mut self, _t: u64) -> Result<()> {
        self.parts.iter_mut().for_each(|p| p.gpu.end_step());
        Ok(())
    }
}

/// Partition `k`'s overlap state, mutable, and a way to reach the others'.
fn split_one<'a, L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
    parts: &'a mut [Part<L, Q, S>],
    k: usize,
) -> (&'a mut Overlap, impl Fn(usize) -> &'a Overlap + 'a) {
    let (before, rest) = parts.split_at_mut(k);
    let (part, after) = rest.split_first_mut().expect("partition k exists");
    let (before, after) = (&*before, &*after);
    let others = move |m: usize| {
        let p = if m < k { &before[m] } else { &after[m - k - 1] };
        p.overlap.as_ref().expect("split")
    };
    (part.overlap.as_mut().expect("split"), others)
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Partitions for GpuParts<L, Q, S> {
    type Storage = S;

    fn slabs(&self) -> &[Slab] {
        &self.slabs
    }

    fn synchronize(&mut self) -> Result<()> {
        for p in &self.parts {
            p.gpu.device().stream().synchronize().ctx("running time steps")?;
            if let Some(o) = &p.overlap {
                o.split.synchronize()?;
                o.copies.synchronize().ctx("finishing halo copies")?;
            }
        }
        Ok(())
    }

    fn fields(&mut self, t: u64) -> Result<Vec<PartFields>> {
        // A neighbour's copy writes into a partition's own layers: finish
        // every partition's work before reading any.
        self.synchronize()?;
        self.parts.iter_mut().map(|p| p.gpu.fields(t)).collect()
    }

    fn masses(&mut self, t: u64) -> Result<Vec<f64>> {
        self.synchronize()?;
        self.parts.iter().map(|p| p.gpu.mass(t)).collect()
    }

    fn forces(&mut self, t: u64, objects: &[CellBlocks<bool>]) -> Result<Vec<Vec<[f64; 3]>>> {
        self.synchronize()?;
        self.parts.iter().map(|p| p.gpu.forces(t, objects)).collect()
    }

    fn populations(&mut self) -> Result<Vec<Vec<S>>> {
        self.synchronize()?;
        self.parts.iter().map(|p| p.gpu.own_populations()).collect()
    }

    fn saved_parts(&mut self) -> Result<Vec<SavedPart>> {
        self.synchronize()?;
        self.parts.iter().map(|p| p.gpu.saved_part()).collect()
    }

    fn restore(&mut self, state: &SavedState, t: u64) -> Result<()> {
        self.synchronize()?;
        let d = self.config.domain.dims;
        self.parts.iter_mut().try_for_each(|p| p.gpu.restore(state, d, t))
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Gpu(self.parts[0].gpu.device().ordinal())
    }

    fn kernel_report(&self) -> Option<KernelReport> {
        self.parts[0].gpu.kernel_report()
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
    /// The grid (`dense`, `sparse4`, `sparse8`).
    pub grid: String,
}

/// Runs a 3D cavity of `size` cells (f32, Esoteric Pull) on `grid` over
/// `devices` for `steps` timed steps, then `timed` steps with events for the split.
pub fn measure(
    lattice: crate::LatticeKind,
    grid: crate::solver::GridLayout,
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
        let mut s = GpuSolver::<L, Q, S>::split(c, devices, exchange, true)?;
        let (halo_bytes, transfers) = s.halo_traffic();
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
        Ok((seconds, sum, s.links().to_vec(), halo_bytes, transfers))
    }
    let mut config = crate::cases::cavity_config(
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
    config.domain = crate::domain::Domain::with_faces(Dims::new(size[0], size[1], size[2]), faces)?;
    config.grid = grid;
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
        grid: grid.name().to_string(),
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
