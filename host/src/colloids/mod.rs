//! Colloids in a lattice Boltzmann fluid, as Ludwig does them: solid
//! spheres with bounce-back on the links that cross their surfaces (Ladd
//! 1994), the force and torque from the momentum those links exchange, an
//! implicit Newton–Euler update (Nguyen and Ladd 2002), sites covered and
//! uncovered as the spheres move with their mass and momentum accounted,
//! and lubrication and soft repulsion between close surfaces.
//!
//! The box is periodic along x and y, and along z unless walls close it
//! (walls may slide, for a shear flow). One fluid, BGK or Ludwig's MRT, on
//! D3Q19 or D3Q27. A step ([`Suspension::step`]):
//!
//! 1. each colloid's link sums over the stored post-collision populations
//!    (on the device, [`kernels_gpu::colloids::site::link_sums`]);
//! 2. on the host: pair and wall forces, the implicit update of every
//!    colloid's velocity and spin, the mass its links hand back ([`dynamics`]);
//! 3. the fluid step with bounce-back on links (on the device);
//! 4. the colloids move; the map of solid sites is repainted and the sites
//!    that changed are settled (on the device).
//!
//! The host's share is a copy of the sums down and of the colloids up, and
//! `O(N)` work for `N` colloids (pairs through a cell list).

pub mod bench;
pub mod case;
mod cpu;
pub mod dynamics;
mod gpu;
mod slabs;
pub mod validation;

use crate::binary::slab;
use crate::binary::{ludwig_mrt, BinaryCollision, Devices};
use crate::error::{Error, Result};
use crate::gpu::GpuDevice;
use crate::solver::{BackendKind, KernelReport, LatticeKind, Precision};
use kernels_gpu::colloids::{Colloid, Space, Sums, FLUID, LANES};
use kernels_gpu::{D3Q19, D3Q27};

pub use dynamics::{ColloidState, Interactions, Lubrication, SoftSphere};

/// A colloid as the case sets it.
#[derive(Clone, Debug, PartialEq)]
pub struct ColloidSpec {
    /// Centre (lattice units; sites sit at integer coordinates).
    pub centre: [f64; 3],
    /// Radius `a`: sites closer than `a` to the centre are solid.
    pub radius: f64,
    /// Initial velocity.
    pub velocity: [f64; 3],
    /// Initial angular velocity.
    pub spin: [f64; 3],
    /// Constant external force (gravity less buoyancy, say).
    pub force: [f64; 3],
    /// Constant external torque.
    pub torque: [f64; 3],
    /// Moves at its initial velocity and spin whatever the fluid does.
    pub fixed: bool,
    /// Density, for its mass `4/3 π a³ ρ` (the fluid's is 1).
    pub density: f64,
}

impl ColloidSpec {
    /// A free, neutrally buoyant colloid at rest.
    pub fn at(centre: [f64; 3], radius: f64) -> Self {
        Self {
            centre,
            radius,
            velocity: [0.0; 3],
            spin: [0.0; 3],
            force: [0.0; 3],
            torque: [0.0; 3],
            fixed: false,
            density: 1.0,
        }
    }
}

/// What a run with colloids is.
#[derive(Clone, Debug, PartialEq)]
pub struct SuspensionConfig {
    /// Sites along x, y, z.
    pub size: [u32; 3],
    /// D3Q19 or D3Q27.
    pub lattice: LatticeKind,
    /// Relaxation time: viscosity `(tau − 1/2)/3`.
    pub tau: f64,
    /// The collision operator.
    pub collision: BinaryCollision,
    /// f64 (the CPU's), or f32 on a GPU.
    pub precision: Precision,
    /// Walls half a site below `z = 0` and above `z = nz − 1`, with their
    /// velocities (bottom, top); `None`: periodic along z.
    pub walls: Option<[[f64; 3]; 2]>,
    /// Body force on every fluid site.
    pub force: [f64; 3],
    /// Without walls, push the fluid against the colloids' external forces
    /// (a uniform body force of their sum over the fluid sites, as a
    /// pressure gradient would), so the box's momentum stays zero.
    pub balance: bool,
    /// The colloids.
    pub colloids: Vec<ColloidSpec>,
    /// Lubrication and soft repulsion.
    pub interactions: Interactions,
}

impl SuspensionConfig {
    /// Sites in the box.
    pub fn sites(&self) -> usize {
        self.size.iter().map(|&n| n as usize).product()
    }

    /// The box as the kernels see it.
    pub fn space(&self) -> Space {
        Space::whole(self.size, self.walls.is_some())
    }

    /// The viscosity `ρ₀ (tau − 1/2)/3`.
    pub fn viscosity(&self) -> f64 {
        (self.tau - 0.5) / 3.0
    }

    /// Checks that the set-up can run, with what to change if not.
    pub fn validate(&self) -> Result<()> {
        let fail = |m: String| Err(Error::Setup(m));
        if !matches!(self.lattice, LatticeKind::D3Q19 | LatticeKind::D3Q27) {
            return fail(format!("colloids are spheres: use lattice d3q19 or d3q27, not {}", self.lattice.name()));
        }
        if !(self.tau > 0.5 && self.tau.is_finite()) {
            return fail(format!("tau must be above 1/2, got {}", self.tau));
        }
        if self.precision == Precision::F16 {
            return fail("colloids run in f64 or f32 (f32 on a GPU only), not f16".into());
        }
        if (self.size.iter().map(|&n| n as u64).product::<u64>()) > u32::MAX as u64 - 1 {
            return fail(format!("size {:?} has 2^32 sites or more", self.size));
        }
        if !self.force.iter().chain(self.walls.iter().flatten().flatten()).all(|v| v.is_finite()) {
            return fail("the body force and wall velocities must be finite numbers".into());
        }
        let space = self.space();
        for (k, c) in self.colloids.iter().enumerate() {
            let numbers = c.centre.iter().chain(&c.velocity).chain(&c.spin).chain(&c.force).chain(&c.torque);
            if !numbers.into_iter().all(|v| v.is_finite()) {
                return fail(format!("colloid {k}: its centre, velocity, spin, force and torque must be finite"));
            }
            if !(c.radius >= 1.0 && c.density > 0.0) {
                return fail(format!(
                    "colloid {k}: radius {} and density {}: the radius must be at least 1 site and the density positive",
                    c.radius, c.density
                ));
            }
            for a in 0..3 {
                let len = self.size[a] as f64;
                let walled = a == 2 && self.walls.is_some();
                if !walled && 2.0 * c.radius + 6.0 > len {
                    return fail(format!(
                        "colloid {k}: a sphere of radius {} needs at least {} sites along {} (2a + 6); make the box larger",
                        c.radius,
                        (2.0 * c.radius + 6.0).ceil(),
                        ["x", "y", "z"][a]
                    ));
                }
                if !(0.0..len).contains(&c.centre[a]) && !walled {
                    return fail(format!(
                        "colloid {k}: its centre {:?} lies outside the box {:?}",
                        c.centre, self.size
                    ));
                }
            }
            if self.walls.is_some() {
                let nz = self.size[2] as f64;
                let gap = (c.centre[2] + 0.5 - c.radius).min(nz - 0.5 - c.centre[2] - c.radius);
                if gap <= 0.0 {
                    return fail(format!(
                        "colloid {k} at {:?} cuts a wall (its gap to the nearer wall is {gap:.3})",
                        c.centre
                    ));
                }
            }
        }
        let states: Vec<ColloidState> = self.colloids.iter().map(ColloidState::new).collect();
        if let Some((i, j, h)) = dynamics::overlap(&space, &states) {
            return fail(format!(
                "colloids {i} and {j} overlap (their surfaces are {h:.3} apart): move them apart so that no two touch"
            ));
        }
        self.interactions.validate()
    }
}

/// Density, velocity and the map of solid sites of every site
/// (`x + nx (y + ny z)`).
#[derive(Clone, Debug, PartialEq)]
pub struct SuspensionFields {
    /// Density (0 inside colloids).
    pub rho: Vec<f64>,
    /// Velocity (0 inside colloids).
    pub u: Vec<[f64; 3]>,
    /// The colloid a site belongs to, or `None` for fluid.
    pub solid: Vec<Option<u32>>,
}

/// The fluid side of a run on one backend: the kernels' passes over the
/// populations, with the colloids the host hands it.
trait Fluid {
    /// Adds every colloid's links to its lanes' partial sums and returns
    /// each colloid's total (which includes what its last move covered).
    fn link_sums(&mut self, colloids: &[Colloid]) -> Result<Vec<Sums>>;
    /// The partial sums as they stand, totalled (what the last move covered).
    fn pending(&self, count: usize) -> Result<Vec<Sums>>;
    /// The fluid step with bounce-back on the colloids `colloids` (centred
    /// as in the current map) and the body force `force`.
    fn fluid(&mut self, colloids: &[Colloid], force: [f64; 3]) -> Result<()>;
    /// Moves the colloids to their `centre`s (from their `previous`), and
    /// settles the covered and uncovered sites.
    fn moved(&mut self, colloids: &[Colloid]) -> Result<()>;
    /// Density, velocity and map.
    fn fields(&self) -> Result<SuspensionFields>;
    /// The total mass of the fluid's populations (fluid sites only).
    fn fluid_mass(&self) -> Result<f64>;
    /// Waits until queued work is done.
    fn synchronize(&self) -> Result<()>;
    /// Registers and occupancy of the fluid's kernel, on a GPU.
    fn kernel_report(&self) -> Option<KernelReport>;
    /// On a GPU: seconds one fluid launch and one colloid pass (links and
    /// sums, a move) take alone, each over `reps` launches.
    fn kernel_seconds(&mut self, colloids: &[Colloid], reps: u32) -> Result<Option<[f64; 3]>>;
    /// How neighbouring GPUs of a split box are connected (none for one).
    fn links(&self) -> Vec<String>;
}

/// A run with colloids, on the CPU or a GPU.
pub struct Suspension {
    config: SuspensionConfig,
    fluid: Box<dyn Fluid + Send>,
    colloids: Vec<ColloidState>,
    time: u64,
    /// Seconds the host's share of the steps took.
    host_seconds: f64,
}

impl Suspension {
    /// A run on the CPU: the fluid at rest, density 1.
    pub fn new(config: SuspensionConfig) -> Result<Self> {
        Self::on(config, BackendKind::Cpu, "")
    }

    /// As [`Suspension::new`], on `backend` (a GPU loads the kernels of `ptx`).
    pub fn on(config: SuspensionConfig, backend: BackendKind, ptx: &str) -> Result<Self> {
        Self::on_devices(config, &Devices::one(backend), ptx)
    }

    /// As [`Suspension::new`], on `devices`: split along z into a slab per
    /// device when there are several, bit for bit with one. The slabs'
    /// copies follow the passes (`overlap` is not used).
    pub fn on_devices(config: SuspensionConfig, devices: &Devices, ptx: &str) -> Result<Self> {
        config.validate()?;
        let colloids: Vec<ColloidState> = config.colloids.iter().map(ColloidState::new).collect();
        let kernel: Vec<Colloid> = colloids.iter().map(|c| c.kernel(c.centre)).collect();
        let parts = match devices {
            Devices::Cpu(n) => *n,
            Devices::Gpus { ordinals, .. } => ordinals.len(),
        };
        let slabs = slabs::split(&config, parts)?;
        let fluid: Box<dyn Fluid + Send> = match devices {
            Devices::Cpu(_) => {
                if config.precision != Precision::F64 {
                    return Err(Error::Setup(
                        "the CPU runs colloids in f64: set precision = \"f64\", or run on a GPU".into(),
                    ));
                }
                fn on_cpu<L: kernels_gpu::Lattice<Q>, const Q: usize>(
                    config: &SuspensionConfig,
                    slabs: Vec<slab::Slab>,
                    kernel: &[Colloid],
                ) -> Result<Box<dyn Fluid + Send>> {
                    let parts = slabs.iter().map(|s| cpu::CpuFluid::<L, Q>::new(config, s.clone(), kernel)).collect();
                    Ok(Box::new(slabs::Domains::new(config, slabs, parts, Vec::new(), kernel)?))
                }
                match config.lattice {
                    LatticeKind::D3Q27 => on_cpu::<D3Q27, 27>(&config, slabs, &kernel)?,
                    _ => on_cpu::<D3Q19, 19>(&config, slabs, &kernel)?,
                }
            }
            Devices::Gpus { ordinals, .. } => {
                let devices = ordinals.iter().map(|&o| GpuDevice::open(o, ptx)).collect::<Result<Vec<_>>>()?;
                fn on_gpus<
                    T: kernels_gpu::Real + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Unpin,
                >(
                    config: &SuspensionConfig,
                    devices: Vec<GpuDevice>,
                    slabs: Vec<slab::Slab>,
                    name: &str,
                    kernel: &[Colloid],
                ) -> Result<Box<dyn Fluid + Send>> {
                    let (parts, links) = gpu::slabs::<T>(config, devices, slabs.clone(), name, kernel)?;
                    Ok(Box::new(slabs::Domains::new(config, slabs, parts, links, kernel)?))
                }
                match config.precision {
                    Precision::F32 => on_gpus::<f32>(&config, devices, slabs, "f32", &kernel)?,
                    _ => on_gpus::<f64>(&config, devices, slabs, "f64", &kernel)?,
                }
            }
        };
        Ok(Self { config, fluid, colloids, time: 0, host_seconds: 0.0 })
    }

    /// The set-up.
    pub fn config(&self) -> &SuspensionConfig {
        &self.config
    }

    /// Steps done.
    pub fn time(&self) -> u64 {
        self.time
    }

    /// The colloids now.
    pub fn colloids(&self) -> &[ColloidState] {
        &self.colloids
    }

    /// Seconds the host's share of the steps took so far (the sums' copy
    /// down, the update, the colloids' copy up; the device waits meanwhile).
    pub fn host_seconds(&self) -> f64 {
        self.host_seconds
    }

    /// Advances `steps` time steps.
    pub fn step(&mut self, steps: u64) -> Result<()> {
        for _ in 0..steps {
            self.one_step()?;
        }
        Ok(())
    }

    fn one_step(&mut self) -> Result<()> {
        let kernel: Vec<Colloid> = self.colloids.iter().map(|c| c.kernel(c.centre)).collect();
        let sums = self.fluid.link_sums(&kernel)?;
        let t0 = std::time::Instant::now();
        let update = dynamics::update(&self.config, &mut self.colloids, &sums)?;
        let bounce: Vec<Colloid> = self.colloids.iter().map(|c| c.kernel(c.centre)).collect();
        self.host_seconds += t0.elapsed().as_secs_f64();
        self.fluid.fluid(&bounce, update.fluid_force)?;
        let moved = dynamics::advance(&self.config, &mut self.colloids)?;
        self.fluid.moved(&moved)?;
        self.time += 1;
        Ok(())
    }

    /// Density, velocity and the map of the current state.
    pub fn fields(&self) -> Result<SuspensionFields> {
        self.fluid.fields()
    }

    /// The fluid's mass and the mass the colloids hold for it (covered
    /// sites not yet handed back): their sum is what the step conserves.
    pub fn mass(&self) -> Result<(f64, f64)> {
        let held: f64 = self.fluid.pending(self.colloids.len())?.iter().map(|s| s.mass).sum::<f64>()
            + self.colloids.iter().map(|c| c.deficit).sum::<f64>();
        Ok((self.fluid.fluid_mass()?, held))
    }

    /// Waits until queued work is done.
    pub fn synchronize(&self) -> Result<()> {
        self.fluid.synchronize()
    }

    /// Registers and occupancy of the fluid's kernel, on a GPU.
    pub fn kernel_report(&self) -> Option<KernelReport> {
        self.fluid.kernel_report()
    }

    /// How neighbouring GPUs of a split box are connected (none for one
    /// device).
    pub fn links(&self) -> Vec<String> {
        self.fluid.links()
    }

    /// On a GPU, seconds per launch of the fluid step, of the links and
    /// their sums, and of a move, each alone over `reps` launches. They
    /// leave the state mid-step: for benchmarks.
    pub fn kernel_seconds(&mut self, reps: u32) -> Result<Option<[f64; 3]>> {
        let kernel: Vec<Colloid> = self.colloids.iter().map(|c| c.kernel(c.centre)).collect();
        self.fluid.kernel_seconds(&kernel, reps)
    }
}

/// The collision of `config` in `T`, as the kernels take it.
pub(crate) enum Operator<T: Copy> {
    Bgk(kernels_gpu::Bgk<T>),
    Mrt(kernels_gpu::Mrt<T>),
}

impl<T: kernels_gpu::Real> Operator<T> {
    fn of(config: &SuspensionConfig) -> Self {
        match config.collision {
            BinaryCollision::Bgk => Operator::Bgk(kernels_gpu::Bgk { omega: T::from_f64(1.0 / config.tau) }),
            BinaryCollision::Mrt => Operator::Mrt(ludwig_mrt(config.tau)),
        }
    }
}

/// Each colloid's total of its [`LANES`] partial sums (`c LANES + lane`),
/// added in lane order, as the `colloids_sum` kernel adds them.
fn lane_totals(partials: &[Sums]) -> Vec<Sums> {
    partials
        .chunks_exact(LANES as usize)
        .map(|lanes| {
            let mut total = Sums::default();
            lanes.iter().for_each(|p| total.add(p));
            total
        })
        .collect()
}

/// The map entry as an option.
fn owner(m: u32) -> Option<u32> {
    (m != FLUID).then_some(m)
}

#[cfg(test)]
mod tests;
