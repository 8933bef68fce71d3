//! The colloids' fluid on a GPU: the `colloids_*` kernels of `kernels-gpu`,
//! the same per-site and per-lane functions as the CPU's, on one stream.
//! Colloids and sums cross as f64 arrays (each a `repr(C)` struct of f64).

use super::{lane_totals, owner, Fluid, Operator, SuspensionConfig, SuspensionFields};
use crate::error::{CudaContextExt, Result};
use crate::gpu::GpuDevice;
use crate::launch::ByValue;
use crate::solver::KernelReport;
use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};
use kernels_gpu::colloids::{Colloid, FluidParams, Space, Sums, FLUID, LANES, SUMS};
use kernels_gpu::{Bgk, Mrt, Real};

/// Threads per block.
const THREADS: u32 = 128;

/// f64 values per [`Colloid`].
const COLLOID: usize = std::mem::size_of::<Colloid>() / 8;

/// The colloids as f64 values.
fn colloid_values(colloids: &[Colloid]) -> &[f64] {
    // SAFETY: `Colloid` is `repr(C)` of f64 only, so its bytes are `COLLOID` f64 each.
    unsafe { std::slice::from_raw_parts(colloids.as_ptr() as *const f64, colloids.len() * COLLOID) }
}

/// Sums from f64 values.
fn sums_of(values: &[f64]) -> Vec<Sums> {
    values
        .chunks_exact(SUMS)
        .map(|v| {
            let mut s = Sums::default();
            s.values_mut().copy_from_slice(v);
            s
        })
        .collect()
}

/// The collision operator's parameters, as the kernel takes them.
#[derive(Clone, Copy)]
enum Launched<T: Copy> {
    Bgk(ByValue<Bgk<T>>),
    Mrt(ByValue<Mrt<T>>),
}

/// A box in device memory, populations in precision `T`.
pub(super) struct GpuFluid<T: DeviceRepr + Copy> {
    device: GpuDevice,
    space: Space,
    walls: [[f64; 3]; 2],
    operator: Launched<T>,
    fluid_kernel: CudaFunction,
    links_kernel: CudaFunction,
    cover_kernel: CudaFunction,
    sum_kernel: CudaFunction,
    paint_kernel: CudaFunction,
    clear_kernel: CudaFunction,
    /// Post-collision populations (`i N + n`), and the buffer the next step writes.
    f: CudaSlice<T>,
    next: CudaSlice<T>,
    map: CudaSlice<u32>,
    other: CudaSlice<u32>,
    rho: CudaSlice<T>,
    u: CudaSlice<T>,
    /// The colloids as the last pass took them.
    colloids: CudaSlice<f64>,
    partials: CudaSlice<f64>,
    sums: CudaSlice<f64>,
    count: u32,
    sites: usize,
    q: usize,
}

impl<T: Real + DeviceRepr + ValidAsZeroBits + Unpin> GpuFluid<T> {
    /// The box of `config` on `device` at rest, density 1, with `colloids`
    /// painted, populations in `name` (`f32`, `f64`).
    pub(super) fn new(config: &SuspensionConfig, device: GpuDevice, name: &str, colloids: &[Colloid]) -> Result<Self> {
        let sites = config.sites();
        let q = config.lattice.q();
        let lattice = config.lattice.name();
        let kernel = |k: &str| device.function(k);
        let operator = match Operator::<T>::of(config) {
            Operator::Bgk(c) => Launched::Bgk(ByValue(c)),
            Operator::Mrt(c) => Launched::Mrt(ByValue(c)),
        };
        let collision = match operator {
            Launched::Bgk(_) => "bgk",
            Launched::Mrt(_) => "mrt",
        };
        let s = device.stream().clone();
        let count = colloids.len();
        let at_least = |n: usize| n.max(1);
        let mut gpu = Self {
            space: config.space(),
            walls: config.walls.unwrap_or_default(),
            operator,
            fluid_kernel: kernel(&format!("colloids_fluid_{collision}_{lattice}_{name}"))?,
            links_kernel: kernel(&format!("colloids_links_{lattice}_{name}"))?,
            cover_kernel: kernel(&format!("colloids_cover_{lattice}_{name}"))?,
            sum_kernel: kernel("colloids_sum")?,
            paint_kernel: kernel("colloids_paint")?,
            clear_kernel: kernel("colloids_clear")?,
            f: s.alloc_zeros::<T>(q * sites).ctx("allocating the populations")?,
            next: s.alloc_zeros::<T>(q * sites).ctx("allocating the second population buffer")?,
            map: s.clone_htod(&vec![FLUID; sites]).ctx("allocating the map of solid sites")?,
            other: s.clone_htod(&vec![FLUID; sites]).ctx("allocating the second map")?,
            rho: s.clone_htod(&vec![T::ONE; sites]).ctx("uploading the density")?,
            u: s.alloc_zeros::<T>(3 * sites).ctx("allocating the velocity")?,
            colloids: s
                .clone_htod(colloid_values(&vec![Colloid::default(); at_least(count)]))
                .ctx("allocating the colloids")?,
            partials: s.alloc_zeros::<f64>(at_least(count * LANES as usize * SUMS)).ctx("allocating the sums")?,
            sums: s.alloc_zeros::<f64>(at_least(count * SUMS)).ctx("allocating the sums")?,
            count: count as u32,
            sites,
            q,
            device,
        };
        if count > 0 {
            gpu.upload(colloids)?;
            let cfg = gpu.per_lane();
            let space = ByValue(gpu.space);
            let mut launch = s.launch_builder(&gpu.paint_kernel);
            launch.arg(&space).arg(&gpu.count).arg(&gpu.colloids).arg(&mut gpu.map);
            // SAFETY: `colloids_paint(space, count, colloids, map)`.
            unsafe { launch.launch(cfg) }.ctx("painting the colloids")?;
        }
        Ok(gpu)
    }

    /// A launch of `threads` threads.
    fn launch(threads: usize) -> LaunchConfig {
        LaunchConfig {
            grid_dim: ((threads as u32).div_ceil(THREADS).max(1), 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// A launch of [`LANES`] threads per colloid.
    fn per_lane(&self) -> LaunchConfig {
        Self::launch(self.count as usize * LANES as usize)
    }

    fn upload(&mut self, colloids: &[Colloid]) -> Result<()> {
        self.device.stream().memcpy_htod(colloid_values(colloids), &mut self.colloids).ctx("uploading the colloids")
    }

    /// Queues the links' sums into the partial sums, and their totals.
    fn queue_link_sums(&mut self) -> Result<()> {
        let s = self.device.stream().clone();
        let space = ByValue(self.space);
        let cfg = self.per_lane();
        let mut launch = s.launch_builder(&self.links_kernel);
        launch.arg(&space).arg(&self.count).arg(&self.colloids).arg(&self.map).arg(&self.f).arg(&mut self.partials);
        // SAFETY: `colloids_links_*(space, count, colloids, map, f, partials)`.
        unsafe { launch.launch(cfg) }.ctx("launching the colloids' links")?;
        self.queue_totals()
    }

    fn queue_totals(&mut self) -> Result<()> {
        let s = self.device.stream().clone();
        let mut launch = s.launch_builder(&self.sum_kernel);
        launch.arg(&self.count).arg(&self.partials).arg(&mut self.sums);
        // SAFETY: `colloids_sum(count, partials, sums)`.
        unsafe { launch.launch(Self::launch(self.count as usize * SUMS)) }.ctx("launching the colloids' sums")?;
        Ok(())
    }

    fn read_sums(&self) -> Result<Vec<Sums>> {
        let values = self.device.stream().clone_dtoh(&self.sums).ctx("reading the colloids' sums back")?;
        Ok(sums_of(&values[..self.count as usize * SUMS]))
    }

    fn queue_fluid(&mut self, force: [f64; 3]) -> Result<()> {
        let s = self.device.stream().clone();
        let params =
            ByValue(FluidParams { space: self.space, wall_velocity: self.walls, force: force.map(T::from_f64) });
        let mut launch = s.launch_builder(&self.fluid_kernel);
        launch.arg(&params);
        match &self.operator {
            Launched::Bgk(c) => launch.arg(c),
            Launched::Mrt(c) => launch.arg(c),
        };
        launch.arg(&self.colloids).arg(&self.map).arg(&self.f).arg(&mut self.next).arg(&mut self.rho).arg(&mut self.u);
        // SAFETY: `colloids_fluid_*(params, collision, colloids, map, src, dst, rho, u)`.
        unsafe { launch.launch(Self::launch(self.sites)) }.ctx("launching the fluid step")?;
        std::mem::swap(&mut self.f, &mut self.next);
        Ok(())
    }

    fn queue_move(&mut self) -> Result<()> {
        let s = self.device.stream().clone();
        let space = ByValue(self.space);
        let cfg = self.per_lane();
        let mut launch = s.launch_builder(&self.clear_kernel);
        launch.arg(&space).arg(&self.count).arg(&self.colloids).arg(&mut self.other);
        // SAFETY: `colloids_clear(space, count, colloids, map)`.
        unsafe { launch.launch(cfg) }.ctx("launching the colloids' clearing")?;
        let mut launch = s.launch_builder(&self.paint_kernel);
        launch.arg(&space).arg(&self.count).arg(&self.colloids).arg(&mut self.other);
        // SAFETY: `colloids_paint(space, count, colloids, map)`.
        unsafe { launch.launch(cfg) }.ctx("launching the colloids' painting")?;
        let mut launch = s.launch_builder(&self.cover_kernel);
        launch
            .arg(&space)
            .arg(&self.count)
            .arg(&self.colloids)
            .arg(&self.map)
            .arg(&self.other)
            .arg(&mut self.f)
            .arg(&mut self.partials);
        // SAFETY: `colloids_cover_*(space, count, colloids, old, new, f, partials)`.
        unsafe { launch.launch(cfg) }.ctx("launching the covered sites' update")?;
        std::mem::swap(&mut self.map, &mut self.other);
        Ok(())
    }

    fn back(&self, v: &CudaSlice<T>, what: &str) -> Result<Vec<f64>> {
        let host = self.device.stream().clone_dtoh(v).ctx(format!("reading the {what} back"))?;
        Ok(host.into_iter().map(Real::to_f64).collect())
    }

    /// Seconds `reps` runs of `work` take, after one untimed.
    fn time(&mut self, reps: u32, mut work: impl FnMut(&mut Self) -> Result<()>) -> Result<f64> {
        work(self)?;
        self.synchronize()?;
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            work(self)?;
        }
        self.synchronize()?;
        Ok(t0.elapsed().as_secs_f64() / reps.max(1) as f64)
    }
}

impl<T: Real + DeviceRepr + ValidAsZeroBits + Unpin> Fluid for GpuFluid<T> {
    fn link_sums(&mut self, colloids: &[Colloid]) -> Result<Vec<Sums>> {
        if colloids.is_empty() {
            return Ok(Vec::new());
        }
        self.upload(colloids)?;
        self.queue_link_sums()?;
        self.read_sums()
    }

    fn pending(&self, count: usize) -> Result<Vec<Sums>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let values = self.device.stream().clone_dtoh(&self.partials).ctx("reading the colloids' sums back")?;
        Ok(lane_totals(&sums_of(&values[..count * LANES as usize * SUMS])))
    }

    fn fluid(&mut self, colloids: &[Colloid], force: [f64; 3]) -> Result<()> {
        if !colloids.is_empty() {
            self.upload(colloids)?;
        }
        self.queue_fluid(force)
    }

    fn moved(&mut self, colloids: &[Colloid]) -> Result<()> {
        if colloids.is_empty() {
            return Ok(());
        }
        self.upload(colloids)?;
        self.queue_move()
    }

    fn fields(&self) -> Result<SuspensionFields> {
        let u = self.back(&self.u, "velocity")?;
        let map = self.device.stream().clone_dtoh(&self.map).ctx("reading the map back")?;
        let n = self.sites;
        Ok(SuspensionFields {
            rho: self.back(&self.rho, "density")?,
            u: (0..n).map(|k| [u[k], u[n + k], u[2 * n + k]]).collect(),
            solid: map.into_iter().map(owner).collect(),
        })
    }

    fn fluid_mass(&self) -> Result<f64> {
        let f = self.back(&self.f, "populations")?;
        let map = self.device.stream().clone_dtoh(&self.map).ctx("reading the map back")?;
        Ok(if self.q == 27 {
            super::cpu::fluid_mass::<kernels_gpu::D3Q27, 27>(&f, &map)
        } else {
            super::cpu::fluid_mass::<kernels_gpu::D3Q19, 19>(&f, &map)
        })
    }

    fn synchronize(&self) -> Result<()> {
        self.device.stream().synchronize().ctx("waiting for the colloids' steps")
    }

    fn kernel_report(&self) -> Option<KernelReport> {
        self.device.kernel_resources(&self.fluid_kernel, THREADS)
    }

    fn kernel_seconds(&mut self, colloids: &[Colloid], reps: u32) -> Result<Option<[f64; 3]>> {
        self.upload(colloids)?;
        let fluid = self.time(reps, |g| g.queue_fluid([0.0; 3]))?;
        let links = self.time(reps, |g| g.queue_link_sums())?;
        // A move to where the colloids are: the passes run, no site changes.
        let still: Vec<Colloid> = colloids.iter().map(|c| Colloid { previous: c.centre, ..*c }).collect();
        self.upload(&still)?;
        let moves = self.time(reps, |g| g.queue_move())?;
        Ok(Some([fluid, links, moves]))
    }
}
