//! The thermal D2Q37 model on the host: a box periodic along x, with walls
//! at fixed temperatures at its bottom and top or periodic along y, on the
//! CPU or one GPU (the per-cell functions are `kernels_gpu::thermal`'s).
//!
//! A step is a plan of phases ([`plan`]) that each backend runs in order:
//! fill the halos, then either propagate, the walls and collide over every
//! row (Calore et al. 2016's three kernels), or the fused propagate-collide
//! over the rows no wall reaches and the three kernels over the three rows
//! next to each wall. Both orders give the same populations bit for bit.

pub mod bench;
pub mod case;
mod cpu;
mod gpu;
#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use crate::solver::{BackendKind, KernelReport};
use kernels_gpu::thermal::d2q37::{Q, THETA0};
use kernels_gpu::thermal::frame::HALO;
use kernels_gpu::thermal::step::WALL_ROWS;
use kernels_gpu::thermal::{Frame, ThermalBgk, ThermalParams};
use kernels_gpu::Real;
use rayon::prelude::*;
use std::ops::Range;

/// Floating-point type of the populations and the arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThermalPrecision {
    /// Single precision.
    F32,
    /// Double precision, as Calore et al. run the model.
    F64,
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
}

impl ThermalConfig {
    /// The framed box.
    pub fn frame(&self) -> Frame {
        Frame::new(self.nx, self.ny)
    }

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
        let cells = self.frame().plane() as u64;
        if cells >= 1 << 31 {
            return fail(format!(
                "{} x {} sites is too large for one thermal box: the frame holds {cells} cells, at most 2^31",
                self.nx, self.ny
            ));
        }
        Ok(())
    }

    /// The kernels' parameters in precision `T`, for the launch window `rows`.
    pub(crate) fn params<T: Real>(&self, rows: Range<u32>) -> ThermalParams<T> {
        let walls = self.walls.unwrap_or([THETA0; 2]);
        ThermalParams {
            frame: self.frame().rows(rows),
            walls: self.walls.is_some() as u32,
            reserved: 0,
            collision: ThermalBgk::new(self.tau, self.gravity),
            wall_temperature: [T::from_f64(walls[0]), T::from_f64(walls[1])],
        }
    }
}

/// One phase of a thermal step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThermalPhase {
    /// Fill the halo frame of the current buffer: the y halo when y is
    /// periodic, then the x halo over every stored row (so its corners
    /// copy the y halo).
    Halo,
    /// Pull the rows `rows` of every column into the other buffer.
    Propagate(Range<u32>),
    /// The walls' entering populations in the other buffer.
    Walls,
    /// Collide the rows `rows` of the other buffer in place.
    Collide(Range<u32>),
    /// Pull and collide the rows `rows` into the other buffer.
    PropagateCollide(Range<u32>),
    /// The other buffer becomes the current one.
    Swap,
}

/// The phases of one step of `config`.
pub fn plan(config: &ThermalConfig) -> Vec<ThermalPhase> {
    use ThermalPhase::*;
    let ny = config.ny;
    let mut phases = vec![Halo];
    match (config.walls.is_some(), config.fused) {
        (false, true) => phases.push(PropagateCollide(0..ny)),
        (false, false) => phases.extend([Propagate(0..ny), Collide(0..ny)]),
        (true, false) => phases.extend([Propagate(0..ny), Walls, Collide(0..ny)]),
        (true, true) => {
            let (bottom, top) = (0..WALL_ROWS, ny - WALL_ROWS..ny);
            if ny > 2 * WALL_ROWS {
                phases.push(PropagateCollide(WALL_ROWS..ny - WALL_ROWS));
            }
            phases.extend([Propagate(bottom.clone()), Propagate(top.clone()), Walls, Collide(bottom), Collide(top)]);
        }
    }
    phases.push(Swap);
    phases
}

/// What runs a plan's phases: the CPU or a GPU.
trait Executor: Send {
    /// Runs one phase.
    fn run(&mut self, phase: &ThermalPhase) -> Result<()>;
    /// The interior sites' current populations, `i (nx ny) + x ny + y`.
    fn populations(&self) -> Result<Vec<f64>>;
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
    plan: Vec<ThermalPhase>,
    executor: Box<dyn Executor>,
    time: u64,
}

impl ThermalSolver {
    /// A solver on `backend` (a GPU loads its kernels from `ptx`) whose
    /// sites start at the density, hydrodynamic velocity and temperature
    /// `initial(x, y)` gives.
    pub fn new(
        config: ThermalConfig,
        backend: BackendKind,
        ptx: &str,
        initial: impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync,
    ) -> Result<Self> {
        config.validate()?;
        let executor: Box<dyn Executor> = match (backend, config.precision) {
            (BackendKind::Cpu, ThermalPrecision::F32) => Box::new(cpu::CpuThermal::<f32>::new(&config, &initial)),
            (BackendKind::Cpu, ThermalPrecision::F64) => Box::new(cpu::CpuThermal::<f64>::new(&config, &initial)),
            (BackendKind::Gpu(o), ThermalPrecision::F32) => {
                Box::new(gpu::GpuThermal::<f32>::new(&config, o, ptx, &initial)?)
            }
            (BackendKind::Gpu(o), ThermalPrecision::F64) => {
                Box::new(gpu::GpuThermal::<f64>::new(&config, o, ptx, &initial)?)
            }
        };
        Ok(Self { plan: plan(&config), config, executor, time: 0 })
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
        for _ in 0..steps {
            for phase in &self.plan {
                self.executor.run(phase)?;
            }
            self.time += 1;
        }
        Ok(())
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

    /// The interior populations, `i (nx ny) + x ny + y` (exact in f64).
    pub fn populations(&self) -> Result<Vec<f64>> {
        self.executor.populations()
    }

    /// The fields of the current state.
    pub fn fields(&self) -> Result<ThermalFields> {
        let f = self.populations()?;
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
        Ok(out)
    }
}

/// The populations of every stored cell of `config`'s frame in precision
/// `T`, interior sites at `initial`'s state (halo cells zero).
fn initial_populations<T: Real>(
    config: &ThermalConfig,
    initial: &(impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync),
) -> Vec<T> {
    let frame = config.frame();
    let op = ThermalBgk::<f64>::new(config.tau, config.gravity);
    let mut f = vec![T::ZERO; Q * frame.plane()];
    for x in 0..config.nx {
        for y in 0..config.ny {
            let (rho, u, t) = initial(x, y);
            let feq = op.initial(rho, u, t);
            let cell = frame.site(x as i32, y as i32);
            for i in 0..Q {
                f[frame.population_index(i, cell)] = T::from_f64(feq[i]);
            }
        }
    }
    f
}

/// The interior populations of a frame's buffer, as [`Executor::populations`] lays them out.
fn interior<T: Real>(frame: &Frame, f: &[T]) -> Vec<f64> {
    let (nx, ny) = (frame.nx as usize, frame.ny as usize);
    let mut out = vec![0.0; Q * nx * ny];
    // A column's sites are contiguous in both layouts.
    out.par_chunks_mut(ny).enumerate().for_each(|(k, column)| {
        let (i, x) = (k / nx, k % nx);
        let first = frame.population_index(i, frame.site(x as i32, 0));
        for (y, v) in column.iter_mut().enumerate() {
            *v = f[first + y].to_f64();
        }
    });
    out
}
