//! The embedded PTX: every kernel is there, and it assembles with ptxas for
//! the target architecture with no spills in the stream-collide kernels.

use lbm::kernels::{GridKind, KernelKind, LevelKernel, Streaming};
use std::process::Command;

use lbm::kernels::kernels::INSTANCES;

/// Entry-point name of kernel `kind` on `grid` for the instance `id` of the table.
fn entry(kind: KernelKind, grid: GridKind, id: &str) -> String {
    format!("{}_{}{id}", kind.prefix(), grid.infix())
}

/// Entry points of the table: every family, grid and instance it is built
/// for, plus the layout check.
fn entries() -> usize {
    let families: usize = INSTANCES
        .iter()
        .map(|&(_, q, _)| {
            KernelKind::ALL.iter().filter(|k| k.built_for(q)).count() * GridKind::ALL.len()
                + LevelKernel::ALL.len() * LevelKernel::GRIDS.len()
        })
        .sum();
    // The layout check, the exchange kernels of split refined domains, the
    // thermal model's kernels in two precisions, the binary fluid's on
    // three lattices in two precisions, and the colloids' on two lattices in
    // two precisions with their three shared ones.
    families
        + 1
        + 2 * lbm::kernels::exchange::KERNELS.len()
        + 2 * lbm::kernels::thermal::KERNELS.len()
        + 6 * lbm::kernels::binary::KERNELS.len()
        + 4 * lbm::kernels::colloids::KERNELS.len()
        + lbm::kernels::colloids::SHARED_KERNELS.len()
}

/// The stream-collide kernels, every scheme and collision operator.
fn stream_collide() -> impl Iterator<Item = KernelKind> {
    KernelKind::ALL.into_iter().filter(|k| k.is_stream_collide())
}

#[test]
fn ptx_holds_every_kernel() {
    for kind in KernelKind::ALL {
        for grid in GridKind::ALL {
            for (id, q, _) in INSTANCES {
                let name = entry(kind, grid, id);
                let present = lbm::ptx::PTX.contains(&format!(".entry {name}("));
                assert_eq!(present, kind.built_for(q), "kernel {name}: in the PTX {present}, built for {q} velocities");
            }
        }
    }
    for kind in LevelKernel::ALL {
        for grid in LevelKernel::GRIDS {
            for (id, _, _) in INSTANCES {
                let name = format!("{}_{}{id}", kind.prefix(), grid.infix());
                assert!(lbm::ptx::PTX.contains(&format!(".entry {name}(")), "kernel {name} missing from the PTX");
            }
        }
    }
    for (_, gather, scatter) in lbm::kernels::exchange::KERNELS {
        for name in [gather, scatter] {
            assert!(lbm::ptx::PTX.contains(&format!(".entry {name}(")), "kernel {name} missing from the PTX");
        }
    }
    for kernel in lbm::kernels::thermal::KERNELS {
        for p in ["f32", "f64"] {
            let name = format!("d2q37_{kernel}_{p}");
            assert!(lbm::ptx::PTX.contains(&format!(".entry {name}(")), "kernel {name} missing from the PTX");
        }
    }
    for kernel in lbm::kernels::binary::KERNELS {
        for lattice in ["d2q9", "d3q19", "d3q27"] {
            for p in ["f32", "f64"] {
                let name = format!("binary_{kernel}_{lattice}_{p}");
                assert!(lbm::ptx::PTX.contains(&format!(".entry {name}(")), "kernel {name} missing from the PTX");
            }
        }
    }
    for kernel in lbm::kernels::colloids::KERNELS {
        for lattice in ["d3q19", "d3q27"] {
            for p in ["f32", "f64"] {
                let name = format!("colloids_{kernel}_{lattice}_{p}");
                assert!(lbm::ptx::PTX.contains(&format!(".entry {name}(")), "kernel {name} missing from the PTX");
            }
        }
    }
    for name in lbm::kernels::colloids::SHARED_KERNELS {
        assert!(lbm::ptx::PTX.contains(&format!(".entry {name}(")), "kernel {name} missing from the PTX");
    }
    // And nothing else: every entry point is one of the table's.
    let found = lbm::ptx::PTX.matches(".entry ").count();
    assert_eq!(found, entries(), "the PTX holds kernels the table does not name");
    assert!(lbm::ptx::PTX.contains(&format!(".target {}", lbm::ptx::CUDA_ARCH)));
}

/// ptxas from `LBM_PTXAS`, else from PATH. Without one the test is skipped,
/// unless `LBM_REQUIRE_PTXAS=1` (set by CI).
fn ptxas() -> Option<String> {
    let candidate = std::env::var("LBM_PTXAS").unwrap_or_else(|_| "ptxas".into());
    match Command::new(&candidate).arg("--version").output() {
        Ok(o) if o.status.success() => Some(candidate),
        _ => {
            assert!(
                std::env::var("LBM_REQUIRE_PTXAS").as_deref() != Ok("1"),
                "LBM_REQUIRE_PTXAS=1 but no ptxas at `{candidate}`"
            );
            eprintln!("SKIPPED ptxas check: no ptxas (set LBM_PTXAS)");
            None
        }
    }
}

#[test]
fn ptx_assembles_without_spills() {
    let Some(ptxas) = ptxas() else { return };
    let dir = std::env::temp_dir().join(format!("lbm-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("kernels.ptx");
    std::fs::write(&src, lbm::ptx::PTX).unwrap();
    let out = Command::new(&ptxas)
        // Every core: the whole module is one ptxas run of minutes.
        .args(["-v", "--split-compile", "0", &format!("-arch={}", lbm::ptx::CUDA_ARCH)])
        .arg(&src)
        .args(["-o", dir.join("kernels.cubin").to_str().unwrap()])
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "ptxas failed:\n{log}");
    let report = lbm::host::ptxas::parse_report(&log);
    assert_eq!(report.len(), entries(), "ptxas reported an unexpected number of kernels:\n{log}");
    for k in &report {
        println!("{k}");
        if k.name.starts_with("stream_collide") {
            assert_eq!((k.spill_stores, k.spill_loads, k.stack_frame), (0, 0, 0), "{} uses local memory", k.name);
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The bulk kernels load only populations and flags: at most `Q` populations
/// on each of the two paths (no solid neighbour / some) and `Q` flags (the
/// cell's and its neighbours'). A table indexed at run time (a velocity
/// set's storage slots chosen by the step's parity, say) would add loads
/// that each population load waits on. The sparse kernels add, through the
/// read-only cache, at most one neighbour-block entry per direction, the
/// block's origin (3 values, for stochastic rounding's seed) and a word of
/// the boundary-block bitmask. The kernels that update open cells too have
/// a third path (the open cell's, `Q` populations and `Q` flags), and read
/// the open cells' tables through the read-only cache: the block's slot,
/// the cell's group number and the group's 12 values. 16-bit Esoteric Pull
/// on a sparse grid writes the update out once per step parity
/// (`stream_collide_esoteric`): twice the populations and flags, and the
/// even directions' entries, asked for near walls, once per parity.
#[test]
fn bulk_kernels_load_only_populations_and_flags() {
    for (id, q, bytes) in INSTANCES {
        for kind in stream_collide().filter(|k| k.built_for(q)) {
            let open = matches!(kind, KernelKind::StreamCollideOpen(..) | KernelKind::StreamCollideOpenChosen(_));
            let (paths, open_tables) = if open { (5, 14) } else { (3, 0) };
            for grid in GridKind::ALL {
                let per_parity = bytes == 2
                    && grid != GridKind::Dense
                    && matches!(kind, KernelKind::StreamCollide(Streaming::EsotericPull, _));
                let (paths, even_again) = if per_parity { (2 * paths, (q - 1) / 2) } else { (paths, 0) };
                let name = entry(kind, grid, id);
                let body = kernel_body(&name);
                let (loads, tables) = (body.matches("ld.global").count(), body.matches("ld.global.nc").count());
                assert!(
                    loads - tables <= paths * q,
                    "{name}: {} population and flag loads, more than {paths} x {q}",
                    loads - tables
                );
                let grid_tables = if grid == GridKind::Dense { 0 } else { q + 4 + even_again };
                assert!(
                    tables <= grid_tables + open_tables,
                    "{name}: {tables} table loads, more than {grid_tables} + {open_tables}"
                );
            }
        }
    }
}

/// Every load of the stream-collide kernels, populations and flags (not the
/// sparse grid's tables, read through the read-only cache), asks L2
/// for the 256 bytes around it (`ld.global.L2::256B`, the `fetch` module of
/// `kernels-gpu`): on an H100 that is worth about 3 points of copy
/// bandwidth in a periodic box and far more in a walled cavity.
#[test]
fn stream_collide_loads_prefetch_256_bytes() {
    for kind in stream_collide() {
        for (grid, (id, q, _)) in GridKind::ALL.into_iter().flat_map(|g| INSTANCES.map(|i| (g, i))) {
            if !kind.built_for(q) {
                continue;
            }
            let name = entry(kind, grid, id);
            let loads: Vec<&str> =
                kernel_body(&name).lines().filter(|s| s.contains("ld.global") && !s.contains("ld.global.nc")).collect();
            let plain = loads.iter().filter(|s| !s.contains("ld.global.L2::256B.")).count();
            assert!(!loads.is_empty(), "{name}: no global loads found");
            assert_eq!(plain, 0, "{name}: {plain} of {} global loads lack the L2 prefetch hint", loads.len());
        }
    }
}

/// The PTX of entry point `name`, from its `.entry` line to its closing brace.
fn kernel_body(name: &str) -> &'static str {
    let ptx = lbm::ptx::PTX;
    let body = &ptx[ptx.find(&format!(".entry {name}(")).expect("kernel present")..];
    &body[..body.find("\n}\n").expect("kernel body ends")]
}
