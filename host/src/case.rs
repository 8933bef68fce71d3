//! Case files (TOML): what a user writes to run a simulation without code.
//! The schema is documented in `docs/case-reference.md`.

use crate::domain::{Domain, Face, FaceBoundary, OpenScheme};
use crate::error::{Error, Result};
use crate::profile::Profile;
use crate::solver::{CollisionModel, GridLayout, Initial, LatticeKind, Named, Precision, SolverConfig, DEFAULT_MAGIC};
use crate::sparse::BlockShape;
use kernels_gpu::{CollisionKind, Dims, Streaming};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Smallest relaxation time accepted: BGK needs tau above 1/2, and within a
/// few thousandths of it is unstable at any practical resolution.
pub const MIN_TAU: f64 = 0.501;

/// Largest lattice Mach number (|u| / c_s) accepted for walls: above it the
/// compressibility error (O(Ma^2)) dominates and BGK turns unstable.
pub const MAX_MACH: f64 = 0.4;

/// A parsed case file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// Lattice, size, steps.
    pub simulation: SimulationSection,
    /// Viscosity or Reynolds number, body force.
    pub physics: PhysicsSection,
    /// What closes each face of the box.
    pub boundaries: BoundariesSection,
    /// Where and how often to write fields.
    #[serde(default)]
    pub output: OutputSection,
    /// Physical units: when present, velocities, viscosity and force in the
    /// case are SI (m/s, m^2/s, m/s^2) and converted to lattice units.
    pub units: Option<UnitsSection>,
    /// Solid objects voxelised onto the grid.
    #[serde(default)]
    pub geometry: Vec<crate::geometry::GeometrySpec>,
    /// Initial state (default: at rest, density 1).
    pub initial: Option<InitialSection>,
    /// Levels finer than the grid, in boxes and around objects.
    pub refinement: Option<RefinementSection>,
}

/// `[refinement]`: levels of cells 2, 4, 8... times finer than
/// `[simulation] size`'s, each a block-sparse grid (see [`crate::levels`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefinementSection {
    /// Number of levels, the grid of `[simulation] size` (level 0) included.
    pub levels: u32,
    /// `"fused"` (default): one stream-collide kernel over each level's
    /// blocks; `"split"`: streaming and collision apart (the baseline).
    #[serde(default = "default_fusion")]
    pub fusion: String,
    /// `[[refinement.box]]`: boxes refined to a level.
    #[serde(default, rename = "box")]
    pub boxes: Vec<RefinedBoxSpec>,
    /// `[[refinement.band]]`: bands around an object or the walls.
    #[serde(default, rename = "band")]
    pub bands: Vec<BandSpec>,
}

/// A box refined to `level`: the cells whose centres lie between `min` and
/// `max` (cells, or metres with `[units]`, as geometry).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefinedBoxSpec {
    /// The level (1 is twice as fine as the grid).
    pub level: u32,
    /// Lower corner.
    pub min: [f64; 3],
    /// Upper corner.
    pub max: [f64; 3],
}

/// Every cell within `distance` of an object (a `[[geometry]]` name) or of
/// the walls (`"walls"`: the faces that are walls or moving walls),
/// refined to `level`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BandSpec {
    /// The level.
    pub level: u32,
    /// A geometry name, or `"walls"`.
    pub around: String,
    /// How far from it (cells, or metres with `[units]`).
    pub distance: f64,
}

/// A refined set-up: what to refine, on blocks of which edge.
#[derive(Clone, Debug)]
pub struct RefinedSetup {
    /// The refinement, objects voxelised on every level.
    pub refinement: crate::levels::Refinement,
    /// Block edge of every level.
    pub edge: u32,
}

fn default_fusion() -> String {
    "fused".into()
}

/// `[initial]`: a uniform initial state.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitialSection {
    /// Velocity (lattice units, or m/s with `[units]`).
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Density relative to the reference density (default 1).
    #[serde(default = "default_one")]
    pub density: f64,
}

fn default_one() -> f64 {
    1.0
}

/// Numbers of a case with their keys, see [`Case::check_finite`].
#[derive(Default)]
struct Numbers(Vec<(String, f64)>);

impl Numbers {
    fn one(&mut self, key: impl Into<String>, v: f64) {
        self.0.push((key.into(), v));
    }
    fn opt(&mut self, key: impl Into<String>, v: Option<f64>) {
        if let Some(v) = v {
            self.one(key, v);
        }
    }
    fn three(&mut self, key: &str, v: [f64; 3]) {
        for (i, x) in v.into_iter().enumerate() {
            self.one(format!("{key}[{i}]"), x);
        }
    }
    fn opt3(&mut self, key: &str, v: Option<[f64; 3]>) {
        if let Some(v) = v {
            self.three(key, v);
        }
    }
}

/// `[units]`: how lattice units map to SI.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnitsSection {
    /// A physical length, m ...
    pub length: f64,
    /// ... spanned by this many cells: dx = length / cells.
    pub cells: f64,
    /// A characteristic velocity, m/s (e.g. the lid speed) ...
    pub velocity: f64,
    /// ... and the lattice velocity it becomes: dt = lattice_velocity dx / velocity.
    /// Sets the Mach number (lattice_velocity sqrt 3); 0.05 to 0.1 is usual.
    pub lattice_velocity: f64,
    /// Fluid density, kg/m^3 (for reports).
    #[serde(default = "default_density")]
    pub density: f64,
}

fn default_density() -> f64 {
    1000.0
}

/// The conversion between lattice and SI units.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct UnitConversion {
    /// Cell size, m.
    pub dx: f64,
    /// Time step, s.
    pub dt: f64,
    /// Density, kg/m^3.
    pub density: f64,
}

/// `[simulation]`
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimulationSection {
    /// `"D2Q9"`, `"D3Q19"` or `"D3Q27"`.
    pub lattice: LatticeKind,
    /// `"f32"` (default) or `"f64"`.
    #[serde(default = "default_precision")]
    pub precision: Precision,
    /// `"esoteric-pull"` (default, one copy of the populations) or `"two-lattice"`.
    #[serde(default = "default_streaming")]
    pub streaming: String,
    /// How cells are stored: `"dense"` (default, every cell of the box),
    /// `"sparse"` (blocks that hold flow) or `"auto"` (sparse when it is
    /// the faster of the two for this geometry).
    #[serde(default = "default_grid")]
    pub grid: String,
    /// Block shape of a sparse grid: `4` or `8` (cubes), or `"32x4"` (32
    /// cells along x, 4 along y and z). Default 4 for `"sparse"`; `"auto"`
    /// tries every shape unless one is given.
    pub block: Option<BlockKey>,
    /// How inlets and outlets are updated: `"auto"` (default: the fastest
    /// measured for the grid, [`crate::groups::BoundaryGroups::auto`]),
    /// `"lists"` (one kernel per inlet or outlet over its cells, after the
    /// bulk), `"naive"` (one kernel for every cell), or on a sparse grid
    /// `"memory"` (boundary blocks stored first, a kernel each for them and
    /// the rest) or `"bitmask"` (a bit per block chooses the kernel).
    /// Results are the same bit for bit; only speed differs.
    #[serde(default = "default_boundary_groups")]
    pub boundary_groups: String,
    /// Cells along x, y, z, boundary layers included (z = 1 for 2D lattices).
    pub size: [u32; 3],
    /// Time steps to run (at most, with `steady_tolerance`).
    pub steps: u64,
    /// Stop early once the velocity field changes by less than this (largest
    /// change of any velocity component between two divergence checks,
    /// relative to the largest speed) : a steady-state criterion.
    pub steady_tolerance: Option<f64>,
    /// Collision operator: `"bgk"` (default, single relaxation time),
    /// `"trt"` (two relaxation times), `"mrt"` (multiple relaxation times),
    /// `"regularized"`, or `"smagorinsky"` (BGK with an eddy viscosity).
    #[serde(default = "default_collision")]
    pub collision: String,
    /// TRT's magic parameter `(tau+ - 1/2)(tau- - 1/2)` (default 3/16, which
    /// puts bounce-back walls half way along their links).
    pub magic: Option<f64>,
    /// Smagorinsky constant of an eddy viscosity on top of BGK (which makes
    /// `collision = "smagorinsky"`) or of the regularized operator; the
    /// default with `collision = "smagorinsky"` is 0.1.
    pub smagorinsky: Option<f64>,
    /// Where to run: `"auto"` (default: the GPU if there is one), `"cpu"` or
    /// `"gpu"`. `lbm run --backend` overrides it.
    #[serde(default)]
    pub backend: BackendRequest,
    /// GPU ordinals to run on (default `[0]`); several split the domain along
    /// z, one partition per entry. `lbm run --device` overrides it with one GPU.
    #[serde(default = "default_devices")]
    pub devices: Vec<usize>,
    /// Halo exchange between GPUs: `"disaggregated"` (default), `"soa"` or
    /// `"no-overlap"` (the baselines); `lbm run --exchange` overrides it.
    #[serde(default = "default_exchange")]
    pub exchange: String,
}

/// The backend a case asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendRequest {
    /// The GPU if one can be used, else the CPU.
    #[default]
    Auto,
    /// The CPU.
    Cpu,
    /// A GPU (an error when there is none).
    Gpu,
}

/// `[physics]`
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhysicsSection {
    /// Kinematic viscosity, lattice units (give this or `reynolds`).
    pub viscosity: Option<f64>,
    /// Reynolds number from the fastest moving wall and the fluid extent
    /// normal to it (give this or `viscosity`).
    pub reynolds: Option<f64>,
    /// Body force density, lattice units.
    #[serde(default)]
    pub force: [f64; 3],
}

/// One face: `"wall"`, `"periodic"`, `{ moving_wall = [ux, uy, uz] }`,
/// `{ velocity_inlet = [ux, uy, uz] }` or `{ pressure_outlet = p }`; inlets
/// and outlets may name their scheme, `scheme = "regularized"`.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum FaceSpec {
    /// `"wall"` or `"periodic"`.
    Named(String),
    /// A moving wall.
    Moving {
        /// Wall velocity.
        moving_wall: [f64; 3],
    },
    /// A velocity inlet.
    Inlet {
        /// Inflow velocity, or a CSV file of velocities over the face.
        velocity_inlet: InletVelocity,
        /// [`OpenScheme`] name (default `"equilibrium"`).
        scheme: Option<String>,
        /// `"uniform"` (default), `"parabolic"` or `"power_law"`
        /// ([`crate::profile::Profile`]).
        profile: Option<String>,
        /// Power law: its exponent.
        exponent: Option<f64>,
        /// Power law: the wall face heights are measured from.
        ground: Option<String>,
        /// Power law: height of the given velocity above the ground (case
        /// length units; default the height of the fluid).
        reference_height: Option<f64>,
        /// Steps over which the inflow ramps up from rest (default 0: none).
        ramp_steps: Option<u32>,
    },
    /// A pressure outlet.
    Outlet {
        /// Gauge pressure (relative to the reference density's pressure).
        pressure_outlet: f64,
        /// [`OpenScheme`] name (default `"equilibrium"`).
        scheme: Option<String>,
        /// Layers of the sponge band in front of the outlet ([`crate::sponge`]; default none).
        sponge_cells: Option<u32>,
        /// The band's strength next to the outlet (default [`DEFAULT_SPONGE_STRENGTH`]).
        sponge_strength: Option<f64>,
        /// The mean outflow the band damps towards (default: the inlets' mean inflow, or rest).
        sponge_velocity: Option<[f64; 3]>,
    },
}

/// An inlet's velocity: one vector, or a CSV file of velocities over the face.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum InletVelocity {
    /// `[ux, uy, uz]`, shaped by the inlet's profile.
    Vector([f64; 3]),
    /// A CSV file (relative to the case file): [`crate::profile::Table::read`].
    File(String),
}

/// A sponge band's strength next to its outlet unless the case gives one:
/// strong enough that a wave crossing a band of 20 cells and back loses
/// all but about 1% of its amplitude, gentle enough that the band's own
/// rise reflects little (see `docs/case-reference.md`).
pub const DEFAULT_SPONGE_STRENGTH: f64 = 0.4;

/// What the `[boundaries]` error message offers.
const FACE_CHOICES: &str = "\"wall\", \"periodic\", { moving_wall = [ux, uy, uz] }, { velocity_inlet = [ux, uy, uz] } or { pressure_outlet = p }";

/// `[boundaries]`
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoundariesSection {
    /// x = 0
    pub x_min: FaceSpec,
    /// x = nx - 1
    pub x_max: FaceSpec,
    /// y = 0
    pub y_min: FaceSpec,
    /// y = ny - 1
    pub y_max: FaceSpec,
    /// z = 0 (default periodic, as 2D cases need)
    #[serde(default = "periodic")]
    pub z_min: FaceSpec,
    /// z = nz - 1
    #[serde(default = "periodic")]
    pub z_max: FaceSpec,
}

impl BoundariesSection {
    /// Each face with its key, in the order of [`crate::domain::Face::ALL`].
    fn faces(&self) -> [(&'static str, &FaceSpec); 6] {
        [
            ("x_min", &self.x_min),
            ("x_max", &self.x_max),
            ("y_min", &self.y_min),
            ("y_max", &self.y_max),
            ("z_min", &self.z_min),
            ("z_max", &self.z_max),
        ]
    }
}

/// `[output]`
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSection {
    /// Directory for VTK files (created if missing).
    #[serde(default = "default_directory")]
    pub directory: PathBuf,
    /// Write fields every this many steps; 0 writes only the final state.
    #[serde(default)]
    pub every: u64,
    /// Write a checkpoint every this many steps (0: only at the end and on
    /// Ctrl-C). The file is `checkpoint.lbm` in the output directory.
    #[serde(default)]
    pub checkpoint_every: u64,
    /// Check for divergence (non-finite values, runaway velocity) every this
    /// many steps; 0 checks only when writing output or checkpoints.
    #[serde(default = "default_check_every")]
    pub check_every: u64,
    /// Whether to write VTK fields at each output (default true).
    #[serde(default = "default_true")]
    pub vtk: bool,
    /// Write VTK only for this box of cells, `{ min = [x, y, z], max = [x, y, z] }`
    /// (inclusive cell indices); whole-domain dumps of large runs are too big to keep.
    pub region: Option<RegionSpec>,
    /// Units of the VTK fields: `"lattice"` (default) or `"physical"` (needs `[units]`).
    #[serde(default = "default_lattice")]
    pub vtk_units: String,
    /// PNG pictures of slices, written at each output.
    #[serde(default, rename = "picture")]
    pub pictures: Vec<PictureSpec>,
    /// Line probes, written as CSV at each output.
    #[serde(default, rename = "probe")]
    pub probes: Vec<crate::probe::ProbeSpec>,
    /// Steps between rows of the forces CSV (0: at each output).
    #[serde(default)]
    pub forces_every: u64,
    /// Steps at the end of the run the summary's mean forces cover (0: the
    /// last half of the run).
    #[serde(default)]
    pub force_window: u64,
}

/// `[[output.picture]]`: a slice picture.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PictureSpec {
    /// `"velocity"` (magnitude) or `"vorticity"` (magnitude).
    pub quantity: crate::picture::Quantity,
    /// Axis normal to the slice: `"x"`, `"y"` or `"z"` (default `"z"`).
    #[serde(default = "default_normal")]
    pub normal: String,
    /// Position of the slice along the normal, as a fraction of the domain (default 0.5).
    #[serde(default = "default_half")]
    pub position: f64,
}

impl PictureSpec {
    /// The slice in cells, or why it is not valid.
    pub fn slice(&self, dims: Dims) -> Result<crate::picture::Slice> {
        let normal = match self.normal.as_str() {
            "x" => 0,
            "y" => 1,
            "z" => 2,
            other => {
                return Err(Error::UnknownName {
                    what: "picture normal",
                    name: other.into(),
                    choices: "\"x\", \"y\" or \"z\"".into(),
                })
            }
        };
        if !(0.0..=1.0).contains(&self.position) {
            return Err(Error::Setup(format!("picture position {} must be a fraction between 0 and 1", self.position)));
        }
        let n = [dims.nx, dims.ny, dims.nz][normal];
        let index = ((self.position * (n - 1) as f64).round() as u32).min(n - 1);
        Ok(crate::picture::Slice { normal, index })
    }
}

/// An inclusive box of cells.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RegionSpec {
    /// Lowest cell.
    pub min: [u32; 3],
    /// Highest cell.
    pub max: [u32; 3],
}

fn default_lattice() -> String {
    "lattice".into()
}

fn default_true() -> bool {
    true
}
fn default_normal() -> String {
    "z".into()
}
fn default_half() -> f64 {
    0.5
}

fn default_check_every() -> u64 {
    1000
}

impl Default for OutputSection {
    fn default() -> Self {
        Self {
            directory: default_directory(),
            every: 0,
            checkpoint_every: 0,
            check_every: default_check_every(),
            forces_every: 0,
            force_window: 0,
            vtk: true,
            region: None,
            vtk_units: default_lattice(),
            pictures: Vec::new(),
            probes: Vec::new(),
        }
    }
}

fn default_precision() -> Precision {
    Precision::F32
}
fn default_streaming() -> String {
    "esoteric-pull".into()
}
fn default_grid() -> String {
    "dense".into()
}

fn default_boundary_groups() -> String {
    "auto".into()
}
fn default_collision() -> String {
    "bgk".into()
}
fn default_devices() -> Vec<usize> {
    vec![0]
}
fn default_exchange() -> String {
    "disaggregated".into()
}
fn default_directory() -> PathBuf {
    PathBuf::from("output")
}
fn periodic() -> FaceSpec {
    FaceSpec::Named("periodic".into())
}

/// `[simulation] block`: a cube's edge, or a shape's name.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum BlockKey {
    /// `block = 8`.
    Edge(u32),
    /// `block = "32x4"` (or `"8"`).
    Name(String),
}

impl BlockKey {
    /// The shape it names.
    fn shape(&self) -> Result<BlockShape> {
        let found = match self {
            BlockKey::Edge(e) => BlockShape::cube(*e),
            BlockKey::Name(n) => BlockShape::ALL.into_iter().find(|b| b.key() == n.trim()),
        };
        found.ok_or_else(|| {
            let given = match self {
                BlockKey::Edge(e) => e.to_string(),
                BlockKey::Name(n) => format!("{n:?}"),
            };
            Error::Setup(format!(
                "block = {given}: a sparse grid's blocks are 4 or 8 cells on a side, or \"32x4\" (32 cells along x, 4 along y and z)"
            ))
        })
    }
}

/// What `[simulation] grid` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GridRequest {
    /// This layout.
    Fixed(GridLayout),
    /// The faster layout for the geometry, sparse with blocks of one of `shapes`.
    Auto {
        /// Block shapes to consider.
        shapes: &'static [BlockShape],
    },
}

/// Parses `[simulation] grid` and `block`.
fn parse_grid(name: &str, block: Option<&BlockKey>) -> Result<GridRequest> {
    let shape = block.map(BlockKey::shape).transpose()?;
    match name.to_ascii_lowercase().as_str() {
        "dense" if block.is_some() => Err(Error::Setup(
            "block applies to grid = \"sparse\" or \"auto\": remove it, or choose one of those".into(),
        )),
        "dense" => Ok(GridRequest::Fixed(GridLayout::Dense)),
        "sparse" => Ok(GridRequest::Fixed(GridLayout::Sparse { block: shape.unwrap_or(BlockShape::DEFAULT) })),
        "auto" => Ok(GridRequest::Auto {
            shapes: match shape {
                None => &BlockShape::ALL,
                Some(b) => {
                    let k = BlockShape::ALL.iter().position(|&s| s == b).expect("a shape of ALL");
                    &BlockShape::ALL[k..=k]
                }
            },
        }),
        _ => Err(Error::UnknownName { what: "grid", name: name.into(), choices: "dense, sparse, auto".into() }),
    }
}

/// Whether the case file at `path` names `model` at its top level (`model
/// = "d2q37"`, `model = "binary-fluid"`; any case): the models other than
/// the isothermal one have case files of their own.
pub fn names_model(path: &Path, model: &str) -> Result<bool> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.into(), source })?;
    let value: toml::Value =
        toml::from_str(&text).map_err(|e| Error::Case { path: path.into(), message: e.to_string() })?;
    Ok(value.get("model").and_then(|m| m.as_str()).is_some_and(|m| m.eq_ignore_ascii_case(model)))
}

/// Parses a streaming-scheme name (any case).
pub fn parse_streaming(name: &str) -> Result<Streaming> {
    // Short forms users wrote before the names settled.
    let name = match name {
        "esoteric" => "esoteric-pull",
        "ab" => "two-lattice",
        other => other,
    };
    Streaming::from_name(name)
}

/// Places an error from the part of the solver that reads the case's entry
/// `key` in the case file `path`.
fn in_case<'a>(path: &'a Path, key: &'static str) -> impl Fn(Error) -> Error + 'a {
    move |source| Error::CaseEntry { path: path.into(), key, source: Box::new(source) }
}

/// A case turned into a solver configuration, with the derived numbers a user should see.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The configuration.
    pub config: SolverConfig,
    /// Kinematic viscosity, lattice units.
    pub viscosity: f64,
    /// Reynolds number, when a wall moves.
    pub reynolds: Option<f64>,
    /// Lattice Mach number of the fastest wall.
    pub mach: f64,
    /// Steps to run.
    pub steps: u64,
    /// Steady-state criterion, see [`SimulationSection::steady_tolerance`].
    pub steady_tolerance: Option<f64>,
    /// Requested backend, see [`SimulationSection::backend`].
    pub backend: BackendRequest,
    /// The GPUs to run on (several: the domain is split along z).
    pub devices: Vec<usize>,
    /// Halo exchange between GPUs.
    pub exchange: crate::multi_gpu::Exchange,
    /// Output settings.
    pub output: OutputSection,
    /// SI conversion, when the case gives `[units]`.
    pub units: Option<UnitConversion>,
    /// The voxelised objects, for force reports.
    pub objects: Vec<crate::geometry::Object>,
    /// Their specifications (reference area and velocity).
    pub geometry: Vec<crate::geometry::GeometrySpec>,
    /// Why `grid = "auto"` chose the grid it did.
    pub grid_choice: Option<String>,
    /// What each inlet with a profile or a ramp and each sponge band does, a line each.
    pub boundary_lines: Vec<String>,
    /// Warnings about the fluid the geometry leaves (closed pockets...).
    pub notes: Vec<String>,
    /// When the case is a porous sample: what the permeability report needs.
    pub porous: Option<PorousSample>,
    /// Levels finer than the grid, if the case asks for them.
    pub refinement: Option<RefinedSetup>,
}

impl Case {
    /// Reads and parses a case file; a number that is NaN or infinite is refused.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.into(), source })?;
        let case: Self =
            toml::from_str(&text).map_err(|e| Error::Case { path: path.into(), message: e.to_string() })?;
        case.check_finite(path)?;
        Ok(case)
    }

    /// Every number the case gives, with its key as messages name it.
    fn numbers(&self) -> Vec<(String, f64)> {
        let mut n = Numbers::default();
        let sim = &self.simulation;
        n.opt("[simulation] steady_tolerance", sim.steady_tolerance);
        let p = &self.physics;
        n.opt("[physics] viscosity", p.viscosity);
        n.opt("[physics] reynolds", p.reynolds);
        n.three("[physics] force", p.force);
        let b = &self.boundaries;
        for (name, face) in b.faces() {
            match face {
                FaceSpec::Named(_) => {}
                FaceSpec::Moving { moving_wall } => n.three(&format!("[boundaries] {name}.moving_wall"), *moving_wall),
                FaceSpec::Inlet { velocity_inlet, exponent, reference_height, .. } => {
                    if let InletVelocity::Vector(v) = velocity_inlet {
                        n.three(&format!("[boundaries] {name}.velocity_inlet"), *v)
                    }
                    n.opt(format!("[boundaries] {name}.exponent"), *exponent);
                    n.opt(format!("[boundaries] {name}.reference_height"), *reference_height);
                }
                FaceSpec::Outlet { pressure_outlet, sponge_strength, sponge_velocity, .. } => {
                    n.one(format!("[boundaries] {name}.pressure_outlet"), *pressure_outlet);
                    n.opt(format!("[boundaries] {name}.sponge_strength"), *sponge_strength);
                    n.opt3(&format!("[boundaries] {name}.sponge_velocity"), *sponge_velocity);
                }
            }
        }
        if let Some(u) = &self.units {
            n.one("[units] length", u.length);
            n.one("[units] cells", u.cells);
            n.one("[units] velocity", u.velocity);
            n.one("[units] lattice_velocity", u.lattice_velocity);
            n.one("[units] density", u.density);
        }
        if let Some(i) = &self.initial {
            n.three("[initial] velocity", i.velocity);
            n.one("[initial] density", i.density);
        }
        for g in &self.geometry {
            let key = |k: &str| format!("[[geometry]] `{}`: {k}", g.name);
            n.opt3(&key("min"), g.min);
            n.opt3(&key("max"), g.max);
            n.opt3(&key("centre"), g.centre);
            n.opt(key("radius"), g.radius);
            n.opt3(&key("base"), g.base);
            n.opt3(&key("axis"), g.axis);
            n.opt(key("length"), g.length);
            n.opt(key("scale"), g.scale);
            n.opt3(&key("rotate"), g.rotate);
            n.opt3(&key("translate"), g.translate);
            n.opt3(&key("moving_wall"), g.moving_wall);
            n.opt(key("reference_area"), g.reference_area);
            n.opt(key("reference_length"), g.reference_length);
            n.opt(key("reference_velocity"), g.reference_velocity);
            n.opt(key("porosity"), g.porosity);
        }
        for (k, picture) in self.output.pictures.iter().enumerate() {
            n.one(format!("[[output.picture]] #{}: position", k + 1), picture.position);
        }
        for probe in &self.output.probes {
            n.three(&format!("[[output.probe]] `{}`: from", probe.name), probe.from);
            n.three(&format!("[[output.probe]] `{}`: to", probe.name), probe.to);
        }
        n.0
    }

    /// Refuses a case with a NaN or an infinity (TOML can write `nan` and
    /// `inf`) anywhere, naming the key: such a value would run and be
    /// reported only later, as a divergence.
    fn check_finite(&self, path: &Path) -> Result<()> {
        match self.numbers().into_iter().find(|(_, v)| !v.is_finite()) {
            None => Ok(()),
            Some((key, v)) => Err(Error::Case {
                path: path.into(),
                message: format!("{key} = {v} is not a finite number: give a finite value"),
            }),
        }
    }

    /// Checks the case and builds the solver configuration.
    /// `size_override` replaces the size of every axis longer than one cell.
    pub fn setup(&self, path: &Path, size_override: Option<u32>) -> Result<Setup> {
        self.check_finite(path)?;
        let bad = |message: String| Error::Case { path: path.into(), message };
        let sim = &self.simulation;
        let mut size = sim.size;
        if let Some(n) = size_override {
            for s in size.iter_mut().filter(|s| **s > 1) {
                *s = n;
            }
        }
        let streaming = parse_streaming(&sim.streaming).map_err(in_case(path, "[simulation] streaming"))?;
        let kind = CollisionKind::from_name(&sim.collision).map_err(in_case(path, "[simulation] collision"))?;
        let collision = match (kind, sim.magic) {
            (CollisionKind::Bgk, None) => CollisionModel::Bgk,
            (CollisionKind::Bgk, Some(_)) => {
                return Err(bad("[simulation] magic applies to collision = \"trt\" only: remove it or use TRT".into()))
            }
            (CollisionKind::Trt, magic) => {
                let magic = magic.unwrap_or(DEFAULT_MAGIC);
                if !(magic.is_finite() && magic > 0.0) {
                    return Err(bad(format!(
                        "[simulation] magic = {magic}: give a positive number (3/16 = 0.1875 puts walls half way along links)"
                    )));
                }
                CollisionModel::Trt { magic }
            }
            (_, Some(_)) => {
                return Err(bad("[simulation] magic applies to collision = \"trt\" only: remove it or use TRT".into()))
            }
            (kind, None) => CollisionModel::of_kind(kind),
        };
        let collision = match (collision, sim.smagorinsky) {
            (_, None) => collision,
            (_, Some(c)) if !(c.is_finite() && c > 0.0) => {
                return Err(bad(format!("[simulation] smagorinsky = {c}: give a positive constant (0.1 to 0.2 is usual)")))
            }
            (CollisionModel::Bgk | CollisionModel::Smagorinsky { .. }, Some(c)) => CollisionModel::Smagorinsky { constant: c },
            (CollisionModel::Regularized { .. }, Some(c)) => CollisionModel::Regularized { smagorinsky: c },
            (other, Some(_)) => {
                return Err(bad(format!(
                    "[simulation] smagorinsky adds an eddy viscosity to collision = \"bgk\", \"smagorinsky\" or \"regularized\", not \"{}\": remove it or change the collision",
                    other.kind().name()
                )))
            }
        };
        if sim.devices.is_empty() {
            return Err(bad("[simulation] devices is empty: give at least one GPU ordinal, e.g. [0]".into()));
        }
        let exchange =
            crate::multi_gpu::Exchange::from_name(&sim.exchange).map_err(in_case(path, "[simulation] exchange"))?;
        let units = match &self.units {
            None => None,
            Some(u) => {
                let positive = |v: f64| v.is_finite() && v > 0.0;
                if ![u.length, u.cells, u.velocity, u.lattice_velocity, u.density].into_iter().all(positive) {
                    return Err(bad(
                        "[units]: length, cells, velocity, lattice_velocity and density must be positive".into()
                    ));
                }
                let dx = u.length / u.cells;
                let dt = u.lattice_velocity * dx / u.velocity;
                if ![dx, dt].into_iter().all(positive) {
                    return Err(bad(format!(
                        "[units]: dx = length / cells = {dx:e} m and dt = lattice_velocity dx / velocity = {dt:e} s \
                         must be positive finite numbers: give length, cells, velocity and lattice_velocity of usual sizes"
                    )));
                }
                Some(UnitConversion { dx, dt, density: u.density })
            }
        };
        // SI to lattice units (identity without [units]).
        let to_lattice_velocity = |v: f64| units.map_or(v, |c| v * c.dt / c.dx);
        // Gauge pressure to lattice density: p = (rho - 1) c_s^2 with c_s^2 = 1/3 (dx/dt)^2.
        let to_lattice_density = |p: f64| 1.0 + 3.0 * units.map_or(p, |c| p / (c.density * (c.dx / c.dt).powi(2)));
        let b = &self.boundaries;
        let mut faces = [FaceBoundary::Wall; 6];
        for (k, (name, spec)) in b.faces().into_iter().enumerate() {
            faces[k] = match spec {
                FaceSpec::Named(s) if s == "wall" => FaceBoundary::Wall,
                FaceSpec::Named(s) if s == "periodic" => FaceBoundary::Periodic,
                FaceSpec::Named(s) => return Err(bad(format!("[boundaries] {name} = \"{s}\": use {FACE_CHOICES}"))),
                FaceSpec::Moving { moving_wall } => FaceBoundary::MovingWall(moving_wall.map(to_lattice_velocity)),
                FaceSpec::Inlet { velocity_inlet, scheme, .. } => {
                    let scheme = open_scheme(scheme).map_err(|e| bad(format!("[boundaries] {name}.scheme: {e}")))?;
                    // A table's velocities come in once the face's cells are known.
                    let u = match velocity_inlet {
                        InletVelocity::Vector(v) => v.map(to_lattice_velocity),
                        InletVelocity::File(_) => [0.0; 3],
                    };
                    FaceBoundary::VelocityInlet(u, scheme)
                }
                FaceSpec::Outlet { pressure_outlet, scheme, .. } => {
                    let scheme = open_scheme(scheme).map_err(|e| bad(format!("[boundaries] {name}.scheme: {e}")))?;
                    let rho = to_lattice_density(*pressure_outlet);
                    if !(rho.is_finite() && (rho - 1.0).abs() < 0.1) {
                        return Err(bad(format!(
                            "[boundaries] {name}: pressure_outlet {pressure_outlet} is a lattice density of {rho:.4}; \
                             keep it within 10% of the reference (1): lower the gauge pressure"
                        )));
                    }
                    FaceBoundary::PressureOutlet(rho, scheme)
                }
            };
        }
        let dims = Dims::new(size[0], size[1], size[2]);
        // Everything a case builds goes by blocks, so a box of 2^32 cells or
        // more is fine on a sparse grid; a dense one is refused here, before
        // any geometry is voxelised.
        let grid_request = parse_grid(&sim.grid, sim.block.as_ref()).map_err(in_case(path, "[simulation] grid"))?;
        if grid_request == GridRequest::Fixed(GridLayout::Dense) {
            crate::domain::check_dense(dims).map_err(in_case(path, "[simulation] size / grid"))?;
        }
        let mut domain = Domain::with_faces(dims, faces).map_err(in_case(path, "[simulation] size / [boundaries]"))?;
        let case_dir = path.parent().unwrap_or(Path::new("."));
        let cell_size = units.map_or(1.0, |u| u.dx);
        let mut boundary_lines = Vec::new();
        const KEYS: [&str; 6] = [
            "[boundaries] x_min",
            "[boundaries] x_max",
            "[boundaries] y_min",
            "[boundaries] y_max",
            "[boundaries] z_min",
            "[boundaries] z_max",
        ];
        for (k, (_, spec)) in b.faces().into_iter().enumerate() {
            let key = KEYS[k];
            let inlet = InletSetup {
                face: Face::ALL[k],
                faces: &faces,
                case_dir,
                cell_size,
                to_lattice_velocity: &to_lattice_velocity,
            };
            if let Some(line) = inlet.apply(spec, &mut domain).map_err(in_case(path, key))? {
                boundary_lines.push(line);
            }
        }
        let periodic: [bool; 3] = std::array::from_fn(|a| faces[2 * a] == FaceBoundary::Periodic);
        let context = crate::geometry::Context { case_dir, cell_size, periodic, dimension: sim.lattice.dimension() };
        let open_faces: Vec<[i32; 3]> = domain.open.iter().map(|g| g.state.normal).collect();
        // The flags without the objects, which refinement levels copy.
        let faces_flags = domain.flags.clone();
        let mut objects = Vec::new();
        for g in &self.geometry {
            objects.push(g.apply(&mut domain, &context, to_lattice_velocity).map_err(in_case(path, "[[geometry]]"))?);
        }
        let shapes = (self.geometry.iter())
            .map(|g| g.interpolated_shape(case_dir))
            .collect::<Result<Vec<_>>>()
            .map_err(in_case(path, "[[geometry]] wall"))?;
        let curved: Vec<crate::curved::CurvedObject> = (self.geometry.iter().zip(&objects).zip(&shapes))
            .filter_map(|((g, o), s)| {
                Some(crate::curved::CurvedObject { name: &g.name, cells: &o.cells, shape: s.as_deref()? })
            })
            .collect();
        // Refinement levels mark their own curved walls, each at its resolution
        // (`crate::levels::LevelGeometry::mark_curved`).
        if !curved.is_empty() && self.refinement.is_none() {
            crate::curved::mark(&mut domain, sim.lattice.velocities(), &curved, cell_size)
                .map_err(in_case(path, "[[geometry]] wall"))?;
        }
        for (k, (_, spec)) in b.faces().into_iter().enumerate() {
            let FaceSpec::Outlet { sponge_cells, sponge_strength, sponge_velocity, scheme, .. } = spec else {
                continue;
            };
            if sponge_cells.is_none() && (sponge_strength.is_some() || sponge_velocity.is_some()) {
                let e = Error::Setup("sponge_strength and sponge_velocity need sponge_cells".into());
                return Err(in_case(path, KEYS[k])(e));
            }
            let Some(cells) = *sponge_cells else { continue };
            if self.refinement.is_some() {
                return Err(bad(format!(
                    "{}: a sponge does not yet run with [refinement]: drop sponge_cells or [refinement]",
                    KEYS[k]
                )));
            }
            let regularized = open_scheme(scheme).is_ok_and(|s| s == OpenScheme::Regularized);
            if regularized && matches!(collision, CollisionModel::Trt { .. }) {
                return Err(bad(format!(
                    "{}: a sponge before a regularized outlet with collision = \"trt\" diverges (measured in a 3D \
                     tunnel, D3Q19 and D3Q27 at tau 0.53, within 2,000 steps; BGK, or TRT with an equilibrium \
                     outlet, run stably): use scheme = \"equilibrium\" on this outlet, or collision = \"bgk\"",
                    KEYS[k]
                )));
            }
            let strength = sponge_strength.unwrap_or(DEFAULT_SPONGE_STRENGTH);
            // The mean inflow over every inlet cell, unless the case says.
            let inflow = || {
                let inlets = domain.open.iter().filter(|g| g.state.kind == crate::domain::OpenKind::VelocityInlet);
                let (sum, count) = inlets
                    .flat_map(|g| (0..g.cells.len()).map(|c| g.velocity(c)))
                    .fold(([0.0; 3], 0usize), |(s, n), v| ([s[0] + v[0], s[1] + v[1], s[2] + v[2]], n + 1));
                sum.map(|s| s / count.max(1) as f64)
            };
            let velocity = sponge_velocity.map_or_else(inflow, |v| v.map(to_lattice_velocity));
            crate::sponge::add(&mut domain, Face::ALL[k], cells, strength, velocity).map_err(in_case(path, KEYS[k]))?;
            let band = domain.sponges.last().expect("just added");
            boundary_lines.push(format!(
                "sponge at {}: {} cells in {cells} layers, strength {strength} next to the outlet, damping towards \
                 [{:.4}, {:.4}, {:.4}] (lattice units)",
                Face::ALL[k].name(),
                band.cells.len(),
                velocity[0],
                velocity[1],
                velocity[2]
            ));
        }
        let force = p_force(&self.physics, units);
        let mut notes = Vec::new();
        if !self.geometry.is_empty() {
            if let Some(normal) = open_faces.iter().find(|n| !domain.open.iter().any(|g| g.state.normal == **n)) {
                let face = b.faces()[open_faces_index(*normal)].0;
                return Err(bad(format!(
                    "[[geometry]] covers every cell of the open face {face}: nothing can flow through it; move or \
                     shrink the geometry (for a voxel image: `offset`), or make {face} a wall"
                )));
            }
            notes = crate::flowpath::check(&domain, sim.lattice, periodic, force)
                .map_err(in_case(path, "[[geometry]] / [boundaries]"))?;
        }
        let porous = (periodic == [true; 3] && force != [0.0; 3] && domain.flags.any(kernels_gpu::flags::is_solid))
            .then(|| {
                let radii: Vec<f64> =
                    objects.iter().filter_map(|o| o.packing.as_ref().map(|p| p.spec.radius)).collect();
                let same = objects.iter().all(|o| o.packing.is_some()) && radii.windows(2).all(|w| w[0] == w[1]);
                PorousSample { diameter: radii.first().filter(|_| same).map(|r| 2.0 * r / cell_size) }
            });
        let speed = domain.max_wall_speed().unwrap_or(0.0);
        let boundary_speed = domain.max_boundary_speed();
        let mach = boundary_speed * 3f64.sqrt();
        if mach > MAX_MACH {
            return Err(bad(format!(
                "moving wall or inlet speed {boundary_speed} (lattice units) is Mach {mach:.2} (above {MAX_MACH}): lower the velocity (0.1 or less is usual) and raise the resolution"
            )));
        }
        let p = &self.physics;
        let knob = if units.is_some() {
            "raise the resolution ([units] cells) or lattice_velocity"
        } else {
            "raise the viscosity, lower the Reynolds number or raise the resolution"
        };
        let (viscosity, reynolds) = match (
            p.viscosity.map(|nu| units.map_or(nu, |c| nu * c.dt / (c.dx * c.dx))),
            p.reynolds,
        ) {
            (Some(nu), None) => {
                let re = lid_length(&faces, size).map(|l| speed * l / nu).filter(|_| speed > 0.0);
                (nu, re)
            }
            (None, Some(re)) => {
                let l = lid_length(&faces, size)
                    .filter(|_| speed > 0.0)
                    .ok_or_else(|| bad("[physics] reynolds needs a moving wall to define the velocity and length (inlets do not: the length is the user's choice): give `viscosity` instead".into()))?;
                if re <= 0.0 {
                    return Err(bad(format!("[physics] reynolds = {re} must be positive")));
                }
                (speed * l / re, Some(re))
            }
            _ => return Err(bad("[physics]: give exactly one of `viscosity` and `reynolds`".into())),
        };
        if !viscosity.is_finite() {
            return Err(bad(format!(
                "[physics]: the viscosity in lattice units is {viscosity}, not a finite number: give a viscosity or Reynolds number of usual size"
            )));
        }
        let tau = 3.0 * viscosity + 0.5;
        if viscosity <= 0.0 || tau < MIN_TAU {
            return Err(bad(format!(
                "viscosity {viscosity:.3e} (lattice units) gives tau = {tau:.6}; the collision needs tau of at least {MIN_TAU} (above 1/2): {knob}"
            )));
        }
        let groups = match sim.boundary_groups.to_ascii_lowercase().as_str() {
            "auto" => None,
            name => Some(
                crate::groups::BoundaryGroups::from_name(name)
                    .map_err(|e| match e {
                        Error::UnknownName { what, name, choices } => {
                            Error::UnknownName { what, name, choices: format!("auto, {choices}") }
                        }
                        e => e,
                    })
                    .map_err(in_case(path, "[simulation] boundary_groups"))?,
            ),
        };
        let mut config = SolverConfig {
            lattice: sim.lattice,
            precision: sim.precision,
            streaming,
            // Until `auto` has chosen, a sparse grid stands in (the dense
            // grid's size limit is checked once the choice is made).
            grid: match grid_request {
                GridRequest::Fixed(layout) => layout,
                GridRequest::Auto { shapes } => GridLayout::Sparse { block: shapes[0] },
            },
            groups: crate::groups::BoundaryGroups::Lists,
            tau,
            collision,
            force,
            domain,
            initial: match &self.initial {
                None => Initial::Uniform { rho: 1.0, u: [0.0; 3] },
                Some(i) => {
                    if !(i.density.is_finite() && i.density > 0.0) {
                        return Err(bad(format!("[initial] density {} must be positive", i.density)));
                    }
                    let u = i.velocity.map(to_lattice_velocity);
                    if (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt() * 3f64.sqrt() > MAX_MACH {
                        return Err(bad(format!("[initial] velocity is above Mach {MAX_MACH}: lower it")));
                    }
                    Initial::Uniform { rho: i.density, u }
                }
            },
        };
        if let Some(k) = config.force.iter().position(|a| !a.is_finite()) {
            return Err(bad(format!(
                "[physics] force[{k}] = {} is {} in lattice units, not a finite number: give a force of usual size",
                p.force[k], config.force[k]
            )));
        }
        config.validate().map_err(in_case(path, "[simulation] / [physics]"))?;
        let grid_choice = match grid_request {
            GridRequest::Fixed(layout) => {
                config.grid = layout;
                None
            }
            GridRequest::Auto { shapes } => {
                let (layout, why) = crate::sparse::choose(&config, shapes, sim.devices.len())
                    .map_err(in_case(path, "[simulation] grid"))?;
                config.grid = layout;
                Some(why)
            }
        };
        config.groups = groups.unwrap_or_else(|| {
            let open = !config.domain.open.is_empty();
            crate::groups::BoundaryGroups::auto(
                config.grid,
                open,
                config.collision.kind(),
                config.lattice.q(),
                config.precision,
                config.streaming,
            )
        });
        config.validate().map_err(in_case(path, "[simulation] boundary_groups"))?;
        if let GridLayout::Sparse { block } = config.grid {
            crate::sparse::SparseLayout::build(&config.domain, block, config.lattice.near_wall_radius(), config.groups)
                .map_err(in_case(path, "[simulation] grid"))?;
        }
        let refinement = match &self.refinement {
            None => None,
            Some(r) => {
                let refined = self
                    .refined(r, &mut config, faces_flags, &objects, case_dir, cell_size, &faces)
                    .map_err(in_case(path, "[refinement]"))?;
                Some(refined)
            }
        };
        for p in &self.output.pictures {
            p.slice(config.domain.dims).map_err(in_case(path, "[[output.picture]]"))?;
        }
        if let Some(tol) = sim.steady_tolerance {
            if !(tol.is_finite() && tol > 0.0) || self.output.check_every == 0 {
                return Err(bad(format!(
                    "[simulation] steady_tolerance = {tol} needs a positive value and [output] check_every > 0 (the interval it is checked over)"
                )));
            }
        }
        if let Some(r) = self.output.region {
            let n = [config.domain.dims.nx, config.domain.dims.ny, config.domain.dims.nz];
            if (0..3).any(|a| r.min[a] > r.max[a] || r.max[a] >= n[a]) {
                return Err(bad(format!(
                    "[output] region {:?} .. {:?} must satisfy min <= max < size {:?} on every axis (cell indices)",
                    r.min, r.max, n
                )));
            }
        }
        match (self.output.vtk_units.as_str(), units) {
            ("lattice", _) | ("physical", Some(_)) => {}
            ("physical", None) => return Err(bad("[output] vtk_units = \"physical\" needs a [units] section".into())),
            (other, _) => {
                return Err(bad(format!("[output] vtk_units = \"{other}\": use \"lattice\" or \"physical\"")))
            }
        }
        let d = config.domain.dims;
        for p in &self.output.probes {
            let inside = |q: [f64; 3]| q.iter().zip([d.nx, d.ny, d.nz]).all(|(v, n)| *v >= 0.0 && *v <= (n - 1) as f64);
            let (from, to) = p.ends(d);
            if !inside(from) || !inside(to) {
                return Err(bad(format!(
                    "[[output.probe]] `{}`: points must lie inside the grid, 0..{} x 0..{} x 0..{} (cell coordinates)",
                    p.name,
                    d.nx - 1,
                    d.ny - 1,
                    d.nz - 1
                )));
            }
            if p.samples < 2 {
                return Err(bad(format!("[[output.probe]] `{}`: samples must be at least 2", p.name)));
            }
        }
        Ok(Setup {
            config,
            viscosity,
            reynolds,
            mach,
            steps: sim.steps,
            steady_tolerance: sim.steady_tolerance,
            backend: sim.backend,
            devices: sim.devices.clone(),
            grid_choice,
            boundary_lines,
            exchange,
            output: self.output.clone(),
            units,
            objects,
            geometry: self.geometry.clone(),
            notes,
            porous,
            refinement,
        })
    }

    /// The refinement `r` asks for on `config`'s grid, its objects
    /// voxelised on each level. Every level is a block-sparse grid (of
    /// `[simulation] block`, 8 by default), whatever `[simulation] grid` says.
    #[allow(clippy::too_many_arguments)]
    fn refined(
        &self,
        r: &RefinementSection,
        config: &mut SolverConfig,
        faces_flags: crate::cell_blocks::CellBlocks<u8>,
        objects: &[crate::geometry::Object],
        case_dir: &Path,
        cell_size: f64,
        faces: &[FaceBoundary; 6],
    ) -> Result<RefinedSetup> {
        use crate::levels::{band, Fusion, LevelGeometry, RefinedBox, Refinement};
        let block = self.simulation.block.as_ref().map(BlockKey::shape).transpose()?.unwrap_or(BlockShape::Cube8);
        let Some(edge) = block.cube_edge() else {
            return Err(Error::Setup(format!(
                "block = \"{}\": refinement levels have cubic blocks: give block = 4 or 8",
                block.key()
            )));
        };
        if self.output.region.is_some() {
            return Err(Error::Setup(
                "[output] region applies to uniform grids; a refined domain writes each level's own cells: remove it"
                    .into(),
            ));
        }
        let fusion = Fusion::ALL.into_iter().find(|f| f.name() == r.fusion).ok_or_else(|| Error::UnknownName {
            what: "fusion",
            name: r.fusion.clone(),
            choices: "\"fused\", \"split\"".into(),
        })?;
        let d = config.domain.dims;
        let n = [d.nx, d.ny, d.nz];
        let mut boxes = Vec::new();
        for b in &r.boxes {
            // Cells whose centres (cell i at i) lie in min..max.
            let lo: [u32; 3] = std::array::from_fn(|a| (b.min[a] / cell_size).ceil().clamp(0.0, n[a] as f64) as u32);
            let hi: [u32; 3] =
                std::array::from_fn(|a| ((b.max[a] / cell_size).floor() + 1.0).clamp(0.0, n[a] as f64) as u32);
            if (0..3).any(|a| lo[a] >= hi[a]) {
                return Err(Error::Setup(format!(
                    "the box {:?} .. {:?} (level {}) holds no cell centre of the domain: give min < max inside the domain",
                    b.min, b.max, b.level
                )));
            }
            boxes.push(RefinedBox { lo, hi, level: b.level });
        }
        for b in &r.bands {
            let distance = b.distance / cell_size;
            if !(distance.is_finite() && distance >= 0.0) {
                return Err(Error::Setup(format!("a band's distance {} must be zero or more", b.distance)));
            }
            if b.around == "walls" {
                let thickness = (distance.ceil() as u32).max(1);
                for (k, face) in faces.iter().enumerate() {
                    let (axis, high) = (k / 2, k % 2 == 1);
                    if !matches!(face, FaceBoundary::Wall | FaceBoundary::MovingWall(_)) || n[axis] == 1 {
                        continue;
                    }
                    let (mut lo, mut hi) = ([0; 3], n);
                    let t = thickness.min(n[axis]);
                    (lo[axis], hi[axis]) = if high { (n[axis] - t, n[axis]) } else { (0, t) };
                    boxes.push(RefinedBox { lo, hi, level: b.level });
                }
                continue;
            }
            let Some(k) = self.geometry.iter().position(|g| g.name == b.around) else {
                let names: Vec<String> = self.geometry.iter().map(|g| format!("\"{}\"", g.name)).collect();
                return Err(Error::Setup(format!(
                    "a band is around \"{}\", which is neither a [[geometry]] name ({}) nor \"walls\"",
                    b.around,
                    if names.is_empty() { "there are none".into() } else { names.join(", ") }
                )));
            };
            boxes.extend(band(&objects[k].cells, distance, b.level, edge));
        }
        let geometry = match objects.is_empty() {
            true => None,
            false => {
                let level_objects = self
                    .geometry
                    .iter()
                    .zip(objects)
                    .map(|(g, o)| g.level_object(o, case_dir))
                    .collect::<Result<Vec<_>>>()?;
                Some(LevelGeometry::new(faces_flags, level_objects, r.levels.max(1), cell_size)?)
            }
        };
        config.grid = GridLayout::Sparse { block };
        config.groups = crate::groups::BoundaryGroups::Lists;
        Ok(RefinedSetup { refinement: Refinement { levels: r.levels, boxes, fusion, geometry }, edge })
    }
}

/// The body force in lattice units.
fn p_force(p: &PhysicsSection, units: Option<UnitConversion>) -> [f64; 3] {
    p.force.map(|a| units.map_or(a, |c| a * c.dt * c.dt / c.dx))
}

/// Index in [`crate::domain::Face::ALL`] of the face whose inward normal is `normal`.
fn open_faces_index(normal: [i32; 3]) -> usize {
    crate::domain::Face::ALL.iter().position(|f| f.inward_normal() == normal).unwrap_or(0)
}

/// A porous sample: a periodic box with solid cells, driven by a body
/// force, whose permeability `lbm run` reports (see [`crate::porous`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PorousSample {
    /// Grain diameter (cells), when every object is a packing of spheres of one radius.
    pub diameter: Option<f64>,
}

/// The open-boundary scheme a face names, [`OpenScheme::Equilibrium`] when none.
/// What shaping an inlet's velocity needs to know about the case.
struct InletSetup<'a> {
    face: Face,
    faces: &'a [FaceBoundary; 6],
    case_dir: &'a Path,
    cell_size: f64,
    to_lattice_velocity: &'a dyn Fn(f64) -> f64,
}

impl InletSetup<'_> {
    /// Gives the inlet `spec` on this face of `domain` its profile and
    /// ramp, and says what it imposes; nothing for a uniform inlet without
    /// a ramp or for another kind of face.
    fn apply(&self, spec: &FaceSpec, domain: &mut Domain) -> Result<Option<String>> {
        let FaceSpec::Inlet { velocity_inlet, profile, exponent, ground, reference_height, ramp_steps, .. } = spec
        else {
            return Ok(None);
        };
        let bad = |m: String| Err(Error::Setup(m));
        let power_law = profile.as_deref() == Some("power_law");
        for (key, given) in [
            ("exponent", exponent.is_some()),
            ("ground", ground.is_some()),
            ("reference_height", reference_height.is_some()),
        ] {
            if given && !power_law {
                return bad(format!("{key} is read only by profile = \"power_law\""));
            }
        }
        let dims = domain.dims;
        let size = [dims.nx, dims.ny, dims.nz];
        let shape = match (velocity_inlet, profile.as_deref()) {
            (InletVelocity::File(file), None) => {
                let table = crate::profile::Table::read(&self.case_dir.join(file), self.cell_size, self.to_lattice_velocity)?;
                Profile::Table(table)
            }
            (InletVelocity::File(_), Some(_)) => {
                return bad("a velocity_inlet file is its own profile: drop `profile`".into())
            }
            (InletVelocity::Vector(_), None | Some("uniform")) => Profile::Uniform,
            (InletVelocity::Vector(_), Some("parabolic")) => Profile::Parabolic,
            (InletVelocity::Vector(_), Some("power_law")) => {
                let Some(exponent) = exponent.filter(|e| *e > 0.0 && *e <= 1.0) else {
                    return bad("profile = \"power_law\" needs an exponent in (0, 1], e.g. exponent = 0.14".into());
                };
                let names = Face::ALL.map(Face::name);
                let Some(ground) = ground.as_deref().and_then(|g| Face::ALL.into_iter().find(|f| f.name() == g)) else {
                    return bad(format!("profile = \"power_law\" needs ground = one of {names:?}: the wall heights are measured from"));
                };
                let height = match reference_height {
                    Some(h) if *h > 0.0 => h / self.cell_size,
                    Some(h) => return bad(format!("reference_height = {h}: give a positive height above the ground")),
                    // The fluid between the ground wall and the opposite face's wall.
                    None => size[ground.axis()] as f64 - 2.0,
                };
                Profile::PowerLaw { exponent, ground, height }
            }
            (_, Some(other)) => {
                return bad(format!("profile = \"{other}\": use \"uniform\", \"parabolic\" or \"power_law\", or a CSV file as velocity_inlet"))
            }
        };
        let ramp = ramp_steps.unwrap_or(0);
        let normal = self.face.inward_normal();
        let Some(group) = domain.open.iter_mut().find(|g| g.state.normal == normal) else {
            return Ok(None);
        };
        group.state.ramp_steps = ramp;
        if shape == Profile::Uniform {
            return Ok((ramp > 0).then(|| format!("inlet {}: uniform, ramped up over {ramp} steps", self.face.name())));
        }
        let applied = shape.apply(self.face, self.faces, dims, group.state.velocity, &group.cells)?;
        group.velocities = applied.velocities;
        if let Profile::Table(_) = shape {
            group.state.velocity = applied.mean;
        }
        let fmt = |u: [f64; 3]| format!("[{:.4}, {:.4}, {:.4}]", u[0], u[1], u[2]);
        let mut line = format!(
            "inlet {}: {} profile, mean velocity {} (lattice units)",
            self.face.name(),
            shape.name(),
            fmt(applied.mean)
        );
        if applied.outside > 0 {
            line += &format!(", {} cells outside the table take its edge values", applied.outside);
        }
        if ramp > 0 {
            line += &format!(", ramped up over {ramp} steps");
        }
        Ok(Some(line))
    }
}

fn open_scheme(name: &Option<String>) -> Result<OpenScheme> {
    name.as_deref().map_or(Ok(OpenScheme::default()), OpenScheme::from_name)
}

/// Fluid cells between the moving wall and the face opposite to it.
fn lid_length(faces: &[FaceBoundary; 6], size: [u32; 3]) -> Option<f64> {
    let k = faces.iter().position(|f| matches!(f, FaceBoundary::MovingWall(_)))?;
    let axis = k / 2;
    let walls = faces[2 * axis..2 * axis + 2].iter().filter(|f| **f != FaceBoundary::Periodic).count();
    Some((size[axis] as usize - walls) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::OpenKind;
    use crate::image::ImageError;
    use kernels_gpu::CellKind;

    const CAVITY: &str = r#"
[simulation]
lattice = "D2Q9"
size = [34, 34, 1]
steps = 10
[physics]
reynolds = 100.0
[boundaries]
x_min = "wall"
x_max = "wall"
y_min = "wall"
y_max = { moving_wall = [0.1, 0.0, 0.0] }
"#;

    fn setup(text: &str) -> Result<Setup> {
        let case: Case =
            toml::from_str(text).map_err(|e| Error::Case { path: "t.toml".into(), message: e.to_string() })?;
        case.setup(Path::new("t.toml"), None)
    }

    #[test]
    fn boundary_groups_are_chosen_by_name_and_block_variants_need_blocks() {
        use crate::groups::BoundaryGroups;
        let with = |keys: &str| setup(&CAVITY.replace("steps = 10", &format!("steps = 10\n{keys}")));
        // Auto: the cavity has no inlet, so the bulk kernel alone.
        assert_eq!(setup(CAVITY).unwrap().config.groups, BoundaryGroups::Lists);
        let channel = CAVITY
            .replace("x_min = \"wall\"", "x_min = { velocity_inlet = [0.05, 0.0, 0.0] }")
            .replace("x_max = \"wall\"", "x_max = { pressure_outlet = 0.0 }");
        assert_eq!(setup(&channel).unwrap().config.groups, BoundaryGroups::Naive);
        // On a sparse grid by storage, block shape and scheme (`BoundaryGroups::auto`).
        let sparse_channel =
            |keys: &str| channel.replace("steps = 10", &format!("steps = 10\ngrid = \"sparse\"\n{keys}"));
        for (keys, want) in [
            ("", BoundaryGroups::Naive),
            ("block = 8", BoundaryGroups::Memory),
            ("block = 8\nstreaming = \"two-lattice\"", BoundaryGroups::Naive),
            ("precision = \"f16\"", BoundaryGroups::Memory),
        ] {
            assert_eq!(setup(&sparse_channel(keys)).unwrap().config.groups, want, "{keys}");
        }
        assert_eq!(with("boundary_groups = \"naive\"").unwrap().config.groups, BoundaryGroups::Naive);
        let sparse = with("grid = \"sparse\"\nboundary_groups = \"Bitmask\"").unwrap();
        assert_eq!(
            (sparse.config.grid, sparse.config.groups),
            (GridLayout::Sparse { block: BlockShape::Cube4 }, BoundaryGroups::Bitmask)
        );
        let e = with("boundary_groups = \"memory\"").unwrap_err().to_string();
        assert!(e.contains("boundary_groups") && e.contains("grid = \"sparse\""), "{e}");
        let e = with("boundary_groups = \"tiles\"").unwrap_err();
        assert!(format!("{e:?} {e}").contains("auto, lists, naive, memory, bitmask"), "{e}");
    }

    /// A 12 x 12 tube along z, periodic and driven by a body force, walled
    /// in by four boxes that fill the rest of a box of 4.4 billion cells.
    fn huge_tube(grid: &str) -> String {
        let walls = [
            ("left", [0, 0], [2041, 4095]),
            ("right", [2054, 0], [4095, 4095]),
            ("front", [2042, 0], [2053, 2041]),
            ("back", [2042, 2054], [2053, 4095]),
        ]
        .map(|(name, lo, hi)| {
            format!(
                "[[geometry]]\nname = \"{name}\"\nshape = \"box\"\nmin = [{}, {}, 0]\nmax = [{}, {}, 263]\n",
                lo[0], lo[1], hi[0], hi[1]
            )
        });
        format!(
            "[simulation]\nlattice = \"D3Q19\"\nsize = [4096, 4096, 264]\nsteps = 10\ngrid = \"{grid}\"\n\
             [physics]\nviscosity = 0.1\nforce = [0.0, 0.0, 1e-5]\n\
             [boundaries]\nx_min = \"wall\"\nx_max = \"wall\"\ny_min = \"wall\"\ny_max = \"wall\"\n{}",
            walls.concat()
        )
    }

    /// A box of 2^32 cells or more is refused on a dense grid, with the
    /// dense grid's reason, before any geometry is built; a sparse grid
    /// takes it, and `auto` picks sparse and says why.
    #[test]
    fn a_box_of_2_32_cells_or_more_is_refused_dense_and_taken_sparse() {
        let e = setup(&huge_tube("dense")).unwrap_err().to_string();
        assert!(
            e.contains("4429185024 cells is more than a dense grid holds") && e.contains("grid = \"sparse\""),
            "{e}"
        );
        assert!(e.contains("t.toml") && e.contains("[simulation] size / grid"), "{e}");
        for grid in ["sparse", "auto"] {
            let s = setup(&huge_tube(grid)).unwrap_or_else(|e| panic!("{grid}: {e}"));
            assert!(matches!(s.config.grid, GridLayout::Sparse { .. }), "{grid}: {:?}", s.config.grid);
            assert_eq!(s.config.domain.dims.cells(), 4096 * 4096 * 264);
            assert_eq!(s.config.domain.fluid_cells(), 12 * 12 * 264);
            let walled: usize = s.objects.iter().map(|o| o.cells.count(|c| c)).sum();
            assert_eq!(walled, 4096 * 4096 * 264 - 12 * 12 * 264);
            assert!(s.objects.iter().all(|o| o.notes.is_empty()), "{grid}");
            match grid {
                "auto" => {
                    assert!(s.grid_choice.as_deref().unwrap().starts_with("grid auto: sparse"), "{:?}", s.grid_choice)
                }
                _ => assert_eq!(s.grid_choice, None),
            }
        }
    }

    #[test]
    fn the_grid_is_chosen_by_name_and_auto_says_why() {
        let with = |keys: &str| setup(&CAVITY.replace("steps = 10", &format!("steps = 10\n{keys}")));
        assert_eq!(setup(CAVITY).unwrap().config.grid, GridLayout::Dense);
        let sparse = |block| GridLayout::Sparse { block };
        assert_eq!(with("grid = \"sparse\"").unwrap().config.grid, sparse(BlockShape::Cube4));
        assert_eq!(with("grid = \"Sparse\"\nblock = 8").unwrap().config.grid, sparse(BlockShape::Cube8));
        assert_eq!(with("grid = \"sparse\"\nblock = \"32x4\"").unwrap().config.grid, sparse(BlockShape::Row32));
        for (keys, says) in [
            ("grid = \"tree\"", "dense, sparse, auto"),
            ("grid = \"dense\"\nblock = 4", "block applies to"),
            ("grid = \"sparse\"\nblock = 5", "4 or 8"),
            ("grid = \"sparse\"\nblock = \"16x4\"", "\"32x4\" (32 cells along x"),
        ] {
            let e = with(keys).unwrap_err().to_string();
            assert!(e.contains("[simulation] grid") || e.contains(says), "{keys}: {e}");
            assert!(format!("{e:?} {e}").contains(says), "{keys}: {e}");
        }
        // The open cavity is all flow: auto keeps it dense, and says so.
        let dense = with("grid = \"auto\"").unwrap();
        assert_eq!(dense.config.grid, GridLayout::Dense);
        assert!(dense.grid_choice.as_deref().unwrap().starts_with("grid auto: dense"));
        // A solid filling most of it leaves few blocks: auto takes sparse.
        let lump = "[[geometry]]\nname = \"lump\"\nshape = \"box\"\nmin = [1.0, 1.0, 0.0]\nmax = [30.0, 30.0, 0.0]";
        let text = format!("{}\n{lump}", CAVITY.replace("steps = 10", "steps = 10\ngrid = \"auto\""));
        let sparse = setup(&text).unwrap();
        assert!(matches!(sparse.config.grid, GridLayout::Sparse { .. }), "{:?}", sparse.grid_choice);
        assert!(sparse.grid_choice.as_deref().unwrap().starts_with("grid auto: sparse"));
    }

    #[test]
    fn reynolds_sets_the_viscosity() {
        let s = setup(CAVITY).unwrap();
        assert!((s.viscosity - 0.1 * 32.0 / 100.0).abs() < 1e-15);
        assert_eq!(s.config.domain.fluid_cells(), 32 * 32);
    }

    #[test]
    fn si_units_convert_to_lattice_units() {
        // 1 m cavity over 32 cells, lid 1 m/s -> lattice 0.1: dx = 1/32 m, dt = 0.1 dx / 1 = dx / 10.
        let si = CAVITY.replace("reynolds = 100.0", "viscosity = 0.01").replace("[0.1, 0.0, 0.0]", "[1.0, 0.0, 0.0]")
            + "[units]\nlength = 1.0\ncells = 32\nvelocity = 1.0\nlattice_velocity = 0.1\n";
        let s = setup(&si).unwrap();
        let c = s.units.unwrap();
        assert!((c.dx - 1.0 / 32.0).abs() < 1e-15 && (c.dt - c.dx / 10.0).abs() < 1e-15);
        assert!((s.config.domain.wall_velocities[0][0] - 0.1).abs() < 1e-15, "lid in lattice units");
        // nu_lb = nu dt / dx^2 = 0.01 * (1/320) * 1024 = 0.032, the same as Re = U L / nu = 100 at 32 cells.
        assert!((s.viscosity - 0.032).abs() < 1e-12);
        assert!((s.reynolds.unwrap() - 100.0).abs() < 1e-9);
        let unstable = si.replace("viscosity = 0.01", "viscosity = 1e-9");
        let e = setup(&unstable).unwrap_err().to_string();
        assert!(e.contains("tau") && e.contains("lattice_velocity"), "{e}");
    }

    #[test]
    fn inlet_profiles_and_ramps_are_read_and_refused_with_a_reason() {
        let channel = CAVITY
            .replace("reynolds = 100.0", "viscosity = 0.1")
            .replace("x_max = \"wall\"", "x_max = { pressure_outlet = 0.0 }")
            .replace("y_max = { moving_wall = [0.1, 0.0, 0.0] }", "y_max = \"wall\"");
        let with = |inlet: &str| setup(&channel.replace("x_min = \"wall\"", &format!("x_min = {{ {inlet} }}")));
        // Parabolic across y (z is periodic): zero at the walls, the peak in the middle.
        let s = with("velocity_inlet = [0.06, 0.0, 0.0], profile = \"parabolic\", ramp_steps = 500").unwrap();
        let inlet = &s.config.domain.open[0];
        assert_eq!((inlet.cells.len(), inlet.velocities.len(), inlet.state.ramp_steps), (32, 32, 500));
        let peak = inlet.velocities.iter().map(|v| v[0]).fold(0.0, f64::max);
        assert!(peak < 0.06 && peak > 0.06 * (1.0 - 1e-3), "{peak}");
        assert!(inlet.velocities.iter().all(|v| v[0] > 0.0 && v[1] == 0.0));
        assert!(
            s.boundary_lines[0].starts_with("inlet x_min: parabolic profile, mean velocity [0.0400"),
            "{:?}",
            s.boundary_lines
        );
        assert!(s.boundary_lines[0].ends_with("ramped up over 500 steps"), "{:?}", s.boundary_lines);
        // A uniform inlet without a ramp has no profile and says nothing.
        let s = with("velocity_inlet = [0.06, 0.0, 0.0]").unwrap();
        assert!(s.config.domain.open[0].velocities.is_empty() && s.boundary_lines.is_empty());
        // Power law from the y_min wall, the given speed at 8 cells up.
        let law = "profile = \"power_law\", exponent = 0.25, ground = \"y_min\", reference_height = 7.5";
        let s = with(&format!("velocity_inlet = [0.04, 0.0, 0.0], {law}")).unwrap();
        let v = &s.config.domain.open[0].velocities;
        assert_eq!(v[7][0], 0.04, "y = 8 is 7.5 cells above the wall at 0.5: {:?}", v[7]);
        // The Mach check sees the profile's fastest cell, above the reference height.
        let e = with(&format!("velocity_inlet = [0.2, 0.0, 0.0], {law}")).unwrap_err().to_string();
        assert!(e.contains("Mach"), "{e}");
        for (inlet, why) in [
            ("velocity_inlet = [0.04, 0.0, 0.0], exponent = 0.2", "exponent is read only by profile = \"power_law\""),
            ("velocity_inlet = [0.04, 0.0, 0.0], profile = \"cubic\"", "profile = \"cubic\": use"),
            ("velocity_inlet = [0.04, 0.0, 0.0], profile = \"power_law\", ground = \"y_min\"", "needs an exponent"),
            ("velocity_inlet = [0.04, 0.0, 0.0], profile = \"power_law\", exponent = 0.2", "needs ground"),
            ("velocity_inlet = \"missing.csv\"", "missing.csv: cannot read it"),
        ] {
            let e = with(inlet).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("[boundaries] x_min"), "{inlet}: {e}");
        }
    }

    #[test]
    fn sponges_are_read_and_refused_with_a_reason() {
        let channel = CAVITY
            .replace("reynolds = 100.0", "viscosity = 0.1")
            .replace("x_min = \"wall\"", "x_min = { velocity_inlet = [0.04, 0.0, 0.0], profile = \"parabolic\" }")
            .replace("y_max = { moving_wall = [0.1, 0.0, 0.0] }", "y_max = \"wall\"");
        let with = |outlet: &str| setup(&channel.replace("x_max = \"wall\"", &format!("x_max = {{ {outlet} }}")));
        let s = with("pressure_outlet = 0.0, sponge_cells = 8").unwrap();
        let band = &s.config.domain.sponges[0];
        assert_eq!(band.cells.len(), 8 * 32, "8 layers of the 32 rows between the walls");
        // Towards the parabolic inlet's mean inflow, at the default strength next to the outlet.
        let mean = 0.04 * (2.0 / 3.0 + 1.0 / (3.0 * 32.0 * 32.0));
        assert!((band.velocity[0] - mean).abs() < 1e-15 && band.velocity[1] == 0.0, "{:?}", band.velocity);
        assert_eq!(band.strength.iter().cloned().fold(0.0, f64::max), DEFAULT_SPONGE_STRENGTH);
        assert!(
            s.boundary_lines.iter().any(|l| l.starts_with("sponge at x_max: 256 cells in 8 layers")),
            "{:?}",
            s.boundary_lines
        );
        let s =
            with("pressure_outlet = 0.0, sponge_cells = 8, sponge_strength = 0.2, sponge_velocity = [0.01, 0.0, 0.0]")
                .unwrap();
        assert_eq!(s.config.domain.sponges[0].velocity, [0.01, 0.0, 0.0]);
        for (outlet, why) in [
            ("pressure_outlet = 0.0, sponge_strength = 0.2", "need sponge_cells"),
            ("pressure_outlet = 0.0, sponge_cells = 8, sponge_strength = 2.0", "sponge_strength = 2"),
            ("pressure_outlet = 0.0, sponge_cells = 40", "sponge_cells = 40 on x_max: give 1 to 32 layers"),
        ] {
            let e = with(outlet).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains("[boundaries] x_max"), "{outlet}: {e}");
        }
        let trt = channel.replace("steps = 10", "steps = 10\ncollision = \"trt\"");
        let with = |outlet: &str| setup(&trt.replace("x_max = \"wall\"", &format!("x_max = {{ {outlet} }}")));
        assert!(with("pressure_outlet = 0.0, sponge_cells = 8").is_ok());
        let e = with("pressure_outlet = 0.0, scheme = \"regularized\", sponge_cells = 8").unwrap_err().to_string();
        assert!(e.contains("use scheme = \"equilibrium\"") && e.contains("[boundaries] x_max"), "{e}");
    }

    #[test]
    fn inlet_profiles_come_from_csv_files_beside_the_case() {
        let dir = Scratch::new("profile");
        dir.file("inlet.csv", b"y,ux,uy\n0.5,0.0,0.001\n32.5,0.064,0.001\n");
        let text = CAVITY
            .replace("reynolds = 100.0", "viscosity = 0.1")
            .replace("x_min = \"wall\"", "x_min = { velocity_inlet = \"inlet.csv\" }")
            .replace("x_max = \"wall\"", "x_max = { pressure_outlet = 0.0 }")
            .replace("y_max = { moving_wall = [0.1, 0.0, 0.0] }", "y_max = \"wall\"");
        let path = dir.0.join("case.toml");
        std::fs::write(&path, text).unwrap();
        let s = Case::load(&path).unwrap().setup(&path, None).unwrap();
        let inlet = &s.config.domain.open[0];
        // Linear in y from the wall at 0.5: u = 0.002 (y - 0.5), uy = 0.001.
        for (&n, v) in inlet.cells.iter().zip(&inlet.velocities) {
            let y = s.config.domain.dims.coords(n as u32).1 as f64;
            assert!((v[0] - 0.002 * (y - 0.5)).abs() < 1e-15 && v[1] == 0.001 && v[2] == 0.0, "{y}: {v:?}");
        }
        assert!((inlet.state.velocity[0] - 0.032).abs() < 1e-15, "the mean: {:?}", inlet.state.velocity);
        assert!(s.boundary_lines[0].starts_with("inlet x_min: table profile"), "{:?}", s.boundary_lines);
    }

    #[test]
    fn inlet_and_outlet_faces() {
        let channel = CAVITY
            .replace("reynolds = 100.0", "viscosity = 0.1")
            .replace("x_min = \"wall\"", "x_min = { velocity_inlet = [0.05, 0.0, 0.0] }")
            .replace("x_max = \"wall\"", "x_max = { pressure_outlet = 0.003 }")
            .replace("y_max = { moving_wall = [0.1, 0.0, 0.0] }", "y_max = \"wall\"");
        let s = setup(&channel).unwrap();
        let d = &s.config.domain;
        assert_eq!(d.open.len(), 2);
        let (inlet, outlet) = (d.open[0].state, d.open[1].state);
        assert_eq!((inlet.velocity, inlet.normal), ([0.05, 0.0, 0.0], [1, 0, 0]));
        assert_eq!((inlet.kind, outlet.kind), (OpenKind::VelocityInlet, OpenKind::PressureOutlet));
        assert!((outlet.density - 1.009).abs() < 1e-15, "rho = 1 + 3 p");
        assert_eq!(outlet.normal, [-1, 0, 0]);
        assert_eq!(CellKind::from_flag(d.flags[d.dims.index(0, 5, 0)]), Some(CellKind::Open));
        assert!(d.open[0].cells.contains(&d.dims.index(0, 5, 0)));
        assert!(d.open[1].cells.contains(&d.dims.index(33, 5, 0)));
        assert!(!d.open[0].cells.contains(&d.dims.index(0, 0, 0)), "the wall took the edge cell");
        assert_eq!(d.flags[d.dims.index(0, 0, 0)], CellKind::Wall.to_flag(), "walls cover the inlet's edges");
        assert_eq!(d.fluid_cells(), 34 * 32, "inlet and outlet cells are updated");
        let fast = channel.replace("[0.05, 0.0, 0.0] }", "[0.3, 0.0, 0.0] }");
        assert!(setup(&fast).unwrap_err().to_string().contains("Mach"));
        let reynolds = channel.replace("viscosity = 0.1", "reynolds = 10.0");
        assert!(setup(&reynolds).unwrap_err().to_string().contains("viscosity"));
        let overpressure = channel.replace("pressure_outlet = 0.003", "pressure_outlet = 0.1");
        assert!(setup(&overpressure).unwrap_err().to_string().contains("pressure_outlet"));
        // Equilibrium unless a face names its scheme.
        assert_eq!((inlet.scheme, outlet.scheme), (OpenScheme::Equilibrium, OpenScheme::Equilibrium));
        let regularized = channel.replace("0.0, 0.0] }", "0.0, 0.0], scheme = \"regularized\" }");
        let d = setup(&regularized).unwrap().config.domain;
        assert_eq!(
            (d.open[0].state.scheme, d.open[1].state.scheme),
            (OpenScheme::Regularized, OpenScheme::Equilibrium)
        );
        let both = regularized.replace("0.003 }", "0.003, scheme = \"Regularized\" }");
        assert_eq!(setup(&both).unwrap().config.domain.open[1].state.scheme, OpenScheme::Regularized);
        let typo = channel.replace("0.003 }", "0.003, scheme = \"regularised\" }");
        let e = setup(&typo).unwrap_err().to_string();
        assert!(e.contains("x_max.scheme") && e.contains("equilibrium, regularized"), "{e}");
    }

    #[test]
    fn collision_backend_and_devices() {
        let s = setup(CAVITY).unwrap();
        assert_eq!((s.backend, s.devices.as_slice()), (BackendRequest::Auto, &[0][..]));
        let gpu = CAVITY.replace("steps = 10", "steps = 10\nbackend = \"gpu\"\ndevices = [3]\ncollision = \"BGK\"");
        let s = setup(&gpu).unwrap();
        assert_eq!((s.backend, s.devices.as_slice()), (BackendRequest::Gpu, &[3][..]));
        let unknown = CAVITY.replace("steps = 10", "steps = 10\ncollision = \"lbgk\"");
        let err = setup(&unknown).unwrap_err().to_string();
        assert!(
            err.contains("[simulation] collision") && err.contains("bgk, trt, mrt, regularized, smagorinsky, cumulant"),
            "{err}"
        );
        let mrt = CAVITY.replace("steps = 10", "steps = 10\ncollision = \"MRT\"");
        assert_eq!(setup(&mrt).unwrap().config.collision, CollisionModel::Mrt);
        // The cumulant operator needs velocities all of {-1, 0, 1}^D: D2Q9, D3Q27, not D3Q19.
        let cumulant = CAVITY.replace("steps = 10", "steps = 10\ncollision = \"cumulant\"");
        assert_eq!(setup(&cumulant).unwrap().config.collision, CollisionModel::Cumulant);
        let d3q19 = cumulant.replace("\"D2Q9\"", "\"D3Q19\"").replace("[34, 34, 1]", "[12, 12, 12]");
        let err = setup(&d3q19).unwrap_err().to_string();
        assert!(err.contains("collision = \"cumulant\"") && err.contains("lattice = \"d3q27\""), "{err}");
        // The Smagorinsky constant: on BGK it makes the smagorinsky operator, on
        // the regularized one an option; TRT and MRT refuse it.
        let les = |c: &str| CAVITY.replace("steps = 10", &format!("steps = 10\n{c}"));
        let model = |c: &str| setup(&les(c)).map(|s| s.config.collision).map_err(|e| e.to_string());
        assert_eq!(model("collision = \"smagorinsky\""), Ok(CollisionModel::Smagorinsky { constant: 0.1 }));
        assert_eq!(model("smagorinsky = 0.17"), Ok(CollisionModel::Smagorinsky { constant: 0.17 }));
        assert_eq!(
            model("collision = \"regularized\"\nsmagorinsky = 0.12"),
            Ok(CollisionModel::Regularized { smagorinsky: 0.12 })
        );
        assert!(model("collision = \"mrt\"\nsmagorinsky = 0.1").unwrap_err().contains("not \"mrt\""));
        assert!(model("smagorinsky = -0.1").unwrap_err().contains("positive constant"));
        assert!(model("collision = \"mrt\"\nmagic = 0.2").unwrap_err().contains("magic applies"));
        let trt = CAVITY.replace("steps = 10", "steps = 10\ncollision = \"trt\"");
        assert_eq!(setup(&trt).unwrap().config.collision, CollisionModel::Trt { magic: 3.0 / 16.0 });
        let magic = CAVITY.replace("steps = 10", "steps = 10\ncollision = \"TRT\"\nmagic = 0.25");
        assert_eq!(setup(&magic).unwrap().config.collision, CollisionModel::Trt { magic: 0.25 });
        let stray = CAVITY.replace("steps = 10", "steps = 10\nmagic = 0.25");
        assert!(setup(&stray).unwrap_err().to_string().contains("magic applies to collision = \"trt\" only"));
        let negative = CAVITY.replace("steps = 10", "steps = 10\ncollision = \"trt\"\nmagic = -1.0");
        assert!(setup(&negative).unwrap_err().to_string().contains("positive"));
        let two = CAVITY.replace("steps = 10", "steps = 10\ndevices = [0, 1]\nexchange = \"soa\"");
        let s = setup(&two).unwrap();
        assert_eq!((s.devices.as_slice(), s.exchange), (&[0, 1][..], crate::multi_gpu::Exchange::Soa));
        let bad_exchange = CAVITY.replace("steps = 10", "steps = 10\nexchange = \"mpi\"");
        assert!(setup(&bad_exchange).unwrap_err().to_string().contains("no-overlap"));
        let none = CAVITY.replace("steps = 10", "steps = 10\ndevices = []");
        assert!(setup(&none).unwrap_err().to_string().contains("devices is empty"));
        let tpu = CAVITY.replace("steps = 10", "steps = 10\nbackend = \"tpu\"");
        assert!(setup(&tpu).unwrap_err().to_string().contains("tpu"));
    }

    #[test]
    fn bad_cases_are_refused_with_a_reason() {
        let unknown = CAVITY.replace("steps = 10", "steps = 10\nstpes = 3");
        assert!(setup(&unknown).unwrap_err().to_string().contains("stpes"));
        let fast = CAVITY.replace("0.1, 0.0", "0.5, 0.0");
        assert!(setup(&fast).unwrap_err().to_string().contains("Mach"));
        let both = CAVITY.replace("reynolds = 100.0", "reynolds = 100.0\nviscosity = 0.1");
        assert!(setup(&both).unwrap_err().to_string().contains("exactly one"));
        let face = CAVITY.replace("x_min = \"wall\"", "x_min = \"wal\"");
        assert!(setup(&face).unwrap_err().to_string().contains("x_min"));
        let size3d = CAVITY.replace("[34, 34, 1]", "[34, 34, 4]");
        assert!(setup(&size3d).unwrap_err().to_string().contains("nz"));
        let negative = CAVITY.replace("[34, 34, 1]", "[-3, 34, 1]");
        assert!(setup(&negative).is_err());
    }

    fn with_geometry(extra: &str) -> String {
        format!("{CAVITY}\n[[geometry]]\nname = \"obstacle\"\n{extra}\n")
    }

    /// `wall = "interpolated"` marks the fluid cells next to the shape with
    /// fractions from its surface, and is refused where it cannot apply.
    #[test]
    fn interpolated_walls_are_marked_or_refused_with_a_reason() {
        let disc = "shape = \"sphere\"\ncentre = [16.2, 15.7, 0.0]\nradius = 5.0";
        let s = setup(&with_geometry(&format!("{disc}\nwall = \"interpolated\""))).unwrap();
        let curved = &s.config.domain.curved;
        assert!(!curved.is_empty());
        let flags = &s.config.domain.flags;
        for (k, &n) in curved.cells.iter().enumerate() {
            let (x, y, z) = s.config.domain.dims.coords(n as u32);
            assert_ne!(flags.get_at(flags.slot([x, y, z])) & kernels_gpu::flags::CURVED, 0, "cell {n} marked");
            // Each fraction is where the link meets the circle: |p - centre| = r there.
            for (i, &q) in curved.fractions(k).iter().enumerate().filter(|(_, q)| **q >= 0.0) {
                let c = <kernels_gpu::D2Q9 as kernels_gpu::Lattice<9>>::C[i];
                let p = [x as f64 - q * c[0] as f64, y as f64 - q * c[1] as f64];
                let r = ((p[0] - 16.2).powi(2) + (p[1] - 15.7).powi(2)).sqrt();
                assert!((r - 5.0).abs() < 1e-9, "cell {n} direction {i}: the wall point is {r} from the centre");
            }
        }
        assert!(setup(&with_geometry(disc)).unwrap().config.domain.curved.is_empty(), "halfway by default");
        let refused = |extra: &str, says: &str| {
            let e = setup(&with_geometry(&format!("{disc}\n{extra}"))).unwrap_err().to_string();
            assert!(e.contains(says), "{extra}: {e}");
        };
        refused("wall = \"curved\"", "halfway");
        refused("wall = \"interpolated\"\nmoving_wall = [0.0, 0.01, 0.0]", "resting");
        let packed = "shape = \"packed-spheres\"\nradius = 3.0\ncount = 2\nwall = \"interpolated\"";
        let e = setup(&with_geometry(packed)).unwrap_err().to_string();
        assert!(e.contains("only voxels"), "{e}");
    }

    #[test]
    fn geometry_is_voxelised_as_walls() {
        let s = setup(&with_geometry("shape = \"sphere\"\ncentre = [16.0, 16.0, 0.0]\nradius = 5.0")).unwrap();
        let solid = s.objects[0].cells.count(|c| c);
        // A disc of radius 5 in the z = 0 layer: about pi r^2 = 78.5 cells.
        assert!((70..=90).contains(&solid), "{solid} cells");
        assert_eq!(s.config.domain.fluid_cells(), 32 * 32 - solid);
        let boxed = setup(&with_geometry(
            "shape = \"box\"\nmin = [4.5, 4.5, -0.5]\nmax = [8.5, 6.5, 0.5]\nmoving_wall = [0.0, 0.01, 0.0]",
        ))
        .unwrap();
        assert_eq!(boxed.objects[0].cells.count(|c| c), 8);
        assert_eq!(boxed.config.domain.wall_velocities.len(), 2, "lid and the moving box");
    }

    #[test]
    fn every_class_of_bad_geometry_is_refused_with_a_reason() {
        let dir = std::env::temp_dir().join(format!("lbm-case-geo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let try_case = |text: String| -> String {
            let path = dir.join("c.toml");
            std::fs::write(&path, &text).unwrap();
            let case = Case::load(&path);
            match case {
                Err(e) => e.to_string(),
                Ok(case) => case.setup(&path, None).err().map(|e| e.to_string()).unwrap_or_default(),
            }
        };
        let missing = try_case(with_geometry("shape = \"stl\"\nfile = \"nowhere.stl\""));
        assert!(missing.contains("nowhere.stl") && missing.contains("c.toml"), "{missing}");
        std::fs::write(dir.join("broken.stl"), b"solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0").unwrap();
        let broken = try_case(with_geometry("shape = \"stl\"\nfile = \"broken.stl\""));
        assert!(broken.contains("broken.stl"), "{broken}");
        let outside = try_case(with_geometry("shape = \"sphere\"\ncentre = [500.0, 16.0, 0.0]\nradius = 5.0"));
        assert!(outside.contains("outside the domain") && outside.contains("obstacle"), "{outside}");
        let incomplete = try_case(with_geometry("shape = \"sphere\"\ncentre = [16.0, 16.0, 0.0]"));
        assert!(incomplete.contains("needs `radius`"), "{incomplete}");
        let unknown = try_case(with_geometry("shape = \"torus\""));
        assert!(unknown.contains("unknown shape"), "{unknown}");
        let wrong_type = try_case(CAVITY.replace("steps = 10", "steps = \"ten\""));
        assert!(wrong_type.contains("steps") && wrong_type.contains("line"), "{wrong_type}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A `.npy` file of version 1.0 with `descr`, the order and the shape as
    /// numpy writes them, then `data`.
    fn npy(descr: &str, fortran: bool, shape: &[usize], data: &[u8]) -> Vec<u8> {
        let shape = shape.iter().map(|n| format!("{n}, ")).collect::<String>();
        let shape = if shape.matches(',').count() == 1 {
            shape.trim_end().to_string()
        } else {
            shape.trim_end_matches(", ").to_string()
        };
        let mut header = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': ({shape}), }}",
            if fortran { "True" } else { "False" }
        );
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    /// A 3D periodic box 10 x 8 x 6 with one `[[geometry]]` entry read from
    /// files in a fresh directory; the case's error text, or the set-up.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("lbm-case-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }
        fn file(&self, name: &str, bytes: &[u8]) {
            std::fs::write(self.0.join(name), bytes).unwrap();
        }
        fn setup(&self, boundaries: &str, geometry: &str) -> Result<Setup> {
            let text = format!(
                "[simulation]\nlattice = \"D3Q19\"\nsize = [10, 8, 6]\nsteps = 10\n[physics]\nviscosity = 0.1\n\
                 force = [1e-6, 0.0, 0.0]\n[boundaries]\n{boundaries}\n[[geometry]]\nname = \"rock\"\n{geometry}\n"
            );
            let path = self.0.join("case.toml");
            std::fs::write(&path, text).unwrap();
            Case::load(&path)?.setup(&path, None)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }

    const PERIODIC: &str = "x_min = \"periodic\"\nx_max = \"periodic\"\ny_min = \"periodic\"\ny_max = \"periodic\"";
    const CHANNEL: &str = "x_min = { velocity_inlet = [0.02, 0.0, 0.0] }\nx_max = { pressure_outlet = 0.0 }\n\
                           y_min = \"wall\"\ny_max = \"wall\"";

    fn solid_cells(s: &Setup) -> Vec<(u32, u32, u32)> {
        let d = s.config.domain.dims;
        (0..d.cells() as u32).filter(|&n| s.objects[0].cells[n as usize]).map(|n| d.coords(n)).collect()
    }

    #[test]
    fn raw_volumes_are_read_x_fastest_at_an_offset() {
        let dir = Scratch::new("raw");
        // 3 x 2 x 2 voxels: voxel (x, y, z) = x + 3 (y + 2 z); solid where 5 or 7.
        let bytes: Vec<u8> = (0..12).collect();
        dir.file("v.raw", &bytes);
        let s = dir
            .setup(
                PERIODIC,
                "shape = \"raw\"\nfile = \"v.raw\"\ndims = [3, 2, 2]\noffset = [4, 1, 2]\nsolid_values = [5, 7]",
            )
            .unwrap();
        // 5 = (2, 1, 0) and 7 = (1, 0, 1), moved by the offset.
        assert_eq!(solid_cells(&s), vec![(6, 2, 2), (5, 1, 3)]);
        // Default: every non-zero voxel.
        let s = dir.setup(PERIODIC, "shape = \"raw\"\nfile = \"v.raw\"\ndims = [3, 2, 2]").unwrap();
        assert_eq!(solid_cells(&s).len(), 11);
        assert_eq!(s.porous, Some(PorousSample { diameter: None }), "a periodic box with a force is a porous sample");
        // Too far: the image reaches x = 11 of a 10-cell box.
        let e = dir
            .setup(PERIODIC, "shape = \"raw\"\nfile = \"v.raw\"\ndims = [3, 2, 2]\noffset = [8, 0, 0]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("reaches cell [11, 2, 2]") && e.contains("size at least [11, 8, 6]"), "{e}");
        let e = dir.setup(PERIODIC, "shape = \"raw\"\nfile = \"v.raw\"\ndims = [3, 2, 2]\naxes = \"zyx\"").unwrap_err();
        assert!(e.to_string().contains("does not read `axes`: a raw file is x fastest"), "{e}");
    }

    #[test]
    fn raw_size_mismatch_says_expected_and_actual_bytes_and_writes_nothing() {
        let dir = Scratch::new("raw-size");
        dir.file("v.raw", &[1u8; 12]);
        let e = dir.setup(PERIODIC, "shape = \"raw\"\nfile = \"v.raw\"\ndims = [3, 2, 3]").unwrap_err();
        let Error::CaseEntry { key: "[[geometry]]", source, .. } = &e else { panic!("{e}") };
        let Error::Geometry { name, source } = source.as_ref() else { panic!("{e}") };
        assert_eq!(name, "rock");
        assert!(
            matches!(source.as_ref(), Error::Image(ImageError::SizeMismatch { expected: 18, actual: 12, .. })),
            "{e}"
        );
        let m = e.to_string();
        assert!(m.contains("has 12 bytes but dims [3, 2, 3] need 18") && m.contains("2 layers"), "{m}");
        // 16-bit data: twice the bytes.
        dir.file("w.raw", &[1u8; 24]);
        let m = dir.setup(PERIODIC, "shape = \"raw\"\nfile = \"w.raw\"\ndims = [3, 2, 2]").unwrap_err().to_string();
        assert!(m.contains("2 bytes per voxel") && m.contains("astype(np.uint8)"), "{m}");
        // A .npy file read as raw.
        dir.file("a.npy", &npy("|u1", false, &[3, 2, 2], &[0; 12]));
        let m = dir.setup(PERIODIC, "shape = \"raw\"\nfile = \"a.npy\"\ndims = [3, 2, 2]").unwrap_err().to_string();
        assert!(m.contains("use shape = \"npy\""), "{m}");
        assert!(!dir.0.join("output").exists());
    }

    #[test]
    fn npy_arrays_map_their_first_index_to_x_in_either_order() {
        let dir = Scratch::new("npy");
        // vol[x, y, z] with shape (3, 2, 2), solid at (2, 1, 0) and (0, 1, 1).
        let solid = |x: usize, y: usize, z: usize| (x, y, z) == (2, 1, 0) || (x, y, z) == (0, 1, 1);
        let mut c_order = Vec::new();
        for x in 0..3 {
            for y in 0..2 {
                for z in 0..2 {
                    c_order.push(solid(x, y, z));
                }
            }
        }
        let mut f_order = Vec::new();
        for z in 0..2 {
            for y in 0..2 {
                for x in 0..3 {
                    f_order.push(solid(x, y, z));
                }
            }
        }
        let want = vec![(2, 1, 0), (0, 1, 1)];
        let as_u8 = |v: &[bool]| v.iter().map(|&b| b as u8).collect::<Vec<_>>();
        dir.file("c.npy", &npy("|b1", false, &[3, 2, 2], &as_u8(&c_order)));
        dir.file("f.npy", &npy("|b1", true, &[3, 2, 2], &as_u8(&f_order)));
        // Big-endian 16-bit integers, 300 marking solid.
        let be: Vec<u8> = c_order.iter().flat_map(|&b| if b { 300u16 } else { 7 }.to_be_bytes()).collect();
        dir.file("be.npy", &npy(">u2", false, &[3, 2, 2], &be));
        for geometry in [
            "shape = \"npy\"\nfile = \"c.npy\"",
            "shape = \"npy\"\nfile = \"f.npy\"",
            "shape = \"npy\"\nfile = \"be.npy\"\nsolid_values = [300]",
        ] {
            assert_eq!(solid_cells(&dir.setup(PERIODIC, geometry).unwrap()), want, "{geometry}");
        }
        // The same array read as vol[z, y, x]: shape (3, 2, 2) is 2 x 2 x 3 cells.
        let s = dir.setup(PERIODIC, "shape = \"npy\"\nfile = \"c.npy\"\naxes = \"zyx\"").unwrap();
        assert_eq!(solid_cells(&s), vec![(1, 1, 0), (0, 1, 2)]);
        let e = dir.setup(PERIODIC, "shape = \"npy\"\nfile = \"c.npy\"\naxes = \"xxz\"").unwrap_err().to_string();
        assert!(e.contains("axes = \"xxz\"") && e.contains("\"xyz\""), "{e}");
        // Truncated data, and a dtype that is not a number.
        let mut short = npy("<i4", false, &[3, 2, 2], &[0; 48]);
        short.truncate(short.len() - 8);
        dir.file("short.npy", &short);
        let e = dir.setup(PERIODIC, "shape = \"npy\"\nfile = \"short.npy\"").unwrap_err().to_string();
        assert!(e.contains("(48 bytes of data) but 40 bytes follow it"), "{e}");
        dir.file("s.npy", &npy("<U1", false, &[3], &[0; 12]));
        let e = dir.setup(PERIODIC, "shape = \"npy\"\nfile = \"s.npy\"").unwrap_err().to_string();
        assert!(e.contains("<U1 is not supported"), "{e}");
        let e = dir.setup(PERIODIC, "shape = \"npy\"\nfile = \"c.npy\"\ndims = [3, 2, 2]").unwrap_err().to_string();
        assert!(e.contains("a .npy file gives its own dimensions"), "{e}");
    }

    #[test]
    fn geometry_that_leaves_no_fluid_or_blocks_the_inlet_is_refused() {
        let dir = Scratch::new("flow");
        dir.file("full.raw", &[1u8; 480]);
        let e = dir.setup(PERIODIC, "shape = \"raw\"\nfile = \"full.raw\"\ndims = [10, 8, 6]").unwrap_err().to_string();
        assert!(e.contains("no fluid cell (480 of 480 cells are solid)"), "{e}");
        // A plate across the channel at x = 5 blocks the inlet.
        let plate = "shape = \"box\"\nmin = [4.6, -1.0, -1.0]\nmax = [5.4, 9.0, 7.0]";
        let e = dir.setup(CHANNEL, plate).unwrap_err().to_string();
        assert!(
            e.contains("velocity inlet at x_min (36 of its 36 cells, 180 fluid cells in all) reaches no outlet"),
            "{e}"
        );
        // A hole in the plate opens the path.
        let holed: Vec<u8> = (0..480).map(|n| (n % 10 == 5 && n != 5 + 10 * (3 + 8 * 2)) as u8).collect();
        dir.file("plate.raw", &holed);
        assert!(dir.setup(CHANNEL, "shape = \"raw\"\nfile = \"plate.raw\"\ndims = [10, 8, 6]").is_ok());
        // A closed box of walls around cell (7, 4, 3): a sealed pocket, warned.
        let shell: Vec<u8> = (0..480u32)
            .map(|n| {
                let (x, y, z) = (n % 10, (n / 10) % 8, n / 80);
                let d = [x.abs_diff(7), y.abs_diff(4), z.abs_diff(3)];
                (d.iter().all(|&d| d <= 1) && d != [0, 0, 0]) as u8
            })
            .collect();
        dir.file("shell.raw", &shell);
        let s = dir.setup(CHANNEL, "shape = \"raw\"\nfile = \"shell.raw\"\ndims = [10, 8, 6]").unwrap();
        assert!(s.notes.iter().any(|n| n.starts_with("1 fluid cell (") && n.contains("sealed off")), "{:?}", s.notes);
        // Geometry over the whole inlet face.
        let e = dir.setup(CHANNEL, "shape = \"box\"\nmin = [-1.0, -1.0, -1.0]\nmax = [0.5, 9.0, 7.0]").unwrap_err();
        assert!(e.to_string().contains("covers every cell of the open face x_min"), "{e}");
    }

    #[test]
    fn packed_spheres_reach_the_porosity_and_repeat_with_the_seed() {
        let dir = Scratch::new("packed");
        let text = |seed: u64| {
            format!(
                "[simulation]\nlattice = \"D3Q19\"\nsize = [40, 40, 40]\nsteps = 10\n[physics]\nviscosity = 0.1\n\
                 force = [1e-5, 0.0, 0.0]\n[boundaries]\n{PERIODIC}\n[[geometry]]\nname = \"bed\"\n\
                 shape = \"packed-spheres\"\nradius = 5.0\nporosity = 0.4\nseed = {seed}\n"
            )
        };
        let path = dir.0.join("bed.toml");
        let run = |seed| {
            std::fs::write(&path, text(seed)).unwrap();
            Case::load(&path).unwrap().setup(&path, None).unwrap()
        };
        let s = run(3);
        let packing = s.objects[0].packing.as_ref().unwrap();
        // round(0.6 * 40^3 / (4/3 pi 5^3)) = 73 spheres: solid fraction 0.5973.
        assert_eq!(packing.centres.len(), 73);
        let continuum = 1.0 - packing.spec.solid_fraction();
        let porosity = s.config.domain.fluid_cells() as f64 / 64000.0;
        // The sphere count is rounded (half a sphere is 0.004 of the box) and
        // cell centres sample each sphere's volume to a few cells in 524.
        assert!((continuum - 0.4).abs() <= 0.5 * packing.spec.sphere_volume() / 64000.0, "{continuum}");
        assert!((porosity - continuum).abs() < 0.005, "voxel porosity {porosity} vs {continuum}");
        assert_eq!(s.porous, Some(PorousSample { diameter: Some(10.0) }));
        assert_eq!(run(3).config.domain.flags, s.config.domain.flags, "same seed, same bed");
        assert_ne!(run(4).config.domain.flags, s.config.domain.flags, "another seed, another bed");
        let bad = text(1).replace("porosity = 0.4", "porosity = 0.3");
        std::fs::write(&path, bad).unwrap();
        let e = Case::load(&path).unwrap().setup(&path, None).unwrap_err().to_string();
        assert!(e.contains("geometry `bed`") && e.contains("porosity of at least 0.38"), "{e}");
    }

    /// The cause of a case error from a lower layer travels as its source.
    #[test]
    fn errors_from_the_solver_keep_their_source() {
        let dir = std::env::temp_dir().join(format!("lbm-case-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(&path, with_geometry("shape = \"stl\"\nfile = \"nowhere.stl\"")).unwrap();
        let e = Case::load(&path).unwrap().setup(&path, None).unwrap_err();
        let Error::CaseEntry { key: "[[geometry]]", source, .. } = &e else { panic!("{e}") };
        let Error::Geometry { name, source } = source.as_ref() else { panic!("{e}") };
        assert_eq!(name, "obstacle");
        assert!(matches!(source.as_ref(), Error::Stl(crate::stl::StlError::NotFound { .. })), "{e}");
        let streaming = CAVITY.replace("steps = 10", "steps = 10\nstreaming = \"pull\"");
        let e = setup(&streaming).unwrap_err();
        let Error::CaseEntry { key: "[simulation] streaming", source, .. } = &e else { panic!("{e}") };
        assert!(matches!(source.as_ref(), Error::UnknownName { what: "streaming scheme", .. }), "{e}");
        let choices = Streaming::ALL.map(|s| s.name()).join(", ");
        assert!(e.to_string().ends_with(&format!("`pull`: use {choices}")), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    /// A NaN or an infinity (TOML writes `nan`, `inf`, `+inf`, `-inf`) is
    /// refused when the case is read, with a message naming the key.
    #[test]
    fn non_finite_numbers_are_refused_naming_the_key() {
        let dir = std::env::temp_dir().join(format!("lbm-case-finite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let channel = CAVITY
            .replace("reynolds = 100.0", "viscosity = 0.1")
            .replace("x_min = \"wall\"", "x_min = { velocity_inlet = [0.05, 0.0, 0.0] }")
            .replace("x_max = \"wall\"", "x_max = { pressure_outlet = 0.003 }")
            .replace("y_max = { moving_wall = [0.1, 0.0, 0.0] }", "y_max = \"wall\"");
        let units = "[units]\nlength = 1.0\ncells = 32\nvelocity = 1.0\nlattice_velocity = 0.1\n";
        let cases = [
            (CAVITY.replace("reynolds = 100.0", "reynolds = 100.0\nforce = [inf, 0, 0]"), "[physics] force[0] = inf"),
            (CAVITY.replace("[0.1, 0.0, 0.0]", "[0.1, nan, 0.0]"), "[boundaries] y_max.moving_wall[1] = NaN"),
            (channel.replace("[0.05, 0.0, 0.0]", "[-inf, 0.0, 0.0]"), "[boundaries] x_min.velocity_inlet[0] = -inf"),
            (channel.replace("0.003", "+inf"), "[boundaries] x_max.pressure_outlet = inf"),
            (channel.replace("viscosity = 0.1", "viscosity = nan"), "[physics] viscosity = NaN"),
            (CAVITY.replace("reynolds = 100.0", "reynolds = inf"), "[physics] reynolds = inf"),
            (format!("{CAVITY}[initial]\nvelocity = [0.0, -inf, 0.0]\n"), "[initial] velocity[1] = -inf"),
            (format!("{CAVITY}[initial]\ndensity = nan\n"), "[initial] density = NaN"),
            (
                with_geometry("shape = \"sphere\"\ncentre = [16.0, 16.0, 0.0]\nradius = inf"),
                "[[geometry]] `obstacle`: radius = inf",
            ),
            (
                with_geometry("shape = \"box\"\nmin = [4.5, 4.5, -0.5]\nmax = [8.5, nan, 0.5]"),
                "[[geometry]] `obstacle`: max[1] = NaN",
            ),
            (format!("{CAVITY}{}", units.replace("length = 1.0", "length = inf")), "[units] length = inf"),
            (CAVITY.replace("steps = 10", "steps = 10\nsteady_tolerance = nan"), "[simulation] steady_tolerance = NaN"),
            (
                format!("{CAVITY}[[output.probe]]\nname = \"line\"\nfrom = [1.0, 1.0, 0.0]\nto = [1.0, inf, 0.0]\nsamples = 5\n"),
                "[[output.probe]] `line`: to[1] = inf",
            ),
            (
                format!("{CAVITY}[[output.picture]]\nquantity = \"velocity\"\nposition = -inf\n"),
                "[[output.picture]] #1: position = -inf",
            ),
        ];
        let path = dir.join("f.toml");
        for (text, key) in cases {
            let want = format!("{key} is not a finite number: give a finite value");
            std::fs::write(&path, &text).unwrap();
            match Case::load(&path) {
                Err(e @ Error::Case { .. }) => {
                    let e = e.to_string();
                    assert!(e.contains(&want) && e.contains("f.toml"), "{e}\nwanted: {want}");
                }
                Err(e) => panic!("{key}: not a case error: {e}"),
                Ok(_) => panic!("{key}: loaded"),
            }
            // A case parsed without `load` is refused by `setup` alike.
            let e = setup(&text).unwrap_err().to_string();
            assert!(e.contains(&want), "{e}\nwanted: {want}");
        }
        // Finite numbers that overflow on the way to lattice units.
        let si = CAVITY.replace("reynolds = 100.0", "viscosity = 1e308").replace("[0.1, 0.0, 0.0]", "[1.0, 0.0, 0.0]")
            + units;
        let e = setup(&si).unwrap_err().to_string();
        assert!(e.contains("[physics]") && e.contains("not a finite number"), "{e}");
        let tiny = format!(
            "{CAVITY}{}",
            units.replace("length = 1.0", "length = 1e-300").replace("cells = 32", "cells = 1e300")
        );
        let e = setup(&tiny).unwrap_err().to_string();
        assert!(e.contains("[units]") && e.contains("dx"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Any text, and any mutation of a valid case, is parsed or refused; never a panic.
        #[test]
        fn case_parser_never_panics(text in "\\PC{0,400}", cut in 0usize..600, byte in 0u8..128) {
            let _ = setup(&text);
            let mut mutated = CAVITY.as_bytes().to_vec();
            if cut < mutated.len() {
                mutated[cut] = byte;
            }
            let _ = setup(&String::from_utf8_lossy(&mutated));
            let _ = setup(&CAVITY[..cut.min(CAVITY.len())]);
        }
    }
}
