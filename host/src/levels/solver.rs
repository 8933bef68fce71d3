//! A refined domain behind one interface, whatever its backend, lattice and
//! storage: what `lbm run` steps, reads fields and forces from, and
//! checkpoints.

use super::cpu::{for_each_own_cell, own_cells_of, stored_at};
use super::split_run::SplitRun;
use super::{Levels, RefinedCpu, RefinedGpu, Refinement, SplitLevels};
use crate::cell_blocks::CellBlocks;
use crate::error::{Error, Result};
use crate::fields::Fields;
use crate::gpu::{DeviceStorage, GpuDevice};
use crate::saved::{SavedBlocks, SavedPart, SavedState};
use crate::solver::{restore_storage, storage_bytes, BackendKind, SolverConfig};
use kernels_gpu::stream::Streaming;
use kernels_gpu::{Lattice, Storage};
use std::collections::HashMap;
use std::marker::PhantomData;

/// Each level's density and velocity on its own cells (the rest at rest),
/// level 0 first, from the populations the last step left (post-collision:
/// `u = (j - F/2) / rho`, which is the velocity the collision used). The
/// velocities are in level 0's lattice units, as on every level (acoustic
/// scaling).
pub type LevelFields = Vec<Fields>;

/// A refined domain on some backend.
pub trait RefinedSolver: Send {
    /// Advances `steps` coarse (level-0) steps (queued on a GPU).
    fn step(&mut self, steps: u64) -> Result<()>;
    /// Waits until queued work is done.
    fn synchronize(&mut self) -> Result<()>;
    /// Coarse steps done.
    fn time(&self) -> u64;
    /// The levels.
    fn levels(&self) -> &Levels;
    /// The backend it runs on.
    fn backend(&self) -> BackendKind;
    /// Every level's fields ([`LevelFields`]).
    fn fields(&mut self) -> Result<LevelFields>;
    /// Total mass in level-0 cells ([`RefinedCpu::mass`]).
    fn mass(&mut self) -> Result<f64>;
    /// Advances one coarse step and gives the force on each object over
    /// it (level-0 lattice units), by momentum exchange on every level's
    /// own cells next to it, averaged over the level's `2^l` steps (the
    /// steps between two explosions differ, so one alone is off by a
    /// fraction of a percent near a jump): `objects[l][k]` says which cells
    /// of level `l` belong to object `k`.
    fn step_with_forces(&mut self, objects: &[Vec<CellBlocks<bool>>]) -> Result<Vec<[f64; 3]>>;
    /// The time and every level's current populations exactly as stored,
    /// one part per level (its blocks' corners and populations).
    fn save_state(&mut self) -> Result<SavedState>;
    /// Restores a state saved from the same refined set-up; the run then
    /// goes on bit for bit.
    fn restore_state(&mut self, state: &SavedState) -> Result<()>;
}

/// Whether a cell of `mask` has a lattice neighbour that is one of its
/// level's own cells (`flags`: the level's).
fn touches_own<L: Lattice<Q>, const Q: usize>(mask: &CellBlocks<bool>, flags: &CellBlocks<u8>) -> bool {
    use kernels_gpu::flags::{COALESCED, CURVED, FLUID, KIND_MASK};
    let d = mask.dims();
    let n = [d.nx, d.ny, d.nz];
    let edge = mask.edge();
    let own_next_to = |p: [u32; 3]| {
        L::C.iter().skip(1).any(|c| {
            let q: [u32; 3] = std::array::from_fn(|a| (p[a] as i64 + c[a] as i64).rem_euclid(n[a] as i64) as u32);
            matches!(flags[q] & KIND_MASK & !CURVED, FLUID | COALESCED)
        })
    };
    let mut found = false;
    mask.for_each_run(|p, inside, cells| {
        if !inside || found {
            return;
        }
        if cells == 1 {
            found = own_next_to(p);
            return;
        }
        // A block inside the object: its cells one by one.
        let hi: [u32; 3] = std::array::from_fn(|a| (p[a] + edge[a]).min(n[a]));
        found = (p[2]..hi[2])
            .flat_map(|z| (p[1]..hi[1]).flat_map(move |y| (p[0]..hi[0]).map(move |x| [x, y, z])))
            .any(own_next_to);
    });
    found
}

/// The refined domain of `config` as `refinement` asks, on blocks of edge
/// `edge`, on `backend` (`ptx`: the kernels for a GPU). With more than one
/// of `devices`, the levels are split along z over them
/// ([`super::SplitLevels`]): GPUs of these ordinals on a GPU backend (whose
/// own ordinal is then the first), as many partitions on the CPU.
pub fn build_refined(
    config: &SolverConfig,
    refinement: &Refinement,
    edge: u32,
    backend: BackendKind,
    devices: &[usize],
    ptx: &str,
) -> Result<Box<dyn RefinedSolver>> {
    fn cpu<L: Lattice<Q>, const Q: usize, S: Storage>(
        c: &SolverConfig,
        r: &Refinement,
        edge: u32,
        parts: usize,
    ) -> Result<Box<dyn RefinedSolver>> {
        let whole = RefinedCpu::<L, Q, S>::new(c, r, edge)?;
        if parts < 2 {
            return Ok(Refined::boxed(whole, c));
        }
        let (split, part_levels) = SplitLevels::new(whole.levels(), parts as u32)?;
        let scheme = whole.streaming();
        let (levels, pieces) = whole.split(&split, part_levels);
        Ok(Refined::boxed(SplitRun::<L, Q, S, RefinedCpu<L, Q, S>>::new(levels, split, pieces, scheme)?, c))
    }
    fn gpu<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
        c: &SolverConfig,
        r: &Refinement,
        edge: u32,
        devices: Vec<GpuDevice>,
    ) -> Result<Box<dyn RefinedSolver>> {
        let whole = RefinedCpu::<L, Q, S>::new(c, r, edge)?;
        if devices.len() < 2 {
            let device = devices.into_iter().next().expect("one device at least");
            return Ok(Refined::boxed(RefinedGpu::new(device, whole)?, c));
        }
        let (split, part_levels) = SplitLevels::new(whole.levels(), devices.len() as u32)?;
        let scheme = whole.streaming();
        let (levels, pieces) = whole.split(&split, part_levels);
        // The cuts join neighbouring GPUs, which copy directly where they can.
        crate::peer::enable_access(&devices)?;
        let pieces = RefinedGpu::on_devices(devices, pieces)?;
        Ok(Refined::boxed(SplitRun::<L, Q, S, RefinedGpu<L, Q, S>>::new(levels, split, pieces, scheme)?, c))
    }
    match backend {
        BackendKind::Cpu => {
            crate::dispatch!(config.lattice, config.precision, cpu(config, refinement, edge, devices.len()))
        }
        BackendKind::Gpu(ordinal) => {
            let ordinals = if devices.len() > 1 { devices.to_vec() } else { vec![ordinal] };
            let devices = ordinals.iter().map(|&o| GpuDevice::open(o, ptx)).collect::<Result<Vec<_>>>()?;
            crate::dispatch!(config.lattice, config.precision, gpu(config, refinement, edge, devices))
        }
    }
}

/// What [`Refined`] needs of a backend: its levels' buffers.
pub(super) trait LevelStore<L: Lattice<Q>, const Q: usize, S: Storage>: Send {
    fn advance(&mut self, steps: u64) -> Result<()>;
    /// One coarse step reporting wanted levels' populations after each of
    /// their steps ([`RefinedCpu::step_observed`]).
    fn observed(&mut self, wanted: &[bool], observe: &mut dyn FnMut(&super::LevelGrid, &[S], bool)) -> Result<()>;
    fn wait(&self) -> Result<()>;
    fn coarse_time(&self) -> u64;
    fn grid(&self) -> &Levels;
    fn scheme(&self) -> Streaming;
    fn backend(&self) -> BackendKind;
    /// Each level's current buffer and the parity of its last step.
    fn buffers(&self) -> Result<Vec<(Vec<S>, bool)>>;
    /// Sets each level's current buffer, the levels at coarse step `t`.
    fn put_buffers(&mut self, f: Vec<Vec<S>>, t: u64) -> Result<()>;
}

/// A backend's refined run with the base configuration it was built from.
struct Refined<L, const Q: usize, S, R> {
    run: R,
    config: SolverConfig,
    _lattice: PhantomData<fn() -> (L, S)>,
}

impl<L: Lattice<Q>, const Q: usize, S: Storage, R: LevelStore<L, Q, S>> Refined<L, Q, S, R> {
    fn boxed(run: R, config: &SolverConfig) -> Box<dyn RefinedSolver>
    where
        R: 'static,
    {
        Box::new(Self { run, config: config.clone(), _lattice: PhantomData })
    }

    /// Calls `visit(level, position, populations)` for every own cell of
    /// every level (see [`RefinedCpu::for_each_own_cell`]).
    fn visit(&self, visit: impl FnMut(u32, [u32; 3], [f64; Q])) -> Result<()> {
        let host = self.run.buffers()?;
        let buffers: Vec<(&[S], bool)> = host.iter().map(|(f, odd)| (f.as_slice(), *odd)).collect();
        for_each_own_cell::<L, Q, S>(self.run.grid(), self.run.scheme(), &buffers, visit);
        Ok(())
    }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage, R: LevelStore<L, Q, S>> RefinedSolver for Refined<L, Q, S, R> {
    fn step(&mut self, steps: u64) -> Result<()> {
        self.run.advance(steps)
    }

    fn synchronize(&mut self) -> Result<()> {
        self.run.wait()
    }

    fn time(&self) -> u64 {
        self.run.coarse_time()
    }

    fn levels(&self) -> &Levels {
        self.run.grid()
    }

    fn backend(&self) -> BackendKind {
        self.run.backend()
    }

    fn fields(&mut self) -> Result<LevelFields> {
        let mut out: LevelFields = self.run.grid().levels.iter().map(|l| Fields::at_rest(l.domain.dims)).collect();
        let force = self.config.force;
        self.visit(|l, p, f| {
            let rho = 1.0 + f.iter().sum::<f64>();
            let scale = (1u64 << l) as f64;
            let mut v = [rho, 0.0, 0.0, 0.0];
            for a in 0..3 {
                let j: f64 = (0..Q).map(|i| f[i] * L::C[i][a] as f64).sum();
                v[a + 1] = (j - 0.5 * force[a] / scale) / rho;
            }
            out[l as usize].set(p, v);
        })?;
        super::output::fill_unowned(self.run.grid(), &mut out);
        Ok(out)
    }

    fn mass(&mut self) -> Result<f64> {
        let levels = self.run.grid();
        let host = self.run.buffers()?;
        let buffers: Vec<(&[S], bool)> = host.iter().map(|(f, odd)| (f.as_slice(), *odd)).collect();
        Ok(super::cpu::mass_of(levels, |visit| {
            for_each_own_cell::<L, Q, S>(levels, self.run.scheme(), &buffers, |l, _, f| visit(l, &f))
        }))
    }

    fn step_with_forces(&mut self, objects: &[Vec<CellBlocks<bool>>]) -> Result<Vec<[f64; 3]>> {
        let count = objects.first().map_or(0, Vec::len);
        let mut forces = vec![[0.0; 3]; count];
        // Only the levels where an object has a cell next to one of the
        // level's own cells are read back (on the others, finer levels
        // cover the object's surroundings).
        let wanted: Vec<bool> = objects
            .iter()
            .zip(&self.run.grid().levels)
            .map(|(masks, level)| masks.iter().any(|m| touches_own::<L, Q>(m, &level.domain.flags)))
            .collect();
        let dimension = if self.config.domain.dims.nz == 1 { 2 } else { 3 };
        let scheme = self.run.scheme();
        // Each level's curved-wall cells by position: the group's entry.
        let curved: Vec<HashMap<[u32; 3], usize>> = (self.run.grid().levels.iter())
            .map(|level| {
                let walls = &level.domain.curved;
                let at = |n| crate::cell_blocks::position(level.domain.dims, n);
                walls.cells.iter().enumerate().map(|(k, &n)| (at(n), k)).collect()
            })
            .collect();
        self.run.observed(&wanted, &mut |level, f_level, odd| {
            let l = level.level;
            let d = level.domain.dims;
            let n = [d.nx, d.ny, d.nz];
            let wrap = |p: [u32; 3], c: [i32; 3], sign: i64| -> [u32; 3] {
                std::array::from_fn(|a| (p[a] as i64 + sign * c[a] as i64).rem_euclid(n[a] as i64) as u32)
            };
            // A level-l link moves 2^-lD of a level-0 cell's mass 2^-l of a
            // cell per 2^-l of a step: 2^(l(1-D)) of level 0's force units;
            // its 2^l steps are averaged.
            let share = 0.5f64.powi((l * (dimension - 1)) as i32) / (1u64 << l) as f64;
            let objects = &objects[l as usize];
            let (walls, curved) = (&level.domain.curved, &curved[l as usize]);
            own_cells_of::<L, Q, S>(level, scheme, f_level, odd, |p, f| {
                // Looked up once per cell with a wall link, not per cell.
                let mut fractions = None;
                for (i, (c, w)) in L::C.iter().zip(L::W).enumerate().skip(1) {
                    let target = wrap(p, *c, 1);
                    for (force, mask) in forces.iter_mut().zip(objects) {
                        if !mask[target] {
                            continue;
                        }
                        // The population leaving along c_i comes back along
                        // its opposite: as it left (halfway), or as the
                        // interpolation of `kernels_gpu::curved` makes it.
                        let back = kernels_gpu::lattice::opposite(i);
                        let q = fractions.get_or_insert_with(|| curved.get(&p).map(|&k| walls.fractions(k)));
                        let returning = match q.map(|q| q[back]) {
                            Some(q) if q >= 0.0 => {
                                // f*_i(x - c_i): what the cell behind this one sent along c_i.
                                let behind = stored_at::<L, Q, S>(level, scheme, f_level, odd, wrap(p, *c, -1));
                                let behind = behind.map_or(f[i], |b| b[i]);
                                kernels_gpu::curved::interpolated(q, f[i], behind, f[back])
                            }
                            _ => f[i],
                        };
                        for (v, c) in force.iter_mut().zip(c) {
                            *v += ((w + f[i]) + (w + returning)) * *c as f64 * share;
                        }
                    }
                }
            });
        })?;
        Ok(forces)
    }

    fn save_state(&mut self) -> Result<SavedState> {
        let host = self.run.buffers()?;
        let parts = self
            .run
            .grid()
            .levels
            .iter()
            .zip(host)
            .map(|(level, (f, _))| {
                let layout = &level.layout;
                let edge = layout.edges();
                SavedPart {
                    layers: 0..level.domain.dims.nz,
                    blocks: Some(SavedBlocks {
                        edge,
                        corners: layout.origin.iter().map(|o| std::array::from_fn(|a| o[a] * edge[a])).collect(),
                    }),
                    populations: storage_bytes(&f).to_vec(),
                }
            })
            .collect();
        Ok(SavedState { time: self.run.coarse_time(), parts })
    }

    fn restore_state(&mut self, state: &SavedState) -> Result<()> {
        let levels = &self.run.grid().levels;
        let other = || {
            Error::Setup(
                "the saved state was written by another refinement (levels, boxes or block size differ): \
                 resume with the set-up that wrote it, or start afresh"
                    .into(),
            )
        };
        if state.parts.len() != levels.len() {
            return Err(other());
        }
        let mut buffers = Vec::with_capacity(levels.len());
        for (level, part) in levels.iter().zip(&state.parts) {
            let layout = &level.layout;
            let corners_match = part.blocks.as_ref().is_some_and(|b| {
                b.corners.len() == layout.origin.len()
                    && b.corners.iter().zip(&layout.origin).all(|(c, o)| (0..3).all(|a| c[a] == o[a] * b.edge[a]))
            });
            if !corners_match {
                return Err(other());
            }
            let mut f = vec![S::ZERO; Q * layout.cells()];
            restore_storage(&mut f, &part.populations)?;
            buffers.push(f);
        }
        self.run.put_buffers(buffers, state.time)
    }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> LevelStore<L, Q, S> for RefinedCpu<L, Q, S> {
    fn advance(&mut self, steps: u64) -> Result<()> {
        self.step(steps);
        Ok(())
    }
    fn observed(&mut self, wanted: &[bool], observe: &mut dyn FnMut(&super::LevelGrid, &[S], bool)) -> Result<()> {
        self.step_observed(wanted, observe);
        Ok(())
    }
    fn wait(&self) -> Result<()> {
        Ok(())
    }
    fn coarse_time(&self) -> u64 {
        self.time()
    }
    fn grid(&self) -> &Levels {
        self.levels()
    }
    fn scheme(&self) -> Streaming {
        self.streaming()
    }
    fn backend(&self) -> BackendKind {
        BackendKind::Cpu
    }
    fn buffers(&self) -> Result<Vec<(Vec<S>, bool)>> {
        Ok(self.current_buffers())
    }
    fn put_buffers(&mut self, f: Vec<Vec<S>>, t: u64) -> Result<()> {
        self.set_buffers(f, t);
        Ok(())
    }
}

impl<L: Lattice<Q>, const Q: usize, S: DeviceStorage> LevelStore<L, Q, S> for RefinedGpu<L, Q, S> {
    fn advance(&mut self, steps: u64) -> Result<()> {
        self.step(steps)
    }
    fn observed(&mut self, wanted: &[bool], observe: &mut dyn FnMut(&super::LevelGrid, &[S], bool)) -> Result<()> {
        self.step_observed(wanted, observe)
    }
    fn wait(&self) -> Result<()> {
        self.synchronize()
    }
    fn coarse_time(&self) -> u64 {
        self.time()
    }
    fn grid(&self) -> &Levels {
        self.levels()
    }
    fn scheme(&self) -> Streaming {
        self.streaming()
    }
    fn backend(&self) -> BackendKind {
        BackendKind::Gpu(self.ordinal())
    }
    fn buffers(&self) -> Result<Vec<(Vec<S>, bool)>> {
        self.read_back()
    }
    fn put_buffers(&mut self, f: Vec<Vec<S>>, t: u64) -> Result<()> {
        self.write_back(f, t)
    }
}
