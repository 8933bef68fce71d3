//! PTX entry points of the colloids. The fluid step runs a thread per site
//! (`colloids_fluid_<bgk|mrt>_<lattice>_<f32|f64>`); the per-colloid passes
//! run [`LANES`] threads per colloid, thread `c LANES + lane`
//! (`colloids_links_*`, `colloids_cover_*`, `colloids_paint`,
//! `colloids_clear`), and `colloids_sum` a thread per colloid. Populations
//! are planes `i N + n`, the velocity planes `a N + n`, over the stored
//! sites; the fluid step updates the own planes' sites.

use crate::collision::{Bgk, Mrt};
use crate::colloids::site;
use crate::colloids::{Colloid, FluidParams, Share, Space, Sums, LANES, SUMS};
use crate::lattice::{D3Q19, D3Q27};
use crate::readonly::ReadOnly;
use core::arch::nvptx::{_block_dim_x, _block_idx_x, _thread_idx_x};

/// This thread's index, if below `count`.
#[inline(always)]
fn thread_below(count: u64) -> Option<u64> {
    // SAFETY: reading special registers has no preconditions.
    let k = unsafe { _block_idx_x() as u64 * _block_dim_x() as u64 + _thread_idx_x() as u64 };
    (k < count).then_some(k)
}

/// This thread's colloid and lane, for `count` colloids.
#[inline(always)]
fn colloid_lane(count: u32) -> Option<(u32, u32)> {
    thread_below(count as u64 * LANES as u64).map(|k| ((k / LANES as u64) as u32, (k % LANES as u64) as u32))
}

/// Sums the lanes of each colloid in order, a thread per value of each
/// colloid's [`Sums`]: `sums[c] = Σ_lane partials[c LANES + lane]`, value
/// by value, as [`Sums::add`] adds them.
///
/// # Safety
/// `partials` holds `count LANES` values, `sums` `count`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn colloids_sum(count: u32, partials: *const f64, sums: *mut f64) {
    if let Some(k) = thread_below(count as u64 * SUMS as u64) {
        let (c, v) = (k / SUMS as u64, k % SUMS as u64);
        let mut total = 0.0;
        for lane in 0..LANES as u64 {
            // SAFETY: the caller's.
            total += unsafe { *partials.add(((c * LANES as u64 + lane) * SUMS as u64 + v) as usize) };
        }
        // SAFETY: as above.
        unsafe { *sums.add(k as usize) = total };
    }
}

/// Marks each colloid's sites in `map`.
///
/// # Safety
/// `colloids` holds `count` colloids that do not overlap, `map` a value per site.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn colloids_paint(space: Space, count: u32, colloids: *const Colloid, map: *mut u32) {
    if let Some((c, lane)) = colloid_lane(count) {
        // SAFETY: the caller's.
        let colloid = unsafe { *colloids.add(c as usize) };
        site::paint(&space, &colloid, lane, |n| unsafe { *map.add(n as usize) = c });
    }
}

/// Clears each colloid's sites around its previous centre in `map`.
///
/// # Safety
/// As [`colloids_paint`].
#[no_mangle]
pub unsafe extern "ptx-kernel" fn colloids_clear(space: Space, count: u32, colloids: *const Colloid, map: *mut u32) {
    if let Some((c, lane)) = colloid_lane(count) {
        // SAFETY: the caller's.
        let colloid = unsafe { *colloids.add(c as usize) };
        site::clear(
            &space,
            c,
            &colloid,
            lane,
            |n| unsafe { *map.add(n as usize) },
            |n| unsafe { *map.add(n as usize) = crate::colloids::FLUID },
        );
    }
}

macro_rules! colloid_entries {
    ($($lattice:ty, $q:literal, $real:ident => $bgk:ident, $mrt:ident, $links:ident, $cover:ident;)*) => {$(
        /// Pull with bounce-back on links, and BGK collision.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $bgk(
            p: FluidParams<$real>, collision: Bgk<$real>, colloids: *const Colloid, map: *const u32,
            src: *const $real, dst: *mut $real, rho: *mut $real, u: *mut $real,
        ) {
            // SAFETY: the host passes the box's fields.
            unsafe { fluid::<$lattice, $q, $real, _>(&p, &collision, colloids, map, src, dst, rho, u) }
        }

        /// Pull with bounce-back on links, and MRT collision.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $mrt(
            p: FluidParams<$real>, collision: Mrt<$real>, colloids: *const Colloid, map: *const u32,
            src: *const $real, dst: *mut $real, rho: *mut $real, u: *mut $real,
        ) {
            // SAFETY: as above.
            unsafe { fluid::<$lattice, $q, $real, _>(&p, &collision, colloids, map, src, dst, rho, u) }
        }

        /// Adds each colloid's links to its lanes' partial sums, for the
        /// colloids whose share (`shares`) runs in `phase`: from zero, or
        /// from the carry handed on (`carry_in`); a first share leaves its
        /// running sums in `carry_out` instead.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $links(
            space: Space, count: u32, phase: u32, colloids: *const Colloid, shares: *const Share, map: *const u32,
            f: *const $real, partials: *mut Sums, carry_in: *const Sums, carry_out: *mut Sums,
        ) {
            if let Some((c, lane)) = colloid_lane(count) {
                let sites = space.sites() as usize;
                // SAFETY: the host passes `count` colloids and shares, `count
                // LANES` partial sums, carries for every slot, a map value per
                // site and `Q` planes of populations.
                unsafe {
                    let partial = partials.add((c * LANES + lane) as usize);
                    (*shares.add(c as usize)).run(
                        phase,
                        lane,
                        |slot| *carry_in.add(slot),
                        |start| {
                            let colloid = *colloids.add(c as usize);
                            site::link_sums::<$lattice, $q, $real>(
                                &space, c, &colloid, lane,
                                |n| ReadOnly::load(map.add(n as usize)),
                                |i, n| ReadOnly::load(f.add(i * sites + n as usize)),
                                start,
                            )
                        },
                        |slot, sums| *carry_out.add(slot) = sums,
                        |sums| (*partial).add(&sums),
                    );
                }
            }
        }

        /// Settles the sites each colloid's move covered and uncovered, for
        /// the colloids whose share runs in `phase`; its lanes' partial sums
        /// (or, for a first share, the carry) start from what that took.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $cover(
            space: Space, count: u32, phase: u32, colloids: *const Colloid, shares: *const Share, old: *const u32,
            new: *const u32, f: *mut $real, partials: *mut Sums, carry_in: *const Sums, carry_out: *mut Sums,
        ) {
            if let Some((c, lane)) = colloid_lane(count) {
                let sites = space.sites() as usize;
                // SAFETY: as above; a site is filled by the one thread whose
                // colloid uncovered it, and read only where fluid in both maps.
                unsafe {
                    let partial = partials.add((c * LANES + lane) as usize);
                    (*shares.add(c as usize)).run(
                        phase,
                        lane,
                        |slot| *carry_in.add(slot),
                        |mut sums| {
                            let colloid = *colloids.add(c as usize);
                            site::cover::<$lattice, $q, $real>(
                                &space, c, &colloid, lane,
                                |n| ReadOnly::load(old.add(n as usize)),
                                |n| ReadOnly::load(new.add(n as usize)),
                                |i, n| *f.add(i * sites + n as usize),
                                |i, n, v| *f.add(i * sites + n as usize) = v,
                                &mut sums,
                            );
                            sums
                        },
                        |slot, sums| *carry_out.add(slot) = sums,
                        |sums| *partial = sums,
                    );
                }
            }
        }
    )*};
}

/// A thread's fluid step (see [`site::fluid`]).
///
/// # Safety
/// The pointers hold the box's fields: `Q` planes of populations, three of
/// velocity, a map value and a density per site, the colloids the map names.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn fluid<L: crate::Lattice<Q>, const Q: usize, T: crate::Real + ReadOnly, C: crate::Collision<T>>(
    p: &FluidParams<T>,
    collision: &C,
    colloids: *const Colloid,
    map: *const u32,
    src: *const T,
    dst: *mut T,
    rho: *mut T,
    u: *mut T,
) {
    let Some(n) = thread_below(p.space.own_sites() as u64) else { return };
    let sites = p.space.sites() as usize;
    let n = n as u32 + p.space.own[0] * p.space.plane_sites();
    // SAFETY: the caller's.
    let out = site::fluid::<L, Q, T, C>(
        p,
        collision,
        n,
        |k| unsafe { ReadOnly::load(map.add(k as usize)) },
        |k| unsafe { *colloids.add(k as usize) },
        |i, k| unsafe { ReadOnly::load(src.add(i * sites + k as usize)) },
    );
    let n = n as usize;
    // SAFETY: as above.
    unsafe {
        match out {
            Some((cell, r, v)) => {
                for i in 0..Q {
                    *dst.add(i * sites + n) = cell[i];
                }
                *rho.add(n) = r;
                for a in 0..3 {
                    *u.add(a * sites + n) = v[a];
                }
            }
            None => {
                *rho.add(n) = T::ZERO;
                for a in 0..3 {
                    *u.add(a * sites + n) = T::ZERO;
                }
            }
        }
    }
}

colloid_entries! {
    D3Q19, 19, f32 => colloids_fluid_bgk_d3q19_f32, colloids_fluid_mrt_d3q19_f32, colloids_links_d3q19_f32, colloids_cover_d3q19_f32;
    D3Q19, 19, f64 => colloids_fluid_bgk_d3q19_f64, colloids_fluid_mrt_d3q19_f64, colloids_links_d3q19_f64, colloids_cover_d3q19_f64;
    D3Q27, 27, f32 => colloids_fluid_bgk_d3q27_f32, colloids_fluid_mrt_d3q27_f32, colloids_links_d3q27_f32, colloids_cover_d3q27_f32;
    D3Q27, 27, f64 => colloids_fluid_bgk_d3q27_f64, colloids_fluid_mrt_d3q27_f64, colloids_links_d3q27_f64, colloids_cover_d3q27_f64;
}
