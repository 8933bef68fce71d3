//! Streaming schemes and boundaries, and the per-cell bodies of every kernel.
//!
//! Both schemes are written as "where is population `i` arriving at cell `n`
//! stored" ([`incoming_slot`]) and "where does the post-collision population go"
//! (the `store` half of each update). Reading fields, initialising and the
//! update itself all use these, so the schemes cannot drift apart.
//!
//! **Two-lattice pull (A-B).** Buffer `src` holds post-collision populations;
//! `f_i(x)` is pulled from `src[x - c_i, i]`, and the collided value is written
//! to `dst[x, i]`. The buffers swap every step.
//!
//! **Esoteric Pull** (Lehmann 2022), in place in one buffer. For
//! each opposite pair `(a, b = a + 1)` with neighbour `j = x + c_a`:
//!
//! | parity | load `f_a` | load `f_b` | store `f*_a` | store `f*_b` |
//! |--------|------------|------------|--------------|--------------|
//! | even   | `(x, a)`   | `(j, b)`   | `(j, b)`     | `(x, a)`     |
//! | odd    | `(x, b)`   | `(j, a)`   | `(j, a)`     | `(x, b)`     |
//!
//! Every slot is read and written by exactly one cell per step, so cells
//! update concurrently without races.
//!
//! **Grid.** Cells, their neighbours and where populations are stored come
//! from the [`Grid`] and [`Neighbourhood`] traits only: every per-cell
//! function is generic over the grid `G`, and runs unchanged on the dense
//! box ([`crate::Dims`]) and the block-sparse grid ([`crate::sparse::Sparse`]).
//!
//! **Fast path.** Fluid cells without the [`NEAR_SOLID`] bit have no solid
//! neighbour: their loads never look at a neighbour's flag, so all `Q` loads
//! are independent and in flight together. Both paths give a cell with no
//! solid neighbour the same values, so a warp may take the near-wall path
//! together when one of its cells needs it (`warp_uniform_walls`).
//!
//! **Halfway bounce-back.** When the cell a population would be pulled from
//! is solid, the population is the cell's own post-collision population of
//! the opposite direction from the previous step, plus Ladd's moving-wall
//! term `6 w_i rho_w (c_i . u_w)` with `rho_w = 1` (exactly mass-conserving
//! for walls moving tangentially). In A-B that is `src[x, opposite(i)]`; in
//! Esoteric Pull it is the slot of the *other* parity (the one written last
//! step), which no other cell touches this step.

use crate::cell::{density_velocity, dot_c, equilibrium, nothing};
use crate::collision::Collision;
use crate::flags::{flag_of, is_flow, is_fluid, is_open, is_solid, moving_wall_id, MAX_MOVING_WALLS, NEAR_SOLID};
use crate::grid::{Grid, Neighbourhood};
use crate::lattice::{opposite, Lattice};
use crate::params::{OpenBoundary, StepParams, INLET, REGULARIZED};
use crate::real::Real;
use crate::regularized::regularized_collided;
use crate::storage::{cell_noise, store_noise, Storage};
use crate::warp::any_in_warp;

/// The streaming scheme.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Streaming {
    /// Two buffers, pull: reads `src`, writes `dst`.
    TwoLattice = 0,
    /// Esoteric Pull: one buffer, in place.
    EsotericPull = 1,
}

impl Streaming {
    /// Both schemes.
    pub const ALL: [Streaming; 2] = [Streaming::EsotericPull, Streaming::TwoLattice];

    /// Name as users write it (`esoteric-pull`, `two-lattice`).
    pub const fn name(self) -> &'static str {
        match self {
            Streaming::EsotericPull => "esoteric-pull",
            Streaming::TwoLattice => "two-lattice",
        }
    }

    /// Decodes the value passed to kernels.
    #[inline(always)]
    pub const fn from_u32(v: u32) -> Self {
        if v == Streaming::EsotericPull as u32 {
            Streaming::EsotericPull
        } else {
            Streaming::TwoLattice
        }
    }
}

/// The neighbours `x + c_i` of a cell.
#[inline(always)]
pub fn neighbours<L: Lattice<Q>, const Q: usize, G: Grid>(grid: &G, cell: G::Cell) -> G::Neighbours<Q> {
    reaches::<L, Q, G>();
    grid.neighbours(cell, &L::C)
}

/// Fails to compile if `L`'s velocities reach farther than `G`'s neighbours.
#[inline(always)]
fn reaches<L: Lattice<Q>, const Q: usize, G: Grid>() {
    const { assert!(L::MAX_SPEED <= G::MAX_OFFSET, "the lattice reaches farther than the grid's neighbours") };
}

/// Index of population `i` of neighbour `j` (`j = 0`: the cell itself).
/// Where a step chooses between two directions, callers choose between
/// their `L::SLOT` entries (constants) instead: indexing the table with a
/// run-time value would make the kernel load it from memory.
#[inline(always)]
fn slot_of<L: Lattice<Q>, const Q: usize>(nb: &impl Neighbourhood<Q>, j: usize, i: usize) -> usize {
    nb.population(j, L::SLOT[i])
}

/// Collision of populations in the storage units of `S`, with the Guo
/// forcing terms only when the force is not zero (a warp-uniform branch:
/// unforced flows skip a third of the arithmetic).
#[inline(always)]
pub(crate) fn collide<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>>(
    f: &mut [S::Real; Q],
    p: &StepParams<S::Real, C>,
) {
    let collision = &p.collision;
    let scale = S::Real::from_f64(S::SCALE);
    if p.force[0] == S::Real::ZERO && p.force[1] == S::Real::ZERO && p.force[2] == S::Real::ZERO {
        collision.collide::<L, Q, false>(f, p.force, scale);
    } else {
        collision.collide::<L, Q, true>(f, p.force, scale);
    }
}

/// Populations times `factor` (from or to the storage units of a format).
#[inline(always)]
pub(crate) fn rescaled<T: Real, const Q: usize>(f: [T; Q], factor: f64) -> [T; Q] {
    let factor = T::from_f64(factor);
    f.map(|v| v * factor)
}

/// Density and velocity of an open-boundary cell from its known populations,
/// as Zou & He (1997) do. The populations with `c . n > 0` (inward normal `n`)
/// come from outside the domain; taking each as its opposite plus the
/// moving-wall term, `f_i = f_opp(i) + 6 w_i rho c_i . u`, and summing gives
/// `rho (1 - u . n) = 1 + K`, with `K` the sum of the shifted known
/// populations and of the opposites of the unknown ones (`sum_{c.n>0} 6 w_i c_i = n`).
/// An inlet knows `u` and solves for `rho`; an outlet knows `rho` and solves
/// for the normal velocity, taking the tangential velocity as zero.
#[inline(always)]
pub fn open_boundary_moments<L: Lattice<Q>, const Q: usize, T: Real>(
    f: &[T; Q],
    b: &OpenBoundary<T>,
    inlet: bool,
) -> (T, [T; 3]) {
    let mut known = f[0];
    for i in 1..Q {
        known += if dot_c(L::C[i], b.normal) > T::ZERO { f[opposite(i)] } else { f[i] };
    }
    if inlet {
        let un = b.normal[0].mul_add(b.u[0], b.normal[1].mul_add(b.u[1], b.normal[2] * b.u[2]));
        ((T::ONE + known) / (T::ONE - un), b.u)
    } else {
        // u . n = 1 - (1 + K) / rho = (rho - 1 - K) / rho, without cancelling 1s.
        let un = ((b.rho - T::ONE) - known) / b.rho;
        (b.rho, b.normal.map(|n| n * un))
    }
}

/// Ladd's moving-wall term for population `i` bounced off a wall with flag
/// `flag`; nothing (`-0`, see [`nothing`]) off a wall at rest.
#[inline(always)]
fn wall_momentum<L: Lattice<Q>, const Q: usize, T: Real>(p: &StepParams<T, impl Copy>, flag: u8, i: usize) -> T {
    match moving_wall_id(flag) {
        Some(k) => T::from_f64(6.0 * L::W[i]) * dot_c(L::C[i], wall_velocity(p, k)),
        None => nothing(),
    }
}

/// Entry `k` of the wall-velocity table, chosen with constant indices so the
/// kernel reads its parameters in place instead of copying them to local memory.
#[inline(always)]
fn wall_velocity<T: Real>(p: &StepParams<T, impl Copy>, k: usize) -> [T; 3] {
    let mut u = p.wall_velocity[0];
    for m in 1..MAX_MOVING_WALLS {
        if k == m {
            u = p.wall_velocity[m];
        }
    }
    u
}

/// How a load names the population it reads ([`source`]): an index into
/// the buffer ([`Index`]) or the address the grid forms ([`Address`]).
trait Place<const Q: usize> {
    /// What names it.
    type Out;
    /// Storage slot `slot` of neighbour `j` (0: the cell itself).
    fn at(&self, j: usize, slot: usize) -> Self::Out;
}

/// [`Neighbourhood::population`]: an index into the buffer.
struct Index<'a, N>(&'a N);

impl<const Q: usize, N: Neighbourhood<Q>> Place<Q> for Index<'_, N> {
    type Out = usize;

    #[inline(always)]
    fn at(&self, j: usize, slot: usize) -> usize {
        self.0.population(j, slot)
    }
}

/// [`Neighbourhood::population_at`] in the population buffer `.1`, which
/// must be one of the grid the neighbours were found in.
struct Address<'a, N, T>(&'a N, *const T);

impl<const Q: usize, N: Neighbourhood<Q>, T> Place<Q> for Address<'_, N, T> {
    type Out = *const T;

    #[inline(always)]
    fn at(&self, j: usize, slot: usize) -> *const T {
        // SAFETY: `.1` is a population buffer of the grid (the type's contract).
        unsafe { self.0.population_at(self.1, j, slot) }
    }
}

/// Where population `i` arriving at a cell at a step of parity `p.step & 1`
/// is stored, if the cell it streams from is solid (`solid`: halfway
/// bounce-back) or not: `place` of the neighbour `j` it is in and its
/// storage slot there. Each branch names `j` as a constant, so that a grid
/// never indexes its neighbours at run time.
#[inline(always)]
fn source<L: Lattice<Q>, const Q: usize, T: Real, P: Place<Q>>(
    scheme: Streaming,
    p: &StepParams<T, impl Copy>,
    i: usize,
    solid: bool,
    place: &P,
) -> P::Out {
    if i == 0 {
        return place.at(0, L::SLOT[0]);
    }
    match scheme {
        Streaming::TwoLattice => {
            if solid {
                place.at(0, L::SLOT[opposite(i)])
            } else {
                place.at(opposite(i), L::SLOT[i])
            }
        }
        Streaming::EsotericPull => {
            // Pair (a, b): a odd is read from the cell itself, b = a + 1 from j = x + c_a.
            let odd = p.step & 1 == 1;
            let (a, b) = if i % 2 == 1 { (i, i + 1) } else { (i - 1, i) };
            // A solid source flips the parity: read what this cell wrote last step.
            let flipped = odd != solid;
            let (sa, sb) = (L::SLOT[a], L::SLOT[b]);
            if i == a {
                place.at(0, if flipped { sb } else { sa })
            } else {
                place.at(a, if flipped { sa } else { sb })
            }
        }
    }
}

/// Where population `i` arriving at the cell with neighbours `nb` at a step
/// of parity `p.step & 1` is stored, named by `place` ([`source`]), and the
/// wall term to add to the stored value (`-0`, which adds nothing, unless
/// bounced off a moving wall). With `CHECK_WALLS = false` the cell is known
/// to have no solid neighbour and no flag is read.
///
/// # Safety
/// `flags` must hold a byte per cell of the grid and `nb` be the neighbours of a cell.
#[inline(always)]
unsafe fn incoming<L: Lattice<Q>, const Q: usize, T: Real, const CHECK_WALLS: bool, P: Place<Q>>(
    scheme: Streaming,
    p: &StepParams<T, impl Copy>,
    flags: *const u8,
    nb: &impl Neighbourhood<Q>,
    i: usize,
    place: &P,
) -> (P::Out, T) {
    let (solid, term) = if CHECK_WALLS && i != 0 {
        let source_flag = flag_of(flags, nb.cell(opposite(i)));
        let solid = is_solid(source_flag);
        (solid, if solid { wall_momentum::<L, Q, T>(p, source_flag, i) } else { nothing() })
    } else {
        (false, nothing())
    };
    (source::<L, Q, T, P>(scheme, p, i, solid, place), term)
}

/// Index in the population buffer where population `i` arriving at the
/// cell with neighbours `nb` at a step of parity `p.step & 1` is stored,
/// and the wall term to add to the stored value ([`incoming`]).
///
/// # Safety
/// As [`incoming`].
#[inline(always)]
pub unsafe fn incoming_slot<L: Lattice<Q>, const Q: usize, T: Real, const CHECK_WALLS: bool>(
    scheme: Streaming,
    p: &StepParams<T, impl Copy>,
    flags: *const u8,
    nb: &impl Neighbourhood<Q>,
    i: usize,
) -> (usize, T) {
    incoming::<L, Q, T, CHECK_WALLS, _>(scheme, p, flags, nb, i, &Index(nb))
}

/// Whether warps of cells stored as `S` take the near-wall path together
/// ([`any_in_warp`]) and load it in two passes ([`load_near_walls`]).
/// Measured on an H200 (`docs/bench/h200-2026-11-21-e8ab091-near-wall.txt`): +12-15%
/// for 16-bit storage in a closed cavity, where every x-wall puts one wall
/// cell into a warp of 31 fluid ones, but -2 to -6% for f32, whose kernels
/// are closer to the memory limit than to the issue limit.
#[inline(always)]
const fn warp_uniform_walls<S: Storage>() -> bool {
    S::BYTES == 2
}

/// Loads the populations arriving at the cell with neighbours `nb` (streaming
/// and boundaries done), in the storage units of `S` ([`Storage::SCALE`]).
///
/// # Safety
/// `f` must hold `Q * cells` values and `flags` `cells` bytes.
#[inline(always)]
pub unsafe fn load<L: Lattice<Q>, const Q: usize, S: Storage, const CHECK_WALLS: bool, N: Neighbourhood<Q>>(
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    f: *const S,
    flags: *const u8,
    nb: &N,
) -> [S::Real; Q] {
    if CHECK_WALLS && warp_uniform_walls::<S>() {
        return load_near_walls::<L, Q, S, N>(scheme, p, f, flags, nb);
    }
    let mut fi = [S::Real::ZERO; Q];
    // Only Esoteric Pull asks for neighbours found late (two-lattice finds
    // every one up front): two-lattice's loop stays as the compiler writes
    // it. (A condition the compiler folds later, such as asking the
    // neighbourhood, changes the code of every sparse kernel.)
    if CHECK_WALLS && N::FOUND_WHEN_ASKED && matches!(scheme, Streaming::EsotericPull) {
        unrolled!(I < Q => {
            fi[I] = load_one::<L, Q, S, CHECK_WALLS, N>(scheme, p, f, flags, nb, I);
        });
    } else {
        for i in 0..Q {
            fi[i] = load_one::<L, Q, S, CHECK_WALLS, N>(scheme, p, f, flags, nb, i);
        }
    }
    fi
}

/// Population `i` of [`load`].
///
/// # Safety
/// As [`load`].
#[inline(always)]
unsafe fn load_one<L: Lattice<Q>, const Q: usize, S: Storage, const CHECK_WALLS: bool, N: Neighbourhood<Q>>(
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    f: *const S,
    flags: *const u8,
    nb: &N,
    i: usize,
) -> S::Real {
    let (at, term) = if addresses_from_grid::<Q, S, N>() {
        incoming::<L, Q, S::Real, CHECK_WALLS, _>(scheme, p, flags, nb, i, &Address(nb, f))
    } else {
        let (slot, term) = incoming_slot::<L, Q, S::Real, CHECK_WALLS>(scheme, p, flags, nb, i);
        (f.add(slot), term)
    };
    S::fetch(at).load_scaled() + term * S::Real::from_f64(S::SCALE)
}

/// [`load`] near walls in two passes: the populations, then the moving-wall
/// terms, only if a neighbour is a moving wall. Choosing a wall's velocity
/// from the parameters costs as much as the rest of the load, and most cells
/// next to a wall (all those by a still one) need none. Where there is no
/// term nothing is added, so the values are the one-pass load's, which adds
/// [`nothing`] there.
///
/// # Safety
/// As [`load`].
#[inline(always)]
unsafe fn load_near_walls<L: Lattice<Q>, const Q: usize, S: Storage, N: Neighbourhood<Q>>(
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    f: *const S,
    flags: *const u8,
    nb: &N,
) -> [S::Real; Q] {
    let mut source_flags = [0u8; Q];
    let mut moving = false;
    for i in 1..Q {
        source_flags[i] = flag_of(flags, nb.cell(opposite(i)));
        moving |= moving_wall_id(source_flags[i]).is_some();
    }
    let mut fi = [S::Real::ZERO; Q];
    for i in 0..Q {
        let solid = i != 0 && is_solid(source_flags[i]);
        let at = if addresses_from_grid::<Q, S, N>() {
            source::<L, Q, S::Real, _>(scheme, p, i, solid, &Address(nb, f))
        } else {
            f.add(source::<L, Q, S::Real, _>(scheme, p, i, solid, &Index(nb)))
        };
        fi[i] = S::fetch(at).load_scaled();
    }
    if moving {
        let scale = S::Real::from_f64(S::SCALE);
        for i in 1..Q {
            fi[i] += wall_momentum::<L, Q, S::Real>(p, source_flags[i], i) * scale;
        }
    }
    fi
}

/// Whether the cell with flag `flag` and the warp it runs in (see
/// [`warp_uniform_walls`]) take the near-wall path.
#[inline(always)]
fn near_walls<S: Storage>(flag: u8) -> bool {
    let near = flag & NEAR_SOLID != 0;
    if warp_uniform_walls::<S>() {
        any_in_warp(near)
    } else {
        near
    }
}

/// Whether an Esoteric Pull step of cells stored as `S` with neighbours
/// `N` takes a path per step parity ([`stream_collide_esoteric`]), in which
/// every slot is a constant.
#[inline(always)]
const fn parity_paths<const Q: usize, S: Storage, N: Neighbourhood<Q>>() -> bool {
    S::BYTES == 2 && N::FOUND_WHEN_ASKED
}

/// Whether loads take their addresses from [`Neighbourhood::population_at`]:
/// where the grid forms them itself and the slots are constants, which
/// then become the loads' immediate offsets. On 16-bit rows +1.3% (D3Q19
/// BGK) and +1.0% (D3Q27) in the periodic box on an H200
/// (`docs/bench/h200-2026-11-30-sparse-rows-load-addresses-as-built.txt`),
/// +4.2% and +1.4% in the packed bed; f32, with one path for both
/// parities, lost up to 3.2% with it
/// (`docs/bench/h200-2026-11-30-sparse-load-addresses.txt`).
#[inline(always)]
const fn addresses_from_grid<const Q: usize, S: Storage, N: Neighbourhood<Q>>() -> bool {
    N::FORMS_ADDRESSES && parity_paths::<Q, S, N>()
}

/// Esoteric Pull step of fluid cell `n`, in place.
///
/// # Safety
/// `f` must hold `Q * cells` values and `flags` `cells` bytes; no other thread
/// may run this for the same `n` in the same step (distinct cells never touch
/// the same slot).
#[inline(always)]
pub unsafe fn stream_collide_esoteric<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>, G: Grid>(
    grid: &G,
    p: &StepParams<S::Real, C>,
    f: *mut S,
    flags: *const u8,
    cell: G::Cell,
) {
    // Esoteric Pull streams from the cell and its odd neighbours; the
    // others are asked for near walls only, for their flags. The neighbours
    // come before the flag (see `stream_collide_two_lattice`).
    reaches::<L, Q, G>();
    let nb = grid.odd_neighbours(cell, &L::C);
    let flag = flag_of(flags, grid.index_of(cell));
    if !is_fluid(flag) {
        return;
    }
    // In 16-bit storage a grid whose neighbours are found when asked (the
    // sparse grid) gets a path per parity: in each the compiler knows
    // `p.step & 1`, so the slots are constants and a neighbour's load and
    // store take immediate offsets from one address. On 16-bit sparse grids
    // +2% (D3Q19 BGK) to +12% (D3Q27 MRT and cumulant) on an H200; f32
    // sparse kernels lose 3-7% with it, and the dense box's kernels gain
    // 0-2% and lose up to 9% (D3Q27 16-bit cumulant), so they keep one path
    // (`docs/bench/h200-2026-11-30-sparse-parity-paths.txt`,
    // `docs/bench/h200-2026-11-30-sparse-ep-numbers.txt`).
    #[allow(clippy::if_same_then_else)] // the same call, compiled once per parity
    if parity_paths::<Q, S, G::OddNeighbours<Q>>() && p.step & 1 != 0 {
        update_fluid::<L, Q, S, C>(Streaming::EsotericPull, p, f, f, flags, flag, &nb);
    } else {
        update_fluid::<L, Q, S, C>(Streaming::EsotericPull, p, f, f, flags, flag, &nb);
    }
}

/// Two-lattice pull step of fluid cell `n`: reads `src`, writes `dst`.
///
/// # Safety
/// `src` and `dst` must each hold `Q * cells` values and must not overlap.
#[inline(always)]
pub unsafe fn stream_collide_two_lattice<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>, G: Grid>(
    grid: &G,
    p: &StepParams<S::Real, C>,
    src: *const S,
    dst: *mut S,
    flags: *const u8,
    cell: G::Cell,
) {
    // The neighbours come before the flag: the sparse grid's are table
    // loads, which then travel with the flag's instead of after it (16-bit
    // two-lattice 9-11% faster on 32x4 rows, Esoteric Pull 3%,
    // `docs/bench/h200-2026-11-30-sparse-tables-before-flags.txt`); the
    // dense box's are arithmetic.
    let nb = neighbours::<L, Q, G>(grid, cell);
    let flag = flag_of(flags, grid.index_of(cell));
    if !is_fluid(flag) {
        return;
    }
    update_fluid::<L, Q, S, C>(Streaming::TwoLattice, p, src, dst, flags, flag, &nb);
}

/// Step of any cell the kernels update, in the kernel that does both: a
/// fluid cell as the bulk kernels do, an open-boundary cell as its group's
/// kernel does, imposing `open(n)` (what the group of the cell stored at
/// `n` imposes). Curved-wall cells are left to their own group
/// ([`crate::curved`]). This is the *naive* and the boundary-block kernel of the
/// boundary-group variants (see `crate::groups`): its registers are the
/// open boundary's, which the bulk kernels never pay. The values are those
/// of the separate kernels bit for bit: the same functions, the same order
/// of operations.
///
/// # Safety
/// As [`stream_collide_esoteric`] (`src == dst`) or
/// [`stream_collide_two_lattice`] (`src` and `dst` distinct), per `scheme`;
/// `open` must be safe to call for an open cell's storage number.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one per kernel argument, plus the grid
pub unsafe fn stream_collide_any<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, C>,
    src: *const S,
    dst: *mut S,
    flags: *const u8,
    cell: G::Cell,
    open: impl FnOnce(u32) -> OpenBoundary<S::Real>,
) {
    // Neighbours before the flag, as in `stream_collide_two_lattice`.
    let nb = neighbours::<L, Q, G>(grid, cell);
    let n = grid.index_of(cell);
    let flag = flag_of(flags, n);
    if is_solid(flag) {
        return;
    }
    if is_fluid(flag) {
        update_fluid::<L, Q, S, C>(scheme, p, src, dst, flags, flag, &nb);
    } else if is_open(flag) {
        update_open::<L, Q, S>(scheme, p, &open(n), src, dst, flags, &nb);
    }
}

/// Streams and collides the fluid cell with flag `flag` and neighbours `nb`.
///
/// # Safety
/// As [`stream_collide_any`].
#[inline(always)]
unsafe fn update_fluid<L: Lattice<Q>, const Q: usize, S: Storage, C: Collision<S::Real>>(
    scheme: Streaming,
    p: &StepParams<S::Real, C>,
    src: *const S,
    dst: *mut S,
    flags: *const u8,
    flag: u8,
    nb: &impl Neighbourhood<Q>,
) {
    let mut fi = load_fluid::<L, Q, S>(scheme, p, src, flags, flag, nb);
    collide::<L, Q, S, C>(&mut fi, p);
    store::<L, Q, S>(scheme, p, dst, nb, &fi);
}

/// [`load`] for the fluid cell with flag `flag`: looking at its neighbours'
/// flags only near walls.
///
/// # Safety
/// As [`load`].
#[inline(always)]
pub(crate) unsafe fn load_fluid<L: Lattice<Q>, const Q: usize, S: Storage>(
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    src: *const S,
    flags: *const u8,
    flag: u8,
    nb: &impl Neighbourhood<Q>,
) -> [S::Real; Q] {
    if near_walls::<S>(flag) {
        load::<L, Q, S, true, _>(scheme, p, src, flags, nb)
    } else {
        load::<L, Q, S, false, _>(scheme, p, src, flags, nb)
    }
}

/// Stores the post-collision populations `fi` (in the storage units of `S`)
/// of the cell with neighbours `nb` where the next step reads them: in place for Esoteric Pull (`dst` is
/// the one buffer), at the cell's own slots of `dst` for two-lattice pull.
///
/// # Safety
/// `dst` must hold `Q * cells` values; `nb` must be the neighbours of a cell.
#[inline(always)]
pub(crate) unsafe fn store<L: Lattice<Q>, const Q: usize, S: Storage>(
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    dst: *mut S,
    nb: &impl Neighbourhood<Q>,
    fi: &[S::Real; Q],
) {
    // Random bits for stochastic rounding, one draw per store in a fixed
    // order (none are computed for formats that round to nearest). A cell
    // that blew up gets zero noise: its populations are all NaN (its density
    // is), and noise would turn the GPU's NaN into a zero, hiding the
    // blow-up from the divergence check.
    let noise = if S::STOCHASTIC && !fi[0].is_nan() { cell_noise(nb.seed_cell(p.z_offset), p.step) } else { 0 };
    let mut k = 0;
    let mut put = |at: usize, v: S::Real| {
        *dst.add(at) = S::store_scaled_dithered(v, store_noise(noise, k));
        k += 1;
    };
    // The slots of `stored_slot`, written out pair by pair: the same
    // addresses, in the order the rounding noise is drawn.
    match scheme {
        Streaming::EsotericPull => {
            let odd = p.step & 1 == 1;
            put(slot_of::<L, Q>(nb, 0, 0), fi[0]);
            let mut a = 1;
            while a < Q {
                let b = a + 1;
                let (sa, sb) = (L::SLOT[a], L::SLOT[b]);
                let (to_neighbour, to_self) = if odd { (sa, sb) } else { (sb, sa) };
                put(nb.population(a, to_neighbour), fi[a]);
                put(nb.population(0, to_self), fi[b]);
                a += 2;
            }
        }
        Streaming::TwoLattice => {
            for i in 0..Q {
                put(slot_of::<L, Q>(nb, 0, i), fi[i]);
            }
        }
    }
}

/// Where the store half of every update puts post-collision population `i` of the cell with
/// neighbours `nb` at a step of parity `odd`: the cell's own slot `i` of
/// the output buffer in two-lattice pull; for Esoteric Pull, per the table
/// in the module docs (the pair's first direction goes to the neighbour
/// `x + c_a`, the second stays in the cell).
#[inline(always)]
pub fn stored_slot<L: Lattice<Q>, const Q: usize>(
    scheme: Streaming,
    odd: bool,
    nb: &impl Neighbourhood<Q>,
    i: usize,
) -> usize {
    match scheme {
        Streaming::EsotericPull if i != 0 => {
            let a = if i % 2 == 1 { i } else { i - 1 };
            let (sa, sb) = (L::SLOT[a], L::SLOT[a + 1]);
            let (to_neighbour, to_self) = if odd { (sa, sb) } else { (sb, sa) };
            if i == a {
                nb.population(a, to_neighbour)
            } else {
                nb.population(0, to_self)
            }
        }
        _ => slot_of::<L, Q>(nb, 0, i),
    }
}

/// Step of an open-boundary cell of the group `open`: streams like a fluid
/// cell, then takes the equilibrium of the moments [`open_boundary_moments`]
/// gives instead of colliding, or for a [`REGULARIZED`] group collides their
/// regularized state ([`regularized_collided`]). Open cells are few, so they
/// run in their own kernel over their group's list of cells, which keeps this
/// code out of the bulk kernels. Any order against the bulk update is fine:
/// in both schemes a cell reads and writes only slots no other cell touches in the same step.
///
/// # Safety
/// As [`stream_collide_esoteric`] (`src == dst`) or
/// [`stream_collide_two_lattice`] (`src` and `dst` distinct), per `scheme`.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // one per kernel argument, plus the grid
pub unsafe fn open_boundary_update<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    open: &OpenBoundary<S::Real>,
    src: *const S,
    dst: *mut S,
    flags: *const u8,
    cell: G::Cell,
) {
    let nb = neighbours::<L, Q, G>(grid, cell);
    update_open::<L, Q, S>(scheme, p, open, src, dst, flags, &nb);
}

/// `open` imposing entry `k` of a profile: the velocity at
/// `velocities[3 k..3 k + 3]`, or `open` itself where `velocities` is null.
///
/// # Safety
/// A non-null `velocities` must hold at least `3 (k + 1)` values.
#[inline(always)]
pub unsafe fn with_profile<T: Real>(open: OpenBoundary<T>, velocities: *const T, k: usize) -> OpenBoundary<T> {
    if velocities.is_null() {
        return open;
    }
    let u = core::array::from_fn(|a| T::load(velocities.add(3 * k + a)));
    OpenBoundary { u, ..open }
}

/// The open-boundary update of the cell with neighbours `nb`, imposing `open`.
///
/// # Safety
/// As [`open_boundary_update`].
#[inline(always)]
unsafe fn update_open<L: Lattice<Q>, const Q: usize, S: Storage>(
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    open: &OpenBoundary<S::Real>,
    src: *const S,
    dst: *mut S,
    flags: *const u8,
    nb: &impl Neighbourhood<Q>,
) {
    let open = &open.at_step(p.step);
    let fi = rescaled(load::<L, Q, S, true, _>(scheme, p, src, flags, nb), 1.0 / S::SCALE);
    let (rho, u) = open_boundary_moments::<L, Q, S::Real>(&fi, open, open.kind == INLET);
    let post = if open.scheme == REGULARIZED {
        regularized_collided::<L, Q, S::Real>(&fi, rho, u, open.normal, &open.rates, p.force)
    } else {
        equilibrium::<L, Q, S::Real>(rho, u)
    };
    store::<L, Q, S>(scheme, p, dst, nb, &rescaled(post, S::SCALE));
}

/// Number of values per cell in a fields buffer: `rho, ux, uy, uz`, each a
/// structure-of-arrays plane of `cells` values.
pub const FIELD_COMPONENTS: usize = 4;

/// Writes the equilibrium populations for density `rho` and velocity `u` of
/// fluid cell `n` into the slots the next step reads them from, so that a
/// step of parity `p.step & 1` sees exactly `feq(rho, u)` arriving at `n`.
/// `fields` holds `rho, ux, uy, uz` planes (see [`FIELD_COMPONENTS`]).
///
/// # Safety
/// As [`load`]; `fields` must hold `4 * cells` values; the buffer should be
/// zeroed first so that slots no cell writes are deterministic.
#[inline(always)]
pub unsafe fn init_equilibrium<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    f: *mut S,
    flags: *const u8,
    fields: *const S::Real,
    cell: G::Cell,
) {
    let n = grid.index_of(cell);
    if !is_flow(flag_of(flags, n)) {
        return;
    }
    let cells = grid.cells();
    let m = n as usize;
    let rho = *fields.add(m);
    let u = [*fields.add(cells + m), *fields.add(2 * cells + m), *fields.add(3 * cells + m)];
    let feq = equilibrium::<L, Q, S::Real>(rho, u);
    let nb = neighbours::<L, Q, G>(grid, cell);
    for i in 0..Q {
        let (slot, term) = incoming_slot::<L, Q, S::Real, true>(scheme, p, flags, &nb, i);
        *f.add(slot) = S::store(feq[i] - term);
    }
}

/// Density and velocity of cell `n` at the current time step, written to the
/// `rho, ux, uy, uz` planes of `out`. Solid cells report density 1 and their
/// wall velocity.
///
/// # Safety
/// As [`load`]; `out` must hold `4 * cells` values.
#[inline(always)]
pub unsafe fn fields<L: Lattice<Q>, const Q: usize, S: Storage, G: Grid>(
    grid: &G,
    scheme: Streaming,
    p: &StepParams<S::Real, impl Copy>,
    f: *const S,
    flags: *const u8,
    out: *mut S::Real,
    cell: G::Cell,
) {
    let n = grid.index_of(cell);
    let flag = flag_of(flags, n);
    let (rho, u) = if is_flow(flag) {
        let nb = neighbours::<L, Q, G>(grid, cell);
        let loaded = load::<L, Q, S, true, _>(scheme, p, f, flags, &nb);
        let (rho, u) = density_velocity::<L, Q, S::Real>(&rescaled(loaded, 1.0 / S::SCALE), p.force);
        (unless_saturated::<S, Q>(rho, &loaded), u)
    } else {
        let u = match moving_wall_id(flag) {
            Some(k) => wall_velocity(p, k),
            None => [S::Real::ZERO; 3],
        };
        (S::Real::ONE, u)
    };
    write_fields(out, grid.cells(), n, rho, u);
}

/// `rho`, or NaN where a population of `loaded` (in storage units) is
/// saturated ([`Storage::saturated`]): the cell has blown up, and the
/// divergence check, which looks for a density that is not finite, must see it.
#[inline(always)]
#[allow(clippy::eq_op)] // 0 / 0 is the NaN
pub(crate) fn unless_saturated<S: Storage, const Q: usize>(rho: S::Real, loaded: &[S::Real; Q]) -> S::Real {
    if loaded.iter().any(|&v| S::saturated(v)) {
        S::Real::ZERO / S::Real::ZERO
    } else {
        rho
    }
}

/// Writes density `rho` and velocity `u` of cell `n` into the `rho, ux, uy,
/// uz` planes of `out`, each `cells` values (see [`FIELD_COMPONENTS`]).
///
/// # Safety
/// `out` must hold `4 * cells` values and `n < cells`.
#[inline(always)]
pub(crate) unsafe fn write_fields<T: Real>(out: *mut T, cells: usize, n: u32, rho: T, u: [T; 3]) {
    let m = n as usize;
    *out.add(m) = rho;
    for a in 0..3 {
        *out.add((a + 1) * cells + m) = u[a];
    }
}

/// The value the layout-check kernel writes for population `i` of cell `(x, y, z)`.
#[inline(always)]
pub const fn layout_probe_value(x: u32, y: u32, z: u32, i: usize) -> u64 {
    x as u64 | (y as u64) << 20 | (z as u64) << 40 | (i as u64) << 60
}

/// Layout check: writes [`layout_probe_value`] of `cell`'s position for
/// every storage slot of `cell` at the index the grid gives.
///
/// # Safety
/// `out` must hold `q * cells` values.
#[inline(always)]
pub unsafe fn write_layout_probe<G: Grid>(grid: &G, q: usize, out: *mut u64, cell: G::Cell) {
    let [x, y, z] = grid.position(cell);
    for slot in 0..q {
        *out.add(grid.population(q, cell, slot)) = layout_probe_value(x, y, z, slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::F16s;

    /// A saturated 16-bit population turns the density NaN; other values,
    /// and other formats, leave it as it is.
    #[test]
    fn a_saturated_population_reports_a_blown_up_cell() {
        let mut loaded = [0.5f32; 19];
        assert_eq!(unless_saturated::<F16s, 19>(1.02, &loaded), 1.02);
        loaded[7] = -65504.0;
        assert!(unless_saturated::<F16s, 19>(1.02, &loaded).is_nan());
        assert_eq!(unless_saturated::<f32, 19>(1.02, &loaded), 1.02);
    }
}
