//! The colloids' bookkeeping on the CPU: mass through covering and
//! uncovering, and the drag matrix's symmetry.

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
