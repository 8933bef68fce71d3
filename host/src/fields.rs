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

    /// Total mass (sum of densities) over the cells whose flag is fluid.
    pub fn mass(&self, flags: &[u8]) -> f64 {
        self.rho
            .iter()
            .zip(flags)
            .filter(|(_, &f)| kernels_gpu::flags::is_fluid(f))
            .map(|(r, _)| r)
            .sum()
    }
}
