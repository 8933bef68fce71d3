//! Tiling a thermal box over several GPUs (Calore et al. 2016, §4–5): the
//! tiles, what each runs in a step, and the halo copies between them.
//!
//! The box is cut into `x * y` tiles, each a framed box of its own with a
//! halo of three cells. A step fills every tile's halo from its neighbours
//! (or from itself along an axis with one tile): first the three rows above
//! and below every interior column, then the three columns on each side,
//! every stored row of them, so the corners travel with the columns. The
//! bulk of a tile, the sites three or more cells from its sides, reads no
//! halo and runs while the halos travel; the frame of three rows and
//! columns around it runs after.
//!
//! Columns are contiguous in the tiles' layout, so a column halo is three
//! runs of `S` values per population, sent as they lie. A row halo is three
//! values per column: either copied strided by the copy engine, or packed by
//! a gather kernel, sent as one contiguous run and unpacked (Calore et al.'s
//! pack / unpack).

use super::{ThermalConfig, ThermalPhase};
use crate::error::{Error, Result};
use crate::halo::{HaloRun, Placement};
use kernels_gpu::thermal::d2q37::Q;
use kernels_gpu::thermal::frame::{HALO, PAD};
use kernels_gpu::thermal::step::{WALL_BOTTOM, WALL_ROWS, WALL_TOP};
use kernels_gpu::thermal::Frame;
use std::ops::Range;

/// How the row halos, three values per column, travel between tiles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RowHalo {
    /// One strided copy of the values where they lie.
    #[default]
    Strided,
    /// Gathered into a contiguous buffer, sent, scattered.
    Packed,
}

impl RowHalo {
    /// The name in options and reports.
    pub fn name(self) -> &'static str {
        match self {
            RowHalo::Strided => "strided",
            RowHalo::Packed => "packed",
        }
    }
}

/// How a box is cut into tiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Tiling {
    /// Tiles along x.
    pub x: u32,
    /// Tiles along y.
    pub y: u32,
    /// How row halos travel (when `y > 1`, or x is tiled and y periodic).
    pub rows: RowHalo,
}

impl Default for Tiling {
    fn default() -> Self {
        Self::ONE
    }
}

impl Tiling {
    /// One tile: the whole box.
    pub const ONE: Tiling = Tiling { x: 1, y: 1, rows: RowHalo::Strided };

    /// `x * y` tiles.
    pub fn new(x: u32, y: u32) -> Self {
        Self { x, y, rows: RowHalo::Strided }
    }

    /// Number of tiles.
    pub fn count(&self) -> usize {
        (self.x * self.y) as usize
    }

    /// `XxY`: tiles along x by tiles along y, e.g. `4x1` (1D along x) or `2x2`.
    pub fn name(&self) -> String {
        format!("{}x{}", self.x, self.y)
    }
}

/// The smallest tile side: the bulk (three cells in from each side) and the
/// frame around it must not overlap.
pub const MIN_TILE: u32 = 2 * HALO;

/// One tile: where it lies in the box, its walls and its neighbours.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tile {
    /// Its column and row in the mesh of tiles.
    pub at: [u32; 2],
    /// First column and row of the box it holds.
    pub origin: [u32; 2],
    /// Its framed box.
    pub frame: Frame,
    /// [`WALL_BOTTOM`] and [`WALL_TOP`] where its sides are the box's walls.
    pub walls: u32,
    /// Tiles (numbers) to its left, right, below and above (itself along an
    /// axis with one tile, the wrap-around along a periodic one).
    pub neighbours: [usize; 4],
}

/// Sizes of `n` sites cut into `parts` as evenly as possible (the first
/// ones one larger).
fn split(n: u32, parts: u32) -> Vec<Range<u32>> {
    let (base, extra) = (n / parts, n % parts);
    let mut start = 0;
    (0..parts)
        .map(|k| {
            let len = base + (k < extra) as u32;
            start += len;
            start - len..start
        })
        .collect()
}

/// The tiles of `config`, numbered `x + tiles_x * y`.
pub fn tiles(config: &ThermalConfig) -> Vec<Tile> {
    let t = config.tiling;
    let (xs, ys) = (split(config.nx, t.x), split(config.ny, t.y));
    let number = |i: u32, j: u32| (i % t.x + t.x * (j % t.y)) as usize;
    let mut out = Vec::with_capacity(t.count());
    for (j, rows) in ys.iter().enumerate() {
        for (i, columns) in xs.iter().enumerate() {
            let (i, j) = (i as u32, j as u32);
            let mut walls = 0;
            if config.walls.is_some() && j == 0 {
                walls |= WALL_BOTTOM;
            }
            if config.walls.is_some() && j == t.y - 1 {
                walls |= WALL_TOP;
            }
            out.push(Tile {
                at: [i, j],
                origin: [columns.start, rows.start],
                frame: Frame::new(columns.len() as u32, rows.len() as u32),
                walls,
                neighbours: [number(i + t.x - 1, j), number(i + 1, j), number(i, j + t.y - 1), number(i, j + 1)],
            });
        }
    }
    out
}

/// Checks that `config`'s tiling cuts its box into tiles that can run.
pub fn validate(config: &ThermalConfig) -> Result<()> {
    let t = config.tiling;
    if t.x == 0 || t.y == 0 {
        return Err(Error::Setup(format!(
            "a thermal tiling needs at least one tile along each axis, got {}",
            t.name()
        )));
    }
    if t.count() > 1 {
        for (axis, n, parts) in [("x", config.nx, t.x), ("y", config.ny, t.y)] {
            if n / parts < MIN_TILE {
                return Err(Error::Setup(format!(
                    "{n} sites along {axis} cut into {parts} tiles leaves tiles under {MIN_TILE} sites \
                     (a tile's bulk lies 3 sites in from each side): use fewer tiles along {axis}"
                )));
            }
        }
    }
    Ok(())
}

/// A window of a tile: interior columns and rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Interior columns.
    pub columns: Range<u32>,
    /// Rows.
    pub rows: Range<u32>,
}

impl Window {
    /// Sites in the window.
    pub fn sites(&self) -> u64 {
        self.columns.len() as u64 * self.rows.len() as u64
    }
}

/// What a tile runs in a step: `bulk` reads no halo and runs while the
/// halos travel, `edges` after they have arrived.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TilePlan {
    /// Phases before the halos are needed.
    pub bulk: Vec<ThermalPhase>,
    /// Phases after.
    pub edges: Vec<ThermalPhase>,
}

/// Updates the window `w` away from the walls: the fused kernel, or
/// propagate then collide.
fn update(w: Window, fused: bool, out: &mut Vec<ThermalPhase>) {
    if w.sites() == 0 {
        return;
    }
    if fused {
        out.push(ThermalPhase::PropagateCollide(w));
    } else {
        out.extend([ThermalPhase::Propagate(w.clone()), ThermalPhase::Collide(w)]);
    }
}

/// The phases of one step of `tile` of a box run as `config`. The sites
/// three or more cells in from the tile's sides are its bulk, which reads
/// no halo; the frame around it runs once the halo is in (on a GPU, one
/// tile runs its frame beside its bulk). A box under [`MIN_TILE`] sites
/// along a side has no bulk. The rows next to a wall run propagate, the
/// walls, collide.
pub fn tile_plan(config: &ThermalConfig, tile: &Tile) -> TilePlan {
    let (nx, ny, fused) = (tile.frame.nx, tile.frame.ny, config.fused);
    let (bottom, top) = (tile.walls & WALL_BOTTOM != 0, tile.walls & WALL_TOP != 0);
    let mut plan = TilePlan::default();
    let all = 0..nx;
    let window = |columns: Range<u32>, rows: Range<u32>| Window { columns, rows };
    // Bands of rows next to the walls.
    let mut walled = Vec::new();
    if bottom {
        walled.push(window(all.clone(), 0..WALL_ROWS));
    }
    if top {
        walled.push(window(all.clone(), ny - WALL_ROWS..ny));
    }
    let low = if bottom { WALL_ROWS } else { 0 };
    let high = if top { ny - WALL_ROWS } else { ny };
    if config.tiling.count() == 1 && (nx < MIN_TILE || ny < MIN_TILE) {
        update(window(all.clone(), low..high), fused, &mut plan.edges);
    } else {
        // The bulk, then the frame around it: the bottom and top bands of
        // three rows (unless a wall's), the left and right strips between.
        update(window(HALO..nx - HALO, HALO..ny - HALO), fused, &mut plan.bulk);
        if !bottom {
            update(window(all.clone(), 0..HALO), fused, &mut plan.edges);
        }
        if !top {
            update(window(all.clone(), ny - HALO..ny), fused, &mut plan.edges);
        }
        update(window(0..HALO, HALO..ny - HALO), fused, &mut plan.edges);
        update(window(nx - HALO..nx, HALO..ny - HALO), fused, &mut plan.edges);
    }
    if !walled.is_empty() {
        plan.edges.extend(walled.iter().cloned().map(ThermalPhase::Propagate));
        plan.edges.push(ThermalPhase::Walls);
        plan.edges.extend(walled.into_iter().map(ThermalPhase::Collide));
    }
    plan
}

/// One halo copy: values of the shape of `shape` (its width, rows and
/// depth) from `src` in tile `from`'s buffer to `dst` in tile `to`'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HaloCopy {
    /// Sending tile.
    pub from: usize,
    /// Receiving tile.
    pub to: usize,
    /// The shape (its placement fields are the sender's).
    pub shape: HaloRun,
    /// Where the values lie in the sender's buffer.
    pub src: Placement,
    /// Where they go in the receiver's.
    pub dst: Placement,
}

impl HaloCopy {
    /// A copy of `width x rows x depth` values.
    fn new(from: usize, to: usize, [width, rows, depth]: [usize; 3], src: Placement, dst: Placement) -> Self {
        let shape = HaloRun {
            from: src.start,
            to: dst.start,
            width,
            rows,
            row_pitch: src.row_pitch,
            depth,
            depth_pitch: src.slab_pitch,
        };
        Self { from, to, shape, src, dst }
    }

    /// Buffer indices of the copy's values at `placement`, in the order a
    /// packed buffer holds them.
    pub fn indices(&self, placement: Placement) -> Vec<u64> {
        let s = &self.shape;
        let mut out = Vec::with_capacity(s.values());
        for d in 0..s.depth {
            for r in 0..s.rows {
                let first = placement.start + d * placement.slab_pitch + r * placement.row_pitch;
                out.extend((first..first + s.width).map(|k| k as u64));
            }
        }
        out
    }
}

/// The row halos of tile `to`: the three rows below and above its interior
/// columns that are not beyond a wall, from the tiles below and above.
pub fn row_copies(tiles: &[Tile], to: usize) -> Vec<HaloCopy> {
    let t = &tiles[to];
    let mut out = Vec::new();
    for (side, wall) in [(2, WALL_BOTTOM), (3, WALL_TOP)] {
        if t.walls & wall != 0 {
            continue;
        }
        let from = t.neighbours[side];
        let (f, g) = (&tiles[from].frame, &t.frame);
        // The sender's three rows next to the shared side; the receiver's
        // three halo rows beyond it.
        let (src_row, dst_row) = if side == 2 { (f.ny as i32 - 3, -3) } else { (0, g.ny as i32) };
        let at = |frame: &Frame, row: i32| Placement {
            start: frame.index(frame.site(0, row)),
            row_pitch: frame.stride as usize,
            slab_pitch: frame.plane(),
        };
        out.push(HaloCopy::new(from, to, [HALO as usize, g.nx as usize, Q], at(f, src_row), at(g, dst_row)));
    }
    out
}

/// The column halos of tile `to`: three columns on each side, every stored
/// row (the row halos with them), from the tiles to its left and right.
pub fn column_copies(tiles: &[Tile], to: usize) -> Vec<HaloCopy> {
    let t = &tiles[to];
    [0, 1]
        .into_iter()
        .map(|side| {
            let from = t.neighbours[side];
            let (f, g) = (&tiles[from].frame, &t.frame);
            debug_assert_eq!(f.stride, g.stride, "tiles of a row have the same height");
            let (src_column, dst_column) = if side == 0 { (f.nx as i32 - 3, -3) } else { (0, g.nx as i32) };
            let at = |frame: &Frame, column: i32| Placement {
                start: frame.index(frame.site(column, -(PAD as i32))),
                row_pitch: frame.plane(),
                slab_pitch: frame.plane() * Q,
            };
            let width = (HALO * g.stride) as usize;
            HaloCopy::new(from, to, [width, Q, 1], at(f, src_column), at(g, dst_column))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::thermal::ThermalPrecision;

    fn config(nx: u32, ny: u32, walls: bool, tiling: Tiling) -> ThermalConfig {
        ThermalConfig {
            nx,
            ny,
            tau: 0.8,
            gravity: [0.0; 2],
            walls: walls.then_some([1.0, 0.9]),
            fused: true,
            precision: ThermalPrecision::F64,
            tiling,
        }
    }

    /// How many times each site of a tile is pulled, walled and collided
    /// by its plan, and in which order.
    fn visits(tile: &Tile, plan: &TilePlan) -> Vec<Vec<char>> {
        let (nx, ny) = (tile.frame.nx, tile.frame.ny);
        let mut seen = vec![Vec::new(); (nx * ny) as usize];
        let mut mark = |w: &Window, c: char| {
            for x in w.columns.clone() {
                for y in w.rows.clone() {
                    seen[(y * nx + x) as usize].push(c);
                }
            }
        };
        for phase in plan.bulk.iter().chain(&plan.edges) {
            match phase {
                ThermalPhase::Propagate(w) => mark(w, 'p'),
                ThermalPhase::Collide(w) => mark(w, 'c'),
                ThermalPhase::PropagateCollide(w) => mark(w, 'f'),
                ThermalPhase::Walls => {
                    for (bit, rows) in [(WALL_BOTTOM, 0..WALL_ROWS), (WALL_TOP, ny - WALL_ROWS..ny)] {
                        if tile.walls & bit != 0 {
                            mark(&Window { columns: 0..nx, rows }, 'w');
                        }
                    }
                }
            }
        }
        seen
    }

    #[test]
    fn tiles_cover_the_box_and_their_plans_update_every_site_once() {
        for (walls, fused) in [(false, true), (true, true), (true, false), (false, false)] {
            for (tx, ty) in [(1, 1), (3, 1), (1, 2), (2, 3)] {
                let mut c = config(23, 19, walls, Tiling::new(tx, ty));
                c.fused = fused;
                validate(&c).unwrap();
                let ts = tiles(&c);
                assert_eq!(ts.len(), (tx * ty) as usize);
                let mut covered = vec![0; (23 * 19) as usize];
                for (k, t) in ts.iter().enumerate() {
                    for x in 0..t.frame.nx {
                        for y in 0..t.frame.ny {
                            covered[((t.origin[1] + y) * 23 + t.origin[0] + x) as usize] += 1;
                        }
                    }
                    let plan = tile_plan(&c, t);
                    let bottom_wall = walls && t.at[1] == 0;
                    let top_wall = walls && t.at[1] == ty - 1;
                    assert_eq!(t.walls & WALL_BOTTOM != 0, bottom_wall);
                    assert_eq!(t.walls & WALL_TOP != 0, top_wall);
                    // The bulk stays three cells in from every side.
                    for p in &plan.bulk {
                        let (ThermalPhase::PropagateCollide(w) | ThermalPhase::Propagate(w) | ThermalPhase::Collide(w)) =
                            p
                        else {
                            panic!("the bulk runs no walls");
                        };
                        assert!(w.columns.start >= HALO && w.columns.end <= t.frame.nx - HALO, "tile {k}: {w:?}");
                        assert!(w.rows.start >= HALO && w.rows.end <= t.frame.ny - HALO, "tile {k}: {w:?}");
                    }
                    for (site, v) in visits(t, &plan).iter().enumerate() {
                        let y = site as u32 / t.frame.nx;
                        let near_wall = (bottom_wall && y < WALL_ROWS) || (top_wall && y >= t.frame.ny - WALL_ROWS);
                        let expected: &[char] = match (near_wall, fused) {
                            (true, _) => &['p', 'w', 'c'],
                            (false, true) => &['f'],
                            (false, false) => &['p', 'c'],
                        };
                        assert_eq!(v, expected, "tile {k} ({tx}x{ty}, walls {walls}), site {site}");
                    }
                }
                assert!(covered.iter().all(|&n| n == 1), "the tiles cover every site once");
            }
        }
    }

    #[test]
    fn halo_copies_read_a_neighbours_sites_and_fill_the_frame() {
        let c = config(20, 16, false, Tiling::new(2, 2));
        let ts = tiles(&c);
        // Tile 3 (upper right): its bottom halo rows come from tile 1's top rows.
        let rows = row_copies(&ts, 3);
        assert_eq!(rows.len(), 2);
        let below = rows[0];
        assert_eq!((below.from, below.to), (1, 3));
        let f1 = ts[1].frame;
        assert_eq!(below.indices(below.src)[0], f1.index(f1.site(0, f1.ny as i32 - 3)) as u64);
        assert_eq!(below.shape.values(), 3 * 10 * Q);
        // Its left halo columns come from tile 2's last three columns, all rows.
        let columns = column_copies(&ts, 3);
        let left = columns[0];
        assert_eq!((left.from, left.to), (2, 3));
        let f2 = ts[2].frame;
        assert_eq!(left.src.start, f2.index(f2.site(7, -(PAD as i32))));
        assert_eq!(left.dst.start, 0);
        assert_eq!(left.shape.values(), (3 * f2.stride) as usize * Q);
        // Walls: no row halo beyond them.
        let walled = config(20, 16, true, Tiling::new(1, 2));
        let ts = tiles(&walled);
        assert_eq!(row_copies(&ts, 0).iter().map(|c| c.from).collect::<Vec<_>>(), vec![1]);
        assert_eq!(row_copies(&ts, 1).iter().map(|c| c.from).collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn tilings_too_fine_for_the_box_are_refused() {
        let e = validate(&config(20, 16, false, Tiling::new(4, 1))).unwrap_err().to_string();
        assert!(e.contains("fewer tiles along x"), "{e}");
        assert!(validate(&config(20, 16, false, Tiling::new(0, 1))).is_err());
        validate(&config(24, 16, false, Tiling::new(4, 2))).unwrap();
    }
}
