//! The time step as a plan: an ordered list of phases that one loop runs,
//! whatever the transport. A solver is split along z into partitions (one
//! for a whole domain); a phase updates a region of a partition (the bulk
//! kernel over its layers, then its boundary groups), sends a partition's
//! halo planes to its neighbours, or ends the step. Executors
//! ([`Executor`]) say how: the CPU calls the per-cell functions over its
//! threads and copies slices; a GPU launches kernels and orders its streams
//! with events; several GPUs copy between peers; NCCL ranks send and
//! receive. [`run`] is the only step loop.
//!
//! ```text
//!            one step of a split domain (overlapped)
//!   part 0 ─ Update(Boundary) ─ Update(Interior) ─┐
//!   part 1 ─ Update(Boundary) ─ Update(Interior) ─┤
//!   part 0 ─ Exchange ──────────────────────────────┤  (after its boundary layers)
//!   part 1 ─ Exchange ──────────────────────────────┤
//!            EndStep  (the buffer written becomes current; t += 1)
//! ```
//!
//! Which orders are safe is argued in [`crate::halo`] (what each piece
//! reads and writes) and [`crate::overlap`] (the GPU's events); the CPU
//! runs the extreme orders ([`Schedule`]) and tests check that every one
//! gives the populations of a single domain bit for bit.

use crate::error::Result;

/// Which cells of a partition an update covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    /// Every own layer, and the partition's boundary groups.
    Whole,
    /// The lowest and highest own layers (what the neighbours need next), and
    /// the boundary groups (few cells; any order against the bulk is safe).
    Boundary,
    /// The own layers between them.
    Interior,
}

/// One phase of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Update a region of partition `part`.
    Update {
        /// Partition.
        part: usize,
        /// Its cells.
        region: Region,
    },
    /// Partition `part` sends the planes its neighbours' halos need (see
    /// [`crate::halo::halo_copies`]). `lagged` sends the previous step's
    /// instead: a run's first step has none to send, and the loop sends the
    /// last step's after it.
    Exchange {
        /// Sending partition.
        part: usize,
        /// Whether this is the previous step's exchange.
        lagged: bool,
    },
    /// The buffer just written becomes the current one; time advances.
    EndStep,
}

/// The order in which the pieces of a step run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Whole partitions, then every exchange.
    InOrder,
    /// Every partition's interior, then the previous step's exchanges, then
    /// the boundary layers: interiors run before the copies into and out of
    /// their partitions have landed.
    InteriorFirst,
    /// Partition by partition, the boundary layers and at once their
    /// exchange (landing before the neighbours' own boundary layers run),
    /// then every interior.
    CopiesEarly,
    /// Every partition's boundary layers and interior, then the exchanges:
    /// the order the GPUs queue (their streams then overlap the pieces).
    Overlapped,
}

/// The phases of one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    phases: Vec<Phase>,
}

impl Plan {
    /// A step of one unsplit domain: update it, end the step.
    pub fn single() -> Self {
        Self { phases: vec![Phase::Update { part: 0, region: Region::Whole }, Phase::EndStep] }
    }

    /// A step of `parts` partitions in the order `schedule`.
    pub fn split(parts: usize, schedule: Schedule) -> Self {
        use Phase::{EndStep, Exchange, Update};
        use Region::{Boundary, Interior, Whole};
        let each = |f: &dyn Fn(usize) -> Vec<Phase>| (0..parts).flat_map(f).collect::<Vec<_>>();
        let exchange = |part| Exchange { part, lagged: false };
        let mut phases = match schedule {
            Schedule::InOrder => {
                [each(&|part| vec![Update { part, region: Whole }]), each(&|part| vec![exchange(part)])].concat()
            }
            Schedule::InteriorFirst => [
                each(&|part| vec![Update { part, region: Interior }]),
                each(&|part| vec![Exchange { part, lagged: true }]),
                each(&|part| vec![Update { part, region: Boundary }]),
            ]
            .concat(),
            Schedule::CopiesEarly => [
                each(&|part| vec![Update { part, region: Boundary }, exchange(part)]),
                each(&|part| vec![Update { part, region: Interior }]),
            ]
            .concat(),
            Schedule::Overlapped => [
                each(&|part| vec![Update { part, region: Boundary }, Update { part, region: Interior }]),
                each(&|part| vec![exchange(part)]),
            ]
            .concat(),
        };
        phases.push(EndStep);
        Self { phases }
    }

    /// The phases, in order.
    pub fn phases(&self) -> &[Phase] {
        &self.phases
    }
}

/// How a transport runs the phases of a plan. Each call queues its work
/// (a GPU returns before it is done); time `t` is the step being run.
pub trait Executor {
    /// Updates `region` of partition `part` for step `t`.
    fn update(&mut self, part: usize, region: Region, t: u64) -> Result<()>;
    /// Sends partition `part`'s halo planes written by step `t`.
    fn exchange(&mut self, part: usize, t: u64) -> Result<()>;
    /// Ends step `t` in every partition.
    fn end_step(&mut self, t: u64) -> Result<()>;
}

/// The step loop: runs steps `t .. t + steps` of `plan` on `exec`.
pub fn run(plan: &Plan, exec: &mut impl Executor, t: u64, steps: u64) -> Result<()> {
    for step in t..t + steps {
        for phase in plan.phases() {
            match *phase {
                Phase::Update { part, region } => exec.update(part, region, step)?,
                Phase::Exchange { part, lagged: false } => exec.exchange(part, step)?,
                Phase::Exchange { part, lagged: true } if step > t => exec.exchange(part, step - 1)?,
                Phase::Exchange { lagged: true, .. } => {}
                Phase::EndStep => exec.end_step(step)?,
            }
        }
    }
    if steps > 0 {
        for phase in plan.phases() {
            if let Phase::Exchange { part, lagged: true } = *phase {
                exec.exchange(part, t + steps - 1)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the calls a plan makes.
    #[derive(Default)]
    struct Log(Vec<String>);
    impl Executor for Log {
        fn update(&mut self, part: usize, region: Region, t: u64) -> Result<()> {
            self.0.push(format!("u{part}{region:?}@{t}"));
            Ok(())
        }
        fn exchange(&mut self, part: usize, t: u64) -> Result<()> {
            self.0.push(format!("x{part}@{t}"));
            Ok(())
        }
        fn end_step(&mut self, t: u64) -> Result<()> {
            self.0.push(format!("end@{t}"));
            Ok(())
        }
    }

    /// Every schedule updates each partition's every layer once per step,
    /// sends each step's halos exactly once and ends each step once; a
    /// lagged exchange goes out in the next step, or after the loop.
    #[test]
    fn every_schedule_covers_each_step_once() {
        for schedule in [Schedule::InOrder, Schedule::InteriorFirst, Schedule::CopiesEarly, Schedule::Overlapped] {
            let mut log = Log::default();
            run(&Plan::split(3, schedule), &mut log, 5, 2).unwrap();
            for t in [5, 6] {
                for part in 0..3 {
                    let at = |s: &str| log.0.iter().filter(|l| **l == format!("{s}@{t}")).count();
                    let whole = at(&format!("u{part}Whole"));
                    let split = (at(&format!("u{part}Boundary")), at(&format!("u{part}Interior")));
                    assert!(
                        (whole, split) == (1, (0, 0)) || (whole, split) == (0, (1, 1)),
                        "{schedule:?} {log:?}",
                        log = log.0
                    );
                    assert_eq!(at(&format!("x{part}")), 1, "{schedule:?}: {:?}", log.0);
                }
                assert_eq!(log.0.iter().filter(|l| **l == format!("end@{t}")).count(), 1);
            }
            if schedule == Schedule::InteriorFirst {
                // Step 5's exchanges run inside step 6, after its interiors; step 6's after the loop.
                let pos = |s: &str| log.0.iter().position(|l| l == s).unwrap();
                assert!(pos("end@5") < pos("x0@5") && pos("u2Interior@6") < pos("x0@5"));
                assert!(pos("end@6") < pos("x2@6"));
            }
        }
        assert_eq!(Plan::single().phases(), [Phase::Update { part: 0, region: Region::Whole }, Phase::EndStep]);
    }
}
