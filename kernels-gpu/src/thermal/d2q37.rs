//! The D2Q37 velocity set and its equilibrium (Philippi et al. 2006;
//! Sbragaglia et al. 2009; Scagliarini et al. 2010).
//!
//! 37 velocities in 8 shells reach up to 3 cells along an axis. Its weights
//! make a Gauss quadrature of degree 9 for the Maxwellian of temperature
//! [`THETA0`] in lattice units (`1 / r^2`, `r = 1.19697977...`): every moment
//! of the equilibrium up to order 4 is exact, which a thermal model needs
//! (the energy flux is a third-order moment, its relaxation a fourth-order
//! one). The weights below solve the nine quadrature conditions to 30 digits.
//!
//! Ordering as in [`crate::lattice`]: 0 is the rest population, and `(i,
//! i + 1)` with `i` odd are opposite ([`crate::lattice::opposite`]).

use crate::real::Real;

/// Number of velocities.
pub const Q: usize = 37;

/// Spatial dimension.
pub const D: usize = 2;

/// Discrete velocities (z component 0), shell by shell.
pub const C: [[i32; 3]; Q] = [
    [0, 0, 0],
    // |c|^2 = 1
    [1, 0, 0],
    [-1, 0, 0],
    [0, 1, 0],
    [0, -1, 0],
    // |c|^2 = 2
    [1, 1, 0],
    [-1, -1, 0],
    [1, -1, 0],
    [-1, 1, 0],
    // |c|^2 = 4
    [2, 0, 0],
    [-2, 0, 0],
    [0, 2, 0],
    [0, -2, 0],
    // |c|^2 = 5
    [2, 1, 0],
    [-2, -1, 0],
    [2, -1, 0],
    [-2, 1, 0],
    [1, 2, 0],
    [-1, -2, 0],
    [1, -2, 0],
    [-1, 2, 0],
    // |c|^2 = 8
    [2, 2, 0],
    [-2, -2, 0],
    [2, -2, 0],
    [-2, 2, 0],
    // |c|^2 = 9
    [3, 0, 0],
    [-3, 0, 0],
    [0, 3, 0],
    [0, -3, 0],
    // |c|^2 = 10
    [3, 1, 0],
    [-3, -1, 0],
    [3, -1, 0],
    [-3, 1, 0],
    [1, 3, 0],
    [-1, -3, 0],
    [1, -3, 0],
    [-1, 3, 0],
];

/// Number of shells (velocities of one `|c|`, up to symmetry).
pub const SHELLS: usize = 8;

/// Shell of each velocity.
pub const SHELL: [usize; Q] = {
    let mut shell = [0; Q];
    let mut i = 1;
    while i < Q {
        let c2 = C[i][0] * C[i][0] + C[i][1] * C[i][1];
        let mut k = 0;
        while SHELL_C2[k] != c2 {
            k += 1;
        }
        shell[i] = k;
        i += 1;
    }
    shell
};

/// `|c|^2` of each shell.
pub const SHELL_C2: [i32; SHELLS] = [0, 1, 2, 4, 5, 8, 9, 10];

/// Weight of each shell: the solution of the degree-9 quadrature
/// conditions (isotropic moments of orders 0 to 8 of a unit-variance
/// Gaussian at `c r`), with [`THETA0`]. The digits are the solution's;
/// f64 keeps the first 17.
#[allow(clippy::excessive_precision)]
pub const SHELL_W: [f64; SHELLS] = [
    0.233_150_669_132_352_502_286_506_704_067,
    0.107_306_091_542_219_002_412_464_287_183,
    0.057_667_859_888_794_882_030_069_215_393_3,
    0.014_208_216_158_450_750_264_698_942_344_1,
    0.005_353_049_000_513_775_232_731_501_662_19,
    0.001_011_937_592_673_575_475_410_908_506_64,
    0.000_245_301_027_757_717_345_465_916_643_268,
    0.000_283_414_252_994_198_217_400_525_294_195,
];

/// The quadrature's temperature in lattice units, `1 / r^2`: the
/// equilibrium is expanded around it, and the model is most accurate near it.
#[allow(clippy::excessive_precision)]
pub const THETA0: f64 = 0.697_953_322_019_683_088_238_409_055_389;

/// Weights of the velocities.
pub const W: [f64; Q] = {
    let mut w = [0.0; Q];
    let mut i = 0;
    while i < Q {
        w[i] = SHELL_W[SHELL[i]];
        i += 1;
    }
    w
};

/// Ratio of specific heats of the model's ideal gas, `(D + 2) / D`.
pub const GAMMA: f64 = (D as f64 + 2.0) / D as f64;

/// Density, velocity and temperature of the populations `f`: `rho = sum f`,
/// `rho u = sum f c`, `D rho T = sum f |c - u|^2`.
#[inline(always)]
pub fn moments<T: Real>(f: &[T; Q]) -> (T, [T; 2], T) {
    let (mut rho, mut jx, mut jy, mut e) = (T::ZERO, T::ZERO, T::ZERO, T::ZERO);
    for i in 0..Q {
        rho += f[i];
        jx = f[i].mul_add(T::from_f64(C[i][0] as f64), jx);
        jy = f[i].mul_add(T::from_f64(C[i][1] as f64), jy);
        e = f[i].mul_add(T::from_f64(SHELL_C2[SHELL[i]] as f64), e);
    }
    let inv = T::ONE / rho;
    let u = [jx * inv, jy * inv];
    let u2 = u[0].mul_add(u[0], u[1] * u[1]);
    let temperature = (e * inv - u2) * T::from_f64(1.0 / D as f64);
    (rho, u, temperature)
}

/// The equilibrium of density `rho`, velocity `u` and temperature `temp`:
/// the Hermite expansion of the Maxwellian to fourth order (Shan, Yuan and
/// Chen 2006, Eq. 35; Sbragaglia et al. 2009). In units of the quadrature
/// (`xi = c r`, `u r`, `theta = temp r^2`, `t = theta - 1`):
///
/// `feq_i = w_i rho [1 + xu + (xu^2 - u^2 + t (xi^2 - D)) / 2
///   + xu (xu^2 - 3 u^2 + 3 t (xi^2 - D - 2)) / 6
///   + (xu^4 - 6 xu^2 u^2 + 3 u^4 + 6 t (xu^2 (xi^2 - D - 4) + u^2 (D + 2 - xi^2))
///      + 3 t^2 (xi^4 - 2 (D + 2) xi^2 + D (D + 2))) / 24]`,
///
/// with `xu = xi . u`, evaluated as a quartic in `xu` whose coefficients
/// depend only on the shell.
#[inline(always)]
pub fn equilibrium<T: Real>(rho: T, u: [T; 2], temp: T) -> [T; Q] {
    // `xi . u r = c . u / THETA0` and `(u r)^2 = u . u / THETA0`.
    let inv = T::from_f64(1.0 / THETA0);
    let (ux, uy) = (u[0] * inv, u[1] * inv);
    let u2 = u[0].mul_add(ux, u[1] * uy);
    let t = temp.mul_add(T::from_f64(1.0 / THETA0), -T::ONE);
    let half = T::from_f64(0.5);
    let quarter = T::from_f64(0.25);
    // Shell-independent parts of the coefficients.
    let base0 = u2.mul_add(u2 * T::from_f64(0.125), T::ONE - half * u2);
    let base1 = T::ONE - half * u2;
    let base2 = half - quarter * u2;
    let tt = t * t;
    let tu = t * u2;
    let mut a = [[T::ZERO; 3]; SHELLS];
    for k in 0..SHELLS {
        let x2 = SHELL_C2[k] as f64 / THETA0;
        let a0 = tt.mul_add(
            T::from_f64((x2 * x2 - 8.0 * x2 + 8.0) / 8.0),
            tu.mul_add(T::from_f64((4.0 - x2) / 4.0), t.mul_add(T::from_f64((x2 - 2.0) / 2.0), base0)),
        );
        let a1 = t.mul_add(T::from_f64((x2 - 4.0) / 2.0), base1);
        let a2 = t.mul_add(T::from_f64((x2 - 6.0) / 4.0), base2);
        a[k] = [a0, a1, a2];
    }
    let mut feq = [T::ZERO; Q];
    for i in 0..Q {
        let [a0, a1, a2] = a[SHELL[i]];
        let xu = ux.mul_add(T::from_f64(C[i][0] as f64), uy * T::from_f64(C[i][1] as f64));
        let p = xu.mul_add(T::from_f64(1.0 / 24.0), T::from_f64(1.0 / 6.0));
        let p = p.mul_add(xu, a2);
        let p = p.mul_add(xu, a1);
        let p = p.mul_add(xu, a0);
        feq[i] = (T::from_f64(W[i]) * rho) * p;
    }
    feq
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::opposite;

    /// Raw moment `E[x^a]` of a normal variable of mean `m` and variance `v`.
    fn gaussian_moment(a: u32, m: f64, v: f64) -> f64 {
        let (mut sum, mut binom, mut dfact) = (0.0, 1.0, 1.0);
        let mut k = 0;
        while 2 * k <= a {
            if k > 0 {
                let n = a as f64;
                let j = 2.0 * k as f64;
                binom *= (n - j + 2.0) * (n - j + 1.0) / ((j - 1.0) * j);
                dfact *= j - 1.0;
            }
            sum += binom * m.powi((a - 2 * k) as i32) * v.powi(k as i32) * dfact;
            k += 1;
        }
        sum
    }

    #[test]
    fn velocities_pair_with_their_opposites_and_shells_are_whole() {
        for i in 1..Q {
            let j = opposite(i);
            assert_eq!([C[i][0], C[i][1]], [-C[j][0], -C[j][1]], "velocity {i}");
        }
        let mut count = [0; SHELLS];
        for i in 0..Q {
            count[SHELL[i]] += 1;
        }
        assert_eq!(count, [1, 4, 4, 4, 8, 4, 4, 8]);
        assert_eq!(crate::lattice::max_speed(&C), 3);
    }

    /// The weights integrate the isotropic moments of a Gaussian of
    /// variance `THETA0` exactly up to order 8 (odd ones vanish by symmetry).
    #[test]
    fn weights_are_a_degree_nine_quadrature() {
        for a in 0..=9u32 {
            for b in 0..=(9 - a) {
                let sum: f64 =
                    (0..Q).map(|i| W[i] * (C[i][0] as f64).powi(a as i32) * (C[i][1] as f64).powi(b as i32)).sum();
                let exact = gaussian_moment(a, 0.0, THETA0) * gaussian_moment(b, 0.0, THETA0);
                assert!((sum - exact).abs() <= 1e-14 * exact.abs().max(1.0), "moment x^{a} y^{b}: {sum} != {exact}");
            }
        }
    }

    /// Every moment of order 0 to 4 of the equilibrium equals the
    /// Maxwellian's, to round-off, over a range of velocities and
    /// temperatures; the moments computed back give the fields.
    #[test]
    fn equilibrium_has_the_maxwellian_moments_to_fourth_order() {
        for &(rho, ux, uy, temp) in &[
            (1.0, 0.0, 0.0, THETA0),
            (1.0, 0.1, -0.05, 0.7),
            (1.3, 0.2, 0.15, 0.9),
            (0.8, -0.3, 0.0, 0.5),
            (2.0, 0.05, 0.4, 1.2),
        ] {
            let feq = equilibrium::<f64>(rho, [ux, uy], temp);
            for a in 0..=4u32 {
                for b in 0..=(4 - a) {
                    let sum: f64 = (0..Q)
                        .map(|i| feq[i] * (C[i][0] as f64).powi(a as i32) * (C[i][1] as f64).powi(b as i32))
                        .sum();
                    let exact = rho * gaussian_moment(a, ux, temp) * gaussian_moment(b, uy, temp);
                    // Terms reach |c|^4 ~ 100 times the largest population.
                    assert!((sum - exact).abs() <= 1e-13 * rho, "x^{a} y^{b} at {ux},{uy},{temp}: {sum} != {exact}");
                }
            }
            let (r, u, t) = moments(&feq);
            assert!((r - rho).abs() <= 1e-15 * rho);
            assert!((u[0] - ux).abs() <= 1e-14 && (u[1] - uy).abs() <= 1e-14);
            assert!((t - temp).abs() <= 1e-14, "{t} != {temp}");
            // Single precision computes the same populations to its round-off.
            let f32s = equilibrium::<f32>(rho as f32, [ux as f32, uy as f32], temp as f32);
            for i in 0..Q {
                assert!((f32s[i] as f64 - feq[i]).abs() <= 1e-6 * rho, "f32 population {i}");
            }
        }
    }

    #[test]
    fn the_gas_has_the_ratio_of_specific_heats_of_two_dimensions() {
        assert_eq!(GAMMA, 2.0);
        // THETA0 = 1 / r^2 with the r of Sbragaglia et al. (2009).
        assert!((THETA0 * 1.196_979_770_393_074_4_f64.powi(2) - 1.0).abs() < 1e-15);
    }
}
