//! The halo exchange of z-partitions: after each step, which population
//! planes cross to each neighbour, from which layer to which. One plan for
//! the CPU partitions, the multi-GPU solver and its SoA baseline.
//!
//! A partition owns layers `1 ..= len` of its local grid and mirrors its
//! neighbours' nearest layers in halos `0` and `len + 1`. The velocity sets
//! list the `k` z-crossing pairs first, odd members up
//! ([`kernels_gpu::lattice::z_pairs`]), so the up-going planes are slots
//! `1, 3, .., 2k - 1` and the down-going ones `2, 4, .., 2k`: every second
//! plane, `k` of them (5 of 19 for D3Q19, 9 of 27 for D3Q27).
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
    /// `plane` cells, plus halos), of the first value of population `slot` in
    /// this layer: the plane is the `plane` values from there.
    pub fn plane_start(self, slot: usize, len: u32, plane: u32) -> usize {
        population_index(self.z(len) * plane, slot, (len + 2) * plane)
    }
}

/// One copy to a neighbour: the population planes `first, first + 2, ..`
/// (`count` of them) of layer `from` of the sender go to the same slots of
/// layer `to` of the receiver, the neighbour above (`up`) or below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HaloCopy {
    /// Whether the receiver is the partition above.
    pub up: bool,
    /// Sender's layer.
    pub from: Layer,
    /// Receiver's layer.
    pub to: Layer,
    /// First population slot (1: up-going planes, 2: down-going).
    pub first: usize,
    /// Number of planes, every second slot from `first`: the z-crossing pairs.
    pub count: usize,
}

impl HaloCopy {
    /// The population slots this copy moves.
    pub fn slots(&self) -> impl Iterator<Item = usize> + use<> {
        let first = self.first;
        (0..self.count).map(move |m| first + 2 * m)
    }
}

/// The two copies each partition sends after a step of parity `parity` (time
/// step modulo 2) of `scheme`, for a velocity set with `z_pairs` z-crossing pairs.
pub const fn halo_copies(scheme: Streaming, parity: u64, z_pairs: usize) -> [HaloCopy; 2] {
    let (up_first, down_first, up_from, down_from, up_to) = match scheme {
        Streaming::EsotericPull => {
            let even = parity.is_multiple_of(2);
            let (b, a) = (2, 1);
            (if even { b } else { a }, if even { a } else { b }, Layer::UpperHalo, Layer::Bottom, Layer::Bottom)
        }
        Streaming::TwoLattice => (1, 2, Layer::Top, Layer::Bottom, Layer::LowerHalo),
    };
    [
        HaloCopy { up: true, from: up_from, to: up_to, first: up_first, count: z_pairs },
        HaloCopy { up: false, from: down_from, to: Layer::UpperHalo, first: down_first, count: z_pairs },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The planes each exchange reads and writes are disjoint, so the copies
    /// of all partitions may run in any order (with one or two partitions a
    /// partition is its own neighbour).
    /// A layer's planes lie where the shared layout puts the layer's cells.
    #[test]
    fn planes_start_where_the_layout_says() {
        let (len, plane) = (5, 12);
        let cells = (len + 2) * plane;
        assert_eq!(Layer::UpperHalo.plane_start(3, len, plane), population_index((len + 1) * plane, 3, cells));
        assert_eq!(Layer::Bottom.plane_start(2, len, plane) + plane as usize, population_index(2 * plane, 2, cells));
        assert_eq!(Layer::LowerHalo.plane_start(0, len, plane), 0);
    }

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
                assert!(up.slots().all(|s| s % 2 == up.first % 2) && up.first != down.first);
            }
        }
    }
}
