//! Several z-partitions on GPUs give the populations of one domain, bit for
//! bit. Partitions may share a GPU, so every configuration runs on a machine
//! with one GPU; with two or four GPUs the same checks run across devices.

mod common;

use lbm::host::multi_gpu::Exchange;
use lbm::host::validation::{cavity_config, duct_config, obstacle_duct_config};
use lbm::host::{LatticeKind, Precision};
use lbm::kernels::Streaming;
use lbm::{BackendKind, SolverConfig};

fn forced_cavity(lattice: LatticeKind, streaming: Streaming, side: u32) -> SolverConfig {
    let mut c = cavity_config(lattice, Precision::F32, streaming, side, 100.0, 0.08).unwrap();
    c.force = [2e-5, 1e-5, -1e-5];
    c
}

/// Device lists to try: partitions sharing GPU 0, and across GPUs when present.
fn layouts() -> Vec<Vec<usize>> {
    let count = lbm::host::gpu::device_count().unwrap_or(0);
    let mut l = vec![vec![0], vec![0, 0], vec![0, 0, 0, 0]];
    if count >= 2 {
        l.push(vec![0, 1]);
    }
    if count >= 4 {
        l.push(vec![0, 1, 2, 3]);
    }
    l
}

#[test]
fn partitions_on_gpus_match_one_domain() {
    let Some(_) = common::gpu("partitions_on_gpus_match_one_domain") else { return };
    // 31 layers (29 fluid + 2 walls): 2 partitions of 16 + 15, 4 of 8, 8, 8, 7.
    for lattice in [LatticeKind::D3Q19, LatticeKind::D3Q27] {
        for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
            let c = forced_cavity(lattice, streaming, 29);
            let mut one = lbm::build_solver(c.clone(), BackendKind::Gpu(0)).unwrap();
            let mut runs: Vec<_> = layouts()
                .into_iter()
                .flat_map(|devices| Exchange::ALL.map(|e| (devices.clone(), e)))
                .map(|(devices, e)| {
                    let s = lbm::build_multi_gpu(c.clone(), &devices, e).unwrap();
                    (format!("{devices:?} {}", e.name()), s)
                })
                .collect();
            for steps in [1000, 1] {
                one.step(steps).unwrap();
                let want = one.populations().unwrap();
                for (name, s) in &mut runs {
                    s.step(steps).unwrap();
                    let got = s.populations().unwrap();
                    let differ = lbm::host::solver::bitwise_differences(&want, &got);
                    println!("{lattice:?} {streaming:?} {name} after {} steps: {differ} differ", one.time());
                    assert_eq!(differ, 0, "{lattice:?} {streaming:?} {name} after {} steps", one.time());
                }
            }
        }
    }
}

/// Inlets and outlets on the z faces (open cells next to the halos) and on
/// the x faces (open cells in every layer): the open-boundary group of each
/// partition (its own layers only) runs beside the boundary layers.
#[test]
fn open_boundaries_on_gpus_match_one_domain() {
    let Some(_) = common::gpu("open_boundaries_on_gpus_match_one_domain") else { return };
    for (streaming, axis) in [Streaming::EsotericPull, Streaming::TwoLattice].into_iter().flat_map(|s| [(s, 2), (s, 0)])
    {
        let dims = lbm::kernels::Dims::new(12, 10, 29);
        let c = duct_config(LatticeKind::D3Q19, Precision::F32, streaming, dims, axis).unwrap();
        let mut one = lbm::build_solver(c.clone(), BackendKind::Gpu(0)).unwrap();
        one.step(1001).unwrap();
        let want = one.populations().unwrap();
        for devices in layouts().into_iter().skip(1) {
            for e in Exchange::ALL {
                let mut s = lbm::build_multi_gpu(c.clone(), &devices, e).unwrap();
                s.step(1001).unwrap();
                let got = s.populations().unwrap();
                let differ = lbm::host::solver::bitwise_differences(&want, &got);
                println!("duct along {axis} {streaming:?} {devices:?} {} after 1001 steps: {differ} differ", e.name());
                assert_eq!(differ, 0, "duct along {axis} {streaming:?} {devices:?} {}", e.name());
            }
        }
    }
}

/// A sphere with interpolated walls that every split cuts and a sponge in
/// front of the outlet: each partition updates its curved and sponge cells
/// with the layers that hold them (the boundary layers on their own
/// stream), and takes the next step's interpolation values before its
/// halos go out. Along z and x, both schemes, every exchange, odd and even
/// step counts, and after a restore; fields too.
#[test]
fn curved_walls_and_sponges_on_gpus_match_one_domain() {
    let Some(_) = common::gpu("curved_walls_and_sponges_on_gpus_match_one_domain") else { return };
    for (streaming, axis) in [Streaming::EsotericPull, Streaming::TwoLattice].into_iter().flat_map(|s| [(s, 2), (s, 0)])
    {
        let dims = if axis == 2 { lbm::kernels::Dims::new(14, 12, 29) } else { lbm::kernels::Dims::new(30, 12, 23) };
        let c = obstacle_duct_config(LatticeKind::D3Q19, Precision::F32, streaming, dims, axis).unwrap();
        let mut one = lbm::build_solver(c.clone(), BackendKind::Gpu(0)).unwrap();
        let mut runs: Vec<_> = (layouts().into_iter().skip(1))
            .flat_map(|devices| Exchange::ALL.map(|e| (devices.clone(), e)))
            .map(|(devices, e)| {
                let s = lbm::build_multi_gpu(c.clone(), &devices, e).unwrap();
                (format!("{devices:?} {}", e.name()), s)
            })
            .collect();
        for steps in [601, 1] {
            one.step(steps).unwrap();
            let (want, fields) = (one.populations().unwrap(), one.fields().unwrap());
            for (name, s) in &mut runs {
                s.step(steps).unwrap();
                let differ = lbm::host::solver::bitwise_differences(&want, &s.populations().unwrap());
                let at = format!("duct along {axis} {streaming:?} {name} after {} steps", one.time());
                println!("{at}: {differ} differ");
                assert_eq!(differ, 0, "{at}");
                assert_eq!(fields, s.fields().unwrap(), "{at}: fields");
            }
        }
        let (_, split) = &mut runs[0];
        let saved = split.save_state().unwrap();
        let devices = layouts().pop().expect("at least one layout");
        let mut resumed = lbm::build_multi_gpu(c, &devices, Exchange::ALL[0]).unwrap();
        resumed.step(3).unwrap();
        resumed.restore_state(&saved).unwrap();
        resumed.step(51).unwrap();
        one.step(51).unwrap();
        let differ =
            lbm::host::solver::bitwise_differences(&one.populations().unwrap(), &resumed.populations().unwrap());
        println!("duct along {axis} {streaming:?} restored on {devices:?}: {differ} differ");
        assert_eq!(differ, 0, "duct along {axis} {streaming:?} restored on {devices:?}");
    }
}

/// A split run restored from a saved state continues bit for bit: the
/// restore's uploads are ordered before the next step's boundary layers,
/// which run on a stream of their own.
#[test]
fn restored_partitions_continue_bit_for_bit() {
    let Some(_) = common::gpu("restored_partitions_continue_bit_for_bit") else { return };
    let devices = layouts().pop().expect("at least one layout");
    for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
        for e in Exchange::ALL {
            let c = forced_cavity(LatticeKind::D3Q19, streaming, 29);
            let mut unbroken = lbm::build_multi_gpu(c.clone(), &devices, e).unwrap();
            unbroken.step(500).unwrap();
            let saved = unbroken.save_state().unwrap();
            unbroken.step(501).unwrap();
            let want = unbroken.populations().unwrap();
            let mut resumed = lbm::build_multi_gpu(c, &devices, e).unwrap();
            resumed.step(3).unwrap();
            resumed.restore_state(&saved).unwrap();
            resumed.step(501).unwrap();
            let got = resumed.populations().unwrap();
            let differ = lbm::host::solver::bitwise_differences(&want, &got);
            println!("restored {streaming:?} {devices:?} {}: {differ} differ", e.name());
            assert_eq!(differ, 0, "restored {streaming:?} {devices:?} {}", e.name());
        }
    }
}

#[test]
fn thin_partitions_and_missing_devices_are_clear_errors() {
    let Some(_) = common::gpu("thin_partitions_and_missing_devices_are_clear_errors") else { return };
    let c = forced_cavity(LatticeKind::D3Q19, Streaming::EsotericPull, 4);
    let err = lbm::build_multi_gpu(c.clone(), &[0, 0, 0, 0], Exchange::Disaggregated).err().unwrap().to_string();
    assert!(err.contains("at least 2 layers"), "{err}");
    let err = lbm::build_multi_gpu(c, &[0, 4096], Exchange::Disaggregated).err().unwrap().to_string();
    assert!(err.contains("4096"), "{err}");
}
