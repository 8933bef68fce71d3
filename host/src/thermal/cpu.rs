//! The thermal model on the CPU: rayon over columns, the per-cell
//! functions of `kernels_gpu::thermal::step`; tiles run one after the
//! other, their halos copied in host memory.

use super::tiles::{column_copies, row_copies, HaloCopy, Tile};
use super::{initial_populations, interior, Executor, ThermalConfig, ThermalPhase};
use crate::cpu::{has_fma, Shared};
use crate::error::Result;
use kernels_gpu::thermal::step::{self, WALL_BOTTOM, WALL_ROWS, WALL_TOP};
use kernels_gpu::thermal::ThermalParams;
use kernels_gpu::Real;
use rayon::prelude::*;

/// Tasks smaller than this many sites are merged (short columns).
const SITES_PER_TASK: usize = 2048;

/// The two buffers of each tile in host memory.
pub(super) struct CpuTiles<T> {
    config: ThermalConfig,
    tiles: Vec<Tile>,
    f: Vec<Vec<T>>,
    next: Vec<Vec<T>>,
    /// Every tile's row halo copies, then every tile's column halo copies
    /// (which carry the corners).
    copies: Vec<HaloCopy>,
}

impl<T: Real> CpuTiles<T> {
    pub(super) fn new(
        config: &ThermalConfig,
        tiles: Vec<Tile>,
        initial: &(impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync),
    ) -> Self {
        let f: Vec<Vec<T>> = tiles.iter().map(|t| initial_populations::<T>(config, t, initial)).collect();
        let n = tiles.len();
        let copies =
            (0..n).flat_map(|k| row_copies(&tiles, k)).chain((0..n).flat_map(|k| column_copies(&tiles, k))).collect();
        Self { config: config.clone(), next: f.clone(), f, tiles, copies }
    }
}

/// Copies the values of `c` from `src` to `dst` (the same buffer when a
/// tile is its own neighbour: the sender's values are interior cells, the
/// receiver's halo cells).
///
/// # Safety
/// Both buffers hold every value the copy places.
unsafe fn copy<T: Copy>(c: &HaloCopy, src: *const T, dst: *mut T) {
    let s = &c.shape;
    for d in 0..s.depth {
        for r in 0..s.rows {
            let (a, b) = (
                c.src.start + d * c.src.slab_pitch + r * c.src.row_pitch,
                c.dst.start + d * c.dst.slab_pitch + r * c.dst.row_pitch,
            );
            // SAFETY: as the caller guarantees; interior and halo cells are distinct.
            unsafe { std::ptr::copy_nonoverlapping(src.add(a), dst.add(b), s.width) };
        }
    }
}

/// Runs `body(k)` for `k` in `0..n` in parallel, in tasks of about
/// [`SITES_PER_TASK`] sites when each `k` covers `sites` sites.
fn parallel(n: u32, sites: u32, body: impl Fn(u32) + Sync + Send) {
    let min = (SITES_PER_TASK / sites.max(1) as usize).max(1);
    (0..n).into_par_iter().with_min_len(min).for_each(body);
}

/// One column's share of a phase (halo cells are numbered separately).
///
/// # Safety
/// `f` and `next` are the frame's two buffers; callers give distinct
/// threads distinct columns.
#[inline(always)]
unsafe fn column<T: Real>(phase: &ThermalPhase, p: &ThermalParams<T>, f: Shared<T>, next: Shared<T>, x: u32) {
    let frame = p.frame;
    let cell = |y: u32| frame.site(x as i32, y as i32);
    // SAFETY (all arms): as the caller guarantees; each touches column `x`
    // of the buffer it writes.
    unsafe {
        match phase {
            ThermalPhase::Propagate(w) => {
                for y in w.rows.clone() {
                    step::propagate(&frame, f.get(), next.get(), cell(y));
                }
            }
            ThermalPhase::Collide(w) => {
                for y in w.rows.clone() {
                    step::collide(&frame, &p.collision, next.get(), cell(y));
                }
            }
            ThermalPhase::PropagateCollide(w) => {
                for y in w.rows.clone() {
                    step::propagate_collide(&frame, &p.collision, f.get(), next.get(), cell(y));
                }
            }
            ThermalPhase::Walls => {
                for (side, bit) in [WALL_BOTTOM, WALL_TOP].into_iter().enumerate() {
                    if p.walls & bit != 0 {
                        step::wall(&frame, f.get(), next.get(), x, side == 1, p.wall_temperature[side]);
                    }
                }
            }
        }
    }
}

/// [`column`] compiled for FMA hardware ([`has_fma`]).
///
/// # Safety
/// As [`column`]; the CPU has FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn column_fma<T: Real>(phase: &ThermalPhase, p: &ThermalParams<T>, f: Shared<T>, next: Shared<T>, x: u32) {
    unsafe { column(phase, p, f, next, x) }
}

impl<T: Real> Executor for CpuTiles<T> {
    fn run(&mut self, k: usize, phase: &ThermalPhase) -> Result<()> {
        let tile = &self.tiles[k];
        let p = self.config.params::<T>(tile, 0..tile.frame.nx, 0..tile.frame.ny);
        let (f, next) = (Shared::new(self.f[k].as_ptr()), Shared::new(self.next[k].as_ptr()));
        let (columns, rows) = match phase {
            ThermalPhase::Walls => (0..tile.frame.nx, 2 * WALL_ROWS),
            ThermalPhase::Propagate(w) | ThermalPhase::Collide(w) | ThermalPhase::PropagateCollide(w) => {
                (w.columns.clone(), w.rows.len() as u32)
            }
        };
        let fma = has_fma();
        let first = columns.start;
        parallel(columns.len() as u32, rows, |x| {
            let x = first + x;
            // SAFETY: each task owns column `x`; FMA checked.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                if fma {
                    column_fma(phase, &p, f, next, x)
                } else {
                    column(phase, &p, f, next, x)
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            unsafe {
                let _ = fma;
                column(phase, &p, f, next, x)
            }
        });
        Ok(())
    }

    fn exchange(&mut self) -> Result<()> {
        let buffers: Vec<*mut T> = self.f.iter_mut().map(|f| f.as_mut_ptr()).collect();
        for c in &self.copies {
            // SAFETY: the copies lie inside the tiles' buffers.
            unsafe { copy(c, buffers[c.from], buffers[c.to]) };
        }
        Ok(())
    }

    fn finish(&mut self, k: usize) -> Result<()> {
        std::mem::swap(&mut self.f[k], &mut self.next[k]);
        Ok(())
    }

    fn populations(&self) -> Result<Option<Vec<f64>>> {
        Ok(Some(interior(&self.config, &self.tiles, &self.f)))
    }
}
