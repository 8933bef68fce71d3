//! The geometry of each refinement level at its own resolution: a sphere
//! on level 3 is voxelised on level 3's cells, not copied from level 0's
//! staircase, so refining around an object sharpens its surface.

use crate::cell_blocks::CellBlocks;
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
    pub shape: Option<Box<dyn Shape + Sync>>,
    /// Its level-0 cells.
    pub cells: CellBlocks<bool>,
    /// The flag its cells take.
    pub kind: u8,
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
        Ok(Arc::new(Self { faces, masks, kinds: objects.iter().map(|o| o.kind).collect() }))
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

    /// Each object's cells on level `l`.
    pub fn objects_on(&self, l: usize) -> Vec<CellBlocks<bool>> {
        self.masks.iter().map(|m| m[l].clone()).collect()
    }
}
