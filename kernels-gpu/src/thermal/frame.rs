//! The framed box: the grid of the thermal model. A 2D lattice of `nx * ny`
//! sites with a frame of [`HALO`] halo cells around it, as Calore et al.
//! (2016) lay it out:
//!
//! - **Columns are contiguous** (`y` fastest): site `(x, y)` is stored at
//!   `X S + Y` with `X = x + HALO`, `Y = y + PAD`, in one plane of
//!   `(nx + 2 HALO) S` values per population. A halo of three columns is
//!   then three contiguous runs of `S` values per population, what a tiling
//!   along x exchanges with no packing.
//! - **Rows are padded**: `S = PAD + ny' + PAD` with `ny'` rounded up to
//!   `PAD`, so every column starts 32-byte aligned and a warp's writes along
//!   y fill whole sectors. The pad holds the rows' halo (`HALO <= PAD`).
//!
//! Halo cells are filled before a step (periodic copies, or a neighbour's
//! columns); populations are pulled from up to three cells away, so no
//! update reads outside the frame. Work is launched over *units*, the
//! interior columns `0 .. nx`, within a window of rows ([`Frame::rows`]):
//! the bulk and the rows next to the walls run as separate launches.

use crate::grid::{Grid, LaunchIndex, LaunchShape, Neighbourhood};
use core::ops::Range;

/// Halo width: the farthest a population travels along an axis.
pub const HALO: u32 = 3;

/// Rows of padding before and after a column's sites (holds the row halo).
pub const PAD: u32 = 8;

/// A framed 2D box, with the window of rows a launch covers; kernels take
/// it by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Frame {
    /// Sites along x.
    pub nx: u32,
    /// Sites along y.
    pub ny: u32,
    /// Stored rows per column, `S` (padding included).
    pub stride: u32,
    /// First row of the launch window.
    pub row_start: u32,
    /// One past the window's last row.
    pub row_end: u32,
    /// One past the window's last column (interior numbering).
    pub column_end: u32,
}

impl Frame {
    /// The box of `nx * ny` sites, every row in the window.
    pub const fn new(nx: u32, ny: u32) -> Self {
        let stride = PAD + ny.div_ceil(PAD) * PAD + PAD;
        Self { nx, ny, stride, row_start: 0, row_end: ny, column_end: nx }
    }

    /// This box with the launch window `rows`, every column.
    pub const fn rows(self, rows: Range<u32>) -> Self {
        self.window(0..self.nx, rows)
    }

    /// This box with the launch window `columns` x `rows` (a launch over
    /// it starts at `columns.start`).
    pub const fn window(self, columns: Range<u32>, rows: Range<u32>) -> Self {
        Self { row_start: rows.start, row_end: rows.end, column_end: columns.end, ..self }
    }

    /// `log2` of the threads a column takes in a launch of `threads` per
    /// block, when the window's rows are so few that a block holds several
    /// columns (a power of two at least the rows); `None` when each column
    /// gets blocks of its own.
    #[inline(always)]
    const fn packed_column_shift(&self, threads: u32) -> Option<u32> {
        let rows = self.row_end - self.row_start;
        let shift = rows.next_power_of_two().trailing_zeros();
        if (1 << shift) < threads {
            Some(shift)
        } else {
            None
        }
    }

    /// Stored columns, the halo ones included.
    #[inline(always)]
    pub const fn columns(&self) -> u32 {
        self.nx + 2 * HALO
    }

    /// Values per population plane: every stored cell.
    #[inline(always)]
    pub const fn plane(&self) -> usize {
        self.columns() as usize * self.stride as usize
    }

    /// The cell of site `(x, y)`; halo cells have `x` or `y` in `-HALO ..
    /// 0` or past the box.
    #[inline(always)]
    pub const fn site(&self, x: i32, y: i32) -> FrameCell {
        FrameCell { column: (x + HALO as i32) as u32, row: (y + PAD as i32) as u32 }
    }

    /// Number of a stored cell.
    #[inline(always)]
    pub const fn index(&self, cell: FrameCell) -> usize {
        cell.column as usize * self.stride as usize + cell.row as usize
    }

    /// Index of population `i` of `cell` in a buffer.
    #[inline(always)]
    pub const fn population_index(&self, i: usize, cell: FrameCell) -> usize {
        i * self.plane() + self.index(cell)
    }
}

/// A stored cell: its column and row in storage (`x + HALO`, `y + PAD`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameCell {
    /// Stored column.
    pub column: u32,
    /// Stored row.
    pub row: u32,
}

/// A cell's neighbours `x + c_j` in a framed box: their offsets in storage.
#[derive(Clone, Copy, Debug)]
pub struct FrameNeighbours<const Q: usize> {
    n: u32,
    plane: usize,
    offset: [i32; Q],
}

impl<const Q: usize> Neighbourhood<Q> for FrameNeighbours<Q> {
    #[inline(always)]
    fn cell(&self, j: usize) -> u32 {
        self.n.wrapping_add(self.offset[j] as u32)
    }

    #[inline(always)]
    fn population(&self, j: usize, slot: usize) -> usize {
        slot * self.plane + self.cell(j) as usize
    }

    /// The thermal model rounds nothing stochastically; the cell's own number.
    #[inline(always)]
    fn seed_cell(&self, _unit_offset: u32) -> u32 {
        self.n
    }
}

impl Grid for Frame {
    const MAX_OFFSET: u32 = HALO;
    type Cell = FrameCell;
    type Neighbours<const Q: usize> = FrameNeighbours<Q>;
    type OddNeighbours<const Q: usize> = FrameNeighbours<Q>;

    #[inline(always)]
    fn cells(&self) -> usize {
        self.plane()
    }

    #[inline(always)]
    fn index_of(&self, cell: FrameCell) -> u32 {
        self.index(cell) as u32
    }

    fn cell_of(&self, n: u32) -> FrameCell {
        FrameCell { column: n / self.stride, row: n % self.stride }
    }

    /// Site coordinates (a halo cell's wrap below zero).
    #[inline(always)]
    fn position(&self, cell: FrameCell) -> [u32; 3] {
        [cell.column.wrapping_sub(HALO), cell.row.wrapping_sub(PAD), 0]
    }

    #[inline(always)]
    fn population(&self, _q: usize, cell: FrameCell, slot: usize) -> usize {
        self.population_index(slot, cell)
    }

    #[inline(always)]
    fn neighbours<const Q: usize>(&self, cell: FrameCell, c: &[[i32; 3]; Q]) -> FrameNeighbours<Q> {
        let mut offset = [0; Q];
        for j in 0..Q {
            offset[j] = c[j][0] * self.stride as i32 + c[j][1];
        }
        FrameNeighbours { n: self.index_of(cell), plane: self.plane(), offset }
    }

    /// All of them: each is arithmetic.
    #[inline(always)]
    fn odd_neighbours<const Q: usize>(&self, cell: FrameCell, c: &[[i32; 3]; Q]) -> FrameNeighbours<Q> {
        self.neighbours(cell, c)
    }

    /// Interior columns.
    #[inline(always)]
    fn units(&self) -> u32 {
        self.nx
    }

    /// The stored cells of the columns `region` (all their rows).
    fn region_cells(&self, region: Range<u32>) -> Range<usize> {
        let s = self.stride as usize;
        (region.start + HALO) as usize * s..(region.end + HALO) as usize * s
    }

    /// Blocks of `threads` rows along x, one column each along y; for a
    /// window of few rows (a tile's band next to a row halo or a wall),
    /// blocks of several whole columns along y, so that threads are not
    /// left idle by the hundred.
    fn launch(&self, units: u32, threads: u32) -> LaunchShape {
        let rows = self.row_end - self.row_start;
        // A power of two, so that `launch_cell` splits a block by shifts.
        let packed = 1 << threads.max(1).ilog2();
        match self.packed_column_shift(packed) {
            Some(shift) => LaunchShape { blocks: [1, units.div_ceil(packed >> shift), 1], threads: packed },
            None => LaunchShape { blocks: [rows.div_ceil(threads), units, 1], threads },
        }
    }

    #[inline(always)]
    fn launch_cell(&self, first: u32, at: LaunchIndex) -> Option<FrameCell> {
        let (column, y) = match self.packed_column_shift(at.threads) {
            Some(shift) => {
                let column = first + at.y * (at.threads >> shift) + (at.x >> shift);
                (column, self.row_start + (at.x & ((1 << shift) - 1)))
            }
            None => (first + at.y, self.row_start + at.x),
        };
        (y < self.row_end && column < self.column_end).then_some(FrameCell { column: column + HALO, row: y + PAD })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thermal::d2q37::{C, Q};

    #[test]
    fn columns_are_aligned_and_neighbours_are_offsets_in_storage() {
        let f = Frame::new(10, 13);
        assert_eq!(f.stride, 8 + 16 + 8);
        assert_eq!(f.columns(), 16);
        let cell = f.site(0, 0);
        assert_eq!(f.index(cell), 3 * 32 + 8);
        let nb = f.neighbours(cell, &C);
        for j in 0..Q {
            let there = f.site(C[j][0], C[j][1]);
            assert_eq!(nb.cell(j) as usize, f.index(there), "direction {j}");
            assert_eq!(nb.population(j, 5), f.population_index(5, there));
            assert!(there.row >= PAD - HALO && there.row < f.stride, "inside the frame");
        }
        assert_eq!(f.position(f.site(9, 12)), [9, 12, 0]);
        assert_eq!(f.cell_of(f.index_of(f.site(4, 7))), f.site(4, 7));
    }

    #[test]
    fn launches_cover_the_window_of_the_region() {
        let f = Frame::new(10, 13).rows(3..10);
        let shape = f.launch(4, 4);
        assert_eq!(shape.blocks, [2, 4, 1]);
        let mut seen = 0;
        for by in 0..4 {
            for x in 0..8 {
                let at = LaunchIndex { x, y: by, z: 0, block: x / 4, threads: 4 };
                if let Some(c) = f.launch_cell(2, at) {
                    let [px, py, _] = f.position(c);
                    assert_eq!(px, 2 + by);
                    assert!((3..10).contains(&py));
                    seen += 1;
                }
            }
        }
        assert_eq!(seen, 4 * 7);
    }

    /// A window three rows tall packs whole columns into each block: every
    /// site of the window once, none beyond its last column.
    #[test]
    fn launches_over_few_rows_pack_columns() {
        let f = Frame::new(40, 13).window(5..35, 10..13);
        let shape = f.launch(30, 16);
        assert_eq!((shape.blocks, shape.threads), ([1, 8, 1], 16), "4 columns of 4 threads per block");
        let mut seen = [false; 40 * 13];
        for by in 0..shape.blocks[1] {
            for x in 0..shape.threads {
                let at = LaunchIndex { x, y: by, z: 0, block: 0, threads: shape.threads };
                if let Some(c) = f.launch_cell(5, at) {
                    let [px, py, _] = f.position(c);
                    assert!((5..35).contains(&px) && (10..13).contains(&py), "({px}, {py})");
                    assert!(!core::mem::replace(&mut seen[(py * 40 + px) as usize], true), "({px}, {py}) twice");
                }
            }
        }
        assert_eq!(seen.iter().filter(|&&s| s).count(), 30 * 3);
    }
}
