//! Macroscopic fields read back from a solver.

use crate::cell_blocks::CellBlocks;
use crate::error::{Error, Result};
use kernels_gpu::stream::FIELD_COMPONENTS;
use kernels_gpu::Dims;
use std::ops::Range;

/// Density and velocity of every cell of the box (lattice units), stored by
/// blocks ([`CellBlocks`]): a sparse grid's read-back costs memory for the
/// blocks it stores, not for its bounding box. Cells a sparse grid does not
/// store are at rest: density 1, velocity 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Fields {
    /// Grid size.
    pub dims: Dims,
    /// Density per cell.
    pub rho: CellBlocks<f64>,
    /// Velocity per cell.
    pub u: CellBlocks<[f64; 3]>,
}

/// One partition's fields, as it reads them back: what [`Fields::from_parts`]
/// puts together.
#[derive(Clone, Debug, PartialEq)]
pub enum PartFields {
    /// Whole layers of a dense box.
    Layers {
        /// The box's layers.
        z: Range<u32>,
        /// `rho, ux, uy, uz` planes over them (x fastest).
        planes: Vec<f64>,
    },
    /// The cells a sparse grid stores.
    Cells {
        /// Their positions in the box.
        positions: Vec<[u32; 3]>,
        /// Their `rho, ux, uy, uz`.
        values: Vec<[f64; 4]>,
    },
}

impl PartFields {
    /// The bytes that [`PartFields::from_bytes`] reads (native endianness:
    /// they travel between the ranks of one job).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            PartFields::Layers { z, planes } => {
                out.extend_from_slice(bytemuck::cast_slice(&[0u64, z.start as u64, z.end as u64]));
                out.extend_from_slice(bytemuck::cast_slice(planes));
            }
            PartFields::Cells { positions, values } => {
                out.extend_from_slice(bytemuck::cast_slice(&[1u64, positions.len() as u64, 0]));
                out.extend_from_slice(bytemuck::cast_slice(positions));
                out.extend_from_slice(bytemuck::cast_slice(values));
            }
        }
        out
    }

    /// The fields [`PartFields::to_bytes`] wrote.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = || Error::Setup("a rank sent fields that do not decode: ranks of different builds?".into());
        let (head, rest) = bytes.split_at_checked(24).ok_or_else(bad)?;
        let head: Vec<u64> = bytemuck::pod_collect_to_vec(head);
        match head[0] {
            0 => {
                Ok(PartFields::Layers { z: head[1] as u32..head[2] as u32, planes: bytemuck::pod_collect_to_vec(rest) })
            }
            1 => {
                let split = 12 * head[1] as usize;
                let (p, v) = rest.split_at_checked(split).ok_or_else(bad)?;
                Ok(PartFields::Cells {
                    positions: bytemuck::pod_collect_to_vec(p),
                    values: bytemuck::pod_collect_to_vec(v),
                })
            }
            _ => Err(bad()),
        }
    }
}

impl Fields {
    /// Every cell of a box of `dims` at rest: density 1, velocity 0.
    pub fn at_rest(dims: Dims) -> Self {
        Self { dims, rho: CellBlocks::new(dims, 1.0), u: CellBlocks::new(dims, [0.0; 3]) }
    }

    /// The fields of dense per-cell arrays (x fastest).
    pub fn from_dense(dims: Dims, rho: &[f64], u: &[[f64; 3]]) -> Self {
        Self { dims, rho: CellBlocks::from_dense(dims, rho), u: CellBlocks::from_dense(dims, u) }
    }

    /// The fields of `rho, ux, uy, uz` planes over the whole box.
    pub fn from_planes(dims: Dims, planes: &[f64]) -> Self {
        let cells = dims.cells();
        let u = CellBlocks::from_fn(dims, |n| [1, 2, 3].map(|a| planes[a * cells + n]));
        Self { dims, rho: CellBlocks::from_dense(dims, &planes[..cells]), u }
    }

    /// The fields of a box of `dims` from its partitions' read-backs.
    pub fn from_parts(dims: Dims, parts: &[PartFields]) -> Self {
        let (cells, plane) = (dims.cells(), (dims.nx * dims.ny) as usize);
        if parts.iter().all(|p| matches!(p, PartFields::Layers { .. })) {
            // Dense: one pass over whole planes.
            let mut planes = vec![0.0; FIELD_COMPONENTS * cells];
            for part in parts {
                let PartFields::Layers { z, planes: own } = part else { unreachable!() };
                let (start, n) = (z.start as usize * plane, z.len() * plane);
                for c in 0..FIELD_COMPONENTS {
                    planes[c * cells + start..][..n].copy_from_slice(&own[c * n..][..n]);
                }
            }
            return Self::from_planes(dims, &planes);
        }
        let mut out = Self::at_rest(dims);
        for part in parts {
            match part {
                PartFields::Layers { z, planes } => {
                    let n = z.len() * plane;
                    for k in 0..n {
                        let p = crate::cell_blocks::position(dims, z.start as usize * plane + k);
                        out.set(p, [0, 1, 2, 3].map(|c| planes[c * n + k]));
                    }
                }
                PartFields::Cells { positions, values } => {
                    for (&p, &v) in positions.iter().zip(values) {
                        out.set(p, v);
                    }
                }
            }
        }
        out
    }

    /// Sets cell `p`'s `rho, ux, uy, uz`.
    pub fn set(&mut self, p: [u32; 3], v: [f64; 4]) {
        let slot = self.rho.slot(p);
        self.rho.set_at(slot, v[0]);
        self.u.set_at(slot, [v[1], v[2], v[3]]);
    }

    /// The largest speed |u| of any cell.
    pub fn max_speed(&self) -> f64 {
        let mut max = 0.0f64;
        self.u.for_each_run(|_, u, _| max = max.max(speed(u)));
        max
    }

    /// The largest change of a velocity component since `before` (velocities of the same box).
    pub fn max_change(&self, before: &CellBlocks<[f64; 3]>) -> f64 {
        let mut max = 0.0f64;
        self.u.for_each_pair(before, |_, a, b, _| (0..3).for_each(|k| max = max.max((a[k] - b[k]).abs())));
        max
    }

    /// The first cell (in block order) whose density or velocity is not
    /// finite or whose speed exceeds `limit`.
    pub fn first_unhealthy(&self, limit: f64) -> Option<[u32; 3]> {
        let mut bad = None;
        self.rho.for_each_pair(&self.u, |p, r, u, _| {
            let sick = !r.is_finite() || u.iter().any(|v| !v.is_finite()) || speed(u) > limit;
            if sick && bad.is_none() {
                bad = Some(p);
            }
        });
        bad
    }

    /// Velocity at a point given in cell coordinates (cell `i` is at `i`),
    /// interpolated trilinearly between the eight surrounding cells. The
    /// point must lie inside the grid.
    pub fn velocity_at(&self, p: [f64; 3]) -> [f64; 3] {
        let n = [self.dims.nx, self.dims.ny, self.dims.nz];
        let mut base = [0u32; 3];
        let mut frac = [0.0; 3];
        for a in 0..3 {
            let hi = (n[a] - 1) as f64;
            let c = p[a].clamp(0.0, hi);
            let b = c.floor().min((n[a].max(2) - 2) as f64).max(0.0);
            base[a] = b as u32;
            frac[a] = if n[a] == 1 { 0.0 } else { c - b };
        }
        let mut out = [0.0; 3];
        for corner in 0..8u32 {
            let mut w = 1.0;
            let mut at = [0u32; 3];
            for a in 0..3 {
                let bit = (corner >> a) & 1;
                if n[a] == 1 && bit == 1 {
                    w = 0.0;
                }
                at[a] = (base[a] + bit).min(n[a] - 1);
                w *= if bit == 1 { frac[a] } else { 1.0 - frac[a] };
            }
            if w == 0.0 {
                continue;
            }
            let u = self.u[at];
            for a in 0..3 {
                out[a] += w * u[a];
            }
        }
        out
    }

    /// Vorticity magnitude |curl u| of cell `p` by central differences
    /// (one-sided at the box faces; zero in solid cells and along an axis
    /// of one cell).
    pub fn vorticity_at(&self, flags: &CellBlocks<u8>, p: [u32; 3]) -> f64 {
        if !kernels_gpu::flags::is_flow(flags[p]) {
            return 0.0;
        }
        let n = [self.dims.nx, self.dims.ny, self.dims.nz];
        // grad[a][b] = d u_b / d x_a
        let mut grad = [[0.0; 3]; 3];
        for a in 0..3 {
            if n[a] < 2 {
                continue;
            }
            let (mut lo, mut hi) = (p, p);
            lo[a] = p[a].saturating_sub(1);
            hi[a] = (p[a] + 1).min(n[a] - 1);
            let (ul, uh) = (self.u[lo], self.u[hi]);
            let h = (hi[a] - lo[a]) as f64;
            for b in 0..3 {
                grad[a][b] = (uh[b] - ul[b]) / h;
            }
        }
        speed([grad[1][2] - grad[2][1], grad[2][0] - grad[0][2], grad[0][1] - grad[1][0]])
    }
}

/// |u|.
pub fn speed(u: [f64; 3]) -> f64 {
    (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vorticity_of_solid_rotation_is_twice_the_rate() {
        // u = Omega x r about z: |curl u| = 2 Omega everywhere (central differences are exact for linear fields).
        let dims = Dims::new(9, 7, 1);
        let omega = 0.01;
        let u: Vec<[f64; 3]> = (0..dims.cells())
            .map(|n| {
                let (x, y, _) = dims.coords(n as u32);
                [-omega * (y as f64 - 3.0), omega * (x as f64 - 4.0), 0.0]
            })
            .collect();
        let f = Fields::from_dense(dims, &vec![1.0; dims.cells()], &u);
        let flow = CellBlocks::new(dims, 0u8);
        assert!((0..dims.cells()).all(|n| {
            let p = crate::cell_blocks::position(dims, n);
            (f.vorticity_at(&flow, p) - 2.0 * omega).abs() < 1e-15
        }));
    }

    #[test]
    fn partitions_fields_put_together_and_sent_as_bytes() {
        let dims = Dims::new(20, 18, 6);
        let (cells, plane) = (dims.cells(), 20 * 18);
        let planes: Vec<f64> = (0..4 * cells).map(|k| k as f64 * 1e-6).collect();
        let whole = Fields::from_planes(dims, &planes);
        // Two dense partitions: layers 0..2 and 2..6.
        let layers = |z: std::ops::Range<u32>| {
            let (s, n) = (z.start as usize * plane, z.len() * plane);
            let planes = (0..4).flat_map(|c| planes[c * cells + s..][..n].to_vec()).collect();
            PartFields::Layers { z, planes }
        };
        let parts = [layers(0..2), layers(2..6)];
        assert_eq!(Fields::from_parts(dims, &parts), whole);
        // Stored cells: the ones given, the others at rest.
        let positions = vec![[3, 4, 5], [19, 17, 0]];
        let values = vec![[2.0, 0.1, 0.2, 0.3], [0.5, -0.1, 0.0, 0.0]];
        let sparse = [PartFields::Cells { positions, values }, layers(0..1)];
        let f = Fields::from_parts(dims, &sparse);
        assert_eq!((f.rho[[3, 4, 5]], f.u[[3, 4, 5]]), (2.0, [0.1, 0.2, 0.3]));
        assert_eq!((f.rho[[19, 17, 0]], f.u[[19, 17, 0]]), (whole.rho[[19, 17, 0]], whole.u[[19, 17, 0]]));
        assert_eq!((f.rho[[0, 0, 3]], f.u[[0, 0, 3]]), (1.0, [0.0; 3]));
        assert_eq!(f.max_speed(), speed([0.1, 0.2, 0.3]));
        assert_eq!(f.first_unhealthy(1.0), None);
        let mut sick = f.clone();
        sick.set([7, 7, 2], [f64::NAN, 0.0, 0.0, 0.0]);
        assert_eq!(sick.first_unhealthy(1.0), Some([7, 7, 2]));
        assert_eq!(sick.max_change(&f.u), 0.0);
        sick.set([1, 2, 3], [1.0, 0.0, -0.25, 0.0]);
        assert_eq!(sick.max_change(&f.u), 0.25);
        for part in sparse.iter().chain(&parts) {
            assert_eq!(&PartFields::from_bytes(&part.to_bytes()).unwrap(), part);
        }
        assert!(PartFields::from_bytes(&[1, 2, 3]).is_err());
    }
}
