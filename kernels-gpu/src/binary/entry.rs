//! PTX entry points of the binary fluid, a thread per site:
//! `binary_<kernel>_<lattice>_<f32|f64>`. Populations are planes `i N + n`,
//! the velocity planes `a N + n` (three, also in 2D).

use crate::binary::site::{self, BinaryParams};
use crate::collision::{Bgk, Mrt};
use crate::lattice::{D2Q9, D3Q19, D3Q27};
use crate::readonly::ReadOnly;
use core::arch::nvptx::{_block_dim_x, _block_idx_x, _thread_idx_x};

/// This thread's site, if it lies in the planes the launch updates.
#[inline(always)]
fn site_of<T: crate::Real>(p: &BinaryParams<T>) -> Option<u32> {
    // SAFETY: reading special registers has no preconditions.
    let k = unsafe { _block_idx_x() as u64 * _block_dim_x() as u64 + _thread_idx_x() as u64 };
    p.updated_site(k)
}

macro_rules! binary_entries {
    ($($lattice:ty, $q:literal, $real:ident => $mu:ident, $bgk:ident, $mrt:ident, $phi:ident;)*) => {$(
        /// `μ` from `φ`.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $mu(p: BinaryParams<$real>, phi: *const $real, mu: *mut $real) {
            if let Some(n) = site_of(&p) {
                // SAFETY: the host passes fields of `p.sites()` values.
                let v = site::chemical_potential::<$lattice, $q, $real>(&p, n, |k| unsafe { ReadOnly::load(phi.add(k as usize)) });
                unsafe { *mu.add(n as usize) = v };
            }
        }

        /// Pull and BGK collision.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $bgk(
            p: BinaryParams<$real>, collision: Bgk<$real>, src: *const $real, dst: *mut $real,
            phi: *const $real, mu: *const $real, rho: *mut $real, u: *mut $real,
        ) {
            // SAFETY: as above, and two population buffers of `Q` planes.
            unsafe { collide::<$lattice, $q, $real, _>(&p, &collision, src, dst, phi, mu, rho, u) }
        }

        /// Pull and MRT collision.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $mrt(
            p: BinaryParams<$real>, collision: Mrt<$real>, src: *const $real, dst: *mut $real,
            phi: *const $real, mu: *const $real, rho: *mut $real, u: *mut $real,
        ) {
            // SAFETY: as above.
            unsafe { collide::<$lattice, $q, $real, _>(&p, &collision, src, dst, phi, mu, rho, u) }
        }

        /// `φ` after the step, into `next`.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $phi(
            p: BinaryParams<$real>, phi: *const $real, mu: *const $real, u: *const $real, next: *mut $real,
        ) {
            if let Some(n) = site_of(&p) {
                let sites = p.sites() as usize;
                // SAFETY: as above.
                let load = |f: *const $real, k: usize| unsafe { ReadOnly::load(f.add(k)) };
                let v = site::order_parameter::<$lattice, $q, $real>(
                    &p,
                    n,
                    |k| load(phi, k as usize),
                    |k| load(mu, k as usize),
                    |k, a| load(u, a * sites + k as usize),
                );
                unsafe { *next.add(n as usize) = v };
            }
        }
    )*};
}

/// A thread's fluid step (see [`site::collide`]).
///
/// # Safety
/// The pointers hold the box's fields: `Q` planes of populations, three
/// of velocity, one of each other.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn collide<L: crate::Lattice<Q>, const Q: usize, T: crate::Real + ReadOnly, C: crate::Collision<T>>(
    p: &BinaryParams<T>,
    collision: &C,
    src: *const T,
    dst: *mut T,
    phi: *const T,
    mu: *const T,
    rho: *mut T,
    u: *mut T,
) {
    let Some(n) = site_of(p) else { return };
    let sites = p.sites() as usize;
    // SAFETY: the caller's.
    let load = |f: *const T, k: usize| unsafe { ReadOnly::load(f.add(k)) };
    let (cell, r, v) = site::collide::<L, Q, T, C>(
        p,
        collision,
        n,
        |i, k| load(src, i * sites + k as usize),
        load(phi, n as usize),
        |k| load(mu, k as usize),
    );
    let n = n as usize;
    // SAFETY: as above.
    unsafe {
        for i in 0..Q {
            *dst.add(i * sites + n) = cell[i];
        }
        *rho.add(n) = r;
        for a in 0..3 {
            *u.add(a * sites + n) = v[a];
        }
    }
}

binary_entries! {
    D2Q9, 9, f32 => binary_mu_d2q9_f32, binary_collide_bgk_d2q9_f32, binary_collide_mrt_d2q9_f32, binary_phi_d2q9_f32;
    D2Q9, 9, f64 => binary_mu_d2q9_f64, binary_collide_bgk_d2q9_f64, binary_collide_mrt_d2q9_f64, binary_phi_d2q9_f64;
    D3Q19, 19, f32 => binary_mu_d3q19_f32, binary_collide_bgk_d3q19_f32, binary_collide_mrt_d3q19_f32, binary_phi_d3q19_f32;
    D3Q19, 19, f64 => binary_mu_d3q19_f64, binary_collide_bgk_d3q19_f64, binary_collide_mrt_d3q19_f64, binary_phi_d3q19_f64;
    D3Q27, 27, f32 => binary_mu_d3q27_f32, binary_collide_bgk_d3q27_f32, binary_collide_mrt_d3q27_f32, binary_phi_d3q27_f32;
    D3Q27, 27, f64 => binary_mu_d3q27_f64, binary_collide_bgk_d3q27_f64, binary_collide_mrt_d3q27_f64, binary_phi_d3q27_f64;
}
