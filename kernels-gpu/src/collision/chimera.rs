//! The moment array of the lattices whose velocities are all of `{-1, 0,
//! 1}^D` and its one-dimensional passes: a transform to 27 moments that are
//! products of one polynomial per axis (raw, as MRT's D3Q27 basis, or
//! central, as the cumulant operator's) is three passes of 3-point
//! transforms along z, y and x, 9 lines each, rather than a 27 x 27 matrix
//! (Geier et al. 2015 call it the chimera transform). Every loop is written
//! out ([`unrolled`]) so that each index is a constant and the 27 values
//! stay in registers.

use crate::lattice::Lattice;
use crate::real::Real;

/// Position of moment `k_abc` (each exponent 0 to 2) in the array.
pub(crate) const fn k(a: usize, b: usize, c: usize) -> usize {
    9 * a + 3 * b + c
}

/// Positions of the first-order moments (momentum, in a raw transform).
pub(crate) const MOMENTUM: [usize; 3] = [k(1, 0, 0), k(0, 1, 0), k(0, 0, 1)];

/// Position of velocity `c` in the array before the passes: `k(c_x + 1,
/// c_y + 1, c_z + 1)` in 3D; in 2D the z index is 0 (the zeroth moment
/// along z), as the z pass is skipped.
const fn cell_of(c: [i32; 3], d: usize) -> usize {
    let z = if d == 3 { c[2] + 1 } else { 0 };
    (9 * (c[0] + 1) + 3 * (c[1] + 1) + z) as usize
}

/// The three positions of line `line` of a pass along `axis` (0 = x):
/// `line` numbers the other two indices, the slower first.
#[inline(always)]
const fn line_cells(axis: usize, line: usize) -> [usize; 3] {
    let stride = [9, 3, 1][axis];
    let (hi, lo) = (line / 3, line % 3);
    let base = match axis {
        0 => 3 * hi + lo,
        1 => 9 * hi + lo,
        _ => 9 * hi + 3 * lo,
    };
    [base, base + stride, base + 2 * stride]
}

/// The populations `f` placed in the array.
#[inline(always)]
pub(crate) fn gather<L: Lattice<Q>, const Q: usize, T: Real>(f: &[T; Q]) -> [T; 27] {
    let mut m = [T::ZERO; 27];
    unrolled!(I < Q => {
        m[cell_of(L::C[I], L::D)] = f[I];
    });
    m
}

/// The populations back out of the array (the inverse of [`gather`]).
#[inline(always)]
pub(crate) fn scatter<L: Lattice<Q>, const Q: usize, T: Real>(m: &[T; 27]) -> [T; Q] {
    let mut f = [T::ZERO; Q];
    unrolled!(I < Q => {
        f[I] = m[cell_of(L::C[I], L::D)];
    });
    f
}

/// Replaces each line along `axis` by `transform(values, line)`.
#[inline(always)]
pub(crate) fn pass<T: Real>(m: &mut [T; 27], axis: usize, transform: impl Fn([T; 3], usize) -> [T; 3]) {
    unrolled!(LINE < 9 => {
        let [a, b, c] = line_cells(axis, LINE);
        [m[a], m[b], m[c]] = transform([m[a], m[b], m[c]], LINE);
    });
}
