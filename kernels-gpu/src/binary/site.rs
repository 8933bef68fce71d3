//! One site's share of a binary-fluid step on a periodic box, the same
//! functions for the CPU solver and the kernels. The fields are read
//! through closures (`field(site)`), so each caller brings its own memory:
//! slices on the host, device pointers in a kernel.
//!
//! A step is three passes over the sites, each reading what the one before
//! wrote around a site:
//!
//! 1. [`chemical_potential`]: `μ` from `φ`;
//! 2. [`collide`]: pull the neighbours' post-collision populations, collide
//!    with the force `−φ ∇μ`; the buffers hold post-collision populations
//!    between steps;
//! 3. [`order_parameter`]: `φ − ∇·J` with the face fluxes `J = φ u − M ∇μ`.

use super::{gradient, laplacian, FreeEnergy};
use crate::collision::Collision;
use crate::lattice::{opposite, Lattice};
use crate::real::Real;

/// What every site's update needs: the box and the model's parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BinaryParams<T> {
    /// Sites along x, y, z (1 along z in 2D), periodic along each axis;
    /// site `x + nx (y + ny z)`.
    pub size: [u32; 3],
    /// The planes `z` a pass updates, `[first, end)`: the whole box, or a
    /// slab of a box split along z, whose first and last planes hold what
    /// its neighbours sent (so no updated site wraps along z).
    pub planes: [u32; 2],
    /// `A`, `B`, `κ`.
    pub free_energy: FreeEnergy<T>,
    /// The mobility `M`.
    pub mobility: T,
}

impl<T: Real> BinaryParams<T> {
    /// Sites in the box.
    #[inline(always)]
    pub fn sites(&self) -> u32 {
        self.size[0] * self.size[1] * self.size[2]
    }

    /// Sites in a plane of constant z.
    #[inline(always)]
    pub fn plane_sites(&self) -> u32 {
        self.size[0] * self.size[1]
    }

    /// Sites a pass updates.
    #[inline(always)]
    pub fn updated_sites(&self) -> u32 {
        (self.planes[1] - self.planes[0]) * self.plane_sites()
    }

    /// The `k`-th site a pass updates, if there are more than `k`.
    #[inline(always)]
    pub fn updated_site(&self, k: u64) -> Option<u32> {
        (k < self.updated_sites() as u64).then(|| self.planes[0] * self.plane_sites() + k as u32)
    }
}

/// A site's neighbourhood on the periodic box: its coordinates one step
/// down, its own and one step up along each axis, wrapped.
#[derive(Clone, Copy, Debug)]
pub struct Around {
    at: [[u32; 3]; 3],
    nx: u32,
    ny: u32,
}

impl Around {
    /// The neighbourhood of site `n` of a box of `size`.
    #[inline(always)]
    pub fn of(size: [u32; 3], n: u32) -> Self {
        let [nx, ny, _] = size;
        let own = [n % nx, (n / nx) % ny, n / (nx * ny)];
        let at = core::array::from_fn(|a| {
            let (v, len) = (own[a], size[a]);
            [if v == 0 { len - 1 } else { v - 1 }, v, if v + 1 == len { 0 } else { v + 1 }]
        });
        Self { at, nx, ny }
    }

    /// The site `c` (each component −1, 0 or 1) away.
    #[inline(always)]
    pub fn site(&self, c: [i32; 3]) -> u32 {
        let [x, y, z] = core::array::from_fn(|a| self.at[a][(c[a] + 1) as usize]);
        x + self.nx * (y + self.ny * z)
    }

    /// The site itself.
    #[inline(always)]
    pub fn own(&self) -> u32 {
        self.site([0; 3])
    }
}

/// `field` at site `n`'s lattice neighbours `n + c_i`, in the order of `L::C`.
#[inline(always)]
pub fn neighbours<L: Lattice<Q>, const Q: usize, T: Real>(around: &Around, field: impl Fn(u32) -> T) -> [T; Q] {
    core::array::from_fn(|i| field(around.site(L::C[i])))
}

/// `μ = A φ + B φ³ − κ ∇²φ` at site `n`.
#[inline(always)]
pub fn chemical_potential<L: Lattice<Q>, const Q: usize, T: Real>(
    p: &BinaryParams<T>,
    n: u32,
    phi: impl Fn(u32) -> T,
) -> T {
    let v = neighbours::<L, Q, T>(&Around::of(p.size, n), phi);
    p.free_energy.chemical_potential(v[0], laplacian::<L, Q, T>(&v))
}

/// Site `n`'s fluid step: pulls `f_i` from `n − c_i` out of the
/// post-collision populations `post(i, site)` and collides it with the
/// force `−φ ∇μ` (Guo forcing). Returns the post-collision populations,
/// the density and the velocity (with the half-force correction).
#[inline(always)]
pub fn collide<L: Lattice<Q>, const Q: usize, T: Real, C: Collision<T>>(
    p: &BinaryParams<T>,
    collision: &C,
    n: u32,
    post: impl Fn(usize, u32) -> T,
    phi: T,
    mu: impl Fn(u32) -> T,
) -> ([T; Q], T, [T; 3]) {
    let around = Around::of(p.size, n);
    let grad = gradient::<L, Q, T>(&neighbours::<L, Q, T>(&around, mu));
    let force = grad.map(|g| -phi * g);
    let mut cell: [T; Q] = core::array::from_fn(|i| post(i, around.site(L::C[opposite(i)])));
    let (rho, u) = collision.collide::<L, Q, true>(&mut cell, force, T::ONE);
    (cell, rho, u)
}

/// The flux of `φ` through the face from a site (`from`: its velocity
/// along the face's axis, `φ`, `μ`) to its neighbour up that axis (`to`):
/// `φ u − M ∇μ`, `φ` upwind (central values let the coupled flow and
/// interface grow unstable under explicit steps).
#[inline(always)]
fn face_flux<T: Real>(mobility: T, from: [T; 3], to: [T; 3]) -> T {
    let face = T::from_f64(0.5) * (from[0] + to[0]);
    let advected = face * if face > T::ZERO { from[1] } else { to[1] };
    advected - mobility * (to[2] - from[2])
}

/// Site `n`'s order parameter after the step, `φ − ∇·J` over its faces
/// (`u(site, axis)` the velocity). Each face's flux is computed alike by
/// the two sites it joins, so what leaves one enters the other, bit for
/// bit: `Σ φ` is conserved up to the rounding of each site's sum.
#[inline(always)]
pub fn order_parameter<L: Lattice<Q>, const Q: usize, T: Real>(
    p: &BinaryParams<T>,
    n: u32,
    phi: impl Fn(u32) -> T,
    mu: impl Fn(u32) -> T,
    u: impl Fn(u32, usize) -> T,
) -> T {
    let around = Around::of(p.size, n);
    let state = |site: u32, axis: usize| [u(site, axis), phi(site), mu(site)];
    let mut div = T::ZERO;
    for axis in 0..L::D {
        let mut step = [0; 3];
        step[axis] = 1;
        let up = around.site(step);
        step[axis] = -1;
        let down = around.site(step);
        let own = state(n, axis);
        let out = face_flux(p.mobility, own, state(up, axis));
        let into = face_flux(p.mobility, state(down, axis), own);
        div += out - into;
    }
    phi(n) - div
}
