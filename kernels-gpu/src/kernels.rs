//! The table of GPU kernels: which instances the PTX holds, one name scheme
//! for them, and their launch settings. The entry points (`crate::entry`),
//! the host's dispatch and kernel lookup, the register caps `build.rs`
//! applies, and the lists `lbm bench` and the command line accept all come
//! from here.

use crate::collision::CollisionKind;
use crate::stream::Streaming;

/// Calls the macro `$callback` with the table of instances: every lattice and
/// storage format the kernels are built for, one row each,
/// `(name, Lattice, Q, Storage, Precision)`. `name` ends every entry point's
/// name (`d3q19_f32`), `Lattice` and `Storage` are this crate's types and
/// `Precision` names the host's variant. Tokens after the callback's path
/// are handed on in front of the rows, in brackets. Each row is crossed with
/// every [`Streaming`] scheme and every [`CollisionKind`].
#[macro_export]
macro_rules! for_each_instance {
    ($($callback:ident)::+ ; $($extra:tt)*) => {
        $($callback)::+! {
            [$($extra)*]
            (d2q9_f32, D2Q9, 9, f32, F32)
            (d2q9_f64, D2Q9, 9, f64, F64)
            (d2q9_f16, D2Q9, 9, F16s, F16)
            (d3q19_f32, D3Q19, 19, f32, F32)
            (d3q19_f64, D3Q19, 19, f64, F64)
            (d3q19_f16, D3Q19, 19, F16s, F16)
            (d3q27_f32, D3Q27, 27, f32, F32)
            (d3q27_f64, D3Q27, 27, f64, F64)
            (d3q27_f16, D3Q27, 27, F16s, F16)
        }
    };
}

/// A kernel family; each is instantiated for every row of [`for_each_instance`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelKind {
    /// [`crate::stream::stream_collide_esoteric`] or
    /// [`crate::stream::stream_collide_two_lattice`], with a collision operator.
    StreamCollide(Streaming, CollisionKind),
    /// [`crate::stream::stream_collide_any`]: fluid and open cells in one
    /// kernel, for the boundary-group variants of [`crate::groups`], with a
    /// [`CollisionKind::stamped`] collision operator.
    StreamCollideOpen(Streaming, CollisionKind),
    /// [`KernelKind::StreamCollideOpen`] with the other operators, [`crate::Chosen`].
    StreamCollideOpenChosen(Streaming),
    /// [`crate::stream::open_boundary_update`], over a list of cells.
    OpenBoundary,
    /// [`crate::curved::gather`], over a curved-wall group's cells.
    CurvedGather,
    /// [`crate::curved::update`], over a curved-wall group's cells, with a
    /// [`CollisionKind::stamped`] collision operator.
    CurvedWall(CollisionKind),
    /// [`crate::curved::update`] with the other operators, [`crate::Chosen`].
    CurvedWallChosen,
    /// [`crate::curved::fields`], over a curved-wall group's cells.
    CurvedFields,
    /// [`crate::sponge::absorb`], over a sponge band's cells.
    Sponge,
    /// [`crate::stream::init_equilibrium`].
    InitEquilibrium,
    /// [`crate::stream::fields`].
    Fields,
}

/// `concat!($prefix, name)` for the collision operator `$c`, one arm per
/// [`CollisionKind`]: entry-point prefixes must be `&'static str`.
macro_rules! with_collision {
    ($prefix:literal, $c:expr) => {
        match $c {
            CollisionKind::Bgk => concat!($prefix, "bgk"),
            CollisionKind::Trt => concat!($prefix, "trt"),
            CollisionKind::Mrt => concat!($prefix, "mrt"),
            CollisionKind::Regularized => concat!($prefix, "regularized"),
            CollisionKind::Smagorinsky => concat!($prefix, "smagorinsky"),
            CollisionKind::Cumulant => concat!($prefix, "cumulant"),
        }
    };
}

/// The collision operators [`CollisionKind::stamped`] holds, in order.
const STAMPED: [CollisionKind; 2] = [CollisionKind::Bgk, CollisionKind::Trt];
const _: () = {
    let mut n = 0;
    let mut k = 0;
    while k < CollisionKind::ALL.len() {
        if CollisionKind::ALL[k].stamped() {
            assert!(STAMPED[n] as u32 == CollisionKind::ALL[k] as u32);
            n += 1;
        }
        k += 1;
    }
    assert!(n == STAMPED.len());
};

impl KernelKind {
    /// Every kernel family: the stream-collide kernels for every operator,
    /// the kernels with a collision of their own for the operators
    /// [`CollisionKind::stamped`] holds, and the open and curved ones for the others.
    pub const ALL: [KernelKind; 2 * CollisionKind::ALL.len() + 3 * STAMPED.len() + 9] = {
        use Streaming::{EsotericPull as Ep, TwoLattice as Ab};
        let mut all = [KernelKind::Fields; 2 * CollisionKind::ALL.len() + 3 * STAMPED.len() + 9];
        let mut n = 0;
        let mut k = 0;
        while k < CollisionKind::ALL.len() {
            all[n] = KernelKind::StreamCollide(Ep, CollisionKind::ALL[k]);
            all[n + 1] = KernelKind::StreamCollide(Ab, CollisionKind::ALL[k]);
            n += 2;
            k += 1;
        }
        k = 0;
        while k < STAMPED.len() {
            all[n] = KernelKind::StreamCollideOpen(Ep, STAMPED[k]);
            all[n + 1] = KernelKind::StreamCollideOpen(Ab, STAMPED[k]);
            all[n + 2] = KernelKind::CurvedWall(STAMPED[k]);
            n += 3;
            k += 1;
        }
        let rest = [
            KernelKind::StreamCollideOpenChosen(Ep),
            KernelKind::StreamCollideOpenChosen(Ab),
            KernelKind::CurvedWallChosen,
            KernelKind::OpenBoundary,
            KernelKind::CurvedGather,
            KernelKind::CurvedFields,
            KernelKind::Sponge,
            KernelKind::InitEquilibrium,
            KernelKind::Fields,
        ];
        k = 0;
        while k < rest.len() {
            all[n] = rest[k];
            n += 1;
            k += 1;
        }
        assert!(n == all.len());
        all
    };

    /// The kernel of fluid and open cells together of operator `c`.
    pub const fn stream_collide_open(s: Streaming, c: CollisionKind) -> Self {
        if c.stamped() {
            KernelKind::StreamCollideOpen(s, c)
        } else {
            KernelKind::StreamCollideOpenChosen(s)
        }
    }

    /// The curved-wall kernel of operator `c`.
    pub const fn curved_wall(c: CollisionKind) -> Self {
        if c.stamped() {
            KernelKind::CurvedWall(c)
        } else {
            KernelKind::CurvedWallChosen
        }
    }

    /// Prefix of the entry-point name; the full name is `{prefix}_{instance}`,
    /// e.g. `stream_collide_ep_bgk_d3q19_f32` (see [`for_each_instance`]).
    pub const fn prefix(self) -> &'static str {
        use Streaming::{EsotericPull as Ep, TwoLattice as Ab};
        match self {
            KernelKind::StreamCollide(Ep, c) => with_collision!("stream_collide_ep_", c),
            KernelKind::StreamCollide(Ab, c) => with_collision!("stream_collide_ab_", c),
            KernelKind::StreamCollideOpen(Ep, c) => with_collision!("stream_collide_open_ep_", c),
            KernelKind::StreamCollideOpen(Ab, c) => with_collision!("stream_collide_open_ab_", c),
            KernelKind::StreamCollideOpenChosen(Ep) => "stream_collide_open_ep_chosen",
            KernelKind::StreamCollideOpenChosen(Ab) => "stream_collide_open_ab_chosen",
            KernelKind::OpenBoundary => "open_boundary",
            KernelKind::CurvedGather => "curved_gather",
            KernelKind::CurvedWall(c) => with_collision!("curved_wall_", c),
            KernelKind::CurvedWallChosen => "curved_wall_chosen",
            KernelKind::CurvedFields => "curved_fields",
            KernelKind::Sponge => "sponge",
            KernelKind::InitEquilibrium => "init_equilibrium",
            KernelKind::Fields => "fields",
        }
    }

    /// Whether it is built for the lattice of `q` velocities (see
    /// [`CollisionKind::built_for`]).
    pub const fn built_for(self, q: usize) -> bool {
        match self {
            KernelKind::StreamCollide(_, c) | KernelKind::StreamCollideOpen(_, c) | KernelKind::CurvedWall(c) => {
                c.built_for(q)
            }
            _ => true,
        }
    }

    /// Whether this is a stream-collide kernel (the timed bulk update, alone
    /// or with the open cells).
    pub const fn is_stream_collide(self) -> bool {
        matches!(
            self,
            KernelKind::StreamCollide(..) | KernelKind::StreamCollideOpen(..) | KernelKind::StreamCollideOpenChosen(_)
        )
    }
}

/// A kernel at a resolution jump between refinement levels
/// ([`crate::levels`]): built for every row of [`for_each_instance`] on the
/// block-sparse grids ([`LevelKernel::GRIDS`]), whose levels they join.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LevelKernel {
    /// [`crate::levels::transit`] over a list of ghost cells.
    Transit,
    /// [`crate::levels::explode_parent`] over a list of coarse cells and their children.
    Explode,
    /// [`crate::levels::coalesce`] over a list of cells, with a
    /// [`CollisionKind::stamped`] collision operator.
    Coalesce(CollisionKind),
    /// [`LevelKernel::Coalesce`] with the other operators, [`crate::Chosen`].
    CoalesceChosen,
    /// [`crate::levels::stream_half`] over all blocks: the split step's
    /// streaming (the unfused baseline).
    Stream,
    /// [`crate::levels::collide_half`] over all blocks, with a
    /// [`CollisionKind::stamped`] collision operator.
    Collide(CollisionKind),
    /// [`LevelKernel::Collide`] with the other operators, [`crate::Chosen`].
    CollideChosen,
}

impl LevelKernel {
    /// Every level kernel: those with a collision for each operator
    /// [`CollisionKind::stamped`] holds, and one for the others.
    pub const ALL: [LevelKernel; 5 + 2 * STAMPED.len()] = {
        let mut all = [LevelKernel::Transit; 5 + 2 * STAMPED.len()];
        all[1] = LevelKernel::Explode;
        all[2] = LevelKernel::Stream;
        all[3] = LevelKernel::CoalesceChosen;
        all[4] = LevelKernel::CollideChosen;
        let mut k = 0;
        while k < STAMPED.len() {
            all[5 + 2 * k] = LevelKernel::Coalesce(STAMPED[k]);
            all[6 + 2 * k] = LevelKernel::Collide(STAMPED[k]);
            k += 1;
        }
        all
    };
    /// The grids they are built for.
    pub const GRIDS: [GridKind; 2] = [GridKind::Sparse4, GridKind::Sparse8];

    /// The coalescence kernel of operator `c`.
    pub const fn coalesce(c: CollisionKind) -> Self {
        if c.stamped() {
            LevelKernel::Coalesce(c)
        } else {
            LevelKernel::CoalesceChosen
        }
    }

    /// The split step's collision kernel of operator `c`.
    pub const fn collide(c: CollisionKind) -> Self {
        if c.stamped() {
            LevelKernel::Collide(c)
        } else {
            LevelKernel::CollideChosen
        }
    }

    /// Prefix of the entry-point name, as [`KernelKind::prefix`].
    pub const fn prefix(self) -> &'static str {
        match self {
            LevelKernel::Transit => "level_transit",
            LevelKernel::Explode => "level_explode",
            LevelKernel::Coalesce(c) => with_collision!("level_coalesce_", c),
            LevelKernel::CoalesceChosen => "level_coalesce_chosen",
            LevelKernel::Stream => "level_stream",
            LevelKernel::Collide(c) => with_collision!("level_collide_", c),
            LevelKernel::CollideChosen => "level_collide_chosen",
        }
    }
}

/// The grid a kernel runs on: every kernel family is built for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GridKind {
    /// The dense box ([`crate::Dims`]).
    Dense,
    /// The block-sparse grid of blocks 4 cells on a side ([`crate::sparse::Sparse`]).
    Sparse4,
    /// The block-sparse grid of blocks 8 cells on a side.
    Sparse8,
    /// The block-sparse grid of blocks 32 cells along x, 4 along y and z
    /// (no refinement kernels: levels have cubic blocks).
    Sparse32x4,
}

impl GridKind {
    /// Every grid.
    pub const ALL: [GridKind; 4] = [GridKind::Dense, GridKind::Sparse4, GridKind::Sparse8, GridKind::Sparse32x4];

    /// What the entry-point name has between the family's prefix and the
    /// instance: `stream_collide_ep_bgk_sparse4_d3q19_f32`.
    pub const fn infix(self) -> &'static str {
        match self {
            GridKind::Dense => "",
            GridKind::Sparse4 => "sparse4_",
            GridKind::Sparse8 => "sparse8_",
            GridKind::Sparse32x4 => "sparse32x4_",
        }
    }
}

/// Every instance name of [`for_each_instance`] (`d3q19_f32`), with its
/// population count and bytes per population.
pub const INSTANCES: [(&str, usize, usize); 9] = {
    macro_rules! rows {
        ([] $(($id:ident, $lattice:ident, $q:literal, $s:ty, $p:ident))*) => {
            [$((stringify!($id), $q, <$s as crate::storage::Storage>::BYTES)),*]
        };
    }
    use crate::storage::F16s;
    for_each_instance!(rows;)
};

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
/// kernels at 64 / 80 gained nothing (`docs/bench/h100-2026-11-21-919e805-launch.txt`).
pub const fn register_cap(kind: KernelKind, grid: GridKind, q: usize, bytes: usize) -> Option<u32> {
    use CollisionKind::{Bgk, Cumulant, Mrt, Regularized, Smagorinsky as Smag, Trt};
    use Streaming::{EsotericPull as Ep, TwoLattice as Ab};
    // The sparse kernels run as ptxas allocates them (at the dense kernels'
    // caps the 16-bit ones spill), except where a cap fits without a spill
    // and measured faster. D3Q27 f32 Esoteric Pull on 8^3 blocks: BGK and
    // MRT at 96 (31% occupancy, not 25%; for BGK on an H100 +4.2% in a
    // periodic 256^3 box, +10% in the packed bed,
    // `docs/bench/h100-2026-11-24-0a6c18c-sparse-cap.txt`); TRT and
    // Smagorinsky spill at 96 and run uncapped (108 and 114). On 4^3
    // blocks TRT and MRT stay at their earlier 96 (TRT uncapped takes 107,
    // since Esoteric Pull finds its even neighbours only near walls in f32
    // too). D3Q27 16-bit BGK takes 127 uncapped and
    // fits 96: on an H200 +6.8% in the bed on 4^3 blocks; since Esoteric
    // Pull keeps neighbour numbers and a path per parity it spills at 96
    // and fits 88 (as few warps). At 80 it spilled 8 bytes and ran faster
    // all the same: on an H200 +6.0% on rows and +5.5% on 8^3 blocks in the
    // periodic box, +2.7% / +4.5% in the packed bed
    // (`docs/bench/h200-2026-11-30-sparse-ep-cap-80.txt`); since loads take
    // their addresses from the grid (`stream::addresses_from_grid`) it fits
    // 80 without a spill.
    // D3Q19 f32 BGK fitted
    // 64 on 8^3 blocks (+2.4% periodic, +3.9% bed on an H200,
    // `docs/bench/h200-2026-11-29-sparse-caps.txt`, which also has the caps
    // that spill) and 72 on 4^3 (uncapped 80). D3Q19 f32 MRT on 8^3 blocks
    // takes 84 uncapped and fits 80: +3.0% periodic, +15% in the packed bed
    // (`docs/bench/h200-2026-11-29-mrt-d3q19-linear-map.txt`). D3Q19 16-bit
    // regularized Esoteric Pull fits 72: since loads add no zero it takes
    // 76 uncapped, 9.0% slower than at 72 before on 8^3 blocks; at 72 1.7%
    // (`docs/bench/h200-2026-11-29-loads-add-no-zero.txt`).
    if !matches!(grid, GridKind::Dense) {
        return match (kind, grid, q, bytes) {
            (KernelKind::StreamCollide(Ep, Bgk | Mrt), GridKind::Sparse8 | GridKind::Sparse32x4, 27, 4) => Some(96),
            (KernelKind::StreamCollide(Ep, Trt | Mrt), GridKind::Sparse4, 27, 4) => Some(96),
            (KernelKind::StreamCollide(Ep, Bgk), _, 27, 2) => Some(80),
            (KernelKind::StreamCollide(Ep, Bgk), GridKind::Sparse8 | GridKind::Sparse32x4, 19, 4) => Some(64),
            (KernelKind::StreamCollide(Ep, Mrt), GridKind::Sparse8 | GridKind::Sparse32x4, 19, 4) => Some(80),
            (KernelKind::StreamCollide(Ep, Bgk), GridKind::Sparse4, 19, 4) => Some(72),
            (KernelKind::StreamCollide(Ep, Regularized), _, 19, 2) => Some(72),
            // The kernel that updates open cells too, two-lattice f32: at
            // the registers it took before it walked blocks by a table
            // (`groups::OpenCells::walk`; no spill), not the 98 / 79 / 95
            // it takes uncapped since.
            (KernelKind::StreamCollideOpen(Ab, Bgk), _, 27, 4) => Some(96),
            (KernelKind::StreamCollideOpen(Ab, Bgk), _, 19, 4) => Some(72),
            (KernelKind::StreamCollideOpenChosen(Ab), _, 27, 4) => Some(80),
            _ => None,
        };
    }
    // TRT kernels run uncapped at or below BGK's registers (72 for D3Q27
    // 16-bit Esoteric Pull since TRT relaxes pair by pair), except D3Q27
    // 16-bit two-lattice: uncapped 80, at 72 (no spill) +3.2% on an H200,
    // BGK's speed (`docs/bench/h200-2026-11-29-trt-pair-by-pair.txt`).
    // The operators in 16-bit storage, capped where ptxas fits them without
    // a spill, on an H200, 256^3 periodic box: Smagorinsky D3Q19 two-lattice
    // +3.5% (64 -> 56) and D3Q27 Esoteric Pull +4.7% (80 -> 72), regularized
    // D3Q27 two-lattice +5.0% (77 -> 72)
    // (`docs/bench/h200-2026-11-28-f16-operators-stress.txt`). MRT D3Q19
    // Esoteric Pull at 64 (no spill): 16-bit since its sums go by velocity
    // class (72 -> 64, +1.7%, `docs/bench/h200-2026-11-29-mrt-d3q19-classes.txt`;
    // as one linear map 72 is still 3.2% slower,
    // `docs/bench/h200-2026-11-29-every-operator-mrt-linear-map.txt`), f32
    // since they are one linear map (72 -> 64, +0.8% periodic, +4.2% in the
    // forced bed); its 16-bit two-lattice kernel at 56 (from 64, no spill):
    // a trade, +2.2% periodic and -1.5% in the forced bed
    // (`docs/bench/h200-2026-11-29-mrt-d3q19-linear-map.txt`). Since loads
    // add no zero (`docs/bench/h200-2026-11-29-loads-add-no-zero.txt`):
    // the cumulant operator's D3Q27 16-bit two-lattice kernel fits 72
    // (uncapped 80, the count of BGK's before; +3.9%), and f64 D3Q27 BGK
    // two-lattice, which went from 124 registers to 162 (0.5% slower),
    // runs at 128 as fast as before.
    match (kind, q, bytes) {
        (KernelKind::StreamCollide(Ab, Bgk), 27, 8) => Some(128),
        (_, _, 8) => None,
        (KernelKind::StreamCollide(Ab, Cumulant), 27, 2) => Some(72),
        (KernelKind::StreamCollide(Ep, Mrt), 19, _) => Some(64),
        (KernelKind::StreamCollide(Ab, Mrt), 19, 2) => Some(56),
        (KernelKind::StreamCollide(Ab, Smag), 19, 2) => Some(56),
        (KernelKind::StreamCollide(Ep, Smag), 27, 2) => Some(72),
        (KernelKind::StreamCollide(Ab, Regularized), 27, 2) => Some(72),
        (KernelKind::StreamCollide(Ep, Bgk), 19, 2) => Some(64),
        (KernelKind::StreamCollide(Ep, Bgk), 19, _) => Some(72),
        (KernelKind::StreamCollide(Ep, Bgk), 27, 2) => Some(80),
        (KernelKind::StreamCollide(Ep, Bgk), 27, _) => Some(96),
        (KernelKind::StreamCollide(Ab, Bgk), 19, 2) => Some(64),
        (KernelKind::StreamCollide(Ab, Bgk), 19, _) => Some(80),
        (KernelKind::StreamCollide(Ab, Trt), 27, 2) => Some(72),
        _ => None,
    }
}

/// Threads per block of a per-cell kernel (see [`blocks_per_row`]). Measured on an H100
/// (`docs/bench/h100-2026-11-21-919e805-launch.txt`) against 64, 128, 192 and 256:
/// in a periodic box the f32 kernels run fastest at 256 (Esoteric Pull
/// D3Q19 91.5% -> 97.7% of copy bandwidth at 256^3 over 64), but in a walled
/// cavity 256 costs up to 18% (D3Q27 f32 at 512^3): a block holds its
/// resources until its slowest warp, and with walls every row has two warps
/// on the slower near-wall path. 128 is best or within 2.6% of best in both
/// geometries for every kernel measured (f32, 16-bit, f64), and is the
/// fastest in the cavity.
pub const fn block_size(kind: KernelKind) -> u32 {
    match kind {
        KernelKind::StreamCollide(..) | KernelKind::StreamCollideOpen(..) => 128,
        _ => DEFAULT_BLOCK_SIZE,
    }
}

/// Whether the per-cell kernels give each row of cells along x blocks of its
/// own (grid `(ceil(nx / block), ny, nz)`, no division to find a cell) or run
/// through each layer in order (grid `(ceil(nx * ny / block), 1, nz)`, one
/// division per thread). Rows of whole warps keep every warp on one 128-byte
/// aligned stretch of memory; other widths would start each row's warps at a
/// different offset and cost Esoteric Pull up to a sixth of its speed
/// (`docs/bench/h100-2026-11-22-a0ea696-odd-widths.txt`), so those run through the layer.
pub const fn blocks_per_row(nx: u32) -> bool {
    nx.is_multiple_of(32)
}

/// Threads per block of the kernels that are not timed (initialisation,
/// fields, the layout check).
pub const DEFAULT_BLOCK_SIZE: u32 = 64;

/// The kernel, grid, population count and bytes per population of an entry
/// point given by name (as `build.rs` sees it in the PTX), by the naming
/// scheme of [`KernelKind::prefix`]; `None` for a name outside the table.
pub fn entry_instance(name: &str) -> Option<(KernelKind, GridKind, usize, usize)> {
    // The prefix must end at a `_`, so one kernel's prefix never claims
    // another kernel whose name merely starts the same way.
    let (kind, rest) =
        KernelKind::ALL.into_iter().find_map(|k| Some((k, name.strip_prefix(k.prefix())?.strip_prefix('_')?)))?;
    let (grid, rest) = GridKind::ALL
        .into_iter()
        .rev()
        .find_map(|g| Some((g, rest.strip_prefix(g.infix())?)))
        .expect("the dense infix is empty");
    let (_, q, bytes) = INSTANCES.into_iter().find(|(id, _, _)| *id == rest)?;
    Some((kind, grid, q, bytes))
}

/// [`register_cap`] for an entry point given by name ([`entry_instance`]).
pub fn register_cap_for_entry(name: &str) -> Option<u32> {
    let (kind, grid, q, bytes) = entry_instance(name)?;
    register_cap(kind, grid, q, bytes)
}

/// Name of the lattice-independent layout-check kernel.
pub const LAYOUT_PROBE_KERNEL: &str = "layout_probe";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_caps_follow_entry_names() {
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgk_d3q19_f32"), Some(72));
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgk_d3q19_f16"), Some(64));
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgk_d3q27_f32"), Some(96));
        assert_eq!(register_cap_for_entry("stream_collide_ab_bgk_d3q19_f16"), Some(64));
        assert_eq!(register_cap_for_entry("stream_collide_ab_bgk_d3q19_f32"), Some(80));
        assert_eq!(register_cap_for_entry("stream_collide_ep_trt_d3q19_f32"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ep_trt_d3q27_f16"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ab_trt_d3q27_f16"), Some(72));
        assert_eq!(register_cap_for_entry("stream_collide_ep_mrt_d3q27_f16"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ab_smagorinsky_d3q19_f16"), Some(56));
        assert_eq!(register_cap_for_entry("stream_collide_ep_smagorinsky_d3q19_f16"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ep_smagorinsky_d3q27_f16"), Some(72));
        assert_eq!(register_cap_for_entry("stream_collide_ab_regularized_d3q27_f16"), Some(72));
        assert_eq!(register_cap_for_entry("stream_collide_ep_mrt_d3q19_f32"), Some(64));
        assert_eq!(register_cap_for_entry("stream_collide_ep_mrt_d3q19_f16"), Some(64));
        assert_eq!(register_cap_for_entry("stream_collide_ab_mrt_d3q19_f16"), Some(56));
        assert_eq!(register_cap_for_entry("stream_collide_ab_mrt_d3q19_f32"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ep_mrt_sparse8_d3q19_f32"), Some(80));
        assert_eq!(register_cap_for_entry("stream_collide_ep_mrt_sparse4_d3q19_f32"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ab_cumulant_d3q27_f16"), Some(72));
        assert_eq!(register_cap_for_entry("stream_collide_ep_cumulant_d3q27_f16"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ab_bgk_d3q27_f64"), Some(128));
        assert_eq!(register_cap_for_entry("stream_collide_ab_bgk_d3q19_f64"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ep_regularized_sparse8_d3q19_f16"), Some(72));
        assert_eq!(register_cap_for_entry("stream_collide_ep_regularized_sparse4_d3q19_f16"), Some(72));
        // A name that merely starts like a kernel's prefix is not that kernel.
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgkx_d3q19_f32"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgk_d3q19_f64"), None);
        assert_eq!(register_cap_for_entry("fields_d3q19_f32"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgk_sparse8_d3q19_f32"), Some(64));
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgk_sparse4_d3q27_f16"), Some(80));
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgk_sparse4_d3q19_f16"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ep_trt_sparse8_d3q27_f32"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ep_trt_sparse4_d3q27_f32"), Some(96));
        assert_eq!(register_cap_for_entry("stream_collide_ep_mrt_sparse8_d3q27_f32"), Some(96));
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgk_sparse4_d3q19_f32"), Some(72));
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgk_sparse4_d3q27_f32"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ep_bgk_sparse8_d3q27_f16"), Some(80));
        assert_eq!(register_cap_for_entry("stream_collide_ep_trt_sparse8_d3q27_f16"), None);
        assert_eq!(register_cap_for_entry("stream_collide_ab_bgk_sparse4_d3q19_f32"), None);
        // The kernels that update open cells too run uncapped.
        assert_eq!(register_cap_for_entry("stream_collide_open_ep_bgk_d3q19_f32"), None);
    }

    #[test]
    fn entry_names_parse_into_their_instance() {
        assert_eq!(
            entry_instance("stream_collide_ep_bgk_sparse32x4_d3q27_f16"),
            Some((KernelKind::StreamCollide(Streaming::EsotericPull, CollisionKind::Bgk), GridKind::Sparse32x4, 27, 2))
        );
        assert_eq!(
            entry_instance("stream_collide_ab_mrt_d3q19_f32"),
            Some((KernelKind::StreamCollide(Streaming::TwoLattice, CollisionKind::Mrt), GridKind::Dense, 19, 4))
        );
        assert_eq!(entry_instance(LAYOUT_PROBE_KERNEL), None);
    }
}
