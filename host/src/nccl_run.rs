//! A case run over NCCL, one process per GPU: rank 0 runs the time loop with
//! outputs, checkpoints and resume ([`NcclRun`] is its solver); every other
//! rank serves, doing what rank 0 broadcasts before each step
//! or read-back. Only rank 0 decides anything, so the ranks cannot disagree
//! about when to write, stop or resume.

use crate::cpu::CpuSolver;
use crate::error::{Error, Result};
use crate::fields::Fields;
use crate::gpu::DeviceStorage;
use crate::nccl::{NcclPartition, Ranks};
use crate::solver::{BackendKind, SavedState, Solver, SolverConfig};
use kernels_gpu::{Lattice, Real};

/// What rank 0 asks the other ranks to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// Run this many time steps.
    Step(u64),
    /// Send the populations to rank 0.
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
        }
    }

    /// The command two broadcast words carry.
    pub fn decode(words: [u64; 2]) -> Result<Self> {
        match words {
            [1, n] => Ok(Command::Step(n)),
            [2, _] => Ok(Command::Gather),
            [3, t] => Ok(Command::Scatter(t)),
            [4, _] => Ok(Command::Finish),
            _ => Err(Error::Setup(format!("rank 0 sent an unknown command {words:?}"))),
        }
    }
}

/// Rank 0's solver: each call tells the other ranks what to do, then does
/// its own part. Dropping it ends the other ranks' service.
///
/// An error after a command has gone out leaves the other ranks inside a
/// collective that rank 0 will not finish: rank 0 then abandons its NCCL
/// work and returns the error, so the process exits non-zero and the
/// launcher ends the job (`scripts/nccl-local.sh` ends the other ranks).
pub struct NcclRun<L: Lattice<Q>, const Q: usize, S: DeviceStorage> {
    part: NcclPartition<L, Q, S>,
    /// The global state on the CPU, for read-backs: built on first use after a step.
    global: Option<CpuSolver<L, Q, S>>,
    /// Whether an error broke a collective (no more commands can be sent).
    broken: bool,
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> NcclRun<L, Q, S> {
    fn tell(&mut self, c: Command) -> Result<()> {
        if self.broken {
            return Err(Error::Setup("an earlier NCCL error ended this job".into()));
        }
        let told = self.part.broadcast(c.encode()).map(|_| ());
        self.check(told)
    }

    /// Marks the job broken on an error inside a collective.
    fn check<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_err() {
            self.broken = true;
            self.part.abort();
        }
        r
    }

    fn gather(&mut self) -> Result<Vec<S>> {
        self.tell(Command::Gather)?;
        let gathered = self.part.gather();
        self.check(gathered)?.ok_or_else(|| Error::Setup("only rank 0 gathers".into()))
    }

    fn global(&mut self) -> Result<&mut CpuSolver<L, Q, S>> {
        if self.global.is_none() {
            let f = self.gather()?;
            self.global = Some(CpuSolver::holding(self.part.config().clone(), &f, self.part.time())?);
        }
        Ok(self.global.as_mut().expect("set above"))
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Drop for NcclRun<L, Q, S> {
    fn drop(&mut self) {
        // The others wait for a command: release them, unless a collective broke.
        if !self.broken {
            if let Err(e) = self.tell(Command::Finish) {
                eprintln!("error: could not tell the other ranks to finish: {e}");
            }
        }
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> Solver for NcclRun<L, Q, S> {
    fn step(&mut self, steps: u64) -> Result<()> {
        self.tell(Command::Step(steps))?;
        self.global = None;
        let stepped = self.part.step(steps);
        self.check(stepped)
    }

    fn synchronize(&mut self) -> Result<()> {
        let done = self.part.synchronize();
        self.check(done)
    }

    fn time(&self) -> u64 {
        self.part.time()
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
        // The read-back copy, when there is one, is this step's state.
        if let Some(g) = &mut self.global {
            return g.save_state();
        }
        let time = self.part.time();
        Ok(SavedState { time, populations: crate::solver::storage_bytes(&self.gather()?).to_vec() })
    }

    fn restore_state(&mut self, state: &SavedState) -> Result<()> {
        let mut f = vec![S::ZERO; Q * self.part.config().domain.dims.cells()];
        crate::solver::restore_storage(&mut f, &state.populations)?;
        self.tell(Command::Scatter(state.time))?;
        self.global = None;
        let scattered = self.part.scatter(Some(&f), state.time);
        self.check(scattered)
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Gpu(self.part.ranks().local)
    }

    fn config(&self) -> &SolverConfig {
        self.part.config()
    }
}

/// Joins the job as rank `ranks.rank` with this rank's partition of
/// `config`. Rank 0 gets its solver back; every other rank serves rank 0's
/// commands until it finishes, and gets `None`.
pub fn join(config: SolverConfig, ranks: Ranks, rendezvous: &str, ptx: &str) -> Result<Option<Box<dyn Solver>>> {
    fn go<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
        config: SolverConfig,
        ranks: Ranks,
        rendezvous: &str,
        ptx: &str,
    ) -> Result<Option<Box<dyn Solver>>> {
        let part = NcclPartition::<L, Q, S>::new(config, ranks, rendezvous, ptx)?;
        if ranks.rank == 0 {
            return Ok(Some(Box::new(NcclRun { part, global: None, broken: false })));
        }
        serve(part)?;
        Ok(None)
    }
    let (lattice, precision) = (config.lattice, config.precision);
    crate::dispatch!(lattice, precision, go(config, ranks, rendezvous, ptx))
}

/// Does what rank 0 asks until it says the run is over. On an error this
/// rank abandons its NCCL work and returns it (the process exits non-zero,
/// and the launcher ends the job).
fn serve<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(mut part: NcclPartition<L, Q, S>) -> Result<()> {
    let mut next = || -> Result<bool> {
        match Command::decode(part.broadcast([0, 0])?)? {
            Command::Step(n) => part.step(n)?,
            Command::Gather => {
                part.gather()?;
            }
            Command::Scatter(t) => part.scatter(None, t)?,
            Command::Finish => {
                part.synchronize()?;
                return Ok(false);
            }
        }
        Ok(true)
    };
    loop {
        match next() {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) => {
                part.abort();
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
        for c in [Command::Step(0), Command::Step(u64::MAX), Command::Gather, Command::Scatter(17), Command::Finish] {
            assert_eq!(Command::decode(c.encode()).unwrap(), c);
        }
        let err = Command::decode([0, 0]).unwrap_err().to_string();
        assert!(err.contains("unknown command"), "{err}");
    }
}
