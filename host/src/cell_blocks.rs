//! Per-cell values of a box, stored by blocks of 16^3 cells: a block whose
//! cells all hold one value is stored as that value alone.
//!
//! This is how the host holds a domain's cell flags and a geometry's solid
//! cells, so that a mostly solid or mostly empty box costs memory for its
//! mixed blocks only: a sparse grid's bounding box may hold far more than
//! 2^32 cells. Cells are addressed by position or by their number in the
//! dense order (x fastest, then y, then z), as a `u64`-wide `usize`.

use kernels_gpu::Dims;
use std::ops::Index;

/// `log2` of the block edge.
const SHIFT: u32 = 4;

/// One block's cells.
#[derive(Clone, Debug)]
enum Block<T> {
    /// Every cell holds this value.
    Uniform(T),
    /// The cells, x fastest, then y, then z.
    Cells(Box<[T]>),
}

/// Where a cell is kept in a box of blocks ([`CellBlocks::slot`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    block: usize,
    inner: usize,
}

/// A block's cells as [`CellBlocks::blocks`] shows them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BlockView<'a, T> {
    /// Every cell holds this value.
    Uniform(T),
    /// The cells, x fastest, then y, then z, over the block's full edge
    /// (cells past the box at its far faces included).
    Cells(&'a [T]),
}

/// Per-cell values of a box, by blocks (see the module docs).
#[derive(Clone, Debug)]
pub struct CellBlocks<T> {
    dims: Dims,
    /// `log2` of the block edge along z (0 for a one-layer box).
    shift_z: u32,
    /// Blocks along each axis (the box rounded up to whole blocks).
    counts: [u32; 3],
    blocks: Vec<Block<T>>,
}

impl<T: Copy + PartialEq> CellBlocks<T> {
    /// A box of `dims` cells, each holding `value`.
    pub fn new(dims: Dims, value: T) -> Self {
        let shift_z = if dims.nz == 1 { 0 } else { SHIFT };
        let counts = [dims.nx.div_ceil(1 << SHIFT), dims.ny.div_ceil(1 << SHIFT), dims.nz.div_ceil(1 << shift_z)];
        let n = counts.iter().map(|&c| c as usize).product();
        Self { dims, shift_z, counts, blocks: vec![Block::Uniform(value); n] }
    }

    /// The values of the dense per-cell array `values` (x fastest).
    ///
    /// # Panics
    /// If `values` does not hold one value per cell of `dims`.
    pub fn from_dense(dims: Dims, values: &[T]) -> Self {
        assert_eq!(values.len(), dims.cells(), "one value per cell");
        Self::from_fn(dims, |n| values[n])
    }

    /// The values `value(n)` of the cells `n` in dense order (x fastest),
    /// asked for block by block, a row at a time: no dense array is made.
    pub fn from_fn(dims: Dims, value: impl Fn(usize) -> T) -> Self {
        let mut out = Self::new(dims, value(0));
        let volume = 1 << (2 * SHIFT + out.shift_z);
        let mut row = Vec::with_capacity(1 << SHIFT);
        for k in 0..out.blocks.len() {
            let (lo, hi) = out.block_box(out.block_position(k));
            let first = value(dims.index(lo[0], lo[1], lo[2]));
            let mut cells: Option<Box<[T]>> = None;
            for z in lo[2]..hi[2] {
                for y in lo[1]..hi[1] {
                    let start = dims.index(lo[0], y, z);
                    row.clear();
                    row.extend((start..start + (hi[0] - lo[0]) as usize).map(&value));
                    if cells.is_none() && row.iter().all(|&v| v == first) {
                        continue;
                    }
                    // Mixed: copy the rows so far (all `first`) and this one.
                    let c = cells.get_or_insert_with(|| vec![first; volume].into_boxed_slice());
                    let at = inner([0, y - lo[1], z - lo[2]]);
                    c[at..at + row.len()].copy_from_slice(&row);
                }
            }
            out.blocks[k] = match cells {
                Some(c) => Block::Cells(c),
                None => Block::Uniform(first),
            };
        }
        out
    }

    /// The box.
    pub fn dims(&self) -> Dims {
        self.dims
    }

    /// The same cells holding `f(value)`: block by block, a uniform block
    /// stays one value.
    pub fn map<U: Copy + PartialEq>(&self, f: impl Fn(T) -> U) -> CellBlocks<U> {
        let blocks = self
            .blocks
            .iter()
            .map(|b| match b {
                Block::Uniform(v) => Block::Uniform(f(*v)),
                Block::Cells(c) => Block::Cells(c.iter().map(|&v| f(v)).collect()),
            })
            .collect();
        CellBlocks { dims: self.dims, shift_z: self.shift_z, counts: self.counts, blocks }
    }

    /// A box as wide as this one, of `nz` layers, whose layer `z` is this
    /// box's layer `layer(z)`: built block by block, a block whose layers
    /// all come from blocks of one value stored as that value.
    pub fn layers(&self, nz: u32, layer: impl Fn(u32) -> u32) -> Self {
        let first = match &self.blocks[0] {
            Block::Uniform(v) => *v,
            Block::Cells(c) => c[0],
        };
        let mut out = Self::new(Dims::new(self.dims.nx, self.dims.ny, nz), first);
        let volume = 1 << (2 * SHIFT + out.shift_z);
        let (m, mz) = ((1 << SHIFT) - 1, (1 << self.shift_z) - 1);
        for k in 0..out.blocks.len() {
            let [bx, by, bz] = out.block_position(k);
            let (lo, hi) = out.block_box([bx, by, bz]);
            let source = |z: u32| &self.blocks[self.block_number([bx, by, layer(z) >> self.shift_z])];
            let uniform = match source(lo[2]) {
                Block::Uniform(v) => Some(*v),
                Block::Cells(_) => None,
            };
            if let Some(v) =
                uniform.filter(|v| (lo[2]..hi[2]).all(|z| matches!(source(z), Block::Uniform(u) if u == v)))
            {
                out.blocks[k] = Block::Uniform(v);
                continue;
            }
            let mut cells = vec![first; volume].into_boxed_slice();
            let len = (hi[0] - lo[0]) as usize;
            for z in lo[2]..hi[2] {
                for y in lo[1]..hi[1] {
                    let row = &mut cells[inner([0, y - lo[1], z - lo[2]])..][..len];
                    match source(z) {
                        Block::Uniform(v) => row.fill(*v),
                        Block::Cells(c) => row.copy_from_slice(&c[inner([0, y & m, layer(z) & mz])..][..len]),
                    }
                }
            }
            out.blocks[k] = Block::Cells(cells);
        }
        out
    }

    /// Appends the values of the row of cells `(.., y, z)` to `out`, in x order.
    pub fn extend_row(&self, y: u32, z: u32, out: &mut Vec<T>) {
        let nx = self.dims.nx as usize;
        let m = (1 << SHIFT) - 1;
        let at = inner([0, y & m, z & ((1 << self.shift_z) - 1)]);
        for bx in 0..self.counts[0] {
            let len = (nx - ((bx as usize) << SHIFT)).min(1 << SHIFT);
            match &self.blocks[self.block_number([bx, y >> SHIFT, z >> self.shift_z])] {
                Block::Uniform(v) => out.extend(std::iter::repeat_n(*v, len)),
                Block::Cells(c) => out.extend_from_slice(&c[at..at + len]),
            }
        }
    }

    /// Calls `visit` with each block's cells inside the box (x fastest), in
    /// block order, or with their one value alone when they all hold it: the
    /// same calls for equal boxes, however their blocks are stored.
    pub fn for_each_block_values(&self, mut visit: impl FnMut(&[T])) {
        let mut values = Vec::with_capacity(1 << (2 * SHIFT + self.shift_z));
        for (k, block) in self.blocks.iter().enumerate() {
            let cells = match block {
                Block::Uniform(v) => {
                    visit(&[*v]);
                    continue;
                }
                Block::Cells(c) => c,
            };
            let (lo, hi) = self.block_box(self.block_position(k));
            values.clear();
            for z in 0..hi[2] - lo[2] {
                for y in 0..hi[1] - lo[1] {
                    let at = inner([0, y, z]);
                    values.extend_from_slice(&cells[at..at + (hi[0] - lo[0]) as usize]);
                }
            }
            match values.iter().all(|&v| v == values[0]) {
                true => visit(&values[..1]),
                false => visit(&values),
            }
        }
    }

    /// Cells of a block along each axis.
    pub fn edge(&self) -> [u32; 3] {
        [1 << SHIFT, 1 << SHIFT, 1 << self.shift_z]
    }

    fn block_number(&self, [bx, by, bz]: [u32; 3]) -> usize {
        bx as usize + self.counts[0] as usize * (by as usize + self.counts[1] as usize * bz as usize)
    }

    /// The block holding cell `p`, and the cell's number inside it.
    fn locate(&self, [x, y, z]: [u32; 3]) -> (usize, usize) {
        debug_assert!(x < self.dims.nx && y < self.dims.ny && z < self.dims.nz, "cell {:?} outside the box", [x, y, z]);
        let b = self.block_number([x >> SHIFT, y >> SHIFT, z >> self.shift_z]);
        let m = (1 << SHIFT) - 1;
        (b, inner([x & m, y & m, z & ((1 << self.shift_z) - 1)]))
    }

    /// Where cell `p` is kept: the same in every box of the same size, so
    /// one lookup serves several boxes ([`CellBlocks::get_at`], [`CellBlocks::set_at`]).
    #[inline]
    pub fn slot(&self, p: [u32; 3]) -> Slot {
        let (block, inner) = self.locate(p);
        Slot { block, inner }
    }

    /// The value of the cell at `slot`.
    #[inline]
    pub fn get_at(&self, slot: Slot) -> T {
        match &self.blocks[slot.block] {
            Block::Uniform(v) => *v,
            Block::Cells(c) => c[slot.inner],
        }
    }

    /// The value of every cell of the block holding cell `p`, if they all
    /// hold one (as stored).
    #[inline]
    pub fn uniform_at(&self, p: [u32; 3]) -> Option<T> {
        match &self.blocks[self.locate(p).0] {
            Block::Uniform(v) => Some(*v),
            Block::Cells(_) => None,
        }
    }

    /// Sets cell `p` to `value`.
    pub fn set(&mut self, p: [u32; 3], value: T) {
        self.set_at(self.slot(p), value)
    }

    /// Sets the cell at `slot` to `value`.
    pub fn set_at(&mut self, slot: Slot, value: T) {
        let Slot { block: b, inner } = slot;
        let volume = 1 << (2 * SHIFT + self.shift_z);
        match &mut self.blocks[b] {
            Block::Uniform(v) if *v == value => {}
            Block::Uniform(v) => {
                let mut cells = vec![*v; volume].into_boxed_slice();
                cells[inner] = value;
                self.blocks[b] = Block::Cells(cells);
            }
            Block::Cells(cells) => cells[inner] = value,
        }
    }

    /// Sets every cell of the box `lo..hi` (per axis, `hi` excluded) to
    /// `value`; whole blocks become uniform.
    pub fn fill(&mut self, lo: [u32; 3], hi: [u32; 3], value: T) {
        let hi: [u32; 3] = std::array::from_fn(|a| hi[a].min([self.dims.nx, self.dims.ny, self.dims.nz][a]));
        if (0..3).any(|a| lo[a] >= hi[a]) {
            return;
        }
        let edge = self.edge();
        for bz in lo[2] / edge[2]..hi[2].div_ceil(edge[2]) {
            for by in lo[1] / edge[1]..hi[1].div_ceil(edge[1]) {
                for bx in lo[0] / edge[0]..hi[0].div_ceil(edge[0]) {
                    let b = [bx, by, bz];
                    let start: [u32; 3] = std::array::from_fn(|a| (b[a] * edge[a]).max(lo[a]));
                    let end: [u32; 3] = std::array::from_fn(|a| ((b[a] + 1) * edge[a]).min(hi[a]));
                    // A block covered to its edge, or to the box's far face.
                    let whole = (0..3).all(|a| {
                        start[a] == b[a] * edge[a]
                            && (end[a] == (b[a] + 1) * edge[a]
                                || end[a] == [self.dims.nx, self.dims.ny, self.dims.nz][a])
                    });
                    if whole {
                        let k = self.block_number(b);
                        self.blocks[k] = Block::Uniform(value);
                        continue;
                    }
                    for z in start[2]..end[2] {
                        for y in start[1]..end[1] {
                            for x in start[0]..end[0] {
                                self.set([x, y, z], value);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Stores every block whose cells inside the box all hold one value as
    /// that value.
    pub fn compact(&mut self) {
        for k in 0..self.blocks.len() {
            if let Block::Cells(_) = &self.blocks[k] {
                let b = self.block_position(k);
                let uniform = {
                    let mut inside = self.block_cells(b);
                    let first = inside.next().map(|(_, v)| v);
                    first.filter(|&f| inside.all(|(_, v)| v == f))
                };
                if let Some(value) = uniform {
                    self.blocks[k] = Block::Uniform(value);
                }
            }
        }
    }

    fn block_position(&self, k: usize) -> [u32; 3] {
        let [cx, cy, _] = self.counts.map(|c| c as usize);
        [(k % cx) as u32, ((k / cx) % cy) as u32, (k / (cx * cy)) as u32]
    }

    /// The cells of block `b` inside the box, with their values.
    fn block_cells(&self, b: [u32; 3]) -> impl Iterator<Item = ([u32; 3], T)> + '_ {
        let (lo, hi) = self.block_box(b);
        (lo[2]..hi[2]).flat_map(move |z| {
            (lo[1]..hi[1]).flat_map(move |y| (lo[0]..hi[0]).map(move |x| ([x, y, z], self[[x, y, z]])))
        })
    }

    /// The cells of block `b` inside the box: `lo..hi` per axis.
    pub fn block_box(&self, b: [u32; 3]) -> ([u32; 3], [u32; 3]) {
        let edge = self.edge();
        let n = [self.dims.nx, self.dims.ny, self.dims.nz];
        (std::array::from_fn(|a| b[a] * edge[a]), std::array::from_fn(|a| ((b[a] + 1) * edge[a]).min(n[a])))
    }

    /// Every block: its position (in blocks) and its cells.
    pub fn blocks(&self) -> impl Iterator<Item = ([u32; 3], BlockView<'_, T>)> + '_ {
        self.blocks.iter().enumerate().map(|(k, block)| {
            let view = match block {
                Block::Uniform(v) => BlockView::Uniform(*v),
                Block::Cells(c) => BlockView::Cells(c),
            };
            (self.block_position(k), view)
        })
    }

    /// Every cell's value in dense order (x fastest).
    pub fn to_dense(&self) -> Vec<T> {
        let d = self.dims;
        let first = match &self.blocks[0] {
            Block::Uniform(v) => *v,
            Block::Cells(c) => c[0],
        };
        let mut out = vec![first; d.cells()];
        // Block by block, a row segment at a time.
        for (b, view) in self.blocks() {
            let (lo, hi) = self.block_box(b);
            let len = (hi[0] - lo[0]) as usize;
            for z in lo[2]..hi[2] {
                for y in lo[1]..hi[1] {
                    let row = &mut out[d.index(lo[0], y, z)..][..len];
                    match view {
                        BlockView::Uniform(v) => row.fill(v),
                        BlockView::Cells(c) => {
                            let start = inner([0, y - lo[1], z - lo[2]]);
                            row.copy_from_slice(&c[start..start + len]);
                        }
                    }
                }
            }
        }
        out
    }

    /// Cells whose value satisfies `pred`.
    pub fn count(&self, pred: impl Fn(T) -> bool) -> usize {
        self.blocks()
            .map(|(b, view)| match view {
                BlockView::Uniform(v) => usize::from(pred(v)) * self.cells_in(b),
                BlockView::Cells(_) => self.block_cells(b).filter(|&(_, v)| pred(v)).count(),
            })
            .sum()
    }

    /// Whether some cell's value satisfies `pred`.
    pub fn any(&self, pred: impl Fn(T) -> bool) -> bool {
        self.blocks().any(|(b, view)| match view {
            BlockView::Uniform(v) => pred(v),
            BlockView::Cells(_) => self.block_cells(b).any(|(_, v)| pred(v)),
        })
    }

    /// Calls `visit(p, value, cells)` for runs of cells that hold one value:
    /// a uniform block once (`p` its first cell, `cells` its cells inside
    /// the box), each cell of a mixed block on its own (`cells` 1).
    pub fn for_each_run(&self, mut visit: impl FnMut([u32; 3], T, usize)) {
        for (k, block) in self.blocks.iter().enumerate() {
            let b = self.block_position(k);
            match block {
                Block::Uniform(v) => visit(self.block_box(b).0, *v, self.cells_in(b)),
                Block::Cells(_) => self.block_cells(b).for_each(|(p, v)| visit(p, v, 1)),
            }
        }
    }

    /// As [`CellBlocks::for_each_run`] over this box and `other` (of the
    /// same size) together: a block where both are uniform once, else cell
    /// by cell.
    pub fn for_each_pair<U: Copy + PartialEq>(
        &self,
        other: &CellBlocks<U>,
        mut visit: impl FnMut([u32; 3], T, U, usize),
    ) {
        assert_eq!(self.dims, other.dims, "boxes of one size");
        for (k, pair) in self.blocks.iter().zip(&other.blocks).enumerate() {
            let b = self.block_position(k);
            match pair {
                (Block::Uniform(a), Block::Uniform(o)) => visit(self.block_box(b).0, *a, *o, self.cells_in(b)),
                _ => self.block_cells(b).for_each(|(p, v)| visit(p, v, other[p], 1)),
            }
        }
    }

    /// Cells of block `b` inside the box.
    fn cells_in(&self, b: [u32; 3]) -> usize {
        let (lo, hi) = self.block_box(b);
        (0..3).map(|a| (hi[a] - lo[a]) as usize).product()
    }

    /// Bytes the blocks take.
    pub fn bytes(&self) -> usize {
        let volume = 1usize << (2 * SHIFT + self.shift_z);
        let mixed = self.blocks.iter().filter(|b| matches!(b, Block::Cells(_))).count();
        self.blocks.len() * std::mem::size_of::<Block<T>>() + mixed * volume * std::mem::size_of::<T>()
    }
}

impl<T: Copy + PartialEq + Send + Sync> CellBlocks<T> {
    /// A box of `dims` cells holding `outside`, but for the cells `lo..hi`
    /// (per axis, `hi` excluded) where cell `p` holds `value(p)`. Only the
    /// blocks that meet `lo..hi` are worked out, in parallel, so the cost goes
    /// with that region, not with the box. `uniform(a, b)`, asked of each
    /// block's part `a..b` of the region, may give the value all its cells
    /// hold, sparing a call of `value` per cell; `None` when it cannot tell.
    pub fn par_from_region(
        dims: Dims,
        outside: T,
        lo: [u32; 3],
        hi: [u32; 3],
        uniform: impl Fn([u32; 3], [u32; 3]) -> Option<T> + Sync,
        value: impl Fn([u32; 3]) -> T + Sync,
    ) -> Self {
        use rayon::prelude::*;
        let mut out = Self::new(dims, outside);
        let n = [dims.nx, dims.ny, dims.nz];
        let hi: [u32; 3] = std::array::from_fn(|a| hi[a].min(n[a]));
        if (0..3).any(|a| lo[a] >= hi[a]) {
            return out;
        }
        let edge = out.edge();
        let volume = 1 << (2 * SHIFT + out.shift_z);
        let mut positions = Vec::new();
        for bz in lo[2] / edge[2]..hi[2].div_ceil(edge[2]) {
            for by in lo[1] / edge[1]..hi[1].div_ceil(edge[1]) {
                positions.extend((lo[0] / edge[0]..hi[0].div_ceil(edge[0])).map(|bx| [bx, by, bz]));
            }
        }
        let this = &out;
        let built: Vec<(usize, Block<T>)> = positions
            .par_iter()
            .map(|&b| {
                let (block_lo, block_hi) = this.block_box(b);
                let (a, c): ([u32; 3], [u32; 3]) =
                    (std::array::from_fn(|k| block_lo[k].max(lo[k])), std::array::from_fn(|k| block_hi[k].min(hi[k])));
                let known = uniform(a, c);
                if let (Some(v), true) = (known, a == block_lo && c == block_hi) {
                    return (this.block_number(b), Block::Uniform(v));
                }
                let mut cells = vec![outside; volume].into_boxed_slice();
                for z in a[2]..c[2] {
                    for y in a[1]..c[1] {
                        for x in a[0]..c[0] {
                            let v = known.unwrap_or_else(|| value([x, y, z]));
                            cells[inner([x - block_lo[0], y - block_lo[1], z - block_lo[2]])] = v;
                        }
                    }
                }
                // One value over the block's cells in the box: store it alone.
                let first = cells[0];
                let same = (0..block_hi[2] - block_lo[2]).all(|z| {
                    (0..block_hi[1] - block_lo[1]).all(|y| {
                        let at = inner([0, y, z]);
                        cells[at..at + (block_hi[0] - block_lo[0]) as usize].iter().all(|&v| v == first)
                    })
                });
                (this.block_number(b), if same { Block::Uniform(first) } else { Block::Cells(cells) })
            })
            .collect();
        for (k, block) in built {
            out.blocks[k] = block;
        }
        out
    }
}

impl<T: Copy + PartialEq + Send + Sync> CellBlocks<T> {
    /// This box's cells `2^l` times finer per axis (along z too unless the
    /// box is one cell thick): cell `p` of the `dims` returned holds this
    /// box's cell `p >> l`. Blocks under a uniform block cost one value.
    pub fn refined(&self, l: u32, dims: Dims) -> Self {
        let coarse = |p: [u32; 3]| p.map(|v| v >> l);
        let n = [dims.nx, dims.ny, dims.nz];
        Self::par_from_region(dims, self[[0; 3]], [0; 3], n, |a, _| self.uniform_at(coarse(a)), |p| self[coarse(p)])
    }
}

impl<T: Copy + PartialEq> Index<[u32; 3]> for CellBlocks<T> {
    type Output = T;

    #[inline]
    fn index(&self, p: [u32; 3]) -> &T {
        let (b, inner) = self.locate(p);
        match &self.blocks[b] {
            Block::Uniform(v) => v,
            Block::Cells(c) => &c[inner],
        }
    }
}

/// Cell `n` in dense order.
impl<T: Copy + PartialEq> Index<usize> for CellBlocks<T> {
    type Output = T;

    #[inline]
    fn index(&self, n: usize) -> &T {
        &self[position(self.dims, n)]
    }
}

/// Two boxes are equal when every cell holds the same value, however their
/// blocks are stored.
impl<T: Copy + PartialEq> PartialEq for CellBlocks<T> {
    fn eq(&self, other: &Self) -> bool {
        self.dims == other.dims
            && self.blocks.iter().zip(&other.blocks).enumerate().all(|(k, pair)| match pair {
                (Block::Uniform(a), Block::Uniform(b)) => a == b,
                _ => {
                    let b = self.block_position(k);
                    self.block_cells(b).zip(other.block_cells(b)).all(|((_, a), (_, b))| a == b)
                }
            })
    }
}

/// Number inside its block of the cell at offset `(x, y, z)` from the
/// block's corner (x fastest).
#[inline]
fn inner([x, y, z]: [u32; 3]) -> usize {
    (x | (y << SHIFT) | (z << (2 * SHIFT))) as usize
}

/// Position of cell `n` (dense order, x fastest) of a box of `dims`.
pub fn position(dims: Dims, n: usize) -> [u32; 3] {
    let (nx, ny) = (dims.nx as usize, dims.ny as usize);
    [(n % nx) as u32, ((n / nx) % ny) as u32, (n / (nx * ny)) as u32]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_hold_what_a_dense_array_holds() {
        // Sizes that are not whole blocks, and a one-layer box.
        for dims in [Dims::new(37, 21, 18), Dims::new(40, 17, 1)] {
            let mut dense = vec![0u8; dims.cells()];
            let mut blocks = CellBlocks::new(dims, 0u8);
            let mut state = 12345u64;
            for step in 0..400 {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let r = |k: u32, n: u32| ((state >> (8 * k)) % n as u64) as u32;
                let v = (step % 3) as u8;
                if step % 10 == 0 {
                    let lo = [r(0, dims.nx), r(1, dims.ny), r(2, dims.nz)];
                    let hi = [lo[0] + r(3, 30), lo[1] + r(4, 30), lo[2] + r(5, 30)];
                    blocks.fill(lo, hi, v);
                    for z in lo[2]..hi[2].min(dims.nz) {
                        for y in lo[1]..hi[1].min(dims.ny) {
                            for x in lo[0]..hi[0].min(dims.nx) {
                                dense[dims.index(x, y, z)] = v;
                            }
                        }
                    }
                } else {
                    let p = [r(0, dims.nx), r(1, dims.ny), r(2, dims.nz)];
                    blocks.set(p, v);
                    dense[dims.index(p[0], p[1], p[2])] = v;
                }
            }
            assert_eq!(blocks.to_dense(), dense);
            let mut compacted = blocks.clone();
            compacted.compact();
            assert_eq!(compacted.to_dense(), dense);
            assert_eq!(compacted, blocks);
            assert_eq!(CellBlocks::from_dense(dims, &dense), blocks);
            for v in 0..3 {
                assert_eq!(blocks.count(|x| x == v), dense.iter().filter(|&&x| x == v).count());
            }
            assert!(!blocks.any(|x| x == 7));
            for n in (0..dense.len()).step_by(7) {
                assert_eq!(blocks[n], dense[n]);
                let (p, slot) = (position(dims, n), blocks.slot(position(dims, n)));
                assert_eq!((blocks[p], blocks.get_at(slot)), (dense[n], dense[n]));
                if let Some(v) = blocks.uniform_at(p) {
                    assert_eq!(v, dense[n]);
                }
            }
            let (mut runs, mut pairs) = (vec![0usize; 3], vec![0usize; 3]);
            blocks.for_each_run(|p, v, n| {
                assert_eq!(dense[dims.index(p[0], p[1], p[2])], v);
                runs[v as usize] += n;
            });
            blocks.for_each_pair(&CellBlocks::from_dense(dims, &dense), |_, a, b, n| {
                assert_eq!(a, b);
                pairs[a as usize] += n;
            });
            for v in 0..3 {
                let count = dense.iter().filter(|&&x| x == v as u8).count();
                assert_eq!((runs[v], pairs[v]), (count, count));
            }
            let mut other = blocks.clone();
            other.set([dims.nx - 1, dims.ny - 1, dims.nz - 1], 9);
            assert_ne!(other, blocks);

            let mut rows = Vec::new();
            for z in 0..dims.nz {
                for y in 0..dims.ny {
                    blocks.extend_row(y, z, &mut rows);
                }
            }
            assert_eq!(rows, dense);
            assert_eq!(blocks.map(|v| 10 * v + 1).to_dense(), dense.iter().map(|v| 10 * v + 1).collect::<Vec<_>>());
            let values = |b: &CellBlocks<u8>| {
                let mut all = Vec::new();
                b.for_each_block_values(|v| all.push(v.to_vec()));
                all
            };
            assert_eq!(values(&blocks), values(&compacted), "however the blocks are stored");
            // Layers picked from anywhere, wrapping: as a dense copy layer by layer.
            let nz = dims.nz + 3;
            let layer = |z: u32| (5 * z + 3) % dims.nz;
            let plane = (dims.nx * dims.ny) as usize;
            let picked: Vec<u8> =
                (0..nz).flat_map(|z| dense[layer(z) as usize * plane..][..plane].iter().copied()).collect();
            assert_eq!(blocks.layers(nz, layer).to_dense(), picked);
        }
    }

    /// A region worked out in parallel holds what is asked of each cell,
    /// and the rest of the box `outside`, whether `uniform` helps or not.
    #[test]
    fn a_region_is_worked_out_block_by_block() {
        for dims in [Dims::new(53, 40, 35), Dims::new(70, 33, 1)] {
            let (lo, hi) = ([3, 16, 0], [50, 99, 20]);
            let value = |[x, y, z]: [u32; 3]| u8::from(x > 20 && x < 48) + u8::from(y + z < 30);
            // The value of a sub-box when every cell holds one, as a shape that knows its bounds would say.
            let uniform = |a: [u32; 3], b: [u32; 3]| {
                let first = value(a);
                let all = (a[2]..b[2]).all(|z| (a[1]..b[1]).all(|y| (a[0]..b[0]).all(|x| value([x, y, z]) == first)));
                all.then_some(first)
            };
            let inside = |p: [u32; 3]| (0..3).all(|k| p[k] >= lo[k] && p[k] < hi[k]);
            let want: Vec<u8> =
                (0..dims.cells()).map(|n| position(dims, n)).map(|p| if inside(p) { value(p) } else { 7 }).collect();
            let plain = CellBlocks::par_from_region(dims, 7, lo, hi, |_, _| None, value);
            let helped = CellBlocks::par_from_region(dims, 7, lo, hi, uniform, value);
            assert_eq!(plain.to_dense(), want);
            assert_eq!(helped.to_dense(), want);
            assert!(helped.bytes() <= plain.bytes());
            let mut compacted = plain.clone();
            compacted.compact();
            assert_eq!(compacted.bytes(), plain.bytes(), "blocks of one value are stored as that value");
        }
    }

    #[test]
    fn a_box_of_more_than_2_32_cells_costs_its_mixed_blocks() {
        let dims = Dims::new(4096, 4096, 300);
        assert!(dims.cells() > 1 << 32);
        let mut solid = CellBlocks::new(dims, 1u8);
        // A tube of fluid along z.
        for z in 0..dims.nz {
            for y in 2000..2010 {
                for x in 3000..3010 {
                    solid.set([x, y, z], 0);
                }
            }
        }
        assert_eq!(solid.count(|v| v == 0), 100 * 300);
        assert_eq!(solid[dims.index(3005, 2005, 299)], 0);
        assert_eq!(solid[dims.index(4095, 4095, 299)], 1);
        assert!(solid.bytes() < 200 << 20, "{} bytes", solid.bytes());
    }
}
