//! One partition's step split for overlap: its two boundary layers on a
//! high-priority stream, its interior meanwhile on the device's stream, with
//! the events that order them against the last step and the halo exchange.
//! Shared by the in-process multi-GPU solver and the NCCL ranks.
//!
//! Ordering (see [`crate::halo`] for which slots each part touches): the
//! boundary layers touch the halos and layers 2 and `len - 1`, which the
//! interior touches too (Esoteric Pull: it also writes layer `len`), so they
//! wait for the last exchange into and out of the partition and for
//! everything queued on the device's stream (the last interior, and any
//! upload or restore). The interior writes no halo and nothing an exchange
//! moves (two-lattice interiors only read the layers being sent), so it
//! waits only for the last boundary layers. The exchange waits for
//! `SplitStep::boundary_done`. The CPU partitions run the extreme orders
//! this allows ([`crate::plan::Schedule`]); tests check that every one
//! gives the populations of a single domain, bit for bit.

use crate::error::{CudaContextExt, Result};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use std::sync::Arc;

/// Streams and events of one partition's split step.
pub(crate) struct SplitStep {
    /// High-priority stream of the boundary layers: a one-layer launch alone
    /// would leave most of the GPU idle, so they run beside the interior.
    boundary: Arc<CudaStream>,
    boundary_done: CudaEvent,
    /// Recorded on the device's stream before each step.
    compute_ready: CudaEvent,
    /// Whether a step has been queued (the first has no boundary layers to wait for).
    started: bool,
}

impl SplitStep {
    /// Streams and events on the device of `ctx`.
    pub(crate) fn new(ctx: &Arc<CudaContext>) -> Result<Self> {
        ctx.bind_to_thread().ctx("binding the device")?;
        let (_, highest) = cudarc::driver::result::stream::get_priority_range().ctx("reading stream priorities")?;
        let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).ctx("creating an event");
        Ok(Self {
            boundary: ctx.new_stream_with_priority(highest).ctx("creating the boundary stream")?,
            boundary_done: event()?,
            compute_ready: event()?,
            started: false,
        })
    }

    /// Orders a new step: its boundary layers after everything queued on
    /// `compute` (the device's stream) and after `exchanged` (the last
    /// exchanges into and out of the partition), its interior on `compute`
    /// after the last boundary layers. Then queue the boundary layers on
    /// [`Self::stream`], call [`Self::end_boundary`], and queue the interior.
    pub(crate) fn begin(&mut self, compute: &CudaStream, exchanged: &[&CudaEvent]) -> Result<()> {
        self.compute_ready.record(compute).ctx("recording an event")?;
        self.boundary.wait(&self.compute_ready).ctx("waiting for the device's stream")?;
        if self.started {
            for event in exchanged {
                self.boundary.wait(event).ctx("waiting for the halo exchange")?;
            }
            compute.wait(&self.boundary_done).ctx("waiting for boundary layers")?;
        }
        Ok(())
    }

    /// The high-priority stream of the boundary layers.
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.boundary
    }

    /// Marks the boundary layers of this step queued.
    pub(crate) fn end_boundary(&mut self) -> Result<()> {
        self.boundary_done.record(&self.boundary).ctx("recording an event")?;
        self.started = true;
        Ok(())
    }

    /// Recorded after the boundary layers of the last queued step.
    pub(crate) fn boundary_done(&self) -> &CudaEvent {
        &self.boundary_done
    }

    /// Waits for the boundary layers queued so far.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.boundary.synchronize().ctx("finishing boundary layers")
    }
}
