//! Host-to-device staging (cuda/staging.cuh): each device's pool of page-locked host buffers,
//! allocated by CUDA, and the two halves of one buffer that a copy fills and sends in turn.

use std::ptr::NonNull;

use super::sys::{self, call};
use crate::backend::pinned::{PinnedMemory, PooledBuffer};
use crate::error::{Error, Result, Status};

/// Pinned staging per device unless configured (and at least): one buffer of two 32 MiB halves
/// is what one call uses at a time (GPU phases of a device are ordered); the second serves the
/// WinningPoSts a call lets prove while it holds the first, uploading a key.
pub const DEFAULT_PINNED_POOL_BYTES: u64 = 128 << 20;
pub(super) const STAGING_BUFFER_BYTES: usize = 64 << 20;

/// CUDA's page-locked host allocator, for the staging pool of one device: its buffers belong
/// to that device's context, so that a reset of another device's context leaves them alone.
pub(super) struct CudaPinned {
    pub(super) device: i32,
}

impl PinnedMemory for CudaPinned {
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        call("allocating pinned host memory", |msg| unsafe {
            sys::cuzk_gpu_pinned_alloc(self.device, bytes, &mut ptr, msg)
        })?;
        NonNull::new(ptr.cast()).ok_or_else(|| Error::new(Status::OutOfMemory, "cudaHostAlloc returned NULL"))
    }

    unsafe fn free(&self, ptr: NonNull<u8>, _bytes: usize) {
        sys::cuzk_gpu_pinned_free(ptr.as_ptr().cast());
    }
}

/// One staging buffer of the pool: two halves, filled and sent alternately.
pub(super) fn staging(buffer: &PooledBuffer<'_, CudaPinned>) -> sys::Staging {
    let half = buffer.len() / 2;
    // SAFETY: both halves lie inside the buffer.
    let second = unsafe { buffer.as_ptr().add(half) };
    sys::Staging {
        buffers: [buffer.as_ptr().cast(), second.cast()],
        bytes: half,
    }
}
