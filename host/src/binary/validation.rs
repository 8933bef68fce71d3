//! The binary fluid against its theory, as `lbm validate` runs it and the
//! tests assert it: the planar interface's `tanh` profile, and the Laplace
//! law for a droplet in 2D (and in 3D, on a GPU).

use super::measure::max_speed;
use super::{BinaryCollision, BinaryConfig, BinarySolver};
use crate::error::Result;
use crate::solver::{BackendKind, LatticeKind, Precision};
use crate::validation::Check;
use kernels_gpu::binary::FreeEnergy;

/// The Laplace runs' free energy: `φ* = 1`, `ξ = 2`, `σ = 0.0267`.
pub fn laplace_free_energy() -> FreeEnergy<f64> {
    FreeEnergy::new(-0.02, 0.02, 0.04)
}

/// An MRT box at `tau` 1 in f64.
pub(super) fn config(
    size: [u32; 3],
    lattice: LatticeKind,
    free_energy: FreeEnergy<f64>,
    mobility: f64,
) -> BinaryConfig {
    BinaryConfig {
        size,
        lattice,
        tau: 1.0,
        collision: BinaryCollision::Mrt,
        free_energy,
        mobility,
        precision: Precision::F64,
    }
}

/// A planar interface after relaxing.
#[derive(Clone, Copy, Debug)]
pub struct Planar {
    /// `φ` in the middle of the slab.
    pub bulk: f64,
    /// The width of `bulk tanh((x − x0)/w)` fitted to the profile.
    pub width: f64,
    /// The model's `φ*`.
    pub phi_star: f64,
    /// The model's `ξ`.
    pub xi: f64,
}

/// Two planar interfaces in a 64 x 4 D2Q9 box (`ξ = 4`, wide enough that
/// the stencils resolve the profile to well under 1%), started 25% too
/// wide, after 60,000 steps: the profile sharpens to its own, and the
/// order parameter it sheds spreads through the bulk.
pub fn planar_interface(backend: BackendKind, ptx: &str) -> Result<Planar> {
    let fe = FreeEnergy::new(-0.02, 0.02, 0.16);
    let (nx, xi) = (64u32, fe.width());
    let start = |x: u32, _: u32, _: u32| {
        let x = x as f64;
        ((x - 16.0) / (1.25 * xi)).tanh() * ((48.0 - x) / (1.25 * xi)).tanh()
    };
    let mut s = BinarySolver::on(config([nx, 4, 1], LatticeKind::D2Q9, fe, 0.2), backend, ptx, start)?;
    s.step(60_000)?;
    let f = s.fields()?;
    let phi: Vec<f64> = (0..nx as usize).map(|x| f.phi[x]).collect();
    let bulk = phi[32];
    // Least squares over the width, the interface at its zero crossing
    // (NaN where the slab has gone).
    let Some(zero) = (12..20).find(|&x| phi[x] < 0.0 && phi[x + 1] >= 0.0) else {
        return Ok(Planar { bulk, width: f64::NAN, phi_star: fe.phi_star(), xi });
    };
    let x0 = zero as f64 + phi[zero] / (phi[zero] - phi[zero + 1]);
    let misfit = |w: f64| -> f64 { (2..31).map(|x| (phi[x] - bulk * ((x as f64 - x0) / w).tanh()).powi(2)).sum() };
    let (mut lo, mut hi) = (0.5 * xi, 2.0 * xi);
    for _ in 0..100 {
        let (a, b) = (lo + (hi - lo) / 3.0, hi - (hi - lo) / 3.0);
        if misfit(a) < misfit(b) {
            hi = b
        } else {
            lo = a
        }
    }
    Ok(Planar { bulk, width: 0.5 * (lo + hi), phi_star: fe.phi_star(), xi })
}

/// A droplet after relaxing.
#[derive(Clone, Copy, Debug)]
pub struct Laplace {
    /// Where `φ` crosses zero along +x from the centre.
    pub radius: f64,
    /// The pressure at the centre less that in the box's corner.
    pub jump: f64,
    /// The Laplace law's: `σ/R` in 2D, `2σ/R` in 3D.
    pub laplace: f64,
    /// The largest speed.
    pub spurious: f64,
}

/// A droplet of radius `r` at the centre of a periodic `n`-site box on
/// `lattice` (D2Q9 or a 3D one) after `steps` steps, with
/// [`laplace_free_energy`]. The droplet shrinks as the phase around it takes
/// up the order parameter its Laplace pressure shifts it by (`ξ/3R` of `φ*`
/// in 3D, `ξ/6R` in 2D): a box much larger than the droplet dissolves it.
pub fn laplace(backend: BackendKind, ptx: &str, lattice: LatticeKind, n: u32, r: f64, steps: u64) -> Result<Laplace> {
    let fe = laplace_free_energy();
    let two_d = lattice == LatticeKind::D2Q9;
    let mid = n as f64 / 2.0;
    let start = move |x: u32, y: u32, z: u32| {
        let dz = if two_d { 0.0 } else { z as f64 - mid };
        let d = ((x as f64 - mid).powi(2) + (y as f64 - mid).powi(2) + dz * dz).sqrt();
        -((d - r) / fe.width()).tanh()
    };
    let size = if two_d { [n, n, 1] } else { [n; 3] };
    let mut s = BinarySolver::on(config(size, lattice, fe, 0.5), backend, ptx, start)?;
    s.step(steps)?;
    let f = s.fields()?;
    let (m, n) = ((n / 2) as usize, n as usize);
    let centre = m + n * m + if two_d { 0 } else { n * n * m };
    // Where φ crosses zero along +x from the centre (NaN if it does not).
    let row = &f.phi[centre..centre + n - m];
    let radius = match row.iter().position(|&p| p < 0.0) {
        Some(k) if k > 0 => (k - 1) as f64 + row[k - 1] / (row[k - 1] - row[k]),
        _ => f64::NAN,
    };
    let dimensions = if two_d { 1.0 } else { 2.0 };
    Ok(Laplace {
        radius,
        jump: f.pressure[centre] - f.pressure[0],
        laplace: dimensions * fe.surface_tension() / radius,
        spurious: max_speed(&f),
    })
}

/// `lbm validate`'s entries: the planar interface's bulk and width within
/// 1%, and the Laplace law within 3% for a 2D droplet, and on a GPU for a
/// 3D one.
pub fn checks(backend: BackendKind, ptx: &str) -> Result<Vec<Check>> {
    let p = planar_interface(backend, ptx)?;
    let (bulk, width) = (p.bulk / p.phi_star - 1.0, p.width / p.xi - 1.0);
    let mut checks = vec![
        Check {
            case: "Binary fluid, planar interface: bulk phi vs phi*".into(),
            value: bulk,
            criterion: "|.| < 0.01".into(),
            pass: bulk.abs() < 0.01,
        },
        Check {
            case: "Binary fluid, planar interface: tanh width vs xi".into(),
            value: width,
            criterion: "|.| < 0.01".into(),
            pass: width.abs() < 0.01,
        },
    ];
    let mut droplet = |what: &str, lattice, n, r, steps| -> Result<()> {
        let l = laplace(backend, ptx, lattice, n, r, steps)?;
        let error = l.jump / l.laplace - 1.0;
        checks.push(Check {
            case: format!("Binary fluid, {what} droplet R {:.1}: jump vs Laplace", l.radius),
            value: error,
            criterion: "|.| < 0.03".into(),
            pass: error.abs() < 0.03,
        });
        Ok(())
    };
    droplet("2D", LatticeKind::D2Q9, 64, 16.0, 40_000)?;
    if matches!(backend, BackendKind::Gpu(_)) {
        droplet("3D", LatticeKind::D3Q19, 48, 16.0, 60_000)?;
    }
    Ok(checks)
}
