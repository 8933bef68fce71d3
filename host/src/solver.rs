//! The backend seam: one [`Solver`] trait with CPU and GPU siblings, and the
//! run-time choice of lattice, precision and streaming scheme.

use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::fields::Fields;
use kernels_gpu::{Lattice, Real, StepParams, Streaming, D2Q9, D3Q19, D3Q27};
use serde::{Deserialize, Serialize};

/// Velocity set chosen at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum LatticeKind {
    /// D2Q9.
    D2Q9,
    /// D3Q19.
    D3Q19,
    /// D3Q27.
    D3Q27,
}

impl LatticeKind {
    /// Number of populations per cell.
    pub const fn q(self) -> usize {
        match self {
            LatticeKind::D2Q9 => 9,
            LatticeKind::D3Q19 => 19,
            LatticeKind::D3Q27 => 27,
        }
    }
    /// Spatial dimension.
    pub const fn dimension(self) -> usize {
        match self {
            LatticeKind::D2Q9 => 2,
            _ => 3,
        }
    }
    /// Lower-case name (`d3q19`).
    pub const fn name(self) -> &'static str {
        match self {
            LatticeKind::D2Q9 => D2Q9::NAME,
            LatticeKind::D3Q19 => D3Q19::NAME,
            LatticeKind::D3Q27 => D3Q27::NAME,
        }
    }
}

/// Storage and arithmetic precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 32-bit floats.
    F32,
    /// 64-bit floats.
    F64,
}

impl Precision {
    /// Bytes per population.
    pub const fn bytes(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }
    /// Name (`f32`).
    pub const fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

/// Name of a streaming scheme as users write it.
pub const fn streaming_name(s: Streaming) -> &'static str {
    match s {
        Streaming::EsotericPull => "esoteric-pull",
        Streaming::TwoLattice => "two-lattice",
    }
}

/// Which backend runs the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// rayon over cells on the host.
    Cpu,
    /// The CUDA device with this ordinal.
    Gpu(usize),
}

/// Initial state of the fluid.
#[derive(Clone, Debug, PartialEq)]
pub enum Initial {
    /// Uniform density and velocity.
    Uniform {
        /// Density.
        rho: f64,
        /// Velocity.
        u: [f64; 3],
    },
    /// Given per cell (cell order).
    Fields {
        /// Density per cell.
        rho: Vec<f64>,
        /// Velocity per cell.
        u: Vec<[f64; 3]>,
    },
}

/// Everything that defines a simulation apart from the backend.
#[derive(Clone, Debug)]
pub struct SolverConfig {
    /// Velocity set.
    pub lattice: LatticeKind,
    /// Precision.
    pub precision: Precision,
    /// Streaming scheme.
    pub streaming: Streaming,
    /// Relaxation time `tau` (lattice units); `nu = (tau - 1/2) / 3`.
    pub tau: f64,
    /// Body force density (lattice units).
    pub force: [f64; 3],
    /// Geometry.
    pub domain: Domain,
    /// Initial state.
    pub initial: Initial,
}

impl SolverConfig {
    /// Checks what would make the solver misbehave.
    pub fn validate(&self) -> Result<()> {
        if self.tau.is_nan() || self.tau <= 0.5 {
            return Err(Error::Setup(format!(
                "tau = {} must be above 1/2 (viscosity (tau - 1/2)/3 must be positive): raise the viscosity or lower the Reynolds number",
                self.tau
            )));
        }
        if self.lattice.dimension() == 2 && self.domain.dims.nz != 1 {
            return Err(Error::Setup(format!(
                "{} is a 2D lattice but the domain has nz = {}: use nz = 1",
                self.lattice.name().to_uppercase(),
                self.domain.dims.nz
            )));
        }
        if self.lattice.dimension() == 2 && self.force[2] != 0.0 {
            return Err(Error::Setup(
                "a 2D lattice cannot take a force along z".into(),
            ));
        }
        if let Initial::Fields { rho, u } = &self.initial {
            if rho.len() != self.domain.dims.cells() || u.len() != self.domain.dims.cells() {
                return Err(Error::Setup(
                    "initial fields do not match the domain size".into(),
                ));
            }
        }
        Ok(())
    }

    /// Kernel parameters for time step `t`.
    pub fn step_params<T: Real>(&self, t: u64) -> StepParams<T> {
        let mut wall_velocity = [[T::ZERO; 3]; kernels_gpu::flags::MAX_MOVING_WALLS];
        for (k, u) in self.domain.wall_velocities.iter().enumerate() {
            wall_velocity[k] = u.map(T::from_f64);
        }
        StepParams {
            dims: self.domain.dims,
            parity: (t % 2) as u32,
            omega: T::from_f64(1.0 / self.tau),
            force: self.force.map(T::from_f64),
            wall_velocity,
        }
    }

    /// Initial density and velocity as `rho, ux, uy, uz` planes.
    pub fn initial_planes<T: Real>(&self) -> Vec<T> {
        let cells = self.domain.dims.cells();
        let mut planes = vec![T::ZERO; 4 * cells];
        for n in 0..cells {
            let (rho, u) = match &self.initial {
                Initial::Uniform { rho, u } => (*rho, *u),
                Initial::Fields { rho, u } => (rho[n], u[n]),
            };
            planes[n] = T::from_f64(rho);
            for a in 0..3 {
                planes[(a + 1) * cells + n] = T::from_f64(u[a]);
            }
        }
        planes
    }

    /// Bytes of device memory the state takes: populations (one or two
    /// copies) and the flag byte.
    pub fn state_bytes(&self) -> usize {
        let copies = match self.streaming {
            Streaming::EsotericPull => 1,
            Streaming::TwoLattice => 2,
        };
        self.domain.dims.cells() * (copies * self.lattice.q() * self.precision.bytes() + 1)
    }
}

/// A running simulation on some backend.
pub trait Solver: Send {
    /// Advances `steps` time steps (queued; see [`Solver::synchronize`]).
    fn step(&mut self, steps: u64) -> Result<()>;
    /// Waits until queued work is done.
    fn synchronize(&mut self) -> Result<()>;
    /// Time steps done so far.
    fn time(&self) -> u64;
    /// Density and velocity at the current time.
    fn fields(&mut self) -> Result<Fields>;
    /// The raw population buffer (current copy), widened to f64 (exact).
    fn populations(&mut self) -> Result<Vec<f64>>;
    /// Total mass of the fluid cells, summed in f64 from the populations.
    fn mass(&mut self) -> Result<f64>;
    /// The backend running this solver.
    fn backend(&self) -> BackendKind;
    /// The configuration it was built from.
    fn config(&self) -> &SolverConfig;
}

/// Calls `$f::<Lattice, Q, Real>($args)` for the run-time lattice and precision.
#[macro_export]
macro_rules! dispatch {
    ($lattice:expr, $precision:expr, $f:ident ( $($arg:expr),* )) => {{
        use $crate::solver::{LatticeKind as __L, Precision as __P};
        use kernels_gpu::{D2Q9, D3Q19, D3Q27};
        match ($lattice, $precision) {
            (__L::D2Q9, __P::F32) => $f::<D2Q9, 9, f32>($($arg),*),
            (__L::D2Q9, __P::F64) => $f::<D2Q9, 9, f64>($($arg),*),
            (__L::D3Q19, __P::F32) => $f::<D3Q19, 19, f32>($($arg),*),
            (__L::D3Q19, __P::F64) => $f::<D3Q19, 19, f64>($($arg),*),
            (__L::D3Q27, __P::F32) => $f::<D3Q27, 27, f32>($($arg),*),
            (__L::D3Q27, __P::F64) => $f::<D3Q27, 27, f64>($($arg),*),
        }
    }};
}

/// Total fluid mass of a population buffer in the given scheme and parity,
/// summed in f64 from the shifted populations (`rho = 1 + sum fbar_i`).
pub fn mass_of<L: Lattice<Q>, const Q: usize, T: Real>(
    config: &SolverConfig,
    f: &[T],
    t: u64,
) -> f64 {
    use kernels_gpu::stream::{load, neighbours};
    let p = config.step_params::<T>(t);
    let flags = &config.domain.flags;
    let mut mass = 0.0;
    for n in 0..flags.len() {
        if flags[n] != kernels_gpu::flags::FLUID {
            continue;
        }
        let nb = neighbours::<L, Q>(p.dims, n);
        // SAFETY: `f` and `flags` are sized for the domain (checked by the solvers).
        let fi =
            unsafe { load::<L, Q, T>(config.streaming, &p, f.as_ptr(), flags.as_ptr(), n, &nb) };
        mass += 1.0 + fi.iter().map(|v| v.to_f64()).sum::<f64>();
    }
    mass
}
