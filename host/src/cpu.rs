//! The CPU executor: partitions in host memory (one unsplit domain, or
//! z-partitions with halos exchanged by slice copies), updated by rayon
//! over cells calling the very per-cell functions the GPU kernels call.

use crate::cell_blocks::CellBlocks;
use crate::curved::CurvedTables;
use crate::domain::OpenGroup;
use crate::error::Result;
use crate::fields::PartFields;
use crate::forces::momentum_exchange;
use crate::groups::{passes, BoundaryGroups, OpenTables, Pass};
use crate::halo::{HaloRun, HaloSends};
use crate::part_grid::{with_grid, PartGrid};
use crate::partition::{local_config, own_values, Slab};
use crate::plan::{Executor, Plan, Region, Schedule};
use crate::simulation::{Partitions, Simulation};
use crate::solver::{mass_of, BackendKind, SavedPart, SavedState, SolverConfig};
use crate::sponge::SpongeTables;
use kernels_gpu::curved::{self, CurvedCells};
use kernels_gpu::groups::OpenCells;
use kernels_gpu::lattice::z_pairs;
use kernels_gpu::sponge;
use kernels_gpu::stream::{self, Streaming, FIELD_COMPONENTS};
use kernels_gpu::{Collision, Grid, Lattice, OpenBoundary, Real, StepParams, Storage};
use rayon::prelude::*;
use std::marker::PhantomData;
use std::ops::Range;

/// Cells per rayon task: large enough to amortise scheduling.
const CELLS_PER_TASK: usize = 4096;

/// An open-boundary group as the list update runs it: its cells' storage
/// numbers, what they impose, and a profile's velocities (three per cell).
type OpenList<T> = (Vec<u32>, OpenBoundary<T>, Option<Vec<T>>);

/// A raw pointer shared by the threads of one parallel loop.
#[derive(Clone, Copy)]
pub(crate) struct Shared<T>(*mut T);
// SAFETY: used only in loops where distinct cells touch distinct slots (see
// `kernels_gpu::stream`), so no two threads access the same element.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}
impl<T> Shared<T> {
    pub(crate) fn new(p: *const T) -> Self {
        Self(p as *mut T)
    }
    pub(crate) fn get(self) -> *mut T {
        self.0
    }
}

/// Runs `body(cell)` for the cells numbered `cells` of `grid` in parallel.
fn for_each_cell<G: Grid + Sync>(grid: G, cells: Range<usize>, body: impl Fn(G::Cell) + Sync + Send) {
    (cells.start as u32..cells.end as u32)
        .into_par_iter()
        .with_min_len(CELLS_PER_TASK)
        .for_each(|n| body(grid.cell_of(n)));
}

/// Whether this CPU has fused multiply-add. The physics is written with
/// `mul_add` (one rounding, as on the GPU); without the instruction Rust
/// computes it in software, correctly but slowly, so the step loop is also
/// compiled for FMA hardware and chosen at run time.
pub(crate) fn has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        true // aarch64 and others: FMA is part of the base ISA.
    }
}

/// Runs `body` over consecutive ranges of the cells `cells` in parallel.
fn for_each_range(cells: Range<usize>, body: impl Fn(Range<u32>) + Sync + Send) {
    (0..cells.len().div_ceil(CELLS_PER_TASK)).into_par_iter().for_each(|k| {
        let start = cells.start + k * CELLS_PER_TASK;
        body(start as u32..(start + CELLS_PER_TASK).min(cells.end) as u32)
    });
}

/// What a step of a range of cells needs besides the range: the CPU's
/// counterpart of a kernel's arguments.
struct StepArgs<'a, S: Storage, C, G> {
    grid: G,
    p: &'a StepParams<S::Real, C>,
    scheme: Streaming,
    f: Shared<S>,
    /// Second buffer of two-lattice pull (unused by Esoteric Pull).
    dst: Shared<S>,
    flags: Shared<u8>,
    /// The open cells' tables and `log2` of the cells per block, for the
    /// update of open cells with the fluid ones; `None`: the bulk update.
    open: Option<(OpenCells<S::Real>, u32)>,
}

/// The bulk update of the cells in `range` for one time step (both
/// schemes); inlined into the two compilations below.
///
/// # Safety
/// Buffers sized for the domain; no other thread works on the same cells.
#[inline(always)]
unsafe fn step_range<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>, G: Grid>(
    a: &StepArgs<S, C, G>,
    range: Range<u32>,
) {
    let (p, flags, grid) = (a.p, a.flags, &a.grid);
    if let Some((open, shift)) = a.open {
        let (src, dst) = match a.scheme {
            Streaming::EsotericPull => (a.f.get(), a.f.get()),
            Streaming::TwoLattice => (a.f.get(), a.dst.get()),
        };
        for n in range {
            let cell = grid.cell_of(n);
            if grid.runs(cell, true) {
                // SAFETY: as below; `open` covers every open cell (`OpenTables::build`).
                let group = |m| unsafe { open.group(m, shift) };
                unsafe {
                    stream::stream_collide_any::<L, Q, S, C, _>(grid, a.scheme, p, src, dst, flags.get(), cell, group)
                }
            }
        }
        return;
    }
    for cell in range.map(|n| grid.cell_of(n)).filter(|&c| grid.runs(c, false)) {
        // SAFETY (both): each slot is read and written by exactly one cell per
        // step (Esoteric Pull); f is only read and each cell writes its own
        // slots of dst (two-lattice).
        match a.scheme {
            Streaming::EsotericPull => unsafe {
                stream::stream_collide_esoteric::<L, Q, S, C, _>(grid, p, a.f.get(), flags.get(), cell)
            },
            Streaming::TwoLattice => unsafe {
                stream::stream_collide_two_lattice::<L, Q, S, C, _>(grid, p, a.f.get(), a.dst.get(), flags.get(), cell)
            },
        }
    }
}

/// Whether this CPU converts between half and single precision in hardware
/// (F16C). 16-bit storage converts every population it loads and stores;
/// without the instructions Rust does it in software, to the same bits, at
/// several times the cost (39% of a 16-bit CPU step's time, measured with perf).
pub(crate) fn has_f16c() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false // not asked: only the x86_64 build is compiled for it.
    }
}

/// [`step_range`] compiled with FMA and F16C instructions.
///
/// # Safety
/// As [`step_range`], and the CPU must support FMA ([`has_fma`]) and F16C
/// ([`has_f16c`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma,f16c")]
unsafe fn step_range_fma<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>, G: Grid>(
    a: &StepArgs<S, C, G>,
    range: Range<u32>,
) {
    unsafe { step_range::<L, Q, S, C, G>(a, range) }
}

/// Updates the cells `cells` in parallel ranges, with the FMA and F16C build where the CPU has them.
fn update_ranges<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>, G: Grid + Sync>(
    cells: Range<usize>,
    a: &StepArgs<S, C, G>,
) {
    // Every x86 CPU with FMA has F16C too; both are asked all the same.
    let fma = has_fma() && has_f16c();
    for_each_range(cells, |range| {
        // SAFETY: buffers sized for the domain; ranges are disjoint; FMA and
        // F16C use checked by `has_fma` and `has_f16c`.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            if fma {
                step_range_fma::<L, Q, S, C, G>(a, range)
            } else {
                step_range::<L, Q, S, C, G>(a, range)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        unsafe {
            let _ = fma;
            step_range::<L, Q, S, C, G>(a, range)
        }
    });
}

/// One partition in host memory.
struct CpuPart<L: Lattice<Q>, const Q: usize, S: Storage> {
    /// The partition's configuration (the whole one when unsplit).
    config: SolverConfig,
    slab: Slab,
    /// The grid the cells are stored on.
    grid: PartGrid,
    /// Flag bytes with the near-solid bit (see [`SolverConfig::kernel_flags`]), in storage order.
    flags: Vec<u8>,
    f: Vec<S>,
    /// Second buffer of the two-lattice scheme.
    f_next: Vec<S>,
    /// The open-boundary groups (own cells' storage numbers, and what each
    /// imposes), updated after the bulk.
    open: Vec<OpenList<S::Real>>,
    /// What the kernel that updates open cells too reads (every
    /// boundary-group variant but `lists`).
    open_tables: Option<OpenTables<S::Real>>,
    /// The curved-wall group, and room for its carried values.
    curved: Option<CurvedTables<S::Real>>,
    /// The sponge bands.
    sponges: Vec<SpongeTables<S::Real>>,
    /// Steps ended.
    t: u64,
    _lattice: PhantomData<L>,
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> CpuPart<L, Q, S> {
    /// Partition `slab` of `global`, initialised to equilibrium.
    fn new(global: &SolverConfig, slab: Slab) -> Result<Self> {
        let config = local_config(global, &slab)?;
        let grid = PartGrid::new(&config, slab.halo > 0)?;
        let cells = grid.cells();
        let flags = grid.kernel_flags(&config);
        let mut f = vec![S::ZERO; Q * cells];
        let f_next = match config.streaming {
            Streaming::TwoLattice => vec![S::ZERO; Q * cells],
            Streaming::EsotericPull => Vec::new(),
        };
        let planes = grid.initial_planes::<S::Real>(&config);
        let p = config.step_params::<S::Real>(0);
        let (fl, fp, pl) = (Shared::new(flags.as_ptr()), Shared(f.as_mut_ptr()), Shared::new(planes.as_ptr()));
        let scheme = config.streaming;
        with_grid!(&grid, |g| for_each_cell(g, 0..cells, |cell| {
            // SAFETY: buffers sized for the grid; init writes disjoint slots per cell.
            unsafe { stream::init_equilibrium::<L, Q, S, _>(&g, scheme, &p, fp.get(), fl.get(), pl.get(), cell) }
        }));
        let collision = config.collision_params();
        // The other variants find open cells through `open_tables`.
        let lists = if config.groups == BoundaryGroups::Lists { config.domain.open.as_slice() } else { &[] };
        let open = (lists.iter())
            .map(|o| {
                let velocities = OpenGroup::kernel_velocities(&o.velocities);
                (grid.stored_cells(&o.cells), o.state.kernel_params(collision), velocities)
            })
            .collect();
        let open_tables = OpenTables::build(&config, &grid)?;
        let curved = CurvedTables::build(&config.domain.curved, &grid, &slab);
        let sponges = SpongeTables::build(&config.domain.sponges, &grid, &slab);
        let mut part = Self {
            config,
            slab,
            grid,
            flags,
            f,
            f_next,
            open,
            open_tables,
            curved,
            sponges,
            t: 0,
            _lattice: PhantomData,
        };
        part.seed_curved();
        Ok(part)
    }

    fn plane(&self) -> u32 {
        self.config.domain.dims.nx * self.config.domain.dims.ny
    }

    /// Storage numbers of the partition's own cells.
    fn own_cells(&self) -> Vec<Range<usize>> {
        self.grid.region_cells(&self.slab, Region::Whole)
    }

    /// Runs `region`'s update for step `t`: the passes of the
    /// boundary-group variant ([`passes`]) over its units, then the region's
    /// curved-wall and sponge cells.
    fn update(&mut self, region: Region, t: u64) {
        let units = self.grid.region_units(&self.slab, region);
        let boundary_blocks = self.grid.sparse().map_or(0, |s| s.boundary_blocks().len() as u32);
        for pass in passes(self.config.groups, &units, region != Region::Interior, boundary_blocks) {
            match pass {
                Pass::Bulk(u) => self.update_units(u, t, None),
                Pass::Any(u) => {
                    let tables = self.open_tables.as_ref().expect("built for every variant but lists");
                    let shift = self.grid.sparse().map_or(0, |s| s.block_cells().trailing_zeros());
                    self.update_units(u, t, Some((tables.host_cells(), shift)))
                }
                Pass::Lists => self.update_open(t),
            }
        }
        self.update_curved(region, t);
        self.absorb(region, t);
        // The next step's carried values, taken as soon as these cells have
        // stored (and damped) them: with Esoteric Pull a top-layer cell keeps
        // some in the upper halo, which a neighbour's next exchange overwrites.
        let output = self.step_output_mut(t).as_ptr();
        self.gather_curved(region, t + 1, output);
    }

    /// [`sponge::absorb`] of `region`'s cells of every sponge band after step `t`.
    fn absorb(&mut self, region: Region, t: u64) {
        let p = self.config.step_params::<S::Real>(t);
        let scheme = self.config.streaming;
        let f = Shared(self.step_output_mut(t).as_mut_ptr());
        for band in &self.sponges {
            let cells = band.host_cells(band.regions.of(region));
            with_grid!(&self.grid, |g| (0..cells.count).into_par_iter().for_each(|k| {
                // SAFETY: a listed cell reads and writes only its own stored slots.
                unsafe { sponge::absorb::<L, Q, S, _>(&g, scheme, &p, f.get(), &cells, k) }
            }))
        }
    }

    /// Every curved-wall cell's carried values for the step about to run,
    /// from the current buffer: after initialisation and after a restore.
    fn seed_curved(&mut self) {
        let f = self.f.as_ptr();
        self.gather_curved(Region::Whole, self.t, f);
    }

    /// [`curved::gather`] of `region`'s curved-wall cells for step `step`
    /// from the buffer `f`, which holds what the step before stored.
    fn gather_curved(&mut self, region: Region, step: u64, f: *const S) {
        let Some(tables) = self.curved.as_mut() else { return };
        let p = self.config.step_params::<S::Real>(step);
        let scheme = self.config.streaming;
        let f = Shared::new(f);
        let links = tables.host_cells(tables.regions.of(region));
        let count = links.count;
        let links = Shared::new(&links as *const CurvedCells<S::Real>);
        with_grid!(&self.grid, |g| (0..count).into_par_iter().for_each(|k| {
            // SAFETY: reads only the populations; each entry writes its own carried values.
            unsafe { curved::gather::<L, Q, S, _>(&g, scheme, &p, f.get(), &*links.get(), k) }
        }))
    }

    /// [`curved::update`] of `region`'s curved-wall cells for step `t`.
    fn update_curved(&mut self, region: Region, t: u64) {
        crate::with_collision!(self.config.collision_params::<S::Real>(), |c| self.update_curved_with(region, t, c))
    }

    /// [`CpuPart::update_curved`] with the collision operator `collision`.
    fn update_curved_with<C: Collision<S::Real>>(&mut self, region: Region, t: u64, collision: C) {
        let Some(tables) = self.curved.as_mut() else { return };
        let p = &self.config.step_params::<S::Real>(t).with_collision(collision);
        let scheme = self.config.streaming;
        let flags = Shared::new(self.flags.as_ptr());
        let src = Shared(self.f.as_mut_ptr());
        let dst = match scheme {
            Streaming::EsotericPull => src,
            Streaming::TwoLattice => Shared(self.f_next.as_mut_ptr()),
        };
        let links = tables.host_cells(tables.regions.of(region));
        let count = links.count;
        let links = Shared::new(&links as *const CurvedCells<S::Real>);
        with_grid!(&self.grid, |g| (0..count).into_par_iter().for_each(|k| {
            // SAFETY: a listed cell touches only slots no other cell touches in the same step.
            unsafe {
                curved::update::<L, Q, S, C, _>(&g, scheme, p, src.get(), dst.get(), flags.get(), &*links.get(), k)
            }
        }))
    }

    /// The update of the launch units `units` for step `t`: the bulk one, or
    /// with `open` the one of open cells too.
    fn update_units(&mut self, units: Range<u32>, t: u64, open: Option<(OpenCells<S::Real>, u32)>) {
        let flags = Shared::new(self.flags.as_ptr());
        let p = self.config.step_params::<S::Real>(t);
        let scheme = self.config.streaming;
        let (f, dst) = (Shared(self.f.as_mut_ptr()), Shared(self.f_next.as_mut_ptr()));
        with_grid!(&self.grid, |grid| {
            let cells = grid.region_cells(units);
            // Open cells in the bulk kernel come only with the stamped operators
            // (`SolverConfig::validate`).
            crate::with_collision!(self.config.collision_params::<S::Real>(), |c| {
                let p = &p.with_collision(c);
                update_ranges::<L, Q, S, _, _>(cells, &StepArgs { grid, p, scheme, f, dst, flags, open })
            })
        })
    }

    /// The open-boundary groups for step `t`.
    fn update_open(&mut self, t: u64) {
        let scheme = self.config.streaming;
        let p = self.config.step_params::<S::Real>(t);
        let flags = Shared::new(self.flags.as_ptr());
        let src = Shared(self.f.as_mut_ptr());
        let dst = match scheme {
            Streaming::EsotericPull => src,
            Streaming::TwoLattice => Shared(self.f_next.as_mut_ptr()),
        };
        with_grid!(&self.grid, |g| for (cells, open, velocities) in &self.open {
            let velocities = velocities.as_ref().map_or(std::ptr::null(), |v| v.as_ptr());
            let velocities = Shared::new(velocities);
            cells.par_iter().enumerate().for_each(|(k, &n)| {
                // SAFETY: buffers sized for the partition; an open cell touches
                // only slots no other cell touches in the same step; a profile
                // holds three values per cell.
                unsafe {
                    let open = stream::with_profile(*open, velocities.get(), k);
                    stream::open_boundary_update::<L, Q, S, _>(
                        &g,
                        scheme,
                        &p,
                        &open,
                        src.get(),
                        dst.get(),
                        flags.get(),
                        g.cell_of(n),
                    )
                }
            });
        })
    }

    /// The buffer that holds, or is receiving, the output of step `t`: the
    /// current buffer once step `t` has ended, the one being written while
    /// it runs (two-lattice pull; Esoteric Pull has one buffer).
    fn step_output_mut(&mut self, t: u64) -> &mut [S] {
        if self.t > t || self.config.streaming == Streaming::EsotericPull {
            &mut self.f
        } else {
            &mut self.f_next
        }
    }

    /// Ends the current step: the buffer written becomes the current one.
    fn end_step(&mut self) {
        if self.config.streaming == Streaming::TwoLattice {
            std::mem::swap(&mut self.f, &mut self.f_next);
        }
        self.t += 1;
    }

    /// The own cells' density and velocity at step `t`.
    fn fields(&self, t: u64) -> PartFields {
        let cells = self.grid.cells();
        let mut out = vec![S::Real::ZERO; FIELD_COMPONENTS * cells];
        let p = self.config.step_params::<S::Real>(t);
        let (o, f, flags) = (Shared(out.as_mut_ptr()), Shared::new(self.f.as_ptr()), Shared::new(self.flags.as_ptr()));
        let scheme = self.config.streaming;
        for range in self.own_cells() {
            with_grid!(&self.grid, |g| for_each_cell(g, range, |cell| {
                // SAFETY: reads only; each cell writes its own output entries.
                unsafe { stream::fields::<L, Q, S, _>(&g, scheme, &p, f.get(), flags.get(), o.get(), cell) }
            }));
        }
        if let Some(tables) = &self.curved {
            // SAFETY: the tables hold `count` cells and `Q` values per cell;
            // `curved::fields` reads the carried values from the buffer and
            // writes none, so the shared borrow is never written through.
            let carried = tables.carried.as_ptr() as *mut S::Real;
            let links = unsafe { CurvedCells::new(tables.cells.as_ptr(), tables.q.as_ptr(), carried, tables.count()) };
            with_grid!(&self.grid, |g| for k in 0..tables.count() {
                // SAFETY: reads only; each listed cell writes its own output entries.
                unsafe { curved::fields::<L, Q, S, _>(&g, scheme, &p, f.get(), flags.get(), &links, o.get(), k) }
            });
        }
        self.grid.own_fields(&self.slab, &out)
    }
}

/// Partitions in host memory: the CPU executor of the step plan.
pub struct CpuParts<L: Lattice<Q>, const Q: usize, S: Storage> {
    parts: Vec<CpuPart<L, Q, S>>,
    slabs: Vec<Slab>,
    config: SolverConfig,
    /// What each partition sends its neighbours after a step.
    sends: HaloSends,
}

/// A simulation on the CPU.
pub type CpuSolver<L, const Q: usize, S> = Simulation<CpuParts<L, Q, S>>;

impl<L: Lattice<Q>, const Q: usize, S: Storage> CpuSolver<L, Q, S> {
    /// The whole domain as one partition, initialised to equilibrium.
    pub fn new(config: SolverConfig) -> Result<Self> {
        config.validate()?;
        let slab = Slab::whole(config.domain.dims.nz);
        let parts = CpuParts {
            parts: vec![CpuPart::new(&config, slab.clone())?],
            slabs: vec![slab],
            config: config.clone(),
            sends: HaloSends::default(),
        };
        Ok(Simulation::from_parts(config, parts, Plan::single()))
    }

    /// The domain split along z into `parts` partitions whose step pieces
    /// run in the order `schedule`.
    pub fn partitioned(config: SolverConfig, parts: u32, schedule: Schedule) -> Result<Self> {
        config.validate()?;
        let slabs = Slab::split_grid(&config, parts, kernels_gpu::grid::halo_width::<L, Q>())?;
        let parts: Vec<CpuPart<L, Q, S>> =
            slabs.iter().map(|s| CpuPart::new(&config, s.clone())).collect::<Result<_>>()?;
        let sends = HaloSends::new(config.streaming, z_pairs(&L::C), parts.len(), |from, to, copy| {
            let (a, b) = (&parts[from], &parts[to]);
            a.grid.halo_runs(copy, a.slab.len(), &b.grid, b.slab.len(), Q)
        });
        let exec = CpuParts { parts, slabs: slabs.clone(), config: config.clone(), sends };
        Ok(Simulation::from_parts(config, exec, Plan::split(slabs.len(), schedule)))
    }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> Executor for CpuParts<L, Q, S> {
    fn update(&mut self, part: usize, region: Region, t: u64) -> Result<()> {
        self.parts[part].update(region, t);
        Ok(())
    }

    /// Copies partition `k`'s halo values of step `t` from the buffer
    /// holding its output into its neighbours'.
    fn exchange(&mut self, k: usize, t: u64) -> Result<()> {
        for (target, runs) in self.sends.of(k, t) {
            let target = *target;
            for (from, to, len) in runs.iter().flat_map(HaloRun::pieces) {
                if target == k {
                    // One partition is its own neighbour; the ranges never overlap (see `crate::halo`).
                    self.parts[k].step_output_mut(t).copy_within(from..from + len, to);
                } else {
                    let (low, high) = self.parts.split_at_mut(k.max(target));
                    let (sender, receiver) =
                        if k < target { (&mut low[k], &mut high[0]) } else { (&mut high[0], &mut low[target]) };
                    receiver.step_output_mut(t)[to..to + len]
                        .copy_from_slice(&sender.step_output_mut(t)[from..from + len]);
                }
            }
        }
        Ok(())
    }

    fn end_step(&mut self, _t: u64) -> Result<()> {
        self.parts.iter_mut().for_each(CpuPart::end_step);
        Ok(())
    }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> Partitions for CpuParts<L, Q, S> {
    type Storage = S;

    fn slabs(&self) -> &[Slab] {
        &self.slabs
    }

    fn synchronize(&mut self) -> Result<()> {
        Ok(())
    }

    fn fields(&mut self, t: u64) -> Result<Vec<PartFields>> {
        Ok(self.parts.iter().map(|p| p.fields(t)).collect())
    }

    fn masses(&mut self, t: u64) -> Result<Vec<f64>> {
        Ok(self
            .parts
            .iter()
            .map(|p| mass_of::<L, Q, S>(&p.config, &p.grid, &p.flags, &p.f, t, &p.own_cells()))
            .collect())
    }

    fn forces(&mut self, t: u64, objects: &[CellBlocks<bool>]) -> Result<Vec<Vec<[f64; 3]>>> {
        Ok(self
            .parts
            .iter()
            .map(|p| {
                momentum_exchange::<L, Q, S>(&p.config, &p.grid, &p.slab, &p.flags, &p.f, t, objects, &p.own_cells())
            })
            .collect())
    }

    fn populations(&mut self) -> Result<Vec<Vec<S>>> {
        Ok(self
            .parts
            .iter()
            .map(|p| match &p.grid {
                PartGrid::Dense(_) => own_values(&p.f, p.plane(), Q, &p.slab).to_vec(),
                sparse => own_values(&sparse.dense_populations(&p.f, Q, S::ZERO), p.plane(), Q, &p.slab).to_vec(),
            })
            .collect())
    }

    fn saved_parts(&mut self) -> Result<Vec<SavedPart>> {
        Ok(self.parts.iter().map(|p| p.grid.saved_part(&p.slab, &p.f, Q)).collect())
    }

    fn restore(&mut self, state: &SavedState, t: u64) -> Result<()> {
        let d = self.config.domain.dims;
        for p in &mut self.parts {
            p.f = p.grid.restored(state, &p.slab, d, Q)?;
            p.t = t;
            p.seed_curved();
        }
        Ok(())
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Cpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::tube_config;
    use crate::solver::Solver;
    use kernels_gpu::{Dims, D3Q19};

    /// A sparse grid's box may hold more than 2^32 cells: the host never
    /// makes it dense, and the flow in it is bit for bit the flow in a
    /// tight box around the same tube.
    #[test]
    fn a_sparse_box_of_more_than_2_32_cells_steps_as_a_tight_one() {
        let (wide, tight) = (Dims::new(4096, 4096, 264), Dims::new(16, 16, 264));
        assert!(wide.cells() > 1 << 32);
        let (corner_wide, corner_tight) = ([3001, 2003], [2, 2]);
        let mut a = CpuSolver::<D3Q19, 19, f32>::new(tube_config(wide, corner_wide, 12).unwrap()).unwrap();
        let mut b = CpuSolver::<D3Q19, 19, f32>::new(tube_config(tight, corner_tight, 12).unwrap()).unwrap();
        let (pa, pb) = (&a.exec().parts[0], &b.exec().parts[0]);
        assert!(pa.grid.cells() < 200_000, "{} cells stored", pa.grid.cells());
        assert_eq!(pa.flags.iter().filter(|&&f| kernels_gpu::flags::is_flow(f)).count(), 12 * 12 * 264);
        assert_eq!(pb.grid.cells(), 2 * 2 * 33 * 512 + 512);
        for steps in [7, 8] {
            a.step(steps).unwrap();
            b.step(steps).unwrap();
            let (pa, pb) = (&a.exec().parts[0], &b.exec().parts[0]);
            let (PartGrid::Sparse(la), PartGrid::Sparse(lb)) = (&pa.grid, &pb.grid) else { panic!("sparse grids") };
            let mut compared = 0;
            for z in 0..wide.nz {
                for y in 0..12 {
                    for x in 0..12 {
                        let at = |d: Dims, c: [u32; 2]| d.index(c[0] + x, c[1] + y, z);
                        let na = la.storage_of(at(wide, corner_wide)).unwrap();
                        let nb = lb.storage_of(at(tight, corner_tight)).unwrap();
                        for slot in 0..19 {
                            let (ga, gb) = (la.grid(), lb.grid());
                            let va = pa.f[ga.population(19, ga.cell_of(na), slot)];
                            let vb = pb.f[gb.population(19, gb.cell_of(nb), slot)];
                            assert_eq!(va.to_bits(), vb.to_bits(), "cell ({x}, {y}, {z}) slot {slot}");
                            compared += 1;
                        }
                    }
                }
            }
            assert_eq!(compared, 12 * 12 * 264 * 19);
        }
        // Something flows: the force has moved the fluid along z.
        let f = b.fields().unwrap();
        assert!(f.u[tight.index(8, 8, 100)][2] > 0.0);
    }
}
