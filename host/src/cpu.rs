//! The CPU backend: rayon over cells, calling the very per-cell functions the
//! GPU kernels call.

use crate::error::Result;
use crate::fields::Fields;
use crate::solver::{mass_of, BackendKind, Solver, SolverConfig};
use kernels_gpu::stream::{self, Streaming, FIELD_COMPONENTS};
use kernels_gpu::{Lattice, Real, Storage};
use rayon::prelude::*;
use std::marker::PhantomData;

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

/// Runs `body(n)` for every cell in parallel.
fn for_each_cell(cells: usize, body: impl Fn(u32) + Sync + Send) {
    (0..cells as u32).into_par_iter().with_min_len(CELLS_PER_TASK).for_each(body);
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
        let cells = config.domain.dims.cells();
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
        for_each_cell(cells, |n| {
            // SAFETY: buffers sized for the domain; init writes disjoint slots per cell.
            unsafe { stream::init_equilibrium::<L, Q, S>(scheme, &p, fp.get(), fl.get(), pl.get(), n) }
        });
        Ok(Self { config, flags, f, f_next, t: 0, _lattice: PhantomData })
    }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> Solver for CpuSolver<L, Q, S> {
    fn step(&mut self, steps: u64) -> Result<()> {
        let cells = self.config.domain.dims.cells();
        let flags = Shared::new(self.flags.as_ptr());
        for _ in 0..steps {
            let p = self.config.step_params::<S::Real>(self.t);
            match self.config.streaming {
                Streaming::EsotericPull => {
                    let f = Shared(self.f.as_mut_ptr());
                    for_each_cell(cells, |n| {
                        // SAFETY: each slot is read and written by exactly one cell per step.
                        unsafe { stream::stream_collide_esoteric::<L, Q, S>(&p, f.get(), flags.get(), n) }
                    });
                }
                Streaming::TwoLattice => {
                    let src = Shared::new(self.f.as_ptr());
                    let dst = Shared(self.f_next.as_mut_ptr());
                    for_each_cell(cells, |n| {
                        // SAFETY: src is only read; each cell writes its own slots of dst.
                        unsafe { stream::stream_collide_two_lattice::<L, Q, S>(&p, src.get(), dst.get(), flags.get(), n) }
                    });
                    std::mem::swap(&mut self.f, &mut self.f_next);
                }
            }
            self.t += 1;
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
        for_each_cell(cells, |n| {
            // SAFETY: reads only; each cell writes its own output entries.
            unsafe { stream::fields::<L, Q, S>(scheme, &p, f.get(), flags.get(), o.get(), n) }
        });
        Ok(planes_to_fields(dims, &out))
    }

    fn populations(&mut self) -> Result<Vec<f64>> {
        Ok(self.f.iter().map(|v| v.load().to_f64()).collect())
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
