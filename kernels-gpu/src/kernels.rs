//! The table of GPU kernels: one name scheme, used by the entry points and by
//! the host when it looks kernels up.

/// A kernel family; each is instantiated per lattice and precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// [`crate::stream::stream_collide_esoteric`].
    StreamCollideEsoteric,
    /// [`crate::stream::stream_collide_two_lattice`].
    StreamCollideTwoLattice,
    /// [`crate::stream::open_boundary_update`], over a list of cells.
    OpenBoundary,
    /// [`crate::stream::init_equilibrium`].
    InitEquilibrium,
    /// [`crate::stream::fields`].
    Fields,
}

impl KernelKind {
    /// Every kernel family.
    pub const ALL: [KernelKind; 5] = [
        KernelKind::StreamCollideEsoteric,
        KernelKind::StreamCollideTwoLattice,
        KernelKind::OpenBoundary,
        KernelKind::InitEquilibrium,
        KernelKind::Fields,
    ];

    /// Prefix of the entry-point name; the full name is
    /// `{prefix}_{lattice}_{precision}`, e.g. `stream_collide_ep_d3q19_f32`.
    pub const fn prefix(self) -> &'static str {
        match self {
            KernelKind::StreamCollideEsoteric => "stream_collide_ep",
            KernelKind::StreamCollideTwoLattice => "stream_collide_ab",
            KernelKind::OpenBoundary => "open_boundary",
            KernelKind::InitEquilibrium => "init_equilibrium",
            KernelKind::Fields => "fields",
        }
    }
}

/// Register cap (`.maxnreg`) for a stream-collide kernel with `q` populations
/// of `bytes` bytes, or `None` to let ptxas choose. Capping raises occupancy,
/// and these kernels are latency-bound; each cap is the smallest without
/// spills (checked by the ptxas test) at which measured MLUPS peaked, with
/// 128 threads per block ([`block_size`]; f64 kernels run best uncapped).
/// ptxas's allocation at a cap is brittle: D3Q19 f32 Esoteric Pull fitted 64
/// until a change in the near-solid path's flag tests left it spilling
/// 12 bytes, and D3Q27 16-bit spilled at 96 after the velocity set was
/// reordered. The 16-bit kernels fit 64 (D3Q19) and 80 (D3Q27) since they
/// compute in storage units: on an H100 at 128 threads per block that is
/// +1.8% / +2.2% (D3Q19 Esoteric Pull, 256^3 / 512^3), +4.1% / +4.6%
/// (D3Q27) and +7.2% / +6.9% (D3Q19 two-lattice) over 72 / 88 / 80; the f32
/// kernels at 64 / 80 gained nothing (`docs/bench/h100-launch-session5.txt`).
pub const fn register_cap(kind: KernelKind, q: usize, bytes: usize) -> Option<u32> {
    match (kind, q, bytes) {
        (_, _, 8) => None,
        (KernelKind::StreamCollideEsoteric, 19, 2) => Some(64),
        (KernelKind::StreamCollideEsoteric, 19, _) => Some(72),
        (KernelKind::StreamCollideEsoteric, 27, 2) => Some(80),
        (KernelKind::StreamCollideEsoteric, 27, _) => Some(96),
        (KernelKind::StreamCollideTwoLattice, 19, 2) => Some(64),
        (KernelKind::StreamCollideTwoLattice, 19, _) => Some(80),
        _ => None,
    }
}

/// Threads per block of a per-cell kernel (see [`blocks_per_row`]). Measured on an H100
/// (`docs/bench/h100-launch-session5.txt`) against 64, 128, 192 and 256:
/// in a periodic box the f32 kernels run fastest at 256 (Esoteric Pull
/// D3Q19 91.5% -> 97.7% of copy bandwidth at 256^3 over 64), but in a walled
/// cavity 256 costs up to 18% (D3Q27 f32 at 512^3): a block holds its
/// resources until its slowest warp, and with walls every row has two warps
/// on the slower near-wall path. 128 is best or within 2.6% of best in both
/// geometries for every kernel measured (f32, 16-bit, f64), and is the
/// fastest in the cavity.
pub const fn block_size(kind: KernelKind) -> u32 {
    match kind {
        KernelKind::StreamCollideEsoteric | KernelKind::StreamCollideTwoLattice => 128,
        _ => DEFAULT_BLOCK_SIZE,
    }
}

/// Whether the per-cell kernels give each row of cells along x blocks of its
/// own (grid `(ceil(nx / block), ny, nz)`, no division to find a cell) or run
/// through each layer in order (grid `(ceil(nx * ny / block), 1, nz)`, one
/// division per thread). Rows of whole warps keep every warp on one 128-byte
/// aligned stretch of memory; other widths would start each row's warps at a
/// different offset and cost Esoteric Pull up to a sixth of its speed
/// (`docs/bench/h100-odd-widths-session6.txt`), so those run through the layer.
pub const fn blocks_per_row(nx: u32) -> bool {
    nx.is_multiple_of(32)
}

/// Threads per block of the kernels that are not timed (initialisation,
/// fields, the layout check).
pub const DEFAULT_BLOCK_SIZE: u32 = 64;

/// [`register_cap`] for an entry point given by name (as `build.rs` sees it
/// in the PTX), using the naming scheme of [`KernelKind::prefix`].
pub fn register_cap_for_entry(name: &str) -> Option<u32> {
    // The prefix must end at a `_`, so one kernel's prefix never claims
    // another kernel whose name merely starts the same way.
    let (kind, rest) =
        KernelKind::ALL.into_iter().find_map(|k| Some((k, name.strip_prefix(k.prefix())?.strip_prefix('_')?)))?;
    let (lattice, storage) = rest.split_once('_')?;
    let q = match lattice {
        "d2q9" => 9,
        "d3q19" => 19,
        "d3q27" => 27,
        _ => return None,
    };
    let bytes = match storage {
        "f16s" => 2,
        "f32" => 4,
        "f64" => 8,
        _ => return None,
    };
    register_cap(kind, q, bytes)
}

/// Name of the lattice-independent layout-check kernel.
pub const LAYOUT_PROBE_KERNEL: &str = "layout_probe";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_caps_follow_entry_names() {
        assert_eq!(register_cap_for_entry("stream_collide_ep_d3q19_f32"), Some(72));
        assert_eq!(register_cap_for_entry("stream_collide_ep_d3q19_f16s"), Some(64));
        assert_eq!(register_cap_for_entry("stream_collide_ep_d3q27_f32"), Some(96));
        assert_eq!(register_cap_for_entry("stream_collide_ab_d3q19_f16s"), Some(64));
        assert_eq!(register_cap_for_entry("stream_collide_ab_d3q19_f32"), Some(80));
        // A name that merely starts like a kernel's prefix is not that kernel.
        assert_eq!(register_cap_for_entry("stream_collide_epx_d3q19_f32"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ep_d3q19_f64"), None);
        assert_eq!(register_cap_for_entry("fields_d3q19_f32"), None);
    }
}
