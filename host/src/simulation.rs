//! A simulation as partitions run by a step plan: the one implementation
//! of [`Solver`] for every executor. Stepping runs the plan
//! ([`crate::plan::run`]); read-backs ask each partition for what it
//! computes where its populations live (its own cells' fields, mass and
//! forces), and only those results are put together here.

use crate::cell_blocks::CellBlocks;
use crate::error::Result;
use crate::fields::{Fields, PartFields};
use crate::partition::Slab;
use crate::plan::{self, Executor, Plan};
use crate::solver::{BackendKind, KernelReport, SavedPart, SavedState, Solver, SolverConfig};
use kernels_gpu::{Real, Storage};

/// What a simulation asks of its partitions besides stepping them.
pub trait Partitions: Executor + Send {
    /// Population storage format.
    type Storage: Storage;
    /// Every partition's layers, in z order.
    fn slabs(&self) -> &[Slab];
    /// Waits until queued work is done.
    fn synchronize(&mut self) -> Result<()>;
    /// Each partition's density and velocity of its own cells at time `t`.
    fn fields(&mut self, t: u64) -> Result<Vec<PartFields>>;
    /// Each partition's fluid mass at time `t` (f64 sums of its populations).
    fn masses(&mut self, t: u64) -> Result<Vec<f64>>;
    /// Each partition's momentum-exchange force on each object at time `t`
    /// (`objects` over the whole domain; see [`crate::forces`]).
    fn forces(&mut self, t: u64, objects: &[CellBlocks<bool>]) -> Result<Vec<Vec<[f64; 3]>>>;
    /// Each partition's own layers of the current population buffer, in
    /// the dense layout.
    fn populations(&mut self) -> Result<Vec<Vec<Self::Storage>>>;
    /// Each partition's share of a saved state ([`crate::part_grid::PartGrid::saved_part`]).
    fn saved_parts(&mut self) -> Result<Vec<SavedPart>>;
    /// Sets every partition's populations, halos included, from a saved
    /// state (of any partitioning), and its time to `t`.
    fn restore(&mut self, state: &SavedState, t: u64) -> Result<()>;
    /// The backend, for reports.
    fn backend(&self) -> BackendKind;
    /// Registers and occupancy of the stream-collide kernel (GPU only).
    fn kernel_report(&self) -> Option<KernelReport> {
        None
    }
}

/// A simulation: the whole configuration, its partitions and its plan.
pub struct Simulation<X> {
    config: SolverConfig,
    exec: X,
    plan: Plan,
    t: u64,
}

impl<X: Partitions> Simulation<X> {
    /// Runs `config` on the partitions `exec` in the order `plan`, from step 0.
    pub(crate) fn from_parts(config: SolverConfig, exec: X, plan: Plan) -> Self {
        Self { config, exec, plan, t: 0 }
    }

    /// The partitions, for tests that look at their storage.
    #[cfg(test)]
    pub(crate) fn exec(&self) -> &X {
        &self.exec
    }

    /// The partitions.
    pub fn executor(&mut self) -> &mut X {
        &mut self.exec
    }

    /// The partitions, to read.
    pub fn executor_ref(&self) -> &X {
        &self.exec
    }

    /// The population buffer of the whole domain.
    fn whole_populations(&mut self) -> Result<Vec<X::Storage>> {
        // Layers are contiguous in the layout: own layers in z order are the whole buffer.
        Ok(self.exec.populations()?.concat())
    }
}

impl<X: Partitions> Solver for Simulation<X> {
    fn step(&mut self, steps: u64) -> Result<()> {
        plan::run(&self.plan, &mut self.exec, self.t, steps)?;
        self.t += steps;
        Ok(())
    }

    fn synchronize(&mut self) -> Result<()> {
        self.exec.synchronize()
    }

    fn time(&self) -> u64 {
        self.t
    }

    fn fields(&mut self) -> Result<Fields> {
        Ok(Fields::from_parts(self.config.domain.dims, &self.exec.fields(self.t)?))
    }

    fn populations(&mut self) -> Result<Vec<f64>> {
        Ok(self.whole_populations()?.iter().map(|v| v.load().to_f64()).collect())
    }

    fn mass(&mut self) -> Result<f64> {
        Ok(self.exec.masses(self.t)?.iter().sum())
    }

    fn forces(&mut self, objects: &[CellBlocks<bool>]) -> Result<Vec<[f64; 3]>> {
        let mut total = vec![[0.0; 3]; objects.len()];
        for part in self.exec.forces(self.t, objects)? {
            for (sum, f) in total.iter_mut().zip(part) {
                for a in 0..3 {
                    sum[a] += f[a];
                }
            }
        }
        Ok(total)
    }

    fn save_state(&mut self) -> Result<SavedState> {
        Ok(SavedState { time: self.t, parts: self.exec.saved_parts()? })
    }

    fn restore_state(&mut self, state: &SavedState) -> Result<()> {
        self.exec.restore(state, state.time)?;
        self.t = state.time;
        Ok(())
    }

    fn backend(&self) -> BackendKind {
        self.exec.backend()
    }

    fn config(&self) -> &SolverConfig {
        &self.config
    }

    fn kernel_report(&self) -> Option<KernelReport> {
        self.exec.kernel_report()
    }
}
