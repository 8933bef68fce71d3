//! Per-cell physics, generic over the velocity set and the precision.
//!
//! Populations are stored shifted by their rest-state weight, `fbar_i = f_i - w_i`
//! (and `rho_bar = rho - 1`): the shifted values are small, so far fewer
//! significant bits are lost to round-off, in particular in f32.

use crate::lattice::{opposite, Lattice};
use crate::real::Real;

/// `c . v` for a constant integer velocity `c`, with additions only: the sum
/// starts at -0.0, which the compiler folds away (`-0.0 + x == x` for every
/// x), so after unrolling no multiplication by 0 or 1 is left.
#[inline(always)]
pub fn dot_c<T: Real>(c: [i32; 3], v: [T; 3]) -> T {
    let mut s = -T::ZERO;
    for a in 0..3 {
        if c[a] == 1 {
            s += v[a];
        } else if c[a] == -1 {
            s -= v[a];
        }
    }
    s
}

/// Macroscopic moments of a cell: `rho_bar = rho - 1` and momentum `j = sum f_i c_i`,
/// per opposite pair `(a, b)` (see [`opposite`]): `f_a + f_b` goes into the
/// density and `f_a - f_b` into each momentum component `c_a` has, which
/// takes fewer additions than summing each direction (D3Q27: 66 instead of 80).
#[inline(always)]
pub fn moments<L: Lattice<Q>, const Q: usize, T: Real>(f: &[T; Q]) -> (T, [T; 3]) {
    let mut rho_bar = f[0];
    let mut j = [-T::ZERO; 3];
    let mut a = 1;
    while a < Q {
        let b = opposite(a);
        rho_bar += f[a] + f[b];
        let d = f[a] - f[b];
        for k in 0..3 {
            if L::C[a][k] == 1 {
                j[k] += d;
            } else if L::C[a][k] == -1 {
                j[k] -= d;
            }
        }
        a += 2;
    }
    (rho_bar, j)
}

/// A term that is not there: `-0`, which adds nothing (`x + -0 == x` for
/// every `x`), so the compiler drops the addition; `+0` would cost one (it
/// turns a `-0` into `+0`, so it cannot be folded).
#[inline(always)]
pub(crate) fn nothing<T: Real>() -> T {
    -T::ZERO
}

/// The force of an unforced step, [`nothing`] in each component.
#[inline(always)]
pub(crate) fn no_force<T: Real>() -> [T; 3] {
    [nothing(); 3]
}

/// Density and velocity of a cell, with the half-force correction of Guo et
/// al. (2002): `u = (j + F/2) / rho`.
#[inline(always)]
pub fn density_velocity<L: Lattice<Q>, const Q: usize, T: Real>(f: &[T; Q], force: [T; 3]) -> (T, [T; 3]) {
    density_velocity_scaled::<L, Q, T>(f, force, T::ONE)
}

/// [`density_velocity`] of populations given times `scale` (a power of two).
#[inline(always)]
pub(crate) fn density_velocity_scaled<L: Lattice<Q>, const Q: usize, T: Real>(
    f: &[T; Q],
    force: [T; 3],
    scale: T,
) -> (T, [T; 3]) {
    let (rho_bar, j) = moments::<L, Q, T>(f);
    density_velocity_of_moments(rho_bar, j, force, scale, L::D)
}

/// [`density_velocity_scaled`] from the populations' moments `rho_bar` and
/// `j` (times `scale`), for a lattice of dimension `d`.
#[inline(always)]
pub(crate) fn density_velocity_of_moments<T: Real>(
    rho_bar: T,
    j: [T; 3],
    force: [T; 3],
    scale: T,
    d: usize,
) -> (T, [T; 3]) {
    let unscale = T::ONE / scale;
    let (rho_bar, j) = (rho_bar * unscale, j.map(|v| v * unscale));
    let rho = T::ONE + rho_bar;
    let inv_rho = T::ONE / rho;
    let half = T::from_f64(0.5);
    let mut u = [T::ZERO; 3];
    for a in 0..d {
        u[a] = half.mul_add(force[a], j[a]) * inv_rho;
    }
    (rho, u)
}

/// Shifted second-order equilibrium `feq_i - w_i` for density `rho` and velocity `u`:
/// `w_i (rho_bar + rho (3 c.u + 9/2 (c.u)^2 - 3/2 u.u))`.
#[inline(always)]
pub fn equilibrium<L: Lattice<Q>, const Q: usize, T: Real>(rho: T, u: [T; 3]) -> [T; Q] {
    let x = equilibrium_over_weights::<L, Q, T>(rho, u);
    // A loop, not `array::from_fn`, which is not always inlined (see `Trt`).
    let mut feq = [T::ZERO; Q];
    for i in 0..Q {
        feq[i] = T::from_f64(L::W[i]) * x[i];
    }
    feq
}

/// `(feq_i - w_i) / w_i = rho_bar + rho (3 c.u + 9/2 (c.u)^2 - 3/2 u.u)`,
/// per opposite pair `(a, b)` (see [`opposite`]): with `c_b = -c_a` the even part `rho_bar + rho (9/2 (c.u)^2 - 3/2 u.u)` and
/// the odd part `3 rho c.u` are formed once and added and subtracted, which
/// takes a third fewer operations than each direction on its own.
#[inline(always)]
pub(crate) fn equilibrium_over_weights<L: Lattice<Q>, const Q: usize, T: Real>(rho: T, u: [T; 3]) -> [T; Q] {
    let parts = equilibrium_parts(rho, u);
    let mut x = [parts.0; Q];
    let mut a = 1;
    while a < Q {
        (x[a], x[opposite(a)]) = equilibrium_pair::<L, Q, T>(parts, u, a);
        a += 2;
    }
    x
}

/// [`equilibrium_over_weights`] of direction `a` and its opposite, from
/// [`equilibrium_parts`]: an operator that works pair by pair forms them
/// there, with the same values.
#[inline(always)]
pub(crate) fn equilibrium_pair<L: Lattice<Q>, const Q: usize, T: Real>(
    (rest, rho3, rho45): (T, T, T),
    u: [T; 3],
    a: usize,
) -> (T, T) {
    let cu = dot_c(L::C[a], u);
    let even = rho45.mul_add(cu * cu, rest);
    let odd = rho3 * cu;
    (even + odd, even - odd)
}

/// `feq_i - f_i = w_i x_i - f_i` of population `i` (`x` from
/// [`equilibrium_over_weights`], storage units `scale`), one fused
/// operation: every operator that relaxes as BGK does forms it so, which
/// keeps it BGK's bit for bit at BGK's rates.
#[inline(always)]
pub(crate) fn non_equilibrium_part<L: Lattice<Q>, const Q: usize, T: Real>(i: usize, f: T, x: T, scale: T) -> T {
    (T::from_f64(L::W[i]) * scale).mul_add(x, -f)
}

/// The parts of [`equilibrium_over_weights`], `x_i = rest + rho3 c.u +
/// rho45 (c.u)^2`: `rest = rho_bar - 3/2 rho u.u`, `rho3 = 3 rho`, `rho45 = 9/2 rho`.
#[inline(always)]
pub(crate) fn equilibrium_parts<T: Real>(rho: T, u: [T; 3]) -> (T, T, T) {
    let rho_bar = rho - T::ONE;
    let usq15 = T::from_f64(1.5) * u[0].mul_add(u[0], u[1].mul_add(u[1], u[2] * u[2]));
    let rest = rho.mul_add(-usq15, rho_bar);
    (rest, T::from_f64(3.0) * rho, T::from_f64(4.5) * rho)
}

/// BGK collision with Guo forcing, in place on the shifted populations:
/// `f_i += omega (feq_i - f_i) + (1 - omega/2) w_i [3 (c_i - u).F + 9 (c_i.u)(c_i.F)]`.
/// With `FORCED = false` the force is taken as zero and its terms are not
/// computed. The populations may be given times `scale`, a power of two
/// (the storage units of [`crate::storage::Storage::SCALE`]): every step is
/// then exactly `scale` times the unscaled one. Returns the cell's density
/// and velocity.
#[inline(always)]
pub fn collide_bgk<L: Lattice<Q>, const Q: usize, T: Real, const FORCED: bool>(
    f: &mut [T; Q],
    omega: T,
    force: [T; 3],
    scale: T,
) -> (T, [T; 3]) {
    let (rho, u) = density_velocity_scaled::<L, Q, T>(f, if FORCED { force } else { no_force() }, scale);
    relax_bgk::<L, Q, T, FORCED>(f, rho, u, omega, force, scale);
    (rho, u)
}

/// The update of [`collide_bgk`] for a cell whose density and velocity are
/// known: what the operators that pick their rate from the cell's state
/// ([`crate::collision::Smagorinsky`]) share with BGK, so that at BGK's rate
/// they give its populations bit for bit.
#[inline(always)]
pub(crate) fn relax_bgk<L: Lattice<Q>, const Q: usize, T: Real, const FORCED: bool>(
    f: &mut [T; Q],
    rho: T,
    u: [T; 3],
    omega: T,
    force: [T; 3],
    scale: T,
) {
    let x = equilibrium_over_weights::<L, Q, T>(rho, u);
    let relax = |f: T, i: usize| omega.mul_add(non_equilibrium_part::<L, Q, T>(i, f, x[i], scale), f);
    if !FORCED {
        for i in 0..Q {
            f[i] = relax(f[i], i);
        }
        return;
    }
    let guo = GuoSource::new(omega, force, u, scale);
    for i in 0..Q {
        f[i] = relax(f[i], i) + guo.term::<L, Q>(i);
    }
}

/// `3 u.F`: the part of Guo's source that is the same in every direction.
#[inline(always)]
pub(crate) fn uf3<T: Real>(u: [T; 3], force: [T; 3]) -> T {
    T::from_f64(3.0) * u[0].mul_add(force[0], u[1].mul_add(force[1], u[2] * force[2]))
}

/// Guo et al. (2002) forcing for a cell of velocity `u` relaxed at rate
/// `omega`: `(1 - omega/2) w_i [3 (c_i - u).F + 9 (c_i.u)(c_i.F)]`, in the
/// storage units `scale`.
pub(crate) struct GuoSource<T> {
    force: [T; 3],
    u: [T; 3],
    /// `1 - omega / 2`.
    factor: T,
    /// `3 u.F`.
    uf3: T,
    scale: T,
}

impl<T: Real> GuoSource<T> {
    #[inline(always)]
    pub(crate) fn new(omega: T, force: [T; 3], u: [T; 3], scale: T) -> Self {
        let uf3 = uf3(u, force);
        Self { force, u, factor: T::ONE - T::from_f64(0.5) * omega, uf3, scale }
    }

    /// The term of population `i`.
    #[inline(always)]
    pub(crate) fn term<L: Lattice<Q>, const Q: usize>(&self, i: usize) -> T {
        let (three, nine) = (T::from_f64(3.0), T::from_f64(9.0));
        let cu = dot_c(L::C[i], self.u);
        let cf = dot_c(L::C[i], self.force);
        let w = T::from_f64(L::W[i]) * self.scale;
        // (1 - omega/2) w (3 c.F - 3 u.F + 9 (c.u)(c.F))
        self.factor * w * (nine * cu).mul_add(cf, three.mul_add(cf, -self.uf3))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::{D2Q9, D3Q19, D3Q27};

    fn check<L: Lattice<Q>, const Q: usize>() {
        let rho = 1.03;
        let u = [0.05, -0.02, if L::D == 3 { 0.03 } else { 0.0 }];
        let feq = equilibrium::<L, Q, f64>(rho, u);
        let (r, j) = moments::<L, Q, f64>(&feq);
        assert!((1.0 + r - rho).abs() < 1e-14, "{}: equilibrium density", L::NAME);
        for a in 0..3 {
            assert!((j[a] - rho * u[a]).abs() < 1e-14, "{}: equilibrium momentum", L::NAME);
        }
        // Collision conserves mass; momentum changes by exactly the force.
        let force = [1e-4, 2e-4, if L::D == 3 { -1e-4 } else { 0.0 }];
        let mut f = feq;
        for i in 0..Q {
            f[i] += 1e-3 * ((i * 7 % 5) as f64 - 2.0) * L::W[i];
        }
        let (r0, j0) = moments::<L, Q, f64>(&f);
        collide_bgk::<L, Q, f64, true>(&mut f, 1.0 / 0.7, force, 1.0);
        let (r1, j1) = moments::<L, Q, f64>(&f);
        assert!((r1 - r0).abs() < 1e-15, "{}: collision mass", L::NAME);
        for a in 0..3 {
            assert!((j1[a] - j0[a] - force[a]).abs() < 1e-15, "{}: collision momentum", L::NAME);
        }
    }

    /// Colliding populations given times a power of two gives exactly that
    /// multiple of the unscaled result (the 16-bit kernels compute so).
    fn scaled_collision_is_exact<L: Lattice<Q>, const Q: usize>() {
        let mut f = equilibrium::<L, Q, f32>(1.02, [0.04, -0.03, if L::D == 3 { 0.02 } else { 0.0 }]);
        for i in 0..Q {
            f[i] += 1e-3 * ((i * 5 % 7) as f32 - 3.0) * L::W[i] as f32;
        }
        let scale = 32768.0f32;
        let mut scaled = f.map(|v| v * scale);
        for forced in [false, true] {
            let force = [3e-5, -2e-5, 1e-5];
            let (r0, u0) = if forced {
                collide_bgk::<L, Q, f32, true>(&mut f, 1.0 / 0.6, force, 1.0)
            } else {
                collide_bgk::<L, Q, f32, false>(&mut f, 1.0 / 0.6, [0.0; 3], 1.0)
            };
            let (r1, u1) = if forced {
                collide_bgk::<L, Q, f32, true>(&mut scaled, 1.0 / 0.6, force, scale)
            } else {
                collide_bgk::<L, Q, f32, false>(&mut scaled, 1.0 / 0.6, [0.0; 3], scale)
            };
            assert_eq!((r0.to_bits(), u0.map(f32::to_bits)), (r1.to_bits(), u1.map(f32::to_bits)), "{}", L::NAME);
            for i in 0..Q {
                assert_eq!((f[i] * scale).to_bits(), scaled[i].to_bits(), "{} population {i}", L::NAME);
            }
        }
    }

    #[test]
    fn collision_in_storage_units_is_exact() {
        scaled_collision_is_exact::<D2Q9, 9>();
        scaled_collision_is_exact::<D3Q19, 19>();
        scaled_collision_is_exact::<D3Q27, 27>();
    }

    #[test]
    fn equilibrium_moments_and_collision_invariants() {
        check::<D2Q9, 9>();
        check::<D3Q19, 19>();
        check::<D3Q27, 27>();
    }
}
