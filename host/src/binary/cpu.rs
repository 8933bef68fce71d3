//! The binary fluid on the CPU: a box (or a slab of one) stepped pass by
//! pass with rayon, and a box split into slabs that exchange their faces
//! between passes as GPUs do ([`super::slab`]): the test bed of the split.

use super::slab::{gather, Field, Pass, Slab};
use super::{ludwig_mrt, BinaryCollision, BinaryConfig, BinaryFields, Box3};
use crate::cpu::Shared;
use crate::error::Result;
use kernels_gpu::binary::{site, BinaryParams};
use kernels_gpu::collision::{Bgk, Collision};
use kernels_gpu::Lattice;
use rayon::prelude::*;

/// The state of a box or slab on lattice `L`.
pub(super) struct Sites<L: Lattice<Q>, const Q: usize> {
    slab: Slab,
    params: BinaryParams<f64>,
    collision: BinaryCollision,
    tau: f64,
    /// Shifted post-collision populations `f_i − w_i`, `i N + n`, and the
    /// buffer the next step writes.
    f: Vec<f64>,
    next: Vec<f64>,
    /// The order parameter, and the buffer the next step writes.
    phi: Vec<f64>,
    phi_next: Vec<f64>,
    mu: Vec<f64>,
    rho: Vec<f64>,
    /// The velocity, `a N + n`.
    u: Vec<f64>,
    _lattice: std::marker::PhantomData<L>,
}

impl<L: Lattice<Q>, const Q: usize> Sites<L, Q> {
    /// `slab` of `config` at rest, density 1, with the order parameter `phi`.
    pub(super) fn new(config: &BinaryConfig, slab: Slab, phi: &(impl Fn(u32, u32, u32) -> f64 + Sync)) -> Self {
        let n = slab.sites(config);
        let phi = slab.initial_phi(config, phi);
        let mut s = Self {
            params: slab.params(config),
            slab,
            collision: config.collision,
            tau: config.tau,
            f: vec![0.0; Q * n],
            next: vec![0.0; Q * n],
            phi_next: phi.clone(),
            phi,
            mu: vec![0.0; n],
            rho: vec![1.0; n],
            u: vec![0.0; 3 * n],
            _lattice: std::marker::PhantomData,
        };
        s.chemical_potential();
        s
    }

    /// The updated sites of a field of one value per site, with their indices.
    fn updated<'a>(&self, field: &'a mut [f64]) -> impl IndexedParallelIterator<Item = (usize, &'a mut f64)> {
        let plane = self.params.plane_sites() as usize;
        let [first, end] = self.params.planes.map(|z| z as usize * plane);
        field[first..end].par_iter_mut().enumerate().map(move |(k, v)| (first + k, v))
    }

    /// `μ` from `φ`.
    fn chemical_potential(&mut self) {
        let mut mu = std::mem::take(&mut self.mu);
        let (p, phi) = (&self.params, &self.phi);
        self.updated(&mut mu).for_each(|(n, mu)| {
            *mu = site::chemical_potential::<L, Q, f64>(p, n as u32, |k| phi[k as usize]);
        });
        self.mu = mu;
    }

    /// Pulls and collides every site with the force `−φ ∇μ` into `next`.
    fn collide(&mut self) {
        match self.collision {
            BinaryCollision::Bgk => self.collide_with(&Bgk { omega: 1.0 / self.tau }),
            BinaryCollision::Mrt => self.collide_with(&ludwig_mrt(self.tau)),
        }
        std::mem::swap(&mut self.f, &mut self.next);
    }

    fn collide_with<C: Collision<f64>>(&mut self, collision: &C) {
        let sites = self.phi.len();
        let out = Shared::new(self.next.as_ptr());
        let u = Shared::new(self.u.as_ptr());
        let mut rho = std::mem::take(&mut self.rho);
        let (p, f, phi, mu) = (&self.params, &self.f, &self.phi, &self.mu);
        self.updated(&mut rho).for_each(|(n, rho)| {
            let (cell, r, v) = site::collide::<L, Q, f64, C>(
                p,
                collision,
                n as u32,
                |i, k| f[i * sites + k as usize],
                phi[n],
                |k| mu[k as usize],
            );
            *rho = r;
            // SAFETY: each task writes its own site's value in each plane.
            unsafe {
                for (i, value) in cell.into_iter().enumerate() {
                    *out.get().add(i * sites + n) = value;
                }
                for (a, value) in v.into_iter().enumerate() {
                    *u.get().add(a * sites + n) = value;
                }
            }
        });
        self.rho = rho;
    }

    /// `φ ← φ − ∇·J`.
    fn order_parameter(&mut self) {
        let sites = self.phi.len();
        let mut next = std::mem::take(&mut self.phi_next);
        let (p, phi, mu, u) = (&self.params, &self.phi, &self.mu, &self.u);
        self.updated(&mut next).for_each(|(n, next)| {
            *next = site::order_parameter::<L, Q, f64>(
                p,
                n as u32,
                |k| phi[k as usize],
                |k| mu[k as usize],
                |k, a| u[a * sites + k as usize],
            );
        });
        self.phi_next = std::mem::replace(&mut self.phi, next);
    }

    fn pass(&mut self, pass: Pass) {
        match pass {
            Pass::ChemicalPotential => self.chemical_potential(),
            Pass::Fluid => self.collide(),
            Pass::OrderParameter => self.order_parameter(),
        }
    }

    fn field(&mut self, field: Field) -> &mut Vec<f64> {
        match field {
            Field::Mu => &mut self.mu,
            Field::Phi => &mut self.phi,
            Field::Populations => &mut self.f,
            Field::Velocity => &mut self.u,
        }
    }
}

impl<L: Lattice<Q>, const Q: usize> Box3 for Sites<L, Q> {
    fn step(&mut self) -> Result<()> {
        for pass in Pass::ALL {
            self.pass(pass);
        }
        Ok(())
    }

    fn fields(&self) -> Result<BinaryFields> {
        Ok(BinaryFields::new(&self.params.free_energy, self.rho.clone(), &self.u, self.phi.clone(), self.mu.clone()))
    }
}

/// A box split into slabs along z, on the CPU.
pub(super) struct CpuSlabs<L: Lattice<Q>, const Q: usize> {
    config: BinaryConfig,
    slabs: Vec<Sites<L, Q>>,
}

impl<L: Lattice<Q>, const Q: usize> CpuSlabs<L, Q> {
    pub(super) fn new(config: &BinaryConfig, slabs: Vec<Slab>, phi: &(impl Fn(u32, u32, u32) -> f64 + Sync)) -> Self {
        let slabs = slabs.into_iter().map(|slab| Sites::new(config, slab, phi)).collect();
        Self { config: config.clone(), slabs }
    }

    /// Each slab's first and last own planes of what `pass` wrote, into
    /// the planes its neighbours receive them in.
    fn exchange(&mut self, pass: Pass) {
        let count = self.slabs.len();
        let plane = (self.config.size[0] * self.config.size[1]) as usize;
        for (field, rows) in pass.sent(Q) {
            for from in 0..count {
                let sends = self.slabs[from].slab.faces().0;
                // The first own plane down, into the upper received plane of
                // the slab below; the last up, into the lower one above.
                let (below, above) = ((from + count - 1) % count, (from + 1) % count);
                for (to, sent, side) in [(below, sends[0], 1), (above, sends[1], 0)] {
                    let received = self.slabs[to].slab.faces().1[side];
                    let starts = |k: usize, z: u32| -> Vec<usize> {
                        self.slabs[k].slab.rows(&self.config, z, rows.clone()).collect()
                    };
                    let (read, write) = (starts(from, sent), starts(to, received));
                    let values: Vec<Vec<f64>> =
                        read.iter().map(|&s| self.slabs[from].field(field)[s..s + plane].to_vec()).collect();
                    for (s, v) in write.into_iter().zip(values) {
                        self.slabs[to].field(field)[s..s + plane].copy_from_slice(&v);
                    }
                }
            }
        }
    }
}

impl<L: Lattice<Q>, const Q: usize> Box3 for CpuSlabs<L, Q> {
    fn step(&mut self) -> Result<()> {
        for pass in Pass::ALL {
            self.slabs.par_iter_mut().for_each(|s| s.pass(pass));
            self.exchange(pass);
        }
        Ok(())
    }

    fn fields(&self) -> Result<BinaryFields> {
        let slabs: Vec<Slab> = self.slabs.iter().map(|s| s.slab.clone()).collect();
        let whole = |rows: usize, field: fn(&Sites<L, Q>) -> &Vec<f64>| {
            let fields: Vec<Vec<f64>> = self.slabs.iter().map(|s| field(s).clone()).collect();
            gather(&self.config, &slabs, &fields, rows)
        };
        Ok(BinaryFields::new(
            &self.config.free_energy,
            whole(1, |s| &s.rho),
            &whole(3, |s| &s.u),
            whole(1, |s| &s.phi),
            whole(1, |s| &s.mu),
        ))
    }
}
