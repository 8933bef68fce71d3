//! Kernel-level throughput of stream-collide, on the CPU always and on the GPU
//! when one is present. Throughput is in cells, so criterion's elements/s read
//! as lattice updates per second (divide by 1e6 for MLUPS).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use lbm::host::validation::cavity_config;
use lbm::host::{LatticeKind, Precision};
use lbm::kernels::Streaming;
use lbm::BackendKind;
use std::time::{Duration, Instant};

fn stream_collide(c: &mut Criterion) {
    let mut targets = vec![(BackendKind::Cpu, "cpu", 48u32)];
    if lbm::host::gpu::device_count().is_ok() {
        targets.push((BackendKind::Gpu(0), "gpu", 256));
    }
    let mut group = c.benchmark_group("stream_collide");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for (backend, name, n) in targets {
        for lattice in [LatticeKind::D3Q19, LatticeKind::D3Q27] {
            for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
                let config = cavity_config(lattice, Precision::F32, streaming, n - 2, 1000.0, 0.05).unwrap();
                let mut solver = lbm::build_solver(config, backend).unwrap();
                group.throughput(Throughput::Elements((n as u64).pow(3)));
                let id = format!("{name}/{}/f32/{}", lattice.name(), streaming.name());
                group.bench_function(BenchmarkId::new(id, n), |b| {
                    b.iter_custom(|iters| {
                        solver.synchronize().unwrap();
                        let t = Instant::now();
                        solver.step(iters).unwrap();
                        solver.synchronize().unwrap();
                        t.elapsed()
                    })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, stream_collide);
criterion_main!(benches);
