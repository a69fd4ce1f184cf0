//! Proving keys resident in device memory (cuda/device_key.cuh): a key's upload and free, the
//! device's budgeted cache of them, and where one MSM's points are read from, the resident
//! copy or host memory (a key larger than the budget is streamed per call).

use std::ffi::c_void;
use std::ptr::NonNull;

use super::context::Context;
use super::sys::{self, call};
use crate::error::{Error, Result};
use crate::groth16::ProvingKey;

/// A proving key's points in device memory (cuda/device_key.cuh).
pub(super) struct DeviceKey(NonNull<sys::Key>);

// SAFETY: immutable device memory, read by one call at a time.
unsafe impl Send for DeviceKey {}
unsafe impl Sync for DeviceKey {}

impl DeviceKey {
    pub(super) fn upload(ctx: &Context, key: &ProvingKey, staging: &sys::Staging) -> Result<Self> {
        let queries: [(*const c_void, usize); sys::QUERIES] = [
            (key.h.as_ptr().cast(), key.h.len()),
            (key.l.as_ptr().cast(), key.l.len()),
            (key.a.as_ptr().cast(), key.a.len()),
            (key.b_g1.as_ptr().cast(), key.b_g1.len()),
            (key.b_g2.as_ptr().cast(), key.b_g2.len()),
        ];
        let points = sys::KeyPoints {
            host: queries.map(|q| q.0),
            n: queries.map(|q| q.1),
        };
        let ctx = ctx.ptr()?;
        let mut out = std::ptr::null_mut();
        // SAFETY: the key's vectors hold the given numbers of blst affine points and outlive
        // the synchronous call; the staging halves belong to this call.
        call("uploading the proving key", |msg| unsafe {
            sys::cuzk_gpu_key_upload(ctx, &points, staging, &mut out, msg)
        })?;
        NonNull::new(out).map(DeviceKey).ok_or_else(|| Error::internal("device key is NULL"))
    }
}

impl Drop for DeviceKey {
    fn drop(&mut self) {
        // SAFETY: made by cuzk_gpu_key_upload, freed once.
        unsafe { sys::cuzk_gpu_key_free(self.0.as_ptr()) }
    }
}

/// Where one MSM's points are for the device: the resident copy's query, or host memory.
pub(super) struct PointSource<'a> {
    pub(super) resident: Option<&'a DeviceKey>,
}

impl PointSource<'_> {
    pub(super) fn points<P>(&self, query: u32, host: &[P]) -> sys::Points {
        match self.resident {
            Some(key) => sys::Points {
                key: key.0.as_ptr(),
                query,
                host: std::ptr::null(),
                n: host.len(),
            },
            None => sys::Points {
                key: std::ptr::null(),
                query,
                host: host.as_ptr().cast(),
                n: host.len(),
            },
        }
    }

    pub(super) fn is_resident(&self) -> bool {
        self.resident.is_some()
    }
}
