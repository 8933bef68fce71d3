//! Colloids against Stokes flow, and the GPU against the CPU.
//!
//! - A sphere pulled by a constant force through a periodic box settles at
//!   the velocity of Stokes drag with Hasimoto's (1959) correction for the
//!   periodic images, `F = 6πηaU / K(a/L)`.
//! - A free sphere in the middle of a shear flow spins at half the shear rate.
//! - The GPU gives the CPU's colloids and fields bit for bit in f64 (the
//!   same functions, the same operations, sums in the same order); f32
//!   follows; a colloid moving at a set velocity for 10,000 steps keeps the
//!   fluid's mass to round-off.
//! - Split along z into slabs on GPUs, the box gives one domain's colloids
//!   and fields bit for bit.

mod common;

use lbm::host::binary::{BinaryCollision, Devices};
use lbm::host::colloids::validation::{mass_bound, mass_drift, settling, shear_spin};
use lbm::host::colloids::{ColloidSpec, Interactions, Lubrication, SoftSphere, Suspension, SuspensionConfig};
use lbm::host::{LatticeKind, Precision};
use lbm::BackendKind;

#[test]
fn a_pulled_sphere_meets_stokes_drag_with_hasimotos_correction_on_the_cpu() {
    let s = settling(BackendKind::Cpu, "", 32, 4.5, 2000).unwrap();
    let ratio = s.velocity / s.stokes;
    assert!((ratio - 1.0).abs() < 0.03, "U / U_Stokes-Hasimoto = {ratio}");
}

#[test]
fn a_free_sphere_in_shear_spins_at_half_the_shear_rate() {
    let (spin, speed) = shear_spin(BackendKind::Cpu, "", Precision::F64, 2500).unwrap();
    assert!((spin - 1.0).abs() < 0.05, "spin over half the shear rate: {spin}");
    // It stays in the middle: no lift or drift in a symmetric channel.
    assert!(speed < 1e-6, "{speed}");
}

#[test]
fn a_colloid_driven_across_the_box_keeps_the_fluid_mass_on_the_cpu() {
    let (drift, travelled) = mass_drift(BackendKind::Cpu, "", 1000).unwrap();
    assert!(travelled > 10.0);
    assert!(drift.abs() < mass_bound(1000), "relative mass change {drift:e}");
}

/// Several colloids, all of the step busy: forces that make them cover
/// and uncover sites every few steps, spins, sliding walls, a colloid
/// close to a wall.
fn busy(lattice: LatticeKind, collision: BinaryCollision, precision: Precision) -> SuspensionConfig {
    let mut a = ColloidSpec::at([6.2, 7.1, 8.3], 3.2);
    a.force = [0.3, 0.1, -0.05];
    a.torque = [0.0, 0.0, 2.0];
    // Near the bottom wall and pushed against it: wall lubrication and
    // soft repulsion act.
    let mut b = ColloidSpec::at([15.5, 7.4, 3.05], 3.0);
    b.force = [0.05, -0.2, -0.02];
    let mut c = ColloidSpec::at([9.0, 15.5, 11.0], 2.6);
    c.velocity = [0.03, -0.02, 0.01];
    c.fixed = true;
    SuspensionConfig {
        size: [20, 22, 18],
        lattice,
        tau: 0.8,
        collision,
        precision,
        walls: Some([[0.0, 0.01, 0.0], [0.02, 0.0, 0.0]]),
        force: [1e-6, 0.0, 0.0],
        balance: true,
        colloids: vec![a, b, c],
        interactions: Interactions {
            soft: Some(SoftSphere::LUDWIG),
            lubrication: Some(Lubrication { pair_cutoff: 0.5, wall_cutoff: 0.5 }),
        },
    }
}

/// Every colloid's state and every field as one list of values.
fn values(s: &Suspension) -> Vec<f64> {
    let f = s.fields().unwrap();
    let mut v = f.rho.clone();
    v.extend(f.u.iter().flatten());
    v.extend(f.solid.iter().map(|m| m.map_or(-1.0, |m| m as f64)));
    for c in s.colloids() {
        v.extend(c.centre.iter().chain(&c.velocity).chain(&c.spin).chain(&c.hydrodynamic_force));
        v.push(c.share);
        v.push(c.sites);
    }
    v
}

#[test]
fn gpu_matches_cpu_bit_for_bit() {
    let Some(gpu) = common::gpu("colloids::gpu_matches_cpu_bit_for_bit") else { return };
    let ptx = lbm::ptx::active();
    for lattice in [LatticeKind::D3Q19, LatticeKind::D3Q27] {
        for collision in [BinaryCollision::Bgk, BinaryCollision::Mrt] {
            let run = |backend, precision| {
                let mut s = Suspension::on(busy(lattice, collision, precision), backend, &ptx).unwrap();
                s.step(60).unwrap();
                s
            };
            let cpu = run(BackendKind::Cpu, Precision::F64);
            let moved = cpu.colloids()[0].centre[0] - 6.2;
            assert!(moved > 0.5, "the colloid crossed sites ({moved})");
            let g64 = run(gpu, Precision::F64);
            let (a, b) = (values(&cpu), values(&g64));
            let differ = a.iter().zip(&b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
            assert_eq!(differ, 0, "{lattice:?} {collision:?}: {differ} of {} values differ", a.len());
            // f32 populations: the colloids follow to the populations' round-off.
            let g32 = run(gpu, Precision::F32);
            for (c, d) in cpu.colloids().iter().zip(g32.colloids()) {
                for k in 0..3 {
                    assert!((c.centre[k] - d.centre[k]).abs() < 1e-3, "{:?} {:?}", c.centre, d.centre);
                    assert!((c.velocity[k] - d.velocity[k]).abs() < 1e-3 * 0.05, "{:?} {:?}", c.velocity, d.velocity);
                }
            }
        }
    }
}

/// [`busy`] twice as tall, with colloids across the boundaries of two and
/// of three slabs (z = 20; z = 14 and 27), some driven across them.
fn tall(lattice: LatticeKind, collision: BinaryCollision, precision: Precision) -> SuspensionConfig {
    let mut c = busy(lattice, collision, precision);
    c.size[2] = 40;
    let mut d = ColloidSpec::at([6.0, 15.0, 20.4], 3.0);
    d.force = [0.0, 0.05, -0.3];
    let mut e = ColloidSpec::at([14.0, 14.0, 26.5], 2.8);
    e.velocity = [0.0, 0.0, 0.04];
    e.fixed = true;
    let mut f = ColloidSpec::at([10.0, 4.0, 13.8], 2.5);
    f.force = [0.0, 0.0, 0.2];
    c.colloids.extend([d, e, f]);
    c
}

/// Slabs on GPUs against one domain, bit for bit: in f64 against the CPU,
/// in f32 against one GPU, 2 and 3 slabs (uneven: 40 planes in 3). With
/// one GPU the slabs share it; with more they take GPUs 0, 1, 2.
#[test]
fn slabs_on_gpus_give_the_whole_box_bit_for_bit() {
    let Some(gpu) = common::gpu("colloids::slabs_on_gpus_give_the_whole_box_bit_for_bit") else { return };
    let available = lbm::host::gpu::device_count().unwrap();
    let ptx = lbm::ptx::active();
    let run = |c: &SuspensionConfig, devices: &Devices| {
        let mut s = Suspension::on_devices(c.clone(), devices, &ptx).unwrap();
        s.step(60).unwrap();
        s
    };
    let gpus = |n: usize| Devices::Gpus { ordinals: (0..n).map(|k| k % available).collect(), overlap: true };
    for lattice in [LatticeKind::D3Q19, LatticeKind::D3Q27] {
        for collision in [BinaryCollision::Bgk, BinaryCollision::Mrt] {
            for (precision, reference) in [(Precision::F64, Devices::Cpu(1)), (Precision::F32, Devices::one(gpu))] {
                let c = tall(lattice, collision, precision);
                let whole = run(&c, &reference);
                let moved = whole.colloids()[3].centre[2] - 20.4;
                assert!(moved < -0.5, "the colloid crossed the slabs' boundary ({moved})");
                let whole = values(&whole);
                for slabs in [2, 3] {
                    let split = values(&run(&c, &gpus(slabs)));
                    let differ = whole.iter().zip(&split).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
                    assert_eq!(
                        differ, 0,
                        "{lattice:?} {collision:?} {precision:?}, {slabs} slabs: {differ} values differ"
                    );
                }
            }
        }
    }
}

#[test]
fn a_colloid_moving_for_ten_thousand_steps_keeps_the_fluid_mass() {
    let Some(gpu) = common::gpu("colloids::a_colloid_moving_for_ten_thousand_steps_keeps_the_fluid_mass") else {
        return;
    };
    let (drift, travelled) = mass_drift(gpu, &lbm::ptx::active(), 10_000).unwrap();
    eprintln!("relative mass change over 10,000 steps, {travelled:.0} sites travelled: {drift:e}");
    assert!(drift.abs() < mass_bound(10_000), "relative mass change {drift:e}");
}

#[test]
fn pulled_spheres_of_radius_4_to_6_meet_stokes_hasimoto_on_the_gpu() {
    let Some(gpu) = common::gpu("colloids::pulled_spheres_of_radius_4_to_6_meet_stokes_hasimoto_on_the_gpu") else {
        return;
    };
    for a in [4.0, 5.0, 6.0] {
        let s = settling(gpu, &lbm::ptx::active(), 48, a, 4000).unwrap();
        let ratio = s.velocity / s.stokes;
        eprintln!("radius {a}, box 48: U / U_Stokes-Hasimoto = {ratio:.4}");
        assert!((ratio - 1.0).abs() < 0.03, "radius {a}: U / U_Stokes-Hasimoto = {ratio}");
    }
}
