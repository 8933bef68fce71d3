//! The backend seam: one [`Solver`] trait with CPU and GPU siblings, and the
//! run-time choice of lattice, precision and streaming scheme.

use crate::cell_blocks::CellBlocks;
use crate::domain::{Domain, OpenScheme};
use crate::error::{Error, Result};
use crate::fields::Fields;
pub use crate::saved::{SavedBlocks, SavedPart, SavedState};
use crate::sparse::BlockShape;
use kernels_gpu::{
    Bgk, Chosen, CollisionKind, Cumulant, F16s, Lattice, Les, Mrt, MrtRates, Real, Regularized, Smagorinsky,
    StepParams, Storage, Streaming, Trt, D2Q9, D3Q19, D3Q27,
};
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
    /// Every velocity set, in the order of the rows of [`kernels_gpu::for_each_instance`].
    pub const ALL: [LatticeKind; 3] = [LatticeKind::D2Q9, LatticeKind::D3Q19, LatticeKind::D3Q27];
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
    /// The velocity set `c_i`.
    pub const fn velocities(self) -> &'static [[i32; 3]] {
        match self {
            LatticeKind::D2Q9 => &D2Q9::C,
            LatticeKind::D3Q19 => &D3Q19::C,
            LatticeKind::D3Q27 => &D3Q27::C,
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
    /// Largest velocity component ([`Lattice::MAX_SPEED`]).
    pub const fn max_speed(self) -> u32 {
        match self {
            LatticeKind::D2Q9 => D2Q9::MAX_SPEED,
            LatticeKind::D3Q19 => D3Q19::MAX_SPEED,
            LatticeKind::D3Q27 => D3Q27::MAX_SPEED,
        }
    }
    /// Radius of the near-wall neighbourhood ([`kernels_gpu::grid::near_wall_radius`]).
    pub const fn near_wall_radius(self) -> u32 {
        use kernels_gpu::grid::near_wall_radius;
        match self {
            LatticeKind::D2Q9 => near_wall_radius::<D2Q9, 9>(),
            LatticeKind::D3Q19 => near_wall_radius::<D3Q19, 19>(),
            LatticeKind::D3Q27 => near_wall_radius::<D3Q27, 27>(),
        }
    }
}

/// A run-time choice picked by name (on the command line, in a case file):
/// the names accepted, and those an error lists, come from the one list of
/// values, so a new value is accepted everywhere once it is in that list.
pub trait Named: Copy + 'static {
    /// What the values are, as messages call them (`lattice`).
    const WHAT: &'static str;
    /// Every value (the type's `ALL`).
    fn all() -> &'static [Self];
    /// The value's name (the type's `name()`).
    fn label(self) -> &'static str;

    /// The names of `values`, comma-separated: the choices messages list.
    fn choices(values: &[Self]) -> String {
        values.iter().map(|v| v.label()).collect::<Vec<_>>().join(", ")
    }
    /// The one of `values` named `name` (any case), or an error listing their names.
    fn from_name_in(name: &str, values: &[Self]) -> Result<Self> {
        values.iter().copied().find(|v| v.label().eq_ignore_ascii_case(name)).ok_or_else(|| Error::UnknownName {
            what: Self::WHAT,
            name: name.into(),
            choices: Self::choices(values),
        })
    }
    /// The value named `name` (any case), or an error listing every name.
    fn from_name(name: &str) -> Result<Self> {
        Self::from_name_in(name, Self::all())
    }
}

/// Implements [`Named`] from a type's `ALL` and `name()`.
macro_rules! named {
    ($($t:ty => $what:literal),* $(,)?) => {$(
        impl Named for $t {
            const WHAT: &'static str = $what;
            fn all() -> &'static [Self] {
                &<$t>::ALL
            }
            fn label(self) -> &'static str {
                <$t>::name(self)
            }
        }
    )*};
}

named! {
    LatticeKind => "lattice",
    Precision => "precision",
    Streaming => "streaming scheme",
    CollisionKind => "collision operator",
    OpenScheme => "open-boundary scheme",
    crate::groups::BoundaryGroups => "boundary-group variant",
    crate::levels::Fusion => "refined step",
}

/// How populations are stored (and computed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 32-bit floats.
    F32,
    /// 64-bit floats.
    F64,
    /// 16-bit storage (IEEE half of the weight-shifted, scaled populations),
    /// f32 arithmetic: half the memory traffic of f32.
    F16,
}

impl Precision {
    /// Every precision.
    pub const ALL: [Precision; 3] = [Precision::F32, Precision::F64, Precision::F16];
    /// Bytes per population.
    pub const fn bytes(self) -> usize {
        match self {
            Precision::F32 => <f32 as Storage>::BYTES,
            Precision::F64 => <f64 as Storage>::BYTES,
            Precision::F16 => F16s::BYTES,
        }
    }
    /// Name (`f32`, `f64`, `f16`).
    pub const fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
            Precision::F16 => "f16",
        }
    }
    /// Relative rounding unit of the stored values.
    pub const fn epsilon(self) -> f64 {
        match self {
            Precision::F32 => f32::EPSILON as f64,
            Precision::F64 => f64::EPSILON,
            Precision::F16 => 9.765625e-4, // 2^-10
        }
    }
}

/// The collision operator and its parameters besides `tau`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CollisionModel {
    /// Single relaxation time ([`kernels_gpu::Bgk`]).
    Bgk,
    /// Two relaxation times ([`kernels_gpu::Trt`]) with this magic parameter.
    Trt {
        /// `Lambda = (tau+ - 1/2)(tau- - 1/2)`; 3/16 puts bounce-back walls
        /// exactly half way along their links.
        magic: f64,
    },
    /// Multiple relaxation times ([`kernels_gpu::Mrt`]) at the lattice's
    /// published rates ([`kernels_gpu::Mrt::published`]).
    Mrt,
    /// Regularized ([`kernels_gpu::Regularized`]), with a Smagorinsky eddy
    /// viscosity of this constant (0: none).
    Regularized {
        /// Smagorinsky constant `C`.
        smagorinsky: f64,
    },
    /// BGK with a Smagorinsky eddy viscosity ([`kernels_gpu::Smagorinsky`]).
    Smagorinsky {
        /// Smagorinsky constant `C`.
        constant: f64,
    },
    /// Cumulant ([`kernels_gpu::Cumulant`]), bulk rate
    /// [`kernels_gpu::Cumulant::DEFAULT_BULK`], D2Q9 and D3Q27.
    Cumulant,
}

/// The magic parameter TRT takes unless a case sets one.
pub const DEFAULT_MAGIC: f64 = 3.0 / 16.0;

/// The Smagorinsky constant `collision = "smagorinsky"` takes unless a case
/// sets one: 0.1, the usual value for shear flows (0.17 is the isotropic
/// turbulence estimate of Lilly, which damps transition too much).
pub const DEFAULT_SMAGORINSKY: f64 = 0.1;

impl CollisionModel {
    /// The operator `kind` with its default parameters (TRT:
    /// [`DEFAULT_MAGIC`]; Smagorinsky: [`DEFAULT_SMAGORINSKY`]; regularized
    /// without eddy viscosity).
    pub const fn of_kind(kind: CollisionKind) -> Self {
        match kind {
            CollisionKind::Bgk => CollisionModel::Bgk,
            CollisionKind::Trt => CollisionModel::Trt { magic: DEFAULT_MAGIC },
            CollisionKind::Mrt => CollisionModel::Mrt,
            CollisionKind::Regularized => CollisionModel::Regularized { smagorinsky: 0.0 },
            CollisionKind::Smagorinsky => CollisionModel::Smagorinsky { constant: DEFAULT_SMAGORINSKY },
            CollisionKind::Cumulant => CollisionModel::Cumulant,
        }
    }
    /// Which kernels run it.
    pub const fn kind(self) -> CollisionKind {
        match self {
            CollisionModel::Bgk => CollisionKind::Bgk,
            CollisionModel::Trt { .. } => CollisionKind::Trt,
            CollisionModel::Mrt => CollisionKind::Mrt,
            CollisionModel::Regularized { .. } => CollisionKind::Regularized,
            CollisionModel::Smagorinsky { .. } => CollisionKind::Smagorinsky,
            CollisionModel::Cumulant => CollisionKind::Cumulant,
        }
    }
    /// One line for the set-up report: the operator and its parameters.
    pub fn describe(self, lattice: LatticeKind) -> String {
        let les = |c: f64| format!("Smagorinsky eddy viscosity, C = {c}");
        let mut line = match self {
            CollisionModel::Bgk => "bgk".to_string(),
            CollisionModel::Trt { magic } => format!("trt, magic parameter {magic}"),
            CollisionModel::Mrt => {
                let m = Mrt::published(1.0, lattice.name());
                let ghost =
                    if lattice.dimension() == 2 { String::new() } else { format!(", ghost {}", m.rates().ghost) };
                format!(
                    "mrt, rates bulk {}, flux {}, fourth order {}{ghost}",
                    m.rates().bulk,
                    m.rates().flux,
                    m.rates().fourth
                )
            }
            CollisionModel::Regularized { smagorinsky: 0.0 } => "regularized".to_string(),
            CollisionModel::Regularized { smagorinsky } => format!("regularized, {}", les(smagorinsky)),
            CollisionModel::Smagorinsky { constant } => format!("bgk, {}", les(constant)),
            CollisionModel::Cumulant => {
                format!("cumulant, bulk rate {}, higher orders at rate 1", Cumulant::DEFAULT_BULK)
            }
        };
        if !self.kind().stamped() {
            line += " (regularized inlet and outlet cells collide with bgk)";
        }
        line
    }
    /// The Smagorinsky constant, 0 without eddy viscosity.
    pub const fn smagorinsky(self) -> f64 {
        match self {
            CollisionModel::Regularized { smagorinsky: c } | CollisionModel::Smagorinsky { constant: c } => c,
            _ => 0.0,
        }
    }
}

/// A collision operator's kernel parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CollisionParams<T> {
    /// [`kernels_gpu::Bgk`].
    Bgk(Bgk<T>),
    /// [`kernels_gpu::Trt`].
    Trt(Trt<T>),
    /// [`kernels_gpu::Mrt`].
    Mrt(Mrt<T>),
    /// [`kernels_gpu::Regularized`].
    Regularized(Regularized<T>),
    /// [`kernels_gpu::Smagorinsky`].
    Smagorinsky(Smagorinsky<T>),
    /// [`kernels_gpu::Cumulant`].
    Cumulant(Cumulant<T>),
}

/// Runs `$body` with `$c` bound to the operator's parameter struct of
/// `$params` (a [`CollisionParams`]): one arm per operator, so that
/// generic code is stamped for each.
#[macro_export]
macro_rules! with_collision {
    ($params:expr, |$c:ident| $body:expr) => {
        match $params {
            $crate::solver::CollisionParams::Bgk($c) => $body,
            $crate::solver::CollisionParams::Trt($c) => $body,
            $crate::solver::CollisionParams::Mrt($c) => $body,
            $crate::solver::CollisionParams::Regularized($c) => $body,
            $crate::solver::CollisionParams::Smagorinsky($c) => $body,
            $crate::solver::CollisionParams::Cumulant($c) => $body,
        }
    };
}

impl<T: Real> CollisionParams<T> {
    /// The operator's shear rates as TRT's: BGK's `omega` as both (TRT
    /// with equal rates gives BGK's populations bit for bit), and the
    /// molecular `1 / tau` as both for the other operators. Regularized
    /// open boundaries collide with these.
    pub fn rates(self) -> Trt<T> {
        let equal = |omega| Trt { omega_plus: omega, omega_minus: omega };
        match self {
            CollisionParams::Bgk(Bgk { omega }) => equal(omega),
            CollisionParams::Trt(t) => t,
            CollisionParams::Mrt(m) => equal(m.rates().shear),
            CollisionParams::Regularized(r) => equal(r.omega),
            CollisionParams::Smagorinsky(s) => equal(T::ONE / s.les.tau),
            CollisionParams::Cumulant(c) => equal(c.shear),
        }
    }

    /// The operator as the kernels that choose it at run time take it
    /// ([`Chosen`]); `None` for the operators stamped into every kernel.
    pub fn chosen(self) -> Option<Chosen<T>> {
        let z = T::ZERO;
        let les = Les { tau: z, factor: z };
        let mut c = Chosen {
            mrt: Mrt::new(MrtRates { shear: z, bulk: z, flux: z, fourth: z, ghost: z }),
            regularized: Regularized { omega: z, les },
            smagorinsky: Smagorinsky { les },
            cumulant: Cumulant { shear: z, bulk: z },
            kind: 0,
            reserved: 0,
        };
        let kind = match self {
            CollisionParams::Bgk(_) | CollisionParams::Trt(_) => return None,
            CollisionParams::Mrt(m) => {
                c.mrt = m;
                CollisionKind::Mrt
            }
            CollisionParams::Regularized(r) => {
                c.regularized = r;
                CollisionKind::Regularized
            }
            CollisionParams::Smagorinsky(s) => {
                c.smagorinsky = s;
                CollisionKind::Smagorinsky
            }
            CollisionParams::Cumulant(k) => {
                c.cumulant = k;
                CollisionKind::Cumulant
            }
        };
        c.kind = kind as u32;
        Some(c)
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
    /// How the cells are stored: a dense box or a block-sparse grid.
    pub grid: GridLayout,
    /// How the inlets and outlets are updated ([`crate::groups`]).
    pub groups: crate::groups::BoundaryGroups,
    /// Relaxation time `tau` (lattice units); `nu = (tau - 1/2) / 3`.
    pub tau: f64,
    /// Collision operator.
    pub collision: CollisionModel,
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
        if let CollisionModel::Trt { magic } = self.collision {
            if !(magic.is_finite() && magic > 0.0) {
                return Err(Error::Setup(format!(
                    "TRT magic parameter {magic} must be a positive number (3/16 puts walls half way along links)"
                )));
            }
        }
        let c = self.collision.smagorinsky();
        if !(c.is_finite() && c >= 0.0) || (matches!(self.collision, CollisionModel::Smagorinsky { .. }) && c == 0.0) {
            return Err(Error::Setup(format!(
                "Smagorinsky constant {c} must be a positive number (0.1 to 0.2 is usual)"
            )));
        }
        let kind = self.collision.kind();
        if !kind.built_for(self.lattice.q()) {
            return Err(Error::Setup(format!(
                "collision = \"{}\" needs a lattice whose velocities are all of {{-1, 0, 1}}^D, and {} is not: use lattice = \"d3q27\" (or \"d2q9\" in 2D), or another collision",
                kind.name(),
                self.lattice.name().to_uppercase()
            )));
        }
        if self.groups.needs_blocks() && self.grid == GridLayout::Dense {
            return Err(Error::Setup(format!(
                "boundary_groups = \"{}\" groups the blocks of a sparse grid, and the dense box has none: use grid = \"sparse\", or boundary_groups = \"lists\" or \"naive\"",
                self.groups.name()
            )));
        }
        if self.grid == GridLayout::Dense {
            crate::domain::check_dense(self.domain.dims)?;
        }
        if self.lattice.dimension() == 2 && self.domain.dims.nz != 1 {
            return Err(Error::Setup(format!(
                "{} is a 2D lattice but the domain has nz = {}: use nz = 1",
                self.lattice.name().to_uppercase(),
                self.domain.dims.nz
            )));
        }
        if self.lattice.dimension() == 2 && self.force[2] != 0.0 {
            return Err(Error::Setup("a 2D lattice cannot take a force along z".into()));
        }
        if let Initial::Fields { rho, u } = &self.initial {
            if rho.len() != self.domain.dims.cells() || u.len() != self.domain.dims.cells() {
                return Err(Error::Setup("initial fields do not match the domain size".into()));
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
            // The low 32 bits: the parity, and a seed that repeats only after 2^32 steps.
            step: t as u32,
            z_offset: self.domain.z_offset,
            reserved: 0,
            collision: (),
            force: self.force.map(T::from_f64),
            wall_velocity,
        }
    }

    /// The collision operator's kernel parameters.
    pub fn collision_params<T: Real>(&self) -> CollisionParams<T> {
        match self.collision {
            CollisionModel::Bgk => CollisionParams::Bgk(Bgk { omega: T::from_f64(1.0 / self.tau) }),
            CollisionModel::Trt { magic } => {
                let t = Trt::from_tau_and_magic(self.tau, magic);
                CollisionParams::Trt(Trt {
                    omega_plus: T::from_f64(t.omega_plus),
                    omega_minus: T::from_f64(t.omega_minus),
                })
            }
            CollisionModel::Mrt => CollisionParams::Mrt(Mrt::published(self.tau, self.lattice.name()).cast()),
            CollisionModel::Regularized { smagorinsky } => CollisionParams::Regularized(Regularized {
                omega: T::from_f64(1.0 / self.tau),
                les: self.les(smagorinsky),
            }),
            CollisionModel::Smagorinsky { constant } => {
                CollisionParams::Smagorinsky(Smagorinsky { les: self.les(constant) })
            }
            CollisionModel::Cumulant => {
                let c = Cumulant::new(self.tau);
                CollisionParams::Cumulant(Cumulant { shear: T::from_f64(c.shear), bulk: T::from_f64(c.bulk) })
            }
        }
    }

    /// The eddy-viscosity parameters for Smagorinsky constant `c`.
    fn les<T: Real>(&self, c: f64) -> Les<T> {
        Les {
            tau: T::from_f64(self.tau),
            factor: T::from_f64(kernels_gpu::collision::regularized::smagorinsky_factor(c)),
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

    /// Flag bytes as the kernels use them: the user's cell kinds plus the
    /// [`kernels_gpu::flags::NEAR_SOLID`] bit on fluid cells within the
    /// lattice's reach of a solid.
    pub fn kernel_flags(&self) -> Vec<u8> {
        self.domain.kernel_flags(self.lattice.near_wall_radius())
    }

    /// Bytes of device memory the state takes: populations (one or two
    /// copies) and the flag byte.
    pub fn state_bytes(&self) -> usize {
        self.state_bytes_on(self.domain.dims.cells())
    }

    /// [`SolverConfig::state_bytes`] of a grid that stores `cells` cells.
    pub fn state_bytes_on(&self, cells: usize) -> usize {
        let copies = match self.streaming {
            Streaming::EsotericPull => 1,
            Streaming::TwoLattice => 2,
        };
        cells * (copies * self.lattice.q() * self.precision.bytes() + 1)
    }
}

/// How a solver stores its cells (the results are the same bit for bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GridLayout {
    /// Every cell of the box.
    #[default]
    Dense,
    /// Blocks of cells, only those with flow or a moving wall
    /// ([`crate::sparse`]).
    Sparse {
        /// Their shape.
        block: BlockShape,
    },
}

impl GridLayout {
    /// Every layout `lbm bench` measures: dense, and sparse with each block shape.
    pub const ALL: [GridLayout; 4] = [
        GridLayout::Dense,
        GridLayout::Sparse { block: BlockShape::Cube4 },
        GridLayout::Sparse { block: BlockShape::Cube8 },
        GridLayout::Sparse { block: BlockShape::Row32 },
    ];

    /// Name in reports and on the command line: `dense`, `sparse4`,
    /// `sparse8`, `sparse32x4`.
    pub const fn name(self) -> &'static str {
        match self {
            GridLayout::Dense => "dense",
            GridLayout::Sparse { block: BlockShape::Cube4 } => "sparse4",
            GridLayout::Sparse { block: BlockShape::Cube8 } => "sparse8",
            GridLayout::Sparse { block: BlockShape::Row32 } => "sparse32x4",
        }
    }

    /// The kernels this layout runs.
    pub const fn kind(self) -> kernels_gpu::GridKind {
        match self {
            GridLayout::Dense => kernels_gpu::GridKind::Dense,
            GridLayout::Sparse { block: BlockShape::Cube4 } => kernels_gpu::GridKind::Sparse4,
            GridLayout::Sparse { block: BlockShape::Cube8 } => kernels_gpu::GridKind::Sparse8,
            GridLayout::Sparse { block: BlockShape::Row32 } => kernels_gpu::GridKind::Sparse32x4,
        }
    }
}

impl Named for GridLayout {
    const WHAT: &'static str = "grid";
    fn all() -> &'static [Self] {
        &Self::ALL
    }
    fn label(self) -> &'static str {
        self.name()
    }
}

/// The bytes of a population buffer.
pub fn storage_bytes<S: Storage>(v: &[S]) -> &[u8] {
    // SAFETY: `Storage` types are plain old data (the trait's contract).
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// Fills a population buffer from bytes saved by [`storage_bytes`].
pub fn restore_storage<S: Storage>(dst: &mut [S], bytes: &[u8]) -> Result<()> {
    if bytes.len() != std::mem::size_of_val(dst) {
        return Err(Error::Setup(format!(
            "saved state holds {} bytes but this solver needs {}: it was saved from another case",
            bytes.len(),
            std::mem::size_of_val(dst)
        )));
    }
    // SAFETY: sizes checked; `Storage` types accept every bit pattern.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst.as_mut_ptr() as *mut u8, bytes.len()) };
    Ok(())
}

/// Resources and occupancy of a kernel as launched.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KernelReport {
    /// Registers per thread.
    pub registers: u32,
    /// Threads per block.
    pub block_size: u32,
    /// Resident threads per multiprocessor over the hardware maximum.
    pub occupancy: f64,
    /// Local memory per thread, bytes: registers ptxas spilled (0 for
    /// kernels that fit their registers).
    pub local_bytes: u32,
    /// The kernel that updates open cells with the fluid ones, for the
    /// boundary-group variants that run it ([`crate::groups`]).
    pub with_open: Option<Box<KernelReport>>,
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
    /// Force on each object (`objects[k][p]`: the cell at `p` belongs to
    /// object `k`; masks of the whole box, by blocks) by momentum exchange,
    /// lattice units; see [`crate::forces`].
    fn forces(&mut self, objects: &[CellBlocks<bool>]) -> Result<Vec<[f64; 3]>>;
    /// The state a checkpoint needs: the time and the current population
    /// buffer exactly as stored.
    fn save_state(&mut self) -> Result<SavedState>;
    /// Restores a state saved by a solver of the same configuration; the
    /// run then continues bit for bit as if it had never stopped.
    fn restore_state(&mut self, state: &SavedState) -> Result<()>;
    /// Registers and occupancy of the stream-collide kernel (GPU only).
    fn kernel_report(&self) -> Option<KernelReport> {
        None
    }
}

/// Calls `$f::<Lattice, Q, Storage>($args)` for the run-time lattice and
/// precision, over the rows of [`kernels_gpu::for_each_instance`].
#[macro_export]
macro_rules! dispatch {
    ($lattice:expr, $precision:expr, $f:ident $args:tt) => {
        kernels_gpu::for_each_instance!($crate::dispatch_rows; $lattice, $precision, $f $args)
    };
}

/// The match [`dispatch!`] expands to, one arm per instance.
#[doc(hidden)]
#[macro_export]
macro_rules! dispatch_rows {
    ([$lattice:expr, $precision:expr, $f:ident $args:tt] $(($id:ident, $l:ident, $q:literal, $s:ty, $p:ident))*) => {{
        #[allow(unused_imports)]
        use kernels_gpu::{F16s, D2Q9, D3Q19, D3Q27};
        match ($lattice, $precision) {
            $(($crate::solver::LatticeKind::$l, $crate::solver::Precision::$p) => $f::<$l, $q, $s> $args,)*
        }
    }};
}

/// How many values of `a` and `b` differ bit for bit (the check of every
/// "same populations" test: split runs, backends, restores).
pub fn bitwise_differences(a: &[f64], b: &[f64]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x.to_bits() != y.to_bits()).count() + a.len().abs_diff(b.len())
}

/// Fluid mass of the cells `cells` (storage numbers on `grid`, whose flags
/// in storage order are `flags`) of a population buffer in the given
/// scheme and parity, summed in f64 from the shifted populations
/// (`rho = 1 + sum fbar_i`).
pub fn mass_of<L: Lattice<Q>, const Q: usize, S: Storage>(
    config: &SolverConfig,
    grid: &crate::part_grid::PartGrid,
    flags: &[u8],
    f: &[S],
    t: u64,
    cells: &[std::ops::Range<usize>],
) -> f64 {
    use kernels_gpu::stream::{load, neighbours};
    use kernels_gpu::Grid;
    let p = config.step_params::<S::Real>(t);
    assert_eq!(f.len(), Q * flags.len(), "population buffer does not match the grid");
    crate::part_grid::with_grid!(grid, |g| {
        let mut mass = 0.0;
        for n in cells.iter().flat_map(|r| r.start as u32..r.end as u32) {
            if !kernels_gpu::flags::is_flow(flags[n as usize]) {
                continue;
            }
            let nb = neighbours::<L, Q, _>(&g, g.cell_of(n));
            // SAFETY: `f` and `flags` are sized for the grid (asserted above).
            let fi = unsafe { load::<L, Q, S, true, _>(config.streaming, &p, f.as_ptr(), flags.as_ptr(), &nb) };
            mass += 1.0 + fi.iter().map(|v| v.to_f64()).sum::<f64>();
        }
        mass
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_gpu::kernels::INSTANCES;

    /// The lattices and precisions chosen by name are the rows of the kernel
    /// table, no more and no fewer.
    #[test]
    fn named_lattices_and_precisions_are_the_kernel_table() {
        let mut named: Vec<String> = LatticeKind::ALL
            .iter()
            .flat_map(|l| Precision::ALL.iter().map(move |p| format!("{}_{}", l.name(), p.name())))
            .collect();
        let mut table: Vec<String> = INSTANCES.iter().map(|(id, ..)| id.to_string()).collect();
        named.sort();
        table.sort();
        assert_eq!(named, table);
        for l in LatticeKind::ALL {
            let row = INSTANCES.iter().find(|(id, ..)| id.starts_with(&format!("{}_", l.name()))).unwrap();
            assert_eq!(l.q(), row.1, "{}", row.0);
        }
    }

    /// Every name is accepted in any case; anything else is refused with the
    /// names of the values offered.
    #[test]
    fn from_name_accepts_the_names_and_lists_them() {
        fn round_trip<T: Named + PartialEq + std::fmt::Debug>() {
            for &v in T::all() {
                assert_eq!(T::from_name(v.label()).unwrap(), v);
                assert_eq!(T::from_name(&v.label().to_uppercase()).unwrap(), v);
            }
            let e = T::from_name("nope").unwrap_err();
            assert!(matches!(&e, Error::UnknownName { what, name, .. } if *what == T::WHAT && name == "nope"), "{e}");
            let listed: Vec<&str> = T::all().iter().map(|v| v.label()).collect();
            assert!(e.to_string().ends_with(&format!("use {}", listed.join(", "))), "{e}");
        }
        round_trip::<LatticeKind>();
        round_trip::<Precision>();
        round_trip::<Streaming>();
        round_trip::<CollisionKind>();
        round_trip::<OpenScheme>();

        let three_d: Vec<LatticeKind> = LatticeKind::ALL.into_iter().filter(|l| l.dimension() == 3).collect();
        assert_eq!(LatticeKind::from_name_in("D3Q27", &three_d).unwrap(), LatticeKind::D3Q27);
        let e = LatticeKind::from_name_in("d2q9", &three_d).unwrap_err().to_string();
        assert!(e.ends_with("use d3q19, d3q27"), "{e}");
    }

    #[test]
    fn collision_of_kind_has_the_default_parameters() {
        for kind in CollisionKind::ALL {
            assert_eq!(CollisionModel::of_kind(kind).kind(), kind);
        }
        assert_eq!(CollisionModel::of_kind(CollisionKind::Trt), CollisionModel::Trt { magic: DEFAULT_MAGIC });
    }
}
