//! `lbm info`

use lbm::host::gpu::{device_count, GpuDevice};
use lbm::Result;

/// Copy-bandwidth buffer for `info`: large against the L2 cache, quick to time.
const INFO_COPY_BYTES: usize = 1 << 30;

pub fn info() -> Result<()> {
    println!("lbm {}", env!("CARGO_PKG_VERSION"));
    println!(
        "kernels: PTX for {} ({} entry points, embedded)",
        lbm::ptx::CUDA_ARCH,
        lbm::ptx::PTX.matches(".entry ").count()
    );
    println!("CPU backend: {} threads (rayon; set RAYON_NUM_THREADS to change)", rayon_threads());
    match device_count() {
        Err(e) => println!("GPUs: none ({e})"),
        Ok(n) => {
            println!("GPUs: {n}");
            for ordinal in 0..n {
                let d = GpuDevice::open(ordinal, lbm::ptx::PTX)?;
                let i = d.info()?;
                let bw = d.copy_bandwidth(INFO_COPY_BYTES, 20)?;
                println!(
                    "  [{ordinal}] {}  compute {}.{}  {} SMs  memory {:.1} GiB ({:.1} GiB free)  device copy {:.0} GB/s (read + write, 1 GiB buffer)",
                    i.name,
                    i.compute_capability.0,
                    i.compute_capability.1,
                    i.multiprocessors,
                    i.total_memory as f64 / (1u64 << 30) as f64,
                    i.free_memory as f64 / (1u64 << 30) as f64,
                    bw / 1e9
                );
            }
        }
    }
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .max(std::env::var("RAYON_NUM_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(0))
}
