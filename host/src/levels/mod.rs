//! Refinement levels: a stack of block-sparse grids, level `l` with cells
//! `2^l` times finer than level 0's and a time step `2^l` times shorter
//! (acoustic scaling: the lattice velocities are the same on every level,
//! and `tau_l - 1/2 = 2^l (tau_0 - 1/2)` keeps the viscosity).
//!
//! A case asks for boxes refined to a level; [`Levels::build`] grows each
//! level's region so that the levels nest with room for the interface
//! between them (the ghost cells of a level lie over cells its coarser level
//! owns), and flags each level's cells:
//!
//! - its *own* cells: the region it covers and no finer level does, with
//!   the geometry's flags; those next to a finer level are
//!   [`kernels_gpu::flags::COALESCED`];
//! - cells a finer level covers: [`kernels_gpu::flags::REFINED`], solid to
//!   this level, stored only where its own cells reach them;
//! - for every level but 0, a ring one block thick around its region of
//!   [`kernels_gpu::flags::GHOST`] cells (up to three cells from the region)
//!   and [`kernels_gpu::flags::FROZEN`] ones (beyond).
//!
//! How the levels exchange populations (explosion, ghost streaming,
//! coalescence) is the volumetric scheme of Rohde et al. (2006), described
//! in [`kernels_gpu::levels`]; [`RefinedCpu`] runs it on the CPU,
//! [`RefinedGpu`] on one GPU.

mod build;
mod cpu;
mod geometry;
mod gpu;
pub mod output;
mod solver;
mod split;
mod split_run;

pub use build::{LevelGrid, Levels};
pub use cpu::{level_config, RefinedCpu};
pub use geometry::{LevelGeometry, LevelObject};
pub use gpu::{Part, RefinedGpu};
pub use solver::{build_refined, LevelFields, RefinedSolver};
pub use split::SplitLevels;

/// A box of the domain refined to at least `level`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefinedBox {
    /// First cell, in level-0 cells.
    pub lo: [u32; 3],
    /// One past the last cell, in level-0 cells.
    pub hi: [u32; 3],
    /// The level (1 is twice as fine as level 0).
    pub level: u32,
}

/// Boxes refining to `level` every level-0 cell within `distance` cells
/// (Euclidean, between cell centres) of a cell of `object`, merged into
/// one box per block of `level` (blocks of `edge` cells there) they touch.
pub fn band(object: &crate::cell_blocks::CellBlocks<bool>, distance: f64, level: u32, edge: u32) -> Vec<RefinedBox> {
    let d = object.dims();
    let n = [d.nx, d.ny, d.nz];
    // Level-0 cells per block of `level` along an axis (one cell at least).
    let group = (edge >> level.min(31)).max(1);
    let reach = distance.max(0.0).floor() as i64;
    let mut groups = std::collections::BTreeSet::new();
    let inside = |p: [i64; 3]| (0..3).all(|a| p[a] >= 0 && p[a] < n[a] as i64) && object[p.map(|v| v as u32)];
    for (b, view) in object.blocks() {
        if matches!(view, crate::cell_blocks::BlockView::Uniform(false)) {
            continue;
        }
        let (lo, hi) = object.block_box(b);
        for z in lo[2]..hi[2] {
            for y in lo[1]..hi[1] {
                for x in lo[0]..hi[0] {
                    let p = [x as i64, y as i64, z as i64];
                    // Only the surface matters: an inner cell's ball lies in
                    // its neighbours' balls and the object.
                    let surface = (0..3).any(|a| {
                        [-1, 1].iter().any(|&s| {
                            let mut q = p;
                            q[a] += s;
                            n[a] > 1 && !inside(q)
                        })
                    });
                    if !inside(p) || (!surface && reach > 0) {
                        continue;
                    }
                    let zs = if n[2] == 1 { 0..=0 } else { -reach..=reach };
                    for dz in zs {
                        for dy in -reach..=reach {
                            for dx in -reach..=reach {
                                let q = [p[0] + dx, p[1] + dy, p[2] + dz];
                                let far = ((dx * dx + dy * dy + dz * dz) as f64).sqrt() > distance;
                                if !far && (0..3).all(|a| q[a] >= 0 && q[a] < n[a] as i64) {
                                    groups.insert(q.map(|v| v as u32 / group));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    groups
        .into_iter()
        .map(|g| RefinedBox {
            lo: std::array::from_fn(|a| g[a] * group),
            hi: std::array::from_fn(|a| ((g[a] + 1) * group).min(n[a])),
            level,
        })
        .collect()
}

/// What a case asks to refine.
#[derive(Clone, Debug, Default)]
pub struct Refinement {
    /// Number of levels, level 0 included.
    pub levels: u32,
    /// The refined boxes.
    pub boxes: Vec<RefinedBox>,
    /// How each level's cells stream and collide.
    pub fusion: Fusion,
    /// The objects on each level's cells; without it every level copies
    /// level 0's flags.
    pub geometry: Option<std::sync::Arc<LevelGeometry>>,
}

/// How each level's own cells stream and collide. Either way the cells at a
/// resolution jump (ghost cells, explosion, coalescence) have kernels of
/// their own over lists of them, and the populations are the same bit for
/// bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fusion {
    /// One stream-collide kernel over all of a level's blocks: blocks away
    /// from a jump never leave it (Mahmoud et al. 2025, section 5).
    #[default]
    Fused,
    /// Streaming and collision as two kernels over every block: the unfused
    /// baseline the fusion is measured against. It streams into the second
    /// lattice and collides there, so it takes two-lattice streaming and f32
    /// or f64 storage (where a population stored between the kernels comes
    /// back exact).
    Split,
}

impl Fusion {
    /// Both, as case files and the command line name them.
    pub const ALL: [Fusion; 2] = [Fusion::Fused, Fusion::Split];

    /// Its name in case files and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Fusion::Fused => "fused",
            Fusion::Split => "split",
        }
    }
}

/// The most levels a domain may have: a level's cells are `2^l` times
/// finer per axis, and positions stay 32-bit.
pub const MAX_LEVELS: u32 = 8;

#[cfg(test)]
mod tests;
