//! The thermal D2Q37 model on the GPU against the CPU backend: the same
//! per-cell functions with the same IEEE operations give the same
//! populations bit for bit, in both precisions, with walls and gravity or
//! periodic, fused or as separate kernels, in one domain or in tiles along
//! x, along y or in a mesh, spread over every GPU there is.

mod common;

use lbm::host::thermal::tiles::{RowHalo, Tiling};
use lbm::host::thermal::{ThermalConfig, ThermalPrecision, ThermalSolver};
use lbm::kernels::thermal::d2q37::THETA0;
use lbm::BackendKind;
use std::f64::consts::PI;

fn lumpy(nx: u32, ny: u32) -> impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync {
    move |x, y| {
        let (a, b) = (2.0 * PI * x as f64 / nx as f64, 2.0 * PI * y as f64 / ny as f64);
        (1.0 + 0.05 * a.sin() * b.cos(), [0.02 * b.sin(), -0.01 * a.cos()], THETA0 * (1.0 + 0.1 * (a + b).cos()))
    }
}

/// A box under gravity, with walls at two temperatures or periodic, one tile.
fn config(nx: u32, ny: u32, precision: ThermalPrecision, walls: bool, fused: bool) -> ThermalConfig {
    ThermalConfig {
        nx,
        ny,
        tau: 0.7,
        gravity: [1e-5, -2e-4],
        walls: walls.then_some([1.05 * THETA0, 0.95 * THETA0]),
        fused,
        precision,
        tiling: Tiling::ONE,
    }
}

#[test]
fn gpu_matches_cpu_bit_for_bit() {
    let Some(gpu) = common::gpu("thermal::gpu_matches_cpu_bit_for_bit") else { return };
    let ptx = lbm::ptx::active();
    // A box taller than a thread block, and one short column.
    for (nx, ny) in [(37, 150), (9, 6)] {
        for precision in [ThermalPrecision::F64, ThermalPrecision::F32] {
            for (walls, fused) in [(true, true), (true, false), (false, true), (false, false)] {
                let c = config(nx, ny, precision, walls, fused);
                let run = |backend| {
                    let mut s = ThermalSolver::new(c.clone(), backend, &ptx, lumpy(nx, ny)).unwrap();
                    s.step(13).unwrap();
                    s.populations().unwrap()
                };
                let (cpu, gpu) = (run(BackendKind::Cpu), run(gpu));
                let differ = cpu.iter().zip(&gpu).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                assert_eq!(
                    differ, 0,
                    "{nx}x{ny} {precision:?} walls {walls} fused {fused}: {differ} populations differ"
                );
                assert!(cpu.iter().all(|v| v.is_finite()));
            }
        }
    }
}

/// Tiles on GPUs (every GPU there is, tiles dealt round them) give the
/// one-domain CPU populations bit for bit: 1D tiles along x (contiguous
/// column halos), along y and 2D meshes (row halos strided or packed).
#[test]
fn tiles_on_gpus_match_one_domain_bit_for_bit() {
    let Some(_) = common::gpu("thermal::tiles_on_gpus_match_one_domain_bit_for_bit") else { return };
    let ptx = lbm::ptx::active();
    let count = lbm::host::gpu::device_count().unwrap();
    let (nx, ny) = (41, 30);
    for precision in [ThermalPrecision::F64, ThermalPrecision::F32] {
        for walls in [true, false] {
            let c = config(nx, ny, precision, walls, true);
            let mut one = ThermalSolver::new(c.clone(), BackendKind::Cpu, &ptx, lumpy(nx, ny)).unwrap();
            one.step(11).unwrap();
            let expected = one.populations().unwrap();
            for (x, y) in [(2, 1), (4, 1), (1, 2), (2, 2), (3, 2)] {
                for rows in [RowHalo::Strided, RowHalo::Packed] {
                    let tiled = ThermalConfig { tiling: Tiling { x, y, rows }, ..c.clone() };
                    let ordinals: Vec<usize> = (0..x as usize * y as usize).map(|k| k % count).collect();
                    let mut s = ThermalSolver::on_gpus(tiled, &ordinals, &ptx, lumpy(nx, ny)).unwrap();
                    s.step(11).unwrap();
                    let got = s.populations().unwrap();
                    let differ = expected.iter().zip(&got).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
                    assert_eq!(
                        differ, 0,
                        "{precision:?} walls {walls} tiles {x}x{y} {rows:?} on GPUs {ordinals:?}: {differ} differ"
                    );
                }
            }
        }
    }
}
