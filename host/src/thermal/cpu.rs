//! The thermal model on the CPU: rayon over columns, the per-cell
//! functions of `kernels_gpu::thermal::step`.

use super::{initial_populations, interior, Executor, ThermalConfig, ThermalPhase};
use crate::cpu::{has_fma, Shared};
use crate::error::Result;
use kernels_gpu::thermal::step::{self, HALO_COLUMNS, WALL_ROWS};
use kernels_gpu::thermal::ThermalParams;
use kernels_gpu::Real;
use rayon::prelude::*;

/// Tasks smaller than this many sites are merged (short columns).
const SITES_PER_TASK: usize = 2048;

/// The two buffers of a thermal box in host memory.
pub(super) struct CpuThermal<T> {
    config: ThermalConfig,
    f: Vec<T>,
    next: Vec<T>,
}

impl<T: Real> CpuThermal<T> {
    pub(super) fn new(config: &ThermalConfig, initial: &(impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync)) -> Self {
        let f = initial_populations::<T>(config, initial);
        let next = f.clone();
        Self { config: config.clone(), f, next }
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
            ThermalPhase::Propagate(rows) => {
                for y in rows.clone() {
                    step::propagate(&frame, f.get(), next.get(), cell(y));
                }
            }
            ThermalPhase::Collide(rows) => {
                for y in rows.clone() {
                    step::collide(&frame, &p.collision, next.get(), cell(y));
                }
            }
            ThermalPhase::PropagateCollide(rows) => {
                for y in rows.clone() {
                    step::propagate_collide(&frame, &p.collision, f.get(), next.get(), cell(y));
                }
            }
            ThermalPhase::Walls => {
                step::wall(&frame, f.get(), next.get(), x, false, p.wall_temperature[0]);
                step::wall(&frame, f.get(), next.get(), x, true, p.wall_temperature[1]);
            }
            ThermalPhase::Halo | ThermalPhase::Swap => unreachable!("not a phase over columns"),
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

impl<T: Real> Executor for CpuThermal<T> {
    fn run(&mut self, phase: &ThermalPhase) -> Result<()> {
        let p = self.config.params::<T>(0..self.config.ny);
        let frame = p.frame;
        let (f, next) = (Shared::new(self.f.as_ptr()), Shared::new(self.next.as_ptr()));
        match phase {
            ThermalPhase::Swap => std::mem::swap(&mut self.f, &mut self.next),
            ThermalPhase::Halo => {
                if self.config.walls.is_none() {
                    parallel(HALO_COLUMNS * frame.nx, 1, |k| {
                        let (halo, from) = step::y_halo_cell(&frame, k);
                        // SAFETY: halo cells are distinct and copy interior ones.
                        unsafe { step::periodic_halo(&frame, f.get(), halo, from) }
                    });
                }
                parallel(HALO_COLUMNS * frame.stride, 1, |k| {
                    let (halo, from) = step::x_halo_cell(&frame, k);
                    // SAFETY: as above (the x halo's sources are interior columns).
                    unsafe { step::periodic_halo(&frame, f.get(), halo, from) }
                });
            }
            _ => {
                let rows = match phase {
                    ThermalPhase::Walls => 2 * WALL_ROWS,
                    ThermalPhase::Propagate(r) | ThermalPhase::Collide(r) | ThermalPhase::PropagateCollide(r) => {
                        r.len() as u32
                    }
                    _ => 1,
                };
                let fma = has_fma();
                parallel(frame.nx, rows, |x| {
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
            }
        }
        Ok(())
    }

    fn populations(&self) -> Result<Vec<f64>> {
        Ok(interior(&self.config.frame(), &self.f))
    }
}
