//! The dense domain split along z (its slowest axis) into partitions: which
//! layers each owns, the halo layers around them, and how a partition's
//! configuration and buffers are cut from the whole domain's. Every
//! executor of the step plan ([`crate::plan`]) uses this geometry: the CPU
//! partitions, the GPUs of one process and the NCCL ranks. After every step
//! each partition sends its neighbours exactly the population planes
//! [`crate::halo::halo_copies`] names.

use crate::curved::CurvedWalls;
use crate::domain::{Domain, OpenGroup};
use crate::error::{Error, Result};
use crate::plan::Region;
use crate::solver::{restore_storage, GridLayout, Initial, SavedState, SolverConfig};
use crate::sponge::SpongeBand;
use kernels_gpu::layout::population_index;
use kernels_gpu::{Dims, Storage};
use std::ops::Range;

/// Thinnest partition accepted, in cells.
pub const MIN_THICKNESS: u32 = 1;

/// Halo layers on each side of a split partition that the halo plan
/// ([`crate::halo`]) moves: one, for velocity sets whose speeds are at most 1.
pub const HALO_LAYERS: u32 = 1;

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

/// The layers of one partition: the global layers it owns and whether its
/// local grid has a halo layer on each side (a split domain) or is the
/// whole domain (no halos, nothing to exchange).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slab {
    /// Global layers owned.
    pub z: Range<u32>,
    /// Halo layers on each side of the local grid (0 or [`HALO_LAYERS`]).
    pub halo: u32,
}

impl Slab {
    /// The whole domain of `nz` layers, unsplit.
    pub fn whole(nz: u32) -> Self {
        Self { z: 0..nz, halo: 0 }
    }

    /// The slabs of `nz` layers split into `parts` partitions with halos of
    /// `halo` layers (the lattice's [`kernels_gpu::grid::halo_width`]).
    pub fn split(nz: u32, parts: u32, halo: u32) -> Result<Vec<Self>> {
        if halo > HALO_LAYERS {
            return Err(Error::Setup(format!(
                "this velocity set reaches {halo} cells, but z-partitions exchange halos of {HALO_LAYERS} layer: \
                 run it unsplit (one GPU or one CPU domain)"
            )));
        }
        Ok(split(nz, parts)?.into_iter().map(|z| Self { z, halo }).collect())
    }

    /// Own layers.
    pub fn len(&self) -> u32 {
        self.z.len() as u32
    }

    /// Whether it owns no layer (never, for slabs made here).
    pub fn is_empty(&self) -> bool {
        self.z.is_empty()
    }

    /// The layer of the whole box (of `nz` layers) that local layer `zl` is.
    pub fn global_z(&self, zl: u32, nz: u32) -> u32 {
        if self.halo == 0 {
            zl
        } else {
            global_layer(self.z.start, zl, nz)
        }
    }

    /// Local layers of the own cells.
    pub fn own_layers(&self) -> Range<u32> {
        self.halo..self.halo + self.len()
    }

    /// Local cell indices of the own cells, for layers of `plane` cells.
    pub fn own_cells(&self, plane: u32) -> Range<usize> {
        let own = self.own_layers();
        (own.start * plane) as usize..(own.end * plane) as usize
    }

    /// The local layer ranges `region` covers (none, one or two).
    pub fn region_layers(&self, region: Region) -> Vec<Range<u32>> {
        region_ranges(self.own_layers(), region)
    }

    /// The slabs of `config`'s box split into `parts` partitions with halos
    /// of `halo` layers: a sparse grid's partitions own whole block layers.
    pub fn split_grid(config: &SolverConfig, parts: u32, halo: u32) -> Result<Vec<Self>> {
        let nz = config.domain.dims.nz;
        let GridLayout::Sparse { block } = config.grid else { return Self::split(nz, parts, halo) };
        let edge = block.edges(nz)[2];
        if !nz.is_multiple_of(edge) || nz / edge < parts {
            return Err(Error::Setup(format!(
                "a sparse grid splits along z into partitions of whole {edge}-cell block layers: {nz} layers cannot be split \
                 into {parts} (make the box's z length a multiple of {edge} with at least {} layers, or use grid = \"dense\")",
                edge * parts
            )));
        }
        let slabs = Self::split(nz / edge, parts, halo)?;
        Ok(slabs.into_iter().map(|s| Self { z: s.z.start * edge..s.z.end * edge, halo }).collect())
    }
}

/// The ranges of the layers (or block layers) `own` that `region` covers:
/// all of them, the first and the last, or those between.
#[allow(clippy::single_range_in_vec_init)] // a list of ranges, sometimes of one
pub(crate) fn region_ranges(own: Range<u32>, region: Region) -> Vec<Range<u32>> {
    let (first, last) = (own.start, own.end - 1);
    match region {
        Region::Whole => vec![own],
        Region::Boundary if first == last => vec![first..first + 1],
        Region::Boundary => vec![first..first + 1, last..last + 1],
        Region::Interior if own.len() > 2 => vec![first + 1..last],
        Region::Interior => vec![],
    }
}

/// Global layer of local layer `zl` of a partition starting at `z0` (halos wrap).
pub(crate) fn global_layer(z0: u32, zl: u32, nz: u32) -> u32 {
    (z0 + nz + zl - 1) % nz
}

/// The configuration of partition `slab`: its own layers plus its halo
/// layers (wrapping), same physics; the whole configuration for an unsplit slab.
pub(crate) fn local_config(config: &SolverConfig, slab: &Slab) -> Result<SolverConfig> {
    if slab.halo == 0 {
        return Ok(config.clone());
    }
    let z = &slab.z;
    let d = config.domain.dims;
    let local = Dims::new(d.nx, d.ny, z.len() as u32 + 2);
    let plane = (d.nx * d.ny) as usize;
    let layer = |zl: u32| global_layer(z.start, zl, d.nz) as usize * plane..;
    let mut domain = Domain::new(local)?;
    domain.wall_velocities = config.domain.wall_velocities.clone();
    // Each open group keeps the cells of the own layers (global z.start.. is local 1..).
    let own = z.start as usize * plane..z.end as usize * plane;
    let to_local = |n: usize| n - own.start + plane;
    domain.open = (config.domain.open.iter())
        .map(|g| {
            let (cells, velocities) = g.cells_where(|n| own.contains(&n).then(|| to_local(n)));
            OpenGroup { state: g.state, cells, velocities }
        })
        .filter(|g| !g.cells.is_empty())
        .collect();
    // Curved-wall cells and sponge cells likewise: each partition updates
    // (and damps) its own, in whichever region holds them.
    let walls = &config.domain.curved;
    let mut curved = CurvedWalls { directions: walls.directions, ..Default::default() };
    for (k, &n) in walls.cells.iter().enumerate().filter(|(_, n)| own.contains(n)) {
        curved.cells.push(to_local(n));
        curved.q.extend_from_slice(walls.fractions(k));
    }
    domain.curved = curved;
    domain.sponges = (config.domain.sponges.iter())
        .map(|b| {
            let (cells, strength) = b
                .cells
                .iter()
                .zip(&b.strength)
                .filter(|(n, _)| own.contains(n))
                .map(|(&n, &s)| (to_local(n), s))
                .unzip();
            SpongeBand { cells, strength, ..b.clone() }
        })
        .filter(|b| !b.cells.is_empty())
        .collect();
    // Local layer 0 (the lower halo) is global layer z.start - 1.
    domain.z_offset = z.start.wrapping_sub(1);
    domain.flags = config.domain.flags.layers(local.nz, |zl| global_layer(z.start, zl, d.nz));
    let initial = match &config.initial {
        Initial::Uniform { rho, u } => Initial::Uniform { rho: *rho, u: *u },
        Initial::Fields { rho, u } => Initial::Fields {
            rho: (0..local.nz).flat_map(|zl| rho[layer(zl)][..plane].to_vec()).collect(),
            u: (0..local.nz).flat_map(|zl| u[layer(zl)][..plane].to_vec()).collect(),
        },
    };
    Ok(SolverConfig { domain, initial, ..config.clone() })
}

/// A partition's population buffer (own layers plus halos, or the whole
/// domain for an unsplit slab) from a saved state of any partitioning.
pub(crate) fn local_from_saved<S: Storage>(state: &SavedState, d: Dims, q: usize, slab: &Slab) -> Result<Vec<S>> {
    let layer_bytes = q * (d.nx * d.ny) as usize * S::BYTES;
    state.check(d.nz, layer_bytes, |b| q * b.volume() * S::BYTES)?;
    let layers: Vec<u32> = if slab.halo == 0 {
        (0..d.nz).collect()
    } else {
        (0..slab.len() + 2 * slab.halo).map(|zl| global_layer(slab.z.start, zl, d.nz)).collect()
    };
    let mut bytes = Vec::with_capacity(layers.len() * layer_bytes);
    for z in layers {
        bytes.extend_from_slice(state.layer(z, layer_bytes));
    }
    let mut local = vec![S::ZERO; bytes.len() / S::BYTES];
    restore_storage(&mut local, &bytes)?;
    Ok(local)
}

/// The own layers of a partition's buffer (`q` values per cell of layers
/// of `plane` cells): one contiguous range, as layers are.
pub(crate) fn own_values<'a, T>(local: &'a [T], plane: u32, q: usize, slab: &Slab) -> &'a [T] {
    let own = slab.own_layers();
    &local[population_index(plane, q, 0, own.start, 0)..population_index(plane, q, 0, own.end, 0)]
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuSolver;
    use crate::plan::Schedule;
    use crate::simulation::Partitions;
    use crate::solver::Solver;
    use crate::validation::cavity_config;
    use crate::{LatticeKind, Precision};
    use kernels_gpu::{Lattice, Storage, Streaming, D3Q19, D3Q27};

    fn forced_cavity(lattice: LatticeKind, precision: Precision, streaming: Streaming, side: u32) -> SolverConfig {
        let mut c = cavity_config(lattice, precision, streaming, side, 100.0, 0.08).unwrap();
        c.force = [2e-5, 1e-5, -1e-5];
        c
    }

    /// Every order of a step's pieces that the GPU paths allow, at its
    /// extremes, and the order the GPUs queue.
    const SCHEDULES: [Schedule; 4] =
        [Schedule::InOrder, Schedule::InteriorFirst, Schedule::CopiesEarly, Schedule::Overlapped];

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
                .map(|(s, n)| (s, n, CpuSolver::<L, Q, S>::partitioned(c.clone(), n, s).unwrap()))
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
                let mut split_run = CpuSolver::<D3Q19, 19, f32>::partitioned(c.clone(), n, schedule).unwrap();
                split_run.step(301).unwrap();
                let got = split_run.populations().unwrap();
                let differ = crate::solver::bitwise_differences(&want, &got);
                assert_eq!(differ, 0, "{streaming:?} {schedule:?}, axis {axis}, {n} partitions: {differ} differ");
            }
        }
    }

    /// Curved walls and sponge bands across partitions: a sphere with
    /// interpolated walls that every split cuts (curved cells in the
    /// boundary and interior layers of several partitions) and a sponge in
    /// front of the outlet, in a duct along z (the band in the last
    /// partitions) and along x (the band in every partition). Both schemes,
    /// every schedule, 2 to 4 partitions, dense and sparse grids, after odd
    /// and even step counts and after a restore: bit for bit with one domain,
    /// fields included.
    #[test]
    fn curved_walls_and_sponges_across_partitions() {
        fn check<L: Lattice<Q>, const Q: usize, S: Storage>(c: &SolverConfig, what: &str) {
            let sparse = c.grid != crate::solver::GridLayout::Dense;
            let mut one = CpuSolver::<L, Q, S>::new(c.clone()).unwrap();
            let mut runs: Vec<_> = SCHEDULES
                .into_iter()
                .flat_map(|s| (2..=4).filter(move |&n| !sparse || n < 4).map(move |n| (s, n)))
                .map(|(s, n)| (s, n, CpuSolver::<L, Q, S>::partitioned(c.clone(), n, s).unwrap()))
                .collect();
            for steps in [151, 1] {
                one.step(steps).unwrap();
                let (want, fields) = (one.populations().unwrap(), one.fields().unwrap());
                assert!(fields.u.to_dense().iter().all(|u| u.iter().all(|v| v.is_finite())), "{what}");
                for (schedule, n, s) in runs.iter_mut() {
                    s.step(steps).unwrap();
                    let differ = crate::solver::bitwise_differences(&want, &s.populations().unwrap());
                    let at = format!("{what} {schedule:?}, {n} partitions, step {}", one.time());
                    assert_eq!(differ, 0, "{at}: {differ} populations differ");
                    assert_eq!(fields, s.fields().unwrap(), "{at}: fields");
                }
            }
            // Restored: the carried values are taken again from the restored populations.
            let (_, _, split_run) = &mut runs[0];
            let saved = split_run.save_state().unwrap();
            let mut resumed = CpuSolver::<L, Q, S>::partitioned(c.clone(), 3, Schedule::CopiesEarly).unwrap();
            resumed.step(5).unwrap();
            resumed.restore_state(&saved).unwrap();
            resumed.step(41).unwrap();
            one.step(41).unwrap();
            let differ =
                crate::solver::bitwise_differences(&one.populations().unwrap(), &resumed.populations().unwrap());
            assert_eq!(differ, 0, "{what}: restored on 3 partitions, {differ} populations differ");
        }
        for (streaming, axis) in
            [Streaming::EsotericPull, Streaming::TwoLattice].into_iter().flat_map(|s| [(s, 2), (s, 0)])
        {
            let dims = if axis == 2 { Dims::new(9, 12, 16) } else { Dims::new(18, 10, 12) };
            let mut c =
                crate::cases::obstacle_duct_config(LatticeKind::D3Q19, Precision::F32, streaming, dims, axis).unwrap();
            // The sphere meets the boundary layers of a split in three.
            let plane = (dims.nx * dims.ny) as usize;
            let slabs = Slab::split(dims.nz, 3, HALO_LAYERS).unwrap();
            let edges: Vec<u32> = slabs.iter().flat_map(|s| [s.z.start, s.z.end - 1]).collect();
            let layers: Vec<u32> = c.domain.curved.cells.iter().map(|&n| (n / plane) as u32).collect();
            assert!(layers.iter().any(|z| edges.contains(z)) && layers.iter().any(|z| !edges.contains(z)));
            assert_eq!(c.domain.sponges.len(), 1);
            let what = format!("{streaming:?} along {axis}");
            check::<D3Q19, 19, f32>(&c, &what);
            c.grid = crate::solver::GridLayout::Sparse { block: crate::sparse::BlockShape::Cube4 };
            check::<D3Q19, 19, f32>(&c, &format!("{what}, sparse"));
        }
        // Other lattices and precisions: stochastic rounding's noise in the
        // sponge comes from global cell numbers.
        let dims = Dims::new(18, 10, 12);
        for (lattice, precision) in [(LatticeKind::D3Q27, Precision::F64), (LatticeKind::D3Q19, Precision::F16)] {
            let c = crate::cases::obstacle_duct_config(lattice, precision, Streaming::EsotericPull, dims, 0).unwrap();
            let what = format!("{lattice:?} {precision:?}");
            match lattice {
                LatticeKind::D3Q27 => check::<D3Q27, 27, f64>(&c, &what),
                _ => check::<D3Q19, 19, kernels_gpu::F16s>(&c, &what),
            }
        }
    }

    /// A sparse grid split into partitions of whole block layers gives the
    /// unsplit grid's populations in every order of the step's pieces, with
    /// inlets and outlets along z (open blocks in the first and last
    /// partitions) and along x (in every partition), for each way of
    /// grouping their blocks.
    #[test]
    fn sparse_partitions_in_every_order() {
        use crate::groups::BoundaryGroups;
        for (streaming, axis) in
            [Streaming::EsotericPull, Streaming::TwoLattice].into_iter().flat_map(|s| [(s, 2), (s, 0)])
        {
            for groups in BoundaryGroups::ALL {
                let dims = Dims::new(8, 12, 16);
                let mut c =
                    crate::validation::duct_config(LatticeKind::D3Q19, Precision::F32, streaming, dims, axis).unwrap();
                c.grid = crate::solver::GridLayout::Sparse { block: crate::sparse::BlockShape::Cube4 };
                c.groups = groups;
                let mut one = CpuSolver::<D3Q19, 19, f32>::new(c.clone()).unwrap();
                one.step(41).unwrap();
                let want = one.populations().unwrap();
                for (schedule, n) in SCHEDULES.into_iter().flat_map(|s| [2, 4].map(move |n| (s, n))) {
                    let mut split_run = CpuSolver::<D3Q19, 19, f32>::partitioned(c.clone(), n, schedule).unwrap();
                    split_run.step(41).unwrap();
                    let differ = crate::solver::bitwise_differences(&want, &split_run.populations().unwrap());
                    let what = format!("{streaming:?} {} {schedule:?}, axis {axis}, {n} partitions", groups.name());
                    assert_eq!(differ, 0, "{what}: {differ} differ");
                }
            }
        }
    }

    /// A sparse grid splits only into whole block layers, and says so.
    #[test]
    fn sparse_splits_are_whole_block_layers() {
        let mut c = forced_cavity(LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, 14);
        c.grid = crate::solver::GridLayout::Sparse { block: crate::sparse::BlockShape::Cube4 };
        let slabs = Slab::split_grid(&c, 3, HALO_LAYERS).unwrap();
        assert_eq!(slabs.iter().map(|s| s.z.clone()).collect::<Vec<_>>(), [0..8, 8..12, 12..16]);
        for parts in [5, 2] {
            c.grid = crate::solver::GridLayout::Sparse {
                block: if parts == 5 { crate::sparse::BlockShape::Cube4 } else { crate::sparse::BlockShape::Cube8 },
            };
            c.domain.dims.nz = if parts == 5 { 16 } else { 12 };
            let err = Slab::split_grid(&c, parts, HALO_LAYERS).unwrap_err().to_string();
            assert!(err.contains("whole") && err.contains("grid = \"dense\""), "{err}");
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
            for slab in Slab::split(dims.nz, parts, HALO_LAYERS).unwrap() {
                let local = local_config(&c, &slab).unwrap();
                // Local layer 1 is global layer z.start.
                let cells = local.domain.open_cells();
                assert!(cells.iter().all(|&n| slab.own_cells(plane).contains(&n)), "halo cells in a group");
                got.extend(cells.into_iter().map(|n| n - plane as usize + slab.z.start as usize * plane as usize));
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
            let mut unbroken = CpuSolver::<D3Q19, 19, f32>::partitioned(c.clone(), 3, schedule).unwrap();
            unbroken.step(50).unwrap();
            let saved = unbroken.save_state().unwrap();
            unbroken.step(51).unwrap();
            let mut resumed = CpuSolver::<D3Q19, 19, f32>::partitioned(c, 3, schedule).unwrap();
            resumed.step(3).unwrap();
            resumed.restore_state(&saved).unwrap();
            resumed.step(51).unwrap();
            assert_eq!(resumed.time(), unbroken.time());
            let (want, got) = (unbroken.populations().unwrap(), resumed.populations().unwrap());
            let differ = crate::solver::bitwise_differences(&want, &got);
            assert_eq!(differ, 0, "{streaming:?} {schedule:?}: {differ} populations differ after a restore");
        }
    }

    /// Read-backs come from each partition's own cells: the fields are the
    /// single domain's bit for bit (each cell's are computed from the same
    /// populations), mass and forces sum the same terms in another order
    /// (equal to round-off in f64).
    #[test]
    fn partitions_read_back_their_own_cells() {
        for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
            let c = forced_cavity(LatticeKind::D3Q19, Precision::F32, streaming, 10);
            let walls = c.domain.flags.map(kernels_gpu::flags::is_solid);
            let lid = c.domain.flags.map(|f| kernels_gpu::flags::moving_wall_id(f).is_some());
            let objects = [walls, lid];
            let mut one = CpuSolver::<D3Q19, 19, f32>::new(c.clone()).unwrap();
            let mut split_run = CpuSolver::<D3Q19, 19, f32>::partitioned(c, 3, Schedule::Overlapped).unwrap();
            one.step(37).unwrap();
            split_run.step(37).unwrap();
            assert_eq!(one.fields().unwrap(), split_run.fields().unwrap(), "{streaming:?}");
            let (m1, m3) = (one.mass().unwrap(), split_run.mass().unwrap());
            assert!((m1 - m3).abs() < 1e-12 * m1, "{streaming:?}: mass {m1} vs {m3}");
            let (f1, f3) = (one.forces(&objects).unwrap(), split_run.forces(&objects).unwrap());
            for (a, b) in f1.iter().zip(&f3) {
                let scale = a.iter().map(|v| v.abs()).fold(0.0, f64::max);
                assert!(scale > 0.0, "{streaming:?}: the lid drags the fluid, so forces are not zero");
                for k in 0..3 {
                    assert!((a[k] - b[k]).abs() < 1e-12 * scale, "{streaming:?}: force {a:?} vs {b:?}");
                }
            }
        }
    }

    /// A checkpoint is written partition by partition and resumes on any
    /// partitioning: 3 partitions saved, resumed unsplit and on 2 and 4
    /// partitions, each continues as the unbroken run, bit for bit.
    #[test]
    fn a_checkpoint_of_one_partitioning_resumes_on_another() {
        let c = forced_cavity(LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, 10);
        let mut unbroken = CpuSolver::<D3Q19, 19, f32>::partitioned(c.clone(), 3, Schedule::Overlapped).unwrap();
        unbroken.step(25).unwrap();
        let saved = unbroken.save_state().unwrap();
        assert_eq!(saved.parts.iter().map(|p| p.layers.clone()).collect::<Vec<_>>(), vec![0..4, 4..8, 8..12]);
        let path = std::env::temp_dir().join(format!("lbm-parts-{}.lbm", std::process::id()));
        crate::checkpoint::write(&path, &c, &saved).unwrap();
        let read = crate::checkpoint::read(&path, &c).unwrap();
        std::fs::remove_file(&path).ok();
        assert_eq!(read, saved);
        unbroken.step(30).unwrap();
        let want = unbroken.populations().unwrap();
        let mut resumed: Vec<CpuSolver<D3Q19, 19, f32>> = vec![CpuSolver::new(c.clone()).unwrap()];
        for n in [2, 4] {
            resumed.push(CpuSolver::partitioned(c.clone(), n, Schedule::InteriorFirst).unwrap());
        }
        for r in &mut resumed {
            r.restore_state(&read).unwrap();
            r.step(30).unwrap();
            let differ = crate::solver::bitwise_differences(&want, &r.populations().unwrap());
            assert_eq!((r.time(), differ), (55, 0), "{} partitions", r.executor_ref().slabs().len());
        }
        let short = SavedState { time: 1, parts: saved.parts[..2].to_vec() };
        let err = resumed[0].restore_state(&short).unwrap_err().to_string();
        assert!(err.contains("8 layers but this solver has 12"), "{err}");
    }

    #[test]
    fn halos_wider_than_the_plan_are_refused() {
        assert_eq!(kernels_gpu::grid::halo_width::<D3Q27, 27>(), HALO_LAYERS);
        let err = Slab::split(12, 2, 3).unwrap_err().to_string();
        assert!(err.contains("reaches 3 cells") && err.contains("unsplit"), "{err}");
    }

    #[test]
    fn one_layer_partitions_work_and_too_many_are_refused() {
        let c = forced_cavity(LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, 4);
        // 6 layers into 6 partitions of one layer each.
        let mut one = CpuSolver::<D3Q19, 19, f32>::new(c.clone()).unwrap();
        let mut thin = CpuSolver::<D3Q19, 19, f32>::partitioned(c.clone(), 6, Schedule::InOrder).unwrap();
        one.step(11).unwrap();
        thin.step(11).unwrap();
        assert_eq!(one.populations().unwrap(), thin.populations().unwrap());
        let err =
            CpuSolver::<D3Q19, 19, f32>::partitioned(c, 7, Schedule::InOrder).err().expect("7 partitions of 6 layers");
        assert!(err.to_string().contains("at most 6 partitions"), "{err}");
        assert_eq!(split(14, 3).unwrap(), vec![0..5, 5..10, 10..14]);
    }
}
