//! The binary fluid against its theory: the planar interface's profile, the
//! Laplace law, conservation of the order parameter.

use super::*;

/// `A`, `B`, `κ` with `φ* = 1`, `ξ = 4`, `σ = 0.0533`: an interface wide
/// enough that the lattice's stencils resolve its profile to well under 1%.
fn wide() -> FreeEnergy<f64> {
    FreeEnergy::new(-0.02, 0.02, 0.16)
}

fn config(size: [u32; 3], lattice: BinaryLattice, free_energy: FreeEnergy<f64>, mobility: f64) -> BinaryConfig {
    BinaryConfig { size, lattice, tau: 1.0, collision: BinaryCollision::Mrt, free_energy, mobility }
}

/// Two planar interfaces in a periodic box relax to `φ* tanh(x/ξ)`: the
/// bulk at `φ*` and the width fitted to the profile within 1%.
#[test]
fn a_planar_interface_has_the_tanh_profile() {
    let fe = wide();
    let (nx, xi) = (64u32, fe.width());
    // A slab from 16 to 48, started 25% too wide: the profile sharpens to
    // its own, and the order parameter it sheds spreads through the bulk.
    let start = |x: u32, _: u32, _: u32| {
        let x = x as f64;
        ((x - 16.0) / (1.25 * xi)).tanh() * ((48.0 - x) / (1.25 * xi)).tanh()
    };
    let mut s = BinarySolver::new(config([nx, 4, 1], BinaryLattice::D2Q9, fe, 0.2), start).unwrap();
    s.step(60_000);
    let f = s.fields();
    let phi: Vec<f64> = (0..nx as usize).map(|x| f.phi[x]).collect();
    let bulk = phi[32];
    assert!((bulk - fe.phi_star()).abs() < 0.01 * fe.phi_star(), "bulk phi {bulk}");
    // Least squares over the width, the interface at its zero crossing.
    let zero = (12..20).find(|&x| phi[x] < 0.0 && phi[x + 1] >= 0.0).expect("an interface near x = 16");
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
    let fitted = 0.5 * (lo + hi);
    eprintln!("bulk {bulk:.5} (phi* {}), width {fitted:.4} (xi {xi:.4})", fe.phi_star());
    assert!((fitted - xi).abs() < 0.01 * xi, "width {fitted} against {xi}");
}

/// The pressure jump across a droplet is `σ/R` in 2D within 3%, `R` where
/// `φ` crosses zero, for four radii (the droplet shrinks a little as the
/// phase around it takes up order parameter). The interface is two sites
/// wide, which the stencils resolve: at about one site the jumps fall 4-14%
/// short for radii of 16 to 6.
#[test]
fn droplets_obey_the_laplace_law() {
    let fe = FreeEnergy::new(-0.02, 0.02, 0.04);
    let (sigma, n) = (fe.surface_tension(), 64u32);
    for r in [10.0, 12.0, 16.0, 20.0] {
        let c = n as f64 / 2.0;
        let start = move |x: u32, y: u32, _: u32| {
            let d = ((x as f64 - c).powi(2) + (y as f64 - c).powi(2)).sqrt();
            -((d - r) / fe.width()).tanh()
        };
        let mut s = BinarySolver::new(config([n, n, 1], BinaryLattice::D2Q9, fe, 0.5), start).unwrap();
        s.step(40_000);
        let f = s.fields();
        let mid = (n / 2) as usize;
        let (inside, outside) = (f.pressure[mid + n as usize * mid], f.pressure[0]);
        // The radius where φ crosses zero along +x from the centre.
        let row = &f.phi[mid * n as usize + mid..(mid + 1) * n as usize];
        let k = row.iter().position(|&p| p < 0.0).expect("the droplet ends");
        let radius = (k - 1) as f64 + row[k - 1] / (row[k - 1] - row[k]);
        let (jump, want) = (inside - outside, sigma / radius);
        let spurious = f.u.iter().map(|u| (u[0] * u[0] + u[1] * u[1]).sqrt()).fold(0.0, f64::max);
        eprintln!("R {r} -> {radius:.3}: jump {jump:.4e}, Laplace {want:.4e}, spurious |u| {spurious:.2e}");
        assert!((jump - want).abs() < 0.03 * want, "R {radius}: jump {jump} against {want}");
    }
}

/// A random mixture separates; the order parameter's total stays what it
/// was to round-off over 10,000 steps, and the fluid's mass too.
#[test]
fn the_order_parameter_is_conserved() {
    let fe = FreeEnergy::new(-0.0625, 0.0625, 0.04);
    // A deterministic scramble around a 50:50 mixture.
    let start = |x: u32, y: u32, _: u32| {
        let h = (x.wrapping_mul(73_856_093) ^ y.wrapping_mul(19_349_663)) % 1000;
        0.1 * (h as f64 / 500.0 - 1.0)
    };
    let mut s = BinarySolver::new(config([48, 48, 1], BinaryLattice::D2Q9, fe, 0.5), start).unwrap();
    let total = |f: &BinaryFields| f.phi.iter().sum::<f64>();
    let before = total(&s.fields());
    s.step(10_000);
    let f = s.fields();
    let sites = f.phi.len() as f64;
    // Each step changes a site by fluxes that cancel in pairs: the drift is
    // rounding, a few ulps of the largest fluxes per site and step at most.
    assert!((total(&f) - before).abs() < 1e-10 * sites, "sum of phi {before} -> {}", total(&f));
    let separated = f.phi.iter().filter(|p| p.abs() > 0.9).count() as f64 / sites;
    assert!(separated > 0.5, "the mixture did not separate: {separated}");
    let mass: f64 = f.rho.iter().sum();
    assert!((mass - sites).abs() < 1e-9 * sites, "mass {mass}");
}

#[test]
fn bad_parameters_are_clear_errors() {
    let mut c = config([8, 8, 1], BinaryLattice::D2Q9, FreeEnergy::new(0.01, 0.01, 0.01), 0.1);
    assert!(BinarySolver::new(c.clone(), |_, _, _| 0.0).err().unwrap().to_string().contains("A < 0"));
    c.free_energy = wide();
    c.size = [8, 8, 2];
    assert!(BinarySolver::new(c, |_, _, _| 0.0).err().unwrap().to_string().contains("z = 1"));
}
