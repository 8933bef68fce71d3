//! Sponge bands in front of outlets ([`kernels_gpu::sponge`]): which cells,
//! how strongly each damps, and the tables the update reads.

use crate::domain::{Domain, Face, OpenKind};
use crate::error::{Error, Result};
use crate::part_grid::{ListRegions, PartGrid};
use crate::partition::Slab;
use kernels_gpu::flags::{is_flow, is_open};

/// A band of cells in front of an outlet that damps pressure waves.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpongeBand {
    /// The density the band relaxes towards: its outlet's.
    pub density: f64,
    /// The velocity the band relaxes towards: the mean outflow.
    pub velocity: [f64; 3],
    /// The cells (dense numbers), ascending.
    pub cells: Vec<usize>,
    /// Each cell's strength `sigma`.
    pub strength: Vec<f64>,
}

/// The strength `sigma` at `d` cells in front of the outlet layer of a band
/// `thickness` cells thick whose strongest cell damps by `strength`: a
/// quadratic rise, `strength ((thickness + 1 - d) / thickness)^2`, from near
/// zero at the band's inner edge to `strength` next to the outlet.
pub fn strength_at(d: u32, thickness: u32, strength: f64) -> f64 {
    let x = (thickness + 1 - d) as f64 / thickness as f64;
    strength * x * x
}

/// Adds a band `thickness` cells thick in front of the outlet on `face` of
/// `domain`, damping by `strength` next to it towards the outlet's density
/// and `velocity`: every flow cell within `thickness` layers of the outlet
/// layer that is not itself open.
pub fn add(domain: &mut Domain, face: Face, thickness: u32, strength: f64, velocity: [f64; 3]) -> Result<()> {
    let normal = face.inward_normal();
    let Some(outlet) =
        domain.open.iter().find(|g| g.state.normal == normal && g.state.kind == OpenKind::PressureOutlet)
    else {
        return Err(Error::Setup(format!("a sponge needs a pressure outlet on {}", face.name())));
    };
    let d = domain.dims;
    let size = [d.nx, d.ny, d.nz];
    let axis = face.axis();
    if thickness == 0 || thickness + 2 > size[axis] {
        return Err(Error::Setup(format!(
            "sponge_cells = {thickness} on {}: give 1 to {} layers (the box has {} along the outlet's normal)",
            face.name(),
            size[axis].saturating_sub(2),
            size[axis]
        )));
    }
    if !(strength > 0.0 && strength <= 1.0) {
        return Err(Error::Setup(format!(
            "sponge_strength = {strength} on {}: give a value in (0, 1] (the fraction of the density excess removed per step next to the outlet)",
            face.name()
        )));
    }
    let density = outlet.state.density;
    let mut band = SpongeBand { density, velocity, ..Default::default() };
    // The band's box: `thickness` layers in front of the outlet's.
    let (mut lo, mut hi) = ([0; 3], size);
    (lo[axis], hi[axis]) =
        if face.is_max() { (size[axis] - 1 - thickness, size[axis] - 1) } else { (1, thickness + 1) };
    for z in lo[2]..hi[2] {
        for y in lo[1]..hi[1] {
            for x in lo[0]..hi[0] {
                let p = [x, y, z][axis];
                let depth = if face.is_max() { size[axis] - 1 - p } else { p };
                let flag = domain.flags[[x, y, z]];
                if is_flow(flag) && !is_open(flag) {
                    band.cells.push(d.index(x, y, z));
                    band.strength.push(strength_at(depth, thickness, strength));
                }
            }
        }
    }
    domain.sponges.push(band);
    Ok(())
}

/// A band's tables in the kernels' precision, cells by storage number, the
/// boundary region's first ([`PartGrid::region_order`]).
pub struct SpongeTables<T> {
    /// Storage number of each cell.
    pub cells: Vec<u32>,
    /// Each cell's strength.
    pub strength: Vec<T>,
    /// The density the band relaxes towards.
    pub density: T,
    /// The velocity the band relaxes towards.
    pub velocity: [T; 3],
    /// Which cells each region of the partition damps.
    pub regions: ListRegions,
}

impl<T: kernels_gpu::Real> SpongeTables<T> {
    /// The tables of each of `bands` on partition `slab`'s `grid`.
    pub fn build(bands: &[SpongeBand], grid: &PartGrid, slab: &Slab) -> Vec<Self> {
        (bands.iter())
            .map(|b| {
                let stored = grid.stored_cells(&b.cells);
                let (order, regions) = grid.region_order(slab, &stored);
                Self {
                    cells: order.iter().map(|&k| stored[k]).collect(),
                    strength: order.iter().map(|&k| T::from_f64(b.strength[k])).collect(),
                    density: T::from_f64(b.density),
                    velocity: b.velocity.map(T::from_f64),
                    regions,
                }
            })
            .collect()
    }

    /// The kernel argument over the cells `entries` of these tables in host
    /// memory (valid while they live).
    pub fn host_cells(&self, entries: std::ops::Range<u32>) -> kernels_gpu::sponge::SpongeCells<T> {
        assert!(entries.end as usize <= self.cells.len(), "entries of the list");
        let first = entries.start as usize;
        // SAFETY: one strength per cell; distinct flow cells that are not open (`add`).
        unsafe {
            kernels_gpu::sponge::SpongeCells::new(
                self.cells.as_ptr().add(first),
                self.strength.as_ptr().add(first),
                self.density,
                self.velocity,
                entries.len() as u32,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{FaceBoundary, OpenScheme};
    use kernels_gpu::Dims;

    #[test]
    fn bands_cover_the_flow_in_front_of_their_outlet_and_rise_towards_it() {
        let faces = [
            FaceBoundary::VelocityInlet([0.05, 0.0, 0.0], OpenScheme::Equilibrium),
            FaceBoundary::PressureOutlet(1.002, OpenScheme::Regularized),
            FaceBoundary::Wall,
            FaceBoundary::Wall,
            FaceBoundary::Periodic,
            FaceBoundary::Periodic,
        ];
        let dims = Dims::new(20, 6, 1);
        let mut domain = Domain::with_faces(dims, faces).unwrap();
        add(&mut domain, Face::XMax, 4, 0.5, [0.05, 0.0, 0.0]).unwrap();
        let band = &domain.sponges[0];
        assert_eq!((band.density, band.velocity), (1.002, [0.05, 0.0, 0.0]));
        // Layers x = 15..=18 in front of the outlet at x = 19, rows 1..=4 between the walls.
        assert_eq!(band.cells.len(), 4 * 4);
        for (&n, &s) in band.cells.iter().zip(&band.strength) {
            let (x, y, _) = dims.coords(n as u32);
            assert!((15..=18).contains(&x) && (1..=4).contains(&y));
            assert_eq!(s, strength_at(19 - x, 4, 0.5));
        }
        assert_eq!(strength_at(1, 4, 0.5), 0.5);
        assert_eq!(strength_at(4, 4, 0.5), 0.5 / 16.0);
        let e = add(&mut domain, Face::XMin, 4, 0.5, [0.0; 3]).unwrap_err().to_string();
        assert!(e.contains("needs a pressure outlet on x_min"), "{e}");
        assert!(add(&mut domain, Face::XMax, 19, 0.5, [0.0; 3]).is_err());
        assert!(add(&mut domain, Face::XMax, 4, 1.5, [0.0; 3]).is_err());
    }
}
