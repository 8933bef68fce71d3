//! Colloids against Stokes flow, as `lbm validate` runs them and the tests
//! assert them:
//!
//! - a sphere pulled through a periodic box by a constant force settles at
//!   the velocity of Stokes drag with Hasimoto's (1959) correction for its
//!   periodic images, `F = 6πηaU / K(a/L)`, measured as Ludwig calibrates
//!   it: the sphere's velocity less the fluid sites' mean, after the box's
//!   momentum diffusion time `L²/ν`;
//! - a free sphere in the middle of a channel whose walls slide apart spins
//!   at half the shear rate (no torque on it);
//! - a colloid driven at a set velocity across many sites keeps the fluid's
//!   mass (with what it holds for the fluid) to round-off.

use super::{ColloidSpec, Interactions, Suspension, SuspensionConfig};
use crate::binary::BinaryCollision;
use crate::error::Result;
use crate::solver::{BackendKind, LatticeKind, Precision};
use crate::validation::Check;
use std::f64::consts::PI;

/// A periodic cube of side `n` holding `colloids`, D3Q19, MRT at tau 1, f64.
pub fn periodic(n: u32, colloids: Vec<ColloidSpec>) -> SuspensionConfig {
    SuspensionConfig {
        size: [n; 3],
        lattice: LatticeKind::D3Q19,
        tau: 1.0,
        collision: BinaryCollision::Mrt,
        precision: Precision::F64,
        walls: None,
        force: [0.0; 3],
        balance: true,
        colloids,
        interactions: Interactions::default(),
    }
}

/// Hasimoto's factor for a simple cubic array of spheres of radius `a` and
/// spacing `l`: the drag is `6πηaU / K`, `K = 1 − 2.837 x + 4.19 x³ − 27.4 x⁶`,
/// `x = a/l`.
pub fn hasimoto(a: f64, l: f64) -> f64 {
    let x = a / l;
    1.0 - 2.837 * x + 4.19 * x.powi(3) - 27.4 * x.powi(6)
}

/// The mean velocity of the fluid sites.
fn fluid_velocity(s: &Suspension) -> Result<[f64; 3]> {
    let f = s.fields()?;
    let mut sum = [0.0; 3];
    let mut sites = 0.0;
    for (u, solid) in f.u.iter().zip(&f.solid) {
        if solid.is_none() {
            sites += 1.0;
            for a in 0..3 {
                sum[a] += u[a];
            }
        }
    }
    Ok(sum.map(|v| v / sites))
}

/// A settled sphere.
#[derive(Clone, Copy, Debug)]
pub struct Settling {
    /// Its radius.
    pub radius: f64,
    /// The box's side.
    pub box_side: u32,
    /// Its mean velocity relative to the fluid, along the force.
    pub velocity: f64,
    /// Stokes–Hasimoto's velocity for the force.
    pub stokes: f64,
}

/// A sphere of radius `a` pulled along x through a periodic box of side
/// `n` at a particle Reynolds number `a U/ν` of about 0.05 (as Ludwig's
/// calibration), its velocity averaged over `measure` steps.
pub fn settling(backend: BackendKind, ptx: &str, n: u32, a: f64, measure: u64) -> Result<Settling> {
    let config = periodic(n, Vec::new());
    let eta = config.viscosity();
    let target = 0.05 * eta / a;
    let force = 6.0 * PI * eta * a * target / hasimoto(a, n as f64);
    let mut c = ColloidSpec::at([n as f64 * 0.37, n as f64 * 0.52, n as f64 * 0.46], a);
    c.force = [force, 0.0, 0.0];
    let mut s = Suspension::on(SuspensionConfig { colloids: vec![c], ..config }, backend, ptx)?;
    s.step((n as f64 * n as f64 / eta) as u64)?;
    let (mut sum, mut samples) = (0.0, 0.0);
    let every = 20;
    for _ in 0..(measure / every).max(1) {
        s.step(every)?;
        sum += s.colloids()[0].velocity[0] - fluid_velocity(&s)?[0];
        samples += 1.0;
    }
    Ok(Settling {
        radius: a,
        box_side: n,
        velocity: sum / samples,
        stokes: force * hasimoto(a, n as f64) / (6.0 * PI * eta * a),
    })
}

/// A free sphere of radius 4 in the middle of a 24³ channel whose walls
/// slide at `∓0.02` along x, after `steps`: its spin about y over half
/// the shear rate, and its largest velocity component.
pub fn shear_spin(backend: BackendKind, ptx: &str, precision: Precision, steps: u64) -> Result<(f64, f64)> {
    let (n, u_wall) = (24u32, 0.02);
    let config = SuspensionConfig {
        walls: Some([[-u_wall, 0.0, 0.0], [u_wall, 0.0, 0.0]]),
        precision,
        ..periodic(n, vec![ColloidSpec::at([11.5, 11.5, 11.5], 4.0)])
    };
    let mut s = Suspension::on(config, backend, ptx)?;
    s.step(steps)?;
    let rate = 2.0 * u_wall / n as f64;
    let c = &s.colloids()[0];
    Ok((c.spin[1] / (0.5 * rate), c.velocity.iter().fold(0.0, |m: f64, v| m.max(v.abs()))))
}

/// A sphere of radius 5 driven at a set velocity and spin through a
/// periodic 32³ box for `steps`: the relative change of the fluid's mass
/// (with what the colloid holds for it), and the sites it travelled.
pub fn mass_drift(backend: BackendKind, ptx: &str, steps: u64) -> Result<(f64, f64)> {
    let mut c = ColloidSpec::at([10.3, 12.6, 14.1], 5.0);
    c.velocity = [0.011, 0.007, -0.004];
    c.spin = [0.001, 0.0, -0.002];
    c.fixed = true;
    let mut s = Suspension::on(periodic(32, vec![c]), backend, ptx)?;
    let (fluid, held) = s.mass()?;
    let start = fluid + held;
    s.step(steps)?;
    let (fluid, held) = s.mass()?;
    Ok((((fluid + held) - start) / start, 0.011 * steps as f64))
}

/// The round-off bound of [`mass_drift`]: each step's sums round at about
/// `1e-16` of the box's mass per operation, a few operations per site: at
/// most `1e-12` relative per step.
pub fn mass_bound(steps: u64) -> f64 {
    1e-12 * steps as f64
}

/// `lbm validate`'s colloid entries: the drag of a pulled sphere (radius
/// 4.5 in a box of 32; radii 4, 5 and 6 in a box of 48 on a GPU), the
/// spin in shear, and the mass through covering and uncovering.
pub fn checks(backend: BackendKind, ptx: &str) -> Result<Vec<Check>> {
    let mut checks = Vec::new();
    let gpu = matches!(backend, BackendKind::Gpu(_));
    let runs: &[(u32, f64)] = if gpu { &[(32, 4.5), (48, 4.0), (48, 5.0), (48, 6.0)] } else { &[(32, 4.5)] };
    for &(n, a) in runs {
        let s = settling(backend, ptx, n, a, 2000)?;
        let error = s.velocity / s.stokes - 1.0;
        checks.push(Check {
            case: format!("Colloid radius {a} in a box of {n}: velocity vs Stokes-Hasimoto"),
            value: error,
            criterion: "|.| < 0.03".into(),
            pass: error.abs() < 0.03,
        });
    }
    let (spin, drift) = shear_spin(backend, ptx, Precision::F64, 2500)?;
    checks.push(Check {
        case: format!("Colloid in shear: spin vs half the shear rate (drift {drift:.1e})"),
        value: spin - 1.0,
        criterion: "|.| < 0.05".into(),
        pass: (spin - 1.0).abs() < 0.05,
    });
    let steps = if gpu { 10_000 } else { 1000 };
    let (drift, _) = mass_drift(backend, ptx, steps)?;
    checks.push(Check {
        case: format!("Colloid driven {steps} steps: relative fluid mass change"),
        value: drift,
        criterion: format!("|.| < {:.0e}", mass_bound(steps)),
        pass: drift.abs() < mass_bound(steps),
    });
    Ok(checks)
}
