//! A suspension's box as one domain or split along z into slabs, one per
//! device, each holding its own planes and a plane received from each
//! neighbour ([`Slab`], as the binary fluid splits).
//!
//! What crosses a slab's faces in a step:
//! - the populations, a plane each way, after the fluid step (the move's
//!   fills read them) and after the move (the next fluid step reads them);
//! - each colloid's lane sums, when its box reaches two slabs: the lanes
//!   run through the box in order, z outermost, so the first slab sums its
//!   own planes' sites and hands its lanes' running sums (the carry) to
//!   the next, which goes on from them ([`Share`]). A lane adds the same
//!   values in the same order as on one domain.
//!
//! The map of solid sites needs no exchange: every slab paints every
//! colloid on the planes it stores. The host's update stays global.
//! Slabs are at least a colloid's box thick, so a box reaches at most two.

use super::{owner, Fluid, SuspensionConfig, SuspensionFields};
use crate::binary::slab::Slab;
use crate::error::{Error, Result};
use crate::solver::KernelReport;
use kernels_gpu::colloids::{box_around, Colloid, Share, Space, Sums};

/// One domain's passes over the sites it stores, on one backend. Each
/// pass is queued (on a GPU) or done (on the CPU) in the order called.
pub(super) trait Part: Send + Sized {
    /// Hands the kernels the colloids as they stand.
    fn upload(&mut self, colloids: &[Colloid]) -> Result<()>;
    /// Its share in each colloid's lane sums.
    fn set_shares(&mut self, shares: &[Share]) -> Result<()>;
    /// The links' sums of the colloids whose share runs in `phase`.
    fn links(&mut self, phase: u32) -> Result<()>;
    /// Each colloid's lanes totalled, in lane order (meaningful for the
    /// colloids whose sums it completes).
    fn totals(&mut self) -> Result<Vec<Sums>>;
    /// As [`Part::totals`], of the partial sums as they stand (what the
    /// last move covered), without summing links.
    fn pending(&self) -> Result<Vec<Sums>>;
    /// The fluid step over its own sites with body force `force`.
    fn fluid(&mut self, force: [f64; 3]) -> Result<()>;
    /// Clears the other map around the colloids' previous centres and
    /// paints it at their centres.
    fn repaint(&mut self) -> Result<()>;
    /// Settles the sites the move changed, for the colloids whose share
    /// runs in `phase`.
    fn cover(&mut self, phase: u32) -> Result<()>;
    /// The map just painted becomes the current one.
    fn end_move(&mut self);
    /// Density, velocity and map of its own planes.
    fn own_fields(&self) -> Result<SuspensionFields>;
    /// The mass of the populations of its own fluid sites.
    fn own_mass(&self) -> Result<f64>;
    /// Waits until queued work is done.
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    /// Registers and occupancy of the fluid's kernel, on a GPU.
    fn kernel_report(&self) -> Option<KernelReport> {
        None
    }
    /// On a GPU: seconds of a fluid launch, a links pass, a move (see
    /// [`Fluid::kernel_seconds`]).
    fn kernel_seconds(&mut self, _colloids: &[Colloid], _reps: u32) -> Result<Option<[f64; 3]>> {
        Ok(None)
    }
    /// Hands each slab's carry (`slots[k]` colloids' lanes) to the next.
    fn hand_carries(parts: &mut [Self], slots: &[u32]) -> Result<()>;
    /// Sends each slab's face planes of populations into its neighbours'
    /// received planes.
    fn exchange(parts: &mut [Self]) -> Result<()>;
}

/// Thinnest slab: with a received plane each side it stores fewer planes
/// than the box, which is how the kernels tell a slab ([`Space::split`]).
const MIN_PLANES: u32 = 3;

/// `config`'s box in `parts` slabs along z, each at least as thick as the
/// box of sites around its largest colloid.
pub(super) fn split(config: &SuspensionConfig, parts: usize) -> Result<Vec<Slab>> {
    let nz = config.size[2];
    if parts < 2 {
        return Ok(vec![Slab::whole(nz)]);
    }
    let space = config.space();
    let thickest = config
        .colloids
        .iter()
        .map(|c| box_around(c.centre, c.radius, &space).1[2] as u32)
        .max()
        .unwrap_or(0)
        .max(MIN_PLANES);
    if nz < thickest * parts as u32 {
        return Err(Error::Setup(format!(
            "{nz} planes along z cannot make {parts} slabs of at least {thickest} (the box of sites around the \
             largest colloid, 2a + 6): use at most {} devices, or a taller box",
            (nz / thickest).max(1)
        )));
    }
    Ok(crate::partition::split(nz, parts as u32)?.into_iter().map(|own| Slab { own, split: true }).collect())
}

/// The kernels' view of `slab` of `config`'s box.
pub(super) fn space_of(config: &SuspensionConfig, slab: &Slab) -> Space {
    let whole = config.space();
    if !slab.split {
        return whole;
    }
    Space { origin: slab.global_z(0, config.size[2]), planes: slab.len() + 2, own: slab.planes(), ..whole }
}

/// Each slab's share (of two or more) in each colloid's lane sums, the
/// colloids centred at their `centre`s, and each slab's count of carry
/// slots.
fn shares(config: &SuspensionConfig, slabs: &[Slab], colloids: &[Colloid]) -> (Vec<Vec<Share>>, Vec<u32>) {
    let count = slabs.len();
    let mut out = vec![vec![Share::default(); colloids.len()]; count];
    let mut slots = vec![0u32; count];
    let (space, nz) = (config.space(), config.size[2] as i64);
    let slab_of = |z: i64| {
        let z = z.rem_euclid(nz) as u32;
        slabs.iter().position(|s| s.own.contains(&z)).expect("the slabs cover the box")
    };
    for (c, colloid) in colloids.iter().enumerate() {
        let (lo, side) = box_around(colloid.centre, colloid.radius, &space);
        let (mut from, mut to) = (lo[2], lo[2] + side[2]);
        if config.walls.is_some() {
            (from, to) = (from.max(0), to.min(nz));
        }
        let (first, last) = (slab_of(from), slab_of(to - 1));
        if first == last {
            out[first][c] = Share::WHOLE;
        } else {
            debug_assert_eq!(last, (first + 1) % count, "a colloid's box reaches two neighbouring slabs");
            let slot = slots[first];
            slots[first] += 1;
            out[first][c] = Share { part: Share::FIRST, slot };
            out[last][c] = Share { part: Share::SECOND, slot };
        }
    }
    (out, slots)
}

/// A suspension's fluid on one domain or on slabs: a step's passes on
/// each part, with the slabs' exchanges between them.
pub(super) struct Domains<P: Part> {
    config: SuspensionConfig,
    slabs: Vec<Slab>,
    parts: Vec<P>,
    /// The slab that completes each colloid's sums.
    completes: Vec<usize>,
    /// Each slab's carry slots.
    slots: Vec<u32>,
    /// How neighbouring devices are connected.
    links: Vec<String>,
}

impl<P: Part> Domains<P> {
    /// `parts` (one per slab of `slabs`, connected by `links`), with the
    /// colloids `colloids` painted.
    pub(super) fn new(
        config: &SuspensionConfig,
        slabs: Vec<Slab>,
        parts: Vec<P>,
        links: Vec<String>,
        colloids: &[Colloid],
    ) -> Result<Self> {
        let mut d = Self { config: config.clone(), slabs, parts, completes: Vec::new(), slots: Vec::new(), links };
        d.share(colloids)?;
        Ok(d)
    }

    fn split(&self) -> bool {
        self.parts.len() > 1
    }

    /// Hands each part the colloids and its shares of them.
    fn share(&mut self, colloids: &[Colloid]) -> Result<()> {
        if !self.split() {
            // One domain's shares are all whole, as each part starts.
            return self.parts[0].upload(colloids);
        }
        let (shares, slots) = shares(&self.config, &self.slabs, colloids);
        self.completes = (0..colloids.len())
            .map(|c| shares.iter().position(|s| matches!(s[c].part, Share::ALL | Share::SECOND)).unwrap_or(0))
            .collect();
        self.slots = slots;
        for (part, shares) in self.parts.iter_mut().zip(&shares) {
            part.upload(colloids)?;
            part.set_shares(shares)?;
        }
        Ok(())
    }

    /// Runs `pass` in both phases on every part, the carries handed on
    /// between them.
    fn phases(&mut self, pass: impl Fn(&mut P, u32) -> Result<()>) -> Result<()> {
        self.parts.iter_mut().try_for_each(|p| pass(p, 0))?;
        if self.split() {
            P::hand_carries(&mut self.parts, &self.slots)?;
            self.parts.iter_mut().try_for_each(|p| pass(p, 1))?;
        }
        Ok(())
    }

    /// Each colloid's sums from the slab that completes them.
    fn gather(&self, mut totals: Vec<Vec<Sums>>) -> Vec<Sums> {
        if !self.split() {
            return totals.swap_remove(0);
        }
        self.completes.iter().enumerate().map(|(c, &k)| totals[k][c]).collect()
    }
}

impl<P: Part> Fluid for Domains<P> {
    fn link_sums(&mut self, colloids: &[Colloid]) -> Result<Vec<Sums>> {
        if colloids.is_empty() {
            return Ok(Vec::new());
        }
        self.parts.iter_mut().try_for_each(|p| p.upload(colloids))?;
        self.phases(|p, phase| p.links(phase))?;
        let totals = self.parts.iter_mut().map(|p| p.totals()).collect::<Result<Vec<_>>>()?;
        Ok(self.gather(totals))
    }

    fn pending(&self, count: usize) -> Result<Vec<Sums>> {
        if count == 0 {
            return Ok(Vec::new());
        }
        let totals = self.parts.iter().map(|p| p.pending()).collect::<Result<Vec<_>>>()?;
        Ok(self.gather(totals))
    }

    fn fluid(&mut self, colloids: &[Colloid], force: [f64; 3]) -> Result<()> {
        for p in &mut self.parts {
            if !colloids.is_empty() {
                p.upload(colloids)?;
            }
            p.fluid(force)?;
        }
        if self.split() {
            P::exchange(&mut self.parts)?;
        }
        Ok(())
    }

    fn moved(&mut self, colloids: &[Colloid]) -> Result<()> {
        if colloids.is_empty() {
            return Ok(());
        }
        self.share(colloids)?;
        self.parts.iter_mut().try_for_each(|p| p.repaint())?;
        self.phases(|p, phase| p.cover(phase))?;
        self.parts.iter_mut().for_each(|p| p.end_move());
        if self.split() {
            P::exchange(&mut self.parts)?;
        }
        Ok(())
    }

    fn fields(&self) -> Result<SuspensionFields> {
        let mut out = SuspensionFields { rho: Vec::new(), u: Vec::new(), solid: Vec::new() };
        for part in &self.parts {
            let f = part.own_fields()?;
            out.rho.extend(f.rho);
            out.u.extend(f.u);
            out.solid.extend(f.solid);
        }
        Ok(out)
    }

    fn fluid_mass(&self) -> Result<f64> {
        self.parts.iter().map(|p| p.own_mass()).sum()
    }

    fn synchronize(&self) -> Result<()> {
        self.parts.iter().try_for_each(|p| p.synchronize())
    }

    fn kernel_report(&self) -> Option<KernelReport> {
        self.parts[0].kernel_report()
    }

    fn links(&self) -> Vec<String> {
        self.links.clone()
    }

    fn kernel_seconds(&mut self, colloids: &[Colloid], reps: u32) -> Result<Option<[f64; 3]>> {
        if self.split() {
            return Ok(None);
        }
        self.parts[0].kernel_seconds(colloids, reps)
    }
}

/// The map entries of the sites of stored planes `planes` of a map.
pub(super) fn owners(map: &[u32], plane: usize, planes: [u32; 2]) -> Vec<Option<u32>> {
    map[planes[0] as usize * plane..planes[1] as usize * plane].iter().map(|&m| owner(m)).collect()
}
