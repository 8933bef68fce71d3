//! What a binary-fluid run reports: the order parameter's total, the
//! largest speed (the spurious currents at rest), a droplet's radius and
//! pressure jump against the Laplace law, and the domain size of a
//! separating mixture with its growth exponent.

use super::{BinaryConfig, BinaryFields};
use crate::solver::LatticeKind;

/// `Σ φ` over the box.
pub fn total_phi(f: &BinaryFields) -> f64 {
    f.phi.iter().sum()
}

/// The largest speed in the box.
pub fn max_speed(f: &BinaryFields) -> f64 {
    f.u.iter().map(|u| (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt()).fold(0.0, f64::max)
}

/// A droplet of the `+φ*` phase, measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Droplet {
    /// The radius where `φ` crosses zero, from the droplet's volume
    /// `Σ (φ − φ₋) / (φ₊ − φ₋)` with `φ₊`, `φ₋` the largest and smallest
    /// `φ` (the phases sit a little off `±φ*` around a droplet: its Laplace
    /// pressure shifts them). A `tanh` profile of width `ξ` around radius `R`
    /// holds the volume of a ball (disc) of radius `R + X` averaged over
    /// the profile's spread `X` (variance `v = π²ξ²/12`), `4π/3 (R³ + 3vR)`
    /// in 3D and `π (R² + v)` in 2D.
    pub radius: f64,
    /// Mean pressure of the sites deep inside less that of the sites deep
    /// outside: those whose `φ` lies within 1% of `φ`'s span from its
    /// largest and smallest values. (Both phases sit a little off `±φ*`
    /// around a droplet: its Laplace pressure shifts them.)
    pub jump: f64,
    /// The Laplace law's jump for that radius: `2σ/R` in 3D, `σ/R` in 2D.
    pub laplace: f64,
}

/// The droplet of `f`, or `None` when the box holds one phase only.
pub fn droplet(config: &BinaryConfig, f: &BinaryFields) -> Option<Droplet> {
    let fe = &config.free_energy;
    let (lo, hi) = f.phi.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &p| (lo.min(p), hi.max(p)));
    // Two phases, not a uniform box.
    if (hi - lo).is_nan() || hi - lo <= fe.phi_star() {
        return None;
    }
    let volume: f64 = f.phi.iter().map(|p| (p - lo) / (hi - lo)).sum();
    let two_d = config.lattice == LatticeKind::D2Q9;
    let pi = std::f64::consts::PI;
    let v = pi * pi * fe.width() * fe.width() / 12.0;
    let radius = if two_d {
        (volume / pi - v).max(0.0).sqrt()
    } else {
        // R³ + 3vR = 3V/4π by Newton's method from the ball's radius (the
        // left side grows monotonically, so it converges from above).
        let target = 3.0 * volume / (4.0 * pi);
        let mut r = target.cbrt();
        for _ in 0..50 {
            r -= (r * r * r + 3.0 * v * r - target) / (3.0 * r * r + 3.0 * v);
        }
        r
    };
    let margin = 0.01 * (hi - lo);
    let mean = |deep: &dyn Fn(f64) -> bool| {
        let (sum, count) = f
            .phi
            .iter()
            .zip(&f.pressure)
            .filter(|(p, _)| deep(**p))
            .fold((0.0, 0usize), |(s, n), (_, q)| (s + q, n + 1));
        sum / count as f64
    };
    let jump = mean(&|p| p >= hi - margin) - mean(&|p| p <= lo + margin);
    let laplace = fe.surface_tension() / radius * if two_d { 1.0 } else { 2.0 };
    Some(Droplet { radius, jump, laplace })
}

/// The domain size of a separating mixture: the volume per interface
/// area, `V / A`. The area is counted from the links between neighbouring
/// sites along the axes whose `φ` have opposite signs: an isotropic
/// interface of area `A` crosses `3A/2` such links in 3D (`4A/π` in 2D).
/// `None` when no interface is left.
pub fn domain_size(config: &BinaryConfig, phi: &[f64]) -> Option<f64> {
    let [nx, ny, nz] = config.size.map(|n| n as usize);
    let two_d = config.lattice == LatticeKind::D2Q9;
    let at = |x: usize, y: usize, z: usize| phi[x + nx * (y + ny * z)];
    let mut crossings = 0u64;
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                let here = at(x, y, z) > 0.0;
                crossings += u64::from((at((x + 1) % nx, y, z) > 0.0) != here);
                crossings += u64::from((at(x, (y + 1) % ny, z) > 0.0) != here);
                if !two_d {
                    crossings += u64::from((at(x, y, (z + 1) % nz) > 0.0) != here);
                }
            }
        }
    }
    let per_area = if two_d { 4.0 / std::f64::consts::PI } else { 1.5 };
    (crossings > 0).then(|| (nx * ny * nz) as f64 * per_area / crossings as f64)
}

/// The exponent `α` of `L ∝ t^α`: the least-squares slope of `ln L`
/// against `ln t` over the later half of `samples` (`(t, L)`, `t > 0`), or
/// `None` with fewer than three samples there.
pub fn growth_exponent(samples: &[(u64, f64)]) -> Option<f64> {
    let late: Vec<(f64, f64)> = samples
        .iter()
        .filter(|(t, l)| *t > 0 && *l > 0.0)
        .skip(samples.len() / 2)
        .map(|&(t, l)| ((t as f64).ln(), l.ln()))
        .collect();
    if late.len() < 3 {
        return None;
    }
    let n = late.len() as f64;
    let (mx, my) = (late.iter().map(|p| p.0).sum::<f64>() / n, late.iter().map(|p| p.1).sum::<f64>() / n);
    let sxy: f64 = late.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = late.iter().map(|(x, _)| (x - mx) * (x - mx)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::Precision;
    use kernels_gpu::binary::FreeEnergy;

    fn config(size: [u32; 3], lattice: LatticeKind) -> BinaryConfig {
        BinaryConfig {
            size,
            lattice,
            tau: 1.0,
            collision: super::super::BinaryCollision::Mrt,
            free_energy: FreeEnergy::new(-0.02, 0.02, 0.04),
            mobility: 0.5,
            precision: Precision::F64,
        }
    }

    #[test]
    fn lamellae_have_their_width_as_domain_size() {
        // Slabs 8 sites wide across x in 3D: A = 2 yz-planes per 16 sites,
        // crossed by x links only (1 per unit area, not the isotropic 3/2).
        let c = config([32, 8, 8], LatticeKind::D3Q19);
        let phi: Vec<f64> = (0..32 * 64).map(|k| if (k % 32) / 8 % 2 == 0 { 1.0 } else { -1.0 }).collect();
        let l = domain_size(&c, &phi).unwrap();
        assert!((l - 8.0 * 1.5).abs() < 1e-12, "{l}");
        assert_eq!(domain_size(&c, &vec![1.0; 32 * 64]), None);
    }

    #[test]
    fn a_droplet_has_its_radius_and_jump() {
        // A disc of radius 10 in a 64² box, pressure 1 deeper inside.
        let c = config([64, 64, 1], LatticeKind::D2Q9);
        let phi: Vec<f64> = (0..64 * 64)
            .map(|k| {
                let (x, y) = ((k % 64) as f64 - 32.0, (k / 64) as f64 - 32.0);
                -(((x * x + y * y).sqrt() - 10.0) / 2.0).tanh()
            })
            .collect();
        let pressure = phi.iter().map(|&p| if p > 0.0 { 1.0 } else { 0.0 }).collect();
        let n = phi.len();
        let f = BinaryFields { rho: vec![1.0; n], u: vec![[0.0; 3]; n], mu: vec![0.0; n], phi, pressure };
        let d = droplet(&c, &f).unwrap();
        assert!((d.radius - 10.0).abs() < 0.01, "{d:?}");
        assert_eq!(d.jump, 1.0);
        assert!((d.laplace - c.free_energy.surface_tension() / d.radius).abs() < 1e-15);
    }

    #[test]
    fn a_power_law_gives_its_exponent() {
        let samples: Vec<(u64, f64)> = (1..=20).map(|k| (k * 1000, 3.0 * ((k * 1000) as f64).powf(0.4))).collect();
        assert!((growth_exponent(&samples).unwrap() - 0.4).abs() < 1e-12);
        assert_eq!(growth_exponent(&samples[..4]), None);
    }
}
