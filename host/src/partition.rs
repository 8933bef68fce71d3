//! The dense domain split along z (its slowest axis) into partitions with
//! one halo layer on each side, exchanged by copies: the algorithm the
//! multi-GPU path runs, on the CPU backend, so its logic is tested everywhere.
//! After every step each partition sends its neighbours exactly the
//! population planes [`crate::halo::halo_copies`] names (the crossing ones,
//! parity-aware for Esoteric Pull), one contiguous range per neighbour. A
//! step's pieces (boundary layers, interior, copies) can run in the orders
//! the GPU paths allow ([`Schedule`]).

use crate::cpu::CpuSolver;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::fields::Fields;
use crate::halo::halo_copies;
use crate::solver::{BackendKind, Initial, SavedState, Solver, SolverConfig};
use kernels_gpu::lattice::z_pairs;
use kernels_gpu::layout::population_index;
use kernels_gpu::{Dims, Lattice, Storage};
use std::ops::Range;

/// Thinnest partition accepted, in cells.
pub const MIN_THICKNESS: u32 = 1;

/// The z-ranges of `parts` partitions of `nz` layers: as even as possible,
/// the remainder spread over the first partitions.
pub fn split(nz: u32, parts: u32) -> Result<Vec<Range<u32>>> {
    if parts == 0 || nz / parts < MIN_THICKNESS {
        return Err(Error::Setup(format!(
            "cannot split {nz} layers into {parts} partitions of at least {MIN_THICKNESS} layer: use at most {} partitions",
            nz / MIN_THICKNESS
        )));
    }
    let (base, extra) = (nz / parts, nz % parts);
    let mut z = 0;
    Ok((0..parts)
        .map(|p| {
            let len = base + u32::from(p < extra);
            z += len;
            z - len..z
        })
        .collect())
}

/// The order in which the pieces of a partitioned step run. The GPU paths
/// run them in any order their events allow ([`crate::overlap`]); these
/// CPU orders are the extremes, so that tests check the ordering argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Whole partitions, then every copy.
    InOrder,
    /// Every partition's interior, then the last step's copies, then the
    /// boundary layers: interiors run before the copies into and out of
    /// their partitions have landed.
    InteriorFirst,
    /// Partition by partition, the boundary layers and at once their copies
    /// (which land before the neighbours' own boundary layers run), then
    /// every interior.
    CopiesEarly,
}

struct Part<L: Lattice<Q>, const Q: usize, S: Storage> {
    /// Global z-layers this partition owns.
    z: Range<u32>,
    /// Solver over the owned layers plus one halo layer below and above.
    solver: CpuSolver<L, Q, S>,
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> Part<L, Q, S> {
    /// Cells of local layers `z0 .. z1`.
    fn layers(&self, z0: usize, z1: usize) -> Range<usize> {
        let d = self.solver.config().domain.dims;
        let plane = (d.nx * d.ny) as usize;
        z0 * plane..z1 * plane
    }

    /// Updates the bottom and top layers of the current step.
    fn boundary(&mut self) {
        let len = self.z.len();
        self.solver.update_cells(self.layers(1, 2));
        if len > 1 {
            self.solver.update_cells(self.layers(len, len + 1));
        }
    }

    /// Updates the layers between them.
    fn interior(&mut self) {
        let len = self.z.len();
        if len > 2 {
            self.solver.update_cells(self.layers(2, len));
        }
    }
}

/// A simulation split into z-partitions on the CPU.
pub struct PartitionedCpu<L: Lattice<Q>, const Q: usize, S: Storage> {
    /// The whole domain: initialisation and every read-back go through it.
    global: CpuSolver<L, Q, S>,
    parts: Vec<Part<L, Q, S>>,
    schedule: Schedule,
    t: u64,
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> PartitionedCpu<L, Q, S> {
    /// Splits `config`'s domain into `parts` partitions along z.
    pub fn new(config: SolverConfig, parts: u32) -> Result<Self> {
        Self::with_schedule(config, parts, Schedule::InOrder)
    }

    /// As [`Self::new`], running the pieces of each step in `schedule`'s order.
    pub fn with_schedule(config: SolverConfig, parts: u32, schedule: Schedule) -> Result<Self> {
        let mut global = CpuSolver::<L, Q, S>::new(config.clone())?;
        let d = config.domain.dims;
        let mut out = Vec::new();
        for z in split(d.nz, parts)? {
            let local_config = local_config(&config, &z)?;
            let solver = CpuSolver::<L, Q, S>::new(local_config)?;
            out.push(Part { z, solver });
        }
        let start = global.buffer_mut().to_vec();
        let mut p = Self { parts: out, schedule, t: 0, global };
        p.scatter(&start);
        Ok(p)
    }

    /// Copies a global population buffer into every partition, halos included.
    fn scatter(&mut self, f: &[S]) {
        let d = self.global.config().domain.dims;
        for part in &mut self.parts {
            part.solver.buffer_mut().copy_from_slice(&local_layers(f, d, Q, &part.z));
        }
    }

    /// The global population buffer, from every partition's own layers.
    fn gather(&mut self) -> Vec<S> {
        let d = self.global.config().domain.dims;
        let mut f = vec![S::ZERO; Q * d.cells()];
        for part in &mut self.parts {
            write_own_layers(part.solver.buffer_mut(), d, Q, &part.z, &mut f);
        }
        f
    }

    /// Partition `k`'s two copies after step `t`, each one contiguous range
    /// from the buffer holding its step-`t` output into its neighbours'.
    fn send(&mut self, k: usize, t: u64) {
        let n = self.parts.len();
        let plane = self.global.config().domain.dims.nx * self.global.config().domain.dims.ny;
        for copy in halo_copies(self.global.config().streaming, t, z_pairs(&L::C)) {
            let target = if copy.up { (k + 1) % n } else { (k + n - 1) % n };
            let (from_len, to_len) = (self.parts[k].z.len() as u32, self.parts[target].z.len() as u32);
            let (from, to) = copy.ranges(from_len, to_len, plane, Q);
            let values = self.parts[k].solver.step_output_mut(t)[from].to_vec();
            self.parts[target].solver.step_output_mut(t)[to].copy_from_slice(&values);
        }
    }

    /// Runs step `self.t` in the order of `self.schedule`; with
    /// [`Schedule::InteriorFirst`] the copies of the step before run first
    /// (`pending`), and this step's are left pending.
    fn step_once(&mut self, pending: &mut Option<u64>) {
        let (n, t) = (self.parts.len(), self.t);
        match self.schedule {
            Schedule::InOrder => {
                for p in &mut self.parts {
                    p.boundary();
                    p.interior();
                    p.solver.end_step();
                }
                (0..n).for_each(|k| self.send(k, t));
            }
            Schedule::InteriorFirst => {
                self.parts.iter_mut().for_each(Part::interior);
                if let Some(before) = pending.take() {
                    (0..n).for_each(|k| self.send(k, before));
                }
                for p in &mut self.parts {
                    p.boundary();
                    p.solver.end_step();
                }
                *pending = Some(t);
            }
            Schedule::CopiesEarly => {
                for k in 0..n {
                    self.parts[k].boundary();
                    self.send(k, t);
                }
                for p in &mut self.parts {
                    p.interior();
                    p.solver.end_step();
                }
            }
        }
        self.t += 1;
    }

    /// Brings the global solver to the partitions' state, for read-backs.
    fn sync_global(&mut self) -> Result<()> {
        let f = self.gather();
        let bytes = crate::solver::storage_bytes(&f).to_vec();
        self.global.restore_state(&SavedState { time: self.t, populations: bytes })
    }
}

/// Global layer of local layer `zl` of a partition starting at `z0` (halos wrap).
fn global_layer(z0: u32, zl: u32, nz: u32) -> u32 {
    (z0 + nz + zl - 1) % nz
}

/// The configuration of the partition owning global layers `z`: those
/// layers plus one halo layer on each side (wrapping), same physics.
pub(crate) fn local_config(config: &SolverConfig, z: &Range<u32>) -> Result<SolverConfig> {
    let d = config.domain.dims;
    let local = Dims::new(d.nx, d.ny, z.len() as u32 + 2);
    let plane = (d.nx * d.ny) as usize;
    let layer = |zl: u32| global_layer(z.start, zl, d.nz) as usize * plane..;
    let mut domain = Domain::new(local)?;
    domain.wall_velocities = config.domain.wall_velocities.clone();
    domain.open_states = config.domain.open_states.clone();
    // Local layer 0 (the lower halo) is global layer z.start - 1.
    domain.z_offset = z.start.wrapping_sub(1);
    for zl in 0..local.nz {
        domain.flags[zl as usize * plane..][..plane].copy_from_slice(&config.domain.flags[layer(zl)][..plane]);
    }
    let initial = match &config.initial {
        Initial::Uniform { rho, u } => Initial::Uniform { rho: *rho, u: *u },
        Initial::Fields { rho, u } => Initial::Fields {
            rho: (0..local.nz).flat_map(|zl| rho[layer(zl)][..plane].to_vec()).collect(),
            u: (0..local.nz).flat_map(|zl| u[layer(zl)][..plane].to_vec()).collect(),
        },
    };
    Ok(SolverConfig { domain, initial, ..config.clone() })
}

/// A partition's population buffer (own layers `z` of the global grid `d`
/// plus halos, `q` populations) cut from a global buffer: layers are
/// contiguous in the layout, so this is one range, or two where a halo wraps.
pub(crate) fn local_layers<T: Copy>(global: &[T], d: Dims, q: usize, z: &Range<u32>) -> Vec<T> {
    let layer = q * (d.nx * d.ny) as usize;
    let mut local = Vec::with_capacity((z.len() + 2) * layer);
    for zl in 0..z.len() as u32 + 2 {
        let start = population_index(d.nx * d.ny, q, 0, global_layer(z.start, zl, d.nz), 0);
        local.extend_from_slice(&global[start..][..layer]);
    }
    local
}

/// Writes the own layers of a partition's population buffer (as
/// [`local_layers`] cuts it) into a global buffer.
pub(crate) fn write_own_layers<T: Copy>(local: &[T], d: Dims, q: usize, z: &Range<u32>, global: &mut [T]) {
    let plane = d.nx * d.ny;
    let own = |z0: u32| population_index(plane, q, 0, z0, 0)..population_index(plane, q, 0, z0 + z.len() as u32, 0);
    global[own(z.start)].copy_from_slice(&local[own(1)]);
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> Solver for PartitionedCpu<L, Q, S> {
    fn step(&mut self, steps: u64) -> Result<()> {
        let mut pending = None;
        for _ in 0..steps {
            self.step_once(&mut pending);
        }
        if let Some(t) = pending {
            (0..self.parts.len()).for_each(|k| self.send(k, t));
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
        self.sync_global()?;
        self.global.fields()
    }

    fn populations(&mut self) -> Result<Vec<f64>> {
        self.sync_global()?;
        self.global.populations()
    }

    fn mass(&mut self) -> Result<f64> {
        self.sync_global()?;
        self.global.mass()
    }

    fn forces(&mut self, objects: &[Vec<bool>]) -> Result<Vec<[f64; 3]>> {
        self.sync_global()?;
        self.global.forces(objects)
    }

    fn save_state(&mut self) -> Result<SavedState> {
        self.sync_global()?;
        self.global.save_state()
    }

    fn restore_state(&mut self, state: &SavedState) -> Result<()> {
        self.global.restore_state(state)?;
        self.t = state.time;
        let f = self.global.buffer_mut().to_vec();
        self.scatter(&f);
        for p in &mut self.parts {
            p.solver.set_time(state.time);
        }
        Ok(())
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn config(&self) -> &SolverConfig {
        self.global.config()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::cavity_config;
    use crate::{LatticeKind, Precision};
    use kernels_gpu::{Streaming, D3Q19, D3Q27};

    fn forced_cavity(lattice: LatticeKind, precision: Precision, streaming: Streaming, side: u32) -> SolverConfig {
        let mut c = cavity_config(lattice, precision, streaming, side, 100.0, 0.08).unwrap();
        c.force = [2e-5, 1e-5, -1e-5];
        c
    }

    /// Every order of a step's pieces that the GPU paths allow, at its extremes.
    const SCHEDULES: [Schedule; 3] = [Schedule::InOrder, Schedule::InteriorFirst, Schedule::CopiesEarly];

    /// N partitions give bit-identical populations to one, for both schemes
    /// and every schedule,
    /// after 1, 3, 40, 1000 and 1001 steps (odd and even), uneven partitions included (12 + 2
    /// walls = 14 layers: 3 partitions of 5, 5, 4; 5 of 3, 3, 3, 3, 2).
    fn check<L: Lattice<Q>, const Q: usize, S: Storage>(lattice: LatticeKind, precision: Precision) {
        for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
            let c = forced_cavity(lattice, precision, streaming, 12);
            let mut one = CpuSolver::<L, Q, S>::new(c.clone()).unwrap();
            let mut split_runs: Vec<_> = SCHEDULES
                .into_iter()
                .flat_map(|s| (1..=5).map(move |n| (s, n)))
                .map(|(s, n)| (s, n, PartitionedCpu::<L, Q, S>::with_schedule(c.clone(), n, s).unwrap()))
                .collect();
            for steps in [1, 2, 37, 960, 1] {
                one.step(steps).unwrap();
                let want = one.populations().unwrap();
                for (schedule, n, s) in split_runs.iter_mut() {
                    s.step(steps).unwrap();
                    let got = s.populations().unwrap();
                    let differ = crate::solver::bitwise_differences(&want, &got);
                    assert_eq!(
                        differ,
                        0,
                        "{lattice:?} {streaming:?} {schedule:?}, {n} partitions, step {}: {differ} populations differ",
                        one.time()
                    );
                }
            }
        }
    }

    #[test]
    fn partitions_are_invisible() {
        check::<D3Q19, 19, f32>(LatticeKind::D3Q19, Precision::F32);
        check::<D3Q27, 27, f64>(LatticeKind::D3Q27, Precision::F64);
        // Stochastic rounding draws its bits from global cell indices.
        check::<D3Q19, 19, kernels_gpu::F16s>(LatticeKind::D3Q19, Precision::F16);
    }

    /// Flow from a velocity inlet to a pressure outlet, along z (crossing
    /// every partition boundary, open cells in the first and last partitions
    /// next to their halos) and along x (open cells in every partition's
    /// boundary and interior layers).
    #[test]
    fn open_boundaries_across_partitions() {
        for (streaming, axis) in
            [Streaming::EsotericPull, Streaming::TwoLattice].into_iter().flat_map(|s| [(s, 2), (s, 0)])
        {
            let dims = Dims::new(6, 7, 13);
            let c = crate::validation::duct_config(LatticeKind::D3Q19, Precision::F32, streaming, dims, axis).unwrap();
            let mut one = CpuSolver::<D3Q19, 19, f32>::new(c.clone()).unwrap();
            one.step(301).unwrap();
            // The reference is a real flow: the inlet's speed carried through the duct.
            let fields = one.fields().unwrap();
            let flow: Vec<f64> = (0..dims.cells())
                .filter(|&n| kernels_gpu::flags::is_flow(c.domain.flags[n]))
                .map(|n| fields.u[n][axis])
                .collect();
            let mean = flow.iter().sum::<f64>() / flow.len() as f64;
            assert!(flow.iter().all(|u| u.is_finite()) && (0.01..0.03).contains(&mean), "axis {axis}: mean {mean}");
            let want = one.populations().unwrap();
            for (schedule, n) in SCHEDULES.into_iter().flat_map(|s| (1..=4).map(move |n| (s, n))) {
                let mut split_run = PartitionedCpu::<D3Q19, 19, f32>::with_schedule(c.clone(), n, schedule).unwrap();
                split_run.step(301).unwrap();
                let got = split_run.populations().unwrap();
                let differ = crate::solver::bitwise_differences(&want, &got);
                assert_eq!(differ, 0, "{streaming:?} {schedule:?}, axis {axis}, {n} partitions: {differ} differ");
            }
        }
    }

    /// Each open cell belongs to exactly one partition's own layers (what a
    /// GPU partition's open-boundary group holds).
    #[test]
    fn every_open_cell_is_owned_once() {
        let dims = Dims::new(5, 6, 11);
        let c = crate::validation::duct_config(LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, dims, 2)
            .unwrap();
        let plane = dims.nx * dims.ny;
        let want = c.domain.open_cells();
        assert_eq!(want.len(), 2 * 3 * 6, "inlet and outlet faces inside the x walls");
        for parts in 1..=4 {
            let mut got = Vec::new();
            for z in split(dims.nz, parts).unwrap() {
                let local = local_config(&c, &z).unwrap();
                // Local layer 1 is global layer z.start.
                got.extend(local.domain.own_open_cells().iter().map(|&n| n - plane + z.start * plane));
            }
            got.sort();
            assert_eq!(got, want, "{parts} partitions");
        }
    }

    /// A partitioned run restored from a saved state (after running on from
    /// another) continues bit for bit.
    #[test]
    fn restored_partitions_continue_bit_for_bit() {
        for (streaming, schedule) in
            [Streaming::EsotericPull, Streaming::TwoLattice].into_iter().flat_map(|s| SCHEDULES.map(move |sc| (s, sc)))
        {
            let c = forced_cavity(LatticeKind::D3Q19, Precision::F32, streaming, 10);
            let mut unbroken = PartitionedCpu::<D3Q19, 19, f32>::with_schedule(c.clone(), 3, schedule).unwrap();
            unbroken.step(50).unwrap();
            let saved = unbroken.save_state().unwrap();
            unbroken.step(51).unwrap();
            let mut resumed = PartitionedCpu::<D3Q19, 19, f32>::with_schedule(c, 3, schedule).unwrap();
            resumed.step(3).unwrap();
            resumed.restore_state(&saved).unwrap();
            resumed.step(51).unwrap();
            assert_eq!(resumed.time(), unbroken.time());
            let (want, got) = (unbroken.populations().unwrap(), resumed.populations().unwrap());
            let differ = crate::solver::bitwise_differences(&want, &got);
            assert_eq!(differ, 0, "{streaming:?} {schedule:?}: {differ} populations differ after a restore");
        }
    }

    #[test]
    fn one_layer_partitions_work_and_too_many_are_refused() {
        let c = forced_cavity(LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, 4);
        // 6 layers into 6 partitions of one layer each.
        let mut one = CpuSolver::<D3Q19, 19, f32>::new(c.clone()).unwrap();
        let mut thin = PartitionedCpu::<D3Q19, 19, f32>::new(c.clone(), 6).unwrap();
        one.step(11).unwrap();
        thin.step(11).unwrap();
        assert_eq!(one.populations().unwrap(), thin.populations().unwrap());
        let err = PartitionedCpu::<D3Q19, 19, f32>::new(c, 7).err().expect("7 partitions of 6 layers");
        assert!(err.to_string().contains("at most 6 partitions"), "{err}");
        assert_eq!(split(14, 3).unwrap(), vec![0..5, 5..10, 10..14]);
    }
}
