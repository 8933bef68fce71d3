//! The block-sparse grid: the second implementation of [`Grid`] (see the
//! [`crate::grid`] module docs for the design). Cells come in blocks of
//! `Bx x By x Bz`: cubes of 4 or 8 cells on a side, or rows of 32 cells
//! along x and 4 along y and z (`Bz` is 1 in one-layer 2D boxes);
//! only blocks with a fluid or boundary cell, or a wall that is not a
//! resting one, are stored, and block number `blocks` is the *solid block*
//! that stands for every block not stored.
//!
//! The host builds the tables ([`SparseTables::new`]); kernels receive them
//! by value, with the table addresses in them, and never divide: a cell
//! keeps its block and local coordinates.
//!
//! The block shape is a [`Shifts`]: constants stamped into each kernel
//! ([`Fixed`]), or, on the host, values read at run time (`[u32; 3]`), so
//! that the CPU backend is compiled once for every shape.

use crate::grid::{Grid, LaunchIndex, LaunchShape, Neighbourhood};
use crate::readonly::ReadOnly;
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

/// Number of the cell at `p` in a box `nx` by `ny` cells across (wrapping):
/// the seed of a cell's stochastic rounding, which the sparse grid's
/// per-block seeds ([`SparseTables`]) split into the block's part and the
/// cell's place in it.
#[inline(always)]
pub const fn box_number(p: [u32; 3], nx: u32, ny: u32) -> u32 {
    p[0].wrapping_add(nx.wrapping_mul(p[1].wrapping_add(ny.wrapping_mul(p[2]))))
}

/// A block-sparse grid's sizes and the addresses of its tables: what a
/// kernel receives (by value, `#[repr(C)]`). The block edges are not in it:
/// they are the [`Sparse`] grid's [`Shifts`], constants in a kernel.
///
/// The tables live in the memory of whoever runs the per-cell functions
/// (device memory for a kernel, host memory on the CPU).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseTables {
    /// Stored blocks; block number `blocks` is the solid block.
    blocks: u32,
    /// The box the grid covers, in cells along x and y: cells are seeded
    /// for stochastic rounding by their number in that dense box, so a
    /// sparse grid rounds exactly as the dense one does.
    nx: u32,
    ny: u32,
    /// Per stored block, then the solid block, the seed of its local cell
    /// 0: that cell's number in the whole dense box, wrapping (a
    /// partition's blocks are placed in the whole box). A cell at `(x, y,
    /// z)` in its block adds `x + nx (y + ny z)`.
    seed: *const u32,
    /// [`NEIGHBOUR_ENTRIES`] storage numbers per stored block (see
    /// [`neighbour_entry`]; entry [`SELF_ENTRY`] is the block itself); the
    /// solid block's number where none is stored.
    neighbour: *const u32,
    /// Position of each stored block, in blocks along each axis.
    origin: *const [u32; 3],
    /// A bit per stored block, set on boundary blocks, for the `bitmask`
    /// boundary groups ([`crate::groups`]); null for every other variant.
    boundary: *const u32,
    /// `log2` of the most boundary blocks any word of `boundary` holds,
    /// rounded up: the kernel that updates open cells too gives each word
    /// that many ranks of thread blocks.
    rank_shift: u32,
}

// SAFETY: the tables are read-only for as long as a `SparseTables` refers
// to them (the contract of `SparseTables::new`), so sharing the addresses
// between threads is sharing immutable data.
unsafe impl Send for SparseTables {}
unsafe impl Sync for SparseTables {}

impl SparseTables {
    /// The tables of `blocks` stored blocks over a box `nx` cells by `ny`,
    /// at `neighbour`, `origin` and `seed`.
    ///
    /// # Safety
    /// `neighbour` must point to [`NEIGHBOUR_ENTRIES`]` * blocks` entries,
    /// each at most `blocks`, entry [`SELF_ENTRY`] of row `b` being `b`;
    /// `origin` to `blocks` positions and `seed` to `blocks + 1` seeds; all
    /// valid and unchanged while the tables (or a copy) are used.
    pub const unsafe fn new(
        blocks: u32,
        nx: u32,
        ny: u32,
        neighbour: *const u32,
        origin: *const [u32; 3],
        seed: *const u32,
    ) -> Self {
        Self { blocks, nx, ny, seed, neighbour, origin, boundary: core::ptr::null(), rank_shift: 0 }
    }

    /// These tables with the boundary-block bitmask at `mask`, whose words
    /// hold at most `2^rank_shift` set bits each: the bulk kernels then skip
    /// the blocks whose bit is set, and the kernel that updates open cells
    /// too runs those only ([`Grid::runs`], [`Grid::open_cell`]).
    ///
    /// # Safety
    /// `mask` must hold a bit per stored block (`blocks.div_ceil(32)`
    /// words), valid and unchanged while the tables (or a copy) are used.
    pub const unsafe fn with_boundary_mask(self, mask: *const u32, rank_shift: u32) -> Self {
        Self { boundary: mask, rank_shift, ..self }
    }

    /// The number of `cell` in the whole dense box: its block's seed plus
    /// its place in the block.
    #[inline(always)]
    fn seed_of(&self, cell: SparseCell) -> u32 {
        // SAFETY: a seed per block, the solid one included (`SparseTables::new`).
        // Kept where it is written, as the neighbour-block table's
        // (`Sparse::find`): Esoteric Pull draws the seed with the
        // neighbours, before the flag; two-lattice where the store needs it.
        let block_seed = unsafe { ReadOnly::load_early(self.seed.add(cell.b as usize)) };
        block_seed.wrapping_add(box_number([cell.x, cell.y, cell.z], self.nx, self.ny))
    }
}

/// The `log2` of a sparse grid's block edges along x, y and z: 2 to 5
/// along x, 2 or 3 along y, and along z as along y, or 0 for a one-layer
/// 2D box ([`valid_shifts`]).
pub trait Shifts: Copy + Send + Sync {
    /// The three shifts.
    fn shifts(self) -> [u32; 3];
}

/// Shifts fixed at compile time: a kernel indexes its blocks with constants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fixed<const SX: u32, const SY: u32, const SZ: u32>;

/// Whether `[sx, sy, sz]` is a block shape: 4 to 32 cells along x, 4 or 8
/// along y, and as deep along z as along y, or one layer in 2D.
pub const fn valid_shifts([sx, sy, sz]: [u32; 3]) -> bool {
    sx >= 2 && sx <= 5 && sy >= 2 && sy <= 3 && (sz == 0 || sz == sy)
}

impl<const SX: u32, const SY: u32, const SZ: u32> Fixed<SX, SY, SZ> {
    const VALID: () = assert!(valid_shifts([SX, SY, SZ]), "not a block shape (see `valid_shifts`)");
}

impl<const SX: u32, const SY: u32, const SZ: u32> Shifts for Fixed<SX, SY, SZ> {
    #[inline(always)]
    fn shifts(self) -> [u32; 3] {
        let () = Self::VALID;
        [SX, SY, SZ]
    }
}

/// Shifts read at run time (checked by whoever builds the grid): the host's
/// grid of every shape.
impl Shifts for [u32; 3] {
    #[inline(always)]
    fn shifts(self) -> [u32; 3] {
        self
    }
}

/// A block-sparse grid of blocks `2^sx` cells along x, `2^sy` along y and
/// `2^sz` along z (its [`Shifts`]). Within a block, cells are numbered x
/// fastest, so a warp's 32 threads run along a row of a 32-cell block, or
/// over rows of a cube.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sparse<S: Shifts> {
    tables: SparseTables,
    shifts: S,
}

impl<const SX: u32, const SY: u32, const SZ: u32> Sparse<Fixed<SX, SY, SZ>> {
    /// `log2` of the cells per block.
    pub const BLOCK_SHIFT: u32 = SX + SY + SZ;

    /// The grid over `tables` (whose cell count, `(blocks + 1)` blocks,
    /// must not exceed [`crate::layout::MAX_CELLS`]).
    #[inline(always)]
    pub const fn new(tables: SparseTables) -> Self {
        Self { tables, shifts: Fixed }
    }
}

impl Sparse<[u32; 3]> {
    /// The grid over `tables` (whose cell count, `(blocks + 1)` blocks,
    /// must not exceed [`crate::layout::MAX_CELLS`]) with blocks of the shifts `shifts`,
    /// which must be a block shape ([`valid_shifts`]).
    pub fn with_shifts(tables: SparseTables, shifts: [u32; 3]) -> Self {
        assert!(valid_shifts(shifts), "no block shape {shifts:?}");
        Self { tables, shifts }
    }
}

impl<S: Shifts> Sparse<S> {
    /// Block edges along x, y and z.
    #[inline(always)]
    pub fn edges(&self) -> [u32; 3] {
        self.shifts.shifts().map(|s| 1 << s)
    }

    /// `log2` of the cells per block.
    #[inline(always)]
    pub fn block_shift(&self) -> u32 {
        let [sx, sy, sz] = self.shifts.shifts();
        sx + sy + sz
    }

    /// Cells per block.
    #[inline(always)]
    pub fn block_cells(&self) -> u32 {
        1 << self.block_shift()
    }

    /// The cell of block `b` at `position` in the box (the block's own:
    /// the local coordinates are the position modulo the block edges).
    #[inline(always)]
    pub fn cell_at(&self, b: u32, position: [u32; 3]) -> SparseCell {
        let [ex, ey, ez] = self.edges();
        let [x, y, z] = [position[0] & (ex - 1), position[1] & (ey - 1), position[2] & (ez - 1)];
        SparseCell { b, x, y, z }
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
/// and place in it (local number `x + Bx (y + By z)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseNeighbours<const Q: usize, S: Shifts> {
    block: [u32; Q],
    local: [u32; Q],
    /// Number of the cell itself in the dense box the grid covers, drawn up
    /// front with the odd neighbours only (see `seed_cell`).
    seed: u32,
    /// Whether only the cell and its odd neighbours were found up front;
    /// the others are then found when asked for, from the cell, its
    /// block's table row and the velocities. Always false since Esoteric
    /// Pull has [`SparseOddNeighbours`], yet kept with `seed`, `row` and `c`:
    /// without them ptxas 13.0 allocates the two-lattice kernels worse
    /// (16-bit D3Q27 BGK 72 -> 78 registers, f32 D3Q19 56 -> 60, the
    /// boundary-group kernels up to 28 more), as a const flag did, which
    /// measured 5-7% slower (`docs/bench/h200-2026-11-30-sparse-ep-numbers.txt`).
    odd_only: bool,
    cell: SparseCell,
    row: *const u32,
    c: [[i32; 3]; Q],
    grid: Sparse<S>,
}

/// Whether neighbour `j` is one [`Grid::odd_neighbours`] leaves to be found
/// when asked for: the even ones but the cell itself.
#[inline(always)]
const fn is_even_neighbour(j: usize) -> bool {
    j != 0 && j & 1 == 0
}

impl<const Q: usize, S: Shifts> SparseNeighbours<Q, S> {
    /// Block and local number of neighbour `j`.
    #[inline(always)]
    fn of(&self, j: usize) -> (u32, u32) {
        if self.odd_only && is_even_neighbour(j) {
            // SAFETY: `row` is the cell's block's row of the tables the
            // neighbours were found with.
            unsafe { self.grid.find(self.row, self.cell, self.c[j]) }
        } else {
            (self.block[j], self.local[j])
        }
    }
}

impl<const Q: usize, S: Shifts> Neighbourhood<Q> for SparseNeighbours<Q, S> {
    const FOUND_WHEN_ASKED: bool = true;

    #[inline(always)]
    fn cell(&self, j: usize) -> u32 {
        let (block, local) = self.of(j);
        (block << self.grid.block_shift()) | local
    }

    /// Block `m`'s `Q` planes of `V` values are one run: `m Q V + slot V + l`.
    #[inline(always)]
    fn population(&self, j: usize, slot: usize) -> usize {
        let shift = self.grid.block_shift();
        let (block, local) = self.of(j);
        ((block as usize * Q) << shift) + (((slot as u32) << shift) | local) as usize
    }

    /// The cell's number in the whole dense box, worked out from its
    /// block's seed (which places a partition's grid in the box), so
    /// `unit_offset` plays no part. With every neighbour found up front
    /// (two-lattice) it is drawn here, where the store asks for it: the
    /// 16-bit D3Q27 kernels take 72-79 registers instead of 86-88, and BGK
    /// runs 4.9% faster in the periodic box, though D3Q19 runs 0.7-2.7%
    /// slower (`docs/bench/h200-2026-11-29-no-zero-late-seed.txt`). Esoteric
    /// Pull draws it with its odd neighbours: drawn late it measured 5.2%
    /// slower in 16-bit D3Q19 (`docs/bench/h200-2026-11-29-sparse-late-seed.txt`).
    #[inline(always)]
    fn seed_cell(&self, _unit_offset: u32) -> u32 {
        if self.odd_only {
            self.seed
        } else {
            self.grid.tables.seed_of(self.cell)
        }
    }
}

/// Esoteric Pull's neighbours of a cell of a [`Sparse`] grid
/// ([`Grid::odd_neighbours`]): the cell and its odd neighbours found up
/// front, the others when asked for. A type of its own, so that
/// two-lattice's [`SparseNeighbours`] compile as before (with one type and
/// a const flag, its 16-bit D3Q27 BGK kernels took 78 registers, not 72,
/// and ran 5-7% slower, `docs/bench/h200-2026-11-30-sparse-ep-numbers.txt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseOddNeighbours<const Q: usize, S: Shifts> {
    /// Each odd neighbour's cell number `(block << shift) | local`: one
    /// register a neighbour kept through the collision for the stores
    /// instead of two (16-bit D3Q19 BGK then takes 64 registers on 32x4
    /// rows, not 72, the D3Q27 operators 80 or 88, not 96).
    number: [u32; Q],
    seed: u32,
    cell: SparseCell,
    row: *const u32,
    c: [[i32; 3]; Q],
    grid: Sparse<S>,
}

impl<const Q: usize, S: Shifts> Neighbourhood<Q> for SparseOddNeighbours<Q, S> {
    const FOUND_WHEN_ASKED: bool = true;
    const FORMS_ADDRESSES: bool = true;

    #[inline(always)]
    fn cell(&self, j: usize) -> u32 {
        if is_even_neighbour(j) {
            // SAFETY: `row` is the cell's block's row.
            let (block, local) = unsafe { self.grid.find(self.row, self.cell, self.c[j]) };
            (block << self.grid.block_shift()) | local
        } else {
            self.number[j]
        }
    }

    /// `m Q V + slot V + l` from the number `n = m V + l`, as
    /// `(n - l)(Q - 1) + n + slot V`: with the slot a constant (a path per
    /// parity, `stream_collide_esoteric`) a neighbour's load and store are
    /// one address and two immediate offsets.
    #[inline(always)]
    fn population(&self, j: usize, slot: usize) -> usize {
        let shift = self.grid.block_shift();
        let n = self.cell(j);
        ((n >> shift << shift) as usize * (Q - 1)) + (n as usize + (slot << shift))
    }

    /// The address of slot 0, then the slot: the compiler otherwise adds
    /// the slot before the block and cannot fold it into the load, which
    /// then costs two more instructions per odd neighbour.
    #[inline(always)]
    unsafe fn population_at<T>(&self, f: *const T, j: usize, slot: usize) -> *const T {
        // SAFETY: within the caller's buffer, which holds every population of the grid.
        unsafe { crate::fetch::address_barrier(f.add(self.population(j, 0))).add(slot << self.grid.block_shift()) }
    }

    #[inline(always)]
    fn seed_cell(&self, _unit_offset: u32) -> u32 {
        self.seed
    }
}

impl<S: Shifts> Grid for Sparse<S> {
    /// Blocks are at least 4 cells along x and y; a 2D grid has no z offsets.
    const MAX_OFFSET: u32 = 4;
    type Cell = SparseCell;
    type Neighbours<const Q: usize> = SparseNeighbours<Q, S>;
    type OddNeighbours<const Q: usize> = SparseOddNeighbours<Q, S>;
    const WALKS_BOUNDARY_BLOCKS: bool = true;

    #[inline(always)]
    fn cells(&self) -> usize {
        ((self.tables.blocks as usize) + 1) << self.block_shift()
    }

    #[inline(always)]
    fn index_of(&self, cell: SparseCell) -> u32 {
        (cell.b << self.block_shift()) | self.local(cell)
    }

    #[inline(always)]
    fn cell_of(&self, n: u32) -> SparseCell {
        let [sx, sy, _] = self.shifts.shifts();
        let [ex, ey, ez] = self.edges();
        SparseCell {
            b: n >> self.block_shift(),
            x: n & (ex - 1),
            y: (n >> sx) & (ey - 1),
            z: (n >> (sx + sy)) & (ez - 1),
        }
    }

    #[inline(always)]
    fn position(&self, cell: SparseCell) -> [u32; 3] {
        // SAFETY: `origin` holds a position per stored block
        // (`SparseTables::new`); the solid block has none and sits at the origin.
        let o = if cell.b < self.tables.blocks {
            unsafe { ReadOnly::load(self.tables.origin.add(cell.b as usize)) }
        } else {
            [0; 3]
        };
        let [sx, sy, sz] = self.shifts.shifts();
        [(o[0] << sx) + cell.x, (o[1] << sy) + cell.y, (o[2] << sz) + cell.z]
    }

    #[inline(always)]
    fn population(&self, q: usize, cell: SparseCell, slot: usize) -> usize {
        let (local, shift) = (self.local(cell), self.block_shift());
        ((cell.b as usize * q) << shift) + (((slot as u32) << shift) | local) as usize
    }

    /// Per axis the offset position `p = l + c` leaves the block when
    /// `p < 0` or `p >= B` (the block's edge along that axis); the block
    /// across is one table entry, the place in it `p mod B` (`Sparse::find`).
    #[inline(always)]
    fn neighbours<const Q: usize>(&self, cell: SparseCell, c: &[[i32; 3]; Q]) -> Self::Neighbours<Q> {
        self.found_neighbours(cell, c, false)
    }

    /// The even neighbours are found when asked for: only cells near walls
    /// ask, for their flags, so their table entries are loaded on that path
    /// alone.
    #[inline(always)]
    fn odd_neighbours<const Q: usize>(&self, cell: SparseCell, c: &[[i32; 3]; Q]) -> Self::OddNeighbours<Q> {
        // SAFETY: every stored block has its row of entries (`SparseTables::new`).
        let row = unsafe { self.tables.neighbour.add(cell.b as usize * NEIGHBOUR_ENTRIES) };
        let seed = self.tables.seed_of(cell);
        let mut nb = SparseOddNeighbours { number: [0; Q], seed, cell, row, c: *c, grid: *self };
        for j in 0..Q {
            if !is_even_neighbour(j) {
                // SAFETY: as above.
                let (block, local) = unsafe { self.find(row, cell, c[j]) };
                nb.number[j] = (block << self.block_shift()) | local;
            }
        }
        nb
    }

    #[inline(always)]
    fn units(&self) -> u32 {
        self.tables.blocks
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

    /// With a boundary-block bitmask, the bulk kernel runs the blocks
    /// without an open cell and the other kernel the rest.
    #[inline(always)]
    fn runs(&self, cell: SparseCell, heavy: bool) -> bool {
        self.tables.boundary.is_null() || self.is_boundary_block(cell.b) == heavy
    }

    /// With a bitmask, thread blocks by mask word, rank and part of a grid
    /// block: for each word of 32 grid blocks that meets `units`,
    /// `2^rank_shift` ranks, the one of rank `r` updating the word's
    /// `r`-th boundary block, in parts of `threads` cells (rounded down to a
    /// power of two). A thread block per grid block spent most of its time
    /// starting thread blocks that only read their bit; this launches a few
    /// per word, yet gives every boundary block thread blocks of its own,
    /// however they cluster.
    fn launch_open(&self, units: Range<u32>, threads: u32) -> LaunchShape {
        if self.tables.boundary.is_null() || units.is_empty() {
            return self.launch(units.len() as u32, threads);
        }
        // A power of two, so that `open_cell` splits a block by shifts.
        let threads = 1 << threads.clamp(1, self.block_cells()).ilog2();
        let words = (units.end - 1) / 32 - units.start / 32 + 1;
        LaunchShape { blocks: [(words << self.tables.rank_shift) * (self.block_cells() / threads), 1, 1], threads }
    }

    /// The cell of [`Grid::launch_open`]'s thread `at`: the word, the rank
    /// and the part from the thread block, the rank's boundary block from
    /// the word's bits.
    #[inline(always)]
    fn open_cell(&self, units: Range<u32>, at: LaunchIndex) -> Option<SparseCell> {
        if self.tables.boundary.is_null() {
            return self.launch_cell(units.start, at);
        }
        let thread_shift = at.threads.trailing_zeros();
        let part_shift = self.block_shift() - thread_shift;
        let part = at.block & ((1 << part_shift) - 1);
        let rank = (at.block >> part_shift) & ((1 << self.tables.rank_shift) - 1);
        let word = units.start / 32 + (at.block >> (part_shift + self.tables.rank_shift));
        // SAFETY: a mask holds a bit per stored block (`with_boundary_mask`),
        // and the launch covers words of stored blocks only.
        let mut bits = unsafe { u32::load(self.tables.boundary.add(word as usize)) };
        for _ in 0..rank {
            bits &= bits.wrapping_sub(1);
        }
        let b = word * 32 + bits.trailing_zeros();
        let local = (part << thread_shift) | (at.x & (at.threads - 1));
        (bits != 0 && units.contains(&b)).then(|| self.cell_of((b << self.block_shift()) | local))
    }
}

impl<S: Shifts> Sparse<S> {
    /// The neighbours of `cell` for the velocities `c`, the even ones left
    /// to be found when asked for if `odd_only`.
    #[inline(always)]
    fn found_neighbours<const Q: usize>(
        &self,
        cell: SparseCell,
        c: &[[i32; 3]; Q],
        odd_only: bool,
    ) -> SparseNeighbours<Q, S> {
        // SAFETY: every stored block has its row of entries (`SparseTables::new`).
        let row = unsafe { self.tables.neighbour.add(cell.b as usize * NEIGHBOUR_ENTRIES) };
        let seed = if odd_only { self.tables.seed_of(cell) } else { 0 };
        let mut nb = SparseNeighbours { block: [0; Q], local: [0; Q], seed, odd_only, cell, row, c: *c, grid: *self };
        for j in 0..Q {
            if !(odd_only && is_even_neighbour(j)) {
                // SAFETY: as above.
                (nb.block[j], nb.local[j]) = unsafe { self.find(row, cell, c[j]) };
            }
        }
        nb
    }

    /// The block and local number of the neighbour `x + c` of `cell`, whose
    /// block's row of the neighbour-block table is `row`. Only a cell on a
    /// block face loads an entry along an axis; the local number is the
    /// cell's own plus a constant, corrected by a block edge on the axes
    /// crossed.
    ///
    /// # Safety
    /// `row` must point to the [`NEIGHBOUR_ENTRIES`] entries of `cell`'s block.
    #[inline(always)]
    unsafe fn find(&self, row: *const u32, cell: SparseCell, c: [i32; 3]) -> (u32, u32) {
        let [sx, sy, _] = self.shifts.shifts();
        let [ex, ey, ez] = self.edges().map(|e| e as i32);
        let step = |p: i32, len: i32| (p >= len) as i32 - (p < 0) as i32;
        let [cx, cy, cz] = c;
        let (ox, oy, oz) = (step(cell.x as i32 + cx, ex), step(cell.y as i32 + cy, ey), step(cell.z as i32 + cz, ez));
        let k = neighbour_entry(ox, oy, oz);
        // A direction along two or three axes loads its entry whether or
        // not it leaves the block (the row's own entry is the block):
        // cheaper than choosing, and the warp reads one row.
        let diagonal = (cx != 0) as u32 + (cy != 0) as u32 + (cz != 0) as u32 > 1;
        let block = if !diagonal && k == SELF_ENTRY {
            cell.b
        } else {
            // SAFETY: the caller's `row`. Early: the step kernels find
            // the neighbours before they read the cell's flag.
            unsafe { ReadOnly::load_early(row.add(k)) }
        };
        let shift = (cx - ex * ox) + ((cy - ey * oy) << sx) + ((cz - ez * oz) << (sx + sy));
        (block, self.local(cell).wrapping_add(shift as u32))
    }

    /// Local number of `cell` in its block: `x + Bx (y + By z)`.
    #[inline(always)]
    fn local(&self, cell: SparseCell) -> u32 {
        let [sx, sy, _] = self.shifts.shifts();
        cell.x | (cell.y << sx) | (cell.z << (sx + sy))
    }

    /// Whether stored block `b` holds an open cell, by the bitmask (which
    /// must not be null).
    #[inline(always)]
    fn is_boundary_block(&self, b: u32) -> bool {
        // SAFETY: a mask holds a bit per stored block (`with_boundary_mask`),
        // and launches cover stored blocks only.
        (unsafe { u32::load(self.tables.boundary.add((b >> 5) as usize)) } >> (b & 31)) & 1 == 1
    }
}
