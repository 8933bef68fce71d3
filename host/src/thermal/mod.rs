//! The thermal D2Q37 model on the host: a box periodic along x, with walls
//! at fixed temperatures at its bottom and top or periodic along y, on the
//! CPU, one GPU or several (the per-cell functions are
//! `kernels_gpu::thermal`'s).
//!
//! The box is cut into tiles ([`tiles`]; one, unless asked otherwise), each
//! run by a plan of phases ([`tiles::tile_plan`]) that every backend runs in
//! order: either propagate, the walls and collide (Calore et al. 2016's
//! three kernels), or the fused propagate-collide over the rows no wall
//! reaches and the three kernels over the three rows next to each wall. A
//! step fills the halos between the plan's bulk and its edges. Every order
//! and every tiling gives the same populations bit for bit.

pub mod bench;
pub mod case;
mod cpu;
mod gpu;
pub mod nccl;
#[cfg(test)]
mod tests;
pub mod tiles;
pub mod validation;

use crate::error::{Error, Result};
use crate::solver::{BackendKind, KernelReport};
use kernels_gpu::thermal::d2q37::{Q, THETA0};
use kernels_gpu::thermal::frame::HALO;
use kernels_gpu::thermal::step::WALL_ROWS;
use kernels_gpu::thermal::{ThermalBgk, ThermalParams};
use kernels_gpu::Real;
use rayon::prelude::*;
use std::ops::Range;
use tiles::{Tile, TilePlan, Tiling, Window};

/// Floating-point type of the populations and the arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThermalPrecision {
    /// Single precision.
    F32,
    /// Double precision, as Calore et al. run the model.
    F64,
}

impl ThermalPrecision {
    /// The name in kernels and reports (`f32`, `f64`).
    pub fn name(self) -> &'static str {
        match self {
            ThermalPrecision::F32 => <f32 as kernels_gpu::storage::Storage>::NAME,
            ThermalPrecision::F64 => <f64 as kernels_gpu::storage::Storage>::NAME,
        }
    }

    /// Bytes of one value.
    pub fn bytes(self) -> usize {
        match self {
            ThermalPrecision::F32 => 4,
            ThermalPrecision::F64 => 8,
        }
    }
}

/// What a thermal run is: the box, the fluid and its boundaries.
#[derive(Clone, Debug, PartialEq)]
pub struct ThermalConfig {
    /// Sites along x (periodic).
    pub nx: u32,
    /// Sites along y.
    pub ny: u32,
    /// Relaxation time: viscosity `(tau - 1/2) T` and, the Prandtl number
    /// being 1, thermal diffusivity the same.
    pub tau: f64,
    /// Acceleration of gravity (lattice units), usually `[0, -g]`.
    pub gravity: [f64; 2],
    /// Temperatures of the bottom and top walls; `None`: periodic along y.
    pub walls: Option<[f64; 2]>,
    /// Whether the rows no wall reaches run the fused propagate-collide
    /// (else every row runs propagate, the walls, collide).
    pub fused: bool,
    /// Floating-point type.
    pub precision: ThermalPrecision,
    /// How the box is cut into tiles (one per GPU when run on several).
    pub tiling: Tiling,
}

impl ThermalConfig {
    /// Checks that the set-up can run, with what to change if not.
    pub fn validate(&self) -> Result<()> {
        let fail = |m: String| Err(Error::Setup(m));
        if self.nx < HALO {
            return fail(format!("the thermal box needs nx >= {HALO} (populations travel 3 cells), got {}", self.nx));
        }
        let min_ny = if self.walls.is_some() { 2 * WALL_ROWS } else { HALO };
        if self.ny < min_ny {
            return fail(format!(
                "the thermal box needs ny >= {min_ny} {}, got {}",
                if self.walls.is_some() { "between walls (three rows next to each)" } else { "when periodic" },
                self.ny
            ));
        }
        if self.tau.is_nan() || self.tau <= 0.5 || !self.tau.is_finite() {
            return fail(format!("tau must be above 1/2 (viscosity (tau - 1/2) T), got {}", self.tau));
        }
        if let Some(t) = self.walls {
            if t.iter().any(|&t| t.is_nan() || t <= 0.0 || !t.is_finite()) {
                return fail(format!("wall temperatures must be positive, got {t:?}"));
            }
        }
        tiles::validate(self)?;
        // Each tile's buffer is indexed in 32 bits.
        let cells = tiles::tiles(self).iter().map(|t| t.frame.plane() as u64).max().unwrap_or(0);
        if cells >= 1 << 31 {
            return fail(format!(
                "{} x {} sites in {} tiles is too large: a tile's frame holds {cells} cells, at most 2^31 \
                 (cut the box into more tiles)",
                self.nx,
                self.ny,
                self.tiling.count()
            ));
        }
        Ok(())
    }

    /// The kernels' parameters in precision `T` for `tile`, launch window
    /// `columns` x `rows`.
    pub(crate) fn params<T: Real>(&self, tile: &Tile, columns: Range<u32>, rows: Range<u32>) -> ThermalParams<T> {
        let walls = self.walls.unwrap_or([THETA0; 2]);
        ThermalParams {
            frame: tile.frame.window(columns, rows),
            walls: tile.walls,
            reserved: 0,
            collision: ThermalBgk::new(self.tau, self.gravity),
            wall_temperature: [T::from_f64(walls[0]), T::from_f64(walls[1])],
        }
    }
}

/// One phase of a tile's step, over a window of its sites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThermalPhase {
    /// Pull the window into the other buffer.
    Propagate(Window),
    /// The walls' entering populations in the other buffer, on the sides
    /// of the tile that are walls.
    Walls,
    /// Collide the window of the other buffer in place.
    Collide(Window),
    /// Pull and collide the window into the other buffer.
    PropagateCollide(Window),
}

/// What runs the tiles' plans: the CPU, one GPU or several.
trait Executor: Send {
    /// Queues `phase` of tile `tile`.
    fn run(&mut self, tile: usize, phase: &ThermalPhase) -> Result<()>;
    /// Before tile `tile`'s step: what it must wait for.
    fn begin(&mut self, _tile: usize) -> Result<()> {
        Ok(())
    }
    /// Fills every tile's halo from its neighbours.
    fn exchange(&mut self) -> Result<()>;
    /// Before tile `tile`'s edges: waits for its halo.
    fn await_halo(&mut self, _tile: usize) -> Result<()> {
        Ok(())
    }
    /// After tile `tile`'s step: its other buffer becomes the current one.
    fn finish(&mut self, tile: usize) -> Result<()>;
    /// Whether tile `tile` runs here (over NCCL, a rank runs its own).
    fn owns(&self, _tile: usize) -> bool {
        true
    }
    /// The interior sites' current populations, `i (nx ny) + x ny + y`;
    /// collective over NCCL ranks, where only rank 0 gets them.
    fn populations(&self) -> Result<Option<Vec<f64>>>;
    /// Abandons pending work between processes after an error.
    fn abort(&mut self) {}
    /// Waits until queued work is done.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    /// Registers and occupancy of the fused kernel, on a GPU.
    fn kernel_report(&self) -> Option<KernelReport> {
        None
    }
    /// The device's peak arithmetic rate in the run's precision, FLOP/s,
    /// where known.
    fn peak_flops(&self) -> Result<Option<f64>> {
        Ok(None)
    }
    /// How tiles' devices exchange data, one line per neighbouring pair.
    fn links(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Density, hydrodynamic velocity and temperature of every site, row by
/// row from the bottom (`y nx + x`).
#[derive(Clone, Debug, PartialEq)]
pub struct ThermalFields {
    /// Sites along x.
    pub nx: u32,
    /// Sites along y.
    pub ny: u32,
    /// Density.
    pub rho: Vec<f64>,
    /// Velocity, x.
    pub ux: Vec<f64>,
    /// Velocity, y.
    pub uy: Vec<f64>,
    /// Temperature.
    pub temperature: Vec<f64>,
}

/// A thermal simulation.
pub struct ThermalSolver {
    config: ThermalConfig,
    plans: Vec<TilePlan>,
    /// The tiles run here: all, or an NCCL rank's own.
    mine: Vec<usize>,
    executor: Box<dyn Executor>,
    time: u64,
}

impl ThermalSolver {
    /// A solver on `backend` (a GPU loads its kernels from `ptx`) whose
    /// sites start at the density, hydrodynamic velocity and temperature
    /// `initial(x, y)` gives. On a GPU every tile runs on that GPU; on the
    /// CPU the tiles are run one after the other.
    pub fn new(
        config: ThermalConfig,
        backend: BackendKind,
        ptx: &str,
        initial: impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync,
    ) -> Result<Self> {
        match backend {
            BackendKind::Cpu => Self::build(config, None, ptx, initial),
            BackendKind::Gpu(o) => {
                let ordinals = vec![o; config.tiling.count()];
                Self::build(config, Some(&ordinals), ptx, initial)
            }
        }
    }

    /// A solver whose tile `k` runs on GPU `ordinals[k]` (one per tile;
    /// a GPU may hold several), tiles exchanging halos by peer copies.
    pub fn on_gpus(
        config: ThermalConfig,
        ordinals: &[usize],
        ptx: &str,
        initial: impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync,
    ) -> Result<Self> {
        if ordinals.len() != config.tiling.count() {
            return Err(Error::Setup(format!(
                "{} GPUs for {} tiles ({}): give one GPU per tile",
                ordinals.len(),
                config.tiling.count(),
                config.tiling.name()
            )));
        }
        Self::build(config, Some(ordinals), ptx, initial)
    }

    fn build(
        config: ThermalConfig,
        ordinals: Option<&[usize]>,
        ptx: &str,
        initial: impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync,
    ) -> Result<Self> {
        Self::with_executor(config, |config, tiles| {
            Ok(match (ordinals, config.precision) {
                (None, ThermalPrecision::F32) => Box::new(cpu::CpuTiles::<f32>::new(config, tiles, &initial)),
                (None, ThermalPrecision::F64) => Box::new(cpu::CpuTiles::<f64>::new(config, tiles, &initial)),
                (Some(o), ThermalPrecision::F32) => {
                    Box::new(gpu::GpuTiles::<f32>::new(config, tiles, o, ptx, &initial)?)
                }
                (Some(o), ThermalPrecision::F64) => {
                    Box::new(gpu::GpuTiles::<f64>::new(config, tiles, o, ptx, &initial)?)
                }
            })
        })
    }

    /// A solver of `config` (checked first) whose tiles `executor` runs.
    fn with_executor(
        config: ThermalConfig,
        executor: impl FnOnce(&ThermalConfig, Vec<Tile>) -> Result<Box<dyn Executor>>,
    ) -> Result<Self> {
        config.validate()?;
        let tiles = tiles::tiles(&config);
        let plans: Vec<TilePlan> = tiles.iter().map(|t| tiles::tile_plan(&config, t)).collect();
        let executor = executor(&config, tiles)?;
        let mine = (0..plans.len()).filter(|&k| executor.owns(k)).collect();
        Ok(Self { plans, mine, config, executor, time: 0 })
    }

    /// The set-up.
    pub fn config(&self) -> &ThermalConfig {
        &self.config
    }

    /// Steps done.
    pub fn time(&self) -> u64 {
        self.time
    }

    /// Advances `steps` time steps.
    pub fn step(&mut self, steps: u64) -> Result<()> {
        let e = &mut self.executor;
        for _ in 0..steps {
            for &k in &self.mine {
                e.begin(k)?;
                for phase in &self.plans[k].bulk {
                    e.run(k, phase)?;
                }
            }
            e.exchange()?;
            for &k in &self.mine {
                e.await_halo(k)?;
                for phase in &self.plans[k].edges {
                    e.run(k, phase)?;
                }
                e.finish(k)?;
            }
            self.time += 1;
        }
        Ok(())
    }

    /// How the tiles' GPUs exchange data, one line per neighbouring pair.
    pub fn links(&self) -> Vec<String> {
        self.executor.links()
    }

    /// Seconds one halo exchange takes alone (no kernels), averaged over
    /// `reps` exchanges after one untimed.
    pub fn time_exchange(&mut self, reps: u32) -> Result<f64> {
        self.executor.exchange()?;
        self.executor.synchronize()?;
        let t0 = std::time::Instant::now();
        for _ in 0..reps {
            self.executor.exchange()?;
        }
        self.executor.synchronize()?;
        Ok(t0.elapsed().as_secs_f64() / reps.max(1) as f64)
    }

    /// Waits until queued steps are done.
    pub fn synchronize(&self) -> Result<()> {
        self.executor.synchronize()
    }

    /// Registers and occupancy of the fused kernel, on a GPU.
    pub fn kernel_report(&self) -> Option<KernelReport> {
        self.executor.kernel_report()
    }

    /// The device's peak arithmetic rate in the run's precision (FLOP/s).
    pub fn peak_flops(&self) -> Result<Option<f64>> {
        self.executor.peak_flops()
    }

    /// Abandons pending work between processes (NCCL ranks) after an
    /// error, so that the process can exit rather than wait for its peers.
    pub fn abort(&mut self) {
        self.executor.abort();
    }

    /// The interior populations, `i (nx ny) + x ny + y` (exact in f64).
    /// Over NCCL ranks, every rank must call it, and only rank 0 gets them
    /// ([`Self::gather_populations`]).
    pub fn populations(&self) -> Result<Vec<f64>> {
        self.gather_populations()?.ok_or_else(|| {
            Error::Setup("only rank 0 of an NCCL job holds the whole box: use gather_populations".into())
        })
    }

    /// The interior populations on rank 0 of an NCCL job (`None` on the
    /// other ranks), or in a single process; collective over the ranks.
    pub fn gather_populations(&self) -> Result<Option<Vec<f64>>> {
        self.executor.populations()
    }

    /// The fields of the current state (see [`Self::populations`]).
    pub fn fields(&self) -> Result<ThermalFields> {
        self.gather_fields()?
            .ok_or_else(|| Error::Setup("only rank 0 of an NCCL job holds the whole box: use gather_fields".into()))
    }

    /// The fields on rank 0 of an NCCL job (`None` on the other ranks), or
    /// in a single process; collective over the ranks.
    pub fn gather_fields(&self) -> Result<Option<ThermalFields>> {
        let Some(f) = self.gather_populations()? else {
            return Ok(None);
        };
        let (nx, ny) = (self.config.nx as usize, self.config.ny as usize);
        let op = ThermalBgk::<f64>::new(self.config.tau, self.config.gravity);
        let sites = nx * ny;
        let mut out = ThermalFields {
            nx: nx as u32,
            ny: ny as u32,
            rho: vec![0.0; sites],
            ux: vec![0.0; sites],
            uy: vec![0.0; sites],
            temperature: vec![0.0; sites],
        };
        // Row by row in parallel (a picture of a large box reads every site).
        let rows: Vec<Vec<(f64, [f64; 2], f64)>> = (0..ny)
            .into_par_iter()
            .map(|y| (0..nx).map(|x| op.fields(&std::array::from_fn(|i| f[i * sites + x * ny + y]))).collect())
            .collect();
        for (y, row) in rows.into_iter().enumerate() {
            for (x, (rho, u, t)) in row.into_iter().enumerate() {
                let k = y * nx + x;
                (out.rho[k], out.ux[k], out.uy[k], out.temperature[k]) = (rho, u[0], u[1], t);
            }
        }
        Ok(Some(out))
    }
}

/// The populations of every stored cell of `tile` in precision `T`,
/// interior sites at `initial`'s state (halo cells zero).
fn initial_populations<T: Real>(
    config: &ThermalConfig,
    tile: &Tile,
    initial: &(impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync),
) -> Vec<T> {
    let frame = tile.frame;
    let op = ThermalBgk::<f64>::new(config.tau, config.gravity);
    let mut f = vec![T::ZERO; Q * frame.plane()];
    let out = crate::cpu::Shared::new(f.as_mut_ptr());
    // Column by column in parallel (a large box has billions of values).
    (0..frame.nx).into_par_iter().for_each(|x| {
        for y in 0..frame.ny {
            let (rho, u, t) = initial(tile.origin[0] + x, tile.origin[1] + y);
            let feq = op.initial(rho, u, t);
            let cell = frame.site(x as i32, y as i32);
            for (i, &v) in feq.iter().enumerate() {
                // SAFETY: each task writes the cells of its own column.
                unsafe { *out.get().add(frame.population_index(i, cell)) = T::from_f64(v) };
            }
        }
    });
    f
}

/// The interior populations of the whole box, as
/// [`Executor::populations`] lays them out, from each tile's buffer.
fn interior<T: Real, B: AsRef<[T]> + Sync>(config: &ThermalConfig, tiles: &[Tile], buffers: &[B]) -> Vec<f64> {
    let (nx, ny) = (config.nx as usize, config.ny as usize);
    let mut out = vec![0.0; Q * nx * ny];
    // A column's sites are contiguous in both layouts.
    out.par_chunks_mut(ny).enumerate().for_each(|(k, column)| {
        let (i, x) = (k / nx, (k % nx) as u32);
        for (tile, f) in tiles.iter().zip(buffers) {
            let frame = tile.frame;
            if x < tile.origin[0] || x >= tile.origin[0] + frame.nx {
                continue;
            }
            let first = frame.population_index(i, frame.site((x - tile.origin[0]) as i32, 0));
            let rows = tile.origin[1] as usize..tile.origin[1] as usize + frame.ny as usize;
            for (v, y) in column[rows].iter_mut().zip(0..) {
                *v = f.as_ref()[first + y].to_f64();
            }
        }
    });
    out
}
