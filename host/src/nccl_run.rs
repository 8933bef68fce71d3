//! A case run over NCCL, one process per GPU: rank 0 runs the time loop with
//! outputs, checkpoints and resume ([`NcclRun`] is its solver); every other
//! rank serves, doing its part of what rank 0 broadcasts before each step
//! or read-back (read-backs gather only each rank's fields, mass or forces). Only rank 0 decides anything, so the ranks cannot disagree
//! about when to write, stop or resume.

use crate::cell_blocks::CellBlocks;
use crate::error::{Error, Result};
use crate::fields::Fields;
use crate::gpu::DeviceStorage;
use crate::nccl::{NcclSolver, Ranks};
use crate::simulation::Partitions;
use crate::solver::{BackendKind, SavedState, Solver, SolverConfig};
use kernels_gpu::Lattice;

/// What rank 0 asks the other ranks to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Run this many time steps.
    Step(u64),
    /// Send the own cells' fields to rank 0.
    Fields,
    /// Send the own cells' mass to rank 0.
    Mass,
    /// Send the own cells' forces on this many objects to rank 0.
    Forces(u64),
    /// Send the own populations to rank 0.
    Gather,
    /// Take populations from rank 0, at this time step.
    Scatter(u64),
    /// The run is over.
    Finish,
}

impl Command {
    /// The two words broadcast for this command.
    pub const fn encode(self) -> [u64; 2] {
        match self {
            Command::Step(n) => [1, n],
            Command::Gather => [2, 0],
            Command::Scatter(t) => [3, t],
            Command::Finish => [4, 0],
            Command::Fields => [5, 0],
            Command::Mass => [6, 0],
            Command::Forces(n) => [7, n],
        }
    }

    /// The command two broadcast words carry.
    pub fn decode(words: [u64; 2]) -> Result<Self> {
        match words {
            [1, n] => Ok(Command::Step(n)),
            [2, _] => Ok(Command::Gather),
            [3, t] => Ok(Command::Scatter(t)),
            [4, _] => Ok(Command::Finish),
            [5, _] => Ok(Command::Fields),
            [6, _] => Ok(Command::Mass),
            [7, n] => Ok(Command::Forces(n)),
            _ => Err(Error::Setup(format!("rank 0 sent an unknown command {words:?}"))),
        }
    }
}

/// Rank 0's solver: each call tells the other ranks what to do, then does
/// its own part of the collective. Dropping it ends the other ranks' service.
///
/// An error after a command has gone out leaves the other ranks inside a
/// collective that rank 0 will not finish: rank 0 then abandons its NCCL
/// work and returns the error, so the process exits non-zero and the
/// launcher ends the job (`scripts/nccl-local.sh` ends the other ranks).
pub struct NcclRun<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    sim: NcclSolver<L, Q, S>,
    /// Whether an error broke a collective (no more commands can be sent).
    broken: bool,
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> NcclRun<L, Q, S> {
    /// Tells the other ranks `c`, then runs rank 0's part `f`.
    fn collective<T>(&mut self, c: Command, f: impl FnOnce(&mut NcclSolver<L, Q, S>) -> Result<T>) -> Result<T> {
        if self.broken {
            return Err(Error::Setup("an earlier NCCL error ended this job".into()));
        }
        let done = self.sim.executor().broadcast(c.encode()).and_then(|_| f(&mut self.sim));
        if done.is_err() {
            self.broken = true;
            self.sim.executor().abort();
        }
        done
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Drop for NcclRun<L, Q, S> {
    fn drop(&mut self) {
        // The others wait for a command: release them, unless a collective broke.
        if !self.broken {
            if let Err(e) = self.collective(Command::Finish, |s| s.synchronize()) {
                eprintln!("error: could not tell the other ranks to finish: {e}");
            }
        }
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Solver for NcclRun<L, Q, S> {
    fn step(&mut self, steps: u64) -> Result<()> {
        self.collective(Command::Step(steps), |s| s.step(steps))
    }

    fn synchronize(&mut self) -> Result<()> {
        let done = self.sim.synchronize();
        if done.is_err() {
            self.broken = true;
            self.sim.executor().abort();
        }
        done
    }

    fn time(&self) -> u64 {
        self.sim.time()
    }

    fn fields(&mut self) -> Result<Fields> {
        self.collective(Command::Fields, |s| s.fields())
    }

    fn populations(&mut self) -> Result<Vec<f64>> {
        self.collective(Command::Gather, |s| s.populations())
    }

    fn mass(&mut self) -> Result<f64> {
        self.collective(Command::Mass, |s| s.mass())
    }

    fn forces(&mut self, objects: &[CellBlocks<bool>]) -> Result<Vec<[f64; 3]>> {
        self.collective(Command::Forces(objects.len() as u64), |s| s.forces(objects))
    }

    fn save_state(&mut self) -> Result<SavedState> {
        self.collective(Command::Gather, |s| s.save_state())
    }

    fn restore_state(&mut self, state: &SavedState) -> Result<()> {
        // Checked before the others are told, so a wrong state is refused cleanly.
        let d = self.sim.config().domain.dims;
        crate::saved::SavedCells::new(state, d, self.sim.config().lattice.q(), S::BYTES)?;
        self.collective(Command::Scatter(state.time), |s| s.restore_state(state))
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Gpu(self.sim_ranks().local)
    }

    fn config(&self) -> &SolverConfig {
        self.sim.config()
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> NcclRun<L, Q, S> {
    fn sim_ranks(&self) -> Ranks {
        self.sim.executor_ref().ranks()
    }
}

/// Joins the job as rank `ranks.rank` with this rank's partition of
/// `config`. Rank 0 gets its solver back; every other rank serves rank 0's
/// commands until it finishes, and gets `None`. `objects` are the masks of
/// the objects whose forces rank 0 will ask for: every rank builds them from
/// the case file as it builds `config`, so no mask is sent (rank 0's solver
/// takes its own with each request).
pub fn join(
    config: SolverConfig,
    objects: &[CellBlocks<bool>],
    ranks: Ranks,
    rendezvous: &str,
    ptx: &str,
) -> Result<Option<Box<dyn Solver>>> {
    fn go<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
        config: SolverConfig,
        objects: &[CellBlocks<bool>],
        ranks: Ranks,
        rendezvous: &str,
        ptx: &str,
    ) -> Result<Option<Box<dyn Solver>>> {
        let sim = crate::nccl::join::<L, Q, S>(config, ranks, rendezvous, ptx)?;
        if ranks.rank == 0 {
            return Ok(Some(Box::new(NcclRun { sim, broken: false })));
        }
        serve(sim, objects)?;
        Ok(None)
    }
    let (lattice, precision) = (config.lattice, config.precision);
    crate::dispatch!(lattice, precision, go(config, objects, ranks, rendezvous, ptx))
}

/// Does what rank 0 asks until it says the run is over: this rank's part
/// of each collective. On an error this rank abandons its NCCL work and
/// returns it (the process exits non-zero, and the launcher ends the job).
fn serve<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
    mut sim: NcclSolver<L, Q, S>,
    objects: &[CellBlocks<bool>],
) -> Result<()> {
    let next = |sim: &mut NcclSolver<L, Q, S>| -> Result<bool> {
        let t = sim.time();
        match Command::decode(sim.executor().broadcast([0, 0])?)? {
            Command::Step(n) => sim.step(n)?,
            Command::Fields => drop(sim.executor().fields(t)?),
            Command::Mass => drop(sim.executor().masses(t)?),
            Command::Forces(n) if n != objects.len() as u64 => {
                return Err(Error::Setup(format!(
                    "rank 0 asked for the forces on {n} objects, but this rank's case has {}: run every rank on the same case file",
                    objects.len()
                )))
            }
            Command::Forces(_) => drop(sim.executor().forces(t, objects)?),
            Command::Gather => drop(sim.executor().populations()?),
            Command::Scatter(t) => sim.restore_state(&SavedState { time: t, parts: Vec::new() })?,
            Command::Finish => {
                sim.synchronize()?;
                return Ok(false);
            }
        }
        Ok(true)
    };
    loop {
        match next(&mut sim) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => {
                sim.executor().abort();
                return Err(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_survive_the_broadcast_and_junk_is_refused() {
        for c in [
            Command::Step(0),
            Command::Step(u64::MAX),
            Command::Gather,
            Command::Scatter(17),
            Command::Finish,
            Command::Fields,
            Command::Mass,
            Command::Forces(3),
        ] {
            assert_eq!(Command::decode(c.encode()).unwrap(), c);
        }
        let err = Command::decode([0, 0]).unwrap_err().to_string();
        assert!(err.contains("unknown command"), "{err}");
    }
}
