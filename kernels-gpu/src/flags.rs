//! Cell flags: one byte per cell says what the cell is.

/// Most moving-wall velocities one domain can carry (they live in the kernel
/// parameters, so the per-cell state stays one byte).
pub const MAX_MOVING_WALLS: usize = 4;

/// Flag byte of a fluid cell (collides and streams).
pub const FLUID: u8 = 0;
/// Flag byte of a resting wall (halfway bounce-back on its links).
pub const WALL: u8 = 1;
/// Flag byte of the first moving wall; moving wall `k` is `MOVING_WALL + k`.
pub const MOVING_WALL: u8 = 2;

/// Bit set on fluid cells with at least one solid neighbour (in the D3Q27
/// neighbourhood, which contains every velocity set's). Cells without it take
/// the kernels' fast path, which never reads a neighbour's flag: the
/// boundary / non-boundary split of the disaggregated design. Set by the host
/// when it uploads the flags, never by users.
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
}

impl CellKind {
    /// The flag byte for this kind.
    pub const fn to_flag(self) -> u8 {
        match self {
            CellKind::Fluid => FLUID,
            CellKind::Wall => WALL,
            CellKind::MovingWall(k) => MOVING_WALL + k,
        }
    }

    /// Decodes a flag byte (ignoring [`NEAR_SOLID`]); `None` for bytes no kind uses.
    pub const fn from_flag(flag: u8) -> Option<Self> {
        match flag & KIND_MASK {
            FLUID => Some(CellKind::Fluid),
            WALL => Some(CellKind::Wall),
            f if f >= MOVING_WALL && ((f - MOVING_WALL) as usize) < MAX_MOVING_WALLS => {
                Some(CellKind::MovingWall(f - MOVING_WALL))
            }
            _ => None,
        }
    }
}

/// Whether a flag byte is a solid boundary (any wall).
#[inline(always)]
pub const fn is_solid(flag: u8) -> bool {
    flag & KIND_MASK != FLUID
}

/// Whether a flag byte is a fluid cell (near a solid or not).
#[inline(always)]
pub const fn is_fluid(flag: u8) -> bool {
    flag & KIND_MASK == FLUID
}

/// Index into the wall-velocity table of a moving wall's flag byte.
#[inline(always)]
pub const fn moving_wall_id(flag: u8) -> Option<usize> {
    let kind = flag & KIND_MASK;
    if kind >= MOVING_WALL {
        Some((kind - MOVING_WALL) as usize)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip() {
        for kind in [CellKind::Fluid, CellKind::Wall, CellKind::MovingWall(0), CellKind::MovingWall(3)] {
            assert_eq!(CellKind::from_flag(kind.to_flag()), Some(kind));
        }
        assert_eq!(CellKind::from_flag(MOVING_WALL + MAX_MOVING_WALLS as u8), None);
    }
}
