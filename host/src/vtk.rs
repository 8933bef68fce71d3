//! Field output that ParaView and VisIt open directly: the legacy VTK
//! format (binary, big-endian STRUCTURED_POINTS) for a dense box, and a VTK
//! XML unstructured grid (`.vtu`) of the stored blocks' cells for a sparse
//! grid, so solid regions take no space in the file either.

use crate::case::UnitConversion;
use crate::cell_blocks::CellBlocks;
use crate::error::Result;
use crate::fields::Fields;
use crate::files::write_atomic;
use crate::sparse::SparseLayout;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
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
pub fn write_fields(path: &Path, fields: &Fields, flags: &CellBlocks<u8>, title: &str, view: &View) -> Result<()> {
    let d = fields.dims;
    let (lo, hi) = view.region.unwrap_or(([0; 3], [d.nx - 1, d.ny - 1, d.nz - 1]));
    let dims = [0, 1, 2].map(|a| hi[a] - lo[a] + 1);
    let n = dims.iter().map(|&k| k as usize).product::<usize>();
    let cells =
        (lo[2]..=hi[2]).flat_map(|z| (lo[1]..=hi[1]).flat_map(move |y| (lo[0]..=hi[0]).map(move |x| [x, y, z])));
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
    for c in cells.clone() {
        buf.extend_from_slice(&((fields.vorticity_at(flags, c) * rate) as f32).to_be_bytes());
    }
    buf.extend_from_slice(b"\nSCALARS flags unsigned_char 1\nLOOKUP_TABLE default\n");
    buf.extend(cells.map(|c| flags[c]));
    buf.push(b'\n');
    write_atomic(path, &buf)
}

/// Bytes per cell of [`write_fields`]: density, velocity, vorticity (f32) and flags.
const DENSE_BYTES_PER_CELL: f64 = 21.0;

/// Whether [`write_sparse_fields`] writes a smaller file than
/// [`write_fields`] for `layout`: each stored cell costs its voxel (8 point
/// numbers, an offset and a type), its share of its block's corner points,
/// and its values, all base64 (4/3), against the dense file's 21 B per cell
/// of the box. About a fifth of the box stored is the break-even.
pub fn sparse_file_is_smaller(layout: &SparseLayout) -> bool {
    let [bx, by, bz] = layout.edges().map(f64::from);
    let points = (bx + 1.0) * (by + 1.0) * (bz + 1.0) * 12.0 / (bx * by * bz);
    let per_stored_cell = (32.0 + 4.0 + 1.0 + DENSE_BYTES_PER_CELL + points) * 4.0 / 3.0;
    layout.stored_share() * per_stored_cell < DENSE_BYTES_PER_CELL
}

/// Writes the fields of the cells a sparse grid stores (`layout`'s blocks,
/// within the box and `view`'s region) as voxels of a VTK XML unstructured
/// grid, with the cell data [`write_fields`] writes as point data (a
/// voxel's centre is the dense file's point). Atomic, as [`write_fields`].
pub fn write_sparse_fields(
    path: &Path,
    fields: &Fields,
    flags: &CellBlocks<u8>,
    layout: &SparseLayout,
    title: &str,
    view: &View,
) -> Result<()> {
    write_level_fields(path, fields, flags, layout, title, view, &LevelView { level: 0, keep: &|_| true })
}

/// Which cells of which refinement level a file holds.
pub struct LevelView<'a> {
    /// The level: its cells are `2^level` times finer than level 0's,
    /// whose units (lengths, vorticity) the file keeps.
    pub level: u32,
    /// Whether to write the cell at a position (of the level's box).
    pub keep: &'a dyn Fn([u32; 3]) -> bool,
}

/// [`write_sparse_fields`] of refinement level `at.level`'s cells that
/// `at.keep` keeps, placed and scaled in level-0 units (`view`'s region in
/// level-0 cells).
pub fn write_level_fields(
    path: &Path,
    fields: &Fields,
    flags: &CellBlocks<u8>,
    layout: &SparseLayout,
    title: &str,
    view: &View,
    at: &LevelView,
) -> Result<()> {
    let d = fields.dims;
    let l = at.level;
    let (lo, hi) = match view.region {
        Some((lo, hi)) => (lo.map(|v| v << l), hi.map(|v| ((v + 1) << l) - 1)),
        None => ([0; 3], [d.nx - 1, d.ny - 1, d.nz - 1]),
    };
    let fine = (1u64 << l) as f64;
    let (length, velocity, density, rate) = match view.si {
        Some(u) => (u.dx / fine, u.dx / u.dt, u.density, fine / u.dt),
        None => (1.0 / fine, 1.0, 1.0, fine),
    };
    let [bx, by, bz] = layout.edges();
    let [px, py, pz] = [bx, by, bz].map(|e| e as u64 + 1);
    let (mut points, mut connectivity, mut offsets, mut cells) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for o in &layout.origin {
        let corner = [o[0] * bx, o[1] * by, o[2] * bz];
        let first = (points.len() / 3) as u64;
        for k in 0..pz as u32 {
            for j in 0..py as u32 {
                for i in 0..px as u32 {
                    for (a, v) in [i, j, k].into_iter().enumerate() {
                        points.push(((corner[a] + v) as f64 - 0.5 * fine) * length);
                    }
                }
            }
        }
        let point = |i: u32, j: u32, k: u32| first + i as u64 + px * (j as u64 + py * k as u64);
        for z in 0..bz {
            for y in 0..by {
                for x in 0..bx {
                    let p = [corner[0] + x, corner[1] + y, corner[2] + z];
                    if (0..3).any(|a| p[a] < lo[a] || p[a] > hi[a]) || !(at.keep)(p) {
                        continue;
                    }
                    // VTK_VOXEL corner order: x fastest, then y, then z.
                    for (dz, dy, dx) in
                        [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (1, 0, 0), (1, 0, 1), (1, 1, 0), (1, 1, 1)]
                    {
                        connectivity.push(point(x + dx, y + dy, z + dz));
                    }
                    offsets.push(connectivity.len() as u64);
                    cells.push(p);
                }
            }
        }
    }
    let f32s =
        |f: &dyn Fn([u32; 3]) -> f64| cells.iter().flat_map(|&c| (f(c) as f32).to_le_bytes()).collect::<Vec<u8>>();
    // 32-bit point numbers while they fit.
    let wide = points.len() / 3 > i32::MAX as usize;
    let int = if wide { "Int64" } else { "Int32" };
    let ints = |v: &[u64]| -> Vec<u8> {
        match wide {
            false => v.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect(),
            true => v.iter().flat_map(|&v| (v as i64).to_le_bytes()).collect(),
        }
    };
    let title: String = title.chars().filter(|c| !matches!(c, '\n' | '<' | '>' | '&' | '"')).take(200).collect();
    let unit_note = if view.si.is_some() { "SI units" } else { "lattice units" };
    // (XML element, attributes) of each array, and its bytes, written inline
    // as base64 of a 64-bit byte count followed by the bytes.
    let arrays: [(&str, &str, Vec<u8>); 8] = [
        (
            "Points",
            r#"type="Float32" NumberOfComponents="3""#,
            points.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect(),
        ),
        ("Cells", &format!(r#"type="{int}" Name="connectivity""#), ints(&connectivity)),
        ("Cells", &format!(r#"type="{int}" Name="offsets""#), ints(&offsets)),
        ("Cells", r#"type="UInt8" Name="types""#, vec![11u8; cells.len()]), // VTK_VOXEL
        ("CellData", r#"type="Float32" Name="density""#, f32s(&|c| fields.rho[c] * density)),
        (
            "CellData",
            r#"type="Float32" Name="velocity" NumberOfComponents="3""#,
            cells.iter().flat_map(|&c| fields.u[c].map(|v| (v * velocity) as f32)).flat_map(f32::to_le_bytes).collect(),
        ),
        ("CellData", r#"type="Float32" Name="vorticity_magnitude""#, f32s(&|c| fields.vorticity_at(flags, c) * rate)),
        ("CellData", r#"type="UInt8" Name="flags""#, cells.iter().map(|&c| flags[c]).collect()),
    ];
    let mut xml = format!(
        "<?xml version=\"1.0\"?>\n<!-- {title} ({unit_note}) -->\n<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n<UnstructuredGrid>\n<Piece NumberOfPoints=\"{}\" NumberOfCells=\"{}\">\n",
        points.len() / 3,
        cells.len()
    );
    let mut open = "";
    for (section, attributes, bytes) in &arrays {
        if open != *section {
            if !open.is_empty() {
                xml.push_str(&format!("</{open}>\n"));
            }
            let defaults = if *section == "CellData" { r#" Scalars="density" Vectors="velocity""# } else { "" };
            xml.push_str(&format!("<{section}{defaults}>\n"));
            open = section;
        }
        let mut block = (bytes.len() as u64).to_le_bytes().to_vec();
        block.extend_from_slice(bytes);
        xml.push_str(&format!("<DataArray {attributes} format=\"binary\">{}</DataArray>\n", BASE64.encode(block)));
    }
    xml.push_str(&format!("</{open}>\n</Piece>\n</UnstructuredGrid>\n</VTKFile>\n"));
    let buf = xml.into_bytes();
    write_atomic(path, &buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::BoundaryGroups;
    use kernels_gpu::Dims;

    #[test]
    fn header_and_payload_sizes() {
        let dims = Dims::new(3, 2, 1);
        let f = Fields::from_dense(dims, &[1.0; 6], &[[0.5, 0.0, -0.25]; 6]);
        let dir = std::env::temp_dir().join(format!("lbm-vtk-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.vtk");
        write_fields(&path, &f, &CellBlocks::new(dims, 0), "test", &View::default()).unwrap();
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
        let rho: Vec<f64> = (0..n).map(|k| 1.0 + k as f64 * 1e-3).collect();
        let f = Fields::from_dense(dims, &rho, &u);
        let flags: Vec<u8> = (0..n).map(|k| (k % 2) as u8).collect();
        let blocks = CellBlocks::from_dense(dims, &flags);
        let dir = std::env::temp_dir().join(format!("lbm-vtkio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.vtk");
        write_fields(&path, &f, &blocks, "read back", &View::default()).unwrap();
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
                        assert!(v.iter().zip(&rho).all(|(a, b)| (*a as f64 - b).abs() < 1e-6))
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
        write_fields(&path, &f, &blocks, "region", &view).unwrap();
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

    /// A sparse grid's file holds one voxel per stored cell in the box, at
    /// the cell's place and with its own values; solid blocks are not in
    /// it. Cubic blocks and rows.
    #[test]
    fn sparse_fields_are_the_stored_cells_as_voxels() {
        use crate::domain::{Domain, FaceBoundary};
        use crate::sparse::BlockShape;
        use kernels_gpu::flags::CellKind;
        use vtkio::model::{Attribute, DataSet, IOBuffer, VertexNumbers};
        let dims = Dims::new(128, 12, 8);
        let mut faces = [FaceBoundary::Periodic; 6];
        faces[2] = FaceBoundary::Wall;
        faces[3] = FaceBoundary::Wall;
        let mut domain = Domain::with_faces(dims, faces).unwrap();
        for z in 0..8 {
            for y in 0..9 {
                for x in 0..96 {
                    domain.flags.set([x, y, z], CellKind::Wall.to_flag());
                }
            }
        }
        let n = dims.cells();
        let rho: Vec<f64> = (0..n).map(|k| 1.0 + k as f64 * 1e-4).collect();
        let f = Fields::from_dense(dims, &rho, &vec![[0.01, 0.0, 0.0]; n]);
        let dir = std::env::temp_dir().join(format!("lbm-vtu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for block in [BlockShape::Cube4, BlockShape::Row32] {
            let layout = SparseLayout::build(&domain, block, 1, BoundaryGroups::Lists).unwrap();
            let path = dir.join("s.vtu");
            write_sparse_fields(&path, &f, &domain.flags, &layout, "sparse", &View::default()).unwrap();
            let vtk = vtkio::Vtk::import(&path).expect("vtkio reads the file");
            let DataSet::UnstructuredGrid { pieces, .. } = vtk.data else { panic!("not an unstructured grid") };
            let vtkio::model::Piece::Inline(p) = &pieces[0] else { panic!("inline piece expected") };
            let stored = (0..layout.cells() as u32).filter(|&c| layout.dense_of(c).is_some()).count();
            assert!(stored < n, "blocks were left out");
            assert_eq!(p.cells.types.len(), stored, "{block:?}");
            let Some(Attribute::DataArray(rho)) = p.data.cell.iter().find(|a| a.name() == "density") else { panic!() };
            let IOBuffer::F32(rho) = &rho.data else { panic!("f32 density") };
            let points: Vec<f64> = p.points.clone().cast_into().expect("numeric points");
            let VertexNumbers::XML { connectivity, offsets } = &p.cells.cell_verts else { panic!("XML cells") };
            let mut seen = vec![false; n];
            for (k, &density) in rho.iter().enumerate() {
                // The voxel's first corner is its cell's low corner, half a cell below the centre.
                let first = if k == 0 { 0 } else { offsets[k - 1] as usize };
                let corner = &points[3 * connectivity[first] as usize..][..3];
                let [x, y, z] = [0, 1, 2].map(|a| (corner[a] + 0.5) as u32);
                let m = dims.index(x, y, z);
                assert!(!seen[m], "{block:?}: two voxels at {x} {y} {z}");
                seen[m] = true;
                assert_eq!(density, f.rho[m] as f32, "{block:?}: voxel {k} at {x} {y} {z}");
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    /// The sparse file is written where it is the smaller: a thin pipe
    /// through a solid block, not a box that is mostly flow.
    #[test]
    fn the_smaller_file_is_chosen() {
        use crate::domain::{Domain, FaceBoundary};
        use kernels_gpu::flags::CellKind;
        let dims = Dims::new(64, 64, 16);
        // Flow where 5 <= y, z < 5 + width, along x.
        let domain = |width: u32| {
            let mut d = Domain::with_faces(dims, [FaceBoundary::Periodic; 6]).unwrap();
            for n in 0..dims.cells() {
                let (x, y, z) = dims.coords(n as u32);
                if !(5..5 + width).contains(&y) || !(5..5 + width).contains(&z) {
                    d.flags.set([x, y, z], CellKind::Wall.to_flag());
                }
            }
            d
        };
        let cube = crate::sparse::BlockShape::Cube4;
        let thin = SparseLayout::build(&domain(2), cube, 1, BoundaryGroups::Lists).unwrap();
        let full = SparseLayout::build(&domain(11), cube, 1, BoundaryGroups::Lists).unwrap();
        assert!(thin.stored_share() < 0.1 && sparse_file_is_smaller(&thin), "{}", thin.stored_share());
        assert!(!sparse_file_is_smaller(&full));
    }
}
