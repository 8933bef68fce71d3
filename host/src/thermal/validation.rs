//! The thermal model against hydrodynamic stability theory: the growth of
//! one Rayleigh–Taylor mode, and the onset of Rayleigh–Bénard convection
//! between walls at fixed temperatures. The tests run them on the CPU;
//! `lbm validate` on the backend it is given ([`checks`]).
//!
//! Both compare with the linearized Boussinesq equations of the model's gas
//! (Chandrasekhar 1961, ch. II and X), in the form Spiegel & Veronis (1960)
//! give for a compressible ideal gas: the temperature perturbation is
//! advected by the base gradient plus the adiabatic one `g / c_p`. For one
//! Fourier mode `cos(k x)` of the vertical velocity `v(y)` and temperature
//! perturbation `theta(y)`, with `L = d^2/dy^2 - k^2`,
//!
//! `d(L v)/dt = nu L (L v) - k^2 (g / T_ref) theta`,
//! `d theta/dt = kappa L theta - v (dT_b/dy + g / c_p)`,
//! `dT_b/dt = kappa d^2 T_b/dy^2`,
//!
//! between no-slip walls held at fixed temperatures (`v = dv/dy = theta = 0`).
//! `LinearMode` integrates them in time from the lattice run's own
//! initial state, so the theory and the model start alike and are read the
//! same way: the amplitude of the mode of `v` over the lattice rows, and
//! its logarithmic growth rate over the same window of steps.
//!
//! The model's gas (`p = rho T`, `gamma = 2` in two dimensions, so `c_p =
//! 2` per unit mass) has kinematic viscosity `nu = (tau - 1/2) T` and, its
//! Prandtl number being 1, thermal diffusivity `kappa = nu` (what
//! `tests.rs` measures). The diffuse walls replace every population
//! entering the three rows next to them, which holds the first and last
//! rows at the walls' temperatures: the walls lie on those rows (the
//! Bénard runs measure it), and `ny` rows hold a fluid `ny - 1` sites deep.
//! (The Rayleigh–Taylor theory puts them half a site further out, which
//! does not matter there: its mode has fallen to `e^-pi` at the walls.)

use super::case::ThermalCase;
use super::*;
use crate::validation::Check;
use kernels_gpu::thermal::d2q37::GAMMA;
use std::f64::consts::PI;

/// Specific heat at constant pressure of the model's gas per unit mass
/// (`k_B / m = 1`): `gamma / (gamma - 1) = 2`.
const CP: f64 = GAMMA / (GAMMA - 1.0);

/// The coefficients of [`LinearMode`]'s equations.
#[derive(Clone, Copy, Debug)]
struct Physics {
    /// Wave number of the mode.
    k: f64,
    /// Kinematic viscosity.
    nu: f64,
    /// Thermal diffusivity.
    kappa: f64,
    /// Buoyancy per unit of temperature perturbation, `g / T_ref` (`g alpha`
    /// of an ideal gas, `alpha = 1 / T`).
    buoyancy: f64,
    /// Adiabatic temperature gradient `g / c_p` (0 leaves it out).
    lapse: f64,
}

/// Vorticity `L v`, temperature perturbation and base temperature at the
/// grid's interior points.
type Fields = [Vec<f64>; 3];

/// One Fourier mode of the linearized Boussinesq equations (see the module
/// documentation) on a grid of `per_row` points per lattice row between
/// walls at `y = -1/2` and `y = rows - 1/2`, integrated in time by
/// fourth-order Runge–Kutta. The vertical velocity comes from the vorticity
/// `L v` by a tridiagonal solve with `v = 0` at the walls; no slip, `dv/dy
/// = 0`, sets the vorticity at the walls (Thom's formula `L v = 2 v_1 /
/// h^2`).
struct LinearMode {
    physics: Physics,
    /// Lattice rows.
    rows: usize,
    /// Grid points per lattice row (even: the rows fall on grid points).
    per_row: usize,
    /// Grid spacing, `1 / per_row`.
    h: f64,
    /// Base temperatures of the bottom and top walls.
    walls: [f64; 2],
    /// The fields at the interior points `y_j = -1/2 + j h`, `j = 1 ..
    /// rows per_row - 1` (index `j - 1`).
    state: Fields,
    /// Pivots of the forward elimination of `L` (Thomas algorithm).
    pivots: Vec<f64>,
    /// Upper diagonal of the eliminated `L` over the pivots.
    upper: Vec<f64>,
}

impl LinearMode {
    /// The mode at rest with base temperature `base(y)` and temperature
    /// perturbation `theta(y)`.
    fn new(
        physics: Physics,
        rows: u32,
        per_row: usize,
        walls: [f64; 2],
        base: impl Fn(f64) -> f64,
        theta: impl Fn(f64) -> f64,
    ) -> Self {
        assert!(per_row >= 2 && per_row.is_multiple_of(2), "rows must fall on grid points");
        let (rows, h) = (rows as usize, 1.0 / per_row as f64);
        let n = rows * per_row - 1;
        let y = |i: usize| -0.5 + (i + 1) as f64 * h;
        let (off, diagonal) = (1.0 / (h * h), -2.0 / (h * h) - physics.k * physics.k);
        let (mut pivots, mut upper) = (vec![0.0; n], vec![0.0; n]);
        for i in 0..n {
            pivots[i] = if i == 0 { diagonal } else { diagonal - off * upper[i - 1] };
            upper[i] = off / pivots[i];
        }
        let state = [vec![0.0; n], (0..n).map(|i| theta(y(i))).collect(), (0..n).map(|i| base(y(i))).collect()];
        Self { physics, rows, per_row, h, walls, state, pivots, upper }
    }

    /// The vertical velocity of the vorticity `w`: `L v = w`, `v = 0` at the walls.
    fn velocity(&self, w: &[f64]) -> Vec<f64> {
        let (n, off) = (w.len(), 1.0 / (self.h * self.h));
        let mut v = vec![0.0; n];
        for i in 0..n {
            let below = if i == 0 { 0.0 } else { v[i - 1] };
            v[i] = (w[i] - off * below) / self.pivots[i];
        }
        for i in (0..n - 1).rev() {
            v[i] -= self.upper[i] * v[i + 1];
        }
        v
    }

    /// Time derivatives of the fields `s`.
    fn rates(&self, s: &Fields) -> Fields {
        let Physics { k, nu, kappa, buoyancy, lapse } = self.physics;
        let (w, theta, base) = (&s[0][..], &s[1][..], &s[2][..]);
        let (n, h2, k2) = (w.len(), self.h * self.h, k * k);
        let v = self.velocity(w);
        // Thom: the wall's vorticity with v = 0 there and dv/dy = 0 (the
        // point below mirrors the one above).
        let (w_bottom, w_top) = (2.0 * v[0] / h2, 2.0 * v[n - 1] / h2);
        // Neighbours of point i, the walls' values past the ends.
        let around = |f: &[f64], i: usize, bottom: f64, top: f64| {
            (if i == 0 { bottom } else { f[i - 1] }, if i + 1 == n { top } else { f[i + 1] })
        };
        let mut out: Fields = std::array::from_fn(|_| vec![0.0; n]);
        for i in 0..n {
            let (wb, wt) = around(w, i, w_bottom, w_top);
            out[0][i] = nu * ((wb - 2.0 * w[i] + wt) / h2 - k2 * w[i]) - k2 * buoyancy * theta[i];
            let (tb, tt) = around(theta, i, 0.0, 0.0);
            let (bb, bt) = around(base, i, self.walls[0], self.walls[1]);
            let gradient = (bt - bb) / (2.0 * self.h) + lapse;
            out[1][i] = kappa * ((tb - 2.0 * theta[i] + tt) / h2 - k2 * theta[i]) - v[i] * gradient;
            out[2][i] = kappa * (bb - 2.0 * base[i] + bt) / h2;
        }
        out
    }

    /// Advances `steps` time steps of 1 (a lattice step; stable while `4
    /// nu / h^2` and `4 kappa / h^2` stay below about 2.7).
    fn advance(&mut self, steps: u64) {
        let shifted = |s: &Fields, r: &Fields, dt: f64| -> Fields {
            std::array::from_fn(|c| s[c].iter().zip(&r[c]).map(|(a, b)| a + dt * b).collect())
        };
        for _ in 0..steps {
            let s = &self.state;
            let r1 = self.rates(s);
            let r2 = self.rates(&shifted(s, &r1, 0.5));
            let r3 = self.rates(&shifted(s, &r2, 0.5));
            let r4 = self.rates(&shifted(s, &r3, 1.0));
            for c in 0..3 {
                for i in 0..self.state[c].len() {
                    self.state[c][i] += (r1[c][i] + 2.0 * r2[c][i] + 2.0 * r3[c][i] + r4[c][i]) / 6.0;
                }
            }
        }
    }

    /// Root mean square over the lattice rows of the vertical velocity, the
    /// measure [`uy_mode_amplitude`] takes of a lattice run.
    fn amplitude(&self) -> f64 {
        let v = self.velocity(&self.state[0]);
        // Row r is the grid point j = per_row (r + 1/2), index j - 1.
        let sum: f64 = (0..self.rows).map(|r| v[self.per_row * r + self.per_row / 2 - 1].powi(2)).sum();
        (sum / self.rows as f64).sqrt()
    }
}

/// Complex amplitude of wave number `k` of `values(x)`, `x` in `0..n`.
pub(super) fn mode(n: usize, k: f64, values: impl Fn(usize) -> f64) -> (f64, f64) {
    (0..n).fold((0.0, 0.0), |(re, im), x| {
        let v = values(x);
        (re + v * (k * x as f64).cos(), im - v * (k * x as f64).sin())
    })
}

/// Root mean square over the rows of the amplitude of the mode `cos(k x +
/// phase)` of the vertical velocity: `[sum_y |(2 / nx) sum_x uy e^{-i k
/// x}|^2 / ny]^(1/2)`.
fn uy_mode_amplitude(f: &ThermalFields, k: f64) -> f64 {
    let (nx, ny) = (f.nx as usize, f.ny as usize);
    let sum: f64 = (0..ny)
        .map(|y| {
            let (re, im) = mode(nx, k, |x| f.uy[y * nx + x]);
            (re * re + im * im) * (2.0 / nx as f64).powi(2)
        })
        .sum();
    (sum / ny as f64).sqrt()
}

/// Slope of the least-squares line through `(t, y)`.
pub(super) fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (st, sy) = points.iter().fold((0.0, 0.0), |(a, b), &(t, y)| (a + t, b + y));
    let (mt, my) = (st / n, sy / n);
    let num: f64 = points.iter().map(|&(t, y)| (t - mt) * (y - my)).sum();
    let den: f64 = points.iter().map(|&(t, _)| (t - mt) * (t - mt)).sum();
    num / den
}

/// Logarithmic growth rate over the steps `window.0 ..= window.1`: the
/// least-squares slope of `ln a` at every `every` steps, where
/// `advance_then_amplitude(n)` advances `n` steps and gives the amplitude
/// `a` (called first with `window.0`, from step 0).
fn growth_rate(window: (u64, u64), every: u64, mut advance_then_amplitude: impl FnMut(u64) -> f64) -> f64 {
    let mut points = vec![(window.0 as f64, advance_then_amplitude(window.0).ln())];
    let mut t = window.0;
    while t + every <= window.1 {
        t += every;
        points.push((t as f64, advance_then_amplitude(every).ln()));
    }
    slope(&points)
}

/// The lattice run's [`growth_rate`] of the mode `k` of the vertical velocity.
fn measured_growth_rate(solver: &mut ThermalSolver, k: f64, window: (u64, u64), every: u64) -> Result<f64> {
    let mut failed = None;
    let rate = growth_rate(window, every, |n| {
        let fields = solver.step(n).and_then(|_| solver.fields());
        match fields {
            Ok(f) => uy_mode_amplitude(&f, k),
            Err(e) => {
                failed.get_or_insert(e);
                f64::NAN
            }
        }
    });
    failed.map_or(Ok(rate), Err)
}

/// The theory's [`growth_rate`].
fn theory_growth_rate(mode: &mut LinearMode, window: (u64, u64), every: u64) -> f64 {
    growth_rate(window, every, |n| {
        mode.advance(n);
        mode.amplitude()
    })
}

// ---------------------------------------------------------------------------
// Rayleigh–Taylor

/// Sites along x: one wavelength of the mode.
const RT_WAVELENGTH: u32 = 128;
/// Sites along y: the walls are half a wavelength from the interface, where
/// the mode has fallen to `e^-pi`.
const RT_HEIGHT: u32 = 128;
/// Relaxation time (as `cases/rayleigh_taylor.toml`): `nu = kappa = 0.0349`.
const RT_TAU: f64 = 0.55;
/// Atwood number (as `cases/rayleigh_taylor.toml`).
const RT_ATWOOD: f64 = 0.05;
/// Gravity: `g / (k T0) = 0.012` (the layers' scale height is 85 times
/// `1 / k`), so compressibility beyond the adiabatic gradient is negligible.
const RT_GRAVITY: f64 = 4e-4;
/// `tanh` width of the interface, sites.
const RT_WIDTH: f64 = 2.0;
/// Amplitude of the interface's displacement, sites: by the end of the
/// window the mode's temperature perturbation over the interface's gradient
/// is about one site, `k eta ~ 0.04`, and the mode stays linear.
const RT_AMPLITUDE: f64 = 0.05;
/// Steps over which the growth rate is measured: from about `2 / sigma_0`,
/// when the decaying solutions the start excites have died out, to about
/// `6 / sigma_0` (`sigma_0 = sqrt(At g k)`, `1 / sigma_0 = 1009` steps).
const RT_WINDOW: (u64, u64) = (2000, 6000);
/// Steps between measurements.
const RT_EVERY: u64 = 50;

/// The single-mode run as a case file gives it (so the initial state is
/// `case.rs`'s: two layers at `T0 (1 -+ At)` joined by a `tanh`, each
/// column in hydrostatic balance, walls at the layers' temperatures; one
/// tile, in f64).
fn rayleigh_taylor_case() -> ThermalCase {
    let text = format!(
        "model = \"d2q37\"\n\
         [simulation]\nsize = [{}, {}]\nprecision = \"f64\"\nsteps = {}\ntau = {:?}\n\
         [rayleigh_taylor]\natwood = {:?}\ntemperature = {:?}\ngravity = {:?}\ninterface = 0.5\n\
         width = {:?}\namplitude = {:?}\nwavelengths = [{:?}]\n",
        RT_WAVELENGTH,
        RT_HEIGHT,
        RT_WINDOW.1,
        RT_TAU,
        RT_ATWOOD,
        THETA0,
        RT_GRAVITY,
        RT_WIDTH,
        RT_AMPLITUDE,
        RT_WAVELENGTH as f64,
    );
    toml::from_str(&text).expect("the Rayleigh-Taylor case")
}

/// The linear theory of [`rayleigh_taylor_case`]'s start: base temperature
/// `T0 (1 - At tanh((y - h0) / w))` and the perturbation of an interface
/// displaced by `a`, `theta = -a dT_b/dy`, at rest; viscosity, diffusivity
/// and the adiabatic gradient of the run (`lapse: true`), or `kappa` and
/// `lapse` set to zero, the base then frozen.
fn rayleigh_taylor_theory(kappa: f64, lapse: bool, width: f64) -> LinearMode {
    let (at, t0, h0) = (RT_ATWOOD, THETA0, 0.5 * RT_HEIGHT as f64);
    let physics = Physics {
        k: 2.0 * PI / RT_WAVELENGTH as f64,
        nu: (RT_TAU - 0.5) * t0,
        kappa,
        buoyancy: RT_GRAVITY / t0,
        lapse: if lapse { RT_GRAVITY / CP } else { 0.0 },
    };
    LinearMode::new(
        physics,
        RT_HEIGHT,
        2,
        [t0 * (1.0 + at), t0 * (1.0 - at)],
        move |y| t0 * (1.0 - at * ((y - h0) / width).tanh()),
        move |y| RT_AMPLITUDE * t0 * at / width / ((y - h0) / width).cosh().powi(2),
    )
}

/// Growth rate of a sharp interface between two deep layers of the same
/// kinematic viscosity `nu`, Boussinesq (Chandrasekhar 1955; 1961, ch. X,
/// two uniform fluids of equal kinematic viscosity, in the limit `alpha_1 =
/// alpha_2 = 1/2` of nearly equal densities): the root `sigma > 0` of
///
/// `sigma^2 = At g k (1 - k / q)`, `q = sqrt(k^2 + sigma / nu)`.
///
/// Derivation: on each side of the interface `y = 0`, `(sigma - nu L) L v
/// = 0` gives the even solution `v = A e^{-k|y|} + B e^{-q|y|}`; `dv/dy`
/// continuous at 0 gives `B = -k A / q`; the buoyancy of the displaced
/// interface, `2 At g eta delta(y)` with `sigma eta = v(0)`, makes the jump
/// of `nu d^3v/dy^3`, `2 k A sigma`, equal `2 k^2 At g v(0) / sigma`. With
/// `y = q / k` it reads `y (y + 1)^2 (y - 1) = At g / (k^3 nu^2)`, the
/// form of Chandrasekhar's characteristic equation; for `nu -> 0`,
/// `sigma^2 = At g k` (Rayleigh 1883; Taylor 1950).
/// Bisection: the left side minus the right is negative for small `sigma`
/// and positive at `sqrt(At g k)`.
fn viscous_rayleigh_taylor_rate(atwood: f64, g: f64, k: f64, nu: f64) -> f64 {
    let excess = |s: f64| s * s - atwood * g * k * (1.0 - k / (k * k + s / nu).sqrt());
    let (mut lo, mut hi) = (0.0, (atwood * g * k).sqrt());
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if excess(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Runs a single Rayleigh–Taylor mode of wavelength 128 sites, Atwood
/// number 0.05, `tau = 0.55`, on `backend`, and measures its growth rate
/// and linear theory's (the test asks them to agree within 5%).
///
/// Theory. A sharp interface between inviscid layers grows at `sigma_0 =
/// sqrt(At g k)` (Rayleigh 1883; Taylor 1950); viscosity lowers this to the
/// root of Chandrasekhar's relation (`viscous_rayleigh_taylor_rate`).
/// Here the layers are one gas, and heat diffuses across the interface as
/// fast as momentum (Prandtl 1): over the `6 / sigma_0` steps of the run the
/// interface thickens to `sqrt(2 kappa t) ~ 20` sites, `k delta ~ 1`, which
/// lowers the growth rate while it is measured (Duff, Harlow & Hirt 1962,
/// Phys. Fluids 5, 417: diffusion widens the interface and slows its growth
/// as it does, so the rate is not one normal mode's). The theory is the
/// linearized Boussinesq equations with viscosity, diffusivity, the diffusing base
/// profile, the walls and the adiabatic gradient of the isothermal layers
/// (their buoyancy frequency `N^2 = g^2 / (c_p T0)`, about a tenth of
/// `sigma_0^2`; Spiegel & Veronis 1960), integrated from the lattice run's
/// initial state (`LinearMode`). Left out: the gas's compressibility
/// beyond that (`g / (k c_s^2)` and `sigma^2 / (k c_s)^2` below 1%) and its
/// departures from Boussinesq (`At = 0.05`: viscosity and diffusivity vary
/// by 5% across the layers).
///
/// The run's rate over the window is about `0.55 sigma_0`, against
/// `0.83 sigma_0` for a sharp viscous interface, so the diffusion of the
/// interface is what is being checked, along with the viscosity. Before
/// that, the integrator is checked against Chandrasekhar's relation: with
/// no diffusion and a thin, frozen interface it must give the sharp-
/// interface viscous rate within 2%.
pub fn rayleigh_taylor_growth(backend: BackendKind, ptx: &str) -> Result<RayleighTaylorGrowth> {
    let t0 = THETA0;
    let k = 2.0 * PI / RT_WAVELENGTH as f64;
    let nu = (RT_TAU - 0.5) * t0;
    let sigma_0 = (RT_ATWOOD * RT_GRAVITY * k).sqrt();
    let sigma_sharp = viscous_rayleigh_taylor_rate(RT_ATWOOD, RT_GRAVITY, k, nu);

    // The integrator against Chandrasekhar: no diffusion, no stratification,
    // a 1-site interface (k w = 0.05), the last two e-foldings of eight.
    let mut sharp = rayleigh_taylor_theory(0.0, false, 1.0);
    let end = (8.0 / sigma_sharp).round() as u64;
    let check = theory_growth_rate(&mut sharp, (end - (2.0 / sigma_sharp).round() as u64, end), RT_EVERY);

    let case = rayleigh_taylor_case();
    let sites = case.initial();
    let nx = RT_WAVELENGTH;
    let mut solver = ThermalSolver::new(case.config(), backend, ptx, |x, y| sites[(y * nx + x) as usize])?;
    let measured = measured_growth_rate(&mut solver, k, RT_WINDOW, RT_EVERY)?;
    let theory = theory_growth_rate(&mut rayleigh_taylor_theory(nu, true, RT_WIDTH), RT_WINDOW, RT_EVERY);
    Ok(RayleighTaylorGrowth { measured, theory, integrator_sharp: check, sharp: sigma_sharp, inviscid: sigma_0 })
}

/// What [`rayleigh_taylor_growth`] measures: growth rates per step.
#[derive(Clone, Copy, Debug)]
pub struct RayleighTaylorGrowth {
    /// The lattice run's, over the window.
    pub measured: f64,
    /// The linear theory's, over the same window.
    pub theory: f64,
    /// The theory's integrator for a sharp interface without diffusion.
    pub integrator_sharp: f64,
    /// Chandrasekhar's relation for that interface.
    pub sharp: f64,
    /// The inviscid sharp interface's, `sqrt(At g k)`.
    pub inviscid: f64,
}

impl RayleighTaylorGrowth {
    /// Relative error of the measured rate against the theory's.
    pub fn error(&self) -> f64 {
        self.measured / self.theory - 1.0
    }

    /// Relative error of the integrator against Chandrasekhar's relation.
    pub fn integrator_error(&self) -> f64 {
        self.integrator_sharp / self.sharp - 1.0
    }
}

#[cfg(test)]
#[test]
fn a_rayleigh_taylor_mode_grows_at_the_rate_of_linear_theory() {
    let r = rayleigh_taylor_growth(BackendKind::Cpu, "").unwrap();
    eprintln!(
        "sharp viscous interface: integrator {:.4e}, Chandrasekhar {:.4e}, error {:+.3}%",
        r.integrator_sharp,
        r.sharp,
        100.0 * r.integrator_error()
    );
    eprintln!(
        "Rayleigh-Taylor, steps {}..{}: measured {:.4e}, linear theory {:.4e} (error {:+.2}%); \
         inviscid {:.4e}; measured / sigma_0 = {:.3}",
        RT_WINDOW.0,
        RT_WINDOW.1,
        r.measured,
        r.theory,
        100.0 * r.error(),
        r.inviscid,
        r.measured / r.inviscid
    );
    assert!(r.integrator_error().abs() < 0.02, "integrator {r:?}");
    assert!(r.error().abs() < 0.05, "growth rate against linear theory: {r:?}");
}

// ---------------------------------------------------------------------------
// Rayleigh–Bénard

/// Depth of the fluid between the walls, sites. The diffuse walls of this
/// model replace every population entering the three rows next to them, so
/// the first and last rows sit at the walls' temperatures: the walls lie on
/// them, and the box has `ny = d + 1` rows. (The conduction profile of each
/// run checks this: it reaches the walls' temperatures there, within a
/// quarter of a site; [`BenardOnset::walls`].)
const RB_DEPTH: u32 = 32;
/// Sites along x: one wavelength, `k d = pi`, next to the critical `k_c d =
/// 3.117` (where the marginal Rayleigh number is within 0.01% of its minimum).
const RB_WIDTH: u32 = 2 * RB_DEPTH;
/// Relaxation time: `nu = kappa = 0.0209`. Small, so that the temperature
/// difference and gravity that make `Ra ~ 1700` stay small (`Ra` scales as
/// `g dT d^3 / (tau - 1/2)^2`), and the Knudsen number `~ (tau - 1/2)
/// c_s / d ~ 10^-3` leaves the walls' slip and temperature jump negligible.
const RB_TAU: f64 = 0.53;
/// Gravity: `g d / T0 = 0.009` (the density falls by 1% across the layer),
/// the adiabatic gradient `g / c_p` 4% of the applied one.
const RB_GRAVITY: f64 = 2e-4;
/// Temperature perturbation that starts the mode, `~ 10^-3` of `dT`.
const RB_SEED: f64 = 1e-4;
/// Steps between measurements.
const RB_EVERY: u64 = 100;

/// Thermal diffusion time `d^2 / kappa`, steps (48 904).
fn benard_diffusion_time() -> f64 {
    (RB_DEPTH as f64).powi(2) / ((RB_TAU - 0.5) * THETA0)
}

/// Steps over which the growth rate is measured: from `0.3 d^2 / kappa`,
/// when the other modes the start excites have decayed (in the theory the
/// rate has settled to 0.1% by `0.2 d^2 / kappa`; the conduction profile
/// relaxes at `pi^2 kappa / d^2`), to `0.75 d^2 / kappa`.
fn benard_window() -> (u64, u64) {
    let at = |f: f64| (f * benard_diffusion_time() / RB_EVERY as f64).round() as u64 * RB_EVERY;
    (at(0.3), at(0.75))
}

/// Temperatures of the bottom and top walls, about `T0`, for the Rayleigh
/// number `ra`:
///
/// `Ra = g alpha (dT - g d / c_p) d^3 / (nu kappa)`, `alpha = 1 / T0`,
///
/// with `d = ny - 1` (the walls on the first and last rows), `nu =
/// kappa = (tau - 1/2) T0` at the mean temperature, and the difference
/// `dT` less the adiabatic one `g d / c_p` (Spiegel & Veronis 1960: what
/// drives convection in a compressible gas is the excess over the adiabatic
/// gradient; Schwarzschild's criterion).
fn benard_walls(ra: f64) -> [f64; 2] {
    let (d, nu) = (RB_DEPTH as f64, (RB_TAU - 0.5) * THETA0);
    let dt = ra * nu * nu * THETA0 / (RB_GRAVITY * d.powi(3)) + RB_GRAVITY * d / CP;
    [THETA0 + 0.5 * dt, THETA0 - 0.5 * dt]
}

/// The conduction state at `ra` in hydrostatic balance, plus the seed
/// `RB_SEED sin(pi y / d) cos(k x)` of temperature at constant
/// pressure. With `T_b = T_bottom - G y`, `dp/dy = -p g / T_b`
/// gives `p = T0 (T_b / T0)^(g / G)` (pressure `T0` where `T_b = T0`).
fn benard_initial(ra: f64) -> impl Fn(u32, u32) -> (f64, [f64; 2], f64) + Sync {
    let [bottom, top] = benard_walls(ra);
    let d = RB_DEPTH as f64;
    let (gradient, k) = ((bottom - top) / d, 2.0 * PI / RB_WIDTH as f64);
    move |x, y| {
        let z = y as f64;
        let base = bottom - gradient * z;
        let p = THETA0 * (base / THETA0).powf(RB_GRAVITY / gradient);
        let t = base + RB_SEED * (PI * z / d).sin() * (k * x as f64).cos();
        (p / t, [0.0; 2], t)
    }
}

/// The linear theory's growth rate at `ra` over [`benard_window`], from
/// the same seed at rest (4 grid points per site of depth; its walls are at
/// `-1/2` and `d - 1/2` of its own coordinate).
fn benard_theory_rate(ra: f64) -> f64 {
    let [bottom, top] = benard_walls(ra);
    let d = RB_DEPTH as f64;
    let physics = Physics {
        k: 2.0 * PI / RB_WIDTH as f64,
        nu: (RB_TAU - 0.5) * THETA0,
        kappa: (RB_TAU - 0.5) * THETA0,
        buoyancy: RB_GRAVITY / THETA0,
        lapse: RB_GRAVITY / CP,
    };
    let mut mode = LinearMode::new(
        physics,
        RB_DEPTH,
        4,
        [bottom, top],
        move |y| bottom - (bottom - top) * (y + 0.5) / d,
        move |y| RB_SEED * (PI * (y + 0.5) / d).sin(),
    );
    theory_growth_rate(&mut mode, benard_window(), RB_EVERY)
}

/// The lattice run at `ra`: the growth rate of the mode over
/// [`benard_window`], and where the mean temperature profile in the bulk,
/// extended, reaches the bottom and the top walls' temperatures at the
/// window's start (rows).
fn benard_measured(ra: f64, backend: BackendKind, ptx: &str) -> Result<(f64, [f64; 2])> {
    let config = ThermalConfig {
        nx: RB_WIDTH,
        ny: RB_DEPTH + 1,
        tau: RB_TAU,
        gravity: [0.0, -RB_GRAVITY],
        walls: Some(benard_walls(ra)),
        fused: true,
        precision: ThermalPrecision::F64,
        tiling: Tiling::ONE,
    };
    let mut solver = ThermalSolver::new(config, backend, ptx, benard_initial(ra))?;
    let k = 2.0 * PI / RB_WIDTH as f64;
    let walls = benard_walls(ra);
    let (mut wall_rows, mut failed) = (None, None);
    let rate = growth_rate(benard_window(), RB_EVERY, |n| {
        let f = match solver.step(n).and_then(|_| solver.fields()) {
            Ok(f) => f,
            Err(e) => {
                failed.get_or_insert(e);
                return f64::NAN;
            }
        };
        if wall_rows.is_none() {
            // Mean temperature of each row, fitted away from the walls' three rows.
            let (nx, ny) = (f.nx as usize, f.ny as usize);
            let profile: Vec<(f64, f64)> = (3..ny - 3)
                .map(|y| (y as f64, f.temperature[y * nx..(y + 1) * nx].iter().sum::<f64>() / nx as f64))
                .collect();
            let b = slope(&profile);
            let n = profile.len() as f64;
            let a = profile.iter().map(|p| p.1 - b * p.0).sum::<f64>() / n;
            wall_rows = Some(walls.map(|t| (t - a) / b));
        }
        uy_mode_amplitude(&f, k)
    });
    match failed {
        Some(e) => Err(e),
        None => Ok((rate, wall_rows.unwrap_or([f64::NAN; 2]))),
    }
}

/// Runs convection between a hot bottom wall and a cold top one at the
/// Rayleigh numbers 1600 and 1800 on `backend` (the test asks the mode to
/// decay at the first and grow at the second, so that it sets in between): the critical `Ra_c = 1707.76` at
/// `k_c d = 3.117` of rigid, isothermal walls (Jeffreys 1928; Reid & Harris
/// 1958; Chandrasekhar 1961, ch. II).
///
/// At `Ra = 1600` a small roll of wavelength `2 d` must decay, at `Ra =
/// 1800` grow. Near onset the rate is `sigma ~ (Ra / Ra_c - 1) / tau_0`,
/// `tau_0 = 0.077 d^2 / kappa` at Prandtl 1 (Cross & Hohenberg 1993),
/// about `-0.8` and `+0.7 kappa / d^2`: over the window of `0.45 d^2 /
/// kappa` the mode's amplitude changes by a factor 1.4, many times what
/// the start's transients or sound waves leave in it. The linear theory's
/// rates, from `LinearMode` over the same window, and the onset they
/// interpolate to (which checks the integrator against `Ra_c`) are printed
/// with the measured ones.
///
/// `Ra = g alpha (dT - g d / c_p) d^3 / (nu kappa)` (`benard_walls`):
/// `d = ny - 1 = 32`, `tau = 0.53`, `g = 2 10^-4`, so `dT / T0 ~ 0.12`,
/// `g d / T0 ~ 0.009`. The two runs, 64 x 33 sites for 36 700 steps each,
/// go on two threads.
pub fn benard_onset(backend: BackendKind, ptx: &str) -> Result<BenardOnset> {
    let (below, above) = (1600.0, 1800.0);
    // Both runs start before either is waited for.
    let runs = std::thread::scope(|s| {
        let handles = [below, above].map(|ra| s.spawn(move || benard_measured(ra, backend, ptx)));
        handles.map(|h| h.join().expect("lattice run"))
    });
    let [low, high] = runs;
    let (low, high) = (low?, high?);
    Ok(BenardOnset {
        rayleigh: [below, above],
        measured: [low.0, high.0],
        theory: [benard_theory_rate(below), benard_theory_rate(above)],
        walls: [low.1, high.1],
    })
}

/// What [`benard_onset`] measures at two Rayleigh numbers.
#[derive(Clone, Copy, Debug)]
pub struct BenardOnset {
    /// The Rayleigh numbers, below and above the critical one.
    pub rayleigh: [f64; 2],
    /// The lattice runs' growth rates per step.
    pub measured: [f64; 2],
    /// The linear theory's.
    pub theory: [f64; 2],
    /// Where the bulk's conduction profile reaches the bottom and the top
    /// walls' temperatures (rows), in each run; the walls lie on rows 0
    /// and `d`.
    pub walls: [[f64; 2]; 2],
}

impl BenardOnset {
    /// The Rayleigh number where the straight line through `rates` crosses zero.
    pub fn onset(&self, rates: [f64; 2]) -> f64 {
        let [a, b] = self.rayleigh;
        a + (b - a) * rates[0] / (rates[0] - rates[1])
    }

    /// Whether the mode decays below and grows above.
    pub fn brackets_onset(&self) -> bool {
        self.measured[0] < 0.0 && self.measured[1] > 0.0
    }

    /// The largest distance of a wall found by the conduction profile from
    /// the row it lies on (sites).
    pub fn wall_offset(&self) -> f64 {
        let d = RB_DEPTH as f64;
        self.walls.iter().map(|w| w[0].abs().max((w[1] - d).abs())).fold(0.0, f64::max)
    }
}

/// The thermal checks of `lbm validate` on `backend`.
pub fn checks(backend: BackendKind, ptx: &str) -> Result<Vec<Check>> {
    let rt = rayleigh_taylor_growth(backend, ptx)?;
    let rb = benard_onset(backend, ptx)?;
    let onset = rb.onset(rb.measured);
    Ok(vec![
        Check {
            case: "D2Q37 Rayleigh-Taylor mode, growth rate vs linear theory".into(),
            value: rt.error(),
            criterion: "|.| < 0.05".into(),
            pass: rt.error().abs() < 0.05 && rt.integrator_error().abs() < 0.02,
        },
        Check {
            case: "D2Q37 Rayleigh-Benard, onset Ra (decays at 1600, grows at 1800)".into(),
            value: onset,
            criterion: "1600..1800".into(),
            pass: rb.brackets_onset() && rb.wall_offset() < 0.25,
        },
    ])
}

#[cfg(test)]
#[test]
fn convection_between_walls_sets_in_between_rayleigh_numbers_1600_and_1800() {
    let r = benard_onset(BackendKind::Cpu, "").unwrap();
    let window = benard_window();
    let theory_onset = r.onset(r.theory);
    let scale = benard_diffusion_time();
    for (i, ra) in r.rayleigh.into_iter().enumerate() {
        let [bottom, top] = benard_walls(ra);
        eprintln!(
            "Ra {ra}: growth rate {:+.4} kappa/d^2 (linear theory {:+.4}), steps {}..{}; walls' dT {:.5}, \
             their temperatures reached at rows {:.3} and {:.3} (walls on 0 and {RB_DEPTH})",
            r.measured[i] * scale,
            r.theory[i] * scale,
            window.0,
            window.1,
            bottom - top,
            r.walls[i][0],
            r.walls[i][1],
        );
    }
    eprintln!(
        "onset interpolated from the rates: measured Ra {:.1}, linear theory Ra {theory_onset:.1}, Ra_c 1707.76",
        r.onset(r.measured)
    );
    assert!((theory_onset / 1707.76 - 1.0).abs() < 0.01, "the integrator's onset {theory_onset} is not Ra_c = 1707.76");
    assert!(r.measured[0] < 0.0, "at Ra 1600 the mode grows at {} kappa/d^2", r.measured[0] * scale);
    assert!(r.measured[1] > 0.0, "at Ra 1800 the mode decays at {} kappa/d^2", r.measured[1] * scale);
    assert!(r.wall_offset() < 0.25, "the walls are not on the first and last rows: {:?}", r.walls);
}
