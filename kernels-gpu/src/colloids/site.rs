//! One site's or one lane's share of a step with colloids. The fields are
//! read through closures, so each caller brings its own memory: slices on
//! the host, device pointers in a kernel.
//!
//! A step, in order:
//!
//! 1. [`link_sums`]: each colloid's links over the stored post-collision
//!    populations, lane by lane; [`Sums::add`] joins the lanes in order;
//! 2. the host solves the colloids' new velocities (implicitly) and `ΔM`;
//! 3. [`fluid`]: every fluid site pulls its populations, bouncing back on
//!    links into colloids and walls, and collides;
//! 4. the colloids move: [`clear`] the older map, [`paint`] it at the new
//!    centres, then [`cover`] settles the sites that changed: a covered
//!    site's mass and momentum go to its colloid, an uncovered site is
//!    filled from its fluid neighbours and the colloid pays for it.

use super::{box_around, cross, dot, surface_velocity, Around, Colloid, FluidParams, Space, Sums, FLUID, LANES, RHO0};
use crate::collision::Collision;
use crate::lattice::{opposite, Lattice, CS2};
use crate::real::Real;

/// Calls `each(unwrapped coordinates, site)` for the sites of lane `lane`'s
/// share of the box around `centre` (every [`LANES`]-th site of it, in
/// order) that the domain stores, or with `own` that it updates; sites
/// beyond a wall are skipped.
#[inline(always)]
fn lane_sites(space: &Space, centre: [f64; 3], radius: f64, lane: u32, own: bool, mut each: impl FnMut([i64; 3], u32)) {
    let (lo, side) = box_around(centre, radius, space);
    let count = side[0] * side[1] * side[2];
    let check = own && space.split();
    let mut k = lane as i64;
    while k < count {
        let x = [lo[0] + k % side[0], lo[1] + (k / side[0]) % side[1], lo[2] + k / (side[0] * side[1])];
        if let Some(n) = space.site(x) {
            if !check || space.owns(n) {
                each(x, n);
            }
        }
        k += LANES as i64;
    }
}

/// Whether the site at unwrapped coordinates `x` lies inside a sphere of
/// `radius` at `centre` (both in the same unwrapped frame).
#[inline(always)]
fn inside(x: [i64; 3], centre: [f64; 3], radius: f64) -> bool {
    let d: [f64; 3] = core::array::from_fn(|a| x[a] as f64 - centre[a]);
    dot(d, d) < radius * radius
}

/// Lane `lane` of colloid `c`: its sites get `c` in the map (`mark(site)`).
#[inline(always)]
pub fn paint(space: &Space, colloid: &Colloid, lane: u32, mut mark: impl FnMut(u32)) {
    lane_sites(space, colloid.centre, colloid.radius, lane, false, |x, n| {
        if inside(x, colloid.centre, colloid.radius) {
            mark(n)
        }
    });
}

/// Lane `lane` of colloid `c`: the sites the map gives `c` around its
/// previous centre become fluid again (`unmark(site)`).
#[inline(always)]
pub fn clear(
    space: &Space,
    c: u32,
    colloid: &Colloid,
    lane: u32,
    map: impl Fn(u32) -> u32,
    mut unmark: impl FnMut(u32),
) {
    lane_sites(space, colloid.previous, colloid.radius, lane, false, |_, n| {
        if map(n) == c {
            unmark(n)
        }
    });
}

/// `k_i = 2 w_i ρ₀ / c_s²` of direction `i`.
#[inline(always)]
fn link_rate<L: Lattice<Q>, const Q: usize>(i: usize) -> f64 {
    2.0 * L::W[i] * RHO0 / CS2
}

/// Lane `lane` of colloid `c` (centred as in the map `map`): what the links
/// of the sites the domain updates add up to over the post-collision
/// populations `post(i, site)` (shifted by `w_i`), going on from `start`
/// (zero, or a carry: see [`super::Share`]).
#[inline(always)]
pub fn link_sums<L: Lattice<Q>, const Q: usize, T: Real>(
    space: &Space,
    c: u32,
    colloid: &Colloid,
    lane: u32,
    map: impl Fn(u32) -> u32,
    post: impl Fn(usize, u32) -> T,
    start: Sums,
) -> Sums {
    // A link is at most sqrt(3) long: sites farther out have none.
    let reach = colloid.radius + 1.75;
    // A value: the kernel keeps the running sums in registers, not in the
    // partial sums' memory.
    let mut local = start;
    let sums = &mut local;
    lane_sites(space, colloid.centre, colloid.radius, lane, true, |x, n| {
        if !inside(x, colloid.centre, reach) || map(n) != FLUID {
            return;
        }
        let own = space.coords(n);
        for i in 1..Q {
            let ci = L::C[i];
            let Some(m) = space.neighbour(own, ci) else { continue };
            if map(m) != c {
                continue;
            }
            let cf = ci.map(|v| v as f64);
            let rb: [f64; 3] = core::array::from_fn(|a| x[a] as f64 + 0.5 * cf[a] - colloid.centre[a]);
            let rxc = cross(rb, cf);
            let hit = 2.0 * (post(i, n).to_f64() + L::W[i]);
            let g = [cf[0], cf[1], cf[2], rxc[0], rxc[1], rxc[2]];
            let k = link_rate::<L, Q>(i);
            for a in 0..3 {
                sums.force[a] += hit * cf[a];
                sums.torque[a] += hit * rxc[a];
            }
            let mut t = 0;
            for r in 0..6 {
                let kg = k * g[r];
                for col in r..6 {
                    sums.drag[t] += kg * g[col];
                    t += 1;
                }
                sums.mass_rate[r] += kg;
                sums.weight_moment[r] += L::W[i] * g[r];
            }
            sums.weight += L::W[i];
            sums.links += 1.0;
        }
    });
    local
}

/// The populations of the `solid` directions of site `n` (at `around`):
/// its own `f*_ī` back, with the moving wall's term, from a colloid
/// (`map`, `colloids`) or a wall.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn bounce_back<L: Lattice<Q>, const Q: usize, T: Real>(
    p: &FluidParams<T>,
    around: &Around,
    solid: u32,
    cell: &mut [T; Q],
    map: impl Fn(u32) -> u32,
    colloids: impl Fn(u32) -> Colloid,
    post: impl Fn(usize, u32) -> T,
    n: u32,
) {
    for i in 1..Q {
        if solid & (1 << i) == 0 {
            continue;
        }
        let ci = L::C[i];
        let cf = ci.map(|v| v as f64);
        let (u_b, extra) = match around.site([-ci[0], -ci[1], -ci[2]]) {
            None => (p.wall_velocity[if ci[2] > 0 { 0 } else { 1 }], 0.0),
            Some(m) => {
                let c = colloids(map(m));
                let x = around.own();
                let mid: [f64; 3] = core::array::from_fn(|a| x[a] as f64 - 0.5 * cf[a]);
                (surface_velocity(&c, p.space.displacement(mid, c.centre)), L::W[i] * c.share)
            }
        };
        cell[i] = post(opposite(i), n) + T::from_f64(link_rate::<L, Q>(i) * dot(u_b, cf) + extra);
    }
}

/// Site `n`'s fluid step. A fluid site pulls `f_i` from `n − c_i` out of
/// the post-collision populations `post(i, site)`; where that is inside a
/// colloid (`map`, `colloids`) or beyond a wall, it takes its own `f*_ī`
/// back with the moving-wall term instead. Then it collides with the body
/// force. Returns the post-collision populations, density and velocity, or
/// `None` for a solid site (which keeps its populations).
#[inline(always)]
pub fn fluid<L: Lattice<Q>, const Q: usize, T: Real, C: Collision<T>>(
    p: &FluidParams<T>,
    collision: &C,
    n: u32,
    map: impl Fn(u32) -> u32,
    colloids: impl Fn(u32) -> Colloid,
    post: impl Fn(usize, u32) -> T,
) -> Option<([T; Q], T, [T; 3])> {
    if map(n) != FLUID {
        return None;
    }
    let around = Around::of(&p.space, n);
    let mut cell = [T::ZERO; Q];
    cell[0] = post(0, n);
    // The common case first, lean: pull from fluid neighbours, and mark
    // the directions whose source is solid.
    let mut solid = 0u32;
    for i in 1..Q {
        let ci = L::C[i];
        match around.site([-ci[0], -ci[1], -ci[2]]) {
            Some(m) if map(m) == FLUID => cell[i] = post(i, m),
            _ => solid |= 1 << i,
        }
    }
    if solid != 0 {
        bounce_back::<L, Q, T>(p, &around, solid, &mut cell, map, colloids, post, n);
    }
    let (rho, u) = collision.collide::<L, Q, true>(&mut cell, p.force, T::ONE);
    Some((cell, rho, u))
}

/// Lane `lane` of colloid `c`, after its move (`colloid.centre` the new
/// centre): settles the sites the domain updates that the move changed
/// between the maps `old` and `new`, over the populations `post(i, site)`.
/// - A covered site's mass, momentum and angular momentum go into `sums`
///   (which starts at zero, or at a carry: see [`super::Share`]).
/// - An uncovered site gets the `w`-weighted mean of its neighbours that
///   are fluid in both maps (`fill(i, site, f_i)`), and `sums` pays for it.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn cover<L: Lattice<Q>, const Q: usize, T: Real>(
    space: &Space,
    c: u32,
    colloid: &Colloid,
    lane: u32,
    old: impl Fn(u32) -> u32,
    new: impl Fn(u32) -> u32,
    post: impl Fn(usize, u32) -> T,
    mut fill: impl FnMut(usize, u32, T),
    sums: &mut Sums,
) {
    // A move is under a site along each axis: the sites it changed lie
    // within `a + sqrt(3)` of the new centre.
    let reach = colloid.radius + 2.0;
    lane_sites(space, colloid.centre, colloid.radius, lane, true, |x, n| {
        if !inside(x, colloid.centre, reach) {
            return;
        }
        let (was, is) = (old(n), new(n));
        let (sign, cell) = if was == FLUID && is == c {
            (1.0, core::array::from_fn(|i| post(i, n)))
        } else if was == c && is == FLUID {
            let mut acc = [0.0f64; Q];
            let mut weight = 0.0;
            let own = space.coords(n);
            for j in 1..Q {
                let Some(m) = space.neighbour(own, L::C[j]) else { continue };
                if old(m) == FLUID && new(m) == FLUID {
                    weight += L::W[j];
                    for i in 0..Q {
                        acc[i] += L::W[j] * post(i, m).to_f64();
                    }
                }
            }
            let cell: [T; Q] = core::array::from_fn(|i| T::from_f64(if weight > 0.0 { acc[i] / weight } else { 0.0 }));
            for i in 0..Q {
                fill(i, n, cell[i]);
            }
            (-1.0, cell)
        } else {
            return;
        };
        let r: [f64; 3] = core::array::from_fn(|a| x[a] as f64 - colloid.centre[a]);
        let mut mass = 0.0;
        let mut j = [0.0; 3];
        for i in 0..Q {
            let f = cell[i].to_f64() + L::W[i];
            mass += f;
            for a in 0..3 {
                j[a] += f * L::C[i][a] as f64;
            }
        }
        let l = cross(r, j);
        sums.mass += sign * mass;
        for a in 0..3 {
            sums.momentum[a] += sign * j[a];
            sums.angular[a] += sign * l[a];
        }
        sums.sites += sign;
    });
}
