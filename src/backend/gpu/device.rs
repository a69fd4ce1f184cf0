//! One CUDA device and what the backend keeps on it: its context (context.rs), the staging
//! pool (staging.rs), the resident keys (device_key.rs) and circuit shapes (their matrices,
//! spmv.rs, and their queries' selections of the witness, selection.rs), the turn that orders
//! the GPU phases of its calls, its counters for the engine status, and its
//! health after faults (fault.rs).

use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::context::Context;
use super::device_key::{self, DeviceKey};
use super::fault::{DeviceUse, FaultRecord};
use super::selection::DeviceSelection;
use super::spmv::DeviceShape;
use super::staging::{staging, CudaPinned, DEFAULT_PINNED_POOL_BYTES, STAGING_BUFFER_BYTES};
use super::sys::{self, call};
use super::GpuConfig;
use crate::backend::pinned::BufferPool;
use crate::backend::resident::{KeyRef, Residency, ResidentCache};
use crate::backend::turn::{Turn, TurnGuard};
use crate::backend::{BackendRelease, DeviceHealth, DeviceStatus, Priority, ResidentShape};
use crate::cancel::CancelToken;
use crate::error::{Error, Result, Status};
use crate::groth16::ProvingKey;
use crate::synthesis::r1cs::CircuitShape;
use crate::timings::{nanos, KeyResidency, Timings};
use rayon::ThreadPool;

/// One CUDA device and what the backend keeps on it.
pub(super) struct Device {
    pub(super) ordinal: i32,
    name: String,
    pub(super) ctx: Context,
    /// The device's memory, all of it.
    memory_bytes: u64,
    /// GPU phases of one device run one call at a time, high-priority calls first (see
    /// `backend::turn`); waiting for it is the partition's proving wait.
    pub(super) turn: Turn,
    pub(super) keys: ResidentCache<DeviceKey>,
    /// Whether a resident key's H query of up to 2^22 points gets its H table (cuzk's MSM,
    /// `GpuConfig::h_table`) where it fits (`key_copy`).
    h_table: bool,
    /// Circuit shapes whose matrices are resident, most recently used first.
    pub(super) shapes: Mutex<Vec<ShapeOnDevice>>,
    pub(super) staging: BufferPool<CudaPinned>,
    pub(super) in_flight: AtomicUsize,
    pub(super) proofs: AtomicU64,
    /// Set when a fault could not be recovered from (`fault`): calls go elsewhere.
    pub(super) quarantined: AtomicBool,
    pub(super) faults: Mutex<FaultRecord>,
    /// Last: dropped after everything above has been freed on the device.
    _use: DeviceUse,
}

/// A circuit shape resident on a device: its matrices and, once a call of the shape has sent
/// them, A's and B's selections of z (the same for every call of the shape).
pub(super) struct ShapeOnDevice {
    /// Held so that its address identifies the shape.
    pub(super) shape: Arc<CircuitShape>,
    pub(super) matrices: DeviceShape,
    selections: Option<[Arc<DeviceSelection>; 2]>,
}

impl ShapeOnDevice {
    /// The device memory it holds (a selection still read by a call outlives an eviction
    /// until that call ends).
    pub(super) fn bytes(&self) -> u64 {
        self.matrices.bytes + self.selections.iter().flatten().map(|s| s.bytes).sum::<u64>()
    }
}

impl Device {
    pub(super) fn open(ordinal: i32, config: &GpuConfig) -> Result<Self> {
        let device_use = DeviceUse::new(ordinal);
        let mut name = [0 as c_char; 256];
        let mut memory = 0u64;
        // SAFETY: out-pointers to locals of the sizes the C side writes.
        call("querying the CUDA device", |msg| unsafe {
            sys::cuzk_gpu_device_info(ordinal, name.as_mut_ptr(), &mut memory, msg)
        })?;
        // SAFETY: NUL-terminated by the C side.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let budget = if config.key_memory_budget > 0 {
            config.key_memory_budget
        } else {
            memory / 4 * 3
        };
        // Two buffers at least: a call that makes way while it uploads a key holds one.
        let pool = if config.pinned_pool_bytes > 0 {
            config.pinned_pool_bytes.max(2 * STAGING_BUFFER_BYTES as u64)
        } else {
            DEFAULT_PINNED_POOL_BYTES
        };
        log::info!(
            "cuzk GPU device {ordinal}: {name}, {} GiB, key budget {} GiB, pinned pool {} MiB, 0/1 split: {:?}",
            memory >> 30,
            budget >> 30,
            pool >> 20,
            config.split
        );
        Ok(Device {
            ordinal,
            name,
            ctx: Context::new(ordinal)?,
            memory_bytes: memory,
            turn: Turn::default(),
            keys: ResidentCache::new(budget),
            h_table: config.makes_h_tables(),
            shapes: Mutex::new(Vec::new()),
            staging: BufferPool::new(CudaPinned { device: ordinal }, STAGING_BUFFER_BYTES, pool as usize),
            in_flight: AtomicUsize::new(0),
            proofs: AtomicU64::new(0),
            quarantined: AtomicBool::new(false),
            faults: Mutex::new(FaultRecord::default()),
            _use: device_use,
        })
    }

    pub(super) fn status(&self) -> DeviceStatus {
        let memory = self.ctx.memory().unwrap_or_default();
        let keys = self.keys.entries();
        let shapes: Vec<ResidentShape> = self
            .shapes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|resident| ResidentShape {
                constraints: resident.shape.num_constraints() as u64,
                bytes: resident.bytes(),
            })
            .collect();
        let faults = self.faults.lock().unwrap_or_else(|p| p.into_inner());
        DeviceStatus {
            ordinal: self.ordinal,
            name: self.name.clone(),
            memory_total: memory.total,
            memory_free: memory.free,
            memory_used_by_cuzk: self.keys.used_bytes()
                + shapes.iter().map(|s| s.bytes).sum::<u64>()
                + memory.ntt_buffer_bytes
                + memory.witness_buffer_bytes,
            ntt_buffer_bytes: memory.ntt_buffer_bytes,
            witness_buffer_bytes: memory.witness_buffer_bytes,
            resident_shapes: shapes,
            key_budget: self.keys.budget(),
            resident_keys: keys,
            pinned_pool: self.staging.usage(),
            proofs_in_flight: self.in_flight.load(Ordering::Relaxed) as u64,
            proofs_done: self.proofs.load(Ordering::Relaxed),
            busy_ns: self.turn.held_ns(),
            health: if self.is_quarantined() {
                DeviceHealth::Quarantined
            } else {
                DeviceHealth::Healthy
            },
            faults: faults.count,
            last_fault: faults.last.clone(),
            last_recovery_ns: faults.last_recovery_ns,
        }
    }

    /// Gives back what the device holds between calls: the resident keys `keep` refuses (by
    /// key file), the circuits' matrices, the context's NTT and witness buffers, and the idle
    /// pinned staging buffers. Takes the device turn, as the sealing class does; the device
    /// bytes freed are the driver's count.
    pub(super) fn release_memory(&self, keep: &dyn Fn(&str) -> bool) -> Result<BackendRelease> {
        if self.is_quarantined() {
            return Ok(BackendRelease::default());
        }
        let _turn = self.turn.take(Priority::Sealing);
        let before = self.ctx.memory()?.free;
        self.keys.evict_unless(keep);
        self.shapes.lock().unwrap_or_else(|p| p.into_inner()).clear();
        let pinned_buffers = self.staging.free_idle() as u64;
        self.ctx.release_buffers()?;
        let after = self.ctx.memory()?.free;
        Ok(BackendRelease {
            device_bytes: after.saturating_sub(before),
            pinned_bytes: pinned_buffers * self.staging.usage().buffer_bytes,
        })
    }
}

/// Counts a call as in flight on a device for as long as it lives.
pub(super) struct InFlight<'a>(pub(super) &'a Device);

impl<'a> InFlight<'a> {
    pub(super) fn new(device: &'a Device) -> Self {
        device.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(device)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Device memory a call still allocates beyond the resident data: sppark's MSM scratch and
/// the compact witness. Matrices are made resident only with this much left free.
const CALL_HEADROOM_BYTES: u64 = 4 << 30;

/// The device memory of a key's copy: its points and its H table (0 for none).
#[derive(Clone, Copy, Debug)]
struct KeyCopy {
    points_bytes: u64,
    h_table_bytes: u64,
}

impl KeyCopy {
    fn points_only(key: &ProvingKey) -> Self {
        KeyCopy {
            points_bytes: key.points_bytes(),
            h_table_bytes: 0,
        }
    }

    fn bytes(&self) -> u64 {
        self.points_bytes + self.h_table_bytes
    }
}

/// Whether a key of `key_bytes` may be resident on a device of `device_bytes` with a key
/// budget of `budget`: within the budget, and with room beside it for the working memory of
/// a call with it (`call_bytes`: NTT and witness buffers, MSM scratch, as resident) and the
/// headroom. A 32GiB WindowPoSt key (57 962 MiB) fits an H200's budget and memory, an 80 GB
/// H100's budget but not its memory beside its call's ≈ 28 GB: streamed there.
pub(super) fn key_fits(key_bytes: u64, call_bytes: u64, budget: u64, device_bytes: u64) -> bool {
    key_bytes <= budget && key_bytes + call_bytes + CALL_HEADROOM_BYTES <= device_bytes
}

/// A key wanted resident on a device, for a call of `class` whose working memory
/// (`CallMemory::device_call_bytes`) is `call_bytes`; `ahead` when the call uploads it before
/// its first partition needs it (see `Device::resident_key`).
pub(super) struct KeyWanted<'k> {
    pub(super) key: &'k ProvingKey,
    pub(super) class: Priority,
    pub(super) ahead: bool,
    pub(super) call_bytes: u64,
}

/// Free device memory a call of `call_bytes` needs, and `upload` more for its key's upload:
/// the NTT and witness buffers the device already holds count as part of the call's.
fn needed_for_call(memory: &sys::Memory, call_bytes: u64, upload: u64) -> u64 {
    (call_bytes + CALL_HEADROOM_BYTES).saturating_sub(memory.ntt_buffer_bytes + memory.witness_buffer_bytes) + upload
}

impl Device {
    /// Runs one device phase with a staging buffer of the pool, given back when it ends.
    pub(super) fn with_staging<R>(&self, t: &mut Timings, phase: impl FnOnce(&sys::Staging, &mut Timings) -> Result<R>) -> Result<R> {
        let buffer = self.staging.acquire(&mut t.pin_ns)?;
        phase(&staging(&buffer), t)
    }

    /// Between two phases of a partition holding `turn`: lets the waiting calls of class
    /// `from` and above prove first (`TurnGuard::make_way_for`), the time counted as proving
    /// wait. A fault met meanwhile (the context reset: this partition's device state gone)
    /// fails it.
    pub(super) fn make_way(&self, turn: &mut TurnGuard<'_>, from: Priority, t: &mut Timings) -> Result<()> {
        let faults = self.fault_count();
        if let Some(waited) = turn.make_way_for(from) {
            t.proving_wait_ns += nanos(waited);
            self.check_usable()?;
            if self.fault_count() != faults {
                return Err(Error::new(
                    Status::GpuError,
                    format!("device {} met a fault while this partition made way for another call", self.ordinal),
                ));
            }
        }
        Ok(())
    }

    /// Between two parts of a key upload by the holder of `turn`: lets waiting WinningPoSts
    /// prove (an upload uses no buffer set). For that class only, so that one call at most
    /// makes way holding a staging buffer and theirs finds the pool's other one free.
    pub(super) fn make_way_in_upload(&self, turn: &mut TurnGuard<'_>, t: &mut Timings) -> Result<()> {
        match turn.priority() {
            Priority::WinningPost => Ok(()),
            _ => self.make_way(turn, Priority::WinningPost, t),
        }
    }

    /// Makes `wanted.key` resident here in a device turn of its class taken for it alone: a
    /// preload, or a call's upload ahead of its partitions (`ahead`). `prepare` runs
    /// first in the turn; between two parts waiting WinningPoSts are let in, and the upload
    /// stops once `cancel` is set. Its time is added to `upload_ns` inside the turn, before
    /// any partition can use the copy. False when the key is streamed here.
    pub(super) fn upload_in_own_turn(
        &self,
        wanted: &KeyWanted<'_>,
        pool: &ThreadPool,
        cancel: Option<&CancelToken>,
        prepare: impl FnOnce() -> Result<()>,
        upload_ns: &AtomicU64,
    ) -> Result<bool> {
        let mut turn = self.turn.take(wanted.class);
        let mut t = Timings::new();
        let upload = || -> Result<bool> {
            prepare()?;
            self.with_staging(&mut t, |staging, t| {
                let between = &mut |t: &mut Timings| {
                    cancel.map_or(Ok(()), CancelToken::check)?;
                    self.make_way_in_upload(&mut turn, t)
                };
                self.resident_key(wanted, pool, staging, t, between).map(|copy| copy.is_some())
            })
        };
        let resident = upload().map_err(|e| self.after_failure(e))?;
        upload_ns.fetch_add(t.srs_upload_ns, Ordering::Relaxed);
        Ok(resident)
    }

    /// Whether a key of `key_bytes` may be resident here beside the working memory of a call
    /// with it (`call_bytes`, `CallMemory::device_call_bytes`): `key_fits`.
    pub(super) fn fits_key(&self, key_bytes: u64, call_bytes: u64) -> bool {
        key_fits(key_bytes, call_bytes, self.keys.budget(), self.memory_bytes)
    }

    /// The device memory a copy of `key` made now would take: its points, and its H table
    /// (device_key::h_table_bytes) when this device makes them and the copy with it fits now,
    /// beside a call of `call_bytes`, the device's `memory` and the budget's other keys, so
    /// that a table never streams or evicts a key (without it the copy is what it was).
    fn key_copy(&self, key: &ProvingKey, call_bytes: u64, memory: &sys::Memory) -> KeyCopy {
        let points_only = KeyCopy::points_only(key);
        let table = match self.h_table {
            true => device_key::h_table_bytes(&key.query_sizes()),
            false => 0,
        };
        let with_table = points_only.points_bytes + table;
        let fits = table > 0
            && self.fits_key(with_table, call_bytes)
            && self.keys.used_bytes() + with_table <= self.keys.budget()
            && memory.free >= needed_for_call(memory, call_bytes, with_table);
        match fits {
            true => KeyCopy {
                h_table_bytes: table,
                ..points_only
            },
            false => points_only,
        }
    }

    /// Whether `key` may be resident here (`fits_key`) but has no copy here (none being made).
    pub(super) fn lacks_key(&self, key: &ProvingKey, call_bytes: u64) -> bool {
        !self.keys.holds(key.id()) && self.fits_key(key.points_bytes(), call_bytes)
    }

    /// Makes room in this device's memory for a call of `class` with `key`, whose working
    /// memory (NTT and witness buffers, MSM scratch: `Backend::call_memory`) is `call_bytes`:
    /// when free memory, with the buffers the device already holds and the key's upload
    /// counted, falls short, copies of keys of lower classes that no call is using are evicted
    /// (`ResidentCache::evict_below`). So the key budget, a plan made without the calls' own
    /// memory, never makes a PoSt fail for the room sealing keys take. Call inside the turn.
    pub(super) fn make_room_for_call(&self, key: &ProvingKey, class: Priority, call_bytes: u64) -> Result<()> {
        if class.below().is_none() {
            return Ok(());
        }
        let memory = self.ctx.memory()?;
        let upload = match self.lacks_key(key, call_bytes) {
            true => self.key_copy(key, call_bytes, &memory).bytes(),
            false => 0,
        };
        let needed = needed_for_call(&memory, call_bytes, upload);
        if memory.free >= needed {
            return Ok(());
        }
        let freed = self.keys.evict_below(class, needed - memory.free);
        if freed > 0 {
            log::info!(
                "device {}: {} MiB of lower-class keys evicted for a {class:?} call ({} MiB free, {} MiB needed)",
                self.ordinal,
                freed >> 20,
                memory.free >> 20,
                needed >> 20
            );
        }
        Ok(())
    }

    /// The wanted key's copy in this device's memory, uploaded now if it is not there (timed
    /// into `srs_upload_ns`; its points decoded from the parameter file on `pool` as they go,
    /// when the host does not hold them) for a call of its class and working memory; `None`
    /// when it may not be resident here beside that memory (`fits_key`), when the device has
    /// no room for it now beside that memory and what it holds, or when its room is held by
    /// keys of higher classes (see `resident`). Once resident, the host's copy of a key read
    /// from a file is dropped. Call inside the turn, holding
    /// `staging`; `between` runs between two parts of the upload (`make_way_in_upload`).
    /// `ahead`: the call uploads it before its first partition needs it, which is when its
    /// use counts (`ResidentCache::load_ahead`).
    pub(super) fn resident_key(
        &self,
        wanted: &KeyWanted<'_>,
        pool: &ThreadPool,
        staging: &sys::Staging,
        t: &mut Timings,
        between: &mut dyn FnMut(&mut Timings) -> Result<()>,
    ) -> Result<Option<Arc<DeviceKey>>> {
        let KeyWanted {
            key,
            class,
            ahead,
            call_bytes,
        } = *wanted;
        // A copy to make needs room now beside what the device holds (keys of higher classes,
        // matrices) once make_room_for_call has evicted what this call's class may. A copy held
        // is not made again (its entry keeps its bytes) unless it is evicted meanwhile: then it
        // is made without a table.
        let (copy, may_load) = match self.keys.holds(key.id()) {
            true => (KeyCopy::points_only(key), true),
            false => {
                let memory = self.ctx.memory()?;
                let copy = self.key_copy(key, call_bytes, &memory);
                let fits = self.fits_key(copy.bytes(), call_bytes) && memory.free >= needed_for_call(&memory, call_bytes, copy.bytes());
                (copy, fits)
            }
        };
        let key_ref = KeyRef {
            id: key.id(),
            label: key.label().to_string(),
            bytes: copy.bytes(),
            table_bytes: copy.h_table_bytes,
            alive: key.liveness(),
            class,
        };
        let start = Instant::now();
        let waited_before = t.proving_wait_ns;
        let with_h_table = copy.h_table_bytes > 0;
        let upload = || DeviceKey::upload(&self.ctx, key, with_h_table, pool, staging, &mut || between(t));
        let fetched = match (may_load, ahead) {
            (false, _) => Ok(Residency::TooLarge),
            (true, true) => self.keys.load_ahead(&key_ref, upload),
            (true, false) => self.keys.get(&key_ref, upload),
        };
        let residency = match fetched {
            // The budget is a plan; the device may hold less (other processes use it too).
            Err(e) if e.status == Status::OutOfMemory => {
                log::warn!(
                    "{} does not fit on device {} after all ({}): streamed",
                    key.label(),
                    self.ordinal,
                    e.message
                );
                Residency::TooLarge
            }
            other => other?,
        };
        match residency {
            Residency::Resident { copy, loaded } => {
                if loaded {
                    // The time it made way is the proving wait's.
                    t.srs_upload_ns += nanos(start.elapsed()).saturating_sub(t.proving_wait_ns - waited_before);
                    log::info!(
                        "{} resident on device {} ({} MiB) in {:.2?}",
                        key.label(),
                        self.ordinal,
                        key_ref.bytes >> 20,
                        start.elapsed()
                    );
                }
                let released = key.release_host_points();
                if released > 0 {
                    log::info!(
                        "{}: host copy dropped ({} MiB), resident on device {}",
                        key.label(),
                        released >> 20,
                        self.ordinal
                    );
                }
                t.key_residency = KeyResidency::Resident as u32;
                Ok(Some(copy))
            }
            Residency::TooLarge | Residency::Displaces => {
                log::debug!(
                    "{} ({} MiB) exceeds device {}'s key budget or its memory beside its call's, or the room is held by keys of classes above {class:?}: streamed",
                    key.label(),
                    key_ref.bytes >> 20,
                    self.ordinal
                );
                t.key_residency = KeyResidency::Streamed as u32;
                Ok(None)
            }
        }
    }
}

impl Device {
    /// Makes `shape`'s matrices resident on this device (timed into `shape_upload_ns`) unless
    /// they are already; false when they do not fit beside the key, the buffers of a domain of
    /// 2^lg_domain and the call's headroom, other shapes evicted first. Once they are resident
    /// the host's copy goes when the shape file can give it back (`release_matrices`: another
    /// device, or an upload after an eviction, reads the file again). Call inside the turn.
    pub(super) fn make_shape_resident(&self, shape: &Arc<CircuitShape>, lg_domain: u32, staging: &sys::Staging, t: &mut Timings) -> Result<bool> {
        let mut shapes = self.shapes.lock().unwrap_or_else(|p| p.into_inner());
        // A shape only this cache still holds was dropped by the engine (its key evicted): it
        // can never be asked for again, so its device memory goes now.
        shapes.retain(|resident| Arc::strong_count(&resident.shape) > 1);
        if let Some(i) = shapes.iter().position(|resident| Arc::ptr_eq(&resident.shape, shape)) {
            let entry = shapes.remove(i);
            shapes.insert(0, entry);
            shape.release_matrices();
            return Ok(true);
        }
        let memory = self.ctx.memory()?;
        let scalars = |n: u64| 32 * n;
        let buffers = scalars(3 << lg_domain).saturating_sub(memory.ntt_buffer_bytes)
            + scalars((shape.num_inputs() + shape.num_aux()) as u64).saturating_sub(memory.witness_buffer_bytes);
        // With A's and B's selections: a bitmap word and an offset, 8 bytes, a 32 values of z each.
        let selections = 2 * 8 * (shape.num_inputs() + shape.num_aux()).div_ceil(32) as u64;
        let needed = shape.size_bytes() as u64 + selections + buffers + CALL_HEADROOM_BYTES;
        let mut free = memory.free;
        while free < needed {
            let Some(evicted) = shapes.pop() else {
                return Ok(false);
            };
            free += evicted.bytes();
        }
        let start = Instant::now();
        let uploaded = match DeviceShape::upload(&self.ctx, shape, staging) {
            Err(e) if e.status == Status::OutOfMemory => return Ok(false),
            other => other?,
        };
        t.shape_upload_ns += nanos(start.elapsed());
        log::info!(
            "circuit matrices ({} constraints, {} MiB) resident on device {} in {:.2?}",
            shape.num_constraints(),
            uploaded.bytes >> 20,
            self.ordinal,
            start.elapsed()
        );
        shapes.insert(
            0,
            ShapeOnDevice {
                shape: Arc::clone(shape),
                matrices: uploaded,
                selections: None,
            },
        );
        let released = shape.release_matrices();
        if released > 0 {
            log::info!(
                "circuit matrices ({} MiB) released from host memory: resident on device {}",
                released >> 20,
                self.ordinal
            );
        }
        Ok(true)
    }

    /// A's and B's selections of z kept with `shape` on this device, sent by `upload` the first
    /// time (inside the turn, after `make_shape_resident`); None when the shape is not
    /// resident or its selections do not fit (the call then sends its own).
    pub(super) fn shape_selections(
        &self,
        shape: &Arc<CircuitShape>,
        upload: impl FnOnce() -> Result<[DeviceSelection; 2]>,
    ) -> Result<Option<[Arc<DeviceSelection>; 2]>> {
        let mut shapes = self.shapes.lock().unwrap_or_else(|p| p.into_inner());
        let Some(resident) = shapes.iter_mut().find(|resident| Arc::ptr_eq(&resident.shape, shape)) else {
            return Ok(None);
        };
        if resident.selections.is_none() {
            match upload() {
                Err(e) if e.status == Status::OutOfMemory => return Ok(None),
                uploaded => resident.selections = Some(uploaded?.map(Arc::new)),
            }
        }
        Ok(resident.selections.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// The keys of runs 103–104 (2026-12-05) on an 80 GB H100 and on an H200, each device's key budget
    /// its default three quarters: the 32GiB WindowPoSt key fit the H100's budget but not its
    /// memory beside its call's, and its H MSM ran out of memory; a 32GiB PoRep key fits both.
    #[test]
    fn a_key_is_resident_only_with_room_for_its_call() {
        let (h100, h200) = (81_559 * MIB, 143_771 * MIB);
        let (window_post, porep) = (57_962 * MIB, 45_179 * MIB);
        let call = 28 << 30;
        assert!(!key_fits(window_post, call, h100 / 4 * 3, h100));
        assert!(key_fits(window_post, call, h200 / 4 * 3, h200));
        assert!(key_fits(porep, call, h100 / 4 * 3, h100));
        // The budget still bounds it: an explicit budget below the key streams it anywhere.
        assert!(!key_fits(porep, call, porep - 1, h200));
        // And the call's own memory counts: a small key beside a call that fills the device.
        assert!(!key_fits(MIB, h100 - CALL_HEADROOM_BYTES, h100, h100));
    }

    /// Run 104 on an H200: after the WindowPoSt key and both kinds' matrices, ≈ 64 GB were
    /// free; the PoRep key (45 179 MiB) and its call (≈ 28 GB, none of its buffers held yet)
    /// need more, so its copy is not made (streamed). Buffers the device holds count as the
    /// call's.
    #[test]
    fn the_room_for_a_copy_counts_the_key_its_call_and_the_buffers_held() {
        let memory = |free: u64, buffers: u64| sys::Memory {
            total: 143_771 * MIB,
            free,
            ntt_buffer_bytes: buffers,
            witness_buffer_bytes: 0,
        };
        let (porep, call) = (45_179 * MIB, 28 << 30);
        assert!(needed_for_call(&memory(64 << 30, 0), call, porep) > 64 << 30);
        assert!(needed_for_call(&memory(90 << 30, 0), call, porep) <= 90 << 30);
        // The NTT buffers already allocated are part of the call's memory, not more of it.
        assert_eq!(
            needed_for_call(&memory(64 << 30, 12 << 30), call, porep),
            needed_for_call(&memory(64 << 30, 0), call, porep) - (12 << 30)
        );
    }
}
