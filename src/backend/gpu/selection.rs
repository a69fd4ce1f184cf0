//! A query's selection of the witness z kept on the device (cuda/selection.cuh). A's and B's
//! selections (witness_msm.rs: the values of the variables with a point in the query) are a
//! function of the circuit's shape, so the device keeps them with the shape's matrices
//! (device.rs's cache): checked and sent by the shape's first call, not inside every call's
//! turn (at 32GiB 2 × 16.8 MB a selection, ≈ 20 ms a query of each partition's turn).

use super::context::{Context, ContextObject};
use super::sys::{self, call};
use crate::error::Result;

/// One query's selection of z in device memory.
pub(super) struct DeviceSelection {
    object: ContextObject<sys::Selection>,
    pub(super) bytes: u64,
}

// SAFETY: immutable device memory, read by one call at a time (the device turn).
unsafe impl Send for DeviceSelection {}
unsafe impl Sync for DeviceSelection {}

impl DeviceSelection {
    /// Checks the selection `scalars` names (its bitmap and offsets, for a query of `npoints`)
    /// and copies it to the device.
    pub(super) fn upload(ctx: &Context, scalars: &sys::WitnessScalars, npoints: usize, staging: &sys::Staging) -> Result<Self> {
        let (ctx, life) = ctx.current()?;
        let (mut out, mut bytes) = (std::ptr::null_mut(), 0u64);
        // SAFETY: the selection's vectors cover z_len values and outlive the synchronous call.
        call("uploading a query's selection of the witness", |msg| unsafe {
            sys::cuzk_gpu_selection_upload(ctx, scalars, npoints, staging, &mut out, &mut bytes, msg)
        })?;
        // SAFETY: made by cuzk_gpu_selection_upload in this context, owned here.
        let object = unsafe { ContextObject::new(out, life, sys::cuzk_gpu_selection_free, "device selection")? };
        Ok(DeviceSelection { object, bytes })
    }

    pub(super) fn ptr(&self) -> *const sys::Selection {
        self.object.ptr()
    }
}
