//! The grid a partition stores its cells on, as the executors see it: the
//! dense box of its configuration, or a block-sparse grid built from it
//! ([`crate::sparse`]). Everything outside the executors speaks of dense
//! cells (flags, open-boundary groups, fields, checkpoints); this module
//! turns those into the grid's storage order and back.

use crate::error::{Error, Result};
use crate::partition::Slab;
use crate::plan::Region;
use crate::solver::{GridLayout, SolverConfig};
use crate::sparse::{with_sparse, SparseLayout};
use kernels_gpu::layout::population_index;
use kernels_gpu::{Dims, Grid};
use std::ops::Range;

/// A partition's grid.
#[derive(Clone, Debug)]
pub enum PartGrid {
    /// The dense box of the partition's configuration.
    Dense(Dims),
    /// A block-sparse grid over it.
    Sparse(Box<SparseLayout>),
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
            $crate::part_grid::PartGrid::Sparse(layout) => $crate::sparse::with_sparse!(layout, |$g| $body),
        }
    };
}
pub(crate) use with_grid;

impl PartGrid {
    /// The grid `config` asks for, over its (partition's) domain: a sparse
    /// grid only for a whole domain (`slabs` = 1) for now.
    pub fn new(config: &SolverConfig, slabs: usize) -> Result<Self> {
        match config.grid {
            GridLayout::Dense => Ok(PartGrid::Dense(config.domain.dims)),
            GridLayout::Sparse { .. } if slabs > 1 => Err(Error::Setup(
                "a sparse grid runs on one partition (one GPU, or the CPU unsplit): use grid = \"dense\" to split the domain"
                    .into(),
            )),
            GridLayout::Sparse { edge } => {
                let reach = config.lattice.near_wall_radius();
                Ok(PartGrid::Sparse(Box::new(SparseLayout::build(&config.domain, edge, reach, config.groups)?)))
            }
        }
    }

    /// Cells stored: the length of per-cell arrays.
    pub fn cells(&self) -> usize {
        with_grid!(self, |g| g.cells())
    }

    /// The launch units (local layers of the box, blocks of a sparse grid)
    /// of a partition's `region` (`slab` for the dense box; a sparse grid is
    /// one unsplit region, all boundary).
    pub fn region_units(&self, slab: &Slab, region: Region) -> Vec<Range<u32>> {
        match self {
            PartGrid::Dense(_) => slab.region_layers(region),
            PartGrid::Sparse(_) if region == Region::Interior => vec![],
            PartGrid::Sparse(s) => std::iter::once(0..s.blocks()).collect(),
        }
    }

    /// The storage numbers of the cells of [`PartGrid::region_units`].
    pub fn region_cells(&self, slab: &Slab, region: Region) -> Vec<Range<usize>> {
        let units = self.region_units(slab, region);
        with_grid!(self, |g| units.into_iter().map(|u| g.region_cells(u)).collect())
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
    pub fn stored_cells(&self, cells: &[u32]) -> Vec<u32> {
        match self {
            PartGrid::Dense(_) => cells.to_vec(),
            PartGrid::Sparse(s) => {
                cells.iter().map(|&n| s.storage_of(n as usize).expect("flow cells are in stored blocks")).collect()
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

    /// `components` dense planes over the box cells `own` from planes in
    /// storage order; cells not stored take `absent[c]`.
    pub fn dense_planes<T: Copy>(&self, stored: &[T], components: usize, own: Range<usize>, absent: &[T]) -> Vec<T> {
        let n = self.cells();
        (0..components)
            .flat_map(|c| {
                let plane = &stored[c * n..(c + 1) * n];
                match self {
                    PartGrid::Dense(_) => plane[own.clone()].to_vec(),
                    PartGrid::Sparse(s) => s.scatter(plane, absent[c])[own.clone()].to_vec(),
                }
            })
            .collect()
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

    /// The inverse of [`PartGrid::dense_populations`] on stored cells.
    pub fn stored_populations<T: Copy>(&self, dense: Vec<T>, q: usize, zero: T) -> Vec<T> {
        match self {
            PartGrid::Dense(_) => dense,
            PartGrid::Sparse(s) => {
                let mut out = vec![zero; q * s.cells()];
                for_each_slot(s, q, |at, stored| out[stored] = dense[at]);
                out
            }
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
    with_sparse!(s, |grid| for n in 0..s.cells() as u32 {
        if let Some(m) = s.dense_of(n) {
            let (x, y, z) = d.coords(m as u32);
            let cell = grid.cell_of(n);
            for slot in 0..q {
                pair(population_index(d.nx * d.ny, q, x + d.nx * y, z, slot), grid.population(q, cell, slot));
            }
        }
    });
}
