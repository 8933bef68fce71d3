//! Solid objects from the case file (`[[geometry]]`): boxes, spheres,
//! cylinders and STL meshes, placed, scaled and rotated, voxelised onto the
//! grid as resting or moving walls.

use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::stl::{diagnose, load_stl, transformed, Placement};
use crate::voxel::{voxelize, Cuboid, Cylinder, MeshSolid, Shape, Sphere};
use glam::DVec3;
use kernels_gpu::flags::CellKind;
use serde::Deserialize;
use std::path::Path;

/// One `[[geometry]]` entry. Coordinates are in cells (cell `i` at `i`), or
/// in metres when the case has `[units]` (cell 0 at the origin).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GeometrySpec {
    /// Name in messages and the force report.
    pub name: String,
    /// `"box"`, `"sphere"`, `"cylinder"` or `"stl"`.
    pub shape: String,
    /// Box: lower corner.
    pub min: Option<[f64; 3]>,
    /// Box: upper corner.
    pub max: Option<[f64; 3]>,
    /// Sphere: centre.
    pub centre: Option<[f64; 3]>,
    /// Sphere and cylinder: radius.
    pub radius: Option<f64>,
    /// Cylinder: centre of the base disc.
    pub base: Option<[f64; 3]>,
    /// Cylinder: axis direction (any length).
    pub axis: Option<[f64; 3]>,
    /// Cylinder: length along the axis.
    pub length: Option<f64>,
    /// STL: file, relative to the case file.
    pub file: Option<String>,
    /// STL: scale factor applied first (default 1).
    pub scale: Option<f64>,
    /// STL: rotation in degrees about x, then y, then z (about the origin).
    pub rotate: Option<[f64; 3]>,
    /// STL: translation applied last.
    pub translate: Option<[f64; 3]>,
    /// Make the object a wall moving with this velocity (default: resting).
    pub moving_wall: Option<[f64; 3]>,
    /// Reference area for force coefficients (cells^2, or m^2 with `[units]`).
    pub reference_area: Option<f64>,
    /// Reference velocity for force coefficients (lattice units, or m/s with `[units]`).
    pub reference_velocity: Option<f64>,
}

/// A voxelised object.
#[derive(Clone, Debug)]
pub struct Object {
    /// Its name.
    pub name: String,
    /// Which cells it occupies.
    pub cells: Vec<bool>,
    /// What the user should know (open edges, thin features, clipping).
    pub notes: Vec<String>,
}

impl GeometrySpec {
    fn need<T: Copy>(&self, v: Option<T>, key: &str) -> Result<T> {
        v.ok_or_else(|| Error::Setup(format!("shape \"{}\" needs `{key}`", self.shape)))
    }

    /// The shape, in the case's length unit.
    fn shape(&self, case_dir: &Path, notes: &mut Vec<String>) -> Result<Box<dyn Shape + Sync>> {
        let v = |a: [f64; 3]| DVec3::from_array(a);
        Ok(match self.shape.as_str() {
            "box" => Box::new(Cuboid { min: v(self.need(self.min, "min")?), max: v(self.need(self.max, "max")?) }),
            "sphere" => Box::new(Sphere {
                centre: v(self.need(self.centre, "centre")?),
                radius: self.need(self.radius, "radius")?,
            }),
            "cylinder" => Box::new(Cylinder {
                base_centre: v(self.need(self.base, "base")?),
                axis: v(self.need(self.axis, "axis")?),
                radius: self.need(self.radius, "radius")?,
                length: self.need(self.length, "length")?,
            }),
            "stl" => {
                let mesh = load_stl(&case_dir.join(self.need(self.file.as_deref(), "file")?))?;
                let placement = Placement {
                    scale: self.scale.unwrap_or(1.0),
                    rotation_deg: self.rotate.unwrap_or([0.0; 3]),
                    translation: self.translate.unwrap_or([0.0; 3]),
                };
                let mesh = transformed(&mesh, &placement);
                let report = diagnose(&mesh);
                if !report.is_watertight() || report.inverted || report.degenerate_triangles > 0 {
                    notes.push(format!("geometry `{}`: {report}", self.name));
                }
                Box::new(MeshSolid::new(&mesh)?)
            }
            other => {
                return Err(Error::UnknownName {
                    what: "shape",
                    name: other.into(),
                    choices: "\"box\", \"sphere\", \"cylinder\" or \"stl\"".into(),
                })
            }
        })
    }

    /// Voxelises the object into `domain` (cells of size `cell_size`); an
    /// error is an [`Error::Geometry`] naming the object.
    pub fn apply(
        &self,
        domain: &mut Domain,
        case_dir: &Path,
        cell_size: f64,
        to_lattice_velocity: impl Fn(f64) -> f64,
    ) -> Result<Object> {
        self.voxelised(domain, case_dir, cell_size, to_lattice_velocity)
            .map_err(|e| Error::Geometry { name: self.name.clone(), source: Box::new(e) })
    }

    fn voxelised(
        &self,
        domain: &mut Domain,
        case_dir: &Path,
        cell_size: f64,
        to_lattice_velocity: impl Fn(f64) -> f64,
    ) -> Result<Object> {
        let mut notes = Vec::new();
        let shape = self.shape(case_dir, &mut notes)?;
        let d = domain.dims;
        let voxels = voxelize(shape.as_ref(), (d.nx, d.ny, d.nz), cell_size, DVec3::ZERO)?;
        notes.extend(voxels.warnings.iter().map(|w| format!("geometry `{}`: {w}", self.name)));
        let kind = match self.moving_wall {
            Some(u) => domain.add_moving_wall(u.map(&to_lattice_velocity))?,
            None => CellKind::Wall,
        };
        for (n, &solid) in voxels.solid.iter().enumerate() {
            if solid {
                domain.flags[n] = kind.to_flag();
            }
        }
        Ok(Object { name: self.name.clone(), cells: voxels.solid, notes })
    }
}
