//! The refined step on the CPU: the recursion over levels, each level's
//! update by rayon over its cells calling the kernel crate's per-cell
//! functions (those of a uniform sparse grid, and the interface ones of
//! [`kernels_gpu::levels`]).

use super::split::Transfer;
use super::split_run::{pair, Partition};
use super::{Fusion, Levels, Refinement};
use crate::curved::CurvedTables;
use crate::domain::OpenGroup;
use crate::error::{Error, Result};
use crate::solver::BackendKind;
use crate::solver::{Initial, SolverConfig};
use kernels_gpu::cell::equilibrium;
use kernels_gpu::curved;
use kernels_gpu::flags::{is_flow, is_open, COALESCED, LEVEL_MASK, NEAR_SOLID};
use kernels_gpu::stream::{self, Streaming};
use kernels_gpu::{levels as interface, Collision, Grid, Lattice, Real, Storage};
use rayon::prelude::*;
use std::marker::PhantomData;

/// A raw pointer shared by the threads of one parallel loop.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);
// SAFETY: used only in loops where distinct cells touch distinct slots (see
// `kernels_gpu::stream` and `kernels_gpu::levels`).
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

/// One level's populations and clock.
pub(super) struct LevelState<S: Storage> {
    /// The current populations (post-collision, as the last step left them).
    pub(super) f: Vec<S>,
    /// Second buffer of two-lattice pull.
    f_next: Vec<S>,
    /// Steps this level has taken.
    pub(super) t: u64,
    /// Its configuration: the base one with this level's `tau`, force and domain.
    pub(super) config: SolverConfig,
    /// Its curved-wall group, and room for its carried values.
    pub(super) curved: Option<CurvedTables<S::Real>>,
}

impl<S: Storage> LevelState<S> {
    /// Parity of the last step taken (the initial state reads as left by an odd one).
    fn last_odd(&self) -> bool {
        self.t.wrapping_sub(1) & 1 == 1
    }
    /// The buffer this level's current step writes.
    fn output(&mut self, scheme: Streaming) -> *mut S {
        match scheme {
            Streaming::EsotericPull => self.f.as_mut_ptr(),
            Streaming::TwoLattice => self.f_next.as_mut_ptr(),
        }
    }
}

/// What a step reports to: the levels wanted and the call taking each
/// wanted level's populations after each of its steps (see
/// [`RefinedCpu::step_observed`]).
pub(super) type Observer<'a, S> = Option<(&'a [bool], &'a mut dyn FnMut(&super::LevelGrid, &[S], bool))>;

/// A refined domain on the CPU.
pub struct RefinedCpu<L: Lattice<Q>, const Q: usize, S: Storage> {
    levels: Levels,
    states: Vec<LevelState<S>>,
    scheme: Streaming,
    fusion: Fusion,
    /// Coarse steps taken.
    t: u64,
    _lattice: PhantomData<L>,
}

/// [`RefinedCpu::for_each_own_cell`] over the levels' current populations
/// and the parities of their last steps, `buffers`.
pub(super) fn for_each_own_cell<L: Lattice<Q>, const Q: usize, S: Storage>(
    levels: &Levels,
    scheme: Streaming,
    buffers: &[(&[S], bool)],
    mut visit: impl FnMut(u32, [u32; 3], [f64; Q]),
) {
    for (level, &(f, odd)) in levels.levels.iter().zip(buffers) {
        own_cells_of::<L, Q, S>(level, scheme, f, odd, |p, f| visit(level.level, p, f));
    }
}

/// Calls `visit(position, populations)` for every cell `level` owns, from
/// its populations `f` as a step of parity `odd` left them.
pub(super) fn own_cells_of<L: Lattice<Q>, const Q: usize, S: Storage>(
    level: &super::LevelGrid,
    scheme: Streaming,
    f: &[S],
    odd: bool,
    mut visit: impl FnMut([u32; 3], [f64; Q]),
) {
    assert_eq!(f.len(), Q * level.layout.cells(), "a level's buffer");
    let g = level.layout.grid();
    for n in 0..level.layout.cells() as u32 {
        let flag = level.flags[n as usize] & !NEAR_SOLID;
        let own = is_flow(flag) && (flag & LEVEL_MASK == 0 || flag == COALESCED || is_open(flag));
        let Some(p) = level.layout.cell_position(n).filter(|_| own) else { continue };
        // SAFETY: the buffer is sized for the grid (checked above).
        let f = unsafe { interface::stored::<L, Q, S, _>(&g, scheme, odd, f.as_ptr(), g.cell_of(n)) };
        visit(p, f.map(|v| v.to_f64() / S::SCALE));
    }
}

/// The populations of `level`'s cell at `p` (as [`own_cells_of`] gives
/// them), if its block is stored.
pub(super) fn stored_at<L: Lattice<Q>, const Q: usize, S: Storage>(
    level: &super::LevelGrid,
    scheme: Streaming,
    f: &[S],
    odd: bool,
    p: [u32; 3],
) -> Option<[f64; Q]> {
    assert_eq!(f.len(), Q * level.layout.cells(), "a level's buffer");
    let n = level.layout.storage_at(p)?;
    let g = level.layout.grid();
    // SAFETY: the buffer is sized for the grid (checked above).
    let f = unsafe { interface::stored::<L, Q, S, _>(&g, scheme, odd, f.as_ptr(), g.cell_of(n)) };
    Some(f.map(|v| v.to_f64() / S::SCALE))
}

/// Total mass of the populations `for_each_own_cell` visits: a level-`l`
/// cell counts `(1/2^D)^l` of a level-0 cell.
pub(super) fn mass_of(levels: &Levels, for_each: impl FnOnce(&mut dyn FnMut(u32, &[f64]))) -> f64 {
    // Cells (exact) and the shifted populations' sums apart, so that the
    // total's rounding does not hide a drift of the latter.
    let share = 1.0 / levels.children as f64;
    let (mut cells, mut sums) = (vec![0u64; levels.len()], vec![0.0; levels.len()]);
    for_each(&mut |l, f| {
        cells[l as usize] += 1;
        sums[l as usize] += f.iter().sum::<f64>();
    });
    let weighted = |v: &[f64]| v.iter().enumerate().map(|(l, s)| s * share.powi(l as i32)).sum::<f64>();
    weighted(&cells.iter().map(|&n| n as f64).collect::<Vec<_>>()) + weighted(&sums)
}

/// Whether `config` can take the refined step `fusion` ([`Fusion::Split`]
/// takes two-lattice streaming and exact storage).
fn check_fusion(config: &SolverConfig, fusion: Fusion) -> Result<()> {
    use crate::solver::{Named, Precision};
    let exact = matches!(config.precision, Precision::F32 | Precision::F64);
    if fusion == Fusion::Split && (config.streaming != Streaming::TwoLattice || !exact) {
        return Err(Error::Setup(format!(
            "the split refined step streams into the second lattice and collides there, so it takes streaming = \"two-lattice\" \
             and precision f32 or f64 (where a population stored between its two kernels comes back exact), not {} in {}: \
             change them, or use the fused step",
            config.streaming.label(),
            config.precision.label()
        )));
    }
    Ok(())
}

/// The configuration of level `l` of `base`: relaxation time and force for
/// cells `2^l` times finer at a step `2^l` times shorter.
pub fn level_config(base: &SolverConfig, l: u32, domain: crate::domain::Domain) -> SolverConfig {
    let scale = (1u64 << l) as f64;
    SolverConfig { tau: 0.5 + scale * (base.tau - 0.5), force: base.force.map(|f| f / scale), domain, ..base.clone() }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> RefinedCpu<L, Q, S> {
    /// The domain of `config` refined as `refinement` asks, on blocks of
    /// edge `edge`, initialised to the equilibrium of its uniform initial state.
    pub fn new(config: &SolverConfig, refinement: &Refinement, edge: u32) -> Result<Self> {
        let Initial::Uniform { rho, u } = config.initial else {
            return Err(Error::Setup(
                "a refined domain starts from a uniform state: give `[initial]` density and velocity, not fields"
                    .into(),
            ));
        };
        Self::with_initial(config, refinement, edge, |_| (rho, u))
    }

    /// As [`RefinedCpu::new`], each cell starting at the equilibrium of
    /// `initial(centre)`, the density and velocity at its centre (in level-0
    /// cells).
    pub fn with_initial(
        config: &SolverConfig,
        refinement: &Refinement,
        edge: u32,
        initial: impl Fn([f64; 3]) -> (f64, [f64; 3]) + Sync,
    ) -> Result<Self> {
        config.validate()?;
        check_fusion(config, refinement.fusion)?;
        let levels = Levels::build(&config.domain, refinement, edge, config.lattice)?;
        let scheme = config.streaming;
        let mut states = Vec::with_capacity(levels.len());
        for level in &levels.levels {
            let cells = level.layout.cells();
            let mut f = vec![S::ZERO; Q * cells];
            let f_next = if scheme == Streaming::TwoLattice { vec![S::ZERO; Q * cells] } else { Vec::new() };
            let config = level_config(config, level.level, level.domain.clone());
            let p = config.step_params::<S::Real>(0);
            let (fp, fl) = (Shared(f.as_mut_ptr()), Shared(level.flags.as_ptr() as *mut u8));
            let size = (1u64 << level.level) as f64;
            let layout = &level.layout;
            let g = layout.grid();
            (0..cells as u32).into_par_iter().for_each(|n| {
                let (fp, fl) = (fp, fl);
                let Some(at) = layout.cell_position(n) else { return };
                let (rho, u) = initial(at.map(|v| (v as f64 + 0.5) / size));
                let feq = equilibrium::<L, Q, S::Real>(S::Real::from_f64(rho), u.map(S::Real::from_f64));
                let post = feq.map(|v| v * S::Real::from_f64(S::SCALE));
                // SAFETY: buffers sized for the grid; each cell writes its own stored slots.
                unsafe { interface::explode::<L, Q, S, _>(&g, scheme, &p, fp.0, fl.0, g.cell_of(n), &post) }
            });
            let curved = CurvedTables::on_level(&level.domain.curved, &level.layout);
            states.push(LevelState { f, f_next, t: 0, config, curved });
        }
        Ok(Self { levels, states, scheme, fusion: refinement.fusion, t: 0, _lattice: PhantomData })
    }

    /// The levels.
    pub fn levels(&self) -> &Levels {
        &self.levels
    }

    /// Coarse steps taken.
    pub fn time(&self) -> u64 {
        self.t
    }

    /// Advances `steps` coarse steps.
    pub fn step(&mut self, steps: u64) {
        for _ in 0..steps {
            self.advance(0, &mut None);
            self.t += 1;
        }
    }

    /// Advances one coarse step, calling `observe(level, populations,
    /// odd)` after each step of each level `wanted` names (`2^l` times for
    /// level `l`), with the populations that step left and its parity.
    pub fn step_observed(&mut self, wanted: &[bool], observe: &mut dyn FnMut(&super::LevelGrid, &[S], bool)) {
        self.advance(0, &mut Some((wanted, observe)));
        self.t += 1;
    }

    /// One step of level `l`: the finer level's two steps between an
    /// explosion and this level's update, which coalesces them.
    fn advance(&mut self, l: usize, observer: &mut Observer<'_, S>) {
        if l + 1 < self.levels.len() {
            self.explode(l);
            self.advance(l + 1, observer);
            self.advance(l + 1, observer);
        }
        self.step_level(l);
        let state = &self.states[l];
        if let Some((wanted, observe)) = observer {
            if wanted.get(l) == Some(&true) {
                observe(&self.levels.levels[l], &state.f, state.last_odd());
            }
        }
    }

    /// Level `l`'s update, after which its clock moves on.
    fn step_level(&mut self, l: usize) {
        crate::with_collision!(self.states[l].config.collision_params::<S::Real>(), |c| self.update(l, c));
        let state = &mut self.states[l];
        if self.scheme == Streaming::TwoLattice {
            std::mem::swap(&mut state.f, &mut state.f_next);
        }
        state.t += 1;
    }

    /// Level `l + 1`'s ghost cells take their parents' post-collision populations.
    fn explode(&mut self, l: usize) {
        let scheme = self.scheme;
        let (coarse, fine) = (&self.levels.levels[l], &self.levels.levels[l + 1]);
        let (cs, fs) = self.states.split_at_mut(l + 1);
        let (cs, fs) = (&cs[l], &mut fs[0]);
        let p = fs.config.step_params::<S::Real>(fs.t);
        let odd = cs.last_odd();
        let (src, dst, flags) =
            (Shared(cs.f.as_ptr() as *mut S), Shared(fs.f.as_mut_ptr()), Shared(fine.flags.as_ptr() as *mut u8));
        let cflags = Shared(coarse.flags.as_ptr() as *mut u8);
        let k = self.levels.children;
        let (cg, fg) = (coarse.layout.grid(), fine.layout.grid());
        fine.parents.par_iter().enumerate().for_each(|(j, &parent)| {
            let (src, dst, flags, cflags) = (src, dst, flags, cflags);
            let children = &fine.exploded[j * k..(j + 1) * k];
            // SAFETY: buffers sized for their grids; each fine cell writes
            // only its own stored slots; the coarse buffer is only read.
            unsafe {
                interface::explode_parent::<L, Q, S, _>(
                    scheme, &cg, odd, src.0, cflags.0, &fg, &p, dst.0, flags.0, parent, children,
                )
            }
        })
    }

    /// Level `l`'s update: its fluid cells, open cells, ghost cells and the
    /// cells next to the finer level (which has taken its two steps).
    fn update<C: Collision<S::Real> + Send + Sync>(&mut self, l: usize, collision: C) {
        let scheme = self.scheme;
        let level = &self.levels.levels[l];
        let (head, tail) = self.states.split_at_mut(l + 1);
        let state = &mut head[l];
        let p = state.config.step_params::<S::Real>(state.t).with_collision(collision);
        let src = Shared(state.f.as_ptr() as *mut S);
        let dst = Shared(state.output(scheme));
        let flags = Shared(level.flags.as_ptr() as *mut u8);
        // A partition updates its own blocks, numbered first.
        let cells = level.own_stored() as u32;
        let split = self.fusion == Fusion::Split;
        let links = state.curved.as_mut().map(|c| c.host_cells(0..c.count()));
        let g = level.layout.grid();
        // Curved-wall cells copy what their neighbours overwrite before anything moves.
        if let Some(links) = &links {
            (0..links.count).into_par_iter().for_each(|k| {
                let (src, links) = (src, links);
                // SAFETY: reads only the populations; each entry writes its own carried values.
                unsafe { curved::gather::<L, Q, S, _>(&g, scheme, &p, src.0, links, k) }
            });
        }
        (0..cells).into_par_iter().for_each(|n| {
            let (src, dst, flags) = (src, dst, flags);
            let cell = g.cell_of(n);
            // SAFETY: each slot is read and written by exactly one cell per
            // step (Esoteric Pull); two-lattice cells write their own slots.
            unsafe {
                match scheme {
                    Streaming::EsotericPull => {
                        stream::stream_collide_esoteric::<L, Q, S, C, _>(&g, &p, dst.0, flags.0, cell)
                    }
                    Streaming::TwoLattice if split => {
                        interface::stream_half::<L, Q, S, _>(&g, &p, src.0, dst.0, flags.0, cell)
                    }
                    Streaming::TwoLattice => {
                        stream::stream_collide_two_lattice::<L, Q, S, C, _>(&g, &p, src.0, dst.0, flags.0, cell)
                    }
                }
            }
        });
        if split {
            (0..cells).into_par_iter().for_each(|n| {
                let (dst, flags) = (dst, flags);
                // SAFETY: each cell reads and writes its own slots.
                unsafe { interface::collide_half::<L, Q, S, C, _>(&g, &p, dst.0, flags.0, g.cell_of(n)) }
            });
        }
        if let Some(links) = &links {
            (0..links.count).into_par_iter().for_each(|k| {
                let (src, dst, flags) = (src, dst, flags);
                // SAFETY: a listed cell touches only slots no other cell touches in the same step.
                unsafe { curved::update::<L, Q, S, C, _>(&g, scheme, &p, src.0, dst.0, flags.0, links, k) }
            });
        }
        let rates = state.config.collision_params::<S::Real>();
        for group in &state.config.domain.open {
            let open = group.state.kernel_params(rates);
            let (stored, velocities) = group.cells_where(|c| level.own_storage(c));
            let velocities = OpenGroup::kernel_velocities::<S::Real>(&velocities);
            let profile = Shared(velocities.as_ref().map_or(std::ptr::null_mut(), |v| v.as_ptr() as *mut S::Real));
            stored.par_iter().enumerate().for_each(|(k, &n)| {
                let (src, dst, flags, profile) = (src, dst, flags, profile);
                // SAFETY: as above; an open cell touches only its own
                // slots; a profile holds three values per cell.
                unsafe {
                    let open = stream::with_profile(open, profile.0, k);
                    stream::open_boundary_update::<L, Q, S, _>(
                        &g,
                        scheme,
                        &p,
                        &open,
                        src.0,
                        dst.0,
                        flags.0,
                        g.cell_of(n),
                    )
                }
            });
        }
        level.ghosts.par_iter().for_each(|&n| {
            let (src, dst, flags) = (src, dst, flags);
            // SAFETY: as above.
            unsafe { interface::transit::<L, Q, S, _>(&g, scheme, &p, src.0, dst.0, flags.0, g.cell_of(n)) }
        });
        if let (Some(fine), Some(fs)) = (self.levels.levels.get(l + 1), tail.first()) {
            let (fine_f, fine_odd, k) = (Shared(fs.f.as_ptr() as *mut S), fs.last_odd(), self.levels.children);
            let (g, fg) = (level.layout.grid(), fine.layout.grid());
            level.coalesced.par_iter().enumerate().for_each(|(j, &n)| {
                let (dst, fine_f) = (dst, fine_f);
                let children = &level.children[j * k..(j + 1) * k];
                // SAFETY: the fine buffer is only read; each coarse cell writes its own slots.
                unsafe {
                    interface::coalesce::<L, Q, S, C, _>(
                        &g,
                        scheme,
                        &p,
                        dst.0,
                        g.cell_of(n),
                        &fg,
                        fine_odd,
                        fine_f.0,
                        children,
                    )
                }
            })
        }
    }

    /// Calls `visit(level, position, populations)` for every cell a level
    /// owns (fluid, open, next to a finer level), with its post-collision
    /// populations as the last step left them, shifted as stored
    /// (`f_i - w_i`, see [`kernels_gpu::cell`]).
    pub fn for_each_own_cell(&self, visit: impl FnMut(u32, [u32; 3], [f64; Q])) {
        let buffers: Vec<(&[S], bool)> = self.states.iter().map(|s| (s.f.as_slice(), s.last_odd())).collect();
        for_each_own_cell::<L, Q, S>(&self.levels, self.scheme, &buffers, visit);
    }

    /// Total mass, a level-`l` cell counting `(1/2^D)^l` of a level-0 cell.
    pub fn mass(&self) -> f64 {
        mass_of(&self.levels, |visit| self.for_each_own_cell(|l, _, f| visit(l, &f)))
    }

    /// Its streaming scheme.
    pub fn streaming(&self) -> Streaming {
        self.scheme
    }

    /// Each level's current populations and the parity of its last step.
    pub(super) fn current_buffers(&self) -> Vec<(Vec<S>, bool)> {
        self.states.iter().map(|s| (s.f.clone(), s.last_odd())).collect()
    }

    /// Sets each level's current populations, the levels at coarse step `t`
    /// (level `l` at step `2^l t`).
    pub(super) fn set_buffers(&mut self, f: Vec<Vec<S>>, t: u64) {
        for (l, (state, f)) in self.states.iter_mut().zip(f).enumerate() {
            state.f = f;
            state.t = t << l;
        }
        self.t = t;
    }

    /// The levels, the streaming scheme, the fusion, and each level's state: what a
    /// GPU run starts from.
    pub(super) fn into_parts(self) -> (Levels, Streaming, Fusion, Vec<LevelState<S>>) {
        (self.levels, self.scheme, self.fusion, self.states)
    }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> RefinedCpu<L, Q, S> {
    /// This domain (as it stands: usually just initialised) cut into the
    /// partitions of `split`, each a refined domain of its own, with the
    /// whole levels.
    pub(super) fn split(self, split: &super::SplitLevels, part_levels: Vec<Levels>) -> (Levels, Vec<Self>) {
        let parts = (part_levels.into_iter().enumerate())
            .map(|(p, levels)| {
                let states = (self.states.iter().enumerate())
                    .map(|(l, s)| {
                        let f = split.scatter(&self.levels, l, p, &s.f, Q);
                        let f_next = if s.f_next.is_empty() { Vec::new() } else { vec![S::ZERO; f.len()] };
                        LevelState { f, f_next, t: s.t, config: s.config.clone(), curved: None }
                    })
                    .collect();
                Self { levels, states, scheme: self.scheme, fusion: self.fusion, t: self.t, _lattice: PhantomData }
            })
            .collect();
        (self.levels, parts)
    }
}

impl<L: Lattice<Q>, const Q: usize, S: Storage> Partition<S> for RefinedCpu<L, Q, S> {
    type Transfer = Transfer;

    fn prepare(_: &[Self], t: &Transfer) -> Result<Transfer> {
        Ok(t.clone())
    }

    fn exchange(parts: &mut [Self], transfers: &mut [Transfer], l: usize) -> Result<()> {
        for t in transfers.iter() {
            let (from, to) = pair(parts, t.from, t.to);
            let (from, to) = (&from.states[l].f, &mut to.states[l].f);
            for (&s, &d) in t.src.iter().zip(&t.dst) {
                to[d as usize] = from[s as usize];
            }
        }
        Ok(())
    }

    fn explode(&mut self, l: usize) -> Result<()> {
        RefinedCpu::explode(self, l);
        Ok(())
    }

    fn update(&mut self, l: usize) -> Result<()> {
        self.step_level(l);
        Ok(())
    }

    fn level_time(&self, l: usize) -> u64 {
        self.states[l].t
    }

    fn buffer(&self, l: usize) -> Result<Vec<S>> {
        Ok(self.states[l].f.clone())
    }

    fn put(&mut self, f: Vec<Vec<S>>, t: u64) -> Result<()> {
        self.set_buffers(f, t);
        Ok(())
    }

    fn wait(&self) -> Result<()> {
        Ok(())
    }

    fn backend(&self) -> BackendKind {
        BackendKind::Cpu
    }
}
