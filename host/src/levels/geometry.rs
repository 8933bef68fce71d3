//! The geometry of each refinement level at its own resolution: a sphere
//! on level 3 is voxelised on level 3's cells, not copied from level 0's
//! staircase, so refining around an object sharpens its surface.

use crate::cell_blocks::CellBlocks;
use crate::curved::CurvedObject;
use crate::error::Result;
use crate::voxel::{voxelize, Shape};
use glam::DVec3;
use kernels_gpu::Dims;
use std::sync::Arc;

/// An object as the levels see it.
pub struct LevelObject {
    /// Its name, for messages.
    pub name: String,
    /// Its shape in the case's length unit (cell `i` of level 0 at `i`
    /// times the cell size), voxelised on each level's cells; `None` for a
    /// voxel image or a packing, whose level-0 cells every level copies
    /// (an image holds no detail finer than its voxels).
    pub shape: Option<Box<dyn Shape + Send + Sync>>,
    /// Its level-0 cells.
    pub cells: CellBlocks<bool>,
    /// The flag its cells take.
    pub kind: u8,
    /// Whether its walls are interpolated ([`crate::curved`]) on every
    /// level, which takes a shape.
    pub interpolated: bool,
}

/// Every level's cells of every object, and level 0's flags without them
/// (walls, moving walls, open faces), which finer levels copy.
pub struct LevelGeometry {
    /// Level 0's flags without the objects.
    faces: CellBlocks<u8>,
    /// `masks[k][l]`: object `k`'s cells on level `l`.
    masks: Vec<Vec<CellBlocks<bool>>>,
    /// The flag of each object's cells.
    kinds: Vec<u8>,
    /// Each object's name, and its shape where its walls are interpolated.
    curved: Vec<(String, Option<Box<dyn Shape + Send + Sync>>)>,
    /// Level 0's cell size in the case's length unit.
    cell_size: f64,
}

impl std::fmt::Debug for LevelGeometry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LevelGeometry({} objects over {} levels)", self.kinds.len(), self.masks.first().map_or(0, Vec::len))
    }
}

impl LevelGeometry {
    /// The objects voxelised on `levels` levels over level 0's `faces`
    /// (flags without the objects), cells of `cell_size` on level 0.
    pub fn new(faces: CellBlocks<u8>, objects: Vec<LevelObject>, levels: u32, cell_size: f64) -> Result<Arc<Self>> {
        let d = faces.dims();
        let flat = d.nz == 1;
        let mut masks = Vec::with_capacity(objects.len());
        for o in &objects {
            let mut per_level = vec![o.cells.clone()];
            for l in 1..levels {
                let s = 1u32 << l;
                let dims = Dims::new(d.nx * s, d.ny * s, if flat { 1 } else { d.nz * s });
                per_level.push(match &o.shape {
                    Some(shape) => {
                        // Level-l cell i spans level-0 coordinates
                        // [-1/2 + i/2^l, -1/2 + (i+1)/2^l]: its centre is
                        // the origin's plus i/2^l.
                        let h = 1.0 / s as f64;
                        let centre = (0.5 * h - 0.5) * cell_size;
                        let origin = DVec3::new(centre, centre, if flat { 0.0 } else { centre });
                        voxelize(shape.as_ref(), (dims.nx, dims.ny, dims.nz), cell_size * h, origin)
                            .map_err(|e| {
                                crate::error::Error::Setup(format!(
                                    "geometry `{}` on refinement level {l}: {e}",
                                    o.name
                                ))
                            })?
                            .solid
                    }
                    None => o.cells.refined(l, dims),
                });
            }
            masks.push(per_level);
        }
        let kinds = objects.iter().map(|o| o.kind).collect();
        let curved = objects.into_iter().map(|o| (o.name, o.shape.filter(|_| o.interpolated))).collect();
        Ok(Arc::new(Self { faces, masks, kinds, curved, cell_size }))
    }

    /// The flag of cell `p` of level `l`: the last object covering it, or
    /// level 0's flag there.
    pub fn flag(&self, l: usize, p: [u32; 3]) -> u8 {
        for (mask, &kind) in self.masks.iter().zip(&self.kinds).rev() {
            if mask[l][p] {
                return kind;
            }
        }
        self.faces[p.map(|v| v >> l)]
    }

    /// Marks the curved walls of the objects with interpolated walls on
    /// level `l`'s `domain` (see [`crate::curved::mark_placed`]) for the
    /// velocity set `c`, returning the links found into each object (none
    /// for the others).
    pub fn mark_curved(&self, l: usize, domain: &mut crate::domain::Domain, c: &[[i32; 3]]) -> Vec<usize> {
        let objects: Vec<CurvedObject> = (self.curved.iter().zip(&self.masks))
            .filter_map(|((name, shape), masks)| {
                Some(CurvedObject { name, cells: &masks[l], shape: shape.as_deref()? })
            })
            .collect();
        let mut found = vec![0; self.curved.len()];
        if objects.is_empty() {
            return found;
        }
        // Level-l cell i has its centre at level-0 coordinate (i + 1/2) / 2^l - 1/2.
        let h = 1.0 / (1u64 << l) as f64;
        let centre = (0.5 * h - 0.5) * self.cell_size;
        let flat = domain.dims.nz == 1;
        let origin = DVec3::new(centre, centre, if flat { 0.0 } else { centre });
        let counts = crate::curved::mark_placed(domain, c, &objects, self.cell_size * h, origin);
        let with_shape = self.curved.iter().enumerate().filter(|(_, (_, s))| s.is_some()).map(|(k, _)| k);
        for (k, n) in with_shape.zip(counts) {
            found[k] = n;
        }
        found
    }

    /// The first object with interpolated walls that has no link into it
    /// over all levels, `found` links per object summed from [`Self::mark_curved`].
    pub fn unlinked(&self, found: &[usize]) -> Option<&str> {
        (self.curved.iter().zip(found)).find(|((_, s), &n)| s.is_some() && n == 0).map(|((name, _), _)| name.as_str())
    }

    /// Each object's cells on level `l`.
    pub fn objects_on(&self, l: usize) -> Vec<CellBlocks<bool>> {
        self.masks.iter().map(|m| m[l].clone()).collect()
    }
}
