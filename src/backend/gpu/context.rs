//! The per-device context (cuda/context.cuh): made once per device and reused by every call;
//! it keeps the NTT buffers and the device copy of the witness, and is made again after a
//! device fault. The objects made in it that own device memory (keys, matrices, selections)
//! are `ContextObject`s, freed by the life of the context they were made in. Also the device
//! count and the device's memory as the driver and the context see it.

use std::os::raw::c_int;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

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
    state: RwLock<State>,
}

struct State {
    ptr: Option<NonNull<sys::Context>>,
    life: Arc<ContextLife>,
}

// SAFETY: the context is used by one call at a time (the device turn), from any thread; it is
// freed and made again only inside the turn, under the write lock that status readers take too.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

/// One life of this process's CUDA context of a device, from its making to its reset after a
/// fault. Device memory allocated in it is freed by cudaFree while it lives; after the reset
/// that memory went with it, and its addresses may be the new context's allocations.
#[derive(Default)]
pub(super) struct ContextLife {
    ended: AtomicBool,
}

impl ContextLife {
    fn lives(&self) -> bool {
        !self.ended.load(Ordering::Acquire)
    }

    fn end(&self) {
        self.ended.store(true, Ordering::Release);
    }
}

/// An object cuda/ made in a device context that owns device memory there (a key's points, a
/// shape's matrices, a query's selection), freed by `free` when dropped: its device memory
/// with it while the context it was made in lives, only its host record after that context's
/// reset. So a call that still held one across a reset (suspended while a call of a higher
/// class faulted) cannot free the new context's memory under it.
pub(super) struct ContextObject<T> {
    ptr: NonNull<T>,
    life: Arc<ContextLife>,
    free: unsafe extern "C" fn(*mut T, c_int),
}

impl<T> ContextObject<T> {
    /// # Safety
    /// `ptr`, when not null, was made in the context of `life`, is owned by nothing else and is
    /// freed by `free` (whose flag says whether its device memory is still to be freed).
    pub(super) unsafe fn new(ptr: *mut T, life: Arc<ContextLife>, free: unsafe extern "C" fn(*mut T, c_int), what: &str) -> Result<Self> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::internal(format!("{what} is NULL")))?;
        Ok(ContextObject { ptr, life, free })
    }

    pub(super) fn ptr(&self) -> *mut T {
        self.ptr.as_ptr()
    }
}

impl<T> Drop for ContextObject<T> {
    fn drop(&mut self) {
        // SAFETY: owned here (`new`), freed once.
        unsafe { (self.free)(self.ptr.as_ptr(), c_int::from(self.life.lives())) }
    }
}

impl Context {
    pub(super) fn new(device: i32) -> Result<Self> {
        Ok(Context {
            ordinal: device,
            state: RwLock::new(State {
                ptr: Some(Self::make(device)?),
                life: Arc::default(),
            }),
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
        self.current().map(|(ptr, _)| ptr)
    }

    /// The context for a call inside the device turn, and its life, for the objects the call
    /// makes in it (`ContextObject`).
    pub(super) fn current(&self) -> Result<(*mut sys::Context, Arc<ContextLife>)> {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        let ptr = state.ptr.ok_or_else(|| self.absent())?;
        Ok((ptr.as_ptr(), state.life.clone()))
    }

    fn absent(&self) -> Error {
        Error::new(Status::GpuError, format!("device {} is quarantined after a fault", self.ordinal))
    }

    pub(super) fn memory(&self) -> Result<sys::Memory> {
        let state = self.state.read().unwrap_or_else(|p| p.into_inner());
        let ctx = state.ptr.ok_or_else(|| self.absent())?;
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

    /// Frees the context, runs `reset` (which resets the device's CUDA context, ending the
    /// life of everything made in it) and makes a new context; on failure the context stays
    /// absent. Call inside the device turn.
    pub(super) fn remake(&self, reset: impl FnOnce() -> Result<()>) -> Result<()> {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = state.ptr.take() {
            // SAFETY: made by cuzk_gpu_context_new, freed once (taken out above).
            unsafe { sys::cuzk_gpu_context_free(old.as_ptr()) }
        }
        state.life.end();
        state.life = Arc::default();
        reset()?;
        state.ptr = Some(Self::make(self.ordinal)?);
        Ok(())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if let Some(ctx) = self.state.get_mut().unwrap_or_else(|p| p.into_inner()).ptr.take() {
            // SAFETY: made by cuzk_gpu_context_new, freed once.
            unsafe { sys::cuzk_gpu_context_free(ctx.as_ptr()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// What the fake free function below was called with: the object and its flag.
    static FREED: Mutex<Vec<(usize, c_int)>> = Mutex::new(Vec::new());

    unsafe extern "C" fn record_free(object: *mut u64, context_lives: c_int) {
        FREED.lock().unwrap().push((object as usize, context_lives));
        // SAFETY: made by Box::into_raw below, freed once.
        drop(unsafe { Box::from_raw(object) });
    }

    fn object(life: &Arc<ContextLife>) -> (ContextObject<u64>, usize) {
        let ptr = Box::into_raw(Box::new(7u64));
        // SAFETY: owned by the object, freed by record_free.
        (
            unsafe { ContextObject::new(ptr, life.clone(), record_free, "test object") }.unwrap(),
            ptr as usize,
        )
    }

    #[test]
    fn a_freed_object_tells_its_free_whether_its_context_still_lives() {
        let life = Arc::new(ContextLife::default());
        let (kept, kept_at) = object(&life);
        let (dropped, dropped_at) = object(&life);
        drop(dropped);
        // The reset: objects still held past it free their host record only, and objects of
        // the new context their device memory again.
        life.end();
        let new_life = Arc::new(ContextLife::default());
        let (new, new_at) = object(&new_life);
        drop(kept);
        drop(new);
        let freed = FREED.lock().unwrap().clone();
        assert_eq!(freed, vec![(dropped_at, 1), (kept_at, 0), (new_at, 1)]);
        // SAFETY: a null pointer is refused before anything owns it.
        let null = unsafe { ContextObject::<u64>::new(std::ptr::null_mut(), new_life, record_free, "test object") };
        assert!(null.is_err_and(|e| e.message.contains("test object is NULL")));
    }
}
