//! Colloids: solid spheres that move with the fluid, as Ludwig does them
//! (Ladd 1994; Nguyen and Ladd 2002). The per-site and per-colloid pieces,
//! the same functions for the CPU solver and the kernels.
//!
//! A site whose centre lies inside a sphere (`|x − R|² < a²`) is solid and
//! belongs to that colloid in the *map* (a `u32` per site, [`FLUID`] for
//! the fluid). A *link* joins a fluid site to a solid neighbour; the wall is
//! at the link's middle and moves with the colloid there,
//! `u_b = U + Ω × r_b`. A population that would stream into the colloid
//! comes back along its link (bounce-back on links),
//!
//! ```text
//! f_ī(x, t+1) = f*_i(x, t) − 2 w_i ρ₀ (u_b·c_i)/c_s² + w_i ΔM/Σw,
//! ```
//!
//! where the last term hands back to the fluid, spread over the colloid's
//! links by weight, the mass `ΔM` the other terms move across its curved
//! surface plus what it took from the sites it covered: the fluid's mass is
//! conserved to round-off. The momentum each link gives the colloid,
//! `(2 f*_i − 2 w_i ρ₀ (u_b·c_i)/c_s² + w_i ΔM/Σw) c_i`, is linear in the
//! colloid's velocity; [`Sums`] carries its parts, so the host can solve
//! for the new velocity implicitly (Nguyen and Ladd 2002) and the fluid then
//! gets exactly the momentum the colloid lost.
//!
//! Per-colloid sums are deterministic: [`LANES`] lanes each sum a fixed
//! share of the colloid's box of sites in order, then the lanes are added in
//! order ([`Sums::add`]), on the CPU and on the GPU alike.

#[cfg(target_arch = "nvptx64")]
pub(crate) mod entry;
pub mod site;

/// The colloids' kernels on each 3D lattice and precision: the entry point
/// of `kernel` on lattice `l` in precision `p` is `colloids_<kernel>_<l>_<p>`.
pub const KERNELS: [&str; 4] = ["fluid_bgk", "fluid_mrt", "links", "cover"];

/// The colloids' kernels that touch no populations, one each.
pub const SHARED_KERNELS: [&str; 3] = ["colloids_sum", "colloids_paint", "colloids_clear"];

/// The map entry of a fluid site.
pub const FLUID: u32 = u32::MAX;

/// Lanes a colloid's sums over its box of sites are split into, a thread
/// each on the GPU. With a thousand colloids of radius 4, 128 lanes took
/// the link sums from 1.29 to 0.92 ms a step against 32 lanes (D3Q19, one
/// H100): more threads hide more of each lane's memory latency.
pub const LANES: u32 = 128;

/// How a domain takes part in a colloid's lane sums (its links, and the
/// sites its move settles). Each lane runs through the colloid's box of
/// sites in order, z outermost; split along z into slabs at least a box
/// thick, the sites a domain updates are one run of that order, and a box
/// reaches the own planes of at most two slabs. The first sums its run and
/// hands its lanes' running sums on (the *carry*); the second goes on from
/// them. Each lane adds the same values in the same order as on one domain.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Share {
    /// [`Share::NONE`], [`Share::ALL`], [`Share::FIRST`] or [`Share::SECOND`].
    pub part: u32,
    /// Where its lanes lie in the carry, `slot LANES + lane`.
    pub slot: u32,
}

impl Share {
    /// None of the box's sites are its own.
    pub const NONE: u32 = 0;
    /// All of them are.
    pub const ALL: u32 = 1;
    /// The first run is: it sums from zero into the carry.
    pub const FIRST: u32 = 2;
    /// The second run is: it goes on from the carry.
    pub const SECOND: u32 = 3;

    /// The share of the one domain of the whole box.
    pub const WHOLE: Share = Share { part: Share::ALL, slot: 0 };

    /// Whether it runs in `phase`: 0 before the carries are handed on
    /// (all and first shares), 1 after (second shares).
    #[inline(always)]
    pub fn runs_in(&self, phase: u32) -> bool {
        if phase == 0 {
            self.part == Share::ALL || self.part == Share::FIRST
        } else {
            self.part == Share::SECOND
        }
    }

    /// Where lane `lane`'s sums lie in the carry.
    #[inline(always)]
    pub fn slot(&self, lane: u32) -> usize {
        (self.slot * LANES + lane) as usize
    }

    /// Lane `lane`'s sums in `phase`, if its share runs then: `sum(start)`
    /// from zero or, for a second share, from the carry handed on
    /// (`carry_in(slot)`). A first share leaves them in the carry
    /// (`carry_out(slot, sums)`), the others with the partial sums
    /// (`keep(sums)`).
    #[inline(always)]
    pub fn run(
        &self,
        phase: u32,
        lane: u32,
        carry_in: impl FnOnce(usize) -> Sums,
        sum: impl FnOnce(Sums) -> Sums,
        carry_out: impl FnOnce(usize, Sums),
        keep: impl FnOnce(Sums),
    ) {
        if !self.runs_in(phase) {
            return;
        }
        let slot = self.slot(lane);
        let start = if self.part == Share::SECOND { carry_in(slot) } else { Sums::default() };
        let sums = sum(start);
        if self.part == Share::FIRST {
            carry_out(slot, sums)
        } else {
            keep(sums)
        }
    }
}

/// The rest density `ρ₀` of the bounce-back's moving-wall term.
pub const RHO0: f64 = 1.0;

/// The box: its size and whether solid walls close it along z, and the
/// part of it a domain stores and updates: the whole box, or a slab of it
/// along z (its own planes and a plane received from each neighbour).
/// Coordinates are the whole box's; sites are indices into the stored
/// planes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Space {
    /// Sites along x, y, z of the whole box; stored site `x + nx (y + ny
    /// z)` with `z` counted from the first stored plane. Periodic along x
    /// and y, and along z without walls.
    pub size: [u32; 3],
    /// 1: walls half a site below `z = 0` and above `z = nz − 1` (links
    /// through them bounce back), 0: periodic along z.
    pub walls: u32,
    /// The plane of the box the first stored plane holds.
    pub origin: u32,
    /// Stored planes: `nz` for the whole box.
    pub planes: u32,
    /// The stored planes it updates, `[first, end)`.
    pub own: [u32; 2],
}

impl Space {
    /// The whole box of `size`, closed along z by walls if `walls`.
    pub const fn whole(size: [u32; 3], walls: bool) -> Self {
        Self { size, walls: walls as u32, origin: 0, planes: size[2], own: [0, size[2]] }
    }

    /// Whether it stores a slab of the box (whose own planes' neighbours
    /// along z are stored, never wrapped).
    #[inline(always)]
    pub fn split(&self) -> bool {
        self.planes != self.size[2]
    }

    /// Sites of a plane.
    #[inline(always)]
    pub fn plane_sites(&self) -> u32 {
        self.size[0] * self.size[1]
    }

    /// Stored sites.
    #[inline(always)]
    pub fn sites(&self) -> u32 {
        self.plane_sites() * self.planes
    }

    /// Sites it updates.
    #[inline(always)]
    pub fn own_sites(&self) -> u32 {
        self.plane_sites() * (self.own[1] - self.own[0])
    }

    /// The box's plane stored plane `z` holds.
    #[inline(always)]
    fn global_z(&self, z: u32) -> u32 {
        let g = z + self.origin;
        if g >= self.size[2] {
            g - self.size[2]
        } else {
            g
        }
    }

    /// The stored plane that holds the box's plane `z` (in the box), if any.
    #[inline(always)]
    fn stored_z(&self, z: u32) -> Option<u32> {
        let local = if z >= self.origin { z - self.origin } else { z + self.size[2] - self.origin };
        (local < self.planes).then_some(local)
    }

    /// The box's coordinates of stored site `n`.
    #[inline(always)]
    pub fn coords(&self, n: u32) -> [i64; 3] {
        let [nx, ny, _] = self.size;
        [(n % nx) as i64, ((n / nx) % ny) as i64, self.global_z(n / (nx * ny)) as i64]
    }

    /// The stored site at coordinates `x` (any integers: wrapped along
    /// periodic axes), or `None` beyond a wall or where not stored.
    #[inline(always)]
    pub fn site(&self, x: [i64; 3]) -> Option<u32> {
        let mut w = [0u32; 3];
        for a in 0..3 {
            let len = self.size[a] as i64;
            if a == 2 && self.walls != 0 {
                if x[2] < 0 || x[2] >= len {
                    return None;
                }
                w[2] = x[2] as u32;
            } else {
                w[a] = x[a].rem_euclid(len) as u32;
            }
        }
        let z = self.stored_z(w[2])?;
        Some(w[0] + self.size[0] * (w[1] + self.size[1] * z))
    }

    /// Whether stored site `n` lies on a plane it updates.
    #[inline(always)]
    pub fn owns(&self, n: u32) -> bool {
        let z = n / self.plane_sites();
        self.own[0] <= z && z < self.own[1]
    }

    /// The stored site one lattice step `d` (components −1, 0, 1) from the
    /// site at `x` (inside the box), or `None` beyond a wall or where not
    /// stored: [`Space::site`] without its divisions, for every link.
    #[inline(always)]
    pub fn neighbour(&self, x: [i64; 3], d: [i32; 3]) -> Option<u32> {
        let mut w = [0u32; 3];
        for a in 0..3 {
            let len = self.size[a] as i64;
            let v = x[a] + d[a] as i64;
            w[a] = if v < 0 {
                if a == 2 && self.walls != 0 {
                    return None;
                }
                (v + len) as u32
            } else if v >= len {
                if a == 2 && self.walls != 0 {
                    return None;
                }
                (v - len) as u32
            } else {
                v as u32
            };
        }
        let z = self.stored_z(w[2])?;
        Some(w[0] + self.size[0] * (w[1] + self.size[1] * z))
    }

    /// `x − centre` along each axis, the nearest periodic image (`x` and
    /// `centre` inside the box).
    #[inline(always)]
    pub fn displacement(&self, x: [f64; 3], centre: [f64; 3]) -> [f64; 3] {
        core::array::from_fn(|a| {
            let d = x[a] - centre[a];
            let len = self.size[a] as f64;
            if a == 2 && self.walls != 0 {
                d
            } else if d > 0.5 * len {
                d - len
            } else if d < -0.5 * len {
                d + len
            } else {
                d
            }
        })
    }
}

/// A site's neighbourhood: its stored neighbours one step down, its own
/// and one step up along each axis, wrapped along periodic axes of the
/// whole box; along a walled z, whether each lies inside the box.
#[derive(Clone, Copy, Debug)]
pub struct Around {
    at: [[u32; 3]; 3],
    inside: [bool; 3],
    /// The site's plane of the box.
    z: u32,
    nx: u32,
    ny: u32,
}

impl Around {
    /// The neighbourhood of stored site `n` of `space`, a site it updates.
    #[inline(always)]
    pub fn of(space: &Space, n: u32) -> Self {
        let [nx, ny, nz] = space.size;
        let own = [n % nx, (n / nx) % ny, n / (nx * ny)];
        let split = space.split();
        let at = core::array::from_fn(|a| {
            let (v, len) = (own[a], [nx, ny, space.planes][a]);
            if a == 2 && split {
                // A slab stores its own planes' neighbours.
                [v - 1, v, v + 1]
            } else {
                [if v == 0 { len - 1 } else { v - 1 }, v, if v + 1 == len { 0 } else { v + 1 }]
            }
        });
        let z = space.global_z(own[2]);
        let walled = space.walls != 0;
        let inside = [!walled || z > 0, true, !walled || z + 1 < nz];
        Self { at, inside, z, nx, ny }
    }

    /// The stored site `c` (components −1, 0, 1) away, or `None` beyond a wall.
    #[inline(always)]
    pub fn site(&self, c: [i32; 3]) -> Option<u32> {
        let k = (c[2] + 1) as usize;
        if !self.inside[k] {
            return None;
        }
        let [x, y, z] = core::array::from_fn(|a| self.at[a][(c[a] + 1) as usize]);
        Some(x + self.nx * (y + self.ny * z))
    }

    /// The site's own coordinates in the box.
    #[inline(always)]
    pub fn own(&self) -> [u32; 3] {
        [self.at[0][1], self.at[1][1], self.z]
    }
}

/// A colloid as the kernels see it (f64 in every precision).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Colloid {
    /// Centre, inside the box.
    pub centre: [f64; 3],
    /// Radius `a`: sites with `|x − R|² < a²` are inside.
    pub radius: f64,
    /// Velocity `U` its links bounce back with.
    pub velocity: [f64; 3],
    /// Angular velocity `Ω`.
    pub spin: [f64; 3],
    /// `ΔM/Σw`: the mass each unit of link weight hands back to the fluid.
    pub share: f64,
    /// The centre the other map was painted at (cleared before a move).
    pub previous: [f64; 3],
}

/// The box of sites that holds a colloid of radius `a` centred at `c` and
/// every site two steps around it: `(lowest corner, side)`. Its coordinates
/// are unwrapped, so `x − c` is the nearest image for every site in it.
#[inline(always)]
pub fn box_around(centre: [f64; 3], radius: f64, space: &Space) -> ([i64; 3], [i64; 3]) {
    let side = floor(2.0 * radius) + 6;
    let lo = core::array::from_fn(|a| floor(centre[a] - radius) - 2);
    let flat = space.size[2] == 1;
    let sides = [side, side, if flat { 1 } else { side }];
    (if flat { [lo[0], lo[1], 0] } else { lo }, sides)
}

/// `⌊x⌋` (no `std` on the GPU).
#[inline(always)]
pub fn floor(x: f64) -> i64 {
    let t = x as i64;
    if (t as f64) > x {
        t - 1
    } else {
        t
    }
}

/// Number of [`Sums`] values.
pub const SUMS: usize = 50;

/// What a colloid's links and the sites it covered add up to in a step:
/// the parts of the force and torque on it, and the fluid mass and momentum
/// it took. `g = (c_i, r_b × c_i)` is a link's 6-vector and
/// `k_i = 2 w_i ρ₀/c_s²`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sums {
    /// `Σ 2 f*_i c_i`: the force of the populations that hit it.
    pub force: [f64; 3],
    /// `Σ r_b × 2 f*_i c_i`.
    pub torque: [f64; 3],
    /// The drag matrix `ζ = Σ k_i g gᵀ`, upper triangle row by row: the
    /// force and torque its own velocity `V = (U, Ω)` costs it, `−ζ V`.
    pub drag: [f64; 21],
    /// `Σ k_i g`: the fluid mass the moving-wall terms take, `Σ k_i g·V`.
    pub mass_rate: [f64; 6],
    /// `Σ w_i g`: the force and torque of the mass handed back, per `ΔM/Σw`.
    pub weight_moment: [f64; 6],
    /// `Σ w_i` over the links.
    pub weight: f64,
    /// Links.
    pub links: f64,
    /// Fluid mass of the sites it covered, less that of the sites it left.
    pub mass: f64,
    /// Their momentum.
    pub momentum: [f64; 3],
    /// Their angular momentum about its centre.
    pub angular: [f64; 3],
    /// Sites covered, less sites uncovered.
    pub sites: f64,
    /// Keeps the size a multiple of 16 bytes.
    pub pad: f64,
}

const _: () = assert!(core::mem::size_of::<Sums>() == SUMS * 8);

impl Sums {
    /// The values in order.
    #[inline(always)]
    pub fn values(&self) -> &[f64; SUMS] {
        // SAFETY: `Sums` is `repr(C)` of exactly `SUMS` f64 (asserted above).
        unsafe { &*(self as *const Sums as *const [f64; SUMS]) }
    }

    /// The values in order, to change.
    #[inline(always)]
    pub fn values_mut(&mut self) -> &mut [f64; SUMS] {
        // SAFETY: as in `values`.
        unsafe { &mut *(self as *mut Sums as *mut [f64; SUMS]) }
    }

    /// Adds `other`, value by value.
    #[inline(always)]
    pub fn add(&mut self, other: &Sums) {
        let o = other.values();
        for (v, o) in self.values_mut().iter_mut().zip(o) {
            *v += *o;
        }
    }

    /// The drag matrix as a full symmetric 6×6.
    pub fn drag_matrix(&self) -> [[f64; 6]; 6] {
        let mut m = [[0.0; 6]; 6];
        let mut k = 0;
        for r in 0..6 {
            for c in r..6 {
                m[r][c] = self.drag[k];
                m[c][r] = self.drag[k];
                k += 1;
            }
        }
        m
    }
}

/// What the fluid step needs besides the colloids: the box, the walls'
/// velocities and a uniform body force, in the populations' precision.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FluidParams<T> {
    /// The box.
    pub space: Space,
    /// The velocity of the wall below `z = 0` and of the one above
    /// `z = nz − 1`.
    pub wall_velocity: [[f64; 3]; 2],
    /// The body force on every fluid site (Guo forcing).
    pub force: [T; 3],
}

/// `a × b`.
#[inline(always)]
pub fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// `a · b`.
#[inline(always)]
pub fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// The velocity of a colloid's surface at `r` from its centre, `U + Ω × r`.
#[inline(always)]
pub fn surface_velocity(c: &Colloid, r: [f64; 3]) -> [f64; 3] {
    let w = cross(c.spin, r);
    core::array::from_fn(|a| c.velocity[a] + w[a])
}
