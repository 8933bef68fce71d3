//! The dense-grid memory layout: cell numbering and structure-of-arrays
//! population storage. Host and device index memory only through these
//! functions.

/// Size of a dense box of cells; cell `n = x + nx * (y + ny * z)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Dims {
    /// Cells along x (fastest in memory).
    pub nx: u32,
    /// Cells along y.
    pub ny: u32,
    /// Cells along z (slowest in memory).
    pub nz: u32,
}

impl Dims {
    /// A box of `nx * ny * nz` cells.
    pub const fn new(nx: u32, ny: u32, nz: u32) -> Self {
        Self { nx, ny, nz }
    }

    /// Number of cells.
    #[inline(always)]
    pub const fn cells(&self) -> usize {
        self.nx as usize * self.ny as usize * self.nz as usize
    }

    /// Linear index of cell `(x, y, z)`.
    #[inline(always)]
    pub const fn index(&self, x: u32, y: u32, z: u32) -> usize {
        x as usize + self.nx as usize * (y as usize + self.ny as usize * z as usize)
    }

    /// Coordinates `(x, y, z)` of cell `n`, in 32-bit arithmetic (a grid
    /// holds fewer than 2^32 cells, see [`MAX_CELLS`]).
    #[inline(always)]
    pub const fn coords(&self, n: u32) -> (u32, u32, u32) {
        let plane = self.nx * self.ny;
        let z = n / plane;
        let r = n - z * plane;
        let y = r / self.nx;
        let x = r - y * self.nx;
        (x, y, z)
    }
}

/// A cell: its index and coordinates, both at hand so kernels never divide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Linear index.
    pub n: u32,
    /// x coordinate.
    pub x: u32,
    /// y coordinate.
    pub y: u32,
    /// z coordinate.
    pub z: u32,
}

impl Cell {
    /// The cell at `(x, y, z)`.
    #[inline(always)]
    pub const fn at(dims: Dims, x: u32, y: u32, z: u32) -> Self {
        Self { n: x + dims.nx * (y + dims.ny * z), x, y, z }
    }

    /// The cell with index `n` (divides: for host loops).
    #[inline(always)]
    pub const fn from_index(dims: Dims, n: u32) -> Self {
        let (x, y, z) = dims.coords(n);
        Self { n, x, y, z }
    }

    /// The neighbours `x + c_i` for the given velocities, with periodic
    /// wrap: per-axis offsets for -1, 0 and +1 (wrapped at the box faces)
    /// are formed once, then each neighbour is a two-way add and a pick.
    /// Every axis wraps: non-periodic faces are closed by boundary cells in the
    /// grid, so a fluid cell never reaches across a wrap there.
    #[inline(always)]
    pub fn neighbours<const Q: usize>(self, dims: Dims, c: &[[i32; 3]; Q]) -> Neighbours<Q> {
        let axis = |pos: u32, len: u32, stride: u32| -> [u32; 3] {
            let down = if pos == 0 { (len - 1) * stride } else { stride.wrapping_neg() };
            let up = if pos + 1 == len { ((len - 1) * stride).wrapping_neg() } else { stride };
            [down, 0, up]
        };
        let (ox, oy) = (axis(self.x, dims.nx, 1), axis(self.y, dims.ny, dims.nx));
        let oz = axis(self.z, dims.nz, 1);
        let xy = self.x + dims.nx * self.y;
        let mut nb = Neighbours { plane: dims.nx * dims.ny, xy: [0; Q], z: [0; Q] };
        for i in 0..Q {
            let [cx, cy, cz] = c[i];
            nb.xy[i] = xy.wrapping_add(ox[(cx + 1) as usize]).wrapping_add(oy[(cy + 1) as usize]);
            nb.z[i] = self.z.wrapping_add(oz[(cz + 1) as usize]);
        }
        nb
    }
}

/// Where the neighbours `x + c_i` of a cell are: position `x + nx * y` in
/// their layer and the layer `z`, which is how both the flags (one byte per
/// cell) and the populations (see [`population_index`]) are found. Entry 0,
/// `c_0 = 0`, is the cell itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Neighbours<const Q: usize> {
    /// Cells per layer, `nx * ny`.
    pub plane: u32,
    /// In-layer position of each neighbour.
    pub xy: [u32; Q],
    /// Layer of each neighbour.
    pub z: [u32; Q],
}

impl<const Q: usize> Neighbours<Q> {
    /// Cell index (as [`Dims::index`]) of neighbour `j`.
    #[inline(always)]
    pub const fn cell(&self, j: usize) -> u32 {
        self.xy[j] + self.plane * self.z[j]
    }

    /// Index of storage slot `slot` of neighbour `j` in a population buffer.
    #[inline(always)]
    pub const fn population(&self, j: usize, slot: usize) -> usize {
        population_index(self.plane, Q, self.xy[j], self.z[j], slot)
    }
}

/// Most cells one grid may hold: cell indices are 32-bit, which keeps the
/// kernels' index arithmetic and register use small. Larger domains are
/// split over several devices.
pub const MAX_CELLS: usize = u32::MAX as usize;

/// Index of storage slot `slot` of the cell at in-layer position `xy` of
/// layer `z`, in a buffer of `q` populations over layers of `plane` cells.
///
/// The layout is structure of arrays blocked by layer: layer `z` holds `q`
/// planes, one per storage slot, each with the `plane` values of that
/// population in cell order. Within a plane a warp's loads are coalesced, as
/// in plain SoA; blocking by layer makes every layer (and so every partition
/// of a z-split domain, halos included) one contiguous range, and puts the
/// populations a layer sends to a z-neighbour next to each other
/// ([`crate::lattice::Lattice::SLOT`] orders the slots so they are).
///
/// The offset within a layer is 32-bit arithmetic (a layer holds fewer than
/// 2^32 values, see [`MAX_LAYER_VALUES`]), so kernels form three layer starts
/// per cell and one narrow offset per population, not 64-bit products.
#[inline(always)]
pub const fn population_index(plane: u32, q: usize, xy: u32, z: u32, slot: usize) -> usize {
    layer_start(plane, q, z) + (slot as u32 * plane + xy) as usize
}

/// Index of the first value of layer `z` (see [`population_index`]).
#[inline(always)]
pub const fn layer_start(plane: u32, q: usize, z: u32) -> usize {
    z as usize * q * plane as usize
}

/// Most population values one layer may hold (`q * nx * ny`), so that
/// offsets within a layer are 32-bit.
pub const MAX_LAYER_VALUES: usize = u32::MAX as usize;

#[cfg(test)]
mod tests {
    use super::*;

    /// Slow, obvious reference for the periodic neighbour rule: wrap each axis.
    fn reference_neighbour(d: Dims, x: u32, y: u32, z: u32, c: [i32; 3]) -> u32 {
        let wrap = |p: u32, dp: i32, n: u32| ((p as i64 + dp as i64).rem_euclid(n as i64)) as u32;
        d.index(wrap(x, c[0], d.nx), wrap(y, c[1], d.ny), wrap(z, c[2], d.nz)) as u32
    }

    #[test]
    fn coords_invert_index_and_neighbours_wrap() {
        let d = Dims::new(5, 4, 3);
        for n in 0..d.cells() {
            let (x, y, z) = d.coords(n as u32);
            assert_eq!(d.index(x, y, z), n);
        }
        let at = |x, y, z| d.index(x, y, z) as u32;
        assert_eq!(reference_neighbour(d, 4, 0, 0, [1, 0, 0]), at(0, 0, 0));
        assert_eq!(reference_neighbour(d, 0, 0, 0, [-1, -1, -1]), at(4, 3, 2));
        assert_eq!(reference_neighbour(d, 1, 2, 1, [1, -1, 1]), at(2, 1, 2));
        // Plane 20 cells, 3 slots per layer: slot 2 of layer 1 starts at (3 + 2) * 20.
        assert_eq!(population_index(20, 3, 7, 1, 2), 100 + 7);
        let all: [[i32; 3]; 27] =
            core::array::from_fn(|k| [k as i32 % 3 - 1, (k as i32 / 3) % 3 - 1, k as i32 / 9 - 1]);
        for n in 0..d.cells() as u32 {
            let cell = Cell::from_index(d, n);
            assert_eq!(Cell::at(d, cell.x, cell.y, cell.z), cell);
            let nb = cell.neighbours(d, &all);
            for (k, c) in all.iter().enumerate() {
                assert_eq!(nb.cell(k), reference_neighbour(d, cell.x, cell.y, cell.z, *c), "cell {n} offset {c:?}");
            }
        }
    }
}
