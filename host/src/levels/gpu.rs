//! The refined step on one GPU: the same recursion as [`super::RefinedCpu`],
//! each level's update a launch of the uniform sparse stream-collide kernel
//! over all its blocks, plus the interface kernels over their lists (ghost
//! cells, parents to explode, cells next to the finer level).

use super::cpu::{for_each_own_cell, mass_of, Observer, RefinedCpu};
use super::split::Transfer;
use super::split_run::Partition;
use super::{Fusion, Levels};
use crate::domain::OpenGroup;
use crate::error::{CudaContextExt, Result};
use crate::gpu::{launch_config, DeviceCurved, DeviceSparse, DeviceStorage, GpuDevice};
use crate::launch::{self, Buffers, LevelArgs};
use crate::peer;
use crate::solver::BackendKind;
use crate::solver::{CollisionParams, SolverConfig};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaFunction, CudaSlice, DevicePtr, DevicePtrMut};
use kernels_gpu::kernels::block_size;
use kernels_gpu::{GridKind, KernelKind, Lattice, LevelKernel, OpenBoundary, Streaming};
use rayon::prelude::*;
use std::marker::PhantomData;

/// An open-boundary group on the device: its cells' storage numbers and
/// what they impose.
struct DeviceOpenGroup<T> {
    cells: CudaSlice<u32>,
    /// A profile's velocities, three per cell; `None`: uniform.
    velocities: Option<CudaSlice<T>>,
    count: u32,
    params: OpenBoundary<T>,
}

/// One level on the device.
struct DeviceLevel<S: DeviceStorage> {
    f: CudaSlice<S::Elem>,
    f_next: Option<CudaSlice<S::Elem>>,
    flags: CudaSlice<u8>,
    grid: DeviceSparse,
    ghosts: CudaSlice<u32>,
    parents: CudaSlice<u32>,
    exploded: CudaSlice<u32>,
    coalesced: CudaSlice<u32>,
    children: CudaSlice<u32>,
    /// Open-boundary groups (level 0 only).
    open: Vec<DeviceOpenGroup<S::Real>>,
    /// Its curved-wall group.
    curved: Option<DeviceCurved<S::Real>>,
    /// Steps taken.
    t: u64,
    config: SolverConfig,
}

impl<S: DeviceStorage> DeviceLevel<S> {
    fn last_odd(&self) -> bool {
        self.t.wrapping_sub(1) & 1 == 1
    }
}

/// The kernels of one lattice, precision and block shape.
struct Kernels {
    bulk: CudaFunction,
    open: CudaFunction,
    transit: CudaFunction,
    explode: CudaFunction,
    coalesce: CudaFunction,
    /// The split step's streaming and collision halves ([`Fusion::Split`]).
    split: Option<(CudaFunction, CudaFunction)>,
    /// Gathering and scattering the values partitions exchange ([`super::SplitLevels`]).
    gather: CudaFunction,
    scatter: CudaFunction,
}

/// What a launch of the refined step does, for [`RefinedGpu::profile`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// A level's fused stream-collide over its blocks.
    StreamCollide,
    /// The split step's streaming half.
    Stream,
    /// The split step's collision half.
    Collide,
    /// Open-boundary groups (level 0).
    Open,
    /// Curved-wall groups: the gather before a level's update and the update after it.
    Curved,
    /// Ghost cells streaming.
    Transit,
    /// Explosion into a finer level's ghost cells.
    Explode,
    /// Coalescence into the cells next to a finer level.
    Coalesce,
}

impl Part {
    /// Every part, in the order a profile lists them.
    pub const ALL: [Part; 8] = [
        Part::StreamCollide,
        Part::Stream,
        Part::Collide,
        Part::Open,
        Part::Curved,
        Part::Transit,
        Part::Explode,
        Part::Coalesce,
    ];

    /// Its name in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Part::StreamCollide => "stream-collide",
            Part::Stream => "stream",
            Part::Collide => "collide",
            Part::Open => "open",
            Part::Curved => "curved",
            Part::Transit => "transit",
            Part::Explode => "explode",
            Part::Coalesce => "coalesce",
        }
    }

    /// Whether it moves populations between levels (the rest update a
    /// level's own cells).
    pub const fn at_jump(self) -> bool {
        matches!(self, Part::Transit | Part::Explode | Part::Coalesce)
    }
}

/// A refined domain on one GPU.
pub struct RefinedGpu<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    device: GpuDevice,
    levels: Levels,
    states: Vec<DeviceLevel<S>>,
    kernels: Kernels,
    scheme: Streaming,
    /// Coarse steps taken.
    t: u64,
    /// While profiling, an event before each launch, with what it launches.
    marks: Option<Vec<(Part, CudaEvent)>>,
    _lattice: PhantomData<L>,
}

/// Uploads `v`, or one zero where it is empty (a list with no entries is
/// never launched, but the buffer must exist).
fn upload<T: cudarc::driver::DeviceRepr + Default>(device: &GpuDevice, v: &[T], what: &str) -> Result<CudaSlice<T>> {
    let zero = [T::default()];
    let v = if v.is_empty() { &zero[..] } else { v };
    device.stream().clone_htod(v).ctx(format!("uploading {what}"))
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> RefinedGpu<L, Q, S> {
    /// The refined domain `cpu` (as it stands: usually just initialised)
    /// moved to `device`.
    pub fn new(device: GpuDevice, cpu: RefinedCpu<L, Q, S>) -> Result<Self> {
        let (levels, scheme, fusion, states) = cpu.into_parts();
        let s = device.stream().clone();
        let grid_kind = match levels.levels[0].layout.block {
            crate::sparse::BlockShape::Cube4 => GridKind::Sparse4,
            crate::sparse::BlockShape::Cube8 => GridKind::Sparse8,
            crate::sparse::BlockShape::Row32 => unreachable!("refinement levels have cubic blocks (LevelGrids::build)"),
        };
        let config = &states[0].config;
        let level =
            |k: LevelKernel| device.function(&format!("{}_{}{}_{}", k.prefix(), grid_kind.infix(), L::NAME, S::NAME));
        let kind = config.collision.kind();
        let exchange = kernels_gpu::exchange::kernels_for(std::mem::size_of::<S::Elem>())
            .expect("stored values are 2, 4 or 8 bytes");
        let kernels = Kernels {
            bulk: device.kernel::<L, Q, S>(KernelKind::StreamCollide(scheme, kind), grid_kind)?,
            open: device.kernel::<L, Q, S>(KernelKind::OpenBoundary, grid_kind)?,
            transit: level(LevelKernel::Transit)?,
            explode: level(LevelKernel::Explode)?,
            coalesce: level(LevelKernel::coalesce(kind))?,
            split: match fusion {
                Fusion::Fused => None,
                Fusion::Split => Some((level(LevelKernel::Stream)?, level(LevelKernel::collide(kind))?)),
            },
            gather: device.function(exchange.0)?,
            scatter: device.function(exchange.1)?,
        };
        let mut out = Vec::with_capacity(states.len());
        for (level, state) in levels.levels.iter().zip(states) {
            let (f, t, config) = (state.f, state.t, state.config);
            let curved = (state.curved.as_ref())
                .map(|c| DeviceCurved::new::<L, Q, S>(&device, c, config.collision.kind(), grid_kind))
                .transpose()?;
            let f_next = match scheme {
                Streaming::TwoLattice => {
                    Some(s.alloc_zeros::<S::Elem>(f.len()).ctx("allocating a level's second buffer")?)
                }
                Streaming::EsotericPull => None,
            };
            let collision = config.collision_params::<S::Real>();
            let open = open_groups::<S>(&device, level, &config.domain.open, collision)?;
            out.push(DeviceLevel {
                f: s.clone_htod(&f.iter().map(|&v| v.to_elem()).collect::<Vec<_>>())
                    .ctx("uploading a level's populations")?,
                f_next,
                flags: s.clone_htod(&level.flags).ctx("uploading a level's flags")?,
                grid: DeviceSparse::upload(&s, &level.layout)?,
                ghosts: upload(&device, &level.ghosts, "a level's ghost cells")?,
                parents: upload(&device, &level.parents, "a level's parents")?,
                exploded: upload(&device, &level.exploded, "the cells they explode into")?,
                coalesced: upload(&device, &level.coalesced, "a level's cells next to the finer one")?,
                children: upload(&device, &level.children, "the ghost cells over them")?,
                open,
                curved,
                t,
                config,
            });
        }
        Ok(Self { device, levels, states: out, kernels, scheme, t: 0, marks: None, _lattice: PhantomData })
    }

    /// The levels.
    pub fn levels(&self) -> &Levels {
        &self.levels
    }

    /// Coarse steps taken.
    pub fn time(&self) -> u64 {
        self.t
    }

    /// Advances `steps` coarse steps (queued; reads wait for them).
    pub fn step(&mut self, steps: u64) -> Result<()> {
        for _ in 0..steps {
            self.advance(0, &mut None)?;
            self.t += 1;
        }
        Ok(())
    }

    /// As [`RefinedCpu::step_observed`]: each wanted level's populations
    /// are read back after each of its steps.
    pub fn step_observed(
        &mut self,
        wanted: &[bool],
        observe: &mut dyn FnMut(&super::LevelGrid, &[S], bool),
    ) -> Result<()> {
        self.advance(0, &mut Some((wanted, observe)))?;
        self.t += 1;
        Ok(())
    }

    /// Advances `steps` coarse steps timing every launch with events, and
    /// returns the seconds each part took over them (summed over levels),
    /// in the order of [`Part::ALL`], leaving out parts that never ran.
    pub fn profile(&mut self, steps: u64) -> Result<Vec<(Part, f64)>> {
        self.marks = Some(Vec::new());
        let stepped = self.step(steps);
        let marks = self.marks.take().unwrap_or_default();
        stepped?;
        let end = event(&self.device)?;
        end.synchronize().ctx("waiting for the profiled steps")?;
        let mut seconds = vec![0.0; Part::ALL.len()];
        let mut ran = vec![false; Part::ALL.len()];
        for (k, (part, start)) in marks.iter().enumerate() {
            let stop = marks.get(k + 1).map_or(&end, |(_, e)| e);
            let i = Part::ALL.iter().position(|p| p == part).expect("every part is listed");
            seconds[i] += start.elapsed_ms(stop).ctx("reading an event timer")? as f64 * 1e-3;
            ran[i] = true;
        }
        Ok(Part::ALL.into_iter().zip(seconds).zip(ran).filter(|&(_, r)| r).map(|(p, _)| p).collect())
    }

    /// One step of level `l` (see [`RefinedCpu`]).
    fn advance(&mut self, l: usize, observer: &mut Observer<'_, S>) -> Result<()> {
        if l + 1 < self.levels.len() {
            self.explode(l)?;
            self.advance(l + 1, observer)?;
            self.advance(l + 1, observer)?;
        }
        self.step_level(l)?;
        let state = &self.states[l];
        if let Some((wanted, observe)) = observer {
            if wanted.get(l) == Some(&true) {
                let f = self.device.stream().clone_dtoh(&state.f).ctx("reading a level's populations back")?;
                let f: Vec<S> = f.into_iter().map(S::from_elem).collect();
                observe(&self.levels.levels[l], &f, state.last_odd());
            }
        }
        Ok(())
    }

    /// Level `l`'s update, after which its clock moves on.
    fn step_level(&mut self, l: usize) -> Result<()> {
        self.update(l)?;
        let state = &mut self.states[l];
        if let Some(next) = state.f_next.as_mut() {
            std::mem::swap(&mut state.f, next);
        }
        state.t += 1;
        Ok(())
    }

    fn explode(&mut self, l: usize) -> Result<()> {
        let count = self.levels.levels[l + 1].parents.len() as u32;
        if count == 0 {
            return Ok(());
        }
        mark(&mut self.marks, &self.device, Part::Explode)?;
        let s = self.device.stream().clone();
        let (head, tail) = self.states.split_at_mut(l + 1);
        let (coarse, fine) = (&head[l], &mut tail[0]);
        let p = fine.config.step_params::<S::Real>(fine.t);
        let args = LevelArgs { f: &coarse.f, flags: &coarse.flags, grid: coarse.grid.tables };
        launch::level_explode(
            &s,
            &self.kernels.explode,
            args,
            coarse.last_odd(),
            &mut fine.f,
            &fine.flags,
            fine.grid.tables,
            p,
            &fine.parents,
            &fine.exploded,
            count,
            self.scheme,
        )
    }

    fn update(&mut self, l: usize) -> Result<()> {
        let s = self.device.stream().clone();
        let level = &self.levels.levels[l];
        let (head, tail) = self.states.split_at_mut(l + 1);
        let state = &mut head[l];
        let mut note = |part| mark(&mut self.marks, &self.device, part);
        let p = state.config.step_params::<S::Real>(state.t);
        let collision = state.config.collision_params::<S::Real>();
        // A partition updates its own blocks, numbered first.
        let blocks = level.own_blocks;
        let kind = KernelKind::StreamCollide(self.scheme, state.config.collision.kind());
        let cfg = launch_config(&level.layout.grid(), blocks, block_size(kind));
        let tables = state.grid.tables;
        // Curved-wall cells copy what their neighbours overwrite before anything moves.
        if let Some(c) = &state.curved {
            note(Part::Curved)?;
            launch::curved_gather(&s, &c.gather, &state.f, p, c.links, self.scheme, Some(tables))?;
        }
        // A level finer ones cover whole has no blocks (and nothing to launch).
        let split = self.kernels.split.as_ref().filter(|_| blocks > 0);
        if let (Some((stream, collide)), Some(next)) = (split, state.f_next.as_mut()) {
            note(Part::Stream)?;
            launch::level_stream(&s, stream, &state.f, next, &state.flags, p, tables, 0..blocks, cfg)?;
            note(Part::Collide)?;
            launch::level_collide(&s, collide, next, &state.flags, p, collision, tables, 0..blocks, cfg)?;
        } else if blocks > 0 {
            note(Part::StreamCollide)?;
            let b = Buffers { f: &mut state.f, next: state.f_next.as_mut() };
            launch::stream_collide(
                &s,
                &self.kernels.bulk,
                b,
                &state.flags,
                p,
                collision,
                Some(tables),
                None,
                0..blocks,
                cfg,
            )?;
        }
        if let Some(c) = &state.curved {
            note(Part::Curved)?;
            let b = Buffers { f: &mut state.f, next: state.f_next.as_mut() };
            let walls = collision;
            launch::curved_wall(&s, &c.update, b, &state.flags, p, walls, c.links, self.scheme, Some(tables))?;
        }
        for g in state.open.iter().filter(|g| g.count > 0) {
            note(Part::Open)?;
            let b = Buffers { f: &mut state.f, next: state.f_next.as_mut() };
            let (kernel, flags) = (&self.kernels.open, &state.flags);
            let list = (&g.cells, g.velocities.as_ref(), g.count);
            launch::open_boundary(&s, kernel, b, flags, list, p, g.params, self.scheme, Some(tables))?;
        }
        if !level.ghosts.is_empty() {
            note(Part::Transit)?;
            let b = Buffers { f: &mut state.f, next: state.f_next.as_mut() };
            let count = level.ghosts.len() as u32;
            let kernel = &self.kernels.transit;
            launch::level_transit(&s, kernel, b, &state.flags, p, tables, &state.ghosts, count, self.scheme)?;
        }
        if let Some(fine) = tail.first().filter(|_| !level.coalesced.is_empty()) {
            note(Part::Coalesce)?;
            let dst = state.f_next.as_mut().unwrap_or(&mut state.f);
            let args = LevelArgs { f: &fine.f, flags: &fine.flags, grid: fine.grid.tables };
            launch::level_coalesce(
                &s,
                &self.kernels.coalesce,
                dst,
                p,
                collision,
                tables,
                &state.coalesced,
                level.coalesced.len() as u32,
                args,
                fine.last_odd(),
                &state.children,
                self.scheme,
            )?;
        }
        Ok(())
    }

    /// Each level's current populations, read back, with the parity of its last step.
    /// Its streaming scheme.
    pub fn streaming(&self) -> Streaming {
        self.scheme
    }

    /// The ordinal of its GPU.
    pub fn ordinal(&self) -> usize {
        self.device.ordinal()
    }

    /// Sets each level's current populations, the levels at coarse step `t`
    /// (level `l` at step `2^l t`).
    pub(super) fn write_back(&mut self, f: Vec<Vec<S>>, t: u64) -> Result<()> {
        let s = self.device.stream().clone();
        for (l, (state, f)) in self.states.iter_mut().zip(f).enumerate() {
            let elems: Vec<S::Elem> = f.iter().map(|&v| v.to_elem()).collect();
            s.memcpy_htod(&elems, &mut state.f).ctx("uploading a level's saved populations")?;
            state.t = t << l;
        }
        self.t = t;
        Ok(())
    }

    /// Each level's current populations and the parity of its last step.
    pub(super) fn read_back(&self) -> Result<Vec<(Vec<S>, bool)>> {
        let s = self.device.stream();
        self.states
            .iter()
            .map(|state| {
                let f = s.clone_dtoh(&state.f).ctx("reading a level's populations back")?;
                Ok((f.into_iter().map(S::from_elem).collect(), state.last_odd()))
            })
            .collect()
    }

    /// As [`RefinedCpu::for_each_own_cell`].
    pub fn for_each_own_cell(&self, visit: impl FnMut(u32, [u32; 3], [f64; Q])) -> Result<()> {
        let host = self.read_back()?;
        let buffers: Vec<(&[S], bool)> = host.iter().map(|(f, odd)| (f.as_slice(), *odd)).collect();
        for_each_own_cell::<L, Q, S>(&self.levels, self.scheme, &buffers, visit);
        Ok(())
    }

    /// As [`RefinedCpu::mass`].
    pub fn mass(&self) -> Result<f64> {
        let host = self.read_back()?;
        let buffers: Vec<(&[S], bool)> = host.iter().map(|(f, odd)| (f.as_slice(), *odd)).collect();
        Ok(mass_of(&self.levels, |visit| {
            for_each_own_cell::<L, Q, S>(&self.levels, self.scheme, &buffers, |l, _, f| visit(l, &f))
        }))
    }

    /// Waits for the queued steps.
    pub fn synchronize(&self) -> Result<()> {
        self.device.stream().synchronize().ctx("waiting for the refined steps")
    }
}

/// A timing event recorded on `device`'s stream now.
fn event(device: &GpuDevice) -> Result<CudaEvent> {
    let e = device.context().new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).ctx("creating an event")?;
    e.record(device.stream()).ctx("recording an event")?;
    Ok(e)
}

/// Records the start of a launch of `part` in `marks`, while profiling.
fn mark(marks: &mut Option<Vec<(Part, CudaEvent)>>, device: &GpuDevice, part: Part) -> Result<()> {
    if let Some(marks) = marks {
        marks.push((part, event(device)?));
    }
    Ok(())
}

/// A level's open-boundary groups on the device (storage numbers of their cells).
fn open_groups<S: DeviceStorage>(
    device: &GpuDevice,
    level: &super::LevelGrid,
    groups: &[OpenGroup],
    collision: CollisionParams<S::Real>,
) -> Result<Vec<DeviceOpenGroup<S::Real>>> {
    groups
        .iter()
        .map(|g| {
            let (cells, velocities) = g.cells_where(|c| level.own_storage(c));
            let velocities = OpenGroup::kernel_velocities::<S::Real>(&velocities);
            Ok(DeviceOpenGroup {
                cells: upload(device, &cells, "an open group's cells")?,
                velocities: velocities.map(|v| upload(device, &v, "an inlet profile")).transpose()?,
                count: cells.len() as u32,
                params: g.state.kernel_params(collision),
            })
        })
        .collect()
}

/// A transfer between two partitions on their GPUs ([`super::SplitLevels`]):
/// the sender gathers the values into `send` and copies them into `recv`,
/// the receiver scatters them; events order the two streams both ways.
/// (The receiver's next step waits for its scatter in its own stream; the
/// sender's next write of `f` comes after its gather in its own.)
pub(super) struct DeviceTransfer<E> {
    from: usize,
    to: usize,
    src: CudaSlice<u64>,
    dst: CudaSlice<u64>,
    send: CudaSlice<E>,
    recv: CudaSlice<E>,
    count: u32,
    /// Recorded on the sender's stream once `recv` holds the values.
    sent: CudaEvent,
    /// Recorded on the receiver's stream once they are scattered.
    scattered: CudaEvent,
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> RefinedGpu<L, Q, S> {
    /// The partitions of a split refined domain, `cpu` each (as they
    /// stand: usually just initialised), on `devices`.
    pub(super) fn on_devices(devices: Vec<GpuDevice>, cpu: Vec<RefinedCpu<L, Q, S>>) -> Result<Vec<Self>> {
        devices.into_iter().zip(cpu).map(|(d, c)| Self::new(d, c)).collect()
    }

    /// Queues the sender's half of `t` after its write of level `l`: the
    /// gather, and the copy into the receiver's buffer on `to`.
    fn send(&self, to: &GpuDevice, t: &mut DeviceTransfer<S::Elem>, l: usize) -> Result<()> {
        let s = self.device.stream().clone();
        // `recv` is free once the receiver scattered it the last time
        // (an event never recorded is no wait).
        s.wait(&t.scattered).ctx("waiting for a partition's last scatter")?;
        launch::exchange_gather(&s, &self.kernels.gather, &self.states[l].f, &t.src, &mut t.send, t.count)?;
        let bytes = t.count as usize * std::mem::size_of::<S::Elem>();
        {
            let (from, _from_sync) = t.send.device_ptr(&s);
            let (into, _into_sync) = t.recv.device_ptr_mut(&s);
            // SAFETY: both buffers hold `count` values; the receiver reads
            // `recv` only after `sent`, and it is written again only after
            // `scattered`.
            unsafe { peer::copy_async((&self.device, from), (to, into), bytes, &s)? };
        }
        t.sent.record(&s).ctx("recording an event")
    }

    /// Queues the receiver's half of `t`: the scatter into level `l` once
    /// the values arrived.
    fn receive(&mut self, t: &DeviceTransfer<S::Elem>, l: usize) -> Result<()> {
        let r = self.device.stream().clone();
        r.wait(&t.sent).ctx("waiting for a partition's values")?;
        launch::exchange_scatter(&r, &self.kernels.scatter, &mut self.states[l].f, &t.dst, &t.recv, t.count)?;
        t.scattered.record(&r).ctx("recording an event")
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Partition<S> for RefinedGpu<L, Q, S> {
    type Transfer = DeviceTransfer<S::Elem>;

    fn prepare(parts: &[Self], t: &Transfer) -> Result<Self::Transfer> {
        let (from, to) = (&parts[t.from].device, &parts[t.to].device);
        let count = t.src.len();
        let event = |d: &GpuDevice| {
            d.context().new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).ctx("creating an event")
        };
        Ok(DeviceTransfer {
            from: t.from,
            to: t.to,
            src: upload(from, &t.src, "the positions a partition sends")?,
            dst: upload(to, &t.dst, "the positions a partition receives")?,
            send: from.stream().alloc_zeros(count.max(1)).ctx("allocating a transfer's buffer")?,
            recv: to.stream().alloc_zeros(count.max(1)).ctx("allocating a transfer's buffer")?,
            count: count as u32,
            sent: event(from)?,
            scattered: event(to)?,
        })
    }

    fn exchange(parts: &mut [Self], transfers: &mut [Self::Transfer], l: usize) -> Result<()> {
        // Each sender's transfers on a thread of its own, then each
        // receiver's: every `sent` is recorded before a receiver waits for
        // it, and no partition waits for another's scatter before it sends.
        let senders: &[Self] = parts;
        transfers.par_chunk_by_mut(|a, b| a.from == b.from).try_for_each(|sends| {
            sends.iter_mut().try_for_each(|t| senders[t.from].send(&senders[t.to].device, t, l))
        })?;
        let transfers = &*transfers;
        parts.par_iter_mut().enumerate().try_for_each(|(p, receiver)| {
            transfers.iter().filter(|t| t.to == p).try_for_each(|t| receiver.receive(t, l))
        })
    }

    fn explode(&mut self, l: usize) -> Result<()> {
        RefinedGpu::explode(self, l)
    }

    fn update(&mut self, l: usize) -> Result<()> {
        self.step_level(l)
    }

    fn level_time(&self, l: usize) -> u64 {
        self.states[l].t
    }

    fn buffer(&self, l: usize) -> Result<Vec<S>> {
        let f = self.device.stream().clone_dtoh(&self.states[l].f).ctx("reading a level's populations back")?;
        Ok(f.into_iter().map(S::from_elem).collect())
    }

    fn put(&mut self, f: Vec<Vec<S>>, t: u64) -> Result<()> {
        self.write_back(f, t)
    }

    fn wait(&self) -> Result<()> {
        self.synchronize()
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Gpu(self.ordinal())
    }
}
