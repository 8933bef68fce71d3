//! Standard set-ups: the lid-driven cavity and the open duct that
//! benchmarks, scaling runs, validation and tests build on.

use crate::domain::{Domain, FaceBoundary, OpenScheme};
use crate::error::Result;
use crate::solver::{CollisionModel, Initial, LatticeKind, Precision, SolverConfig};
use kernels_gpu::{Dims, Streaming};

/// Relaxation time for kinematic viscosity `nu` (lattice units).
pub fn tau_for_viscosity(nu: f64) -> f64 {
    3.0 * nu + 0.5
}

/// A square tube of fluid `width` cells wide along z, periodic, driven by a
/// body force along z, in a box of `dims` otherwise solid, its low corner
/// at `corner` (x, y), on 8^3 sparse blocks (D3Q19, f32, Esoteric Pull):
/// one tube in a tight box and in a huge one is the same flow.
pub fn tube_config(dims: Dims, corner: [u32; 2], width: u32) -> Result<SolverConfig> {
    use kernels_gpu::flags::CellKind;
    let mut domain = Domain::new(dims)?;
    domain.flags.fill([0; 3], [dims.nx, dims.ny, dims.nz], CellKind::Wall.to_flag());
    let [x, y] = corner;
    domain.flags.fill([x, y, 0], [x + width, y + width, dims.nz], CellKind::Fluid.to_flag());
    Ok(SolverConfig {
        collision: CollisionModel::Bgk,
        lattice: LatticeKind::D3Q19,
        precision: Precision::F32,
        streaming: Streaming::EsotericPull,
        grid: crate::solver::GridLayout::Sparse { block: crate::sparse::BlockShape::Cube8 },
        groups: crate::groups::BoundaryGroups::Lists,
        tau: 0.8,
        force: [0.0, 0.0, 1e-5],
        domain,
        initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
    })
}

/// A lid-driven cavity: lid at the y-max face moving in +x, walls elsewhere
/// (2D: periodic in z with nz = 1).
pub fn cavity_config(
    lattice: LatticeKind,
    precision: Precision,
    streaming: Streaming,
    side: u32,
    reynolds: f64,
    lid_speed: f64,
) -> Result<SolverConfig> {
    let nz = if lattice.dimension() == 2 { 1 } else { side + 2 };
    let dims = Dims::new(side + 2, side + 2, nz);
    let mut faces = [FaceBoundary::Wall; 6];
    faces[3] = FaceBoundary::MovingWall([lid_speed, 0.0, 0.0]);
    if lattice.dimension() == 2 {
        faces[4] = FaceBoundary::Periodic;
        faces[5] = FaceBoundary::Periodic;
    }
    let nu = lid_speed * side as f64 / reynolds;
    Ok(SolverConfig {
        collision: CollisionModel::Bgk,
        lattice,
        precision,
        streaming,
        grid: crate::solver::GridLayout::Dense,
        groups: crate::groups::BoundaryGroups::Lists,
        tau: tau_for_viscosity(nu),
        force: [0.0; 3],
        domain: Domain::with_faces(dims, faces)?,
        initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
    })
}

/// A duct along `axis` from a velocity inlet (speed 0.02) on its min face
/// to a pressure outlet on its max face, walls across the next axis and
/// periodic along the third: a flow through open boundaries for tests of
/// partitioned runs. Along z it crosses every z-partition boundary; along x
/// or y its open cells lie in every partition's boundary and interior layers.
pub fn duct_config(
    lattice: LatticeKind,
    precision: Precision,
    streaming: Streaming,
    dims: Dims,
    axis: usize,
) -> Result<SolverConfig> {
    Ok(SolverConfig {
        collision: CollisionModel::Bgk,
        lattice,
        precision,
        streaming,
        grid: crate::solver::GridLayout::Dense,
        groups: crate::groups::BoundaryGroups::Lists,
        tau: 0.8,
        force: [0.0; 3],
        domain: Domain::with_faces(dims, duct_faces(axis, 0.02, OpenScheme::Equilibrium))?,
        initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
    })
}

/// A [`duct_config`] with a sphere in the flow, its walls interpolated
/// (curved), and a sponge band of 4 cells in front of the outlet: the
/// boundary groups a partition must update in whichever of its regions
/// holds their cells. The sphere sits 0.4 of the way down the duct,
/// reaching across about half the cross-section.
pub fn obstacle_duct_config(
    lattice: LatticeKind,
    precision: Precision,
    streaming: Streaming,
    dims: Dims,
    axis: usize,
) -> Result<SolverConfig> {
    let mut config = duct_config(lattice, precision, streaming, dims, axis)?;
    let size = [dims.nx, dims.ny, dims.nz].map(f64::from);
    let mut centre = size.map(|n| 0.47 * (n - 1.0));
    centre[axis] = 0.4 * (size[axis] - 1.0);
    let across = (0..3).filter(|&a| a != axis).map(|a| size[a]).fold(f64::MAX, f64::min);
    let sphere = crate::voxel::Sphere { centre: glam::DVec3::from_array(centre), radius: across / 4.0 + 0.3 };
    let voxels = crate::voxel::voxelize(&sphere, (dims.nx, dims.ny, dims.nz), 1.0, glam::DVec3::ZERO)?;
    let domain = &mut config.domain;
    domain.set_where(&voxels.solid, kernels_gpu::CellKind::Wall);
    let object = crate::curved::CurvedObject { name: "sphere", cells: &voxels.solid, shape: &sphere };
    crate::curved::mark(domain, lattice.velocities(), &[object], 1.0)?;
    let mut u = [0.0; 3];
    u[axis] = 0.02;
    crate::sponge::add(domain, crate::domain::Face::ALL[2 * axis + 1], 4, 0.3, u)?;
    Ok(config)
}

/// The faces of a duct along `axis`: a velocity inlet (speed `u_in`) on the
/// min face, a pressure outlet at rest density on the max face (both of
/// `scheme`), walls across the next axis, periodic along the third.
pub(crate) fn duct_faces(axis: usize, u_in: f64, scheme: OpenScheme) -> [FaceBoundary; 6] {
    let mut faces = [FaceBoundary::Periodic; 6];
    let mut u = [0.0; 3];
    u[axis] = u_in;
    faces[2 * axis] = FaceBoundary::VelocityInlet(u, scheme);
    faces[2 * axis + 1] = FaceBoundary::PressureOutlet(1.0, scheme);
    let walls = (axis + 1) % 3;
    faces[2 * walls] = FaceBoundary::Wall;
    faces[2 * walls + 1] = FaceBoundary::Wall;
    faces
}
