//! Collision operators: each one is a `#[repr(C)]` parameter struct that the
//! kernels receive by value and that knows how to relax a cell's populations.
//! The stream-collide kernels are generic over [`Collision`], so each operator
//! is stamped into its own entry points ([`crate::kernels::KernelKind`]) and
//! pays nothing at run time for the others.
//!
//! Adding an operator: a parameter struct, its [`Collision`] impl, a
//! [`CollisionKind`] entry, and a line in the entry-point macro
//! (`crate::entry`).
//!
//! BGK and TRT are here; [`mrt`] holds the multiple-relaxation-time
//! operator and its moment bases, [`regularized`] the regularized operator
//! and the Smagorinsky eddy viscosity, [`cumulant`] the cumulant operator.

mod chimera;
pub mod cumulant;
pub mod mrt;
pub mod regularized;
#[cfg(test)]
mod tests_operators;

pub use cumulant::Cumulant;
pub use mrt::{Mrt, MrtRates};
pub use regularized::{Les, Regularized, Smagorinsky};

#[cfg(test)]
use crate::cell::equilibrium_over_weights;
use crate::cell::{
    collide_bgk, density_velocity_scaled, dot_c, equilibrium_pair, equilibrium_parts, no_force, non_equilibrium_part,
    GuoSource,
};
use crate::lattice::{opposite, Lattice};
use crate::real::Real;

/// `feq - f - S/2` of a cell and its parts: the reference [`mrt`]'s tests
/// compare with.
#[cfg(test)]
pub(crate) struct NonEquilibrium<T, const Q: usize> {
    /// Guo's source without its rate factor (zero unforced).
    pub(crate) source: [T; Q],
    /// `feq - f - S/2`, with `feq - f` one fused operation, as in BGK.
    pub(crate) n: [T; Q],
}

/// [`NonEquilibrium`] of the populations `f` (times `scale`), with Guo's
/// source when `FORCED`.
#[cfg(test)]
pub(crate) fn non_equilibrium<L: Lattice<Q>, const Q: usize, T: Real, const FORCED: bool>(
    f: &[T; Q],
    force: [T; 3],
    scale: T,
) -> NonEquilibrium<T, Q> {
    let force = if FORCED { force } else { no_force() };
    let (rho, u) = density_velocity_scaled::<L, Q, T>(f, force, scale);
    let x = equilibrium_over_weights::<L, Q, T>(rho, u);
    let guo = GuoSource::new(T::ZERO, force, u, scale);
    let (mut source, mut n) = ([T::ZERO; Q], [T::ZERO; Q]);
    for i in 0..Q {
        n[i] = non_equilibrium_part::<L, Q, T>(i, f[i], x[i], scale);
        if FORCED {
            source[i] = guo.term::<L, Q>(i);
            n[i] = T::from_f64(-0.5).mul_add(source[i], n[i]);
        }
    }
    NonEquilibrium { source, n }
}

/// A collision operator, given by its parameters.
pub trait Collision<T: Real>: Copy + Send + Sync + 'static {
    /// Relaxes the shifted populations `f` (given times `scale`, a power of
    /// two, see [`crate::storage::Storage::SCALE`]) in place, with Guo forcing
    /// when `FORCED`, and returns the cell's density and velocity.
    fn collide<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]);
}

/// The operators the kernels are built for.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CollisionKind {
    /// Single relaxation time, [`Bgk`].
    Bgk = 0,
    /// Two relaxation times, [`Trt`].
    Trt = 1,
    /// Multiple relaxation times, [`Mrt`].
    Mrt = 2,
    /// Regularized, with an optional Smagorinsky eddy viscosity, [`Regularized`].
    Regularized = 3,
    /// BGK with a Smagorinsky eddy viscosity, [`Smagorinsky`].
    Smagorinsky = 4,
    /// Cumulant, [`Cumulant`]: D2Q9 and D3Q27 only.
    Cumulant = 5,
}

impl CollisionKind {
    /// Every operator.
    pub const ALL: [CollisionKind; 6] = [
        CollisionKind::Bgk,
        CollisionKind::Trt,
        CollisionKind::Mrt,
        CollisionKind::Regularized,
        CollisionKind::Smagorinsky,
        CollisionKind::Cumulant,
    ];

    /// Name in kernel names and case files (`bgk`, `trt`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            CollisionKind::Bgk => "bgk",
            CollisionKind::Trt => "trt",
            CollisionKind::Mrt => "mrt",
            CollisionKind::Regularized => "regularized",
            CollisionKind::Smagorinsky => "smagorinsky",
            CollisionKind::Cumulant => "cumulant",
        }
    }

    /// Whether its kernels exist for the lattice of `q` velocities: the
    /// cumulant operator needs velocities that are all of `{-1, 0, 1}^D`
    /// ([`cumulant::is_tensor_product`]), which of the lattices here D2Q9
    /// and D3Q27 are; the others run on every lattice.
    pub const fn built_for(self, q: usize) -> bool {
        match self {
            CollisionKind::Cumulant => q == 9 || q == 27,
            _ => true,
        }
    }

    /// Whether every kernel with a collision of its own (open cells in the
    /// bulk kernel, curved walls, refinement levels) is stamped for it. The
    /// other operators run the bulk kernels, and the rest through
    /// [`Chosen`], which picks the operator at run time.
    pub const fn stamped(self) -> bool {
        matches!(self, CollisionKind::Bgk | CollisionKind::Trt)
    }
}

/// The operators that are not [`CollisionKind::stamped`], one of them chosen
/// at run time by `kind`: one kernel per cell kind serves them all (its
/// registers are the most any of them needs). The kernels that use it run
/// few cells (curved walls, open cells, the cells next to a finer
/// refinement level) or are baselines (the split step of refinement
/// levels), so the branch, uniform across a launch, and the registers cost
/// little, while the PTX holds one kernel instead of one per operator. The
/// parameters of the operators not chosen are ignored.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Chosen<T> {
    /// [`CollisionKind::Mrt`]'s parameters.
    pub mrt: Mrt<T>,
    /// [`CollisionKind::Regularized`]'s.
    pub regularized: Regularized<T>,
    /// [`CollisionKind::Smagorinsky`]'s.
    pub smagorinsky: Smagorinsky<T>,
    /// [`CollisionKind::Cumulant`]'s.
    pub cumulant: Cumulant<T>,
    /// The operator, a [`CollisionKind`] as `u32` (never a stamped one).
    pub kind: u32,
    /// Zero: keeps the struct free of implicit padding in double precision.
    pub reserved: u32,
}

impl<T: Real> Collision<T> for Chosen<T> {
    #[inline(always)]
    fn collide<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        const REGULARIZED: u32 = CollisionKind::Regularized as u32;
        const SMAGORINSKY: u32 = CollisionKind::Smagorinsky as u32;
        const CUMULANT: u32 = CollisionKind::Cumulant as u32;
        match self.kind {
            REGULARIZED => self.regularized.collide::<L, Q, FORCED>(f, force, scale),
            SMAGORINSKY => self.smagorinsky.collide::<L, Q, FORCED>(f, force, scale),
            // Cumulant only where it is built: the host never chooses it elsewhere.
            CUMULANT if CollisionKind::Cumulant.built_for(Q) => self.cumulant.collide::<L, Q, FORCED>(f, force, scale),
            _ => self.mrt.collide::<L, Q, FORCED>(f, force, scale),
        }
    }
}

/// Bhatnagar-Gross-Krook single relaxation time: every population relaxes
/// towards equilibrium at rate `omega = 1 / tau`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bgk<T> {
    /// Relaxation rate `omega = 1 / tau`.
    pub omega: T,
}

impl<T: Real> Collision<T> for Bgk<T> {
    #[inline(always)]
    fn collide<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        collide_bgk::<L, Q, T, FORCED>(f, self.omega, force, scale)
    }
}

/// Two relaxation times (Ginzburg, Verhaeghe & d'Humieres 2008): the parts
/// of the populations even in `c` relax at `omega_plus = 1 / tau` (which sets
/// the viscosity), the odd parts at `omega_minus`. The magic parameter
/// `Lambda = (tau+ - 1/2)(tau- - 1/2)` fixes where halfway bounce-back puts
/// a wall: at `Lambda = 3/16` exactly half way along the link, for any
/// viscosity, in Poiseuille flow.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trt<T> {
    /// Rate of the even (symmetric) parts, `1 / tau`.
    pub omega_plus: T,
    /// Rate of the odd (antisymmetric) parts.
    pub omega_minus: T,
}

impl Trt<f64> {
    /// The rates for relaxation time `tau` and magic parameter `magic`.
    pub fn from_tau_and_magic(tau: f64, magic: f64) -> Self {
        Self { omega_plus: 1.0 / tau, omega_minus: 1.0 / (0.5 + magic / (tau - 0.5)) }
    }
}

impl<T: Real> Collision<T> for Trt<T> {
    /// Written as the BGK update at `omega_plus` plus the difference of the
    /// odd parts' rates times their non-equilibrium (and, forced, times
    /// their Guo source terms). With `omega_minus == omega_plus` each
    /// correction is a product with zero, and adding a signed zero to a
    /// value that is not `-0` changes no bit, so TRT then gives exactly the
    /// populations of BGK. The BGK value `fma(omega, n, f)` is never `-0`:
    /// with `n = fma(w, x, -f)`, `f = -0` makes `n = w x + 0`, which is not
    /// `-0`, and a sum of two terms is `-0` only when both are.
    #[inline(always)]
    fn collide<L: Lattice<Q>, const Q: usize, const FORCED: bool>(
        &self,
        f: &mut [T; Q],
        force: [T; 3],
        scale: T,
    ) -> (T, [T; 3]) {
        let force = if FORCED { force } else { no_force() };
        let (rho, u) = density_velocity_scaled::<L, Q, T>(f, force, scale);
        let parts = equilibrium_parts(rho, u);
        let (wp, wm) = (self.omega_plus, self.omega_minus);
        let half = T::from_f64(0.5);
        let guo = GuoSource::new(wp, force, u, scale);
        // Guo's odd part 3 w c.F takes (1 - wm/2) instead of (1 - wp/2).
        let odd_force = half * (wp - wm) * T::from_f64(3.0) * scale;
        // The odd parts relax by (wm - wp) more than BGK at wp relaxes them.
        let rates = TrtRates { wp, extra: wm - wp, odd_force, guo, force };
        // Pair by pair, equilibrium included, so that a pair's values are
        // done with before the next pair's (an array of the equilibrium
        // beside the populations costs registers).
        f[0] = rates.relax::<L, Q, FORCED>(f[0], non_equilibrium_part::<L, Q, T>(0, f[0], parts.0, scale), T::ZERO, 0);
        unrolled!(A < Q => {
            if A % 2 == 1 {
                let b = opposite(A);
                let (xa, xb) = equilibrium_pair::<L, Q, T>(parts, u, A);
                let na = non_equilibrium_part::<L, Q, T>(A, f[A], xa, scale);
                let nb = non_equilibrium_part::<L, Q, T>(b, f[b], xb, scale);
                let odd = half * (na - nb);
                f[A] = rates.relax::<L, Q, FORCED>(f[A], na, odd, A);
                f[b] = rates.relax::<L, Q, FORCED>(f[b], nb, -odd, b);
            }
        });
        (rho, u)
    }
}

/// What [`Trt`] relaxes a population with (a method rather than a closure:
/// LLVM does not always inline closures into the largest kernels).
struct TrtRates<T> {
    wp: T,
    /// `omega_minus - omega_plus`.
    extra: T,
    /// The change of Guo's odd part's factor, in storage units.
    odd_force: T,
    guo: GuoSource<T>,
    force: [T; 3],
}

impl<T: Real> TrtRates<T> {
    /// Population `i` after BGK at `wp` and the extra relaxation of its odd part.
    #[inline(always)]
    fn relax<L: Lattice<Q>, const Q: usize, const FORCED: bool>(&self, f: T, noneq: T, odd: T, i: usize) -> T {
        let relaxed = self.extra.mul_add(odd, self.wp.mul_add(noneq, f));
        if FORCED {
            let odd_source = self.odd_force * T::from_f64(L::W[i]) * dot_c(L::C[i], self.force);
            relaxed + self.guo.term::<L, Q>(i) + odd_source
        } else {
            relaxed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{equilibrium, moments};
    use crate::lattice::{D2Q9, D3Q19, D3Q27};

    fn perturbed<L: Lattice<Q>, const Q: usize>() -> [f64; Q] {
        let mut f = equilibrium::<L, Q, f64>(1.02, [0.04, -0.03, if L::D == 3 { 0.02 } else { 0.0 }]);
        for i in 0..Q {
            f[i] += 1e-3 * ((i * 5 % 7) as f64 - 3.0) * L::W[i];
        }
        f
    }

    /// TRT conserves mass, changes momentum by exactly the force, and with
    /// equal rates gives BGK's populations bit for bit (forced or not).
    fn trt_invariants<L: Lattice<Q>, const Q: usize>() {
        let force = [1e-4, 2e-4, if L::D == 3 { -1e-4 } else { 0.0 }];
        let trt = Trt::from_tau_and_magic(0.8, 3.0 / 16.0);
        let mut f = perturbed::<L, Q>();
        let (r0, j0) = moments::<L, Q, f64>(&f);
        trt.collide::<L, Q, true>(&mut f, force, 1.0);
        let (r1, j1) = moments::<L, Q, f64>(&f);
        assert!((r1 - r0).abs() < 1e-15, "{}: TRT mass", L::NAME);
        for a in 0..3 {
            assert!((j1[a] - j0[a] - force[a]).abs() < 1e-15, "{}: TRT momentum", L::NAME);
        }
        for omega in [1.0 / 0.55, 1.0, 1.0 / 0.8, 1.0 / 3.0] {
            let (bgk, trt) = (Bgk { omega }, Trt { omega_plus: omega, omega_minus: omega });
            for forced in [false, true] {
                let (mut a, mut b) = (perturbed::<L, Q>(), perturbed::<L, Q>());
                if forced {
                    bgk.collide::<L, Q, true>(&mut a, force, 1.0);
                    trt.collide::<L, Q, true>(&mut b, force, 1.0);
                } else {
                    bgk.collide::<L, Q, false>(&mut a, [0.0; 3], 1.0);
                    trt.collide::<L, Q, false>(&mut b, [0.0; 3], 1.0);
                }
                assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits), "{} omega {omega} forced {forced}", L::NAME);
            }
        }
        // At rest with no force every population is +0 before and after:
        // the signed-zero argument of `Trt::collide` at its edge.
        let (mut a, mut b) = ([0.0f64; Q], [0.0f64; Q]);
        Bgk { omega: 1.2 }.collide::<L, Q, false>(&mut a, [0.0; 3], 1.0);
        Trt { omega_plus: 1.2, omega_minus: 1.2 }.collide::<L, Q, false>(&mut b, [0.0; 3], 1.0);
        assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits), "{} at rest", L::NAME);
    }

    #[test]
    fn trt_conserves_and_reduces_to_bgk() {
        trt_invariants::<D2Q9, 9>();
        trt_invariants::<D3Q19, 19>();
        trt_invariants::<D3Q27, 27>();
    }

    /// Each operator chosen at run time ([`Chosen`]) gives its own
    /// populations bit for bit, forced or not, on every lattice it is built for.
    #[test]
    fn chosen_operators_are_the_operators() {
        fn each<L: Lattice<Q>, const Q: usize>() {
            let tau = 0.56;
            let les = Les { tau, factor: regularized::smagorinsky_factor(0.15) };
            let ops = (
                Mrt::published(tau, L::NAME),
                Regularized { omega: 1.0 / tau, les },
                Smagorinsky { les },
                Cumulant::new(tau),
            );
            let base =
                Chosen { mrt: ops.0, regularized: ops.1, smagorinsky: ops.2, cumulant: ops.3, kind: 0, reserved: 0 };
            let force = [1e-4, -2e-4, if L::D == 3 { 1e-4 } else { 0.0 }];
            let run = |c: &dyn Fn(&mut [f64; Q], bool), forced: bool| {
                let mut f = perturbed::<L, Q>();
                c(&mut f, forced);
                f.map(f64::to_bits)
            };
            macro_rules! check {
                ($kind:expr, $op:expr) => {
                    if $kind.built_for(Q) {
                        let chosen = Chosen { kind: $kind as u32, ..base };
                        for forced in [false, true] {
                            let direct = run(
                                &|f, forced| {
                                    if forced {
                                        $op.collide::<L, Q, true>(f, force, 1.0);
                                    } else {
                                        $op.collide::<L, Q, false>(f, [0.0; 3], 1.0);
                                    }
                                },
                                forced,
                            );
                            let picked = run(
                                &|f, forced| {
                                    if forced {
                                        chosen.collide::<L, Q, true>(f, force, 1.0);
                                    } else {
                                        chosen.collide::<L, Q, false>(f, [0.0; 3], 1.0);
                                    }
                                },
                                forced,
                            );
                            assert_eq!(direct, picked, "{} {:?} forced {forced}", L::NAME, $kind);
                        }
                    }
                };
            }
            check!(CollisionKind::Mrt, ops.0);
            check!(CollisionKind::Regularized, ops.1);
            check!(CollisionKind::Smagorinsky, ops.2);
            check!(CollisionKind::Cumulant, ops.3);
        }
        each::<D2Q9, 9>();
        each::<D3Q19, 19>();
        each::<D3Q27, 27>();
    }

    #[test]
    fn magic_parameter_sets_the_odd_rate() {
        let t = Trt::from_tau_and_magic(0.8, 3.0 / 16.0);
        assert!(((1.0 / t.omega_plus - 0.5) * (1.0 / t.omega_minus - 0.5) - 3.0 / 16.0).abs() < 1e-15);
        // tau+ = tau- = 1 is Lambda = 1/4.
        assert_eq!(Trt::from_tau_and_magic(1.0, 0.25), Trt { omega_plus: 1.0, omega_minus: 1.0 });
    }
}
