//! The refined step over partitions ([`super::SplitLevels`]): the recursion
//! of [`super::RefinedCpu`], each operation run by every partition and
//! followed by the transfers of the values it wrote across the cuts.

use super::cpu::Observer;
use super::solver::LevelStore;
use super::split::{Plan, SplitLevels, Transfer};
use super::Levels;
use crate::error::Result;
use crate::solver::BackendKind;
use kernels_gpu::{Lattice, Storage, Streaming};
use rayon::prelude::*;
use std::marker::PhantomData;

/// What a partition's backend does for the split step. Each partition's
/// operations run on a thread of their own (on GPUs, one host thread per
/// device queues its work).
pub(super) trait Partition<S: Storage>: Send + Sync + Sized {
    /// A transfer as this backend runs it (its lists in the backend's memory).
    type Transfer: Send;
    /// `t`, ready to run between `parts`.
    fn prepare(parts: &[Self], t: &Transfer) -> Result<Self::Transfer>;
    /// Runs the transfers `t` (ordered by sender) between the current
    /// buffers of level `l`.
    fn exchange(parts: &mut [Self], t: &mut [Self::Transfer], l: usize) -> Result<()>;
    /// Level `l + 1`'s ghost cells take their parents' populations.
    fn explode(&mut self, l: usize) -> Result<()>;
    /// Level `l` takes one step.
    fn update(&mut self, l: usize) -> Result<()>;
    /// Steps level `l` has taken.
    fn level_time(&self, l: usize) -> u64;
    /// Level `l`'s current buffer.
    fn buffer(&self, l: usize) -> Result<Vec<S>>;
    /// Sets each level's current buffer, the levels at coarse step `t`.
    fn put(&mut self, f: Vec<Vec<S>>, t: u64) -> Result<()>;
    /// Waits for queued work.
    fn wait(&self) -> Result<()>;
    /// Where it runs.
    fn backend(&self) -> BackendKind;
}

/// Two distinct elements of `parts`, the first shared.
pub(super) fn pair<T>(parts: &mut [T], a: usize, b: usize) -> (&T, &mut T) {
    assert_ne!(a, b, "a transfer joins two partitions");
    if a < b {
        let (head, tail) = parts.split_at_mut(b);
        (&head[a], &mut tail[0])
    } else {
        let (head, tail) = parts.split_at_mut(a);
        (&tail[0], &mut head[b])
    }
}

/// The transfers after each write of each level, by the parity of the
/// step whose slots it wrote (`[even, odd]`).
type Transfers<T> = Vec<[Vec<T>; 2]>;

/// A refined domain run as partitions.
pub(super) struct SplitRun<L, const Q: usize, S: Storage, P: Partition<S>> {
    whole: Levels,
    split: SplitLevels,
    parts: Vec<P>,
    /// After each level's update.
    update: Transfers<P::Transfer>,
    /// After the explosion into each level.
    explode: Transfers<P::Transfer>,
    scheme: Streaming,
    /// Coarse steps taken.
    t: u64,
    _lattice: PhantomData<fn() -> (L, S)>,
}

impl<L: Lattice<Q>, const Q: usize, S: Storage, P: Partition<S>> SplitRun<L, Q, S, P> {
    /// The partitions `parts` of `whole`, cut as `split`, at coarse step 0.
    pub(super) fn new(whole: Levels, split: SplitLevels, parts: Vec<P>, scheme: Streaming) -> Result<Self> {
        let plan = Plan::new::<L, Q>(&whole, &split, scheme);
        let prepare = |lists: &[[Vec<Transfer>; 2]]| -> Result<Transfers<P::Transfer>> {
            let each = |ts: &[Transfer]| ts.iter().map(|t| P::prepare(&parts, t)).collect::<Result<Vec<_>>>();
            lists.iter().map(|[even, odd]| Ok([each(even)?, each(odd)?])).collect()
        };
        let (update, explode) = (prepare(&plan.update)?, prepare(&plan.explode)?);
        Ok(Self { whole, split, parts, update, explode, scheme, t: 0, _lattice: PhantomData })
    }

    /// One step of level `l` on every partition (see [`super::RefinedCpu`]),
    /// then `observer`'s call if it wants level `l`.
    fn advance(&mut self, l: usize, observer: &mut Observer<'_, S>) -> Result<()> {
        if l + 1 < self.whole.len() {
            // The explosion stores as the step before the fine one.
            let odd = self.parts[0].level_time(l + 1) & 1 == 0;
            self.parts.par_iter_mut().try_for_each(|p| p.explode(l))?;
            P::exchange(&mut self.parts, &mut self.explode[l + 1][odd as usize], l + 1)?;
            self.advance(l + 1, observer)?;
            self.advance(l + 1, observer)?;
        }
        let odd = self.parts[0].level_time(l) & 1 == 1;
        self.parts.par_iter_mut().try_for_each(|p| p.update(l))?;
        P::exchange(&mut self.parts, &mut self.update[l][odd as usize], l)?;
        if let Some((wanted, observe)) = observer {
            if wanted.get(l) == Some(&true) {
                let f = self.level_buffer(l)?;
                observe(&self.whole.levels[l], &f, odd);
            }
        }
        Ok(())
    }

    /// Level `l`'s whole buffer, from the partitions'.
    fn level_buffer(&self, l: usize) -> Result<Vec<S>> {
        let parts = self.parts.iter().map(|p| p.buffer(l)).collect::<Result<Vec<_>>>()?;
        let views: Vec<&[S]> = parts.iter().map(Vec::as_slice).collect();
        Ok(self.split.gather(&self.whole, l, &views, Q, S::ZERO))
    }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage, P: Partition<S>> LevelStore<L, Q, S> for SplitRun<L, Q, S, P> {
    fn advance(&mut self, steps: u64) -> Result<()> {
        for _ in 0..steps {
            SplitRun::advance(self, 0, &mut None)?;
            self.t += 1;
        }
        Ok(())
    }
    fn observed(&mut self, wanted: &[bool], observe: &mut dyn FnMut(&super::LevelGrid, &[S], bool)) -> Result<()> {
        SplitRun::advance(self, 0, &mut Some((wanted, observe)))?;
        self.t += 1;
        Ok(())
    }
    fn wait(&self) -> Result<()> {
        self.parts.iter().try_for_each(P::wait)
    }
    fn coarse_time(&self) -> u64 {
        self.t
    }
    fn grid(&self) -> &Levels {
        &self.whole
    }
    fn scheme(&self) -> Streaming {
        self.scheme
    }
    fn backend(&self) -> BackendKind {
        self.parts[0].backend()
    }
    fn buffers(&self) -> Result<Vec<(Vec<S>, bool)>> {
        (0..self.whole.len())
            .map(|l| Ok((self.level_buffer(l)?, self.parts[0].level_time(l).wrapping_sub(1) & 1 == 1)))
            .collect()
    }
    fn put_buffers(&mut self, f: Vec<Vec<S>>, t: u64) -> Result<()> {
        for (p, part) in self.parts.iter_mut().enumerate() {
            let own = f.iter().enumerate().map(|(l, f)| self.split.scatter(&self.whole, l, p, f, Q)).collect();
            part.put(own, t)?;
        }
        self.t = t;
        Ok(())
    }
}
