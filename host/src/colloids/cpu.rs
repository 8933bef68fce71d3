//! The colloids' fluid on the CPU: the per-site and per-lane functions of
//! `kernels_gpu::colloids::site`, in the GPU's order, in f64, over the
//! whole box or a slab of it ([`super::slabs`]): split on the CPU, the
//! slabs exchange what GPUs do, with slice copies, to test the split.

use super::slabs::{owners, space_of, Part};
use super::{lane_totals, Operator, SuspensionConfig, SuspensionFields};
use crate::binary::slab::Slab;
use crate::cpu::Shared;
use crate::error::Result;
use kernels_gpu::colloids::{site, Colloid, FluidParams, Share, Space, Sums, FLUID, LANES};
use kernels_gpu::{Collision, Lattice};
use rayon::prelude::*;

/// A box or slab on lattice `L`, in f64.
pub(super) struct CpuFluid<L: Lattice<Q>, const Q: usize> {
    slab: Slab,
    space: Space,
    walls: [[f64; 3]; 2],
    operator: Operator<f64>,
    /// Shifted post-collision populations `f_i − w_i`, `i N + n` over the
    /// stored sites, and the buffer the next step writes.
    f: Vec<f64>,
    next: Vec<f64>,
    /// The map of solid sites, and the other one (painted one move back).
    map: Vec<u32>,
    other: Vec<u32>,
    rho: Vec<f64>,
    /// Velocity planes `a N + n`.
    u: Vec<f64>,
    colloids: Vec<Colloid>,
    shares: Vec<Share>,
    /// Each colloid's lanes' partial sums, `c LANES + lane`.
    partials: Vec<Sums>,
    /// The carry handed on from the slab below, and the one for the slab above.
    carry_in: Vec<Sums>,
    carry_out: Vec<Sums>,
    _lattice: std::marker::PhantomData<L>,
}

impl<L: Lattice<Q>, const Q: usize> CpuFluid<L, Q> {
    /// `slab` of the box of `config` at rest, density 1, with `colloids` painted.
    pub(super) fn new(config: &SuspensionConfig, slab: Slab, colloids: &[Colloid]) -> Self {
        let space = space_of(config, &slab);
        let n = space.sites() as usize;
        let lanes = colloids.len() * LANES as usize;
        let mut s = Self {
            slab,
            space,
            walls: config.walls.unwrap_or_default(),
            operator: Operator::of(config),
            f: vec![0.0; Q * n],
            next: vec![0.0; Q * n],
            map: vec![FLUID; n],
            other: vec![FLUID; n],
            rho: vec![1.0; n],
            u: vec![0.0; 3 * n],
            colloids: colloids.to_vec(),
            shares: vec![Share::WHOLE; colloids.len()],
            partials: vec![Sums::default(); lanes],
            carry_in: vec![Sums::default(); lanes],
            carry_out: vec![Sums::default(); lanes],
            _lattice: std::marker::PhantomData,
        };
        for (c, colloid) in colloids.iter().enumerate() {
            for lane in 0..LANES {
                site::paint(&s.space, colloid, lane, |k| s.map[k as usize] = c as u32);
            }
        }
        s
    }

    fn fluid_with<C: Collision<f64>>(&mut self, collision: &C, force: [f64; 3]) {
        let sites = self.rho.len();
        let p = FluidParams { space: self.space, wall_velocity: self.walls, force };
        let out = Shared::new(self.next.as_ptr());
        let u = Shared::new(self.u.as_ptr());
        let (f, map, colloids) = (&self.f, &self.map, &self.colloids);
        let plane = self.space.plane_sites() as usize;
        let [first, end] = self.space.own.map(|z| z as usize * plane);
        self.rho[first..end].par_iter_mut().enumerate().for_each(|(k, rho)| {
            let n = first + k;
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

    /// The populations of stored plane `z`, row by row.
    fn plane(&self, z: u32) -> Vec<f64> {
        let (plane, sites) = (self.space.plane_sites() as usize, self.rho.len());
        (0..Q).flat_map(|i| &self.f[i * sites + z as usize * plane..][..plane]).copied().collect()
    }

    /// Writes `values` (from [`CpuFluid::plane`]) into stored plane `z`.
    fn set_plane(&mut self, z: u32, values: &[f64]) {
        let (plane, sites) = (self.space.plane_sites() as usize, self.rho.len());
        for (i, row) in values.chunks_exact(plane).enumerate() {
            self.f[i * sites + z as usize * plane..][..plane].copy_from_slice(row);
        }
    }
}

impl<L: Lattice<Q>, const Q: usize> Part for CpuFluid<L, Q> {
    fn upload(&mut self, colloids: &[Colloid]) -> Result<()> {
        self.colloids.clear();
        self.colloids.extend_from_slice(colloids);
        Ok(())
    }

    fn set_shares(&mut self, shares: &[Share]) -> Result<()> {
        self.shares.clear();
        self.shares.extend_from_slice(shares);
        Ok(())
    }

    fn links(&mut self, phase: u32) -> Result<()> {
        let sites = self.rho.len();
        let (space, map, f, colloids, shares, carry_in) =
            (self.space, &self.map, &self.f, &self.colloids, &self.shares, &self.carry_in);
        let carry_out = Shared::new(self.carry_out.as_ptr());
        lanes(&mut self.partials, |c, lane, partial| {
            shares[c as usize].run(
                phase,
                lane,
                |slot| carry_in[slot],
                |start| {
                    site::link_sums::<L, Q, f64>(
                        &space,
                        c,
                        &colloids[c as usize],
                        lane,
                        |k| map[k as usize],
                        |i, k| f[i * sites + k as usize],
                        start,
                    )
                },
                // SAFETY: each lane of each colloid has its own slot.
                |slot, sums| unsafe { *carry_out.get().add(slot) = sums },
                |sums| partial.add(&sums),
            )
        });
        Ok(())
    }

    fn totals(&mut self) -> Result<Vec<Sums>> {
        Ok(lane_totals(&self.partials))
    }

    fn pending(&self) -> Result<Vec<Sums>> {
        Ok(lane_totals(&self.partials))
    }

    fn fluid(&mut self, force: [f64; 3]) -> Result<()> {
        match self.operator {
            Operator::Bgk(c) => self.fluid_with(&c, force),
            Operator::Mrt(c) => self.fluid_with(&c, force),
        }
        std::mem::swap(&mut self.f, &mut self.next);
        Ok(())
    }

    fn repaint(&mut self) -> Result<()> {
        let space = self.space;
        for (c, colloid) in self.colloids.iter().enumerate() {
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
        for (c, colloid) in self.colloids.iter().enumerate() {
            for lane in 0..LANES {
                site::paint(&space, colloid, lane, |k| self.other[k as usize] = c as u32);
            }
        }
        Ok(())
    }

    fn cover(&mut self, phase: u32) -> Result<()> {
        let (space, sites) = (self.space, self.rho.len());
        let f = Shared::new(self.f.as_ptr());
        let carry_out = Shared::new(self.carry_out.as_ptr());
        let (old, new, colloids, shares, carry_in) =
            (&self.map, &self.other, &self.colloids, &self.shares, &self.carry_in);
        lanes(&mut self.partials, |c, lane, partial| {
            shares[c as usize].run(
                phase,
                lane,
                |slot| carry_in[slot],
                |mut sums| {
                    // SAFETY: a site is filled by the one lane whose colloid
                    // uncovered it, and read only where fluid in both maps.
                    site::cover::<L, Q, f64>(
                        &space,
                        c,
                        &colloids[c as usize],
                        lane,
                        |k| old[k as usize],
                        |k| new[k as usize],
                        |i, k| unsafe { *f.get().add(i * sites + k as usize) },
                        |i, k, v| unsafe { *f.get().add(i * sites + k as usize) = v },
                        &mut sums,
                    );
                    sums
                },
                // SAFETY: each lane of each colloid has its own slot.
                |slot, sums| unsafe { *carry_out.get().add(slot) = sums },
                |sums| *partial = sums,
            )
        });
        Ok(())
    }

    fn end_move(&mut self) {
        std::mem::swap(&mut self.map, &mut self.other);
    }

    fn own_fields(&self) -> Result<SuspensionFields> {
        let (sites, plane) = (self.rho.len(), self.space.plane_sites() as usize);
        let own = self.space.own;
        let range = own[0] as usize * plane..own[1] as usize * plane;
        Ok(SuspensionFields {
            rho: self.rho[range.clone()].to_vec(),
            u: range.map(|k| [self.u[k], self.u[sites + k], self.u[2 * sites + k]]).collect(),
            solid: owners(&self.map, plane, own),
        })
    }

    fn own_mass(&self) -> Result<f64> {
        Ok(fluid_mass::<L, Q>(&self.f, &self.map, &self.space))
    }

    fn hand_carries(parts: &mut [Self], slots: &[u32]) -> Result<()> {
        let count = parts.len();
        for k in 0..count {
            let n = slots[k] as usize * LANES as usize;
            let carry = parts[k].carry_out[..n].to_vec();
            parts[(k + 1) % count].carry_in[..n].copy_from_slice(&carry);
        }
        Ok(())
    }

    fn exchange(parts: &mut [Self]) -> Result<()> {
        let count = parts.len();
        for k in 0..count {
            let (sends, _) = parts[k].slab.faces();
            // The first own plane down, into the upper received plane of the
            // slab below; the last up, into the lower one above.
            for (to, z, side) in [((k + count - 1) % count, sends[0], 1), ((k + 1) % count, sends[1], 0)] {
                let values = parts[k].plane(z);
                let received = parts[to].slab.faces().1[side];
                parts[to].set_plane(received, &values);
            }
        }
        Ok(())
    }
}

/// Runs `body(colloid, lane, partial)` for every lane of every colloid, in parallel.
fn lanes(partials: &mut [Sums], body: impl Fn(u32, u32, &mut Sums) + Sync) {
    partials.par_iter_mut().enumerate().for_each(|(k, partial)| {
        body(k as u32 / LANES, k as u32 % LANES, partial);
    });
}

/// The mass of the populations `f` (shifted, `i N + n`) at the map's fluid
/// sites on the own planes of `space`.
pub(super) fn fluid_mass<L: Lattice<Q>, const Q: usize>(f: &[f64], map: &[u32], space: &Space) -> f64 {
    let (sites, plane) = (map.len(), space.plane_sites() as usize);
    (space.own[0] as usize * plane..space.own[1] as usize * plane)
        .filter(|&n| map[n] == FLUID)
        .map(|n| (0..Q).map(|i| f[i * sites + n] + L::W[i]).sum::<f64>())
        .sum()
}
