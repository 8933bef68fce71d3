//! Macroscopic fields read back from a solver.

use kernels_gpu::Dims;

/// Density and velocity of every cell (lattice units), in cell order.
#[derive(Clone, Debug, PartialEq)]
pub struct Fields {
    /// Grid size.
    pub dims: Dims,
    /// Density per cell.
    pub rho: Vec<f64>,
    /// Velocity per cell.
    pub u: Vec<[f64; 3]>,
}

impl Fields {
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
            let u = self.u[self.dims.index(at[0], at[1], at[2])];
            for a in 0..3 {
                out[a] += w * u[a];
            }
        }
        out
    }

    /// Vorticity magnitude |curl u| per cell by central differences (one-sided
    /// at the box faces; zero in solid cells and where an axis has one cell).
    pub fn vorticity_magnitude(&self, flags: &[u8]) -> Vec<f64> {
        let d = self.dims;
        let n = [d.nx, d.ny, d.nz];
        let mut out = vec![0.0; d.cells()];
        for z in 0..d.nz {
            for y in 0..d.ny {
                for x in 0..d.nx {
                    let c = d.index(x, y, z);
                    if !kernels_gpu::flags::is_flow(flags[c]) {
                        continue;
                    }
                    // grad[a][b] = d u_b / d x_a
                    let mut grad = [[0.0; 3]; 3];
                    for a in 0..3 {
                        if n[a] < 2 {
                            continue;
                        }
                        let p = [x, y, z];
                        let (mut lo, mut hi) = (p, p);
                        lo[a] = p[a].saturating_sub(1);
                        hi[a] = (p[a] + 1).min(n[a] - 1);
                        let (ul, uh) = (self.u[d.index(lo[0], lo[1], lo[2])], self.u[d.index(hi[0], hi[1], hi[2])]);
                        let h = (hi[a] - lo[a]) as f64;
                        for b in 0..3 {
                            grad[a][b] = (uh[b] - ul[b]) / h;
                        }
                    }
                    let w = [grad[1][2] - grad[2][1], grad[2][0] - grad[0][2], grad[0][1] - grad[1][0]];
                    out[c] = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vorticity_of_solid_rotation_is_twice_the_rate() {
        // u = Omega x r about z: |curl u| = 2 Omega everywhere (central differences are exact for linear fields).
        let dims = Dims::new(9, 7, 1);
        let omega = 0.01;
        let u = (0..dims.cells())
            .map(|n| {
                let (x, y, _) = dims.coords(n as u32);
                [-omega * (y as f64 - 3.0), omega * (x as f64 - 4.0), 0.0]
            })
            .collect();
        let f = Fields { dims, rho: vec![1.0; dims.cells()], u };
        let w = f.vorticity_magnitude(&vec![0; dims.cells()]);
        assert!(w.iter().all(|v| (v - 2.0 * omega).abs() < 1e-15));
    }
}
