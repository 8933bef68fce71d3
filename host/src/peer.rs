//! Peer copies between GPUs of one process: the in-process transport's
//! driver calls, and nothing else.

use crate::error::{CudaContextExt, Result};
use crate::gpu::GpuDevice;
use crate::halo::{HaloRun, Placement};
use cudarc::driver::sys;
use cudarc::driver::CudaStream;

/// Queues a copy of `bytes` bytes from address `from.1` on device `from.0`
/// to address `to.1` on device `to.0`, on `stream` (of either device).
///
/// # Safety
/// Both ranges must lie inside live allocations of their devices, untouched
/// by other work until the stream reaches the copy.
pub(crate) unsafe fn copy_async(
    from: (&GpuDevice, u64),
    to: (&GpuDevice, u64),
    bytes: usize,
    stream: &CudaStream,
) -> Result<()> {
    // The stream's context (the sender's or the receiver's) is current.
    stream.context().bind_to_thread().ctx("binding the device")?;
    let (src_ctx, dst_ctx) = (from.0.context().cu_ctx(), to.0.context().cu_ctx());
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemcpyPeerAsync(to.1, dst_ctx, from.1, src_ctx, bytes, stream.cu_stream()) }
        .result()
        .ctx("queuing a halo copy")
}

/// Queues the halo run `run` of values of `elem` bytes from the buffer at
/// `from.1` on device `from.0` to the one at `to.1` on device `to.0`, on
/// `stream`: one linear copy when the run is contiguous, else one strided
/// 3D copy.
///
/// # Safety
/// As [`copy_async`], for every value of the run in both buffers.
pub(crate) unsafe fn copy_run_async(
    from: (&GpuDevice, u64),
    to: (&GpuDevice, u64),
    run: &HaloRun,
    elem: usize,
    stream: &CudaStream,
) -> Result<()> {
    // SAFETY: the caller's contract.
    unsafe { copy_placed_async((from.0, from.1, run.sender()), (to.0, to.1, run.receiver()), run, elem, stream) }
}

/// Queues a copy of the values of the shape of `run` (its width, rows and
/// depth) placed at `from.2` in the buffer at `from.1` on device `from.0`
/// to `to.2` in the one at `to.1` on `to.0` (say, into a staging buffer
/// where they lie packed), on `stream`.
///
/// # Safety
/// As [`copy_async`], for every value placed in both buffers.
pub(crate) unsafe fn copy_placed_async(
    from: (&GpuDevice, u64, Placement),
    to: (&GpuDevice, u64, Placement),
    run: &HaloRun,
    elem: usize,
    stream: &CudaStream,
) -> Result<()> {
    let (src, dst) = (from.1 + (from.2.start * elem) as u64, to.1 + (to.2.start * elem) as u64);
    let whole = |p: Placement| {
        (run.rows == 1 || p.row_pitch == run.width) && (run.depth == 1 || p.slab_pitch == run.rows * run.width)
    };
    if whole(from.2) && whole(to.2) {
        // SAFETY: the caller's contract.
        return unsafe { copy_async((from.0, src), (to.0, dst), run.values() * elem, stream) };
    }
    // Slabs lie `slab_pitch` apart: that many values are `slab_pitch /
    // row_pitch` rows of the pitch.
    let rows_per_slab = |p: Placement| {
        debug_assert!(run.depth == 1 || p.slab_pitch.is_multiple_of(p.row_pitch));
        if run.depth == 1 {
            run.rows
        } else {
            p.slab_pitch / p.row_pitch
        }
    };
    let device = sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
    let copy = sys::CUDA_MEMCPY3D_PEER {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: device,
        srcHost: std::ptr::null(),
        srcDevice: src,
        srcArray: std::ptr::null_mut(),
        srcContext: from.0.context().cu_ctx(),
        srcPitch: from.2.row_pitch * elem,
        srcHeight: rows_per_slab(from.2),
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: device,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        dstContext: to.0.context().cu_ctx(),
        dstPitch: to.2.row_pitch * elem,
        dstHeight: rows_per_slab(to.2),
        WidthInBytes: run.width * elem,
        Height: run.rows,
        Depth: run.depth,
    };
    stream.context().bind_to_thread().ctx("binding the device")?;
    // SAFETY: the caller's contract; `copy` describes only the placed values.
    unsafe { sys::cuMemcpy3DPeerAsync(&copy, stream.cu_stream()) }.result().ctx("queuing a halo copy")
}

/// Lets `user` reach the memory `owner` allocates from its pool. Buffers
/// come from each device's stream-ordered pool, which peer access between
/// contexts does not cover: without this, a copy between two of them is
/// staged through the host.
fn share_pool(owner: &GpuDevice, user: &GpuDevice) -> Result<()> {
    if !owner.context().has_async_alloc() {
        // Buffers come from plain allocations, which peer access covers.
        return Ok(());
    }
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: a plain query of a valid device handle.
    unsafe { sys::cuDeviceGetMemPool(&mut pool, owner.context().cu_device()) }
        .result()
        .ctx("querying a device's memory pool")?;
    let access = sys::CUmemAccessDesc {
        location: sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: user.context().cu_device(),
        },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: `pool` is the device's live pool and `access` one valid entry.
    unsafe { sys::cuMemPoolSetAccess(pool, &access, 1) }.result().ctx(format!(
        "letting GPU {} reach the memory of GPU {}",
        user.ordinal(),
        owner.ordinal()
    ))
}

/// Enables peer access between neighbouring devices where possible, their
/// memory pools' too, and says, for each neighbouring pair, how copies
/// travel.
pub(crate) fn enable_access(devices: &[GpuDevice]) -> Result<Vec<String>> {
    let n = devices.len();
    // Two devices are one pair, not two.
    let pairs: Vec<_> = (0..n).filter(|&k| !(n == 2 && k == 1)).map(|k| (&devices[k], &devices[(k + 1) % n])).collect();
    let mut links = Vec::new();
    for (a, b) in pairs {
        links.extend(enable_pair(a, b, n > 1)?);
    }
    Ok(links)
}

/// Enables peer access both ways between `a` and `b` where possible, their
/// memory pools' too, and says how copies between them travel (nothing for
/// one device with itself, unless `name_same`).
pub(crate) fn enable_pair(a: &GpuDevice, b: &GpuDevice, name_same: bool) -> Result<Option<String>> {
    if a.ordinal() == b.ordinal() {
        return Ok(name_same.then(|| format!("GPU {} <-> GPU {}: same device", a.ordinal(), b.ordinal())));
    }
    let mut can = 0;
    // SAFETY: plain queries of two valid device handles.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, a.context().cu_device(), b.context().cu_device()) }
        .result()
        .ctx("querying peer access")?;
    if can == 0 {
        return Ok(Some(format!(
            "GPU {} <-> GPU {}: no peer access, staged through the host",
            a.ordinal(),
            b.ordinal()
        )));
    }
    for (from, to) in [(a, b), (b, a)] {
        from.context().bind_to_thread().ctx("binding the device")?;
        // SAFETY: `to`'s context is valid for the lifetime of the devices.
        let r = unsafe { sys::cuCtxEnablePeerAccess(to.context().cu_ctx(), 0) };
        if r != sys::CUresult::CUDA_SUCCESS && r != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            r.result().ctx(format!("enabling peer access from GPU {} to GPU {}", from.ordinal(), to.ordinal()))?;
        }
        share_pool(to, from)?;
    }
    Ok(Some(format!("GPU {} <-> GPU {}: peer access", a.ordinal(), b.ordinal())))
}
