//! The binary fluid against its theory: the planar interface's profile, the
//! Laplace law, conservation of the order parameter.

use super::validation::config;
use super::*;

/// `A`, `B`, `κ` with `φ* = 1`, `ξ = 4`, `σ = 0.0533`: an interface wide
/// enough that the lattice's stencils resolve its profile to well under 1%.
fn wide() -> FreeEnergy<f64> {
    FreeEnergy::new(-0.02, 0.02, 0.16)
}

/// Two planar interfaces in a periodic box relax to `φ* tanh(x/ξ)`: the
/// bulk at `φ*` and the width fitted to the profile within 1%.
#[test]
fn a_planar_interface_has_the_tanh_profile() {
    let p = validation::planar_interface(BackendKind::Cpu, "").unwrap();
    eprintln!("bulk {:.5} (phi* {}), width {:.4} (xi {:.4})", p.bulk, p.phi_star, p.width, p.xi);
    assert!((p.bulk - p.phi_star).abs() < 0.01 * p.phi_star, "bulk phi {}", p.bulk);
    assert!((p.width - p.xi).abs() < 0.01 * p.xi, "width {} against {}", p.width, p.xi);
}

/// The pressure jump across a droplet is `σ/R` in 2D within 3%, `R` where
/// `φ` crosses zero, for four radii after 10,000 steps. The droplet still
/// shrinks a little as the phase around it takes up order parameter, and
/// the jump follows its radius: within 0.9% of `σ/R` at 10,000 steps, 0.8%
/// at 40,000. The interface is two sites wide, which the stencils resolve:
/// at about one site the jumps fall 4-14% short for radii of 16 to 6.
#[test]
fn droplets_obey_the_laplace_law() {
    for r in [10.0, 12.0, 16.0, 20.0] {
        let l = validation::laplace(BackendKind::Cpu, "", LatticeKind::D2Q9, 64, r, 10_000).unwrap();
        eprintln!(
            "R {r} -> {:.3}: jump {:.4e}, Laplace {:.4e}, spurious |u| {:.2e}",
            l.radius, l.jump, l.laplace, l.spurious
        );
        assert!((l.jump - l.laplace).abs() < 0.03 * l.laplace, "R {}: jump {} against {}", l.radius, l.jump, l.laplace);
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
    let mut s = BinarySolver::new(config([48, 48, 1], LatticeKind::D2Q9, fe, 0.5), start).unwrap();
    let total = |f: &BinaryFields| f.phi.iter().sum::<f64>();
    let before = total(&s.fields().unwrap());
    s.step(10_000).unwrap();
    let f = s.fields().unwrap();
    let sites = f.phi.len() as f64;
    // Each step changes a site by fluxes that cancel in pairs: the drift is
    // rounding, a few ulps of the largest fluxes per site and step at most.
    assert!((total(&f) - before).abs() < 1e-10 * sites, "sum of phi {before} -> {}", total(&f));
    let separated = f.phi.iter().filter(|p| p.abs() > 0.9).count() as f64 / sites;
    assert!(separated > 0.5, "the mixture did not separate: {separated}");
    let mass: f64 = f.rho.iter().sum();
    assert!((mass - sites).abs() < 1e-9 * sites, "mass {mass}");
}

/// Every stored value of the fields, as bits.
fn bits(f: &BinaryFields) -> Vec<u64> {
    let values = f.phi.iter().chain(&f.mu).chain(&f.rho).chain(f.u.iter().flatten());
    values.map(|v| v.to_bits()).collect()
}

/// A box split into slabs along z, which exchange their faces between
/// passes, steps as the whole box does, bit for bit: on both 3D lattices
/// with either collision, after even and odd step counts, for slabs of
/// unequal thickness (11 planes in 2 and 3).
#[test]
fn slabs_step_as_the_whole_box_bit_for_bit() {
    let start = |x: u32, y: u32, z: u32| {
        let d = ((x as f64 - 4.0).powi(2) + (y as f64 - 5.0).powi(2) + (z as f64 - 3.0).powi(2)).sqrt();
        let h = (x.wrapping_mul(73_856_093) ^ y.wrapping_mul(19_349_663) ^ z.wrapping_mul(83_492_791)) % 1000;
        -((d - 3.0) / 1.5).tanh() + 0.05 * (h as f64 / 500.0 - 1.0)
    };
    for lattice in [LatticeKind::D3Q19, LatticeKind::D3Q27] {
        for collision in [BinaryCollision::Bgk, BinaryCollision::Mrt] {
            let c = BinaryConfig { collision, tau: 0.9, ..config([10, 9, 11], lattice, wide(), 0.3) };
            for steps in [7, 8] {
                let run = |slabs: usize| {
                    let mut s = BinarySolver::on_devices(c.clone(), &Devices::Cpu(slabs), "", start).unwrap();
                    s.step(steps).unwrap();
                    bits(&s.fields().unwrap())
                };
                let whole = run(1);
                for slabs in [2, 3] {
                    let split = run(slabs);
                    let differ = whole.iter().zip(&split).filter(|(a, b)| a != b).count();
                    assert_eq!(
                        differ, 0,
                        "{lattice:?} {collision:?} {steps} steps, {slabs} slabs: {differ} values differ"
                    );
                }
            }
        }
    }
}

#[test]
fn bad_parameters_are_clear_errors() {
    let mut c = config([8, 8, 1], LatticeKind::D2Q9, FreeEnergy::new(0.01, 0.01, 0.01), 0.1);
    assert!(BinarySolver::new(c.clone(), |_, _, _| 0.0).err().unwrap().to_string().contains("A < 0"));
    c.free_energy = wide();
    c.size = [8, 8, 2];
    assert!(BinarySolver::new(c.clone(), |_, _, _| 0.0).err().unwrap().to_string().contains("z = 1"));
    c.size = [8, 8, 1];
    c.precision = Precision::F32;
    assert!(BinarySolver::new(c.clone(), |_, _, _| 0.0)
        .err()
        .unwrap()
        .to_string()
        .contains("CPU runs the binary fluid in f64"));
    c.precision = Precision::F16;
    assert!(BinarySolver::new(c.clone(), |_, _, _| 0.0).err().unwrap().to_string().contains("not f16"));
    c.precision = Precision::F64;
    let split = |c: &BinaryConfig, n| BinarySolver::on_devices(c.clone(), &Devices::Cpu(n), "", |_, _, _| 0.0);
    assert!(split(&c, 2).err().unwrap().to_string().contains("cannot be split along z"));
    let c = config([8, 8, 11], LatticeKind::D3Q19, wide(), 0.1);
    assert!(split(&c, 6).err().unwrap().to_string().contains("use at most 5 devices"));
}
