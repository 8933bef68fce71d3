//! Building a block-sparse grid ([`kernels_gpu::sparse::Sparse`]) from a
//! domain: which blocks are stored, their tables, and the maps between the
//! dense box and the sparse storage.
//!
//! A block is stored when it holds a fluid cell, an open-boundary cell, a
//! moving wall, or a resting wall within a population's reach of a flow
//! cell: Esoteric Pull keeps the population a wall bounces back in the wall
//! cell's slots from one step to the next, so every cell a flow cell
//! streams to has storage of its own. The blocks not stored hold only
//! resting walls no population reaches; the solid block stands for them in
//! the neighbour table, and no update reads or writes it. Blocks are numbered in the dense order of their
//! positions (x fastest, then y, then z), so a z-range of the box is a
//! contiguous range of blocks.
//!
//! The neighbour-block table wraps every axis at the box's length rounded up
//! to whole blocks, as the dense box wraps at its length. Where the two
//! differ (a length that is not a multiple of the block edge), the cells
//! past the box are resting walls, and a fluid cell within a population's
//! reach of that face would stream from them instead of from the opposite
//! face: [`SparseLayout::build`] refuses such a geometry (the fix is a box
//! length that is a multiple of the edge). Open-boundary cells on such a
//! face are allowed: the populations they would receive across it are the
//! unknown ones their boundary condition replaces.

use crate::cell_blocks::BlockView;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::groups::BoundaryGroups;
use crate::solver::{GridLayout, SolverConfig};
use kernels_gpu::flags::{is_flow, moving_wall_id, FROZEN, WALL};
use kernels_gpu::sparse::{box_number, neighbour_entry, Sparse, SparseTables, NEIGHBOUR_ENTRIES};
use kernels_gpu::{Dims, Grid};
use std::ops::Range;

/// Shape of a sparse grid's blocks. In a one-layer 2D box a block is one
/// layer deep, its x and y edges as below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockShape {
    /// 4 cells on a side: the fewest cells stored around scattered flow.
    Cube4,
    /// 8 cells on a side.
    Cube8,
    /// 32 cells along x, 4 along y and z (512 cells, as `Cube8`). A row is
    /// as long as a warp, so a warp's loads of a direction fill whole
    /// 32-byte sectors as the dense grid's do: a 16-bit row of 8 cells
    /// fills half of one, and a pull across the block's x face splits it.
    Row32,
}

impl BlockShape {
    /// Every shape, in the order `grid = "auto"` tries them.
    pub const ALL: [BlockShape; 3] = [BlockShape::Cube4, BlockShape::Cube8, BlockShape::Row32];

    /// The shape when a case names none.
    pub const DEFAULT: BlockShape = BlockShape::Cube4;

    /// `log2` of the edges along x, y and z of a 3D box's blocks.
    pub const fn shifts_3d(self) -> [u32; 3] {
        match self {
            BlockShape::Cube4 => [2, 2, 2],
            BlockShape::Cube8 => [3, 3, 3],
            BlockShape::Row32 => [5, 2, 2],
        }
    }

    /// `log2` of the block edges along x, y and z in a box `nz` cells deep
    /// (one layer, 0, along z in a one-layer 2D box).
    pub const fn shifts(self, nz: u32) -> [u32; 3] {
        let [x, y, z] = self.shifts_3d();
        [x, y, if nz == 1 { 0 } else { z }]
    }

    /// The block edges in a box `nz` cells deep.
    pub const fn edges(self, nz: u32) -> [u32; 3] {
        let [x, y, z] = self.shifts(nz);
        [1 << x, 1 << y, 1 << z]
    }

    /// The edge of a cube, `None` for `Row32`: refinement levels need cubes.
    pub const fn cube_edge(self) -> Option<u32> {
        match self {
            BlockShape::Cube4 => Some(4),
            BlockShape::Cube8 => Some(8),
            BlockShape::Row32 => None,
        }
    }

    /// The cube of edge `edge`, if 4 or 8.
    pub const fn cube(edge: u32) -> Option<BlockShape> {
        match edge {
            4 => Some(BlockShape::Cube4),
            8 => Some(BlockShape::Cube8),
            _ => None,
        }
    }

    /// As the case key `block` names it: `4`, `8`, `32x4`.
    pub const fn key(self) -> &'static str {
        match self {
            BlockShape::Cube4 => "4",
            BlockShape::Cube8 => "8",
            BlockShape::Row32 => "32x4",
        }
    }

    /// For reports, in a box `nz` cells deep: `8^3`, `32x4x4`; `8^2`,
    /// `32x4` in a one-layer 2D box.
    pub fn describe(self, nz: u32) -> String {
        match (self.cube_edge(), self.edges(nz)) {
            (Some(e), [_, _, 1]) => format!("{e}^2"),
            (Some(e), _) => format!("{e}^3"),
            (None, [x, y, 1]) => format!("{x}x{y}"),
            (None, [x, y, z]) => format!("{x}x{y}x{z}"),
        }
    }

    /// Speed per stored cell of the sparse kernels with blocks of this
    /// shape, as a fraction of the dense kernels' per cell: the slowest
    /// ratio measured in a fully active periodic box (D3Q19 and D3Q27, f32
    /// and 16-bit, both streaming schemes): on an H100 and an H200 for the
    /// cubes (`docs/bench/h*-2026-11-24-1864fa6-sparse.txt`), on an H200
    /// for rows, D3Q27 16-bit Esoteric Pull
    /// (`docs/bench/h200-2026-11-30-sparse-tables-before-flags.txt`). `grid = "auto"`
    /// takes the sparse grid when it stores a smaller share of the box than
    /// this.
    pub const fn efficiency(self) -> f64 {
        match self {
            BlockShape::Cube4 => 0.65,
            BlockShape::Cube8 => 0.73,
            BlockShape::Row32 => 0.84,
        }
    }
}

/// The grid `grid = "auto"` picks for `config` on `partitions` partitions,
/// and why, in a sentence: the sparse grid of the shape in `shapes` whose
/// stored share of the box over its [`BlockShape::efficiency`] is least,
/// if that is below 1 (the dense box's cost).
pub fn choose(config: &SolverConfig, shapes: &[BlockShape], partitions: usize) -> Result<(GridLayout, String)> {
    // (cost against dense, shape, stored share)
    let mut best: Option<(f64, BlockShape, f64)> = None;
    let mut refused = None;
    for &block in shapes {
        let sparse = SolverConfig { grid: GridLayout::Sparse { block }, ..config.clone() };
        let split = match partitions {
            1 => Ok(Vec::new()),
            n => crate::partition::Slab::split_grid(&sparse, n as u32, 1),
        };
        let built = split
            .and_then(|_| SparseLayout::build(&config.domain, block, config.lattice.near_wall_radius(), config.groups));
        match built {
            Ok(layout) => {
                let share = layout.stored_share();
                let cost = share / block.efficiency();
                if best.is_none_or(|(c, ..)| cost < c) {
                    best = Some((cost, block, share));
                }
            }
            Err(e) => refused = Some(e),
        }
    }
    // A box too large for the dense grid takes the sparse one whatever it costs.
    let dense_fits = crate::domain::check_dense(config.domain.dims).is_ok();
    Ok(match (best, refused) {
        (Some((cost, block, share)), _) if cost < 1.0 || !dense_fits => (
            GridLayout::Sparse { block },
            format!(
                "grid auto: sparse, {} blocks (they store {:.1}% of the box's cells, and run at {:.0}% of the dense speed per cell or better)",
                block.describe(config.domain.dims.nz),
                100.0 * share,
                100.0 * block.efficiency()
            ),
        ),
        (Some((_, block, share)), _) => (
            GridLayout::Dense,
            format!(
                "grid auto: dense ({} blocks would store {:.1}% of the box's cells, too many for the sparse kernels to be faster)",
                block.describe(config.domain.dims.nz),
                100.0 * share
            ),
        ),
        (None, Some(e)) => (GridLayout::Dense, format!("grid auto: dense ({e})")),
        (None, None) => (GridLayout::Dense, "grid auto: dense".into()),
    })
}

/// Some blocks of a grid as a grid of their own ([`SparseLayout::subset`]).
#[derive(Clone, Debug)]
pub struct Subset {
    /// The grid of those blocks.
    pub layout: SparseLayout,
    /// The whole grid's number of each of its blocks.
    pub blocks: Vec<u32>,
    /// Its number of each of the whole grid's blocks (`u32::MAX` for those
    /// it lacks; the whole grid's solid block maps to its own).
    pub map: Vec<u32>,
    /// How many of its blocks, numbered first, lie in the layers asked for.
    pub own_blocks: u32,
}

/// The `bitmask` variant's table: a bit per stored block, set on boundary
/// blocks, and how the kernels rank the set bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundaryMask {
    /// Bit `b % 32` of word `b / 32` is set when block `b` is a boundary block.
    pub words: Vec<u32>,
    /// `log2` of the most bits set in one word, rounded up. Taken once here:
    /// every view of the tables ([`SparseLayout::tables`]) needs it, and
    /// per-cell look-ups build such a view.
    pub rank_shift: u32,
}

impl BoundaryMask {
    /// The mask of `blocks` stored blocks with the boundary blocks `boundary`.
    fn new(blocks: usize, boundary: &[u32]) -> Self {
        let mut words = vec![0u32; blocks.div_ceil(32)];
        for &b in boundary {
            words[(b / 32) as usize] |= 1 << (b % 32);
        }
        let most = words.iter().map(|w| w.count_ones()).max().unwrap_or(0);
        Self { words, rank_shift: most.next_power_of_two().trailing_zeros() }
    }
}

/// A block-sparse grid's tables in host memory, and its shape.
///
/// Blocks are numbered in the dense order of their positions, except that
/// the `memory` boundary-group variant ([`BoundaryGroups`]) numbers the
/// boundary blocks (those with an open cell) first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparseLayout {
    /// The dense box the grid covers.
    pub dims: Dims,
    /// The block shape.
    pub block: BlockShape,
    /// `log2` of the block edges along x, y and z (z: 0 for a one-layer 2D box).
    pub shift: [u32; 3],
    /// Blocks along each axis of the box (rounded up).
    pub block_dims: [u32; 3],
    /// Position of each stored block, in blocks.
    pub origin: Vec<[u32; 3]>,
    /// [`NEIGHBOUR_ENTRIES`] storage numbers per stored block.
    pub neighbour: Vec<u32>,
    /// Per stored block, then the solid block (at the origin), the
    /// stochastic-rounding seed of its local cell 0 ([`SparseTables`]).
    pub seed: Vec<u32>,
    /// Storage number of each block of the box, `u32::MAX` where none.
    pub index: Vec<u32>,
    /// Storage numbers of the boundary blocks, ascending.
    pub boundary: Vec<u32>,
    /// A bit per stored block, set on boundary blocks, when the kernels
    /// choose blocks by it (the `bitmask` variant).
    pub mask: Option<BoundaryMask>,
    /// Cells of padding below the domain's layer 0 along z: none for a
    /// whole grid; the z edge less 1 for a partition of a split box, whose lower
    /// halo layer is then the top layer of a block layer of its own, and
    /// whose own layers start a block layer.
    pub pad: u32,
    /// Global z of the padded layer 0, wrapping (0 for a whole grid).
    pub z0: u32,
    /// Storage number of the first block of each block layer (one more
    /// entry for the end), after the boundary blocks `memory` stores first.
    pub layers: Vec<u32>,
}

/// The seed of each block's local cell 0 ([`SparseTables`]): its number in
/// the dense box `dims`, wrapping, with the grid's layer 0 at the box's
/// layer `z0`; blocks at `origin` (in blocks, edges `1 << shift` per axis),
/// then the solid block at the origin.
fn block_seeds(origin: &[[u32; 3]], dims: Dims, shift: [u32; 3], z0: u32) -> Vec<u32> {
    let seed = |o: [u32; 3]| {
        let [x, y, z] = [0, 1, 2].map(|a| o[a] << shift[a]);
        box_number([x, y, z.wrapping_add(z0)], dims.nx, dims.ny)
    };
    origin.iter().chain([&[0; 3]]).map(|&o| seed(o)).collect()
}

impl SparseLayout {
    /// The grid of blocks of shape `block` that `domain` needs, for a
    /// lattice whose populations travel up to `reach` cells per axis, laid
    /// out for the boundary-group variant `groups`.
    pub fn build(domain: &Domain, block: BlockShape, reach: u32, groups: BoundaryGroups) -> Result<Self> {
        Self::build_part(domain, block, reach, groups, false)
    }

    /// As [`SparseLayout::build`], for the local domain of a partition
    /// when `split` (own layers, a whole number of block layers, between
    /// two halo layers; see [`SparseLayout::pad`]).
    pub fn build_part(
        domain: &Domain,
        block: BlockShape,
        reach: u32,
        groups: BoundaryGroups,
        split: bool,
    ) -> Result<Self> {
        let d = domain.dims;
        let shift = block.shifts(d.nz);
        let edges = block.edges(d.nz);
        let pad = if split { edges[2] - 1 } else { 0 };
        assert!(
            !split || (d.nz - 2).is_multiple_of(edges[2]),
            "a split sparse grid's partitions own whole block layers"
        );
        let block_dims = [d.nx.div_ceil(edges[0]), d.ny.div_ceil(edges[1]), (d.nz + pad).div_ceil(edges[2])];
        // A partition's z faces are its halos, not the box's faces.
        check_faces(domain, edges, reach, if split { 2 } else { 3 })?;
        let total = block_dims.iter().map(|&n| n as usize).product::<usize>();
        let mut stored = vec![false; total];
        let block_of = |x: u32, y: u32, z: u32| {
            (x >> shift[0]) as usize
                + block_dims[0] as usize
                    * ((y >> shift[1]) as usize + block_dims[1] as usize * ((z + pad) >> shift[2]) as usize)
        };
        // Every cell a flow cell's populations reach is stored: Esoteric Pull
        // keeps a bounced population in the wall cell's slots between steps.
        // A partition does not wrap along z: its halos end it.
        let r = reach as i64;
        let rz = if d.nz == 1 { 0 } else { r };
        let lengths = [d.nx, d.ny, d.nz];
        // Marks the blocks holding the cells `lo..hi` (per axis, which may
        // stick out of the box: they wrap, but not along a partition's z).
        // The block lists along each axis, reused from call to call.
        let mut lists: [Vec<usize>; 3] = Default::default();
        let mut mark = |lo: [i64; 3], hi: [i64; 3]| {
            for (a, blocks) in lists.iter_mut().enumerate() {
                let (len, s) = (lengths[a] as i64, shift[a]);
                let (lo, hi) =
                    if a == 2 && split { (lo[a].max(0), hi[a].min(len)) } else { (lo[a], hi[a].min(lo[a] + len)) };
                blocks.clear();
                blocks.extend(
                    (lo..hi).map(|p| ((p.rem_euclid(len) as u32 + if a == 2 { pad } else { 0 }) >> s) as usize),
                );
                blocks.sort_unstable();
                blocks.dedup();
            }
            let [bx, by, bz] = &lists;
            for &z in bz {
                for &y in by {
                    for &x in bx {
                        stored[x + block_dims[0] as usize * (y + block_dims[1] as usize * z)] = true;
                    }
                }
            }
        };
        // A flow cell at `p` stores every cell within reach of it.
        let around = |lo: [u32; 3], hi: [u32; 3]| {
            let reach = [r, r, rz];
            (std::array::from_fn(|a| lo[a] as i64 - reach[a]), std::array::from_fn(|a| hi[a] as i64 + reach[a]))
        };
        // Cells that are updated reach their neighbours; moving walls and
        // the frozen ghost cells of a refinement level are stored for
        // themselves; resting walls and cells a finer level covers only
        // where a flow cell reaches them.
        let reaches = |flag: u8| is_flow(flag) && flag != FROZEN;
        let kept = |flag: u8| flag == FROZEN || moving_wall_id(flag).is_some();
        for (b, view) in domain.flags.blocks() {
            let (lo, hi) = domain.flags.block_box(b);
            match view {
                BlockView::Uniform(WALL) => {}
                BlockView::Uniform(flag) => {
                    if reaches(flag) {
                        let (lo, hi) = around(lo, hi);
                        mark(lo, hi);
                    } else if kept(flag) {
                        mark(lo.map(i64::from), hi.map(i64::from));
                    }
                }
                BlockView::Cells(_) => {
                    for z in lo[2]..hi[2] {
                        for y in lo[1]..hi[1] {
                            for x in lo[0]..hi[0] {
                                let flag = domain.flags[[x, y, z]];
                                if reaches(flag) {
                                    let (lo, hi) = around([x, y, z], [x + 1, y + 1, z + 1]);
                                    mark(lo, hi);
                                } else if kept(flag) {
                                    mark([x, y, z].map(i64::from), [x + 1, y + 1, z + 1].map(i64::from));
                                }
                            }
                        }
                    }
                }
            }
        }
        let count = stored.iter().filter(|&&s| s).count();
        let cells = (count + 1) << shift.iter().sum::<u32>();
        if cells > kernels_gpu::layout::MAX_CELLS {
            return Err(Error::Setup(format!(
                "{count} active blocks of {} cells number more than 2^32 cells: split the domain over several GPUs",
                block.describe(d.nz)
            )));
        }
        let mut open = vec![false; total];
        for n in domain.open_cells() {
            let [x, y, z] = crate::cell_blocks::position(d, n);
            open[block_of(x, y, z)] = true;
        }
        // Storage order: dense order, boundary blocks first for `memory`.
        let first = groups == BoundaryGroups::Memory;
        let order = (stored.iter().zip(&open).enumerate())
            .filter(|(_, (&s, &o))| first && s && o)
            .chain(stored.iter().zip(&open).enumerate().filter(|(_, (&s, &o))| s && !(first && o)));
        let mut index = vec![u32::MAX; total];
        let mut origin = Vec::with_capacity(count);
        let mut boundary = Vec::new();
        for (k, (_, &o)) in order {
            index[k] = origin.len() as u32;
            if o {
                boundary.push(index[k]);
            }
            let [nbx, nby, _] = block_dims.map(|n| n as usize);
            origin.push([(k % nbx) as u32, ((k / nbx) % nby) as u32, (k / (nbx * nby)) as u32]);
        }
        boundary.sort_unstable();
        let mask = (groups == BoundaryGroups::Bitmask).then(|| BoundaryMask::new(count, &boundary));
        let solid = count as u32;
        let mut neighbour = Vec::with_capacity(NEIGHBOUR_ENTRIES * count);
        for o in &origin {
            for dz in -1..=1 {
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        let at =
                            |a: usize, step: i32| (o[a] as i64 + step as i64).rem_euclid(block_dims[a] as i64) as usize;
                        let k = at(0, dx) + block_dims[0] as usize * (at(1, dy) + block_dims[1] as usize * at(2, dz));
                        debug_assert_eq!(neighbour.len() % NEIGHBOUR_ENTRIES, neighbour_entry(dx, dy, dz));
                        neighbour.push(if index[k] == u32::MAX { solid } else { index[k] });
                    }
                }
            }
        }
        // Past the boundary blocks stored first, blocks go by layer.
        let first_open = if first { boundary.len() as u32 } else { 0 };
        let mut layers = vec![first_open; block_dims[2] as usize + 1];
        for (n, o) in origin.iter().enumerate().skip(first_open as usize) {
            layers[o[2] as usize + 1] = n as u32 + 1;
        }
        for z in 1..layers.len() {
            layers[z] = layers[z].max(layers[z - 1]);
        }
        let z0 = domain.z_offset.wrapping_sub(pad);
        let seed = block_seeds(&origin, d, shift, z0);
        Ok(Self { dims: d, block, shift, block_dims, origin, neighbour, seed, index, boundary, mask, pad, z0, layers })
    }

    /// The blocks of this grid in the block layers `own` along z and in one
    /// layer beyond each end (wrapping, as the neighbour table does), as a
    /// grid of their own: a partition of a refinement level
    /// ([`crate::levels::SplitLevels`]). Blocks keep their positions, so
    /// cells keep their numbers in the box (and their stochastic rounding
    /// seeds); the blocks of `own` come first, in this grid's order, then
    /// the others.
    pub fn subset(&self, own: Range<u32>) -> Subset {
        let nbz = self.block_dims[2];
        let halo = [(own.start + nbz - 1) % nbz, own.end % nbz];
        let layer = |b: u32| self.origin[b as usize][2];
        let all = 0..self.blocks();
        let blocks: Vec<u32> = (all.clone().filter(|&b| own.contains(&layer(b))))
            .chain(all.filter(|&b| !own.contains(&layer(b)) && halo.contains(&layer(b))))
            .collect();
        let own_blocks = blocks.iter().filter(|&&b| own.contains(&layer(b))).count() as u32;
        let mut map = vec![u32::MAX; self.blocks() as usize + 1];
        for (k, &b) in blocks.iter().enumerate() {
            map[b as usize] = k as u32;
        }
        let solid = blocks.len() as u32;
        map[self.blocks() as usize] = solid;
        let rows = blocks.iter().map(|&b| b as usize * NEIGHBOUR_ENTRIES);
        let neighbour = rows
            .flat_map(|row| self.neighbour[row..row + NEIGHBOUR_ENTRIES].iter())
            .map(|&n| if map[n as usize] == u32::MAX { solid } else { map[n as usize] })
            .collect();
        let mut boundary: Vec<u32> =
            self.boundary.iter().map(|&b| map[b as usize]).filter(|&b| b != u32::MAX).collect();
        boundary.sort_unstable();
        let layout = Self {
            dims: self.dims,
            block: self.block,
            shift: self.shift,
            block_dims: self.block_dims,
            origin: blocks.iter().map(|&b| self.origin[b as usize]).collect(),
            neighbour,
            seed: blocks.iter().chain([&self.blocks()]).map(|&b| self.seed[b as usize]).collect(),
            index: self.index.iter().map(|&b| if b == u32::MAX { b } else { map[b as usize] }).collect(),
            boundary,
            mask: None,
            pad: self.pad,
            z0: self.z0,
            // Not launched by layers: its own blocks are one range.
            layers: vec![0; nbz as usize + 1],
        };
        Subset { layout, blocks, map, own_blocks }
    }

    /// The tables as kernels take them, referring to these ones: valid
    /// while `self` lives and is not changed.
    pub fn tables(&self) -> SparseTables {
        let mask = self.mask.as_ref().map(|m| m.words.as_ptr());
        // SAFETY: the tables are sized and filled by `build` (one row per
        // stored block, entries at most `blocks`; a bit per stored block).
        unsafe { self.tables_at(self.neighbour.as_ptr(), self.origin.as_ptr(), self.seed.as_ptr(), mask) }
    }

    /// The tables as kernels take them, with this grid's sizes and the
    /// copies of its neighbour, origin, seed and (when it has one) mask
    /// tables at `neighbour`, `origin`, `seed` and `mask` (device copies, say).
    ///
    /// # Safety
    /// The four must be copies of this layout's tables, valid and
    /// unchanged while the result (or a copy) is used.
    pub unsafe fn tables_at(
        &self,
        neighbour: *const u32,
        origin: *const [u32; 3],
        seed: *const u32,
        mask: Option<*const u32>,
    ) -> SparseTables {
        // SAFETY: the caller's contract, and `build`'s sizes.
        unsafe {
            let t = SparseTables::new(self.blocks(), self.dims.nx, self.dims.ny, neighbour, origin, seed);
            match mask {
                Some(mask) => t.with_boundary_mask(mask, self.mask.as_ref().map_or(0, |m| m.rank_shift)),
                None => t,
            }
        }
    }

    /// The block layers of the own cells: every one of a whole grid; all
    /// but the two halo layers of a partition.
    pub fn own_layers(&self) -> Range<u32> {
        let n = self.block_dims[2];
        if self.pad == 0 {
            0..n
        } else {
            1..n - 1
        }
    }

    /// Launch units of the own blocks of block layers `layers`, past the
    /// boundary blocks `memory` stores first.
    pub fn layer_units(&self, layers: Range<u32>) -> Range<u32> {
        self.layers[layers.start as usize]..self.layers[layers.end as usize]
    }

    /// Launch units of the boundary blocks stored first (`memory`; none otherwise).
    pub fn first_units(&self) -> Range<u32> {
        0..self.layers[0]
    }

    /// Storage number of the block of the padded box at block position
    /// `(bx, by, bz)`, if stored.
    pub fn block_at(&self, bx: u32, by: u32, bz: u32) -> Option<u32> {
        let [nbx, nby, _] = self.block_dims.map(|n| n as usize);
        let b = self.index[bx as usize + nbx * (by as usize + nby * bz as usize)];
        (b != u32::MAX).then_some(b)
    }

    /// Storage numbers of the boundary blocks (with an open cell), ascending.
    pub fn boundary_blocks(&self) -> &[u32] {
        &self.boundary
    }

    /// The grid over [`SparseLayout::tables`], its block shape read at run
    /// time: the host's code is compiled once for every shape (kernels
    /// stamp theirs).
    pub fn grid(&self) -> Sparse<[u32; 3]> {
        Sparse::with_shifts(self.tables(), self.shift)
    }

    /// The block edges along x, y and z.
    pub fn edges(&self) -> [u32; 3] {
        self.shift.map(|s| 1 << s)
    }

    /// Stored blocks.
    pub fn blocks(&self) -> u32 {
        self.origin.len() as u32
    }

    /// Cells stored, the solid block's included: the length of per-cell arrays.
    pub fn cells(&self) -> usize {
        self.grid().cells()
    }

    /// Cells in each block.
    pub fn block_cells(&self) -> usize {
        self.grid().block_cells() as usize
    }

    /// Storage number of the dense cell `n` (64-bit: the box may hold
    /// more than 2^32 cells), if its block is stored.
    pub fn storage_of(&self, n: usize) -> Option<u32> {
        self.storage_at(crate::cell_blocks::position(self.dims, n))
    }

    /// Storage number of the cell at `[x, y, z]` in the domain, if its
    /// block is stored.
    pub fn storage_at(&self, [x, y, z]: [u32; 3]) -> Option<u32> {
        let z = z + self.pad;
        let [sx, sy, sz] = self.shift;
        let b = self.block_at(x >> sx, y >> sy, z >> sz)?;
        let g = self.grid();
        Some(g.index_of(g.cell_at(b, [x, y, z])))
    }

    /// Position in the domain of a position in the grid (which a
    /// partition's padding shifts along z), if inside it.
    pub fn domain_position(&self, [x, y, z]: [u32; 3]) -> Option<[u32; 3]> {
        let z = z.checked_sub(self.pad)?;
        (x < self.dims.nx && y < self.dims.ny && z < self.dims.nz).then_some([x, y, z])
    }

    /// Dense number of the stored cell `n`, if it lies inside the box (not
    /// in the solid block, nor past the box in a block that straddles its
    /// end, nor in a partition's halo blocks past its halo layers).
    pub fn dense_of(&self, n: u32) -> Option<usize> {
        let [x, y, z] = self.cell_position(n)?;
        Some(self.dims.index(x, y, z))
    }

    /// Position in the domain of the stored cell `n`, if it lies inside
    /// the box (as [`SparseLayout::dense_of`]).
    pub fn cell_position(&self, n: u32) -> Option<[u32; 3]> {
        let g = self.grid();
        let position = g.position(g.cell_of(n));
        let stored = (n as usize) < self.blocks() as usize * self.block_cells();
        self.domain_position(position).filter(|_| stored)
    }

    /// The kernels' flag bytes in storage order (as the dense ones of
    /// [`Domain::kernel_flags`] gathered, cells outside the box walls),
    /// worked out per stored cell: the box is never made dense.
    pub fn kernel_flags(&self, domain: &Domain, radius: u32) -> Vec<u8> {
        use kernels_gpu::flags::{is_solid, NEAR_SOLID};
        use rayon::prelude::*;
        let flags = &domain.flags;
        let d = domain.dims;
        let r = radius as i64;
        let n = [d.nx as i64, d.ny as i64, d.nz as i64];
        let wrap = |p: u32, dp: i64, a: usize| (p as i64 + dp).rem_euclid(n[a]) as u32;
        // The cube spans at most two flag blocks along an axis (along a
        // one-cell z axis it is the cell's own layer).
        let two_blocks = 2 * radius < flags.edge()[0];
        let near_solid = |p: [u32; 3]| {
            // Look at the cells only if a corner's block may hold a solid.
            let corner = |c: usize| std::array::from_fn(|a| wrap(p[a], if c >> a & 1 == 0 { -r } else { r }, a));
            if two_blocks && !(0..8).any(|c| flags.uniform_at(corner(c)).is_none_or(is_solid)) {
                return false;
            }
            (-r..=r).any(|dz| {
                (-r..=r).any(|dy| {
                    (-r..=r).any(|dx| is_solid(flags[[wrap(p[0], dx, 0), wrap(p[1], dy, 1), wrap(p[2], dz, 2)]]))
                })
            })
        };
        (0..self.cells() as u32)
            .into_par_iter()
            .map(|c| match self.cell_position(c) {
                None => WALL,
                Some(p) => {
                    let flag = flags[p];
                    if is_flow(flag) && near_solid(p) {
                        flag | NEAR_SOLID
                    } else {
                        flag
                    }
                }
            })
            .collect()
    }

    /// Per-cell values in storage order from dense ones: each stored cell
    /// takes its dense cell's, and cells outside the box (and the solid
    /// block) take `outside`.
    pub fn gather<T: Copy>(&self, dense: &[T], outside: T) -> Vec<T> {
        (0..self.cells() as u32).map(|n| self.dense_of(n).map_or(outside, |m| dense[m])).collect()
    }

    /// Share of the box's cells the stored blocks hold.
    pub fn stored_share(&self) -> f64 {
        (self.blocks() as usize * self.block_cells()) as f64 / self.dims.cells() as f64
    }

    /// A line for the set-up report: blocks and cells stored, and memory per
    /// flow cell against the dense box's.
    pub fn describe(&self, config: &SolverConfig) -> String {
        let flow = config.domain.fluid_cells().max(1);
        let total_blocks = self.block_dims.iter().map(|&n| n as u64).product::<u64>();
        let bytes = config.state_bytes_on(self.cells()) + self.table_bytes();
        let dense = config.state_bytes();
        format!(
            "grid: sparse, {} blocks: {} of {} stored ({:.1}%), {} cells stored for {} flow cells; memory {:.2} GiB, {:.1} B per flow cell (tables {:.1} B), dense: {:.1} B per flow cell",
            self.block.describe(self.dims.nz),
            self.blocks(),
            total_blocks,
            100.0 * self.blocks() as f64 / total_blocks as f64,
            self.blocks() as usize * self.block_cells(),
            flow,
            bytes as f64 / (1u64 << 30) as f64,
            bytes as f64 / flow as f64,
            self.table_bytes() as f64 / flow as f64,
            dense as f64 / flow as f64
        )
    }

    /// Bytes of the tables (neighbour blocks, origins, seeds and any bitmask).
    pub fn table_bytes(&self) -> usize {
        self.neighbour.len() * 4
            + self.origin.len() * 12
            + self.seed.len() * 4
            + self.mask.as_ref().map_or(0, |m| m.words.len() * 4)
    }
}

/// Refuses a geometry with flow within `reach` of a face whose axis (one of
/// the first `axes`) does not divide into whole blocks (`edges`): see the
/// module docs.
fn check_faces(domain: &Domain, edges: [u32; 3], reach: u32, axes: usize) -> Result<()> {
    let d = domain.dims;
    let lengths = [d.nx, d.ny, d.nz];
    const AXES: [&str; 3] = ["x", "y", "z"];
    for a in 0..axes {
        if lengths[a].is_multiple_of(edges[a]) {
            continue;
        }
        let near_face = |p: u32| p < reach || p + reach >= lengths[a];
        // The cell layers within reach of the two faces.
        let mut layers = Vec::new();
        for p in (0..lengths[a]).filter(|&p| near_face(p)) {
            let (mut lo, mut hi) = ([0; 3], lengths);
            (lo[a], hi[a]) = (p, p + 1);
            layers.push((lo, hi));
        }
        let flows = layers.iter().any(|&(lo, hi)| {
            (lo[2]..hi[2]).any(|z| {
                (lo[1]..hi[1]).any(|y| {
                    (lo[0]..hi[0]).any(|x| {
                        let flag = domain.flags[[x, y, z]];
                        flag & kernels_gpu::flags::OPEN == 0 && is_flow(flag)
                    })
                })
            })
        });
        if flows {
            return Err(Error::Setup(format!(
                "the flow crosses the {} faces (periodic along {}), but the box's {} cells along {} are not a multiple of the sparse grid's block edge {}: make them a multiple of {}, or use grid = \"dense\"",
                AXES[a], AXES[a], lengths[a], AXES[a], edges[a], edges[a]
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::FaceBoundary;
    use kernels_gpu::flags::CellKind;
    use kernels_gpu::grid::Neighbourhood;
    use kernels_gpu::sparse::Fixed;
    use kernels_gpu::{Lattice, D2Q9, D3Q27};

    /// A box with walls on the y faces and a solid lump filling the low x and
    /// y corner, periodic along x and z.
    fn lumpy(dims: Dims) -> Domain {
        let mut faces = [FaceBoundary::Periodic; 6];
        faces[2] = FaceBoundary::Wall;
        faces[3] = FaceBoundary::MovingWall([0.05, 0.0, 0.0]);
        let mut d = Domain::with_faces(dims, faces).unwrap();
        for z in 0..dims.nz {
            for y in 0..dims.ny * 3 / 4 {
                for x in 0..dims.nx * 3 / 4 {
                    d.flags.set([x, y, z], CellKind::Wall.to_flag());
                }
            }
        }
        d
    }

    /// Reports name a block by its edges, one layer deep in a 2D box; a
    /// layout's blocks hold the cells its edges say.
    #[test]
    fn shapes_are_described_by_their_edges() {
        let names = BlockShape::ALL.map(|b| [b.describe(16), b.describe(1)]);
        assert_eq!(names, [["4^3", "4^2"], ["8^3", "8^2"], ["32x4x4", "32x4"]].map(|n| n.map(String::from)));
        for (dims, block) in [(Dims::new(64, 16, 16), BlockShape::Row32), (Dims::new(24, 20, 1), BlockShape::Cube4)] {
            let layout = SparseLayout::build(&lumpy(dims), block, 1, BoundaryGroups::Lists).unwrap();
            assert_eq!(layout.block_cells(), block.edges(dims.nz).iter().product::<u32>() as usize);
        }
    }

    /// The kernel flags worked out per stored cell are the dense ones
    /// gathered, for lumps of several sizes, a one-layer box, block edges
    /// and radii (wrapping included: the lump touches the x and y faces).
    #[test]
    fn stored_kernel_flags_are_the_dense_ones_gathered() {
        use BlockShape::{Cube4, Cube8, Row32};
        let boxes = [
            (Dims::new(24, 16, 16), Cube4),
            (Dims::new(40, 24, 16), Cube8),
            (Dims::new(64, 16, 16), Row32),
            (Dims::new(24, 20, 1), Cube4),
            (Dims::new(64, 20, 1), Row32),
        ];
        for (dims, block) in boxes {
            let mut domain = lumpy(dims);
            // A few lone solid cells in the fluid, one next to the far x face.
            for p in [[dims.nx - 1, dims.ny - 2, 0], [dims.nx - 3, dims.ny - 3, dims.nz - 1]] {
                domain.flags.set(p, CellKind::Wall.to_flag());
            }
            for radius in 0..4 {
                let layout = SparseLayout::build(&domain, block, radius.max(1), BoundaryGroups::Lists).unwrap();
                let want = layout.gather(&domain.kernel_flags(radius), WALL);
                assert_eq!(layout.kernel_flags(&domain, radius), want, "{dims:?} {block:?} radius {radius}");
            }
        }
    }

    /// Every stored cell inside the box finds, for every direction, the
    /// storage of the dense neighbour (periodic wrap), or the solid block
    /// where that neighbour is a resting wall whose block is not stored: on
    /// the host's grid and on the kernels' of the same shape.
    fn check<L: Lattice<Q>, const Q: usize>(dims: Dims, block: BlockShape) {
        let domain = lumpy(dims);
        let layout = SparseLayout::build(&domain, block, 1, BoundaryGroups::Lists).unwrap();
        // The host's grid reads the shape at run time, the kernels' have it stamped in.
        check_grid::<L, Q, _>(&domain, &layout, layout.grid(), dims, block);
        let tables = layout.tables();
        let c = (&domain, &layout, dims, block);
        match layout.shift {
            [2, 2, 2] => check_grid::<L, Q, _>(c.0, c.1, Sparse::<Fixed<2, 2, 2>>::new(tables), c.2, c.3),
            [3, 3, 3] => check_grid::<L, Q, _>(c.0, c.1, Sparse::<Fixed<3, 3, 3>>::new(tables), c.2, c.3),
            [5, 2, 2] => check_grid::<L, Q, _>(c.0, c.1, Sparse::<Fixed<5, 2, 2>>::new(tables), c.2, c.3),
            [2, 2, 0] => check_grid::<L, Q, _>(c.0, c.1, Sparse::<Fixed<2, 2, 0>>::new(tables), c.2, c.3),
            [3, 3, 0] => check_grid::<L, Q, _>(c.0, c.1, Sparse::<Fixed<3, 3, 0>>::new(tables), c.2, c.3),
            [5, 2, 0] => check_grid::<L, Q, _>(c.0, c.1, Sparse::<Fixed<5, 2, 0>>::new(tables), c.2, c.3),
            s => panic!("no kernel grid of shifts {s:?}"),
        }
    }

    fn check_grid<L: Lattice<Q>, const Q: usize, G: Grid>(
        domain: &Domain,
        layout: &SparseLayout,
        grid: G,
        dims: Dims,
        block: BlockShape,
    ) where
        G::Cell: Copy,
    {
        assert!(layout.blocks() < layout.block_dims.iter().product::<u32>(), "the lump leaves blocks out");
        // A population buffer, for the addresses Esoteric Pull's neighbours form.
        let buffer = vec![0u16; Q * grid.cells()];
        let f = buffer.as_ptr();
        for n in 0..layout.cells() as u32 {
            let Some(m) = layout.dense_of(n) else { continue };
            assert_eq!(layout.storage_of(m), Some(n));
            let cell = grid.cell_of(n);
            assert_eq!(grid.index_of(cell), n);
            let [px, py, pz] = grid.position(cell);
            assert_eq!(dims.index(px, py, pz), m);
            let nb = grid.neighbours(cell, &L::C);
            let (x, y, z) = dims.coords(m as u32);
            assert_eq!(nb.seed_cell(7), m as u32, "seeds are dense numbers");
            // Esoteric Pull draws the seed with its odd neighbours, two-lattice when asked.
            let odd = grid.odd_neighbours(cell, &L::C);
            assert_eq!(odd.seed_cell(7), m as u32, "seeds drawn up front");
            for j in 0..Q {
                let wrap = |p: u32, c: i32, len: u32| (p as i64 + c as i64).rem_euclid(len as i64) as u32;
                let [cx, cy, cz] = L::C[j];
                let there = dims.index(wrap(x, cx, dims.nx), wrap(y, cy, dims.ny), wrap(z, cz, dims.nz));
                match layout.storage_of(there) {
                    Some(s) => {
                        assert_eq!(nb.cell(j), s, "{} {block:?} cell {m} dir {j}", L::NAME);
                        // Esoteric Pull's neighbours (kept as cell numbers, the even ones found when asked).
                        assert_eq!(odd.cell(j), s, "{} {block:?} cell {m} dir {j}, odd only", L::NAME);
                        for slot in [0, Q - 1] {
                            assert_eq!(nb.population(j, slot), grid.population(Q, grid.cell_of(s), slot));
                            assert_eq!(odd.population(j, slot), grid.population(Q, grid.cell_of(s), slot));
                            // SAFETY: `f` holds every population of the grid.
                            let at = unsafe { odd.population_at(f, j, slot).offset_from(f) };
                            assert_eq!(at as usize, odd.population(j, slot), "address of {j} slot {slot}");
                        }
                    }
                    None => {
                        assert_eq!(domain.flags[there], WALL);
                        assert_eq!(nb.cell(j) as usize / layout.block_cells(), layout.blocks() as usize, "solid block");
                        assert_eq!(odd.cell(j), nb.cell(j), "solid block, odd only");
                        assert_eq!(odd.population(j, Q - 1), nb.population(j, Q - 1), "solid block, odd only");
                    }
                }
            }
        }
    }

    #[test]
    fn sparse_neighbours_are_the_dense_ones() {
        check::<D3Q27, 27>(Dims::new(16, 12, 8), BlockShape::Cube4);
        check::<D3Q27, 27>(Dims::new(32, 24, 16), BlockShape::Cube8);
        check::<D3Q27, 27>(Dims::new(96, 12, 8), BlockShape::Row32);
        check::<D2Q9, 9>(Dims::new(16, 12, 1), BlockShape::Cube4);
        check::<D2Q9, 9>(Dims::new(32, 24, 1), BlockShape::Cube8);
        check::<D2Q9, 9>(Dims::new(128, 12, 1), BlockShape::Row32);
    }

    #[test]
    fn a_launch_covers_each_stored_cell_once() {
        let layout =
            SparseLayout::build(&lumpy(Dims::new(16, 12, 8)), BlockShape::Cube4, 1, BoundaryGroups::Lists).unwrap();
        let grid = layout.grid();
        for threads in [32, 64, 96, 128] {
            let region = 1..grid.units();
            let shape = grid.launch(region.len() as u32, threads);
            let mut seen = vec![0; layout.cells()];
            for bx in 0..shape.blocks[0] {
                for t in 0..shape.threads {
                    let at = kernels_gpu::grid::LaunchIndex {
                        x: bx * shape.threads + t,
                        y: 0,
                        z: 0,
                        block: bx,
                        threads: shape.threads,
                    };
                    seen[grid.index_of(grid.launch_cell(region.start, at).unwrap()) as usize] += 1;
                }
            }
            let cells = grid.region_cells(region.clone());
            for (n, &k) in seen.iter().enumerate() {
                assert_eq!(k, cells.contains(&n) as u32, "threads {threads} cell {n}");
            }
        }
    }

    /// With a bitmask, the kernel that updates open cells too visits each
    /// cell of the boundary blocks of its region exactly once, and nothing
    /// else: boundary blocks one per row (inlet and outlet on the x faces)
    /// and a whole layer of them (an inlet on a z face), regions that do not
    /// start or end on a word, thread blocks of several sizes.
    #[test]
    fn a_bitmask_launch_of_the_open_kernel_covers_each_boundary_cell_once() {
        use crate::domain::OpenScheme::Regularized;
        for inlet_face in [0, 4] {
            let mut faces = [FaceBoundary::Periodic; 6];
            faces[inlet_face] = FaceBoundary::VelocityInlet([0.02, 0.0, 0.0], Regularized);
            faces[inlet_face + 1] = FaceBoundary::PressureOutlet(1.0, Regularized);
            let d = Domain::with_faces(Dims::new(24, 16, 20), faces).unwrap();
            let layout = SparseLayout::build(&d, BlockShape::Cube4, 1, BoundaryGroups::Bitmask).unwrap();
            let grid = layout.grid();
            let boundary = layout.boundary_blocks();
            assert!(!boundary.is_empty() && boundary.len() < grid.units() as usize);
            for region in [0..grid.units(), 3..grid.units() - 5, 37..38] {
                for threads in [32, 64, 96, 128] {
                    let shape = grid.launch_open(region.clone(), threads);
                    assert!(shape.threads <= threads);
                    let mut seen = vec![0; layout.cells()];
                    for bx in 0..shape.blocks[0] {
                        for t in 0..shape.threads {
                            let x = bx * shape.threads + t;
                            let at =
                                kernels_gpu::grid::LaunchIndex { x, y: 0, z: 0, block: bx, threads: shape.threads };
                            if let Some(c) = grid.open_cell(region.clone(), at) {
                                seen[grid.index_of(c) as usize] += 1;
                            }
                        }
                    }
                    for (n, &k) in seen.iter().enumerate() {
                        let b = (n / 64) as u32;
                        let expected = region.contains(&b) && boundary.binary_search(&b).is_ok();
                        assert_eq!(
                            k, expected as u32,
                            "face {inlet_face} region {region:?} threads {threads} cell {n}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn flow_across_a_face_that_is_not_whole_blocks_is_refused() {
        use BlockShape::{Cube4, Row32};
        let err =
            SparseLayout::build(&lumpy(Dims::new(18, 12, 8)), Cube4, 1, BoundaryGroups::Lists).unwrap_err().to_string();
        assert!(err.contains("18 cells along x") && err.contains("multiple of 4"), "{err}");
        // Along y the faces are walls: 14 cells are fine.
        SparseLayout::build(&lumpy(Dims::new(16, 14, 8)), Cube4, 1, BoundaryGroups::Lists).unwrap();
        // Rows are 32 cells along x.
        let err =
            SparseLayout::build(&lumpy(Dims::new(48, 12, 8)), Row32, 1, BoundaryGroups::Lists).unwrap_err().to_string();
        assert!(err.contains("48 cells along x") && err.contains("multiple of 32"), "{err}");
    }

    #[test]
    fn gather_takes_each_stored_cell_from_its_dense_place() {
        let dims = Dims::new(16, 14, 8);
        let layout = SparseLayout::build(&lumpy(dims), BlockShape::Cube4, 1, BoundaryGroups::Lists).unwrap();
        let dense: Vec<u32> = (0..dims.cells() as u32).collect();
        let stored = layout.gather(&dense, u32::MAX);
        for (k, &v) in stored.iter().enumerate() {
            assert_eq!(v, layout.dense_of(k as u32).map_or(u32::MAX, |n| n as u32));
        }
        assert!((0..dims.cells()).all(|n| layout.storage_of(n).is_none_or(|k| stored[k as usize] == n as u32)));
    }
}
