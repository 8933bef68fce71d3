//! The thermal model's physics on the CPU: conservation, the force's
//! work, the sound speed and the thermal diffusivity against theory.

use super::validation::{mode, slope};
use super::*;
use kernels_gpu::thermal::d2q37::GAMMA;
use std::f64::consts::PI;

fn config(nx: u32, ny: u32, tau: f64) -> ThermalConfig {
    ThermalConfig {
        nx,
        ny,
        tau,
        gravity: [0.0; 2],
        walls: None,
        fused: true,
        precision: ThermalPrecision::F64,
        tiling: Tiling::ONE,
    }
}

fn cpu(c: ThermalConfig, initial: impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync) -> ThermalSolver {
    ThermalSolver::new(c, BackendKind::Cpu, "", initial).unwrap()
}

/// A lumpy state: density, velocity and temperature vary over the box.
fn lumpy(nx: u32, ny: u32) -> impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync {
    move |x, y| {
        let (a, b) = (2.0 * PI * x as f64 / nx as f64, 2.0 * PI * y as f64 / ny as f64);
        (1.0 + 0.05 * a.sin() * b.cos(), [0.02 * b.sin(), -0.01 * a.cos()], THETA0 * (1.0 + 0.1 * (a + b).cos()))
    }
}

#[test]
fn fused_and_separate_kernels_give_the_same_populations() {
    for precision in [ThermalPrecision::F64, ThermalPrecision::F32] {
        let mut c = config(12, 17, 0.7);
        c.gravity = [1e-5, -2e-4];
        c.walls = Some([1.05 * THETA0, 0.95 * THETA0]);
        c.precision = precision;
        let mut fused = cpu(c.clone(), lumpy(12, 17));
        let mut separate = cpu(ThermalConfig { fused: false, ..c }, lumpy(12, 17));
        fused.step(9).unwrap();
        separate.step(9).unwrap();
        let (a, b) = (fused.populations().unwrap(), separate.populations().unwrap());
        let differ = a.iter().zip(&b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
        assert_eq!(differ, 0, "{precision:?}: {differ} populations differ");
    }
}

#[test]
fn walls_conserve_mass_and_a_periodic_box_momentum() {
    let total = |s: &ThermalSolver| {
        let f = s.populations().unwrap();
        let sites = (s.config().nx * s.config().ny) as usize;
        let (mut m, mut jx, mut jy) = (0.0, 0.0, 0.0);
        for (k, v) in f.iter().enumerate() {
            let c = kernels_gpu::thermal::d2q37::C[k / sites];
            (m, jx, jy) = (m + v, jx + v * c[0] as f64, jy + v * c[1] as f64);
        }
        (m, jx, jy)
    };
    let mut c = config(16, 14, 0.8);
    c.walls = Some([1.2 * THETA0, 0.8 * THETA0]);
    let mut walled = cpu(c.clone(), lumpy(16, 14));
    let (m0, ..) = total(&walled);
    walled.step(200).unwrap();
    let (m1, ..) = total(&walled);
    // Round-off of 200 steps over 224 sites of 37 populations.
    assert!((m1 - m0).abs() < 1e-12 * m0, "mass {m0} -> {m1}");

    let mut periodic = cpu(ThermalConfig { walls: None, ..c }, lumpy(16, 14));
    let (m0, jx0, jy0) = total(&periodic);
    periodic.step(200).unwrap();
    let (m1, jx1, jy1) = total(&periodic);
    assert!((m1 - m0).abs() < 1e-12 * m0, "mass {m0} -> {m1}");
    assert!(
        (jx1 - jx0).abs() < 1e-12 * m0 && (jy1 - jy0).abs() < 1e-12 * m0,
        "momentum ({jx0}, {jy0}) -> ({jx1}, {jy1})"
    );
}

/// A uniform gas under gravity in a periodic box falls freely: its
/// velocity grows by `g` each step and its temperature stays (no gradient,
/// no dissipation), which checks both shifts of the equilibrium.
#[test]
fn gravity_accelerates_a_periodic_gas_without_heating_it() {
    let mut c = config(6, 5, 0.9);
    c.gravity = [2e-5, -1e-4];
    let mut s = cpu(c.clone(), |_, _| (1.0, [0.0; 2], THETA0));
    s.step(100).unwrap();
    let f = s.fields().unwrap();
    for k in 0..f.rho.len() {
        assert!((f.ux[k] - 100.0 * c.gravity[0]).abs() < 1e-13, "ux {}", f.ux[k]);
        assert!((f.uy[k] - 100.0 * c.gravity[1]).abs() < 1e-13, "uy {}", f.uy[k]);
        assert!((f.temperature[k] - THETA0).abs() < 1e-13, "T {}", f.temperature[k]);
        assert!((f.rho[k] - 1.0).abs() < 1e-13);
    }
}

/// A small travelling sound wave moves at `sqrt(gamma T)`, `gamma = 2`
/// in two dimensions, within 1%.
#[test]
fn sound_travels_at_the_adiabatic_speed() {
    let (n, tau, t0, eps) = (128u32, 0.8, THETA0, 1e-4);
    let k = 2.0 * PI / n as f64;
    let c_s = (GAMMA * t0).sqrt();
    let mut s = cpu(config(n, 3, tau), move |x, _| {
        let w = eps * (k * x as f64).cos();
        (1.0 + w, [c_s * w, 0.0], t0 * (1.0 + (GAMMA - 1.0) * w))
    });
    let (mut phases, mut last) = (Vec::new(), 0.0f64);
    let mut unwrap = 0.0;
    for step in 0..=220 {
        if step % 10 == 0 {
            let f = s.fields().unwrap();
            let (re, im) = mode(n as usize, k, |x| f.rho[x] - 1.0);
            let phase = im.atan2(re);
            if step > 0 && phase - last > PI {
                unwrap -= 2.0 * PI;
            } else if step > 0 && last - phase > PI {
                unwrap += 2.0 * PI;
            }
            last = phase;
            phases.push((step as f64, phase + unwrap));
        }
        s.step(1).unwrap();
    }
    // cos(k x - w t) has the phase -w t.
    let speed = -slope(&phases) / k;
    eprintln!("sound speed {speed:.6}, sqrt(gamma T) {c_s:.6}, error {:+.3}%", 100.0 * (speed / c_s - 1.0));
    assert!((speed / c_s - 1.0).abs() < 0.01, "sound speed {speed}, theory {c_s}");
}

/// A temperature wave at uniform pressure (an entropy mode) decays at
/// `alpha k^2`, with the model's thermal diffusivity `alpha = (tau - 1/2)
/// T` (Prandtl number 1), within 2%.
#[test]
fn a_temperature_wave_diffuses_at_the_model_diffusivity() {
    let (n, tau, t0, eps) = (64u32, 0.8, THETA0, 1e-3);
    let k = 2.0 * PI / n as f64;
    let mut s = cpu(config(n, 3, tau), move |x, _| {
        let w = eps * (k * x as f64).sin();
        (1.0 / (1.0 + w), [0.0; 2], t0 * (1.0 + w))
    });
    let mut points = Vec::new();
    for step in 0..=600 {
        if step >= 100 && step % 5 == 0 {
            let f = s.fields().unwrap();
            let (re, im) = mode(n as usize, k, |x| f.temperature[x] - t0);
            points.push((step as f64, (re * re + im * im).sqrt().ln()));
        }
        s.step(1).unwrap();
    }
    let alpha = -slope(&points) / (k * k);
    let theory = (tau - 0.5) * t0;
    eprintln!(
        "thermal diffusivity {alpha:.6}, (tau - 1/2) T {theory:.6}, error {:+.3}%",
        100.0 * (alpha / theory - 1.0)
    );
    assert!((alpha / theory - 1.0).abs() < 0.02, "diffusivity {alpha}, theory {theory}");
}

#[test]
fn set_ups_that_cannot_run_are_refused_with_the_fix() {
    let bad = |c: ThermalConfig, says: &str| {
        let e = ThermalSolver::new(c, BackendKind::Cpu, "", |_, _| (1.0, [0.0; 2], THETA0)).err().expect("refused");
        assert!(e.to_string().contains(says), "{e}");
    };
    bad(ThermalConfig { walls: Some([1.0, 1.0]), ..config(8, 5, 0.8) }, "ny >= 6");
    bad(config(2, 8, 0.8), "nx >= 3");
    bad(config(8, 8, 0.5), "tau must be above 1/2");
    bad(ThermalConfig { walls: Some([1.0, -1.0]), ..config(8, 8, 0.8) }, "positive");
}

/// Tiles along x, along y and in a mesh, with walls or periodic, fused or
/// separate, give the one-domain populations bit for bit: every site runs
/// the same arithmetic on the same values, whichever tile holds it.
#[test]
fn tiles_give_the_one_domain_populations_bit_for_bit() {
    for (walls, fused) in [(true, true), (false, true), (true, false)] {
        let mut c = config(29, 26, 0.7);
        c.gravity = [1e-5, -2e-4];
        c.walls = walls.then_some([1.05 * THETA0, 0.95 * THETA0]);
        c.fused = fused;
        let mut one = cpu(c.clone(), lumpy(29, 26));
        one.step(7).unwrap();
        let expected = one.populations().unwrap();
        for (x, y) in [(2, 1), (4, 1), (1, 2), (3, 2), (2, 4)] {
            let mut tiled = cpu(ThermalConfig { tiling: Tiling::new(x, y), ..c.clone() }, lumpy(29, 26));
            tiled.step(7).unwrap();
            let got = tiled.populations().unwrap();
            let differ = expected.iter().zip(&got).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
            assert_eq!(differ, 0, "walls {walls} fused {fused} tiles {x}x{y}: {differ} populations differ");
        }
    }
}
