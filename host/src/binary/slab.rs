//! A binary-fluid box split along z into slabs, one per device: each slab
//! holds its own planes and, either side, a plane received from its
//! neighbour (the box is periodic, so the first and last slabs are
//! neighbours too).
//!
//! Every pass of a step reads its fields one site away, so each pass is
//! followed by the exchange of what the next one reads across a slab's
//! faces, a plane each way:
//!
//! | after the pass of | the planes sent                           |
//! |-------------------|-------------------------------------------|
//! | `μ`               | `μ`                                       |
//! | the fluid         | the `Q` populations, the velocity along z |
//! | `φ`               | `φ`                                       |
//!
//! No updated site wraps along z (the received planes stand in for the
//! neighbours), and each site's arithmetic is the one of the whole box:
//! the slabs together are the whole box, bit for bit.

use super::BinaryConfig;
use crate::error::{Error, Result};
use kernels_gpu::binary::BinaryParams;
use kernels_gpu::Real;
use std::ops::Range;

/// Thinnest slab, in planes: its first and last planes are updated
/// before the rest so that their exchange overlaps the rest.
pub const MIN_SLAB: u32 = 2;

/// The box a solver steps: the whole periodic box, or a slab of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slab {
    /// The planes of the whole box it updates.
    pub own: Range<u32>,
    /// Whether it is one of several (and holds a received plane each side).
    pub split: bool,
}

/// The three passes of a step, each followed by its exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    /// `μ` from `φ`.
    ChemicalPotential,
    /// The fluid: pull, collide with the force.
    Fluid,
    /// `φ` by Cahn–Hilliard.
    OrderParameter,
}

/// A slab's stored fields, by what they hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Field {
    Mu,
    Phi,
    Populations,
    Velocity,
}

impl Pass {
    /// A step's passes, in order.
    pub(crate) const ALL: [Pass; 3] = [Pass::ChemicalPotential, Pass::Fluid, Pass::OrderParameter];

    /// What the exchange after this pass moves on a lattice of `q`
    /// velocities: rows (of a stored plane each) of the slab's fields. The
    /// velocity along z is the third of its rows; the next pass reads no
    /// other component across a face.
    pub(crate) fn sent(self, q: usize) -> impl Iterator<Item = (Field, Range<usize>)> {
        let rows = match self {
            Pass::ChemicalPotential => [Some((Field::Mu, 0..1)), None],
            Pass::Fluid => [Some((Field::Populations, 0..q)), Some((Field::Velocity, 2..3))],
            Pass::OrderParameter => [Some((Field::Phi, 0..1)), None],
        };
        rows.into_iter().flatten()
    }
}

impl Slab {
    /// The whole box of `nz` planes.
    pub fn whole(nz: u32) -> Self {
        Self { own: 0..nz, split: false }
    }

    /// `parts` slabs of `config`'s box along z, as even as possible.
    pub fn split(config: &BinaryConfig, parts: usize) -> Result<Vec<Self>> {
        let nz = config.size[2];
        if parts < 2 {
            return Ok(vec![Self::whole(nz)]);
        }
        if config.lattice.dimension() != 3 {
            return Err(Error::Setup(format!(
                "a {} box cannot be split along z: run it on one device, or use d3q19 or d3q27",
                config.lattice.name()
            )));
        }
        if nz < MIN_SLAB * parts as u32 {
            return Err(Error::Setup(format!(
                "{nz} planes along z cannot make {parts} slabs of at least {MIN_SLAB}: use at most {} devices",
                nz / MIN_SLAB
            )));
        }
        Ok(crate::partition::split(nz, parts as u32)?.into_iter().map(|own| Self { own, split: true }).collect())
    }

    /// Planes it updates.
    pub fn len(&self) -> u32 {
        self.own.end - self.own.start
    }

    /// Whether it updates no plane.
    pub fn is_empty(&self) -> bool {
        self.own.is_empty()
    }

    /// Sites along x, y, z of its storage.
    pub fn size(&self, config: &BinaryConfig) -> [u32; 3] {
        let [nx, ny, _] = config.size;
        [nx, ny, self.len() + 2 * u32::from(self.split)]
    }

    /// The stored planes it updates, `[first, end)`.
    pub fn planes(&self) -> [u32; 2] {
        let first = u32::from(self.split);
        [first, first + self.len()]
    }

    /// The plane of the whole box that stored plane `z` holds.
    pub fn global_z(&self, z: u32, nz: u32) -> u32 {
        if self.split {
            (self.own.start + nz + z - 1) % nz
        } else {
            z
        }
    }

    /// The kernels' parameters of this slab of `config`, in `T`.
    pub fn params<T: Real>(&self, config: &BinaryConfig) -> BinaryParams<T> {
        BinaryParams { size: self.size(config), planes: self.planes(), ..config.params() }
    }

    /// Stored sites.
    pub fn sites(&self, config: &BinaryConfig) -> usize {
        self.size(config).iter().map(|&n| n as usize).product()
    }

    /// `phi(x, y, z)` at every stored site, `z` the whole box's.
    pub fn initial_phi(&self, config: &BinaryConfig, phi: &(impl Fn(u32, u32, u32) -> f64 + Sync)) -> Vec<f64> {
        use rayon::prelude::*;
        let [nx, ny, _] = config.size;
        let nz = config.size[2];
        (0..self.sites(config))
            .into_par_iter()
            .map(|k| {
                let k = k as u32;
                phi(k % nx, (k / nx) % ny, self.global_z(k / (nx * ny), nz))
            })
            .collect()
    }

    /// Where, in a field of `rows` planes of `sites` values each (the
    /// populations' `i N + n`), the values of stored plane `z` lie: a row
    /// of `plane` values at each of the returned starts.
    pub fn rows(&self, config: &BinaryConfig, z: u32, rows: Range<usize>) -> impl Iterator<Item = usize> {
        let (plane, sites) = ((config.size[0] * config.size[1]) as usize, self.sites(config));
        rows.map(move |r| r * sites + z as usize * plane)
    }

    /// The stored planes this slab sends: its first own plane down, its
    /// last up; and the ones it receives into: below, then above.
    pub fn faces(&self) -> ([u32; 2], [u32; 2]) {
        let [first, end] = self.planes();
        ([first, end - 1], [first - 1, end])
    }
}

/// The whole box's values of a field of `rows` planes from each slab's
/// own planes, in slab order (`fields[k]` the stored field of `slabs[k]`).
pub(crate) fn gather(config: &BinaryConfig, slabs: &[Slab], fields: &[Vec<f64>], rows: usize) -> Vec<f64> {
    let plane = (config.size[0] * config.size[1]) as usize;
    let mut out = Vec::with_capacity(rows * config.sites());
    for r in 0..rows {
        for (slab, field) in slabs.iter().zip(fields) {
            let [first, end] = slab.planes();
            let start = r * slab.sites(config);
            out.extend_from_slice(&field[start + first as usize * plane..start + end as usize * plane]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::validation::config;
    use crate::solver::LatticeKind;
    use kernels_gpu::binary::FreeEnergy;

    #[test]
    fn slabs_cover_the_box_and_name_their_neighbours_planes() {
        let c = config([4, 3, 9], LatticeKind::D3Q19, FreeEnergy::new(-0.1, 0.1, 0.1), 0.1);
        let slabs = Slab::split(&c, 2).unwrap();
        assert_eq!(slabs.iter().map(|s| s.own.clone()).collect::<Vec<_>>(), vec![0..5, 5..9]);
        let s = &slabs[0];
        assert_eq!((s.size(&c), s.planes()), ([4, 3, 7], [1, 6]));
        // The received planes hold the box's last plane and the next slab's first.
        assert_eq!((s.global_z(0, 9), s.global_z(1, 9), s.global_z(6, 9)), (8, 0, 5));
        assert_eq!(slabs[1].global_z(5, 9), 0);
        assert_eq!(s.faces(), ([1, 5], [0, 6]));
        assert_eq!(s.rows(&c, 6, 1..3).collect::<Vec<_>>(), vec![84 + 72, 2 * 84 + 72]);
        let whole = Slab::whole(9);
        assert_eq!((whole.size(&c), whole.planes(), whole.global_z(4, 9)), ([4, 3, 9], [0, 9], 4));
        assert_eq!(Slab::split(&c, 1).unwrap(), vec![whole]);
    }

    #[test]
    fn boxes_that_cannot_split_say_why() {
        let mut c = config([4, 4, 5], LatticeKind::D3Q19, FreeEnergy::new(-0.1, 0.1, 0.1), 0.1);
        assert!(Slab::split(&c, 3).unwrap_err().to_string().contains("use at most 2 devices"));
        c = config([4, 4, 1], LatticeKind::D2Q9, c.free_energy, 0.1);
        assert!(Slab::split(&c, 2).unwrap_err().to_string().contains("cannot be split along z"));
    }
}
