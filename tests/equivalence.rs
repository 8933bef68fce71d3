//! Invariants between variants: streaming schemes, backends, host and device layout.

mod common;

use lbm::host::domain::OpenScheme;
use lbm::host::validation::{cavity_config, channel_config, Channel};
use lbm::host::{LatticeKind, Precision};
use lbm::kernels::layout::population_index;
use lbm::kernels::stream::layout_probe_value;
use lbm::kernels::{Dims, Streaming};
use lbm::{BackendKind, SolverConfig};

fn forced_cavity(lattice: LatticeKind, precision: Precision, streaming: Streaming, side: u32) -> SolverConfig {
    let mut c = cavity_config(lattice, precision, streaming, side, 100.0, 0.08).unwrap();
    c.force = [2e-5, 1e-5, if lattice.dimension() == 3 { -1e-5 } else { 0.0 }];
    c
}

/// Esoteric Pull and two-lattice pull run the same arithmetic on the same
/// values, so their fields agree bit for bit, after odd and even step counts.
fn esoteric_pull_matches_two_lattice(on: common::On) {
    for lattice in [LatticeKind::D2Q9, LatticeKind::D3Q19, LatticeKind::D3Q27] {
        let side = if lattice.dimension() == 2 { 40 } else { 14 };
        let mut ep = on.build(forced_cavity(lattice, Precision::F64, Streaming::EsotericPull, side));
        let mut ab = on.build(forced_cavity(lattice, Precision::F64, Streaming::TwoLattice, side));
        for steps in [1, 1, 100, 231] {
            ep.step(steps).unwrap();
            ab.step(steps).unwrap();
            let (fe, fa) = (ep.fields().unwrap(), ab.fields().unwrap());
            assert_eq!(fe, fa, "{lattice:?}: fields differ after {} steps", ep.time());
        }
    }
    // Open boundaries: a channel with a velocity inlet and a pressure outlet,
    // of either scheme; the regularized one with TRT and a force, which its
    // cells collide with.
    let open = [
        (LatticeKind::D2Q9, Precision::F64, OpenScheme::Equilibrium),
        (LatticeKind::D3Q27, Precision::F64, OpenScheme::Equilibrium),
        (LatticeKind::D2Q9, Precision::F64, OpenScheme::Regularized),
        (LatticeKind::D3Q27, Precision::F32, OpenScheme::Regularized),
        (LatticeKind::D3Q19, Precision::F16, OpenScheme::Regularized),
    ];
    for (lattice, precision, scheme) in open {
        let spec = Channel { width: 12, length: 40, tau: 0.7, u_in: 0.05, scheme };
        let channel = |s| {
            let mut c = channel_config(lattice, precision, s, spec).unwrap();
            if scheme == OpenScheme::Regularized {
                c.collision = lbm::host::solver::CollisionModel::Trt { magic: 0.1 };
                c.force = [1e-5, -2e-5, 0.0];
            }
            c
        };
        let mut ep = on.build(channel(Streaming::EsotericPull));
        let mut ab = on.build(channel(Streaming::TwoLattice));
        for steps in [1, 100, 231] {
            ep.step(steps).unwrap();
            ab.step(steps).unwrap();
            let (fe, fa) = (ep.fields().unwrap(), ab.fields().unwrap());
            assert_eq!(fe, fa, "{lattice:?} {precision:?} {scheme:?} channel: fields differ");
        }
    }
}
on_executors!(esoteric_pull_matches_two_lattice);

/// The GPU runs the same IEEE operations in the same order as the CPU (no FMA
/// contraction: LLVM emits `mul.rn`/`add.rn`), so populations are bit-identical.
#[test]
fn gpu_matches_cpu_bit_for_bit() {
    let Some(gpu) = common::gpu("gpu_matches_cpu_bit_for_bit") else {
        return;
    };
    let cases = [
        (LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, 62, 1000),
        (LatticeKind::D3Q19, Precision::F32, Streaming::TwoLattice, 30, 301),
        (LatticeKind::D3Q27, Precision::F64, Streaming::EsotericPull, 30, 301),
        (LatticeKind::D3Q27, Precision::F32, Streaming::TwoLattice, 30, 300),
        (LatticeKind::D2Q9, Precision::F64, Streaming::EsotericPull, 100, 501),
        // 16-bit: stochastic rounding, and warps that take the near-wall path together.
        (LatticeKind::D3Q19, Precision::F16, Streaming::EsotericPull, 62, 1001),
        (LatticeKind::D3Q27, Precision::F16, Streaming::TwoLattice, 30, 300),
        // Widths that are not whole warps run through each layer, warps spanning rows.
        (LatticeKind::D3Q19, Precision::F16, Streaming::EsotericPull, 37, 301),
        (LatticeKind::D3Q27, Precision::F32, Streaming::EsotericPull, 45, 200),
    ];
    let spec = Channel { width: 30, length: 100, tau: 0.6, u_in: 0.05, scheme: OpenScheme::Equilibrium };
    let channel = channel_config(LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, spec);
    // Regularized open boundaries collide: TRT with a force, 16-bit two-lattice.
    let regularized = Channel { scheme: OpenScheme::Regularized, ..spec };
    let mut regularized =
        channel_config(LatticeKind::D3Q27, Precision::F16, Streaming::TwoLattice, regularized).unwrap();
    regularized.collision = lbm::host::solver::CollisionModel::Trt { magic: 0.1 };
    regularized.force = [1e-5, -2e-5, 0.0];
    // An inlet with a profile (a tangential component too) ramping up over
    // 300 steps: through its list, and through the naive variant's tables.
    let mut profiled = regularized.clone();
    let dims = profiled.domain.dims;
    let inlet = &mut profiled.domain.open[0];
    inlet.velocities = (inlet.cells.iter())
        .map(|&n| {
            let s = (dims.coords(n as u32).1 as f64 - 0.5) / 30.0;
            [0.2 * s * (1.0 - s), 0.002 * s, 0.0]
        })
        .collect();
    inlet.state.ramp_steps = 300;
    let tables = SolverConfig { groups: lbm::host::groups::BoundaryGroups::Naive, ..profiled.clone() };
    // A sponge band before the outlet, dense and on a sparse grid.
    let mut sponged = profiled.clone();
    lbm::host::sponge::add(&mut sponged.domain, lbm::host::domain::Face::XMax, 12, 0.4, [0.03, 0.001, 0.0]).unwrap();
    // On a sparse grid: a duct whose box is whole blocks of 4^3 cells.
    let mut duct = lbm::host::validation::duct_config(
        LatticeKind::D3Q19,
        Precision::F32,
        Streaming::EsotericPull,
        Dims::new(32, 16, 8),
        0,
    )
    .unwrap();
    duct.grid = lbm::host::solver::GridLayout::Sparse { block: lbm::host::sparse::BlockShape::Cube4 };
    lbm::host::sponge::add(&mut duct.domain, lbm::host::domain::Face::XMax, 10, 0.4, [0.02, 0.0, 0.0]).unwrap();
    let sparse_sponged = duct;
    let runs = cases
        .into_iter()
        .map(|(lattice, precision, streaming, side, steps)| {
            (forced_cavity(lattice, precision, streaming, side), format!("{}^3 cavity", side + 2), steps)
        })
        .chain([(channel.unwrap(), "channel with inlet and outlet".to_string(), 1001)])
        .chain([(regularized, "channel with regularized inlet and outlet".to_string(), 1001)])
        .chain([(profiled, "channel with a ramped inlet profile".to_string(), 1001)])
        .chain([(tables, "channel with a ramped inlet profile, naive groups".to_string(), 1001)])
        .chain([(sponged, "channel with a sponge".to_string(), 1001)])
        .chain([(sparse_sponged, "duct with a sponge, sparse grid".to_string(), 1001)]);
    for (c, name, steps) in runs {
        let (lattice, precision, streaming) = (c.lattice, c.precision, c.streaming);
        let mut cpu = lbm::build_solver(c.clone(), BackendKind::Cpu).unwrap();
        let mut dev = lbm::build_solver(c, gpu).unwrap();
        cpu.step(steps).unwrap();
        dev.step(steps).unwrap();
        let (a, b) = (cpu.populations().unwrap(), dev.populations().unwrap());
        let differ = a.iter().zip(&b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
        println!(
            "{lattice:?} {precision:?} {streaming:?} {name} x {steps} steps: {differ} of {} populations differ",
            a.len()
        );
        assert_eq!(differ, 0, "{lattice:?} {precision:?} {streaming:?}: GPU and CPU populations differ");
    }
}

/// A kernel writes each population's own coordinates through the shared
/// layout; the host reads them back where its layout says they are. Both
/// launch shapes: blocks per row (width 64) and through the layer (37).
#[test]
fn device_layout_matches_host() {
    let Some(lbm::BackendKind::Gpu(ordinal)) = common::gpu("device_layout_matches_host") else {
        return;
    };
    let device = lbm::host::gpu::GpuDevice::open(ordinal, lbm::ptx::PTX).unwrap();
    for dims in [Dims::new(37, 11, 5), Dims::new(64, 3, 4)] {
        check_layout(&device, dims);
    }
}

fn check_layout(device: &lbm::host::gpu::GpuDevice, dims: Dims) {
    let q = 19;
    let out = lbm::host::gpu::layout_probe(device, dims, q).unwrap();
    for z in 0..dims.nz {
        for y in 0..dims.ny {
            for x in 0..dims.nx {
                for i in 0..q {
                    let at = population_index(dims.nx * dims.ny, q, x + dims.nx * y, z, i);
                    assert_eq!(out[at], layout_probe_value(x, y, z, i), "cell ({x},{y},{z}) slot {i}");
                }
            }
        }
    }
}

/// Asking for a GPU that is not there is an error, not a panic.
#[test]
fn missing_gpu_is_a_clear_error() {
    let c = forced_cavity(LatticeKind::D2Q9, Precision::F32, Streaming::EsotericPull, 8);
    let err = lbm::build_solver(c, BackendKind::Gpu(4096)).err().expect("device 4096 cannot exist");
    let msg = err.to_string();
    assert!(msg.contains("no usable GPU") || msg.contains("4096"), "unhelpful message: {msg}");
}

/// Saving, restoring and continuing gives the populations of an unbroken run,
/// on every backend (GPU: the restore uploads the saved bytes).
fn resume_matches_an_unbroken_run(on: common::On) {
    for (lattice, precision, streaming) in [
        (LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull),
        (LatticeKind::D2Q9, Precision::F16, Streaming::TwoLattice),
    ] {
        let c = forced_cavity(lattice, precision, streaming, 12);
        let mut straight = on.build(c.clone());
        straight.step(41).unwrap();
        let mut first = on.build(c.clone());
        first.step(20).unwrap();
        let saved = first.save_state().unwrap();
        let mut second = on.build(c);
        second.restore_state(&saved).unwrap();
        second.step(21).unwrap();
        assert_eq!(second.time(), 41);
        assert_eq!(
            straight.save_state().unwrap(),
            second.save_state().unwrap(),
            "{lattice:?} {precision:?} {streaming:?}"
        );
    }
}
on_executors!(resume_matches_an_unbroken_run);

/// A 16-bit cell that blows up stays blown up: a NaN written into one
/// population spreads as NaN instead of being rounded into a zero (the
/// stochastic rounding's noise once carried the GPU's NaN into the sign bit
/// and stored -0, which healed the cell and hid the blow-up).
fn sixteen_bit_blow_up_stays_visible(on: common::On) {
    for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
        let c = forced_cavity(LatticeKind::D3Q19, Precision::F16, streaming, 14);
        let mut s = on.build(c);
        s.step(3).unwrap();
        let state = s.save_state().unwrap();
        // The rest population of the centre cell (16^3 with the walls): read by that cell.
        let at = Precision::F16.bytes() * population_index(16 * 16, 19, 8 + 16 * 8, 8, 0);
        let mut f = state.populations();
        f[at..at + 2].copy_from_slice(&0x7e00u16.to_ne_bytes()); // f16 NaN
        let state = lbm::host::solver::SavedState::whole(state.time, f, 16);
        s.restore_state(&state).unwrap();
        s.step(4).unwrap();
        let nan = s.populations().unwrap().iter().filter(|v| v.is_nan()).count();
        assert!(nan > 19, "{streaming:?}: {nan} NaN populations after the blow-up: it was rounded away");
    }
}
on_executors!(sixteen_bit_blow_up_stays_visible);

/// A 16-bit population too large for a half is stored as the largest half,
/// not as an infinity; the fields report its cell as blown up all the same
/// (a NaN density), so the divergence check stops the run there.
fn sixteen_bit_saturation_is_reported(on: common::On) {
    for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
        let c = forced_cavity(LatticeKind::D3Q19, Precision::F16, streaming, 14);
        let mut s = on.build(c);
        s.step(3).unwrap();
        assert_eq!(s.fields().unwrap().first_unhealthy(0.5), None, "{streaming:?}: healthy before");
        let state = s.save_state().unwrap();
        // The rest population of the centre cell (16^3 with the walls): read by that cell alone.
        let at = Precision::F16.bytes() * population_index(16 * 16, 19, 8 + 16 * 8, 8, 0);
        let mut f = state.populations();
        f[at..at + 2].copy_from_slice(&0x7bffu16.to_ne_bytes()); // 65504, the largest half
        let state = lbm::host::solver::SavedState::whole(state.time, f, 16);
        s.restore_state(&state).unwrap();
        assert_eq!(s.fields().unwrap().first_unhealthy(0.5), Some([8, 8, 8]), "{streaming:?}");
    }
}
on_executors!(sixteen_bit_saturation_is_reported);

/// Forces by momentum exchange agree between backends (same populations,
/// same host-side sum).
#[test]
fn gpu_forces_match_cpu() {
    let Some(gpu) = common::gpu("gpu_forces_match_cpu") else { return };
    let c = forced_cavity(LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, 16);
    let walls = c.domain.flags.map(|f| f != 0);
    let mut cpu = lbm::build_solver(c.clone(), BackendKind::Cpu).unwrap();
    let mut dev = lbm::build_solver(c, gpu).unwrap();
    cpu.step(50).unwrap();
    dev.step(50).unwrap();
    assert_eq!(cpu.forces(std::slice::from_ref(&walls)).unwrap(), dev.forces(&[walls]).unwrap());
}

/// Every lattice, each precision and scheme at least once, for the curved-wall tests.
const CURVED_CASES: [(LatticeKind, Precision, Streaming); 5] = [
    (LatticeKind::D2Q9, Precision::F64, Streaming::EsotericPull),
    (LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull),
    (LatticeKind::D3Q19, Precision::F16, Streaming::TwoLattice),
    (LatticeKind::D3Q27, Precision::F32, Streaming::TwoLattice),
    (LatticeKind::D3Q27, Precision::F16, Streaming::EsotericPull),
];

/// `forced_cavity` with a sphere in it whose walls are interpolated; with
/// `halfway`, every curved link's fraction is then set to 1/2.
fn cavity_with_sphere(lattice: LatticeKind, precision: Precision, streaming: Streaming, halfway: bool) -> SolverConfig {
    use lbm::host::curved::{mark, CurvedObject};
    use lbm::host::voxel::{voxelize, Cylinder, Shape, Sphere};
    let side = if lattice.dimension() == 2 { 40 } else { 16 };
    let mut c = forced_cavity(lattice, precision, streaming, side);
    let d = c.domain.dims;
    let centre = glam::DVec3::new(8.3, 9.1, if lattice.dimension() == 2 { 0.0 } else { 7.6 });
    let shape: Box<dyn Shape + Sync> = if lattice.dimension() == 2 {
        Box::new(Cylinder { base_centre: centre - glam::DVec3::Z, axis: glam::DVec3::Z, radius: 4.4, length: 2.0 })
    } else {
        Box::new(Sphere { centre, radius: 4.4 })
    };
    let solid = voxelize(shape.as_ref(), (d.nx, d.ny, d.nz), 1.0, glam::DVec3::ZERO).unwrap().solid;
    c.domain.set_where(&solid, lbm::kernels::CellKind::Wall);
    let object = CurvedObject { name: "sphere", cells: &solid, shape: shape.as_ref() };
    mark(&mut c.domain, lattice.velocities(), &[object], 1.0).unwrap();
    assert!(c.domain.curved.q.iter().any(|&q| q >= 0.0 && q != 0.5), "fractions other than 1/2");
    if halfway {
        c.domain.curved.q.iter_mut().filter(|q| **q >= 0.0).for_each(|q| *q = 0.5);
    }
    c
}

/// The curved-wall group with every fraction at 1/2 is halfway bounce-back
/// bit for bit: its cells stream, collide and store as the bulk's near-wall
/// cells do, the interpolation returns the bounced value exactly, and the
/// forces sum the same links the same way. Every lattice, precision,
/// scheme and grid.
#[test]
fn curved_walls_at_one_half_are_halfway_bounce_back() {
    for (lattice, precision, streaming) in CURVED_CASES {
        for grid in [
            lbm::host::solver::GridLayout::Dense,
            lbm::host::solver::GridLayout::Sparse { block: lbm::host::sparse::BlockShape::Cube4 },
        ] {
            let plain = {
                let mut c = cavity_with_sphere(lattice, precision, streaming, true);
                c.domain.curved = Default::default();
                c.domain.flags = c.domain.flags.map(|f| f & !lbm::kernels::flags::CURVED);
                c
            };
            let curved = cavity_with_sphere(lattice, precision, streaming, true);
            let solid = curved.domain.flags.map(|f| f & lbm::kernels::flags::WALL_MASK == lbm::kernels::flags::WALL);
            let (mut a, mut b) = (plain, curved);
            (a.grid, b.grid) = (grid, grid);
            let (mut a, mut b) =
                (lbm::build_solver(a, BackendKind::Cpu).unwrap(), lbm::build_solver(b, BackendKind::Cpu).unwrap());
            for steps in [1, 50, 51] {
                a.step(steps).unwrap();
                b.step(steps).unwrap();
                let (pa, pb) = (a.populations().unwrap(), b.populations().unwrap());
                let differ = pa.iter().zip(&pb).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
                assert_eq!(differ, 0, "{lattice:?} {precision:?} {streaming:?} {grid:?}: populations differ");
                assert_eq!(
                    a.fields().unwrap(),
                    b.fields().unwrap(),
                    "{lattice:?} {precision:?} {streaming:?} {grid:?}"
                );
                let (fa, fb) =
                    (a.forces(std::slice::from_ref(&solid)).unwrap(), b.forces(std::slice::from_ref(&solid)).unwrap());
                assert_eq!(fa, fb, "{lattice:?} {precision:?} {streaming:?} {grid:?}: forces differ");
            }
        }
    }
}

/// The curved-wall kernels run the CPU's arithmetic: populations, fields and
/// forces agree bit for bit, on the dense and the sparse grid.
#[test]
fn gpu_matches_cpu_with_curved_walls() {
    let Some(gpu) = common::gpu("gpu_matches_cpu_with_curved_walls") else { return };
    for (lattice, precision, streaming) in CURVED_CASES {
        for grid in [
            lbm::host::solver::GridLayout::Dense,
            lbm::host::solver::GridLayout::Sparse { block: lbm::host::sparse::BlockShape::Cube8 },
        ] {
            let mut c = cavity_with_sphere(lattice, precision, streaming, false);
            c.grid = grid;
            c.collision = lbm::host::solver::CollisionModel::Trt { magic: 0.1 };
            let solid = c.domain.flags.map(|f| f & lbm::kernels::flags::WALL_MASK == lbm::kernels::flags::WALL);
            let mut cpu = lbm::build_solver(c.clone(), BackendKind::Cpu).unwrap();
            let mut dev = lbm::build_solver(c, gpu).unwrap();
            cpu.step(301).unwrap();
            dev.step(301).unwrap();
            let (a, b) = (cpu.populations().unwrap(), dev.populations().unwrap());
            let differ = a.iter().zip(&b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
            println!("{lattice:?} {precision:?} {streaming:?} {grid:?}: {differ} of {} populations differ", a.len());
            assert_eq!(differ, 0, "{lattice:?} {precision:?} {streaming:?} {grid:?}: GPU and CPU populations differ");
            assert_eq!(cpu.fields().unwrap(), dev.fields().unwrap());
            let forces = cpu.forces(std::slice::from_ref(&solid)).unwrap();
            assert_eq!(forces, dev.forces(std::slice::from_ref(&solid)).unwrap());
            println!("  force on the sphere and walls {:?}", forces[0]);
        }
    }
}

/// The operators not stamped into every kernel, with their parameters.
fn bulk_only_operators() -> [lbm::host::solver::CollisionModel; 5] {
    use lbm::host::solver::CollisionModel;
    [
        CollisionModel::Mrt,
        CollisionModel::Regularized { smagorinsky: 0.0 },
        CollisionModel::Regularized { smagorinsky: 0.15 },
        CollisionModel::Smagorinsky { constant: 0.12 },
        CollisionModel::Cumulant,
    ]
}

/// Every lattice and precision, each with one streaming scheme (the two
/// alternate, so that each operator meets both).
const OPERATOR_CASES: [(LatticeKind, Precision); 9] = [
    (LatticeKind::D2Q9, Precision::F64),
    (LatticeKind::D2Q9, Precision::F32),
    (LatticeKind::D2Q9, Precision::F16),
    (LatticeKind::D3Q19, Precision::F32),
    (LatticeKind::D3Q19, Precision::F16),
    (LatticeKind::D3Q19, Precision::F64),
    (LatticeKind::D3Q27, Precision::F16),
    (LatticeKind::D3Q27, Precision::F64),
    (LatticeKind::D3Q27, Precision::F32),
];

/// Esoteric Pull and two-lattice streaming agree bit for bit with every
/// operator too (a forced cavity; CPU).
#[test]
fn operators_agree_across_streaming_schemes() {
    for collision in bulk_only_operators() {
        for lattice in LatticeKind::ALL.into_iter().filter(|l| collision.kind().built_for(l.q())) {
            let side = if lattice.dimension() == 2 { 30 } else { 12 };
            let config = |s| SolverConfig { collision, ..forced_cavity(lattice, Precision::F64, s, side) };
            let mut ep = lbm::build_solver(config(Streaming::EsotericPull), BackendKind::Cpu).unwrap();
            let mut ab = lbm::build_solver(config(Streaming::TwoLattice), BackendKind::Cpu).unwrap();
            ep.step(101).unwrap();
            ab.step(101).unwrap();
            assert_eq!(ep.fields().unwrap(), ab.fields().unwrap(), "{collision:?} {lattice:?}");
        }
    }
}

/// The GPU runs every operator's arithmetic as the CPU does, bit for bit:
/// forced cavities on every lattice and precision, ducts on every sparse
/// block shape, a channel whose inlet and outlet cells (lists) collide with BGK,
/// and spheres with curved walls, whose cells collide with the operator
/// too (the kernel that picks it at run time, dense and sparse).
#[test]
fn operators_match_cpu_bit_for_bit() {
    let Some(gpu) = common::gpu("operators_match_cpu_bit_for_bit") else { return };
    use lbm::host::solver::GridLayout;
    use lbm::host::sparse::BlockShape;
    for (k, collision) in bulk_only_operators().into_iter().enumerate() {
        let mut runs: Vec<(SolverConfig, String)> = Vec::new();
        for (n, (lattice, precision)) in OPERATOR_CASES.into_iter().enumerate() {
            let streaming = [Streaming::EsotericPull, Streaming::TwoLattice][(n + k) % 2];
            let side = if lattice.dimension() == 2 { 62 } else { 30 };
            runs.push((
                forced_cavity(lattice, precision, streaming, side),
                format!("{lattice:?} {precision:?} {streaming:?} cavity"),
            ));
        }
        for (block, lattice, precision, streaming) in [
            (BlockShape::Cube4, LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull),
            (BlockShape::Cube8, LatticeKind::D3Q27, Precision::F16, Streaming::TwoLattice),
            (BlockShape::Row32, LatticeKind::D3Q19, Precision::F16, Streaming::EsotericPull),
            (BlockShape::Row32, LatticeKind::D3Q27, Precision::F32, Streaming::TwoLattice),
        ] {
            let mut duct =
                lbm::host::validation::duct_config(lattice, precision, streaming, Dims::new(32, 16, 8), 0).unwrap();
            duct.grid = GridLayout::Sparse { block };
            duct.force = [1e-5, 0.0, 0.0];
            runs.push((duct, format!("{lattice:?} {precision:?} {streaming:?} duct on {} blocks", block.describe(8))));
        }
        let spec = Channel { width: 30, length: 100, tau: 0.6, u_in: 0.05, scheme: OpenScheme::Regularized };
        runs.push((
            channel_config(LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, spec).unwrap(),
            "D3Q19 channel with regularized inlet and outlet".into(),
        ));
        runs.push((
            cavity_with_sphere(LatticeKind::D3Q27, Precision::F32, Streaming::TwoLattice, false),
            "D3Q27 cavity with a curved sphere".into(),
        ));
        let mut sphere = cavity_with_sphere(LatticeKind::D3Q19, Precision::F16, Streaming::EsotericPull, false);
        sphere.grid = GridLayout::Sparse { block: BlockShape::Cube4 };
        runs.push((sphere, "D3Q19 F16 cavity with a curved sphere on 4^3 blocks".into()));
        // The cumulant operator runs on D2Q9 and D3Q27 only.
        runs.retain(|(c, _)| collision.kind().built_for(c.lattice.q()));
        for (mut c, name) in runs {
            c.collision = collision;
            let mut cpu = lbm::build_solver(c.clone(), BackendKind::Cpu).unwrap();
            let mut dev = lbm::build_solver(c, gpu).unwrap();
            cpu.step(301).unwrap();
            dev.step(301).unwrap();
            let (a, b) = (cpu.populations().unwrap(), dev.populations().unwrap());
            let differ = a.iter().zip(&b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
            println!("{collision:?} {name}: {differ} of {} populations differ", a.len());
            assert_eq!(differ, 0, "{collision:?} {name}: GPU and CPU populations differ");
            assert!(a.iter().all(|v| v.is_finite()), "{collision:?} {name}: not finite");
        }
    }
}
