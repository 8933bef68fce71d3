//! Field output in the legacy VTK format (binary, big-endian
//! STRUCTURED_POINTS), which ParaView and VisIt open directly.

use crate::case::UnitConversion;
use crate::error::Result;
use crate::fields::Fields;
use crate::files::write_atomic;
use std::io::Write;
use std::path::Path;

/// What part of the fields to write, and in which units.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct View {
    /// Inclusive cell box `(min, max)` to write; the whole domain if `None`.
    pub region: Option<([u32; 3], [u32; 3])>,
    /// Write in SI units (m, m/s, kg/m^3, 1/s) with this conversion.
    pub si: Option<UnitConversion>,
}

/// Writes density, velocity, vorticity magnitude and cell flags of `fields`
/// (the part and units `view` asks for) to `path`, atomically: a temporary
/// file renamed into place, so a reader never sees half a file.
pub fn write_fields(path: &Path, fields: &Fields, flags: &[u8], title: &str, view: &View) -> Result<()> {
    let d = fields.dims;
    let (lo, hi) = view.region.unwrap_or(([0; 3], [d.nx - 1, d.ny - 1, d.nz - 1]));
    let dims = [0, 1, 2].map(|a| hi[a] - lo[a] + 1);
    let n = dims.iter().map(|&k| k as usize).product::<usize>();
    let cells =
        (lo[2]..=hi[2]).flat_map(|z| (lo[1]..=hi[1]).flat_map(move |y| (lo[0]..=hi[0]).map(move |x| d.index(x, y, z))));
    let (length, velocity, density, rate) = match view.si {
        Some(u) => (u.dx, u.dx / u.dt, u.density, 1.0 / u.dt),
        None => (1.0, 1.0, 1.0, 1.0),
    };
    let mut buf = Vec::with_capacity(n * 21 + 512);
    let title: String = title.chars().filter(|c| *c != '\n').take(200).collect();
    let unit_note = if view.si.is_some() { " (SI units)" } else { " (lattice units)" };
    write!(
        buf,
        "# vtk DataFile Version 3.0\n{title}{unit_note}\nBINARY\nDATASET STRUCTURED_POINTS\nDIMENSIONS {} {} {}\nORIGIN {} {} {}\nSPACING {length} {length} {length}\nPOINT_DATA {n}\n",
        dims[0],
        dims[1],
        dims[2],
        lo[0] as f64 * length,
        lo[1] as f64 * length,
        lo[2] as f64 * length,
    )
    .unwrap();
    buf.extend_from_slice(b"SCALARS density float 1\nLOOKUP_TABLE default\n");
    for c in cells.clone() {
        buf.extend_from_slice(&((fields.rho[c] * density) as f32).to_be_bytes());
    }
    buf.extend_from_slice(b"\nVECTORS velocity float\n");
    for c in cells.clone() {
        for v in fields.u[c] {
            buf.extend_from_slice(&((v * velocity) as f32).to_be_bytes());
        }
    }
    buf.extend_from_slice(b"\nSCALARS vorticity_magnitude float 1\nLOOKUP_TABLE default\n");
    let vorticity = fields.vorticity_magnitude(flags);
    for c in cells.clone() {
        buf.extend_from_slice(&((vorticity[c] * rate) as f32).to_be_bytes());
    }
    buf.extend_from_slice(b"\nSCALARS flags unsigned_char 1\nLOOKUP_TABLE default\n");
    buf.extend(cells.map(|c| flags[c]));
    buf.push(b'\n');
    write_atomic(path, &buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_gpu::Dims;

    #[test]
    fn header_and_payload_sizes() {
        let dims = Dims::new(3, 2, 1);
        let f = Fields { dims, rho: vec![1.0; 6], u: vec![[0.5, 0.0, -0.25]; 6] };
        let dir = std::env::temp_dir().join(format!("lbm-vtk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.vtk");
        write_fields(&path, &f, &[0; 6], "test", &View::default()).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.starts_with("# vtk DataFile Version 3.0\ntest (lattice units)\nBINARY\n"));
        assert!(text.contains("DIMENSIONS 3 2 1"));
        let v = text.find("VECTORS velocity float\n").unwrap() + "VECTORS velocity float\n".len();
        assert_eq!(&bytes[v..v + 4], &0.5f32.to_be_bytes());
        assert!(!dir.join("f.vtk.tmp").exists());
        std::fs::remove_dir_all(&dir).ok();
    }
    #[test]
    fn a_real_vtk_reader_reads_the_fields_back() {
        use vtkio::model::{Attribute, DataSet, IOBuffer};
        let dims = Dims::new(4, 3, 2);
        let n = dims.cells();
        let u: Vec<[f64; 3]> = (0..n).map(|k| [k as f64 * 0.001, -(k as f64) * 0.002, 0.5]).collect();
        let f = Fields { dims, rho: (0..n).map(|k| 1.0 + k as f64 * 1e-3).collect(), u };
        let flags: Vec<u8> = (0..n).map(|k| (k % 2) as u8).collect();
        let dir = std::env::temp_dir().join(format!("lbm-vtkio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.vtk");
        write_fields(&path, &f, &flags, "read back", &View::default()).unwrap();
        let vtk = vtkio::Vtk::import(&path).expect("vtkio reads the file");
        let DataSet::ImageData { extent, pieces, .. } = vtk.data else { panic!("not STRUCTURED_POINTS / image data") };
        assert_eq!(extent, vtkio::model::Extent::Dims([4, 3, 2]));
        let data = match &pieces[0] {
            vtkio::model::Piece::Inline(p) => p.data.clone(),
            _ => panic!("inline piece expected"),
        };
        let mut seen = Vec::new();
        for a in &data.point {
            if let Attribute::DataArray(arr) = a {
                seen.push(arr.name.clone());
                match (arr.name.as_str(), &arr.data) {
                    ("density", IOBuffer::F32(v)) => {
                        assert!(v.iter().zip(&f.rho).all(|(a, b)| (*a as f64 - b).abs() < 1e-6))
                    }
                    ("velocity", IOBuffer::F32(v)) => {
                        assert_eq!(v.len(), 3 * n);
                        assert!((v[3 * 5 + 1] as f64 - f.u[5][1]).abs() < 1e-7);
                    }
                    ("flags", IOBuffer::U8(v)) => assert_eq!(v, &flags),
                    ("vorticity_magnitude", IOBuffer::F32(v)) => assert_eq!(v.len(), n),
                    (name, _) => panic!("unexpected array {name}"),
                }
            }
        }
        seen.sort();
        assert_eq!(seen, ["density", "flags", "velocity", "vorticity_magnitude"]);
        // A region in SI units: 2 x 2 x 1 cells from (1, 1, 1), dx = 0.5 m, dt = 0.25 s.
        let si = UnitConversion { dx: 0.5, dt: 0.25, density: 1000.0 };
        let view = View { region: Some(([1, 1, 1], [2, 2, 1])), si: Some(si) };
        write_fields(&path, &f, &flags, "region", &view).unwrap();
        let vtk = vtkio::Vtk::import(&path).expect("vtkio reads the region");
        let DataSet::ImageData { extent, origin, spacing, pieces, .. } = vtk.data else { panic!() };
        assert_eq!(extent, vtkio::model::Extent::Dims([2, 2, 1]));
        assert_eq!((origin, spacing), ([0.5, 0.5, 0.5], [0.5, 0.5, 0.5]));
        let vtkio::model::Piece::Inline(p) = &pieces[0] else { panic!() };
        let first = dims.index(1, 1, 1);
        for a in &p.data.point {
            if let Attribute::DataArray(arr) = a {
                match (arr.name.as_str(), &arr.data) {
                    ("density", IOBuffer::F32(v)) => assert!((v[0] as f64 - 1000.0 * f.rho[first]).abs() < 1e-2),
                    ("velocity", IOBuffer::F32(v)) => assert!((v[0] as f64 - 2.0 * f.u[first][0]).abs() < 1e-6),
                    _ => {}
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
