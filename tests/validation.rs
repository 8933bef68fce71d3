//! Validation against analytic solutions and published references, on the
//! CPU backend always and on the GPU when one is present.

mod common;

use common::factory;
use lbm::host::domain::OpenScheme;
use lbm::host::reference::{CAVITY3D_RE100_U, GHIA_RE1000_U, GHIA_RE1000_V, GHIA_RE100_U, GHIA_RE100_V};
use lbm::host::validation::*;
use lbm::host::{LatticeKind, Precision, Profile};
use lbm::kernels::Streaming;
use lbm::BackendKind;

/// Poiseuille flow between halfway bounce-back walls: BGK with Guo forcing is
/// second-order accurate in space, so the error must fall as width^-2.
fn poiseuille_second_order(backend: BackendKind) {
    for lattice in [LatticeKind::D2Q9, LatticeKind::D3Q19] {
        let results: Vec<_> = [8, 16, 32, 64]
            .iter()
            .map(|&w| poiseuille(factory(), backend, lattice, Precision::F64, w, 0.8, 0.01).unwrap())
            .collect();
        let order = convergence_order(&results);
        println!(
            "{lattice:?} Poiseuille errors {:?} order {order:.3}",
            results.iter().map(|r| r.l2_error).collect::<Vec<_>>()
        );
        assert!((order - 2.0).abs() < 0.1, "{lattice:?}: order {order}, expected 2");
        // Fine enough to be more than a trend: under 0.1% at 64 cells.
        assert!(results[3].l2_error < 1e-3, "{lattice:?}: error {} at width 64", results[3].l2_error);
    }
}
on_backends!(poiseuille_second_order);

/// A channel between a velocity inlet and a pressure outlet settles to plane
/// Poiseuille flow. Tolerances: the mass inflow is 1.3% above `u_in H` at 20
/// cells and 0.67% at 40 with the inflow speed fixed (measured; 2% allowed at
/// 20), because the inlet imposes the velocity at a density raised by the
/// pressure that drives the flow (`36 nu u L / H^2` = 1.1% here); at a fixed
/// Reynolds number it falls as 1/H^2, with either open-boundary scheme. The
/// cell-centred flux next to the outlet differs from the conserved interface
/// flux by the non-equilibrium stress (0.08% of it). The developed profile
/// and the pressure gradient carry the O(1/H^2) wall error of halfway
/// bounce-back (0.1% at 20 cells, a quarter of that at 40) and the 1% density
/// drop along the channel (Mach 0.017).
fn channel_inlet_outlet(backend: BackendKind) {
    for (lattice, precision) in [
        (LatticeKind::D2Q9, Precision::F64),
        (LatticeKind::D3Q19, Precision::F64),
        (LatticeKind::D3Q19, Precision::F32),
    ] {
        for scheme in OpenScheme::ALL {
            let r = channel(factory(), backend, lattice, precision, Channel { scheme, ..VALIDATION_CHANNEL }).unwrap();
            println!("{lattice:?} {precision:?} {scheme:?} channel: {r:?}");
            assert!(r.converged, "{lattice:?} {precision:?}: no steady state");
            assert!(
                r.flux_spread < 1e-3,
                "{lattice:?} {precision:?}: mass flux varies by {} along the channel",
                r.flux_spread
            );
            assert!(r.flux_error.abs() < 0.02, "{lattice:?} {precision:?}: flux off the inflow by {}", r.flux_error);
            assert!(r.profile_error < 0.01, "{lattice:?} {precision:?}: profile off Poiseuille by {}", r.profile_error);
            assert!(
                r.gradient_error.abs() < 0.02,
                "{lattice:?} {precision:?}: pressure gradient off by {}",
                r.gradient_error
            );
            assert!(
                r.outlet_density_error.abs() < 1e-3,
                "{lattice:?} {precision:?}: outlet density off by {}",
                r.outlet_density_error
            );
        }
    }
}
on_backends!(channel_inlet_outlet);

/// The channel with developed Poiseuille inflow at widths 10, 20 and 40 and
/// a fixed Reynolds number (2: `tau` fixed, the inflow speed halving as the
/// width doubles, so the compressibility error falls as fast as a
/// second-order one). TRT with the magic parameter 3/16 makes the walls
/// exact, so the first and last fluid columns deviate from the imposed
/// profile by the open boundaries' errors. An equilibrium boundary drops the
/// non-equilibrium stress, a first-order error at the inlet; a regularized
/// one keeps it (Latt et al. 2008). Measured (f64, CPU), inlet: equilibrium
/// 8.7e-3, 3.9e-3, 1.5e-3 (order 1.24), regularized 6.8e-4, 9.1e-5, 1.2e-5
/// (order 2.9: what remains is the speed-up over one cell as the density
/// drops, `36 nu u / H^2` relative, third order in this scaling). Outlet:
/// equilibrium 4.6e-3, 5.3e-3, 3.8e-3 (order 0.15: at a fixed Reynolds
/// number the dropped stress distorts the profile by a fixed fraction),
/// regularized 6.8e-5, 5.0e-5, 2.3e-5, 70 to 160 times smaller. Bounds:
/// the inlet orders within 0.3 of 1 and above 1.7 (the brief's "about 1"
/// and "about 2", with room for a three-point fit), the equilibrium outlet
/// below first order, the regularized outlet 30 times below it.
fn regularized_open_boundaries_are_second_order(backend: BackendKind) {
    use lbm::host::solver::{CollisionModel, DEFAULT_MAGIC};
    let widths = [10u32, 20, 40];
    let run = |scheme| -> Vec<DevelopedChannelResult> {
        widths
            .iter()
            .map(|&width| {
                let tau = 0.8;
                let u_in = 2.0 * (tau - 0.5) / 3.0 / width as f64;
                let spec = Channel { width, length: 3 * width, tau, u_in, scheme };
                let trt = CollisionModel::Trt { magic: DEFAULT_MAGIC };
                let r = developed_channel(factory(), backend, LatticeKind::D2Q9, Precision::F64, spec, trt).unwrap();
                assert!(r.converged, "{scheme:?} width {width}: no steady state");
                r
            })
            .collect()
    };
    let order = |errors: Vec<f64>| {
        let fit: Vec<PoiseuilleResult> =
            widths.iter().zip(errors).map(|(&width, l2_error)| PoiseuilleResult { width, l2_error }).collect();
        convergence_order(&fit)
    };
    let (eq, reg) = (run(OpenScheme::Equilibrium), run(OpenScheme::Regularized));
    let orders = |r: &[DevelopedChannelResult]| {
        let (inlet, outlet): (Vec<f64>, Vec<f64>) = r.iter().map(|r| (r.inlet_error, r.outlet_error)).unzip();
        println!("inlet errors {inlet:?}, outlet errors {outlet:?}");
        (order(inlet), order(outlet))
    };
    let ((eq_in, eq_out), (reg_in, reg_out)) = (orders(&eq), orders(&reg));
    println!(
        "orders: equilibrium inlet {eq_in:.2}, outlet {eq_out:.2}; regularized inlet {reg_in:.2}, outlet {reg_out:.2}"
    );
    assert!((0.7..1.3).contains(&eq_in), "equilibrium inlet order {eq_in}, expected about 1");
    assert!(eq_out < 1.0, "equilibrium outlet order {eq_out}, expected below 1");
    assert!(reg_in > 1.7, "regularized inlet order {reg_in}, expected 2 or more");
    for (k, (e, r)) in eq.iter().zip(&reg).enumerate() {
        let width = widths[k];
        assert!(
            r.outlet_error < e.outlet_error / 30.0,
            "width {width}: outlet {} against {}",
            r.outlet_error,
            e.outlet_error
        );
    }
    println!("regularized outlet order {reg_out:.2} (not asserted)");
}
on_backends!(regularized_open_boundaries_are_second_order);

/// Taylor-Green decay gives back nu = (tau - 1/2)/3 within 1% (the
/// discretisation error at 64 cells per wavelength is O((k dx)^2) ~ 1e-2 at most).
fn taylor_green_viscosity(backend: BackendKind) {
    for (lattice, precision) in [
        (LatticeKind::D2Q9, Precision::F64),
        (LatticeKind::D3Q19, Precision::F64),
        (LatticeKind::D3Q27, Precision::F64),
        (LatticeKind::D3Q19, Precision::F32),
    ] {
        for tau in [0.6, 0.8, 1.2] {
            let r = taylor_green(factory(), backend, lattice, precision, 64, tau).unwrap();
            let rel = r.nu_measured / r.nu_expected - 1.0;
            println!(
                "{lattice:?} {precision:?} tau {tau}: nu {} measured {} ({rel:.2e})",
                r.nu_expected, r.nu_measured
            );
            assert!(rel.abs() < TAYLOR_GREEN_TOLERANCE, "{lattice:?} {precision:?} tau {tau}: viscosity off by {rel}");
        }
    }
}
on_backends!(taylor_green_viscosity);

/// Runs a cavity to steady state and returns the largest deviations of the
/// centre-line profiles from the reference, in units of the lid speed.
#[allow(clippy::too_many_arguments)]
fn cavity_errors(
    on: common::On,
    lattice: LatticeKind,
    precision: Precision,
    side: u32,
    reynolds: f64,
    max_steps: u64,
    u_ref: Profile,
    v_ref: Option<Profile>,
) -> (f64, Option<f64>) {
    let lid = 0.1;
    let c = cavity_config(lattice, precision, Streaming::EsotericPull, side, reynolds, lid).unwrap();
    let mut s = on.build(c);
    let (f, converged) = run_to_steady(s.as_mut(), 1000, max_steps, lid, 1e-5).unwrap();
    // 16-bit storage jitters at its rounding level (2^-11 of the stored
    // deviations), above the 1e-5 steadiness test: it runs to max_steps.
    assert!(converged || precision == Precision::F16, "cavity Re {reynolds} not steady after {max_steps} steps");
    let mid = cavity_coordinate(0.5, side);
    let z = if lattice.dimension() == 2 { 0.0 } else { mid };
    let eu = profile_error(&f, u_ref, lid, 0, side, |s| [mid, cavity_coordinate(s, side), z]);
    let ev = v_ref.map(|r| profile_error(&f, r, lid, 1, side, |s| [cavity_coordinate(s, side), mid, z]));
    println!(
        "{lattice:?} {precision:?} cavity Re {reynolds}, {side} cells, {} steps: max error u {eu:.4}, v {ev:?}",
        s.time()
    );
    (eu, ev)
}

// Tolerances for the cavities: the lid runs at Mach 0.1 sqrt(3), so the
// compressibility error is O(Ma^2) = 3 U^2 = 3% of the lid speed at most;
// Ghia et al.'s own second-order solution is good to about 1%.

/// 2D cavity at Re 100 against Ghia, Ghia & Shin (1982), Tables I and II.
fn cavity_2d_ghia_re100(backend: BackendKind) {
    let (eu, ev) = cavity_errors(
        common::On::from(backend),
        LatticeKind::D2Q9,
        Precision::F32,
        64,
        100.0,
        60_000,
        GHIA_RE100_U,
        Some(GHIA_RE100_V),
    );
    assert!(eu < GHIA_TOLERANCE_RE100 && ev.unwrap() < GHIA_TOLERANCE_RE100, "Re 100: u error {eu}, v error {ev:?}");
}
on_backends!(cavity_2d_ghia_re100);

/// 2D cavity at Re 1000 against Ghia, Ghia & Shin (1982), Tables I and II.
fn cavity_2d_ghia_re1000(backend: BackendKind) {
    let (eu, ev) = cavity_errors(
        common::On::from(backend),
        LatticeKind::D2Q9,
        Precision::F32,
        128,
        1000.0,
        200_000,
        GHIA_RE1000_U,
        Some(GHIA_RE1000_V),
    );
    assert!(eu < GHIA_TOLERANCE_RE1000 && ev.unwrap() < GHIA_TOLERANCE_RE1000, "Re 1000: u error {eu}, v error {ev:?}");
}
on_backends!(cavity_2d_ghia_re1000);

/// 3D cubic cavity at Re 100 against Wong & Baker (2002), u on the vertical centre line.
fn cavity_3d_wong_baker_re100(on: common::On) {
    let (eu, _) = cavity_errors(on, LatticeKind::D3Q19, Precision::F32, 40, 100.0, 40_000, CAVITY3D_RE100_U, None);
    assert!(eu < 0.03, "3D Re 100: u error {eu}");
}
on_executors!(cavity_3d_wong_baker_re100);

/// A closed box (walls, a tangential lid, a body force) conserves mass to
/// round-off over 2,500 steps: the bound is a random walk of one rounding
/// per step, eps * sqrt(steps), with a safety factor of 10. A steady leak
/// of a fifth of a rounding per step would exceed it.
fn closed_box_conserves_mass(on: common::On) {
    for precision in [Precision::F64, Precision::F32] {
        let mut c = cavity_config(LatticeKind::D3Q19, precision, Streaming::EsotericPull, 24, 100.0, 0.05).unwrap();
        c.force = [1e-5, -2e-5, 0.5e-5];
        let mut s = on.build(c);
        let m0 = s.mass().unwrap();
        let steps = 2_500u64;
        s.step(steps).unwrap();
        let drift = (s.mass().unwrap() - m0).abs() / m0;
        let eps = precision.epsilon();
        let bound = 10.0 * eps * (steps as f64).sqrt();
        println!("{precision:?}: relative mass drift {drift:.3e} after {steps} steps (bound {bound:.1e})");
        assert!(drift < bound, "{precision:?}: mass drift {drift} above {bound}");
    }
}
on_executors!(closed_box_conserves_mass);

/// 16-bit storage keeps the physics of flows driven by walls and initial
/// conditions: Taylor-Green viscosity within 1% as in f32, and the Ghia Re 100
/// cavity within the same 2% of the lid speed (the f16 rounding of the stored
/// deviations, 2^-11 relative, is far below the O(Ma^2) error that sets that
/// tolerance). Weakly forced flows are another matter; see the README.
fn sixteen_bit_storage_keeps_the_physics(backend: BackendKind) {
    for tau in [0.6, 0.8, 1.2] {
        let f16 = taylor_green(factory(), backend, LatticeKind::D3Q19, Precision::F16, 64, tau).unwrap();
        let f32 = taylor_green(factory(), backend, LatticeKind::D3Q19, Precision::F32, 64, tau).unwrap();
        let (e16, e32) = (f16.nu_measured / f16.nu_expected - 1.0, f32.nu_measured / f32.nu_expected - 1.0);
        println!("Taylor-Green tau {tau}: viscosity error f16 {e16:.2e}, f32 {e32:.2e}");
        assert!(e16.abs() < 0.01, "f16 tau {tau}: viscosity off by {e16}");
    }
    // A force-driven channel approaches its steady state by changes far
    // below a half's last place; rounded to nearest they were lost, and the
    // flow stalled short (31% at 64 cells). Stochastic rounding keeps them,
    // leaving zero-mean noise of about one unit in the last place (2^-10
    // relative) in each stored deviation: a few 2^-10 of the velocity.
    for width in [8, 16, 32, 64] {
        let run = |precision| poiseuille(factory(), backend, LatticeKind::D2Q9, precision, width, 0.8, 0.1).unwrap();
        let (e16, e32) = (run(Precision::F16).l2_error, run(Precision::F32).l2_error);
        println!("Poiseuille {width} cells: L2 error f16 {e16:.2e}, f32 {e32:.2e}");
        assert!(e16 < e32 + 4.0 * 2f64.powi(-10), "f16 Poiseuille at {width} cells: {e16} against f32 {e32}");
    }
    let (eu, ev) = cavity_errors(
        common::On::from(backend),
        LatticeKind::D2Q9,
        Precision::F16,
        64,
        100.0,
        20_000,
        GHIA_RE100_U,
        Some(GHIA_RE100_V),
    );
    assert!(
        eu < GHIA_TOLERANCE_RE100 && ev.unwrap() < GHIA_TOLERANCE_RE100,
        "f16 Re 100: u error {eu}, v error {ev:?}"
    );
}
on_backends!(sixteen_bit_storage_keeps_the_physics);

/// TRT with the magic parameter 3/16 puts halfway bounce-back walls exactly
/// half way along their links: force-driven Poiseuille flow then matches the
/// parabola to round-off, for any width and relaxation time (Ginzburg,
/// Verhaeghe & d'Humieres 2008). Round-off of about one f64 epsilon per step
/// piles up in the slowest mode by its decay time in steps, so the bound is
/// that gain times 100 epsilon. BGK at the same set-ups misses by far more
/// (its wall position depends on tau), which shows the test can fail.
fn trt_poiseuille_is_exact(backend: BackendKind) {
    use lbm::host::solver::{CollisionModel, DEFAULT_MAGIC};
    for tau in [0.6, 1.0, 2.0] {
        for width in [8, 16, 32, 64] {
            let spec = |collision| PoiseuilleSpec { width, tau, u_max: 0.05, collision, e_foldings: 40.0 };
            let trt = spec(CollisionModel::Trt { magic: DEFAULT_MAGIC });
            let bound = 100.0 * f64::EPSILON * trt.steps_per_e_folding();
            let r = poiseuille_with(factory(), backend, LatticeKind::D2Q9, Precision::F64, trt).unwrap();
            println!("TRT tau {tau} width {width}: L2 error {:.2e} (bound {bound:.1e})", r.l2_error);
            assert!(r.l2_error < bound, "TRT tau {tau} width {width}: error {:.3e} above {bound:.1e}", r.l2_error);
            if width == 8 {
                let bgk = spec(CollisionModel::Bgk);
                let b = poiseuille_with(factory(), backend, LatticeKind::D2Q9, Precision::F64, bgk).unwrap();
                assert!(b.l2_error > 1e3 * bound, "BGK tau {tau}: error {:.3e} is not far above round-off", b.l2_error);
            }
        }
    }
}
on_backends!(trt_poiseuille_is_exact);

/// TRT whose two rates are equal is BGK, bit for bit: a forced cavity with
/// walls and a moving lid, both schemes, every storage format. The magic
/// parameter `(tau - 1/2)^2` gives equal rates exactly for these taus.
fn trt_with_equal_rates_is_bgk(on: common::On) {
    use lbm::host::solver::CollisionModel;
    for (lattice, precision) in [
        (LatticeKind::D3Q19, Precision::F32),
        (LatticeKind::D3Q27, Precision::F64),
        (LatticeKind::D2Q9, Precision::F16),
    ] {
        for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
            for tau in [0.75, 1.0] {
                let side = if lattice.dimension() == 2 { 30 } else { 12 };
                let mut c = cavity_config(lattice, precision, streaming, side, 100.0, 0.08).unwrap();
                c.tau = tau;
                c.force = [2e-5, 1e-5, if lattice.dimension() == 3 { -1e-5 } else { 0.0 }];
                let mut bgk = on.build(c.clone());
                c.collision = CollisionModel::Trt { magic: (tau - 0.5) * (tau - 0.5) };
                let mut trt = on.build(c);
                bgk.step(101).unwrap();
                trt.step(101).unwrap();
                let differ =
                    lbm::host::solver::bitwise_differences(&bgk.populations().unwrap(), &trt.populations().unwrap());
                assert_eq!(differ, 0, "{lattice:?} {precision:?} {streaming:?} tau {tau}: {differ} populations differ");
            }
        }
    }
}
on_executors!(trt_with_equal_rates_is_bgk);

/// A fully periodic case with a body force `force` along x and one `[[geometry]]`
/// entry, run to steady state (the superficial velocity changing by less
/// than 1e-4 of itself over 200 steps); its permeability.
fn permeability_of(backend: BackendKind, size: u32, force: f64, geometry: &str) -> lbm::host::porous::Permeability {
    use lbm::host::porous::measure;
    let dir = std::env::temp_dir().join(format!("lbm-porous-{}-{size}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sample.toml");
    let periodic = ["x_min", "x_max", "y_min", "y_max", "z_min", "z_max"].map(|f| format!("{f} = \"periodic\"\n"));
    std::fs::write(
        &path,
        format!(
            "[simulation]\nlattice = \"D3Q19\"\nprecision = \"f64\"\ncollision = \"trt\"\nsize = [{size}, {size}, {size}]\n\
             steps = 1\n[physics]\nviscosity = 0.1666666666666667\nforce = [{force:e}, 0.0, 0.0]\n[boundaries]\n{}\
             [[geometry]]\nname = \"solid\"\n{geometry}\n",
            periodic.concat()
        ),
    )
    .unwrap();
    let setup = lbm::host::case::Case::load(&path).unwrap().setup(&path, None).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    let sample = setup.porous.clone().expect("a porous sample");
    let mut solver = lbm::build_solver(setup.config.clone(), backend).unwrap();
    let c = &setup.config;
    let mut previous = 0.0;
    for _ in 0..100 {
        solver.step(200).unwrap();
        let k = measure(&solver.fields().unwrap(), &c.domain.flags, c.force, setup.viscosity, sample.diameter).unwrap();
        if (k.superficial_velocity - previous).abs() < 1e-4 * k.superficial_velocity {
            println!("steady after {} steps: {k:?}", solver.time());
            return k;
        }
        previous = k.superficial_velocity;
    }
    panic!("no steady state after {} steps", solver.time());
}

/// A simple cubic array of spheres (one sphere in a periodic box of 32
/// cells, solid fraction 0.125) against the drag of Hasimoto (1959) and
/// Sangani & Acrivos (1982). The reference uses the radius of the sphere of
/// the voxelised volume. Tolerance: halfway bounce-back on a staircase
/// surface fixes the hydrodynamic radius only to a fraction of a cell (about
/// 0.3 cells at a radius of 10; Ladd 1994), and at this solid fraction the
/// permeability moves 3.4 times as fast as the radius: 10%.
fn simple_cubic_array_matches_sangani_acrivos(backend: BackendKind) {
    use lbm::host::porous::simple_cubic_permeability;
    let l = 32.0;
    let a = l * (0.125 * 3.0 / (4.0 * std::f64::consts::PI)).cbrt();
    // Force 1e-6: Reynolds number u d / nu = 0.03, creeping flow (the
    // inertial correction to the drag grows as its square).
    let k =
        permeability_of(backend, 32, 1e-6, &format!("shape = \"sphere\"\ncentre = [15.5, 15.5, 15.5]\nradius = {a}"));
    let solid = (1.0 - k.porosity) * l.powi(3);
    let a_voxel = (3.0 * solid / (4.0 * std::f64::consts::PI)).cbrt();
    let reference = simple_cubic_permeability(a_voxel, l);
    let ratio = k.permeability / reference;
    println!("simple cubic, a = {a:.3} ({a_voxel:.3} voxelised): k = {:.5e}, Sangani-Acrivos {reference:.5e}, ratio {ratio:.4}", k.permeability);
    assert!(k.superficial_velocity * 2.0 * a / (1.0 / 6.0) < 0.1, "not creeping flow");
    assert!((ratio - 1.0).abs() < 0.10, "k / k_ref = {ratio}");
}
on_backends!(simple_cubic_array_matches_sangani_acrivos);

/// A random bed of 73 non-overlapping spheres of diameter 10 cells at
/// porosity 0.4 against Kozeny-Carman (Carman 1937). Tolerance: the
/// correlation describes measured random sphere packings to 20-30%, this
/// box holds only four diameters (one bed, not an average), and bounce-back
/// at 10 cells per diameter adds up to 10% (see the simple cubic test): 35%.
fn packed_bed_matches_kozeny_carman(backend: BackendKind) {
    let k = permeability_of(backend, 40, 1e-5, "shape = \"packed-spheres\"\nradius = 5.0\nporosity = 0.4\nseed = 1");
    let ratio = k.permeability / k.kozeny_carman.unwrap();
    println!(
        "packed bed, porosity {:.4}: k = {:.5e}, Kozeny-Carman {:.5e}, ratio {ratio:.4}, Reynolds {:.2e}",
        k.porosity,
        k.permeability,
        k.kozeny_carman.unwrap(),
        k.reynolds.unwrap()
    );
    assert!((k.porosity - 0.4).abs() < 0.01, "porosity {}", k.porosity);
    assert!(k.reynolds.unwrap() < 0.1, "not creeping flow");
    assert!((ratio - 1.0).abs() < 0.35, "k / k_KC = {ratio}");
}
on_backends!(packed_bed_matches_kozeny_carman);

/// Slow flow through a square array of cylinders (solid fraction 0.05)
/// against the drag law of Sangani & Acrivos (1982): interpolated
/// bounce-back is second-order accurate in the cell size (the error falls by
/// 4 when the resolution doubles; 2.8, order 1.5, is asked, because how the
/// circle sits on the lattice changes with the resolution and scatters the
/// error about the h^2 trend). At 64 cells it is under half the error of
/// halfway bounce-back, whose wall sits on the staircase of voxel centres
/// and whose error wanders with the resolution (at 32 cells it happens to
/// be as small).
fn cylinder_array_second_order(backend: BackendKind) {
    let c = 0.05;
    for streaming in Streaming::ALL {
        let run = |side, interpolated| {
            let spec = CylinderArray { side, solid_fraction: c, interpolated, streaming };
            let r = cylinder_array(factory(), backend, spec).unwrap();
            println!("{streaming:?} side {side} interpolated {interpolated}: {r:?}");
            assert!(r.converged, "{streaming:?} side {side}: no steady state");
            r.error
        };
        let (coarse, fine) = (run(32, true), run(64, true));
        let fine_halfway = run(64, false);
        assert!(fine.abs() < 0.005, "{streaming:?}: interpolated walls {fine:.2e} off the drag law at 64 cells");
        assert!(coarse.abs() / fine.abs() > 2.8, "{streaming:?}: error {coarse:.2e} -> {fine:.2e}, not second order");
        assert!(fine.abs() < 0.5 * fine_halfway.abs(), "{streaming:?}: {fine:.2e} against halfway {fine_halfway:.2e}");
    }
}
on_backends!(cylinder_array_second_order);

/// Schäfer & Turek 2D-1 (Re 20) with interpolated bounce-back on the
/// cylinder, a parabolic regularized inlet and a regularized outlet, in
/// diffusive scaling (the peak inflow halves as the resolution doubles, so
/// the compressibility error falls with the discretisation error). The
/// finer run is within the bounds (drag 1%, lift 5%); the coarser
/// shows the errors shrink with resolution.
#[test]
fn schaefer_turek_2d1_drag_and_lift() {
    use lbm::host::validation::{cylinder_channel, CylinderChannel};
    let run = |diameter: u32, u_max: f64| {
        let r = cylinder_channel(factory(), BackendKind::Cpu, CylinderChannel { diameter, u_max, interpolated: true })
            .unwrap();
        println!(
            "D = {diameter} cells, u_max = {u_max}: c_D = {:.5} ({:+.3}%), c_L = {:.6} ({:+.2}%), {} steps",
            r.drag,
            100.0 * r.drag_error,
            r.lift,
            100.0 * r.lift_error,
            r.steps
        );
        assert!(r.converged, "D = {diameter}: not steady after {} steps", r.steps);
        r
    };
    let coarse = run(10, 0.06);
    let fine = run(20, 0.03);
    assert!(fine.drag_error.abs() < 0.01, "drag {:+.3}% at D = 20", 100.0 * fine.drag_error);
    assert!(fine.lift_error.abs() < 0.05, "lift {:+.2}% at D = 20", 100.0 * fine.lift_error);
    assert!(fine.drag_error.abs() < coarse.drag_error.abs() / 2.0, "the drag error falls at least as first order");
    assert!(fine.lift_error.abs() < coarse.lift_error.abs() / 2.0, "the lift error falls at least as first order");
}

/// A pressure pulse leaving a channel at rest: today's pressure outlets
/// send it back inverted, nearly whole (a fixed density is a pressure-release
/// end); a sponge band of 20 cells at the default strength takes it in.
/// Its design estimate is a round trip through the band leaving
/// `exp(-sigma L / (3 c_s)) = exp(-0.4 * 20 / sqrt(3)) = 1%` of the wave for
/// the outlet to reflect, plus what the band's own rise sends back: under
/// 1% in all. A band twice as thick reflects less again.
#[test]
fn sponge_absorbs_a_pressure_pulse_that_outlets_reflect() {
    use lbm::host::case::DEFAULT_SPONGE_STRENGTH as STRENGTH;
    use lbm::host::validation::{outlet_pulse, OutletPulse};
    let run = |scheme, sponge| {
        let r = outlet_pulse(factory(), BackendKind::Cpu, OutletPulse { length: 800, scheme, sponge }).unwrap();
        println!("{scheme:?} outlet, sponge {sponge:?}: reflected {:+.4}% of the incident wave", 100.0 * r.coefficient);
        r.coefficient
    };
    for scheme in OpenScheme::ALL {
        let bare = run(scheme, None);
        assert!(bare < -0.8, "a pressure outlet reflects a pressure wave inverted: {bare}");
        let sponge = run(scheme, Some((20, STRENGTH)));
        assert!(sponge.abs() < 0.01, "{sponge}");
        let thick = run(scheme, Some((40, STRENGTH)));
        assert!(thick.abs() < sponge.abs(), "{thick} vs {sponge}");
    }
}

/// Every collision operator beside BGK and TRT: force-driven Poiseuille
/// flow converges at second order, and the Taylor-Green vortex decays with
/// the viscosity `(tau - 1/2)/3` within 1% (see `taylor_green_viscosity`).
/// The Poiseuille peak velocity falls as 1/width (diffusive scaling), so
/// that a Smagorinsky eddy viscosity, `(C dx)^2 |S|`, is a second-order
/// model error as well; in the Taylor-Green vortex (u0 = 0.02 over 64
/// cells) it is below 1e-3 of the viscosity.
fn operators_poiseuille_and_taylor_green(backend: BackendKind) {
    use lbm::host::solver::CollisionModel;
    let operators = [
        CollisionModel::Mrt,
        CollisionModel::Regularized { smagorinsky: 0.0 },
        CollisionModel::Regularized { smagorinsky: 0.15 },
        CollisionModel::Smagorinsky { constant: 0.15 },
        CollisionModel::Cumulant,
    ];
    for collision in operators {
        for lattice in LatticeKind::ALL.into_iter().filter(|l| collision.kind().built_for(l.q())) {
            let results: Vec<_> = [8, 16, 32, 64]
                .iter()
                .map(|&width| {
                    let u_max = 0.08 / width as f64;
                    let spec = PoiseuilleSpec { width, tau: 0.8, u_max, collision, e_foldings: 25.0 };
                    poiseuille_with(factory(), backend, lattice, Precision::F64, spec).unwrap()
                })
                .collect();
            let order = convergence_order(&results);
            let errors: Vec<_> = results.iter().map(|r| r.l2_error).collect();
            println!("{collision:?} {lattice:?} Poiseuille errors {errors:?} order {order:.3}");
            assert!((order - 2.0).abs() < 0.1, "{collision:?} {lattice:?}: order {order}, expected 2");
            assert!(results[3].l2_error < 1e-3, "{collision:?} {lattice:?}: error {} at width 64", results[3].l2_error);
            for tau in [0.6, 1.2] {
                let r = taylor_green_with(factory(), backend, lattice, Precision::F64, 64, tau, collision).unwrap();
                let rel = r.nu_measured / r.nu_expected - 1.0;
                println!("{collision:?} {lattice:?} tau {tau}: Taylor-Green viscosity off by {rel:.2e}");
                assert!(
                    rel.abs() < TAYLOR_GREEN_TOLERANCE,
                    "{collision:?} {lattice:?} tau {tau}: viscosity off by {rel}"
                );
            }
        }
    }
}
on_backends!(operators_poiseuille_and_taylor_green);

/// The cumulant operator's viscosity does not depend on the frame: a
/// Taylor-Green vortex carried by a mean flow of 0.1 along x and 0.05 along
/// y decays with the viscosity `(tau - 1/2)/3` within 1%, as at rest. Its
/// correction of the normal stresses (Geier et al. 2015, Eqs. 61-63) stands
/// in for the third-order moments `c_x^3` these lattices lack; BGK, whose
/// equilibrium lacks them too, is printed beside it for scale.
fn cumulant_viscosity_is_galilean_invariant(backend: BackendKind) {
    use lbm::host::solver::CollisionModel;
    for lattice in [LatticeKind::D2Q9, LatticeKind::D3Q27] {
        for tau in [0.55, 0.8] {
            let off = |collision| {
                let r =
                    taylor_green_advected(factory(), backend, lattice, Precision::F64, 64, tau, collision, [0.1, 0.05])
                        .unwrap();
                r.nu_measured / r.nu_expected - 1.0
            };
            let (cumulant, bgk) = (off(CollisionModel::Cumulant), off(CollisionModel::Bgk));
            println!("{lattice:?} tau {tau} advected Taylor-Green viscosity off by {cumulant:+.2e} (bgk {bgk:+.2e})");
            assert!(cumulant.abs() < TAYLOR_GREEN_TOLERANCE, "{lattice:?} tau {tau}: viscosity off by {cumulant}");
        }
    }
}
on_backends!(cumulant_viscosity_is_galilean_invariant);

/// The turbulent Taylor-Green vortex at Reynolds number 1600 (Brachet et
/// al. 1983) on 128^3 cells, far too coarse for the flow's smallest scales
/// (`tau - 1/2 = 0.002`): with a Smagorinsky eddy viscosity, on BGK and on
/// the regularized operator (D3Q19), and with the cumulant operator and no
/// eddy viscosity (D3Q27), it stays finite and its dissipation rate peaks
/// at the published time within 10%. GPU only (5,000 steps of 2 million cells).
#[test]
fn turbulent_taylor_green_with_smagorinsky() {
    use lbm::host::solver::CollisionModel;
    let Some(gpu) = common::gpu("turbulent_taylor_green_with_smagorinsky") else { return };
    for (collision, lattice) in [
        (CollisionModel::Smagorinsky { constant: 0.1 }, LatticeKind::D3Q19),
        (CollisionModel::Regularized { smagorinsky: 0.1 }, LatticeKind::D3Q19),
        (CollisionModel::Cumulant, LatticeKind::D3Q27),
    ] {
        let spec = TurbulentTaylorGreen { collision, lattice, ..TAYLOR_GREEN_1600 };
        let r = turbulent_taylor_green(factory(), gpu, spec).unwrap();
        let curve: Vec<String> = r.dissipation.iter().map(|(t, e)| format!("{t:.1}:{e:.5}")).collect();
        println!("{collision:?}: dissipation {}", curve.join(" "));
        println!(
            "{collision:?}: peak {:.5} at t = {:.3} (published {TAYLOR_GREEN_1600_PEAK_TIME})",
            r.peak, r.peak_time
        );
        assert!(r.finite, "{collision:?}: the energy did not stay finite");
        let error = r.peak_time / TAYLOR_GREEN_1600_PEAK_TIME - 1.0;
        assert!(error.abs() < 0.1, "{collision:?}: dissipation peak at {} ({error:+.3})", r.peak_time);
    }
}
