//! Voxelisation: which cell centres of the grid lie inside a solid.
//!
//! Analytic shapes ([`Sphere`], [`Cuboid`], [`Cylinder`]) test points
//! directly. A triangle mesh ([`MeshSolid`]) uses the *generalized winding
//! number* (Jacobson et al. 2013): the sum of the solid angles of all
//! triangles seen from the point, divided by 4π. It is 1 inside a closed
//! outward-oriented surface, 0 outside, -1 inside an inverted one, and for a
//! surface with holes it degrades gracefully (about 1 well inside, about 0
//! well outside, 1/2 across a hole), so, unlike a ray cast, a small hole or a
//! ray grazing an edge does not flip whole rows of cells. A point is inside
//! where |w| > 1/2.
//!
//! Cost: summing every triangle for every cell would be `cells x triangles`
//! (2e10 solid angles for 10k triangles on 128^3). Instead the triangles are
//! put in a bounding-volume hierarchy and clusters far from the point are
//! replaced by a second-order multipole expansion of their solid angle
//! ("fast winding numbers", Barill et al. 2018); only nearby triangles are
//! summed exactly. A query then costs O(log n) cluster evaluations plus the
//! exact near field. Where the approximation gives |w| near 1/2 (only near
//! holes or on the surface), the point is recomputed exactly over all
//! triangles. Cells outside the mesh's bounding box are outside (exact for a
//! closed mesh, whose winding number is 0 there) and cost nothing: the
//! result is stored by blocks ([`CellBlocks`]), and only the blocks that
//! meet the bounding box are worked out, in parallel with rayon. Measured on
//! 2 cores (shared with a compiler, hence the ranges): a 10k-triangle torus
//! on 128^3 (576k cells in its box) 0.6-1.2 s, a 20k-triangle sphere filling
//! 120^3 cells of a 128^3 grid 1.5-3 s (test
//! `voxel_timing_10k_triangles_on_128_cubed`).

use glam::{DMat3, DVec3};
use kernels_gpu::Dims;

use crate::cell_blocks::CellBlocks;
use crate::error::Result;
use crate::stl::{diagnose, Mesh, MeshReport};

/// A solid that can be voxelised.
pub trait Shape {
    /// Whether point `p` is inside the solid (points on the surface may go
    /// either way).
    fn contains(&self, p: DVec3) -> bool;
    /// An axis-aligned box (min, max) containing the solid.
    fn bounds(&self) -> (DVec3, DVec3);
    /// The solid's volume, if known; [`voxelize`] compares it with the
    /// number of marked cells to detect features lost at the grid's resolution.
    fn volume(&self) -> Option<f64> {
        None
    }
    /// Whether `contains` holds for every point between `lo` and `hi`
    /// (per axis), so that [`voxelize`] can mark a whole block of cells
    /// without testing each; `false` when that cannot be told cheaply.
    fn contains_box(&self, _lo: DVec3, _hi: DVec3) -> bool {
        false
    }
    /// Where the segment from `outside` (not contained) to `inside`
    /// (contained) first meets the surface, as a fraction of its length
    /// in `[0, 1]`: interpolated bounce-back puts the wall there. By
    /// bisection on [`Shape::contains`] to round-off unless a shape knows
    /// better; a segment the shape does not cross that way gives 1/2.
    fn crossing(&self, outside: DVec3, inside: DVec3) -> f64 {
        if self.contains(outside) || !self.contains(inside) {
            return 0.5;
        }
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        // 52 halvings reach the resolution of an f64 fraction.
        for _ in 0..52 {
            let mid = 0.5 * (lo + hi);
            if self.contains(outside.lerp(inside, mid)) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        0.5 * (lo + hi)
    }
}

/// A ball.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sphere {
    /// Centre.
    pub centre: DVec3,
    /// Radius.
    pub radius: f64,
}

impl Shape for Sphere {
    fn contains(&self, p: DVec3) -> bool {
        p.distance_squared(self.centre) <= self.radius * self.radius
    }
    fn bounds(&self) -> (DVec3, DVec3) {
        (self.centre - self.radius, self.centre + self.radius)
    }
    fn volume(&self) -> Option<f64> {
        Some(4.0 / 3.0 * std::f64::consts::PI * self.radius.powi(3))
    }
    /// The smaller root `t` of `|outside + t d - centre| = radius`.
    fn crossing(&self, outside: DVec3, inside: DVec3) -> f64 {
        let (d, m) = (inside - outside, outside - self.centre);
        let (a, b, c) = (d.length_squared(), m.dot(d), m.length_squared() - self.radius * self.radius);
        let disc = b * b - a * c;
        if a == 0.0 || disc < 0.0 {
            return 0.5;
        }
        // c / (-b + sqrt) is the smaller root without cancellation (b < 0 here).
        let root = c / (-b + disc.sqrt());
        if root.is_finite() {
            root.clamp(0.0, 1.0)
        } else {
            0.5
        }
    }
}

/// An axis-aligned box `[min, max]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cuboid {
    /// Lower corner.
    pub min: DVec3,
    /// Upper corner.
    pub max: DVec3,
}

impl Shape for Cuboid {
    fn contains(&self, p: DVec3) -> bool {
        p.cmpge(self.min).all() && p.cmple(self.max).all()
    }
    fn bounds(&self) -> (DVec3, DVec3) {
        (self.min, self.max)
    }
    fn volume(&self) -> Option<f64> {
        Some((self.max - self.min).max(DVec3::ZERO).element_product())
    }
    /// `contains` compares each coordinate on its own, so the two corners
    /// decide for every point between them.
    fn contains_box(&self, lo: DVec3, hi: DVec3) -> bool {
        self.contains(lo) && self.contains(hi)
    }
}

/// A solid circular cylinder from `base_centre` along `axis` (any
/// direction, any non-zero length: only its direction is used) for
/// `length` (a negative length goes the other way).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cylinder {
    /// Centre of the base disc.
    pub base_centre: DVec3,
    /// Direction of the axis; need not be unit length.
    pub axis: DVec3,
    /// Radius.
    pub radius: f64,
    /// Length along the axis.
    pub length: f64,
}

impl Cylinder {
    /// Unit axis, `None` for a zero or non-finite axis.
    fn unit_axis(&self) -> Option<DVec3> {
        self.axis.try_normalize()
    }
}

impl Shape for Cylinder {
    fn contains(&self, p: DVec3) -> bool {
        let Some(a) = self.unit_axis() else {
            return false;
        };
        let d = p - self.base_centre;
        let t = d.dot(a);
        let (t0, t1) = (self.length.min(0.0), self.length.max(0.0));
        t >= t0 && t <= t1 && (d - t * a).length_squared() <= self.radius * self.radius
    }
    fn bounds(&self) -> (DVec3, DVec3) {
        let Some(a) = self.unit_axis() else {
            // Not finite: voxelize() reports the invalid shape.
            return (DVec3::splat(f64::NAN), DVec3::splat(f64::NAN));
        };
        let top = self.base_centre + self.length * a;
        // A disc of radius r normal to a extends r * sqrt(1 - a_i^2) along axis i.
        let half = self.radius * (DVec3::ONE - a * a).max(DVec3::ZERO).map(f64::sqrt);
        (self.base_centre.min(top) - half, self.base_centre.max(top) + half)
    }
    fn volume(&self) -> Option<f64> {
        Some(std::f64::consts::PI * self.radius * self.radius * self.length.abs())
    }
}

/// A triangle mesh as a solid, tested with the generalized winding number
/// (see the module documentation).
pub struct MeshSolid {
    /// Triangles in hierarchy order.
    triangles: Vec<[DVec3; 3]>,
    nodes: Vec<Node>,
    bounds: (DVec3, DVec3),
    report: MeshReport,
}

/// Triangles per leaf of the hierarchy.
const LEAF_SIZE: usize = 8;
/// A cluster of radius R is approximated when the point is farther than
/// `BETA * R` from its centre. With the second-order expansion the error is
/// of order `(1/BETA)^3` of the cluster's (already small) contribution;
/// Barill et al. use 2. The tests measure the error against the exact sum
/// (mean 9e-4, worst 7e-3 around a torus of 4096 triangles).
const BETA: f64 = 2.0;
/// Where the approximate |w| is within this of 1/2, recompute exactly. The
/// worst approximation error measured in the tests (random points around a
/// torus and an open sphere) is 7e-3, 35 times smaller, so a point classified
/// without the exact sum is classified as the exact sum would classify it.
/// Off the surface of a closed mesh |w| is 0 or 1, so the exact sum is only
/// paid for near holes and (within a fraction of a triangle) on the surface.
const EXACT_BAND: f64 = 0.25;
/// `1 / (4 pi)`.
const INV_4PI: f64 = 0.25 * std::f64::consts::FRAC_1_PI;

/// A node of the bounding-volume hierarchy, with the multipole moments of
/// its triangles about `centre` (area-weighted centroid). With `an` the
/// area-weighted normal of a triangle and `d` positions relative to `centre`:
/// `dipole = sum an`, `m1 = sum (integral d dA / A) (x) an` (order 1), and
/// `t2[i] = sum (integral d d^T dA / A) an_i` (order 2).
struct Node {
    centre: DVec3,
    /// Largest distance from `centre` to a vertex of the node.
    radius: f64,
    dipole: DVec3,
    m1: DMat3,
    t2: [DMat3; 3],
    /// Triangles `start..end` (in hierarchy order).
    start: u32,
    end: u32,
    /// Children, or `NO_CHILD` for a leaf.
    left: u32,
    right: u32,
}

const NO_CHILD: u32 = u32::MAX;

/// Signed solid angle of triangle `t` seen from `q` (van Oosterom &
/// Strackee 1983): positive when `q` is behind the triangle (the side its
/// counter-clockwise normal points away from).
#[inline]
fn solid_angle(t: &[DVec3; 3], q: DVec3) -> f64 {
    let (a, b, c) = (t[0] - q, t[1] - q, t[2] - q);
    let (la, lb, lc) = (a.length(), b.length(), c.length());
    let det = a.dot(b.cross(c));
    let den = la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb;
    2.0 * det.atan2(den)
}

impl MeshSolid {
    /// Builds the solid; fails on an empty mesh or non-finite coordinates.
    pub fn new(mesh: &Mesh) -> Result<Self> {
        if mesh.triangles.is_empty() {
            return Err(VoxelError::InvalidShape("the mesh has no triangles: nothing to voxelise".into()).into());
        }
        if let Some(i) = mesh.triangles.iter().position(|t| t.iter().any(|v| !v.is_finite())) {
            return Err(VoxelError::InvalidShape(format!(
                "triangle {i} of the mesh has a non-finite coordinate: check the file and the placement (scale, rotation)"
            )).into());
        }
        let report = diagnose(mesh);
        let n = mesh.triangles.len();
        let centroids: Vec<DVec3> = mesh.triangles.iter().map(|t| (t[0] + t[1] + t[2]) / 3.0).collect();
        let mut order: Vec<u32> = (0..n as u32).collect();
        let mut nodes = Vec::with_capacity(2 * n / LEAF_SIZE + 1);
        build(&mut nodes, &mut order, 0, &centroids);
        let triangles: Vec<[DVec3; 3]> = order.iter().map(|&i| mesh.triangles[i as usize]).collect();
        for node in &mut nodes {
            node.set_moments(&triangles[node.start as usize..node.end as usize]);
        }
        Ok(Self { triangles, nodes, bounds: report.bounds, report })
    }

    /// The mesh's diagnostics.
    pub fn report(&self) -> &MeshReport {
        &self.report
    }

    /// Generalized winding number at `p`: far clusters approximated, exact
    /// where the result is near 1/2 (see the module documentation).
    pub fn winding_number(&self, p: DVec3) -> f64 {
        let w = self.winding_number_approx(p);
        if (w.abs() - 0.5).abs() < EXACT_BAND {
            self.winding_number_exact(p)
        } else {
            w
        }
    }

    /// Generalized winding number at `p`, summed exactly over every
    /// triangle: O(triangles).
    pub fn winding_number_exact(&self, p: DVec3) -> f64 {
        self.triangles.iter().map(|t| solid_angle(t, p)).sum::<f64>() * INV_4PI
    }

    /// The hierarchical approximation alone.
    fn winding_number_approx(&self, p: DVec3) -> f64 {
        self.winding_number_order::<2>(p)
    }

    /// The hierarchical approximation with far clusters expanded to `ORDER`.
    fn winding_number_order<const ORDER: usize>(&self, p: DVec3) -> f64 {
        // Balanced hierarchy: depth <= log2(triangles) + 1 < 64 for any
        // mesh that fits in memory, and the stack never holds more than depth + 1.
        let mut stack = [0u32; 64];
        let mut len = 1;
        let mut sum = 0.0;
        while len > 0 {
            len -= 1;
            let node = &self.nodes[stack[len] as usize];
            let r = node.centre - p;
            let d2 = r.length_squared();
            if d2 > BETA * BETA * node.radius * node.radius {
                sum += node.far_field::<ORDER>(r, d2);
            } else if node.left == NO_CHILD {
                sum += self.triangles[node.start as usize..node.end as usize]
                    .iter()
                    .map(|t| solid_angle(t, p))
                    .sum::<f64>();
            } else {
                stack[len] = node.left;
                stack[len + 1] = node.right;
                len += 2;
            }
        }
        sum * INV_4PI
    }
}

/// Builds the hierarchy over `order[..]` (whose first triangle is number
/// `offset` in hierarchy order); returns the node's index. Splits at the
/// median centroid along the widest axis, so the tree is balanced whatever
/// the geometry.
fn build(nodes: &mut Vec<Node>, order: &mut [u32], offset: usize, centroids: &[DVec3]) -> u32 {
    let index = nodes.len();
    nodes.push(Node {
        centre: DVec3::ZERO,
        radius: 0.0,
        dipole: DVec3::ZERO,
        m1: DMat3::ZERO,
        t2: [DMat3::ZERO; 3],
        start: offset as u32,
        end: (offset + order.len()) as u32,
        left: NO_CHILD,
        right: NO_CHILD,
    });
    if order.len() > LEAF_SIZE {
        let (mut lo, mut hi) = (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY));
        for &i in order.iter() {
            lo = lo.min(centroids[i as usize]);
            hi = hi.max(centroids[i as usize]);
        }
        let extent = hi - lo;
        let axis = if extent.x >= extent.y && extent.x >= extent.z {
            0
        } else if extent.y >= extent.z {
            1
        } else {
            2
        };
        let mid = order.len() / 2;
        order.select_nth_unstable_by(mid, |&a, &b| centroids[a as usize][axis].total_cmp(&centroids[b as usize][axis]));
        let (left, right) = order.split_at_mut(mid);
        let l = build(nodes, left, offset, centroids);
        let r = build(nodes, right, offset + mid, centroids);
        nodes[index].left = l;
        nodes[index].right = r;
    }
    index as u32
}

impl Node {
    fn set_moments(&mut self, tris: &[[DVec3; 3]]) {
        let mut area = 0.0;
        let mut weighted = DVec3::ZERO;
        let mut mean = DVec3::ZERO;
        for t in tris {
            let a = 0.5 * (t[1] - t[0]).cross(t[2] - t[0]).length();
            let c = (t[0] + t[1] + t[2]) / 3.0;
            area += a;
            weighted += a * c;
            mean += c;
        }
        self.centre = if area > 0.0 { weighted / area } else { mean / tris.len() as f64 };
        for t in tris {
            let v = t.map(|x| x - self.centre);
            self.radius = self.radius.max(v[0].length()).max(v[1].length()).max(v[2].length());
            let an = 0.5 * (v[1] - v[0]).cross(v[2] - v[0]);
            self.dipole += an;
            let c = (v[0] + v[1] + v[2]) / 3.0;
            // c (x) an: column i is c * an_i, so entry (j, i) = c_j an_i.
            self.m1 += DMat3::from_cols(c * an.x, c * an.y, c * an.z);
            // Second moment over the triangle: integral d d^T dA
            //   = A/12 (sum v v^T + s s^T), s = v0 + v1 + v2.
            let s = v[0] + v[1] + v[2];
            let outer = |u: DVec3| DMat3::from_cols(u * u.x, u * u.y, u * u.z);
            let second = (outer(v[0]) + outer(v[1]) + outer(v[2]) + outer(s)) * (1.0 / 12.0);
            for i in 0..3 {
                self.t2[i] += second * an[i];
            }
        }
    }

    /// Sum of the solid angles of the node's triangles seen from a point at
    /// `centre - r`, by the Taylor expansion of `an . x / |x|^3` about
    /// `x = r` to second order (`d2 = |r|^2`).
    #[inline]
    fn far_field<const ORDER: usize>(&self, r: DVec3, d2: f64) -> f64 {
        let inv3 = 1.0 / (d2 * d2.sqrt());
        let inv5 = inv3 / d2;
        let inv7 = inv5 / d2;
        let order0 = self.dipole.dot(r) * inv3;
        if ORDER == 0 {
            return order0;
        }
        let m = &self.m1;
        let trace1 = m.x_axis.x + m.y_axis.y + m.z_axis.z;
        let order1 = trace1 * inv3 - 3.0 * r.dot(*m * r) * inv5;
        if ORDER == 1 {
            return order0 + order1;
        }
        let tr = [self.t2[0] * r, self.t2[1] * r, self.t2[2] * r];
        let cubic = r.x * r.dot(tr[0]) + r.y * r.dot(tr[1]) + r.z * r.dot(tr[2]);
        let mixed = tr[0].x + tr[1].y + tr[2].z;
        let trace2 = r.x * trace(&self.t2[0]) + r.y * trace(&self.t2[1]) + r.z * trace(&self.t2[2]);
        let order2 = 7.5 * cubic * inv7 - 1.5 * (2.0 * mixed + trace2) * inv5;
        order0 + order1 + order2
    }
}

fn trace(m: &DMat3) -> f64 {
    m.x_axis.x + m.y_axis.y + m.z_axis.z
}

impl std::fmt::Debug for MeshSolid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MeshSolid")
            .field("triangles", &self.triangles.len())
            .field("nodes", &self.nodes.len())
            .field("bounds", &self.bounds)
            .finish()
    }
}

impl Shape for MeshSolid {
    fn contains(&self, p: DVec3) -> bool {
        let (lo, hi) = self.bounds;
        p.cmpge(lo).all() && p.cmple(hi).all() && self.winding_number(p).abs() > 0.5
    }
    fn bounds(&self) -> (DVec3, DVec3) {
        self.bounds
    }
    /// The enclosed volume, known only for a watertight mesh.
    fn volume(&self) -> Option<f64> {
        self.report.is_watertight().then(|| self.report.signed_volume.abs())
    }
}

/// Why a grid could not be voxelised (inside [`Error::Voxel`](crate::Error::Voxel)).
#[derive(Debug, thiserror::Error)]
pub enum VoxelError {
    /// The shape's bounding box does not overlap the domain.
    #[error("geometry outside the domain: its bounds {shape_min} .. {shape_max} do not overlap the domain {domain_min} .. {domain_max}; check translation and scale (e.g. a mesh drawn in millimetres in a domain in metres needs scale 0.001)")]
    OutsideDomain {
        /// Shape's lower corner.
        shape_min: DVec3,
        /// Shape's upper corner.
        shape_max: DVec3,
        /// Domain's lower corner (outer face of the first cells).
        domain_min: DVec3,
        /// Domain's upper corner (outer face of the last cells).
        domain_max: DVec3,
    },
    /// Grid dimensions, cell size or origin that cannot be used.
    #[error("invalid voxel grid: {0}")]
    InvalidGrid(String),
    /// A shape that cannot be voxelised (no triangles, NaN, zero axis...).
    #[error("invalid geometry: {0}")]
    InvalidShape(String),
}

/// The result of [`voxelize`].
#[derive(Clone, Debug, PartialEq)]
pub struct Voxels {
    /// Grid dimensions (nx, ny, nz).
    pub dims: (u32, u32, u32),
    /// Solid flag per cell, by blocks: only blocks that meet the shape's
    /// bounding box are worked out, the rest cost one value each.
    pub solid: CellBlocks<bool>,
    /// Number of solid cells.
    pub marked: usize,
    /// Human-readable warnings: thin features, clipped geometry, volume
    /// lost at this resolution. Empty when all is well.
    pub warnings: Vec<String>,
}

impl Voxels {
    /// Whether cell (x, y, z) is solid.
    pub fn is_solid(&self, x: u32, y: u32, z: u32) -> bool {
        self.solid[[x, y, z]]
    }
}

/// A warning if the shape's bounding box is thinner than two cells along
/// some axis: such a feature may vanish (no cell centre inside) or leak
/// (fluid passes through the gaps of a wall one cell thick in places).
/// Only the bounding box is checked; [`voxelize`] also compares the marked
/// volume with [`Shape::volume`], which catches thin walls at an angle.
pub fn thin_feature_warning(shape: &dyn Shape, cell_size: f64, dims: (u32, u32, u32)) -> Option<String> {
    let (lo, hi) = shape.bounds();
    let extent = (hi - lo) / cell_size;
    // An axis of one cell (a 2D case) cannot hold a thin feature.
    let cells = [dims.0, dims.1, dims.2];
    let axis = (0..3).filter(|&a| cells[a] > 1).min_by(|&a, &b| extent[a].total_cmp(&extent[b]))?;
    (extent[axis] < 2.0).then(|| {
        format!(
            "the geometry is only {:.2} cells thick along {} (bounds {lo} .. {hi}): a feature thinner than two cells may vanish or leak; refine the grid or thicken the geometry",
            extent[axis],
            ["x", "y", "z"][axis]
        )
    })
}

/// Marks every cell whose centre `origin + cell_size * (x, y, z)` is inside
/// `shape`. Only cells within the shape's bounding box are tested, by blocks
/// of [`CellBlocks`] in parallel (a block that [`Shape::contains_box`] says is
/// inside is marked whole), so the cost and the memory go with the shape's
/// blocks, not with the box.
pub fn voxelize(shape: &(dyn Shape + Sync), dims: (u32, u32, u32), cell_size: f64, origin: DVec3) -> Result<Voxels> {
    let (nx, ny, nz) = dims;
    if nx == 0 || ny == 0 || nz == 0 {
        return Err(VoxelError::InvalidGrid(format!(
            "dimensions {nx} x {ny} x {nz}: every dimension must be at least 1"
        ))
        .into());
    }
    if !(cell_size.is_finite() && cell_size > 0.0) {
        return Err(
            VoxelError::InvalidGrid(format!("cell size {cell_size}: it must be a positive finite length")).into()
        );
    }
    if !origin.is_finite() {
        return Err(VoxelError::InvalidGrid(format!("origin {origin} is not finite")).into());
    }
    let cells = (nx as usize)
        .checked_mul(ny as usize)
        .and_then(|c| c.checked_mul(nz as usize))
        .ok_or_else(|| VoxelError::InvalidGrid(format!("{nx} x {ny} x {nz} cells are too many to number")))?;

    let (smin, smax) = shape.bounds();
    if !(smin.is_finite() && smax.is_finite() && smin.cmple(smax).all()) {
        return Err(VoxelError::InvalidShape(format!(
            "its bounds {smin} .. {smax} are not a finite box: check the shape's parameters (NaN or infinite coordinates, a zero cylinder axis, a negative radius, min above max)"
        )).into());
    }
    let n = DVec3::new(f64::from(nx), f64::from(ny), f64::from(nz));
    let domain_min = origin - 0.5 * cell_size;
    let domain_max = origin + (n - 0.5) * cell_size;
    if smax.cmplt(domain_min).any() || smin.cmpgt(domain_max).any() {
        return Err(VoxelError::OutsideDomain { shape_min: smin, shape_max: smax, domain_min, domain_max }.into());
    }

    // Cells whose centres may be inside (`lo..hi`), with one cell of slack
    // so that rounding never drops a cell: `contains` decides.
    let (mut lo, mut hi) = ([0u32; 3], [0u32; 3]);
    for axis in 0..3 {
        let last = n[axis] - 1.0;
        lo[axis] = (((smin[axis] - origin[axis]) / cell_size).floor() - 1.0).clamp(0.0, last) as u32;
        hi[axis] = (((smax[axis] - origin[axis]) / cell_size).ceil() + 1.0).clamp(0.0, last) as u32 + 1;
    }
    let centre = |[x, y, z]: [u32; 3]| origin + cell_size * DVec3::new(f64::from(x), f64::from(y), f64::from(z));
    let solid = CellBlocks::par_from_region(
        Dims::new(nx, ny, nz),
        false,
        lo,
        hi,
        |a, b| shape.contains_box(centre(a), centre(b.map(|v| v - 1))).then_some(true),
        |p| shape.contains(centre(p)),
    );
    let marked = solid.count(|s| s);

    let mut warnings = Vec::new();
    warnings.extend(thin_feature_warning(shape, cell_size, dims));
    let clipped = smin.cmplt(domain_min).any() || smax.cmpgt(domain_max).any();
    if clipped {
        warnings.push(format!(
            "the geometry {smin} .. {smax} extends beyond the domain {domain_min} .. {domain_max}: the part outside is cut off"
        ));
    }
    if marked == 0 {
        warnings.push(
            "no cell centre lies inside the geometry: it vanished at this resolution; refine the grid or check the geometry".into(),
        );
    } else if marked == cells {
        warnings.push("every cell is solid: check the geometry's placement and size".into());
    } else if let (false, Some(volume)) = (clipped, shape.volume()) {
        let expected = volume / cell_size.powi(3);
        let off = (marked as f64 - expected) / expected;
        if off.abs() > 0.3 {
            warnings.push(format!(
                "{marked} cells are solid but the geometry's volume is {expected:.1} cells ({:+.0}%): parts of it are too thin for this grid (thin walls vanish or leak, narrow gaps close); refine the grid",
                100.0 * off
            ));
        }
    }
    Ok(Voxels { dims, solid, marked, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stl::test_meshes::{cube, flipped, icosphere, torus};
    use crate::stl::{transformed, Placement};
    use crate::Error;
    use std::f64::consts::PI;

    /// Cells whose centres are inside, counted straight from `contains`.
    fn brute_force(shape: &dyn Shape, dims: (u32, u32, u32), h: f64, origin: DVec3) -> Vec<bool> {
        let mut out = Vec::new();
        for z in 0..dims.2 {
            for y in 0..dims.1 {
                for x in 0..dims.0 {
                    out.push(shape.contains(origin + h * DVec3::new(x as f64, y as f64, z as f64)));
                }
            }
        }
        out
    }

    fn mismatches(a: &[bool], b: &[bool]) -> usize {
        a.iter().zip(b).filter(|(x, y)| x != y).count()
    }

    /// Tiny deterministic generator for test points.
    fn lcg(state: &mut u64) -> f64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*state >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn voxel_sphere_mesh_volume_and_agreement_with_analytic_sphere() {
        let h = 0.5;
        let dims = (48, 48, 48);
        let origin = DVec3::new(-0.3, 0.1, 0.2);
        let centre = origin + DVec3::new(24.2, 23.7, 24.1) * h;
        let r = 9.0; // 18 cells
        let mesh = icosphere(centre, r, 3);
        assert_eq!(mesh.triangles.len(), 1280);
        let solid = MeshSolid::new(&mesh).unwrap();
        let vox = voxelize(&solid, dims, h, origin).unwrap();
        assert!(vox.warnings.is_empty(), "{:?}", vox.warnings);
        assert_eq!(vox.marked, vox.solid.to_dense().iter().filter(|&&s| s).count());

        // Tolerance: cells whose centres lie within about half a cell of the
        // surface can go either way; there are ~ area / h^2 of them, so the
        // count can be off by up to ~ 0.5 * area / h^2 (1.5 / 18 = 8% of the
        // volume; in practice the errors cancel and it is far smaller).
        let poly_volume = solid.report().signed_volume;
        let poly_area: f64 = mesh.triangles.iter().map(|t| 0.5 * (t[1] - t[0]).cross(t[2] - t[0]).length()).sum();
        let cells = poly_volume / h.powi(3);
        let tol = 0.5 * poly_area / (h * h);
        let err = vox.marked as f64 - cells;
        assert!(err.abs() < tol, "marked {} vs polyhedron {cells:.1} cells (tol {tol:.0})", vox.marked);
        // The analytic sphere is larger than the inscribed polyhedron by
        // the faceting deficit (3.4% for 320 triangles, 0.9% for 1280).
        let sphere = Sphere { centre, radius: r };
        let sphere_cells = sphere.volume().unwrap() / h.powi(3);
        let deficit = sphere_cells - cells;
        assert!(deficit > 0.0 && deficit < 0.01 * sphere_cells, "deficit {deficit} of {sphere_cells}");
        assert!((vox.marked as f64 - sphere_cells).abs() < tol + deficit);
        eprintln!(
            "sphere r = {} cells, 1280 triangles: marked {} cells, polyhedron {cells:.1} ({:+.3}%), sphere {sphere_cells:.1} ({:+.3}%)",
            r / h,
            vox.marked,
            100.0 * err / cells,
            100.0 * (vox.marked as f64 - sphere_cells) / sphere_cells
        );

        // Cell by cell: the mesh and the analytic sphere differ only in the
        // shell between the polyhedron's inradius and the sphere.
        let inradius = mesh
            .triangles
            .iter()
            .map(|t| {
                let n = (t[1] - t[0]).cross(t[2] - t[0]).normalize();
                (t[0] - centre).dot(n)
            })
            .fold(f64::INFINITY, f64::min);
        assert!(inradius > 0.9 * r);
        let analytic = voxelize(&sphere, dims, h, origin).unwrap();
        assert_eq!(analytic.solid.to_dense(), brute_force(&sphere, dims, h, origin));
        let mut differ = 0;
        for z in 0..48 {
            for y in 0..48 {
                for x in 0..48 {
                    if vox.is_solid(x, y, z) != analytic.is_solid(x, y, z) {
                        differ += 1;
                        let p = origin + h * DVec3::new(x as f64, y as f64, z as f64);
                        let d = p.distance(centre);
                        assert!(
                            d >= inradius - 1e-9 && d <= r + 1e-9,
                            "cell ({x},{y},{z}) at distance {d} differs outside the shell [{inradius}, {r}]"
                        );
                    }
                }
            }
        }
        eprintln!("mesh vs analytic sphere: {differ} cells differ, all in the faceting shell");
    }

    #[test]
    fn voxel_multipole_expansion_converges() {
        // One triangle seen from afar: the error of the order-k expansion
        // falls as d^-(k+3) (order 1 vanishes about the centroid), so
        // doubling the distance divides it by 16 at order 0 and 32 at order 2.
        let t = Mesh { triangles: vec![[DVec3::ZERO, DVec3::new(1.0, 0.2, 0.1), DVec3::new(0.3, 0.9, -0.2)]] };
        let s = MeshSolid::new(&t).unwrap();
        let errors = |d: f64| {
            let p = DVec3::new(0.4, 0.3, 0.0) + d * DVec3::new(0.3, -0.5, 0.8).normalize();
            let exact = s.winding_number_exact(p);
            [s.winding_number_order::<0>(p) - exact, s.winding_number_order::<2>(p) - exact]
        };
        let (near, far) = (errors(6.0), errors(12.0));
        let ratio = [near[0] / far[0], near[1] / far[1]];
        assert!((ratio[0] - 16.0).abs() < 2.0 && (ratio[1] - 32.0).abs() < 4.0, "{ratio:?}");
        assert!(far[1].abs() < 0.05 * far[0].abs(), "{far:?}");

        // A non-convex mesh: each order is more accurate than the last.
        let solid = MeshSolid::new(&torus(DVec3::new(0.3, -0.2, 0.1), 3.0, 1.0, 64, 32)).unwrap();
        let mut state = 7;
        let mut worst = [0.0f64; 3];
        for _ in 0..2000 {
            let p = DVec3::new(lcg(&mut state), lcg(&mut state), lcg(&mut state)) * 10.0 - 5.0;
            let exact = solid.winding_number_exact(p);
            let approx = [
                solid.winding_number_order::<0>(p),
                solid.winding_number_order::<1>(p),
                solid.winding_number_order::<2>(p),
            ];
            for k in 0..3 {
                worst[k] = worst[k].max((approx[k] - exact).abs());
            }
        }
        eprintln!("torus: worst error of the order 0, 1, 2 expansions {worst:?}");
        assert!(worst[2] < 0.5 * worst[1] && worst[1] < 0.5 * worst[0], "{worst:?}");
    }

    #[test]
    fn voxel_fast_winding_number_matches_exact_sum() {
        // Non-convex closed mesh, an open one, and points near and far.
        let closed = torus(DVec3::new(0.3, -0.2, 0.1), 3.0, 1.0, 64, 32);
        let mut open = icosphere(DVec3::ZERO, 2.0, 3);
        open.triangles.truncate(1000);
        let mut state = 7;
        for mesh in [closed, open] {
            let solid = MeshSolid::new(&mesh).unwrap();
            let mut worst: f64 = 0.0;
            for _ in 0..4000 {
                let p = DVec3::new(lcg(&mut state), lcg(&mut state), lcg(&mut state)) * 10.0 - 5.0;
                let exact = solid.winding_number_exact(p);
                worst = worst.max((solid.winding_number_approx(p) - exact).abs());
                let w = solid.winding_number(p);
                assert_eq!(w.abs() > 0.5, exact.abs() > 0.5, "at {p}: {w} vs {exact}");
            }
            eprintln!("{} triangles: worst |approximate - exact| winding number {worst:.2e}", mesh.triangles.len());
            assert!(worst < 0.2 * EXACT_BAND, "{worst}");
        }
        // Winding number of the closed torus: 1 in the tube, 0 in the hole.
        let t = MeshSolid::new(&torus(DVec3::ZERO, 3.0, 1.0, 64, 32)).unwrap();
        assert!((t.winding_number_exact(DVec3::new(3.0, 0.0, 0.0)) - 1.0).abs() < 1e-9);
        assert!(t.winding_number_exact(DVec3::ZERO).abs() < 1e-9);
        assert!((t.winding_number(DVec3::new(3.0, 0.0, 0.0)) - 1.0).abs() < 0.2 * EXACT_BAND);
    }

    /// Box with faces between cell centres: exactly 20^3 cells inside.
    fn test_cube() -> Mesh {
        cube(DVec3::splat(10.5), DVec3::splat(30.5))
    }
    const CUBE_DIMS: (u32, u32, u32) = (40, 40, 40);

    /// What a single ray cast does: a cell is inside if a ray from its
    /// centre crosses the surface an odd number of times.
    fn ray_parity(mesh: &Mesh, p: DVec3) -> bool {
        // A generic direction, so the ray never grazes an edge of the cube.
        let d = DVec3::new(1.0, 0.0123, 0.0371);
        let mut hits = 0;
        for [a, b, c] in &mesh.triangles {
            // Moeller-Trumbore.
            let (e1, e2) = (*b - *a, *c - *a);
            let pv = d.cross(e2);
            let det = e1.dot(pv);
            if det.abs() < 1e-12 {
                continue;
            }
            let s = p - *a;
            let u = s.dot(pv) / det;
            let qv = s.cross(e1);
            let v = d.dot(qv) / det;
            let t = e2.dot(qv) / det;
            if u >= 0.0 && v >= 0.0 && u + v <= 1.0 && t > 0.0 {
                hits += 1;
            }
        }
        hits % 2 == 1
    }

    #[test]
    fn voxel_cube_with_hole_does_not_leak() {
        let closed = test_cube();
        let reference = voxelize(&MeshSolid::new(&closed).unwrap(), CUBE_DIMS, 1.0, DVec3::ZERO).unwrap();
        assert_eq!(reference.marked, 20 * 20 * 20);
        let expected = Cuboid { min: DVec3::splat(10.5), max: DVec3::splat(30.5) };
        assert_eq!(reference.solid.to_dense(), brute_force(&expected, CUBE_DIMS, 1.0, DVec3::ZERO));

        // Remove one triangle of the +x face: half that face is a hole.
        let mut holed = closed.clone();
        holed.triangles.remove(2);
        let solid = MeshSolid::new(&holed).unwrap();
        assert_eq!(solid.report().open_edges, 3);
        assert!(!solid.report().is_watertight());
        let vox = voxelize(&solid, CUBE_DIMS, 1.0, DVec3::ZERO).unwrap();
        // Inside the cube the missing triangle subtends less than a
        // hemisphere, so w = 1 - (its solid angle) / 4 pi stays above 1/2:
        // the interior is exactly that of the closed cube.
        assert_eq!(mismatches(&vox.solid.to_dense(), &reference.solid.to_dense()), 0);
        // A single ray cast leaks: a cell inside whose ray leaves through the
        // hole sees no crossing and is called outside (about half the cube),
        // and a cell outside whose ray enters the cube and leaves through the
        // hole sees one crossing and is called inside.
        assert_eq!(
            brute_force_fn(CUBE_DIMS, |p| ray_parity(&closed, p)),
            reference.solid.to_dense(),
            "the ray cast itself is right on the closed cube"
        );
        let ray = brute_force_fn(CUBE_DIMS, |p| ray_parity(&holed, p));
        let wrong = mismatches(&ray, &reference.solid.to_dense());
        assert!(wrong > 4000, "the ray cast got {wrong} cells wrong");
        eprintln!(
            "cube with a hole: the winding number marks {} cells (all right), a single ray cast gets {wrong} cells wrong",
            vox.marked
        );
    }

    fn brute_force_fn(dims: (u32, u32, u32), f: impl Fn(DVec3) -> bool) -> Vec<bool> {
        let mut out = Vec::new();
        for z in 0..dims.2 {
            for y in 0..dims.1 {
                for x in 0..dims.0 {
                    out.push(f(DVec3::new(x as f64, y as f64, z as f64)));
                }
            }
        }
        out
    }

    #[test]
    fn voxel_inverted_cube_is_the_same_solid() {
        let closed = test_cube();
        let inverted = flipped(&closed);
        let solid = MeshSolid::new(&inverted).unwrap();
        assert!(solid.report().inverted);
        assert!((solid.winding_number(DVec3::splat(20.0)) + 1.0).abs() < 1e-9);
        let a = voxelize(&MeshSolid::new(&closed).unwrap(), CUBE_DIMS, 1.0, DVec3::ZERO).unwrap();
        let b = voxelize(&solid, CUBE_DIMS, 1.0, DVec3::ZERO).unwrap();
        assert_eq!(a, b);
        assert_eq!(b.marked, 8000);
    }

    #[test]
    fn voxel_transformed_cube_lands_where_expected() {
        let unit = cube(DVec3::ZERO, DVec3::ONE);
        // Scale 10, quarter turn about z, translate: [20.5, 30.5] x [5.5, 15.5] x [5.5, 15.5].
        let p = Placement { scale: 10.0, rotation_deg: [0.0, 0.0, 90.0], translation: [30.5, 5.5, 5.5] };
        let solid = MeshSolid::new(&transformed(&unit, &p)).unwrap();
        let dims = (40, 24, 20);
        let vox = voxelize(&solid, dims, 1.0, DVec3::ZERO).unwrap();
        let expected = Cuboid { min: DVec3::new(20.5, 5.5, 5.5), max: DVec3::new(30.5, 15.5, 15.5) };
        assert_eq!(vox.solid.to_dense(), brute_force(&expected, dims, 1.0, DVec3::ZERO));
        assert_eq!(vox.marked, 1000);
        assert!(vox.is_solid(21, 6, 6) && vox.is_solid(30, 15, 15));
        assert!(!vox.is_solid(20, 6, 6) && !vox.is_solid(31, 10, 10) && !vox.is_solid(25, 16, 10));

        // 45 degrees about x then 30 about z, scaled 12, in a finer grid:
        // every cell agrees with the rotated box tested point by point.
        let p = Placement { scale: 12.0, rotation_deg: [45.0, 0.0, 30.0], translation: [20.0, 20.0, 20.0] };
        let r_inv = p.rotation().transpose();
        let inside = |q: DVec3| {
            let local = r_inv * (q - DVec3::splat(20.0)) / 12.0;
            local.cmpgt(DVec3::ZERO).all() && local.cmplt(DVec3::ONE).all()
        };
        let solid = MeshSolid::new(&transformed(&unit, &p)).unwrap();
        let vox = voxelize(&solid, CUBE_DIMS, 1.0, DVec3::ZERO).unwrap();
        let truth = brute_force_fn(CUBE_DIMS, inside);
        // Cells whose centres lie on a face (here: local y = 0) may go either way.
        let on_face = brute_force_fn(CUBE_DIMS, |q| {
            let local = r_inv * (q - DVec3::splat(20.0)) / 12.0;
            let near = |a: f64| a.abs() < 1e-9 || (a - 1.0).abs() < 1e-9;
            local.cmpge(DVec3::splat(-1e-9)).all()
                && local.cmple(DVec3::splat(1.0 + 1e-9)).all()
                && (near(local.x) || near(local.y) || near(local.z))
        });
        let mut differ = 0;
        for (i, solid) in vox.solid.to_dense().into_iter().enumerate() {
            if solid != truth[i] {
                assert!(on_face[i], "cell {i} differs off the surface");
                differ += 1;
            }
        }
        eprintln!("rotated cube: {differ} cells on a face differ");
        assert!((vox.marked as f64 - 1728.0).abs() < 0.5 * 6.0 * 144.0);
    }

    /// What voxelising did when it filled a dense array: the cells of the
    /// shape's bounding box (one cell of slack) row by row, `contains` for each.
    fn dense_rows(shape: &dyn Shape, dims: (u32, u32, u32), h: f64, origin: DVec3) -> Vec<bool> {
        let (lo, hi) = slack_box(shape, dims, h, origin);
        let (nx, ny) = (dims.0 as usize, dims.1 as usize);
        let mut solid = vec![false; nx * ny * dims.2 as usize];
        for (row, cells) in solid.chunks_mut(nx).enumerate() {
            let (y, z) = ((row % ny) as u32, (row / ny) as u32);
            if (lo[1]..hi[1]).contains(&y) && (lo[2]..hi[2]).contains(&z) {
                for x in lo[0]..hi[0] {
                    let p = origin + h * DVec3::new(x as f64, y as f64, z as f64);
                    cells[x as usize] = shape.contains(p);
                }
            }
        }
        solid
    }

    /// The cells `lo..hi` of the shape's bounding box with one cell of slack.
    fn slack_box(shape: &dyn Shape, dims: (u32, u32, u32), h: f64, origin: DVec3) -> ([u32; 3], [u32; 3]) {
        let (smin, smax) = shape.bounds();
        let n = [dims.0, dims.1, dims.2];
        let lo =
            std::array::from_fn(|a| (((smin[a] - origin[a]) / h).floor() - 1.0).clamp(0.0, (n[a] - 1) as f64) as u32);
        let hi = std::array::from_fn(|a| {
            (((smax[a] - origin[a]) / h).ceil() + 1.0).clamp(0.0, (n[a] - 1) as f64) as u32 + 1
        });
        (lo, hi)
    }

    #[test]
    fn voxel_blocks_hold_what_the_dense_rows_held_cell_for_cell() {
        let o = DVec3::new(-0.3, 0.1, 0.2);
        let mesh_sphere = MeshSolid::new(&icosphere(DVec3::new(20.3, 17.9, 15.2), 11.0, 3)).unwrap();
        let mesh_cube = MeshSolid::new(&test_cube()).unwrap();
        let check = |name: &str, shape: &(dyn Shape + Sync), dims: (u32, u32, u32), h: f64, origin: DVec3| {
            let vox = voxelize(shape, dims, h, origin).unwrap();
            let dense = dense_rows(shape, dims, h, origin);
            assert_eq!(vox.solid.to_dense(), dense, "{name}");
            assert_eq!(vox.marked, dense.iter().filter(|&&s| s).count(), "{name}");
            assert!(vox.marked > 0, "{name}");
        };
        let sphere = Sphere { centre: DVec3::new(9.7, 10.2, 8.9), radius: 5.3 };
        check("sphere", &sphere, (37, 21, 18), 0.5, o);
        check("STL cube", &mesh_cube, CUBE_DIMS, 1.0, DVec3::ZERO);
        check("STL icosphere", &mesh_sphere, (44, 38, 33), 1.0, DVec3::ZERO);
        // Cut off by the box's far faces and its near ones.
        let clipped = Sphere { centre: DVec3::new(33.0, 1.0, 16.5), radius: 9.0 };
        check("clipped sphere", &clipped, (37, 21, 18), 1.0, DVec3::ZERO);
        let axis = DVec3::new(1.0, 2.0, 2.0);
        let cylinder = Cylinder { base_centre: DVec3::new(3.0, 4.0, 5.0), axis, radius: 4.5, length: 30.0 };
        check("cylinder", &cylinder, (40, 40, 40), 1.0, DVec3::ZERO);
        // Whole blocks inside, marked without testing each cell, and partial ones.
        let cuboid = Cuboid { min: DVec3::new(2.5, 0.0, 3.2), max: DVec3::new(60.7, 39.0, 35.0) };
        check("cuboid", &cuboid, (70, 40, 36), 1.0, DVec3::ZERO);
        let plate = Cuboid { min: DVec3::new(1.5, 2.5, -1.0), max: DVec3::new(50.5, 20.5, 1.0) };
        check("one layer", &plate, (64, 40, 1), 1.0, DVec3::ZERO);
    }

    /// A small shape in a box of more than 2^32 cells: only the blocks its
    /// bounding box meets are worked out and stored, and every cell inside
    /// is marked; a box over half of it is whole blocks, not cells.
    #[test]
    fn voxel_a_shape_in_a_box_of_more_than_2_32_cells_costs_its_blocks() {
        let dims = (4096, 4096, 300);
        let grid = Dims::new(dims.0, dims.1, dims.2);
        assert!(grid.cells() > 1 << 32);
        let empty = CellBlocks::new(grid, false).bytes();
        let sphere = Sphere { centre: DVec3::new(1000.3, 3000.7, 150.2), radius: 6.5 };
        let cylinder =
            Cylinder { base_centre: DVec3::new(2000.5, 100.5, 10.0), axis: DVec3::Z, radius: 1.2, length: 250.0 };
        for (name, shape) in [("sphere", &sphere as &(dyn Shape + Sync)), ("cylinder", &cylinder)] {
            let start = std::time::Instant::now();
            let vox = voxelize(shape, dims, 1.0, DVec3::ZERO).unwrap();
            let seconds = start.elapsed().as_secs_f64();
            let (lo, hi) = slack_box(shape, dims, 1.0, DVec3::ZERO);
            let mut brute = 0;
            for z in lo[2]..hi[2] {
                for y in lo[1]..hi[1] {
                    brute +=
                        (lo[0]..hi[0]).filter(|&x| shape.contains(DVec3::new(x as f64, y as f64, z as f64))).count();
                }
            }
            assert_eq!(vox.marked, brute, "{name}");
            assert!(vox.marked as f64 > 0.8 * shape.volume().unwrap(), "{name}: {} cells", vox.marked);
            let blocks: usize = (0..3).map(|a| (hi[a].div_ceil(16) - lo[a] / 16) as usize).product();
            assert!(vox.solid.bytes() <= empty + blocks * 16 * 16 * 16, "{name}: {} bytes", vox.solid.bytes());
            assert!(vox.solid.bytes() < 64 << 20, "{name}: {} bytes", vox.solid.bytes());
            assert!(vox.warnings.is_empty(), "{name}: {:?}", vox.warnings);
            eprintln!("{name} in 4096 x 4096 x 300: {} cells, {} bytes, {seconds:.3} s", vox.marked, vox.solid.bytes());
        }
        let half = Cuboid { min: DVec3::ZERO, max: DVec3::new(2047.5, 4095.0, 299.0) };
        let vox = voxelize(&half, dims, 1.0, DVec3::ZERO).unwrap();
        assert_eq!(vox.marked, 2048 * 4096 * 300);
        assert_eq!(vox.solid.bytes(), empty, "whole blocks only");
        assert!(vox.is_solid(2047, 4095, 299) && !vox.is_solid(2048, 0, 0));
    }

    #[test]
    fn voxel_geometry_outside_domain_and_invalid_input_are_errors() {
        let far = Sphere { centre: DVec3::splat(1000.0), radius: 1.0 };
        let err = voxelize(&far, (10, 10, 10), 1.0, DVec3::ZERO).unwrap_err();
        assert!(matches!(err, Error::Voxel(VoxelError::OutsideDomain { .. })));
        let msg = err.to_string();
        assert!(msg.contains("geometry outside the domain") && msg.contains("check translation and scale"), "{msg}");
        assert!(msg.contains("[999, 999, 999]"), "{msg}");

        // A mesh in millimetres placed in a 10 cm domain.
        let mm = MeshSolid::new(&cube(DVec3::splat(200.0), DVec3::splat(300.0))).unwrap();
        assert!(matches!(
            voxelize(&mm, (10, 10, 10), 0.01, DVec3::ZERO),
            Err(Error::Voxel(VoxelError::OutsideDomain { .. }))
        ));

        let s = Sphere { centre: DVec3::splat(5.0), radius: 2.0 };
        for (dims, h) in [((0, 10, 10), 1.0), ((10, 10, 10), 0.0), ((10, 10, 10), f64::NAN)] {
            let err = voxelize(&s, dims, h, DVec3::ZERO).unwrap_err();
            assert!(matches!(err, Error::Voxel(VoxelError::InvalidGrid(_))), "{err}");
        }
        let zero_axis = Cylinder { base_centre: DVec3::ZERO, axis: DVec3::ZERO, radius: 1.0, length: 1.0 };
        let err = voxelize(&zero_axis, (10, 10, 10), 1.0, DVec3::ZERO).unwrap_err();
        assert!(err.to_string().contains("zero cylinder axis"), "{err}");
        let negative = Sphere { centre: DVec3::splat(5.0), radius: -1.0 };
        assert!(matches!(
            voxelize(&negative, (10, 10, 10), 1.0, DVec3::ZERO),
            Err(Error::Voxel(VoxelError::InvalidShape(_)))
        ));
        assert!(MeshSolid::new(&Mesh::default()).is_err());
        let nan = Mesh { triangles: vec![[DVec3::ZERO, DVec3::X, DVec3::splat(f64::NAN)]] };
        assert!(MeshSolid::new(&nan).unwrap_err().to_string().contains("triangle 0"));

        // Partly outside: voxelised, with a warning.
        let vox = voxelize(&s, (10, 10, 10), 1.0, DVec3::splat(4.0)).unwrap();
        assert!(vox.marked > 0);
        assert!(vox.warnings.iter().any(|w| w.contains("cut off")), "{:?}", vox.warnings);
    }

    #[test]
    fn voxel_cylinder_along_an_arbitrary_axis() {
        let h = 0.25;
        let dims = (64, 64, 64);
        let cyl = Cylinder {
            base_centre: DVec3::new(2.0, 3.0, 2.5),
            axis: DVec3::new(1.0, 2.0, 2.0), // |axis| = 3: only its direction counts
            radius: 1.5,
            length: 9.0,
        };
        let a = DVec3::new(1.0, 2.0, 2.0) / 3.0;
        let perp = DVec3::new(2.0, -1.0, 0.0).normalize();
        assert!(cyl.contains(cyl.base_centre + 4.5 * a + 1.4 * perp));
        assert!(!cyl.contains(cyl.base_centre + 4.5 * a + 1.6 * perp));
        assert!(!cyl.contains(cyl.base_centre + 9.1 * a));
        assert!(!cyl.contains(cyl.base_centre - 0.1 * a));
        assert!(cyl.contains(cyl.base_centre + 8.9 * a));

        let vox = voxelize(&cyl, dims, h, DVec3::ZERO).unwrap();
        assert_eq!(vox.solid.to_dense(), brute_force(&cyl, dims, h, DVec3::ZERO));
        let cells = cyl.volume().unwrap() / h.powi(3);
        let area = 2.0 * PI * 1.5 * 9.0 + 2.0 * PI * 1.5 * 1.5;
        let tol = 0.5 * area / (h * h);
        assert!((vox.marked as f64 - cells).abs() < tol, "{} vs {cells}", vox.marked);
        eprintln!(
            "cylinder: marked {} vs {cells:.1} cells ({:+.2}%)",
            vox.marked,
            100.0 * (vox.marked as f64 / cells - 1.0)
        );
        // The bounds are tight: solid cells reach within a cell of each face.
        let (lo, hi) = cyl.bounds();
        let (mut vlo, mut vhi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
        for z in 0..64 {
            for y in 0..64 {
                for x in 0..64 {
                    if vox.is_solid(x, y, z) {
                        let p = h * DVec3::new(x as f64, y as f64, z as f64);
                        vlo = vlo.min(p);
                        vhi = vhi.max(p);
                    }
                }
            }
        }
        assert!(vlo.cmpge(lo).all() && vhi.cmple(hi).all());
        assert!((vlo - lo).max_element() < h && (hi - vhi).max_element() < h, "{vlo} {lo} {vhi} {hi}");
    }

    #[test]
    fn voxel_cuboid_and_index_convention() {
        let c = Cuboid { min: DVec3::new(2.25, 3.25, 4.25), max: DVec3::new(10.25, 7.25, 5.25) };
        let dims = (12, 9, 7);
        let vox = voxelize(&c, dims, 1.0, DVec3::ZERO).unwrap();
        // x 3..=10, y 4..=7, z 5: 8 * 4 * 1 cells.
        assert_eq!(vox.marked, 32);
        assert!(vox.solid[3 + 12 * (4 + 9 * 5)] && vox.solid[10 + 12 * (7 + 9 * 5)]);
        assert!(!vox.solid[2 + 12 * (4 + 9 * 5)] && !vox.solid[3 + 12 * (4 + 9 * 4)]);
        assert!(vox.is_solid(3, 4, 5) && !vox.is_solid(3, 4, 4));
        // One cell thick along z: warned.
        assert!(vox.warnings.iter().any(|w| w.contains("thick along z")), "{:?}", vox.warnings);
        assert!(thin_feature_warning(&c, 0.4, (100, 100, 100)).is_none());
    }

    #[test]
    fn voxel_thin_rotated_plate_is_flagged_by_volume() {
        // A plate 0.4 cells thick at 45 degrees: its bounding box is thick,
        // but most cells lose it; the volume check says so.
        let plate = cube(DVec3::ZERO, DVec3::new(20.0, 20.0, 0.4));
        let p = Placement { rotation_deg: [45.0, 0.0, 0.0], translation: [5.3, 10.2, 5.1], ..Placement::default() };
        let solid = MeshSolid::new(&transformed(&plate, &p)).unwrap();
        assert!(thin_feature_warning(&solid, 1.0, (100, 100, 100)).is_none());
        let vox = voxelize(&solid, (32, 32, 32), 1.0, DVec3::ZERO).unwrap();
        assert!(vox.warnings.iter().any(|w| w.contains("too thin")), "{} cells, {:?}", vox.marked, vox.warnings);

        // A sphere between cell centres vanishes: warned.
        let tiny = Sphere { centre: DVec3::splat(5.5), radius: 0.3 };
        let vox = voxelize(&tiny, (10, 10, 10), 1.0, DVec3::ZERO).unwrap();
        assert_eq!(vox.marked, 0);
        assert!(vox.warnings.iter().any(|w| w.contains("vanished")));
        assert!(vox.warnings.iter().any(|w| w.contains("thinner than two cells")));
    }

    /// The cost claim: a 10k-triangle mesh filling a 128^3 grid. Run with
    /// `cargo test --release -p lbm-host voxel_timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn voxel_timing_10k_triangles_on_128_cubed() {
        let mesh = torus(DVec3::splat(64.0), 40.0, 20.0, 100, 50);
        assert_eq!(mesh.triangles.len(), 10_000);
        let start = std::time::Instant::now();
        let solid = MeshSolid::new(&mesh).unwrap();
        let built = start.elapsed();
        let vox = voxelize(&solid, (128, 128, 128), 1.0, DVec3::ZERO).unwrap();
        let total = start.elapsed();
        let cells = solid.volume().unwrap();
        eprintln!(
            "10k-triangle torus on 128^3 with {} threads: build {:.3} s, total {:.3} s; marked {} vs volume {cells:.0} cells ({:+.3}%)",
            rayon::current_num_threads(),
            built.as_secs_f64(),
            total.as_secs_f64(),
            vox.marked,
            100.0 * (vox.marked as f64 / cells - 1.0)
        );
        let sphere = icosphere(DVec3::splat(64.0), 60.0, 5);
        let start = std::time::Instant::now();
        let vox = voxelize(&MeshSolid::new(&sphere).unwrap(), (128, 128, 128), 1.0, DVec3::ZERO).unwrap();
        eprintln!(
            "{}-triangle sphere r = 60 on 128^3: {:.3} s, marked {}",
            sphere.triangles.len(),
            start.elapsed().as_secs_f64(),
            vox.marked
        );
    }
}
