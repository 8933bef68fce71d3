//! Boundary groups in the kernels: how a grid whose few open-boundary cells
//! need a register-heavy update (inlets and outlets, regularized or not)
//! keeps that cost away from the bulk of its cells.
//!
//! Mahmoud et al. (2025, section 4) compare three ways; the solver has them
//! all, and a fourth that it runs by default:
//!
//! | variant   | kernels per step                                            | an open cell's group found by          |
//! |-----------|-------------------------------------------------------------|----------------------------------------|
//! | `lists`   | bulk over every cell; one per inlet or outlet over its list | the group's own launch                 |
//! | `naive`   | [`stream_collide_any`] over every cell                      | entry `n` of a table over every cell   |
//! | `memory`  | boundary blocks stored first: `any` over them, bulk the rest | entry `n` of a table over those blocks |
//! | `bitmask` | bulk over every block, skipping marked ones; `any` per mask word, a rank per marked block | the block's slot, then its cell |
//!
//! A *boundary block* is a block of the sparse grid that holds an open
//! cell. The bulk kernels never hold the open boundary's code, so they run
//! with the registers of the fluid update; the kernel that does both holds
//! the open boundary's registers. `naive` runs the heavy kernel everywhere;
//! `memory` and `bitmask` only over boundary blocks, which the first by
//! where it stores them and the second with a bit per block
//! ([`crate::Grid::runs`], [`crate::Grid::open_cell`]). With two kernels a
//! step, the host runs them side by side on two streams. On a grid of
//! blocks the heavy kernel may walk a boundary block's open cells first
//! ([`OpenCells::walk`]), so that they fill warps of their own.
//!
//! [`stream_collide_any`]: crate::stream::stream_collide_any

use crate::collision::Trt;
use crate::params::OpenBoundary;
use crate::readonly::ReadOnly;
use crate::real::Real;

/// Where the kernel that updates open cells with the fluid ones finds what
/// each open cell imposes: `#[repr(C)]`, a kernel argument by value.
///
/// The tables live in the memory of whoever runs the per-cell functions
/// (device memory for a kernel, host memory on the CPU).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpenCells<T> {
    /// What each inlet and outlet imposes, by group number.
    groups: *const OpenBoundary<T>,
    /// The group number of each open cell (entries of other cells unused).
    group_of: *const u16,
    /// Per block, where its run of `group_of` entries starts, in blocks; or
    /// null: a cell's entry is its storage number (direct indexing).
    slot: *const u32,
    /// The local number of the cell each thread updates
    /// ([`OpenCells::walk`]), at entry `e & order_mask` for the thread of
    /// entry `e`: a run per boundary block, its open cells first, with an
    /// `order_mask` of all ones; or one run for every block, `0, 1, ..`,
    /// with an `order_mask` of a block's cells less one (each thread its
    /// own cell). Null on the dense box, which keeps its own order.
    order: *const u16,
    order_mask: u32,
}

// SAFETY: the tables are read-only for as long as an `OpenCells` refers to
// them (the contract of `OpenCells::new`).
unsafe impl<T> Send for OpenCells<T> {}
unsafe impl<T> Sync for OpenCells<T> {}

/// Most open-boundary groups one grid may carry ([`OpenCells`] numbers
/// them in 16 bits).
pub const MAX_GROUPS: usize = u16::MAX as usize + 1;

impl<T: Real> OpenCells<T> {
    /// The tables at `groups` (what each group imposes), `group_of` (a
    /// group number per entry), `slot` (null, or a block's first entry
    /// over its cells per block) and `order` (null, or local cell numbers
    /// at entries masked by `order_mask`).
    ///
    /// # Safety
    /// Every open cell the kernels update must find its entry: with a null
    /// `slot`, `group_of` holds an entry for every storage number of an
    /// open cell; otherwise `slot` holds one for each block with an open
    /// cell and `group_of` `cells per block` entries from there. Every entry
    /// names a group of `groups`. On a grid of blocks `order` holds an
    /// entry at `e & order_mask` for the entry `e` of every cell the kernel
    /// visits, and the entries a block's cells reach are a permutation of
    /// its local numbers. All must stay valid and unchanged while the
    /// tables (or a copy) are used.
    pub const unsafe fn new(
        groups: *const OpenBoundary<T>,
        group_of: *const u16,
        slot: *const u32,
        order: *const u16,
        order_mask: u32,
    ) -> Self {
        Self { groups, group_of, slot, order, order_mask }
    }

    /// The entry of the cell stored at `n` on a grid of blocks of
    /// `2^block_shift` cells.
    ///
    /// # Safety
    /// With a `slot` table, `n` must lie in a boundary block.
    #[inline(always)]
    unsafe fn entry(&self, n: u32, block_shift: u32) -> u32 {
        if self.slot.is_null() {
            n
        } else {
            let start = u32::load(self.slot.add((n >> block_shift) as usize));
            (start << block_shift) | (n & ((1 << block_shift) - 1))
        }
    }

    /// The storage number of the cell that the thread of the cell stored at
    /// `n`, on a grid of blocks of `2^block_shift` cells, updates. Where a
    /// boundary block's open cells come first they fill warps of their own,
    /// and the warps after them hold fluid cells only: a warp that mixed
    /// both ran the open update and the fluid one one after the other. The
    /// look-up is made whatever the order (an identity table where there
    /// is none): choosing at run time between walking and not cost the
    /// 16-bit D3Q27 two-lattice kernel 18 registers.
    ///
    /// # Safety
    /// `n` must be a cell the kernel visits, on a grid of blocks (see
    /// [`OpenCells::new`]).
    #[inline(always)]
    pub unsafe fn walk(&self, n: u32, block_shift: u32) -> u32 {
        let entry = self.entry(n, block_shift) & self.order_mask;
        let local = u16::load(self.order.add(entry as usize)) as u32;
        (n & !((1 << block_shift) - 1)) | local
    }

    /// What the open cell stored at `n` imposes, on a grid of blocks of
    /// `2^block_shift` cells (the dense box: 0, with a null `slot`).
    ///
    /// # Safety
    /// `n` must be the storage number of an open cell (see [`OpenCells::new`]).
    #[inline(always)]
    pub unsafe fn group(&self, n: u32, block_shift: u32) -> OpenBoundary<T> {
        let entry = self.entry(n, block_shift);
        let g = self.groups.add(u16::load(self.group_of.add(entry as usize)) as usize);
        // Field by field: each is a plain value the read-only cache serves.
        OpenBoundary {
            rho: T::load(&raw const (*g).rho),
            u: <[T; 3]>::load(&raw const (*g).u),
            normal: <[T; 3]>::load(&raw const (*g).normal),
            kind: u32::load(&raw const (*g).kind),
            scheme: u32::load(&raw const (*g).scheme),
            rates: Trt {
                omega_plus: T::load(&raw const (*g).rates.omega_plus),
                omega_minus: T::load(&raw const (*g).rates.omega_minus),
            },
            ramp_steps: u32::load(&raw const (*g).ramp_steps),
            reserved: 0,
        }
    }
}
