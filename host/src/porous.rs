//! Porous media: the permeability of a sample from a body-force-driven run
//! in a periodic box (Darcy's law), and the references to compare it with.
//!
//! In a periodic box a body force `g` per unit mass acts like a mean
//! pressure gradient `rho g`, so Darcy's law `<u> = (k / mu) rho g` gives
//! `k = nu <u> / g`, with `<u>` the superficial velocity: the mean over the
//! whole box, solid cells (at rest) included, along the force. The solver's
//! force is a force density at the reference density 1 (lattice units), so
//! `g` is the force given in the case.
//!
//! References:
//! * Kozeny–Carman (Carman 1937): `k = eps^3 d^2 / (180 (1 - eps)^2)` for
//!   beds of spheres of diameter `d` at porosity `eps`. An empirical
//!   correlation: measured random sphere packings scatter about it by some
//!   20 to 30% (the Kozeny constant 5 behind the 180 is itself a fit).
//! * Simple cubic arrays of spheres: the drag of Hasimoto (1959) extended
//!   by Sangani & Acrivos (1982), see [`sangani_acrivos_simple_cubic`].

use crate::cell_blocks::CellBlocks;
use crate::fields::Fields;
use kernels_gpu::flags::is_flow;

/// Kozeny–Carman permeability of a bed of spheres of diameter `d` at porosity `eps`.
pub fn kozeny_carman(eps: f64, d: f64) -> f64 {
    eps.powi(3) * d * d / (180.0 * (1.0 - eps).powi(2))
}

/// Dimensionless drag `K = F / (6 pi mu a U)` on the spheres of a simple
/// cubic array at solid fraction `c` (mean velocity `U`), from the series of
/// Sangani & Acrivos (1982, their eq. 4.2 with Hasimoto's leading terms).
/// The terms kept are within 0.1% of the numerical results of Zick & Homsy
/// (1982) up to `c = 0.125` (K = 4.292 there; the series gives 4.289).
pub fn sangani_acrivos_simple_cubic(c: f64) -> f64 {
    let s = c.cbrt();
    1.0 / (1.0 - 1.7601 * s + c - 1.5593 * c * c + 3.9799 * s.powi(8) - 3.0734 * s.powi(10))
}

/// Permeability of a simple cubic array of spheres of radius `a` at
/// spacing `l`: the drag `F = 6 pi mu a U K` balances the mean pressure
/// gradient over one cell, `F = G l^3`, so `k = mu U / G = l^3 / (6 pi a K)`.
pub fn simple_cubic_permeability(a: f64, l: f64) -> f64 {
    let c = 4.0 / 3.0 * std::f64::consts::PI * a.powi(3) / l.powi(3);
    l.powi(3) / (6.0 * std::f64::consts::PI * a * sangani_acrivos_simple_cubic(c))
}

/// A permeability measured from a steady force-driven flow.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Permeability {
    /// Porosity: flow cells over all cells.
    pub porosity: f64,
    /// Superficial velocity along the force (lattice units).
    pub superficial_velocity: f64,
    /// Darcy permeability (cells^2).
    pub permeability: f64,
    /// Sphere diameter (cells), when the solid is a packing of spheres.
    pub diameter: Option<f64>,
    /// Kozeny–Carman's estimate (cells^2) for that diameter and the porosity.
    pub kozeny_carman: Option<f64>,
    /// Reynolds number `<u> d / nu` of the spheres (superficial velocity):
    /// Darcy's law holds for creeping flow, below about 1.
    pub reynolds: Option<f64>,
}

/// Measures the permeability from `fields` of a run in a periodic box
/// driven by the body force `force`, with kinematic viscosity `nu` and
/// cell flags `flags`; `diameter` is the grains' diameter (cells) when known.
/// `None` when the force is zero.
pub fn measure(
    fields: &Fields,
    flags: &CellBlocks<u8>,
    force: [f64; 3],
    nu: f64,
    diameter: Option<f64>,
) -> Option<Permeability> {
    let g = (force[0] * force[0] + force[1] * force[1] + force[2] * force[2]).sqrt();
    if g == 0.0 {
        return None;
    }
    let along = force.map(|f| f / g);
    let cells = fields.dims.cells() as f64;
    // Solid cells carry no velocity: summing every flow cell is the superficial mean.
    let (mut sum, mut flow) = (0.0, 0usize);
    fields.u.for_each_pair(flags, |_, u, f, n| {
        if is_flow(f) {
            sum += n as f64 * (u[0] * along[0] + u[1] * along[1] + u[2] * along[2]);
            flow += n;
        }
    });
    let superficial_velocity = sum / cells;
    let porosity = flow as f64 / cells;
    let permeability = nu * superficial_velocity / g;
    Some(Permeability {
        porosity,
        superficial_velocity,
        permeability,
        diameter,
        kozeny_carman: diameter.map(|d| kozeny_carman(porosity, d)),
        reynolds: diameter.map(|d| superficial_velocity * d / nu),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_match_their_published_values() {
        // Zick & Homsy (1982), simple cubic: K(0.064) = 2.810, K(0.125) = 4.292.
        assert!((sangani_acrivos_simple_cubic(0.064) - 2.810).abs() < 0.002);
        assert!((sangani_acrivos_simple_cubic(0.125) - 4.292).abs() < 0.005);
        // Dilute limit: Hasimoto's K -> 1 / (1 - 1.7601 c^1/3).
        let c: f64 = 1e-6;
        assert!((sangani_acrivos_simple_cubic(c) * (1.0 - 1.7601 * c.cbrt()) - 1.0).abs() < 1e-5);
        // Kozeny–Carman at eps = 0.4, d = 1: 0.064 / (180 * 0.36).
        assert!((kozeny_carman(0.4, 1.0) - 0.064 / 64.8).abs() < 1e-15);
    }
}
