//! Building the levels: which blocks each level covers, its cells' flags,
//! its sparse grid, and the lists the interface updates run over.

use super::{Refinement, MAX_LEVELS};
use crate::cell_blocks::CellBlocks;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::groups::BoundaryGroups;
use crate::solver::{LatticeKind, SolverConfig};
use crate::sparse::{BlockShape, SparseLayout};
use kernels_gpu::flags::{is_flow, is_open, is_solid, COALESCED, FROZEN, GHOST, LEVEL_MASK, NEAR_SOLID, REFINED, WALL};
use kernels_gpu::levels::NO_CHILD;
use kernels_gpu::Dims;
use std::collections::HashMap;

/// Ghost cells this many cells or fewer from their level's region stream;
/// the ones beyond are frozen (see [`kernels_gpu::levels`]).
const GHOST_REACH: u32 = 3;

/// One level: its domain, grid and interface lists.
#[derive(Clone, Debug)]
pub struct LevelGrid {
    /// Its number (0 is the coarsest).
    pub level: u32,
    /// Its box and cell flags at its resolution (interface flags included).
    pub domain: Domain,
    /// Its block-sparse grid.
    pub layout: SparseLayout,
    /// Kernel flag bytes in storage order.
    pub flags: Vec<u8>,
    /// Storage numbers of its ghost cells (streamed each step).
    pub ghosts: Vec<u32>,
    /// Storage numbers on the coarser level of the cells whose populations
    /// its ghost cells (and the frozen ones they read) take at each coarse
    /// step: their *parents*.
    pub parents: Vec<u32>,
    /// For each parent, the storage numbers of its `2^D` cells here, the
    /// one at offset `(x, y, z) & 1` at `x + 2 y + 4 z`
    /// ([`kernels_gpu::levels::NO_CHILD`] for a cell that takes nothing).
    pub exploded: Vec<u32>,
    /// Storage numbers of its cells next to the finer level.
    pub coalesced: Vec<u32>,
    /// For each of those, the storage numbers of the finer level's ghost
    /// cells over it ([`Levels::children`] each).
    pub children: Vec<u32>,
    /// Blocks whose cells it updates, numbered first: all of them, but for
    /// a partition of the level ([`super::SplitLevels`]).
    pub own_blocks: u32,
    /// The layers along z whose cells it updates, at its resolution.
    pub own_z: std::ops::Range<u32>,
}

impl LevelGrid {
    /// A level whose interface lists are still to fill.
    pub(super) fn without_lists(
        level: u32,
        domain: Domain,
        layout: SparseLayout,
        flags: Vec<u8>,
        own_blocks: u32,
        own_z: std::ops::Range<u32>,
    ) -> Self {
        let none = Vec::new;
        let (ghosts, parents, exploded, coalesced, children) = (none(), none(), none(), none(), none());
        Self { level, domain, layout, flags, ghosts, parents, exploded, coalesced, children, own_blocks, own_z }
    }

    /// Cells of the blocks it updates, from storage number 0.
    pub fn own_stored(&self) -> usize {
        self.own_blocks as usize * self.layout.block_cells()
    }

    /// Storage number of the dense cell `n` of its domain, if it updates
    /// that cell (an open cell's group takes those only).
    pub fn own_storage(&self, n: usize) -> Option<u32> {
        let z = crate::cell_blocks::position(self.domain.dims, n)[2];
        self.own_z.contains(&z).then(|| self.layout.storage_of(n)).flatten()
    }
}

/// The levels of a refined domain, coarsest first.
#[derive(Debug)]
pub struct Levels {
    /// The levels.
    pub levels: Vec<LevelGrid>,
    /// Fine cells per coarse cell: 8 in 3D, 4 in 2D.
    pub children: usize,
}

/// A level's box and blocks.
#[derive(Clone, Copy)]
struct Shape {
    dims: Dims,
    /// Block edge per axis (1 along z in 2D).
    edge: [u32; 3],
    /// Blocks per axis.
    blocks: [u32; 3],
}

impl Shape {
    fn block_index(&self, b: [u32; 3]) -> usize {
        b[0] as usize + self.blocks[0] as usize * (b[1] as usize + self.blocks[1] as usize * b[2] as usize)
    }
    fn block_of(&self, p: [u32; 3]) -> [u32; 3] {
        std::array::from_fn(|a| p[a] / self.edge[a])
    }
    /// The block at offset `o` from `b`, wrapping.
    fn step(&self, b: [u32; 3], o: [i32; 3]) -> [u32; 3] {
        std::array::from_fn(|a| (b[a] as i64 + o[a] as i64).rem_euclid(self.blocks[a] as i64) as u32)
    }
    /// Offsets to the blocks around one (and itself), `{-1, 0, 1}` per axis
    /// (0 only along a 2D box's z).
    fn offsets(&self) -> Vec<[i32; 3]> {
        let z: &[i32] = if self.blocks[2] == 1 && self.edge[2] == 1 { &[0] } else { &[-1, 0, 1] };
        let mut out = Vec::with_capacity(27);
        for &dz in z {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    out.push([dx, dy, dz]);
                }
            }
        }
        out
    }
}

impl Levels {
    /// The levels of `base` (level 0's domain) refined as `refinement`
    /// asks, on blocks of edge `edge`, for the velocity set `lattice`.
    pub fn build(base: &Domain, refinement: &Refinement, edge: u32, lattice: LatticeKind) -> Result<Self> {
        let (reach, radius) = (lattice.max_speed(), lattice.near_wall_radius());
        let count = refinement.levels;
        if !(1..=MAX_LEVELS).contains(&count) {
            return Err(Error::Setup(format!("a refined domain has 1 to {MAX_LEVELS} levels, not {count}")));
        }
        let Some(block) = BlockShape::cube(edge) else {
            return Err(Error::Setup(format!("a refinement level's block edge is 4 or 8, not {edge}")));
        };
        let d = base.dims;
        let flat = d.nz == 1;
        let lengths = [d.nx, d.ny, d.nz];
        for (a, &n) in lengths.iter().enumerate().take(if flat { 2 } else { 3 }) {
            if n % edge != 0 {
                return Err(Error::Setup(format!(
                    "a refined domain's size along {} ({n}) must be a multiple of the block edge {edge}",
                    ["x", "y", "z"][a]
                )));
            }
        }
        let shapes: Vec<Shape> = (0..count)
            .map(|l| {
                let s = 1u32 << l;
                let dims = Dims { nx: d.nx * s, ny: d.ny * s, nz: if flat { 1 } else { d.nz * s } };
                let e = [edge, edge, if flat { 1 } else { edge }];
                Shape { dims, edge: e, blocks: [dims.nx / e[0], dims.ny / e[1], dims.nz / e[2]] }
            })
            .collect();
        let covers = covered_blocks(refinement, &shapes, lengths)?;
        check_open_cells(base, &shapes, &covers)?;

        let mut levels = Vec::with_capacity(count as usize);
        let geometry = refinement.geometry.as_deref();
        let mut linked = Vec::new();
        for l in 0..count as usize {
            let mut domain = level_domain(base, geometry, l, &shapes, &covers);
            if let Some(g) = geometry {
                let found = g.mark_curved(l, &mut domain, lattice.velocities());
                linked.resize(found.len(), 0);
                linked.iter_mut().zip(found).for_each(|(a, n)| *a += n);
            }
            let layout = SparseLayout::build(&domain, block, reach, BoundaryGroups::Lists)?;
            let flags = layout.kernel_flags(&domain, radius);
            let (own_blocks, own_z) = (layout.blocks(), 0..domain.dims.nz);
            levels.push(LevelGrid::without_lists(l as u32, domain, layout, flags, own_blocks, own_z));
        }
        if let Some(name) = geometry.and_then(|g| g.unlinked(&linked)) {
            return Err(crate::curved::no_links(name));
        }
        let children = if flat { 4 } else { 8 };
        for l in 0..levels.len() {
            let (coarser, rest) = levels.split_at_mut(l);
            let (level, finer) = rest.split_first_mut().expect("level l exists");
            fill_lists(level, coarser.last(), finer.first(), flat)?;
        }
        check_walls(&levels, edge)?;
        Ok(Self { levels, children })
    }

    /// Number of levels.
    pub fn len(&self) -> usize {
        self.levels.len()
    }

    /// Whether there are no levels (never, once built).
    pub fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// The cells each level owns (fluid, open, next to a finer level).
    pub fn own_cells(&self) -> Vec<usize> {
        self.levels
            .iter()
            .map(|level| {
                let own = |f: u8| is_flow(f) && (f & LEVEL_MASK == 0 || f & !NEAR_SOLID == COALESCED);
                (0..level.layout.cells() as u32)
                    .filter(|&n| own(level.flags[n as usize]) && level.layout.cell_position(n).is_some())
                    .count()
            })
            .collect()
    }

    /// The fingerprint of a refined set-up for checkpoints: every level's
    /// configuration (its cells' flags with the interface's, its relaxation
    /// time and force) as [`crate::checkpoint::fingerprint`] takes it, from
    /// the base configuration `config`.
    pub fn fingerprint(&self, config: &SolverConfig) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"refined");
        for level in &self.levels {
            let c = super::level_config(config, level.level, level.domain.clone());
            h.update(crate::checkpoint::fingerprint(&c));
        }
        h.finalize().into()
    }

    /// The set-up report: per level its own and stored cells and memory,
    /// then the whole against a uniform grid at the finest spacing (as many
    /// cells as the flow at that spacing; state only, `config` says how
    /// many bytes a cell's state takes).
    pub fn describe(&self, config: &SolverConfig) -> String {
        let own = self.own_cells();
        let finest = self.levels.len() - 1;
        let mut lines = Vec::new();
        let (mut cells, mut bytes, mut uniform) = (0usize, 0usize, 0usize);
        for (level, &n) in self.levels.iter().zip(&own) {
            let stored = level.layout.blocks() as usize * level.layout.block_cells();
            let b = config.state_bytes_on(stored) + level.layout.table_bytes();
            lines.push(format!(
                "level {}: {n} cells (spacing 1/{}), {stored} stored with its ghost ring, {:.1} MiB",
                level.level,
                1u64 << level.level,
                b as f64 / (1u64 << 20) as f64
            ));
            cells += n;
            bytes += b;
            uniform += n * self.children.pow((finest - level.level as usize) as u32);
        }
        let uniform_bytes = config.state_bytes_on(uniform);
        lines.push(format!(
            "refined: {cells} cells, {:.1} MiB; a uniform grid at level {finest}'s spacing: {uniform} cells, {:.1} MiB ({:.1}% of its cells, {:.1}% of its memory)",
            bytes as f64 / (1u64 << 20) as f64,
            uniform_bytes as f64 / (1u64 << 20) as f64,
            100.0 * cells as f64 / uniform as f64,
            100.0 * bytes as f64 / uniform_bytes as f64
        ));
        lines.join("\n")
    }
}

/// Per level, which of its blocks it or a finer level covers: the boxes
/// asked for, grown so that every level's ring of ghost blocks lies over
/// cells its coarser level owns.
fn covered_blocks(refinement: &Refinement, shapes: &[Shape], lengths: [u32; 3]) -> Result<Vec<Vec<bool>>> {
    let count = shapes.len();
    let mut covers: Vec<Vec<bool>> =
        shapes.iter().enumerate().map(|(l, s)| vec![l == 0; s.blocks.iter().map(|&n| n as usize).product()]).collect();
    for b in &refinement.boxes {
        if b.level == 0 || b.level as usize >= count {
            return Err(Error::Setup(format!(
                "a refined box asks for level {}, but the domain has levels 1 to {} to refine to: raise `levels` or lower the box's level",
                b.level,
                count - 1
            )));
        }
        for a in 0..3 {
            if b.lo[a] >= b.hi[a] || b.hi[a] > lengths[a] {
                return Err(Error::Setup(format!(
                    "a refined box spans {:?} .. {:?}, which is empty or leaves the domain of {:?} cells (give corners in level-0 cells, lo < hi <= size)",
                    b.lo, b.hi, lengths
                )));
            }
        }
        for (l, shape) in shapes.iter().enumerate().take(b.level as usize + 1).skip(1) {
            let s = 1u32 << l;
            let lo: [u32; 3] = std::array::from_fn(|a| (b.lo[a] * s).min(shape.dims_of(a) - 1) / shape.edge[a]);
            let hi: [u32; 3] = std::array::from_fn(|a| (b.hi[a] * s).min(shape.dims_of(a)).div_ceil(shape.edge[a]));
            for z in lo[2]..hi[2] {
                for y in lo[1]..hi[1] {
                    for x in lo[0]..hi[0] {
                        covers[l][shape.block_index([x, y, z])] = true;
                    }
                }
            }
        }
    }
    // Finest first: a level's ring of blocks lies over cells of its coarser
    // level, which then covers them (level 0 covers everything).
    for l in (2..count).rev() {
        let (fine, coarse) = (shapes[l], shapes[l - 1]);
        let offsets = fine.offsets();
        let mut grown = covers[l - 1].clone();
        for_each_block(&fine, |b| {
            if covers[l][fine.block_index(b)] {
                for &o in &offsets {
                    let n = fine.step(b, o);
                    // A fine block is half a coarse block along each refined axis.
                    grown[coarse.block_index(std::array::from_fn(|a| n[a] / 2))] = true;
                }
            }
        });
        covers[l - 1] = grown;
    }
    Ok(covers)
}

impl Shape {
    fn dims_of(&self, a: usize) -> u32 {
        [self.dims.nx, self.dims.ny, self.dims.nz][a]
    }
}

/// Calls `visit` with every block position of `shape`.
fn for_each_block(shape: &Shape, mut visit: impl FnMut([u32; 3])) {
    for z in 0..shape.blocks[2] {
        for y in 0..shape.blocks[1] {
            for x in 0..shape.blocks[0] {
                visit([x, y, z]);
            }
        }
    }
}

/// Whether block `b` of level `l` lies in its ring: not covered, next to
/// a covered block.
fn in_ring(shape: &Shape, offsets: &[[i32; 3]], covers: &[bool], b: [u32; 3]) -> bool {
    !covers[shape.block_index(b)] && offsets.iter().any(|&o| covers[shape.block_index(shape.step(b, o))])
}

/// Refuses open boundaries at a resolution jump: inlets and outlets stay on
/// level 0, away from the first refined level and its ring.
fn check_open_cells(base: &Domain, shapes: &[Shape], covers: &[Vec<bool>]) -> Result<()> {
    let Some(fine) = shapes.get(1) else { return Ok(()) };
    for group in &base.open {
        for &n in &group.cells {
            let (x, y, z) = base.dims.coords(n as u32);
            let p = [2 * x, 2 * y, if fine.edge[2] == 1 { 0 } else { 2 * z }];
            let b = fine.block_of(p);
            if covers[1][fine.block_index(b)] || in_ring(fine, &fine.offsets(), &covers[1], b) {
                return Err(Error::Setup(format!(
                    "the open boundary cell ({x}, {y}, {z}) lies in a refined region or the margin around it: inlets and outlets must stay on the coarsest level, at least {} cells from any refined box",
                    2 * fine.edge[0]
                )));
            }
        }
    }
    Ok(())
}

/// Refuses a resolution jump that meets a wall: a ghost cell with a solid
/// cell within the lattice's reach. There, bounce-back at the fine
/// resolution turns populations back two fine steps at a time where the
/// coarse level turns them back once, and the coarse cells next to the
/// finer level no longer get back all that left them: mass leaks. A refined
/// region either keeps its edge off walls or runs along a wall's whole
/// extent (a slab over a whole face), so that its jump never meets one.
fn check_walls(levels: &[LevelGrid], edge: u32) -> Result<()> {
    for level in &levels[1..] {
        let Some(&c) = level.ghosts.iter().find(|&&c| level.flags[c as usize] & NEAR_SOLID != 0) else { continue };
        let p = level.layout.cell_position(c).expect("ghost cells are in the box");
        let at = p.map(|v| v >> level.level);
        return Err(Error::Setup(format!(
            "the edge of refinement level {} meets a wall or solid near level-0 cell {at:?}: keep refined boxes at \
             least {edge} cells (one block) from walls and solids, or let a box run along a wall's whole extent (a \
             slab over the whole face), so that no resolution jump touches a wall",
            level.level
        )));
    }
    Ok(())
}

/// The cells `lo..hi` (per axis) a refined level's covered blocks and
/// their ring lie in: outside them the level is wall. An axis along which
/// the ring wraps around the box is taken whole.
fn region(shape: &Shape, covers: &[bool]) -> ([u32; 3], [u32; 3]) {
    let mut lo = shape.blocks;
    let mut hi = [0; 3];
    for bz in 0..shape.blocks[2] {
        for by in 0..shape.blocks[1] {
            for bx in 0..shape.blocks[0] {
                if covers[shape.block_index([bx, by, bz])] {
                    let b = [bx, by, bz];
                    for a in 0..3 {
                        lo[a] = lo[a].min(b[a]);
                        hi[a] = hi[a].max(b[a] + 1);
                    }
                }
            }
        }
    }
    let mut cells = ([0; 3], [0; 3]);
    for a in 0..3 {
        if lo[a] >= hi[a] {
            return ([0; 3], [0; 3]);
        }
        let (l, h) = if lo[a] == 0 || hi[a] == shape.blocks[a] { (0, shape.blocks[a]) } else { (lo[a] - 1, hi[a] + 1) };
        cells.0[a] = l * shape.edge[a];
        cells.1[a] = h * shape.edge[a];
    }
    cells
}

/// Level `l`'s domain: its own cells with the geometry's flags (those of
/// `geometry` on this level's cells, or without it each level-0 cell's flag
/// on its `2^l` cells per axis), the cells finer levels cover, its ring of
/// ghost cells, and walls elsewhere.
fn level_domain(
    base: &Domain,
    geometry: Option<&super::LevelGeometry>,
    l: usize,
    shapes: &[Shape],
    covers: &[Vec<bool>],
) -> Domain {
    let shape = shapes[l];
    let finer = shapes.get(l + 1).map(|s| (s, &covers[l + 1]));
    let offsets = shape.offsets();
    let flat = shape.edge[2] == 1;
    let refined = |p: [u32; 3]| {
        finer.is_some_and(|(s, c)| c[s.block_index(s.block_of([2 * p[0], 2 * p[1], if flat { 0 } else { 2 * p[2] }]))])
    };
    let n = [shape.dims.nx as i64, shape.dims.ny as i64, shape.dims.nz as i64];
    let (lo, hi) = if l == 0 { ([0; 3], [u32::MAX; 3]) } else { region(&shape, &covers[l]) };
    let flags = CellBlocks::par_from_region(
        shape.dims,
        WALL,
        lo,
        hi,
        |_, _| None,
        |p| {
            let [x, y, z] = p;
            let b = shape.block_of(p);
            let geometry = match geometry {
                Some(g) if l > 0 => g.flag(l, p),
                _ => base.flags[[x >> l, y >> l, z >> l]],
            };
            if refined(p) {
                return REFINED;
            }
            if covers[l][shape.block_index(b)] {
                let coalesced = is_flow(geometry)
                    && offsets
                        .iter()
                        .any(|o| refined(std::array::from_fn(|a| (p[a] as i64 + o[a] as i64).rem_euclid(n[a]) as u32)));
                return if coalesced { COALESCED } else { geometry };
            }
            if l > 0 && in_ring(&shape, &offsets, &covers[l], b) {
                if is_solid(geometry) {
                    return geometry;
                }
                // Distance to the nearest covered block (blocks are at least
                // four cells, so only the adjacent ones matter).
                let local: [u32; 3] = std::array::from_fn(|a| p[a] % shape.edge[a]);
                let distance = offsets
                    .iter()
                    .filter(|&&o| covers[l][shape.block_index(shape.step(b, o))])
                    .map(|o| {
                        (0..3)
                            .map(|a| match o[a] {
                                -1 => local[a] + 1,
                                1 => shape.edge[a] - local[a],
                                _ => 0,
                            })
                            .max()
                            .unwrap_or(0)
                    })
                    .min()
                    .unwrap_or(u32::MAX);
                return if distance <= GHOST_REACH { GHOST } else { FROZEN };
            }
            WALL
        },
    );
    Domain {
        dims: shape.dims,
        flags,
        wall_velocities: base.wall_velocities.clone(),
        open: if l == 0 { base.open.clone() } else { Vec::new() },
        // Interpolated walls are marked afterwards ([`LevelGeometry::mark_curved`]);
        // refined cases refuse sponges (see `crate::case`).
        curved: Default::default(),
        sponges: Vec::new(),
        z_offset: 0,
    }
}

/// The interface lists of `level`, whose coarser and finer levels (if any)
/// are built.
fn fill_lists(level: &mut LevelGrid, coarser: Option<&LevelGrid>, finer: Option<&LevelGrid>, flat: bool) -> Result<()> {
    let layout = &level.layout;
    let d = level.domain.dims;
    let n = [d.nx as i64, d.ny as i64, d.nz as i64];
    let at = |p: [u32; 3], o: [i64; 3]| -> [u32; 3] {
        std::array::from_fn(|a| (p[a] as i64 + o[a]).rem_euclid(n[a]) as u32)
    };
    let flag_at = |p: [u32; 3]| level.domain.flags[p];
    let zs: &[i64] = if flat { &[0] } else { &[-1, 0, 1] };
    let next_to_ghost =
        |p: [u32; 3]| zs.iter().any(|&dz| (-1..=1).any(|dy| (-1..=1).any(|dx| flag_at(at(p, [dx, dy, dz])) == GHOST)));
    let k = if flat { 4 } else { 8 };
    let mut exploded: HashMap<u32, Vec<u32>> = HashMap::new();
    for c in 0..layout.cells() as u32 {
        let Some(p) = layout.cell_position(c) else { continue };
        let flag = level.flags[c as usize] & !NEAR_SOLID;
        match flag {
            GHOST | FROZEN => {
                if flag == GHOST {
                    level.ghosts.push(c);
                } else if !next_to_ghost(p) {
                    continue;
                }
                let coarse = coarser.expect("only refined levels have ghost cells");
                let q = [p[0] / 2, p[1] / 2, if flat { 0 } else { p[2] / 2 }];
                let parent = coarse.layout.storage_at(q);
                match parent {
                    Some(m) if is_flow(coarse.flags[m as usize]) && !is_open(coarse.flags[m as usize]) => {
                        let at = (p[0] & 1) | (p[1] & 1) << 1 | (p[2] & 1) << 2;
                        exploded.entry(m).or_insert_with(|| vec![NO_CHILD; k])[at as usize] = c;
                    }
                    _ => {
                        return Err(Error::Setup(format!(
                            "level {} cell {q:?} under a ghost cell of level {} is not a flow cell of its level (internal: the levels do not nest)",
                            coarse.level, level.level
                        )))
                    }
                }
            }
            COALESCED => {
                let fine = finer.expect("only a level with a finer one has cells next to it");
                level.coalesced.push(c);
                for dz in 0..if flat { 1 } else { 2 } {
                    for dy in 0..2 {
                        for dx in 0..2 {
                            let child = [2 * p[0] + dx, 2 * p[1] + dy, if flat { 0 } else { 2 * p[2] + dz }];
                            let m = fine.layout.storage_at(child);
                            match m {
                                Some(m) if fine.flags[m as usize] & !NEAR_SOLID == GHOST => level.children.push(m),
                                _ => {
                                    return Err(Error::Setup(format!(
                                        "level {} cell {child:?} over a cell next to it is not a ghost cell (internal: the levels do not nest)",
                                        fine.level
                                    )))
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    // Parents in storage order, so that neighbouring threads read
    // neighbouring coarse cells.
    let mut parents: Vec<u32> = exploded.keys().copied().collect();
    parents.sort_unstable();
    level.exploded = parents.iter().flat_map(|m| exploded[m].iter().copied()).collect();
    level.parents = parents;
    Ok(())
}
