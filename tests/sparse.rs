//! The block-sparse grid against the dense box: the same populations and
//! fields bit for bit, for every lattice, precision, streaming scheme and
//! block shape, on geometries that leave blocks out (a cavity with a solid
//! lump, a channel with an inlet and an outlet, a sphere in a tunnel with
//! regularized ones, a porous bed), after odd and even step counts.

mod common;

use lbm::host::cases::{cavity_config, duct_config};
use lbm::host::solver::GridLayout;
use lbm::host::sparse::BlockShape;
use lbm::host::{LatticeKind, Precision};
use lbm::kernels::flags::{is_flow, CellKind, OPEN};
use lbm::kernels::layout::population_index;
use lbm::kernels::{Dims, Streaming};
use lbm::{BackendKind, SolverConfig};

/// Walls on the cells `solid` says are solid.
fn with_walls(mut c: SolverConfig, solid: impl Fn(u32, u32, u32) -> bool) -> SolverConfig {
    let d = c.domain.dims;
    for z in 0..d.nz {
        for y in 0..d.ny {
            for x in 0..d.nx {
                if solid(x, y, z) && c.domain.flags[[x, y, z]] & OPEN == 0 {
                    c.domain.flags.set([x, y, z], CellKind::Wall.to_flag());
                }
            }
        }
    }
    c
}

/// The test geometries for one lattice, precision and scheme.
fn geometries(lattice: LatticeKind, precision: Precision, streaming: Streaming) -> Vec<(&'static str, SolverConfig)> {
    let three = lattice.dimension() == 3;
    let side = if three { 16 } else { 32 };
    let nz = |n: u32| if three { n } else { 1 };
    let force = [2e-5, 1e-5, if three { -1e-5 } else { 0.0 }];
    // A lid-driven cavity, forced, with a solid lump filling a quarter of it.
    let mut cavity = cavity_config(lattice, precision, streaming, side - 2, 100.0, 0.08).unwrap();
    cavity.force = force;
    let cavity = with_walls(cavity, |x, y, _| x < side / 2 && y < side / 2);
    // A channel from a velocity inlet to a pressure outlet, 20 + 2 cells
    // long: the length is not whole blocks, so the open faces' cells take
    // their unknown populations from past the box.
    let channel = duct_config(lattice, precision, streaming, Dims::new(22, 12, nz(16)), 0).unwrap();
    // A sphere (a disc in 2D) in a tunnel whose lengths are whole blocks,
    // with the regularized inlet and outlet, forced.
    let mut tunnel = duct_config(lattice, precision, streaming, Dims::new(32, 16, nz(16)), 0).unwrap();
    for group in &mut tunnel.domain.open {
        group.state.scheme = lbm::host::domain::OpenScheme::Regularized;
    }
    tunnel.force = force;
    let c = if three { 8.0 } else { 0.0 };
    let tunnel = with_walls(tunnel, |x, y, z| {
        let (dx, dy, dz) = (x as f64 - 10.0, y as f64 - 8.0, z as f64 - c);
        dx * dx + dy * dy + dz * dz <= 16.0
    });
    // A periodic porous bed of random spheres, driven by a body force: 32
    // cells along x, so that rows of 32 cells tile it too.
    let mut bed = cavity_config(lattice, precision, streaming, side - 2, 100.0, 0.08).unwrap();
    let bed_dims = Dims::new(32, side, nz(side));
    bed.domain =
        lbm::host::domain::Domain::with_faces(bed_dims, [lbm::host::domain::FaceBoundary::Periodic; 6]).unwrap();
    bed.force = force;
    let mut seed = 12345u64;
    let mut random = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as f64 / (1u64 << 31) as f64
    };
    let lengths = [bed_dims.nx, bed_dims.ny, bed_dims.nz].map(f64::from);
    let spheres: Vec<[f64; 3]> = (0..12)
        .map(|_| [random() * lengths[0], random() * lengths[1], if three { random() * lengths[2] } else { 0.0 }])
        .collect();
    let bed = with_walls(bed, |x, y, z| {
        spheres.iter().any(|s| {
            let wrap = |a: u32, k: usize| {
                let d = (a as f64 - s[k]).abs();
                d.min(lengths[k] - d)
            };
            let (dx, dy, dz) = (wrap(x, 0), wrap(y, 1), wrap(z, 2));
            dx * dx + dy * dy + dz * dz <= 9.0
        })
    });
    vec![("cavity", cavity), ("channel", channel), ("tunnel", tunnel), ("bed", bed)]
}

/// Population values of `state` of a box of `dims` with `q` values per cell
/// in the dense layout, each as its raw bytes.
fn values(state: &lbm::host::solver::SavedState, dims: Dims, q: usize, bytes: usize) -> Vec<Vec<u8>> {
    let dense = state.dense_populations(dims, q, bytes).unwrap();
    dense.chunks_exact(bytes).map(|c| c.to_vec()).collect()
}

fn sparse_matches_dense(backend: BackendKind) {
    let on = common::On::from(backend);
    for lattice in [LatticeKind::D2Q9, LatticeKind::D3Q19, LatticeKind::D3Q27] {
        for precision in [Precision::F64, Precision::F32, Precision::F16] {
            for streaming in Streaming::ALL {
                for (name, config) in geometries(lattice, precision, streaming) {
                    for block in BlockShape::ALL {
                        let what = format!("{name} {lattice:?} {precision:?} {streaming:?} {block:?}");
                        let sparse_config = SolverConfig { grid: GridLayout::Sparse { block }, ..config.clone() };
                        let (mut dense, mut sparse) = (on.build(config.clone()), on.build(sparse_config));
                        let d = config.domain.dims;
                        let whole_blocks =
                            [d.nx, d.ny, d.nz].into_iter().zip(block.edges(d.nz)).all(|(n, e)| n % e == 0);
                        // Cells whose state must agree: every flow cell, or only the
                        // fluid ones where open faces lie past whole blocks.
                        let compared = |flag: u8| is_flow(flag) && (whole_blocks || flag & OPEN == 0);
                        for steps in [1, 11] {
                            dense.step(steps).unwrap();
                            sparse.step(steps).unwrap();
                            let t = dense.time();
                            let q = lattice.q();
                            let bytes = precision.bytes();
                            let (a, b) = (
                                values(&dense.save_state().unwrap(), d, q, bytes),
                                values(&sparse.save_state().unwrap(), d, q, bytes),
                            );
                            assert_eq!(a.len(), b.len(), "{what}: state sizes differ");
                            let mut differing = 0;
                            for z in 0..d.nz {
                                for y in 0..d.ny {
                                    for x in 0..d.nx {
                                        if !compared(config.domain.flags[d.index(x, y, z)]) {
                                            continue;
                                        }
                                        for slot in 0..q {
                                            let at = population_index(d.nx * d.ny, q, x + d.nx * y, z, slot);
                                            if a[at] != b[at] && differing < 5 && std::env::var("DBG").is_ok() {
                                                eprintln!(
                                                    "cell {x} {y} {z} slot {slot} flag {}",
                                                    config.domain.flags[d.index(x, y, z)]
                                                );
                                            }
                                            differing += (a[at] != b[at]) as usize;
                                        }
                                    }
                                }
                            }
                            assert_eq!(differing, 0, "{what}: populations differ after {t} steps");
                            let (fa, fb) = (dense.fields().unwrap(), sparse.fields().unwrap());
                            for n in 0..d.cells() {
                                if compared(config.domain.flags[n]) || !is_flow(config.domain.flags[n]) {
                                    assert_eq!(
                                        fa.rho[n].to_bits(),
                                        fb.rho[n].to_bits(),
                                        "{what}: density of cell {n} after {t} steps"
                                    );
                                    for a in 0..3 {
                                        assert_eq!(
                                            fa.u[n][a].to_bits(),
                                            fb.u[n][a].to_bits(),
                                            "{what}: velocity of cell {n}"
                                        );
                                    }
                                }
                            }
                            if whole_blocks {
                                // The same terms summed in storage order: equal to round-off.
                                let (ma, mb) = (dense.mass().unwrap(), sparse.mass().unwrap());
                                assert!(
                                    (ma - mb).abs() <= 1e-12 * ma,
                                    "{what}: mass {ma} against {mb} after {t} steps"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
on_backends!(sparse_matches_dense);

/// A checkpoint resumes whatever the grid: a dense run's state (whole
/// layers) on a sparse grid, a sparse run's (its blocks) on the dense box
/// or on blocks of another shape, and each continues bit for bit as an
/// unbroken run.
fn checkpoints_cross_grids(backend: BackendKind) {
    let on = common::On::from(backend);
    for (name, config) in geometries(LatticeKind::D3Q19, Precision::F32, Streaming::EsotericPull) {
        let on_blocks = |block| SolverConfig { grid: GridLayout::Sparse { block }, ..config.clone() };
        let (sparse, sparse8, rows) =
            (on_blocks(BlockShape::Cube4), on_blocks(BlockShape::Cube8), on_blocks(BlockShape::Row32));
        for (from, to) in [
            (config.clone(), sparse.clone()),
            (sparse.clone(), config.clone()),
            (sparse.clone(), rows.clone()),
            (rows, sparse8),
        ] {
            let mut first = on.build(from.clone());
            first.step(7).unwrap();
            let state = first.save_state().unwrap();
            let mut resumed = on.build(to);
            resumed.restore_state(&state).unwrap();
            first.step(6).unwrap();
            resumed.step(6).unwrap();
            assert_eq!(resumed.time(), 13);
            let (a, b) = (first.fields().unwrap(), resumed.fields().unwrap());
            let d = config.domain.dims;
            for n in 0..d.cells() {
                let flag = config.domain.flags[n];
                if flag & OPEN == 0 || d.nx % 4 == 0 {
                    assert_eq!(a.rho[n].to_bits(), b.rho[n].to_bits(), "{name} {:?} -> other: cell {n}", from.grid);
                }
            }
        }
    }
}
on_backends!(checkpoints_cross_grids);

/// Every boundary-group variant gives the populations of the `lists`
/// variant bit for bit, on both grids (`memory` and `bitmask` group a
/// sparse grid's blocks): the same per-cell functions in other kernels and
/// another order. Geometries with inlets and outlets, one of them with an
/// inlet profile of one group per cell; BGK, TRT and an operator the
/// kernel that updates open cells too chooses at run time, so every family
/// of that kernel runs.
fn boundary_group_variants_agree(backend: BackendKind) {
    use lbm::host::groups::BoundaryGroups;
    use lbm::host::solver::CollisionModel;
    let on = common::On::from(backend);
    for lattice in [LatticeKind::D2Q9, LatticeKind::D3Q19, LatticeKind::D3Q27] {
        for precision in [Precision::F64, Precision::F32, Precision::F16] {
            for streaming in Streaming::ALL {
                let trt = CollisionModel::Trt { magic: lbm::host::solver::DEFAULT_MAGIC };
                // And an operator the heavy kernel chooses at run time, a different one per precision.
                let chosen = match precision {
                    Precision::F64 => CollisionModel::Mrt,
                    Precision::F32 => CollisionModel::Regularized { smagorinsky: 0.15 },
                    _ if lattice != LatticeKind::D3Q19 => CollisionModel::Cumulant,
                    _ => CollisionModel::Smagorinsky { constant: 0.12 },
                };
                // BGK's and TRT's own kernels in f32, the chosen ones in every precision.
                let collisions =
                    if precision == Precision::F32 { vec![CollisionModel::Bgk, trt, chosen] } else { vec![chosen] };
                let mut cases: Vec<(&str, SolverConfig)> = geometries(lattice, precision, streaming)
                    .into_iter()
                    .filter(|(_, c)| !c.domain.open.is_empty())
                    .collect();
                // The tunnel with a velocity profile on its inlet (seven
                // different velocities) that ramps up over the first 4 of
                // the 7 steps.
                let mut profile = cases.iter().find(|(n, _)| *n == "tunnel").expect("a tunnel").1.clone();
                let inlet = &mut profile.domain.open[0];
                let u = inlet.state.velocity;
                inlet.velocities =
                    (0..inlet.cells.len()).map(|k| [u[0] * (1.0 + 0.01 * (k % 7) as f64), u[1], u[2]]).collect();
                inlet.state.ramp_steps = 4;
                cases.push(("tunnel with a ramped inlet profile", profile));
                for (name, config) in cases {
                    for &collision in &collisions {
                        for grid in GridLayout::ALL {
                            let base = SolverConfig { grid, collision, ..config.clone() };
                            let mut reference = on.build(base.clone());
                            let variants = BoundaryGroups::ALL
                                .into_iter()
                                .skip(1)
                                .filter(|g| grid != GridLayout::Dense || !g.needs_blocks());
                            let mut others: Vec<_> = variants
                                .map(|groups| (groups, on.build(SolverConfig { groups, ..base.clone() })))
                                .collect();
                            // A split dense box runs the kernel that updates open cells
                            // too over its boundary layers and its interior.
                            if grid == GridLayout::Dense {
                                let split = match backend {
                                    BackendKind::Cpu => lbm::ExecutorKind::CpuPartitions(3),
                                    BackendKind::Gpu(o) => lbm::ExecutorKind::GpuPartitions(o, 3),
                                };
                                let naive = SolverConfig { groups: BoundaryGroups::Naive, ..base.clone() };
                                others.push((BoundaryGroups::Naive, lbm::build_on(naive, split).unwrap()));
                            }
                            for steps in [1, 6] {
                                reference.step(steps).unwrap();
                                let expected = reference.save_state().unwrap();
                                for (groups, solver) in &mut others {
                                    solver.step(steps).unwrap();
                                    let what = format!(
                                        "{name} {lattice:?} {precision:?} {streaming:?} {:?} {} {}",
                                        collision.kind(),
                                        grid.name(),
                                        groups.name()
                                    );
                                    let got = solver.save_state().unwrap();
                                    assert_eq!(got.time, expected.time, "{what}");
                                    assert!(
                                        got.populations() == expected.populations(),
                                        "{what}: populations differ after {} steps",
                                        got.time
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
on_backends!(boundary_group_variants_agree);

/// A sparse grid split along z into partitions of whole block layers gives
/// the populations of the unsplit grid bit for bit: on the CPU partitions,
/// on GPU partitions with each halo exchange (strided copies of the
/// boundary blocks' crossing layers, or one copy per crossing population),
/// and through NCCL (the halo packed to a one-rank job's own partition).
fn split_sparse_matches_one_partition(backend: BackendKind) {
    use lbm::host::groups::BoundaryGroups;
    use lbm::host::multi_gpu::Exchange;
    use lbm::ExecutorKind;
    let on = common::On::from(backend);
    for lattice in [LatticeKind::D3Q19, LatticeKind::D3Q27] {
        for precision in [Precision::F64, Precision::F32, Precision::F16] {
            for streaming in Streaming::ALL {
                for (name, config) in geometries(lattice, precision, streaming) {
                    // The walls, as an object the flow pushes on.
                    let walls = vec![config.domain.flags.map(|f| f == CellKind::Wall.to_flag())];
                    for (block, parts) in
                        [(BlockShape::Cube4, 2), (BlockShape::Cube4, 4), (BlockShape::Cube8, 2), (BlockShape::Row32, 2)]
                    {
                        // Every variant and (on GPUs) every exchange in f32; the
                        // other precisions with the defaults.
                        let all = precision == Precision::F32;
                        let groups = if config.domain.open.is_empty() || !all {
                            vec![BoundaryGroups::Lists]
                        } else {
                            BoundaryGroups::ALL.to_vec()
                        };
                        let exchanges = if all { Exchange::ALL.to_vec() } else { vec![Exchange::Disaggregated] };
                        for groups in groups {
                            let c = SolverConfig { grid: GridLayout::Sparse { block }, groups, ..config.clone() };
                            let mut one = on.build(c.clone());
                            let mut split: Vec<(String, Box<dyn lbm::Solver>)> = match backend {
                                BackendKind::Cpu => {
                                    vec![(
                                        "cpu".into(),
                                        lbm::build_on(c.clone(), ExecutorKind::CpuPartitions(parts)).unwrap(),
                                    )]
                                }
                                BackendKind::Gpu(o) => {
                                    let mut v: Vec<(String, Box<dyn lbm::Solver>)> = (exchanges.iter())
                                        .map(|e| {
                                            let devices = vec![o; parts as usize];
                                            (e.name().into(), lbm::build_multi_gpu(c.clone(), &devices, *e).unwrap())
                                        })
                                        .collect();
                                    // A one-rank NCCL job: its halos, packed, to itself.
                                    if all && parts == 2 {
                                        v.push((
                                            "nccl".into(),
                                            lbm::build_on(c.clone(), ExecutorKind::Nccl(o)).unwrap(),
                                        ));
                                    }
                                    v
                                }
                            };
                            for steps in [1, 6] {
                                one.step(steps).unwrap();
                                let want = one.save_state().unwrap();
                                for (how, s) in &mut split {
                                    s.step(steps).unwrap();
                                    let got = s.save_state().unwrap();
                                    let what = format!(
                                        "{name} {lattice:?} {precision:?} {streaming:?} {block:?} {} {parts} parts {how}",
                                        groups.name()
                                    );
                                    assert!(
                                        got.populations() == want.populations(),
                                        "{what}: populations differ after {} steps",
                                        got.time
                                    );
                                    // Read-backs through the partitions' padded grids.
                                    let (fa, fb) = (one.fields().unwrap(), s.fields().unwrap());
                                    assert!(fa.rho == fb.rho && fa.u == fb.u, "{what}: fields differ");
                                    let (ma, mb) = (one.mass().unwrap(), s.mass().unwrap());
                                    assert!((ma - mb).abs() <= 1e-12 * ma, "{what}: mass {ma} against {mb}");
                                    let (a, b) = (one.forces(&walls).unwrap(), s.forces(&walls).unwrap());
                                    // Summed in another order: the sums of at most `links`
                                    // terms differ by `links` f64 epsilons of their size.
                                    let links = (walls[0].count(|w| w) * lattice.q()) as f64;
                                    let size = a[0].iter().map(|v| v.abs()).sum::<f64>().max(1.0);
                                    for k in 0..3 {
                                        assert!(
                                            (a[0][k] - b[0][k]).abs() <= links * f64::EPSILON * size,
                                            "{what}: force {a:?} against {b:?}"
                                        );
                                    }
                                }
                            }
                            // A split run resumes from the unsplit run's state and continues bit for bit.
                            let (how, s) = split.last_mut().unwrap();
                            s.restore_state(&one.save_state().unwrap()).unwrap();
                            one.step(3).unwrap();
                            s.step(3).unwrap();
                            assert!(
                                s.save_state().unwrap().populations() == one.save_state().unwrap().populations(),
                                "{name} {lattice:?} {precision:?} {streaming:?} {block:?} {parts} parts {how}: resumed run differs"
                            );
                        }
                    }
                }
            }
        }
    }
}
on_backends!(split_sparse_matches_one_partition);

/// A sparse grid's box may hold more than 2^32 cells on the GPU too: a tube
/// in a box of 4.4 billion cells steps as on the CPU, whose populations are
/// those of a tight box around the tube (`host::cpu` tests): the f64 sums
/// of the same populations in the same order agree bit for bit.
#[test]
fn a_box_of_more_than_2_32_cells_steps_on_the_gpu_as_on_the_cpu() {
    let Some(gpu) = common::gpu("a_box_of_more_than_2_32_cells_steps_on_the_gpu_as_on_the_cpu") else { return };
    let dims = Dims::new(4096, 4096, 264);
    assert!(dims.cells() > 1 << 32);
    let config = lbm::host::cases::tube_config(dims, [3001, 2003], 12).unwrap();
    let (mut cpu, mut gpu) =
        (common::On::from(BackendKind::Cpu).build(config.clone()), common::On::from(gpu).build(config));
    let start = cpu.mass().unwrap();
    for steps in [7, 8] {
        cpu.step(steps).unwrap();
        gpu.step(steps).unwrap();
        let (a, b) = (cpu.mass().unwrap(), gpu.mass().unwrap());
        assert_eq!(a.to_bits(), b.to_bits(), "mass {a} on the CPU, {b} on the GPU after {} steps", cpu.time());
        // f32 storage rounds each population once a step: at worst all one way.
        let bound = cpu.time() as f64 * f32::EPSILON as f64 * start;
        assert!((a - start).abs() <= bound, "a closed tube keeps its mass: {start} -> {a}");
    }
}
