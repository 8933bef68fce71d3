//! The colloids' fluid on the CPU: the per-site and per-lane functions of
//! `kernels_gpu::colloids::site`, in the GPU's order, in f64.

use super::{lane_totals, owner, Fluid, Operator, SuspensionConfig, SuspensionFields};
use crate::cpu::Shared;
use crate::error::Result;
use kernels_gpu::colloids::{site, Colloid, FluidParams, Space, Sums, FLUID, LANES};
use kernels_gpu::{Collision, Lattice};
use rayon::prelude::*;

/// A box on lattice `L`, in f64.
pub(super) struct CpuFluid<L: Lattice<Q>, const Q: usize> {
    space: Space,
    walls: [[f64; 3]; 2],
    operator: Operator<f64>,
    /// Shifted post-collision populations `f_i − w_i`, `i N + n`, and the
    /// buffer the next step writes.
    f: Vec<f64>,
    next: Vec<f64>,
    /// The map of solid sites, and the other one (painted one move back).
    map: Vec<u32>,
    other: Vec<u32>,
    rho: Vec<f64>,
    /// Velocity planes `a N + n`.
    u: Vec<f64>,
    /// Each colloid's lanes' partial sums, `c LANES + lane`.
    partials: Vec<Sums>,
    _lattice: std::marker::PhantomData<L>,
}

impl<L: Lattice<Q>, const Q: usize> CpuFluid<L, Q> {
    /// The box of `config` at rest, density 1, with `colloids` painted.
    pub(super) fn new(config: &SuspensionConfig, colloids: &[Colloid]) -> Self {
        let n = config.sites();
        let space = config.space();
        let mut s = Self {
            space,
            walls: config.walls.unwrap_or_default(),
            operator: Operator::of(config),
            f: vec![0.0; Q * n],
            next: vec![0.0; Q * n],
            map: vec![FLUID; n],
            other: vec![FLUID; n],
            rho: vec![1.0; n],
            u: vec![0.0; 3 * n],
            partials: vec![Sums::default(); colloids.len() * LANES as usize],
            _lattice: std::marker::PhantomData,
        };
        for (c, colloid) in colloids.iter().enumerate() {
            for lane in 0..LANES {
                site::paint(&s.space, colloid, lane, |k| s.map[k as usize] = c as u32);
            }
        }
        s
    }

    fn fluid_with<C: Collision<f64>>(&mut self, collision: &C, colloids: &[Colloid], force: [f64; 3]) {
        let sites = self.rho.len();
        let p = FluidParams { space: self.space, wall_velocity: self.walls, force };
        let out = Shared::new(self.next.as_ptr());
        let u = Shared::new(self.u.as_ptr());
        let (f, map) = (&self.f, &self.map);
        self.rho.par_iter_mut().enumerate().for_each(|(n, rho)| {
            let step = site::fluid::<L, Q, f64, C>(
                &p,
                collision,
                n as u32,
                |k| map[k as usize],
                |k| colloids[k as usize],
                |i, k| f[i * sites + k as usize],
            );
            let (r, v) = match step {
                Some((cell, r, v)) => {
                    // SAFETY: each task writes its own site's value in each plane.
                    for (i, value) in cell.into_iter().enumerate() {
                        unsafe { *out.get().add(i * sites + n) = value };
                    }
                    (r, v)
                }
                None => (0.0, [0.0; 3]),
            };
            *rho = r;
            // SAFETY: as above.
            for (a, value) in v.into_iter().enumerate() {
                unsafe { *u.get().add(a * sites + n) = value };
            }
        });
    }
}

impl<L: Lattice<Q>, const Q: usize> Fluid for CpuFluid<L, Q> {
    fn link_sums(&mut self, colloids: &[Colloid]) -> Result<Vec<Sums>> {
        let sites = self.rho.len();
        let (space, map, f) = (self.space, &self.map, &self.f);
        lanes(&mut self.partials, |c, lane, partial| {
            site::link_sums::<L, Q, f64>(
                &space,
                c,
                &colloids[c as usize],
                lane,
                |k| map[k as usize],
                |i, k| f[i * sites + k as usize],
                partial,
            );
        });
        Ok(lane_totals(&self.partials[..colloids.len() * LANES as usize]))
    }

    fn pending(&self, count: usize) -> Result<Vec<Sums>> {
        Ok(lane_totals(&self.partials[..count * LANES as usize]))
    }

    fn fluid(&mut self, colloids: &[Colloid], force: [f64; 3]) -> Result<()> {
        match self.operator {
            Operator::Bgk(c) => self.fluid_with(&c, colloids, force),
            Operator::Mrt(c) => self.fluid_with(&c, colloids, force),
        }
        std::mem::swap(&mut self.f, &mut self.next);
        Ok(())
    }

    fn moved(&mut self, colloids: &[Colloid]) -> Result<()> {
        let space = self.space;
        for (c, colloid) in colloids.iter().enumerate() {
            for lane in 0..LANES {
                let other = Shared::new(self.other.as_ptr());
                // SAFETY: one thread; reads and writes of the same vector in turn.
                site::clear(
                    &space,
                    c as u32,
                    colloid,
                    lane,
                    |k| unsafe { *other.get().add(k as usize) },
                    |k| unsafe { *other.get().add(k as usize) = FLUID },
                );
            }
        }
        for (c, colloid) in colloids.iter().enumerate() {
            for lane in 0..LANES {
                site::paint(&space, colloid, lane, |k| self.other[k as usize] = c as u32);
            }
        }
        let sites = self.rho.len();
        let f = Shared::new(self.f.as_ptr());
        let (old, new) = (&self.map, &self.other);
        lanes(&mut self.partials, |c, lane, partial| {
            *partial = Sums::default();
            // SAFETY: a site is filled by the one lane whose colloid uncovered
            // it, and read only where fluid in both maps.
            site::cover::<L, Q, f64>(
                &space,
                c,
                &colloids[c as usize],
                lane,
                |k| old[k as usize],
                |k| new[k as usize],
                |i, k| unsafe { *f.get().add(i * sites + k as usize) },
                |i, k, v| unsafe { *f.get().add(i * sites + k as usize) = v },
                partial,
            );
        });
        // The new map becomes the current one.
        std::mem::swap(&mut self.map, &mut self.other);
        Ok(())
    }

    fn fields(&self) -> Result<SuspensionFields> {
        let sites = self.rho.len();
        Ok(SuspensionFields {
            rho: self.rho.clone(),
            u: (0..sites).map(|k| [self.u[k], self.u[sites + k], self.u[2 * sites + k]]).collect(),
            solid: self.map.iter().map(|&m| owner(m)).collect(),
        })
    }

    fn fluid_mass(&self) -> Result<f64> {
        Ok(fluid_mass::<L, Q>(&self.f, &self.map))
    }
}

/// Runs `body(colloid, lane, partial)` for every lane of every colloid, in parallel.
fn lanes(partials: &mut [Sums], body: impl Fn(u32, u32, &mut Sums) + Sync) {
    partials.par_iter_mut().enumerate().for_each(|(k, partial)| {
        body(k as u32 / LANES, k as u32 % LANES, partial);
    });
}

/// The mass of the populations `f` (shifted, `i N + n`) at the map's fluid sites.
pub(super) fn fluid_mass<L: Lattice<Q>, const Q: usize>(f: &[f64], map: &[u32]) -> f64 {
    let sites = map.len();
    (0..sites).filter(|&n| map[n] == FLUID).map(|n| (0..Q).map(|i| f[i * sites + n] + L::W[i]).sum::<f64>()).sum()
}
