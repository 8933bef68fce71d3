//! Warp-level votes. On the GPU 32 threads run in lockstep, and a branch
//! that some of them take and others skip runs both sides one after the
//! other; a vote lets the warp take one side together. On the host each
//! cell runs alone, so a vote is the thread's own value.

/// Whether `pred` holds for any active thread of the calling thread's warp.
/// Callers use it only to choose between paths that compute the same
/// values, so which threads are active at the vote never changes a result.
#[inline(always)]
pub fn any_in_warp(pred: bool) -> bool {
    #[cfg(target_arch = "nvptx64")]
    {
        let any: u32;
        // SAFETY: `activemask` names exactly the threads that execute this
        // `vote.sync` together, as it requires; only registers are touched.
        unsafe {
            core::arch::asm!(
                "{{ .reg .pred p; .reg .b32 m; activemask.b32 m; setp.ne.u32 p, {v}, 0; \
                 vote.sync.any.pred p, p, m; selp.u32 {r}, 1, 0, p; }}",
                v = in(reg32) pred as u32,
                r = out(reg32) any,
                options(nomem, nostack),
            );
        }
        any != 0
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        pred
    }
}
