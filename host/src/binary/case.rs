//! Binary-fluid case files: a case file whose top level says
//! `model = "binary-fluid"` ([`is_binary`]) sets up Ludwig's symmetric
//! binary fluid in a periodic box, and `lbm run` runs it here.
//!
//! ```toml
//! model = "binary-fluid"
//! [simulation]
//! lattice = "d3q19"          # d2q9 (size [nx, ny, 1]), d3q19 or d3q27
//! size = [64, 64, 64]
//! steps = 20000
//! precision = "f64"          # f32 on a GPU
//! [fluid]
//! tau = 1.0                  # viscosity (tau - 1/2) / 3
//! collision = "mrt"          # or "bgk"
//! [free_energy]
//! A = -0.02
//! B = 0.02
//! kappa = 0.04
//! mobility = 0.5
//! [initial]
//! kind = "droplet"           # droplet, planar or mixture
//! radius = 12
//! [output]
//! directory = "output/droplet"
//! every = 1000
//! ```

use super::{BinaryCollision, BinaryConfig};
use crate::error::{Error, Result};
use crate::packing::SplitMix;
use crate::solver::{LatticeKind, Named, Precision};
use kernels_gpu::binary::FreeEnergy;
use std::path::{Path, PathBuf};

/// The top-level `model` of a binary-fluid case.
pub const MODEL: &str = "binary-fluid";

/// A binary-fluid case file.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BinaryCase {
    /// `"binary-fluid"`.
    pub model: String,
    /// Lattice, box, steps, precision, device.
    pub simulation: Simulation,
    /// The fluid's relaxation.
    #[serde(default)]
    pub fluid: Fluid,
    /// `A`, `B`, `κ` and the mobility.
    pub free_energy: FreeEnergyKeys,
    /// The order parameter at the start.
    pub initial: Initial,
    /// Pictures and the log of measurements.
    #[serde(default)]
    pub output: Output,
}

/// `[simulation]`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Simulation {
    /// `d2q9`, `d3q19` (default) or `d3q27`.
    #[serde(default = "default_lattice")]
    pub lattice: String,
    /// Sites along x, y, z (z = 1 for D2Q9), periodic.
    pub size: [u32; 3],
    /// Time steps.
    pub steps: u64,
    /// `f64` (default) or `f32` (GPU).
    #[serde(default = "default_precision")]
    pub precision: String,
    /// GPU ordinal (default 0).
    #[serde(default)]
    pub device: usize,
    /// GPU ordinals to split the box over along z, a slab each (3D
    /// lattices; instead of `device`).
    #[serde(default)]
    pub devices: Vec<usize>,
}

impl Simulation {
    /// The GPUs the case names: `devices`, or else `device`.
    pub fn gpus(&self) -> Vec<usize> {
        named_gpus(self.device, &self.devices)
    }
}

/// The GPUs a case's `[simulation]` names: `devices` (a slab each), or
/// else `device`.
pub(crate) fn named_gpus(device: usize, devices: &[usize]) -> Vec<usize> {
    if devices.is_empty() {
        vec![device]
    } else {
        devices.to_vec()
    }
}

/// Whether a case's `[simulation]` names one GPU or several, not both.
pub(crate) fn check_gpus(device: usize, devices: &[usize]) -> std::result::Result<(), String> {
    if device != 0 && !devices.is_empty() {
        return Err("[simulation] names both device and devices: keep devices to split the box over GPUs, \
                    or device for one"
            .into());
    }
    Ok(())
}

fn default_lattice() -> String {
    "d3q19".into()
}
fn default_precision() -> String {
    "f64".into()
}

/// `[fluid]`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fluid {
    /// Relaxation time (default 1).
    #[serde(default = "default_tau")]
    pub tau: f64,
    /// `mrt` (default, Ludwig's) or `bgk`.
    #[serde(default = "default_collision")]
    pub collision: String,
}

fn default_tau() -> f64 {
    1.0
}
fn default_collision() -> String {
    "mrt".into()
}

impl Default for Fluid {
    fn default() -> Self {
        Self { tau: default_tau(), collision: default_collision() }
    }
}

/// `[free_energy]`: `A/2 φ² + B/4 φ⁴ + κ/2 |∇φ|²`, and the mobility.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FreeEnergyKeys {
    /// `A` (negative).
    #[serde(rename = "A")]
    pub a: f64,
    /// `B` (positive).
    #[serde(rename = "B")]
    pub b: f64,
    /// `κ` (positive).
    pub kappa: f64,
    /// The mobility `M`.
    pub mobility: f64,
}

/// `[initial]`: the order parameter at the start (the fluid at rest).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Initial {
    /// A ball (a disc in 2D) of the `+φ*` phase in the `−φ*` phase, with
    /// the equilibrium `tanh` profile.
    Droplet {
        /// Radius, sites.
        radius: f64,
        /// Centre, sites (default the box's centre).
        #[serde(default)]
        centre: Option<[f64; 3]>,
    },
    /// A slab of the `+φ*` phase across the box, normal to an axis: two
    /// planar interfaces with the equilibrium profile.
    Planar {
        /// `x` (default), `y` or `z`.
        #[serde(default = "default_normal")]
        normal: String,
        /// Thickness of the slab as a fraction of the box (default 0.5).
        #[serde(default = "default_half")]
        fraction: f64,
    },
    /// A random mixture: `φ` uniform in `m ± noise` around the mean `m` of
    /// the `+φ*` phase's volume fraction.
    Mixture {
        /// Volume fraction of the `+φ*` phase (default 0.5).
        #[serde(default = "default_half")]
        fraction: f64,
        /// Amplitude of the noise, in units of `φ*` (default 0.05).
        #[serde(default = "default_noise")]
        noise: f64,
        /// Seed of the noise (default 1).
        #[serde(default = "default_seed")]
        seed: u64,
    },
}

fn default_normal() -> String {
    "x".into()
}
fn default_half() -> f64 {
    0.5
}
fn default_noise() -> f64 {
    0.05
}
fn default_seed() -> u64 {
    1
}

/// `[output]`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Directory of the pictures and the log.
    #[serde(default = "default_directory")]
    pub directory: PathBuf,
    /// Steps between pictures and measurements (0: only the first and last).
    #[serde(default)]
    pub every: u64,
}

fn default_directory() -> PathBuf {
    "output/binary-fluid".into()
}

impl Default for Output {
    fn default() -> Self {
        Self { directory: default_directory(), every: 0 }
    }
}

/// Whether the case file at `path` is a binary-fluid one.
pub fn is_binary(path: &Path) -> Result<bool> {
    crate::case::names_model(path, MODEL)
}

impl BinaryCase {
    /// Reads and checks a case file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.into(), source })?;
        let case: Self =
            toml::from_str(&text).map_err(|e| Error::Case { path: path.into(), message: e.to_string() })?;
        let case_error = |message: String| Error::Case { path: path.into(), message };
        case.check().map_err(case_error)?;
        case.config().map_err(|e| case_error(e.to_string()))?.validate().map_err(|e| case_error(e.to_string()))?;
        Ok(case)
    }

    fn check(&self) -> std::result::Result<(), String> {
        if !self.model.eq_ignore_ascii_case(MODEL) {
            return Err(format!("model `{}`: the binary-fluid cases run model = \"{MODEL}\"", self.model));
        }
        check_gpus(self.simulation.device, &self.simulation.devices)?;
        if self.simulation.devices.len() > 1 {
            let config = self.config().map_err(|e| e.to_string())?;
            super::slab::Slab::split(&config, self.simulation.devices.len()).map_err(|e| e.to_string())?;
        }
        match &self.initial {
            Initial::Droplet { radius, .. } if radius.is_nan() || *radius <= 0.0 => {
                Err(format!("[initial] radius = {radius}: give a positive radius in sites"))
            }
            Initial::Planar { normal, fraction } => {
                if axis(normal).is_none() {
                    return Err(format!("[initial] normal = \"{normal}\": give \"x\", \"y\" or \"z\""));
                }
                if !(*fraction > 0.0 && *fraction < 1.0) {
                    return Err(format!(
                        "[initial] fraction = {fraction}: give the slab's share of the box, between 0 and 1"
                    ));
                }
                Ok(())
            }
            Initial::Mixture { fraction, noise, .. } => {
                if !(*fraction > 0.0 && *fraction < 1.0) {
                    return Err(format!("[initial] fraction = {fraction}: give a volume fraction between 0 and 1"));
                }
                if !(*noise >= 0.0 && noise.is_finite()) {
                    return Err(format!("[initial] noise = {noise}: give a non-negative amplitude"));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The solver's set-up.
    pub fn config(&self) -> Result<BinaryConfig> {
        let s = &self.simulation;
        let lattice = LatticeKind::from_name(&s.lattice)?;
        let precision = match s.precision.to_ascii_lowercase().as_str() {
            "f64" => Precision::F64,
            "f32" => Precision::F32,
            other => return Err(Error::Setup(format!("precision = \"{other}\": give f64 or f32"))),
        };
        let collision = match self.fluid.collision.to_ascii_lowercase().as_str() {
            "mrt" => BinaryCollision::Mrt,
            "bgk" => BinaryCollision::Bgk,
            other => return Err(Error::Setup(format!("collision = \"{other}\": give mrt or bgk"))),
        };
        let fe = &self.free_energy;
        Ok(BinaryConfig {
            size: s.size,
            lattice,
            tau: self.fluid.tau,
            collision,
            free_energy: FreeEnergy::new(fe.a, fe.b, fe.kappa),
            mobility: fe.mobility,
            precision,
        })
    }

    /// The initial order parameter at `(x, y, z)`.
    pub fn initial(&self) -> impl Fn(u32, u32, u32) -> f64 + Sync + '_ {
        let fe = &self.free_energy;
        let fe = FreeEnergy::<f64>::new(fe.a, fe.b, fe.kappa);
        let (phi_star, xi) = (fe.phi_star(), fe.width());
        let size = self.simulation.size.map(f64::from);
        let sites = size.map(|n| n as u64);
        move |x, y, z| {
            let p = [x as f64, y as f64, z as f64];
            match &self.initial {
                Initial::Droplet { radius, centre } => {
                    let c = centre.unwrap_or(size.map(|n| n / 2.0));
                    // The nearest image of the centre: the box is periodic.
                    let d2: f64 = (0..3)
                        .map(|a| {
                            let d = (p[a] - c[a]).abs() % size[a];
                            d.min(size[a] - d).powi(2)
                        })
                        .sum();
                    -phi_star * ((d2.sqrt() - radius) / xi).tanh()
                }
                Initial::Planar { normal, fraction } => {
                    let a = axis(normal).unwrap_or(0);
                    let (lo, hi) = (size[a] * (1.0 - fraction) / 2.0, size[a] * (1.0 + fraction) / 2.0);
                    // The slab between lo and hi, each side's profile.
                    phi_star * ((p[a] - lo) / xi).tanh() * ((hi - p[a]) / xi).tanh()
                }
                Initial::Mixture { fraction, noise, seed } => {
                    let site = x as u64 + sites[0] * (y as u64 + sites[1] * z as u64);
                    let mut rng = SplitMix(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ site);
                    phi_star * ((2.0 * fraction - 1.0) + noise * (2.0 * rng.unit() - 1.0))
                }
            }
        }
    }
}

/// The axis named `name`.
fn axis(name: &str) -> Option<usize> {
    ["x", "y", "z"].iter().position(|a| name.eq_ignore_ascii_case(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> std::result::Result<BinaryCase, String> {
        let case: BinaryCase = toml::from_str(text).map_err(|e| e.to_string())?;
        case.check()?;
        case.config().map_err(|e| e.to_string())?.validate().map_err(|e| e.to_string())?;
        Ok(case)
    }

    const DROPLET: &str = r#"
        model = "binary-fluid"
        [simulation]
        size = [32, 32, 32]
        steps = 10
        [free_energy]
        A = -0.02
        B = 0.02
        kappa = 0.04
        mobility = 0.5
        [initial]
        kind = "droplet"
        radius = 8
    "#;

    #[test]
    fn a_droplet_case_reads_with_its_defaults() {
        let case = parse(DROPLET).unwrap();
        let c = case.config().unwrap();
        assert_eq!(
            (c.lattice, c.collision, c.precision, c.tau),
            (LatticeKind::D3Q19, BinaryCollision::Mrt, Precision::F64, 1.0)
        );
        let phi = case.initial();
        // Inside, on the interface (the profile's zero), and outside.
        assert!((phi(16, 16, 16) - 1.0).abs() < 1e-3);
        assert!(phi(24, 16, 16).abs() < 1e-12);
        assert!((phi(0, 0, 0) + 1.0).abs() < 1e-3);
    }

    #[test]
    fn devices_split_the_box() {
        let one = parse(&DROPLET.replace("steps = 10", "steps = 10\n        device = 2")).unwrap();
        assert_eq!(one.simulation.gpus(), vec![2]);
        let two = parse(&DROPLET.replace("steps = 10", "steps = 10\n        devices = [0, 1]")).unwrap();
        assert_eq!(two.simulation.gpus(), vec![0, 1]);
    }

    #[test]
    fn a_mixture_has_its_mean_and_noise() {
        let text = DROPLET.replace(
            "kind = \"droplet\"\n        radius = 8",
            "kind = \"mixture\"\n        fraction = 0.3\n        noise = 0.1",
        );
        let case = parse(&text).unwrap();
        let phi = case.initial();
        let values: Vec<f64> = (0..32).flat_map(|x| (0..32).map(move |y| (x, y))).map(|(x, y)| phi(x, y, 3)).collect();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        assert!(values.iter().all(|v| (v - (-0.4)).abs() <= 0.1 + 1e-12));
        assert!((mean + 0.4).abs() < 0.01, "mean {mean}");
    }

    #[test]
    fn bad_cases_say_what_to_change() {
        let cases = [
            (DROPLET.replace("radius = 8", "radius = -1"), "positive radius"),
            (DROPLET.replace("kind = \"droplet\"", "kind = \"bubble\""), "bubble"),
            (DROPLET.replace("A = -0.02", "A = 0.02"), "A < 0"),
            (DROPLET.replace("steps = 10", "steps = 10\n        lattice = \"d3q15\""), "d2q9, d3q19, d3q27"),
            (DROPLET.replace("steps = 10", "steps = 10\n        precision = \"f16\""), "f64 or f32"),
            (DROPLET.replace("mobility = 0.5", "mobility = 0.5\n        mobilty = 1"), "mobilty"),
            (DROPLET.replace("size = [32, 32, 32]", "size = [32, 32, 32]\n        lattice = \"d2q9\""), "z = 1"),
            (DROPLET.replace("steps = 10", "steps = 10\n        device = 1\n        devices = [0, 1]"), "both device"),
            (
                DROPLET.replace(
                    "steps = 10",
                    "steps = 10\n        devices = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0]",
                ),
                "at most 16",
            ),
        ];
        for (text, want) in cases {
            let e = parse(&text).unwrap_err();
            assert!(e.contains(want), "{want}: {e}");
        }
    }
}
