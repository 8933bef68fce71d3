//! The grid a partition stores its cells on, as the executors see it: the
//! dense box of its configuration, or a block-sparse grid built from it
//! ([`crate::sparse`]). Everything outside the executors speaks of dense
//! cells (flags, open-boundary groups, fields, checkpoints); this module
//! turns those into the grid's storage order and back.

use crate::error::Result;
use crate::fields::PartFields;
use crate::halo::{HaloCopy, HaloRun};
use crate::partition::{local_from_saved, own_values, region_ranges, Slab};
use crate::plan::Region;
use crate::saved::{SavedBlocks, SavedCells, SavedPart, SavedState};
use crate::solver::{restore_storage, storage_bytes};
use crate::solver::{GridLayout, SolverConfig};
use crate::sparse::SparseLayout;
use kernels_gpu::layout::population_index;
use kernels_gpu::stream::FIELD_COMPONENTS;
use kernels_gpu::{Dims, Grid, Storage};
use std::ops::Range;

/// A partition's grid.
#[derive(Clone, Debug)]
pub enum PartGrid {
    /// The dense box of the partition's configuration.
    Dense(Dims),
    /// A block-sparse grid over it.
    Sparse(Box<SparseLayout>),
}

/// Where the regions of a partition meet in a boundary group's list
/// ordered by [`PartGrid::region_order`]: the boundary region's entries
/// come first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListRegions {
    /// Entries in the boundary region (all of them when unsplit).
    pub boundary: u32,
    /// Entries in all.
    pub count: u32,
}

impl ListRegions {
    /// The entries `region` updates.
    pub fn of(&self, region: Region) -> Range<u32> {
        match region {
            Region::Whole => 0..self.count,
            Region::Boundary => 0..self.boundary,
            Region::Interior => self.boundary..self.count,
        }
    }
}

/// Runs `$body` with `$g` bound to the kernel grid of the [`PartGrid`]
/// `$grid` (a `Dims` or a `Sparse`, both `Grid`): one generic body for both.
macro_rules! with_grid {
    ($grid:expr, |$g:ident| $body:expr) => {
        match $grid {
            $crate::part_grid::PartGrid::Dense(dims) => {
                let $g = *dims;
                $body
            }
            $crate::part_grid::PartGrid::Sparse(layout) => {
                let $g = layout.grid();
                $body
            }
        }
    };
}
pub(crate) use with_grid;

impl PartGrid {
    /// The grid `config` asks for, over its (partition's) domain, which has
    /// halo layers when `split` (a sparse grid is then padded: see
    /// [`SparseLayout::pad`]).
    pub fn new(config: &SolverConfig, split: bool) -> Result<Self> {
        match config.grid {
            GridLayout::Dense => Ok(PartGrid::Dense(config.domain.dims)),
            GridLayout::Sparse { block } => {
                let reach = config.lattice.near_wall_radius();
                let layout = SparseLayout::build_part(&config.domain, block, reach, config.groups, split)?;
                Ok(PartGrid::Sparse(Box::new(layout)))
            }
        }
    }

    /// Cells stored: the length of per-cell arrays.
    pub fn cells(&self) -> usize {
        with_grid!(self, |g| g.cells())
    }

    /// The launch units (local layers of the box, blocks of a sparse grid)
    /// of a partition's `region` (`slab` for the dense box; a sparse grid
    /// has its own block layers, and any boundary blocks stored first go
    /// with every region but the interior).
    pub fn region_units(&self, slab: &Slab, region: Region) -> Vec<Range<u32>> {
        match self {
            PartGrid::Dense(_) => slab.region_layers(region),
            PartGrid::Sparse(s) => {
                let first = (region != Region::Interior).then(|| s.first_units());
                let layers = region_ranges(s.own_layers(), region).into_iter().map(|l| s.layer_units(l));
                first.into_iter().chain(layers).filter(|u| !u.is_empty()).collect()
            }
        }
    }

    /// The storage numbers of the cells of [`PartGrid::region_units`].
    pub fn region_cells(&self, slab: &Slab, region: Region) -> Vec<Range<usize>> {
        let units = self.region_units(slab, region);
        with_grid!(self, |g| units.into_iter().map(|u| g.region_cells(u)).collect())
    }

    /// A boundary group's list (the storage numbers `cells`) ordered as the
    /// regions run it: the entries of `slab`'s boundary region first, then
    /// the interior's. Returns the order (indices into `cells`) and where
    /// the regions meet. An unsplit partition runs one region, `Whole`.
    pub fn region_order(&self, slab: &Slab, cells: &[u32]) -> (Vec<usize>, ListRegions) {
        let count = cells.len() as u32;
        if slab.halo == 0 {
            return ((0..cells.len()).collect(), ListRegions { boundary: count, count });
        }
        let boundary = self.region_cells(slab, Region::Boundary);
        let in_boundary = |k: &usize| boundary.iter().any(|r| r.contains(&(cells[*k] as usize)));
        let (mut order, interior): (Vec<usize>, Vec<usize>) = (0..cells.len()).partition(in_boundary);
        let regions = ListRegions { boundary: order.len() as u32, count };
        order.extend(interior);
        (order, regions)
    }

    /// The kernels' flag bytes of `config`'s domain in storage order
    /// ([`SolverConfig::kernel_flags`]; a sparse grid works them out per
    /// stored cell).
    pub fn kernel_flags(&self, config: &SolverConfig) -> Vec<u8> {
        match self {
            PartGrid::Dense(_) => config.kernel_flags(),
            PartGrid::Sparse(s) => s.kernel_flags(&config.domain, config.lattice.near_wall_radius()),
        }
    }

    /// `config`'s initial density and velocity as planes in storage order
    /// ([`SolverConfig::initial_planes`]; cells not in the box take zeros).
    pub fn initial_planes<T: kernels_gpu::Real + Default>(&self, config: &SolverConfig) -> Vec<T> {
        match (self, &config.initial) {
            (PartGrid::Sparse(s), crate::Initial::Uniform { rho, u }) => {
                let cells = s.cells();
                let mut planes: Vec<T> = vec![T::default(); FIELD_COMPONENTS * cells];
                for n in (0..cells).filter(|&n| s.cell_position(n as u32).is_some()) {
                    planes[n] = T::from_f64(*rho);
                    for a in 0..3 {
                        planes[(a + 1) * cells + n] = T::from_f64(u[a]);
                    }
                }
                planes
            }
            _ => self.stored_planes(&config.initial_planes::<T>(), FIELD_COMPONENTS),
        }
    }

    /// Per-cell values (flags, say) in storage order from the dense ones;
    /// cells that are not in the box take `outside`.
    pub fn stored<T: Copy>(&self, dense: Vec<T>, outside: T) -> Vec<T> {
        match self {
            PartGrid::Dense(_) => dense,
            PartGrid::Sparse(s) => s.gather(&dense, outside),
        }
    }

    /// Storage numbers of the dense cells `cells` (all stored: they are flow cells).
    pub fn stored_cells(&self, cells: &[usize]) -> Vec<u32> {
        match self {
            PartGrid::Dense(_) => cells.iter().map(|&n| n as u32).collect(),
            PartGrid::Sparse(s) => {
                cells.iter().map(|&n| s.storage_of(n).expect("flow cells are in stored blocks")).collect()
            }
        }
    }

    /// `components` planes of per-cell values in storage order from dense planes.
    pub fn stored_planes<T: Copy + Default>(&self, dense: &[T], components: usize) -> Vec<T> {
        match self {
            PartGrid::Dense(_) => dense.to_vec(),
            PartGrid::Sparse(s) => {
                let n = s.dims.cells();
                (0..components).flat_map(|c| s.gather(&dense[c * n..(c + 1) * n], T::default())).collect()
            }
        }
    }

    /// The own cells' fields from `rho, ux, uy, uz` planes in storage
    /// order (`slab` places the partition in the box): whole layers on
    /// the dense box, the stored cells on a sparse grid.
    pub fn own_fields<T: kernels_gpu::Real>(&self, slab: &Slab, stored: &[T]) -> PartFields {
        let n = self.cells();
        match self {
            PartGrid::Dense(d) => {
                let own = slab.own_cells(d.nx * d.ny);
                let planes = (0..FIELD_COMPONENTS)
                    .flat_map(|c| stored[c * n..][own.clone()].iter().map(|v| v.to_f64()))
                    .collect();
                PartFields::Layers { z: slab.z.clone(), planes }
            }
            PartGrid::Sparse(s) => {
                let (mut positions, mut values) = (Vec::new(), Vec::new());
                let own = slab.own_layers();
                for cells in self.region_cells(slab, Region::Whole) {
                    for k in cells {
                        let Some([x, y, z]) = s.cell_position(k as u32).filter(|p| own.contains(&p[2])) else {
                            continue;
                        };
                        positions.push([x, y, z - own.start + slab.z.start]);
                        values.push(std::array::from_fn(|c| stored[c * n + k].to_f64()));
                    }
                }
                PartFields::Cells { positions, values }
            }
        }
    }

    /// The own cells' populations `f` (storage order) as a part of a saved
    /// state: whole layers of the dense box; the own stored blocks of a
    /// sparse grid, in z, y, x order of their corners, so that every
    /// partitioning of a grid saves the same bytes.
    pub fn saved_part<S: Storage>(&self, slab: &Slab, f: &[S], q: usize) -> SavedPart {
        match self {
            PartGrid::Dense(d) => {
                let populations = storage_bytes(own_values(f, d.nx * d.ny, q, slab)).to_vec();
                SavedPart { layers: slab.z.clone(), blocks: None, populations }
            }
            PartGrid::Sparse(s) => {
                let edge = s.edges();
                let own = s.own_layers();
                let mut blocks: Vec<([u32; 3], usize)> = (s.origin.iter().enumerate())
                    .filter(|(_, o)| own.contains(&o[2]))
                    // Padded grid z to the box's: the pad, then the partition's place.
                    .map(|(b, o)| {
                        ([o[0] * edge[0], o[1] * edge[1], o[2] * edge[2] - s.pad - slab.halo + slab.z.start], b)
                    })
                    .collect();
                blocks.sort_unstable_by_key(|&([x, y, z], _)| [z, y, x]);
                let chunk = q * s.block_cells();
                let mut populations = Vec::with_capacity(blocks.len() * chunk * S::BYTES);
                for &(_, b) in &blocks {
                    populations.extend_from_slice(storage_bytes(&f[b * chunk..][..chunk]));
                }
                let corners = blocks.into_iter().map(|(c, _)| c).collect();
                SavedPart { layers: slab.z.clone(), blocks: Some(SavedBlocks { edge, corners }), populations }
            }
        }
    }

    /// A partition's population buffer in storage order, halos included,
    /// from a saved state of the box `global` (of either grid and any
    /// partitioning); slots the state does not hold are zero.
    pub fn restored<S: Storage>(&self, state: &SavedState, slab: &Slab, global: Dims, q: usize) -> Result<Vec<S>> {
        if let (PartGrid::Dense(_), true) = (self, state.is_dense()) {
            return local_from_saved(state, global, q, slab);
        }
        let cells = SavedCells::new(state, global, q, S::BYTES)?;
        let global_z = |zl: u32| slab.global_z(zl, global.nz);
        let mut out = vec![S::ZERO; q * self.cells()];
        let mut put = |p: [u32; 3], at: &dyn Fn(usize) -> usize| {
            if let Some(slots) = cells.cell([p[0], p[1], global_z(p[2])]) {
                for (slot, bytes) in slots.enumerate() {
                    restore_storage(&mut out[at(slot)..][..1], bytes).expect("one value");
                }
            }
        };
        match self {
            PartGrid::Dense(d) => {
                let plane = d.nx * d.ny;
                for n in 0..d.cells() {
                    let p = crate::cell_blocks::position(*d, n);
                    put(p, &|slot| population_index(plane, q, p[0] + d.nx * p[1], p[2], slot));
                }
            }
            PartGrid::Sparse(s) => {
                let grid = s.grid();
                for n in 0..s.cells() as u32 {
                    if let Some(p) = s.cell_position(n) {
                        let cell = grid.cell_of(n);
                        put(p, &|slot| grid.population(q, cell, slot));
                    }
                }
            }
        }
        Ok(out)
    }

    /// A population buffer of `q` per cell in the dense layout from one in
    /// storage order: every slot of every stored cell in the box; the
    /// others (cells not stored, all resting walls, whose slots no cell
    /// reads) are `zero`.
    pub fn dense_populations<T: Copy>(&self, f: &[T], q: usize, zero: T) -> Vec<T> {
        match self {
            PartGrid::Dense(_) => f.to_vec(),
            PartGrid::Sparse(s) => {
                let mut out = vec![zero; q * s.dims.cells()];
                for_each_slot(s, q, |dense, stored| out[dense] = f[stored]);
                out
            }
        }
    }

    /// The runs of values `copy` moves from this partition (`from_len` own
    /// layers) to the partition `to` (`to_len`), for `q` storage slots. A
    /// sparse grid pairs the blocks of the sender's layer and of the
    /// receiver's by their column; where one stores no block, no flow cell
    /// writes or reads what it would hold.
    pub fn halo_runs(&self, copy: &HaloCopy, from_len: u32, to: &PartGrid, to_len: u32, q: usize) -> Vec<HaloRun> {
        match (self, to) {
            (PartGrid::Dense(d), PartGrid::Dense(_)) => {
                let plane = (d.nx * d.ny) as usize;
                let (from, to) = copy.ranges(from_len, to_len, plane as u32, q);
                let (from, to, width, rows) = (from.start, to.start, plane, copy.count);
                vec![HaloRun { from, to, width, rows, row_pitch: plane, depth: 1, depth_pitch: 0 }]
            }
            (PartGrid::Sparse(a), PartGrid::Sparse(b)) => {
                let v = a.block_cells();
                let [ex, ey, layer] = a.edges();
                // Block layer and layer within the blocks of each side's crossing layer.
                let place = |s: &SparseLayout, z: u32| ((z + s.pad) / layer, ((z + s.pad) % layer) as usize);
                let ((za, la), (zb, lb)) = (place(a, copy.from.z(from_len)), place(b, copy.to.z(to_len)));
                let start = |block: u32, l: usize| block as usize * q * v + copy.first * v + l * (ex * ey) as usize;
                let mut runs: Vec<HaloRun> = Vec::new();
                for by in 0..a.block_dims[1] {
                    for bx in 0..a.block_dims[0] {
                        let (Some(s), Some(r)) = (a.block_at(bx, by, za), b.block_at(bx, by, zb)) else { continue };
                        let (from, to) = (start(s, la), start(r, lb));
                        match runs.last_mut() {
                            Some(last)
                                if last.from + last.depth * last.depth_pitch == from
                                    && last.to + last.depth * last.depth_pitch == to =>
                            {
                                last.depth += 1
                            }
                            _ => runs.push(HaloRun {
                                from,
                                to,
                                width: (ex * ey) as usize,
                                rows: copy.count,
                                row_pitch: v,
                                depth: 1,
                                depth_pitch: q * v,
                            }),
                        }
                    }
                }
                runs
            }
            _ => unreachable!("the partitions of one solver share its grid layout"),
        }
    }

    /// Position in the partition's domain of the position `p` a stored
    /// cell has in the grid (a partition's sparse grid is padded along z).
    pub fn domain_position(&self, p: [u32; 3]) -> [u32; 3] {
        match self {
            PartGrid::Dense(_) => p,
            PartGrid::Sparse(s) => s.domain_position(p).expect("a stored cell of the domain"),
        }
    }

    /// The sparse grid's size report: `None` for a dense box.
    pub fn sparse(&self) -> Option<&SparseLayout> {
        match self {
            PartGrid::Dense(_) => None,
            PartGrid::Sparse(s) => Some(s),
        }
    }
}

/// Calls `pair(dense, stored)` with the index of every slot of every stored
/// cell in the box in a dense population buffer of `q` per cell and in the
/// sparse grid's.
fn for_each_slot(s: &SparseLayout, q: usize, mut pair: impl FnMut(usize, usize)) {
    let d = s.dims;
    let grid = s.grid();
    for n in 0..s.cells() as u32 {
        if let Some(m) = s.dense_of(n) {
            let (x, y, z) = d.coords(m as u32);
            let cell = grid.cell_of(n);
            for slot in 0..q {
                pair(population_index(d.nx * d.ny, q, x + d.nx * y, z, slot), grid.population(q, cell, slot));
            }
        }
    }
}
