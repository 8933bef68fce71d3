//! The CPU backend: rayon over cells, calling the very per-cell functions the
//! GPU kernels call.

use crate::error::Result;
use crate::fields::Fields;
use crate::solver::{
    mass_of, restore_storage, storage_bytes, BackendKind, CollisionParams, SavedState, Solver, SolverConfig,
};
use kernels_gpu::stream::{self, Streaming, FIELD_COMPONENTS};
use kernels_gpu::{Collision, Grid, Lattice, OpenParams, Real, StepParams, Storage};
use rayon::prelude::*;
use std::marker::PhantomData;
use std::ops::Range;

/// Cells per rayon task: large enough to amortise scheduling.
const CELLS_PER_TASK: usize = 4096;

/// A raw pointer shared by the threads of one parallel loop.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);
// SAFETY: used only in loops where distinct cells touch distinct slots (see
// `kernels_gpu::stream`), so no two threads access the same element.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}
impl<T> Shared<T> {
    fn new(p: *const T) -> Self {
        Self(p as *mut T)
    }
    fn get(self) -> *mut T {
        self.0
    }
}

/// Runs `body(cell)` for every cell of `grid` in parallel.
fn for_each_cell<G: Grid + Sync>(grid: G, body: impl Fn(G::Cell) + Sync + Send) {
    (0..grid.cells() as u32).into_par_iter().with_min_len(CELLS_PER_TASK).for_each(|n| body(grid.cell_of(n)));
}

/// Whether this CPU has fused multiply-add. The physics is written with
/// `mul_add` (one rounding, as on the GPU); without the instruction Rust
/// computes it in software, correctly but slowly, so the step loop is also
/// compiled for FMA hardware and chosen at run time.
fn has_fma() -> bool {
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
struct StepArgs<'a, S: Storage, C> {
    p: &'a StepParams<S::Real, C>,
    open: &'a OpenParams<S::Real>,
    scheme: Streaming,
    f: Shared<S>,
    /// Second buffer of two-lattice pull (unused by Esoteric Pull).
    dst: Shared<S>,
    flags: Shared<u8>,
}

/// One time step of the cells in `range` (both schemes); inlined into the
/// two compilations below.
///
/// # Safety
/// Buffers sized for the domain; no other thread works on the same cells.
#[inline(always)]
unsafe fn step_range<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>>(
    a: &StepArgs<S, C>,
    range: Range<u32>,
) {
    let (p, flags) = (a.p, a.flags);
    let grid = &p.dims;
    for n in range {
        let cell = grid.cell_of(n);
        // SAFETY (both): each slot is read and written by exactly one cell per
        // step (Esoteric Pull); f is only read and each cell writes its own
        // slots of dst (two-lattice).
        let dst = match a.scheme {
            Streaming::EsotericPull => {
                unsafe { stream::stream_collide_esoteric::<L, Q, S, C>(grid, p, a.f.get(), flags.get(), cell) };
                a.f
            }
            Streaming::TwoLattice => {
                unsafe {
                    stream::stream_collide_two_lattice::<L, Q, S, C>(grid, p, a.f.get(), a.dst.get(), flags.get(), cell)
                };
                a.dst
            }
        };
        // The GPU runs open boundaries as their own group; here one loop does both.
        unsafe {
            stream::open_boundary_update::<L, Q, S>(grid, a.scheme, p, a.open, a.f.get(), dst.get(), flags.get(), cell)
        };
    }
}

/// [`step_range`] compiled with FMA instructions.
///
/// # Safety
/// As [`step_range`], and the CPU must support FMA ([`has_fma`]).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn step_range_fma<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>>(
    a: &StepArgs<S, C>,
    range: Range<u32>,
) {
    unsafe { step_range::<L, Q, S, C>(a, range) }
}

/// Updates the cells `cells` in parallel ranges, with the FMA build where the CPU has it.
fn update_ranges<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>>(
    cells: Range<usize>,
    a: &StepArgs<S, C>,
) {
    let fma = has_fma();
    for_each_range(cells, |range| {
        // SAFETY: buffers sized for the domain; ranges are disjoint; FMA use
        // checked by `has_fma`.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            if fma {
                step_range_fma::<L, Q, S, C>(a, range)
            } else {
                step_range::<L, Q, S, C>(a, range)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        unsafe {
            let _ = fma;
            step_range::<L, Q, S, C>(a, range)
        }
    });
}

/// A simulation on the CPU.
pub struct CpuSolver<L: Lattice<Q>, const Q: usize, S: Storage> {
    config: SolverConfig,
    /// Flag bytes with the near-solid bit (see [`SolverConfig::kernel_flags`]).
    flags: Vec<u8>,
    f: Vec<S>,
    /// Second buffer of the two-lattice scheme.
    f_next: Vec<S>,
    t: u64,
    _lattice: PhantomData<L>,
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> CpuSolver<L, Q, S> {
    /// Builds the solver and initialises the populations to equilibrium.
    pub fn new(config: SolverConfig) -> Result<Self> {
        config.validate()?;
        let dims = config.domain.dims;
        let cells = dims.cells();
        let flags = config.kernel_flags();
        let mut f = vec![S::ZERO; Q * cells];
        let f_next = match config.streaming {
            Streaming::TwoLattice => vec![S::ZERO; Q * cells],
            Streaming::EsotericPull => Vec::new(),
        };
        let planes = config.initial_planes::<S::Real>();
        let p = config.step_params::<S::Real>(0);
        let (fl, fp, pl) = (Shared::new(flags.as_ptr()), Shared(f.as_mut_ptr()), Shared::new(planes.as_ptr()));
        let scheme = config.streaming;
        for_each_cell(dims, |cell| {
            // SAFETY: buffers sized for the domain; init writes disjoint slots per cell.
            unsafe { stream::init_equilibrium::<L, Q, S>(&dims, scheme, &p, fp.get(), fl.get(), pl.get(), cell) }
        });
        Ok(Self { config, flags, f, f_next, t: 0, _lattice: PhantomData })
    }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> CpuSolver<L, Q, S> {
    /// A CPU copy of a split run's whole state, for read-backs: the
    /// populations `f` of `config`'s domain at step `time`.
    pub(crate) fn holding(config: SolverConfig, f: &[S], time: u64) -> Result<Self> {
        let mut copy = Self::new(config)?;
        copy.f.copy_from_slice(f);
        copy.t = time;
        Ok(copy)
    }

    /// Sets the step counter (after a caller restored the buffers itself).
    pub(crate) fn set_time(&mut self, t: u64) {
        self.t = t;
    }

    /// The current population buffer.
    pub(crate) fn buffer_mut(&mut self) -> &mut [S] {
        &mut self.f
    }

    /// The buffer that holds, or is receiving, the output of step `t`: the
    /// current buffer once step `t` has ended, the one being written while
    /// it runs (two-lattice pull; Esoteric Pull has one buffer).
    pub(crate) fn step_output_mut(&mut self, t: u64) -> &mut [S] {
        if self.t > t || self.config.streaming == Streaming::EsotericPull {
            &mut self.f
        } else {
            &mut self.f_next
        }
    }

    /// Updates the cells `cells` for the current step, without ending it
    /// (a partition's boundary layers and interior, in any order).
    pub(crate) fn update_cells(&mut self, cells: Range<usize>) {
        let flags = Shared::new(self.flags.as_ptr());
        let open = self.config.open_params::<S::Real>();
        let p = self.config.step_params::<S::Real>(self.t);
        let scheme = self.config.streaming;
        let (f, dst) = (Shared(self.f.as_mut_ptr()), Shared(self.f_next.as_mut_ptr()));
        let open = &open;
        match self.config.collision_params::<S::Real>() {
            CollisionParams::Bgk(c) => {
                let p = &p.with_collision(c);
                update_ranges::<L, Q, S, _>(cells, &StepArgs { p, open, scheme, f, dst, flags })
            }
            CollisionParams::Trt(c) => {
                let p = &p.with_collision(c);
                update_ranges::<L, Q, S, _>(cells, &StepArgs { p, open, scheme, f, dst, flags })
            }
        }
    }

    /// Ends the current step: the buffer written becomes the current one.
    pub(crate) fn end_step(&mut self) {
        if self.config.streaming == Streaming::TwoLattice {
            std::mem::swap(&mut self.f, &mut self.f_next);
        }
        self.t += 1;
    }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> Solver for CpuSolver<L, Q, S> {
    fn step(&mut self, steps: u64) -> Result<()> {
        for _ in 0..steps {
            let dims = self.config.domain.dims;
            self.update_cells(dims.region_cells(0..dims.units()));
            self.end_step();
        }
        Ok(())
    }

    fn synchronize(&mut self) -> Result<()> {
        Ok(())
    }

    fn time(&self) -> u64 {
        self.t
    }

    fn fields(&mut self) -> Result<Fields> {
        let dims = self.config.domain.dims;
        let cells = dims.cells();
        let mut out = vec![S::Real::ZERO; FIELD_COMPONENTS * cells];
        let p = self.config.step_params::<S::Real>(self.t);
        let (o, f, flags) = (Shared(out.as_mut_ptr()), Shared::new(self.f.as_ptr()), Shared::new(self.flags.as_ptr()));
        let scheme = self.config.streaming;
        for_each_cell(dims, |cell| {
            // SAFETY: reads only; each cell writes its own output entries.
            unsafe { stream::fields::<L, Q, S>(&dims, scheme, &p, f.get(), flags.get(), o.get(), cell) }
        });
        Ok(planes_to_fields(dims, &out))
    }

    fn populations(&mut self) -> Result<Vec<f64>> {
        Ok(self.f.iter().map(|v| v.load().to_f64()).collect())
    }

    fn forces(&mut self, objects: &[Vec<bool>]) -> Result<Vec<[f64; 3]>> {
        Ok(crate::forces::momentum_exchange::<L, Q, S>(&self.config, &self.f, self.t, objects))
    }

    fn save_state(&mut self) -> Result<SavedState> {
        Ok(SavedState { time: self.t, populations: storage_bytes(&self.f).to_vec() })
    }

    fn restore_state(&mut self, state: &SavedState) -> Result<()> {
        restore_storage(&mut self.f, &state.populations)?;
        self.t = state.time;
        Ok(())
    }

    fn mass(&mut self) -> Result<f64> {
        Ok(mass_of::<L, Q, S>(&self.config, &self.f, self.t))
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn config(&self) -> &SolverConfig {
        &self.config
    }
}

/// Converts `rho, ux, uy, uz` planes into [`Fields`].
pub(crate) fn planes_to_fields<T: Real>(dims: kernels_gpu::Dims, planes: &[T]) -> Fields {
    let cells = dims.cells();
    Fields {
        dims,
        rho: planes[..cells].iter().map(|v| v.to_f64()).collect(),
        u: (0..cells).map(|n| [1, 2, 3].map(|a| planes[a * cells + n].to_f64())).collect(),
    }
}
