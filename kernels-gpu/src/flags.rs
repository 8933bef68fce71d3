//! Cell flags: one byte per cell says what the cell is.

use crate::fetch::fetch;

/// Most moving-wall velocities one domain can carry (they live in the kernel
/// parameters, so the per-cell state stays one byte).
pub const MAX_MOVING_WALLS: usize = 4;

/// Most open-boundary states (inlets and outlets) one domain can carry; like
/// wall velocities they live in kernel parameters.
pub const MAX_OPEN_BOUNDARIES: usize = 4;

// The flag byte, bit by bit:
//
// | bits | meaning |
// | ---- | ------- |
// | 0-2  | wall: 0 none, 1 resting, 2 + k moving wall k |
// | 3    | open boundary |
// | 4-5  | open-boundary state k |
// | 6    | open boundary is an outlet (else an inlet) |
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

/// Bit of open-boundary cells (inlets and outlets).
pub const OPEN: u8 = 0x08;
/// Shift of the open-boundary state index.
const OPEN_STATE_SHIFT: u32 = 4;
/// Bit of outlets among open-boundary cells.
const OUTLET: u8 = 0x40;
const _: () = assert!(MOVING_WALL as usize + MAX_MOVING_WALLS <= WALL_MASK as usize + 1);
const _: () = assert!(MAX_OPEN_BOUNDARIES << OPEN_STATE_SHIFT <= OUTLET as usize);

/// Flag byte of velocity inlet `k`.
pub const fn velocity_inlet(k: u8) -> u8 {
    OPEN | k << OPEN_STATE_SHIFT
}

/// Flag byte of pressure outlet `k`.
pub const fn pressure_outlet(k: u8) -> u8 {
    OPEN | OUTLET | k << OPEN_STATE_SHIFT
}

/// Bit set on fluid and open-boundary cells with a solid cell within the
/// lattice's reach ([`crate::grid::near_wall_radius`] along each axis, a
/// cube that contains every `x - c_i`). Fluid cells without it take the kernels' fast path, which never
/// reads a neighbour's flag: the boundary / non-boundary split of the
/// disaggregated design. Set by the host when it uploads the flags, never by
/// users.
pub const NEAR_SOLID: u8 = 0x80;

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
    /// Equilibrium velocity inlet imposing the velocity of open-boundary state `k`.
    VelocityInlet(u8),
    /// Equilibrium pressure outlet imposing the density of open-boundary state `k`.
    PressureOutlet(u8),
}

impl CellKind {
    /// The flag byte for this kind.
    pub const fn to_flag(self) -> u8 {
        match self {
            CellKind::Fluid => FLUID,
            CellKind::Wall => WALL,
            CellKind::MovingWall(k) => MOVING_WALL + k,
            CellKind::VelocityInlet(k) => velocity_inlet(k),
            CellKind::PressureOutlet(k) => pressure_outlet(k),
        }
    }

    /// Decodes a flag byte (ignoring [`NEAR_SOLID`]); `None` for bytes no kind uses.
    pub const fn from_flag(flag: u8) -> Option<Self> {
        let kind = flag & KIND_MASK;
        if let Some((k, inlet)) = open_boundary(kind) {
            let k = k as u8;
            return if kind != if inlet { velocity_inlet(k) } else { pressure_outlet(k) } {
                None
            } else if inlet {
                Some(CellKind::VelocityInlet(k))
            } else {
                Some(CellKind::PressureOutlet(k))
            };
        }
        match kind {
            FLUID => Some(CellKind::Fluid),
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

/// An open boundary's state index and whether it imposes the velocity
/// (inlet) rather than the density (outlet); `None` for other cells.
#[inline(always)]
pub const fn open_boundary(flag: u8) -> Option<(usize, bool)> {
    if flag & OPEN != 0 {
        Some((((flag & KIND_MASK) >> OPEN_STATE_SHIFT & 3) as usize, flag & OUTLET == 0))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip() {
        let kinds = [
            CellKind::Fluid,
            CellKind::Wall,
            CellKind::MovingWall(0),
            CellKind::MovingWall(3),
            CellKind::VelocityInlet(0),
            CellKind::VelocityInlet(3),
            CellKind::PressureOutlet(0),
            CellKind::PressureOutlet(3),
        ];
        for kind in kinds {
            let flag = kind.to_flag();
            assert_eq!(CellKind::from_flag(flag), Some(kind));
            assert_eq!(CellKind::from_flag(flag | NEAR_SOLID), Some(kind));
            let wall = matches!(kind, CellKind::Wall | CellKind::MovingWall(_));
            assert_eq!(is_solid(flag), wall, "{kind:?}");
            assert_eq!(is_flow(flag | NEAR_SOLID), !wall, "{kind:?}");
            assert_eq!(moving_wall_id(flag).is_some(), matches!(kind, CellKind::MovingWall(_)), "{kind:?}");
            let open = open_boundary(flag);
            match kind {
                CellKind::VelocityInlet(k) => assert_eq!(open, Some((k as usize, true))),
                CellKind::PressureOutlet(k) => assert_eq!(open, Some((k as usize, false))),
                _ => assert_eq!(open, None),
            }
        }
        assert_eq!(CellKind::from_flag(OPEN | 1), None);
        assert_eq!(CellKind::from_flag(MOVING_WALL + MAX_MOVING_WALLS as u8), None);
    }
}
