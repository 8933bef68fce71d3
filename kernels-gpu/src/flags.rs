//! Cell flags: one byte per cell says what the cell is.

use crate::fetch::fetch;

/// Most moving-wall velocities one domain can carry (they live in the kernel
/// parameters, so the per-cell state stays one byte).
pub const MAX_MOVING_WALLS: usize = 4;

// The flag byte, bit by bit:
//
// | bits | meaning |
// | ---- | ------- |
// | 0-2  | wall: 0 none, 1 resting, 2 + k moving wall k |
// | 3    | open boundary: updated by its boundary group, not the bulk |
// | 4-5  | refinement: a cell at a resolution jump (see `crate::levels`) |
// | 6    | curved wall: a fluid cell updated by its curved-wall group |
// | 7    | near solid (set by the host for the kernels' general path) |
//
// The walls sit in the low bits so that the kernels' hot tests (solid? moving
// wall?) mask the same three bits, which the compiler folds into one test.

/// Flag byte of a fluid cell (collides and streams).
pub const FLUID: u8 = 0;
/// Flag byte of a resting wall (halfway bounce-back on its links).
pub const WALL: u8 = 1;
/// Flag byte of the first moving wall; moving wall `k` is `MOVING_WALL + k`.
pub const MOVING_WALL: u8 = 2;
/// Bits that say which wall a cell is (zero for every other cell).
pub const WALL_MASK: u8 = 0x07;

/// Bit of open-boundary cells (inlets and outlets): the bulk kernels skip
/// them, and their boundary group updates them. Which inlet or outlet a
/// cell belongs to, and what it imposes, is the group's: its list of cells
/// and its [`crate::params::OpenBoundary`], never this byte.
pub const OPEN: u8 = 0x08;
const _: () = assert!(MOVING_WALL as usize + MAX_MOVING_WALLS <= WALL_MASK as usize + 1);

// Cells at a resolution jump (`crate::levels`). None is plain fluid, so the
// bulk kernels skip them all; the first three are not solid either, so fluid
// cells stream from them.

/// A cell of a finer level over a cell of the coarser one (its *parent*),
/// next to the finer level's own cells: it streams but does not collide,
/// carrying the coarse populations across the jump at the finer resolution.
pub const GHOST: u8 = 0x10;
/// A ghost cell too far from the finer level's own cells to be updated: it
/// holds its parent's populations for the ghost cells next to it.
pub const FROZEN: u8 = 0x20;
/// A coarse cell next to the cells a finer level covers: instead of
/// streaming, it takes the average of the ghost cells over it, then collides.
pub const COALESCED: u8 = 0x30;
/// A cell a finer level covers: solid to its own level, never updated.
pub const REFINED: u8 = WALL | 0x10;
/// Bits that say a cell sits at a resolution jump.
pub const LEVEL_MASK: u8 = 0x30;

/// Bit set on fluid and open-boundary cells with a solid cell within the
/// lattice's reach ([`crate::grid::near_wall_radius`] along each axis, a
/// cube that contains every `x - c_i`). Fluid cells without it take the kernels' fast path, which never
/// reads a neighbour's flag: the boundary / non-boundary split of the
/// disaggregated design. Set by the host when it uploads the flags, never by
/// users.
pub const NEAR_SOLID: u8 = 0x80;

/// Bit set on fluid cells with a link across a curved wall
/// ([`crate::curved`]): the bulk kernels skip them, and the curved-wall
/// group updates them. Set by the host from the geometry, never by users.
pub const CURVED: u8 = 0x40;

/// Mask of the bits that say what a cell is.
pub const KIND_MASK: u8 = 0x7f;

/// What a cell is, decoded from its flag byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellKind {
    /// Fluid.
    Fluid,
    /// Resting wall.
    Wall,
    /// Moving wall whose velocity is entry `k` of the wall-velocity table.
    MovingWall(u8),
    /// Inlet or outlet: updated by the boundary group that lists it.
    Open,
}

impl CellKind {
    /// The flag byte for this kind.
    pub const fn to_flag(self) -> u8 {
        match self {
            CellKind::Fluid => FLUID,
            CellKind::Wall => WALL,
            CellKind::MovingWall(k) => MOVING_WALL + k,
            CellKind::Open => OPEN,
        }
    }

    /// Decodes a flag byte (ignoring [`NEAR_SOLID`]); `None` for bytes no kind uses.
    pub const fn from_flag(flag: u8) -> Option<Self> {
        match flag & KIND_MASK {
            FLUID => Some(CellKind::Fluid),
            OPEN => Some(CellKind::Open),
            WALL => Some(CellKind::Wall),
            f if f >= MOVING_WALL && ((f - MOVING_WALL) as usize) < MAX_MOVING_WALLS => {
                Some(CellKind::MovingWall(f - MOVING_WALL))
            }
            _ => None,
        }
    }
}

/// The flag byte of cell `n`, read with the L2 prefetch hint of the
/// `fetch` module.
///
/// # Safety
/// `flags` must hold more than `n` bytes.
#[inline(always)]
pub unsafe fn flag_of(flags: *const u8, n: u32) -> u8 {
    fetch!(flags.add(n as usize), u8, "b8", reg16)
}

/// Whether a flag byte is a solid boundary (any wall).
#[inline(always)]
pub const fn is_solid(flag: u8) -> bool {
    flag & WALL_MASK != 0
}

/// Whether a flag byte is an interior fluid cell (near a solid or not), one
/// that collides.
#[inline(always)]
pub const fn is_fluid(flag: u8) -> bool {
    flag & KIND_MASK == FLUID
}

/// Whether the stream-collide kernels update this cell: fluid and open
/// boundaries, everything but walls.
#[inline(always)]
pub const fn is_flow(flag: u8) -> bool {
    !is_solid(flag)
}

/// Index into the wall-velocity table of a moving wall's flag byte.
#[inline(always)]
pub const fn moving_wall_id(flag: u8) -> Option<usize> {
    let wall = flag & WALL_MASK;
    if wall >= MOVING_WALL {
        Some((wall - MOVING_WALL) as usize)
    } else {
        None
    }
}

/// Whether a flag byte is an open boundary (inlet or outlet).
#[inline(always)]
pub const fn is_open(flag: u8) -> bool {
    flag & OPEN != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip() {
        let kinds = [CellKind::Fluid, CellKind::Wall, CellKind::MovingWall(0), CellKind::MovingWall(3), CellKind::Open];
        for kind in kinds {
            let flag = kind.to_flag();
            assert_eq!(CellKind::from_flag(flag), Some(kind));
            assert_eq!(CellKind::from_flag(flag | NEAR_SOLID), Some(kind));
            let wall = matches!(kind, CellKind::Wall | CellKind::MovingWall(_));
            assert_eq!(is_solid(flag), wall, "{kind:?}");
            assert_eq!(is_flow(flag | NEAR_SOLID), !wall, "{kind:?}");
            assert_eq!(moving_wall_id(flag).is_some(), matches!(kind, CellKind::MovingWall(_)), "{kind:?}");
            assert_eq!(is_open(flag), kind == CellKind::Open, "{kind:?}");
            assert_eq!(is_fluid(flag), kind == CellKind::Fluid, "{kind:?}: only plain fluid takes the bulk update");
        }
        assert_eq!(CellKind::from_flag(OPEN | 1), None);
        assert_eq!(CellKind::from_flag(OPEN | CURVED), None, "curved cells are fluid, never open");
        assert!(!is_fluid(CURVED) && is_flow(CURVED) && !is_open(CURVED), "curved cells take their group's update");
        for flag in [GHOST, FROZEN, COALESCED, REFINED] {
            assert_eq!(CellKind::from_flag(flag), None, "{flag:#x}: no kind of a uniform grid");
            assert!(!is_fluid(flag), "{flag:#x}: the bulk kernels skip cells at a resolution jump");
            assert_eq!(is_solid(flag), flag == REFINED, "{flag:#x}: only covered cells are solid");
            assert_ne!(flag & LEVEL_MASK, 0);
        }
        assert_eq!(CellKind::from_flag(MOVING_WALL + MAX_MOVING_WALLS as u8), None);
    }
}
