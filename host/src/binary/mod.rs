//! The binary fluid of Ludwig (symmetric free energy; Desplat, Pagonabarraga
//! and Bladon 2001), on the CPU: a periodic box of one lattice Boltzmann
//! fluid carrying an order parameter `φ` (the two phases at `±φ*`).
//!
//! `φ` evolves by finite differences, as Ludwig does, not as a second set of
//! populations: one set of populations stays in memory, the mobility and
//! the interface are set apart from the fluid's relaxation time, and the
//! Cahn–Hilliard equation in flux form conserves `φ` to round-off. A step:
//!
//! 1. `μ = A φ + B φ³ − κ ∇²φ` at every site (isotropic Laplacian);
//! 2. collide with the force `−φ ∇μ` (Guo forcing; isotropic gradient),
//!    which keeps the velocity of each site, then stream (pull);
//! 3. `φ ← φ − ∇·J` with `J = φ u − M ∇μ` on the faces between sites
//!    (`φ` upwind): what leaves a site enters its neighbour, bit for bit.
//!
//! The per-site physics is `kernels_gpu::binary`'s.

#[cfg(test)]
mod tests;

use crate::cpu::Shared;
use crate::error::{Error, Result};
use kernels_gpu::binary::{gradient, laplacian, FreeEnergy};
use kernels_gpu::collision::{Bgk, Collision, Mrt};
use kernels_gpu::lattice::opposite;
use kernels_gpu::{Lattice, D2Q9, D3Q19, D3Q27};
use rayon::prelude::*;

/// The collision operator of the fluid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BinaryCollision {
    /// Single relaxation time.
    Bgk,
    /// Multiple relaxation times as Ludwig sets them: the bulk viscosity
    /// equal to the shear viscosity, the non-hydrodynamic moments relaxed
    /// at rate 1. (The published rates of the isothermal solver, D2Q9's
    /// `s_q = 1.9` among them, let the forced interface grow unstable.)
    Mrt,
}

/// The lattice of the fluid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryLattice {
    /// 2D.
    D2Q9,
    /// 3D.
    D3Q19,
    /// 3D, every neighbour of the cube.
    D3Q27,
}

/// What a binary-fluid run is.
#[derive(Clone, Debug, PartialEq)]
pub struct BinaryConfig {
    /// Sites along x, y, z (z = 1 for D2Q9); periodic along every axis.
    pub size: [u32; 3],
    /// The lattice.
    pub lattice: BinaryLattice,
    /// Relaxation time of the fluid: viscosity `(tau − 1/2) / 3`. With the
    /// forced interface, explicit steps stay stable from about 0.8 up.
    pub tau: f64,
    /// The collision operator.
    pub collision: BinaryCollision,
    /// `A`, `B`, `κ`.
    pub free_energy: FreeEnergy<f64>,
    /// The mobility `M` of `∂φ/∂t + ∇·(φu) = M ∇²μ`.
    pub mobility: f64,
}

impl BinaryConfig {
    /// Checks that the set-up can run, with what to change if not.
    pub fn validate(&self) -> Result<()> {
        let fail = |m: String| Err(Error::Setup(m));
        let fe = &self.free_energy;
        if !(fe.a < 0.0 && fe.b > 0.0 && fe.kappa > 0.0) {
            return fail(format!(
                "the binary fluid needs A < 0, B > 0 and kappa > 0 (two phases and an interface), got A = {}, B = {}, kappa = {}",
                fe.a, fe.b, fe.kappa
            ));
        }
        if !(self.mobility > 0.0 && self.mobility.is_finite()) {
            return fail(format!("the mobility must be positive, got {}", self.mobility));
        }
        if !(self.tau > 0.5 && self.tau.is_finite()) {
            return fail(format!("tau must be above 1/2, got {}", self.tau));
        }
        let [nx, ny, nz] = self.size;
        let two_d = self.lattice == BinaryLattice::D2Q9;
        if nx < 2 || ny < 2 || (two_d && nz != 1) || (!two_d && nz < 2) {
            return fail(format!(
                "size {:?}: at least 2 sites along each axis{}",
                self.size,
                if two_d { ", and z = 1 for D2Q9" } else { "" }
            ));
        }
        if (nx as u64) * (ny as u64) * (nz as u64) > u32::MAX as u64 {
            return fail(format!("size {:?} has more than 2^32 sites", self.size));
        }
        Ok(())
    }

    /// Sites in the box.
    pub fn sites(&self) -> usize {
        self.size.iter().map(|&n| n as usize).product()
    }
}

/// Density, velocity, order parameter, chemical potential and pressure of
/// every site (`x + nx (y + ny z)`).
#[derive(Clone, Debug, PartialEq)]
pub struct BinaryFields {
    /// Density.
    pub rho: Vec<f64>,
    /// Velocity (with the half-force correction).
    pub u: Vec<[f64; 3]>,
    /// The order parameter.
    pub phi: Vec<f64>,
    /// The chemical potential.
    pub mu: Vec<f64>,
    /// The bulk pressure `ρ c_s² + φ μ − A/2 φ² − B/4 φ⁴` (exact away from
    /// interfaces).
    pub pressure: Vec<f64>,
}

/// A binary-fluid simulation on the CPU.
pub struct BinarySolver {
    config: BinaryConfig,
    inner: Box<dyn Box3 + Send>,
    time: u64,
}

/// The solver of one lattice.
trait Box3 {
    fn step(&mut self);
    fn fields(&self) -> BinaryFields;
}

impl BinarySolver {
    /// A solver whose sites start at rest, density 1, with the order
    /// parameter `phi(x, y, z)`.
    pub fn new(config: BinaryConfig, phi: impl Fn(u32, u32, u32) -> f64 + Sync) -> Result<Self> {
        config.validate()?;
        let inner: Box<dyn Box3 + Send> = match config.lattice {
            BinaryLattice::D2Q9 => Box::new(Sites::<D2Q9, 9>::new(&config, &phi)),
            BinaryLattice::D3Q19 => Box::new(Sites::<D3Q19, 19>::new(&config, &phi)),
            BinaryLattice::D3Q27 => Box::new(Sites::<D3Q27, 27>::new(&config, &phi)),
        };
        Ok(Self { config, inner, time: 0 })
    }

    /// The set-up.
    pub fn config(&self) -> &BinaryConfig {
        &self.config
    }

    /// Steps done.
    pub fn time(&self) -> u64 {
        self.time
    }

    /// Advances `steps` time steps.
    pub fn step(&mut self, steps: u64) {
        for _ in 0..steps {
            self.inner.step();
            self.time += 1;
        }
    }

    /// The fields of the current state (the velocity and chemical potential
    /// of the last step; at rest and from `φ` before the first).
    pub fn fields(&self) -> BinaryFields {
        self.inner.fields()
    }
}

/// The direction of the unit step `sign` along each axis (0, the rest
/// velocity, for an axis the lattice lacks).
fn unit_steps<L: Lattice<Q>, const Q: usize>(sign: i32) -> [usize; 3] {
    std::array::from_fn(|a| (0..Q).find(|&j| (0..3).all(|b| L::C[j][b] == if a == b { sign } else { 0 })).unwrap_or(0))
}

/// The state of a box on lattice `L`.
struct Sites<L: Lattice<Q>, const Q: usize> {
    config: BinaryConfig,
    fe: FreeEnergy<f64>,
    /// Shifted populations `f_i − w_i`, `i N + n`.
    f: Vec<f64>,
    /// The populations after collision, before they stream.
    next: Vec<f64>,
    phi: Vec<f64>,
    mu: Vec<f64>,
    rho: Vec<f64>,
    u: Vec<[f64; 3]>,
    /// Site `n`'s neighbour `n + c_i`, `n Q + i` (periodic).
    neighbour: Vec<u32>,
    /// The directions of the unit steps along each axis, up and down.
    up: [usize; 3],
    down: [usize; 3],
    /// Each site's fluxes through its faces towards +x, +y, +z.
    flux: Vec<[f64; 3]>,
    _lattice: std::marker::PhantomData<L>,
}

impl<L: Lattice<Q>, const Q: usize> Sites<L, Q> {
    fn new(config: &BinaryConfig, phi: &(impl Fn(u32, u32, u32) -> f64 + Sync)) -> Self {
        let [nx, ny, nz] = config.size;
        let n = config.sites();
        let at = |k: usize| {
            let k = k as u32;
            (k % nx, (k / nx) % ny, k / (nx * ny))
        };
        let wrap = |v: u32, c: i32, len: u32| ((v as i64 + c as i64).rem_euclid(len as i64)) as u32;
        let neighbour = (0..n * Q)
            .into_par_iter()
            .map(|k| {
                let (x, y, z) = at(k / Q);
                let c = L::C[k % Q];
                let (x, y, z) = (wrap(x, c[0], nx), wrap(y, c[1], ny), wrap(z, c[2], nz));
                x + nx * (y + ny * z)
            })
            .collect();
        let phi: Vec<f64> = (0..n)
            .into_par_iter()
            .map(|k| {
                let (x, y, z) = at(k);
                phi(x, y, z)
            })
            .collect();
        let mut s = Self {
            config: config.clone(),
            fe: config.free_energy,
            f: vec![0.0; Q * n],
            next: vec![0.0; Q * n],
            phi,
            mu: vec![0.0; n],
            rho: vec![1.0; n],
            u: vec![[0.0; 3]; n],
            neighbour,
            up: unit_steps::<L, Q>(1),
            down: unit_steps::<L, Q>(-1),
            flux: vec![[0.0; 3]; n],
            _lattice: std::marker::PhantomData,
        };
        s.chemical_potential();
        s
    }

    /// The values of `field` at site `n`'s neighbours, in the order of `L::C`.
    #[inline(always)]
    fn around(&self, field: &[f64], n: usize) -> [f64; Q] {
        std::array::from_fn(|i| field[self.neighbour[n * Q + i] as usize])
    }

    /// `μ` from `φ`.
    fn chemical_potential(&mut self) {
        let mut mu = std::mem::take(&mut self.mu);
        mu.par_iter_mut().enumerate().for_each(|(n, mu)| {
            let lap = laplacian::<L, Q, f64>(&self.around(&self.phi, n));
            *mu = self.fe.chemical_potential(self.phi[n], lap);
        });
        self.mu = mu;
    }

    /// Collides every site with the force `−φ ∇μ` (keeping its density and
    /// velocity) into `next`, then streams (pull) back into `f`.
    fn collide_and_stream(&mut self) {
        let n = self.phi.len();
        let (tau, collision) = (self.config.tau, self.config.collision);
        let post = Shared::new(self.next.as_ptr());
        let (phi, mu, f) = (&self.phi, &self.mu, &self.f);
        let around = |field: &[f64], k: usize| -> [f64; Q] {
            std::array::from_fn(|i| field[self.neighbour[k * Q + i] as usize])
        };
        self.rho.par_iter_mut().zip(self.u.par_iter_mut()).enumerate().for_each(|(k, (rho, u))| {
            let grad = gradient::<L, Q, f64>(&around(mu, k));
            let force = grad.map(|g| -phi[k] * g);
            let mut cell: [f64; Q] = std::array::from_fn(|i| f[i * n + k]);
            (*rho, *u) = match collision {
                BinaryCollision::Bgk => Bgk { omega: 1.0 / tau }.collide::<L, Q, true>(&mut cell, force, 1.0),
                BinaryCollision::Mrt => {
                    let omega = 1.0 / tau;
                    let m = Mrt { shear: omega, bulk: omega, flux: 1.0, fourth: 1.0, ghost: 1.0 };
                    m.collide::<L, Q, true>(&mut cell, force, 1.0)
                }
            };
            for (i, v) in cell.into_iter().enumerate() {
                // SAFETY: each task writes its own site's value in each plane.
                unsafe { *post.get().add(i * n + k) = v };
            }
        });
        // Pull: site k's population i comes from k − c_i, its neighbour
        // along the opposite velocity.
        let (post, neighbour) = (&self.next, &self.neighbour);
        self.f.par_chunks_mut(n).enumerate().for_each(|(i, plane)| {
            for (k, v) in plane.iter_mut().enumerate() {
                *v = post[i * n + neighbour[k * Q + opposite(i)] as usize];
            }
        });
    }

    /// `φ ← φ − ∇·J` with the face fluxes `J = φ u − M ∇μ`.
    fn advect_and_diffuse(&mut self) {
        let d = L::D;
        let m = self.config.mobility;
        let (phi, u, mu, neighbour) = (&self.phi, &self.u, &self.mu, &self.neighbour);
        let [up, down] = [self.up, self.down];
        // The flux through the face towards +x, +y (+z) of each site.
        self.flux.par_iter_mut().enumerate().for_each(|(k, j)| {
            for a in 0..d {
                let next = neighbour[k * Q + up[a]] as usize;
                // Upwind: the face's velocity carries the order parameter of
                // the site it leaves (central values let the coupled flow and
                // interface grow unstable under explicit steps).
                let face = 0.5 * (u[k][a] + u[next][a]);
                let advected = face * if face > 0.0 { phi[k] } else { phi[next] };
                j[a] = advected - m * (mu[next] - mu[k]);
            }
        });
        // The face towards −a of site k is the +a face of its neighbour there.
        let flux = &self.flux;
        self.phi.par_iter_mut().enumerate().for_each(|(k, phi)| {
            let mut div = 0.0;
            for a in 0..d {
                div += flux[k][a] - flux[neighbour[k * Q + down[a]] as usize][a];
            }
            *phi -= div;
        });
    }
}

impl<L: Lattice<Q>, const Q: usize> Box3 for Sites<L, Q> {
    fn step(&mut self) {
        self.chemical_potential();
        self.collide_and_stream();
        self.advect_and_diffuse();
    }

    fn fields(&self) -> BinaryFields {
        let pressure =
            (0..self.phi.len()).map(|k| self.rho[k] / 3.0 + self.fe.bulk_pressure(self.phi[k], self.mu[k])).collect();
        BinaryFields { rho: self.rho.clone(), u: self.u.clone(), phi: self.phi.clone(), mu: self.mu.clone(), pressure }
    }
}
