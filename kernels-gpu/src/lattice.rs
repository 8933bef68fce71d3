//! Velocity sets D2Q9, D3Q19 and D3Q27.
//!
//! Ordering convention (the pairing Esoteric Pull needs): index 0 is the rest
//! population; every other direction comes in an opposite pair `(i, i + 1)`
//! with `i` odd, so `opposite(i)` is `i + 1` for odd `i` and `i - 1` for even.
//!
//! The 3D sets list the pairs that cross a z-plane first, each with its odd
//! member pointing up (`c_z = +1`): directions `1, 3, .., 2k - 1` go up and
//! `2, 4, .., 2k` down ([`z_pairs`]). Storage reorders them
//! ([`Lattice::SLOT`]): slots `1 ..= k` hold the up-going directions and
//! `k + 1 ..= 2k` the down-going ones, so the populations that cross between
//! two z-partitions are `k` adjacent planes of one layer, which one
//! contiguous copy moves (see the host's `halo` module).

use crate::collision::mrt::{self, MomentBasis};

/// A velocity set with `Q` discrete velocities.
pub trait Lattice<const Q: usize>: Copy + Send + Sync + 'static {
    /// Spatial dimension.
    const D: usize;
    /// Name used in kernel names and reports (`d3q19`).
    const NAME: &'static str;
    /// Discrete velocities `c_i` (z component 0 for 2D sets).
    const C: [[i32; 3]; Q];
    /// Quadrature weights `w_i`.
    const W: [f64; Q];
    /// Storage slot of each direction within a layer (see [`storage_slots`]).
    const SLOT: [usize; Q] = storage_slots::<Q>(z_pairs(&Self::C));
    /// Largest `|c_ia|` over all velocities and axes: how many cells a
    /// population crosses along an axis in one step, which sets halo widths
    /// and the near-wall neighbourhood (see [`crate::grid`]). 1 for the sets
    /// here; multi-speed sets reach further (D2Q37 has 3).
    const MAX_SPEED: u32 = max_speed(&Self::C);
    /// The moment basis of the multiple-relaxation-time operator
    /// ([`crate::collision::mrt`]).
    const MOMENTS: MomentBasis<Q>;
}

/// Largest `|c_ia|` in a velocity table (see [`Lattice::MAX_SPEED`]).
pub const fn max_speed<const Q: usize>(c: &[[i32; 3]; Q]) -> u32 {
    let mut max = 0;
    let mut i = 0;
    while i < Q {
        let mut a = 0;
        while a < 3 {
            let s = c[i][a].unsigned_abs();
            if s > max {
                max = s;
            }
            a += 1;
        }
        i += 1;
    }
    max
}

/// Storage slot of each direction when the first `k` pairs cross z: the
/// up-going members `1, 3, .., 2k - 1` take slots `1 ..= k`, the down-going
/// ones `2, 4, .., 2k` slots `k + 1 ..= 2k`; the rest keep their index.
pub const fn storage_slots<const Q: usize>(k: usize) -> [usize; Q] {
    let mut slot = [0; Q];
    let mut i = 0;
    while i < Q {
        slot[i] = if i == 0 || i > 2 * k {
            i
        } else if i % 2 == 1 {
            i.div_ceil(2)
        } else {
            k + i / 2
        };
        i += 1;
    }
    slot
}

/// Number `k` of opposite pairs that cross a z-plane: the first `k` pairs.
pub const fn z_pairs<const Q: usize>(c: &[[i32; 3]; Q]) -> usize {
    let mut k = 0;
    while 2 * k + 1 < Q && c[2 * k + 1][2] != 0 {
        k += 1;
    }
    k
}

/// Index of the direction opposite to `i` under the pair ordering above.
#[inline(always)]
pub const fn opposite(i: usize) -> usize {
    if i == 0 {
        0
    } else if i % 2 == 1 {
        i + 1
    } else {
        i - 1
    }
}

/// Squared lattice speed of sound, `c_s^2 = 1/3`, for all sets here.
pub const CS2: f64 = 1.0 / 3.0;

/// Every weight of the sets here is a multiple of `1 / WEIGHT_DENOMINATOR`,
/// so sums of weights times integers can be taken exactly in integers.
pub const WEIGHT_DENOMINATOR: f64 = 216.0;

/// D2Q9 (Qian, d'Humieres & Lallemand 1992).
#[derive(Clone, Copy, Debug, Default)]
pub struct D2Q9;
impl Lattice<9> for D2Q9 {
    const D: usize = 2;
    const NAME: &'static str = "d2q9";
    const MOMENTS: MomentBasis<9> = mrt::lallemand_luo(&Self::C);
    const C: [[i32; 3]; 9] =
        [[0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [1, 1, 0], [-1, -1, 0], [1, -1, 0], [-1, 1, 0]];
    const W: [f64; 9] =
        [4.0 / 9.0, 1.0 / 9.0, 1.0 / 9.0, 1.0 / 9.0, 1.0 / 9.0, 1.0 / 36.0, 1.0 / 36.0, 1.0 / 36.0, 1.0 / 36.0];
}

const W19_E: f64 = 1.0 / 18.0;
const W19_D: f64 = 1.0 / 36.0;

/// D3Q19.
#[derive(Clone, Copy, Debug, Default)]
pub struct D3Q19;
impl Lattice<19> for D3Q19 {
    const D: usize = 3;
    const NAME: &'static str = "d3q19";
    const MOMENTS: MomentBasis<19> = mrt::dhumieres(&Self::C);
    const C: [[i32; 3]; 19] = [
        [0, 0, 0],
        [0, 0, 1],
        [0, 0, -1],
        [1, 0, 1],
        [-1, 0, -1],
        [0, 1, 1],
        [0, -1, -1],
        [-1, 0, 1],
        [1, 0, -1],
        [0, -1, 1],
        [0, 1, -1],
        [1, 0, 0],
        [-1, 0, 0],
        [0, 1, 0],
        [0, -1, 0],
        [1, 1, 0],
        [-1, -1, 0],
        [1, -1, 0],
        [-1, 1, 0],
    ];
    const W: [f64; 19] = [
        1.0 / 3.0,
        W19_E,
        W19_E,
        W19_D,
        W19_D,
        W19_D,
        W19_D,
        W19_D,
        W19_D,
        W19_D,
        W19_D,
        W19_E,
        W19_E,
        W19_E,
        W19_E,
        W19_D,
        W19_D,
        W19_D,
        W19_D,
    ];
}

const W27_E: f64 = 2.0 / 27.0;
const W27_D: f64 = 1.0 / 54.0;
const W27_C: f64 = 1.0 / 216.0;

/// D3Q27.
#[derive(Clone, Copy, Debug, Default)]
pub struct D3Q27;
impl Lattice<27> for D3Q27 {
    const D: usize = 3;
    const NAME: &'static str = "d3q27";
    const MOMENTS: MomentBasis<27> = mrt::tensor_product(&Self::C);
    const C: [[i32; 3]; 27] = [
        [0, 0, 0],
        [0, 0, 1],
        [0, 0, -1],
        [1, 0, 1],
        [-1, 0, -1],
        [0, 1, 1],
        [0, -1, -1],
        [-1, 0, 1],
        [1, 0, -1],
        [0, -1, 1],
        [0, 1, -1],
        [1, 1, 1],
        [-1, -1, -1],
        [-1, -1, 1],
        [1, 1, -1],
        [1, -1, 1],
        [-1, 1, -1],
        [-1, 1, 1],
        [1, -1, -1],
        [1, 0, 0],
        [-1, 0, 0],
        [0, 1, 0],
        [0, -1, 0],
        [1, 1, 0],
        [-1, -1, 0],
        [1, -1, 0],
        [-1, 1, 0],
    ];
    const W: [f64; 27] = [
        8.0 / 27.0,
        W27_E,
        W27_E,
        W27_D,
        W27_D,
        W27_D,
        W27_D,
        W27_D,
        W27_D,
        W27_D,
        W27_D,
        W27_C,
        W27_C,
        W27_C,
        W27_C,
        W27_C,
        W27_C,
        W27_C,
        W27_C,
        W27_E,
        W27_E,
        W27_E,
        W27_E,
        W27_D,
        W27_D,
        W27_D,
        W27_D,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<L: Lattice<Q>, const Q: usize>() {
        let w: f64 = L::W.iter().sum();
        assert!((w - 1.0).abs() < 1e-15, "{}: weights sum to {w}", L::NAME);
        for i in 0..Q {
            let o = opposite(i);
            for a in 0..3 {
                assert_eq!(L::C[o][a], -L::C[i][a], "{} opposite of {i}", L::NAME);
            }
            assert_eq!(L::W[o], L::W[i]);
            if L::D == 2 {
                assert_eq!(L::C[i][2], 0);
            }
            for j in 0..i {
                assert_ne!(L::C[i], L::C[j], "{}: duplicate velocity", L::NAME);
            }
        }
        // Isotropy up to the order the second-order equilibrium needs:
        // sum w c_a = 0, sum w c_a c_b = cs2 delta_ab, sum w c_a c_b c_c = 0,
        // sum w c_a c_b c_c c_d = cs2^2 (d_ab d_cd + d_ac d_bd + d_ad d_bc).
        let d = |a: usize, b: usize| if a == b { 1.0 } else { 0.0 };
        let dims = L::D;
        for a in 0..dims {
            let m1: f64 = (0..Q).map(|i| L::W[i] * L::C[i][a] as f64).sum();
            assert!(m1.abs() < 1e-15);
            for b in 0..dims {
                let m2: f64 = (0..Q).map(|i| L::W[i] * (L::C[i][a] * L::C[i][b]) as f64).sum();
                assert!((m2 - CS2 * d(a, b)).abs() < 1e-15, "{} second moment", L::NAME);
                for c in 0..dims {
                    let m3: f64 = (0..Q).map(|i| L::W[i] * (L::C[i][a] * L::C[i][b] * L::C[i][c]) as f64).sum();
                    assert!(m3.abs() < 1e-15);
                    for e in 0..dims {
                        let m4: f64 =
                            (0..Q).map(|i| L::W[i] * (L::C[i][a] * L::C[i][b] * L::C[i][c] * L::C[i][e]) as f64).sum();
                        let want = CS2 * CS2 * (d(a, b) * d(c, e) + d(a, c) * d(b, e) + d(a, e) * d(b, c));
                        assert!((m4 - want).abs() < 1e-15, "{} fourth moment", L::NAME);
                    }
                }
            }
        }
    }

    /// The z-crossing pairs come first, odd members up, and no later
    /// direction crosses: the property the partitions' halo copies rely on.
    fn check_z_pairs<L: Lattice<Q>, const Q: usize>(expected: usize) {
        let k = z_pairs(&L::C);
        assert_eq!(k, expected, "{}", L::NAME);
        for i in 1..Q {
            let want = if i > 2 * k {
                0
            } else if i % 2 == 1 {
                1
            } else {
                -1
            };
            assert_eq!(L::C[i][2], want, "{} direction {i}", L::NAME);
        }
    }

    /// Storage slots are a permutation that puts each way's crossing
    /// directions in `k` adjacent slots.
    fn check_slots<L: Lattice<Q>, const Q: usize>() {
        let k = z_pairs(&L::C);
        let mut seen = [false; Q];
        for i in 0..Q {
            let s = L::SLOT[i];
            assert!(!seen[s], "{}: slot {s} taken twice", L::NAME);
            seen[s] = true;
            let up = (1..=k).contains(&s);
            let down = (k + 1..=2 * k).contains(&s);
            assert_eq!((up, down), (L::C[i][2] == 1, L::C[i][2] == -1), "{} direction {i}", L::NAME);
        }
    }

    #[test]
    fn z_crossing_pairs_come_first() {
        check_slots::<D2Q9, 9>();
        check_slots::<D3Q19, 19>();
        check_slots::<D3Q27, 27>();
        check_z_pairs::<D2Q9, 9>(0);
        check_z_pairs::<D3Q19, 19>(5);
        check_z_pairs::<D3Q27, 27>(9);
    }

    /// `MAX_SPEED` is the largest velocity component, and the farthest a
    /// population moves along z too (what a z-partition's halo covers).
    fn check_max_speed<L: Lattice<Q>, const Q: usize>(expected: u32) {
        let max = L::C.iter().flatten().map(|c| c.unsigned_abs()).max().unwrap();
        assert_eq!(L::MAX_SPEED, max, "{}", L::NAME);
        assert_eq!(L::MAX_SPEED, expected, "{}", L::NAME);
        if L::D == 3 {
            assert_eq!(L::C.iter().map(|c| c[2].unsigned_abs()).max(), Some(max), "{}", L::NAME);
        }
    }

    #[test]
    fn max_speed_is_the_largest_component() {
        check_max_speed::<D2Q9, 9>(1);
        check_max_speed::<D3Q19, 19>(1);
        check_max_speed::<D3Q27, 27>(1);
        assert_eq!(max_speed(&[[0, 0, 0], [3, 0, 0], [-3, 0, 0], [0, -2, 0], [0, 2, 0]]), 3);
    }

    #[test]
    fn velocity_sets_are_consistent_and_isotropic() {
        check::<D2Q9, 9>();
        check::<D3Q19, 19>();
        check::<D3Q27, 27>();
    }
}
