//! Built-in validation cases with analytic or published references. Each
//! returns measured numbers; the tests (and users) judge them.

use crate::domain::{Domain, FaceBoundary, OpenScheme};
use crate::error::Result;
use crate::fields::Fields;
use crate::reference::Profile;
use crate::solver::{BackendKind, CollisionModel, Initial, LatticeKind, Precision, Solver, SolverConfig};
use kernels_gpu::{Dims, Streaming};
use std::f64::consts::PI;

use crate::cases::duct_faces;
pub use crate::cases::{cavity_config, duct_config, obstacle_duct_config, tau_for_viscosity};

/// Builds solvers for a backend (the `lbm` crate passes its embedded PTX).
pub type Factory<'a> = &'a dyn Fn(SolverConfig, BackendKind) -> Result<Box<dyn Solver>>;

/// Body-force-driven channel between two resting walls (y faces), periodic in x (and z).
#[derive(Clone, Debug)]
pub struct PoiseuilleResult {
    /// Fluid cells across the channel.
    pub width: u32,
    /// Relative L2 error of u_x against the analytic parabola.
    pub l2_error: f64,
}

/// Runs the Poiseuille channel of `width` fluid cells, peak velocity `u_max`,
/// to steady state, with BGK.
pub fn poiseuille(
    make: Factory,
    backend: BackendKind,
    lattice: LatticeKind,
    precision: Precision,
    width: u32,
    tau: f64,
    u_max: f64,
) -> Result<PoiseuilleResult> {
    let spec = PoiseuilleSpec { width, tau, u_max, collision: CollisionModel::Bgk, e_foldings: 25.0 };
    poiseuille_with(make, backend, lattice, precision, spec)
}

/// A force-driven Poiseuille channel (see [`poiseuille_with`]).
#[derive(Clone, Copy, Debug)]
pub struct PoiseuilleSpec {
    /// Fluid cells across.
    pub width: u32,
    /// Relaxation time (of the even moments, for TRT).
    pub tau: f64,
    /// Peak velocity of the analytic profile.
    pub u_max: f64,
    /// Collision operator.
    pub collision: CollisionModel,
    /// How long to run, in decay times `H^2 / (nu pi^2)` of the slowest mode.
    pub e_foldings: f64,
}

impl PoiseuilleSpec {
    /// Steps per decay time of the slowest mode, `H^2 / (nu pi^2)`: also the
    /// factor by which round-off injected each step piles up at steady state.
    pub fn steps_per_e_folding(&self) -> f64 {
        let nu = (self.tau - 0.5) / 3.0;
        (self.width as f64).powi(2) / (PI * PI * nu)
    }
}

/// Runs the Poiseuille channel `spec` (walls at y = 0 and y = width + 1,
/// halfway bounce-back, periodic in x) and compares `u_x` with the parabola
/// whose walls sit half way along the links.
pub fn poiseuille_with(
    make: Factory,
    backend: BackendKind,
    lattice: LatticeKind,
    precision: Precision,
    spec: PoiseuilleSpec,
) -> Result<PoiseuilleResult> {
    let PoiseuilleSpec { width, tau, u_max, collision, .. } = spec;
    let nu = (tau - 0.5) / 3.0;
    let h = width as f64;
    let force = 8.0 * nu * u_max / (h * h);
    let dims = Dims::new(1, width + 2, 1);
    let mut faces = [FaceBoundary::Periodic; 6];
    faces[2] = FaceBoundary::Wall;
    faces[3] = FaceBoundary::Wall;
    let config = SolverConfig {
        collision,
        lattice,
        precision,
        streaming: Streaming::EsotericPull,
        grid: crate::solver::GridLayout::Dense,
        groups: crate::groups::BoundaryGroups::Lists,
        tau,
        force: [force, 0.0, 0.0],
        domain: Domain::with_faces(dims, faces)?,
        initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
    };
    let mut s = make(config, backend)?;
    // The slowest mode decays as exp(-nu pi^2 t / H^2).
    let steps = (spec.e_foldings * spec.steps_per_e_folding()).ceil() as u64;
    s.step(steps)?;
    let f = s.fields()?;
    let (mut num, mut den) = (0.0, 0.0);
    for y in 1..=width {
        let yy = y as f64 - 0.5;
        let exact = force / (2.0 * nu) * yy * (h - yy);
        let u = f.u[dims.index(0, y, 0)][0];
        num += (u - exact).powi(2);
        den += exact * exact;
    }
    Ok(PoiseuilleResult { width, l2_error: (num / den).sqrt() })
}

/// Least-squares slope of `ln error` against `ln width`, negated: the order of convergence.
pub fn convergence_order(results: &[PoiseuilleResult]) -> f64 {
    let pts: Vec<(f64, f64)> = results.iter().map(|r| ((r.width as f64).ln(), r.l2_error.ln())).collect();
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    -sxy / sxx
}

/// A channel along x between resting walls (y faces), periodic in z (one
/// layer), fed by a uniform velocity inlet at x = 0 and drained by a pressure
/// outlet (gauge pressure 0) at x = `length + 1`, both of one scheme.
#[derive(Clone, Copy, Debug)]
pub struct Channel {
    /// Fluid cells across (y).
    pub width: u32,
    /// Fluid cells along (x), between the inlet and outlet layers.
    pub length: u32,
    /// Relaxation time.
    pub tau: f64,
    /// Inflow velocity, lattice units.
    pub u_in: f64,
    /// The inlet's and the outlet's scheme.
    pub scheme: OpenScheme,
}

/// The solver set-up of a [`Channel`].
pub fn channel_config(
    lattice: LatticeKind,
    precision: Precision,
    streaming: Streaming,
    channel: Channel,
) -> Result<SolverConfig> {
    let Channel { width, length, tau, u_in, scheme } = channel;
    let faces = duct_faces(0, u_in, scheme);
    Ok(SolverConfig {
        collision: CollisionModel::Bgk,
        lattice,
        precision,
        streaming,
        grid: crate::solver::GridLayout::Dense,
        groups: crate::groups::BoundaryGroups::Lists,
        tau,
        force: [0.0; 3],
        domain: Domain::with_faces(Dims::new(length + 2, width + 2, 1), faces)?,
        initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
    })
}

/// Steady channel flow between an inlet and an outlet, against plane Poiseuille flow.
#[derive(Clone, Debug)]
pub struct ChannelResult {
    /// Whether the run reached steady state.
    pub converged: bool,
    /// Largest relative deviation of the mass flux `sum rho u_x` through a
    /// cross-section from its mean over all interior sections (continuity).
    pub flux_spread: f64,
    /// Mean mass flux relative to the inflow `u_in * width`, minus 1.
    pub flux_error: f64,
    /// Largest deviation of `u_x` from the parabola carrying the same flux,
    /// at three quarters of the length, relative to the parabola's peak.
    pub profile_error: f64,
    /// Fitted pressure gradient over the developed half of the channel
    /// relative to plane Poiseuille's `12 rho nu u_mean / H^2`, minus 1.
    pub gradient_error: f64,
    /// Density next to the outlet minus the outlet's imposed density.
    pub outlet_density_error: f64,
}

/// Runs a [`Channel`] to steady state and compares with plane Poiseuille flow.
pub fn channel(
    make: Factory,
    backend: BackendKind,
    lattice: LatticeKind,
    precision: Precision,
    spec: Channel,
) -> Result<ChannelResult> {
    let Channel { width, length, tau, u_in, .. } = spec;
    let config = channel_config(lattice, precision, Streaming::EsotericPull, spec)?;
    let dims = config.domain.dims;
    let mut s = make(config, backend)?;
    let nu = (tau - 0.5) / 3.0;
    let h = width as f64;
    // Viscous time H^2 / nu: check every tenth of it, give up after 20.
    let viscous = (h * h / nu).ceil() as u64;
    // Steady to well above the round-off of the velocity in each precision.
    let tolerance = match precision {
        Precision::F64 => 1e-6,
        Precision::F32 => 1e-5,
        Precision::F16 => 1e-3,
    };
    let (f, converged) = run_to_steady(s.as_mut(), viscous / 10, 20 * viscous, u_in, tolerance)?;
    let at = |x: u32, y: u32| dims.index(x, y, 0);
    let section = |x: u32| -> (f64, f64) {
        let flux = (1..=width).map(|y| f.rho[at(x, y)] * f.u[at(x, y)][0]).sum::<f64>();
        let rho = (1..=width).map(|y| f.rho[at(x, y)]).sum::<f64>() / h;
        (flux, rho)
    };
    let sections: Vec<(f64, f64)> = (1..=length).map(section).collect();
    let mean_flux = sections.iter().map(|s| s.0).sum::<f64>() / length as f64;
    let flux_spread = sections.iter().map(|s| (s.0 / mean_flux - 1.0).abs()).fold(0.0, f64::max);
    // Parabola with the local mean velocity (flux / rho) of the section.
    let x = 3 * length / 4;
    let (flux, rho) = sections[x as usize - 1];
    let mean_u = flux / (rho * h);
    let peak = 1.5 * mean_u;
    let profile_error = (1..=width)
        .map(|y| {
            let eta = (y as f64 - 0.5) / h;
            (f.u[at(x, y)][0] - 6.0 * mean_u * eta * (1.0 - eta)).abs() / peak
        })
        .fold(0.0, f64::max);
    // Least-squares slope of p = rho / 3 over the developed half (x in L/2 .. L - 2).
    let pts: Vec<(f64, f64)> =
        (length / 2..=length - 2).map(|x| (x as f64, sections[x as usize - 1].1 / 3.0)).collect();
    let n = pts.len() as f64;
    let (mx, my) = (pts.iter().map(|p| p.0).sum::<f64>() / n, pts.iter().map(|p| p.1).sum::<f64>() / n);
    let slope =
        pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / pts.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
    let mean_rho = pts.iter().map(|p| 3.0 * p.1).sum::<f64>() / n;
    let expected = -12.0 * mean_rho * nu * (mean_flux / (mean_rho * h)) / (h * h);
    Ok(ChannelResult {
        converged,
        flux_spread,
        flux_error: mean_flux / (u_in * h) - 1.0,
        profile_error,
        gradient_error: slope / expected - 1.0,
        outlet_density_error: sections[length as usize - 1].1 - 1.0,
    })
}

/// The channel `lbm validate` and the tests run: 20 cells wide, 6 widths
/// long, Re = 2 (tau 0.8, inflow 0.01).
pub const VALIDATION_CHANNEL: Channel =
    Channel { width: 20, length: 120, tau: 0.8, u_in: 0.01, scheme: OpenScheme::Equilibrium };

/// How closely a channel's open boundaries pass on developed plane
/// Poiseuille flow (see [`developed_channel`]).
#[derive(Clone, Debug)]
pub struct DevelopedChannelResult {
    /// Whether the run reached steady state.
    pub converged: bool,
    /// RMS deviation of `u_x` in the first fluid column from the profile the
    /// inlet imposes, relative to that profile's RMS.
    pub inlet_error: f64,
    /// RMS deviation of `u_x` in the last fluid column from the imposed
    /// profile scaled to that column's flow (the density, and with it the
    /// speed, changes along the channel), relative to its RMS.
    pub outlet_error: f64,
}

/// Runs the channel `spec` with the developed plane Poiseuille profile of
/// mean `u_in` imposed at the inlet (one open-boundary group per row of
/// inlet cells, each imposing its cell-centre value) and collision
/// operator `collision`, from the Poiseuille solution (its velocity and
/// linear pressure drop) to steady state. Away from the boundaries that is
/// the solution up to compressibility (and, with BGK, the wall error of
/// halfway bounce-back; TRT with the magic parameter 3/16 has none): what
/// the columns next to the inlet and the outlet deviate by is the open
/// boundaries' error.
pub fn developed_channel(
    make: Factory,
    backend: BackendKind,
    lattice: LatticeKind,
    precision: Precision,
    spec: Channel,
    collision: CollisionModel,
) -> Result<DevelopedChannelResult> {
    let Channel { width, length, tau, u_in, .. } = spec;
    let mut config = channel_config(lattice, precision, Streaming::EsotericPull, spec)?;
    config.collision = collision;
    let dims = config.domain.dims;
    let (h, nu) = (width as f64, (tau - 0.5) / 3.0);
    let profile = |y: u32| {
        let eta = (y as f64 - 0.5) / h;
        6.0 * u_in * eta * (1.0 - eta)
    };
    // The inlet is the first open group (faces fill in the order x-, x+).
    let inlet = &mut config.domain.open[0];
    inlet.velocities = inlet.cells.iter().map(|&n| [profile(dims.coords(n as u32).1), 0.0, 0.0]).collect();
    let (mut rho, mut u) = (vec![1.0; dims.cells()], vec![[0.0; 3]; dims.cells()]);
    for n in 0..dims.cells() {
        let (x, y, _) = dims.coords(n as u32);
        if (1..=width).contains(&y) {
            u[n] = [profile(y), 0.0, 0.0];
            // p = rho / 3 falls by 12 nu u_in / h^2 per cell to the outlet's 1 / 3.
            rho[n] = 1.0 + 36.0 * nu * u_in * (length + 1 - x) as f64 / (h * h);
        }
    }
    config.initial = Initial::Fields { rho, u };
    let mut s = make(config, backend)?;
    let viscous = (h * h / nu).ceil() as u64;
    let (f, converged) = run_to_steady(s.as_mut(), viscous / 10, 20 * viscous, u_in, 1e-7)?;
    let column = |x: u32| -> Vec<f64> { (1..=width).map(|y| f.u[dims.index(x, y, 0)][0]).collect() };
    let imposed: Vec<f64> = (1..=width).map(profile).collect();
    let rms_deviation = |got: &[f64], want: &[f64]| {
        let d: f64 = got.iter().zip(want).map(|(g, w)| (g - w).powi(2)).sum();
        (d / want.iter().map(|w| w * w).sum::<f64>()).sqrt()
    };
    let out = column(length);
    let scale = out.iter().sum::<f64>() / imposed.iter().sum::<f64>();
    let scaled: Vec<f64> = imposed.iter().map(|v| v * scale).collect();
    Ok(DevelopedChannelResult {
        converged,
        inlet_error: rms_deviation(&column(1), &imposed),
        outlet_error: rms_deviation(&out, &scaled),
    })
}

/// Decaying 2D Taylor-Green vortex in the x-y plane of a periodic box.
#[derive(Clone, Debug)]
pub struct TaylorGreenResult {
    /// Viscosity set through tau, `(tau - 1/2)/3`.
    pub nu_expected: f64,
    /// Viscosity recovered from the kinetic-energy decay.
    pub nu_measured: f64,
}

/// Runs a Taylor-Green vortex of wavelength `n` cells and fits the energy decay
/// `E(t) = E0 exp(-4 nu k^2 t)` over one decay time, with BGK.
pub fn taylor_green(
    make: Factory,
    backend: BackendKind,
    lattice: LatticeKind,
    precision: Precision,
    n: u32,
    tau: f64,
) -> Result<TaylorGreenResult> {
    taylor_green_with(make, backend, lattice, precision, n, tau, CollisionModel::Bgk)
}

/// [`taylor_green`] with the collision operator `collision`.
pub fn taylor_green_with(
    make: Factory,
    backend: BackendKind,
    lattice: LatticeKind,
    precision: Precision,
    n: u32,
    tau: f64,
    collision: CollisionModel,
) -> Result<TaylorGreenResult> {
    taylor_green_advected(make, backend, lattice, precision, n, tau, collision, [0.0; 2])
}

/// [`taylor_green_with`] carried along by a uniform velocity `mean`: the
/// vortex's energy relative to the mean flow decays as at rest when the
/// operator's viscosity is Galilean invariant.
#[allow(clippy::too_many_arguments)]
pub fn taylor_green_advected(
    make: Factory,
    backend: BackendKind,
    lattice: LatticeKind,
    precision: Precision,
    n: u32,
    tau: f64,
    collision: CollisionModel,
    mean: [f64; 2],
) -> Result<TaylorGreenResult> {
    let nu = (tau - 0.5) / 3.0;
    let u0 = 0.02;
    let k = 2.0 * PI / n as f64;
    let dims = Dims::new(n, n, 1);
    let cells = dims.cells();
    let (mut rho, mut u) = (vec![0.0; cells], vec![[0.0; 3]; cells]);
    for y in 0..n {
        for x in 0..n {
            let (xx, yy) = (k * x as f64, k * y as f64);
            let i = dims.index(x, y, 0);
            u[i] = [mean[0] - u0 * xx.cos() * yy.sin(), mean[1] + u0 * xx.sin() * yy.cos(), 0.0];
            // p = -u0^2/4 (cos 2kx + cos 2ky), rho = 1 + 3 p.
            rho[i] = 1.0 - 0.75 * u0 * u0 * ((2.0 * xx).cos() + (2.0 * yy).cos());
        }
    }
    let config = SolverConfig {
        collision,
        lattice,
        precision,
        streaming: Streaming::EsotericPull,
        grid: crate::solver::GridLayout::Dense,
        groups: crate::groups::BoundaryGroups::Lists,
        tau,
        force: [0.0; 3],
        domain: Domain::new(dims)?,
        initial: Initial::Fields { rho, u },
    };
    let mut s = make(config, backend)?;
    let decay_time = 1.0 / (4.0 * nu * k * k);
    // Skip the first tenth of a decay time (the start from equilibrium leaves
    // a small non-equilibrium transient), then sample one decay time.
    let start = (0.1 * decay_time).ceil() as u64;
    let samples = 10;
    let every = (decay_time / samples as f64).ceil() as u64;
    s.step(start)?;
    let mut pts = Vec::new();
    for i in 0..=samples {
        if i > 0 {
            s.step(every)?;
        }
        let f = s.fields()?;
        let mut e = 0.0;
        f.u.for_each_run(|_, v, n| e += n as f64 * ((v[0] - mean[0]).powi(2) + (v[1] - mean[1]).powi(2)));
        pts.push((s.time() as f64, e.ln()));
    }
    let m = pts.len() as f64;
    let mt = pts.iter().map(|p| p.0).sum::<f64>() / m;
    let me = pts.iter().map(|p| p.1).sum::<f64>() / m;
    let slope =
        pts.iter().map(|p| (p.0 - mt) * (p.1 - me)).sum::<f64>() / pts.iter().map(|p| (p.0 - mt).powi(2)).sum::<f64>();
    Ok(TaylorGreenResult { nu_expected: nu, nu_measured: -slope / (4.0 * k * k) })
}

/// The turbulent Taylor-Green vortex of Brachet et al. (1983) in a periodic
/// box of `side` cells, `2 pi L` on a side: `u = U0 sin(x/L) cos(y/L)
/// cos(z/L)`, `v = -U0 cos(x/L) sin(y/L) cos(z/L)`, `w = 0`, Reynolds number
/// `U0 L / nu`. It transitions to turbulence; the kinetic energy's
/// dissipation rate peaks at `t U0 / L` of about 9 at Reynolds number 1600.
#[derive(Clone, Copy, Debug)]
pub struct TurbulentTaylorGreen {
    /// Cells per side of the periodic box.
    pub side: u32,
    /// `U0 L / nu`.
    pub reynolds: f64,
    /// Peak velocity `U0` (lattice units).
    pub u0: f64,
    /// Lattice (3D).
    pub lattice: LatticeKind,
    /// Storage precision.
    pub precision: Precision,
    /// Collision operator (an eddy viscosity keeps an under-resolved box stable).
    pub collision: CollisionModel,
    /// End time, in units of `L / U0`.
    pub end: f64,
    /// Time between energy samples, in units of `L / U0`.
    pub every: f64,
}

/// The turbulent Taylor-Green vortex at Reynolds number 1600 on 128^3
/// cells, D3Q19 f32, BGK with a Smagorinsky eddy viscosity (`C = 0.1`),
/// sampled every 0.2 `L / U0` up to 14.
pub const TAYLOR_GREEN_1600: TurbulentTaylorGreen = TurbulentTaylorGreen {
    side: 128,
    reynolds: 1600.0,
    u0: 0.05,
    lattice: LatticeKind::D3Q19,
    precision: Precision::F32,
    collision: CollisionModel::Smagorinsky { constant: 0.1 },
    end: 14.0,
    every: 0.2,
};

/// The Brachet et al. (1983) dissipation peak at Reynolds number 1600, in
/// units of `L / U0`.
pub const TAYLOR_GREEN_1600_PEAK_TIME: f64 = 9.0;

/// What [`turbulent_taylor_green`] measured.
#[derive(Clone, Debug)]
pub struct TurbulentTaylorGreenResult {
    /// Sample times, in units of `L / U0`.
    pub times: Vec<f64>,
    /// Kinetic energy per unit mass over `U0^2` at those times.
    pub energy: Vec<f64>,
    /// Dissipation rate `-dE/dt` (units `U0^3 / L`) at the midpoints between samples.
    pub dissipation: Vec<(f64, f64)>,
    /// When the dissipation rate peaks (a parabola through the largest sample and its neighbours).
    pub peak_time: f64,
    /// The peak dissipation rate.
    pub peak: f64,
    /// Whether every sampled energy stayed finite.
    pub finite: bool,
}

/// Runs [`TurbulentTaylorGreen`] and samples the kinetic energy.
pub fn turbulent_taylor_green(
    make: Factory,
    backend: BackendKind,
    spec: TurbulentTaylorGreen,
) -> Result<TurbulentTaylorGreenResult> {
    let n = spec.side;
    let l = n as f64 / (2.0 * PI);
    let nu = spec.u0 * l / spec.reynolds;
    let dims = Dims::new(n, n, n);
    let cells = dims.cells();
    let (mut rho, mut u) = (vec![0.0; cells], vec![[0.0; 3]; cells]);
    let u0 = spec.u0;
    for z in 0..n {
        for y in 0..n {
            for x in 0..n {
                // Cell centres, so that the box is symmetric.
                let [a, b, c] = [x, y, z].map(|v| (v as f64 + 0.5) / l);
                let i = dims.index(x, y, z);
                u[i] = [u0 * a.sin() * b.cos() * c.cos(), -u0 * a.cos() * b.sin() * c.cos(), 0.0];
                // p = U0^2 / 16 (cos 2x + cos 2y)(cos 2z + 2), rho = 1 + 3 p.
                rho[i] = 1.0 + 3.0 * u0 * u0 / 16.0 * ((2.0 * a).cos() + (2.0 * b).cos()) * ((2.0 * c).cos() + 2.0);
            }
        }
    }
    let config = SolverConfig {
        collision: spec.collision,
        lattice: spec.lattice,
        precision: spec.precision,
        streaming: Streaming::EsotericPull,
        grid: crate::solver::GridLayout::Dense,
        groups: crate::groups::BoundaryGroups::Lists,
        tau: tau_for_viscosity(nu),
        force: [0.0; 3],
        domain: Domain::new(dims)?,
        initial: Initial::Fields { rho, u },
    };
    let mut s = make(config, backend)?;
    let unit = l / u0;
    let (mut times, mut energy) = (Vec::new(), Vec::new());
    let mut finite = true;
    let mut k = 0u64;
    loop {
        let t = k as f64 * spec.every;
        let step = (t * unit).round() as u64;
        s.step(step - s.time())?;
        let f = s.fields()?;
        let mut e = 0.0;
        f.u.for_each_run(|_, v, n| e += n as f64 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]));
        let e = 0.5 * e / cells as f64 / (u0 * u0);
        finite &= e.is_finite();
        times.push(s.time() as f64 / unit);
        energy.push(e);
        if !finite || t >= spec.end {
            break;
        }
        k += 1;
    }
    let dissipation: Vec<(f64, f64)> = (1..times.len())
        .map(|i| (0.5 * (times[i] + times[i - 1]), -(energy[i] - energy[i - 1]) / (times[i] - times[i - 1])))
        .collect();
    let (peak_time, peak) = parabola_peak(&dissipation);
    Ok(TurbulentTaylorGreenResult { times, energy, dissipation, peak_time, peak, finite })
}

/// The peak of a sampled curve: a parabola through its largest sample and
/// the two beside it (the sample itself at either end).
fn parabola_peak(points: &[(f64, f64)]) -> (f64, f64) {
    let Some(k) = (0..points.len()).max_by(|&a, &b| points[a].1.total_cmp(&points[b].1)) else {
        return (f64::NAN, f64::NAN);
    };
    if k == 0 || k + 1 == points.len() {
        return points[k];
    }
    let [(x0, y0), (x1, y1), (x2, y2)] = [points[k - 1], points[k], points[k + 1]];
    // Equally spaced samples: the vertex sits (y0 - y2) / (2 (y0 - 2 y1 + y2)) spacings from x1.
    let h = 0.5 * (x2 - x0);
    let d = y0 - 2.0 * y1 + y2;
    if d >= 0.0 {
        return (x1, y1);
    }
    let shift = 0.5 * (y0 - y2) / d;
    (x1 + shift * h, y1 - 0.25 * (y0 - y2) * shift)
}

/// A square array of cylinders in slow flow (`[[geometry]] wall`
/// compared): one cylinder of radius `a` in a periodic `side x side` cell,
/// driven by a body force along x.
#[derive(Clone, Copy, Debug)]
pub struct CylinderArray {
    /// Cells across the periodic cell.
    pub side: u32,
    /// Solid area fraction `pi a^2 / side^2`.
    pub solid_fraction: f64,
    /// Interpolated bounce-back on the cylinder (else halfway).
    pub interpolated: bool,
    /// Streaming scheme.
    pub streaming: Streaming,
}

/// What [`cylinder_array`] measured.
#[derive(Clone, Copy, Debug)]
pub struct CylinderArrayResult {
    /// Mean (superficial) velocity over the cell, measured.
    pub velocity: f64,
    /// The same from the drag law of Sangani & Acrivos (1982).
    pub expected: f64,
    /// `velocity / expected - 1`.
    pub error: f64,
    /// Whether the velocity stopped changing.
    pub converged: bool,
}

/// The drag of a square array of cylinders at solid fraction `c` in Stokes
/// flow (Sangani & Acrivos 1982, their expansion for dilute arrays): the
/// force per unit length `F` on each cylinder and the mean velocity `U` over
/// the unit cell satisfy `F / (4 pi mu U) = 1 / (-ln(c)/2 - 0.738 + c -
/// 0.887 c^2 + 2.038 c^3)`; the terms dropped are O(c^4).
pub fn square_array_drag_factor(c: f64) -> f64 {
    1.0 / (-0.5 * c.ln() - 0.738 + c - 0.887 * c * c + 2.038 * c.powi(3))
}

/// Runs the cylinder array `spec` (D2Q9, TRT with the magic parameter 3/16,
/// f64, Reynolds number 0.01) to a steady state and compares the mean velocity with
/// [`square_array_drag_factor`]. The force per unit length on a cylinder
/// is the body force times the cell's area, `F = g side^2` (the mean
/// pressure gradient a pressure-driven array would have).
pub fn cylinder_array(make: Factory, backend: BackendKind, spec: CylinderArray) -> Result<CylinderArrayResult> {
    let side = spec.side;
    let tau = 0.8;
    let nu = (tau - 0.5) / 3.0;
    let l = side as f64;
    let radius = l * (spec.solid_fraction / PI).sqrt();
    // Reynolds number U a / nu = 0.01 at every resolution: the drag law is
    // for Stokes flow, and inertia corrects it at O(Re^2).
    let u_target = 0.01 * nu / radius;
    let expected_factor = square_array_drag_factor(spec.solid_fraction);
    // g l^2 / (4 pi nu U) = factor, so this g gives U near u_target.
    let g = u_target * 4.0 * PI * nu * expected_factor / (l * l);
    let dims = Dims::new(side, side, 1);
    let mut domain = Domain::new(dims)?;
    let centre = glam::DVec3::new(0.5 * (l - 1.0), 0.5 * (l - 1.0), 0.0);
    let shape =
        crate::voxel::Cylinder { base_centre: centre - glam::DVec3::Z, axis: glam::DVec3::Z, radius, length: 2.0 };
    let voxels = crate::voxel::voxelize(&shape, (side, side, 1), 1.0, glam::DVec3::ZERO)?;
    domain.set_where(&voxels.solid, kernels_gpu::CellKind::Wall);
    if spec.interpolated {
        let object = crate::curved::CurvedObject { name: "cylinder", cells: &voxels.solid, shape: &shape };
        crate::curved::mark(&mut domain, LatticeKind::D2Q9.velocities(), &[object], 1.0)?;
    }
    let config = SolverConfig {
        collision: CollisionModel::Trt { magic: 3.0 / 16.0 },
        lattice: LatticeKind::D2Q9,
        precision: Precision::F64,
        streaming: spec.streaming,
        grid: crate::solver::GridLayout::Dense,
        groups: crate::groups::BoundaryGroups::Lists,
        tau,
        force: [g, 0.0, 0.0],
        domain,
        initial: Initial::Uniform { rho: 1.0, u: [0.0; 3] },
    };
    let mut s = make(config, backend)?;
    let check = (l * l / nu / 20.0).ceil() as u64;
    // Interpolated walls do not conserve mass exactly: the density creeps
    // (measured 6e-9 per step at 32 cells), and the velocity with it, so
    // "steady" is a change under 1e-5 of the flow per check.
    let (fields, converged) = run_to_steady(s.as_mut(), check, 100 * check, u_target, 1e-5)?;
    // Solid cells report zero velocity.
    let velocity = fields.u.to_dense().iter().map(|u| u[0]).sum::<f64>() / (l * l);
    let expected = g * l * l / (4.0 * PI * nu * expected_factor);
    Ok(CylinderArrayResult { velocity, expected, error: velocity / expected - 1.0, converged })
}

/// The Schäfer & Turek (1996) benchmark 2D-1 on the lattice: a cylinder of
/// `diameter` cells in a channel 4.1 diameters high and 22 long, its
/// centre 2 diameters from the inlet and 2 above the lower wall (0.05
/// diameters off the centre line, which is what lifts it), a parabolic
/// inflow peaking at `u_max`, Re = U_mean D / nu = 20 with `U_mean = 2/3 u_max`.
#[derive(Clone, Copy, Debug)]
pub struct CylinderChannel {
    /// Cells across the cylinder.
    pub diameter: u32,
    /// Peak inflow speed (lattice units).
    pub u_max: f64,
    /// Interpolated bounce-back on the cylinder (else halfway).
    pub interpolated: bool,
}

/// What [`cylinder_channel`] measured.
#[derive(Clone, Copy, Debug)]
pub struct CylinderChannelResult {
    /// Drag coefficient `2 F_x / (rho U_mean^2 D)`.
    pub drag: f64,
    /// Lift coefficient `2 F_y / (rho U_mean^2 D)`.
    pub lift: f64,
    /// `drag / reference - 1`.
    pub drag_error: f64,
    /// `lift / reference - 1`.
    pub lift_error: f64,
    /// Steps run.
    pub steps: u64,
    /// Whether both coefficients stopped changing.
    pub converged: bool,
}

/// Runs [`CylinderChannel`] (D2Q9, TRT with the magic parameter 3/16, f64,
/// Esoteric Pull; regularized inlet and outlet) from plane Poiseuille flow
/// to a steady state and compares the force coefficients with
/// [`crate::reference::SCHAEFER_TUREK_2D1_DRAG`] and `_LIFT`. The walls sit
/// half way between the wall layers and the fluid, so the channel's
/// height `4.1 D` is `ny - 2` cells and its length `22 D` is `nx - 1`
/// (inlet to outlet cell).
pub fn cylinder_channel(make: Factory, backend: BackendKind, spec: CylinderChannel) -> Result<CylinderChannelResult> {
    use crate::reference::{SCHAEFER_TUREK_2D1_DRAG, SCHAEFER_TUREK_2D1_LIFT};
    let d = spec.diameter as f64;
    let (height, length) = (4.1 * d, 22.0 * d);
    let dims = Dims::new(length.round() as u32 + 1, height.round() as u32 + 2, 1);
    let u_mean = 2.0 / 3.0 * spec.u_max;
    let nu = u_mean * d / 20.0;
    let regularized = OpenScheme::Regularized;
    let faces = [
        FaceBoundary::VelocityInlet([spec.u_max, 0.0, 0.0], regularized),
        FaceBoundary::PressureOutlet(1.0, regularized),
        FaceBoundary::Wall,
        FaceBoundary::Wall,
        FaceBoundary::Periodic,
        FaceBoundary::Periodic,
    ];
    let mut domain = Domain::with_faces(dims, faces)?;
    let inlet = &mut domain.open[0];
    let profile = crate::profile::Profile::Parabolic;
    inlet.velocities =
        profile.apply(crate::domain::Face::XMin, &faces, dims, inlet.state.velocity, &inlet.cells)?.velocities;
    // Cell i at i; the lower wall at y = 0.5, the inlet at x = 0.
    let centre = glam::DVec3::new(2.0 * d, 0.5 + 2.0 * d, 0.0);
    let shape = crate::voxel::Cylinder {
        base_centre: centre - glam::DVec3::Z,
        axis: glam::DVec3::Z,
        radius: d / 2.0,
        length: 2.0,
    };
    let voxels = crate::voxel::voxelize(&shape, (dims.nx, dims.ny, dims.nz), 1.0, glam::DVec3::ZERO)?;
    domain.set_where(&voxels.solid, kernels_gpu::CellKind::Wall);
    if spec.interpolated {
        let object = crate::curved::CurvedObject { name: "cylinder", cells: &voxels.solid, shape: &shape };
        crate::curved::mark(&mut domain, LatticeKind::D2Q9.velocities(), &[object], 1.0)?;
    }
    // Plane Poiseuille flow with its pressure drop: p = rho / 3 falls by
    // 8 nu u_max / H^2 per cell to the outlet's.
    let (mut rho, mut u) = (vec![1.0; dims.cells()], vec![[0.0; 3]; dims.cells()]);
    for n in 0..dims.cells() {
        let (x, y, _) = dims.coords(n as u32);
        let s = y as f64 - 0.5;
        if s > 0.0 && s < height {
            u[n] = [4.0 * spec.u_max * s * (height - s) / (height * height), 0.0, 0.0];
            rho[n] = 1.0 + 24.0 * nu * spec.u_max * (dims.nx - 1 - x) as f64 / (height * height);
        }
    }
    let config = SolverConfig {
        collision: CollisionModel::Trt { magic: 3.0 / 16.0 },
        lattice: LatticeKind::D2Q9,
        precision: Precision::F64,
        streaming: Streaming::EsotericPull,
        grid: crate::solver::GridLayout::Dense,
        groups: crate::groups::BoundaryGroups::Lists,
        tau: 3.0 * nu + 0.5,
        force: [0.0; 3],
        domain,
        initial: Initial::Fields { rho, u },
    };
    let mut s = make(config, backend)?;
    let scale = 2.0 / (u_mean * u_mean * d);
    let coefficients = |s: &mut dyn Solver| -> Result<[f64; 2]> {
        let f = s.forces(std::slice::from_ref(&voxels.solid))?[0];
        Ok([f[0] * scale, f[1] * scale])
    };
    // Steady: neither coefficient moves by more than 1e-6 of the drag over
    // a tenth of the time a wave takes to cross the channel's length at the
    // mean speed (and at least a thousand steps).
    let check = ((length / u_mean / 10.0).ceil() as u64).max(1000);
    let mut last = coefficients(s.as_mut())?;
    let mut converged = false;
    while !converged && s.time() < 200 * check {
        s.step(check)?;
        let now = coefficients(s.as_mut())?;
        converged = (0..2).all(|k| (now[k] - last[k]).abs() < 1e-6 * now[0].abs());
        last = now;
    }
    let [drag, lift] = last;
    Ok(CylinderChannelResult {
        drag,
        lift,
        drag_error: drag / SCHAEFER_TUREK_2D1_DRAG - 1.0,
        lift_error: lift / SCHAEFER_TUREK_2D1_LIFT - 1.0,
        steps: s.time(),
        converged,
    })
}

/// A pressure pulse leaving through an outlet: a channel `length` cells
/// long (D2Q9, f64, periodic across, at rest) with the same outlet at both
/// ends, and a Gaussian density bump of amplitude `1e-3` and width 8 cells
/// in its middle. The bump splits into two sound waves; a probe a quarter of
/// the length from the middle sees the right-going one pass, then whatever
/// the outlet sends back.
#[derive(Clone, Copy, Debug)]
pub struct OutletPulse {
    /// Cells from outlet to outlet.
    pub length: u32,
    /// How the outlets rebuild their cells.
    pub scheme: OpenScheme,
    /// A sponge band in front of each outlet: its layers and strength (it
    /// damps towards rest, the mean flow here).
    pub sponge: Option<(u32, f64)>,
}

/// What [`outlet_pulse`] measured at the probe (density minus 1).
#[derive(Clone, Copy, Debug)]
pub struct OutletPulseResult {
    /// The largest excess density of the wave going out.
    pub incident: f64,
    /// The largest excess density, either sign, of what comes back.
    pub reflected: f64,
    /// `reflected / incident`, signed: a pressure outlet holds the density,
    /// so it reflects a pressure wave inverted (close to -1).
    pub coefficient: f64,
}

/// Runs [`OutletPulse`] (BGK, `tau = 0.52`) until the reflected wave has
/// passed the probe and measures both waves there.
pub fn outlet_pulse(make: Factory, backend: BackendKind, spec: OutletPulse) -> Result<OutletPulseResult> {
    let n = spec.length;
    let dims = Dims::new(n + 1, 4, 1);
    let outlet = FaceBoundary::PressureOutlet(1.0, spec.scheme);
    let faces = [
        outlet,
        outlet,
        FaceBoundary::Periodic,
        FaceBoundary::Periodic,
        FaceBoundary::Periodic,
        FaceBoundary::Periodic,
    ];
    let mut domain = Domain::with_faces(dims, faces)?;
    if let Some((cells, strength)) = spec.sponge {
        for face in [crate::domain::Face::XMin, crate::domain::Face::XMax] {
            crate::sponge::add(&mut domain, face, cells, strength, [0.0; 3])?;
        }
    }
    let (x0, width, amplitude) = (n as f64 / 2.0, 8.0, 1e-3);
    let rho = (0..dims.cells())
        .map(|c| {
            let x = dims.coords(c as u32).0 as f64;
            1.0 + amplitude * (-(x - x0) * (x - x0) / (2.0 * width * width)).exp()
        })
        .collect();
    let config = SolverConfig {
        collision: CollisionModel::Bgk,
        lattice: LatticeKind::D2Q9,
        precision: Precision::F64,
        streaming: Streaming::EsotericPull,
        grid: crate::solver::GridLayout::Dense,
        groups: crate::groups::BoundaryGroups::Lists,
        tau: 0.52,
        force: [0.0; 3],
        domain,
        initial: Initial::Fields { rho, u: vec![[0.0; 3]; dims.cells()] },
    };
    let mut s = make(config, backend)?;
    // The probe a quarter of the length right of the middle: the wave
    // passes it after n/4 cells, returns after 3n/4; the left outlet's
    // reflection is still n/2 cells away then.
    let probe = [n / 2 + n / 4, 1, 0];
    let speed = 1.0 / 3f64.sqrt();
    let (incident_at, reflected_at) = ((n as f64 / 4.0) / speed, (3.0 * n as f64 / 4.0) / speed);
    let half = 6.0 * width / speed;
    let (mut incident, mut reflected) = (0.0f64, 0.0f64);
    while (s.time() as f64) < reflected_at + half {
        s.step(1)?;
        let t = s.time() as f64;
        if (t - incident_at).abs() < half || (t - reflected_at).abs() < half {
            let excess = s.fields()?.rho[probe] - 1.0;
            if (t - incident_at).abs() < half {
                incident = incident.max(excess);
            } else if excess.abs() > reflected.abs() {
                reflected = excess;
            }
        }
    }
    Ok(OutletPulseResult { incident, reflected, coefficient: reflected / incident })
}

/// Runs until the velocity field changes by less than `tolerance` (max norm,
/// relative to `scale`) over `check_every` steps, or `max_steps` pass.
/// Returns the fields and whether it converged.
pub fn run_to_steady(
    s: &mut dyn Solver,
    check_every: u64,
    max_steps: u64,
    scale: f64,
    tolerance: f64,
) -> Result<(Fields, bool)> {
    let mut last = s.fields()?;
    while s.time() < max_steps {
        s.step(check_every)?;
        let now = s.fields()?;
        let change = now.max_change(&last.u);
        last = now;
        if change < tolerance * scale {
            return Ok((last, true));
        }
    }
    Ok((last, false))
}

/// Largest deviation from a reference profile, in units of the lid speed.
/// `line` maps the profile position (0..1 along a cavity side of `side` fluid
/// cells) to the cell coordinates of the sample point; `component` picks u (0)
/// or v (1). Reference points closer to a wall than the first fluid-cell
/// centre (half a cell) are skipped: reaching them would be extrapolation.
pub fn profile_error(
    fields: &Fields,
    reference: Profile,
    lid_speed: f64,
    component: usize,
    side: u32,
    line: impl Fn(f64) -> [f64; 3],
) -> f64 {
    let half_cell = 0.5 / side as f64;
    reference
        .iter()
        .filter(|(s, _)| *s >= half_cell && *s <= 1.0 - half_cell)
        .map(|&(s, want)| (fields.velocity_at(line(s))[component] / lid_speed - want).abs())
        .fold(0.0, f64::max)
}

/// Cell coordinate of position `s` (0..1) across a cavity of `side` fluid
/// cells: wall cell 0, fluid cells 1..=side, walls halfway between.
pub fn cavity_coordinate(s: f64, side: u32) -> f64 {
    0.5 + s * side as f64
}

/// One line of the validation table.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Check {
    /// What was compared.
    pub case: String,
    /// The measured deviation (or order).
    pub value: f64,
    /// What it is compared against.
    pub criterion: String,
    /// Whether it passed.
    pub pass: bool,
}

/// Max deviation from Ghia et al. allowed at lid speed 0.1: the O(Ma^2) = 3 U^2
/// compressibility error (3%), and Ghia's own accuracy (about 1%).
pub const GHIA_TOLERANCE_RE100: f64 = 0.02;
/// As [`GHIA_TOLERANCE_RE100`], at Re 1000.
pub const GHIA_TOLERANCE_RE1000: f64 = 0.03;
/// Relative viscosity error allowed for the Taylor-Green vortex.
pub const TAYLOR_GREEN_TOLERANCE: f64 = 0.01;

/// The validation suite a user runs with `lbm validate`: Poiseuille order,
/// the channel's open boundaries, Schäfer & Turek's cylinder 2D-1,
/// Taylor-Green viscosity, the Ghia cavity at Re 100 (and Re 1000 when
/// `full`), and the 3D cavity against Wong & Baker.
pub fn suite(make: Factory, backend: BackendKind, precision: Precision, full: bool) -> Result<Vec<Check>> {
    let mut checks = Vec::new();
    let results: Vec<_> = [8, 16, 32, 64]
        .iter()
        .map(|&w| poiseuille(make, backend, LatticeKind::D2Q9, Precision::F64, w, 0.8, 0.01))
        .collect::<Result<_>>()?;
    let order = convergence_order(&results);
    checks.push(Check {
        case: "Poiseuille D2Q9 f64, order of convergence".into(),
        value: order,
        criterion: "2 +- 0.1".into(),
        pass: (order - 2.0).abs() < 0.1,
    });
    let ch = channel(make, backend, LatticeKind::D2Q9, Precision::F64, VALIDATION_CHANNEL)?;
    checks.push(Check {
        case: "Channel inlet/outlet D2Q9 f64, profile vs Poiseuille / peak".into(),
        value: ch.profile_error,
        criterion: "< 0.01".into(),
        pass: ch.converged && ch.profile_error < 0.01,
    });
    checks.push(Check {
        case: "Channel inlet/outlet D2Q9 f64, pressure gradient error".into(),
        value: ch.gradient_error,
        criterion: "|.| < 0.02".into(),
        pass: ch.converged && ch.gradient_error.abs() < 0.02,
    });
    let st = cylinder_channel(make, backend, CylinderChannel { diameter: 20, u_max: 0.03, interpolated: true })?;
    for (what, error, tolerance) in [("drag", st.drag_error, 0.01), ("lift", st.lift_error, 0.05)] {
        checks.push(Check {
            case: format!("Schäfer-Turek 2D-1 D2Q9 f64, cylinder of 20 cells, {what} coefficient error"),
            value: error,
            criterion: format!("|.| < {tolerance}"),
            pass: st.converged && error.abs() < tolerance,
        });
    }
    let tg = taylor_green(make, backend, LatticeKind::D3Q19, precision, 64, 0.8)?;
    let rel = tg.nu_measured / tg.nu_expected - 1.0;
    checks.push(Check {
        case: format!("Taylor-Green D3Q19 {}, viscosity error", precision.name()),
        value: rel,
        criterion: format!("|.| < {TAYLOR_GREEN_TOLERANCE}"),
        pass: rel.abs() < TAYLOR_GREEN_TOLERANCE,
    });
    let mut cavity =
        |lattice: LatticeKind, side: u32, re: f64, max: u64, refs: [Option<Profile>; 2], tol: f64, name: &str| {
            let lid = 0.1;
            let c = cavity_config(lattice, precision, Streaming::EsotericPull, side, re, lid)?;
            let mut s = make(c, backend)?;
            let (f, _) = run_to_steady(s.as_mut(), 1000, max, lid, 1e-5)?;
            let mid = cavity_coordinate(0.5, side);
            let z = if lattice.dimension() == 2 { 0.0 } else { mid };
            for (component, reference) in refs.into_iter().enumerate() {
                let Some(reference) = reference else { continue };
                let e = profile_error(&f, reference, lid, component, side, |s| {
                    let t = cavity_coordinate(s, side);
                    if component == 0 {
                        [mid, t, z]
                    } else {
                        [t, mid, z]
                    }
                });
                checks.push(Check {
                    case: format!("{name} {}, max |{}| deviation / lid", precision.name(), ["u", "v"][component]),
                    value: e,
                    criterion: format!("< {tol}"),
                    pass: e < tol,
                });
            }
            Ok::<(), crate::Error>(())
        };
    use crate::reference::*;
    cavity(
        LatticeKind::D2Q9,
        64,
        100.0,
        60_000,
        [Some(GHIA_RE100_U), Some(GHIA_RE100_V)],
        GHIA_TOLERANCE_RE100,
        "Ghia Re 100",
    )?;
    if full {
        cavity(
            LatticeKind::D2Q9,
            128,
            1000.0,
            200_000,
            [Some(GHIA_RE1000_U), Some(GHIA_RE1000_V)],
            GHIA_TOLERANCE_RE1000,
            "Ghia Re 1000",
        )?;
    }
    cavity(
        LatticeKind::D3Q19,
        40,
        100.0,
        40_000,
        [Some(CAVITY3D_RE100_U), None],
        0.03,
        "3D cavity Re 100 (Wong & Baker)",
    )?;
    // 128^3 cells for 5,000 steps: seconds on a GPU, hours on the CPU.
    if full && matches!(backend, BackendKind::Gpu(_)) {
        let cumulant = TurbulentTaylorGreen {
            lattice: LatticeKind::D3Q27,
            collision: CollisionModel::Cumulant,
            ..TAYLOR_GREEN_1600
        };
        for (spec, name) in
            [(TAYLOR_GREEN_1600, "D3Q19 f32 128^3, Smagorinsky C = 0.1"), (cumulant, "D3Q27 f32 128^3, cumulant")]
        {
            let tg = turbulent_taylor_green(make, backend, spec)?;
            let error = tg.peak_time / TAYLOR_GREEN_1600_PEAK_TIME - 1.0;
            checks.push(Check {
                case: format!("Taylor-Green Re 1600 {name}, dissipation peak time error"),
                value: error,
                criterion: "|.| < 0.1".into(),
                pass: tg.finite && error.abs() < 0.1,
            });
        }
    }
    Ok(checks)
}
