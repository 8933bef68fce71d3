//! Refinement levels on the GPU: the same populations as the CPU bit for
//! bit, and mass conserved to round-off over a long run.

mod common;

use lbm::host::domain::{Domain, FaceBoundary};
use lbm::host::gpu::{DeviceStorage, GpuDevice};
use lbm::host::groups::BoundaryGroups;
use lbm::host::levels::{Fusion, Part, RefinedBox, RefinedCpu, RefinedGpu, Refinement};
use lbm::host::solver::{CollisionModel, GridLayout, Initial, LatticeKind, Precision};
use lbm::kernels::{Dims, F16s, Lattice, Streaming, D3Q19, D3Q27};
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
    let (config, refinement) = cavity(lattice, precision, streaming);
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
    let what = format!("{} {} {streaming:?} {fusion:?} blocks {edge}", L::NAME, S::NAME);
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
