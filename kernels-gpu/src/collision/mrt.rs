//! Multiple relaxation times: the populations' non-equilibrium parts are
//! taken to a basis of moments, orthogonal under the plain sum over
//! velocities, and each moment relaxes at its own rate. The bases:
//!
//! - D2Q9: Lallemand & Luo (2000), Phys. Rev. E 61, 6546.
//! - D3Q19: d'Humieres, Ginzburg, Krafczyk, Lallemand & Luo (2002), Phil.
//!   Trans. R. Soc. A 360, 437.
//! - D3Q27: the products `p_a(c_x) p_b(c_y) p_c(c_z)` of the polynomials
//!   `1, c, 3 c^2 - 2`, orthogonal on `{-1, 0, 1}`, with the three normal
//!   second-order products `p_2(c_x), p_2(c_y), p_2(c_z)` turned into their
//!   trace (bulk) and two deviators (shear), so that bulk and shear
//!   viscosity are set apart as in the other two sets.
//!
//! The moments fall into [`RateClass`]es: the conserved ones (density,
//! momentum) are not relaxed; the shear moments relax at `1 / tau`, which
//! sets the viscosity; the bulk moment sets the bulk viscosity; the rest
//! (energy fluxes, fourth-order and higher ghosts) only damp modes that
//! carry no hydrodynamics, at the rates [`Mrt::published`] states.

mod classes;

use super::chimera::{self, k, MOMENTUM};
use super::cumulant::is_tensor_product;
use super::Collision;
use crate::cell::{density_velocity_of_moments, density_velocity_scaled, equilibrium_parts, no_force, relax_bgk, uf3};
use crate::lattice::{Lattice, WEIGHT_DENOMINATOR};
use crate::real::Real;

/// What a moment of a basis is, which sets its rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateClass {
    /// Density and momentum: collision keeps them.
    Conserved,
    /// Traceless second-order moments: the shear viscosity.
    Shear,
    /// The trace of the second-order moments (the energy `e`): bulk viscosity.
    Bulk,
    /// Third-order moments of the energy-flux kind (`q`).
    Flux,
    /// Fourth-order moments (`epsilon`, `pi`).
    Fourth,
    /// The remaining ghosts: D3Q19's third-order `m`, D3Q27's fifth and
    /// sixth-order products.
    Ghost,
}

/// A lattice's moment basis: `rows[k][i]` is moment `k`'s polynomial at
/// velocity `i` (integers for all three sets), `class[k]` its [`RateClass`].
#[derive(Clone, Copy, Debug)]
pub struct MomentBasis<const Q: usize> {
    /// Rows of the transform `m = M f`.
    pub rows: [[i32; Q]; Q],
    /// Each row's rate class.
    pub class: [RateClass; Q],
}

impl<const Q: usize> MomentBasis<Q> {
    /// 0 if row `k` is even in `c` (`M_k(-c) = M_k(c)`), 1 if odd: every
    /// row of the three bases is one or the other (a unit test checks it).
    pub const fn parity(&self, k: usize) -> u32 {
        // The first velocity with a non-zero entry after the rest one.
        let mut a = 1;
        while a < Q {
            if self.rows[k][a] != 0 {
                return if self.rows[k][a + 1] == self.rows[k][a] { 0 } else { 1 };
            }
            a += 2;
        }
        0
    }

    /// `sum_i M_ki^2`: the rows are orthogonal, so `M^-1 = M^T diag(1 / norm)`.
    pub const fn norm(&self, k: usize) -> i32 {
        let mut s = 0;
        let mut i = 0;
        while i < Q {
            s += self.rows[k][i] * self.rows[k][i];
            i += 1;
        }
        s
    }
}

/// Lallemand & Luo's D2Q9 basis, in the order `rho, e, epsilon, j_x, q_x,
/// j_y, q_y, p_xx, p_xy`, for the velocities `c`.
pub const fn lallemand_luo(c: &[[i32; 3]; 9]) -> MomentBasis<9> {
    use RateClass::*;
    let mut rows = [[0; 9]; 9];
    let mut i = 0;
    while i < 9 {
        let (x, y) = (c[i][0], c[i][1]);
        let c2 = x * x + y * y;
        rows[0][i] = 1;
        rows[1][i] = -4 + 3 * c2;
        rows[2][i] = (8 - 21 * c2 + 9 * c2 * c2) / 2;
        rows[3][i] = x;
        rows[4][i] = (-5 + 3 * c2) * x;
        rows[5][i] = y;
        rows[6][i] = (-5 + 3 * c2) * y;
        rows[7][i] = x * x - y * y;
        rows[8][i] = x * y;
        i += 1;
    }
    MomentBasis { rows, class: [Conserved, Bulk, Fourth, Conserved, Flux, Conserved, Flux, Shear, Shear] }
}

/// d'Humieres et al.'s D3Q19 basis, in their order `rho, e, epsilon, j_x,
/// q_x, j_y, q_y, j_z, q_z, 3p_xx, 3pi_xx, p_ww, pi_ww, p_xy, p_yz, p_xz,
/// m_x, m_y, m_z`, for the velocities `c`.
pub const fn dhumieres(c: &[[i32; 3]; 19]) -> MomentBasis<19> {
    use RateClass::*;
    let mut rows = [[0; 19]; 19];
    let mut i = 0;
    while i < 19 {
        let (x, y, z) = (c[i][0], c[i][1], c[i][2]);
        let c2 = x * x + y * y + z * z;
        let q = 5 * c2 - 9;
        let (pxx, pww) = (3 * x * x - c2, y * y - z * z);
        let r = [
            1,
            19 * c2 - 30,
            (21 * c2 * c2 - 53 * c2 + 24) / 2,
            x,
            q * x,
            y,
            q * y,
            z,
            q * z,
            pxx,
            (3 * c2 - 5) * pxx,
            pww,
            (3 * c2 - 5) * pww,
            x * y,
            y * z,
            x * z,
            (y * y - z * z) * x,
            (z * z - x * x) * y,
            (x * x - y * y) * z,
        ];
        let mut k = 0;
        while k < 19 {
            rows[k][i] = r[k];
            k += 1;
        }
        i += 1;
    }
    let class = [
        Conserved, Bulk, Fourth, Conserved, Flux, Conserved, Flux, Conserved, Flux, Shear, Fourth, Shear, Fourth,
        Shear, Shear, Shear, Ghost, Ghost, Ghost,
    ];
    MomentBasis { rows, class }
}

/// `p_n(v)` of the D3Q27 basis: `1, v, 3 v^2 - 2`.
const fn p(n: usize, v: i32) -> i32 {
    match n {
        0 => 1,
        1 => v,
        _ => 3 * v * v - 2,
    }
}

/// The D3Q27 tensor-product basis (see the module's notes), for the velocities `c`.
pub const fn tensor_product(c: &[[i32; 3]; 27]) -> MomentBasis<27> {
    use RateClass::*;
    // Products p_a p_b p_c, except the rows marked (9, 9, 9) below.
    const PRODUCTS: [([usize; 3], RateClass); 27] = [
        ([0, 0, 0], Conserved),
        ([1, 0, 0], Conserved),
        ([0, 1, 0], Conserved),
        ([0, 0, 1], Conserved),
        ([1, 1, 0], Shear),
        ([1, 0, 1], Shear),
        ([0, 1, 1], Shear),
        // p2x + p2y + p2z, p2x - p2y, p2x + p2y - 2 p2z.
        ([9, 9, 9], Bulk),
        ([9, 9, 9], Shear),
        ([9, 9, 9], Shear),
        ([2, 1, 0], Flux),
        ([2, 0, 1], Flux),
        ([1, 2, 0], Flux),
        ([0, 2, 1], Flux),
        ([1, 0, 2], Flux),
        ([0, 1, 2], Flux),
        ([1, 1, 1], Flux),
        ([2, 2, 0], Fourth),
        ([2, 0, 2], Fourth),
        ([0, 2, 2], Fourth),
        ([2, 1, 1], Fourth),
        ([1, 2, 1], Fourth),
        ([1, 1, 2], Fourth),
        ([2, 2, 1], Ghost),
        ([2, 1, 2], Ghost),
        ([1, 2, 2], Ghost),
        ([2, 2, 2], Ghost),
    ];
    let mut rows = [[0; 27]; 27];
    let mut class = [Conserved; 27];
    let mut i = 0;
    while i < 27 {
        let v = c[i];
        let (px, py, pz) = (p(2, v[0]), p(2, v[1]), p(2, v[2]));
        let mut k = 0;
        while k < 27 {
            let (n, cl) = PRODUCTS[k];
            rows[k][i] = match k {
                7 => px + py + pz,
                8 => px - py,
                9 => px + py - 2 * pz,
                _ => p(n[0], v[0]) * p(n[1], v[1]) * p(n[2], v[2]),
            };
            class[k] = cl;
            k += 1;
        }
        i += 1;
    }
    MomentBasis { rows, class }
}

/// Adds `m v` to `s` for a constant integer `m`: nothing for 0, an
/// addition or subtraction for +-1, a fused multiply-add otherwise (a
/// product with 0.0 would not fold away: it is not 0 for infinities).
#[inline(always)]
fn add_multiple<T: Real>(s: &mut T, m: i32, v: T) {
    match m {
        0 => {}
        1 => *s += v,
        -1 => *s -= v,
        _ => *s = T::from_f64(m as f64).mul_add(v, *s),
    }
}

/// Multiple-relaxation-time collision ([`crate::lattice::Lattice::MOMENTS`])
/// with Guo forcing in moment space: with `S_i` Guo's source (the force
/// term without its `1 - omega/2`), the moments of `feq - f - S/2` relax,
/// and `S` is added whole, which is `(1 - s_k / 2)` times `S` in each
/// moment `k` (as Guo's term is in BGK). With every rate equal this is BGK
/// up to round-off.
///
/// Built by [`Mrt::new`] from its [`MrtRates`], which also derives the
/// coefficients D3Q19's update by velocity classes takes (every `Mrt`
/// carries them, 14 values, whatever its lattice), so the rates are read
/// back through [`Mrt::rates`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mrt<T> {
    rates: MrtRates<T>,
    classes: classes::ClassCoefficients<T>,
}

/// The rates of [`Mrt`]'s classes of moments (see [`RateClass`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MrtRates<T> {
    /// Rate of the shear moments, `1 / tau`.
    pub shear: T,
    /// Rate of the bulk moment.
    pub bulk: T,
    /// Rate of the third-order energy fluxes.
    pub flux: T,
    /// Rate of the fourth-order moments.
    pub fourth: T,
    /// Rate of the remaining ghosts.
    pub ghost: T,
}

impl<T: Real> Mrt<T> {
    /// MRT with these rates.
    pub fn new(rates: MrtRates<T>) -> Self {
        let r = rates;
        let classes = classes::ClassCoefficients::new([r.shear, r.bulk, r.flux, r.fourth, r.ghost].map(T::to_f64));
        Self { rates, classes }
    }

    /// The rates it was built with.
    pub fn rates(&self) -> MrtRates<T> {
        self.rates
    }

    /// These rates in precision `U`.
    pub fn cast<U: Real>(&self) -> Mrt<U> {
        let (r, u) = (self.rates, |x: T| U::from_f64(x.to_f64()));
        Mrt::new(MrtRates {
            shear: u(r.shear),
            bulk: u(r.bulk),
            flux: u(r.flux),
            fourth: u(r.fourth),
            ghost: u(r.ghost),
        })
    }
}

impl Mrt<f64> {
    /// The published rates for relaxation time `tau` on the lattice named
    /// `lattice` (`d2q9`, `d3q19`, `d3q27`): Lallemand & Luo's D2Q9 set
    /// (`s_e = 1.64, s_epsilon = 1.54, s_q = 1.9`), d'Humieres et al.'s
    /// D3Q19 set (`s_e = 1.19, s_epsilon = s_pi = 1.4, s_q = 1.2,
    /// s_m = 1.98`), and for D3Q27 the D3Q19 rates by order (bulk 1.19,
    /// third order 1.2, fourth 1.4) with the fifth and sixth-order products
    /// at 1, their equilibrium: at D3Q19's ghost rate 1.98 a Taylor-Green
    /// vortex of 64 cells at `tau = 0.6` diverged, at 1 (and 1.5) it decays
    /// at the viscosity BGK gives within 0.1%, down to `tau = 0.51`.
    pub fn published(tau: f64, lattice: &str) -> Self {
        let shear = 1.0 / tau;
        match lattice {
            "d2q9" => Self::new(MrtRates { shear, bulk: 1.64, flux: 1.9, fourth: 1.54, ghost: 1.0 }),
            "d3q27" => Self::new(MrtRates { shear, bulk: 1.19, flux: 1.2, fourth: 1.4, ghost: 1.0 }),
            _ => Self::new(MrtRates { shear, bulk: 1.19, flux: 1.2, fourth: 1.4, ghost: 1.98 }),
        }
    }

    /// Every rate `omega`: BGK's update, up to round-off.
    pub fn all(omega: f64) -> Self {
        Self::new(MrtRates { shear: omega, bulk: omega, flux: omega, fourth: omega, ghost: omega })
    }
}

impl<T: Real> Mrt<T> {
    /// The rate of class `class` (conserved moments are not relaxed).
    #[inline(always)]
    fn rate(&self, class: RateClass) -> T {
        match class {
            RateClass::Conserved => T::ZERO,
            RateClass::Shear => self.rates.shear,
            RateClass::Bulk => self.rates.bulk,
            RateClass::Flux => self.rates.flux,
            RateClass::Fourth => self.rates.fourth,
            RateClass::Ghost => self.rates.ghost,
        }
    }
}

/// Moment `k` of the weights times `1, c_a, c_a c_b`: `sum_i M_ki w_i`,
/// `sum_i M_ki w_i c_ia`, `sum_i M_ki w_i c_ia c_ib`. The equilibrium's and
/// Guo's source's moment `k` are these in closed form (see
/// [`Mrt::relax_by_matrix`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct WeightMoments {
    pub(crate) zeroth: f64,
    pub(crate) first: [f64; 3],
    pub(crate) second: [[f64; 3]; 3],
}

/// [`WeightMoments`] of row `k` of `L`'s basis ([`weight_moments_of`]).
/// Rows past `Q` (which the unrolled loops name in branches they never
/// take) give zeros.
pub(crate) const fn weight_moments<L: Lattice<Q>, const Q: usize>(k: usize) -> WeightMoments {
    if k < Q {
        weight_moments_of::<L, Q>(&L::MOMENTS.rows[k])
    } else {
        weight_moments_of::<L, Q>(&[0; Q])
    }
}

/// [`WeightMoments`] of the polynomial with the values `row` at `L`'s
/// velocities, summed in integers (the weights times
/// [`WEIGHT_DENOMINATOR`]) and divided once: a moment that is zero comes
/// out 0.0 exactly, and the compiler drops its terms.
pub(crate) const fn weight_moments_of<L: Lattice<Q>, const Q: usize>(row: &[i32; Q]) -> WeightMoments {
    let (mut zeroth, mut first, mut second) = (0i64, [0i64; 3], [[0i64; 3]; 3]);
    let mut i = 0;
    while i < Q {
        let scaled = L::W[i] * WEIGHT_DENOMINATOR;
        let w = (scaled + 0.5) as i64;
        assert!((scaled - w as f64).abs() < 1e-9, "a lattice weight is not a multiple of 1/216");
        let mw = row[i] as i64 * w;
        let c = L::C[i];
        zeroth += mw;
        let mut a = 0;
        while a < 3 {
            first[a] += mw * c[a] as i64;
            let mut b = 0;
            while b < 3 {
                second[a][b] += mw * (c[a] * c[b]) as i64;
                b += 1;
            }
            a += 1;
        }
        i += 1;
    }
    let mut m = WeightMoments { zeroth: zeroth as f64 / WEIGHT_DENOMINATOR, first: [0.0; 3], second: [[0.0; 3]; 3] };
    let mut a = 0;
    while a < 3 {
        m.first[a] = first[a] as f64 / WEIGHT_DENOMINATOR;
        let mut b = 0;
        while b < 3 {
            m.second[a][b] = second[a][b] as f64 / WEIGHT_DENOMINATOR;
            b += 1;
        }
        a += 1;
    }
    m
}

/// Whether any of the constant coefficients `c` is not zero.
#[inline(always)]
fn any(c: [f64; 3]) -> bool {
    c[0] != 0.0 || c[1] != 0.0 || c[2] != 0.0
}

/// `sum_a v_a c_a` for constant coefficients `c`, skipping those that are 0.
#[inline(always)]
fn dot_const<T: Real>(c: [f64; 3], v: [T; 3]) -> T {
    let mut s = -T::ZERO;
    for a in 0..3 {
        if c[a] != 0.0 {
            s = T::from_f64(c[a]).mul_add(v[a], s);
        }
    }
    s
}

/// The moments of a cell's equilibrium and of Guo's source (without its
/// rate factor) along a row with weight moments `wm`: `sum_i M_ki w_i x_i`
/// with `x_i` the equilibrium over its weight
/// ([`crate::cell::equilibrium_over_weights`], from its `parts`), and
/// `sum_i M_ki w_i (3 (c_i - u).F + 9 (c_i.u)(c_i.F))`. The terms whose
/// coefficients are zero are not written (a product with a constant zero is
/// not folded away).
#[inline(always)]
fn equilibrium_and_source<T: Real>(wm: WeightMoments, parts: (T, T, T), u: [T; 3], force: [T; 3], uf3: T) -> (T, T) {
    let (rest, rho3, rho45) = parts;
    let (three, nine) = (T::from_f64(3.0), T::from_f64(9.0));
    let (mut eq, mut source) = (-T::ZERO, -T::ZERO);
    if any(wm.first) {
        eq = rho3 * dot_const(wm.first, u);
        source = three * dot_const(wm.first, force);
    }
    for a in 0..3 {
        if any(wm.second[a]) {
            eq = (rho45 * u[a]).mul_add(dot_const(wm.second[a], u), eq);
            source = (nine * u[a]).mul_add(dot_const(wm.second[a], force), source);
        }
    }
    if wm.zeroth != 0.0 {
        let zeroth = T::from_f64(wm.zeroth);
        eq = zeroth.mul_add(rest, eq);
        source = (-zeroth).mul_add(uf3, source);
    }
    (eq, source)
}

/// The non-equilibrium part `eq - S/2 - m` of a moment `m` along a row with
/// weight moments `wm`, and Guo's source's moment `S`, both in storage units
/// (see [`equilibrium_and_source`]). A function rather than a closure: the
/// kernels that pick their operator at run time would not inline a closure.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn moment_non_equilibrium<T: Real, const FORCED: bool>(
    wm: WeightMoments,
    m: T,
    parts: (T, T, T),
    u: [T; 3],
    force: [T; 3],
    uf3: T,
    scale: T,
) -> (T, T) {
    let (mut eq, source) = equilibrium_and_source(wm, parts, u, force, uf3);
    if FORCED {
        eq = T::from_f64(-0.5).mul_add(source, eq);
    }
    (eq.mul_add(scale, -m), source * scale)
}

/// Positions of D3Q27's normal second-order products in the moment array.
const NORMAL: [usize; 3] = [k(2, 0, 0), k(0, 2, 0), k(0, 0, 2)];

/// [`WeightMoments`] of the D3Q27 product at position `at` of the moment
/// array, `p_a(c_x) p_b(c_y) p_c(c_z)` with `at = k(a, b, c)`, for `L`'s
/// velocities.
const fn product_weight_moments<L: Lattice<Q>, const Q: usize>(at: usize) -> WeightMoments {
    let mut row = [0; Q];
    let mut i = 0;
    while i < Q {
        let c = L::C[i];
        row[i] = p(at / 9, c[0]) * p(at / 3 % 3, c[1]) * p(at % 3, c[2]);
        i += 1;
    }
    weight_moments_of::<L, Q>(&row)
}

impl<T: Real> Mrt<T> {
    /// MRT on the bases given by their matrix (D2Q9, D3Q19), written as
    /// BGK at the shear rate plus a correction for each moment whose rate
    /// differs from it: `f + omega n + S + sum_k (s_k - omega) / |M_k|^2
    /// M_k (M_k . n)` over the bulk, flux, fourth-order and ghost moments,
    /// `n = feq - f - S/2` (the conserved moments of `n` are zero, the
    /// shear ones relax as in BGK). `M_k . n` is taken from the
    /// populations' own moment and the equilibrium's and source's in
    /// closed form ([`weight_moments`]), so no array of `n` is live beside
    /// the populations. At equal rates every correction is a signed zero and
    /// the result is BGK's bit for bit. Every row is even or odd in `c`
    /// ([`MomentBasis::parity`]), so the transforms work on the sums and
    /// differences of opposite populations, half the operations.
    #[inline(always)]
    fn relax_by_matrix<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        let force = if FORCED { force } else { no_force() };
        let (rho, u) = density_velocity_scaled::<L, Q, T>(f, force, scale);
        // Opposite pairs (a, a + 1) for odd a: sums at a, differences at a + 1.
        let mut p = [T::ZERO; Q];
        p[0] = f[0];
        unrolled!(A < Q => {
            if A % 2 == 1 {
                p[A] = f[A] + f[A + 1];
                p[A + 1] = f[A] - f[A + 1];
            }
        });
        let parts = equilibrium_parts(rho, u);
        let half = T::from_f64(0.5);
        let uf3 = uf3(u, force);
        // Corrections over their norms: z_k = (s_k - omega) (M_k . n) / |M_k|^2.
        let mut z = [T::ZERO; Q];
        unrolled!(K < Q => {
            if corrected(L::MOMENTS.class[K]) {
                let wm = const { weight_moments::<L, Q>(K) };
                let even = L::MOMENTS.parity(K) == 0;
                let mut own = -T::ZERO;
                if even {
                    add_multiple(&mut own, L::MOMENTS.rows[K][0], p[0]);
                }
                unrolled!(A < Q => {
                    if A % 2 == 1 {
                        add_multiple(&mut own, L::MOMENTS.rows[K][A], p[if even { A } else { A + 1 }]);
                    }
                });
                let (mut eq, source) = equilibrium_and_source(wm, parts, u, force, uf3);
                if FORCED {
                    eq = (-half).mul_add(source, eq);
                }
                let m = eq.mul_add(scale, -own);
                z[K] = m * ((self.rate(L::MOMENTS.class[K]) - self.rates.shear) * T::from_f64(1.0 / L::MOMENTS.norm(K) as f64));
            }
        });
        relax_bgk::<L, Q, T, FORCED>(f, rho, u, self.rates.shear, force, scale);
        // Back: the even rows' sum and the odd rows' sum at each pair's first
        // velocity give both populations.
        unrolled!(A < Q => {
            if A == 0 || A % 2 == 1 {
                let (mut even, mut odd) = (-T::ZERO, -T::ZERO);
                unrolled!(K < Q => {
                    if corrected(L::MOMENTS.class[K]) {
                        if L::MOMENTS.parity(K) == 0 {
                            add_multiple(&mut even, L::MOMENTS.rows[K][A], z[K]);
                        } else {
                            add_multiple(&mut odd, L::MOMENTS.rows[K][A], z[K]);
                        }
                    }
                });
                if A == 0 {
                    f[0] += even;
                } else {
                    f[A] += even + odd;
                    f[A + 1] += even - odd;
                }
            }
        });
        (rho, u)
    }

    /// The change `M^T diag(s / |M_k|^2) M n` that relaxing the
    /// non-equilibrium parts `n` makes to the populations, by the basis's
    /// matrix: the reference every basis's update is checked against.
    #[cfg(test)]
    fn relax_by_full_matrix<L: Lattice<Q>, const Q: usize>(&self, n: &[T; Q]) -> [T; Q] {
        let mut d = [T::ZERO; Q];
        for k in 0..Q {
            if L::MOMENTS.class[k] == RateClass::Conserved {
                continue;
            }
            let mut m = T::ZERO;
            for i in 0..Q {
                m += T::from_f64(L::MOMENTS.rows[k][i] as f64) * n[i];
            }
            let z = m * self.rate(L::MOMENTS.class[k]) / T::from_f64(L::MOMENTS.norm(k) as f64);
            for i in 0..Q {
                d[i] += T::from_f64(L::MOMENTS.rows[k][i] as f64) * z;
            }
        }
        d
    }

    /// MRT on D3Q27's basis, whose rows are products of one polynomial per
    /// axis, in moment space: three passes of the 3-point transform `1, c,
    /// 3c^2 - 2` ([`chimera`]) take the populations to their moments in
    /// place, each moment relaxes towards the equilibrium's (in closed form,
    /// as in [`Self::relax_by_matrix`]) with Guo's source as there, and three
    /// passes of the inverse bring them back, with its norms (3, 2, 6 per
    /// axis) taken on the moments first so that the passes only add: about 300
    /// operations instead of the matrix's 1,300, with 27 values live rather
    /// than the populations and their non-equilibrium parts side by side.
    /// Density and momentum are moments of the basis, so they come from the
    /// transform too; the momentum takes the force exactly. The three normal
    /// second-order products relax as their trace (at `bulk`) and deviators
    /// (at `shear`).
    #[inline(always)]
    fn relax_in_moments<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        let force = if FORCED { force } else { no_force() };
        let (two, third) = (T::from_f64(2.0), T::from_f64(1.0 / 3.0));
        let mut m = chimera::gather::<L, Q, T>(f);
        unrolled!(axis P < 3 => {
            chimera::pass(&mut m, 2 - P, |v, _| [v[0] + v[1] + v[2], v[2] - v[0], two.mul_add(-v[1], v[0] + v[2])]);
        });
        let (rho, u) = density_velocity_of_moments(m[k(0, 0, 0)], MOMENTUM.map(|i| m[i]), force, scale, 3);
        let parts = equilibrium_parts(rho, u);
        let uf3 = uf3(u, force);
        unrolled!(K < 27 => {
            let class = product_class([K / 9, K / 3 % 3, K % 3]);
            if !matches!(class, RateClass::Conserved | RateClass::Bulk) {
                let wm = const { product_weight_moments::<L, Q>(K) };
                let (n, source) = moment_non_equilibrium::<T, FORCED>(wm, m[K], parts, u, force, uf3, scale);
                m[K] = self.rate(class).mul_add(n, m[K]);
                if FORCED {
                    m[K] += source;
                }
            }
        });
        let mut n = [T::ZERO; 3];
        let mut source = [T::ZERO; 3];
        unrolled!(axis A < 3 => {
            let wm = const { product_weight_moments::<L, Q>(NORMAL[A]) };
            (n[A], source[A]) = moment_non_equilibrium::<T, FORCED>(wm, m[NORMAL[A]], parts, u, force, uf3, scale);
        });
        let mean = third * (n[0] + n[1] + n[2]);
        unrolled!(axis A < 3 => {
            m[NORMAL[A]] += self.rates.shear.mul_add(n[A] - mean, self.rates.bulk * mean);
            if FORCED {
                m[NORMAL[A]] += source[A];
                m[MOMENTUM[A]] = force[A].mul_add(scale, m[MOMENTUM[A]]);
            }
        });
        unrolled!(K < 27 => {
            const N: [f64; 3] = [1.0 / 3.0, 0.5, 1.0 / 6.0];
            m[K] = m[K] * T::from_f64(N[K / 9] * N[K / 3 % 3] * N[K % 3]);
        });
        unrolled!(axis AXIS < 3 => {
            chimera::pass(&mut m, AXIS, |v, _| {
                let even = v[0] + v[2];
                [even - v[1], two.mul_add(-v[2], v[0]), even + v[1]]
            });
        });
        *f = chimera::scatter::<L, Q, T>(&m);
        (rho, u)
    }
}

/// Whether [`Mrt::relax_by_matrix`] corrects BGK's update of a moment of
/// this class: the conserved moments are not relaxed (their part of `n` is
/// zero) and the shear moments relax at BGK's rate.
const fn corrected(class: RateClass) -> bool {
    !matches!(class, RateClass::Conserved | RateClass::Shear)
}

/// The class of the D3Q27 product with exponents `e` (its row in
/// [`tensor_product`]; the three normal second-order products, which mix
/// into trace and deviators, are `Bulk`).
const fn product_class(e: [usize; 3]) -> RateClass {
    let (mut ones, mut twos) = (0, 0);
    let mut a = 0;
    while a < 3 {
        match e[a] {
            1 => ones += 1,
            2 => twos += 1,
            _ => {}
        }
        a += 1;
    }
    match (ones, twos) {
        (0, 0) | (1, 0) => RateClass::Conserved,
        (2, 0) => RateClass::Shear,
        (0, 1) => RateClass::Bulk,
        (1, 1) | (3, 0) => RateClass::Flux,
        (0, 2) | (2, 1) => RateClass::Fourth,
        _ => RateClass::Ghost,
    }
}

impl<T: Real> Collision<T> for Mrt<T> {
    #[inline(always)]
    fn collide<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        if L::D == 3 && is_tensor_product(&L::C, L::D) {
            self.relax_in_moments::<L, Q, FORCED>(f, force, scale)
        } else if classes::is_d3q19::<L, Q>() {
            self.relax_by_classes::<L, Q, FORCED>(f, force, scale)
        } else {
            self.relax_by_matrix::<L, Q, FORCED>(f, force, scale)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collision::non_equilibrium;
    use crate::lattice::{D2Q9, D3Q19, D3Q27};

    fn orthogonal<L: Lattice<Q>, const Q: usize>() {
        let b = L::MOMENTS;
        for k in 0..Q {
            assert!(b.norm(k) > 0, "{} row {k} is zero", L::NAME);
            for l in 0..k {
                let dot: i32 = (0..Q).map(|i| b.rows[k][i] * b.rows[l][i]).sum();
                assert_eq!(dot, 0, "{}: rows {k} and {l} are not orthogonal", L::NAME);
            }
        }
        // The conserved rows are exactly density and momentum, and the
        // second-order moments c_a c_b lie in the span of the conserved,
        // shear and bulk rows (so that those rates alone set the viscosity).
        let conserved: usize = b.class.iter().filter(|&&c| c == RateClass::Conserved).count();
        assert_eq!(conserved, 1 + L::D, "{}", L::NAME);
        for a in 0..L::D {
            for c in a..L::D {
                let v: [f64; Q] = core::array::from_fn(|i| (L::C[i][a] * L::C[i][c]) as f64);
                let mut rest = v;
                for k in 0..Q {
                    if matches!(b.class[k], RateClass::Conserved | RateClass::Shear | RateClass::Bulk) {
                        let proj: f64 = (0..Q).map(|i| b.rows[k][i] as f64 * v[i]).sum::<f64>() / b.norm(k) as f64;
                        for i in 0..Q {
                            rest[i] -= proj * b.rows[k][i] as f64;
                        }
                    }
                }
                assert!(rest.iter().all(|r| r.abs() < 1e-12), "{}: c_{a} c_{c} leaves {rest:?}", L::NAME);
            }
        }
    }

    /// Every basis's update (D2Q9 and D3Q19: BGK plus corrections; D3Q27:
    /// relaxed in moment space; the moments of the equilibrium and the
    /// source in closed form) is the plain `f + M^T diag(s / |M_k|^2) M n +
    /// S`, forced or not, at the published rates, a different one for each
    /// class (a moment in the wrong class would show). Within round-off: the corrections are
    /// of the non-equilibrium size (f64: 1e-15); D3Q27 takes the whole
    /// populations through 27-term sums with coefficients up to |M|max and
    /// back, `4 Q |M|max^2` ulp of their size.
    fn collide_is_the_full_transform<L: Lattice<Q>, const Q: usize>() {
        let mrt = Mrt::published(0.53, L::NAME);
        let force = [2e-4, -1e-4, if L::D == 3 { 3e-4 } else { 0.0 }];
        let mut start = crate::cell::equilibrium::<L, Q, f64>(1.03, [0.05, -0.02, if L::D == 3 { 0.04 } else { 0.0 }]);
        for i in 0..Q {
            start[i] += 2e-3 * ((i * 7 % 5) as f64 - 2.0) * L::W[i];
        }
        for forced in [false, true] {
            let mut f = start;
            let mut want = start;
            if forced {
                mrt.collide::<L, Q, true>(&mut f, force, 1.0);
                let c = non_equilibrium::<L, Q, f64, true>(&want, force, 1.0);
                let d = mrt.relax_by_full_matrix::<L, Q>(&c.n);
                for i in 0..Q {
                    want[i] += d[i] + c.source[i];
                }
            } else {
                mrt.collide::<L, Q, false>(&mut f, [0.0; 3], 1.0);
                let c = non_equilibrium::<L, Q, f64, false>(&want, [0.0; 3], 1.0);
                let d = mrt.relax_by_full_matrix::<L, Q>(&c.n);
                for i in 0..Q {
                    want[i] += d[i];
                }
            }
            let size = start.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let m_max = L::MOMENTS.rows.iter().flatten().map(|m| m.abs()).max().unwrap() as f64;
            let bound = if Q == 27 { 4.0 * Q as f64 * m_max * m_max * f64::EPSILON * size } else { 1e-15 };
            for i in 0..Q {
                assert!(
                    (f[i] - want[i]).abs() < bound,
                    "{} forced {forced} population {i}: {} vs {}",
                    L::NAME,
                    f[i],
                    want[i]
                );
            }
        }
    }

    #[test]
    fn every_basis_relaxes_as_the_full_transform() {
        collide_is_the_full_transform::<D2Q9, 9>();
        collide_is_the_full_transform::<D3Q19, 19>();
        collide_is_the_full_transform::<D3Q27, 27>();
    }

    fn rows_have_a_parity<L: Lattice<Q>, const Q: usize>() {
        let b = L::MOMENTS;
        for k in 0..Q {
            let sign = if b.parity(k) == 0 { 1 } else { -1 };
            for a in 0..Q {
                let o = crate::lattice::opposite(a);
                assert_eq!(b.rows[k][o], sign * b.rows[k][a], "{} row {k} velocity {a}", L::NAME);
            }
        }
    }

    #[test]
    fn bases_are_orthogonal_and_separate_the_stress() {
        rows_have_a_parity::<D2Q9, 9>();
        rows_have_a_parity::<D3Q19, 19>();
        rows_have_a_parity::<D3Q27, 27>();
        orthogonal::<D2Q9, 9>();
        orthogonal::<D3Q19, 19>();
        orthogonal::<D3Q27, 27>();
    }
}
