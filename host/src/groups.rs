//! The boundary-group variants ([`kernels_gpu::groups`]): which one a
//! solver runs, the launches it makes per update, and the tables the kernel
//! that updates open cells with the fluid ones reads. Both executors run
//! the same passes over the same tables, the CPU by calling the per-cell
//! functions, a GPU by launching kernels.

use crate::error::{Error, Result};
use crate::part_grid::PartGrid;
use crate::solver::{GridLayout, Precision, SolverConfig};
use crate::sparse::SparseLayout;
use kernels_gpu::groups::{OpenCells, MAX_GROUPS};
use kernels_gpu::{CollisionKind, OpenBoundary, Real, Streaming};
use std::collections::HashMap;
use std::ops::Range;

/// How a grid's inlets and outlets are updated (results are the same bit
/// for bit): see [`kernels_gpu::groups`] for what each does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BoundaryGroups {
    /// Bulk kernel over every cell, then one kernel per inlet or outlet
    /// over its list of cells.
    #[default]
    Lists,
    /// One kernel updates every cell, open ones included.
    Naive,
    /// Boundary blocks stored first: the heavy kernel runs them, the bulk
    /// kernel the rest (sparse grids).
    Memory,
    /// A bit per block: the bulk and the heavy kernel each run over every
    /// block and skip the other's (sparse grids).
    Bitmask,
}

impl BoundaryGroups {
    /// Every variant.
    pub const ALL: [BoundaryGroups; 4] =
        [BoundaryGroups::Lists, BoundaryGroups::Naive, BoundaryGroups::Memory, BoundaryGroups::Bitmask];

    /// Name in case files, reports and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            BoundaryGroups::Lists => "lists",
            BoundaryGroups::Naive => "naive",
            BoundaryGroups::Memory => "memory",
            BoundaryGroups::Bitmask => "bitmask",
        }
    }

    /// The variant `boundary_groups = "auto"` (a case's default) picks: the
    /// bulk kernel alone (`lists`) without inlets or outlets; with them the
    /// one measured fastest in the wind tunnel of `lbm bench --geometry
    /// tunnel` (a sphere between a regularized inlet and outlet).
    ///
    /// - Dense box: `naive` (an inlet list on an x face reads its cells a
    ///   row apart, and the list kernels cost the dense D3Q27 tunnel a third
    ///   of its speed, `docs/bench/h100-2026-11-24-*-boundary-groups.txt`),
    ///   except the operators chosen at run time ([`kernels_gpu::Chosen`],
    ///   96 registers against 72 in their own bulk kernels) on a D3Q27 box
    ///   with 16-bit storage, where `lists` is 9-18% ahead
    ///   (`docs/bench/h200-2026-11-29-trt-pair-by-pair.txt`).
    /// - Sparse grid, 16-bit storage: `memory`, whose heavy kernel walks
    ///   boundary blocks open cells first ([`walks_open_cells_first`]), on
    ///   8^3 blocks (ahead of `lists` by 0.2-3.7%,
    ///   `docs/bench/h200-2026-11-30-tunnel-16-bit-lists-vs-memory.txt`) and
    ///   on 4^3 blocks, except D3Q27 Esoteric Pull (`lists` ahead by up to
    ///   4%); `lists` on rows, where neither is ahead in every row.
    /// - Sparse grid, f32 and f64: `naive` with two-lattice streaming (ahead
    ///   of `memory` by 0-8%), `memory` with Esoteric Pull (on rows 5-21%
    ///   ahead of `naive`, on 8^3 blocks up to 9%), except f32 on 4^3 blocks:
    ///   `naive`.
    ///   (4^3 blocks, f32 and f64: `docs/bench/h200-2026-12-01-tunnel-groups-auto.txt`.)
    pub fn auto(
        grid: GridLayout,
        has_open: bool,
        collision: CollisionKind,
        q: usize,
        precision: Precision,
        streaming: Streaming,
    ) -> Self {
        use crate::sparse::BlockShape::{Cube4, Cube8, Row32};
        use BoundaryGroups::{Lists, Memory, Naive};
        let pull = streaming == Streaming::EsotericPull;
        let GridLayout::Sparse { block } = grid else {
            let chosen_d3q27_16_bit = !collision.stamped() && q == 27 && precision == Precision::F16;
            return match (has_open, chosen_d3q27_16_bit) {
                (true, false) => Naive,
                _ => Lists,
            };
        };
        match (has_open, precision, block) {
            (false, ..) => Lists,
            (true, Precision::F16, Cube8) => Memory,
            (true, Precision::F16, Cube4) if pull && q == 27 => Lists,
            (true, Precision::F16, Cube4) => Memory,
            (true, Precision::F16, Row32) => Lists,
            (true, Precision::F32, Cube4) => Naive,
            (true, Precision::F32 | Precision::F64, _) if !pull => Naive,
            (true, Precision::F32 | Precision::F64, _) => Memory,
        }
    }

    /// Whether the variant groups a sparse grid's blocks (the dense box has none).
    pub const fn needs_blocks(self) -> bool {
        matches!(self, BoundaryGroups::Memory | BoundaryGroups::Bitmask)
    }
}

/// One launch of an update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pass {
    /// The bulk kernel over these launch units.
    Bulk(Range<u32>),
    /// The kernel that updates open cells too, over these units.
    Any(Range<u32>),
    /// Each inlet's and outlet's kernel over its list of cells.
    Lists,
}

/// The launches of an update of the launch units `units` with `groups`:
/// `lists` says whether the update includes the open-boundary lists (every
/// region but a partition's interior), `boundary_blocks` how many blocks a
/// `memory` grid stores first.
pub fn passes(groups: BoundaryGroups, units: &[Range<u32>], lists: bool, boundary_blocks: u32) -> Vec<Pass> {
    let mut out = Vec::new();
    for u in units.iter().filter(|u| !u.is_empty()) {
        match groups {
            BoundaryGroups::Lists => out.push(Pass::Bulk(u.clone())),
            BoundaryGroups::Naive => out.push(Pass::Any(u.clone())),
            BoundaryGroups::Memory => {
                let split = boundary_blocks.clamp(u.start, u.end);
                if split > u.start {
                    out.push(Pass::Any(u.start..split));
                }
                if split < u.end {
                    out.push(Pass::Bulk(split..u.end));
                }
            }
            BoundaryGroups::Bitmask => out.extend([Pass::Bulk(u.clone()), Pass::Any(u.clone())]),
        }
    }
    if lists && groups == BoundaryGroups::Lists {
        out.push(Pass::Lists);
    }
    out
}

/// What the kernel that updates open cells too reads ([`OpenCells`]), in
/// host memory: the groups' parameters and each open cell's group number,
/// indexed as the variant indexes them.
pub struct OpenTables<T> {
    /// What each inlet and outlet imposes.
    pub groups: Vec<OpenBoundary<T>>,
    /// Group number of each entry (see [`OpenCells`]).
    pub group_of: Vec<u16>,
    /// Per block, its first entry in blocks (`bitmask`); empty: direct.
    pub slot: Vec<u32>,
    /// On a grid of blocks, the local number of the cell each thread
    /// updates ([`OpenCells::walk`]), at its entry masked by `order_mask`:
    /// per boundary block its open cells first ([`walks_open_cells_first`]),
    /// or one identity run for every block. Empty on the dense box.
    pub order: Vec<u16>,
    /// See `order`.
    pub order_mask: u32,
}

/// Whether the kernel that updates open cells too walks boundary blocks
/// open cells first ([`OpenCells::walk`]): with `memory` and `bitmask`,
/// which run it over boundary blocks only, except for two-lattice f32 and
/// f64. In the wind tunnel of `lbm bench --geometry tunnel` (D3Q27, 128^3
/// and 256^3, on an H200) walking made `memory` 1-13% faster on 8^3 blocks
/// and 14-36% on rows in 16-bit and with f32 Esoteric Pull, and 5-13%
/// slower with f32 two-lattice (`docs/bench/h200-2026-11-30-open-cells-first.txt`).
pub fn walks_open_cells_first(config: &SolverConfig) -> bool {
    matches!(config.groups, BoundaryGroups::Memory | BoundaryGroups::Bitmask)
        && (config.streaming == Streaming::EsotericPull || config.precision == Precision::F16)
}

impl<T: Real> OpenTables<T> {
    /// The tables `config`'s variant reads on `grid`; none for `lists`.
    pub fn build(config: &SolverConfig, grid: &PartGrid) -> Result<Option<Self>> {
        if config.groups == BoundaryGroups::Lists {
            return Ok(None);
        }
        // One table group per inlet or outlet, and per distinct velocity of
        // an inlet with a profile: the tables number groups, not cells.
        let collision = config.collision_params();
        let mut groups: Vec<OpenBoundary<T>> = Vec::new();
        // (storage number, group) of every open cell.
        let mut cells: Vec<(u32, usize)> = Vec::new();
        for g in &config.domain.open {
            let uniform = g.state.kernel_params(collision);
            let mut numbers: HashMap<[u64; 3], usize> = HashMap::new();
            for (k, n) in grid.stored_cells(&g.cells).into_iter().enumerate() {
                let u = g.velocity(k).map(T::from_f64);
                let number = *numbers.entry(u.map(|v| v.to_f64().to_bits())).or_insert_with(|| {
                    groups.push(OpenBoundary { u, ..uniform });
                    groups.len() - 1
                });
                cells.push((n, number));
            }
        }
        if groups.len() > MAX_GROUPS {
            return Err(Error::Setup(format!(
                "the inlets and outlets impose {} different states (a profile counts each velocity), more than the \
                 {MAX_GROUPS} the boundary-group variant \"{}\" numbers: use boundary_groups = \"lists\"",
                groups.len(),
                config.groups.name()
            )));
        }
        let (order, order_mask) = match grid {
            PartGrid::Sparse(layout) if walks_open_cells_first(config) => {
                (walk_order(layout, config.groups, cells.iter().map(|&(n, _)| n)), u32::MAX)
            }
            PartGrid::Sparse(layout) => ((0..layout.block_cells() as u16).collect(), layout.block_cells() as u32 - 1),
            PartGrid::Dense(_) => (Vec::new(), 0),
        };
        let cells = cells.into_iter().map(|(n, k)| (n, k as u16));
        let (group_of, slot) = match (config.groups, grid) {
            // Indirect: a slot per block, then a run of entries per boundary block.
            (BoundaryGroups::Bitmask, PartGrid::Sparse(layout)) => {
                let v = layout.block_cells() as u32;
                let mut slot = vec![u32::MAX; layout.blocks() as usize];
                for (k, &b) in layout.boundary_blocks().iter().enumerate() {
                    slot[b as usize] = k as u32;
                }
                let mut group_of = vec![0; layout.boundary_blocks().len() * v as usize];
                for (n, k) in cells {
                    group_of[(slot[(n / v) as usize] * v + n % v) as usize] = k;
                }
                (group_of, slot)
            }
            // Direct: an entry per storage number, over every cell (`naive`)
            // or up to the last open one (the boundary blocks of `memory`).
            _ => {
                let cells: Vec<(u32, u16)> = cells.collect();
                let last = cells.iter().map(|&(n, _)| n as usize + 1).max().unwrap_or(0);
                let mut group_of = vec![0; if config.groups == BoundaryGroups::Naive { grid.cells() } else { last }];
                for (n, k) in cells {
                    group_of[n as usize] = k;
                }
                (group_of, Vec::new())
            }
        };
        Ok(Some(Self { groups, group_of, slot, order, order_mask }))
    }

    /// The kernel argument over these host tables (valid while they live).
    /// The host updates each cell by its own number, so it takes no order.
    pub fn host_cells(&self) -> OpenCells<T> {
        let slot = if self.slot.is_empty() { std::ptr::null() } else { self.slot.as_ptr() };
        // SAFETY: `build` sizes the tables for every open cell of the grid.
        unsafe { OpenCells::new(self.groups.as_ptr(), self.group_of.as_ptr(), slot, std::ptr::null(), 0) }
    }
}

/// The order in which the kernel that updates open cells too walks each
/// boundary block of `layout` ([`OpenTables::order`]), entries indexed as
/// `groups` indexes them (direct for `memory`, whose boundary blocks come
/// first; by slot for `bitmask`): per block its open cells (storage
/// numbers in `open`), then its other cells, each in storage order.
fn walk_order(layout: &SparseLayout, groups: BoundaryGroups, open: impl Iterator<Item = u32>) -> Vec<u16> {
    let v = layout.block_cells() as u32;
    let boundary = layout.boundary_blocks();
    let mut is_open = vec![false; boundary.len() * v as usize];
    let at = |n: u32| boundary.binary_search(&(n / v)).ok().map(|k| k * v as usize + (n % v) as usize);
    for i in open.filter_map(at) {
        is_open[i] = true;
    }
    let entries = match groups {
        BoundaryGroups::Bitmask => boundary.len(),
        _ => boundary.last().map_or(0, |&b| b as usize + 1),
    };
    let mut order = vec![0u16; entries * v as usize];
    for (k, &b) in boundary.iter().enumerate() {
        let first = if groups == BoundaryGroups::Bitmask { k } else { b as usize } * v as usize;
        let own = &is_open[k * v as usize..(k + 1) * v as usize];
        let locals = (0..v as u16).filter(|&l| own[l as usize]).chain((0..v as u16).filter(|&l| !own[l as usize]));
        for (slot, l) in order[first..first + v as usize].iter_mut().zip(locals) {
            *slot = l;
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `auto` takes the variants measured fastest ([`BoundaryGroups::auto`]):
    /// the bulk kernel alone without open cells, else by grid, storage,
    /// block shape and streaming scheme.
    #[test]
    fn auto_takes_the_variant_measured_fastest() {
        use crate::sparse::BlockShape::{Cube4, Cube8, Row32};
        use kernels_gpu::CollisionKind::{Bgk, Cumulant, Mrt, Trt};
        use Precision::{F16, F32, F64};
        let (dense, sparse) = (GridLayout::Dense, GridLayout::Sparse { block: Cube8 });
        let (sparse4, rows) = (GridLayout::Sparse { block: Cube4 }, GridLayout::Sparse { block: Row32 });
        use BoundaryGroups::{Lists, Memory, Naive};
        use Streaming::{EsotericPull as Ep, TwoLattice as Ab};
        for (grid, open, kind, q, precision, scheme, want) in [
            (dense, false, Mrt, 27, F32, Ep, Lists),
            (sparse, false, Bgk, 19, F32, Ab, Lists),
            (sparse4, false, Bgk, 19, F16, Ab, Lists),
            (dense, true, Bgk, 27, F32, Ep, Naive),
            (dense, true, Bgk, 19, F16, Ab, Naive),
            (dense, true, Trt, 19, F64, Ep, Naive),
            (dense, true, Mrt, 19, F32, Ab, Naive),
            (dense, true, Mrt, 27, F32, Ep, Naive),
            (dense, true, Mrt, 27, F16, Ep, Lists),
            (dense, true, Cumulant, 27, F16, Ab, Lists),
            (sparse, true, Bgk, 19, F16, Ab, Memory),
            (sparse, true, Mrt, 27, F16, Ep, Memory),
            (sparse4, true, Bgk, 19, F16, Ep, Memory),
            (sparse4, true, Mrt, 27, F16, Ab, Memory),
            (sparse4, true, Cumulant, 27, F16, Ep, Lists),
            (rows, true, Cumulant, 27, F16, Ab, Lists),
            (sparse, true, Cumulant, 27, F32, Ep, Memory),
            (rows, true, Bgk, 19, F32, Ep, Memory),
            (sparse, true, Cumulant, 27, F32, Ab, Naive),
            (rows, true, Mrt, 19, F32, Ab, Naive),
            (sparse4, true, Bgk, 27, F32, Ep, Naive),
            (sparse, true, Bgk, 19, F64, Ab, Naive),
            (sparse4, true, Bgk, 27, F64, Ep, Memory),
            (rows, true, Bgk, 19, F64, Ep, Memory),
        ] {
            let what = format!("{grid:?} open {open} {kind:?} D3Q{q} {precision:?} {scheme:?}");
            assert_eq!(BoundaryGroups::auto(grid, open, kind, q, precision, scheme), want, "{what}");
        }
    }

    /// With `memory` and `bitmask`, the threads of each boundary block
    /// update each of its cells once, its open cells first; the other
    /// variants keep each thread on its own cell.
    #[test]
    fn boundary_blocks_are_walked_open_cells_first() {
        use crate::bench::BenchGeometry;
        use crate::sparse::BlockShape;
        use crate::LatticeKind;
        use kernels_gpu::flags::is_open;
        for block in [BlockShape::Cube4, BlockShape::Cube8, BlockShape::Row32] {
            for groups in [BoundaryGroups::Memory, BoundaryGroups::Bitmask, BoundaryGroups::Naive] {
                let config = SolverConfig {
                    grid: GridLayout::Sparse { block },
                    groups,
                    ..BenchGeometry::Tunnel
                        .config(LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, 64)
                        .unwrap()
                };
                let grid = PartGrid::new(&config, false).unwrap();
                let PartGrid::Sparse(layout) = &grid else { unreachable!() };
                let tables = OpenTables::<f32>::build(&config, &grid).unwrap().unwrap();
                let what = format!("{block:?} {groups:?}");
                let flags = grid.kernel_flags(&config);
                let slot = if tables.slot.is_empty() { std::ptr::null() } else { tables.slot.as_ptr() };
                let (order, mask) = (tables.order.as_ptr(), tables.order_mask);
                // SAFETY: the tables `build` made for this grid.
                let cells =
                    unsafe { OpenCells::new(tables.groups.as_ptr(), tables.group_of.as_ptr(), slot, order, mask) };
                let (v, shift) = (layout.block_cells() as u32, layout.grid().block_cells().ilog2());
                let boundary = layout.boundary_blocks();
                assert!(!boundary.is_empty(), "{what}");
                let blocks: Vec<u32> =
                    if groups == BoundaryGroups::Naive { (0..layout.blocks()).collect() } else { boundary.to_vec() };
                for b in blocks {
                    // SAFETY: every cell the kernel visits has an entry.
                    let walked: Vec<u32> = (0..v).map(|l| unsafe { cells.walk((b << shift) | l, shift) }).collect();
                    if groups == BoundaryGroups::Naive {
                        assert!(walked.iter().zip(b << shift..).all(|(&w, n)| w == n), "{what}: own cells");
                        continue;
                    }
                    let mut sorted = walked.clone();
                    sorted.sort_unstable();
                    assert_eq!(sorted, ((b << shift)..((b + 1) << shift)).collect::<Vec<_>>(), "{what} block {b}");
                    let open: Vec<bool> = walked.iter().map(|&n| is_open(flags[n as usize])).collect();
                    let count = open.iter().filter(|&&o| o).count();
                    assert!(count > 0, "{what} block {b}");
                    assert!(open[..count].iter().all(|&o| o), "{what} block {b}: open cells first");
                }
            }
        }
    }

    #[test]
    fn each_variant_updates_each_unit_once() {
        use BoundaryGroups::*;
        let units = [0..3, 5..9];
        assert_eq!(passes(Lists, &units, true, 0), [Pass::Bulk(0..3), Pass::Bulk(5..9), Pass::Lists]);
        assert_eq!(passes(Lists, &units, false, 0), [Pass::Bulk(0..3), Pass::Bulk(5..9)]);
        assert_eq!(passes(Naive, &units, true, 0), [Pass::Any(0..3), Pass::Any(5..9)]);
        let whole = std::slice::from_ref(&(0..9));
        assert_eq!(passes(Memory, whole, true, 4), [Pass::Any(0..4), Pass::Bulk(4..9)]);
        assert_eq!(passes(Memory, whole, true, 0), [Pass::Bulk(0..9)]);
        assert_eq!(passes(Bitmask, whole, true, 4), [Pass::Bulk(0..9), Pass::Any(0..9)]);
    }
}
