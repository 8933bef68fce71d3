//! The colloids' motion, on the host: forces between close surfaces, the
//! implicit Newton–Euler update of each colloid from its link sums, and the
//! move. The same code serves the CPU and GPU runs, so both move their
//! colloids alike, bit for bit.
//!
//! **Implicit update** (Nguyen and Ladd 2002). The momentum a colloid's
//! links give it is linear in its new velocity `V′ = (U′, Ω′)`: with the
//! drag matrix `ζ`, the mass-return rate `b = Σ k g` and the link weights
//! `a = Σ w g`, `F = F₀ − ζ V′ + a (b·V′ + ΔM)/Σw`. So
//!
//! ```text
//! (diag(M, I) + ζ − a bᵀ/Σw) V′ = diag(M, I) V + F₀ + a ΔM/Σw + F_other,
//! ```
//!
//! a 6×6 solve per colloid; the fluid step then bounces back with `V′`, and
//! the fluid loses exactly the momentum the colloid gains. The centre moves
//! by `(U + U′)/2`.
//!
//! **Close surfaces.** Below a cut-off gap the lattice no longer resolves
//! the film between two surfaces, so the normal lubrication force is added,
//! `−6πη (a₁a₂/(a₁+a₂))² (1/h − 1/h_c)` times the normal relative velocity
//! (against a wall `a₂ → ∞`: `−6πη a² (1/h − 1/h_c)`; Ludwig's form). Pairs
//! take it with the velocities before the step, its coefficient `γ` as the
//! pair's own implicit step gives it, `γ μ/(μ + γ)` for the reduced mass
//! `μ` (so it at most stops the closing in one step, where the explicit
//! force would overshoot); walls take it implicitly, in the 6×6 solve. A soft repulsion `ε (σ/h)^ν`, cut and
//! shifted to zero force at its cut-off, keeps surfaces apart.

// The 6×6 algebra reads best with row and column indices.
#![allow(clippy::needless_range_loop)]

use super::{ColloidSpec, SuspensionConfig};
use crate::error::{Error, Result};
use kernels_gpu::colloids::{dot, Colloid, Space, Sums};
use std::f64::consts::PI;

/// A soft repulsion between surfaces `h` apart, `ε (σ/h)^ν`, cut and
/// shifted: the force `ν ε σ^ν / h^(ν+1)` less its value at `cutoff`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SoftSphere {
    /// `ε`.
    pub epsilon: f64,
    /// `σ`.
    pub sigma: f64,
    /// `ν`.
    pub nu: f64,
    /// The gap beyond which it is zero.
    pub cutoff: f64,
}

impl SoftSphere {
    /// Ludwig's test parameters: `ε = 0.0004, σ = 0.1, ν = 1, h_c = 0.25`.
    pub const LUDWIG: SoftSphere = SoftSphere { epsilon: 0.0004, sigma: 0.1, nu: 1.0, cutoff: 0.25 };

    /// The repulsive force at gap `h` (0 at and beyond the cut-off).
    pub fn force(&self, h: f64) -> f64 {
        if h >= self.cutoff {
            return 0.0;
        }
        let f = |h: f64| self.nu * self.epsilon * self.sigma.powf(self.nu) / h.powf(self.nu + 1.0);
        f(h) - f(self.cutoff)
    }
}

/// The normal lubrication correction's cut-off gaps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Lubrication {
    /// Between two colloids.
    pub pair_cutoff: f64,
    /// Between a colloid and a wall.
    pub wall_cutoff: f64,
}

/// Forces between close surfaces.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Interactions {
    /// Soft repulsion (between colloids, and from walls).
    pub soft: Option<SoftSphere>,
    /// Normal lubrication.
    pub lubrication: Option<Lubrication>,
}

impl Interactions {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<()> {
        if let Some(s) = self.soft {
            if !(s.epsilon >= 0.0 && s.sigma > 0.0 && s.nu > 0.0 && s.cutoff > 0.0 && s.cutoff.is_finite()) {
                return Err(Error::Setup(format!(
                    "soft_sphere needs epsilon >= 0 and positive sigma, nu and cutoff, got {s:?}"
                )));
            }
        }
        if let Some(l) = self.lubrication {
            if !(l.pair_cutoff > 0.0 && l.wall_cutoff > 0.0 && l.pair_cutoff.is_finite() && l.wall_cutoff.is_finite()) {
                return Err(Error::Setup(format!("lubrication cut-offs must be positive, got {l:?}")));
            }
        }
        Ok(())
    }

    /// The largest gap at which anything acts.
    fn reach(&self) -> f64 {
        let soft = self.soft.map_or(0.0, |s| s.cutoff);
        let lub = self.lubrication.map_or(0.0, |l| l.pair_cutoff);
        soft.max(lub)
    }
}

/// A colloid's state.
#[derive(Clone, Debug, PartialEq)]
pub struct ColloidState {
    /// Centre, inside the box along periodic axes.
    pub centre: [f64; 3],
    /// The centre before the last move (the map before it was painted there).
    pub previous: [f64; 3],
    /// Radius.
    pub radius: f64,
    /// Velocity.
    pub velocity: [f64; 3],
    /// Angular velocity.
    pub spin: [f64; 3],
    /// The velocity before the last update (the move takes the mean).
    pub velocity_before: [f64; 3],
    /// Mass `4/3 π a³ ρ`.
    pub mass: f64,
    /// Moment of inertia `2/5 M a²`.
    pub inertia: f64,
    /// External force and torque.
    pub force_external: [f64; 3],
    /// External torque.
    pub torque_external: [f64; 3],
    /// Moves at a set velocity.
    pub fixed: bool,
    /// Fluid mass held back (covered, not yet handed to the fluid).
    pub deficit: f64,
    /// `ΔM/Σw` of the last step.
    pub share: f64,
    /// Solid sites it covers.
    pub sites: f64,
    /// Links it had in the last step.
    pub links: f64,
    /// The fluid's force on it in the last step (links and covered sites).
    pub hydrodynamic_force: [f64; 3],
    /// The fluid's torque on it in the last step.
    pub hydrodynamic_torque: [f64; 3],
    /// The force of close surfaces in the last step (soft repulsion, pair
    /// and wall lubrication).
    pub contact_force: [f64; 3],
}

impl ColloidState {
    /// The state a case's colloid starts in.
    pub fn new(spec: &ColloidSpec) -> Self {
        let mass = 4.0 / 3.0 * PI * spec.radius.powi(3) * spec.density;
        Self {
            centre: spec.centre,
            previous: spec.centre,
            radius: spec.radius,
            velocity: spec.velocity,
            spin: spec.spin,
            velocity_before: spec.velocity,
            mass,
            inertia: 0.4 * mass * spec.radius * spec.radius,
            force_external: spec.force,
            torque_external: spec.torque,
            fixed: spec.fixed,
            deficit: 0.0,
            share: 0.0,
            sites: solid_sites(spec.centre, spec.radius),
            links: 0.0,
            hydrodynamic_force: [0.0; 3],
            hydrodynamic_torque: [0.0; 3],
            contact_force: [0.0; 3],
        }
    }

    /// As the kernels see it, centred at `centre`.
    pub fn kernel(&self, centre: [f64; 3]) -> Colloid {
        Colloid {
            centre,
            radius: self.radius,
            velocity: self.velocity,
            spin: self.spin,
            share: self.share,
            previous: self.previous,
        }
    }
}

/// Lattice sites strictly within `radius` of `centre`.
fn solid_sites(centre: [f64; 3], radius: f64) -> f64 {
    let r = radius.ceil() as i64 + 1;
    let base = centre.map(|v| v.floor() as i64);
    let mut n = 0u64;
    for dz in -r..=r {
        for dy in -r..=r {
            for dx in -r..=r {
                let d = [dx, dy, dz];
                let v: [f64; 3] = std::array::from_fn(|a| (base[a] + d[a]) as f64 - centre[a]);
                n += (dot(v, v) < radius * radius) as u64;
            }
        }
    }
    n as f64
}

/// The pairs of colloids whose surfaces are closer than `reach`, with
/// `R_i − R_j` (nearest image), in a fixed order; through a cell list when
/// the box holds at least three cells along each axis.
pub fn close_pairs(space: &Space, colloids: &[ColloidState], reach: f64) -> Vec<(usize, usize, [f64; 3])> {
    let a_max = colloids.iter().map(|c| c.radius).fold(0.0, f64::max);
    let cell = 2.0 * a_max + reach;
    let bins: [usize; 3] = std::array::from_fn(|a| (space.size[a] as f64 / cell).floor().max(1.0) as usize);
    let mut pairs = Vec::new();
    let mut consider = |i: usize, j: usize| {
        let d = space.displacement(colloids[i].centre, colloids[j].centre);
        if dot(d, d).sqrt() - colloids[i].radius - colloids[j].radius < reach {
            pairs.push((i, j, d));
        }
    };
    if bins.iter().any(|&b| b < 3) {
        for i in 0..colloids.len() {
            for j in i + 1..colloids.len() {
                consider(i, j);
            }
        }
        return pairs;
    }
    let bin_of = |c: &ColloidState| -> [usize; 3] {
        std::array::from_fn(|a| {
            let t = (c.centre[a] / space.size[a] as f64 * bins[a] as f64).floor();
            (t.max(0.0) as usize).min(bins[a] - 1)
        })
    };
    let index = |b: [usize; 3]| b[0] + bins[0] * (b[1] + bins[1] * b[2]);
    let mut members = vec![Vec::new(); bins.iter().product()];
    for (k, c) in colloids.iter().enumerate() {
        members[index(bin_of(c))].push(k);
    }
    let walls = space.walls != 0;
    for (i, c) in colloids.iter().enumerate() {
        let b = bin_of(c);
        for dz in -1i64..=1 {
            let z = b[2] as i64 + dz;
            if walls && (z < 0 || z >= bins[2] as i64) {
                continue;
            }
            for dy in -1i64..=1 {
                for dx in -1i64..=1 {
                    let n = [b[0] as i64 + dx, b[1] as i64 + dy, z];
                    let w: [usize; 3] = std::array::from_fn(|a| n[a].rem_euclid(bins[a] as i64) as usize);
                    for &j in &members[index(w)] {
                        if j > i {
                            consider(i, j);
                        }
                    }
                }
            }
        }
    }
    pairs
}

/// The first pair of colloids that overlap, with their gap.
pub fn overlap(space: &Space, colloids: &[ColloidState]) -> Option<(usize, usize, f64)> {
    close_pairs(space, colloids, 0.0)
        .into_iter()
        .next()
        .map(|(i, j, d)| (i, j, dot(d, d).sqrt() - colloids[i].radius - colloids[j].radius))
}

/// What the update decides for the fluid step.
pub struct Update {
    /// The body force on every fluid site.
    pub fluid_force: [f64; 3],
}

/// The gaps to the bottom and top walls of a colloid, with the force
/// direction along z that pushes it away from each.
fn wall_gaps(config: &SuspensionConfig, c: &ColloidState) -> [(f64, f64, usize); 2] {
    let nz = config.size[2] as f64;
    [(c.centre[2] + 0.5 - c.radius, 1.0, 0), (nz - 0.5 - c.centre[2] - c.radius, -1.0, 1)]
}

/// Updates every colloid's velocity and spin from its link sums `sums`
/// (see the module's text), and sets the mass each hands back.
pub fn update(config: &SuspensionConfig, colloids: &mut [ColloidState], sums: &[Sums]) -> Result<Update> {
    let space = config.space();
    let eta = config.viscosity();
    let n = colloids.len();
    let mut contact = vec![[0.0f64; 3]; n];
    let inter = config.interactions;
    if inter.soft.is_some() || inter.lubrication.is_some() {
        for (i, j, d) in close_pairs(&space, colloids, inter.reach()) {
            let (ci, cj) = (&colloids[i], &colloids[j]);
            let r = dot(d, d).sqrt();
            let h = r - ci.radius - cj.radius;
            let e = d.map(|v| v / r);
            let mut f = inter.soft.map_or(0.0, |s| s.force(h));
            if let Some(l) = inter.lubrication.filter(|l| h < l.pair_cutoff) {
                let reduced = ci.radius * cj.radius / (ci.radius + cj.radius);
                let closing: [f64; 3] = std::array::from_fn(|a| ci.velocity[a] - cj.velocity[a]);
                let gamma = 6.0 * PI * eta * reduced * reduced * (1.0 / h - 1.0 / l.pair_cutoff);
                // Explicit, the damping would overshoot (and grow) once it
                // exceeds the pair's reduced mass; as the pair's own implicit
                // step gives it, it at most stops the closing in one step.
                let mass = ci.mass * cj.mass / (ci.mass + cj.mass);
                f -= gamma * mass / (mass + gamma) * dot(closing, e);
            }
            for a in 0..3 {
                contact[i][a] += f * e[a];
                contact[j][a] -= f * e[a];
            }
        }
    }
    let mut external = [0.0; 3];
    for (k, (c, s)) in colloids.iter_mut().zip(sums).enumerate() {
        c.deficit += s.mass;
        c.sites += s.sites;
        c.links = s.links;
        let mut a_mat = [[0.0f64; 6]; 6];
        let mut rhs = [0.0f64; 6];
        let drag = s.drag_matrix();
        for r in 0..6 {
            let m = if r < 3 { c.mass } else { c.inertia };
            a_mat[r][r] = m;
            for col in 0..6 {
                a_mat[r][col] += drag[r][col];
            }
        }
        for a in 0..3 {
            rhs[a] = c.mass * c.velocity[a] + s.force[a] + s.momentum[a] + c.force_external[a] + contact[k][a];
            rhs[3 + a] = c.inertia * c.spin[a] + s.torque[a] + s.angular[a] + c.torque_external[a];
            external[a] += c.force_external[a];
        }
        if let Some(walls) = config.walls {
            for (h, sign, side) in wall_gaps(config, c) {
                if let Some(soft) = inter.soft {
                    contact[k][2] += sign * soft.force(h);
                    rhs[2] += sign * soft.force(h);
                }
                if let Some(l) = inter.lubrication.filter(|l| h < l.wall_cutoff) {
                    let gamma = 6.0 * PI * eta * c.radius * c.radius * (1.0 / h - 1.0 / l.wall_cutoff);
                    a_mat[2][2] += gamma;
                    rhs[2] += gamma * walls[side][2];
                }
            }
        }
        if s.weight > 0.0 {
            for r in 0..6 {
                for col in 0..6 {
                    a_mat[r][col] -= s.weight_moment[r] * s.mass_rate[col] / s.weight;
                }
                rhs[r] += s.weight_moment[r] * c.deficit / s.weight;
            }
        }
        c.velocity_before = c.velocity;
        let v: [f64; 6] = if c.fixed {
            [c.velocity[0], c.velocity[1], c.velocity[2], c.spin[0], c.spin[1], c.spin[2]]
        } else {
            solve6(a_mat, rhs).ok_or_else(|| {
                Error::Colloid(format!("colloid {k}: its Newton–Euler system is singular at step's update"))
            })?
        };
        c.velocity = [v[0], v[1], v[2]];
        c.spin = [v[3], v[4], v[5]];
        c.share = 0.0;
        if s.weight > 0.0 {
            let returned: f64 = (0..6).map(|r| s.mass_rate[r] * v[r]).sum::<f64>();
            c.share = (returned + c.deficit) / s.weight;
            c.deficit = 0.0;
        }
        for a in 0..3 {
            let linear: f64 = (0..6).map(|col| drag[a][col] * v[col]).sum();
            let angular: f64 = (0..6).map(|col| drag[3 + a][col] * v[col]).sum();
            c.hydrodynamic_force[a] = s.force[a] + s.momentum[a] - linear + c.share * s.weight_moment[a];
            c.hydrodynamic_torque[a] = s.torque[a] + s.angular[a] - angular + c.share * s.weight_moment[3 + a];
        }
        c.contact_force = contact[k];
    }
    let mut fluid_force = config.force;
    if config.balance && config.walls.is_none() {
        let solid: f64 = colloids.iter().map(|c| c.sites).sum();
        let fluid_sites = config.sites() as f64 - solid;
        for a in 0..3 {
            fluid_force[a] -= external[a] / fluid_sites;
        }
    }
    Ok(Update { fluid_force })
}

/// Moves every colloid by `(U + U′)/2` and returns them as the kernels'
/// move passes see them (new centre, and the centre the other map holds).
pub fn advance(config: &SuspensionConfig, colloids: &mut [ColloidState]) -> Result<Vec<Colloid>> {
    let space = config.space();
    let mut moved = Vec::with_capacity(colloids.len());
    for (k, c) in colloids.iter_mut().enumerate() {
        let step: [f64; 3] = std::array::from_fn(|a| 0.5 * (c.velocity_before[a] + c.velocity[a]));
        if step.iter().any(|s| s.is_nan() || s.abs() >= 1.0) {
            return Err(Error::Colloid(format!(
                "colloid {k} would move {step:?} sites in one step (under 1 is needed, and well under 0.1 for \
                 accuracy): lower its force or the flow's speed"
            )));
        }
        let centre: [f64; 3] = std::array::from_fn(|a| {
            let v = c.centre[a] + step[a];
            if a == 2 && config.walls.is_some() {
                v
            } else {
                v.rem_euclid(config.size[a] as f64)
            }
        });
        moved.push(Colloid { previous: c.previous, ..c.kernel(centre) });
        c.previous = c.centre;
        c.centre = centre;
        if config.walls.is_some() {
            if let Some((h, _, _)) = wall_gaps(config, c).into_iter().find(|g| g.0 <= 0.0) {
                return Err(Error::Colloid(format!(
                    "colloid {k} reached a wall (gap {h:.3}): add a soft repulsion ([interactions] soft_sphere) or \
                     lower its force"
                )));
            }
        }
    }
    if let Some((i, j, h)) = overlap(&space, colloids) {
        return Err(Error::Colloid(format!(
            "colloids {i} and {j} overlap (gap {h:.3}): add a soft repulsion ([interactions] soft_sphere), \
             lubrication, or lower the forces"
        )));
    }
    Ok(moved)
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting.
fn solve6(mut a: [[f64; 6]; 6], mut b: [f64; 6]) -> Option<[f64; 6]> {
    for col in 0..6 {
        let pivot = (col..6).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col] == 0.0 || !a[pivot][col].is_finite() {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        for r in col + 1..6 {
            let m = a[r][col] / a[col][col];
            for c in col..6 {
                a[r][c] -= m * a[col][c];
            }
            b[r] -= m * b[col];
        }
    }
    let mut x = [0.0; 6];
    for r in (0..6).rev() {
        let s: f64 = (r + 1..6).map(|c| a[r][c] * x[c]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solve6_inverts_a_dense_system() {
        let mut a = [[0.0; 6]; 6];
        for r in 0..6 {
            for c in 0..6 {
                a[r][c] = if r == c { 10.0 + r as f64 } else { 1.0 / (1.0 + r as f64 + 2.0 * c as f64) };
            }
        }
        let x = [1.0, -2.0, 3.0, 0.5, -0.25, 4.0];
        let b: [f64; 6] = std::array::from_fn(|r| (0..6).map(|c| a[r][c] * x[c]).sum());
        let got = solve6(a, b).unwrap();
        for r in 0..6 {
            assert!((got[r] - x[r]).abs() < 1e-13, "{got:?}");
        }
    }

    #[test]
    fn soft_sphere_is_cut_and_shifted() {
        let s = SoftSphere::LUDWIG;
        assert_eq!(s.force(0.25), 0.0);
        assert_eq!(s.force(1.0), 0.0);
        // ε σ / h² − ε σ / h_c² at h = 0.1: 0.0004 (10 − 1.6).
        assert!((s.force(0.1) - 0.0004 * 0.1 * (100.0 - 16.0)).abs() < 1e-15);
    }

    #[test]
    fn cell_list_finds_the_pairs_brute_force_finds() {
        let space = Space::whole([64, 64, 64], false);
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let colloids: Vec<ColloidState> = (0..200)
            .map(|_| ColloidState::new(&ColloidSpec::at([64.0 * next(), 64.0 * next(), 64.0 * next()], 2.5)))
            .collect();
        let mut fast: Vec<(usize, usize)> = close_pairs(&space, &colloids, 1.0).iter().map(|p| (p.0, p.1)).collect();
        let mut slow = Vec::new();
        for i in 0..colloids.len() {
            for j in i + 1..colloids.len() {
                let d = space.displacement(colloids[i].centre, colloids[j].centre);
                if dot(d, d).sqrt() - 5.0 < 1.0 {
                    slow.push((i, j));
                }
            }
        }
        fast.sort();
        assert!(!slow.is_empty());
        assert_eq!(fast, slow);
    }
}
