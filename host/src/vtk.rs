//! Field output in the legacy VTK format (binary, big-endian
//! STRUCTURED_POINTS), which ParaView and VisIt open directly.

use crate::error::Result;
use crate::fields::Fields;
use crate::files::write_atomic;
use std::io::Write;
use std::path::Path;

/// Writes density, velocity and cell flags of `fields` to `path`, atomically
/// (a temporary file renamed into place, so a reader never sees half a file).
pub fn write_fields(path: &Path, fields: &Fields, flags: &[u8], title: &str) -> Result<()> {
    let d = fields.dims;
    let n = d.cells();
    let mut buf = Vec::with_capacity(n * 17 + 512);
    let title: String = title.chars().filter(|c| *c != '\n').take(200).collect();
    write!(
        buf,
        "# vtk DataFile Version 3.0\n{title}\nBINARY\nDATASET STRUCTURED_POINTS\nDIMENSIONS {} {} {}\nORIGIN 0 0 0\nSPACING 1 1 1\nPOINT_DATA {n}\n",
        d.nx, d.ny, d.nz
    )
    .unwrap();
    buf.extend_from_slice(b"SCALARS density float 1\nLOOKUP_TABLE default\n");
    for r in &fields.rho {
        buf.extend_from_slice(&(*r as f32).to_be_bytes());
    }
    buf.extend_from_slice(b"\nVECTORS velocity float\n");
    for u in &fields.u {
        for c in u {
            buf.extend_from_slice(&(*c as f32).to_be_bytes());
        }
    }
    buf.extend_from_slice(b"\nSCALARS vorticity_magnitude float 1\nLOOKUP_TABLE default\n");
    for w in fields.vorticity_magnitude(flags) {
        buf.extend_from_slice(&(w as f32).to_be_bytes());
    }
    buf.extend_from_slice(b"\nSCALARS flags unsigned_char 1\nLOOKUP_TABLE default\n");
    buf.extend_from_slice(flags);
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
        write_fields(&path, &f, &[0; 6], "test").unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.starts_with("# vtk DataFile Version 3.0\ntest\nBINARY\n"));
        assert!(text.contains("DIMENSIONS 3 2 1"));
        let v = text.find("VECTORS velocity float\n").unwrap() + "VECTORS velocity float\n".len();
        assert_eq!(&bytes[v..v + 4], &0.5f32.to_be_bytes());
        assert!(!dir.join("f.vtk.tmp").exists());
        std::fs::remove_dir_all(&dir).ok();
    }
}
