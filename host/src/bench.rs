//! Throughput measurement: MLUPS, bytes moved, and the fraction of the
//! device's copy bandwidth, for any lattice, storage, streaming scheme and
//! collision operator.

use crate::cases::{cavity_config, tau_for_viscosity};
use crate::domain::{Domain, FaceBoundary, OpenScheme};
use crate::error::{Error, Result};
use crate::groups::BoundaryGroups;
use crate::solver::KernelReport;
use crate::solver::{BackendKind, CollisionModel, GridLayout, Initial, LatticeKind, Precision, Solver, SolverConfig};
use kernels_gpu::{Dims, Lattice, Streaming};
use std::time::Instant;

/// Copy buffer for the bandwidth reference: 4 GiB, far beyond the L2 cache.
pub const COPY_BYTES: usize = 4 << 30;

/// Bytes one cell update moves at least: every population read and written
/// once, plus the flag byte. (`2 Q b + 1`; the formula `lbm bench` prints.)
pub const fn bytes_per_cell_update(lattice: LatticeKind, precision: Precision) -> usize {
    2 * lattice.q() * precision.bytes() + 1
}

/// One measured configuration.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchResult {
    /// Velocity set.
    pub lattice: &'static str,
    /// Storage.
    pub precision: &'static str,
    /// Streaming scheme.
    pub streaming: &'static str,
    /// Cube side, cells.
    pub size: u32,
    /// What fills the cube, [`BenchGeometry::name`].
    pub geometry: &'static str,
    /// Time steps timed.
    pub steps: u64,
    /// Seconds for those steps.
    pub seconds: f64,
    /// Million lattice-cell updates per second (all cells of the cube).
    pub mlups: f64,
    /// Bytes per cell update, [`bytes_per_cell_update`].
    pub bytes_per_cell: usize,
    /// Effective bandwidth, GB/s.
    pub gb_per_s: f64,
    /// Effective bandwidth over the copy bandwidth measured in the same run.
    pub fraction_of_copy: Option<f64>,
    /// Kernel resources (GPU).
    pub kernel: Option<KernelReport>,
    /// Collision operator (`bgk`, `trt`); after the fields older reports have.
    pub collision: &'static str,
    /// Grid layout ([`GridLayout::name`]).
    pub grid: &'static str,
    /// Flow cells (fluid and open boundaries): the cells that are updated.
    pub active_cells: usize,
    /// Million flow-cell updates per second.
    pub mlups_active: f64,
    /// Effective bandwidth of the flow cells' updates over the copy
    /// bandwidth ([`bytes_per_cell_update`] per flow cell).
    pub active_fraction_of_copy: Option<f64>,
    /// Boundary-group variant ([`BoundaryGroups::name`]).
    pub groups: &'static str,
}

/// One configuration to measure.
#[derive(Clone, Copy, Debug)]
pub struct BenchCase {
    /// Velocity set.
    pub lattice: LatticeKind,
    /// Storage.
    pub precision: Precision,
    /// Streaming scheme.
    pub streaming: Streaming,
    /// Cube side, cells.
    pub size: u32,
    /// What fills the cube.
    pub geometry: BenchGeometry,
    /// Collision operator.
    pub collision: CollisionModel,
    /// How the cells are stored.
    pub grid: GridLayout,
    /// How the inlets and outlets are updated.
    pub groups: BoundaryGroups,
}

/// What fills a benchmark cube.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchGeometry {
    /// Lid-driven cavity: walls on every face, the top one moving. Warps
    /// that hold a wall cell take the near-wall path, as in real cases.
    Cavity,
    /// Fluid in a periodic box, no walls: how the published single-GPU
    /// figures are measured, so the apples-to-apples comparison.
    Periodic,
    /// A periodic packed bed: overlapping random spheres of radius a tenth
    /// of the cube, added until the porosity is 0.4, flow driven by a body
    /// force along x. Most of the cube is solid.
    Bed,
    /// A wind tunnel (Mahmoud et al. 2025, section 6.2): a sphere of
    /// radius an eighth of the cube, a regularized velocity inlet on the
    /// low x face and pressure outlet on the high one (Latt et al. 2008),
    /// periodic sides. The open faces are the register-heavy boundary the
    /// boundary-group variants keep apart.
    Tunnel,
}

impl BenchGeometry {
    /// Every geometry.
    pub const ALL: [BenchGeometry; 4] =
        [BenchGeometry::Cavity, BenchGeometry::Periodic, BenchGeometry::Bed, BenchGeometry::Tunnel];

    /// Name in reports and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            BenchGeometry::Cavity => "cavity",
            BenchGeometry::Periodic => "periodic",
            BenchGeometry::Bed => "bed",
            BenchGeometry::Tunnel => "tunnel",
        }
    }

    /// The geometry called `name`, or an error listing the choices.
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|g| g.name() == name).ok_or_else(|| Error::UnknownName {
            what: "bench geometry",
            name: name.into(),
            choices: Self::ALL.map(|g| g.name()).join(", "),
        })
    }

    /// The solver configuration of a `size`^3 cube (Reynolds number 1000 at
    /// speed 0.05 over the cube, the lid's or the box's uniform flow).
    pub fn config(
        self,
        lattice: LatticeKind,
        precision: Precision,
        streaming: Streaming,
        size: u32,
    ) -> Result<SolverConfig> {
        const SPEED: f64 = 0.05;
        const REYNOLDS: f64 = 1000.0;
        let config = cavity_config(lattice, precision, streaming, size - 2, REYNOLDS, SPEED)?;
        Ok(match self {
            BenchGeometry::Cavity => config,
            BenchGeometry::Bed => {
                let periodic = BenchGeometry::Periodic.config(lattice, precision, streaming, size)?;
                SolverConfig {
                    force: [1e-6, 0.0, 0.0],
                    domain: packed_bed(periodic.domain, size as f64 / 10.0, 0.4),
                    initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
                    ..periodic
                }
            }
            BenchGeometry::Tunnel => {
                let periodic = BenchGeometry::Periodic.config(lattice, precision, streaming, size)?;
                let mut faces = [FaceBoundary::Periodic; 6];
                faces[0] = FaceBoundary::VelocityInlet([SPEED, 0.0, 0.0], OpenScheme::Regularized);
                faces[1] = FaceBoundary::PressureOutlet(1.0, OpenScheme::Regularized);
                let mut domain = Domain::with_faces(periodic.domain.dims, faces)?;
                let d = domain.dims;
                let (centre, r) = tunnel_sphere(size, d);
                for n in 0..d.cells() {
                    let (x, y, z) = d.coords(n as u32);
                    let p = [x as f64 + 0.5, y as f64 + 0.5, if d.nz == 1 { centre[2] } else { z as f64 + 0.5 }];
                    if (0..3).map(|a| (p[a] - centre[a]).powi(2)).sum::<f64>() <= r * r {
                        domain.flags.set([x, y, z], kernels_gpu::flags::CellKind::Wall.to_flag());
                    }
                }
                SolverConfig { tau: tau_for_viscosity(SPEED * 2.0 * r / REYNOLDS), domain, ..periodic }
            }
            BenchGeometry::Periodic => {
                let nz = if lattice.dimension() == 2 { 1 } else { size };
                SolverConfig {
                    collision: CollisionModel::Bgk,
                    tau: tau_for_viscosity(SPEED * size as f64 / REYNOLDS),
                    domain: Domain::with_faces(Dims::new(size, size, nz), [FaceBoundary::Periodic; 6])?,
                    initial: Initial::Uniform { rho: 1.0, u: [SPEED, 0.0, 0.0] },
                    ..config
                }
            }
        })
    }
}

/// The sphere of the wind tunnel of side `size` ([`BenchGeometry::Tunnel`])
/// in a box `d`: its centre (a third of the way along x, in the middle
/// across) and radius (an eighth of the side).
fn tunnel_sphere(size: u32, d: Dims) -> ([f64; 3], f64) {
    ([size as f64 / 3.0, d.ny as f64 / 2.0, d.nz as f64 / 2.0], size as f64 / 8.0)
}

/// `domain` with resting-wall spheres (discs in 2D) of `radius` at
/// reproducible random centres, wrapping periodically, added until at most
/// `porosity` of the cells are fluid.
fn packed_bed(mut domain: Domain, radius: f64, porosity: f64) -> Domain {
    let d = domain.dims;
    let wall = kernels_gpu::flags::CellKind::Wall.to_flag();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut random = move |len: u32| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64 * len as f64
    };
    let mut fluid = d.cells();
    let r = radius.ceil() as i64;
    while (fluid as f64) > porosity * d.cells() as f64 {
        let c = [random(d.nx), random(d.ny), if d.nz == 1 { 0.0 } else { random(d.nz) }];
        let rz = if d.nz == 1 { 0 } else { r };
        for dz in -rz..=rz {
            for dy in -r..=r {
                for dx in -r..=r {
                    let p = [c[0].floor() as i64 + dx, c[1].floor() as i64 + dy, c[2].floor() as i64 + dz];
                    let dist2: f64 = (0..3).map(|a| (p[a] as f64 - c[a]).powi(2)).sum();
                    if dist2 > radius * radius {
                        continue;
                    }
                    let wrap = |v: i64, n: u32| v.rem_euclid(n as i64) as u32;
                    let q = [wrap(p[0], d.nx), wrap(p[1], d.ny), wrap(p[2], d.nz)];
                    if domain.flags[q] != wall {
                        domain.flags.set(q, wall);
                        fluid -= 1;
                    }
                }
            }
        }
    }
    domain
}

/// Runs a `size`^3 cube of `case.geometry` with `case.collision` for
/// `10 + steps` steps and times the last `steps`.
pub fn measure(
    make: &dyn Fn(SolverConfig, BackendKind) -> Result<Box<dyn Solver>>,
    backend: BackendKind,
    case: BenchCase,
    steps: u64,
    copy_bandwidth: Option<f64>,
) -> Result<BenchResult> {
    let BenchCase { lattice, precision, streaming, size, geometry, collision, grid, groups } = case;
    let config = SolverConfig { collision, grid, groups, ..geometry.config(lattice, precision, streaming, size)? };
    let active_cells = config.domain.fluid_cells();
    let mut s = make(config, backend)?;
    s.step(10)?;
    s.synchronize()?;
    let t0 = Instant::now();
    s.step(steps)?;
    s.synchronize()?;
    let seconds = t0.elapsed().as_secs_f64();
    // A 2D lattice's cube is one layer thick.
    let cells = s.config().domain.dims.cells() as f64;
    let mlups = cells * steps as f64 / seconds / 1e6;
    let bytes_per_cell = bytes_per_cell_update(lattice, precision);
    let gb_per_s = mlups * 1e6 * bytes_per_cell as f64 / 1e9;
    Ok(BenchResult {
        lattice: lattice.name(),
        precision: precision.name(),
        streaming: streaming.name(),
        size,
        geometry: geometry.name(),
        steps,
        seconds,
        mlups,
        bytes_per_cell,
        gb_per_s,
        fraction_of_copy: copy_bandwidth.map(|bw| gb_per_s * 1e9 / bw),
        kernel: s.kernel_report(),
        collision: collision.kind().name(),
        grid: grid.name(),
        active_cells,
        mlups_active: mlups * active_cells as f64 / cells,
        active_fraction_of_copy: copy_bandwidth.map(|bw| gb_per_s * active_cells as f64 / cells * 1e9 / bw),
        groups: groups.name(),
    })
}

/// Largest cube side whose Esoteric-Pull state (populations and flags) fits
/// in `free_bytes`.
pub fn max_cube(lattice: LatticeKind, precision: Precision, free_bytes: usize) -> u32 {
    let per_cell = (lattice.q() * precision.bytes() + 1) as f64;
    let mut n = (free_bytes as f64 / per_cell).cbrt() as u32;
    while n > 0 && (n as usize).pow(3) * (per_cell as usize) > free_bytes {
        n -= 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_gpu::flags::is_solid;

    /// The periodic cube is all fluid with no walls; the cavity has its one-cell walls.
    #[test]
    fn bench_geometries() {
        let (l, p, s) = (LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull);
        let solids = |g: BenchGeometry| {
            let c = g.config(l, p, s, 12).unwrap();
            assert_eq!(c.domain.dims, Dims::new(12, 12, 12), "{g:?}");
            c.kernel_flags().iter().filter(|&&f| is_solid(f)).count()
        };
        assert_eq!(solids(BenchGeometry::Periodic), 0);
        assert_eq!(solids(BenchGeometry::Cavity), 12 * 12 * 12 - 10 * 10 * 10);
        assert_eq!(BenchGeometry::from_name("periodic").unwrap(), BenchGeometry::Periodic);
        assert!(BenchGeometry::from_name("box").unwrap_err().to_string().contains("cavity, periodic"));
        let tunnel = BenchGeometry::Tunnel.config(l, p, s, 24).unwrap();
        assert_eq!(tunnel.domain.open.len(), 2, "an inlet and an outlet");
        let sphere = tunnel.kernel_flags().iter().filter(|&&f| is_solid(f)).count() as f64;
        let expected = 4.0 / 3.0 * std::f64::consts::PI * 3f64.powi(3);
        assert!((sphere / expected - 1.0).abs() < 0.3, "sphere of {sphere} cells, {expected} expected");
        let bed = BenchGeometry::Bed.config(l, p, s, 40).unwrap();
        let porosity = bed.domain.fluid_cells() as f64 / bed.domain.dims.cells() as f64;
        assert!((0.38..=0.4).contains(&porosity), "bed porosity {porosity}");
    }

    /// The refined tunnel's levels nest around the sphere with every jump in
    /// the flow (the build refuses jumps at walls and next to open faces),
    /// from the smallest side it is for.
    #[test]
    fn the_refined_tunnel_builds() {
        use crate::levels::{Fusion, Levels};
        for size in [128, 256] {
            let (l, p, s) = (LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull);
            let c = BenchGeometry::Tunnel.config(l, p, s, size).unwrap();
            let levels = Levels::build(&c.domain, &refined_tunnel(size, 3, Fusion::Fused), 8, c.lattice).unwrap();
            let own = levels.own_cells();
            assert!(own.iter().all(|&n| n > 0), "{size}: every level owns cells: {own:?}");
        }
    }

    /// Each case runs the collision operator it names, and its result says which.
    #[test]
    fn measure_runs_and_reports_the_case_collision() {
        for collision in [CollisionModel::Bgk, CollisionModel::Trt { magic: crate::solver::DEFAULT_MAGIC }] {
            let case = BenchCase {
                lattice: LatticeKind::D3Q19,
                precision: Precision::F32,
                streaming: Streaming::EsotericPull,
                size: 6,
                geometry: BenchGeometry::Periodic,
                collision,
                grid: GridLayout::Dense,
                groups: BoundaryGroups::Lists,
            };
            let ran = std::cell::Cell::new(None);
            let make = |c: SolverConfig, b| {
                ran.set(Some(c.collision));
                crate::build_solver(c, b, "")
            };
            let r = measure(&make, BackendKind::Cpu, case, 2, None).unwrap();
            assert_eq!(ran.get(), Some(collision));
            assert_eq!(r.collision, collision.kind().name());
            assert_eq!((r.lattice, r.geometry, r.steps), ("d3q19", "periodic", 2));
        }
    }
}

/// One measured refined cavity ([`measure_refined`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct RefinedResult {
    /// The cavity or the wind tunnel.
    pub geometry: &'static str,
    /// Velocity set.
    pub lattice: &'static str,
    /// Storage.
    pub precision: &'static str,
    /// Streaming scheme.
    pub streaming: &'static str,
    /// Fused or split step ([`crate::levels::Fusion`]).
    pub fusion: &'static str,
    /// Collision operator.
    pub collision: &'static str,
    /// Level 0's cube side, cells.
    pub size: u32,
    /// Number of levels.
    pub levels: u32,
    /// Block edge of every level.
    pub block: u32,
    /// GPUs its levels are split over.
    pub gpus: usize,
    /// Cells each level owns.
    pub cells: Vec<usize>,
    /// Coarse steps timed.
    pub steps: u64,
    /// Seconds for those steps.
    pub seconds: f64,
    /// Cell updates per coarse step: each level's cells times its steps.
    pub updates_per_step: u64,
    /// Million cell updates per second.
    pub mlups: f64,
    /// Bytes per cell update, [`bytes_per_cell_update`].
    pub bytes_per_cell: usize,
    /// Effective bandwidth over the copy bandwidth measured in the same
    /// run (of one GPU, times the GPUs).
    pub fraction_of_copy: Option<f64>,
    /// Milliseconds per coarse step in each part of the step, from events
    /// around every launch of a separate profiled run ([`crate::levels::Part`]).
    pub profile_ms: Vec<(&'static str, f64)>,
}

impl RefinedResult {
    /// Milliseconds per coarse step at resolution jumps and within levels.
    pub fn jump_and_levels_ms(&self) -> (f64, f64) {
        let at_jump = |name: &str| crate::levels::Part::ALL.iter().any(|p| p.name() == name && p.at_jump());
        let jump = self.profile_ms.iter().filter(|(n, _)| at_jump(n)).map(|(_, ms)| ms).sum();
        let levels = self.profile_ms.iter().filter(|(n, _)| !at_jump(n)).map(|(_, ms)| ms).sum();
        (jump, levels)
    }
}

/// The refinement of the benchmark's refined cavity of side `size` with
/// `levels` levels: level `k` covers the middle `1/2^k` of the cube along
/// each axis (the middle half at level 1, its middle half at level 2, ...),
/// so that every interface lies inside the flow.
pub fn refined_cavity(size: u32, levels: u32, fusion: crate::levels::Fusion) -> crate::levels::Refinement {
    use crate::levels::{RefinedBox, Refinement};
    let boxes = (1..levels)
        .map(|k| {
            let half = size >> (k + 1);
            RefinedBox { lo: [size / 2 - half; 3], hi: [size / 2 + half; 3], level: k }
        })
        .collect();
    Refinement { levels, boxes, fusion, geometry: None }
}

/// The refinement of the benchmark's wind tunnel of side `size`
/// ([`BenchGeometry::Tunnel`], 128 cells or more) with `levels` levels:
/// level `k` covers a cube around the sphere reaching `(levels - k) size /
/// 16` cells past its surface, and at least `OPEN_MARGIN` cells from the
/// inlet, so that every jump lies in the flow. (Every level takes level 0's
/// cells of the sphere.)
pub fn refined_tunnel(size: u32, levels: u32, fusion: crate::levels::Fusion) -> crate::levels::Refinement {
    use crate::levels::{RefinedBox, Refinement};
    let (centre, r) = tunnel_sphere(size, Dims::new(size, size, size));
    let boxes = (1..levels)
        .map(|k| {
            let reach = r + (levels - k) as f64 * size as f64 / 16.0;
            let mut lo = centre.map(|c| (c - reach).floor().max(0.0) as u32);
            lo[0] = lo[0].max(OPEN_MARGIN);
            RefinedBox { lo, hi: centre.map(|c| ((c + reach).ceil() as u32).min(size)), level: k }
        })
        .collect();
    Refinement { levels, boxes, fusion, geometry: None }
}

/// Level-0 cells a refined box keeps from an open face: the margin the
/// level build asks for with blocks of 8^3 (two blocks).
const OPEN_MARGIN: u32 = 16;

/// What [`measure_refined`] measures: the refined cavity of side `size`
/// ([`refined_cavity`]) or wind tunnel ([`refined_tunnel`]) with `levels`
/// levels on blocks of `block` cells, stepped `fusion`'s way.
#[derive(Clone, Copy, Debug)]
pub struct RefinedCase {
    /// The cavity or the wind tunnel.
    pub geometry: BenchGeometry,
    /// Velocity set (3D).
    pub lattice: LatticeKind,
    /// Storage.
    pub precision: Precision,
    /// Streaming scheme.
    pub streaming: Streaming,
    /// Fused or split step.
    pub fusion: crate::levels::Fusion,
    /// Collision operator of every level.
    pub collision: CollisionModel,
    /// Level 0's cube side.
    pub size: u32,
    /// Number of levels.
    pub levels: u32,
    /// Block edge.
    pub block: u32,
}

/// The configuration and refinement of `case`.
fn refined_setup(case: &RefinedCase) -> Result<(SolverConfig, crate::levels::Refinement)> {
    let RefinedCase { geometry, lattice, precision, streaming, fusion, collision, size, levels, .. } = *case;
    let config = SolverConfig { collision, ..geometry.config(lattice, precision, streaming, size)? };
    let refinement = match geometry {
        BenchGeometry::Cavity => refined_cavity(size, levels, fusion),
        BenchGeometry::Tunnel => refined_tunnel(size, levels, fusion),
        other => {
            return Err(Error::Setup(format!(
                "--grids multires refines the cavity or the tunnel, not the {}: use --geometry cavity,tunnel",
                other.name()
            )))
        }
    };
    Ok((config, refinement))
}

impl RefinedResult {
    /// The result of timing `steps` coarse steps of `case` in `seconds` on
    /// `gpus` GPUs, its levels owning `cells`.
    fn new(case: RefinedCase, gpus: usize, cells: Vec<usize>, steps: u64, seconds: f64, copy: Option<f64>) -> Self {
        let updates_per_step: u64 = cells.iter().enumerate().map(|(l, &n)| (n as u64) << l).sum();
        let mlups = updates_per_step as f64 * steps as f64 / seconds / 1e6;
        let bytes_per_cell = bytes_per_cell_update(case.lattice, case.precision);
        RefinedResult {
            geometry: case.geometry.name(),
            lattice: case.lattice.name(),
            precision: case.precision.name(),
            streaming: case.streaming.name(),
            fusion: case.fusion.name(),
            collision: case.collision.kind().name(),
            size: case.size,
            levels: case.levels,
            block: case.block,
            gpus,
            cells,
            steps,
            seconds,
            updates_per_step,
            mlups,
            bytes_per_cell,
            fraction_of_copy: copy.map(|bw| mlups * 1e6 * bytes_per_cell as f64 / (gpus as f64 * bw)),
            profile_ms: Vec::new(),
        }
    }
}

/// Times `steps` coarse steps of `case` on `device` after 2 of warm-up,
/// then profiles a few more (events around every launch).
pub fn measure_refined(
    device: &crate::gpu::GpuDevice,
    case: RefinedCase,
    steps: u64,
    copy_bandwidth: Option<f64>,
) -> Result<RefinedResult> {
    let (config, refinement) = refined_setup(&case)?;
    let profiled = steps.clamp(1, 20);
    let (cells, seconds, profile) = crate::dispatch!(
        case.lattice,
        case.precision,
        time_refined(device, &config, &refinement, case.block, steps, profiled)
    )?;
    let mut r = RefinedResult::new(case, 1, cells, steps, seconds, copy_bandwidth);
    r.profile_ms = profile.into_iter().map(|(p, s)| (p.name(), 1e3 * s / profiled as f64)).collect();
    Ok(r)
}

/// Times `steps` coarse steps of `case` after 2 of warm-up, its levels
/// split along z over the GPUs `devices` (kernels `ptx`) as `lbm run`
/// splits them; `copy_bandwidth` is one GPU's, and the fraction of copy is
/// of all of theirs.
pub fn measure_refined_split(
    devices: &[usize],
    ptx: &str,
    case: RefinedCase,
    steps: u64,
    copy_bandwidth: Option<f64>,
) -> Result<RefinedResult> {
    let (config, refinement) = refined_setup(&case)?;
    let backend = crate::solver::BackendKind::Gpu(devices[0]);
    let mut solver = crate::levels::build_refined(&config, &refinement, case.block, backend, devices, ptx)?;
    let cells = solver.levels().own_cells();
    solver.step(2)?;
    solver.synchronize()?;
    let t0 = Instant::now();
    solver.step(steps)?;
    solver.synchronize()?;
    let seconds = t0.elapsed().as_secs_f64();
    Ok(RefinedResult::new(case, devices.len(), cells, steps, seconds, copy_bandwidth))
}

/// The cells per level of the refined domain, the seconds `steps` coarse
/// steps take on `device`, and the seconds per part of `profiled` more.
type RefinedTiming = (Vec<usize>, f64, Vec<(crate::levels::Part, f64)>);

fn time_refined<L: Lattice<Q>, const Q: usize, S: crate::gpu::DeviceStorage>(
    device: &crate::gpu::GpuDevice,
    config: &SolverConfig,
    refinement: &crate::levels::Refinement,
    block: u32,
    steps: u64,
    profiled: u64,
) -> Result<RefinedTiming> {
    let cpu = crate::levels::RefinedCpu::<L, Q, S>::new(config, refinement, block)?;
    let mut gpu = crate::levels::RefinedGpu::new(device.clone(), cpu)?;
    let cells = gpu.levels().own_cells();
    gpu.step(2)?;
    gpu.synchronize()?;
    let t0 = Instant::now();
    gpu.step(steps)?;
    gpu.synchronize()?;
    let seconds = t0.elapsed().as_secs_f64();
    let profile = gpu.profile(profiled)?;
    Ok((cells, seconds, profile))
}
