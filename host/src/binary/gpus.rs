//! The binary fluid split along z over several GPUs of one process, a slab
//! each ([`super::slab`]).
//!
//! Each pass of a step runs first on a slab's two faces (its first and
//! last own planes), then on the rest, on the device's stream. The copy
//! stream waits for the faces and sends them to the neighbours' received
//! planes (peer copies) while the rest runs. The next pass waits for the
//! copies into and out of the slab: they brought what it reads across its
//! faces, and they are done reading what it may overwrite. Passes only
//! read the received planes, and only on the faces, so nothing else waits.

use super::gpu::BinaryGpu;
use super::slab::{Pass, Slab};
use super::{BinaryConfig, BinaryFields, Box3};
use crate::error::{CudaContextExt, Result};
use crate::gpu::GpuDevice;
use crate::halo::{HaloRun, Placement};
use crate::peer;
use crate::solver::KernelReport;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream, DeviceRepr, ValidAsZeroBits};
use kernels_gpu::Real;
use std::sync::Arc;

/// Largest row pitch, in bytes, a strided peer copy takes; rows farther
/// apart are copied one by one.
const MAX_PITCH: usize = i32::MAX as usize;

struct Part<T: DeviceRepr + Copy> {
    gpu: BinaryGpu<T>,
    /// The stream of the copies this slab sends.
    copies: Arc<CudaStream>,
    /// Recorded on the device's stream once the last pass's faces are done.
    faces_done: CudaEvent,
    /// Recorded on the copy stream once the last pass's faces are sent.
    sent: CudaEvent,
}

/// Slabs on GPUs.
pub(super) struct GpuSlabs<T: DeviceRepr + Copy> {
    config: BinaryConfig,
    parts: Vec<Part<T>>,
    /// Whether the copies overlap the rest of each pass (else they follow it).
    overlap: bool,
    /// How each neighbouring pair of devices is connected.
    links: Vec<String>,
}

impl<T: Real + DeviceRepr + ValidAsZeroBits + Unpin> GpuSlabs<T> {
    /// `config`'s box split into a slab per device of `devices`, in
    /// precision `name`, with the order parameter `phi`.
    pub(super) fn new(
        config: &BinaryConfig,
        devices: Vec<GpuDevice>,
        name: &str,
        phi: &(impl Fn(u32, u32, u32) -> f64 + Sync),
        overlap: bool,
    ) -> Result<Self> {
        let slabs = Slab::split(config, devices.len())?;
        let links = peer::enable_access(&devices)?;
        let parts = devices
            .into_iter()
            .zip(slabs)
            .map(|(device, slab)| {
                let ctx = device.context().clone();
                ctx.bind_to_thread().ctx("binding the device")?;
                let event = || ctx.new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING)).ctx("creating an event");
                Ok(Part {
                    copies: ctx.new_stream().ctx("creating the copy stream")?,
                    faces_done: event()?,
                    sent: event()?,
                    gpu: BinaryGpu::new(config, slab, device, name, phi)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        // Each slab computed the initial φ of its received planes as its
        // neighbours did theirs: the first pass needs no exchange.
        Ok(Self { config: config.clone(), parts, overlap, links })
    }

    /// Queues `pass` on every slab, faces first, and their exchange.
    fn pass(&mut self, pass: Pass) -> Result<()> {
        let count = self.parts.len();
        for k in 0..count {
            let compute = self.parts[k].gpu.device().stream().clone();
            for n in [(k + count - 1) % count, k, (k + 1) % count] {
                compute.wait(&self.parts[n].sent).ctx("waiting for the exchange")?;
            }
            let part = &mut self.parts[k];
            let [first, end] = part.gpu.slab().planes();
            if self.overlap {
                part.gpu.launch_pass(pass, [first, first + 1])?;
                part.gpu.launch_pass(pass, [end - 1, end])?;
                part.faces_done.record(&compute).ctx("recording an event")?;
                if end - first > 2 {
                    part.gpu.launch_pass(pass, [first + 1, end - 1])?;
                }
            } else {
                part.gpu.launch_pass(pass, [first, end])?;
                part.faces_done.record(&compute).ctx("recording an event")?;
            }
            part.gpu.end_pass(pass);
        }
        self.exchange(pass)
    }

    /// Queues, on each slab's copy stream after its faces, the copies of
    /// what `pass` wrote on its faces into its neighbours' received planes.
    fn exchange(&mut self, pass: Pass) -> Result<()> {
        let count = self.parts.len();
        let q = self.config.lattice.q();
        let plane = (self.config.size[0] * self.config.size[1]) as usize;
        let elem = std::mem::size_of::<T>();
        for k in 0..count {
            let part = &self.parts[k];
            part.copies.wait(&part.faces_done).ctx("waiting for the faces")?;
            let (sends, _) = part.gpu.slab().faces();
            let (below, above) = ((k + count - 1) % count, (k + 1) % count);
            // The first own plane down, into the upper received plane of the
            // slab below; the last up, into the lower one above.
            for (to, z, side) in [(below, sends[0], 1), (above, sends[1], 0)] {
                let target = &self.parts[to].gpu;
                let received = target.slab().faces().1[side];
                for (field, rows) in pass.sent(q) {
                    let at = |gpu: &BinaryGpu<T>, z: u32| {
                        let sites = gpu.slab().sites(&self.config);
                        (
                            gpu.address(field),
                            Placement {
                                start: rows.start * sites + z as usize * plane,
                                row_pitch: sites,
                                slab_pitch: 0,
                            },
                        )
                    };
                    let ((src, from), (dst, into)) = (at(&part.gpu, z), at(target, received));
                    let run = HaloRun {
                        from: from.start,
                        to: into.start,
                        width: plane,
                        rows: rows.len(),
                        row_pitch: from.row_pitch,
                        depth: 1,
                        depth_pitch: 0,
                    };
                    let (from_device, to_device) = (part.gpu.device(), target.device());
                    if from.row_pitch.max(into.row_pitch) * elem <= MAX_PITCH {
                        // SAFETY: the rows lie inside both slabs' fields, which
                        // no pass touches until the `sent` event (module docs).
                        unsafe {
                            peer::copy_placed_async(
                                (from_device, src, from),
                                (to_device, dst, into),
                                &run,
                                elem,
                                &part.copies,
                            )
                        }?;
                    } else {
                        for r in 0..rows.len() {
                            let (a, b) = (from.start + r * from.row_pitch, into.start + r * into.row_pitch);
                            // SAFETY: as above, one row.
                            unsafe {
                                peer::copy_async(
                                    (from_device, src + (a * elem) as u64),
                                    (to_device, dst + (b * elem) as u64),
                                    plane * elem,
                                    &part.copies,
                                )
                            }?;
                        }
                    }
                }
            }
            part.sent.record(&part.copies).ctx("recording an event")?;
        }
        Ok(())
    }
}

impl<T: Real + DeviceRepr + ValidAsZeroBits + Unpin> Box3 for GpuSlabs<T> {
    fn step(&mut self) -> Result<()> {
        Pass::ALL.into_iter().try_for_each(|pass| self.pass(pass))
    }

    fn synchronize(&self) -> Result<()> {
        for part in &self.parts {
            part.gpu.device().stream().synchronize().ctx("waiting for the binary-fluid steps")?;
            part.copies.synchronize().ctx("waiting for the halo copies")?;
        }
        Ok(())
    }

    fn fields(&self) -> Result<BinaryFields> {
        self.synchronize()?;
        let slabs: Vec<Slab> = self.parts.iter().map(|p| p.gpu.slab().clone()).collect();
        let stored = self.parts.iter().map(|p| p.gpu.stored()).collect::<Result<Vec<_>>>()?;
        let whole = |k: usize, rows: usize| {
            let fields: Vec<Vec<f64>> = stored.iter().map(|s| s[k].clone()).collect();
            super::slab::gather(&self.config, &slabs, &fields, rows)
        };
        Ok(BinaryFields::new(&self.config.free_energy, whole(0, 1), &whole(1, 3), whole(2, 1), whole(3, 1)))
    }

    fn kernel_report(&self) -> Option<KernelReport> {
        self.parts[0].gpu.kernel_report()
    }

    fn links(&self) -> Vec<String> {
        self.links.clone()
    }
}
