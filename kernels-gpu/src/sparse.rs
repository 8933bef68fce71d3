//! The block-sparse grid: the second implementation of [`Grid`] (see the
//! [`crate::grid`] module docs for the design). Cells come in blocks of
//! `B x B x Bz` (`B` = 4 or 8; `Bz = B` in 3D, 1 for one-layer 2D boxes);
//! only blocks with a fluid or boundary cell, or a wall that is not a
//! resting one, are stored, and block number `blocks` is the *solid block*
//! that stands for every block not stored.
//!
//! The host builds the tables ([`Sparse::new`]); kernels receive the grid by
//! value, with the table addresses in it, and never divide: a cell keeps its
//! block and local coordinates.

use crate::grid::{Grid, LaunchIndex, LaunchShape, Neighbourhood};
use core::ops::Range;

/// Entries per block in the neighbour-block table: offsets `{-1, 0, 1}^3`.
pub const NEIGHBOUR_ENTRIES: usize = 27;

/// Entry of the block itself in its neighbour-block table row.
pub const SELF_ENTRY: usize = 13;

/// Entry of the block at offset `(dx, dy, dz)` (each in `-1 ..= 1`).
#[inline(always)]
pub const fn neighbour_entry(dx: i32, dy: i32, dz: i32) -> usize {
    (SELF_ENTRY as i32 + dx + 3 * dy + 9 * dz) as usize
}

/// A value of the tables, loaded through the GPU's read-only data cache
/// (`ld.global.nc`): many threads of a block read the same entries, and no
/// kernel writes them.
trait TableValue: Copy {
    /// `*at`.
    ///
    /// # Safety
    /// `at` must be valid for reads.
    unsafe fn load(at: *const Self) -> Self;
}

impl TableValue for u32 {
    #[inline(always)]
    unsafe fn load(at: *const u32) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let v: u32;
            // SAFETY: the caller guarantees `at` is valid for reads.
            unsafe {
                core::arch::asm!(
                    "ld.global.nc.u32 {v}, [{a}];",
                    v = out(reg32) v,
                    a = in(reg64) at,
                    options(pure, readonly, nostack, preserves_flags),
                );
            }
            v
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            // SAFETY: as above.
            unsafe { *at }
        }
    }
}

impl TableValue for [u32; 3] {
    #[inline(always)]
    unsafe fn load(at: *const [u32; 3]) -> [u32; 3] {
        let p = at as *const u32;
        // SAFETY: the caller guarantees the three values are valid for reads.
        unsafe { [u32::load(p), u32::load(p.add(1)), u32::load(p.add(2))] }
    }
}

/// A block-sparse grid: sizes and the addresses of its two tables.
///
/// Passed to kernels by value (`#[repr(C)]`); the tables live in the memory
/// of whoever runs the per-cell functions (device memory for a kernel, host
/// memory on the CPU).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sparse {
    /// `log2 B`: the block edge along x and y.
    shift: u32,
    /// `log2 Bz`: the block edge along z (`shift`, or 0 for 2D).
    shift_z: u32,
    /// Stored blocks; block number `blocks` is the solid block.
    blocks: u32,
    /// The box the grid covers, in cells along x and y: cells are seeded
    /// for stochastic rounding by their number in that dense box, so a
    /// sparse grid rounds exactly as the dense one does.
    nx: u32,
    ny: u32,
    /// Zero: no implicit padding before the addresses.
    reserved: u32,
    /// [`NEIGHBOUR_ENTRIES`] storage numbers per stored block (see
    /// [`neighbour_entry`]); the solid block's number where none is stored.
    neighbour: *const u32,
    /// Position of each stored block, in blocks along each axis.
    origin: *const [u32; 3],
}

// SAFETY: the tables are read-only for as long as a `Sparse` refers to them
// (the contract of `Sparse::new`), so sharing the addresses between threads
// is sharing immutable data.
unsafe impl Send for Sparse {}
unsafe impl Sync for Sparse {}

impl Sparse {
    /// Most cells one grid may number: cell numbers are 32-bit (population
    /// indices are not).
    pub const MAX_CELLS: usize = u32::MAX as usize;

    /// A grid of `blocks` stored blocks of edge `1 << shift` (`1 << shift_z`
    /// along z) over a box `nx` cells by `ny`, with its tables at
    /// `neighbour` and `origin`.
    ///
    /// # Safety
    /// `neighbour` must point to [`NEIGHBOUR_ENTRIES`]` * blocks` entries,
    /// each at most `blocks`, and `origin` to `blocks` positions, both valid
    /// and unchanged while the grid (or a copy) is used; `shift` must be 2 or
    /// 3 and `shift_z` 0 or `shift`; `(blocks + 1) << (2 shift + shift_z)`
    /// must not exceed [`Sparse::MAX_CELLS`].
    pub const unsafe fn new(
        shift: u32,
        shift_z: u32,
        blocks: u32,
        nx: u32,
        ny: u32,
        neighbour: *const u32,
        origin: *const [u32; 3],
    ) -> Self {
        Self { shift, shift_z, blocks, nx, ny, reserved: 0, neighbour, origin }
    }

    /// The block edge along x and y.
    pub const fn edge(&self) -> u32 {
        1 << self.shift
    }

    /// The block edge along z.
    pub const fn edge_z(&self) -> u32 {
        1 << self.shift_z
    }

    /// Stored blocks (the solid block not counted).
    pub const fn blocks(&self) -> u32 {
        self.blocks
    }

    /// `log2` of the cells per block.
    #[inline(always)]
    const fn block_shift(&self) -> u32 {
        2 * self.shift + self.shift_z
    }

    /// Cells per block.
    pub const fn block_cells(&self) -> u32 {
        1 << self.block_shift()
    }
}

/// A cell of a [`Sparse`] grid: its block and its place in the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseCell {
    /// Storage number of the block.
    pub b: u32,
    /// Local coordinates in the block.
    pub x: u32,
    /// See `x`.
    pub y: u32,
    /// See `x`.
    pub z: u32,
}

/// The neighbours `x + c_j` of a cell of a [`Sparse`] grid: each one's block
/// and place in it (local number `x + B (y + B z)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseNeighbours<const Q: usize> {
    block_shift: u32,
    block: [u32; Q],
    local: [u32; Q],
    /// Number of the cell itself in the dense box the grid covers.
    seed: u32,
}

impl<const Q: usize> Neighbourhood<Q> for SparseNeighbours<Q> {
    #[inline(always)]
    fn cell(&self, j: usize) -> u32 {
        (self.block[j] << self.block_shift) | self.local[j]
    }

    /// Block `m`'s `Q` planes of `V` values are one run: `m Q V + slot V + l`.
    #[inline(always)]
    fn population(&self, j: usize, slot: usize) -> usize {
        ((self.block[j] as usize * Q) << self.block_shift)
            + (((slot as u32) << self.block_shift) | self.local[j]) as usize
    }

    /// The cell's number in the dense box: positions are global, so
    /// `unit_offset` plays no part (a partition keeps global origins).
    #[inline(always)]
    fn seed_cell(&self, _unit_offset: u32) -> u32 {
        self.seed
    }
}

impl Grid for Sparse {
    /// Blocks are at least 4 cells along x and y; a 2D grid has no z offsets.
    const MAX_OFFSET: u32 = 4;
    type Cell = SparseCell;
    type Neighbours<const Q: usize> = SparseNeighbours<Q>;

    #[inline(always)]
    fn cells(&self) -> usize {
        ((self.blocks as usize) + 1) << self.block_shift()
    }

    #[inline(always)]
    fn index_of(&self, cell: SparseCell) -> u32 {
        (cell.b << self.block_shift()) | cell.x | (cell.y << self.shift) | (cell.z << (2 * self.shift))
    }

    #[inline(always)]
    fn cell_of(&self, n: u32) -> SparseCell {
        let mask = self.edge() - 1;
        SparseCell {
            b: n >> self.block_shift(),
            x: n & mask,
            y: (n >> self.shift) & mask,
            z: (n >> (2 * self.shift)) & (self.edge_z() - 1),
        }
    }

    #[inline(always)]
    fn position(&self, cell: SparseCell) -> [u32; 3] {
        // SAFETY: `origin` holds a position per stored block (`Sparse::new`);
        // the solid block has none and sits at the origin.
        let o =
            if cell.b < self.blocks { unsafe { TableValue::load(self.origin.add(cell.b as usize)) } } else { [0; 3] };
        [(o[0] << self.shift) + cell.x, (o[1] << self.shift) + cell.y, (o[2] << self.shift_z) + cell.z]
    }

    #[inline(always)]
    fn population(&self, q: usize, cell: SparseCell, slot: usize) -> usize {
        let local = self.index_of(cell) & (self.block_cells() - 1);
        ((cell.b as usize * q) << self.block_shift()) + (((slot as u32) << self.block_shift()) | local) as usize
    }

    /// Per axis the offset position `p = l + c` leaves the block when
    /// `p < 0` or `p >= B`; the block across is one table entry, the place
    /// in it `p mod B`. Only cells on a block face load an entry.
    #[inline(always)]
    fn neighbours<const Q: usize>(&self, cell: SparseCell, c: &[[i32; 3]; Q]) -> SparseNeighbours<Q> {
        let (edge, edge_z) = (self.edge() as i32, self.edge_z() as i32);
        let (mask, mask_z) = (edge - 1, edge_z - 1);
        let step = |p: i32, len: i32| (p >= len) as i32 - (p < 0) as i32;
        let row = cell.b as usize * NEIGHBOUR_ENTRIES;
        let mut nb = SparseNeighbours { block_shift: self.block_shift(), block: [0; Q], local: [0; Q], seed: 0 };
        for j in 0..Q {
            let [cx, cy, cz] = c[j];
            let (px, py, pz) = (cell.x as i32 + cx, cell.y as i32 + cy, cell.z as i32 + cz);
            let k = neighbour_entry(step(px, edge), step(py, edge), step(pz, edge_z));
            // SAFETY: every stored block has its row of entries (`Sparse::new`).
            nb.block[j] =
                if k == SELF_ENTRY { cell.b } else { unsafe { TableValue::load(self.neighbour.add(row + k)) } };
            nb.local[j] = (px & mask) as u32
                | (((py & mask) as u32) << self.shift)
                | (((pz & mask_z) as u32) << (2 * self.shift));
        }
        let [x, y, z] = self.position(cell);
        nb.seed = x.wrapping_add(self.nx.wrapping_mul(y.wrapping_add(self.ny.wrapping_mul(z))));
        nb
    }

    #[inline(always)]
    fn units(&self) -> u32 {
        self.blocks
    }

    #[inline(always)]
    fn region_cells(&self, region: Range<u32>) -> Range<usize> {
        (region.start as usize) << self.block_shift()..(region.end as usize) << self.block_shift()
    }

    /// One-dimensional: `units V / threads` blocks of `threads` threads,
    /// with `threads` at most `V` (both powers of two, so a CUDA block never
    /// straddles the region's end).
    fn launch(&self, units: u32, threads: u32) -> LaunchShape {
        let threads = threads.min(self.block_cells());
        LaunchShape { blocks: [(units << self.block_shift()) / threads, 1, 1], threads }
    }

    #[inline(always)]
    fn launch_cell(&self, first: u32, at: LaunchIndex) -> Option<SparseCell> {
        Some(self.cell_of((first << self.block_shift()) + at.x))
    }
}
