//! The simulated box: its size, what each cell is, the moving-wall velocities
//! and the open-boundary states.

use crate::cell_blocks::CellBlocks;
use crate::error::{Error, Result};
use crate::solver::CollisionParams;
use kernels_gpu::flags::{CellKind, MAX_MOVING_WALLS};
use kernels_gpu::Dims;

/// One face of the box.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Face {
    /// x = 0
    XMin,
    /// x = nx - 1
    XMax,
    /// y = 0
    YMin,
    /// y = ny - 1
    YMax,
    /// z = 0
    ZMin,
    /// z = nz - 1
    ZMax,
}

impl Face {
    /// All faces in the order x-, x+, y-, y+, z-, z+.
    pub const ALL: [Face; 6] = [Face::XMin, Face::XMax, Face::YMin, Face::YMax, Face::ZMin, Face::ZMax];

    /// The face's key in case files (`x_min`...).
    pub const fn name(self) -> &'static str {
        ["x_min", "x_max", "y_min", "y_max", "z_min", "z_max"][self as usize]
    }

    /// Axis (0, 1, 2) normal to the face.
    pub const fn axis(self) -> usize {
        match self {
            Face::XMin | Face::XMax => 0,
            Face::YMin | Face::YMax => 1,
            Face::ZMin | Face::ZMax => 2,
        }
    }

    /// Unit normal pointing from the face into the box.
    pub const fn inward_normal(self) -> [i32; 3] {
        let mut n = [0; 3];
        n[self.axis()] = if self.is_max() { -1 } else { 1 };
        n
    }

    /// Whether the face is at the high end of its axis.
    pub const fn is_max(self) -> bool {
        matches!(self, Face::XMax | Face::YMax | Face::ZMax)
    }
}

/// What closes a face of the box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaceBoundary {
    /// No boundary: the axis wraps around (both faces of an axis must agree).
    Periodic,
    /// A resting wall (halfway bounce-back), one cell thick.
    Wall,
    /// A wall moving with the given velocity (lattice units), one cell thick.
    MovingWall([f64; 3]),
    /// Velocity inlet (lattice units), one cell thick: the cells impose this
    /// velocity, with the density that follows from their arriving populations.
    VelocityInlet([f64; 3], OpenScheme),
    /// Pressure outlet with this density (lattice units; the pressure is
    /// `rho / 3`), one cell thick: the cells impose this density, with the
    /// normal velocity that follows from their arriving populations.
    PressureOutlet(f64, OpenScheme),
}

impl FaceBoundary {
    /// Order in which faces are filled: open boundaries first, then resting
    /// walls, moving walls last, so that walls cover the edges they share with
    /// an inlet and a moving lid covers the edges it shares with walls.
    const fn fill_order(&self) -> u8 {
        match self {
            FaceBoundary::Periodic | FaceBoundary::VelocityInlet(..) | FaceBoundary::PressureOutlet(..) => 0,
            FaceBoundary::Wall => 1,
            FaceBoundary::MovingWall(_) => 2,
        }
    }
}

/// Size, cell flags and moving-wall velocities of a simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct Domain {
    /// Grid size (boundary cells included).
    pub dims: Dims,
    /// One flag byte per cell, see [`kernels_gpu::flags`], stored by
    /// blocks so that a sparse grid's box may be far larger than its flow.
    pub flags: CellBlocks<u8>,
    /// Velocities of the moving walls, indexed by moving-wall id.
    pub wall_velocities: Vec<[f64; 3]>,
    /// The inlets and outlets: boundary groups, each its cells and what it
    /// imposes (the cells' flag bytes say only that they are open).
    pub open: Vec<OpenGroup>,
    /// The fluid cells next to curved walls and where the walls cross their
    /// links ([`crate::curved`]); empty unless an object asks for them.
    pub curved: crate::curved::CurvedWalls,
    /// Sponge bands in front of outlets ([`crate::sponge`]).
    pub sponges: Vec<crate::sponge::SpongeBand>,
    /// For a z-partition, the global z of its local layer 0 (wrapping; 0
    /// for a whole domain): see [`kernels_gpu::StepParams::z_offset`].
    pub z_offset: u32,
}

/// An inlet or outlet: a boundary group of cells that all impose `state`,
/// an inlet with a profile each its own velocity.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenGroup {
    /// What the cells impose.
    pub state: OpenState,
    /// The cells (dense numbers), ascending.
    pub cells: Vec<usize>,
    /// An inlet's velocity profile: the velocity of each cell of `cells`,
    /// in place of `state.velocity`; empty: every cell imposes `state`.
    pub velocities: Vec<[f64; 3]>,
}

impl OpenGroup {
    /// A group whose cells all impose `state`.
    pub fn uniform(state: OpenState, cells: Vec<usize>) -> Self {
        Self { state, cells, velocities: Vec::new() }
    }

    /// The velocity the group's `k`-th cell imposes, if it is an inlet's.
    pub fn velocity(&self, k: usize) -> [f64; 3] {
        self.velocities.get(k).copied().unwrap_or(self.state.velocity)
    }

    /// The cells `f` maps to a new number, in order, with their profile
    /// velocities (empty without a profile): the group on another numbering.
    pub fn cells_where<U>(&self, mut f: impl FnMut(usize) -> Option<U>) -> (Vec<U>, Vec<[f64; 3]>) {
        let mut velocities = Vec::new();
        let mut cells = Vec::new();
        for (k, &n) in self.cells.iter().enumerate() {
            if let Some(m) = f(n) {
                cells.push(m);
                if !self.velocities.is_empty() {
                    velocities.push(self.velocities[k]);
                }
            }
        }
        (cells, velocities)
    }

    /// Keeps the cells for which `keep` holds (and their profile velocities).
    pub fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) {
        (self.cells, self.velocities) = self.cells_where(|n| keep(n).then_some(n));
    }

    /// The profile's velocities as a list kernel reads them (three values per
    /// cell, in the kernel's precision); `None` without a profile.
    pub fn kernel_velocities<T: kernels_gpu::Real>(velocities: &[[f64; 3]]) -> Option<Vec<T>> {
        (!velocities.is_empty()).then(|| velocities.iter().flatten().map(|&v| T::from_f64(v)).collect())
    }
}

/// Whether an open boundary imposes the velocity or the density.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenKind {
    /// Imposes the velocity; the density follows from the arriving populations.
    VelocityInlet,
    /// Imposes the density; the normal velocity follows.
    PressureOutlet,
}

/// How an open boundary rebuilds its cells from the density and velocity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OpenScheme {
    /// The equilibrium of the density and velocity, without colliding:
    /// first-order accurate (the non-equilibrium stress is dropped).
    #[default]
    Equilibrium,
    /// Regularized (Latt et al. 2008): the equilibrium plus the
    /// non-equilibrium stress of the arriving populations, then a collision
    /// with the bulk's operator; second-order accurate.
    Regularized,
}

impl OpenScheme {
    /// Both schemes.
    pub const ALL: [OpenScheme; 2] = [OpenScheme::Equilibrium, OpenScheme::Regularized];

    /// Name in case files (`equilibrium`, `regularized`).
    pub const fn name(self) -> &'static str {
        match self {
            OpenScheme::Equilibrium => "equilibrium",
            OpenScheme::Regularized => "regularized",
        }
    }
}

/// What an inlet or outlet face imposes (lattice units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenState {
    /// Which of density and velocity it imposes.
    pub kind: OpenKind,
    /// How its cells are rebuilt.
    pub scheme: OpenScheme,
    /// Density an outlet imposes.
    pub density: f64,
    /// Velocity an inlet imposes.
    pub velocity: [f64; 3],
    /// Unit normal of the face, pointing into the domain.
    pub normal: [i32; 3],
    /// Steps over which an inlet's velocity ramps up from rest (0: none;
    /// see [`kernels_gpu::OpenBoundary::at_step`]).
    pub ramp_steps: u32,
}

impl OpenState {
    /// The open-boundary kernel's parameters for a group imposing this state
    /// in a simulation whose bulk collides with `collision`.
    pub fn kernel_params<T: kernels_gpu::Real>(&self, collision: CollisionParams<T>) -> kernels_gpu::OpenBoundary<T> {
        use kernels_gpu::{EQUILIBRIUM, INLET, OUTLET, REGULARIZED};
        kernels_gpu::OpenBoundary {
            rho: T::from_f64(self.density),
            u: self.velocity.map(T::from_f64),
            normal: self.normal.map(|n| T::from_f64(n as f64)),
            kind: match self.kind {
                OpenKind::VelocityInlet => INLET,
                OpenKind::PressureOutlet => OUTLET,
            },
            scheme: match self.scheme {
                OpenScheme::Equilibrium => EQUILIBRIUM,
                OpenScheme::Regularized => REGULARIZED,
            },
            rates: collision.rates(),
            ramp_steps: self.ramp_steps,
            reserved: 0,
        }
    }
}

impl Domain {
    /// An all-fluid, fully periodic box. A dense grid holds fewer cells
    /// than a sparse grid's box may: see [`check_dense`].
    pub fn new(dims: Dims) -> Result<Self> {
        if dims.nx == 0 || dims.ny == 0 || dims.nz == 0 {
            return Err(Error::Setup(format!(
                "domain size {}x{}x{} has an empty axis: every size must be at least 1",
                dims.nx, dims.ny, dims.nz
            )));
        }
        Ok(Self {
            dims,
            flags: CellBlocks::new(dims, CellKind::Fluid.to_flag()),
            wall_velocities: Vec::new(),
            open: Vec::new(),
            curved: Default::default(),
            sponges: Vec::new(),
            z_offset: 0,
        })
    }

    /// A box closed by the given boundaries on its faces (order of [`Face::ALL`]).
    /// Walls occupy the outermost layer of cells on their face.
    pub fn with_faces(dims: Dims, faces: [FaceBoundary; 6]) -> Result<Self> {
        let mut d = Self::new(dims)?;
        for axis in 0..3 {
            let (lo, hi) = (faces[2 * axis], faces[2 * axis + 1]);
            let periodic = (lo == FaceBoundary::Periodic, hi == FaceBoundary::Periodic);
            if periodic.0 != periodic.1 {
                return Err(Error::Setup(format!(
                    "axis {} is periodic on one face only: make both faces periodic or close both",
                    ["x", "y", "z"][axis]
                )));
            }
            let n = [dims.nx, dims.ny, dims.nz][axis];
            if !periodic.0 && n < 3 {
                return Err(Error::Setup(format!(
                    "axis {} has {n} cells but walls on both faces need at least 3 (two walls and one fluid layer)",
                    ["x", "y", "z"][axis]
                )));
            }
        }
        let mut order: Vec<usize> = (0..6).collect();
        order.sort_by_key(|&f| faces[f].fill_order());
        for f in order {
            let (face, normal) = (Face::ALL[f], Face::ALL[f].inward_normal());
            let kind = match faces[f] {
                FaceBoundary::Periodic => continue,
                FaceBoundary::Wall => CellKind::Wall,
                FaceBoundary::MovingWall(u) => d.add_moving_wall(u)?,
                FaceBoundary::VelocityInlet(velocity, scheme) => {
                    let kind = OpenKind::VelocityInlet;
                    d.add_open_face(face, OpenState { kind, scheme, density: 1.0, velocity, normal, ramp_steps: 0 });
                    continue;
                }
                FaceBoundary::PressureOutlet(density, scheme) => {
                    let kind = OpenKind::PressureOutlet;
                    d.add_open_face(
                        face,
                        OpenState { kind, scheme, density, velocity: [0.0; 3], normal, ramp_steps: 0 },
                    );
                    continue;
                }
            };
            d.fill_face(face, kind);
        }
        Ok(d)
    }

    /// Registers a moving-wall velocity and returns the cell kind that uses it.
    pub fn add_moving_wall(&mut self, velocity: [f64; 3]) -> Result<CellKind> {
        if let Some(k) = self.wall_velocities.iter().position(|v| *v == velocity) {
            return Ok(CellKind::MovingWall(k as u8));
        }
        if self.wall_velocities.len() == MAX_MOVING_WALLS {
            return Err(Error::Setup(format!(
                "at most {MAX_MOVING_WALLS} different moving-wall velocities are supported"
            )));
        }
        self.wall_velocities.push(velocity);
        Ok(CellKind::MovingWall(self.wall_velocities.len() as u8 - 1))
    }

    /// Makes every cell of a face an open boundary imposing `state`: a new
    /// boundary group (cells of the face in other groups leave them).
    pub fn add_open_face(&mut self, face: Face, state: OpenState) {
        let cells = self.face_cells(face);
        self.fill_face(face, CellKind::Open);
        self.open.push(OpenGroup::uniform(state, cells));
    }

    /// The cells of a face, ascending.
    fn face_cells(&self, face: Face) -> Vec<usize> {
        let (lo, hi) = self.face_box(face);
        let d = self.dims;
        let mut cells = Vec::new();
        for z in lo[2]..hi[2] {
            for y in lo[1]..hi[1] {
                cells.extend((lo[0]..hi[0]).map(|x| d.index(x, y, z)));
            }
        }
        cells
    }

    /// The cells of a face: `lo..hi` per axis.
    fn face_box(&self, face: Face) -> ([u32; 3], [u32; 3]) {
        let d = self.dims;
        let (mut lo, mut hi) = ([0; 3], [d.nx, d.ny, d.nz]);
        let a = face.axis();
        lo[a] = if face.is_max() { hi[a] - 1 } else { 0 };
        hi[a] = lo[a] + 1;
        (lo, hi)
    }

    /// Sets every cell of a face to `kind` (open faces: [`Self::add_open_face`]).
    pub fn fill_face(&mut self, face: Face, kind: CellKind) {
        let (lo, hi) = self.face_box(face);
        self.flags.fill(lo, hi, kind.to_flag());
        if !self.open.is_empty() {
            let cells = self.face_cells(face);
            self.leave_open_groups(&cells);
        }
    }

    /// Sets one cell (open boundaries: [`Self::add_open_face`]).
    pub fn set(&mut self, x: u32, y: u32, z: u32, kind: CellKind) {
        self.flags.set([x, y, z], kind.to_flag());
        self.leave_open_groups(&[self.dims.index(x, y, z)]);
    }

    /// Sets the cells where `mask` is true to `kind`, taking them out of any
    /// open group: whole blocks at once where the mask's block is uniform.
    pub fn set_where(&mut self, mask: &CellBlocks<bool>, kind: CellKind) {
        use crate::cell_blocks::BlockView;
        for (b, view) in mask.blocks() {
            let (lo, hi) = mask.block_box(b);
            match view {
                BlockView::Uniform(false) => {}
                BlockView::Uniform(true) => self.flags.fill(lo, hi, kind.to_flag()),
                BlockView::Cells(_) => {
                    for z in lo[2]..hi[2] {
                        for y in lo[1]..hi[1] {
                            for x in lo[0]..hi[0] {
                                if mask[[x, y, z]] {
                                    self.flags.set([x, y, z], kind.to_flag());
                                }
                            }
                        }
                    }
                }
            }
        }
        for g in &mut self.open {
            g.retain(|n| !mask[n]);
        }
        self.open.retain(|g| !g.cells.is_empty());
    }

    /// Takes the ascending `cells` out of every open group.
    fn leave_open_groups(&mut self, cells: &[usize]) {
        for g in &mut self.open {
            g.retain(|n| cells.binary_search(&n).is_err());
        }
        self.open.retain(|g| !g.cells.is_empty());
    }

    /// Flag bytes as the kernels use them: [`kernels_gpu::flags::NEAR_SOLID`]
    /// set on every flow cell with a solid cell in the cube of cells within
    /// `radius` of it along each axis (periodic wrap, as the kernels see
    /// them); the lattice gives the radius
    /// ([`kernels_gpu::grid::near_wall_radius`]).
    pub fn kernel_flags(&self, radius: u32) -> Vec<u8> {
        use kernels_gpu::flags::{is_flow, is_solid, NEAR_SOLID};
        let mut out = self.flags.to_dense();
        let solid: Vec<bool> = out.iter().map(|&f| is_solid(f)).collect();
        let near = dilate(solid, self.dims, radius);
        for (flag, near) in out.iter_mut().zip(near) {
            if near && is_flow(*flag) {
                *flag |= NEAR_SOLID;
            }
        }
        out
    }

    /// Indices of the open-boundary cells (inlets and outlets), ascending.
    pub fn open_cells(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.open.iter().flat_map(|g| g.cells.iter().copied()).collect();
        all.sort_unstable();
        all
    }

    /// Number of cells the kernels update (fluid and open boundaries).
    pub fn fluid_cells(&self) -> usize {
        self.flags.count(kernels_gpu::flags::is_flow)
    }

    /// Largest speed of a moving wall or an inlet (0 when nothing moves).
    pub fn max_boundary_speed(&self) -> f64 {
        let inlets = self.open.iter().flat_map(|g| g.velocities.iter().copied().chain([g.state.velocity]));
        self.wall_velocities
            .iter()
            .copied()
            .chain(inlets)
            .map(|u| (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt())
            .fold(0.0, f64::max)
    }

    /// Largest moving-wall speed, if any wall moves.
    pub fn max_wall_speed(&self) -> Option<f64> {
        self.wall_velocities
            .iter()
            .map(|u| (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt())
            .fold(None, |m, s| Some(m.map_or(s, |m: f64| m.max(s))))
    }
}

/// Refuses a box too large for a dense grid: one of 2^32 cells or more, or
/// with layers past the 32-bit offsets the dense kernels use inside a layer.
pub fn check_dense(dims: Dims) -> Result<()> {
    if dims.cells() > kernels_gpu::layout::MAX_CELLS {
        return Err(Error::Setup(format!(
            "{}x{}x{} = {} cells is more than a dense grid holds ({}): use grid = \"sparse\" if much of the box is solid, \
             or reduce the size, or split the domain over several GPUs",
            dims.nx,
            dims.ny,
            dims.nz,
            dims.cells(),
            kernels_gpu::layout::MAX_CELLS
        )));
    }
    // Populations are blocked by z-layer with 32-bit offsets inside a
    // layer; 27 is the largest velocity set, so the limit holds for all.
    let max_plane = kernels_gpu::layout::MAX_LAYER_VALUES / 27;
    if dims.nx as usize * dims.ny as usize > max_plane {
        return Err(Error::Setup(format!(
            "a {}x{} layer holds more than {max_plane} cells: make x and y smaller and z longer \
             (z is the axis split over GPUs)",
            dims.nx, dims.ny
        )));
    }
    Ok(())
}

/// The cells within `radius` along each axis (periodic wrap) of a marked
/// cell: a cube is the product of three one-axis dilations, so each axis is
/// dilated in turn, one row of cells at a time.
fn dilate(mut mask: Vec<bool>, d: Dims, radius: u32) -> Vec<bool> {
    let (len, stride) = ([d.nx, d.ny, d.nz], [1, d.nx as usize, d.nx as usize * d.ny as usize]);
    let r = radius as i64;
    let mut row = Vec::new();
    for axis in 0..3 {
        let n = len[axis] as usize;
        // Offsets along the axis of the row entries `-r ..= n - 1 + r`, wrapped.
        let wrapped: Vec<usize> = (-r..n as i64 + r).map(|p| p.rem_euclid(n as i64) as usize * stride[axis]).collect();
        for z in 0..d.nz as usize {
            for y in 0..d.ny as usize {
                for x in 0..d.nx as usize {
                    if [x, y, z][axis] != 0 {
                        continue;
                    }
                    let start = x + stride[1] * y + stride[2] * z;
                    row.clear();
                    row.extend(wrapped.iter().map(|&o| mask[start + o]));
                    for (p, window) in row.windows(2 * radius as usize + 1).enumerate() {
                        mask[start + p * stride[axis]] = window.contains(&true);
                    }
                }
            }
        }
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lid_covers_its_edges_and_periodic_needs_both_faces() {
        let mut faces = [FaceBoundary::Wall; 6];
        faces[3] = FaceBoundary::MovingWall([0.1, 0.0, 0.0]);
        let d = Domain::with_faces(Dims::new(5, 5, 5), faces).unwrap();
        assert_eq!(d.flags[d.dims.index(0, 4, 0)], CellKind::MovingWall(0).to_flag());
        assert_eq!(d.flags[d.dims.index(0, 0, 0)], CellKind::Wall.to_flag());
        assert_eq!(d.fluid_cells(), 27);
        let err = check_dense(Dims::new(65536, 2500, 1)).expect_err("a layer of 164 M cells").to_string();
        assert!(err.contains("65536x2500 layer") && err.contains("z longer"), "{err}");
        faces[0] = FaceBoundary::Periodic;
        assert!(Domain::with_faces(Dims::new(5, 5, 5), faces).is_err());
        assert!(Domain::with_faces(Dims::new(2, 5, 5), [FaceBoundary::Wall; 6]).is_err());
        assert!(Domain::new(Dims::new(0, 5, 5)).is_err());
        let huge = Dims::new(1 << 11, 1 << 11, 1 << 10);
        assert!(check_dense(huge).unwrap_err().to_string().contains("grid = \"sparse\""));
        assert_eq!(Domain::new(huge).unwrap().fluid_cells(), 1 << 32, "a sparse grid's box may be larger");
        let k = d.kernel_flags(1);
        let near = kernels_gpu::flags::NEAR_SOLID;
        assert_eq!(k[d.dims.index(1, 1, 1)], near, "corner fluid cell touches walls");
        assert_eq!(k[d.dims.index(2, 2, 2)], 0, "centre cell of a 3^3 fluid block touches none");
        assert_eq!(k[d.dims.index(0, 4, 0)], d.flags[d.dims.index(0, 4, 0)], "solid cells keep their flag");
    }

    /// Slow, obvious reference: a solid cell in the cube of `radius`, each axis wrapped.
    fn near_solid_reference(d: &Domain, radius: i64, x: u32, y: u32, z: u32) -> bool {
        let wrap = |p: u32, dp: i64, n: u32| (p as i64 + dp).rem_euclid(n as i64) as u32;
        let cube = -radius..=radius;
        cube.clone().any(|dz| {
            cube.clone().any(|dy| {
                cube.clone().any(|dx| {
                    let n = d.dims.index(wrap(x, dx, d.dims.nx), wrap(y, dy, d.dims.ny), wrap(z, dz, d.dims.nz));
                    kernels_gpu::flags::is_solid(d.flags[n])
                })
            })
        })
    }

    #[test]
    fn near_solid_radius_follows_the_lattice() {
        use kernels_gpu::flags::NEAR_SOLID;
        // A wall at x = 0 (x periodic, so it also bounds x = nx - 1) and one solid cell.
        let mut d = Domain::new(Dims::new(9, 6, 5)).unwrap();
        d.fill_face(Face::XMin, CellKind::Wall);
        d.set(5, 2, 2, CellKind::Wall);
        let (r1, r2) = (d.kernel_flags(1), d.kernel_flags(2));
        let at = |x, y, z| d.dims.index(x, y, z);
        assert_eq!(r1[at(1, 3, 3)], NEAR_SOLID, "next to the wall");
        assert_eq!(r1[at(2, 3, 3)], 0, "two away from the wall, radius 1");
        assert_eq!(r2[at(2, 3, 3)], NEAR_SOLID, "two away from the wall, radius 2");
        assert_eq!(r1[at(7, 5, 4)], 0);
        assert_eq!(r2[at(7, 5, 4)], NEAR_SOLID, "two away through the periodic x face");
        assert_eq!(r1[at(3, 4, 4)], 0);
        assert_eq!(r2[at(3, 4, 4)], NEAR_SOLID, "two away from the cell along each axis");
        for radius in 0..4 {
            let k = d.kernel_flags(radius);
            for (n, (&flag, &kernel)) in d.flags.to_dense().iter().zip(&k).enumerate() {
                let (x, y, z) = d.dims.coords(n as u32);
                let want = !kernels_gpu::flags::is_solid(flag) && near_solid_reference(&d, radius as i64, x, y, z);
                assert_eq!(kernel & NEAR_SOLID != 0, want, "radius {radius} cell ({x}, {y}, {z})");
                assert_eq!(kernel & !NEAR_SOLID, flag);
            }
        }
    }
}
