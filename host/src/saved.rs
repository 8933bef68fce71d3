//! A solver's saved state, as checkpoints hold it: the time, and each
//! partition's own populations exactly as stored (native byte order), in z
//! order. A dense box saves whole layers; a sparse grid saves its stored
//! blocks, so a state costs what the grid stores, not its bounding box.
//! Either restores into any partitioning and either grid: cells are found
//! by their position in the box ([`SavedCells`]).

use crate::error::{Error, Result};
use kernels_gpu::layout::population_index;
use kernels_gpu::Dims;
use std::collections::HashMap;
use std::ops::Range;

/// A solver's restorable state (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedState {
    /// Time steps done.
    pub time: u64,
    /// The partitions' shares, in z order.
    pub parts: Vec<SavedPart>,
}

/// One partition's share of a [`SavedState`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedPart {
    /// Global z-layers held.
    pub layers: Range<u32>,
    /// `None`: every cell of the layers, in the dense layout. `Some`: the
    /// blocks of a sparse grid that lie in the layers.
    pub blocks: Option<SavedBlocks>,
    /// Their populations, raw storage bytes.
    pub populations: Vec<u8>,
}

/// The blocks of a [`SavedPart`] of a sparse grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedBlocks {
    /// Cells of a block along each axis.
    pub edge: [u32; 3],
    /// Each block's first cell in the box, in z, y, x order, as the
    /// populations hold them: per block `q` slots of the block's cells (x
    /// fastest), as the sparse kernels store a block.
    pub corners: Vec<[u32; 3]>,
}

impl SavedPart {
    /// The bytes [`SavedPart::from_bytes`] reads (native endianness: they
    /// travel between the ranks of one job).
    pub fn to_bytes(&self) -> Vec<u8> {
        let (edge, corners): ([u32; 3], &[[u32; 3]]) = match &self.blocks {
            Some(b) => (b.edge, &b.corners),
            None => ([0; 3], &[]),
        };
        let head = [self.layers.start, self.layers.end, edge[0], edge[1], edge[2], corners.len() as u32];
        [bytemuck::cast_slice(&head), bytemuck::cast_slice(corners), &self.populations[..]].concat()
    }

    /// The part [`SavedPart::to_bytes`] wrote.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bad = || Error::Setup("a rank sent a saved state that does not decode: ranks of different builds?".into());
        let (head, rest) = bytes.split_at_checked(24).ok_or_else(bad)?;
        let h: Vec<u32> = bytemuck::pod_collect_to_vec(head);
        let (corners, populations) = rest.split_at_checked(12 * h[5] as usize).ok_or_else(bad)?;
        let blocks = (h[2] != 0)
            .then(|| SavedBlocks { edge: [h[2], h[3], h[4]], corners: bytemuck::pod_collect_to_vec(corners) });
        Ok(Self { layers: h[0]..h[1], blocks, populations: populations.to_vec() })
    }
}

impl SavedBlocks {
    /// Cells of a block.
    pub fn volume(&self) -> usize {
        self.edge.iter().map(|&e| e as usize).product()
    }
}

impl SavedState {
    /// The whole dense buffer of `nz` layers as one part.
    pub fn whole(time: u64, populations: Vec<u8>, nz: u32) -> Self {
        Self { time, parts: vec![SavedPart { layers: 0..nz, blocks: None, populations }] }
    }

    /// The parts' population bytes, one part after the other.
    pub fn populations(&self) -> Vec<u8> {
        self.parts.iter().flat_map(|p| p.populations.iter().copied()).collect()
    }

    /// The populations of every cell of the box `dims` (`q` values of
    /// `bytes` bytes each) in the dense layout, whatever the parts hold;
    /// cells the state does not hold are zero bytes. For comparing states
    /// of different grids.
    pub fn dense_populations(&self, dims: Dims, q: usize, bytes: usize) -> Result<Vec<u8>> {
        let cells = SavedCells::new(self, dims, q, bytes)?;
        let plane = dims.nx * dims.ny;
        let mut out = vec![0u8; q * dims.cells() * bytes];
        for n in 0..dims.cells() {
            let p = crate::cell_blocks::position(dims, n);
            for (slot, v) in cells.cell(p).into_iter().flatten().enumerate() {
                let at = population_index(plane, q, p[0] + dims.nx * p[1], p[2], slot) * bytes;
                out[at..at + bytes].copy_from_slice(v);
            }
        }
        Ok(out)
    }

    /// Whether every part holds whole dense layers.
    pub fn is_dense(&self) -> bool {
        self.parts.iter().all(|p| p.blocks.is_none())
    }

    /// Checks that the parts hold layers `0 .. nz` in order, `layer_bytes`
    /// each when dense, and whole blocks in those layers when sparse.
    pub fn check(&self, nz: u32, layer_bytes: usize, block_bytes: impl Fn(&SavedBlocks) -> usize) -> Result<()> {
        let mut z = 0;
        for p in &self.parts {
            let fits = match &p.blocks {
                None => p.populations.len() == p.layers.len() * layer_bytes,
                Some(b) => {
                    p.populations.len() == b.corners.len() * block_bytes(b)
                        && b.corners.iter().all(|c| p.layers.contains(&c[2]))
                }
            };
            if p.layers.start != z || !fits {
                return Err(Error::Setup(format!(
                    "saved state holds layers {:?} in {} bytes where layers from {z} were expected, of {layer_bytes} \
                     bytes each or whole blocks: it was saved from another case",
                    p.layers,
                    p.populations.len()
                )));
            }
            z = p.layers.end;
        }
        if z != nz {
            return Err(Error::Setup(format!(
                "saved state holds {z} layers but this solver has {nz}: it was saved from another case"
            )));
        }
        Ok(())
    }

    /// The bytes of global layer `z` (of `layer_bytes`) of a dense state
    /// that passed [`Self::check`].
    pub fn layer(&self, z: u32, layer_bytes: usize) -> &[u8] {
        let p = self.parts.iter().find(|p| p.layers.contains(&z)).expect("a checked state holds every layer");
        &p.populations[(z - p.layers.start) as usize * layer_bytes..][..layer_bytes]
    }
}

/// Where a saved state keeps each cell's populations, found by the cell's
/// position in the box.
pub struct SavedCells<'a> {
    state: &'a SavedState,
    dims: Dims,
    q: usize,
    bytes: usize,
    /// The part holding each layer.
    part_of_layer: Vec<u32>,
    /// Per part with blocks: block corner -> its number in the part.
    blocks: Vec<HashMap<[u32; 3], usize>>,
}

impl<'a> SavedCells<'a> {
    /// The cells of `state`, saved from a box of `dims` with `q` values of
    /// `bytes` bytes per cell; refuses a state of another shape.
    pub fn new(state: &'a SavedState, dims: Dims, q: usize, bytes: usize) -> Result<Self> {
        let layer_bytes = q * (dims.nx * dims.ny) as usize * bytes;
        state.check(dims.nz, layer_bytes, |b| q * b.volume() * bytes)?;
        let mut part_of_layer = vec![0; dims.nz as usize];
        for (k, p) in state.parts.iter().enumerate() {
            part_of_layer[p.layers.start as usize..p.layers.end as usize].fill(k as u32);
        }
        let blocks = (state.parts.iter())
            .map(|p| match &p.blocks {
                Some(b) => b.corners.iter().enumerate().map(|(k, &c)| (c, k)).collect(),
                None => HashMap::new(),
            })
            .collect();
        Ok(Self { state, dims, q, bytes, part_of_layer, blocks })
    }

    /// The saved bytes of cell `p`'s populations, slot by slot (`q` slices
    /// of the value size); `None` where the state stored no block.
    pub fn cell(&self, p: [u32; 3]) -> Option<impl Iterator<Item = &'a [u8]> + 'a> {
        let k = self.part_of_layer[p[2] as usize] as usize;
        let part = &self.state.parts[k];
        let (first, stride) = match &part.blocks {
            None => {
                let plane = self.dims.nx * self.dims.ny;
                let xy = p[0] + self.dims.nx * p[1];
                let z = p[2] - part.layers.start;
                (population_index(plane, self.q, xy, z, 0), plane as usize)
            }
            Some(b) => {
                let corner: [u32; 3] = std::array::from_fn(|a| p[a] / b.edge[a] * b.edge[a]);
                let n = *self.blocks[k].get(&corner)?;
                // The format's in-block order, x fastest, is the sparse kernels' (`Sparse::cell_of`):
                // `saved_part` copies blocks as stored; resuming on another grid checks the two agree.
                let inner = (p[0] - corner[0]) + b.edge[0] * ((p[1] - corner[1]) + b.edge[1] * (p[2] - corner[2]));
                (n * self.q * b.volume() + inner as usize, b.volume())
            }
        };
        let (bytes, all) = (self.bytes, &part.populations[..]);
        Some((0..self.q).map(move |slot| &all[(first + slot * stride) * bytes..][..bytes]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_found_in_layers_and_in_blocks() {
        let dims = Dims::new(8, 4, 8);
        let (q, bytes) = (3, 2);
        let value = |p: [u32; 3], slot: usize| {
            let v = (p[0] + 10 * p[1] + 100 * p[2]) as u16 * 4 + slot as u16;
            v.to_le_bytes()
        };
        // Layers 0..4 dense; layers 4..8 as 4x4x4 blocks (one left out).
        let plane = dims.nx * dims.ny;
        let mut dense = vec![0u8; 4 * q * plane as usize * bytes];
        for z in 0..4 {
            for y in 0..4 {
                for x in 0..8 {
                    for slot in 0..q {
                        let at = population_index(plane, q, x + 8 * y, z, slot) * bytes;
                        dense[at..at + 2].copy_from_slice(&value([x, y, z], slot));
                    }
                }
            }
        }
        let edge = [4, 4, 4];
        let corners = vec![[4, 0, 4]];
        let mut blocked = Vec::new();
        for slot in 0..q {
            for z in 4..8 {
                for y in 0..4 {
                    for x in 4..8 {
                        blocked.extend_from_slice(&value([x, y, z], slot));
                    }
                }
            }
        }
        let state = SavedState {
            time: 3,
            parts: vec![
                SavedPart { layers: 0..4, blocks: None, populations: dense },
                SavedPart { layers: 4..8, blocks: Some(SavedBlocks { edge, corners }), populations: blocked },
            ],
        };
        let cells = SavedCells::new(&state, dims, q, bytes).unwrap();
        for p in [[0, 0, 0], [7, 3, 3], [4, 0, 4], [7, 3, 7], [5, 2, 5]] {
            let got: Vec<&[u8]> = cells.cell(p).unwrap().collect();
            let want: Vec<[u8; 2]> = (0..q).map(|slot| value(p, slot)).collect();
            assert!(got.iter().zip(&want).all(|(g, w)| g == w), "cell {p:?}");
        }
        assert!(cells.cell([0, 0, 4]).is_none(), "a block not saved");
        for part in &state.parts {
            assert_eq!(&SavedPart::from_bytes(&part.to_bytes()).unwrap(), part);
        }
        // Another box's state is refused.
        assert!(SavedCells::new(&state, Dims::new(8, 4, 9), q, bytes).is_err());
        assert!(SavedCells::new(&state, dims, q + 1, bytes).is_err());
    }
}
