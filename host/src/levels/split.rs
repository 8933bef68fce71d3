//! Refinement levels split over partitions along z, as a uniform grid is
//! ([`crate::partition`]): the cuts fall between block layers of level 0,
//! so at every level they fall between block layers too (a level-`l` block
//! layer is `2^l` times thinner), and a coarse cell, its fine cells and the
//! ghost cells over it go to the same partition.
//!
//! Each partition stores, per level, the blocks of its own layers and one
//! block layer beyond each cut (its halo), renumbered with its own blocks
//! first so that a launch over them is one range. It runs every update of
//! its own cells (the bulk kernel over its own blocks, and the lists of
//! ghost, exploded, coalesced and open cells filtered to its own), and its
//! neighbours' cells are never updated there.
//!
//! After each operation that writes a level (its update, or the explosion
//! into it), a partition takes from its neighbours every stored value that
//! one of their cells wrote. In both streaming schemes each value a step
//! writes has one writer cell, found with [`stored_slot`] as the kernels
//! store, so the host lists, per level, operation and parity, the values
//! that cross each cut ([`Plan`]), keeping those stored within [`REACH`]
//! cells of the receiver's own: every value a partition's updates read is
//! then current, so each partition reads what the whole grid would, and the
//! populations are the whole grid's bit for bit. (The rest of a halo, four
//! or eight cells deep, goes stale, and nothing reads it.)

use super::{LevelGrid, Levels};
use crate::error::{Error, Result};
use crate::sparse::{SparseLayout, Subset};
use kernels_gpu::flags::{is_flow, FROZEN, GHOST, KIND_MASK};
use kernels_gpu::grid::Neighbourhood;
use kernels_gpu::levels::NO_CHILD;
use kernels_gpu::stream::{neighbours, stored_slot, Streaming};
use kernels_gpu::{Grid, Lattice};
use std::ops::Range;

/// How one partition stores one level.
#[derive(Clone, Debug)]
pub(super) struct Share {
    /// The whole level's number of each block it stores, own blocks first.
    pub(super) blocks: Vec<u32>,
    /// Its number of each of the whole level's blocks (`u32::MAX` where it
    /// stores none; the solid block maps to its solid block).
    map: Vec<u32>,
    /// How many of `blocks` are its own (they come first).
    own_blocks: u32,
    /// Its own cells' z range at the level's spacing.
    own_z: Range<u32>,
}

impl Share {
    /// Its index of the whole level's index `n` of a per-block array with
    /// `run` values per block, if it stores that block.
    fn local(&self, n: u64, run: u64) -> Option<u64> {
        let b = self.map[(n / run) as usize];
        (b != u32::MAX).then(|| b as u64 * run + n % run)
    }

    /// As [`Share::local`] for a cell number (`run` cells per block) that
    /// it stores.
    fn cell(&self, n: u32, run: u64) -> u32 {
        if n == NO_CHILD {
            return NO_CHILD;
        }
        self.local(n as u64, run).expect("a partition stores the cells its lists name") as u32
    }
}

/// A refined domain's levels cut into partitions along z: how each
/// partition stores each level, against the whole level. (The partitions'
/// own levels, their flags and lists, go to the partitions' solvers.)
#[derive(Debug)]
pub struct SplitLevels {
    /// Each partition's storage of each level.
    pub(super) shares: Vec<Vec<Share>>,
}

/// The level-0 z ranges of `parts` partitions of `levels` (blocks of
/// `edge` cells along z): whole block layers, each partition with the same
/// share of a coarse step's updates as near as whole layers allow (a layer
/// weighs the stored cells of every level over it, a level-`l` cell
/// counting `2^l`), so that refined regions spread over every partition.
pub(super) fn cuts(levels: &Levels, edge: u32, parts: u32) -> Result<Vec<Range<u32>>> {
    let nz = levels.levels[0].domain.dims.nz;
    let layers = nz / edge;
    if parts == 0 || layers < parts {
        return Err(Error::Setup(format!(
            "a refined domain {nz} cells deep has {layers} block layers of {edge} cells along z, too few for {parts} GPUs: \
             each takes one at least (use fewer GPUs or a deeper domain)"
        )));
    }
    let mut work = vec![0u64; layers as usize];
    for level in &levels.levels {
        let cells = (level.layout.block_cells() as u64) << level.level;
        for o in &level.layout.origin {
            // A level-l block lies in one level-0 block layer.
            work[((o[2] << level.layout.shift[2] >> level.level) / edge) as usize] += cells;
        }
    }
    let total: u64 = work.iter().sum();
    let mut bounds = vec![0u32];
    let mut done = 0u64;
    for (k, w) in work.iter().enumerate() {
        let p = bounds.len() as u32;
        // Cut once this partition's share is reached, leaving a layer for
        // each of the rest (and taking one at least).
        let share = total * p as u64 / parts as u64;
        let last = bounds[bounds.len() - 1];
        let left = layers - k as u32;
        if p < parts && k as u32 > last && (done >= share || left == parts - p) {
            bounds.push(k as u32);
        }
        done += w;
    }
    bounds.push(layers);
    Ok(bounds.windows(2).map(|w| edge * w[0]..edge * w[1]).collect())
}

/// Whether block `b` of `layout` lies in the block layers `layers`.
fn in_layers(layout: &SparseLayout, b: u32, layers: &Range<u32>) -> bool {
    layout.origin.get(b as usize).is_some_and(|o| layers.contains(&o[2]))
}

impl SplitLevels {
    /// `levels` cut into `parts` partitions along z, and each partition's
    /// levels: its blocks, flags and lists.
    pub fn new(levels: &Levels, parts: u32) -> Result<(Self, Vec<Levels>)> {
        let base = &levels.levels[0];
        if base.domain.dims.nz == 1 {
            return Err(Error::Setup(
                "a two-dimensional refined domain runs on one GPU: it has no z to split along".into(),
            ));
        }
        if levels.levels.iter().any(|l| !l.domain.curved.cells.is_empty()) {
            return Err(Error::Setup(
                "curved walls on refinement levels run on one GPU: use `wall = \"halfway\"` or one GPU".into(),
            ));
        }
        let edge = 1u32 << base.layout.shift[2];
        let cuts = cuts(levels, edge, parts)?;
        let mut out = SplitLevels { shares: Vec::new() };
        let mut part_levels = Vec::with_capacity(cuts.len());
        for cut in &cuts {
            // Own cells along z, and own block layers, per level.
            let own: Vec<Range<u32>> =
                levels.levels.iter().map(|l| (cut.start << l.level)..(cut.end << l.level)).collect();
            let layers: Vec<Range<u32>> = own.iter().map(|z| (z.start / edge)..(z.end / edge)).collect();
            let mut grids = Vec::with_capacity(levels.len());
            let mut shares = Vec::with_capacity(levels.len());
            for (level, layers) in levels.levels.iter().zip(&layers) {
                let Subset { layout, blocks, map, own_blocks } = level.layout.subset(layers.clone());
                let run = level.layout.block_cells();
                let mut flags = Vec::with_capacity(layout.cells());
                for b in blocks.iter().copied().chain([level.layout.blocks()]) {
                    flags.extend_from_slice(&level.flags[b as usize * run..(b as usize + 1) * run]);
                }
                let own_z = own[level.level as usize].clone();
                grids.push(LevelGrid::without_lists(
                    level.level,
                    level.domain.clone(),
                    layout,
                    flags,
                    own_blocks,
                    own_z.clone(),
                ));
                shares.push(Share { blocks, map, own_blocks, own_z });
            }
            // The lists, filtered to the partition's own cells (a parent's
            // cells and the ghost cells over a coarse cell are its own too).
            let k = levels.children;
            for (l, level) in levels.levels.iter().enumerate() {
                let run = level.layout.block_cells() as u64;
                let mine = |n: &u32| in_layers(&level.layout, n >> run.trailing_zeros(), &layers[l]);
                let grid = &mut grids[l];
                grid.ghosts = level.ghosts.iter().filter(|n| mine(n)).map(|&n| shares[l].cell(n, run)).collect();
                if let Some(finer) = shares.get(l + 1) {
                    let fine_run = levels.levels[l + 1].layout.block_cells() as u64;
                    for (j, n) in level.coalesced.iter().enumerate().filter(|(_, n)| mine(n)) {
                        grid.coalesced.push(shares[l].cell(*n, run));
                        grid.children
                            .extend(level.children[j * k..(j + 1) * k].iter().map(|&c| finer.cell(c, fine_run)));
                    }
                }
                if l > 0 {
                    let coarse = &levels.levels[l - 1];
                    let coarse_run = coarse.layout.block_cells() as u64;
                    let shift = coarse_run.trailing_zeros();
                    for (j, n) in level.parents.iter().enumerate() {
                        if !in_layers(&coarse.layout, n >> shift, &layers[l - 1]) {
                            continue;
                        }
                        grid.parents.push(shares[l - 1].cell(*n, coarse_run));
                        grid.exploded
                            .extend(level.exploded[j * k..(j + 1) * k].iter().map(|&c| shares[l].cell(c, run)));
                    }
                }
            }
            part_levels.push(Levels { levels: grids, children: levels.children });
            out.shares.push(shares);
        }
        Ok((out, part_levels))
    }

    /// Number of partitions.
    pub fn len(&self) -> usize {
        self.shares.len()
    }

    /// Whether there are none (never, once built).
    pub fn is_empty(&self) -> bool {
        self.shares.is_empty()
    }

    /// The whole level `l`'s buffer (`q` values per cell) from each
    /// partition's: each block from the partition that owns it, the solid
    /// block from the first.
    pub(super) fn gather<T: Copy>(&self, whole: &Levels, l: usize, parts: &[&[T]], q: usize, zero: T) -> Vec<T> {
        let layout = &whole.levels[l].layout;
        let run = q * layout.block_cells();
        let mut out = vec![zero; q * layout.cells()];
        for (p, f) in parts.iter().enumerate() {
            let share = &self.shares[p][l];
            for (k, &b) in share.blocks.iter().enumerate().take(share.own_blocks as usize) {
                out[b as usize * run..(b as usize + 1) * run].copy_from_slice(&f[k * run..(k + 1) * run]);
            }
            if p == 0 {
                let solid = layout.blocks() as usize;
                let local = share.blocks.len();
                out[solid * run..(solid + 1) * run].copy_from_slice(&f[local * run..(local + 1) * run]);
            }
        }
        out
    }

    /// Partition `p`'s buffer of level `l` (`q` values per cell) from the
    /// whole level's: every block it stores, its halo's too.
    pub(super) fn scatter<T: Copy>(&self, whole: &Levels, l: usize, p: usize, f: &[T], q: usize) -> Vec<T> {
        let layout = &whole.levels[l].layout;
        let run = q * layout.block_cells();
        let blocks = self.shares[p][l].blocks.iter().copied().chain([layout.blocks()]);
        blocks.flat_map(|b| f[b as usize * run..(b as usize + 1) * run].iter().copied()).collect()
    }
}

/// Values one partition takes from another after an operation: positions
/// in the sender's buffer and in the receiver's, pairwise.
#[derive(Clone, Debug, Default)]
pub(super) struct Transfer {
    pub(super) from: usize,
    pub(super) to: usize,
    pub(super) src: Vec<u64>,
    pub(super) dst: Vec<u64>,
}

/// The transfers after each operation, per level and parity of the step
/// whose slots the operation writes (`[even, odd]`).
#[derive(Debug, Default)]
pub(super) struct Plan {
    pub(super) update: Vec<[Vec<Transfer>; 2]>,
    pub(super) explode: Vec<[Vec<Transfer>; 2]>,
}

impl Plan {
    /// The plan of `split`, cut from `whole`, for the lattice `L` and the
    /// streaming scheme `scheme`.
    pub(super) fn new<L: Lattice<Q>, const Q: usize>(whole: &Levels, split: &SplitLevels, scheme: Streaming) -> Self {
        let mut plan = Plan::default();
        for (l, level) in whole.levels.iter().enumerate() {
            let mut update = [Vec::new(), Vec::new()];
            let mut explode = [Vec::new(), Vec::new()];
            for odd in [false, true] {
                // Update: every cell a step writes (all but walls and frozen cells), all its slots.
                let mut writers = Vec::new();
                for (q, shares) in split.shares.iter().enumerate() {
                    let share = &shares[l];
                    let run = level.layout.block_cells() as u32;
                    for &b in share.blocks.iter().take(share.own_blocks as usize) {
                        if !next_to_cut(level, b, &share.own_z) {
                            continue;
                        }
                        for n in b * run..(b + 1) * run {
                            let flag = level.flags[n as usize];
                            if is_flow(flag) && flag & KIND_MASK != FROZEN {
                                writers.push((q, n, None));
                            }
                        }
                    }
                }
                update[odd as usize] = transfers::<L, Q>(level, split, l, scheme, odd, &writers);
                // Explosion: each parent's children, a frozen one only the
                // slots ghost cells read (as `kernels_gpu::levels::explode`).
                let mut writers = Vec::new();
                if l > 0 {
                    let coarse = &whole.levels[l - 1];
                    let shift = coarse.layout.block_cells().trailing_zeros();
                    let k = whole.children;
                    for (j, &parent) in level.parents.iter().enumerate() {
                        let Some(q) = (0..split.len()).find(|&q| {
                            let z = &split.shares[q][l - 1].own_z;
                            let edge = 1 << coarse.layout.shift[2];
                            in_layers(&coarse.layout, parent >> shift, &(z.start / edge..z.end / edge))
                        }) else {
                            continue;
                        };
                        for &c in &level.exploded[j * k..(j + 1) * k] {
                            if c != NO_CHILD && is_flow(level.flags[c as usize]) {
                                let frozen = level.flags[c as usize] & KIND_MASK == FROZEN;
                                writers.push((q, c, frozen.then_some(GHOST)));
                            }
                        }
                    }
                }
                explode[odd as usize] = transfers::<L, Q>(level, split, l, scheme, odd, &writers);
            }
            plan.update.push(update);
            plan.explode.push(explode);
        }
        plan
    }
}

/// Whether block `b` of `level` lies in the first or last of the block
/// layers of the cells `own` along z: only cells there write into blocks
/// of another partition.
fn next_to_cut(level: &LevelGrid, b: u32, own: &Range<u32>) -> bool {
    let edge = 1u32 << level.layout.shift[2];
    let z = level.layout.origin[b as usize][2];
    z == own.start / edge || z + 1 == own.end / edge
}

/// How far from its own cells, in cells of their level along z, a
/// partition's updates read: one cell for streaming and ghost cells, one
/// coarse cell for an explosion's slopes. One more is kept for safety; the
/// rest of a halo block layer is never read, so it is not sent.
const REACH: u32 = 2;

/// Whether cells at `z` lie within [`REACH`] of the cells `own` along z,
/// in a level `nz` cells deep (the halo wraps in a periodic box).
fn within_reach(z: u32, own: &Range<u32>, nz: u32) -> bool {
    let below = (own.start + nz - z) % nz;
    let above = (z + nz - (own.end - 1)) % nz;
    own.contains(&z) || below <= REACH || above <= REACH
}

/// The transfers of the values `writers` write on `level` (number `l`) as
/// a step of parity `odd` stores them: `(owner, cell, only)`, where `only`
/// keeps the slots whose neighbour cell is of that kind.
fn transfers<L: Lattice<Q>, const Q: usize>(
    level: &LevelGrid,
    split: &SplitLevels,
    l: usize,
    scheme: Streaming,
    odd: bool,
    writers: &[(usize, u32, Option<u8>)],
) -> Vec<Transfer> {
    let parts = split.len();
    // Ordered by sender, as `Partition::exchange` takes them.
    let mut out: Vec<Transfer> =
        (0..parts * parts).map(|k| Transfer { from: k / parts, to: k % parts, ..Default::default() }).collect();
    let cells = level.layout.block_cells() as u64;
    let run = Q as u64 * cells;
    let solid = level.layout.blocks() as u64;
    let nz = level.domain.dims.nz;
    let g = level.layout.grid();
    for &(q, n, only) in writers {
        let nb = neighbours::<L, Q, _>(&g, g.cell_of(n));
        for i in 0..Q {
            if only.is_some_and(|kind| level.flags[nb.cell(i) as usize] & KIND_MASK != kind) {
                continue;
            }
            let at = stored_slot::<L, Q>(scheme, odd, &nb, i) as u64;
            if at / run == solid {
                continue;
            }
            let Some(src) = split.shares[q][l].local(at, run) else { continue };
            let cell = (at / run * cells + at % cells) as u32;
            let z = g.position(g.cell_of(cell))[2];
            for p in (0..parts).filter(|&p| p != q && within_reach(z, &split.shares[p][l].own_z, nz)) {
                if let Some(dst) = split.shares[p][l].local(at, run) {
                    let t = &mut out[q * parts + p];
                    t.src.push(src);
                    t.dst.push(dst);
                }
            }
        }
    }
    out.retain(|t| !t.src.is_empty());
    out
}
