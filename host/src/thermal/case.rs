//! Thermal case files: a Rayleigh–Taylor set-up of the D2Q37 model, read
//! from TOML. A case file is thermal when its top level says
//! `model = "d2q37"` ([`is_thermal`]); `lbm run` then runs it here.
//!
//! The fluid is one ideal gas in two layers at equal pressure: a cold,
//! heavy layer on top of a hot, light one, `T = T0 (1 -+ At)` (so the
//! densities' Atwood number is `At`), joined by a `tanh` profile of width
//! `width` around the interface `y = h(x)`, each column in hydrostatic
//! balance. The walls hold the layers' temperatures.

use super::tiles::{RowHalo, Tiling};
use super::{ThermalConfig, ThermalPrecision};
use crate::error::{Error, Result};
use kernels_gpu::thermal::d2q37::THETA0;
use std::f64::consts::PI;
use std::path::{Path, PathBuf};

/// A thermal case file.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ThermalCase {
    /// `"d2q37"`.
    pub model: String,
    /// Box, precision, steps, relaxation time.
    pub simulation: Simulation,
    /// The two layers and the interface's perturbation.
    pub rayleigh_taylor: RayleighTaylor,
    /// Pictures.
    #[serde(default)]
    pub output: Output,
}

/// `[simulation]`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Simulation {
    /// Sites along x (periodic) and y (between the walls).
    pub size: [u32; 2],
    /// `f64` (default) or `f32`.
    #[serde(default = "default_precision")]
    pub precision: String,
    /// Time steps.
    pub steps: u64,
    /// Relaxation time: viscosity and thermal diffusivity `(tau - 1/2) T`.
    pub tau: f64,
    /// GPU ordinals, one per tile (default `[0]`).
    #[serde(default = "default_devices")]
    pub devices: Vec<usize>,
    /// Tiles along x and y; their product is the number of devices
    /// (default: the devices side by side along x).
    #[serde(default)]
    pub tiles: Option<[u32; 2]>,
    /// How row halos travel between tiles: `strided` (default) or `packed`.
    #[serde(default = "default_row_halo")]
    pub row_halo: String,
}

fn default_precision() -> String {
    "f64".into()
}

fn default_devices() -> Vec<usize> {
    vec![0]
}

fn default_row_halo() -> String {
    "strided".into()
}

/// `[rayleigh_taylor]`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RayleighTaylor {
    /// Atwood number `(rho_top - rho_bottom) / (rho_top + rho_bottom)`.
    pub atwood: f64,
    /// Mean temperature `T0` (lattice units; default the model's reference,
    /// where it is most accurate).
    #[serde(default = "default_temperature")]
    pub temperature: f64,
    /// Gravity, lattice units, pointing down.
    pub gravity: f64,
    /// Height of the unperturbed interface as a fraction of the box.
    #[serde(default = "default_interface")]
    pub interface: f64,
    /// Width of the `tanh` temperature profile, sites.
    #[serde(default = "default_width")]
    pub width: f64,
    /// Amplitude of the interface's perturbation, sites.
    pub amplitude: f64,
    /// Wavelengths of the perturbation's modes, sites: one for a single
    /// mode, or `[shortest, longest]` for every wavelength `nx / k` between
    /// them, with phases spread by the golden ratio.
    pub wavelengths: Vec<f64>,
}

fn default_temperature() -> f64 {
    THETA0
}
fn default_interface() -> f64 {
    0.5
}
fn default_width() -> f64 {
    1.0
}

/// `[output]`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Directory of the pictures.
    #[serde(default = "default_directory")]
    pub directory: PathBuf,
    /// Steps between temperature pictures (0: only the first and last).
    #[serde(default)]
    pub every: u64,
}

fn default_directory() -> PathBuf {
    "output/rayleigh-taylor".into()
}

impl Default for Output {
    fn default() -> Self {
        Self { directory: default_directory(), every: 0 }
    }
}

/// Whether the case file at `path` is a thermal one (`model = "d2q37"`).
pub fn is_thermal(path: &Path) -> Result<bool> {
    crate::case::names_model(path, "d2q37")
}

impl ThermalCase {
    /// Reads and checks a case file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.into(), source })?;
        let case: Self =
            toml::from_str(&text).map_err(|e| Error::Case { path: path.into(), message: e.to_string() })?;
        case.check().map_err(|message| Error::Case { path: path.into(), message })?;
        Ok(case)
    }

    fn check(&self) -> std::result::Result<(), String> {
        let rt = &self.rayleigh_taylor;
        if !self.model.eq_ignore_ascii_case("d2q37") {
            return Err(format!("model `{}`: the thermal cases run model = \"d2q37\"", self.model));
        }
        if !(rt.atwood > 0.0 && rt.atwood < 0.5) {
            return Err(format!(
                "atwood = {}: give 0 < At < 0.5 (the layers' temperatures T0 (1 -+ At) must stay within the model's range)",
                rt.atwood
            ));
        }
        for (key, v) in [("temperature", rt.temperature), ("gravity", rt.gravity), ("width", rt.width)] {
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("{key} = {v}: must be positive"));
            }
        }
        if !(rt.interface > 0.0 && rt.interface < 1.0) {
            return Err(format!("interface = {}: a fraction of the height, between 0 and 1", rt.interface));
        }
        if rt.wavelengths.is_empty()
            || rt.wavelengths.len() > 2
            || rt.wavelengths.iter().any(|&w| w.is_nan() || w < 2.0)
        {
            return Err(format!(
                "wavelengths = {:?}: one wavelength (single mode) or [shortest, longest], each at least 2 sites",
                rt.wavelengths
            ));
        }
        if self.simulation.devices.is_empty() {
            return Err("[simulation] devices is empty: give at least one GPU ordinal, e.g. [0]".into());
        }
        let tiling = self.tiling()?;
        if tiling.count() != self.simulation.devices.len() {
            return Err(format!(
                "[simulation] tiles = [{}, {}] makes {} tiles for {} devices: give one device per tile",
                tiling.x,
                tiling.y,
                tiling.count(),
                self.simulation.devices.len()
            ));
        }
        self.precision().map(|_| ())
    }

    /// The tiling the case asks for.
    pub fn tiling(&self) -> std::result::Result<Tiling, String> {
        let sim = &self.simulation;
        let [x, y] = sim.tiles.unwrap_or([sim.devices.len() as u32, 1]);
        let rows = match sim.row_halo.to_ascii_lowercase().as_str() {
            "strided" => RowHalo::Strided,
            "packed" => RowHalo::Packed,
            h => return Err(format!("row_halo = `{h}`: `strided` (copied where they lie) or `packed`")),
        };
        Ok(Tiling { x, y, rows })
    }

    fn precision(&self) -> std::result::Result<ThermalPrecision, String> {
        match self.simulation.precision.to_ascii_lowercase().as_str() {
            "f64" => Ok(ThermalPrecision::F64),
            "f32" => Ok(ThermalPrecision::F32),
            p => Err(format!("precision `{p}`: the thermal model runs in f64 or f32")),
        }
    }

    /// The solver's set-up (fused bulk).
    pub fn config(&self) -> ThermalConfig {
        let rt = &self.rayleigh_taylor;
        let [nx, ny] = self.simulation.size;
        ThermalConfig {
            nx,
            ny,
            tau: self.simulation.tau,
            gravity: [0.0, -rt.gravity],
            walls: Some([rt.temperature * (1.0 + rt.atwood), rt.temperature * (1.0 - rt.atwood)]),
            fused: true,
            precision: self.precision().unwrap_or(ThermalPrecision::F64),
            tiling: self.tiling().unwrap_or_default(),
        }
    }

    /// The dimensionless numbers `lbm run` prints.
    pub fn numbers(&self) -> ThermalNumbers {
        let rt = &self.rayleigh_taylor;
        let [nx, ny] = self.simulation.size;
        let nu = (self.simulation.tau - 0.5) * rt.temperature;
        ThermalNumbers {
            atwood: rt.atwood,
            prandtl: 1.0,
            gravity: rt.gravity * ny as f64 / rt.temperature,
            viscosity: nu,
            growth_time: (nx as f64 / (2.0 * PI * rt.atwood * rt.gravity)).sqrt(),
            grashof: (rt.atwood * rt.gravity * (nx as f64).powi(3)).sqrt() / nu,
        }
    }

    /// The interface height of column `x`.
    fn interface(&self, x: u32) -> f64 {
        let rt = &self.rayleigh_taylor;
        let [nx, ny] = self.simulation.size;
        let h0 = rt.interface * ny as f64;
        let phase = |k: u32| 2.0 * PI * (k as f64 * 0.618_033_988_749_894_9).fract();
        let x = x as f64 + 0.5;
        match rt.wavelengths[..] {
            [w] => h0 + rt.amplitude * (2.0 * PI * x / w).cos(),
            _ => {
                let (short, long) =
                    (rt.wavelengths[0].min(rt.wavelengths[1]), rt.wavelengths[0].max(rt.wavelengths[1]));
                let modes: Vec<u32> = (1..=nx).filter(|&k| (short..=long).contains(&(nx as f64 / k as f64))).collect();
                let norm = (modes.len().max(1) as f64).sqrt();
                h0 + rt.amplitude / norm
                    * modes.iter().map(|&k| (2.0 * PI * k as f64 * x / nx as f64 + phase(k)).cos()).sum::<f64>()
            }
        }
    }

    /// Density, velocity and temperature of every site at the start:
    /// column by column, the `tanh` temperature profile around the
    /// interface and the density of hydrostatic balance, `d(rho T)/dy =
    /// -rho g`, with pressure `T0` at the interface.
    pub fn initial(&self) -> Vec<(f64, [f64; 2], f64)> {
        let rt = &self.rayleigh_taylor;
        let [nx, ny] = self.simulation.size;
        let mut sites = vec![(0.0, [0.0; 2], 0.0); (nx * ny) as usize];
        for x in 0..nx {
            let h = self.interface(x);
            let t = |y: f64| rt.temperature * (1.0 - rt.atwood * ((y - h) / rt.width).tanh());
            // ln p(y) = ln T0 - g int_h^y dy / T, by the midpoint rule per site.
            let mut log_p = vec![0.0; ny as usize];
            let below = (h.floor().max(0.0) as usize).min(ny as usize - 1);
            let step = |a: f64, b: f64| -rt.gravity * (b - a) / t(0.5 * (a + b));
            log_p[below] = rt.temperature.ln() + step(h, below as f64);
            for y in below + 1..ny as usize {
                log_p[y] = log_p[y - 1] + step(y as f64 - 1.0, y as f64);
            }
            for y in (0..below).rev() {
                log_p[y] = log_p[y + 1] + step(y as f64 + 1.0, y as f64);
            }
            for y in 0..ny as usize {
                let temp = t(y as f64);
                sites[y * nx as usize + x as usize] = (log_p[y].exp() / temp, [0.0; 2], temp);
            }
        }
        sites
    }
}

/// A Rayleigh–Taylor run's dimensionless numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThermalNumbers {
    /// Atwood number.
    pub atwood: f64,
    /// Prandtl number: 1 with one relaxation time.
    pub prandtl: f64,
    /// Dimensionless gravity `g L_y / T0`: the hydrostatic pressure drop
    /// across the box over the pressure (how stratified the gas is).
    pub gravity: f64,
    /// Kinematic viscosity `(tau - 1/2) T0`, lattice units.
    pub viscosity: f64,
    /// `1 / sqrt(At g k)` of the box's longest mode, steps: the inviscid
    /// e-folding time of its growth.
    pub growth_time: f64,
    /// `sqrt(At g L_x^3) / nu`.
    pub grashof: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(extra: &str) -> std::result::Result<ThermalCase, String> {
        let text = format!(
            "model = \"d2q37\"\n[simulation]\nsize = [64, 128]\nsteps = 10\ntau = 0.8\n\
             [rayleigh_taylor]\natwood = 0.05\ngravity = 1e-5\namplitude = 2.0\n{extra}"
        );
        let c: ThermalCase = toml::from_str(&text).map_err(|e| e.to_string())?;
        c.check().map(|_| c)
    }

    #[test]
    fn the_layers_have_the_atwood_number_and_stand_in_hydrostatic_balance() {
        let c = case("wavelengths = [64.0]").unwrap();
        let sites = c.initial();
        let [nx, ny] = c.simulation.size;
        let at = |x: u32, y: u32| sites[(y * nx + x) as usize];
        let (top, bottom) = (at(5, ny - 1), at(5, 0));
        // Near the walls the layers are at T0 (1 -+ At), and pressure is continuous across the interface.
        let t0 = c.rayleigh_taylor.temperature;
        assert!((top.2 / (t0 * 0.95) - 1.0).abs() < 1e-9 && (bottom.2 / (t0 * 1.05) - 1.0).abs() < 1e-9);
        let h = c.interface(9);
        for y in 1..ny {
            let (lo, hi) = (at(9, y - 1), at(9, y));
            let dp = hi.0 * hi.2 - lo.0 * lo.2;
            let weight = 0.5 * (hi.0 + lo.0) * 1e-5;
            // dp = -rho g dy: to O(g^2) in a uniform layer; within the
            // midpoint rule's error where T varies across the interface.
            let tolerance = if (y as f64 - 0.5 - h).abs() > 4.0 { 1e-9 } else { 0.05 * weight };
            assert!((dp + weight).abs() < tolerance, "row {y}: dp {dp}, rho g {weight}");
        }
        let n = c.numbers();
        assert_eq!((n.atwood, n.prandtl), (0.05, 1.0));
        assert!((n.gravity - 1e-5 * 128.0 / t0).abs() < 1e-15);
        // The densities' Atwood number equals the temperatures' at equal pressure.
        let (rho_u, rho_d) = (1.0 / (t0 * 0.95), 1.0 / (t0 * 1.05));
        assert!(((rho_u - rho_d) / (rho_u + rho_d) - 0.05).abs() < 1e-12);
    }

    #[test]
    fn bad_cases_say_what_to_change() {
        assert!(case("wavelengths = []").unwrap_err().contains("one wavelength"));
        assert!(case("wavelengths = [64.0]\nwidth = -1.0").unwrap_err().contains("width"));
        assert!(case("wavelengths = [8.0, 32.0]\ninterface = 1.5").unwrap_err().contains("fraction"));
        assert!(case("wavelengths = [64.0]\ncolour = 1").unwrap_err().contains("unknown field"));
        let multi = case("wavelengths = [8.0, 32.0]").unwrap();
        // Modes k = 2..8 of 64 sites; the interface moves, and stays near the middle.
        let h: Vec<f64> = (0..64).map(|x| multi.interface(x)).collect();
        assert!(h.iter().any(|&v| (v - 64.0).abs() > 0.5) && h.iter().all(|&v| (v - 64.0).abs() < 10.0));
    }
}
