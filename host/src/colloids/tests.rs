//! The colloids' bookkeeping on the CPU: mass through covering and
//! uncovering, the drag matrix's symmetry, and slabs against the whole box.

#![allow(clippy::needless_range_loop)]

use super::*;

use super::validation::periodic;

#[test]
fn a_colloid_moving_at_a_set_velocity_conserves_the_fluid_mass() {
    let mut c = ColloidSpec::at([8.3, 9.1, 10.7], 3.6);
    c.velocity = [0.05, -0.03, 0.02];
    c.spin = [0.0, 0.0, 0.004];
    c.fixed = true;
    let mut s = Suspension::new(periodic(20, vec![c])).unwrap();
    let (fluid, held) = s.mass().unwrap();
    let start = fluid + held;
    let sites = s.colloids()[0].sites;
    s.step(120).unwrap();
    let (fluid, held) = s.mass().unwrap();
    let c = &s.colloids()[0];
    // Six sites along x: many sites were covered and uncovered.
    assert!((c.centre[0] - 14.3).abs() < 1e-9, "{:?}", c.centre);
    // Each step's sums round at 1e-16 of the box's mass (8000).
    assert!(((fluid + held) - start).abs() < 1e-9, "mass {fluid} + {held} against {start}");
    assert!((c.sites - sites).abs() <= 12.0, "{} sites against {sites}", c.sites);
    // The map and the count agree, with the last move's sites not yet
    // counted (they come with the next step's sums).
    let fields = s.fields().unwrap();
    let solid = fields.solid.iter().filter(|s| s.is_some()).count() as f64;
    assert_eq!(solid, c.sites + s.fluid.pending(1).unwrap()[0].sites);
}

#[test]
fn the_drag_matrix_is_symmetric_and_positive_on_the_diagonal() {
    let c = ColloidSpec::at([10.2, 9.7, 10.4], 4.1);
    let config = periodic(20, vec![c]);
    let mut s = Suspension::new(config).unwrap();
    let kernel: Vec<Colloid> = s.colloids.iter().map(|c| c.kernel(c.centre)).collect();
    let sums = s.fluid.link_sums(&kernel).unwrap();
    let z = sums[0].drag_matrix();
    for r in 0..6 {
        assert!(z[r][r] > 0.0);
        for c in 0..6 {
            assert_eq!(z[r][c], z[c][r]);
        }
    }
    // The fluid at rest, shifted populations zero: the links' force is
    // `Σ 2 w_i c_i`, zero only for a symmetric set of links.
    assert!(sums[0].links > 100.0);
    assert!(sums[0].mass == 0.0 && sums[0].sites == 0.0);
}

/// A box in slabs whose boundaries colloids straddle and cross, on the
/// CPU: the same fields and colloids, bit for bit, as the whole box.
#[test]
fn slabs_step_as_the_whole_box_bit_for_bit() {
    let colloid = |centre: [f64; 3], velocity: [f64; 3], fixed: bool| {
        let mut c = ColloidSpec::at(centre, 2.5);
        c.velocity = velocity;
        c.fixed = fixed;
        c.force = [0.0, 0.0, -2e-3];
        c.density = 1.5;
        c
    };
    // Slab boundaries at z = 12, 24 (three slabs) and 18 (two); the first
    // colloid's box wraps around z = 0 unless walls close it.
    let colloids = |walled: bool| {
        vec![
            colloid([3.2, 3.9, if walled { 3.6 } else { 0.7 }], [0.02, 0.0, 0.06], true),
            colloid([10.1, 4.3, 11.6], [0.0, 0.03, -0.07], true),
            colloid([4.4, 10.8, 17.7], [0.0; 3], false),
            colloid([10.6, 10.2, 24.4], [0.01, 0.0, 0.05], true),
        ]
    };
    let bits = |s: &Suspension| {
        let f = s.fields().unwrap();
        let mut v: Vec<u64> = f.rho.iter().chain(f.u.iter().flatten()).map(|x| x.to_bits()).collect();
        v.extend(f.solid.iter().map(|m| m.map_or(u64::MAX, u64::from)));
        for c in s.colloids() {
            v.extend(c.centre.iter().chain(&c.velocity).chain(&c.spin).chain([&c.share]).map(|x| x.to_bits()));
        }
        v
    };
    for lattice in [LatticeKind::D3Q19, LatticeKind::D3Q27] {
        for walled in [false, true] {
            let config = SuspensionConfig {
                size: [14, 14, 36],
                lattice,
                walls: walled.then_some([[0.0; 3], [0.02, 0.0, 0.0]]),
                colloids: colloids(walled),
                ..periodic(14, Vec::new())
            };
            let run = |slabs: usize| {
                let mut s = Suspension::on_devices(config.clone(), &Devices::Cpu(slabs), "").unwrap();
                s.step(24).unwrap();
                (bits(&s), s.mass().unwrap())
            };
            let (whole, mass) = run(1);
            for slabs in [2, 3] {
                let (split, split_mass) = run(slabs);
                assert_eq!(whole.len(), split.len());
                let differ = whole.iter().zip(&split).filter(|(a, b)| a != b).count();
                assert_eq!(differ, 0, "{lattice:?}, walls {walled}, {slabs} slabs: {differ} values differ");
                // The held mass is each colloid's own sums, bit for bit; the
                // fluid's is summed slab by slab, so it rounds differently.
                assert_eq!(mass.1, split_mass.1);
                assert!((mass.0 - split_mass.0).abs() < 1e-10 * mass.0, "{mass:?} against {split_mass:?}");
            }
        }
    }
}

#[test]
fn slabs_thinner_than_a_colloid_box_are_refused() {
    let config = SuspensionConfig { size: [14, 14, 30], ..periodic(14, vec![ColloidSpec::at([7.0, 7.0, 7.0], 2.5)]) };
    let err = Suspension::on_devices(config, &Devices::Cpu(3), "").err().unwrap().to_string();
    assert!(err.contains("slabs of at least 11") && err.contains("use at most 2 devices"), "{err}");
}
