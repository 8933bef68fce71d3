//! Whether the fluid left by the geometry can carry the flow the case
//! imposes: connected regions of fluid, found along the lattice's links.
//!
//! Two flow cells (fluid, inlet or outlet) are connected when a population
//! can stream from one to the other in one step: along the lattice's
//! velocities (D2Q9: 8 neighbours in the plane, D3Q19: 18, D3Q27: 26),
//! wrapping around periodic axes. A diagonal gap between two solid cells
//! therefore connects, as it does in the solver.
//!
//! The rules (see `docs/case-reference.md`):
//! * no fluid cell at all: an error;
//! * the fluid behind a velocity inlet reaches no other open face (an
//!   outlet or another inlet): an error, since the imposed inflow has
//!   nowhere to go and the density rises until the run diverges;
//! * with inlets or outlets, fluid sealed off from all of them (closed
//!   pores): a warning with the number of cells; it stays at rest;
//! * with a body force along a periodic axis and no open faces: fluid with
//!   no path around that axis carries no net flow: a warning with the
//!   number of cells (all of it: the force drives no flow at all).

use crate::cell_blocks::CellBlocks;
use crate::domain::{Domain, OpenKind};
use crate::error::{Error, Result};
use crate::solver::LatticeKind;
use kernels_gpu::flags::{is_flow, is_fluid};
use kernels_gpu::{Lattice, D2Q9, D3Q19, D3Q27};

/// The lattice's non-zero velocities.
fn links(lattice: LatticeKind) -> Vec<[i32; 3]> {
    let all: Vec<[i32; 3]> = match lattice {
        LatticeKind::D2Q9 => D2Q9::C.to_vec(),
        LatticeKind::D3Q19 => D3Q19::C.to_vec(),
        LatticeKind::D3Q27 => D3Q27::C.to_vec(),
    };
    all.into_iter().filter(|c| *c != [0, 0, 0]).collect()
}

/// Connected regions of flow cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Regions {
    /// Region of each cell ([`SOLID`] for solid cells), by blocks: solid
    /// blocks cost one value.
    pub label: CellBlocks<u32>,
    /// Cells in each region.
    pub sizes: Vec<usize>,
    /// Per region, whether it reaches around each periodic axis (a path
    /// that leaves through one face and comes back through the other).
    pub spans: Vec<[bool; 3]>,
}

/// Label of a solid cell.
pub const SOLID: u32 = u32::MAX;

/// Finds the connected regions of flow cells of `domain` along the links of
/// `lattice`, wrapping around the `periodic` axes. Memory goes with the
/// blocks that hold flow, not with the box.
pub fn regions(domain: &Domain, lattice: LatticeKind, periodic: [bool; 3]) -> Regions {
    let d = domain.dims;
    let n = [d.nx as i64, d.ny as i64, d.nz as i64];
    let links = links(lattice);
    let mut label = CellBlocks::new(d, SOLID);
    // How many times the path from the region's first cell wrapped around
    // each axis to reach the cell: two paths to one cell that differ
    // there make a loop around the axis.
    let mut wraps = CellBlocks::new(d, [0i8; 3]);
    let (mut sizes, mut spans) = (Vec::new(), Vec::new());
    let mut queue = Vec::new();
    // Seeds in dense order, a block's row at a time; solid blocks skipped.
    let edge = domain.flags.edge()[0];
    let rows =
        (0..d.nz).flat_map(|z| (0..d.ny).flat_map(move |y| (0..d.nx).step_by(edge as usize).map(move |x| [x, y, z])));
    for [x0, y, z] in rows {
        if domain.flags.uniform_at([x0, y, z]).is_some_and(|f| !is_flow(f)) {
            continue;
        }
        for x in x0..(x0 + edge).min(d.nx) {
            let seed = [x, y, z];
            let at = label.slot(seed);
            if label.get_at(at) != SOLID || !is_flow(domain.flags.get_at(at)) {
                continue;
            }
            let id = sizes.len() as u32;
            let (mut size, mut span) = (0usize, [false; 3]);
            label.set_at(at, id);
            queue.push((seed, [0i8; 3]));
            while let Some((cell, w)) = queue.pop() {
                size += 1;
                let p = cell.map(i64::from);
                for c in &links {
                    let mut q = [0u32; 3];
                    let mut wq = w;
                    let mut inside = true;
                    for a in 0..3 {
                        let v = p[a] + c[a] as i64;
                        q[a] = if (0..n[a]).contains(&v) {
                            v as u32
                        } else if periodic[a] {
                            // A one-cell axis (2D) has no neighbour across it.
                            inside &= n[a] > 1;
                            wq[a] = wq[a].saturating_add(if v < 0 { -1 } else { 1 });
                            v.rem_euclid(n[a]) as u32
                        } else {
                            inside = false;
                            0
                        };
                    }
                    if !inside {
                        continue;
                    }
                    // The three boxes are the same size: one lookup for all.
                    let at = label.slot(q);
                    if !is_flow(domain.flags.get_at(at)) {
                        continue;
                    }
                    if label.get_at(at) == SOLID {
                        label.set_at(at, id);
                        wraps.set_at(at, wq);
                        queue.push((q, wq));
                    } else {
                        let wm = wraps.get_at(at);
                        for a in 0..3 {
                            // A saturated count is taken as a loop (a path that
                            // wraps 127 times goes around the axis).
                            span[a] |= wm[a] != wq[a] || wq[a].unsigned_abs() == 127;
                        }
                    }
                }
            }
            sizes.push(size);
            spans.push(span);
        }
    }
    Regions { label, sizes, spans }
}

/// The face an open group's inward normal points from.
fn face_name(normal: [i32; 3]) -> &'static str {
    match normal {
        [1, 0, 0] => "x_min",
        [-1, 0, 0] => "x_max",
        [0, 1, 0] => "y_min",
        [0, -1, 0] => "y_max",
        [0, 0, 1] => "z_min",
        _ => "z_max",
    }
}

/// Checks that the fluid can carry the flow the case imposes (see the
/// module documentation for the rules); returns the warnings.
///
/// # Errors
/// No fluid cell, or a velocity inlet whose fluid reaches no other open face.
pub fn check(domain: &Domain, lattice: LatticeKind, periodic: [bool; 3], force: [f64; 3]) -> Result<Vec<String>> {
    let fluid = domain.flags.count(is_fluid);
    if fluid == 0 {
        let solid = domain.flags.count(|f| !is_flow(f));
        return Err(Error::Setup(format!(
            "the geometry leaves no fluid cell ({solid} of {} cells are solid): shrink or move the geometry; \
             for a voxel image check `solid_values` (an image whose pores are the non-zero voxels needs \
             solid_values = [0])",
            domain.dims.cells()
        )));
    }
    let r = regions(domain, lattice, periodic);
    let mut warnings = Vec::new();
    // The open groups each region touches.
    let mut touches: Vec<Vec<usize>> = vec![Vec::new(); r.sizes.len()];
    for (g, group) in domain.open.iter().enumerate() {
        for &c in &group.cells {
            let t = &mut touches[r.label[c] as usize];
            if !t.contains(&g) {
                t.push(g);
            }
        }
    }
    for (g, group) in domain.open.iter().enumerate() {
        let s = group.state;
        let inflow: f64 = (0..3).map(|a| s.velocity[a] * s.normal[a] as f64).sum();
        if s.kind != OpenKind::VelocityInlet || inflow == 0.0 {
            continue;
        }
        let blocked: Vec<usize> = (0..r.sizes.len()).filter(|&k| touches[k] == [g]).collect();
        if !blocked.is_empty() {
            let cells: usize = blocked.iter().map(|&k| r.sizes[k]).sum();
            let face = face_name(s.normal);
            let inlet_cells = group.cells.iter().filter(|&&c| blocked.contains(&(r.label[c] as usize))).count();
            return Err(Error::Setup(format!(
                "the fluid behind the velocity inlet at {face} ({inlet_cells} of its {} cells, {cells} fluid cells in all) \
                 reaches no outlet: the geometry closes the flow path, so the imposed inflow has nowhere to go and the \
                 density would rise until the run diverges; open a path through the geometry (for a voxel image, check \
                 `solid_values` and `offset`), or turn the face into a wall",
                group.cells.len()
            )));
        }
    }
    let pocket = |k: usize| -> bool {
        if !domain.open.is_empty() {
            touches[k].is_empty()
        } else {
            (0..3).any(|a| periodic[a] && force[a] != 0.0 && !r.spans[k][a])
        }
    };
    let driven = !domain.open.is_empty() || (0..3).any(|a| periodic[a] && force[a] != 0.0);
    if driven {
        let sealed: Vec<usize> = (0..r.sizes.len()).filter(|&k| pocket(k)).collect();
        let cells: usize = sealed.iter().map(|&k| r.sizes[k]).sum();
        let flow_cells: usize = r.sizes.iter().sum();
        if cells == flow_cells {
            let axes: Vec<&str> =
                (0..3).filter(|&a| periodic[a] && force[a] != 0.0).map(|a| ["x", "y", "z"][a]).collect();
            warnings.push(format!(
                "the body force drives no net flow: no fluid path crosses the periodic {} faces (the geometry closes \
                 them off), so the fluid settles at rest and a permeability is zero",
                axes.join(" and ")
            ));
        } else if cells > 0 {
            let why = if domain.open.is_empty() {
                "have no path around the periodic axis along the body force"
            } else {
                "are sealed off from every inlet and outlet"
            };
            let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
            warnings.push(format!(
                "{} ({:.2}% of the fluid) in {} (the largest {}) {why}: they stay at rest and take no part in the flow",
                plural(cells, "fluid cell"),
                100.0 * cells as f64 / flow_cells as f64,
                plural(sealed.len(), "closed pocket"),
                plural(sealed.iter().map(|&k| r.sizes[k]).max().unwrap_or(0), "cell")
            ));
        }
    }
    Ok(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::FaceBoundary;
    use kernels_gpu::{CellKind, Dims};

    fn channel(dims: Dims) -> Domain {
        let mut faces = [FaceBoundary::Periodic; 6];
        faces[0] = FaceBoundary::VelocityInlet([0.05, 0.0, 0.0], crate::domain::OpenScheme::Equilibrium);
        faces[1] = FaceBoundary::PressureOutlet(1.0, crate::domain::OpenScheme::Equilibrium);
        faces[2] = FaceBoundary::Wall;
        faces[3] = FaceBoundary::Wall;
        Domain::with_faces(dims, faces).unwrap()
    }

    #[test]
    fn a_plate_across_the_channel_blocks_the_inlet_and_a_hole_opens_it() {
        let mut d = channel(Dims::new(20, 10, 1));
        for y in 0..10 {
            d.set(8, y, 0, CellKind::Wall);
        }
        let e = check(&d, LatticeKind::D2Q9, [false, false, true], [0.0; 3]).unwrap_err().to_string();
        assert!(e.contains("velocity inlet at x_min") && e.contains("reaches no outlet"), "{e}");
        assert!(e.contains("8 of its 8 cells, 64 fluid cells"), "{e}");
        // A diagonal gap connects along D2Q9's diagonal links: walls at
        // (8, y) except y = 4 and (9, 4) wall, (9, 5) open.
        d.set(8, 4, 0, CellKind::Fluid);
        assert!(check(&d, LatticeKind::D2Q9, [false, false, true], [0.0; 3]).unwrap().is_empty());
        for y in 0..10 {
            d.set(9, y, 0, CellKind::Wall);
        }
        d.set(9, 5, 0, CellKind::Fluid);
        assert!(check(&d, LatticeKind::D2Q9, [false, false, true], [0.0; 3]).unwrap().is_empty());
    }

    #[test]
    fn sealed_pockets_are_warned_and_no_fluid_is_an_error() {
        let mut d = channel(Dims::new(20, 12, 1));
        // A closed ring of walls around (10, 6): one sealed cell.
        for (x, y) in [(9, 5), (10, 5), (11, 5), (9, 6), (11, 6), (9, 7), (10, 7), (11, 7)] {
            d.set(x, y, 0, CellKind::Wall);
        }
        let w = check(&d, LatticeKind::D2Q9, [false, false, true], [0.0; 3]).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("1 fluid cell (") && w[0].contains("in 1 closed pocket (the largest 1 cell)"),
            "{w:?}"
        );
        let mut solid = d.clone();
        let fluid: Vec<bool> = solid.flags.to_dense().into_iter().map(is_fluid).collect();
        solid.set_where(&CellBlocks::from_dense(solid.dims, &fluid), CellKind::Wall);
        let e = check(&solid, LatticeKind::D2Q9, [false, false, true], [0.0; 3]).unwrap_err().to_string();
        assert!(e.contains("no fluid cell") && e.contains("solid_values"), "{e}");
    }

    /// The regions of a box of more than 2^32 cells cost memory for the
    /// blocks the flow touches only.
    #[test]
    fn a_tube_in_a_box_of_more_than_2_32_cells() {
        let dims = Dims::new(4096, 4096, 264);
        let mut d = Domain::new(dims).unwrap();
        d.flags.fill([0; 3], [dims.nx, dims.ny, dims.nz], CellKind::Wall.to_flag());
        d.flags.fill([3001, 2003, 0], [3013, 2015, dims.nz], CellKind::Fluid.to_flag());
        let r = regions(&d, LatticeKind::D3Q19, [true; 3]);
        assert_eq!((r.sizes, r.spans), (vec![12 * 12 * 264], vec![[false, false, true]]));
        assert!(r.label.bytes() < 64 << 20, "{} bytes of labels", r.label.bytes());
        assert_eq!(r.label[[3005, 2010, 100]], 0);
        assert!(check(&d, LatticeKind::D3Q19, [true; 3], [0.0, 0.0, 1e-5]).unwrap().is_empty());
    }

    #[test]
    fn periodic_paths_are_found_around_the_axis() {
        // Fully periodic 3D box with a solid slab across x: nothing crosses x.
        let mut d = Domain::new(Dims::new(8, 6, 6)).unwrap();
        d.flags.fill([3, 0, 0], [4, 6, 6], CellKind::Wall.to_flag());
        let r = regions(&d, LatticeKind::D3Q19, [true; 3]);
        assert_eq!(r.sizes, vec![7 * 36]);
        assert_eq!(r.spans, vec![[false, true, true]]);
        let w = check(&d, LatticeKind::D3Q19, [true; 3], [1e-5, 0.0, 0.0]).unwrap();
        assert!(w[0].contains("drives no net flow") && w[0].contains("periodic x faces"), "{w:?}");
        assert!(check(&d, LatticeKind::D3Q19, [true; 3], [0.0, 1e-5, 0.0]).unwrap().is_empty());
    }
}
