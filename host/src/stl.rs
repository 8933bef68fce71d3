//! STL geometry: loading (ASCII and binary, through `stl_io`), mesh
//! diagnostics (holes, non-manifold edges, inverted normals) and placement
//! (scale, rotation, translation) of a mesh in the domain.
//!
//! Loading never panics, whatever the bytes: every failure is an [`StlError`]
//! (inside [`Error::Stl`](crate::Error::Stl)) that names the file, says what is wrong and how to
//! fix it.

use std::collections::HashMap;
use std::fmt;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use glam::{DMat3, DVec3};

use crate::error::Result;

/// A triangle soup: each triangle is three vertices, ordered counter-clockwise
/// when seen from outside (the STL convention; diagnostics detect the reverse).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// The triangles.
    pub triangles: Vec<[DVec3; 3]>,
}

/// Why an STL file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum StlError {
    /// The file does not exist.
    #[error("STL file {path} does not exist: check the geometry path (a relative path is resolved against the current working directory)")]
    NotFound {
        /// The file asked for.
        path: PathBuf,
    },
    /// The file exists but could not be read.
    #[error("cannot read STL file {path}: {source}; check that it is a readable file, not a directory, and that you have permission to read it")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The file has no bytes at all.
    #[error("STL file {path} is empty (0 bytes): the export or copy failed; re-export the geometry from the CAD tool")]
    EmptyFile {
        /// The file.
        path: PathBuf,
    },
    /// A binary STL whose header announces more triangles than the file holds.
    #[error("binary STL file {path} is truncated: its header announces {announced} triangles ({expected_bytes} bytes) but the file has only {actual_bytes} bytes; it was probably cut off while copying or downloading: copy it again or re-export it")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Triangles announced by the header.
        announced: u64,
        /// Bytes such a file needs.
        expected_bytes: u64,
        /// Bytes the file has.
        actual_bytes: u64,
    },
    /// The bytes are neither a valid ASCII nor a valid binary STL.
    #[error("{path} is not a valid STL file: {detail}; re-export it from the CAD tool as STL (binary STL is the most robust choice)")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What the parser found.
        detail: String,
    },
    /// The file is a valid STL with no triangle in it.
    #[error(
        "STL file {path} contains no triangles: export the solid body itself (not an empty sketch, part or assembly)"
    )]
    EmptyMesh {
        /// The file.
        path: PathBuf,
    },
    /// A vertex coordinate is NaN or infinite.
    #[error("STL file {path}: triangle {triangle} has a non-finite coordinate (NaN or infinity): the file is corrupt or the exporter failed; repair the mesh (e.g. in MeshLab) or re-export it")]
    NonFinite {
        /// The file.
        path: PathBuf,
        /// Index of the first bad triangle (0-based).
        triangle: usize,
    },
}

/// Name used in messages for bytes that do not come from a file.
const IN_MEMORY: &str = "<in-memory STL>";

/// Loads an ASCII or binary STL file.
pub fn load_stl(path: &Path) -> Result<Mesh> {
    let bytes = std::fs::read(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            StlError::NotFound { path: path.to_path_buf() }
        } else {
            StlError::Io { path: path.to_path_buf(), source }
        }
    })?;
    Ok(parse_named(&bytes, path)?)
}

/// Parses STL bytes (ASCII or binary); messages call the source `<in-memory STL>`.
pub fn parse_stl_bytes(bytes: &[u8]) -> Result<Mesh> {
    Ok(parse_named(bytes, Path::new(IN_MEMORY))?)
}

/// Size of a binary STL header: 80 bytes of free text and a `u32` triangle count.
const BINARY_HEADER: usize = 84;
/// Size of one binary STL record: normal, three vertices (12 `f32`) and a `u16`.
const BINARY_RECORD: u64 = 50;

fn parse_named(bytes: &[u8], path: &Path) -> Result<Mesh, StlError> {
    let path_buf = || path.to_path_buf();
    if bytes.is_empty() {
        return Err(StlError::EmptyFile { path: path_buf() });
    }
    // The announced size of a binary STL, if the bytes can hold a header.
    let binary_size = (bytes.len() >= BINARY_HEADER).then(|| {
        let announced = u64::from(u32::from_le_bytes([bytes[80], bytes[81], bytes[82], bytes[83]]));
        (announced, BINARY_HEADER as u64 + BINARY_RECORD * announced)
    });

    let triangles = if looks_ascii(bytes) {
        match parse_ascii(bytes) {
            Ok(t) => t,
            // Many CAD tools write binary STL whose free-text header starts
            // with "solid": if the size is exactly that of a binary STL, it is one.
            Err(ascii_err) => match binary_size {
                Some((_, size)) if size == bytes.len() as u64 => parse_binary(bytes, path)?,
                // Binary content (NUL bytes) after a "solid" header: a cut binary file.
                Some((announced, size)) if size > bytes.len() as u64 && bytes.contains(&0) => {
                    return Err(StlError::Truncated {
                        path: path_buf(),
                        announced,
                        expected_bytes: size,
                        actual_bytes: bytes.len() as u64,
                    })
                }
                _ => {
                    return Err(StlError::Malformed {
                        path: path_buf(),
                        detail: format!("it starts with \"solid\" like an ASCII STL, but {ascii_err}"),
                    })
                }
            },
        }
    } else {
        match binary_size {
            None => {
                return Err(StlError::Malformed {
                    path: path_buf(),
                    detail: format!(
                        "it does not start with \"solid\" (ASCII STL) and its {} bytes are fewer than the {BINARY_HEADER}-byte header of a binary STL",
                        bytes.len()
                    ),
                })
            }
            // The triangle count of a binary STL is binary; four printable
            // characters there mean a text file that is not an ASCII STL.
            Some(_) if bytes[80..84].iter().all(|b| b.is_ascii_graphic() || b.is_ascii_whitespace()) => {
                return Err(StlError::Malformed {
                    path: path_buf(),
                    detail: "it is text but does not begin with the keyword \"solid\" of an ASCII STL".into(),
                })
            }
            Some((announced, size)) if size > bytes.len() as u64 => {
                return Err(StlError::Truncated {
                    path: path_buf(),
                    announced,
                    expected_bytes: size,
                    actual_bytes: bytes.len() as u64,
                })
            }
            Some(_) => parse_binary(bytes, path)?,
        }
    };

    if triangles.is_empty() {
        return Err(StlError::EmptyMesh { path: path_buf() });
    }
    if let Some(i) = triangles.iter().position(|t| t.iter().any(|v| !v.is_finite())) {
        return Err(StlError::NonFinite { path: path_buf(), triangle: i });
    }
    Ok(Mesh { triangles })
}

/// Whether the bytes begin (after an optional UTF-8 byte-order mark and
/// white space) with the ASCII STL keyword `solid`, in any case.
fn looks_ascii(bytes: &[u8]) -> bool {
    let text = ascii_body(bytes);
    text.len() >= 5 && text[..5].eq_ignore_ascii_case(b"solid")
}

/// The bytes without a UTF-8 byte-order mark and leading white space.
fn ascii_body(bytes: &[u8]) -> &[u8] {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    &bytes[start..]
}

/// Keeps parser messages short: a garbage line can be megabytes long.
fn shorten(message: String) -> String {
    const MAX: usize = 200;
    if message.len() <= MAX {
        return message;
    }
    let mut end = MAX;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

/// Parses ASCII STL with `stl_io`, after normalising what real exporters
/// write and `stl_io` rejects: upper-case keywords, a nameless `solid` line,
/// a byte-order mark, leading blank lines, and several `solid ... endsolid`
/// blocks in one file (one per body).
fn parse_ascii(bytes: &[u8]) -> Result<Vec<[DVec3; 3]>, String> {
    let text =
        std::str::from_utf8(ascii_body(bytes)).map_err(|e| format!("it is not valid text ({e})"))?.to_ascii_lowercase();
    // Split into one block per `solid` line.
    let mut blocks: Vec<String> = Vec::new();
    for line in text.lines() {
        let first = line.split_whitespace().next();
        if first == Some("solid") || blocks.is_empty() {
            // stl_io wants "solid <name>"; the name is optional in practice.
            let name = line.trim_start().get(5..).unwrap_or("").trim();
            blocks.push(format!("solid {}\n", if name.is_empty() { "unnamed" } else { name }));
        } else if let Some(block) = blocks.last_mut() {
            block.push_str(line);
            block.push('\n');
        }
    }
    let mut triangles = Vec::new();
    for (b, block) in blocks.iter().enumerate() {
        let mut cursor = Cursor::new(block.as_bytes());
        let reader = stl_io::create_stl_reader(&mut cursor)
            .map_err(|e| shorten(format!("solid block {} cannot be read: {e}", b + 1)))?;
        for t in reader {
            let t = t.map_err(|e| {
                shorten(format!("the ASCII text is broken after {} complete facets: {e}", triangles.len()))
            })?;
            triangles.push(t.vertices.map(|v| DVec3::from(v.0.map(f64::from))));
        }
    }
    Ok(triangles)
}

/// Parses binary STL with `stl_io`; the caller checked the size.
fn parse_binary(bytes: &[u8], path: &Path) -> Result<Vec<[DVec3; 3]>, StlError> {
    // stl_io decides ASCII versus binary by the header starting with "solid ":
    // blank the free-text header so that it reads the bytes as binary.
    let mut owned = bytes.to_vec();
    owned[..80].fill(0);
    let mut cursor = Cursor::new(owned);
    let malformed = |e: std::io::Error| StlError::Malformed {
        path: path.to_path_buf(),
        detail: shorten(format!("binary STL: {e}")),
    };
    let reader = stl_io::create_stl_reader(&mut cursor).map_err(malformed)?;
    let mut triangles = Vec::new();
    for t in reader {
        let t = t.map_err(malformed)?;
        triangles.push(t.vertices.map(|v| DVec3::from(v.0.map(f64::from))));
    }
    Ok(triangles)
}

/// Diagnostics of a mesh, from [`diagnose`].
#[derive(Clone, Debug, PartialEq)]
pub struct MeshReport {
    /// Number of triangles.
    pub triangles: usize,
    /// Edges used by exactly one triangle (the rims of holes).
    pub open_edges: usize,
    /// Edges used by more than two triangles.
    pub non_manifold_edges: usize,
    /// Triangles of (near) zero area: two vertices welded together, or a
    /// height below the weld tolerance.
    pub degenerate_triangles: usize,
    /// The signed volume is negative: the normals point inward.
    pub inverted: bool,
    /// Volume enclosed by the mesh (divergence theorem), negative if inverted.
    pub signed_volume: f64,
    /// Bounding box (min, max) of the vertices; zero for an empty mesh.
    pub bounds: (DVec3, DVec3),
}

impl MeshReport {
    /// Every edge is shared by exactly two triangles (and there is a triangle).
    pub fn is_watertight(&self) -> bool {
        self.triangles > 0 && self.open_edges == 0 && self.non_manifold_edges == 0
    }
}

impl fmt::Display for MeshReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (lo, hi) = self.bounds;
        write!(
            f,
            "mesh has {} triangles within ({:.6}, {:.6}, {:.6}) .. ({:.6}, {:.6}, {:.6}) and encloses a volume of {:.6e}",
            self.triangles, lo.x, lo.y, lo.z, hi.x, hi.y, hi.z, self.signed_volume.abs()
        )?;
        if self.triangles == 0 {
            return write!(f, "; it is empty: there is nothing to voxelise.");
        }
        if self.is_watertight() {
            write!(f, "; it is watertight (every edge is shared by exactly two triangles)")?;
        }
        write!(f, ".")?;
        if self.open_edges > 0 {
            write!(
                f,
                " It has {} open edges: it is not watertight; the inside test uses a winding number, so small holes do not leak, but check the geometry.",
                self.open_edges
            )?;
        }
        if self.non_manifold_edges > 0 {
            write!(
                f,
                " It has {} non-manifold edges (shared by more than two triangles): bodies touch along an edge or the surface intersects itself; the winding number still counts a point inside if any part encloses it, but check the geometry.",
                self.non_manifold_edges
            )?;
        }
        if self.degenerate_triangles > 0 {
            write!(
                f,
                " It has {} degenerate (zero-area) triangles: harmless for the inside test, but a sign of a poor export.",
                self.degenerate_triangles
            )?;
        }
        if self.inverted {
            write!(
                f,
                " Its normals point inward (negative signed volume): the inside test does not depend on orientation, so this is handled, but other tools may misread the file."
            )?;
        }
        Ok(())
    }
}

/// Checks a mesh for holes, non-manifold edges, degenerate triangles and
/// inward normals.
pub fn diagnose(mesh: &Mesh) -> MeshReport {
    let n = mesh.triangles.len();
    let (mut lo, mut hi) = (DVec3::splat(f64::INFINITY), DVec3::splat(f64::NEG_INFINITY));
    for v in mesh.triangles.iter().flatten() {
        lo = lo.min(*v);
        hi = hi.max(*v);
    }
    if n == 0 || !lo.is_finite() || !hi.is_finite() {
        return MeshReport {
            triangles: n,
            open_edges: 0,
            non_manifold_edges: 0,
            degenerate_triangles: 0,
            inverted: false,
            signed_volume: 0.0,
            bounds: (DVec3::ZERO, DVec3::ZERO),
        };
    }

    // Weld tolerance. Edges are matched by vertex position, but the same
    // corner is not always written bit-identically: STL stores f32 (about 7
    // significant digits, so a copy of a vertex can differ by a few ulps,
    // i.e. a few 1e-7 of the coordinate's magnitude, which matters for a part
    // placed far from the origin), and ASCII exporters round to ~6 digits.
    // 1e-5 of the bounding-box diagonal absorbs such rounding yet is far below
    // any real feature (a mesh would need ~1e5 triangles along its diagonal
    // for distinct vertices to come that close); the second term covers
    // f32 rounding of large coordinates.
    let diagonal = (hi - lo).length();
    let magnitude = lo.abs().max(hi.abs()).max_element();
    let tol = (1e-5 * diagonal).max(4.0 * f64::from(f32::EPSILON) * magnitude).max(f64::MIN_POSITIVE);

    // Weld through a hash grid of cell size `tol`: a vertex joins the first
    // representative within `tol` in its own or a neighbouring cell.
    let key = |p: DVec3| {
        let q = ((p - lo) / tol).floor();
        (q.x as i64, q.y as i64, q.z as i64)
    };
    let mut grid: HashMap<(i64, i64, i64), Vec<u32>> = HashMap::new();
    let mut reps: Vec<DVec3> = Vec::new();
    let mut weld = |p: DVec3| -> u32 {
        let (kx, ky, kz) = key(p);
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    if let Some(ids) = grid.get(&(kx + dx, ky + dy, kz + dz)) {
                        if let Some(&id) = ids.iter().find(|&&id| reps[id as usize].distance(p) <= tol) {
                            return id;
                        }
                    }
                }
            }
        }
        let id = reps.len() as u32;
        reps.push(p);
        grid.entry((kx, ky, kz)).or_default().push(id);
        id
    };

    let mut edges: HashMap<(u32, u32), u32> = HashMap::new();
    let mut degenerate = 0;
    let centre = 0.5 * (lo + hi);
    let mut six_volume = 0.0;
    for t in &mesh.triangles {
        let ids = t.map(&mut weld);
        let (a, b, c) = (t[0] - centre, t[1] - centre, t[2] - centre);
        six_volume += a.dot(b.cross(c));
        if ids[0] == ids[1] || ids[1] == ids[2] || ids[2] == ids[0] {
            // Collapsed: its "edges" would be self-loops or doubled; skip them.
            degenerate += 1;
            continue;
        }
        // A triangle whose height is below the weld tolerance is flat at the
        // mesh's own resolution (a needle or a cap).
        let longest = (b - a).length().max((c - b).length()).max((a - c).length());
        if (b - a).cross(c - a).length() <= tol * longest {
            degenerate += 1;
        }
        for k in 0..3 {
            let (u, v) = (ids[k], ids[(k + 1) % 3]);
            *edges.entry((u.min(v), u.max(v))).or_default() += 1;
        }
    }
    let open_edges = edges.values().filter(|&&c| c == 1).count();
    let non_manifold_edges = edges.values().filter(|&&c| c > 2).count();
    let signed_volume = six_volume / 6.0;
    MeshReport {
        triangles: n,
        open_edges,
        non_manifold_edges,
        degenerate_triangles: degenerate,
        inverted: signed_volume < 0.0,
        signed_volume,
        bounds: (lo, hi),
    }
}

/// Where a mesh goes in the domain: `p' = R (scale p) + translation`, with
/// `R` rotating about the coordinate axes through the origin (not about the
/// mesh's centre), first about x, then y, then z.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placement {
    /// Uniform scale factor (e.g. 0.001 for a mesh drawn in millimetres).
    /// A negative scale mirrors the mesh, which the voxeliser handles.
    pub scale: f64,
    /// Rotation angles in degrees about x, then y, then z.
    pub rotation_deg: [f64; 3],
    /// Translation, applied last.
    pub translation: [f64; 3],
}

impl Default for Placement {
    fn default() -> Self {
        Self { scale: 1.0, rotation_deg: [0.0; 3], translation: [0.0; 3] }
    }
}

impl Placement {
    /// The rotation matrix `Rz * Ry * Rx`.
    pub fn rotation(&self) -> DMat3 {
        let [x, y, z] = self.rotation_deg.map(f64::to_radians);
        DMat3::from_rotation_z(z) * DMat3::from_rotation_y(y) * DMat3::from_rotation_x(x)
    }

    /// Applies the placement to one point.
    pub fn apply(&self, p: DVec3) -> DVec3 {
        self.rotation() * (self.scale * p) + DVec3::from(self.translation)
    }
}

/// The mesh moved by `p` (see [`Placement`]).
pub fn transformed(mesh: &Mesh, p: &Placement) -> Mesh {
    let r = p.rotation() * p.scale;
    let t = DVec3::from(p.translation);
    Mesh { triangles: mesh.triangles.iter().map(|tri| tri.map(|v| r * v + t)).collect() }
}

/// Test meshes, shared with the voxeliser's tests.
#[cfg(test)]
pub(crate) mod test_meshes {
    use super::Mesh;
    use glam::DVec3;

    /// Closed, outward-oriented box `[lo, hi]`: 12 triangles.
    pub fn cube(lo: DVec3, hi: DVec3) -> Mesh {
        let c = |i: usize| {
            DVec3::new(
                if i & 1 == 0 { lo.x } else { hi.x },
                if i & 2 == 0 { lo.y } else { hi.y },
                if i & 4 == 0 { lo.z } else { hi.z },
            )
        };
        // Each face as a quad counter-clockwise seen from outside.
        let faces = [
            [0, 4, 6, 2], // -x
            [1, 3, 7, 5], // +x
            [0, 1, 5, 4], // -y
            [2, 6, 7, 3], // +y
            [0, 2, 3, 1], // -z
            [4, 5, 7, 6], // +z
        ];
        let mut triangles = Vec::new();
        for q in faces {
            triangles.push([c(q[0]), c(q[1]), c(q[2])]);
            triangles.push([c(q[0]), c(q[2]), c(q[3])]);
        }
        Mesh { triangles }
    }

    /// Icosphere: an icosahedron subdivided `levels` times, vertices pushed
    /// to the sphere; 20 * 4^levels outward-oriented triangles.
    pub fn icosphere(centre: DVec3, radius: f64, levels: u32) -> Mesh {
        let p = (1.0 + 5f64.sqrt()) / 2.0;
        let v: Vec<DVec3> = [
            [-1.0, p, 0.0],
            [1.0, p, 0.0],
            [-1.0, -p, 0.0],
            [1.0, -p, 0.0],
            [0.0, -1.0, p],
            [0.0, 1.0, p],
            [0.0, -1.0, -p],
            [0.0, 1.0, -p],
            [p, 0.0, -1.0],
            [p, 0.0, 1.0],
            [-p, 0.0, -1.0],
            [-p, 0.0, 1.0],
        ]
        .iter()
        .map(|a| DVec3::from(*a).normalize())
        .collect();
        let idx: [[usize; 3]; 20] = [
            [0, 11, 5],
            [0, 5, 1],
            [0, 1, 7],
            [0, 7, 10],
            [0, 10, 11],
            [1, 5, 9],
            [5, 11, 4],
            [11, 10, 2],
            [10, 7, 6],
            [7, 1, 8],
            [3, 9, 4],
            [3, 4, 2],
            [3, 2, 6],
            [3, 6, 8],
            [3, 8, 9],
            [4, 9, 5],
            [2, 4, 11],
            [6, 2, 10],
            [8, 6, 7],
            [9, 8, 1],
        ];
        let mut tris: Vec<[DVec3; 3]> = idx.iter().map(|t| t.map(|i| v[i])).collect();
        for _ in 0..levels {
            let mut next = Vec::with_capacity(tris.len() * 4);
            for [a, b, c] in tris {
                let (ab, bc, ca) = ((a + b).normalize(), (b + c).normalize(), (c + a).normalize());
                next.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
            }
            tris = next;
        }
        Mesh { triangles: tris.into_iter().map(|t| t.map(|u| centre + radius * u)).collect() }
    }

    /// Torus about the z axis: `2 * n_major * n_minor` outward triangles.
    pub fn torus(centre: DVec3, major: f64, minor: f64, n_major: usize, n_minor: usize) -> Mesh {
        use std::f64::consts::TAU;
        let point = |i: usize, j: usize| {
            let (u, v) = (TAU * i as f64 / n_major as f64, TAU * j as f64 / n_minor as f64);
            let ring = major + minor * v.cos();
            centre + DVec3::new(ring * u.cos(), ring * u.sin(), minor * v.sin())
        };
        let mut triangles = Vec::with_capacity(2 * n_major * n_minor);
        for i in 0..n_major {
            for j in 0..n_minor {
                let (a, b) = (point(i, j), point(i + 1, j));
                let (c, d) = (point(i + 1, j + 1), point(i, j + 1));
                triangles.push([a, b, c]);
                triangles.push([a, c, d]);
            }
        }
        Mesh { triangles }
    }

    /// The same mesh with every triangle's vertex order reversed.
    pub fn flipped(mesh: &Mesh) -> Mesh {
        Mesh { triangles: mesh.triangles.iter().map(|[a, b, c]| [*a, *c, *b]).collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::test_meshes::{cube, flipped, icosphere, torus};
    use super::*;
    use proptest::prelude::*;

    fn to_binary_stl(mesh: &Mesh) -> Vec<u8> {
        let tris: Vec<stl_io::Triangle> = mesh
            .triangles
            .iter()
            .map(|t| {
                let n = (t[1] - t[0]).cross(t[2] - t[0]).normalize_or_zero();
                stl_io::Triangle {
                    normal: stl_io::Normal::new(n.as_vec3().to_array()),
                    vertices: t.map(|v| stl_io::Vertex::new(v.as_vec3().to_array())),
                }
            })
            .collect();
        let mut out = Vec::new();
        stl_io::write_stl(&mut out, tris.iter()).unwrap();
        out
    }

    /// stl_io only writes binary; ASCII is text, written here with `{:e}`
    /// of the f32 values so that the round trip is exact.
    fn to_ascii_stl(mesh: &Mesh, name: &str) -> String {
        let mut s = format!("solid {name}\n");
        for t in &mesh.triangles {
            let n = (t[1] - t[0]).cross(t[2] - t[0]).normalize_or_zero().as_vec3();
            s += &format!("  facet normal {:e} {:e} {:e}\n    outer loop\n", n.x, n.y, n.z);
            for v in t {
                let v = v.as_vec3();
                s += &format!("      vertex {:e} {:e} {:e}\n", v.x, v.y, v.z);
            }
            s += "    endloop\n  endfacet\n";
        }
        s + &format!("endsolid {name}\n")
    }

    /// The mesh as f32, as an STL stores it.
    fn as_f32(mesh: &Mesh) -> Mesh {
        Mesh { triangles: mesh.triangles.iter().map(|t| t.map(|v| v.as_vec3().as_dvec3())).collect() }
    }

    fn sphere() -> Mesh {
        icosphere(DVec3::new(0.1, -0.2, 0.3), 1.7, 2)
    }

    #[test]
    fn stl_binary_round_trip() {
        for mesh in [cube(DVec3::ZERO, DVec3::ONE), sphere()] {
            let bytes = to_binary_stl(&mesh);
            assert_eq!(bytes.len(), 84 + 50 * mesh.triangles.len());
            let back = parse_stl_bytes(&bytes).unwrap();
            assert_eq!(back, as_f32(&mesh));
        }
    }

    #[test]
    fn stl_ascii_round_trip() {
        for mesh in [cube(DVec3::ZERO, DVec3::ONE), sphere()] {
            let text = to_ascii_stl(&mesh, "part");
            assert_eq!(parse_stl_bytes(text.as_bytes()).unwrap(), as_f32(&mesh));
        }
    }

    #[test]
    fn stl_ascii_variants_real_exporters_write() {
        let mesh = cube(DVec3::ZERO, DVec3::ONE);
        let text = to_ascii_stl(&mesh, "x");
        // Nameless solid, upper case, CRLF, byte-order mark, leading blanks.
        let nameless = text.replacen("solid x\n", "solid\n", 1);
        let upper = format!("\u{feff}\n  {}", nameless.to_uppercase().replace('\n', "\r\n"));
        assert_eq!(parse_stl_bytes(upper.as_bytes()).unwrap(), mesh);
        // Two bodies in one file.
        let other = cube(DVec3::splat(2.0), DVec3::splat(3.0));
        let two = text.clone() + &to_ascii_stl(&other, "y");
        let both = parse_stl_bytes(two.as_bytes()).unwrap();
        assert_eq!(both.triangles.len(), 24);
        assert_eq!(both.triangles[12..], other.triangles[..]);
    }

    #[test]
    fn stl_binary_whose_header_says_solid() {
        let mesh = cube(DVec3::ZERO, DVec3::ONE);
        let mut bytes = to_binary_stl(&mesh);
        bytes[..20].copy_from_slice(b"solid exported by X ");
        assert_eq!(parse_stl_bytes(&bytes).unwrap(), mesh);
    }

    #[test]
    fn stl_load_from_file_and_missing_file() {
        let dir = std::env::temp_dir().join(format!("lbm-stl-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cube.stl");
        let mesh = cube(DVec3::ZERO, DVec3::ONE);
        std::fs::write(&path, to_binary_stl(&mesh)).unwrap();
        assert_eq!(load_stl(&path).unwrap(), mesh);

        let missing = dir.join("nope.stl");
        let err = load_stl(&missing).unwrap_err();
        assert!(matches!(err, crate::Error::Stl(StlError::NotFound { .. })), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("nope.stl") && msg.contains("does not exist"), "{msg}");

        let err = load_stl(&dir).unwrap_err();
        assert!(err.to_string().contains(&dir.display().to_string()), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stl_broken_inputs_give_helpful_errors() {
        let msg = |bytes: &[u8]| parse_stl_bytes(bytes).unwrap_err().to_string();

        let m = msg(b"");
        assert!(m.contains("empty (0 bytes)") && m.contains(IN_MEMORY), "{m}");

        let full = to_binary_stl(&cube(DVec3::ZERO, DVec3::ONE));
        let m = msg(&full[..full.len() - 7]);
        assert!(m.contains("truncated") && m.contains("12 triangles"), "{m}");
        let m = msg(&full[..40]);
        assert!(m.contains("fewer than the 84-byte header"), "{m}");

        let m = msg(b"hello, this is not a mesh at all, just some text that goes on and on for a while so that it is longer than a header");
        assert!(m.contains("not a valid STL") && m.contains("it is text"), "{m}");
        let mut cut_solid = full.clone();
        cut_solid[..6].copy_from_slice(b"solid ");
        let m = msg(&cut_solid[..300]);
        assert!(m.contains("truncated"), "{m}");

        let m = msg(b"solid broken\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0\n");
        assert!(m.contains("not a valid STL") && m.contains("after 0 complete facets"), "{m}");

        let text = to_ascii_stl(&cube(DVec3::ZERO, DVec3::ONE), "c");
        let m = msg(text.replacen("vertex 0e0", "vertex nan", 1).as_bytes());
        assert!(m.contains("not a valid STL"), "{m}");
        let m = msg(&text.as_bytes()[..text.len() / 2]);
        assert!(m.contains("complete facets"), "{m}");

        let m = msg(b"solid empty\nendsolid empty\n");
        assert!(m.contains("contains no triangles"), "{m}");
        let mut header_only = vec![0u8; 84];
        header_only[..5].copy_from_slice(b"model");
        let m = msg(&header_only);
        assert!(m.contains("contains no triangles"), "{m}");

        let mut nan = full.clone();
        // Triangle 3, first vertex x (after the 12-byte normal).
        let at = 84 + 3 * 50 + 12;
        nan[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        let err = parse_stl_bytes(&nan).unwrap_err();
        assert!(matches!(err, crate::Error::Stl(StlError::NonFinite { triangle: 3, .. })), "{err}");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn stl_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            let _ = parse_stl_bytes(&bytes);
        }

        #[test]
        fn stl_never_panics_on_solid_prefixed_garbage(tail in "[ -~\n]{0,300}") {
            let _ = parse_stl_bytes(format!("solid {tail}").as_bytes());
        }

        #[test]
        fn stl_truncations_and_corruptions(cut in 0usize..(84 + 50 * 12), flip in 0usize..(84 + 50 * 12), byte in any::<u8>()) {
            let full = to_binary_stl(&cube(DVec3::ZERO, DVec3::ONE));
            prop_assert!(parse_stl_bytes(&full[..cut]).is_err());
            let mut corrupt = full.clone();
            corrupt[flip] = byte;
            let _ = parse_stl_bytes(&corrupt);
            let text = to_ascii_stl(&cube(DVec3::ZERO, DVec3::ONE), "c");
            let cut = cut * text.len() / full.len();
            // A cut ASCII file is incomplete: an error, never a panic; only
            // cutting the solid's name (" c\n") after `endsolid` leaves it valid.
            let parsed = parse_stl_bytes(&text.as_bytes()[..cut]);
            prop_assert_eq!(parsed.is_ok(), cut >= text.len() - " c\n".len());
        }
    }

    #[test]
    fn stl_diagnose_closed_cube_and_sphere() {
        let r = diagnose(&cube(DVec3::ZERO, DVec3::new(1.0, 2.0, 3.0)));
        assert_eq!((r.triangles, r.open_edges, r.non_manifold_edges), (12, 0, 0));
        assert_eq!(r.degenerate_triangles, 0);
        assert!(!r.inverted && r.is_watertight());
        assert!((r.signed_volume - 6.0).abs() < 1e-12);
        assert_eq!(r.bounds, (DVec3::ZERO, DVec3::new(1.0, 2.0, 3.0)));
        assert!(r.to_string().contains("watertight"), "{r}");

        // An icosphere: 480 edges, each shared by exactly two of 320 triangles.
        let r = diagnose(&as_f32(&sphere()));
        assert_eq!((r.triangles, r.open_edges, r.non_manifold_edges), (320, 0, 0));
        assert!(r.is_watertight() && !r.inverted);
        let v = 4.0 / 3.0 * std::f64::consts::PI * 1.7f64.powi(3);
        assert!(r.signed_volume < v && r.signed_volume > 0.9 * v, "{}", r.signed_volume);
        let r = diagnose(&torus(DVec3::ZERO, 2.0, 0.5, 24, 12));
        assert!(r.is_watertight(), "{r}");
    }

    #[test]
    fn stl_diagnose_hole_inverted_nonmanifold_degenerate() {
        let closed = cube(DVec3::ZERO, DVec3::ONE);
        let mut holed = closed.clone();
        holed.triangles.remove(5);
        let r = diagnose(&holed);
        assert_eq!(r.open_edges, 3);
        assert!(!r.is_watertight());
        let text = r.to_string();
        assert!(text.contains("3 open edges: it is not watertight"), "{text}");

        let r = diagnose(&flipped(&closed));
        assert!(r.inverted && r.is_watertight());
        assert!((r.signed_volume + 1.0).abs() < 1e-12);
        assert!(r.to_string().contains("point inward"), "{r}");

        // Two cubes sharing an edge: the 4 triangles along it make it non-manifold.
        let mut two = closed.clone();
        two.triangles.extend(cube(DVec3::ONE, DVec3::splat(2.0)).triangles);
        let mut touching = closed.clone();
        touching.triangles.extend(cube(DVec3::new(1.0, 1.0, 0.0), DVec3::new(2.0, 2.0, 1.0)).triangles);
        let r = diagnose(&touching);
        assert_eq!((r.open_edges, r.non_manifold_edges), (0, 1), "{r}");
        assert!(r.to_string().contains("1 non-manifold edges"), "{r}");

        // A collapsed and a flat triangle; vertices off by 1e-9 still weld.
        let mut degenerate = closed.clone();
        degenerate.triangles[0][0] += DVec3::splat(1e-9);
        degenerate.triangles.push([DVec3::ZERO, DVec3::ZERO, DVec3::ONE]);
        degenerate.triangles.push([DVec3::ZERO, DVec3::splat(0.5), DVec3::ONE]);
        let r = diagnose(&degenerate);
        assert_eq!(r.degenerate_triangles, 2);
        // The flat triangle's edges are unmatched.
        assert_eq!((r.open_edges, r.non_manifold_edges), (3, 0), "{r}");
        assert!(r.to_string().contains("2 degenerate"), "{r}");
        assert!(diagnose(&two).is_watertight());
    }

    #[test]
    fn stl_placement_moves_cube_where_expected() {
        let unit = cube(DVec3::ZERO, DVec3::ONE);
        let p = Placement { scale: 10.0, rotation_deg: [0.0, 0.0, 90.0], translation: [30.0, 5.0, 5.0] };
        let r = diagnose(&transformed(&unit, &p));
        let (lo, hi) = r.bounds;
        assert!(lo.distance(DVec3::new(20.0, 5.0, 5.0)) < 1e-12, "{lo}");
        assert!(hi.distance(DVec3::new(30.0, 15.0, 15.0)) < 1e-12, "{hi}");
        assert!((r.signed_volume - 1000.0).abs() < 1e-9);

        // Order: about x first, then y. (1,0,0) -> Rx: (1,0,0) -> Ry(90): (0,0,-1).
        let p = Placement { rotation_deg: [90.0, 90.0, 0.0], ..Placement::default() };
        assert!(p.apply(DVec3::X).distance(DVec3::NEG_Z) < 1e-12);
        // (0,1,0) -> Rx(90): (0,0,1) -> Ry(90): (1,0,0).
        assert!(p.apply(DVec3::Y).distance(DVec3::X) < 1e-12);
        assert_eq!(transformed(&unit, &Placement::default()), unit);

        // A mirror flips the orientation.
        let mirror = Placement { scale: -1.0, ..Placement::default() };
        assert!(diagnose(&transformed(&unit, &mirror)).inverted);
    }
}
