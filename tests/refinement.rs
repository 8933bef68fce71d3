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
