//! Proving keys resident in device memory (cuda/device_key.cuh): a key's upload and free, the
//! device's budgeted cache of them, and where one MSM's points are read from, the resident
//! copy or host memory (a key larger than the budget is streamed per call).

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

/// A key is copied to the device in parts of at most this many bytes (0.1–0.15 s each over
/// PCIe), and its holder lets waiting calls of higher classes prove between two parts: a
/// 32GiB PoRep key is 45 GB, 2–3 s of copying.
const UPLOAD_PART_BYTES: usize = 2 << 30;

impl DeviceKey {
    /// The key's points copied to the device, in parts; `between` runs between two parts (the
    /// caller making way).
    pub(super) fn upload(ctx: &Context, key: &ProvingKey, staging: &sys::Staging, between: &mut dyn FnMut() -> Result<()>) -> Result<Self> {
        fn query<P>(points: &[P]) -> (*const u8, usize, usize) {
            (points.as_ptr().cast(), points.len(), size_of::<P>())
        }
        let queries = [query(&key.h), query(&key.l), query(&key.a), query(&key.b_g1), query(&key.b_g2)];
        let ctx = ctx.ptr()?;
        let mut out = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the counts are the query lengths.
        call("allocating device memory for the proving key", |msg| unsafe {
            sys::cuzk_gpu_key_alloc(ctx, &queries.map(|q| q.1), &mut out, msg)
        })?;
        let copy = NonNull::new(out).map(DeviceKey).ok_or_else(|| Error::internal("device key is NULL"))?;
        let mut parts = 0;
        for (q, &(host, n, point_bytes)) in queries.iter().enumerate() {
            let per_part = (UPLOAD_PART_BYTES / point_bytes).max(1);
            for first in (0..n).step_by(per_part) {
                if parts > 0 {
                    between()?;
                }
                parts += 1;
                let count = per_part.min(n - first);
                // SAFETY: points first..first+count of the query's vector (blst affine points,
                // the device's layout), which outlives the synchronous call; the copy has room
                // for the query's n points; the staging halves belong to this call.
                call("uploading the proving key", |msg| unsafe {
                    sys::cuzk_gpu_key_upload(
                        ctx,
                        copy.0.as_ptr(),
                        q as u32,
                        first,
                        count,
                        host.add(first * point_bytes).cast(),
                        staging,
                        msg,
                    )
                })?;
            }
        }
        Ok(copy)
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
