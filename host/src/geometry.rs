//! Solid objects from the case file (`[[geometry]]`): boxes, spheres,
//! cylinders and STL meshes, placed, scaled and rotated, voxel images (raw
//! or `.npy`) and random packings of spheres, voxelised onto the grid as
//! resting or moving walls.

use crate::cell_blocks::CellBlocks;
use crate::domain::Domain;
use crate::error::{Error, Result};
use crate::image::{read_npy, read_raw, SolidRule};
use crate::packing::{pack, Packing, PackingSpec};
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
    /// `"box"`, `"sphere"`, `"cylinder"`, `"stl"`, `"raw"`, `"npy"` or
    /// `"packed-spheres"`.
    pub shape: String,
    /// Box: lower corner; packed spheres: lower corner of the region.
    pub min: Option<[f64; 3]>,
    /// Box: upper corner; packed spheres: upper corner of the region.
    pub max: Option<[f64; 3]>,
    /// Sphere: centre.
    pub centre: Option<[f64; 3]>,
    /// Sphere, cylinder and packed spheres: radius.
    pub radius: Option<f64>,
    /// Cylinder: centre of the base disc.
    pub base: Option<[f64; 3]>,
    /// Cylinder: axis direction (any length).
    pub axis: Option<[f64; 3]>,
    /// Cylinder: length along the axis.
    pub length: Option<f64>,
    /// STL, raw and npy: file, relative to the case file.
    pub file: Option<String>,
    /// Raw: voxels along x, y, z (the file holds one byte per voxel, x fastest).
    pub dims: Option<[u32; 3]>,
    /// Raw and npy: the cell of voxel (0, 0, 0) (cells, also with `[units]`; default the origin).
    pub offset: Option<[u32; 3]>,
    /// Raw and npy: the voxel values that are solid (default: every non-zero value).
    pub solid_values: Option<Vec<i64>>,
    /// Npy: the domain axis of the array's first, second and third index (default `"xyz"`).
    pub axes: Option<String>,
    /// Packed spheres: how many (give this or `porosity`).
    pub count: Option<u32>,
    /// Packed spheres: the porosity to reach, void fraction of the region (give this or `count`).
    pub porosity: Option<f64>,
    /// Packed spheres: seed of the random placement (default 1).
    pub seed: Option<u64>,
    /// STL: scale factor applied first (default 1).
    pub scale: Option<f64>,
    /// STL: rotation in degrees about x, then y, then z (about the origin).
    pub rotate: Option<[f64; 3]>,
    /// STL: translation applied last.
    pub translate: Option<[f64; 3]>,
    /// Make the object a wall moving with this velocity (default: resting).
    pub moving_wall: Option<[f64; 3]>,
    /// How its walls reflect: `"halfway"` (default: halfway bounce-back, the
    /// wall half a cell out from the fluid cells) or `"interpolated"`
    /// (Bouzidi et al. 2001, the wall where the shape puts it).
    pub wall: Option<String>,
    /// Reference area for force coefficients (cells^2, or m^2 with `[units]`).
    pub reference_area: Option<f64>,
    /// Reference velocity for force coefficients (lattice units, or m/s with `[units]`).
    pub reference_velocity: Option<f64>,
    /// Reference length for the Strouhal number (cells, or m with
    /// `[units]`; spheres and cylinders default to their diameter).
    pub reference_length: Option<f64>,
}

impl GeometrySpec {
    /// The Strouhal number's length: `reference_length`, else a sphere's
    /// or cylinder's diameter (the case's length unit).
    pub fn strouhal_length(&self) -> Option<f64> {
        let round = matches!(self.shape.as_str(), "sphere" | "cylinder");
        self.reference_length.or(self.radius.filter(|_| round).map(|r| 2.0 * r))
    }
}

/// A voxelised object.
#[derive(Clone, Debug)]
pub struct Object {
    /// Its name.
    pub name: String,
    /// Which cells it occupies (by blocks: a block wholly inside or
    /// outside costs one value).
    pub cells: CellBlocks<bool>,
    /// What the user should know (open edges, thin features, clipping).
    pub notes: Vec<String>,
    /// For packed spheres: the packing.
    pub packing: Option<Packing>,
    /// The kind its cells took.
    pub kind: CellKind,
}

/// What placing geometry needs to know about the case.
#[derive(Clone, Debug)]
pub struct Context<'a> {
    /// Directory that file names are relative to.
    pub case_dir: &'a Path,
    /// Cell size in the case's length unit (1 without `[units]`).
    pub cell_size: f64,
    /// Axes whose faces are periodic.
    pub periodic: [bool; 3],
    /// 2 for 2D lattices, 3 otherwise.
    pub dimension: usize,
}

/// The keys each shape reads, besides `name`, `shape`, `moving_wall`,
/// `reference_area` and `reference_velocity`.
const SHAPE_KEYS: [(&str, &[&str]); 7] = [
    ("box", &["min", "max"]),
    ("sphere", &["centre", "radius"]),
    ("cylinder", &["base", "axis", "radius", "length"]),
    ("stl", &["file", "scale", "rotate", "translate"]),
    ("raw", &["file", "dims", "offset", "solid_values"]),
    ("npy", &["file", "offset", "solid_values", "axes"]),
    ("packed-spheres", &["radius", "count", "porosity", "seed", "min", "max"]),
];

impl GeometrySpec {
    fn need<T: Copy>(&self, v: Option<T>, key: &str) -> Result<T> {
        v.ok_or_else(|| Error::Setup(format!("shape \"{}\" needs `{key}`", self.shape)))
    }

    /// The shape, in the case's length unit.
    fn shape(&self, case_dir: &Path, notes: &mut Vec<String>) -> Result<Box<dyn Shape + Send + Sync>> {
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
                    choices: SHAPE_KEYS.map(|(s, _)| format!("\"{s}\"")).join(", "),
                })
            }
        })
    }

    /// Voxelises the object into `domain`; an error is an
    /// [`Error::Geometry`] naming the object. Its cells become walls, taken
    /// out of any inlet or outlet they were part of.
    pub fn apply(
        &self,
        domain: &mut Domain,
        context: &Context,
        to_lattice_velocity: impl Fn(f64) -> f64,
    ) -> Result<Object> {
        self.voxelised(domain, context, to_lattice_velocity)
            .map_err(|e| Error::Geometry { name: self.name.clone(), source: Box::new(e) })
    }

    /// The object as refinement levels voxelise it on their own cells: its
    /// shape for boxes, spheres, cylinders and meshes; none for voxel
    /// images and packings, whose level-0 cells every level copies.
    pub fn level_object(&self, object: &Object, case_dir: &Path) -> Result<crate::levels::LevelObject> {
        let shape = match self.shape.as_str() {
            "box" | "sphere" | "cylinder" | "stl" => Some(self.shape(case_dir, &mut Vec::new())?),
            _ => None,
        };
        Ok(crate::levels::LevelObject {
            name: self.name.clone(),
            shape,
            cells: object.cells.clone(),
            kind: object.kind.to_flag(),
            interpolated: self.interpolated_shape(case_dir)?.is_some(),
        })
    }

    /// The shape whose walls are interpolated, when `wall = "interpolated"`.
    pub fn interpolated_shape(&self, case_dir: &Path) -> Result<Option<Box<dyn Shape + Sync>>> {
        let interpolated = match self.wall.as_deref() {
            None | Some("halfway") => false,
            Some("interpolated") => true,
            Some(other) => {
                return Err(Error::UnknownName {
                    what: "wall",
                    name: other.into(),
                    choices: "\"halfway\", \"interpolated\"".into(),
                })
            }
        };
        if !interpolated {
            return Ok(None);
        }
        if self.moving_wall.is_some() {
            return Err(Error::Setup(format!(
                "geometry `{}`: wall = \"interpolated\" is for resting objects; a moving wall takes halfway bounce-back \
                 (drop `wall` or `moving_wall`)",
                self.name
            )));
        }
        match self.shape.as_str() {
            "box" | "sphere" | "cylinder" | "stl" => Ok(Some(self.shape(case_dir, &mut Vec::new())?)),
            other => Err(Error::Setup(format!(
                "geometry `{}`: wall = \"interpolated\" needs the surface of a shape (box, sphere, cylinder or stl); \
                 a \"{other}\" object has only voxels, so it takes halfway bounce-back",
                self.name
            ))),
        }
    }

    /// Refuses keys that the shape does not read (they would be ignored).
    fn check_keys(&self) -> Result<()> {
        let Some((_, keys)) = SHAPE_KEYS.iter().find(|(s, _)| *s == self.shape) else {
            return Ok(()); // `shape()` names the choices
        };
        let given = [
            ("min", self.min.is_some()),
            ("max", self.max.is_some()),
            ("centre", self.centre.is_some()),
            ("radius", self.radius.is_some()),
            ("base", self.base.is_some()),
            ("axis", self.axis.is_some()),
            ("length", self.length.is_some()),
            ("file", self.file.is_some()),
            ("scale", self.scale.is_some()),
            ("rotate", self.rotate.is_some()),
            ("translate", self.translate.is_some()),
            ("dims", self.dims.is_some()),
            ("offset", self.offset.is_some()),
            ("solid_values", self.solid_values.is_some()),
            ("axes", self.axes.is_some()),
            ("count", self.count.is_some()),
            ("porosity", self.porosity.is_some()),
            ("seed", self.seed.is_some()),
        ];
        match given.iter().find(|(k, present)| *present && !keys.contains(k)) {
            None => Ok(()),
            Some((k, _)) => {
                let hint = match (*k, self.shape.as_str()) {
                    ("dims", "npy") => ": a .npy file gives its own dimensions",
                    ("axes", "raw") => ": a raw file is x fastest (index x + nx (y + ny z))",
                    _ => "",
                };
                Err(Error::Setup(format!(
                    "shape \"{}\" does not read `{k}`{hint}; its keys are {}",
                    self.shape,
                    keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                )))
            }
        }
    }

    fn solid_rule(&self) -> SolidRule {
        self.solid_values.clone().map_or(SolidRule::NonZero, SolidRule::Values)
    }

    /// The packing a `"packed-spheres"` entry asks for, in `domain`.
    pub fn packing_spec(&self, domain: &Domain, context: &Context) -> Result<PackingSpec> {
        let radius = self.need(self.radius, "radius")?;
        let d = domain.dims;
        let n = [d.nx, d.ny, d.nz];
        let h = context.cell_size;
        let dimension = context.dimension;
        // Default region: the whole box along periodic axes, inside the
        // boundary layers along the others; with `min` and `max`, that box.
        let (lo, hi, periodic) = match (self.min, self.max) {
            (None, None) => {
                let lo =
                    DVec3::from_array(std::array::from_fn(|a| if context.periodic[a] { -0.5 * h } else { 0.5 * h }));
                let hi = DVec3::from_array(std::array::from_fn(|a| {
                    if context.periodic[a] {
                        (n[a] as f64 - 0.5) * h
                    } else {
                        (n[a] as f64 - 1.5) * h
                    }
                }));
                (lo, hi, context.periodic)
            }
            (Some(lo), Some(hi)) => (DVec3::from_array(lo), DVec3::from_array(hi), [false; 3]),
            _ => {
                return Err(Error::Setup(
                    "give both `min` and `max` (the region to fill) or neither (the whole box)".into(),
                ))
            }
        };
        let mut spec = PackingSpec { radius, count: 0, seed: self.seed.unwrap_or(1), lo, hi, periodic, dimension };
        spec.count = match (self.count, self.porosity) {
            (Some(c), None) => c as usize,
            (None, Some(eps)) => {
                if !(0.0..1.0).contains(&eps) {
                    return Err(Error::Setup(format!(
                        "porosity {eps} must lie between 0 and 1 (the void fraction of the region)"
                    )));
                }
                ((1.0 - eps) * spec.region_volume() / spec.sphere_volume()).round() as usize
            }
            _ => {
                return Err(Error::Setup("shape \"packed-spheres\" needs exactly one of `count` and `porosity`".into()))
            }
        };
        Ok(spec)
    }

    /// The cells the object covers.
    fn cells(
        &self,
        domain: &Domain,
        context: &Context,
        notes: &mut Vec<String>,
    ) -> Result<(CellBlocks<bool>, Option<Packing>)> {
        let d = domain.dims;
        let file = || Ok::<_, Error>(context.case_dir.join(self.need(self.file.as_deref(), "file")?));
        match self.shape.as_str() {
            "raw" | "npy" => {
                let rule = self.solid_rule();
                let image = if self.shape == "raw" {
                    read_raw(&file()?, self.need(self.dims, "dims")?, &rule)?
                } else {
                    read_npy(&file()?, self.axes.as_deref(), &rule)?
                };
                let cells = image.place(d, self.offset.unwrap_or([0; 3]))?;
                if !cells.any(|c| c) {
                    notes.push(format!(
                        "geometry `{}`: the image has no solid voxel: check `solid_values` (default: every non-zero value)",
                        self.name
                    ));
                }
                Ok((cells, None))
            }
            "packed-spheres" => {
                let packing = pack(&self.packing_spec(domain, context)?)?;
                Ok((packing.rasterise(d, context.cell_size), Some(packing)))
            }
            _ => {
                let shape = self.shape(context.case_dir, notes)?;
                let voxels = voxelize(shape.as_ref(), (d.nx, d.ny, d.nz), context.cell_size, DVec3::ZERO)?;
                notes.extend(voxels.warnings.iter().map(|w| format!("geometry `{}`: {w}", self.name)));
                Ok((voxels.solid, None))
            }
        }
    }

    fn voxelised(
        &self,
        domain: &mut Domain,
        context: &Context,
        to_lattice_velocity: impl Fn(f64) -> f64,
    ) -> Result<Object> {
        self.check_keys()?;
        let mut notes = Vec::new();
        let (cells, packing) = self.cells(domain, context, &mut notes)?;
        let kind = match self.moving_wall {
            Some(u) => domain.add_moving_wall(u.map(&to_lattice_velocity))?,
            None => CellKind::Wall,
        };
        domain.set_where(&cells, kind);
        Ok(Object { name: self.name.clone(), cells, notes, packing, kind })
    }
}
