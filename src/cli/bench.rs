//! `lbm bench`: copy bandwidth, then stream-collide MLUPS of a 3D cavity, in one run.

use lbm::host::solver::streaming_name;
use lbm::host::validation::cavity_config;
use lbm::host::{LatticeKind, Precision};
use lbm::kernels::Streaming;
use lbm::{BackendKind, Result};
use std::time::Instant;

/// Copy buffer for the bandwidth reference: at least 4 GiB, far beyond L2.
const COPY_BYTES: usize = 4 << 30;

pub fn bench(backend: BackendKind, sizes: &[u32], steps: u64) -> Result<()> {
    let copy = match backend {
        BackendKind::Gpu(i) => {
            let d = lbm::host::gpu::GpuDevice::open(i, lbm::ptx::PTX)?;
            let info = d.info()?;
            let bw = d.copy_bandwidth(COPY_BYTES, 20)?;
            println!("device: GPU {i} {}  copy bandwidth {:.1} GB/s (cuMemcpyDtoD of 4 GiB, read + write counted)", info.name, bw / 1e9);
            Some(bw)
        }
        BackendKind::Cpu => {
            println!(
                "device: CPU ({} threads); no copy-bandwidth reference",
                rayon::current_num_threads()
            );
            None
        }
    };
    println!("bytes per cell update = 2 x Q x bytes per population + 1 flag byte");
    println!(
        "{:<7} {:<4} {:<14} {:>6} {:>10} {:>9} {:>10}",
        "lattice", "prec", "streaming", "size", "MLUPS", "GB/s", "of copy"
    );
    for &n in sizes {
        for lattice in [LatticeKind::D3Q19, LatticeKind::D3Q27] {
            for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
                let precision = Precision::F32;
                let c = cavity_config(lattice, precision, streaming, n - 2, 1000.0, 0.05)?;
                let mut s = lbm::build_solver(c, backend)?;
                s.step(10)?;
                s.synchronize()?;
                let t0 = Instant::now();
                s.step(steps)?;
                s.synchronize()?;
                let secs = t0.elapsed().as_secs_f64();
                let cells = (n as f64).powi(3);
                let mlups = cells * steps as f64 / secs / 1e6;
                let bytes = (2 * lattice.q() * precision.bytes() + 1) as f64;
                let gbs = mlups * 1e6 * bytes / 1e9;
                let frac = copy
                    .map(|bw| format!("{:.1}%", 100.0 * gbs * 1e9 / bw))
                    .unwrap_or_else(|| "-".into());
                println!(
                    "{:<7} {:<4} {:<14} {:>6} {:>10.0} {:>9.1} {:>10}",
                    lattice.name(),
                    precision.name(),
                    streaming_name(streaming),
                    format!("{n}^3"),
                    mlups,
                    gbs,
                    frac
                );
            }
        }
    }
    Ok(())
}
