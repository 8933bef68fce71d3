//! Line probes: velocity and density sampled from point A to point B.

use crate::error::Result;
use crate::fields::Fields;
use crate::files::write_atomic;
use kernels_gpu::Dims;
use serde::Deserialize;
use std::fmt::Write as _;
use std::path::Path;

/// A line probe as the case file gives it (points in cell coordinates: cell
/// `i` is at `i`, so `[0.5, 0, 0]` lies halfway between the first two cells).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProbeSpec {
    /// Name used in the file name.
    pub name: String,
    /// Start point.
    pub from: [f64; 3],
    /// End point.
    pub to: [f64; 3],
    /// Number of samples, both ends included (at least 2).
    pub samples: u32,
    /// Give `from` and `to` as fractions of the domain (0..1 along each
    /// axis), so the probe follows `--size`.
    #[serde(default)]
    pub relative: bool,
}

impl ProbeSpec {
    /// End points in cell coordinates for a grid of `dims`.
    pub fn ends(&self, dims: Dims) -> ([f64; 3], [f64; 3]) {
        if !self.relative {
            return (self.from, self.to);
        }
        let span = [dims.nx, dims.ny, dims.nz].map(|n| (n - 1) as f64);
        ([0, 1, 2].map(|a| self.from[a] * span[a]), [0, 1, 2].map(|a| self.to[a] * span[a]))
    }

    /// The sample points in cell coordinates.
    pub fn points(&self, dims: Dims) -> Vec<[f64; 3]> {
        let n = self.samples.max(2);
        let (from, to) = self.ends(dims);
        (0..n)
            .map(|k| {
                let t = k as f64 / (n - 1) as f64;
                [0, 1, 2].map(|a| from[a] + t * (to[a] - from[a]))
            })
            .collect()
    }
}

/// Writes the probe at `step` as CSV (atomically): position and velocity in
/// lattice units, and, when `dx`/`dt` are known, in metres and m/s too.
pub fn write_csv(path: &Path, fields: &Fields, spec: &ProbeSpec, step: u64, si: Option<(f64, f64)>) -> Result<()> {
    write_samples(path, &spec.points(fields.dims), |p| fields.velocity_at(p), step, si)
}

/// [`write_csv`] of the velocities `velocity` gives at `points` (a
/// refined domain samples the finest level owning each point).
pub fn write_samples(
    path: &Path,
    points: &[[f64; 3]],
    velocity: impl Fn([f64; 3]) -> [f64; 3],
    step: u64,
    si: Option<(f64, f64)>,
) -> Result<()> {
    let mut out = String::from("step,x,y,z,ux,uy,uz");
    if si.is_some() {
        out.push_str(",x_m,y_m,z_m,ux_m_s,uy_m_s,uz_m_s");
    }
    out.push('\n');
    for &p in points {
        let u = velocity(p);
        write!(out, "{step},{},{},{},{:e},{:e},{:e}", p[0], p[1], p[2], u[0], u[1], u[2]).unwrap();
        if let Some((dx, dt)) = si {
            let v = dx / dt;
            write!(
                out,
                ",{:e},{:e},{:e},{:e},{:e},{:e}",
                p[0] * dx,
                p[1] * dx,
                p[2] * dx,
                u[0] * v,
                u[1] * v,
                u[2] * v
            )
            .unwrap();
        }
        out.push('\n');
    }
    write_atomic(path, out.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_a_linear_field_exactly() {
        let dims = Dims::new(5, 5, 1);
        let u: Vec<[f64; 3]> = (0..dims.cells()).map(|n| [dims.coords(n as u32).1 as f64 * 0.01, 0.0, 0.0]).collect();
        let f = Fields::from_dense(dims, &vec![1.0; dims.cells()], &u);
        let spec =
            ProbeSpec { name: "c".into(), from: [2.0, 0.0, 0.0], to: [2.0, 4.0, 0.0], samples: 9, relative: false };
        let rel = ProbeSpec { from: [0.5, 0.0, 0.0], to: [0.5, 1.0, 0.0], relative: true, ..spec.clone() };
        assert_eq!(rel.ends(dims), ([2.0, 0.0, 0.0], [2.0, 4.0, 0.0]));
        let dir = std::env::temp_dir().join(format!("lbm-probe-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.csv");
        write_csv(&path, &f, &spec, 7, Some((0.5, 0.25))).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), 10);
        let mid: Vec<f64> = rows[5].split(',').map(|v| v.parse().unwrap()).collect();
        // y = 2.0 -> ux = 0.02 lattice = 0.02 * 0.5 / 0.25 = 0.04 m/s
        assert_eq!((mid[0], mid[2], mid[4]), (7.0, 2.0, 0.02));
        assert!((mid[10] - 0.04).abs() < 1e-15);
        std::fs::remove_dir_all(&dir).ok();
    }
}
