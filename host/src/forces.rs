//! Forces on solid objects by momentum exchange (Ladd 1994; Mei et al. 2002).
//!
//! With halfway bounce-back off a resting wall, a population leaving fluid
//! cell `x` along `c_i` into the object comes back as `f_ibar(x, t)`, equal
//! to what left, so the link transfers momentum `2 f_ibar(x, t) c_i` to the
//! object in one step. `f_ibar(x, t)` is exactly what
//! [`kernels_gpu::stream::load`] yields for the bounced direction, for
//! either streaming scheme and parity, so this works on any population
//! buffer a solver hands back.
//!
//! With interpolated bounce-back on curved walls, what comes back differs
//! from what left: the link transfers `(f_ibar(x, t) + f_i(x, t + 1)) c_i`,
//! the second from the same interpolation the kernels apply, whose inputs
//! are all in the buffer between steps.

use crate::cell_blocks::CellBlocks;
use crate::part_grid::{with_grid, PartGrid};
use crate::partition::Slab;
use crate::solver::SolverConfig;
use kernels_gpu::curved::{carried_value, interpolated};
use kernels_gpu::flags::is_flow;
use kernels_gpu::lattice::opposite;
use kernels_gpu::stream::{load, neighbours};
use kernels_gpu::{Grid, Lattice, Real, Storage};
use std::collections::HashMap;
use std::ops::Range;

/// Force (lattice units, per time step) on each object through the links
/// of the fluid cells `cells` (storage numbers on `grid`, whose flags in
/// storage order are `flags`) of the partition `slab`: `objects[k]` says
/// which cells of the whole box belong to object `k`, by blocks. A link's
/// target is found from the cell's position (wrapping as the box does), its
/// layer taken to the whole box's, so a wall in a block a sparse grid does
/// not store still counts. Partitions each sum over their own cells.
#[allow(clippy::too_many_arguments)]
pub fn momentum_exchange<L: Lattice<Q>, const Q: usize, S: Storage>(
    config: &SolverConfig,
    grid: &PartGrid,
    slab: &Slab,
    flags: &[u8],
    f: &[S],
    t: u64,
    objects: &[CellBlocks<bool>],
    cells: &[Range<usize>],
) -> Vec<[f64; 3]> {
    let p = config.step_params::<S::Real>(t);
    let d = config.domain.dims;
    assert_eq!(f.len(), Q * flags.len(), "population buffer does not match the grid");
    let wrap = |p: u32, c: i32, len: u32| (p as i64 + c as i64).rem_euclid(len as i64) as u32;
    // Curved-wall cells by storage number: their links reflect as the
    // interpolation does (`kernels_gpu::curved`), and exchange that momentum.
    let walls = &config.domain.curved;
    let curved: HashMap<u32, usize> = grid.stored_cells(&walls.cells).into_iter().zip(0..).collect();
    let mut forces = vec![[0.0; 3]; objects.len()];
    let Some(nz) = objects.first().map(|m| m.dims().nz) else { return forces };
    with_grid!(grid, |g| {
        for n in cells.iter().flat_map(|r| r.start as u32..r.end as u32) {
            if !is_flow(flags[n as usize]) {
                continue;
            }
            let cell = g.cell_of(n);
            let [x, y, z] = grid.domain_position(g.position(cell));
            let mut arriving = None;
            for i in 1..Q {
                let [cx, cy, cz] = L::C[i];
                let target = [wrap(x, cx, d.nx), wrap(y, cy, d.ny), slab.global_z(wrap(z, cz, d.nz), nz)];
                // Every mask covers the whole box: one lookup serves them all.
                let slot = objects[0].slot(target);
                for (k, mask) in objects.iter().enumerate() {
                    if !mask.get_at(slot) {
                        continue;
                    }
                    // SAFETY: `f` and `flags` are sized for the grid (asserted above).
                    let fi = *arriving.get_or_insert_with(|| unsafe {
                        let nb = neighbours::<L, Q, _>(&g, cell);
                        load::<L, Q, S, true, _>(config.streaming, &p, f.as_ptr(), flags.as_ptr(), &nb)
                    });
                    // In storage units (`Storage::SCALE`), as the kernels keep them.
                    let unscaled = |v: S::Real| v.to_f64() / S::SCALE;
                    // What leaves along c_i and what comes back (halfway: the same).
                    let back = opposite(i);
                    let leaving = fi[back];
                    let returning = match curved.get(&n).map(|&e| walls.fractions(e)[back]) {
                        Some(q) if q >= 0.0 => {
                            // SAFETY: as above; the slot is one of this cell's.
                            let carried = unsafe {
                                let nb = neighbours::<L, Q, _>(&g, cell);
                                carried_value::<L, Q, S>(config.streaming, p.step, f.as_ptr(), &nb, back)
                            };
                            interpolated(S::Real::from_f64(q), leaving, fi[i], carried)
                        }
                        _ => leaving,
                    };
                    // Unshifted; `a + a` is `2 a` exactly, so halfway links sum as before.
                    let exchanged = (L::W[back] + unscaled(leaving)) + (L::W[back] + unscaled(returning));
                    for (force, c) in forces[k].iter_mut().zip(L::C[i]) {
                        *force += exchanged * c as f64;
                    }
                }
            }
        }
    });
    forces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Domain, FaceBoundary};
    use crate::solver::{Initial, LatticeKind, Precision, Solver};
    use crate::validation::tau_for_viscosity;
    use kernels_gpu::flags::CellKind;
    use kernels_gpu::{Dims, Streaming, D2Q9};

    /// Body-force-driven channel: at steady state the walls carry the whole
    /// body force, F_walls = -F * fluid cells (momentum balance).
    #[test]
    fn channel_walls_carry_the_body_force() {
        for streaming in [Streaming::EsotericPull, Streaming::TwoLattice] {
            let (w, h) = (4u32, 18u32);
            let dims = Dims::new(w, h, 1);
            let mut faces = [FaceBoundary::Periodic; 6];
            faces[2] = FaceBoundary::Wall;
            faces[3] = FaceBoundary::Wall;
            let domain = Domain::with_faces(dims, faces).unwrap();
            let walls = domain.flags.map(|f| f == CellKind::Wall.to_flag());
            let g = 1e-6;
            let config = SolverConfig {
                collision: crate::solver::CollisionModel::Bgk,
                lattice: LatticeKind::D2Q9,
                precision: Precision::F64,
                streaming,
                grid: crate::solver::GridLayout::Dense,
                groups: crate::groups::BoundaryGroups::Lists,
                tau: tau_for_viscosity(0.1),
                force: [g, 0.0, 0.0],
                domain,
                initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
            };
            let mut s = crate::cpu::CpuSolver::<D2Q9, 9, f64>::new(config.clone()).unwrap();
            s.step(20_000).unwrap();
            let state = s.save_state().unwrap();
            let f: Vec<f64> =
                state.populations().chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
            let (grid, flags) = (PartGrid::Dense(dims), config.kernel_flags());
            let slab = Slab::whole(dims.nz);
            let cells = grid.region_cells(&slab, crate::plan::Region::Whole);
            let force =
                momentum_exchange::<D2Q9, 9, f64>(&config, &grid, &slab, &flags, &f, s.time(), &[walls], &cells);
            let total = g * (w * (h - 2)) as f64;
            assert!(
                (force[0][0] - total).abs() < 1e-6 * total,
                "{streaming:?}: wall force {:?} vs body force {total}",
                force[0]
            );
            assert!(force[0][1].abs() < 1e-9 * total, "{streaming:?}: no net normal force, got {:?}", force[0]);
        }
    }
}
