//! The binary fluid on a GPU: the `binary_*` kernels of `kernels-gpu`, the
//! same per-site functions as the CPU's, three passes a step on one
//! stream (`μ`, the fluid, `φ`), each reading what the one before wrote.
//! A box, or a slab of one split over several GPUs ([`super::gpus`]).

use super::slab::{Field, Pass, Slab};
use super::{ludwig_mrt, BinaryCollision, BinaryConfig, BinaryFields, Box3, KernelSeconds};
use crate::error::{CudaContextExt, Result};
use crate::gpu::GpuDevice;
use crate::launch::ByValue;
use crate::solver::KernelReport;
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};
use kernels_gpu::binary::BinaryParams;
use kernels_gpu::collision::{Bgk, Mrt};
use kernels_gpu::Real;

/// Threads per block.
const THREADS: u32 = 128;

/// The collision operator's parameters, as the kernel takes them.
#[derive(Clone, Copy)]
enum Operator<T: Copy> {
    Bgk(ByValue<Bgk<T>>),
    Mrt(ByValue<Mrt<T>>),
}

/// A box or slab in device memory, in precision `T`.
pub(super) struct BinaryGpu<T: DeviceRepr + Copy> {
    device: GpuDevice,
    slab: Slab,
    params: ByValue<BinaryParams<T>>,
    operator: Operator<T>,
    mu_kernel: CudaFunction,
    collide_kernel: CudaFunction,
    phi_kernel: CudaFunction,
    /// Post-collision populations (`i N + n`), and the buffer the next step writes.
    f: CudaSlice<T>,
    next: CudaSlice<T>,
    phi: CudaSlice<T>,
    phi_next: CudaSlice<T>,
    mu: CudaSlice<T>,
    rho: CudaSlice<T>,
    /// Velocity planes `a N + n`.
    u: CudaSlice<T>,
    /// The free energy in f64, for the fields' pressure.
    config: BinaryConfig,
}

impl<T: Real + DeviceRepr + ValidAsZeroBits + Unpin> BinaryGpu<T> {
    /// `slab` of `config` on `device`, at rest with density 1 and the
    /// order parameter `phi`, in precision `name` (`f32`, `f64`).
    pub(super) fn new(
        config: &BinaryConfig,
        slab: Slab,
        device: GpuDevice,
        name: &str,
        phi: &(impl Fn(u32, u32, u32) -> f64 + Sync),
    ) -> Result<Self> {
        let sites = slab.sites(config);
        let q = config.lattice.q();
        let kernel = |k: &str| device.function(&format!("binary_{k}_{}_{name}", config.lattice.name()));
        let (operator, collide) = match config.collision {
            BinaryCollision::Bgk => {
                (Operator::Bgk(ByValue(Bgk { omega: T::from_f64(1.0 / config.tau) })), kernel("collide_bgk")?)
            }
            BinaryCollision::Mrt => (Operator::Mrt(ByValue(ludwig_mrt::<T>(config.tau))), kernel("collide_mrt")?),
        };
        let s = device.stream().clone();
        let phi: Vec<T> = slab.initial_phi(config, phi).into_iter().map(T::from_f64).collect();
        let zeros = |n: usize, what: &str| s.alloc_zeros::<T>(n).ctx(format!("allocating the {what}"));
        let mut gpu = Self {
            params: ByValue(slab.params::<T>(config)),
            slab,
            operator,
            mu_kernel: kernel("mu")?,
            collide_kernel: collide,
            phi_kernel: kernel("phi")?,
            // Shifted populations at rest, density 1: zero.
            f: zeros(q * sites, "populations")?,
            next: zeros(q * sites, "second population buffer")?,
            phi_next: zeros(sites, "second order-parameter buffer")?,
            phi: s.clone_htod(&phi).ctx("uploading the order parameter")?,
            mu: zeros(sites, "chemical potential")?,
            rho: s.clone_htod(&vec![T::ONE; sites]).ctx("uploading the density")?,
            u: zeros(3 * sites, "velocity")?,
            config: config.clone(),
            device,
        };
        gpu.run(Pass::ChemicalPotential)?;
        Ok(gpu)
    }

    /// The slab it holds.
    pub(super) fn slab(&self) -> &Slab {
        &self.slab
    }

    /// The device.
    pub(super) fn device(&self) -> &GpuDevice {
        &self.device
    }

    /// The device address of `field`.
    pub(super) fn address(&self, field: Field) -> u64 {
        let slice = match field {
            Field::Mu => &self.mu,
            Field::Phi => &self.phi,
            Field::Populations => &self.f,
            Field::Velocity => &self.u,
        };
        slice.device_ptr(self.device.stream()).0
    }

    /// The stored density, velocity (`a N + n`), order parameter and
    /// chemical potential.
    pub(super) fn stored(&self) -> Result<[Vec<f64>; 4]> {
        let s = self.device.stream();
        let back = |v: &CudaSlice<T>, what: &str| -> Result<Vec<f64>> {
            let host = s.clone_dtoh(v).ctx(format!("reading the {what} back"))?;
            Ok(host.into_iter().map(Real::to_f64).collect())
        };
        Ok([
            back(&self.rho, "density")?,
            back(&self.u, "velocity")?,
            back(&self.phi, "order parameter")?,
            back(&self.mu, "chemical potential")?,
        ])
    }

    /// Queues `pass` over all the planes it updates, and ends it.
    fn run(&mut self, pass: Pass) -> Result<()> {
        self.launch_pass(pass, self.params.0.planes)?;
        self.end_pass(pass);
        Ok(())
    }

    /// Queues `pass` over the stored planes `[first, end)` on the
    /// device's stream, a thread per site. Call [`Self::end_pass`] once
    /// the pass has been queued over all the planes it updates.
    pub(super) fn launch_pass(&mut self, pass: Pass, planes: [u32; 2]) -> Result<()> {
        let params = ByValue(BinaryParams { planes, ..self.params.0 });
        let cfg = LaunchConfig {
            grid_dim: (params.0.updated_sites().div_ceil(THREADS), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let s = self.device.stream().clone();
        match pass {
            Pass::ChemicalPotential => {
                let mut launch = s.launch_builder(&self.mu_kernel);
                launch.arg(&params).arg(&self.phi).arg(&mut self.mu);
                // SAFETY: `binary_mu_*(params, phi, mu)`, fields of `sites` values.
                unsafe { launch.launch(cfg) }.ctx("launching the chemical potential")?;
            }
            Pass::Fluid => {
                let mut launch = s.launch_builder(&self.collide_kernel);
                launch.arg(&params);
                match &self.operator {
                    Operator::Bgk(c) => launch.arg(c),
                    Operator::Mrt(c) => launch.arg(c),
                };
                launch
                    .arg(&self.f)
                    .arg(&mut self.next)
                    .arg(&self.phi)
                    .arg(&self.mu)
                    .arg(&mut self.rho)
                    .arg(&mut self.u);
                // SAFETY: `binary_collide_*(params, collision, src, dst, phi, mu, rho, u)`,
                // `Q` planes of populations and three of velocity.
                unsafe { launch.launch(cfg) }.ctx("launching the fluid step")?;
            }
            Pass::OrderParameter => {
                let mut launch = s.launch_builder(&self.phi_kernel);
                launch.arg(&params).arg(&self.phi).arg(&self.mu).arg(&self.u).arg(&mut self.phi_next);
                // SAFETY: `binary_phi_*(params, phi, mu, u, next)`.
                unsafe { launch.launch(cfg) }.ctx("launching the order parameter")?;
            }
        }
        Ok(())
    }

    /// Ends `pass`: what it wrote becomes the current state.
    pub(super) fn end_pass(&mut self, pass: Pass) {
        match pass {
            Pass::ChemicalPotential => {}
            Pass::Fluid => std::mem::swap(&mut self.f, &mut self.next),
            Pass::OrderParameter => std::mem::swap(&mut self.phi, &mut self.phi_next),
        }
    }

    /// Seconds `reps` launches of `pass` alone take, after one untimed.
    fn time(&mut self, reps: u32, pass: Pass) -> Result<f64> {
        self.run(pass)?;
        self.synchronize()?;
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            self.run(pass)?;
        }
        self.synchronize()?;
        Ok(t0.elapsed().as_secs_f64() / reps.max(1) as f64)
    }
}

impl<T: Real + DeviceRepr + ValidAsZeroBits + Unpin> Box3 for BinaryGpu<T> {
    fn step(&mut self) -> Result<()> {
        Pass::ALL.into_iter().try_for_each(|pass| self.run(pass))
    }

    fn synchronize(&self) -> Result<()> {
        self.device.stream().synchronize().ctx("waiting for the binary-fluid steps")
    }

    fn kernel_seconds(&mut self, reps: u32) -> Result<Option<KernelSeconds>> {
        Ok(Some(KernelSeconds {
            chemical_potential: self.time(reps, Pass::ChemicalPotential)?,
            fluid: self.time(reps, Pass::Fluid)?,
            order_parameter: self.time(reps, Pass::OrderParameter)?,
        }))
    }

    fn fields(&self) -> Result<BinaryFields> {
        let [rho, u, phi, mu] = self.stored()?;
        Ok(BinaryFields::new(&self.config.free_energy, rho, &u, phi, mu))
    }

    fn kernel_report(&self) -> Option<KernelReport> {
        self.device.kernel_resources(&self.collide_kernel, THREADS)
    }
}
