//! The per-device context (cuda/context.cuh): made once per device and reused by every call;
//! it keeps the NTT buffers and the device copy of the witness. Also the device count and the
//! device's memory as the driver and the context see it.

use std::ptr::NonNull;

use super::sys::{self, call};
use crate::error::{Error, Result};

/// Number of CUDA devices usable by this process (0 without a driver or device).
pub fn device_count() -> Result<usize> {
    let mut count = 0;
    // SAFETY: out-pointers to locals.
    call("counting CUDA devices", |msg| unsafe { sys::cuzk_gpu_device_count(&mut count, msg) })?;
    Ok(count.max(0) as usize)
}

/// A device context (cuda/context.cuh).
pub(super) struct Context(NonNull<sys::Context>);

// SAFETY: the context is used by one call at a time (the device turn), from any thread.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

impl Context {
    pub(super) fn new(device: i32) -> Result<Self> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        call("creating the device context", |msg| unsafe {
            sys::cuzk_gpu_context_new(device, &mut ctx, msg)
        })?;
        NonNull::new(ctx).map(Context).ok_or_else(|| Error::internal("device context is NULL"))
    }

    pub(super) fn ptr(&self) -> *mut sys::Context {
        self.0.as_ptr()
    }

    pub(super) fn memory(&self) -> Result<sys::Memory> {
        let mut memory = sys::Memory::default();
        // SAFETY: live context, out-pointer to a local.
        call("querying device memory", |msg| unsafe {
            sys::cuzk_gpu_memory_info(self.ptr(), &mut memory, msg)
        })?;
        Ok(memory)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: made by cuzk_gpu_context_new, freed once.
        unsafe { sys::cuzk_gpu_context_free(self.ptr()) }
    }
}
