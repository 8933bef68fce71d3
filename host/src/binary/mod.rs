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

pub mod bench;
pub mod case;
mod cpu;
mod gpu;
mod gpus;
pub mod measure;
pub mod slab;
#[cfg(test)]
mod tests;
pub mod validation;

use crate::error::{Error, Result};
use crate::gpu::GpuDevice;
use crate::solver::{BackendKind, KernelReport, LatticeKind, Precision};
use kernels_gpu::binary::{BinaryParams, FreeEnergy};
use kernels_gpu::collision::{Mrt, MrtRates};
use kernels_gpu::{D2Q9, D3Q19, D3Q27};
use slab::Slab;

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

/// What a binary-fluid run is.
#[derive(Clone, Debug, PartialEq)]
pub struct BinaryConfig {
    /// Sites along x, y, z (z = 1 for D2Q9); periodic along every axis.
    pub size: [u32; 3],
    /// The lattice.
    pub lattice: LatticeKind,
    /// Relaxation time of the fluid: viscosity `(tau − 1/2) / 3`. With the
    /// forced interface, explicit steps stay stable from about 0.8 up.
    pub tau: f64,
    /// The collision operator.
    pub collision: BinaryCollision,
    /// `A`, `B`, `κ`.
    pub free_energy: FreeEnergy<f64>,
    /// The mobility `M` of `∂φ/∂t + ∇·(φu) = M ∇²μ`.
    pub mobility: f64,
    /// Storage and arithmetic: f64 (the CPU's), or f32 on a GPU.
    pub precision: Precision,
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
        let two_d = self.lattice == LatticeKind::D2Q9;
        if nx < 2 || ny < 2 || (two_d && nz != 1) || (!two_d && nz < 2) {
            return fail(format!(
                "size {:?}: at least 2 sites along each axis{}",
                self.size,
                if two_d { ", and z = 1 for D2Q9" } else { "" }
            ));
        }
        if self.precision == Precision::F16 {
            return fail("the binary fluid runs in f64 or f32 (f32 on a GPU only), not f16".into());
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

    /// The box and the model's parameters, in `T`.
    pub fn params<T: kernels_gpu::Real>(&self) -> BinaryParams<T> {
        let fe = &self.free_energy;
        BinaryParams {
            size: self.size,
            planes: [0, self.size[2]],
            free_energy: FreeEnergy::new(fe.a, fe.b, fe.kappa),
            mobility: T::from_f64(self.mobility),
        }
    }
}

/// The MRT rates Ludwig sets for relaxation time `tau`: the bulk viscosity
/// equal to the shear viscosity, the non-hydrodynamic moments at rate 1.
pub fn ludwig_mrt<T: kernels_gpu::Real>(tau: f64) -> Mrt<T> {
    let omega = T::from_f64(1.0 / tau);
    Mrt::new(MrtRates { shear: omega, bulk: omega, flux: T::ONE, fourth: T::ONE, ghost: T::ONE })
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

impl BinaryFields {
    /// The fields from the solver's arrays (the velocity as three planes
    /// `a N + n`), with the pressure of `free_energy`.
    pub fn new(free_energy: &FreeEnergy<f64>, rho: Vec<f64>, u: &[f64], phi: Vec<f64>, mu: Vec<f64>) -> Self {
        let sites = rho.len();
        let pressure = (0..sites).map(|k| rho[k] / 3.0 + free_energy.bulk_pressure(phi[k], mu[k])).collect();
        let u = (0..sites).map(|k| [u[k], u[sites + k], u[2 * sites + k]]).collect();
        Self { rho, u, phi, mu, pressure }
    }
}

/// A binary-fluid simulation on the CPU or a GPU.
pub struct BinarySolver {
    config: BinaryConfig,
    inner: Box<dyn Box3 + Send>,
    time: u64,
}

/// Seconds one launch of each of a step's kernels takes alone.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct KernelSeconds {
    /// `μ` from `φ`.
    pub chemical_potential: f64,
    /// The fluid: pull, collide with the force.
    pub fluid: f64,
    /// `φ` by Cahn–Hilliard.
    pub order_parameter: f64,
}

/// The solver of one lattice and backend.
trait Box3 {
    fn step(&mut self) -> Result<()>;
    fn fields(&self) -> Result<BinaryFields>;
    /// Waits until queued steps are done.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn kernel_report(&self) -> Option<KernelReport> {
        None
    }
    /// On a GPU: each kernel timed alone over `reps` launches (which leave
    /// the state mid-step: for benchmarks).
    fn kernel_seconds(&mut self, _reps: u32) -> Result<Option<KernelSeconds>> {
        Ok(None)
    }
    /// How copies travel between neighbouring devices of a split box.
    fn links(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Where a box runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Devices {
    /// The CPU, the box split into this many slabs along z: one for the
    /// whole box; more run the split as GPUs do, to check it.
    Cpu(usize),
    /// These GPUs, a slab each (one: the whole box; an ordinal may repeat).
    Gpus {
        /// CUDA ordinals.
        ordinals: Vec<usize>,
        /// Whether each pass's halo copies overlap its interior (else they
        /// follow the whole pass: a baseline for benchmarks).
        overlap: bool,
    },
}

impl Devices {
    /// One device of `backend`.
    pub fn one(backend: BackendKind) -> Self {
        match backend {
            BackendKind::Cpu => Devices::Cpu(1),
            BackendKind::Gpu(ordinal) => Devices::Gpus { ordinals: vec![ordinal], overlap: true },
        }
    }
}

impl BinarySolver {
    /// A solver on the CPU whose sites start at rest, density 1, with the
    /// order parameter `phi(x, y, z)`.
    pub fn new(config: BinaryConfig, phi: impl Fn(u32, u32, u32) -> f64 + Sync) -> Result<Self> {
        Self::on(config, BackendKind::Cpu, "", phi)
    }

    /// As [`BinarySolver::new`], on `backend` (a GPU loads the kernels of `ptx`).
    pub fn on(
        config: BinaryConfig,
        backend: BackendKind,
        ptx: &str,
        phi: impl Fn(u32, u32, u32) -> f64 + Sync,
    ) -> Result<Self> {
        Self::on_devices(config, &Devices::one(backend), ptx, phi)
    }

    /// As [`BinarySolver::new`], on `devices`: split along z into a slab
    /// per device when there are several.
    pub fn on_devices(
        config: BinaryConfig,
        devices: &Devices,
        ptx: &str,
        phi: impl Fn(u32, u32, u32) -> f64 + Sync,
    ) -> Result<Self> {
        config.validate()?;
        let parts = match devices {
            Devices::Cpu(n) => *n,
            Devices::Gpus { ordinals, .. } => ordinals.len(),
        };
        let slabs = Slab::split(&config, parts)?;
        let inner: Box<dyn Box3 + Send> = match devices {
            Devices::Cpu(_) => {
                if config.precision != Precision::F64 {
                    return Err(Error::Setup(
                        "the CPU runs the binary fluid in f64: set precision = \"f64\", or run it on a GPU".into(),
                    ));
                }
                fn on_cpu<L: kernels_gpu::Lattice<Q>, const Q: usize>(
                    c: &BinaryConfig,
                    mut slabs: Vec<Slab>,
                    phi: &(impl Fn(u32, u32, u32) -> f64 + Sync),
                ) -> Box<dyn Box3 + Send> {
                    if slabs.len() == 1 {
                        Box::new(cpu::Sites::<L, Q>::new(c, slabs.remove(0), phi))
                    } else {
                        Box::new(cpu::CpuSlabs::<L, Q>::new(c, slabs, phi))
                    }
                }
                match config.lattice {
                    LatticeKind::D2Q9 => on_cpu::<D2Q9, 9>(&config, slabs, &phi),
                    LatticeKind::D3Q19 => on_cpu::<D3Q19, 19>(&config, slabs, &phi),
                    LatticeKind::D3Q27 => on_cpu::<D3Q27, 27>(&config, slabs, &phi),
                }
            }
            Devices::Gpus { ordinals, overlap } => {
                let devices = ordinals.iter().map(|&o| GpuDevice::open(o, ptx)).collect::<Result<Vec<_>>>()?;
                fn on_gpus<
                    T: kernels_gpu::Real + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Unpin,
                >(
                    c: &BinaryConfig,
                    mut devices: Vec<GpuDevice>,
                    mut slabs: Vec<Slab>,
                    name: &str,
                    phi: &(impl Fn(u32, u32, u32) -> f64 + Sync),
                    overlap: bool,
                ) -> Result<Box<dyn Box3 + Send>> {
                    Ok(if devices.len() == 1 {
                        Box::new(gpu::BinaryGpu::<T>::new(c, slabs.remove(0), devices.remove(0), name, phi)?)
                    } else {
                        Box::new(gpus::GpuSlabs::<T>::new(c, devices, name, phi, overlap)?)
                    })
                }
                match config.precision {
                    Precision::F32 => on_gpus::<f32>(&config, devices, slabs, "f32", &phi, *overlap)?,
                    _ => on_gpus::<f64>(&config, devices, slabs, "f64", &phi, *overlap)?,
                }
            }
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

    /// Advances `steps` time steps (queued, on a GPU).
    pub fn step(&mut self, steps: u64) -> Result<()> {
        for _ in 0..steps {
            self.inner.step()?;
            self.time += 1;
        }
        Ok(())
    }

    /// The fields of the current state (the velocity and chemical potential
    /// of the last step; at rest and from `φ` before the first).
    pub fn fields(&self) -> Result<BinaryFields> {
        self.inner.fields()
    }

    /// Registers and occupancy of the fluid's kernel, on a GPU.
    pub fn kernel_report(&self) -> Option<KernelReport> {
        self.inner.kernel_report()
    }

    /// Waits until queued steps are done.
    pub fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }

    /// How copies travel between neighbouring GPUs of a split box (none
    /// for one device).
    pub fn links(&self) -> Vec<String> {
        self.inner.links()
    }

    /// On a GPU, each of a step's kernels timed alone over `reps`
    /// launches. The launches leave the state mid-step: for benchmarks.
    pub fn kernel_seconds(&mut self, reps: u32) -> Result<Option<KernelSeconds>> {
        self.inner.kernel_seconds(reps)
    }
}
