//! The dense domain split along z (its slowest axis) into partitions with
//! one halo layer on each side, exchanged by copies: the algorithm the
//! multi-GPU path runs, on the CPU backend, so its logic is tested everywhere.
//! After every step each partition sends its neighbours exactly the
//! population planes [`crate::halo::halo_copies`] names (the crossing ones,
//! parity-aware for Esoteric Pull), one contiguous range per neighbour.

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

struct Part<L: Lattice<Q>, const Q: usize, S: Storage> {
    /// Global z-layers this partition owns.
    z: Range<u32>,
    /// Solver over the owned layers plus one halo layer below and above.
    solver: CpuSolver<L, Q, S>,
}

/// A simulation split into z-partitions on the CPU.
pub struct PartitionedCpu<L: Lattice<Q>, const Q: usize, S: Storage> {
    /// The whole domain: initialisation and every read-back go through it.
    global: CpuSolver<L, Q, S>,
    parts: Vec<Part<L, Q, S>>,
    t: u64,
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> PartitionedCpu<L, Q, S> {
    /// Splits `config`'s domain into `parts` partitions along z.
    pub fn new(config: SolverConfig, parts: u32) -> Result<Self> {
        let mut global = CpuSolver::<L, Q, S>::new(config.clone())?;
        let d = config.domain.dims;
        let mut out = Vec::new();
        let plane = (d.nx * d.ny) as usize;
        for z in split(d.nz, parts)? {
            let local_config = local_config(&config, &z)?;
            let mut solver = CpuSolver::<L, Q, S>::new(local_config)?;
            solver.set_active_cells(plane..plane * (z.len() + 1));
            out.push(Part { z, solver });
        }
        let start = global.buffer_mut().to_vec();
        let mut p = Self { parts: out, t: 0, global };
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

    /// The halo exchange after a step of parity `parity`: every partition's
    /// two copies, each one contiguous range, applied in any order (their
    /// ranges are disjoint).
    fn exchange(&mut self, parity: u64) {
        let n = self.parts.len();
        let plane = self.global.config().domain.dims.nx * self.global.config().domain.dims.ny;
        let copies = halo_copies(self.global.config().streaming, parity, z_pairs(&L::C));
        for k in 0..n {
            for copy in copies {
                let target = if copy.up { (k + 1) % n } else { (k + n - 1) % n };
                let (from_len, to_len) = (self.parts[k].z.len() as u32, self.parts[target].z.len() as u32);
                let (from, to) = copy.ranges(from_len, to_len, plane, Q);
                let values = self.parts[k].solver.buffer_mut()[from].to_vec();
                self.parts[target].solver.buffer_mut()[to].copy_from_slice(&values);
            }
        }
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
        for _ in 0..steps {
            for p in &mut self.parts {
                p.solver.step(1)?;
            }
            self.exchange(self.t);
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

    /// N partitions give bit-identical populations to one, for both schemes,
    /// after 1, 3, 40, 1000 and 1001 steps (odd and even), uneven partitions included (12 + 2
    /// walls = 14 layers: 3 partitions of 5, 5, 4; 5 of 3, 3, 3, 3, 2).
    fn check<L: Lattice<Q>, const Q: usize, S: Storage>(lattice: LatticeKind, precision: Precision) {
        for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
            let c = forced_cavity(lattice, precision, streaming, 12);
            let mut one = CpuSolver::<L, Q, S>::new(c.clone()).unwrap();
            let mut split_runs: Vec<_> =
                (1..=5).map(|n| PartitionedCpu::<L, Q, S>::new(c.clone(), n).unwrap()).collect();
            for steps in [1, 2, 37, 960, 1] {
                one.step(steps).unwrap();
                let want = one.populations().unwrap();
                for (k, s) in split_runs.iter_mut().enumerate() {
                    s.step(steps).unwrap();
                    let got = s.populations().unwrap();
                    let differ = want.iter().zip(&got).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                    assert_eq!(
                        differ,
                        0,
                        "{lattice:?} {streaming:?}, {} partitions, step {}: {differ} populations differ",
                        k + 1,
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
            let want = one.populations().unwrap();
            for n in 1..=4 {
                let mut split_run = PartitionedCpu::<D3Q19, 19, f32>::new(c.clone(), n).unwrap();
                split_run.step(301).unwrap();
                let got = split_run.populations().unwrap();
                let differ = want.iter().zip(&got).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                assert_eq!(differ, 0, "{streaming:?}, axis {axis}, {n} partitions: {differ} populations differ");
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
