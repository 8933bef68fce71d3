//! The colloids' fluid on a GPU: the `colloids_*` kernels of `kernels-gpu`,
//! the same per-site and per-lane functions as the CPU's, on the device's
//! stream, over the whole box or a slab of it ([`super::slabs`]). Slabs
//! on several GPUs (or sharing one) exchange by peer copies, queued on the
//! receiver's stream between events, so no host waits.
//! Colloids and sums cross as f64 arrays (each a `repr(C)` struct of f64),
//! shares as u32 pairs.

use super::slabs::{owners, space_of, Part};
use super::{lane_totals, Operator, SuspensionConfig};
use crate::binary::slab::Slab;
use crate::error::{CudaContextExt, Result};
use crate::gpu::GpuDevice;
use crate::halo::{HaloRun, Placement};
use crate::launch::ByValue;
use crate::peer;
use crate::solver::KernelReport;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaFunction, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};
use kernels_gpu::colloids::{Colloid, FluidParams, Share, Space, Sums, FLUID, LANES, SUMS};
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

/// The shares as u32 values.
fn share_values(shares: &[Share]) -> &[u32] {
    // SAFETY: `Share` is `repr(C)` of two u32.
    unsafe { std::slice::from_raw_parts(shares.as_ptr() as *const u32, shares.len() * 2) }
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

/// A box or slab in device memory, populations in precision `T`.
pub(super) struct GpuFluid<T: DeviceRepr + Copy> {
    device: GpuDevice,
    slab: Slab,
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
    shares: CudaSlice<u32>,
    partials: CudaSlice<f64>,
    /// The carry handed on from the slab below, and the one for the slab above.
    carry_in: CudaSlice<f64>,
    carry_out: CudaSlice<f64>,
    sums: CudaSlice<f64>,
    count: u32,
    sites: usize,
    q: usize,
    /// Recorded once the work before an exchange is queued, and once the
    /// copies into this slab are.
    ready: CudaEvent,
    done: CudaEvent,
}

impl<T: Real + DeviceRepr + ValidAsZeroBits + Unpin> GpuFluid<T> {
    /// `slab` of the box of `config` on `device` at rest, density 1, with
    /// `colloids` painted, populations in `name` (`f32`, `f64`).
    pub(super) fn new(
        config: &SuspensionConfig,
        slab: Slab,
        device: GpuDevice,
        name: &str,
        colloids: &[Colloid],
    ) -> Result<Self> {
        let space = space_of(config, &slab);
        let sites = space.sites() as usize;
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
        let lanes = at_least(count * LANES as usize * SUMS);
        let ctx = device.context().clone();
        ctx.bind_to_thread().ctx("binding the device")?;
        let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).ctx("creating an event");
        let mut gpu = Self {
            slab,
            space,
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
            shares: s.clone_htod(share_values(&vec![Share::WHOLE; at_least(count)])).ctx("allocating the shares")?,
            partials: s.alloc_zeros::<f64>(lanes).ctx("allocating the sums")?,
            carry_in: s.alloc_zeros::<f64>(lanes).ctx("allocating the carried sums")?,
            carry_out: s.alloc_zeros::<f64>(lanes).ctx("allocating the carried sums")?,
            sums: s.alloc_zeros::<f64>(at_least(count * SUMS)).ctx("allocating the sums")?,
            count: count as u32,
            sites,
            q,
            ready: event()?,
            done: event()?,
            device,
        };
        if count > 0 {
            Part::upload(&mut gpu, colloids)?;
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

    /// Queues the links' sums of the colloids whose share runs in `phase`.
    fn queue_links(&mut self, phase: u32) -> Result<()> {
        let s = self.device.stream().clone();
        let space = ByValue(self.space);
        let cfg = self.per_lane();
        let mut launch = s.launch_builder(&self.links_kernel);
        launch
            .arg(&space)
            .arg(&self.count)
            .arg(&phase)
            .arg(&self.colloids)
            .arg(&self.shares)
            .arg(&self.map)
            .arg(&self.f)
            .arg(&mut self.partials)
            .arg(&self.carry_in)
            .arg(&mut self.carry_out);
        // SAFETY: `colloids_links_*(space, count, phase, colloids, shares, map, f, partials, carry_in, carry_out)`.
        unsafe { launch.launch(cfg) }.ctx("launching the colloids' links")?;
        Ok(())
    }

    fn queue_totals(&mut self) -> Result<()> {
        let s = self.device.stream().clone();
        let mut launch = s.launch_builder(&self.sum_kernel);
        launch.arg(&self.count).arg(&self.partials).arg(&mut self.sums);
        // SAFETY: `colloids_sum(count, partials, sums)`.
        unsafe { launch.launch(Self::launch(self.count as usize * SUMS)) }.ctx("launching the colloids' sums")?;
        Ok(())
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
        unsafe { launch.launch(Self::launch(self.space.own_sites() as usize)) }.ctx("launching the fluid step")?;
        std::mem::swap(&mut self.f, &mut self.next);
        Ok(())
    }

    fn queue_repaint(&mut self) -> Result<()> {
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
        Ok(())
    }

    fn queue_cover(&mut self, phase: u32) -> Result<()> {
        let s = self.device.stream().clone();
        let space = ByValue(self.space);
        let cfg = self.per_lane();
        let mut launch = s.launch_builder(&self.cover_kernel);
        launch
            .arg(&space)
            .arg(&self.count)
            .arg(&phase)
            .arg(&self.colloids)
            .arg(&self.shares)
            .arg(&self.map)
            .arg(&self.other)
            .arg(&mut self.f)
            .arg(&mut self.partials)
            .arg(&self.carry_in)
            .arg(&mut self.carry_out);
        // SAFETY: `colloids_cover_*(space, count, phase, colloids, shares, old, new, f, partials, carry_in, carry_out)`.
        unsafe { launch.launch(cfg) }.ctx("launching the covered sites' update")?;
        Ok(())
    }

    /// A whole move on one domain: repaint, settle, swap the maps.
    fn queue_move(&mut self) -> Result<()> {
        self.queue_repaint()?;
        self.queue_cover(0)?;
        self.end_move();
        Ok(())
    }

    /// Queues a round of copies between neighbouring slabs on their
    /// streams: each slab's work so far is done before its neighbours copy
    /// from it, `into(parts, k)` queues the copies into slab `k` on its
    /// stream, and each slab's later work waits for the copies out of it.
    fn round(parts: &mut [Self], into: impl Fn(&[Self], usize) -> Result<()>) -> Result<()> {
        let count = parts.len();
        let neighbours = |k: usize| [(k + count - 1) % count, (k + 1) % count];
        for p in parts.iter() {
            p.ready.record(p.device.stream()).ctx("recording an event")?;
        }
        for k in 0..count {
            let s = parts[k].device.stream();
            for n in neighbours(k) {
                s.wait(&parts[n].ready).ctx("waiting for a neighbour")?;
            }
            into(parts, k)?;
            parts[k].done.record(s).ctx("recording an event")?;
        }
        for k in 0..count {
            for n in neighbours(k) {
                parts[k].device.stream().wait(&parts[n].done).ctx("waiting for a neighbour's copies")?;
            }
        }
        Ok(())
    }

    /// The device address of the current populations.
    fn populations(&self) -> u64 {
        use cudarc::driver::DevicePtr;
        self.f.device_ptr(self.device.stream()).0
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

impl<T: Real + DeviceRepr + ValidAsZeroBits + Unpin> Part for GpuFluid<T> {
    fn upload(&mut self, colloids: &[Colloid]) -> Result<()> {
        if colloids.is_empty() {
            return Ok(());
        }
        self.device.stream().memcpy_htod(colloid_values(colloids), &mut self.colloids).ctx("uploading the colloids")
    }

    fn set_shares(&mut self, shares: &[Share]) -> Result<()> {
        if shares.is_empty() {
            return Ok(());
        }
        self.device.stream().memcpy_htod(share_values(shares), &mut self.shares).ctx("uploading the shares")
    }

    fn links(&mut self, phase: u32) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        self.queue_links(phase)
    }

    fn totals(&mut self) -> Result<Vec<Sums>> {
        if self.count == 0 {
            return Ok(Vec::new());
        }
        self.queue_totals()?;
        let values = self.device.stream().clone_dtoh(&self.sums).ctx("reading the colloids' sums back")?;
        Ok(sums_of(&values[..self.count as usize * SUMS]))
    }

    fn pending(&self) -> Result<Vec<Sums>> {
        if self.count == 0 {
            return Ok(Vec::new());
        }
        let values = self.device.stream().clone_dtoh(&self.partials).ctx("reading the colloids' sums back")?;
        Ok(lane_totals(&sums_of(&values[..self.count as usize * LANES as usize * SUMS])))
    }

    fn fluid(&mut self, force: [f64; 3]) -> Result<()> {
        self.queue_fluid(force)
    }

    fn repaint(&mut self) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        self.queue_repaint()
    }

    fn cover(&mut self, phase: u32) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        self.queue_cover(phase)
    }

    fn end_move(&mut self) {
        std::mem::swap(&mut self.map, &mut self.other);
    }

    fn own_fields(&self) -> Result<super::SuspensionFields> {
        let (rho, u) = (self.back(&self.rho, "density")?, self.back(&self.u, "velocity")?);
        let map = self.device.stream().clone_dtoh(&self.map).ctx("reading the map back")?;
        let (n, plane) = (self.sites, self.space.plane_sites() as usize);
        let own = self.space.own;
        let range = own[0] as usize * plane..own[1] as usize * plane;
        Ok(super::SuspensionFields {
            rho: rho[range.clone()].to_vec(),
            u: range.map(|k| [u[k], u[n + k], u[2 * n + k]]).collect(),
            solid: owners(&map, plane, own),
        })
    }

    fn own_mass(&self) -> Result<f64> {
        let f = self.back(&self.f, "populations")?;
        let map = self.device.stream().clone_dtoh(&self.map).ctx("reading the map back")?;
        Ok(if self.q == 27 {
            super::cpu::fluid_mass::<kernels_gpu::D3Q27, 27>(&f, &map, &self.space)
        } else {
            super::cpu::fluid_mass::<kernels_gpu::D3Q19, 19>(&f, &map, &self.space)
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
        let links = self.time(reps, |g| {
            g.queue_links(0)?;
            g.queue_totals()
        })?;
        // A move to where the colloids are: the passes run, no site changes.
        let still: Vec<Colloid> = colloids.iter().map(|c| Colloid { previous: c.centre, ..*c }).collect();
        self.upload(&still)?;
        let moves = self.time(reps, |g| g.queue_move())?;
        Ok(Some([fluid, links, moves]))
    }

    fn hand_carries(parts: &mut [Self], slots: &[u32]) -> Result<()> {
        let count = parts.len();
        Self::round(parts, |parts, k| {
            let from = &parts[(k + count - 1) % count];
            let to = &parts[k];
            let bytes = slots[(k + count - 1) % count] as usize * LANES as usize * SUMS * 8;
            if bytes == 0 {
                return Ok(());
            }
            use cudarc::driver::DevicePtr;
            let (src, dst) =
                (from.carry_out.device_ptr(from.device.stream()).0, to.carry_in.device_ptr(to.device.stream()).0);
            // SAFETY: both carries hold every slot; the round orders the copy
            // after the sender's pass and before either side's next.
            unsafe { peer::copy_async((&from.device, src), (&to.device, dst), bytes, to.device.stream()) }
        })
    }

    fn exchange(parts: &mut [Self]) -> Result<()> {
        let count = parts.len();
        Self::round(parts, |parts, k| {
            let to = &parts[k];
            let (_, received) = to.slab.faces();
            // From below, its last own plane; from above, its first.
            for (from, side, sent) in [((k + count - 1) % count, 0, 1), ((k + 1) % count, 1, 0)] {
                let from = &parts[from];
                let z = from.slab.faces().0[sent];
                let plane = from.space.plane_sites() as usize;
                let at = |g: &Self, z: u32| Placement { start: z as usize * plane, row_pitch: g.sites, slab_pitch: 0 };
                let (a, b) = (at(from, z), at(to, received[side]));
                let run = HaloRun {
                    from: a.start,
                    to: b.start,
                    width: plane,
                    rows: from.q,
                    row_pitch: a.row_pitch,
                    depth: 1,
                    depth_pitch: 0,
                };
                // SAFETY: the rows lie inside both slabs' populations; the round
                // orders the copy after the sender's pass and before either
                // side's next.
                unsafe {
                    peer::copy_placed_async(
                        (&from.device, from.populations(), a),
                        (&to.device, to.populations(), b),
                        &run,
                        std::mem::size_of::<T>(),
                        to.device.stream(),
                    )
                }?;
            }
            Ok(())
        })
    }
}

/// `config`'s box on the GPUs `devices`, a slab each of `slabs`, in
/// precision `name`, with `colloids` painted; and how neighbouring
/// devices are connected.
pub(super) fn slabs<T: Real + DeviceRepr + ValidAsZeroBits + Unpin>(
    config: &SuspensionConfig,
    devices: Vec<GpuDevice>,
    slabs: Vec<Slab>,
    name: &str,
    colloids: &[Colloid],
) -> Result<(Vec<GpuFluid<T>>, Vec<String>)> {
    let links = if devices.len() > 1 { peer::enable_access(&devices)? } else { Vec::new() };
    let parts = devices
        .into_iter()
        .zip(slabs)
        .map(|(device, slab)| GpuFluid::new(config, slab, device, name, colloids))
        .collect::<Result<Vec<_>>>()?;
    Ok((parts, links))
}
