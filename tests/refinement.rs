//! Refinement levels: curved walls on a level against a drag law (CPU); on
//! the GPU, the same populations as the CPU bit for bit (every collision
//! operator), and mass conserved to round-off over a long run.

mod common;

use lbm::host::domain::{Domain, FaceBoundary};
use lbm::host::gpu::{DeviceStorage, GpuDevice};
use lbm::host::groups::BoundaryGroups;
use lbm::host::levels::{Fusion, Part, RefinedBox, RefinedCpu, RefinedGpu, Refinement};
use lbm::host::solver::{CollisionModel, GridLayout, Initial, LatticeKind, Precision};
use lbm::kernels::{Dims, F16s, Lattice, Streaming, D2Q9, D3Q19, D3Q27};
use lbm::SolverConfig;

/// A 16^3 cavity, lid along x, with a box refined to level 1 and one inside
/// it to level 2: the lid's flow crosses both interfaces.
fn cavity(lattice: LatticeKind, precision: Precision, streaming: Streaming) -> (SolverConfig, Refinement) {
    let mut faces = [FaceBoundary::Wall; 6];
    faces[3] = FaceBoundary::MovingWall([0.1, 0.0, 0.0]);
    let config = SolverConfig {
        lattice,
        precision,
        streaming,
        grid: GridLayout::Dense,
        groups: BoundaryGroups::Lists,
        tau: 0.56,
        collision: CollisionModel::Bgk,
        force: [0.0; 3],
        domain: Domain::with_faces(Dims::new(16, 16, 16), faces).unwrap(),
        initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
    };
    let refinement = Refinement {
        levels: 3,
        boxes: vec![RefinedBox { lo: [5; 3], hi: [11; 3], level: 1 }, RefinedBox { lo: [7; 3], hi: [9; 3], level: 2 }],
        ..Default::default()
    };
    (config, refinement)
}

fn device(test: &str) -> Option<GpuDevice> {
    common::gpu(test)?;
    Some(GpuDevice::open(0, lbm::ptx::PTX).unwrap())
}

/// Runs the cavity `steps` coarse steps on both backends and compares every
/// population of every cell the levels own, bit for bit.
fn same_on_both<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
    device: &GpuDevice,
    lattice: LatticeKind,
    precision: Precision,
    streaming: Streaming,
    fusion: Fusion,
    edge: u32,
    steps: u64,
) {
    same_with::<L, Q, S>(device, CollisionModel::Bgk, (lattice, precision, streaming), fusion, edge, steps)
}

/// [`same_on_both`] with the collision operator `collision`.
fn same_with<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
    device: &GpuDevice,
    collision: CollisionModel,
    (lattice, precision, streaming): (LatticeKind, Precision, Streaming),
    fusion: Fusion,
    edge: u32,
    steps: u64,
) {
    let (config, refinement) = cavity(lattice, precision, streaming);
    let config = SolverConfig { collision, ..config };
    let refinement = Refinement { fusion, ..refinement };
    let mut cpu = RefinedCpu::<L, Q, S>::new(&config, &refinement, edge).unwrap();
    let mut gpu =
        RefinedGpu::new(device.clone(), RefinedCpu::<L, Q, S>::new(&config, &refinement, edge).unwrap()).unwrap();
    cpu.step(steps);
    gpu.step(steps).unwrap();
    let mut a = Vec::new();
    cpu.for_each_own_cell(|l, p, f| a.push((l, p, f)));
    let mut b = Vec::new();
    gpu.for_each_own_cell(|l, p, f| b.push((l, p, f))).unwrap();
    assert_eq!(a.len(), b.len());
    let what = format!("{} {} {collision:?} {streaming:?} {fusion:?} blocks {edge}", L::NAME, S::NAME);
    assert!(a.iter().any(|c| c.0 == 2), "{what}: level 2 owns cells");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((x.0, x.1), (y.0, y.1));
        for i in 0..Q {
            assert_eq!(x.2[i].to_bits(), y.2[i].to_bits(), "{what}: level {} cell {:?} population {i}", x.0, x.1);
        }
    }
}

#[test]
fn refined_gpu_steps_give_the_cpus_populations_bit_for_bit() {
    let Some(d) = device("refined_gpu_steps_give_the_cpus_populations_bit_for_bit") else { return };
    use LatticeKind::{D3Q19 as Q19, D3Q27 as Q27};
    use Precision::{F16, F32, F64};
    let fused = Fusion::Fused;
    for streaming in Streaming::ALL {
        same_on_both::<D3Q19, 19, f64>(&d, Q19, F64, streaming, fused, 4, 37);
        same_on_both::<D3Q19, 19, f32>(&d, Q19, F32, streaming, fused, 4, 37);
        same_on_both::<D3Q27, 27, f32>(&d, Q27, F32, streaming, fused, 8, 21);
        same_on_both::<D3Q19, 19, F16s>(&d, Q19, F16, streaming, fused, 4, 21);
    }
}

/// The operators not stamped into every kernel (MRT, regularized,
/// Smagorinsky, cumulant) collide on the levels through the kernels that
/// choose them at run time: the coalescence and the split step's collision.
/// Their populations are the CPU's bit for bit, in every precision and both
/// schemes.
#[test]
fn refined_gpu_steps_with_every_operator_give_the_cpus_populations_bit_for_bit() {
    let Some(d) = device("refined_gpu_steps_with_every_operator_give_the_cpus_populations_bit_for_bit") else { return };
    use LatticeKind::{D3Q19 as Q19, D3Q27 as Q27};
    use Precision::{F16, F32, F64};
    let (fused, split, ab) = (Fusion::Fused, Fusion::Split, Streaming::TwoLattice);
    let les = CollisionModel::Smagorinsky { constant: 0.15 };
    let regularized = CollisionModel::Regularized { smagorinsky: 0.1 };
    for streaming in Streaming::ALL {
        same_with::<D3Q19, 19, f32>(&d, CollisionModel::Mrt, (Q19, F32, streaming), fused, 4, 21);
        same_with::<D3Q19, 19, F16s>(&d, les, (Q19, F16, streaming), fused, 8, 21);
        same_with::<D3Q19, 19, f64>(&d, regularized, (Q19, F64, streaming), fused, 4, 21);
        same_with::<D3Q27, 27, f32>(&d, CollisionModel::Cumulant, (Q27, F32, streaming), fused, 8, 21);
        same_with::<D3Q27, 27, F16s>(&d, CollisionModel::Mrt, (Q27, F16, streaming), fused, 4, 21);
    }
    same_with::<D3Q19, 19, f32>(&d, les, (Q19, F32, ab), split, 4, 21);
    same_with::<D3Q27, 27, f64>(&d, CollisionModel::Cumulant, (Q27, F64, ab), split, 8, 21);
}

/// The split step (the unfused baseline) on the GPU gives the CPU's split
/// populations, which the CPU tests find equal to the fused step's; its
/// profile times every part of the step.
#[test]
fn the_split_step_on_the_gpu_gives_the_cpus_populations_bit_for_bit() {
    let Some(d) = device("the_split_step_on_the_gpu_gives_the_cpus_populations_bit_for_bit") else { return };
    use LatticeKind::{D3Q19 as Q19, D3Q27 as Q27};
    use Precision::{F32, F64};
    let (ab, split) = (Streaming::TwoLattice, Fusion::Split);
    same_on_both::<D3Q19, 19, f64>(&d, Q19, F64, ab, split, 4, 37);
    same_on_both::<D3Q19, 19, f32>(&d, Q19, F32, ab, split, 8, 37);
    same_on_both::<D3Q27, 27, f32>(&d, Q27, F32, ab, split, 4, 21);
    for fusion in Fusion::ALL {
        let (config, refinement) = cavity(Q19, F32, ab);
        let cpu = RefinedCpu::<D3Q19, 19, f32>::new(&config, &Refinement { fusion, ..refinement }, 4).unwrap();
        let mut gpu = RefinedGpu::new(d.clone(), cpu).unwrap();
        let profile = gpu.profile(3).unwrap();
        eprintln!("{fusion:?}: {profile:?}");
        let parts: Vec<Part> = profile.iter().map(|p| p.0).collect();
        let expected = match fusion {
            Fusion::Fused => vec![Part::StreamCollide, Part::Transit, Part::Explode, Part::Coalesce],
            Fusion::Split => vec![Part::Stream, Part::Collide, Part::Transit, Part::Explode, Part::Coalesce],
        };
        assert_eq!(parts, expected, "{fusion:?}");
        assert!(profile.iter().all(|p| p.1 > 0.0), "{fusion:?}: {profile:?}");
        assert_eq!(gpu.time(), 3);
    }
}

#[test]
fn a_refined_cavity_conserves_mass_over_10000_coarse_steps() {
    let Some(d) = device("a_refined_cavity_conserves_mass_over_10000_coarse_steps") else { return };
    for streaming in Streaming::ALL {
        let (config, refinement) = cavity(LatticeKind::D3Q19, Precision::F64, streaming);
        let cpu = RefinedCpu::<D3Q19, 19, f64>::new(&config, &refinement, 4).unwrap();
        let mut gpu = RefinedGpu::new(d.clone(), cpu).unwrap();
        let m0 = gpu.mass().unwrap();
        gpu.step(10_000).unwrap();
        let drift = (gpu.mass().unwrap() - m0).abs() / m0;
        eprintln!("{streaming:?}: relative mass drift over 10,000 coarse steps {drift:e}");
        // A few ulps per step at most, as in the CPU test.
        assert!(drift < 10_000.0 * 4.0 * f64::EPSILON, "{streaming:?}: relative mass drift {drift:e}");
    }
}

/// The velocity of each cell the levels own, by level and position.
fn velocities<L: Lattice<Q>, const Q: usize, S: DeviceStorage>(
    run: &RefinedGpu<L, Q, S>,
) -> Vec<(u32, [u32; 3], [f64; 3])> {
    let mut out = Vec::new();
    run.for_each_own_cell(|l, p, f| {
        let rho = 1.0 + f.iter().sum::<f64>();
        let u = std::array::from_fn(|a| (0..Q).map(|i| f[i] * L::C[i][a] as f64).sum::<f64>() / rho);
        out.push((l, p, u));
    })
    .unwrap();
    out
}

/// A lid-driven cube at Re 1000 (D3Q19, f32, BGK) lined with its finest
/// level along every wall (level 2 three level-0 cells thick, wall layer
/// included; level 1 three more; level 0 in the core) against the same cube
/// at level 2 everywhere (120^3 flow cells), after 40 passages of the lid:
/// every cell along the two centrelines agrees with the fine cube's average
/// over that cell within 1% of the lid speed (its velocity across the line:
/// u_x along x = z = centre, u_y along y = z = centre), with at most 40% of
/// the fine cube's cells. (After 20 passages the two still differ by 1.2%:
/// they converge to the same steady flow.)
#[test]
fn a_cavity_at_re_1000_lined_with_fine_levels_matches_the_fine_cavity() {
    let Some(d) = device("a_cavity_at_re_1000_lined_with_fine_levels_matches_the_fine_cavity") else { return };
    let (n, lid, re, passages) = (32u32, 0.1, 1000.0, 40.0);
    let fine = 4 * n; // level 2's box
                      // Between the wall layers (one level-0 cell each): 4 (n - 2) cells at level 2.
    let length = 4.0 * (n - 2) as f64;
    let nu2 = lid * length / re;
    // tau_2 - 1/2 = 4 (tau_0 - 1/2), tau_2 - 1/2 = 3 nu_2.
    let tau = 0.5 + 3.0 * nu2 / 4.0;
    let mut faces = [FaceBoundary::Wall; 6];
    faces[3] = FaceBoundary::MovingWall([lid, 0.0, 0.0]);
    let config = SolverConfig {
        lattice: LatticeKind::D3Q19,
        precision: Precision::F32,
        streaming: Streaming::EsotericPull,
        grid: GridLayout::Dense,
        groups: BoundaryGroups::Lists,
        tau,
        collision: CollisionModel::Bgk,
        force: [0.0; 3],
        domain: Domain::with_faces(Dims::new(n, n, n), faces).unwrap(),
        initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
    };
    let slab = |a: usize, lo: u32, hi: u32, level: u32| {
        let (mut l, mut h) = ([0; 3], [n; 3]);
        (l[a], h[a]) = (lo, hi);
        RefinedBox { lo: l, hi: h, level }
    };
    let shell = |t: u32, level: u32| (0..3).flat_map(move |a| [slab(a, 0, t, level), slab(a, n - t, n, level)]);
    let everywhere =
        Refinement { levels: 3, boxes: vec![RefinedBox { lo: [0; 3], hi: [n; 3], level: 2 }], ..Default::default() };
    // Passages of the lid along the flow's length at level 2, in level-0 steps.
    let steps = (passages * length / lid / 4.0) as u64;
    let run = |r: &Refinement| {
        let mut gpu = RefinedGpu::new(d.clone(), RefinedCpu::<D3Q19, 19, f32>::new(&config, r, 4).unwrap()).unwrap();
        gpu.step(steps).unwrap();
        velocities(&gpu)
    };
    let reference = run(&everywhere);
    assert!(reference.iter().all(|c| c.0 == 2));
    let at = |p: [u32; 3]| (p[0] + fine * (p[1] + fine * p[2])) as usize;
    let mut u_fine = vec![[f64::NAN; 3]; (fine * fine * fine) as usize];
    for &(_, p, u) in &reference {
        u_fine[at(p)] = u;
    }
    let lined = Refinement { levels: 3, boxes: shell(6, 1).chain(shell(3, 2)).collect(), ..Default::default() };
    let refined = run(&lined);
    // Cells touching the centre lines x = z = fine / 2 (velocity along x)
    // and y = z = fine / 2 (velocity along y), compared with the fine
    // cube's mean over the cell.
    let c = fine / 2;
    let (mut worst, mut compared) = ([0.0f64; 2], [0usize; 2]);
    for &(l, p, u) in &refined {
        let s = 4 >> l;
        let range = |a: usize| p[a] * s..p[a] * s + s;
        let touches = |a: usize| range(a).contains(&(c - 1)) || range(a).contains(&c);
        for (k, (line, along)) in [([0, 2], 0), ([1, 2], 1)].into_iter().enumerate() {
            if !line.iter().all(|&a| touches(a)) {
                continue;
            }
            let mut mean = 0.0;
            for z in range(2) {
                for y in range(1) {
                    for x in range(0) {
                        mean += u_fine[at([x, y, z])][along];
                    }
                }
            }
            mean /= (s * s * s) as f64;
            assert!(mean.is_finite(), "level {l} cell {p:?}: the fine cube has no flow there");
            worst[k] = worst[k].max((u[along] - mean).abs() / lid);
            compared[k] += 1;
        }
    }
    let share = refined.len() as f64 / reference.len() as f64;
    eprintln!(
        "Re 1000 cavity, tau_0 {tau:.4}, {steps} coarse steps: lined with fine levels {} cells ({:.1}% of {}); \
         largest difference along x = z = centre (u_x, {} cells) {:.3}% of the lid speed, along y = z = centre \
         (u_y, {} cells) {:.3}%",
        refined.len(),
        100.0 * share,
        reference.len(),
        compared[0],
        100.0 * worst[0],
        compared[1],
        100.0 * worst[1]
    );
    assert!(compared.iter().all(|&k| k > 20), "{compared:?} cells compared");
    assert!(share <= 0.4, "the lined cavity uses {:.1}% of the fine cube's cells", 100.0 * share);
    assert!(worst.iter().all(|&w| w < 0.01), "centreline differences {worst:?} of the lid speed");
}

/// A square array of cylinders in slow flow, refined: one cylinder (solid
/// fraction 0.05) in a periodic square of `side` level-0 cells, driven by a
/// body force along x (D2Q9, TRT with magic 3/16, tau 0.8, Reynolds number
/// 0.01), with level 1 in a band three level-0 cells around the cylinder,
/// whose walls are interpolated when `interpolated`. Also returns the mean
/// velocity the drag law of Sangani & Acrivos (1982) gives.
fn refined_cylinder_array(
    side: u32,
    interpolated: bool,
    precision: Precision,
    streaming: Streaming,
    fusion: Fusion,
) -> (SolverConfig, Refinement, f64) {
    use glam::DVec3;
    use lbm::host::levels::{band, LevelGeometry, LevelObject};
    use lbm::host::validation::square_array_drag_factor;
    let (solid_fraction, tau) = (0.05, 0.8);
    let (l, nu) = (side as f64, (tau - 0.5) / 3.0);
    let radius = l * (solid_fraction / std::f64::consts::PI).sqrt();
    let factor = square_array_drag_factor(solid_fraction);
    let g = 0.01 * nu / radius * 4.0 * std::f64::consts::PI * nu * factor / (l * l);
    let centre = DVec3::new(0.5 * (l - 1.0), 0.5 * (l - 1.0), 0.0);
    let cylinder =
        || lbm::host::voxel::Cylinder { base_centre: centre - DVec3::Z, axis: DVec3::Z, radius, length: 2.0 };
    let cells = lbm::host::voxel::voxelize(&cylinder(), (side, side, 1), 1.0, DVec3::ZERO).unwrap().solid;
    let mut domain = Domain::new(Dims::new(side, side, 1)).unwrap();
    let faces = domain.flags.clone();
    domain.set_where(&cells, lbm::kernels::CellKind::Wall);
    let edge = 4;
    let object = LevelObject {
        name: "cylinder".into(),
        shape: Some(Box::new(cylinder())),
        cells: cells.clone(),
        kind: lbm::kernels::flags::WALL,
        interpolated,
    };
    let refinement = Refinement {
        levels: 2,
        boxes: band(&cells, 3.0, 1, edge),
        fusion,
        geometry: Some(LevelGeometry::new(faces, vec![object], 2, 1.0).unwrap()),
    };
    let config = SolverConfig {
        lattice: LatticeKind::D2Q9,
        precision,
        streaming,
        grid: GridLayout::Sparse { block: lbm::host::sparse::BlockShape::cube(edge).unwrap() },
        groups: BoundaryGroups::Lists,
        tau,
        collision: CollisionModel::Trt { magic: 3.0 / 16.0 },
        force: [g, 0.0, 0.0],
        domain,
        initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
    };
    (config, refinement, g * l * l / (4.0 * std::f64::consts::PI * nu * factor))
}

/// The mean velocity along x over the periodic square of `side` level-0
/// cells: each owned cell's `u = (j - F/2) / rho` weighted by its area.
fn mean_velocity<L: Lattice<Q>, const Q: usize>(
    visit: impl FnOnce(&mut dyn FnMut(u32, [u32; 3], [f64; Q])),
    force: f64,
    side: u32,
) -> f64 {
    let mut sum = 0.0;
    visit(&mut |l, _, f| {
        let rho = 1.0 + f.iter().sum::<f64>();
        let j: f64 = (0..Q).map(|i| f[i] * L::C[i][0] as f64).sum();
        let scale = (1u64 << l) as f64;
        sum += (j - 0.5 * force / scale) / rho / (scale * scale);
    });
    sum / (side as f64 * side as f64)
}

/// Curved walls on a refinement level: the refined cylinder array, 32
/// level-0 cells across with the cylinder on level 1, against the drag law.
/// With interpolated walls it is within 0.5% (the bound of the uniform
/// array at 64 cells, the spacing of level 1); its error is under half that
/// of halfway bounce-back on the same levels, and under that of the uniform
/// array at level 0's spacing, whose wall is twice as coarse (not a quarter
/// of it: level 0's own error away from the cylinder stays).
#[test]
fn curved_walls_on_a_refinement_level_follow_the_drag_law() {
    use lbm::host::validation::{cylinder_array, CylinderArray};
    let side = 32;
    let run = |interpolated: bool| {
        let (config, refinement, expected) =
            refined_cylinder_array(side, interpolated, Precision::F64, Streaming::EsotericPull, Fusion::Fused);
        let mut run = RefinedCpu::<D2Q9, 9, f64>::new(&config, &refinement, 4).unwrap();
        let nu = (config.tau - 0.5) / 3.0;
        let check = (side as f64 * side as f64 / nu / 20.0).ceil() as u64;
        let mut last = f64::NAN;
        for _ in 0..100 {
            run.step(check);
            let u = mean_velocity::<D2Q9, 9>(|v| run.for_each_own_cell(v), config.force[0], side);
            if (u - last).abs() < 1e-5 * u.abs() {
                let error = u / expected - 1.0;
                eprintln!(
                    "refined array, interpolated {interpolated}: {} coarse steps, error {error:+.3e}",
                    run.time()
                );
                return error;
            }
            last = u;
        }
        panic!("refined array, interpolated {interpolated}: no steady state after {} coarse steps", run.time());
    };
    let (curved, halfway) = (run(true), run(false));
    let spec = CylinderArray { side, solid_fraction: 0.05, interpolated: true, streaming: Streaming::EsotericPull };
    let uniform = cylinder_array(common::factory(), lbm::host::solver::BackendKind::Cpu, spec).unwrap();
    eprintln!("uniform array at {side} cells, interpolated: error {:+.3e}", uniform.error);
    assert!(curved.abs() < 0.005, "interpolated walls on level 1: {curved:+.2e} off the drag law");
    assert!(curved.abs() < 0.5 * halfway.abs(), "{curved:+.2e} against halfway {halfway:+.2e}");
    assert!(curved.abs() < uniform.error.abs(), "{curved:+.2e} against the uniform 32 cells' {:+.2e}", uniform.error);
}

/// With curved walls on a level, the GPU gives the CPU's populations bit
/// for bit, fused and split, and the split step the fused one's.
#[test]
fn refined_curved_walls_on_the_gpu_give_the_cpus_populations_bit_for_bit() {
    let Some(d) = device("refined_curved_walls_on_the_gpu_give_the_cpus_populations_bit_for_bit") else { return };
    let cases = [
        (Precision::F64, Streaming::EsotericPull, Fusion::Fused),
        (Precision::F64, Streaming::TwoLattice, Fusion::Split),
        (Precision::F32, Streaming::TwoLattice, Fusion::Fused),
    ];
    for (precision, streaming, fusion) in cases {
        let what = format!("{precision:?} {streaming:?} {fusion:?}");
        let (config, refinement, _) = refined_cylinder_array(32, true, precision, streaming, fusion);
        let collect = |cpu: bool| -> Vec<(u32, [u32; 3], [f64; 9])> {
            let mut out = Vec::new();
            macro_rules! go {
                ($s:ty) => {{
                    let run = RefinedCpu::<D2Q9, 9, $s>::new(&config, &refinement, 4).unwrap();
                    if cpu {
                        let mut run = run;
                        run.step(40);
                        run.for_each_own_cell(|l, p, f| out.push((l, p, f)));
                    } else {
                        let mut gpu = RefinedGpu::new(d.clone(), run).unwrap();
                        gpu.step(40).unwrap();
                        gpu.for_each_own_cell(|l, p, f| out.push((l, p, f))).unwrap();
                    }
                }};
            }
            match precision {
                Precision::F64 => go!(f64),
                _ => go!(f32),
            }
            out
        };
        let (a, b) = (collect(true), collect(false));
        assert_eq!(a.len(), b.len(), "{what}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!((x.0, x.1), (y.0, y.1), "{what}");
            for i in 0..9 {
                assert_eq!(x.2[i].to_bits(), y.2[i].to_bits(), "{what}: level {} cell {:?} population {i}", x.0, x.1);
            }
        }
    }
}

/// Curved walls on a level take the same populations from the fused and
/// the split step, bit for bit (CPU).
#[test]
fn refined_curved_walls_fused_and_split_agree_bit_for_bit() {
    let run = |fusion| {
        let (config, refinement, _) = refined_cylinder_array(32, true, Precision::F64, Streaming::TwoLattice, fusion);
        let mut run = RefinedCpu::<D2Q9, 9, f64>::new(&config, &refinement, 4).unwrap();
        assert!(run.levels().levels[1].domain.curved.cells.len() > 20, "level 1 lists the cylinder's curved cells");
        assert!(run.levels().levels[0].domain.curved.cells.is_empty(), "level 1 covers the cylinder");
        run.step(30);
        let mut out = Vec::new();
        run.for_each_own_cell(|l, p, f| out.push((l, p, f.map(f64::to_bits))));
        out
    };
    assert_eq!(run(Fusion::Fused), run(Fusion::Split));
}

/// Levels split along z over GPUs give one GPU's populations bit for bit:
/// over partitions sharing GPU 0 on any machine, and over 2 and 4 GPUs
/// where there are that many (the cavity's jumps cross every cut; 16-bit
/// storage rounds stochastically by each cell's place in the box), with
/// BGK and with operators chosen at run time.
#[test]
fn levels_split_over_gpus_give_one_gpus_populations_bit_for_bit() {
    use lbm::host::levels::build_refined;
    use lbm::BackendKind::Gpu;
    let test = "levels_split_over_gpus_give_one_gpus_populations_bit_for_bit";
    let Some(_) = common::gpu(test) else { return };
    let count = lbm::host::gpu::device_count().unwrap_or(0);
    let mut layouts = vec![vec![0, 0], vec![0, 0, 0, 0]];
    if count >= 2 {
        layouts.push(vec![0, 1]);
    }
    if count >= 4 {
        layouts.push(vec![0, 1, 2, 3]);
    }
    let (bgk, les) = (CollisionModel::Bgk, CollisionModel::Smagorinsky { constant: 0.15 });
    let rows = [
        (LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, bgk),
        (LatticeKind::D3Q19, Precision::F64, Streaming::TwoLattice, bgk),
        (LatticeKind::D3Q19, Precision::F16, Streaming::EsotericPull, bgk),
        (LatticeKind::D3Q27, Precision::F32, Streaming::TwoLattice, bgk),
        (LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull, CollisionModel::Mrt),
        (LatticeKind::D3Q19, Precision::F16, Streaming::TwoLattice, les),
        (LatticeKind::D3Q27, Precision::F32, Streaming::EsotericPull, CollisionModel::Cumulant),
    ];
    for (lattice, precision, streaming, collision) in rows {
        let (config, refinement) = cavity(lattice, precision, streaming);
        let config = SolverConfig { collision, ..config };
        let mut one = build_refined(&config, &refinement, 4, Gpu(0), &[], lbm::ptx::PTX).unwrap();
        one.step(9).unwrap();
        let reference = one.save_state().unwrap();
        for devices in &layouts {
            let mut split = build_refined(&config, &refinement, 4, Gpu(devices[0]), devices, lbm::ptx::PTX).unwrap();
            split.step(9).unwrap();
            let state = split.save_state().unwrap();
            let differ: usize = (reference.parts.iter().zip(&state.parts))
                .map(|(a, b)| a.populations.iter().zip(&b.populations).filter(|(x, y)| x != y).count())
                .sum();
            let what = format!("{lattice:?} {precision:?} {streaming:?} {collision:?} on GPUs {devices:?}");
            eprintln!("{what}: {differ} differing bytes");
            assert_eq!(differ, 0, "{what}");
        }
    }
}
