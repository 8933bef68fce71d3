//! The per-cell updates at a resolution jump between two refinement levels.
//!
//! Levels meet in the volumetric scheme of Rohde et al. (2006): a coarse
//! cell and the `2^D` fine cells it is made of hold the same mass when their
//! populations are equal, so a coarse population spread over its fine cells
//! (*explosion*) and fine populations averaged into a coarse cell
//! (*coalescence*) conserve mass, with no interpolation in space or time.
//! Within one coarse step, the fine level takes two steps, and the coarse
//! region next to it is seen at the fine resolution: the coarse cells near the
//! fine level's own cells are overlaid by *ghost* cells of the fine level
//! ([`GHOST`]), which stream at the fine resolution but do not collide.
//!
//! One coarse step (post-collision populations stored, as every step leaves
//! them):
//!
//! 1. [`explode_parent`]: every ghost cell takes its parent's
//!    post-collision populations, linear across the parent (the parent's
//!    value plus a slope term that sums to zero over its `2^D` ghost cells),
//!    stored where the fine level's next step reads them ([`explode`]).
//! 2. The fine level takes two steps: its own cells stream and collide as
//!    anywhere (reading ghost cells where the coarse region begins), and the
//!    ghost cells stream ([`transit`]). What crosses into the coarse region
//!    lands in ghost cells; what the coarse region sends in comes out of
//!    them, from the right coarse cell at the right fine step.
//! 3. The coarse level takes its step: its cells next to the fine region
//!    ([`crate::flags::COALESCED`]) take the average of the ghost cells over them as their
//!    incoming populations and collide ([`coalesce`]); the others stream and
//!    collide as anywhere.
//!
//! Step 2 moves populations cell by cell at the fine resolution, so the
//! total mass (coarse cells counted `2^D` times) is conserved to round-off,
//! at faces, edges and corners of the fine region alike. A ghost cell's
//! value after the two fine steps is exact when everything it streamed from
//! was: ghost cells up to three fine cells from the fine region stream, and
//! the ones beyond ([`FROZEN`]) keep their parents' populations, so the ghost
//! cells of the coarse cells next to the fine region (at most two fine cells
//! away) are exact.

use crate::collision::Collision;
use crate::flags::{flag_of, is_flow, is_fluid, COALESCED, FLUID, FROZEN, GHOST, KIND_MASK};
use crate::grid::{Grid, Neighbourhood};
use crate::lattice::Lattice;
use crate::params::StepParams;
use crate::real::Real;
use crate::storage::Storage;
use crate::stream::{collide, load, load_fluid, neighbours, store, stored_slot, Streaming};

/// Streams ghost cell `cell` without colliding: its populations move on as
/// the fine level's cells' do (no wall lies within its reach: the host
/// refuses jumps that meet one).
///
/// # Safety
/// As [`crate::stream::stream_collide_any`].
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one per kernel argument, plus the grid
pub unsafe fn transit<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    src: *const S,
    dst: *mut S,
    flags: *const u8,
    cell: G::Cell,
) {
    // A ghost cell near a wall carries NEAR_SOLID too.
    if flag_of(flags, grid.index_of(cell)) & KIND_MASK != GHOST {
        return;
    }
    let nb = neighbours::<L, Q, G>(grid, cell);
    // No solid lies within a ghost cell's reach (the host refuses jumps
    // that meet walls), so it pulls without looking at its neighbours.
    let fi = load::<L, Q, S, false, _>(scheme, p, src, flags, &nb);
    store::<L, Q, S>(scheme, p, dst, &nb, &fi);
}

/// The post-collision populations of `cell` (in the storage units of `S`)
/// as the step of parity `odd` left them in `f`.
///
/// # Safety
/// `f` must hold `Q * cells` values.
#[inline(always)]
pub unsafe fn stored<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    grid: &G,
    scheme: Streaming,
    odd: bool,
    f: *const S,
    cell: G::Cell,
) -> [S::Real; Q] {
    let nb = neighbours::<L, Q, G>(grid, cell);
    let mut fi = [S::Real::ZERO; Q];
    for i in 0..Q {
        fi[i] = S::fetch(f.add(stored_slot::<L, Q>(scheme, odd, &nb, i))).load_scaled();
    }
    fi
}

/// Whether a cell's populations are its level's own post-collision ones:
/// fluid cells and cells next to a finer level (not walls, ghost cells, or
/// cells a finer level covers).
#[inline(always)]
const fn is_own(flag: u8) -> bool {
    let kind = flag & KIND_MASK;
    kind == FLUID || kind == COALESCED
}

/// Explosion into ghost or frozen cell `cell` of the fine level: stores its
/// parent's post-collision populations `post` (storage units) where the
/// fine step of parity `p.step & 1` reads them, as if the previous fine step
/// had left them. A frozen cell writes only the populations that ghost
/// cells stream from it: its other slots may lie in cells nobody stores.
/// Any other flow cell stores all of `post` (how a refined domain starts:
/// each cell's post-collision populations are written, so that a cell next
/// to a finer level, whose neighbours there are solid to its level, has
/// them too); solid cells store nothing.
///
/// # Safety
/// As [`crate::stream::stream_collide_any`]; `dst` is the buffer the fine
/// step reads.
#[inline(always)]
pub unsafe fn explode<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    dst: *mut S,
    flags: *const u8,
    cell: G::Cell,
    post: &[S::Real; Q],
) {
    let flag = flag_of(flags, grid.index_of(cell));
    if !is_flow(flag) {
        return;
    }
    let nb = neighbours::<L, Q, G>(grid, cell);
    // Stored as by the step before the one of parity `p.step & 1`.
    let odd = p.step & 1 == 0;
    let frozen = flag & KIND_MASK == FROZEN;
    for i in 0..Q {
        if !frozen || flag_of(flags, nb.cell(i)) & KIND_MASK == GHOST {
            *dst.add(stored_slot::<L, Q>(scheme, odd, &nb, i)) = S::store_scaled(post[i]);
        }
    }
}

/// Marks a child [`explode_parent`] leaves alone (a frozen cell no ghost
/// cell reads).
pub const NO_CHILD: u32 = u32::MAX;

/// The explosion of coarse cell number `parent` of `coarse` into its fine
/// cells `children` on `fine` (`2^D` storage numbers, the one at offset
/// `(x, y, z) & 1` from the parent's first fine cell at `x + 2 y + 4 z`,
/// [`NO_CHILD`] where none is needed), stored as [`explode`] stores them
/// for the fine step `p`.
///
/// Each child takes the parent's post-collision populations (as the coarse
/// step of parity `coarse_odd` left them in `coarse_f`) plus their slope
/// across the parent times `offset / 4`, the child's distance from the
/// parent's centre (`-1` or `1` per axis: the lower or upper half; axes the
/// lattice does not move along, z in 2D, take none). The slope along an
/// axis is the central difference of the parent's two neighbours on it,
/// one-sided where only one is a cell its level owns, zero where neither
/// is. The slopes are the same for all children and the offsets sum to
/// zero over them, so their total is the parent's: mass stays conserved,
/// and the coarse populations reach the fine level to second order in space
/// rather than as a piecewise-constant field.
///
/// One parent's populations, slopes and children go population by
/// population, so that its `7 Q` loads serve all its children and few
/// values are live at a time.
///
/// # Safety
/// `coarse_f` must hold `Q * cells` values and `coarse_flags` `cells` bytes
/// of `coarse`; as [`explode`] for `fine`; `children` holds `2^D` entries.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one per kernel argument, plus the grids
pub unsafe fn explode_parent<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    scheme: Streaming,
    coarse: &G,
    coarse_odd: bool,
    coarse_f: *const S,
    coarse_flags: *const u8,
    fine: &G,
    p: &StepParams<S::Real, impl Copy>,
    fine_f: *mut S,
    fine_flags: *const u8,
    parent: u32,
    children: &[u32],
) {
    let parent = coarse.cell_of(parent);
    let centre = stored::<L, Q, S, G>(coarse, scheme, coarse_odd, coarse_f, parent);
    let nb = neighbours::<L, Q, G>(coarse, parent);
    let half = S::Real::from_f64(0.5);
    let zero = [S::Real::ZERO; Q];
    let mut has = [false; 3];
    let mut slopes = [zero; 3];
    for a in 0..3 {
        let (up, down) = axis_directions::<L, Q>(a);
        if up == 0 || down == 0 {
            continue; // a 2D lattice along z
        }
        let own = |j: usize| is_own(flag_of(coarse_flags, nb.cell(j)));
        let side = |j: usize| stored::<L, Q, S, G>(coarse, scheme, coarse_odd, coarse_f, coarse.cell_of(nb.cell(j)));
        has[a] = true;
        slopes[a] = match (own(up), own(down)) {
            (true, true) => {
                let (u, d) = (side(up), side(down));
                core::array::from_fn(|i| (u[i] - d[i]) * half)
            }
            (true, false) => {
                let u = side(up);
                core::array::from_fn(|i| u[i] - centre[i])
            }
            (false, true) => {
                let d = side(down);
                core::array::from_fn(|i| centre[i] - d[i])
            }
            (false, false) => {
                has[a] = false;
                zero
            }
        };
    }
    let quarter = S::Real::from_f64(0.25);
    for (k, &child) in children.iter().enumerate() {
        if child == NO_CHILD {
            continue;
        }
        let mut out = centre;
        for a in 0..3 {
            if has[a] {
                let w = if (k >> a) & 1 == 1 { quarter } else { -quarter };
                for i in 0..Q {
                    out[i] += slopes[a][i] * w;
                }
            }
        }
        explode::<L, Q, S, G>(fine, scheme, p, fine_f, fine_flags, fine.cell_of(child), &out);
    }
}

/// The lattice directions `+e_a` and `-e_a` along axis `a` (0 for one the
/// lattice lacks: z in 2D).
#[inline(always)]
fn axis_directions<L: Lattice<Q>, const Q: usize>(a: usize) -> (usize, usize) {
    let (mut up, mut down) = (0, 0);
    for j in 1..Q {
        let c = L::C[j];
        if c[a] != 0 && c[(a + 1) % 3] == 0 && c[(a + 2) % 3] == 0 {
            if c[a] > 0 {
                up = j;
            } else {
                down = j;
            }
        }
    }
    (up, down)
}

/// Step of coarse cell `cell` next to the fine region ([`crate::flags::COALESCED`]):
/// its incoming populations are the average of those of the ghost cells
/// over it, `children` (their numbers on the fine grid `fine`, as the fine
/// step of parity `fine_odd` left them in `fine_f`); it collides them and
/// stores the result as any cell does.
///
/// # Safety
/// As [`crate::stream::stream_collide_any`] for the coarse grid; `fine_f`
/// must hold the fine level's populations.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one per kernel argument, plus the grids
pub unsafe fn coalesce<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, C>,
    dst: *mut S,
    cell: G::Cell,
    fine: &G,
    fine_odd: bool,
    fine_f: *const S,
    children: &[u32],
) {
    let mut fi = [S::Real::ZERO; Q];
    for &child in children {
        let g = stored::<L, Q, S, G>(fine, scheme, fine_odd, fine_f, fine.cell_of(child));
        for i in 0..Q {
            fi[i] += g[i];
        }
    }
    let share = S::Real::from_f64(1.0 / children.len() as f64);
    for v in fi.iter_mut() {
        *v = *v * share;
    }
    collide::<L, Q, S, C>(&mut fi, p);
    let nb = neighbours::<L, Q, G>(grid, cell);
    store::<L, Q, S>(scheme, p, dst, &nb, &fi);
}

/// The streaming half of the split step, the unfused baseline that the
/// fused stream-collide kernel is measured against (Mahmoud et al. 2025,
/// section 6.3): fluid cell `cell` pulls its incoming populations, walls
/// bounced as in the fused step, into its own slots of `dst` uncollided.
/// With [`collide_half`] after it, the two halves give the fused
/// two-lattice step's values bit for bit where storing a population and
/// loading it back is exact (f32 and f64 storage: their scale is 1).
///
/// # Safety
/// As [`crate::stream::stream_collide_two_lattice`].
#[inline(always)]
pub unsafe fn stream_half<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    grid: &G,
    p: &StepParams<S::Real, impl Copy>,
    src: *const S,
    dst: *mut S,
    flags: *const u8,
    cell: G::Cell,
) {
    let flag = flag_of(flags, grid.index_of(cell));
    if !is_fluid(flag) {
        return;
    }
    let nb = neighbours::<L, Q, G>(grid, cell);
    let fi = load_fluid::<L, Q, S>(Streaming::TwoLattice, p, src, flags, flag, &nb);
    store::<L, Q, S>(Streaming::TwoLattice, p, dst, &nb, &fi);
}

/// The collision half of the split step ([`stream_half`]): fluid cell
/// `cell` collides the populations at its own slots of `f`, in place.
///
/// # Safety
/// `f` must hold `Q * cells` values and `flags` `cells` bytes.
#[inline(always)]
pub unsafe fn collide_half<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>, G: Grid>(
    grid: &G,
    p: &StepParams<S::Real, C>,
    f: *mut S,
    flags: *const u8,
    cell: G::Cell,
) {
    let flag = flag_of(flags, grid.index_of(cell));
    if !is_fluid(flag) {
        return;
    }
    let nb = neighbours::<L, Q, G>(grid, cell);
    let mut fi = [S::Real::ZERO; Q];
    for i in 0..Q {
        fi[i] = S::fetch(f.add(stored_slot::<L, Q>(Streaming::TwoLattice, false, &nb, i))).load_scaled();
    }
    collide::<L, Q, S, C>(&mut fi, p);
    store::<L, Q, S>(Streaming::TwoLattice, p, f, &nb, &fi);
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::flags::MAX_MOVING_WALLS;
    use crate::lattice::D3Q19;
    use crate::Dims;
    use std::vec;

    /// `stored` finds every population where `store` put it, in both schemes
    /// and parities, and `store` fills every slot once.
    #[test]
    fn stored_reads_what_store_wrote() {
        let dims = Dims { nx: 4, ny: 3, nz: 5 };
        for scheme in Streaming::ALL {
            for step in [0u32, 1] {
                let p = StepParams::<f64> {
                    dims,
                    step,
                    z_offset: 0,
                    reserved: 0,
                    collision: (),
                    force: [0.0; 3],
                    wall_velocity: [[0.0; 3]; MAX_MOVING_WALLS],
                };
                let mut f = vec![f64::NAN; 19 * dims.cells()];
                let value = |n: u32, i: usize| (19 * n as usize + i) as f64;
                for n in 0..dims.cells() as u32 {
                    let nb = neighbours::<D3Q19, 19, _>(&dims, dims.cell_of(n));
                    let fi = core::array::from_fn(|i| value(n, i));
                    // SAFETY: the buffer holds 19 values per cell.
                    unsafe { store::<D3Q19, 19, f64>(scheme, &p, f.as_mut_ptr(), &nb, &fi) };
                }
                assert!(f.iter().all(|v| !v.is_nan()), "{scheme:?} step {step}: a slot was not written");
                for n in 0..dims.cells() as u32 {
                    // SAFETY: as above.
                    let got =
                        unsafe { stored::<D3Q19, 19, f64, _>(&dims, scheme, step == 1, f.as_ptr(), dims.cell_of(n)) };
                    for (i, g) in got.iter().enumerate() {
                        assert_eq!(*g, value(n, i), "{scheme:?} step {step} cell {n} population {i}");
                    }
                }
            }
        }
    }
}
