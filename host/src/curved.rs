//! Curved walls on the host: which fluid cells have links that cross an
//! object's surface, and where along each link the surface lies, for the
//! interpolated bounce-back of [`kernels_gpu::curved`]. The fractions come
//! from the object's shape (a sphere's exactly, others by bisection on
//! their inside test), never from the voxel centres.

use crate::cell_blocks::CellBlocks;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::part_grid::{ListRegions, PartGrid};
use crate::partition::Slab;
use crate::voxel::Shape;
use glam::DVec3;
use kernels_gpu::curved::NOT_CURVED;
use kernels_gpu::flags::{is_flow, CURVED, FLUID, KIND_MASK};
use std::collections::BTreeMap;

/// The curved-wall group of a domain: its cells, and per cell and
/// direction `i` the fraction `q` of the link from the cell to `x - c_i` at
/// which a curved wall crosses it ([`NOT_CURVED`] where none does).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CurvedWalls {
    /// Dense numbers of the cells, ascending.
    pub cells: Vec<usize>,
    /// `directions` fractions per cell.
    pub q: Vec<f64>,
    /// Directions of the lattice the fractions are for.
    pub directions: usize,
}

impl CurvedWalls {
    /// Whether the group is empty.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The fractions of cell `k` of the list.
    pub fn fractions(&self, k: usize) -> &[f64] {
        &self.q[self.directions * k..self.directions * (k + 1)]
    }
}

/// An object whose walls are interpolated: the cells it covers and its shape.
pub struct CurvedObject<'a> {
    /// Its name, for messages.
    pub name: &'a str,
    /// The cells it covers.
    pub cells: &'a CellBlocks<bool>,
    /// Its shape, in the case's length unit.
    pub shape: &'a (dyn Shape + Sync),
}

/// Finds the curved links of `objects` in `domain` for the velocity set `c`
/// (cell `i` at `i * cell_size`), marks their cells [`CURVED`] and stores
/// the group in `domain.curved`. Only plain fluid cells join: an open
/// boundary cell next to an object keeps halfway bounce-back. A link whose
/// opposite neighbour is not a flow cell, which the interpolation below
/// `q = 1/2` reads, takes `q = 1/2` (halfway bounce-back). An object with
/// no link into it is an error.
pub fn mark(domain: &mut Domain, c: &[[i32; 3]], objects: &[CurvedObject], cell_size: f64) -> Result<()> {
    let found = mark_placed(domain, c, objects, cell_size, DVec3::ZERO);
    match objects.iter().zip(found).find(|(_, n)| *n == 0) {
        Some((object, _)) => Err(no_links(object.name)),
        None => Ok(()),
    }
}

/// The error for an object with interpolated walls that no fluid cell has a link into.
pub fn no_links(name: &str) -> Error {
    Error::Setup(format!(
        "geometry `{name}`: wall = \"interpolated\", but no fluid cell has a link into it (is it inside another \
         object or outside the domain?)"
    ))
}

/// As [`mark`] on a grid whose cell `i` has its centre at `origin + i *
/// cell_size` (a refinement level's), returning the links found into each
/// object, which may be none.
pub fn mark_placed(
    domain: &mut Domain,
    c: &[[i32; 3]],
    objects: &[CurvedObject],
    cell_size: f64,
    origin: DVec3,
) -> Vec<usize> {
    let d = domain.dims;
    let n = [d.nx, d.ny, d.nz];
    let q_len = c.len();
    let mut links: BTreeMap<usize, ([u32; 3], Vec<f64>)> = BTreeMap::new();
    let mut counts = Vec::with_capacity(objects.len());
    for object in objects {
        let (lo, hi) = object.shape.bounds();
        let reach = c.iter().flat_map(|v| v.iter()).map(|v| v.unsigned_abs()).max().unwrap_or(1) as f64;
        let range = |a: usize| {
            let first = ((lo[a] - origin[a]) / cell_size - reach - 1.0).floor().max(0.0) as u32;
            let last = (((hi[a] - origin[a]) / cell_size + reach + 1.0).ceil().max(0.0) as u32).min(n[a] - 1);
            first..=last
        };
        let mut found = 0usize;
        for z in range(2) {
            for y in range(1) {
                for x in range(0) {
                    let flag = domain.flags.get_at(domain.flags.slot([x, y, z]));
                    if flag & KIND_MASK & !CURVED != FLUID {
                        continue;
                    }
                    let here = DVec3::new(x as f64, y as f64, z as f64);
                    for (i, ci) in c.iter().enumerate().skip(1) {
                        let from = [x, y, z].map(|v| v as i64);
                        let at = |sign: i64| -> [u32; 3] {
                            std::array::from_fn(|a| (from[a] + sign * ci[a] as i64).rem_euclid(n[a] as i64) as u32)
                        };
                        let source = at(-1);
                        if !object.cells.get_at(object.cells.slot(source)) {
                            continue;
                        }
                        let wall = here - DVec3::from_array(ci.map(|v| v as f64));
                        let mut q = object.shape.crossing(origin + here * cell_size, origin + wall * cell_size);
                        let beyond = domain.flags.get_at(domain.flags.slot(at(1)));
                        if q < 0.5 && !is_flow(beyond) {
                            q = 0.5;
                        }
                        links.entry(d.index(x, y, z)).or_insert_with(|| ([x, y, z], vec![NOT_CURVED; q_len])).1[i] = q;
                        found += 1;
                    }
                }
            }
        }
        counts.push(found);
    }
    let mut walls = CurvedWalls { directions: q_len, ..Default::default() };
    for (cell, (p, q)) in links {
        let slot = domain.flags.slot(p);
        let flag = domain.flags.get_at(slot);
        domain.flags.set_at(slot, flag | CURVED);
        walls.cells.push(cell);
        walls.q.extend(q);
    }
    debug_assert!(walls.q.iter().all(|&q| q == NOT_CURVED || (0.0..=1.0).contains(&q)));
    domain.curved = walls;
    counts
}

/// A partition's curved-wall group as the kernels read it: storage numbers
/// and fractions in the solver's precision, the boundary region's cells
/// first ([`PartGrid::region_order`]).
pub struct CurvedTables<T> {
    /// Storage number of each cell.
    pub cells: Vec<u32>,
    /// `Q` fractions per cell.
    pub q: Vec<T>,
    /// Room for `Q` carried values per cell (host runs; zeros).
    pub carried: Vec<T>,
    /// Which cells each region of the partition updates.
    pub regions: ListRegions,
}

impl<T: kernels_gpu::Real> CurvedTables<T> {
    /// The group of `walls` on partition `slab`'s `grid`; `None` when it is empty.
    pub fn build(walls: &CurvedWalls, grid: &PartGrid, slab: &Slab) -> Option<Self> {
        let stored = grid.stored_cells(&walls.cells);
        let (order, regions) = grid.region_order(slab, &stored);
        let q = order.iter().flat_map(|&k| walls.fractions(k)).copied();
        Self::with_cells(order.iter().map(|&k| stored[k]).collect(), q.collect(), regions)
    }

    /// The group of `walls` on a refinement level's grid `layout`; `None` when it is empty.
    pub fn on_level(walls: &CurvedWalls, layout: &crate::sparse::SparseLayout) -> Option<Self> {
        let stored = walls.cells.iter().map(|&n| layout.storage_of(n).expect("flow cells are in stored blocks"));
        let count = walls.cells.len() as u32;
        Self::with_cells(stored.collect(), walls.q.clone(), ListRegions { boundary: count, count })
    }

    /// The group of the cells with storage numbers `cells` and fractions `q`.
    fn with_cells(cells: Vec<u32>, q: Vec<f64>, regions: ListRegions) -> Option<Self> {
        (!cells.is_empty()).then(|| Self {
            cells,
            carried: vec![T::ZERO; q.len()],
            q: q.into_iter().map(T::from_f64).collect(),
            regions,
        })
    }

    /// Number of cells.
    pub fn count(&self) -> u32 {
        self.cells.len() as u32
    }

    /// The kernel argument over the cells `entries` of these tables in host
    /// memory (valid while they live and are not moved).
    pub fn host_cells(&mut self, entries: std::ops::Range<u32>) -> kernels_gpu::curved::CurvedCells<T> {
        let q = self.q.len() / self.cells.len();
        let (first, count) = (entries.start as usize, entries.len() as u32);
        assert!(entries.end as usize <= self.cells.len(), "entries of the list");
        // SAFETY: `count` cells from `first` and `Q` values per cell in each
        // table, distinct fluid cells (`mark`).
        unsafe {
            kernels_gpu::curved::CurvedCells::new(
                self.cells.as_ptr().add(first),
                self.q.as_ptr().add(q * first),
                self.carried.as_mut_ptr().add(q * first),
                count,
            )
        }
    }
}
