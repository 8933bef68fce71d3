//! Voxel images as geometry: raw 8-bit volumes and NumPy `.npy` arrays, one
//! voxel per cell.
//!
//! * Raw: a headerless file of `nx * ny * nz` bytes, x fastest (index
//!   `x + nx * (y + ny * z)`, the order of the solver's cells). The case gives
//!   the dimensions.
//! * `.npy`: the array's shape, dtype and memory order (C or Fortran) come
//!   from the file's header. By default the array's first index is x, the
//!   second y and the third z (`vol[x, y, z]`, as `np.indices` and
//!   `np.meshgrid(..., indexing="ij")` build it), whatever the memory order;
//!   `axes` names another assignment (`"zyx"` for image stacks indexed
//!   `[slice, row, column]`). A 2D array fits a 2D case (`vol[x, y]`).
//!   Supported dtypes: bool, signed and unsigned integers of 1 to 8 bytes,
//!   and 4- or 8-byte floats, either byte order.
//!
//! A voxel is solid when it is non-zero, or, with `solid_values`, when its
//! value is one of those listed (so `solid_values = [0]` reads an image
//! whose pores are the non-zero voxels).

use std::path::{Path, PathBuf};

use crate::cell_blocks::CellBlocks;
use crate::error::Result;
use kernels_gpu::Dims;
use npyz::{DType, NpyHeader, Order, TypeChar};

/// Why a voxel image cannot be used (inside [`Error::Image`](crate::Error::Image)).
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The file's size is not what the dimensions need.
    #[error("{path} has {actual} bytes but dims {dims:?} need {expected} (one byte per voxel, x fastest): {hint}")]
    SizeMismatch {
        /// The file.
        path: PathBuf,
        /// The dimensions given.
        dims: [u32; 3],
        /// Bytes the dimensions need.
        expected: u64,
        /// Bytes in the file.
        actual: u64,
        /// What to change.
        hint: String,
    },
    /// A `.npy` file whose data is shorter or longer than its header says.
    #[error(
        "{path}: the header describes shape {shape:?} of dtype {dtype} ({expected} bytes of data) but {actual} bytes \
         follow it: the file is truncated or was not written by numpy.save; write it again"
    )]
    NpyDataSize {
        /// The file.
        path: PathBuf,
        /// The header's shape.
        shape: Vec<u64>,
        /// The header's dtype.
        dtype: String,
        /// Bytes the header describes.
        expected: u64,
        /// Bytes after the header.
        actual: u64,
    },
    /// A file that is not what the shape reads (not a `.npy` file, an
    /// unsupported dtype or number of dimensions...).
    #[error("{path}: {message}")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do.
        message: String,
    },
    /// The image does not fit the domain where it is placed.
    #[error(
        "the image ({dims:?} voxels) placed at offset {offset:?} reaches cell {reach:?} but the domain has {size:?} \
         cells: make [simulation] size at least {need:?}, lower the offset or crop the image"
    )]
    DoesNotFit {
        /// Image dimensions.
        dims: [u32; 3],
        /// Where its first voxel goes.
        offset: [u32; 3],
        /// One past its last cell, per axis.
        reach: [u64; 3],
        /// The domain's size.
        size: [u32; 3],
        /// The size it needs.
        need: [u64; 3],
    },
    /// A bad `axes` key.
    #[error("axes = \"{axes}\": give each of {expected} once, the domain axis of the array's first, second (and third) index, e.g. \"{default}\"")]
    Axes {
        /// What was given.
        axes: String,
        /// The letters needed.
        expected: &'static str,
        /// The default for this number of dimensions.
        default: &'static str,
    },
}

/// Which voxel values are solid.
#[derive(Clone, Debug, PartialEq)]
pub enum SolidRule {
    /// Every non-zero value (`true` for bool arrays).
    NonZero,
    /// Exactly these values (`true` is 1 and `false` 0 for bool arrays).
    Values(Vec<i64>),
}

impl SolidRule {
    fn int(&self, v: i128) -> bool {
        match self {
            SolidRule::NonZero => v != 0,
            SolidRule::Values(s) => s.iter().any(|&s| s as i128 == v),
        }
    }
    fn float(&self, v: f64) -> bool {
        match self {
            SolidRule::NonZero => v != 0.0,
            SolidRule::Values(s) => s.iter().any(|&s| s as f64 == v),
        }
    }
}

/// A voxel image read from a file: which voxels are solid, x fastest.
#[derive(Clone, Debug, PartialEq)]
pub struct VoxelImage {
    /// Voxels along x, y, z.
    pub dims: [u32; 3],
    /// Solid flag per voxel, index `x + nx * (y + ny * z)`.
    pub solid: Vec<bool>,
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| crate::Error::Io { path: path.into(), source })
}

fn unsupported(path: &Path, message: String) -> crate::Error {
    ImageError::Unsupported { path: path.into(), message }.into()
}

/// The first bytes of every `.npy` file.
const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// Reads a raw volume of `dims` bytes, x fastest.
///
/// # Errors
/// The file cannot be read, or its size is not `nx * ny * nz` bytes
/// ([`ImageError::SizeMismatch`], with a hint at the likely cause).
pub fn read_raw(path: &Path, dims: [u32; 3], rule: &SolidRule) -> Result<VoxelImage> {
    if dims.contains(&0) {
        return Err(unsupported(path, format!("dims {dims:?} has an empty axis: every dimension must be at least 1")));
    }
    let bytes = read(path)?;
    let expected = dims.iter().map(|&n| n as u64).product::<u64>();
    let actual = bytes.len() as u64;
    if actual != expected {
        let plane = dims[0] as u64 * dims[1] as u64;
        let hint = if bytes.starts_with(NPY_MAGIC) {
            "this is a NumPy file: use shape = \"npy\" (the dimensions come from its header)".to_string()
        } else if actual > expected && actual.is_multiple_of(expected) && [2, 4, 8].contains(&(actual / expected)) {
            format!(
                "the file has {} bytes per voxel: save it as 8-bit (numpy: `vol.astype(np.uint8)`), \
                 or as .npy with shape = \"npy\"",
                actual / expected
            )
        } else if actual.is_multiple_of(plane) {
            format!(
                "a {} x {} image of {} layers has this size: check dims[2] (z), or the order of dims (x fastest)",
                dims[0],
                dims[1],
                actual / plane
            )
        } else {
            format!("check `dims` (the file holds {actual} bytes) and that the file is a headerless 8-bit volume")
        };
        return Err(ImageError::SizeMismatch { path: path.into(), dims, expected, actual, hint }.into());
    }
    let solid = bytes.iter().map(|&v| rule.int(v as i128)).collect();
    Ok(VoxelImage { dims, solid })
}

/// Decodes `data` (items of `size` bytes, `little` endian or not) with `f`.
fn decode<const N: usize>(data: &[u8], little: bool, f: impl Fn([u8; N]) -> bool) -> Vec<bool> {
    data.chunks_exact(N)
        .map(|c| {
            let mut b: [u8; N] = c.try_into().expect("chunks of N bytes");
            if !little {
                b.reverse();
            }
            f(b)
        })
        .collect()
}

/// Reads a `.npy` array (2 or 3 dimensions) and maps its indices to x, y, z
/// by `axes` (default `"xyz"`, or `"xy"` for 2D arrays: the first index is x).
///
/// # Errors
/// Not a `.npy` file, an unsupported dtype or number of dimensions, data
/// shorter or longer than the header says, or a bad `axes`.
pub fn read_npy(path: &Path, axes: Option<&str>, rule: &SolidRule) -> Result<VoxelImage> {
    let bytes = read(path)?;
    if !bytes.starts_with(NPY_MAGIC) {
        return Err(unsupported(
            path,
            "not a NumPy .npy file (no \\x93NUMPY header): save the array with numpy.save, or read a headerless \
             8-bit volume with shape = \"raw\" and its dims"
                .into(),
        ));
    }
    let mut data: &[u8] = &bytes;
    let header = NpyHeader::from_reader(&mut data).map_err(|e| {
        unsupported(path, format!("cannot read the .npy header ({e}): write the file again with numpy.save"))
    })?;
    let shape = header.shape().to_vec();
    let DType::Plain(ty) = header.dtype() else {
        return Err(unsupported(
            path,
            format!(
                "structured dtype {}: save a plain array of bool or integers, e.g. `np.save(f, vol.astype(np.uint8))`",
                header.dtype().descr()
            ),
        ));
    };
    let size = ty.size_field() as usize;
    let supported = matches!(
        (ty.type_char(), size),
        (TypeChar::Bool, 1) | (TypeChar::Int | TypeChar::Uint, 1 | 2 | 4 | 8) | (TypeChar::Float, 4 | 8)
    );
    if !supported {
        return Err(unsupported(
            path,
            format!(
                "dtype {ty} is not supported: save bool, integer or float32/float64 data, e.g. \
                 `np.save(f, vol.astype(np.uint8))`"
            ),
        ));
    }
    if !(2..=3).contains(&shape.len()) {
        return Err(unsupported(
            path,
            format!("the array has shape {shape:?}: give a 3D array (or a 2D one for a 2D case)"),
        ));
    }
    let count = shape.iter().try_fold(1u64, |a, &n| a.checked_mul(n));
    let expected = count.and_then(|c| c.checked_mul(size as u64));
    if expected != Some(data.len() as u64) {
        return Err(ImageError::NpyDataSize {
            path: path.into(),
            shape,
            dtype: ty.to_string(),
            expected: expected.unwrap_or(u64::MAX),
            actual: data.len() as u64,
        }
        .into());
    }
    if shape.iter().any(|&n| n == 0 || n > u32::MAX as u64) {
        return Err(unsupported(path, format!("the array has shape {shape:?}: every axis needs 1 to 2^32 - 1 voxels")));
    }
    let little = !matches!(ty.endianness(), npyz::Endianness::Big);
    let stored = match (ty.type_char(), size) {
        (TypeChar::Bool | TypeChar::Uint, 1) => decode::<1>(data, little, |b| rule.int(b[0] as i128)),
        (TypeChar::Int, 1) => decode::<1>(data, little, |b| rule.int(i8::from_le_bytes(b) as i128)),
        (TypeChar::Uint, 2) => decode::<2>(data, little, |b| rule.int(u16::from_le_bytes(b) as i128)),
        (TypeChar::Int, 2) => decode::<2>(data, little, |b| rule.int(i16::from_le_bytes(b) as i128)),
        (TypeChar::Uint, 4) => decode::<4>(data, little, |b| rule.int(u32::from_le_bytes(b) as i128)),
        (TypeChar::Int, 4) => decode::<4>(data, little, |b| rule.int(i32::from_le_bytes(b) as i128)),
        (TypeChar::Uint, 8) => decode::<8>(data, little, |b| rule.int(u64::from_le_bytes(b) as i128)),
        (TypeChar::Int, 8) => decode::<8>(data, little, |b| rule.int(i64::from_le_bytes(b) as i128)),
        (TypeChar::Float, 4) => decode::<4>(data, little, |b| rule.float(f32::from_le_bytes(b) as f64)),
        _ => decode::<8>(data, little, |b| rule.float(f64::from_le_bytes(b))),
    };
    // Domain axis of each array index.
    let (expected_axes, default) = if shape.len() == 3 { ("x, y and z", "xyz") } else { ("x and y", "xy") };
    let axes = axes.unwrap_or(default);
    let bad_axes = || ImageError::Axes { axes: axes.into(), expected: expected_axes, default };
    let mut axis_of = Vec::with_capacity(shape.len());
    for c in axes.chars() {
        let a = match c {
            'x' | 'X' => 0,
            'y' | 'Y' => 1,
            'z' | 'Z' if shape.len() == 3 => 2,
            _ => return Err(bad_axes().into()),
        };
        if axis_of.contains(&a) {
            return Err(bad_axes().into());
        }
        axis_of.push(a);
    }
    if axis_of.len() != shape.len() {
        return Err(bad_axes().into());
    }
    // Stride in the stored order of each array index.
    let mut strides = vec![0u64; shape.len()];
    let mut s = 1u64;
    let order: Vec<usize> = match header.order() {
        Order::C => (0..shape.len()).rev().collect(),
        Order::Fortran => (0..shape.len()).collect(),
    };
    for k in order {
        strides[k] = s;
        s *= shape[k];
    }
    let mut dims = [1u32; 3];
    let mut stride_of_axis = [0u64; 3];
    for (k, &a) in axis_of.iter().enumerate() {
        dims[a] = shape[k] as u32;
        stride_of_axis[a] = strides[k];
    }
    let mut solid = Vec::with_capacity(stored.len());
    for z in 0..dims[2] as u64 {
        for y in 0..dims[1] as u64 {
            let row = y * stride_of_axis[1] + z * stride_of_axis[2];
            solid.extend((0..dims[0] as u64).map(|x| stored[(row + x * stride_of_axis[0]) as usize]));
        }
    }
    Ok(VoxelImage { dims, solid })
}

impl VoxelImage {
    /// The domain's cells that the image's solid voxels cover when its voxel
    /// (0, 0, 0) lies on cell `offset`.
    ///
    /// # Errors
    /// [`ImageError::DoesNotFit`] when the image reaches past the domain.
    pub fn place(&self, domain: Dims, offset: [u32; 3]) -> Result<CellBlocks<bool>> {
        let size = [domain.nx, domain.ny, domain.nz];
        let reach: [u64; 3] = std::array::from_fn(|a| offset[a] as u64 + self.dims[a] as u64);
        if (0..3).any(|a| reach[a] > size[a] as u64) {
            let need = std::array::from_fn(|a| reach[a].max(size[a] as u64));
            return Err(ImageError::DoesNotFit { dims: self.dims, offset, reach, size, need }.into());
        }
        let mut cells = CellBlocks::new(domain, false);
        let [nx, ny, _] = self.dims.map(|n| n as usize);
        for (n, _) in self.solid.iter().enumerate().filter(|(_, &s)| s) {
            let (x, y, z) = (n % nx, (n / nx) % ny, n / (nx * ny));
            cells.set([offset[0] + x as u32, offset[1] + y as u32, offset[2] + z as u32], true);
        }
        cells.compact();
        Ok(cells)
    }
}
