//! The grid interface: the one place that says where a cell's populations
//! live, who its neighbours are, and which cells a launch covers. The
//! per-cell functions of [`crate::stream`] (for now instantiated for the
//! dense box only: see there why), the entry points and the host's loops ask
//! a [`Grid`] and nothing else, so a grid of another shape runs the same
//! physics.
//!
//! # Terms
//!
//! A grid stores [`Grid::cells`] cells, numbered `0 .. cells()`: a cell's
//! number ([`Grid::index_of`]) indexes its flag byte and its entries in the
//! field planes, and a population buffer holds `Q * cells()` values. Work is
//! launched over *units*, runs of cells contiguous in numbering and in
//! storage: the layers of a dense box, the blocks of a block-sparse grid. A
//! *region* is a range of units (a z-partition's boundary layers and its
//! interior are regions): [`Grid::region_cells`] gives its cells,
//! [`Grid::launch`] the launch over it and [`Grid::launch_cell`] each
//! thread's cell.
//!
//! # The dense box: [`Dims`]
//!
//! Cell `n = x + nx (y + ny z)`; a unit is a layer of constant `z`.
//! Populations are blocked by layer ([`population_index`]); neighbours wrap
//! periodically on every axis ([`Cell::neighbours`]), reaching one cell per
//! axis ([`Grid::MAX_OFFSET`] = 1). A launch over `k` layers is the shape
//! [`blocks_per_row`] picks with `k` blocks along the launch's z.
//!
//! # A block-sparse grid
//!
//! Cells come in cubic blocks of edge `B` (4 or 8), `V = B^3` cells each;
//! only blocks that hold fluid (or a boundary next to it) are stored. Let
//! `b` be a block's storage number and `(lx, ly, lz)` a cell's place in its
//! block, `l = lx + B (ly + B lz)`. The grid is [`crate::sparse::Sparse`]: its
//! block edges are type parameters (so kernels index with constants), and
//! what it holds travels to kernels by value, as [`Dims`] does:
//!
//! - `blocks`: the number of stored blocks, numbered `0 .. blocks` in
//!   storage order, grouped by the region they launch in (a partition's
//!   boundary blocks, its interior, then its halo copies, which are not
//!   launched), in z-order within a region for locality;
//! - `origin[b]`: the block's position in block units, so cell
//!   `(lx, ly, lz)` of block `b` sits at `B origin[b] + (lx, ly, lz)`;
//! - `neighbour[27 b + k]`, 27 entries per block: the storage number of the
//!   block at offset `(dx, dy, dz)` in `{-1, 0, 1}^3`, `k = (dx + 1) +
//!   3 (dy + 1) + 9 (dz + 1)` (entry 13 is `b`). Periodic axes wrap in this
//!   table (the host builds it so), never in the kernels. A neighbour that
//!   is not stored is the *solid block*, number `blocks`: one block past the
//!   active ones whose cells are all flagged [`crate::flags::WALL`]. The
//!   host stores every block a flow cell's populations reach (walls
//!   included: Esoteric Pull keeps a bounced population in the wall cell's
//!   slots between steps), so no update reads or writes the solid block;
//!   it only gives the table an entry for the walls beyond.
//!
//! There are no halo layers: a cell at a block face reads its neighbour
//! block's storage through the table. A partition of a sparse grid over
//! devices stores copies of the remote blocks next to its own after them,
//! refreshed by one copy per block, and points its table at them.
//!
//! Its trait items, with the cell `(b, lx, ly, lz)` (the `Cell` type keeps
//! `b` and the local coordinates, so kernels never divide):
//!
//! - `MAX_OFFSET = B`: an offset crosses at most one block per axis.
//! - [`Grid::cells`]: `(blocks + 1) V`, the solid block included (its flags
//!   are read).
//! - [`Grid::index_of`]: `b V + l`; [`Grid::cell_of`]`(n)`: `b = n / V`,
//!   `l = n % V` (shifts).
//! - [`Grid::position`]: `B origin[b] + (lx, ly, lz)`.
//! - [`Grid::population`]: `b q V + population_index(B^2, q, lx + B ly,
//!   lz, slot)`: each block is stored as a dense `B^3` box with the same
//!   layer and slot blocking, its `q V` values one contiguous run (one copy
//!   moves a halo block).
//! - [`Grid::neighbours`]: per axis `p = l_a + c_a`, block step `d_a = -1`
//!   if `p < 0`, `+1` if `p >= B`, else 0, and `l'_a = p - B d_a`; the
//!   neighbour block is `m = neighbour[27 b + k(d)]` (only the entries the
//!   lattice reaches are read). It keeps, per direction `j`, the cell number
//!   `m V + l'` ([`Neighbourhood::cell`]) and the population base
//!   `m q V + lz' q B^2 + lx' + B ly'`, to which
//!   [`Neighbourhood::population`] adds `slot B^2`.
//! - [`Neighbourhood::seed_cell`]`(unit_offset)`: `(b + unit_offset) V + l`.
//!   A partition holds a contiguous run of the whole grid's block list and
//!   `unit_offset` ([`crate::StepParams::z_offset`]) is the whole grid's
//!   number of its block 0, so stochastic rounding is the same however the
//!   grid is split.
//! - [`Grid::units`]: `blocks`; [`Grid::region_cells`]`(r)`:
//!   `r.start V .. r.end V`.
//! - [`Grid::launch`]`(k, _)`: `k` CUDA blocks of `V` threads (64 or 512),
//!   one per grid block, whatever block size is asked for.
//! - [`Grid::launch_cell`]`(first, at)`: block `first + at.x / V`,
//!   `l = at.x % V` (shifts); never `None`. A warp is 32 consecutive `l`: for
//!   `B = 8` half a layer, for `B = 4` two whole layers, so the loads of a
//!   warp's own slots stay in whole, aligned 32-byte sectors.
//!
//! # Refinement levels
//!
//! A refined domain is a stack of levels `0` (coarsest) to `L - 1`, each a
//! block-sparse grid of its own (tables, flags, population buffers), cell
//! size `dx_0 / 2^l` and time step `dt_0 / 2^l` (acoustic scaling: the
//! lattice velocities stay the same; `tau_l - 1/2 = 2^l (tau_0 - 1/2)` keeps
//! the viscosity). The uniform kernels run unchanged over each level: the
//! cells at a resolution jump carry flags the bulk kernels skip
//! ([`crate::flags::GHOST`] and its kin), and their own updates
//! (explosion, ghost streaming, coalescence) are in [`crate::levels`], as
//! the disaggregated design of Mahmoud et al. 2025 gives each kind of cell
//! its own kernel.

use crate::kernels::blocks_per_row;
use crate::lattice::Lattice;
use crate::layout::{population_index, Cell, Dims, Neighbours};
use core::ops::Range;

/// A grid of cells: storage, neighbours and launches (see the module docs).
pub trait Grid: Copy {
    /// Largest offset per axis [`Grid::neighbours`] resolves: a lattice
    /// with a larger [`Lattice::MAX_SPEED`] cannot run on this grid.
    const MAX_OFFSET: u32;
    /// A cell as the per-cell functions hold it: enough to find its
    /// neighbours and storage without dividing.
    type Cell: Copy;
    /// The neighbours `x + c_j` of a cell, gathered once per update.
    type Neighbours<const Q: usize>: Neighbourhood<Q>;
    /// The neighbours [`Grid::odd_neighbours`] gives: [`Grid::Neighbours`]
    /// where every neighbour costs arithmetic alone.
    type OddNeighbours<const Q: usize>: Neighbourhood<Q>;
    /// Whether the kernel that updates open cells too walks each block's
    /// cells in the order of [`crate::groups::OpenCells::walk`]: grids of
    /// blocks, whose cells it can renumber within a block by a table.
    const WALKS_BOUNDARY_BLOCKS: bool = false;

    /// Number of cells stored: the length of per-cell arrays (flags, each
    /// field plane); a population buffer holds `q` times as many values.
    fn cells(&self) -> usize;
    /// Number of `cell` (its flag byte's index).
    fn index_of(&self, cell: Self::Cell) -> u32;
    /// The cell numbered `n` (may divide: for lists of cells and host loops).
    fn cell_of(&self, n: u32) -> Self::Cell;
    /// Lattice coordinates of `cell` in the whole domain.
    fn position(&self, cell: Self::Cell) -> [u32; 3];
    /// Index of storage slot `slot` of `cell` in a buffer of `q`
    /// populations per cell.
    fn population(&self, q: usize, cell: Self::Cell, slot: usize) -> usize;
    /// The neighbours `x + c_j` of `cell` for the velocities `c` (entry 0,
    /// `c_0 = 0`, is the cell itself).
    fn neighbours<const Q: usize>(&self, cell: Self::Cell, c: &[[i32; 3]; Q]) -> Self::Neighbours<Q>;
    /// [`Grid::neighbours`] for an Esoteric Pull step, which reads
    /// populations of the cell and of its neighbours `j` odd only (and near
    /// walls the flags of the others): a grid whose neighbours cost loads may
    /// find the even ones only when asked for them.
    fn odd_neighbours<const Q: usize>(&self, cell: Self::Cell, c: &[[i32; 3]; Q]) -> Self::OddNeighbours<Q>;

    /// Number of launch units (layers, blocks).
    fn units(&self) -> u32;
    /// Numbers of the cells of the units `region`: one contiguous range.
    fn region_cells(&self, region: Range<u32>) -> Range<usize>;
    /// The launch over `units` units for kernels of (at most) `threads`
    /// threads per block.
    fn launch(&self, units: u32, threads: u32) -> LaunchShape;
    /// The cell of the thread at `at` in a launch ([`Grid::launch`]) over
    /// the region that starts at unit `first`; `None` for threads past the
    /// grid's cells.
    fn launch_cell(&self, first: u32, at: LaunchIndex) -> Option<Self::Cell>;
    /// Whether a launch of the bulk kernel (`heavy` false) or of the kernel
    /// that updates open cells too (`heavy` true) updates `cell`: a grid
    /// that marks its boundary units ([`crate::groups`], the `bitmask`
    /// variant) gives each unit to one of them; by default both update
    /// every cell they are launched over.
    #[inline(always)]
    fn runs(&self, cell: Self::Cell, heavy: bool) -> bool {
        let _ = (cell, heavy);
        true
    }

    /// The launch of the kernel that updates open cells too over `units`
    /// units: by default [`Grid::launch`].
    fn launch_open(&self, units: Range<u32>, threads: u32) -> LaunchShape {
        self.launch(units.len() as u32, threads)
    }

    /// The cell that the thread at `at` of the kernel that updates open cells
    /// too updates in a launch over the units `units`
    /// ([`Grid::launch_open`]), if any: by default the one of
    /// [`Grid::launch_cell`], if this kernel [`Grid::runs`] it.
    #[inline(always)]
    fn open_cell(&self, units: Range<u32>, at: LaunchIndex) -> Option<Self::Cell> {
        self.launch_cell(units.start, at).filter(|&c| self.runs(c, true))
    }
}

/// A cell's gathered neighbours (see [`Grid::neighbours`]).
pub trait Neighbourhood<const Q: usize> {
    /// Whether this type may find some neighbours only when asked for
    /// (those a [`Grid::odd_neighbours`] leaves, which only Esoteric Pull
    /// asks for): such a step's loop over every direction is then written
    /// out, since asking by a run-time index would keep the velocities in
    /// memory.
    const FOUND_WHEN_ASKED: bool = false;
    /// Number of neighbour `j` (as [`Grid::index_of`]), for its flag.
    fn cell(&self, j: usize) -> u32;
    /// Index of storage slot `slot` of neighbour `j` in a population buffer.
    fn population(&self, j: usize, slot: usize) -> usize;
    /// Whether a step's loads take their addresses from
    /// [`Neighbourhood::population_at`], not `f + population(j, slot)`
    /// (every grid but one keeps its kernels as they compiled before).
    const FORMS_ADDRESSES: bool = false;
    /// Address of storage slot `slot` of neighbour `j` in the population
    /// buffer `f`, where a step loads it: `f + population(j, slot)`, which a
    /// grid may form in an order of its own ([`Neighbourhood::FORMS_ADDRESSES`]).
    ///
    /// # Safety
    /// `f` must hold a population buffer of the grid `self` was found in.
    #[inline(always)]
    unsafe fn population_at<T>(&self, f: *const T, j: usize, slot: usize) -> *const T {
        // SAFETY: the caller's buffer holds every population of the grid.
        unsafe { f.add(self.population(j, slot)) }
    }
    /// Number of the cell itself in the whole, unsplit domain (wrapping),
    /// given the whole domain's number of local unit 0: seeds stochastic
    /// rounding, so a partition's cells round as the whole domain's do.
    fn seed_cell(&self, unit_offset: u32) -> u32;
}

/// A launch: `blocks` CUDA blocks (x, y, z) of `threads` threads each
/// (blocks are one-dimensional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Blocks along x, y and z.
    pub blocks: [u32; 3],
    /// Threads per block.
    pub threads: u32,
}

/// Where a thread sits in a launch (blocks are one-dimensional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchIndex {
    /// Index along x over the whole launch: `blockIdx.x * blockDim.x + threadIdx.x`.
    pub x: u32,
    /// `blockIdx.y`.
    pub y: u32,
    /// `blockIdx.z`.
    pub z: u32,
    /// `blockIdx.x`.
    pub block: u32,
    /// Threads per block: `blockDim.x`.
    pub threads: u32,
}

/// Layers a z-partition needs on each side of its own: the farthest a
/// population travels along z in one step.
pub const fn halo_width<L: Lattice<Q>, const Q: usize>() -> u32 {
    L::MAX_SPEED
}

/// Radius (per axis) of the cube of cells around a fluid cell within which
/// a solid cell sends it down the near-wall path
/// ([`crate::flags::NEAR_SOLID`]): every cell `x - c_i` lies within it.
pub const fn near_wall_radius<L: Lattice<Q>, const Q: usize>() -> u32 {
    L::MAX_SPEED
}

impl Grid for Dims {
    const MAX_OFFSET: u32 = 1;
    type Cell = Cell;
    type Neighbours<const Q: usize> = Neighbours<Q>;
    type OddNeighbours<const Q: usize> = Neighbours<Q>;

    #[inline(always)]
    fn cells(&self) -> usize {
        Dims::cells(self)
    }

    #[inline(always)]
    fn index_of(&self, cell: Cell) -> u32 {
        cell.n
    }

    #[inline(always)]
    fn cell_of(&self, n: u32) -> Cell {
        Cell::from_index(*self, n)
    }

    #[inline(always)]
    fn position(&self, cell: Cell) -> [u32; 3] {
        [cell.x, cell.y, cell.z]
    }

    #[inline(always)]
    fn population(&self, q: usize, cell: Cell, slot: usize) -> usize {
        population_index(self.nx * self.ny, q, cell.x + self.nx * cell.y, cell.z, slot)
    }

    #[inline(always)]
    fn neighbours<const Q: usize>(&self, cell: Cell, c: &[[i32; 3]; Q]) -> Neighbours<Q> {
        cell.neighbours(*self, c)
    }

    /// All of them: each is arithmetic.
    #[inline(always)]
    fn odd_neighbours<const Q: usize>(&self, cell: Cell, c: &[[i32; 3]; Q]) -> Neighbours<Q> {
        self.neighbours(cell, c)
    }

    #[inline(always)]
    fn units(&self) -> u32 {
        self.nz
    }

    #[inline(always)]
    fn region_cells(&self, region: Range<u32>) -> Range<usize> {
        let plane = self.nx as usize * self.ny as usize;
        region.start as usize * plane..region.end as usize * plane
    }

    /// With blocks per row ([`blocks_per_row`]) `(ceil(nx / threads), ny,
    /// units)`, else `(ceil(nx ny / threads), 1, units)`; narrow boxes get
    /// narrower blocks.
    fn launch(&self, units: u32, threads: u32) -> LaunchShape {
        if blocks_per_row(self.nx) {
            let threads = threads.min(self.nx);
            LaunchShape { blocks: [self.nx.div_ceil(threads), self.ny, units], threads }
        } else {
            let plane = self.nx * self.ny;
            let threads = threads.min(plane.next_multiple_of(32));
            LaunchShape { blocks: [plane.div_ceil(threads), 1, units], threads }
        }
    }

    /// With blocks per row, x from the block and thread along x and y from
    /// the launch's y; otherwise the position in the layer from the block and
    /// thread, split into x and y (one division). z is `first` plus the
    /// launch's z.
    #[inline(always)]
    fn launch_cell(&self, first: u32, at: LaunchIndex) -> Option<Cell> {
        let (i, j, z) = (at.x, at.y, first + at.z);
        let (x, y) = if blocks_per_row(self.nx) {
            (i, j)
        } else {
            let y = i / self.nx;
            (i - y * self.nx, y)
        };
        if x < self.nx && y < self.ny {
            Some(Cell::at(*self, x, y, z))
        } else {
            None
        }
    }
}

impl<const Q: usize> Neighbourhood<Q> for Neighbours<Q> {
    #[inline(always)]
    fn cell(&self, j: usize) -> u32 {
        Neighbours::cell(self, j)
    }

    #[inline(always)]
    fn population(&self, j: usize, slot: usize) -> usize {
        Neighbours::population(self, j, slot)
    }

    /// `x + nx (y + ny (z + unit_offset))`: `unit_offset` is the global
    /// layer of local layer 0.
    #[inline(always)]
    fn seed_cell(&self, unit_offset: u32) -> u32 {
        self.xy[0].wrapping_add(self.plane.wrapping_mul(self.z[0].wrapping_add(unit_offset)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::{D2Q9, D3Q19, D3Q27};

    /// Box shapes: odd, non-multiple-of-32 and multiple-of-32 widths, one
    /// layer, one cell along an axis (everything wraps onto itself).
    const SHAPES: [Dims; 7] = [
        Dims::new(5, 4, 3),
        Dims::new(33, 3, 2),
        Dims::new(32, 2, 3),
        Dims::new(64, 1, 2),
        Dims::new(7, 6, 1),
        Dims::new(1, 1, 1),
        Dims::new(3, 1, 4),
    ];

    /// The dense grid answers what the layout code answers.
    fn check_dense<L: Lattice<Q>, const Q: usize>(d: Dims) {
        assert_eq!(Grid::cells(&d), d.cells());
        for n in 0..d.cells() as u32 {
            let cell = d.cell_of(n);
            assert_eq!(cell, Cell::from_index(d, n));
            assert_eq!(d.index_of(cell), n);
            assert_eq!(d.position(cell), [cell.x, cell.y, cell.z]);
            let xy = cell.x + d.nx * cell.y;
            let nb = Grid::neighbours(&d, cell, &L::C);
            assert_eq!(nb, cell.neighbours(d, &L::C), "{} {d:?} cell {n}", L::NAME);
            for slot in 0..Q {
                let at = population_index(d.nx * d.ny, Q, xy, cell.z, slot);
                assert_eq!(d.population(Q, cell, slot), at);
                assert_eq!(Neighbourhood::population(&nb, 0, slot), at);
            }
            for j in 0..Q {
                let wrap = |p: u32, dp: i32, len: u32| (p as i64 + dp as i64).rem_euclid(len as i64) as u32;
                let [cx, cy, cz] = L::C[j];
                let (x, y, z) = (wrap(cell.x, cx, d.nx), wrap(cell.y, cy, d.ny), wrap(cell.z, cz, d.nz));
                assert_eq!(Neighbourhood::cell(&nb, j), d.index(x, y, z) as u32, "{} {d:?} cell {n} dir {j}", L::NAME);
                let there = d.cell_of(d.index(x, y, z) as u32);
                for slot in 0..Q {
                    assert_eq!(Neighbourhood::population(&nb, j, slot), d.population(Q, there, slot));
                }
            }
            assert_eq!(nb.seed_cell(0), n);
            assert_eq!(nb.seed_cell(2), n.wrapping_add(2 * d.nx * d.ny));
        }
    }

    #[test]
    fn dense_grid_agrees_with_the_layout() {
        for d in SHAPES {
            check_dense::<D2Q9, 9>(d);
            check_dense::<D3Q19, 19>(d);
            check_dense::<D3Q27, 27>(d);
        }
    }

    /// Every cell of a region is launched exactly once, in the units asked
    /// for, for both launch shapes and narrow boxes.
    #[test]
    fn dense_launch_covers_each_cell_of_a_region_once() {
        for d in SHAPES {
            for threads in [32, 64, 128] {
                for region in [0..d.units(), d.units() - 1..d.units(), 0..1] {
                    let shape = d.launch(region.len() as u32, threads);
                    assert!(shape.threads <= threads && shape.threads.is_multiple_of(32));
                    let mut seen = [0u32; 256];
                    for bz in 0..shape.blocks[2] {
                        for by in 0..shape.blocks[1] {
                            for bx in 0..shape.blocks[0] {
                                for thread in 0..shape.threads {
                                    let at = LaunchIndex {
                                        x: bx * shape.threads + thread,
                                        y: by,
                                        z: bz,
                                        block: bx,
                                        threads: shape.threads,
                                    };
                                    if let Some(cell) = d.launch_cell(region.start, at) {
                                        seen[d.index_of(cell) as usize] += 1;
                                        assert_eq!(cell, d.cell_of(cell.n));
                                    }
                                }
                            }
                        }
                    }
                    let cells = d.region_cells(region.clone());
                    for (n, &k) in seen[..d.cells()].iter().enumerate() {
                        assert_eq!(k, cells.contains(&n) as u32, "{d:?} threads {threads} region {region:?} cell {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn widths_follow_the_lattice() {
        assert_eq!(halo_width::<D3Q19, 19>(), 1);
        assert_eq!(halo_width::<D3Q27, 27>(), 1);
        assert_eq!(near_wall_radius::<D2Q9, 9>(), 1);
        assert_eq!(near_wall_radius::<D3Q27, 27>(), 1);
        const { assert!(D3Q27::MAX_SPEED <= <Dims as Grid>::MAX_OFFSET) };
    }
}
