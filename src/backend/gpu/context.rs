//! The per-device context (cuda/context.cuh): made once per device and reused by every call;
//! it keeps the NTT buffers and the device copy of the witness, and is made again after a
//! device fault. Also the device count and the
//! device's memory as the driver and the context see it.

use std::ptr::NonNull;
use std::sync::RwLock;

use super::sys::{self, call};
use crate::error::{Error, Result, Status};

/// Number of CUDA devices usable by this process (0 without a driver or device).
pub fn device_count() -> Result<usize> {
    let mut count = 0;
    // SAFETY: out-pointers to locals.
    call("counting CUDA devices", |msg| unsafe { sys::cuzk_gpu_device_count(&mut count, msg) })?;
    Ok(count.max(0) as usize)
}

/// A device context (cuda/context.cuh). After a device fault it is freed before this
/// process's context of the device is reset, then made again (`fault`); absent while the
/// device is quarantined.
pub(super) struct Context {
    ordinal: i32,
    ptr: RwLock<Option<NonNull<sys::Context>>>,
}

// SAFETY: the context is used by one call at a time (the device turn), from any thread; it is
// freed and made again only inside the turn, under the write lock that status readers take too.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

impl Context {
    pub(super) fn new(device: i32) -> Result<Self> {
        Ok(Context {
            ordinal: device,
            ptr: RwLock::new(Some(Self::make(device)?)),
        })
    }

    fn make(device: i32) -> Result<NonNull<sys::Context>> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        call("creating the device context", |msg| unsafe {
            sys::cuzk_gpu_context_new(device, &mut ctx, msg)
        })?;
        NonNull::new(ctx).ok_or_else(|| Error::internal("device context is NULL"))
    }

    /// The context for a call inside the device turn.
    pub(super) fn ptr(&self) -> Result<*mut sys::Context> {
        let ptr = *self.ptr.read().unwrap_or_else(|p| p.into_inner());
        ptr.map(NonNull::as_ptr).ok_or_else(|| self.absent())
    }

    fn absent(&self) -> Error {
        Error::new(Status::GpuError, format!("device {} is quarantined after a fault", self.ordinal))
    }

    pub(super) fn memory(&self) -> Result<sys::Memory> {
        let ptr = self.ptr.read().unwrap_or_else(|p| p.into_inner());
        let ctx = ptr.ok_or_else(|| self.absent())?;
        let mut memory = sys::Memory::default();
        // SAFETY: live context (the read lock keeps it), out-pointer to a local.
        call("querying device memory", |msg| unsafe {
            sys::cuzk_gpu_memory_info(ctx.as_ptr(), &mut memory, msg)
        })?;
        Ok(memory)
    }

    /// Frees the NTT and witness buffers (the next call allocates them again). Call inside the
    /// device turn.
    pub(super) fn release_buffers(&self) -> Result<()> {
        let ctx = self.ptr()?;
        // SAFETY: live context, used inside the device turn.
        call("freeing the device context's buffers", |msg| unsafe {
            sys::cuzk_gpu_context_release_buffers(ctx, msg)
        })
    }

    /// Frees the context, runs `reset` (which resets the device's CUDA context) and makes a
    /// new context; on failure the context stays absent. Call inside the device turn.
    pub(super) fn remake(&self, reset: impl FnOnce() -> Result<()>) -> Result<()> {
        let mut ptr = self.ptr.write().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = ptr.take() {
            // SAFETY: made by cuzk_gpu_context_new, freed once (taken out above).
            unsafe { sys::cuzk_gpu_context_free(old.as_ptr()) }
        }
        reset()?;
        *ptr = Some(Self::make(self.ordinal)?);
        Ok(())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if let Some(ctx) = self.ptr.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            // SAFETY: made by cuzk_gpu_context_new, freed once.
            unsafe { sys::cuzk_gpu_context_free(ctx.as_ptr()) }
        }
    }
}
