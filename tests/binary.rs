//! The binary fluid on the GPU: the same per-site functions with the same
//! IEEE operations as the CPU backend give the same fields bit for bit in
//! f64, on every lattice with either collision; a box split over several
//! GPUs (or several slabs on one) gives the fields of one; f32 follows f64
//! to its round-off; and 3D droplets obey the Laplace law.

mod common;

use lbm::host::binary::validation::laplace;
use lbm::host::binary::{BinaryCollision, BinaryConfig, BinaryFields, BinarySolver, Devices};
use lbm::host::{LatticeKind, Precision};
use lbm::kernels::binary::FreeEnergy;
use lbm::BackendKind;

fn config(size: [u32; 3], lattice: LatticeKind, collision: BinaryCollision, precision: Precision) -> BinaryConfig {
    BinaryConfig {
        size,
        lattice,
        tau: 0.9,
        collision,
        free_energy: FreeEnergy::new(-0.02, 0.02, 0.04),
        mobility: 0.3,
        precision,
    }
}

/// A droplet off the box's centre in a scrambled background: every term
/// of the step is busy from the first.
fn droplet_in_noise(size: [u32; 3]) -> impl Fn(u32, u32, u32) -> f64 + Sync {
    move |x, y, z| {
        let c = size.map(|n| n as f64 * 0.4);
        let d = ((x as f64 - c[0]).powi(2) + (y as f64 - c[1]).powi(2) + (z as f64 - c[2]).powi(2)).sqrt();
        let h = (x.wrapping_mul(73_856_093) ^ y.wrapping_mul(19_349_663) ^ z.wrapping_mul(83_492_791)) % 1000;
        -((d - 3.5) / 2.0).tanh() + 0.05 * (h as f64 / 500.0 - 1.0)
    }
}

fn run(c: &BinaryConfig, backend: BackendKind, steps: u64) -> BinaryFields {
    let ptx = lbm::ptx::active();
    let mut s = BinarySolver::on(c.clone(), backend, &ptx, droplet_in_noise(c.size)).unwrap();
    s.step(steps).unwrap();
    s.fields().unwrap()
}

/// Every field as one list of values.
fn values(f: &BinaryFields) -> Vec<f64> {
    let mut v = f.phi.clone();
    v.extend(&f.mu);
    v.extend(&f.rho);
    v.extend(f.u.iter().flatten());
    v
}

const BOXES: [(LatticeKind, [u32; 3]); 3] =
    [(LatticeKind::D2Q9, [24, 19, 1]), (LatticeKind::D3Q19, [12, 9, 10]), (LatticeKind::D3Q27, [12, 9, 10])];

#[test]
fn gpu_matches_cpu_bit_for_bit() {
    let Some(gpu) = common::gpu("binary::gpu_matches_cpu_bit_for_bit") else { return };
    for (lattice, size) in BOXES {
        for collision in [BinaryCollision::Bgk, BinaryCollision::Mrt] {
            let c = config(size, lattice, collision, Precision::F64);
            // Even and odd step counts: the buffers swap each step.
            for steps in [30, 31] {
                let (cpu, gpu) = (values(&run(&c, BackendKind::Cpu, steps)), values(&run(&c, gpu, steps)));
                let differ = cpu.iter().zip(&gpu).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                assert_eq!(differ, 0, "{lattice:?} {collision:?} {steps} steps: {differ} values differ");
                assert!(cpu.iter().all(|v| v.is_finite()));
            }
        }
    }
}

/// A box split along z into slabs, a GPU each, gives the whole box's
/// fields bit for bit: against the CPU in f64 and one GPU in f32, on both
/// 3D lattices and collisions, after even and odd step counts, with the
/// halo copies overlapping each pass's interior and after it. Slabs are
/// uneven (10 planes in 3). With one GPU, the slabs share it (peer copies
/// within the device); with more, they take GPUs 0, 1, 2 (wrapping).
#[test]
fn slabs_on_gpus_give_the_whole_box_bit_for_bit() {
    let Some(gpu) = common::gpu("binary::slabs_on_gpus_give_the_whole_box_bit_for_bit") else { return };
    let available = lbm::host::gpu::device_count().unwrap();
    let ptx = lbm::ptx::active();
    let split = |c: &BinaryConfig, slabs: usize, overlap: bool, steps: u64| {
        let ordinals = (0..slabs).map(|k| k % available).collect();
        let devices = Devices::Gpus { ordinals, overlap };
        let mut s = BinarySolver::on_devices(c.clone(), &devices, &ptx, droplet_in_noise(c.size)).unwrap();
        s.step(steps).unwrap();
        values(&s.fields().unwrap())
    };
    for (lattice, size) in BOXES.into_iter().skip(1) {
        for collision in [BinaryCollision::Bgk, BinaryCollision::Mrt] {
            for (precision, reference) in [(Precision::F64, BackendKind::Cpu), (Precision::F32, gpu)] {
                let c = config(size, lattice, collision, precision);
                for steps in [20, 21] {
                    let whole = values(&run(&c, reference, steps));
                    for (slabs, overlap) in [(2, true), (3, true), (3, false)] {
                        let parts = split(&c, slabs, overlap, steps);
                        let differ = whole.iter().zip(&parts).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                        assert_eq!(
                            differ, 0,
                            "{lattice:?} {collision:?} {precision:?} {steps} steps, {slabs} slabs (overlap {overlap}): \
                             {differ} values differ"
                        );
                    }
                }
            }
        }
    }
}

/// f32 on the GPU follows the f64 CPU run to its round-off: each step adds
/// a few dozen f32 roundings (ε = 1.2e-7) per site, so after 30 steps `φ`
/// (of order 1) lies within 30 × 64 ε of f64.
#[test]
fn f32_follows_f64() {
    let Some(gpu) = common::gpu("binary::f32_follows_f64") else { return };
    for (lattice, size) in BOXES {
        let c = config(size, lattice, BinaryCollision::Mrt, Precision::F64);
        let reference = run(&c, BackendKind::Cpu, 30);
        let single = run(&BinaryConfig { precision: Precision::F32, ..c }, gpu, 30);
        let worst = reference.phi.iter().zip(&single.phi).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        assert!(worst < 30.0 * 64.0 * f32::EPSILON as f64, "{lattice:?}: phi differs by {worst:.2e}");
    }
}

/// The pressure jump across a droplet is `2σ/R` in 3D within 3%, `R` where
/// `φ` crosses zero, for four radii (D3Q19, MRT, interface width 2). The
/// droplets shrink as the phase around them takes up the order parameter
/// their Laplace pressure shifts it by (`ξ/3R` of `φ*`): in a box much
/// larger than a droplet, all of it. So the box is 48 sites, the droplets
/// 12 to 18 sites at the start and about 9 to 17.5 at equilibrium.
#[test]
fn droplets_obey_the_laplace_law_in_3d() {
    let Some(gpu) = common::gpu("binary::droplets_obey_the_laplace_law_in_3d") else { return };
    let ptx = lbm::ptx::active();
    for r in [12.0, 14.0, 16.0, 18.0] {
        let l = laplace(gpu, &ptx, LatticeKind::D3Q19, 48, r, 60_000).unwrap();
        eprintln!(
            "R {r} -> {:.3}: jump {:.4e}, Laplace {:.4e}, ratio {:.4}, spurious |u| {:.2e}",
            l.radius,
            l.jump,
            l.laplace,
            l.jump / l.laplace,
            l.spurious
        );
        assert!((l.jump - l.laplace).abs() < 0.03 * l.laplace, "R {}: jump {} against {}", l.radius, l.jump, l.laplace);
    }
}

/// Spinodal decomposition of a 50:50 mixture in 3D at Ludwig's usual
/// parameters: the run stays finite, `Σφ` stays what it was to round-off,
/// and the domains coarsen (the domain size at least doubles from step 500
/// to step 8,000).
#[test]
fn a_mixture_separates_and_coarsens() {
    use lbm::host::binary::measure::{domain_size, growth_exponent, total_phi};
    let Some(gpu) = common::gpu("binary::a_mixture_separates_and_coarsens") else { return };
    let ptx = lbm::ptx::active();
    let mut c = config([64; 3], LatticeKind::D3Q19, BinaryCollision::Mrt, Precision::F64);
    c.free_energy = FreeEnergy::new(-0.0625, 0.0625, 0.04);
    c.tau = 1.0;
    c.mobility = 0.15;
    let noise = |x: u32, y: u32, z: u32| {
        let h = (x.wrapping_mul(73_856_093) ^ y.wrapping_mul(19_349_663) ^ z.wrapping_mul(83_492_791)) % 1000;
        0.05 * (h as f64 / 500.0 - 1.0)
    };
    let mut s = BinarySolver::on(c.clone(), gpu, &ptx, noise).unwrap();
    let before = total_phi(&s.fields().unwrap());
    let mut samples = Vec::new();
    for _ in 0..16 {
        s.step(500).unwrap();
        let f = s.fields().unwrap();
        assert!(f.phi.iter().chain(&f.rho).all(|v| v.is_finite()), "diverged by step {}", s.time());
        samples.push((s.time(), domain_size(&c, &f.phi).expect("two phases")));
    }
    let f = s.fields().unwrap();
    let sites = c.sites() as f64;
    assert!((total_phi(&f) - before).abs() < 1e-10 * sites, "sum of phi {before} -> {}", total_phi(&f));
    let (first, last) = (samples[0].1, samples[samples.len() - 1].1);
    eprintln!("L(t): {samples:?}; exponent over the later half {:?}", growth_exponent(&samples));
    assert!(last > 2.0 * first, "the domains did not coarsen: L {first} -> {last}");
}
