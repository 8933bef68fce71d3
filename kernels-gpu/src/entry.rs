//! PTX entry points: thin shims that find their cell and call the per-cell
//! functions of [`crate::stream`]. Names follow [`crate::KernelKind::prefix`].
//! Each kernel comes for the dense box, the grid [`StepParams::dims`]
//! gives, and for the block-sparse grids of blocks 4 and 8 cells on a side
//! ([`Sparse`], whose tables are a kernel argument of their own), named
//! with `sparse4_` or `sparse8_` before the instance.

use crate::collision::{Bgk, Chosen, Collision, Cumulant, Mrt, Regularized, Smagorinsky, Trt};
use crate::curved::{self, CurvedCells};
use crate::grid::{Grid, LaunchIndex};
use crate::groups::OpenCells;
use crate::lattice::Lattice;
use crate::lattice::{D2Q9, D3Q19, D3Q27};
use crate::layout::Dims;
use crate::levels;
use crate::params::{OpenBoundary, StepParams};
use crate::sparse::{Fixed, Sparse, SparseTables};
use crate::sponge::{self, SpongeCells};
use crate::storage::{F16s, Storage};
use crate::stream::{self, Streaming};
use core::arch::nvptx::{_block_dim_x, _block_idx_x, _block_idx_y, _block_idx_z, _thread_idx_x};
use core::ops::Range;

/// This thread's cell in a launch over the region of `grid` that starts at
/// unit `first` ([`Grid::launch_cell`]): the stream-collide kernels of a
/// partition run its boundary layers and its interior as separate launches,
/// so that halo copies overlap the interior. `None` past the grid.
#[inline(always)]
fn this_cell<G: Grid>(grid: &G, first: u32) -> Option<G::Cell> {
    grid.launch_cell(first, launch_index())
}

/// Where this thread sits in its launch.
#[inline(always)]
pub(crate) fn launch_index() -> LaunchIndex {
    // SAFETY: reading special registers has no preconditions.
    unsafe {
        LaunchIndex {
            x: _block_idx_x() * _block_dim_x() + _thread_idx_x(),
            y: _block_idx_y(),
            z: _block_idx_z(),
            block: _block_idx_x(),
            threads: _block_dim_x(),
        }
    }
}

/// Index of this thread in a one-dimensional launch.
#[inline(always)]
fn thread_index() -> u32 {
    // SAFETY: reading special registers has no preconditions.
    unsafe { _block_idx_x() * _block_dim_x() + _thread_idx_x() }
}

/// `log2` of the block edge along z of a sparse grid whose blocks are
/// `2^shift` cells deep for a lattice of dimension `d`: one layer in 2D.
const fn z_shift(d: usize, shift: u32) -> u32 {
    if d == 2 {
        0
    } else {
        shift
    }
}

/// The bulk stream-collide kernels of the operators that run only those
/// ([`crate::CollisionKind::stamped`] is false): a module per operator
/// with `ep` and `ab`, named `stream_collide_{ep,ab}_<operator>_<infix><row>`.
/// `$grid` builds the grid from the launch's arguments (the step
/// parameters `$p`, the sparse grids' `tables`), `$first` is the launch's
/// first unit, and `$infix` names a sparse grid.
macro_rules! bulk_entries {
    ($infix:literal; $id:ident, $s:ty, $p:ident, $args:tt, $grid:expr, $first:ident; $($c:ident: $op:ident),*) => {$(
        bulk_entries!(@one $infix; $id, $s, $p, $args, $grid, $first; $c: $op);
    )*};
    (@one $infix:literal; $id:ident, $s:ty, $p:ident, ($($arg:ident: $ty:ty),*), $grid:expr, $first:ident; $c:ident: $op:ident) => {
        pub mod $c {
            use super::*;

            #[export_name = concat!("stream_collide_ep_", stringify!($c), "_", $infix, stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ep(f: *mut $s, flags: *const u8, $p: StepParams<Real, $op<Real>>, $($arg: $ty),*) {
                super::ep(&$grid, f, flags, $p, $first)
            }

            #[export_name = concat!("stream_collide_ab_", stringify!($c), "_", $infix, stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ab(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                $p: StepParams<Real, $op<Real>>,
                $($arg: $ty),*
            ) {
                super::ab(&$grid, src, dst, flags, $p, $first)
            }
        }
    };
}

/// [`bulk_entries`] of the operators built only for the lattices whose
/// velocities are all of `{-1, 0, 1}^D` ([`crate::CollisionKind::built_for`]):
/// every lattice here but D3Q19.
macro_rules! tensor_bulk_entries {
    (D3Q19; $($rest:tt)*) => {};
    ($lattice:ident; $($rest:tt)*) => {
        bulk_entries!($($rest)*);
    };
}

/// The entry points of the refinement levels with a collision, for the
/// operator `$op` on the sparse grid `Grid` (a type in scope where it is
/// used): `$collide`, the split step's collision over all blocks, and
/// `$coalesce`, the coalescence over a list of cells; each named for the
/// PTX after itself, the grid and the instance.
macro_rules! level_collision_entries {
    ($grid:ident, $id:ident, $s:ty, $collide:ident, $coalesce:ident, $op:ident) => {
        #[export_name = concat!(stringify!($collide), "_", stringify!($grid), "_", stringify!($id))]
        pub unsafe extern "ptx-kernel" fn $collide(
            f: *mut $s,
            flags: *const u8,
            p: StepParams<Real, $op<Real>>,
            tables: SparseTables,
            first: u32,
        ) {
            collide_half(&Grid::new(tables), f, flags, p, first)
        }

        #[export_name = concat!(stringify!($coalesce), "_", stringify!($grid), "_", stringify!($id))]
        pub unsafe extern "ptx-kernel" fn $coalesce(
            dst: *mut $s,
            p: StepParams<Real, $op<Real>>,
            tables: SparseTables,
            cells: *const u32,
            count: u32,
            fine_f: *const $s,
            fine: SparseTables,
            fine_odd: u32,
            children: *const u32,
            scheme: u32,
        ) {
            let (grid, fine) = (Grid::new(tables), Grid::new(fine));
            coalesce_list(&grid, dst, p, cells, count, &fine, fine_f, fine_odd, children, scheme)
        }
    };
}

/// The refinement kernels of one row on a sparse grid (whose type `Grid`
/// the expansion site names): transit, explosion, streaming, and the split
/// step's collision and coalescence. Refinement levels have cubic blocks.
macro_rules! level_entries {
    ($grid:ident, $id:ident, $s:ty) => {
        #[export_name = concat!("level_transit_", stringify!($grid), "_", stringify!($id))]
        pub unsafe extern "ptx-kernel" fn level_transit(
            src: *const $s,
            dst: *mut $s,
            flags: *const u8,
            p: StepParams<Real>,
            tables: SparseTables,
            cells: *const u32,
            count: u32,
            scheme: u32,
        ) {
            transit_list(&Grid::new(tables), src, dst, flags, p, cells, count, scheme)
        }

        #[export_name = concat!("level_explode_", stringify!($grid), "_", stringify!($id))]
        pub unsafe extern "ptx-kernel" fn level_explode(
            coarse_f: *const $s,
            coarse_flags: *const u8,
            coarse: SparseTables,
            coarse_odd: u32,
            fine_f: *mut $s,
            fine_flags: *const u8,
            fine: SparseTables,
            p: StepParams<Real>,
            parents: *const u32,
            children: *const u32,
            count: u32,
            scheme: u32,
        ) {
            let (coarse, fine) = (Grid::new(coarse), Grid::new(fine));
            explode_list(
                &coarse,
                coarse_f,
                coarse_flags,
                coarse_odd,
                &fine,
                fine_f,
                fine_flags,
                p,
                parents,
                children,
                count,
                scheme,
            )
        }

        #[export_name = concat!("level_stream_", stringify!($grid), "_", stringify!($id))]
        pub unsafe extern "ptx-kernel" fn level_stream(
            src: *const $s,
            dst: *mut $s,
            flags: *const u8,
            p: StepParams<Real>,
            tables: SparseTables,
            first: u32,
        ) {
            stream_half(&Grid::new(tables), src, dst, flags, p, first)
        }

        level_collision_entries!($grid, $id, $s, level_collide_bgk, level_coalesce_bgk, Bgk);
        level_collision_entries!($grid, $id, $s, level_collide_trt, level_coalesce_trt, Trt);
        level_collision_entries!($grid, $id, $s, level_collide_chosen, level_coalesce_chosen, Chosen);
    };
}

/// The block-sparse kernels of one row for blocks of `2^$sx` cells along x
/// and `2^$sy` along y and z (one layer in 2D), named `..._$grid_<row>`:
/// the grid's tables come after the step parameters, and a launch starts at
/// block `first`. With `level_entries`, the refinement kernels too.
macro_rules! sparse_entries {
    ($grid:ident, $infix:literal, $sx:literal, $sy:literal, $id:ident, $lattice:ident, $q:literal, $s:ty $(, $levels:ident)?) => {
        pub mod $grid {
            use super::*;
            type Grid = Sparse<Fixed<$sx, $sy, { z_shift(<$lattice as Lattice<$q>>::D, $sy) }>>;

            bulk_entries!(
                $infix; $id, $s, p, (tables: SparseTables, first: u32), Grid::new(tables), first;
                mrt: Mrt, regularized: Regularized, smagorinsky: Smagorinsky
            );
            tensor_bulk_entries!(
                $lattice; $infix; $id, $s, p, (tables: SparseTables, first: u32), Grid::new(tables), first;
                cumulant: Cumulant
            );

            #[export_name = concat!("stream_collide_ep_bgk_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ep_bgk(
                f: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Bgk<Real>>,
                tables: SparseTables,
                first: u32,
            ) {
                ep(&Grid::new(tables), f, flags, p, first)
            }

            #[export_name = concat!("stream_collide_ep_trt_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ep_trt(
                f: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Trt<Real>>,
                tables: SparseTables,
                first: u32,
            ) {
                ep(&Grid::new(tables), f, flags, p, first)
            }

            #[export_name = concat!("stream_collide_ab_bgk_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ab_bgk(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Bgk<Real>>,
                tables: SparseTables,
                first: u32,
            ) {
                ab(&Grid::new(tables), src, dst, flags, p, first)
            }

            #[export_name = concat!("stream_collide_ab_trt_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ab_trt(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Trt<Real>>,
                tables: SparseTables,
                first: u32,
            ) {
                ab(&Grid::new(tables), src, dst, flags, p, first)
            }

            #[export_name = concat!("stream_collide_open_ep_bgk_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ep_bgk(
                f: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Bgk<Real>>,
                tables: SparseTables,
                open: OpenCells<Real>,
                first: u32,
                end: u32,
            ) {
                any(&Grid::new(tables), Streaming::EsotericPull, f, f, flags, p, open, Grid::BLOCK_SHIFT, first..end)
            }

            #[export_name = concat!("stream_collide_open_ep_trt_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ep_trt(
                f: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Trt<Real>>,
                tables: SparseTables,
                open: OpenCells<Real>,
                first: u32,
                end: u32,
            ) {
                any(&Grid::new(tables), Streaming::EsotericPull, f, f, flags, p, open, Grid::BLOCK_SHIFT, first..end)
            }

            #[export_name = concat!("stream_collide_open_ab_bgk_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ab_bgk(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Bgk<Real>>,
                tables: SparseTables,
                open: OpenCells<Real>,
                first: u32,
                end: u32,
            ) {
                any(&Grid::new(tables), Streaming::TwoLattice, src, dst, flags, p, open, Grid::BLOCK_SHIFT, first..end)
            }

            #[export_name = concat!("stream_collide_open_ab_trt_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ab_trt(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Trt<Real>>,
                tables: SparseTables,
                open: OpenCells<Real>,
                first: u32,
                end: u32,
            ) {
                any(&Grid::new(tables), Streaming::TwoLattice, src, dst, flags, p, open, Grid::BLOCK_SHIFT, first..end)
            }

            #[export_name = concat!("open_boundary_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_boundary(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                cells: *const u32,
                velocities: *const Real,
                count: u32,
                p: StepParams<Real>,
                boundary: OpenBoundary<Real>,
                scheme: u32,
                tables: SparseTables,
            ) {
                open(&Grid::new(tables), src, dst, flags, cells, velocities, count, p, boundary, scheme)
            }

            #[export_name = concat!("curved_gather_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn curved_gather(
                f: *const $s,
                p: StepParams<Real>,
                links: CurvedCells<Real>,
                scheme: u32,
                tables: SparseTables,
            ) {
                gather_list(&Grid::new(tables), f, p, links, scheme)
            }

            #[export_name = concat!("curved_wall_bgk_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn curved_wall_bgk(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Bgk<Real>>,
                links: CurvedCells<Real>,
                scheme: u32,
                tables: SparseTables,
            ) {
                curved_list(&Grid::new(tables), src, dst, flags, p, links, scheme)
            }

            #[export_name = concat!("curved_wall_trt_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn curved_wall_trt(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Trt<Real>>,
                links: CurvedCells<Real>,
                scheme: u32,
                tables: SparseTables,
            ) {
                curved_list(&Grid::new(tables), src, dst, flags, p, links, scheme)
            }

            #[export_name = concat!("stream_collide_open_ep_chosen_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ep_chosen(
                f: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Chosen<Real>>,
                tables: SparseTables,
                open: OpenCells<Real>,
                first: u32,
                end: u32,
            ) {
                any(&Grid::new(tables), Streaming::EsotericPull, f, f, flags, p, open, Grid::BLOCK_SHIFT, first..end)
            }

            #[export_name = concat!("stream_collide_open_ab_chosen_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ab_chosen(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Chosen<Real>>,
                tables: SparseTables,
                open: OpenCells<Real>,
                first: u32,
                end: u32,
            ) {
                any(&Grid::new(tables), Streaming::TwoLattice, src, dst, flags, p, open, Grid::BLOCK_SHIFT, first..end)
            }

            #[export_name = concat!("curved_wall_chosen_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn curved_wall_chosen(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Chosen<Real>>,
                links: CurvedCells<Real>,
                scheme: u32,
                tables: SparseTables,
            ) {
                curved_list(&Grid::new(tables), src, dst, flags, p, links, scheme)
            }

            #[export_name = concat!("curved_fields_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn curved_fields(
                f: *const $s,
                flags: *const u8,
                out: *mut Real,
                p: StepParams<Real>,
                links: CurvedCells<Real>,
                scheme: u32,
                tables: SparseTables,
            ) {
                curved_fields_list(&Grid::new(tables), f, flags, out, p, links, scheme)
            }

            #[export_name = concat!("sponge_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn sponge(
                f: *mut $s,
                p: StepParams<Real>,
                band: SpongeCells<Real>,
                scheme: u32,
                tables: SparseTables,
            ) {
                sponge_list(&Grid::new(tables), f, p, band, scheme)
            }

            #[export_name = concat!("init_equilibrium_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn init_equilibrium(
                f: *mut $s,
                flags: *const u8,
                planes: *const Real,
                p: StepParams<Real>,
                scheme: u32,
                tables: SparseTables,
            ) {
                init(&Grid::new(tables), f, flags, planes, p, scheme)
            }

            #[export_name = concat!("fields_", stringify!($grid), "_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn fields_sparse(
                f: *const $s,
                flags: *const u8,
                out: *mut Real,
                p: StepParams<Real>,
                scheme: u32,
                tables: SparseTables,
            ) {
                fields(&Grid::new(tables), f, flags, out, p, scheme)
            }

            $($levels!($grid, $id, $s);)?
        }
    };
}

/// Stamps the entry points of every row of [`crate::for_each_instance`]:
/// each row's kernels in a module of its own, named for the PTX by
/// [`crate::KernelKind::prefix`] and the row's name.
macro_rules! entry_points {
    ([] $(($id:ident, $lattice:ident, $q:literal, $s:ty, $p:ident))*) => {$(
        pub mod $id {
            use super::*;
            type Real = <$s as Storage>::Real;

            /// Esoteric Pull stream-collide with `C`, one thread per cell of
            /// the units `first ..` that the bulk kernel runs ([`Grid::runs`]).
            #[inline(always)]
            unsafe fn ep<C: Collision<Real>, G: Grid>(grid: &G, f: *mut $s, flags: *const u8, p: StepParams<Real, C>, first: u32) {
                if let Some(cell) = this_cell(grid, first).filter(|&c| grid.runs(c, false)) {
                    stream::stream_collide_esoteric::<$lattice, $q, $s, C, G>(grid, &p, f, flags, cell);
                }
            }

            /// Two-lattice stream-collide with `C`, one thread per cell of
            /// the units `first ..` that the bulk kernel runs ([`Grid::runs`]).
            #[inline(always)]
            unsafe fn ab<C: Collision<Real>, G: Grid>(
                grid: &G,
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, C>,
                first: u32,
            ) {
                if let Some(cell) = this_cell(grid, first).filter(|&c| grid.runs(c, false)) {
                    stream::stream_collide_two_lattice::<$lattice, $q, $s, C, G>(grid, &p, src, dst, flags, cell);
                }
            }

            /// Stream-collide of fluid and open cells together
            /// ([`crate::groups`]) over the cells of `units` that it runs
            /// ([`Grid::open_cell`]), on a grid of blocks of
            /// `2^shift` cells (0 for the dense box). Esoteric Pull passes
            /// `src == dst`.
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn any<C: Collision<Real>, G: Grid>(
                grid: &G,
                scheme: Streaming,
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, C>,
                open: OpenCells<Real>,
                shift: u32,
                units: Range<u32>,
            ) {
                if let Some(cell) = grid.open_cell(units, launch_index()) {
                    let cell = if G::WALKS_BOUNDARY_BLOCKS {
                        grid.cell_of(open.walk(grid.index_of(cell), shift))
                    } else {
                        cell
                    };
                    let group = |n| open.group(n, shift);
                    stream::stream_collide_any::<$lattice, $q, $s, C, G>(grid, scheme, &p, src, dst, flags, cell, group);
                }
            }

            /// An open-boundary group: its cells, one thread per entry of
            /// `cells` (`count` cell numbers), and what it imposes: `open`,
            /// with the velocity of entry `i` at `velocities[3 i..3 i + 3]`
            /// unless `velocities` is null (an inlet with a profile). Esoteric
            /// Pull passes a null `src`: it works in `dst`.
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn open<G: Grid>(
                grid: &G,
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                cells: *const u32,
                velocities: *const Real,
                count: u32,
                p: StepParams<Real>,
                open: OpenBoundary<Real>,
                scheme: u32,
            ) {
                let i = thread_index();
                if i < count {
                    let cell = grid.cell_of(*cells.add(i as usize));
                    let scheme = Streaming::from_u32(scheme);
                    let src = if src.is_null() { dst as *const $s } else { src };
                    let open = stream::with_profile(open, velocities, i as usize);
                    stream::open_boundary_update::<$lattice, $q, $s, G>(grid, scheme, &p, &open, src, dst, flags, cell);
                }
            }

            /// [`curved::gather`] of a curved-wall group, one thread per listed cell.
            #[inline(always)]
            unsafe fn gather_list<G: Grid>(grid: &G, f: *const $s, p: StepParams<Real>, links: CurvedCells<Real>, scheme: u32) {
                let k = thread_index();
                if k < links.count {
                    curved::gather::<$lattice, $q, $s, G>(grid, Streaming::from_u32(scheme), &p, f, &links, k);
                }
            }

            /// [`curved::update`] of a curved-wall group, one thread per
            /// listed cell. Esoteric Pull passes a null `src`: it works in `dst`.
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn curved_list<C: Collision<Real>, G: Grid>(
                grid: &G,
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, C>,
                links: CurvedCells<Real>,
                scheme: u32,
            ) {
                let k = thread_index();
                if k < links.count {
                    let src = if src.is_null() { dst as *const $s } else { src };
                    curved::update::<$lattice, $q, $s, C, G>(grid, Streaming::from_u32(scheme), &p, src, dst, flags, &links, k);
                }
            }

            /// [`sponge::absorb`] of a sponge band, one thread per listed cell.
            #[inline(always)]
            unsafe fn sponge_list<G: Grid>(grid: &G, f: *mut $s, p: StepParams<Real>, band: SpongeCells<Real>, scheme: u32) {
                let k = thread_index();
                if k < band.count {
                    sponge::absorb::<$lattice, $q, $s, G>(grid, Streaming::from_u32(scheme), &p, f, &band, k);
                }
            }

            /// [`curved::fields`] of a curved-wall group, one thread per listed cell.
            #[inline(always)]
            unsafe fn curved_fields_list<G: Grid>(
                grid: &G,
                f: *const $s,
                flags: *const u8,
                out: *mut Real,
                p: StepParams<Real>,
                links: CurvedCells<Real>,
                scheme: u32,
            ) {
                let k = thread_index();
                if k < links.count {
                    curved::fields::<$lattice, $q, $s, G>(grid, Streaming::from_u32(scheme), &p, f, flags, &links, out, k);
                }
            }

            /// The streaming half of the split step, one thread per cell of
            /// the units `first ..`.
            #[inline(always)]
            unsafe fn stream_half<G: Grid>(
                grid: &G,
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real>,
                first: u32,
            ) {
                if let Some(cell) = this_cell(grid, first) {
                    levels::stream_half::<$lattice, $q, $s, G>(grid, &p, src, dst, flags, cell);
                }
            }

            /// The collision half of the split step, one thread per cell of
            /// the units `first ..`.
            #[inline(always)]
            unsafe fn collide_half<C: Collision<Real>, G: Grid>(
                grid: &G,
                f: *mut $s,
                flags: *const u8,
                p: StepParams<Real, C>,
                first: u32,
            ) {
                if let Some(cell) = this_cell(grid, first) {
                    levels::collide_half::<$lattice, $q, $s, C, G>(grid, &p, f, flags, cell);
                }
            }

            /// A level's ghost cells `cells` (`count` numbers) stream.
            /// Esoteric Pull passes a null `src`: it works in `dst`.
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn transit_list<G: Grid>(
                grid: &G,
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real>,
                cells: *const u32,
                count: u32,
                scheme: u32,
            ) {
                let i = thread_index();
                if i < count {
                    let src = if src.is_null() { dst as *const $s } else { src };
                    let cell = grid.cell_of(*cells.add(i as usize));
                    levels::transit::<$lattice, $q, $s, G>(grid, Streaming::from_u32(scheme), &p, src, dst, flags, cell);
                }
            }

            /// Explosion of the `count` coarse cells `parents` into their
            /// `2^D` fine cells each, at `children`.
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn explode_list<G: Grid>(
                coarse: &G,
                coarse_f: *const $s,
                coarse_flags: *const u8,
                coarse_odd: u32,
                fine: &G,
                fine_f: *mut $s,
                fine_flags: *const u8,
                p: StepParams<Real>,
                parents: *const u32,
                children: *const u32,
                count: u32,
                scheme: u32,
            ) {
                let i = thread_index() as usize;
                if i < count as usize {
                    let k = if <$lattice as Lattice<$q>>::D == 2 { 4 } else { 8 };
                    let children = core::slice::from_raw_parts(children.add(k * i), k);
                    let scheme = Streaming::from_u32(scheme);
                    levels::explode_parent::<$lattice, $q, $s, G>(
                        scheme, coarse, coarse_odd != 0, coarse_f, coarse_flags, fine, &p, fine_f, fine_flags, *parents.add(i), children,
                    );
                }
            }

            /// Coalescence into the `count` cells of `cells` next to the finer
            /// level, whose `2^D` ghost cells each are at `children`.
            #[inline(always)]
            #[allow(clippy::too_many_arguments)]
            unsafe fn coalesce_list<C: Collision<Real>, G: Grid>(
                grid: &G,
                dst: *mut $s,
                p: StepParams<Real, C>,
                cells: *const u32,
                count: u32,
                fine: &G,
                fine_f: *const $s,
                fine_odd: u32,
                children: *const u32,
                scheme: u32,
            ) {
                let i = thread_index() as usize;
                if i < count as usize {
                    let k = if <$lattice as Lattice<$q>>::D == 2 { 4 } else { 8 };
                    let children = core::slice::from_raw_parts(children.add(k * i), k);
                    let cell = grid.cell_of(*cells.add(i));
                    let scheme = Streaming::from_u32(scheme);
                    levels::coalesce::<$lattice, $q, $s, C, G>(grid, scheme, &p, dst, cell, fine, fine_odd != 0, fine_f, children);
                }
            }

            /// Equilibrium initialisation from `rho, ux, uy, uz` planes.
            #[inline(always)]
            unsafe fn init<G: Grid>(grid: &G, f: *mut $s, flags: *const u8, fields: *const Real, p: StepParams<Real>, scheme: u32) {
                if let Some(cell) = this_cell(grid, 0) {
                    let scheme = Streaming::from_u32(scheme);
                    stream::init_equilibrium::<$lattice, $q, $s, G>(grid, scheme, &p, f, flags, fields, cell);
                }
            }

            /// Density and velocity into `rho, ux, uy, uz` planes.
            #[inline(always)]
            unsafe fn fields<G: Grid>(grid: &G, f: *const $s, flags: *const u8, out: *mut Real, p: StepParams<Real>, scheme: u32) {
                if let Some(cell) = this_cell(grid, 0) {
                    stream::fields::<$lattice, $q, $s, G>(grid, Streaming::from_u32(scheme), &p, f, flags, out, cell);
                }
            }

            // The dense box: the grid is `p.dims`, a launch starts at layer `z0`.

            bulk_entries!(
                ""; $id, $s, p, (z0: u32), { p.dims }, z0;
                mrt: Mrt, regularized: Regularized, smagorinsky: Smagorinsky
            );
            tensor_bulk_entries!($lattice; ""; $id, $s, p, (z0: u32), { p.dims }, z0; cumulant: Cumulant);

            #[export_name = concat!("stream_collide_ep_bgk_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ep_bgk(f: *mut $s, flags: *const u8, p: StepParams<Real, Bgk<Real>>, z0: u32) {
                ep(&{ p.dims }, f, flags, p, z0)
            }

            #[export_name = concat!("stream_collide_ep_trt_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ep_trt(f: *mut $s, flags: *const u8, p: StepParams<Real, Trt<Real>>, z0: u32) {
                ep(&{ p.dims }, f, flags, p, z0)
            }

            #[export_name = concat!("stream_collide_ab_bgk_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ab_bgk(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Bgk<Real>>,
                z0: u32,
            ) {
                ab(&{ p.dims }, src, dst, flags, p, z0)
            }

            #[export_name = concat!("stream_collide_ab_trt_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn ab_trt(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Trt<Real>>,
                z0: u32,
            ) {
                ab(&{ p.dims }, src, dst, flags, p, z0)
            }

            #[export_name = concat!("stream_collide_open_ep_bgk_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ep_bgk(
                f: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Bgk<Real>>,
                open: OpenCells<Real>,
                z0: u32,
                end: u32,
            ) {
                any(&{ p.dims }, Streaming::EsotericPull, f, f, flags, p, open, 0, z0..end)
            }

            #[export_name = concat!("stream_collide_open_ep_trt_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ep_trt(
                f: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Trt<Real>>,
                open: OpenCells<Real>,
                z0: u32,
                end: u32,
            ) {
                any(&{ p.dims }, Streaming::EsotericPull, f, f, flags, p, open, 0, z0..end)
            }

            #[export_name = concat!("stream_collide_open_ab_bgk_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ab_bgk(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Bgk<Real>>,
                open: OpenCells<Real>,
                z0: u32,
                end: u32,
            ) {
                any(&{ p.dims }, Streaming::TwoLattice, src, dst, flags, p, open, 0, z0..end)
            }

            #[export_name = concat!("stream_collide_open_ab_trt_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ab_trt(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Trt<Real>>,
                open: OpenCells<Real>,
                z0: u32,
                end: u32,
            ) {
                any(&{ p.dims }, Streaming::TwoLattice, src, dst, flags, p, open, 0, z0..end)
            }

            #[export_name = concat!("open_boundary_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_boundary(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                cells: *const u32,
                velocities: *const Real,
                count: u32,
                p: StepParams<Real>,
                boundary: OpenBoundary<Real>,
                scheme: u32,
            ) {
                open(&{ p.dims }, src, dst, flags, cells, velocities, count, p, boundary, scheme)
            }

            #[export_name = concat!("init_equilibrium_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn init_equilibrium(f: *mut $s, flags: *const u8, planes: *const Real, p: StepParams<Real>, scheme: u32) {
                init(&{ p.dims }, f, flags, planes, p, scheme)
            }

            #[export_name = concat!("fields_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn fields_dense(f: *const $s, flags: *const u8, out: *mut Real, p: StepParams<Real>, scheme: u32) {
                fields(&{ p.dims }, f, flags, out, p, scheme)
            }

            #[export_name = concat!("curved_gather_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn curved_gather(f: *const $s, p: StepParams<Real>, links: CurvedCells<Real>, scheme: u32) {
                gather_list(&{ p.dims }, f, p, links, scheme)
            }

            #[export_name = concat!("curved_wall_bgk_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn curved_wall_bgk(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Bgk<Real>>,
                links: CurvedCells<Real>,
                scheme: u32,
            ) {
                curved_list(&{ p.dims }, src, dst, flags, p, links, scheme)
            }

            #[export_name = concat!("curved_wall_trt_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn curved_wall_trt(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Trt<Real>>,
                links: CurvedCells<Real>,
                scheme: u32,
            ) {
                curved_list(&{ p.dims }, src, dst, flags, p, links, scheme)
            }

            #[export_name = concat!("stream_collide_open_ep_chosen_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ep_chosen(
                f: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Chosen<Real>>,
                open: OpenCells<Real>,
                z0: u32,
                end: u32,
            ) {
                any(&{ p.dims }, Streaming::EsotericPull, f, f, flags, p, open, 0, z0..end)
            }

            #[export_name = concat!("stream_collide_open_ab_chosen_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn open_ab_chosen(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Chosen<Real>>,
                open: OpenCells<Real>,
                z0: u32,
                end: u32,
            ) {
                any(&{ p.dims }, Streaming::TwoLattice, src, dst, flags, p, open, 0, z0..end)
            }

            #[export_name = concat!("curved_wall_chosen_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn curved_wall_chosen(
                src: *const $s,
                dst: *mut $s,
                flags: *const u8,
                p: StepParams<Real, Chosen<Real>>,
                links: CurvedCells<Real>,
                scheme: u32,
            ) {
                curved_list(&{ p.dims }, src, dst, flags, p, links, scheme)
            }

            #[export_name = concat!("curved_fields_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn curved_fields(
                f: *const $s,
                flags: *const u8,
                out: *mut Real,
                p: StepParams<Real>,
                links: CurvedCells<Real>,
                scheme: u32,
            ) {
                curved_fields_list(&{ p.dims }, f, flags, out, p, links, scheme)
            }

            #[export_name = concat!("sponge_", stringify!($id))]
            pub unsafe extern "ptx-kernel" fn sponge(f: *mut $s, p: StepParams<Real>, band: SpongeCells<Real>, scheme: u32) {
                sponge_list(&{ p.dims }, f, p, band, scheme)
            }

            sparse_entries!(sparse4, "sparse4_", 2, 2, $id, $lattice, $q, $s, level_entries);
            sparse_entries!(sparse8, "sparse8_", 3, 3, $id, $lattice, $q, $s, level_entries);
            sparse_entries!(sparse32x4, "sparse32x4_", 5, 2, $id, $lattice, $q, $s);
        }
    )*};
}

crate::for_each_instance!(entry_points;);

/// Layout check: every population slot of every cell gets its probe value.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn layout_probe(out: *mut u64, dims: Dims, q: u32) {
    if let Some(cell) = this_cell(&dims, 0) {
        stream::write_layout_probe(&dims, q as usize, out, cell);
    }
}

/// The exchange kernels of [`crate::exchange`], one pair per stored-value
/// width, named as [`crate::exchange::KERNELS`] lists them.
macro_rules! exchange_entries {
    ($($m:ident: $t:ty, $gather:literal, $scatter:literal);*) => {$(
        mod $m {
            use super::*;

            #[export_name = $gather]
            pub unsafe extern "ptx-kernel" fn gather(src: *const $t, index: *const u64, out: *mut $t, count: u32) {
                let k = thread_index();
                if k < count {
                    crate::exchange::gather(src, index, out, k)
                }
            }

            #[export_name = $scatter]
            pub unsafe extern "ptx-kernel" fn scatter(dst: *mut $t, index: *const u64, values: *const $t, count: u32) {
                let k = thread_index();
                if k < count {
                    crate::exchange::scatter(dst, index, values, k)
                }
            }
        }
    )*};
}

exchange_entries!(
    b16: u16, "exchange_gather_b16", "exchange_scatter_b16";
    b32: u32, "exchange_gather_b32", "exchange_scatter_b32";
    b64: u64, "exchange_gather_b64", "exchange_scatter_b64"
);
