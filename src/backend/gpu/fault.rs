//! Device faults (cuda/fault.cuh). A kernel fault (an illegal address, a driver Xid) leaves a
//! sticky error on this process's context of the device: every later CUDA call there fails.
//!
//! After a call fails on a device, still inside the device turn and holding nothing on the
//! device, [`Device::after_failure`] asks whether the context is faulted. If it is, the fault
//! is counted and the device recovered: everything cuzk keeps on it is dropped (resident keys
//! and matrices, the context's buffers, the staging pool's pinned buffers), this process's
//! context of the device is reset (`cudaDeviceReset`: this process only, never the GPU) and a
//! new context made; the next call that needs a key or matrices uploads them again. When the
//! reset fails, or another prover of this process uses the same device (a reset would free
//! that prover's memory under it), the device is quarantined instead: calls go to the other
//! devices, or to the CPU when none is left. The failed call itself returns GPU_ERROR with
//! the CUDA message. docs/RELIABILITY.md has what was measured.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Instant;

use super::device::Device;
use super::sys::{self, call};
use crate::error::{Error, Result, Status};
use crate::timings::nanos;

/// How many `Device`s of this process use each CUDA ordinal: resetting a device's context is
/// safe only for its only user.
static USERS: Mutex<BTreeMap<i32, usize>> = Mutex::new(BTreeMap::new());

fn users() -> std::sync::MutexGuard<'static, BTreeMap<i32, usize>> {
    USERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// One `Device`'s use of an ordinal, counted for as long as it lives. Made before the device's
/// context, so that a reset under the registry's lock cannot race a prover opening the device.
pub(super) struct DeviceUse(i32);

impl DeviceUse {
    pub(super) fn new(ordinal: i32) -> Self {
        *users().entry(ordinal).or_default() += 1;
        DeviceUse(ordinal)
    }
}

impl Drop for DeviceUse {
    fn drop(&mut self) {
        let mut users = users();
        if let Some(n) = users.get_mut(&self.0) {
            *n -= 1;
            if *n == 0 {
                users.remove(&self.0);
            }
        }
    }
}

/// A device's faults, for the engine status.
#[derive(Default)]
pub(super) struct FaultRecord {
    pub(super) count: u64,
    pub(super) last: Option<String>,
    pub(super) last_recovery_ns: u64,
}

impl Device {
    /// Faults met so far (each reset or quarantine counts one).
    pub(super) fn fault_count(&self) -> u64 {
        self.faults.lock().unwrap_or_else(|p| p.into_inner()).count
    }

    pub(super) fn is_quarantined(&self) -> bool {
        self.quarantined.load(Ordering::Acquire)
    }

    /// An error for a call on this device when it is quarantined.
    pub(super) fn check_usable(&self) -> Result<()> {
        if !self.is_quarantined() {
            return Ok(());
        }
        let faults = self.faults.lock().unwrap_or_else(|p| p.into_inner());
        Err(Error::new(
            Status::GpuError,
            format!(
                "device {} is quarantined after a fault this process could not recover from ({})",
                self.ordinal,
                faults.last.as_deref().unwrap_or("no message")
            ),
        ))
    }

    /// What a call that failed with `error` on this device returns. Call inside the device
    /// turn, with nothing of the call held on the device (key copy, staging buffer): on a
    /// sticky fault the device is recovered (or quarantined) here, before another call uses it.
    pub(super) fn after_failure(&self, error: Error) -> Error {
        if error.status != Status::GpuError || self.is_quarantined() {
            return error;
        }
        match self.context_faulted() {
            Ok(false) => return error,
            Ok(true) => {}
            Err(e) => log::warn!("device {}: checking for a fault failed too ({}); treated as one", self.ordinal, e.message),
        }
        log::error!(
            "device {}: sticky CUDA fault ({}): resetting this process's context of the device",
            self.ordinal,
            error.message
        );
        let start = Instant::now();
        let recovered = self.reset();
        let elapsed = start.elapsed();
        let mut faults = self.faults.lock().unwrap_or_else(|p| p.into_inner());
        faults.count += 1;
        faults.last = Some(error.message.clone());
        match recovered {
            Ok(()) => {
                faults.last_recovery_ns = nanos(elapsed);
                log::warn!("device {} recovered from the fault in {elapsed:.2?}", self.ordinal);
                Error::new(
                    Status::GpuError,
                    format!(
                        "{}; device {} faulted: this process's context of it was reset in {elapsed:.2?}, and its keys are uploaded again on next use",
                        error.message, self.ordinal
                    ),
                )
            }
            Err(e) => {
                self.quarantined.store(true, Ordering::Release);
                log::error!("device {} could not be recovered ({}): quarantined", self.ordinal, e.message);
                Error::new(
                    Status::GpuError,
                    format!(
                        "{}; device {} faulted and could not be recovered ({}): it is quarantined, and this process's calls go to its other devices or the CPU until it restarts",
                        error.message, self.ordinal, e.message
                    ),
                )
            }
        }
    }

    fn context_faulted(&self) -> Result<bool> {
        let mut faulted = 0;
        // SAFETY: out-pointer to a local.
        call("checking the device for a fault", |msg| unsafe {
            sys::cuzk_gpu_device_faulted(self.ordinal, &mut faulted, msg)
        })?;
        Ok(faulted != 0)
    }

    /// Drops what cuzk keeps on the device, resets this process's context of it and makes a
    /// new device context.
    fn reset(&self) -> Result<()> {
        let users = users();
        if users.get(&self.ordinal).copied().unwrap_or(0) > 1 {
            return Err(Error::new(
                Status::GpuError,
                "another prover of this process uses the device, and a reset would free its memory",
            ));
        }
        if self.staging.usage().in_use_bytes > 0 {
            return Err(Error::internal("a staging buffer of the device is still in use"));
        }
        self.keys.evict_all();
        self.shapes.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.staging.free_idle();
        self.ctx.remake(|| {
            // SAFETY: nothing of this device's is left allocated (above).
            call("resetting the device's CUDA context", |msg| unsafe {
                sys::cuzk_gpu_device_reset(self.ordinal, msg)
            })?;
            injection::reset_outcome()
        })
    }
}

/// TESTS ONLY (feature `fault-injection`): faults on demand, to prove the recovery above on a
/// real device.
#[cfg(feature = "fault-injection")]
pub mod injection {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::super::sys::{self, call};
    use super::Device;
    use crate::error::{Error, Result, Status};

    static FAULT_NEXT_CALL: AtomicBool = AtomicBool::new(false);
    static FAIL_NEXT_RESET: AtomicBool = AtomicBool::new(false);

    /// The next GPU call of the process faults after its H stage: a kernel writes to an
    /// unmapped address, and the call's next CUDA operation meets the sticky error.
    pub fn fault_next_call() {
        FAULT_NEXT_CALL.store(true, Ordering::SeqCst);
    }

    /// The next device reset is done but reported as failed, so the device is quarantined.
    pub fn fail_next_reset() {
        FAIL_NEXT_RESET.store(true, Ordering::SeqCst);
    }

    pub(in crate::backend::gpu) fn fire_if_armed(device: &Device) -> Result<()> {
        if !FAULT_NEXT_CALL.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let ctx = device.ctx.ptr()?;
        // SAFETY: live context, used inside the device turn.
        call("injecting a fault", |msg| unsafe { sys::cuzk_gpu_inject_fault(ctx, msg) })
    }

    pub(super) fn reset_outcome() -> Result<()> {
        match FAIL_NEXT_RESET.swap(false, Ordering::SeqCst) {
            true => Err(Error::new(Status::GpuError, "injected reset failure")),
            false => Ok(()),
        }
    }
}

/// Without the test feature nothing is ever injected.
#[cfg(not(feature = "fault-injection"))]
pub(super) mod injection {
    use super::Device;
    use crate::error::Result;

    #[inline(always)]
    pub(in crate::backend::gpu) fn fire_if_armed(_: &Device) -> Result<()> {
        Ok(())
    }

    #[inline(always)]
    pub(super) fn reset_outcome() -> Result<()> {
        Ok(())
    }
}
