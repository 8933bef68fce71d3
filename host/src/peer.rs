//! Peer copies between GPUs of one process: the in-process transport's
//! driver calls, and nothing else.

use crate::error::{CudaContextExt, Result};
use crate::gpu::GpuDevice;
use cudarc::driver::sys;
use cudarc::driver::CudaStream;

/// Queues a copy of `bytes` bytes from address `from.1` on device `from.0`
/// to address `to.1` on device `to.0`, on `stream` (of the source device).
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
    from.0.context().bind_to_thread().ctx("binding the device")?;
    let (src_ctx, dst_ctx) = (from.0.context().cu_ctx(), to.0.context().cu_ctx());
    // SAFETY: the caller's contract.
    unsafe { sys::cuMemcpyPeerAsync(to.1, dst_ctx, from.1, src_ctx, bytes, stream.cu_stream()) }
        .result()
        .ctx("queuing a halo copy")
}

/// Enables peer access between neighbouring devices where possible and
/// says, for each neighbouring pair, how copies travel.
pub(crate) fn enable_access(devices: &[GpuDevice]) -> Result<Vec<String>> {
    let n = devices.len();
    let mut links = Vec::new();
    for k in 0..n {
        let (a, b) = (&devices[k], &devices[(k + 1) % n]);
        if a.ordinal() == b.ordinal() || (n == 2 && k == 1) {
            if a.ordinal() == b.ordinal() && n > 1 {
                links.push(format!("GPU {} <-> GPU {}: same device", a.ordinal(), b.ordinal()));
            }
            continue;
        }
        let mut can = 0;
        // SAFETY: plain queries of two valid device handles.
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, a.context().cu_device(), b.context().cu_device()) }
            .result()
            .ctx("querying peer access")?;
        if can == 0 {
            links.push(format!("GPU {} <-> GPU {}: no peer access, staged through the host", a.ordinal(), b.ordinal()));
            continue;
        }
        for (from, to) in [(a, b), (b, a)] {
            from.context().bind_to_thread().ctx("binding the device")?;
            // SAFETY: `to`'s context is valid for the lifetime of the devices.
            let r = unsafe { sys::cuCtxEnablePeerAccess(to.context().cu_ctx(), 0) };
            if r != sys::CUresult::CUDA_SUCCESS && r != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
                r.result().ctx(format!("enabling peer access from GPU {} to GPU {}", from.ordinal(), to.ordinal()))?;
            }
        }
        links.push(format!("GPU {} <-> GPU {}: peer access", a.ordinal(), b.ordinal()));
    }
    Ok(links)
}
