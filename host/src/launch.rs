//! Typed kernel launches: each entry point's argument list, in the order of
//! its definition in `kernels_gpu::entry`, written once. Nothing else in
//! the host pushes kernel arguments. A sparse grid's kernels take the grid
//! (`Some`) as one more argument; the dense ones find the box in the step
//! parameters (`None`).

use crate::error::{CudaContextExt, Result};
use crate::solver::CollisionParams;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchArgs, LaunchConfig, PushKernelArg};
use kernels_gpu::curved::CurvedCells;
use kernels_gpu::groups::OpenCells;
use kernels_gpu::sparse::SparseTables;
use kernels_gpu::sponge::SpongeCells;
use kernels_gpu::{
    Bgk, Chosen, Cumulant, Dims, Mrt, OpenBoundary, Regularized, Smagorinsky, StepParams, Streaming, Trt,
};
use std::ops::Range;

/// A kernel argument passed by value: the `#[repr(C)]` structs of `kernels-gpu`.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub(crate) struct ByValue<P: Copy>(pub(crate) P);
// SAFETY: only instantiated here with `#[repr(C)]` plain-data structs from
// `kernels_gpu::params` / `layout` / `collision` / `thermal`, whose layout the PTX entry points share.
unsafe impl<P: Copy> DeviceRepr for ByValue<P> {}

/// A partition's population buffers: the current one and, for two-lattice
/// pull, the one the step writes.
pub(crate) struct Buffers<'a, E> {
    /// Current populations (Esoteric Pull updates them in place).
    pub f: &'a mut CudaSlice<E>,
    /// Second buffer of the two-lattice scheme.
    pub next: Option<&'a mut CudaSlice<E>>,
}

/// Step parameters with the collision operator's, as the kernels that
/// collide take them by value (one struct per operator).
enum WithCollision<T: Copy> {
    Bgk(ByValue<StepParams<T, Bgk<T>>>),
    Trt(ByValue<StepParams<T, Trt<T>>>),
    Mrt(ByValue<StepParams<T, Mrt<T>>>),
    Regularized(ByValue<StepParams<T, Regularized<T>>>),
    Smagorinsky(ByValue<StepParams<T, Smagorinsky<T>>>),
    Cumulant(ByValue<StepParams<T, Cumulant<T>>>),
    Chosen(ByValue<StepParams<T, Chosen<T>>>),
}

impl<T: Copy> WithCollision<T> {
    fn new(p: StepParams<T>, collision: CollisionParams<T>) -> Self {
        match collision {
            CollisionParams::Bgk(c) => WithCollision::Bgk(ByValue(p.with_collision(c))),
            CollisionParams::Trt(c) => WithCollision::Trt(ByValue(p.with_collision(c))),
            CollisionParams::Mrt(c) => WithCollision::Mrt(ByValue(p.with_collision(c))),
            CollisionParams::Regularized(c) => WithCollision::Regularized(ByValue(p.with_collision(c))),
            CollisionParams::Smagorinsky(c) => WithCollision::Smagorinsky(ByValue(p.with_collision(c))),
            CollisionParams::Cumulant(c) => WithCollision::Cumulant(ByValue(p.with_collision(c))),
        }
    }

    /// The parameters for a kernel stamped per operator, or, with `chosen`,
    /// for one that chooses the operators not stamped into every kernel at
    /// run time ([`kernels_gpu::Chosen`]).
    fn for_kernel(p: StepParams<T>, collision: CollisionParams<T>, chosen: bool) -> Self
    where
        T: kernels_gpu::Real,
    {
        match collision.chosen().filter(|_| chosen) {
            Some(c) => WithCollision::Chosen(ByValue(p.with_collision(c))),
            None => WithCollision::new(p, collision),
        }
    }

    /// Pushes the parameters as the next kernel argument.
    fn push<'a>(&'a self, launch: &mut LaunchArgs<'a>) {
        match self {
            WithCollision::Bgk(p) => launch.arg(p),
            WithCollision::Trt(p) => launch.arg(p),
            WithCollision::Mrt(p) => launch.arg(p),
            WithCollision::Regularized(p) => launch.arg(p),
            WithCollision::Smagorinsky(p) => launch.arg(p),
            WithCollision::Cumulant(p) => launch.arg(p),
            WithCollision::Chosen(p) => launch.arg(p),
        };
    }
}

/// Pushes the source and destination buffers of a kernel over a list of
/// cells: Esoteric Pull passes the null `null` as its source (it works in place).
fn push_src_dst<'a, E: DeviceRepr>(launch: &mut LaunchArgs<'a>, b: Buffers<'a, E>, null: &'a u64) {
    match b.next {
        None => launch.arg(null).arg(b.f),
        Some(next) => launch.arg(&*b.f).arg(next),
    };
}

/// `stream_collide_{ep|ab}_<operator>_*` over the units `units` (layers of
/// the box, or blocks of the sparse `grid`) as `cfg` lays them out; with
/// `open`, `stream_collide_open_*`, which updates open cells too (the
/// operators not stamped into it chosen at run time).
#[allow(clippy::too_many_arguments)]
pub(crate) fn stream_collide<E: DeviceRepr, T: DeviceRepr + kernels_gpu::Real>(
    s: &CudaStream,
    kernel: &CudaFunction,
    b: Buffers<E>,
    flags: &CudaSlice<u8>,
    p: StepParams<T>,
    collision: CollisionParams<T>,
    grid: Option<SparseTables>,
    open: Option<OpenCells<T>>,
    units: Range<u32>,
    cfg: LaunchConfig,
) -> Result<()> {
    let p = WithCollision::for_kernel(p, collision, open.is_some());
    let mut launch = s.launch_builder(kernel);
    match b.next {
        None => launch.arg(b.f).arg(flags),
        Some(next) => launch.arg(&*b.f).arg(next).arg(flags),
    };
    p.push(&mut launch);
    let (grid, open) = (grid.map(ByValue), open.map(ByValue));
    if let Some(grid) = &grid {
        launch.arg(grid);
    }
    if let Some(open) = &open {
        launch.arg(open);
    }
    launch.arg(&units.start);
    if open.is_some() {
        launch.arg(&units.end);
    }
    // SAFETY: the argument list of the `stream_collide_*` entry points (the
    // sparse ones take the grid before the first unit, the `_open_` ones the
    // open cells' tables after the grid and the end of the units after the
    // first).
    unsafe { launch.launch(cfg) }.ctx("launching stream-collide")?;
    Ok(())
}

/// Threads per block of the kernels over a list of cells (open boundaries, curved walls).
const OPEN_BLOCK_SIZE: u32 = 128;

/// `open_boundary_*`: the group of `count` cells listed in `cells`, imposing
/// `open`, or with a profile each the velocity of its entry of `velocities`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn open_boundary<E: DeviceRepr, T: DeviceRepr + Copy>(
    s: &CudaStream,
    kernel: &CudaFunction,
    b: Buffers<E>,
    flags: &CudaSlice<u8>,
    (cells, velocities, count): (&CudaSlice<u32>, Option<&CudaSlice<T>>, u32),
    p: StepParams<T>,
    open: OpenBoundary<T>,
    scheme: Streaming,
    grid: Option<SparseTables>,
) -> Result<()> {
    let (p, open, scheme, null, grid) = (ByValue(p), ByValue(open), scheme as u32, 0u64, grid.map(ByValue));
    let mut launch = s.launch_builder(kernel);
    push_src_dst(&mut launch, b, &null);
    launch.arg(flags).arg(cells);
    match velocities {
        Some(v) => launch.arg(v),
        None => launch.arg(&null),
    };
    launch.arg(&count).arg(&p).arg(&open).arg(&scheme);
    if let Some(grid) = &grid {
        launch.arg(grid);
    }
    // SAFETY: the argument list of the `open_boundary_*` entry points.
    unsafe { launch.launch(list_config(count)) }.ctx("launching the open-boundary kernel")?;
    Ok(())
}

/// `curved_gather_*`: the carried values of the curved-wall group `links` before step `p.step`.
pub(crate) fn curved_gather<E: DeviceRepr, T: DeviceRepr + Copy>(
    s: &CudaStream,
    kernel: &CudaFunction,
    f: &CudaSlice<E>,
    p: StepParams<T>,
    links: CurvedCells<T>,
    scheme: Streaming,
    grid: Option<SparseTables>,
) -> Result<()> {
    let (p, count, links, scheme, grid) = (ByValue(p), links.count, ByValue(links), scheme as u32, grid.map(ByValue));
    let mut launch = s.launch_builder(kernel);
    launch.arg(f).arg(&p).arg(&links).arg(&scheme);
    if let Some(grid) = &grid {
        launch.arg(grid);
    }
    // SAFETY: the argument list of the `curved_gather_*` entry points.
    unsafe { launch.launch(list_config(count)) }.ctx("launching the curved-wall gather")?;
    Ok(())
}

/// `curved_fields_*`: the density and velocity of the curved-wall group `links` into `out`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn curved_fields<E: DeviceRepr, T: DeviceRepr + Copy>(
    s: &CudaStream,
    kernel: &CudaFunction,
    f: &CudaSlice<E>,
    flags: &CudaSlice<u8>,
    out: &mut CudaSlice<T>,
    p: StepParams<T>,
    links: CurvedCells<T>,
    scheme: Streaming,
    grid: Option<SparseTables>,
) -> Result<()> {
    let (p, count, links, scheme, grid) = (ByValue(p), links.count, ByValue(links), scheme as u32, grid.map(ByValue));
    let mut launch = s.launch_builder(kernel);
    launch.arg(f).arg(flags).arg(out).arg(&p).arg(&links).arg(&scheme);
    if let Some(grid) = &grid {
        launch.arg(grid);
    }
    // SAFETY: the argument list of the `curved_fields_*` entry points.
    unsafe { launch.launch(list_config(count)) }.ctx("launching the curved-wall fields")?;
    Ok(())
}

/// `curved_wall_{bgk|trt|chosen}_*`: the curved-wall group `links` for step
/// `p.step` (the operators not stamped into it chosen at run time).
#[allow(clippy::too_many_arguments)]
pub(crate) fn curved_wall<E: DeviceRepr, T: DeviceRepr + kernels_gpu::Real>(
    s: &CudaStream,
    kernel: &CudaFunction,
    b: Buffers<E>,
    flags: &CudaSlice<u8>,
    p: StepParams<T>,
    collision: CollisionParams<T>,
    links: CurvedCells<T>,
    scheme: Streaming,
    grid: Option<SparseTables>,
) -> Result<()> {
    let p = WithCollision::for_kernel(p, collision, true);
    let (count, links, scheme, null, grid) = (links.count, ByValue(links), scheme as u32, 0u64, grid.map(ByValue));
    let mut launch = s.launch_builder(kernel);
    push_src_dst(&mut launch, b, &null);
    launch.arg(flags);
    p.push(&mut launch);
    launch.arg(&links).arg(&scheme);
    if let Some(grid) = &grid {
        launch.arg(grid);
    }
    // SAFETY: the argument list of the `curved_wall_*` entry points.
    unsafe { launch.launch(list_config(count)) }.ctx("launching the curved-wall update")?;
    Ok(())
}

/// `sponge_*`: the sponge band `band` after step `p.step`, in `f`, the buffer the step wrote.
pub(crate) fn sponge<E: DeviceRepr, T: DeviceRepr + Copy>(
    s: &CudaStream,
    kernel: &CudaFunction,
    f: &mut CudaSlice<E>,
    p: StepParams<T>,
    band: SpongeCells<T>,
    scheme: Streaming,
    grid: Option<SparseTables>,
) -> Result<()> {
    let (p, count, band, scheme, grid) = (ByValue(p), band.count, ByValue(band), scheme as u32, grid.map(ByValue));
    let mut launch = s.launch_builder(kernel);
    launch.arg(f).arg(&p).arg(&band).arg(&scheme);
    if let Some(grid) = &grid {
        launch.arg(grid);
    }
    // SAFETY: the argument list of the `sponge_*` entry points.
    unsafe { launch.launch(list_config(count)) }.ctx("launching the sponge")?;
    Ok(())
}

/// `init_equilibrium_*` from `rho, ux, uy, uz` planes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn init_equilibrium<E: DeviceRepr, T: DeviceRepr + Copy>(
    s: &CudaStream,
    kernel: &CudaFunction,
    f: &mut CudaSlice<E>,
    flags: &CudaSlice<u8>,
    planes: &CudaSlice<T>,
    p: StepParams<T>,
    scheme: Streaming,
    grid: Option<SparseTables>,
    cfg: LaunchConfig,
) -> Result<()> {
    let (p, scheme, grid) = (ByValue(p), scheme as u32, grid.map(ByValue));
    let mut launch = s.launch_builder(kernel);
    launch.arg(f).arg(flags).arg(planes).arg(&p).arg(&scheme);
    if let Some(grid) = &grid {
        launch.arg(grid);
    }
    // SAFETY: the argument list of the `init_equilibrium_*` entry points.
    unsafe { launch.launch(cfg) }.ctx("launching initialisation")?;
    Ok(())
}

/// `fields_*` into `rho, ux, uy, uz` planes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fields<E: DeviceRepr, T: DeviceRepr + Copy>(
    s: &CudaStream,
    kernel: &CudaFunction,
    f: &CudaSlice<E>,
    flags: &CudaSlice<u8>,
    out: &mut CudaSlice<T>,
    p: StepParams<T>,
    scheme: Streaming,
    grid: Option<SparseTables>,
    cfg: LaunchConfig,
) -> Result<()> {
    let (p, scheme, grid) = (ByValue(p), scheme as u32, grid.map(ByValue));
    let mut launch = s.launch_builder(kernel);
    launch.arg(f).arg(flags).arg(out).arg(&p).arg(&scheme);
    if let Some(grid) = &grid {
        launch.arg(grid);
    }
    // SAFETY: the argument list of the `fields_*` entry points.
    unsafe { launch.launch(cfg) }.ctx("launching the fields kernel")?;
    Ok(())
}

/// `layout_probe` for a box of `dims` with `q` populations per cell.
pub(crate) fn layout_probe(
    s: &CudaStream,
    kernel: &CudaFunction,
    out: &mut CudaSlice<u64>,
    dims: Dims,
    q: u32,
    cfg: LaunchConfig,
) -> Result<()> {
    let dims = ByValue(dims);
    let mut launch = s.launch_builder(kernel);
    launch.arg(out).arg(&dims).arg(&q);
    // SAFETY: the argument list of the `layout_probe` entry point.
    unsafe { launch.launch(cfg) }.ctx("launching the layout probe")?;
    Ok(())
}

/// One thread per entry of a list of `count` entries.
fn list_config(count: u32) -> LaunchConfig {
    LaunchConfig {
        block_dim: (OPEN_BLOCK_SIZE, 1, 1),
        grid_dim: (count.div_ceil(OPEN_BLOCK_SIZE), 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `level_transit_*`: a level's ghost cells `cells` stream.
#[allow(clippy::too_many_arguments)]
pub(crate) fn level_transit<E: DeviceRepr, T: DeviceRepr + Copy>(
    s: &CudaStream,
    kernel: &CudaFunction,
    b: Buffers<E>,
    flags: &CudaSlice<u8>,
    p: StepParams<T>,
    grid: SparseTables,
    cells: &CudaSlice<u32>,
    count: u32,
    scheme: Streaming,
) -> Result<()> {
    let (p, grid, scheme, null) = (ByValue(p), ByValue(grid), scheme as u32, 0u64);
    let mut launch = s.launch_builder(kernel);
    push_src_dst(&mut launch, b, &null);
    launch.arg(flags).arg(&p).arg(&grid).arg(cells).arg(&count).arg(&scheme);
    // SAFETY: the argument list of the `level_transit_*` entry points.
    unsafe { launch.launch(list_config(count)) }.ctx("launching the ghost cells' kernel")?;
    Ok(())
}

/// `level_stream_*`: the streaming half of the split step over the blocks
/// `units` of a level, from `src` into `dst` (its collision half:
/// [`level_collide`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn level_stream<E: DeviceRepr, T: DeviceRepr + Copy>(
    s: &CudaStream,
    kernel: &CudaFunction,
    src: &CudaSlice<E>,
    dst: &mut CudaSlice<E>,
    flags: &CudaSlice<u8>,
    p: StepParams<T>,
    grid: SparseTables,
    units: Range<u32>,
    cfg: LaunchConfig,
) -> Result<()> {
    let (p, grid) = (ByValue(p), ByValue(grid));
    let mut launch = s.launch_builder(kernel);
    launch.arg(src).arg(dst).arg(flags).arg(&p).arg(&grid).arg(&units.start);
    // SAFETY: the argument list of the `level_stream_*` entry points.
    unsafe { launch.launch(cfg) }.ctx("launching the split step's streaming")?;
    Ok(())
}

/// `level_collide_*`: the split step's collision over the blocks `units`
/// of `grid`, in place in `f` (the operators not stamped into it chosen at
/// run time).
#[allow(clippy::too_many_arguments)]
pub(crate) fn level_collide<E: DeviceRepr, T: DeviceRepr + kernels_gpu::Real>(
    s: &CudaStream,
    kernel: &CudaFunction,
    f: &mut CudaSlice<E>,
    flags: &CudaSlice<u8>,
    p: StepParams<T>,
    collision: CollisionParams<T>,
    grid: SparseTables,
    units: Range<u32>,
    cfg: LaunchConfig,
) -> Result<()> {
    let (p, grid) = (WithCollision::for_kernel(p, collision, true), ByValue(grid));
    let mut launch = s.launch_builder(kernel);
    launch.arg(f).arg(flags);
    p.push(&mut launch);
    launch.arg(&grid).arg(&units.start);
    // SAFETY: the argument list of the `level_collide_*` entry points.
    unsafe { launch.launch(cfg) }.ctx("launching the split step's collision")?;
    Ok(())
}

/// A level's populations, flags and grid, as the interface kernels take them.
pub(crate) struct LevelArgs<'a, E> {
    /// Its current populations.
    pub f: &'a CudaSlice<E>,
    /// Its flag bytes.
    pub flags: &'a CudaSlice<u8>,
    /// Its grid's tables.
    pub grid: SparseTables,
}

/// `level_explode_*`: the `count` coarse cells `parents` explode into their
/// `2^D` fine cells each, listed in `children`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn level_explode<E: DeviceRepr, T: DeviceRepr + Copy>(
    s: &CudaStream,
    kernel: &CudaFunction,
    coarse: LevelArgs<E>,
    coarse_odd: bool,
    fine_f: &mut CudaSlice<E>,
    fine_flags: &CudaSlice<u8>,
    fine_grid: SparseTables,
    p: StepParams<T>,
    parents: &CudaSlice<u32>,
    children: &CudaSlice<u32>,
    count: u32,
    scheme: Streaming,
) -> Result<()> {
    let (coarse_grid, fine_grid, p) = (ByValue(coarse.grid), ByValue(fine_grid), ByValue(p));
    let (odd, scheme) = (coarse_odd as u32, scheme as u32);
    let mut launch = s.launch_builder(kernel);
    launch.arg(coarse.f).arg(coarse.flags).arg(&coarse_grid).arg(&odd);
    launch.arg(fine_f).arg(fine_flags).arg(&fine_grid).arg(&p).arg(parents).arg(children).arg(&count).arg(&scheme);
    // SAFETY: the argument list of the `level_explode_*` entry points.
    unsafe { launch.launch(list_config(count)) }.ctx("launching the explosion kernel")?;
    Ok(())
}

/// `level_coalesce_*`: the `count` cells `cells` next to the finer level
/// (`children` ghost cells each, of the level `fine`) take their average and
/// collide, writing `dst` (the operators not stamped into it chosen at run
/// time).
#[allow(clippy::too_many_arguments)]
pub(crate) fn level_coalesce<E: DeviceRepr, T: DeviceRepr + kernels_gpu::Real>(
    s: &CudaStream,
    kernel: &CudaFunction,
    dst: &mut CudaSlice<E>,
    p: StepParams<T>,
    collision: CollisionParams<T>,
    grid: SparseTables,
    cells: &CudaSlice<u32>,
    count: u32,
    fine: LevelArgs<E>,
    fine_odd: bool,
    children: &CudaSlice<u32>,
    scheme: Streaming,
) -> Result<()> {
    let p = WithCollision::for_kernel(p, collision, true);
    let (grid, fine_grid, odd, scheme) = (ByValue(grid), ByValue(fine.grid), fine_odd as u32, scheme as u32);
    let mut launch = s.launch_builder(kernel);
    launch.arg(dst);
    p.push(&mut launch);
    launch.arg(&grid).arg(cells).arg(&count).arg(fine.f).arg(&fine_grid).arg(&odd).arg(children).arg(&scheme);
    // SAFETY: the argument list of the `level_coalesce_*` entry points.
    unsafe { launch.launch(list_config(count)) }.ctx("launching the coalescence kernel")?;
    Ok(())
}

/// `exchange_gather_*`: `out[k] = src[index[k]]` for the `count` positions
/// of `index`.
pub(crate) fn exchange_gather<E: DeviceRepr>(
    s: &CudaStream,
    kernel: &CudaFunction,
    src: &CudaSlice<E>,
    index: &CudaSlice<u64>,
    out: &mut CudaSlice<E>,
    count: u32,
) -> Result<()> {
    let mut launch = s.launch_builder(kernel);
    launch.arg(src).arg(index).arg(out).arg(&count);
    // SAFETY: the argument list of the `exchange_gather_*` entry points;
    // `index` and `out` hold `count` entries, each index inside `src`.
    unsafe { launch.launch(list_config(count)) }.ctx("launching a partition's gather")?;
    Ok(())
}

/// `exchange_scatter_*`: `dst[index[k]] = values[k]` for the `count`
/// positions of `index`.
pub(crate) fn exchange_scatter<E: DeviceRepr>(
    s: &CudaStream,
    kernel: &CudaFunction,
    dst: &mut CudaSlice<E>,
    index: &CudaSlice<u64>,
    values: &CudaSlice<E>,
    count: u32,
) -> Result<()> {
    let mut launch = s.launch_builder(kernel);
    launch.arg(dst).arg(index).arg(values).arg(&count);
    // SAFETY: the argument list of the `exchange_scatter_*` entry points;
    // `index` and `values` hold `count` entries, each index inside `dst`.
    unsafe { launch.launch(list_config(count)) }.ctx("launching a partition's scatter")?;
    Ok(())
}
