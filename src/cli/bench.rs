//! `lbm bench`: the copy bandwidth, then stream-collide throughput of a 3D
//! cavity for every chosen lattice, storage and scheme, in one run.

use lbm::host::bench::{bytes_per_cell_update, max_cube, measure, BenchCase, BenchResult};
use lbm::host::files::write_atomic;
use lbm::host::solver::streaming_name;
use lbm::host::{LatticeKind, Precision};
use lbm::kernels::Streaming;
use lbm::{BackendKind, Error, Result};
use std::path::PathBuf;

/// Copy buffer for the bandwidth reference: 4 GiB, far beyond the L2 cache.
const COPY_BYTES: usize = 4 << 30;

/// What to measure.
pub struct BenchOptions {
    pub sizes: Vec<u32>,
    pub steps: u64,
    pub lattices: Vec<LatticeKind>,
    pub precisions: Vec<Precision>,
    pub streaming: Vec<Streaming>,
    pub json: Option<PathBuf>,
    pub max_size: bool,
}

#[derive(serde::Serialize)]
struct Report {
    device: String,
    copy_bandwidth_gb_per_s: Option<f64>,
    bytes_per_cell_formula: &'static str,
    results: Vec<BenchResult>,
    max_cube: Vec<(String, String, u32)>,
}

pub fn bench(backend: BackendKind, o: BenchOptions) -> Result<()> {
    let (device, copy, free) = match backend {
        BackendKind::Gpu(i) => {
            let d = lbm::host::gpu::GpuDevice::open(i, &lbm::ptx::active())?;
            let info = d.info()?;
            let bw = d.copy_bandwidth(COPY_BYTES, 20)?;
            (format!("GPU {i} {}", info.name), Some(bw), Some(d.memory()?.0))
        }
        BackendKind::Cpu => (format!("CPU ({} threads)", rayon::current_num_threads()), None, None),
    };
    println!("device: {device}");
    match copy {
        Some(bw) => println!("copy bandwidth: {:.1} GB/s (cuMemcpyDtoD of 4 GiB x 20, bytes read + written)", bw / 1e9),
        None => println!("copy bandwidth: not measured on the CPU"),
    }
    let formula = "bytes per cell update = 2 x Q x bytes per population + 1 flag byte";
    println!("{formula}; fraction = MLUPS x bytes per cell update / copy bandwidth");
    println!(
        "{:<6} {:<4} {:<13} {:>5} {:>9} {:>5} {:>8} {:>7} {:>5} {:>6} {:>5}",
        "lattice", "prec", "streaming", "size", "MLUPS", "B/cel", "GB/s", "of copy", "regs", "block", "occ"
    );
    let mut results = Vec::new();
    for &size in &o.sizes {
        for &lattice in &o.lattices {
            for &precision in &o.precisions {
                for &streaming in &o.streaming {
                    let case = BenchCase { lattice, precision, streaming, size };
                    let r = measure(&|c, b| lbm::build_solver(c, b), backend, case, o.steps, copy);
                    let r = match r {
                        Ok(r) => r,
                        Err(Error::OutOfMemory { .. }) => {
                            println!(
                                "{:<6} {:<4} {:<13} {:>5} does not fit",
                                lattice.name(),
                                precision.name(),
                                streaming_name(streaming),
                                size
                            );
                            continue;
                        }
                        Err(e) => return Err(e),
                    };
                    let k = r.kernel.as_ref();
                    println!(
                        "{:<6} {:<4} {:<13} {:>5} {:>9.0} {:>5} {:>8.1} {:>7} {:>5} {:>6} {:>5}",
                        r.lattice,
                        r.precision,
                        r.streaming,
                        r.size,
                        r.mlups,
                        r.bytes_per_cell,
                        r.gb_per_s,
                        r.fraction_of_copy.map(|f| format!("{:.1}%", 100.0 * f)).unwrap_or_else(|| "-".into()),
                        k.map(|k| k.registers.to_string()).unwrap_or_else(|| "-".into()),
                        k.map(|k| k.block_size.to_string()).unwrap_or_else(|| "-".into()),
                        k.map(|k| format!("{:.0}%", 100.0 * k.occupancy)).unwrap_or_else(|| "-".into()),
                    );
                    results.push(r);
                }
            }
        }
    }
    let mut cubes = Vec::new();
    if o.max_size {
        let free = free.ok_or_else(|| Error::Setup("--max-size needs the GPU backend".into()))?;
        println!(
            "largest cube that fits ({:.1} GiB free), Esoteric Pull, state = populations + flag byte:",
            free as f64 / (1u64 << 30) as f64
        );
        for &lattice in &o.lattices {
            for &precision in &o.precisions {
                let n = max_cube(lattice, precision, free);
                println!(
                    "  {:<6} {:<4} {n}^3 ({} B per cell)",
                    lattice.name(),
                    precision.name(),
                    bytes_per_cell_update(lattice, precision) / 2 + 1
                );
                cubes.push((lattice.name().to_string(), precision.name().to_string(), n));
            }
        }
    }
    if let Some(path) = o.json {
        let report = Report {
            device,
            copy_bandwidth_gb_per_s: copy.map(|b| b / 1e9),
            bytes_per_cell_formula: formula,
            results,
            max_cube: cubes,
        };
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::Setup(format!("cannot encode the report: {e}")))?;
        write_atomic(&path, text.as_bytes())?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
