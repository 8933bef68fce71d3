//! Inlet velocity profiles: the velocity each cell of an inlet face imposes.
//!
//! Positions are cell coordinates (cell `i` at `i`). A wall layer on a face
//! reflects halfway between its cells and the first fluid cells, so the wall
//! of a closed axis of `n` cells sits at `0.5` and `n - 1.5`, which is where
//! the profiles put zero velocity.

use crate::domain::{Face, FaceBoundary};
use crate::error::{Error, Result};
use kernels_gpu::layout::Dims;
use std::path::Path;

/// The shape of an inlet's velocity across its face.
#[derive(Clone, Debug, PartialEq)]
pub enum Profile {
    /// The same velocity at every cell.
    Uniform,
    /// Plane Poiseuille, `4 s (L - s) / L^2`, across each axis of the face
    /// that walls close (a channel: one axis, a duct: the product of two),
    /// uniform along periodic ones; the velocity given is the peak.
    Parabolic,
    /// The atmospheric boundary layer's power law, `(d / height)^exponent`
    /// with `d` the distance from the `ground` wall (cells); the velocity
    /// given is the one at `height` above the ground.
    PowerLaw {
        /// The exponent (about 1/7 over open country, 0.3 over cities).
        exponent: f64,
        /// The wall the heights are measured from: a face along the inlet.
        ground: Face,
        /// Height of the reference velocity above the ground wall (cells).
        height: f64,
    },
    /// Velocities tabulated over the face, interpolated linearly.
    Table(Table),
}

/// Velocities tabulated over one or two axes of a face, or one velocity.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The axes the table runs along (0, 1 or 2 of the face's tangential axes).
    axes: Vec<usize>,
    /// The distinct positions along each axis, ascending (cells).
    positions: Vec<Vec<f64>>,
    /// The velocities (lattice units), the last axis fastest.
    values: Vec<[f64; 3]>,
}

/// What applying a profile gave: each cell's velocity, and what to tell the user.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The velocity of each cell, in the order given.
    pub velocities: Vec<[f64; 3]>,
    /// Their mean (lattice units).
    pub mean: [f64; 3],
    /// Cells outside the table's range, which take its edge values.
    pub outside: usize,
}

impl Profile {
    /// The profile's name in case files.
    pub fn name(&self) -> &'static str {
        match self {
            Profile::Uniform => "uniform",
            Profile::Parabolic => "parabolic",
            Profile::PowerLaw { .. } => "power_law",
            Profile::Table(_) => "table",
        }
    }

    /// The velocities of `cells` (dense numbers of a box `dims` whose faces
    /// are `faces`) on the inlet face `face`, with `u` the velocity the
    /// profile scales (ignored by a table).
    pub fn apply(
        &self,
        face: Face,
        faces: &[FaceBoundary; 6],
        dims: Dims,
        u: [f64; 3],
        cells: &[usize],
    ) -> Result<Applied> {
        let size = [dims.nx, dims.ny, dims.nz];
        let along: Vec<usize> = (0..3).filter(|&a| a != face.axis()).collect();
        // The wall positions of each closed axis along the face.
        let walls = |a: usize| (faces[2 * a] != FaceBoundary::Periodic).then(|| (0.5, size[a] as f64 - 1.5));
        let shape: Box<dyn Fn([f64; 3]) -> [f64; 3]> = match self {
            Profile::Uniform => Box::new(move |_| u),
            Profile::Parabolic => {
                let closed: Vec<(usize, (f64, f64))> = along.iter().filter_map(|&a| Some((a, walls(a)?))).collect();
                if closed.is_empty() {
                    return Err(Error::Setup(format!(
                        "a parabolic profile on {} needs walls across the inlet, but every axis along it is periodic: \
                         close one with walls, or use a uniform inlet",
                        face.name()
                    )));
                }
                Box::new(move |p| {
                    let factor: f64 = (closed.iter())
                        .map(|&(a, (lo, hi))| {
                            let (s, l) = (p[a] - lo, hi - lo);
                            (4.0 * s * (l - s) / (l * l)).max(0.0)
                        })
                        .product();
                    u.map(|c| c * factor)
                })
            }
            &Profile::PowerLaw { exponent, ground, height } => {
                let a = ground.axis();
                if a == face.axis() || walls(a).is_none() {
                    return Err(Error::Setup(format!(
                        "the power-law profile on {} measures heights from ground = \"{}\", which must be a wall face \
                         along the inlet (not {} itself, not a periodic face)",
                        face.name(),
                        ground.name(),
                        face.name()
                    )));
                }
                let (lo, hi) = walls(a).expect("checked closed");
                Box::new(move |p| {
                    let d = if ground.is_max() { hi - p[a] } else { p[a] - lo };
                    let factor = (d.max(0.0) / height).powf(exponent);
                    u.map(|c| c * factor)
                })
            }
            Profile::Table(t) => {
                if let Some(&a) = t.axes.iter().find(|&&a| a == face.axis()) {
                    return Err(Error::Setup(format!(
                        "the profile table runs along {}, across the inlet {}: give positions along the face only",
                        ["x", "y", "z"][a],
                        face.name()
                    )));
                }
                Box::new(|p| t.at(p).0)
            }
        };
        let mut velocities = Vec::with_capacity(cells.len());
        let mut outside = 0;
        for &n in cells {
            let (x, y, z) = dims.coords(n as u32);
            let p = [x as f64, y as f64, z as f64];
            if let Profile::Table(t) = self {
                outside += t.at(p).1 as usize;
            }
            velocities.push(shape(p));
        }
        let count = velocities.len().max(1) as f64;
        let mean = std::array::from_fn(|c| velocities.iter().map(|v| v[c]).sum::<f64>() / count);
        Ok(Applied { velocities, mean, outside })
    }
}

impl Table {
    /// Reads a CSV file whose header names its columns: positions `x`, `y`
    /// or `z` (at most two) and velocities `ux`, `uy`, `uz` (those missing
    /// are zero). Positions are scaled by `1 / cell_size` and velocities by
    /// `velocity` into lattice units.
    pub fn read(path: &Path, cell_size: f64, velocity: impl Fn(f64) -> f64) -> Result<Self> {
        let bad = |message: String| Error::Setup(format!("{}: {message}", path.display()));
        let mut reader = csv::ReaderBuilder::new()
            .trim(csv::Trim::All)
            .comment(Some(b'#'))
            .from_path(path)
            .map_err(|e| bad(format!("cannot read it: {e}")))?;
        let header = reader.headers().map_err(|e| bad(format!("no header row: {e}")))?.clone();
        let (mut axes, mut axis_columns, mut components) = (Vec::new(), Vec::new(), [None; 3]);
        for (k, name) in header.iter().enumerate() {
            match name {
                "x" | "y" | "z" => {
                    axes.push((name.as_bytes()[0] - b'x') as usize);
                    axis_columns.push(k);
                }
                "ux" | "uy" | "uz" => components[(name.as_bytes()[1] - b'x') as usize] = Some(k),
                _ => {
                    return Err(bad(format!(
                        "column \"{name}\" is neither a position (x, y, z) nor a velocity (ux, uy, uz)"
                    )))
                }
            }
        }
        if axes.len() > 2 {
            return Err(bad("gives three position columns: a face has two axes".into()));
        }
        if components.iter().all(Option::is_none) {
            return Err(bad("has no velocity column: name them ux, uy, uz".into()));
        }
        let mut rows: Vec<(Vec<f64>, [f64; 3])> = Vec::new();
        for (r, record) in reader.records().enumerate() {
            let record = record.map_err(|e| bad(format!("row {}: {e}", r + 2)))?;
            let number = |k: usize| -> Result<f64> {
                let text = record.get(k).unwrap_or("");
                match text.parse::<f64>() {
                    Ok(v) if v.is_finite() => Ok(v),
                    _ => {
                        Err(bad(format!("row {}, column \"{}\": \"{text}\" is not a finite number", r + 2, &header[k])))
                    }
                }
            };
            let position = axis_columns.iter().map(|&k| Ok(number(k)? / cell_size)).collect::<Result<Vec<_>>>()?;
            let mut u = [0.0; 3];
            for (c, column) in components.iter().enumerate() {
                if let Some(k) = column {
                    u[c] = velocity(number(*k)?);
                }
            }
            rows.push((position, u));
        }
        Self::from_rows(axes, rows).map_err(|e| bad(e.to_string()))
    }

    /// A table from rows of (positions along `axes`, velocity): one row
    /// without axes, or every combination of the distinct positions once.
    fn from_rows(axes: Vec<usize>, mut rows: Vec<(Vec<f64>, [f64; 3])>) -> Result<Self> {
        let setup = |m: String| Err(Error::Setup(m));
        if rows.is_empty() {
            return setup("has no rows".into());
        }
        let mut positions: Vec<Vec<f64>> = (0..axes.len()).map(|k| rows.iter().map(|r| r.0[k]).collect()).collect();
        for p in &mut positions {
            p.sort_by(f64::total_cmp);
            p.dedup();
        }
        let expected: usize = positions.iter().map(Vec::len).product();
        if axes.is_empty() && rows.len() > 1 {
            return setup(format!("has {} rows but no position column: give x, y or z columns", rows.len()));
        }
        if rows.len() != expected || positions.iter().any(|p| p.len() < 2) && !axes.is_empty() {
            return setup(format!(
                "its {} rows are not a grid: give every combination of the positions along the face once, \
                 at least two along each position column ({} distinct)",
                rows.len(),
                positions.iter().map(|p| p.len().to_string()).collect::<Vec<_>>().join(" x ")
            ));
        }
        rows.sort_by(|a, b| {
            a.0.iter().zip(&b.0).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
        });
        if rows.windows(2).any(|w| w[0].0 == w[1].0) {
            return setup("gives one position twice".into());
        }
        Ok(Self { axes, positions, values: rows.into_iter().map(|r| r.1).collect() })
    }

    /// The velocity at `p` (cells), interpolated linearly along each axis,
    /// and whether `p` lies outside the table (it then takes the edge value).
    fn at(&self, p: [f64; 3]) -> ([f64; 3], bool) {
        let mut outside = false;
        // Per axis: the lower index and the weight of the upper one.
        let brackets: Vec<(usize, f64)> = (self.axes.iter().zip(&self.positions))
            .map(|(&a, pos)| {
                let x = p[a];
                let tolerance = 1e-9 * (1.0 + x.abs());
                outside |= x < pos[0] - tolerance || x > pos[pos.len() - 1] + tolerance;
                let k = pos.partition_point(|&q| q <= x).clamp(1, pos.len() - 1) - 1;
                let w = ((x - pos[k]) / (pos[k + 1] - pos[k])).clamp(0.0, 1.0);
                (k, w)
            })
            .collect();
        let mut u = [0.0; 3];
        for corner in 0..1usize << brackets.len() {
            let (mut index, mut weight) = (0, 1.0);
            for (d, &(k, w)) in brackets.iter().enumerate() {
                let upper = corner >> (brackets.len() - 1 - d) & 1 == 1;
                index = index * self.positions[d].len() + k + upper as usize;
                weight *= if upper { w } else { 1.0 - w };
            }
            for (u, v) in u.iter_mut().zip(self.values[index]) {
                *u += weight * v;
            }
        }
        (u, outside)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FaceBoundary::{Periodic, Wall};

    const INLET: FaceBoundary = FaceBoundary::VelocityInlet([0.1, 0.0, 0.0], crate::domain::OpenScheme::Equilibrium);

    /// The x_min face's cells of `dims` between the walls.
    fn inlet_cells(dims: Dims, closed_z: bool) -> Vec<usize> {
        let zs = if closed_z { 1..dims.nz - 1 } else { 0..dims.nz };
        zs.flat_map(|z| (1..dims.ny - 1).map(move |y| dims.index(0, y, z))).collect()
    }

    #[test]
    fn parabolic_channel_peaks_at_the_centre_and_averages_two_thirds() {
        // 2D channel: walls on y, 32 fluid rows between walls at 0.5 and 32.5.
        let dims = Dims::new(4, 34, 1);
        let faces = [INLET, Wall, Wall, Wall, Periodic, Periodic];
        let cells = inlet_cells(dims, false);
        let a = Profile::Parabolic.apply(Face::XMin, &faces, dims, [0.3, 0.0, 0.0], &cells).unwrap();
        let u: Vec<f64> = a.velocities.iter().map(|v| v[0]).collect();
        // Symmetric about the centre line, rising to it, and exact at the cell centres.
        assert!((0..16).all(|k| u[k] == u[31 - k] && (k == 0 || u[k] > u[k - 1])));
        // The cell at y = 16 is half a cell below the centre line at 16.5.
        let s = 16.0 - 0.5;
        assert!((u[15] - 0.3 * 4.0 * s * (32.0 - s) / 1024.0).abs() < 1e-16);
        // Over n cell centres the parabola averages 2/3 + 1 / (3 n^2) of its peak.
        let expected = 0.3 * (2.0 / 3.0 + 1.0 / (3.0 * 32.0 * 32.0));
        assert!((a.mean[0] - expected).abs() < 1e-15, "{} vs {expected}", a.mean[0]);
    }

    #[test]
    fn parabolic_duct_is_the_product_over_both_closed_axes() {
        let dims = Dims::new(4, 10, 12);
        let faces = [INLET, Wall, Wall, Wall, Wall, Wall];
        let cells = inlet_cells(dims, true);
        let a = Profile::Parabolic.apply(Face::XMin, &faces, dims, [1.0, 0.0, 0.0], &cells).unwrap();
        for (&n, v) in cells.iter().zip(&a.velocities) {
            let (_, y, z) = dims.coords(n as u32);
            let f = |p: f64, l: f64| 4.0 * (p - 0.5) * (l - (p - 0.5)) / (l * l);
            assert!((v[0] - f(y as f64, 8.0) * f(z as f64, 10.0)).abs() < 1e-15);
        }
        // A fully periodic face has no walls to shape a parabola against.
        let open = [INLET, Wall, Periodic, Periodic, Periodic, Periodic];
        let e = Profile::Parabolic.apply(Face::XMin, &open, dims, [1.0, 0.0, 0.0], &cells).unwrap_err();
        assert!(e.to_string().contains("every axis along it is periodic"), "{e}");
    }

    #[test]
    fn power_law_grows_from_the_ground() {
        let dims = Dims::new(4, 3, 22);
        let faces = [INLET, Wall, Periodic, Periodic, Wall, Wall];
        let cells: Vec<usize> = (1..21).map(|z| dims.index(0, 1, z)).collect();
        let law = Profile::PowerLaw { exponent: 0.25, ground: Face::ZMin, height: 10.0 };
        let a = law.apply(Face::XMin, &faces, dims, [2.0, 0.0, 0.0], &cells).unwrap();
        for (k, v) in a.velocities.iter().enumerate() {
            let d = (k + 1) as f64 - 0.5;
            assert!((v[0] - 2.0 * (d / 10.0).powf(0.25)).abs() < 1e-14);
        }
        let across = Profile::PowerLaw { exponent: 0.25, ground: Face::XMax, height: 10.0 };
        assert!(across.apply(Face::XMin, &faces, dims, [2.0, 0.0, 0.0], &cells).is_err());
        let periodic = Profile::PowerLaw { exponent: 0.25, ground: Face::YMin, height: 10.0 };
        assert!(periodic.apply(Face::XMin, &faces, dims, [2.0, 0.0, 0.0], &cells).is_err());
    }

    #[test]
    fn tables_interpolate_linearly_and_hold_their_edges() {
        let rows = vec![(vec![1.0], [0.0, 0.0, 0.0]), (vec![3.0], [2.0, 0.0, 0.4]), (vec![2.0], [1.0, 0.0, 0.2])];
        let t = Table::from_rows(vec![1], rows).unwrap();
        assert_eq!(t.at([0.0, 2.5, 0.0]), ([1.5, 0.0, 0.30000000000000004], false));
        assert_eq!(t.at([0.0, 5.0, 0.0]), ([2.0, 0.0, 0.4], true));
        // Two axes: a bilinear function is reproduced exactly.
        let f = |y: f64, z: f64| 1.0 + 2.0 * y - z + 0.5 * y * z;
        let rows =
            [0.0, 1.0, 4.0].iter().flat_map(|&y| [2.0, 3.0].map(|z| (vec![y, z], [f(y, z), 0.0, 0.0]))).collect();
        let t = Table::from_rows(vec![1, 2], rows).unwrap();
        let (u, outside) = t.at([7.0, 2.5, 2.25]);
        assert!((u[0] - f(2.5, 2.25)).abs() < 1e-12 && !outside);
        // Not a grid: a combination missing.
        let rows = vec![(vec![0.0, 0.0], [1.0; 3]), (vec![1.0, 0.0], [1.0; 3]), (vec![0.0, 1.0], [1.0; 3])];
        assert!(Table::from_rows(vec![1, 2], rows).unwrap_err().to_string().contains("not a grid"));
    }

    #[test]
    fn tables_read_from_csv_with_their_units() {
        let dir = std::env::temp_dir().join(format!("lbm-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("inlet.csv");
        std::fs::write(&path, "# measured\ny, ux\n0.0, 1.0\n0.5, 3.0\n").unwrap();
        // 0.1 m cells, velocities halved into lattice units.
        let t = Table::read(&path, 0.1, |v| v / 2.0).unwrap();
        assert_eq!(t.positions, [vec![0.0, 5.0]]);
        assert_eq!(t.at([0.0, 2.5, 0.0]).0, [1.0, 0.0, 0.0]);
        std::fs::write(&path, "y,speed\n0,1\n").unwrap();
        let e = Table::read(&path, 1.0, |v| v).unwrap_err().to_string();
        assert!(e.contains("column \"speed\""), "{e}");
        std::fs::write(&path, "y,ux\n0,1\n1,fast\n").unwrap();
        let e = Table::read(&path, 1.0, |v| v).unwrap_err().to_string();
        assert!(e.contains("row 3") && e.contains("\"fast\""), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
