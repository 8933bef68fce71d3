//! Colloid case files: a case file whose top level says `model =
//! "colloids"` ([`is_colloids`]) sets up solid spheres in one fluid (see
//! the module above), and `lbm run` runs it.
//!
//! ```toml
//! model = "colloids"
//! [simulation]
//! lattice = "d3q19"          # or d3q27
//! size = [96, 96, 48]
//! steps = 20000
//! tau = 1.0                  # viscosity (tau - 1/2) / 3
//! collision = "mrt"          # or "bgk"
//! precision = "f64"          # f32 on a GPU
//! [fluid]
//! force = [0, 0, 0]          # body force on every fluid site
//! balance = true             # without walls, the fluid takes the colloids' forces back
//! [walls]                    # walls close z; without this table z is periodic
//! bottom_velocity = [-0.02, 0, 0]
//! top_velocity = [0.02, 0, 0]
//! [[colloid]]                # any number
//! centre = [48, 48, 24]
//! radius = 5
//! [random]                   # and more, placed at random after those listed
//! count = 300
//! radius = 3
//! [interactions]
//! soft_sphere = "ludwig"     # or { epsilon, sigma, nu, cutoff }
//! lubrication = { pair_cutoff = 0.5, wall_cutoff = 0.5 }
//! [output]
//! directory = "output/suspension"
//! every = 500
//! ```

use super::{ColloidSpec, Interactions, Lubrication, SoftSphere, SuspensionConfig};
use crate::binary::BinaryCollision;
use crate::error::{Error, Result};
use crate::packing::SplitMix;
use crate::solver::{LatticeKind, Named, Precision};
use kernels_gpu::colloids::{dot, Space};
use std::path::{Path, PathBuf};

/// The top-level `model` of a colloid case.
pub const MODEL: &str = "colloids";

/// A colloid case file.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColloidCase {
    /// `"colloids"`.
    pub model: String,
    /// Lattice, box, steps, relaxation, precision, device(s).
    pub simulation: Simulation,
    /// The body force on the fluid.
    #[serde(default)]
    pub fluid: Fluid,
    /// Walls closing z (absent: periodic along z).
    #[serde(default)]
    pub walls: Option<Walls>,
    /// The colloids listed one by one (`[[colloid]]`).
    #[serde(default, rename = "colloid")]
    pub colloids: Vec<ColloidKeys>,
    /// Colloids placed at random, after those listed.
    #[serde(default)]
    pub random: Option<Random>,
    /// Soft repulsion and lubrication between close surfaces.
    #[serde(default)]
    pub interactions: InteractionKeys,
    /// Records and pictures.
    #[serde(default)]
    pub output: Output,
}

/// `[simulation]`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Simulation {
    /// `d3q19` (default) or `d3q27`.
    #[serde(default = "default_lattice")]
    pub lattice: String,
    /// Sites along x, y, z.
    pub size: [u32; 3],
    /// Time steps.
    pub steps: u64,
    /// Relaxation time (default 1): viscosity `(tau − 1/2)/3`.
    #[serde(default = "default_tau")]
    pub tau: f64,
    /// `mrt` (default, Ludwig's) or `bgk`.
    #[serde(default = "default_collision")]
    pub collision: String,
    /// `f64` (default) or `f32` (GPU).
    #[serde(default = "default_precision")]
    pub precision: String,
    /// GPU ordinal (default 0).
    #[serde(default)]
    pub device: usize,
    /// GPU ordinals to split the box over along z, a slab each (instead
    /// of `device`).
    #[serde(default)]
    pub devices: Vec<usize>,
}

impl Simulation {
    /// The GPUs the case names: `devices`, or else `device`.
    pub fn gpus(&self) -> Vec<usize> {
        crate::binary::case::named_gpus(self.device, &self.devices)
    }
}

fn default_lattice() -> String {
    "d3q19".into()
}
fn default_tau() -> f64 {
    1.0
}
fn default_collision() -> String {
    "mrt".into()
}
fn default_precision() -> String {
    "f64".into()
}
fn default_true() -> bool {
    true
}
fn default_one() -> f64 {
    1.0
}
fn default_seed() -> u64 {
    1
}

/// `[fluid]`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fluid {
    /// Body force on every fluid site (default zero).
    #[serde(default)]
    pub force: [f64; 3],
    /// Without walls, a uniform force on the fluid balances the colloids'
    /// external forces (default true), as a pressure gradient would.
    #[serde(default = "default_true")]
    pub balance: bool,
}

impl Default for Fluid {
    fn default() -> Self {
        Self { force: [0.0; 3], balance: true }
    }
}

/// `[walls]`: walls half a site below `z = 0` and above `z = nz − 1`.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Walls {
    /// The bottom wall's velocity (default zero).
    #[serde(default)]
    pub bottom_velocity: [f64; 3],
    /// The top wall's velocity (default zero).
    #[serde(default)]
    pub top_velocity: [f64; 3],
}

/// `[[colloid]]`: one colloid.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColloidKeys {
    /// Centre (sites sit at integer coordinates).
    pub centre: [f64; 3],
    /// Radius, at least 1.
    pub radius: f64,
    /// Initial velocity (default zero).
    #[serde(default)]
    pub velocity: [f64; 3],
    /// Initial angular velocity (default zero).
    #[serde(default)]
    pub spin: [f64; 3],
    /// Constant external force (default zero).
    #[serde(default)]
    pub force: [f64; 3],
    /// Constant external torque (default zero).
    #[serde(default)]
    pub torque: [f64; 3],
    /// Moves at its initial velocity and spin whatever the fluid does.
    #[serde(default)]
    pub fixed: bool,
    /// Density (default 1, the fluid's).
    #[serde(default = "default_one")]
    pub density: f64,
}

/// `[random]`: `count` colloids placed uniformly at random, none closer
/// than `min_gap` to another's surface or to a wall.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Random {
    /// How many.
    pub count: usize,
    /// Their radius.
    pub radius: f64,
    /// Seed of the placement (default 1).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// External force on each (default zero).
    #[serde(default)]
    pub force: [f64; 3],
    /// Smallest gap between surfaces, and between a surface and a wall
    /// (default 1 site).
    #[serde(default = "default_one")]
    pub min_gap: f64,
}

/// `[interactions]`.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InteractionKeys {
    /// `"ludwig"` or `{ epsilon, sigma, nu, cutoff }`.
    #[serde(default)]
    pub soft_sphere: Option<toml::Value>,
    /// `{ pair_cutoff, wall_cutoff }`.
    #[serde(default)]
    pub lubrication: Option<LubricationKeys>,
}

/// `soft_sphere = { epsilon, sigma, nu, cutoff }`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SoftSphereKeys {
    epsilon: f64,
    sigma: f64,
    nu: f64,
    cutoff: f64,
}

/// `lubrication = { pair_cutoff, wall_cutoff }`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LubricationKeys {
    /// The gap below which two colloids take the correction.
    pub pair_cutoff: f64,
    /// The gap below which a colloid and a wall take it.
    pub wall_cutoff: f64,
}

/// `[output]`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Directory of the records and pictures.
    #[serde(default = "default_directory")]
    pub directory: PathBuf,
    /// Steps between records (default a hundredth of the run; 0: only the
    /// first and last).
    #[serde(default)]
    pub every: Option<u64>,
    /// Draw the speed on the middle y slice at every record (default true).
    #[serde(default = "default_true")]
    pub pictures: bool,
}

fn default_directory() -> PathBuf {
    "output/colloids".into()
}

impl Default for Output {
    fn default() -> Self {
        Self { directory: default_directory(), every: None, pictures: true }
    }
}

/// Whether the case file at `path` is a colloid one.
pub fn is_colloids(path: &Path) -> Result<bool> {
    crate::case::names_model(path, MODEL)
}

impl ColloidCase {
    /// Reads and checks a case file: its keys, the random placement and the
    /// solver's set-up.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io { path: path.into(), source })?;
        Self::parse(&text).map_err(|message| Error::Case { path: path.into(), message })
    }

    /// Parses and checks the text of a case file.
    pub fn parse(text: &str) -> std::result::Result<Self, String> {
        let case: Self = toml::from_str(text).map_err(|e| e.to_string())?;
        case.check()?;
        let config = case.config().map_err(|e| e.to_string())?;
        config.validate().map_err(|e| e.to_string())?;
        if case.simulation.devices.len() > 1 {
            super::slabs::split(&config, case.simulation.devices.len()).map_err(|e| e.to_string())?;
        }
        Ok(case)
    }

    fn check(&self) -> std::result::Result<(), String> {
        if !self.model.eq_ignore_ascii_case(MODEL) {
            return Err(format!("model `{}`: the colloid cases run model = \"{MODEL}\"", self.model));
        }
        if self.simulation.size.contains(&0) {
            return Err(format!("[simulation] size = {:?}: every axis needs sites", self.simulation.size));
        }
        crate::binary::case::check_gpus(self.simulation.device, &self.simulation.devices)?;
        if let Some(r) = &self.random {
            if !(r.radius >= 1.0 && r.radius.is_finite()) {
                return Err(format!("[random] radius = {}: give a radius of at least 1 site", r.radius));
            }
            if !(r.min_gap >= 0.0 && r.min_gap.is_finite()) {
                return Err(format!("[random] min_gap = {}: give a gap of 0 or more sites", r.min_gap));
            }
            if !r.force.iter().all(|f| f.is_finite()) {
                return Err(format!("[random] force = {:?}: give finite numbers", r.force));
            }
        }
        self.interactions().map(|_| ())
    }

    /// The lattice, checked to be one colloids run on.
    fn lattice(&self) -> Result<LatticeKind> {
        LatticeKind::from_name(&self.simulation.lattice)
    }

    /// `[interactions]` as the solver takes them.
    pub fn interactions(&self) -> std::result::Result<Interactions, String> {
        let i = &self.interactions;
        let soft = match &i.soft_sphere {
            None => None,
            Some(toml::Value::String(s)) if s.eq_ignore_ascii_case("ludwig") => Some(SoftSphere::LUDWIG),
            Some(toml::Value::String(s)) => {
                return Err(format!(
                    "[interactions] soft_sphere = \"{s}\": give \"ludwig\" or a table {{ epsilon, sigma, nu, cutoff }}"
                ))
            }
            Some(value) => {
                let k: SoftSphereKeys =
                    value.clone().try_into().map_err(|e| format!("[interactions] soft_sphere: {e}"))?;
                Some(SoftSphere { epsilon: k.epsilon, sigma: k.sigma, nu: k.nu, cutoff: k.cutoff })
            }
        };
        let lubrication =
            i.lubrication.as_ref().map(|l| Lubrication { pair_cutoff: l.pair_cutoff, wall_cutoff: l.wall_cutoff });
        Ok(Interactions { soft, lubrication })
    }

    /// Steps between records for a run of `steps` steps (at least 1).
    pub fn every(&self, steps: u64) -> u64 {
        match self.output.every {
            None => (steps / 100).max(1),
            Some(0) => steps.max(1),
            Some(n) => n,
        }
    }

    /// The solver's set-up: the colloids listed, then those placed at random.
    pub fn config(&self) -> Result<SuspensionConfig> {
        let s = &self.simulation;
        let lattice = self.lattice()?;
        let precision = match s.precision.to_ascii_lowercase().as_str() {
            "f64" => Precision::F64,
            "f32" => Precision::F32,
            other => return Err(Error::Setup(format!("precision = \"{other}\": give f64 or f32"))),
        };
        let collision = match s.collision.to_ascii_lowercase().as_str() {
            "mrt" => BinaryCollision::Mrt,
            "bgk" => BinaryCollision::Bgk,
            other => return Err(Error::Setup(format!("collision = \"{other}\": give mrt or bgk"))),
        };
        let interactions = self.interactions().map_err(Error::Setup)?;
        let mut colloids: Vec<ColloidSpec> = self
            .colloids
            .iter()
            .map(|c| ColloidSpec {
                centre: c.centre,
                radius: c.radius,
                velocity: c.velocity,
                spin: c.spin,
                force: c.force,
                torque: c.torque,
                fixed: c.fixed,
                density: c.density,
            })
            .collect();
        let walls = self.walls.as_ref().map(|w| [w.bottom_velocity, w.top_velocity]);
        if let Some(r) = &self.random {
            let space = Space::whole(s.size, walls.is_some());
            let placed = place(&space, &colloids, r).map_err(Error::Setup)?;
            colloids.extend(placed);
        }
        Ok(SuspensionConfig {
            size: s.size,
            lattice,
            tau: s.tau,
            collision,
            precision,
            walls,
            force: self.fluid.force,
            balance: self.fluid.balance,
            colloids,
            interactions,
        })
    }
}

/// The sum of the colloids' volumes `4/3 π a³` over the box's.
pub fn volume_fraction(config: &SuspensionConfig) -> f64 {
    let solid: f64 = config.colloids.iter().map(|c| 4.0 / 3.0 * std::f64::consts::PI * c.radius.powi(3)).sum();
    solid / config.sites() as f64
}

/// Places `r.count` colloids of radius `r.radius` uniformly at random
/// (rejection sampling, the surfaces at least `r.min_gap` from one another,
/// from those `listed`, and from the walls), through a grid of bins.
fn place(space: &Space, listed: &[ColloidSpec], r: &Random) -> std::result::Result<Vec<ColloidSpec>, String> {
    let (a, gap) = (r.radius, r.min_gap);
    let size = space.size.map(f64::from);
    let walled = space.walls != 0;
    // Where centres may lie along each axis.
    let range = |axis: usize| -> (f64, f64) {
        if axis == 2 && walled {
            (a + gap - 0.5, size[2] - 0.5 - a - gap)
        } else {
            (0.0, size[axis])
        }
    };
    let (z_lo, z_hi) = range(2);
    if r.count > 0 && z_lo > z_hi {
        return Err(format!(
            "[random] colloids of radius {a} with min_gap {gap} do not fit between the walls {} sites apart: \
             lower the radius or min_gap, or enlarge the box along z",
            space.size[2]
        ));
    }
    let a_max = listed.iter().map(|c| c.radius).fold(a, f64::max);
    // A bin at least as wide as the farthest two centres can be and still
    // be too close, so a candidate meets only its own and the next bins.
    let cell = a + a_max + gap;
    let bins: [usize; 3] = std::array::from_fn(|k| ((size[k] / cell).floor() as usize).max(1));
    let bin_of = |c: [f64; 3]| -> [usize; 3] {
        std::array::from_fn(|k| ((c[k] / size[k] * bins[k] as f64).floor().max(0.0) as usize).min(bins[k] - 1))
    };
    let index = |b: [usize; 3]| b[0] + bins[0] * (b[1] + bins[1] * b[2]);
    let mut members: Vec<Vec<(usize, f64)>> = vec![Vec::new(); bins.iter().product()];
    let mut centres: Vec<[f64; 3]> = Vec::with_capacity(listed.len() + r.count);
    for (k, c) in listed.iter().enumerate() {
        members[index(bin_of(c.centre))].push((k, c.radius));
        centres.push(c.centre);
    }
    let mut rng = SplitMix(r.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x636f_6c6c_6f69_6473);
    let mut placed = Vec::with_capacity(r.count);
    let tries = 1000 * r.count as u64;
    let mut near = Vec::with_capacity(27);
    let mut tried = 0u64;
    while placed.len() < r.count && tried < tries {
        tried += 1;
        let c: [f64; 3] = std::array::from_fn(|k| {
            let (lo, hi) = range(k);
            lo + (hi - lo) * rng.unit()
        });
        let b = bin_of(c);
        near.clear();
        for dz in -1i64..=1 {
            let z = b[2] as i64 + dz;
            if walled && !(0..bins[2] as i64).contains(&z) {
                continue;
            }
            for dy in -1i64..=1 {
                for dx in -1i64..=1 {
                    let n = [b[0] as i64 + dx, b[1] as i64 + dy, z];
                    near.push(index(std::array::from_fn(|k| n[k].rem_euclid(bins[k] as i64) as usize)));
                }
            }
        }
        // With fewer than three bins along an axis, neighbours repeat.
        near.sort_unstable();
        near.dedup();
        let clear = near.iter().flat_map(|&m| &members[m]).all(|&(j, radius)| {
            let d = space.displacement(c, centres[j]);
            dot(d, d).sqrt() - a - radius >= gap
        });
        if clear {
            members[index(b)].push((centres.len(), a));
            centres.push(c);
            placed.push(ColloidSpec { force: r.force, ..ColloidSpec::at(c, a) });
        }
    }
    if placed.len() < r.count {
        return Err(format!(
            "[random] could place only {} of {} colloids of radius {a} (min_gap {gap}) in {tried} tries: lower \
             count or radius, or enlarge the box",
            placed.len(),
            r.count
        ));
    }
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"
        model = "colloids"
        [simulation]
        size = [24, 24, 32]
        steps = 10
        [walls]
        [[colloid]]
        centre = [12, 12, 20]
        radius = 4
        force = [0, 0, -0.01]
        [interactions]
        soft_sphere = "ludwig"
        lubrication = { pair_cutoff = 0.5, wall_cutoff = 0.5 }
    "#;

    #[test]
    fn a_case_reads_with_its_defaults() {
        let case = ColloidCase::parse(ONE).unwrap();
        let c = case.config().unwrap();
        assert_eq!(
            (c.lattice, c.collision, c.precision, c.tau, c.force, c.balance),
            (LatticeKind::D3Q19, BinaryCollision::Mrt, Precision::F64, 1.0, [0.0; 3], true)
        );
        assert_eq!(c.walls, Some([[0.0; 3]; 2]));
        assert_eq!(
            c.colloids,
            vec![ColloidSpec { force: [0.0, 0.0, -0.01], ..ColloidSpec::at([12.0, 12.0, 20.0], 4.0) }]
        );
        assert_eq!(c.interactions.soft, Some(SoftSphere::LUDWIG));
        assert_eq!(c.interactions.lubrication, Some(Lubrication { pair_cutoff: 0.5, wall_cutoff: 0.5 }));
        assert_eq!((case.every(10), case.every(1000), case.output.pictures), (1, 10, true));
        let frac = volume_fraction(&c);
        assert!((frac - 4.0 / 3.0 * std::f64::consts::PI * 64.0 / (24.0 * 24.0 * 32.0)).abs() < 1e-15);
    }

    #[test]
    fn devices_split_the_box_if_its_slabs_hold_a_colloid_box() {
        let two = ColloidCase::parse(&ONE.replace("steps = 10", "steps = 10\n        devices = [0, 1]")).unwrap();
        assert_eq!(two.simulation.gpus(), vec![0, 1]);
        let one = ColloidCase::parse(&ONE.replace("steps = 10", "steps = 10\n        device = 2")).unwrap();
        assert_eq!(one.simulation.gpus(), vec![2]);
        // A radius-4 colloid's box is 14 planes: 32 make two slabs, not three.
        for (text, says) in [
            (ONE.replace("steps = 10", "steps = 10\n        devices = [0, 1, 2]"), "use at most 2 devices"),
            (ONE.replace("steps = 10", "steps = 10\n        device = 1\n        devices = [0, 1]"), "both device"),
        ] {
            let err = ColloidCase::parse(&text).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn periodic_without_walls_and_a_soft_sphere_table() {
        let text = ONE.replace("[walls]\n", "").replace(
            "soft_sphere = \"ludwig\"",
            "soft_sphere = { epsilon = 0.001, sigma = 0.2, nu = 2, cutoff = 0.5 }",
        );
        let c = ColloidCase::parse(&text).unwrap().config().unwrap();
        assert_eq!(c.walls, None);
        assert_eq!(c.interactions.soft, Some(SoftSphere { epsilon: 0.001, sigma: 0.2, nu: 2.0, cutoff: 0.5 }));
    }

    #[test]
    fn random_colloids_come_after_those_listed_and_keep_their_gap() {
        let text = format!("{ONE}\n[random]\ncount = 20\nradius = 2.5\nseed = 3\nforce = [0.001, 0, 0]\n");
        let case = ColloidCase::parse(&text).unwrap();
        let c = case.config().unwrap();
        assert_eq!(c.colloids.len(), 21);
        assert_eq!(c.colloids[0].radius, 4.0);
        let space = c.space();
        for (i, p) in c.colloids.iter().enumerate() {
            if i > 0 {
                assert_eq!((p.radius, p.force), (2.5, [0.001, 0.0, 0.0]));
                assert!(p.centre[2] - 2.5 + 0.5 >= 1.0 && 31.5 - p.centre[2] - 2.5 >= 1.0, "{p:?}");
            }
            for q in &c.colloids[..i] {
                let d = space.displacement(p.centre, q.centre);
                assert!(dot(d, d).sqrt() - p.radius - q.radius >= 1.0, "{p:?} {q:?}");
            }
        }
        // The same seed places them alike; another seed elsewhere.
        assert_eq!(case.config().unwrap(), c);
        let other = ColloidCase::parse(&text.replace("seed = 3", "seed = 4")).unwrap().config().unwrap();
        assert_ne!(other.colloids[1].centre, c.colloids[1].centre);
    }

    #[test]
    fn too_many_random_colloids_say_so() {
        let text = format!("{ONE}\n[random]\ncount = 400\nradius = 3\n");
        let e = ColloidCase::parse(&text).unwrap_err();
        assert!(e.contains("could place only") && e.contains("of 400 colloids of radius 3"), "{e}");
    }

    #[test]
    fn bad_cases_say_what_to_change() {
        let cases = [
            (ONE.replace("steps = 10", "steps = 10\n        lattice = \"d3q15\""), "d3q19"),
            (ONE.replace("steps = 10", "steps = 10\n        lattice = \"d2q9\""), "d3q19 or d3q27"),
            (ONE.replace("steps = 10", "steps = 10\n        precision = \"f16\""), "f64 or f32"),
            (ONE.replace("steps = 10", "steps = 10\n        collision = \"trt\""), "mrt or bgk"),
            (ONE.replace("steps = 10", "steps = 10\n        tau = 0.5"), "tau"),
            (ONE.replace("radius = 4", "radius = 4\n        radus = 4"), "radus"),
            (ONE.replace("[walls]", "[walls]\n        top = [0, 0, 0]"), "top"),
            (ONE.replace("soft_sphere = \"ludwig\"", "soft_sphere = \"hard\""), "\"ludwig\""),
            (ONE.replace("soft_sphere = \"ludwig\"", "soft_sphere = { epsilon = 1 }"), "sigma"),
            (ONE.replace("centre = [12, 12, 20]", "centre = [12, 12, 28]"), "cuts a wall"),
            (ONE.replace("model = \"colloids\"", "model = \"colloid\""), "model"),
            (format!("{ONE}\n[[colloid]]\ncentre = [14, 12, 20]\nradius = 2\n"), "overlap"),
            (format!("{ONE}\n[random]\ncount = 4\nradius = 0.5\n"), "at least 1 site"),
            (format!("{ONE}\n[random]\ncount = 4\nradius = 20\n"), "between the walls"),
        ];
        for (text, want) in cases {
            let e = ColloidCase::parse(&text).unwrap_err();
            assert!(e.contains(want), "{want}: {e}");
        }
    }
}
