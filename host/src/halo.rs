//! The halo exchange of z-partitions: after each step, which population
//! planes cross to each neighbour, from which layer to which. One plan for
//! the CPU partitions, the multi-GPU solver and its SoA baseline.
//!
//! A partition owns layers `1 ..= len` of its local grid and mirrors its
//! neighbours' nearest layers in halos `0` and `len + 1`. The velocity sets
//! list the `k` z-crossing pairs first, odd members up
//! ([`kernels_gpu::lattice::z_pairs`]), and storage puts the up-going
//! members in slots `1 ..= k` and the down-going ones in `k + 1 ..= 2k`
//! ([`kernels_gpu::Lattice::SLOT`]). The population buffer is blocked by
//! layer ([`kernels_gpu::layout::population_index`]), so what one partition
//! sends one neighbour in a step is `k` adjacent planes of one layer: one
//! contiguous range (5 of 19 planes for D3Q19, 9 of 27 for D3Q27), copied
//! as is, with no packing.
//!
//! **Esoteric Pull.** For a pair `(a, b)` with `c_a` up, cell `x` touches
//! slots of `x` and of `j = x + c_a` (one layer up); so every crossing slot
//! sits on the bottom layer of the upper partition, which the lower partition
//! mirrors in its upper halo. On even steps the lower partition's top cells
//! write `(j, b)` (their `f*_a`, going up) and the upper partition's bottom
//! cells write `(j, a)` (their `f*_b`, going down); odd steps swap `a` and
//! `b`. After an even step the lower partition sends its upper halo's
//! `b`-planes up and the upper one its bottom layer's `a`-planes down; after
//! an odd step, `a` up and `b` down. No cell of the receiver touches the
//! planes it receives during the step they were written in, so the copies
//! may run while the receiver computes its interior. The lower halo is never
//! read or written by Esoteric Pull (only its flags are), and wall cells in a
//! halo need no special case: their slots are read only by the sender's
//! cells, and every copy overwrites a receiver's slot after its last read and
//! before its next write.
//!
//! **Two-lattice pull.** Bottom cells pull up-going populations from the
//! lower halo and top cells down-going ones from the upper halo: each
//! partition sends its top layer's `a`-planes up (into the upper neighbour's
//! lower halo) and its bottom layer's `b`-planes down, from the freshly
//! written buffer.

use kernels_gpu::layout::population_index;
use kernels_gpu::Streaming;
use std::ops::Range;

/// A layer of a partition's local grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layer {
    /// Local z = 0, mirroring the lower neighbour's top layer.
    LowerHalo,
    /// Local z = 1, the lowest owned layer.
    Bottom,
    /// Local z = len, the highest owned layer.
    Top,
    /// Local z = len + 1, mirroring the upper neighbour's bottom layer.
    UpperHalo,
}

impl Layer {
    /// Local z of the layer in a partition owning `len` layers.
    pub const fn z(self, len: u32) -> u32 {
        match self {
            Layer::LowerHalo => 0,
            Layer::Bottom => 1,
            Layer::Top => len,
            Layer::UpperHalo => len + 1,
        }
    }

    /// Index, in a partition's population buffer (`len` owned layers of
    /// `plane` cells plus halos, `q` storage slots), of the first value of
    /// storage slot `slot` in this layer: the plane is the `plane` values
    /// from there.
    pub fn plane_start(self, slot: usize, len: u32, plane: u32, q: usize) -> usize {
        population_index(plane, q, 0, self.z(len), slot)
    }
}

/// One copy to a neighbour: the storage slots `first .. first + count` of
/// layer `from` of the sender go to the same slots of layer `to` of the
/// receiver, the neighbour above (`up`) or below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HaloCopy {
    /// Whether the receiver is the partition above.
    pub up: bool,
    /// Sender's layer.
    pub from: Layer,
    /// Receiver's layer.
    pub to: Layer,
    /// First storage slot (1: up-going directions, `count + 1`: down-going).
    pub first: usize,
    /// Number of slots: the z-crossing pairs.
    pub count: usize,
}

impl HaloCopy {
    /// The storage slots this copy moves.
    pub fn slots(&self) -> Range<usize> {
        self.first..self.first + self.count
    }

    /// The values this copy reads from the sender's buffer (`from_len` own
    /// layers) and writes into the receiver's (`to_len`): one contiguous
    /// range each, of equal length, for layers of `plane` cells and `q` slots.
    pub fn ranges(&self, from_len: u32, to_len: u32, plane: u32, q: usize) -> (Range<usize>, Range<usize>) {
        let n = self.count * plane as usize;
        let from = self.from.plane_start(self.first, from_len, plane, q);
        let to = self.to.plane_start(self.first, to_len, plane, q);
        (from..from + n, to..to + n)
    }
}

/// Values one copy moves, as the driver's 3D copies see them: `depth`
/// slabs `depth_pitch` apart, each of `rows` rows `row_pitch` apart, each
/// of `width` contiguous values, from index `from` of the sender's buffer
/// to index `to` of the receiver's (pitches are the same on both sides).
/// The dense box's copy is one slab of adjacent planes, which is one
/// contiguous range; a sparse grid's is, per run of consecutive blocks,
/// the crossing layer of each crossing slot of each block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HaloRun {
    /// First value read.
    pub from: usize,
    /// First value written.
    pub to: usize,
    /// Values per row.
    pub width: usize,
    /// Rows per slab (the crossing slots).
    pub rows: usize,
    /// Distance between rows.
    pub row_pitch: usize,
    /// Slabs (blocks).
    pub depth: usize,
    /// Distance between slabs.
    pub depth_pitch: usize,
}

/// Where a run's values lie in one buffer: from `start`, rows `row_pitch`
/// apart, slabs `slab_pitch` apart (values, not bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// First value.
    pub start: usize,
    /// Distance between rows.
    pub row_pitch: usize,
    /// Distance between slabs.
    pub slab_pitch: usize,
}

impl HaloRun {
    /// Where the run reads in the sender's buffer.
    pub fn sender(&self) -> Placement {
        Placement { start: self.from, row_pitch: self.row_pitch, slab_pitch: self.depth_pitch }
    }

    /// Where the run writes in the receiver's buffer.
    pub fn receiver(&self) -> Placement {
        Placement { start: self.to, ..self.sender() }
    }

    /// The run's values packed back to back from `start` of a staging
    /// buffer (for transports that send only contiguous ranges).
    pub fn packed(&self, start: usize) -> Placement {
        Placement { start, row_pitch: self.width, slab_pitch: self.width * self.rows }
    }

    /// Values moved.
    pub fn values(&self) -> usize {
        self.width * self.rows * self.depth
    }

    /// Whether the values are one contiguous range on both sides.
    pub fn is_contiguous(&self) -> bool {
        (self.rows == 1 || self.row_pitch == self.width)
            && (self.depth == 1 || self.depth_pitch == self.rows * self.width)
    }

    /// The same values, one run per row (one per crossing slot: the SoA
    /// baseline's copies).
    pub fn per_row(&self) -> impl Iterator<Item = HaloRun> + '_ {
        (0..self.rows).map(|r| HaloRun {
            from: self.from + r * self.row_pitch,
            to: self.to + r * self.row_pitch,
            rows: 1,
            ..*self
        })
    }

    /// The contiguous pieces, as (first value read, first written, length).
    pub fn pieces(&self) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        let whole = self.is_contiguous();
        let (rows, depth) = if whole { (1, 1) } else { (self.rows, self.depth) };
        let len = if whole { self.values() } else { self.width };
        (0..depth).flat_map(move |d| {
            (0..rows).map(move |r| {
                let at = d * self.depth_pitch + r * self.row_pitch;
                (self.from + at, self.to + at, len)
            })
        })
    }
}

/// One copy's receiving partition and its runs.
pub type Send = (usize, Vec<HaloRun>);

/// What each partition sends after a step of each parity, worked out once:
/// per partition and parity, each copy's receiver and runs (none for an
/// unsplit domain: `default`).
#[derive(Default)]
pub struct HaloSends {
    sends: Vec<[Vec<Send>; 2]>,
}

impl HaloSends {
    /// The sends of `parts` partitions around a ring for `scheme` with
    /// `z_pairs` crossing pairs, where `runs(from, to, copy)` gives the runs
    /// of `copy` from partition `from` to partition `to`.
    pub fn new(
        scheme: Streaming,
        z_pairs: usize,
        parts: usize,
        runs: impl Fn(usize, usize, &HaloCopy) -> Vec<HaloRun>,
    ) -> Self {
        let sends = (0..parts)
            .map(|k| {
                [0, 1].map(|parity| {
                    (halo_copies(scheme, parity, z_pairs).iter())
                        .map(|copy| {
                            let to = if copy.up { (k + 1) % parts } else { (k + parts - 1) % parts };
                            (to, runs(k, to, copy))
                        })
                        .collect()
                })
            })
            .collect();
        Self { sends }
    }

    /// Partition `k`'s sends after step `t`: each receiver and its runs.
    pub fn of(&self, k: usize, t: u64) -> &[Send] {
        &self.sends[k][(t % 2) as usize]
    }
}

/// The two copies each partition sends after a step of parity `parity` (time
/// step modulo 2) of `scheme`, for a velocity set with `z_pairs` z-crossing pairs.
pub const fn halo_copies(scheme: Streaming, parity: u64, z_pairs: usize) -> [HaloCopy; 2] {
    // Storage slots of the up-going (a) and down-going (b) crossing directions.
    let (a, b) = (1, 1 + z_pairs);
    let (up_first, down_first, up_from, down_from, up_to) = match scheme {
        Streaming::EsotericPull => {
            let even = parity.is_multiple_of(2);
            (if even { b } else { a }, if even { a } else { b }, Layer::UpperHalo, Layer::Bottom, Layer::Bottom)
        }
        Streaming::TwoLattice => (a, b, Layer::Top, Layer::Bottom, Layer::LowerHalo),
    };
    [
        HaloCopy { up: true, from: up_from, to: up_to, first: up_first, count: z_pairs },
        HaloCopy { up: false, from: down_from, to: Layer::UpperHalo, first: down_first, count: z_pairs },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A layer's planes lie where the shared layout puts the layer's cells,
    /// and a copy's range is its slots' planes, back to back.
    #[test]
    fn ranges_are_the_copied_slots_planes() {
        let (len, plane, q) = (5, 12, 19);
        assert_eq!(Layer::UpperHalo.plane_start(3, len, plane, q), population_index(plane, q, 0, len + 1, 3));
        assert_eq!(Layer::Bottom.plane_start(2, len, plane, q) + 7, population_index(plane, q, 7, 1, 2));
        assert_eq!(Layer::LowerHalo.plane_start(0, len, plane, q), 0);
        for copy in
            halo_copies(Streaming::EsotericPull, 1, 5).into_iter().chain(halo_copies(Streaming::TwoLattice, 0, 5))
        {
            let (from, to) = copy.ranges(len, len + 1, plane, q);
            let planes: Vec<_> = copy.slots().map(|s| copy.from.plane_start(s, len, plane, q)).collect();
            assert_eq!(from.start, planes[0]);
            assert!(planes.windows(2).all(|w| w[1] == w[0] + plane as usize), "{copy:?}");
            assert_eq!(from.len(), 5 * plane as usize);
            assert_eq!((to.start, to.len()), (copy.to.plane_start(copy.first, len + 1, plane, q), from.len()));
        }
    }

    /// A dense box's run is one contiguous range; a sparse grid's is a
    /// row of `width` values per slot and block, and its rows, taken one
    /// at a time, cover the same values; packed, the values lie back to back.
    #[test]
    fn runs_cover_their_values_once() {
        let dense = HaloRun { from: 40, to: 7, width: 12, rows: 5, row_pitch: 12, depth: 1, depth_pitch: 0 };
        assert!(dense.is_contiguous());
        assert_eq!(dense.pieces().collect::<Vec<_>>(), [(40, 7, 60)]);
        let (q, v) = (19, 64);
        let sparse = HaloRun {
            from: 3 * q * v + v + 48,
            to: 48,
            width: 16,
            rows: 5,
            row_pitch: v,
            depth: 3,
            depth_pitch: q * v,
        };
        assert!(!sparse.is_contiguous() && sparse.values() == 240);
        let pieces: Vec<_> = sparse.pieces().collect();
        assert_eq!(pieces.len(), 15);
        assert!(pieces.iter().all(|&(from, to, len)| len == 16 && from - sparse.from == to - sparse.to));
        assert_eq!(pieces[6], (sparse.from + q * v + v, sparse.to + q * v + v, 16));
        let mut rows: Vec<_> = sparse.per_row().flat_map(|r| r.pieces().collect::<Vec<_>>()).collect();
        rows.sort();
        let mut all = pieces.clone();
        all.sort();
        assert_eq!(rows, all);
        let packed = sparse.packed(100);
        assert_eq!((packed.row_pitch, packed.slab_pitch), (16, 80));
        assert_eq!(sparse.receiver().start, 48);
    }

    /// The planes each exchange reads and writes are disjoint, so the copies
    /// of all partitions may run in any order (with one or two partitions a
    /// partition is its own neighbour).
    #[test]
    fn copies_never_read_what_another_writes() {
        for scheme in [Streaming::EsotericPull, Streaming::TwoLattice] {
            for parity in 0..2 {
                let [up, down] = halo_copies(scheme, parity, 5);
                // (layer, slot) read by up/down, written into the receiver.
                let reads: Vec<_> = [up, down].iter().flat_map(|c| c.slots().map(move |s| (c.from, s))).collect();
                let writes: Vec<_> = [up, down].iter().flat_map(|c| c.slots().map(move |s| (c.to, s))).collect();
                for w in &writes {
                    assert!(!reads.contains(w), "{scheme:?} parity {parity}: {w:?} is read and written");
                }
                assert_eq!(up.slots().count(), 5);
                assert!(up.first != down.first && [up.first, down.first].iter().all(|&f| f == 1 || f == 6));
            }
        }
    }
}
