//! Proving keys kept resident by the engine, the memory it keeps between calls and what a
//! proof kind takes, and its status.

use super::boundary::{boundary, optional_mut, owned_bytes, required_mut, SizedOut, SizedStruct};
use super::registered_proof::{post_proof_from_abi, seal_proof_from_abi, update_proof_from_abi};
use super::{cuzk_bytes, cuzk_engine, cuzk_error, engine::engine_of};
use crate::engine::RegisteredProof;
use crate::error::{Error, Result, Status};

/// Reads the proving key of `registered_proof` (filecoin-ffi numbering) from the parameter
/// directory and makes it resident on every GPU the engine uses, so that the next proof of
/// that kind loads nothing. `srs_load_ns` / `srs_upload_ns`, when not NULL, get the time to
/// read it from disk and to copy it to the devices, its points decoded from the file as they go
/// (0 when it was already there); on the CPU, or for a key streamed to the GPUs, the points are
/// decoded into host memory, timed as the read.
///
/// `engine`: not NULL, a handle from `cuzk_engine_new` not yet freed. `srs_load_ns`,
/// `srs_upload_ns`: NULL or writable. `err`: NULL, or where to store the call's error. All are
/// read or written during the call only.
#[no_mangle]
pub extern "C" fn cuzk_engine_preload_key(
    engine: *const cuzk_engine,
    registered_proof: u32,
    srs_load_ns: *mut u64,
    srs_upload_ns: *mut u64,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let proof = seal_proof_from_abi(registered_proof)?.into();
        preload(engine, proof, srs_load_ns, srs_upload_ns)
    })
}

/// `cuzk_engine_preload_key` for a registered PoSt proof (go-state-types numbering): the
/// WindowPoSt or WinningPoSt key of a sector size.
#[no_mangle]
pub extern "C" fn cuzk_engine_preload_post_key(
    engine: *const cuzk_engine,
    registered_post_proof: u32,
    srs_load_ns: *mut u64,
    srs_upload_ns: *mut u64,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let proof = post_proof_from_abi(registered_post_proof)?.into();
        preload(engine, proof, srs_load_ns, srs_upload_ns)
    })
}

/// `cuzk_engine_preload_key` for a registered update proof (go-state-types numbering): the
/// SnapDeals key of a sector size.
#[no_mangle]
pub extern "C" fn cuzk_engine_preload_update_key(
    engine: *const cuzk_engine,
    registered_update_proof: u32,
    srs_load_ns: *mut u64,
    srs_upload_ns: *mut u64,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let proof = update_proof_from_abi(registered_update_proof)?.into();
        preload(engine, proof, srs_load_ns, srs_upload_ns)
    })
}

fn preload(engine: *const cuzk_engine, proof: RegisteredProof, srs_load_ns: *mut u64, srs_upload_ns: *mut u64) -> Result<()> {
    let report = engine_of(engine)?.preload_key(proof)?;
    if let Some(out) = optional_mut(srs_load_ns) {
        *out = report.srs_load_ns;
    }
    if let Some(out) = optional_mut(srs_upload_ns) {
        *out = report.srs_upload_ns;
    }
    Ok(())
}

/// Drops the proving key of `registered_proof` from host memory and from every GPU; calls
/// using it finish first. `*evicted_out` is true when it was resident anywhere.
///
/// `engine`: not NULL, a handle from `cuzk_engine_new` not yet freed. `evicted_out`: not NULL,
/// writable (false on failure). `err`: NULL, or where to store the call's error. All are read
/// or written during the call only.
#[no_mangle]
pub extern "C" fn cuzk_engine_evict_key(
    engine: *const cuzk_engine,
    registered_proof: u32,
    evicted_out: *mut bool,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || evict(engine, || Ok(seal_proof_from_abi(registered_proof)?.into()), evicted_out))
}

/// `cuzk_engine_evict_key` for a registered PoSt proof (go-state-types numbering).
#[no_mangle]
pub extern "C" fn cuzk_engine_evict_post_key(
    engine: *const cuzk_engine,
    registered_post_proof: u32,
    evicted_out: *mut bool,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        evict(engine, || Ok(post_proof_from_abi(registered_post_proof)?.into()), evicted_out)
    })
}

/// `cuzk_engine_evict_key` for a registered update proof (go-state-types numbering).
#[no_mangle]
pub extern "C" fn cuzk_engine_evict_update_key(
    engine: *const cuzk_engine,
    registered_update_proof: u32,
    evicted_out: *mut bool,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        evict(engine, || Ok(update_proof_from_abi(registered_update_proof)?.into()), evicted_out)
    })
}

fn evict(engine: *const cuzk_engine, proof: impl FnOnce() -> Result<RegisteredProof>, evicted_out: *mut bool) -> Result<()> {
    let evicted_out = required_mut(evicted_out, "evicted_out")?;
    *evicted_out = false;
    *evicted_out = engine_of(engine)?.evict_key(proof()?)?;
    Ok(())
}

/// What `cuzk_engine_release_memory` gave back, in bytes.
///
/// Its only revision is 1 (CUZK_MEMORY_RELEASED_SIZE_V1 bytes, the smallest `struct_size`
/// accepted).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cuzk_memory_released {
    /// sizeof(cuzk_memory_released) as the caller compiled it.
    pub struct_size: u32,
    /// Host memory of the proving keys dropped (their points held on the host).
    pub host_key_bytes: u64,
    /// Circuit shapes (R1CS matrices) dropped from host memory.
    pub host_shape_bytes: u64,
    /// Device memory freed (keys, matrices, NTT and witness buffers), as the driver counts
    /// it, over all devices.
    pub device_bytes: u64,
    /// Pinned host staging memory freed.
    pub pinned_bytes: u64,
    /// Wall time of the release.
    pub duration_ns: u64,
}

/// The smallest `cuzk_memory_released.struct_size` accepted: the size of revision 1.
pub const CUZK_MEMORY_RELEASED_SIZE_V1: u32 = 48;
const _: () = assert!(CUZK_MEMORY_RELEASED_SIZE_V1 as usize == size_of::<cuzk_memory_released>());

// SAFETY: repr(C), plain data (integers), starting with its u32 struct_size.
unsafe impl SizedStruct for cuzk_memory_released {
    const NAME: &'static str = "cuzk_memory_released";
    const MIN_SIZE: u32 = CUZK_MEMORY_RELEASED_SIZE_V1;
}

/// Gives back the memory the engine keeps between calls, at once: the proving keys on the host
/// and the GPUs (but, when `keep_post_keys`, those of the WindowPoSt and WinningPoSt circuits
/// it has used: their deadlines leave no time to read a key again), the circuit shapes, the
/// GPUs' matrices, NTT and witness buffers and pinned staging buffers, then the allocator's
/// free host memory. Calls in flight keep what they use until they end; each GPU is released
/// at its next turn. The next call reads and uploads again what it needs (its timings show
/// it). `cuzk_config.idle_release_ms` does the same after an idle time.
///
/// `engine`: not NULL, a handle from `cuzk_engine_new` not yet freed. `released_out`: NULL, or
/// a cuzk_memory_released with its `struct_size` set, written no further than that. `err`:
/// NULL, or where to store the call's error. All are read or written during the call only.
#[no_mangle]
pub extern "C" fn cuzk_engine_release_memory(
    engine: *const cuzk_engine,
    keep_post_keys: bool,
    released_out: *mut cuzk_memory_released,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let out = SizedOut::optional(released_out)?;
        let released = engine_of(engine)?.release_memory(keep_post_keys);
        if let Some(out) = out {
            out.write(&cuzk_memory_released {
                struct_size: 0, // not written: the caller's stays
                host_key_bytes: released.host_key_bytes,
                host_shape_bytes: released.host_shape_bytes,
                device_bytes: released.device_bytes,
                pinned_bytes: released.pinned_bytes,
                duration_ns: released.duration_ns,
            });
        }
        Ok(())
    })
}

/// What a proof kind takes in memory (`cuzk_engine_memory_estimate`), in bytes: upper bounds
/// for a scheduler to declare before it proves, computed from the proving key's query sizes,
/// the circuit's shape and the engine's configuration (host memory budget, proving lanes, GPU
/// key budget).
///
/// Its only revision is 1 (CUZK_MEMORY_ESTIMATE_SIZE_V1 bytes, the smallest `struct_size`
/// accepted).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct cuzk_memory_estimate {
    /// sizeof(cuzk_memory_estimate) as the caller compiled it.
    pub struct_size: u32,
    /// Partition circuits one call proves.
    pub partitions: u64,
    /// Host memory the engine keeps for the kind between calls (what a preload makes
    /// resident): the proving key's points (none for a key resident on the GPUs: they are read
    /// from the parameter file as they are copied there) and the circuit's shape.
    pub host_resident_bytes: u64,
    /// Host memory one call adds while it runs: its synthesized partitions (one more than its
    /// proving lanes, as many as the engine's host memory budget lets wait, at least one),
    /// each proving lane's working memory, and a GPU-resident key's upload when the key is not
    /// on the GPUs yet (two parts of at most 2 GiB read from its file).
    pub host_call_bytes: u64,
    /// Device memory the engine keeps for the kind between calls, on each GPU: the key's copy
    /// when it fits the key budget, and the circuit's matrices. 0 on the CPU.
    pub device_resident_bytes: u64,
    /// Device memory one call adds on each GPU it proves on: NTT and witness buffers and the
    /// largest MSM's scratch. 0 on the CPU.
    pub device_call_bytes: u64,
}

/// The smallest `cuzk_memory_estimate.struct_size` accepted: the size of revision 1.
pub const CUZK_MEMORY_ESTIMATE_SIZE_V1: u32 = 48;
const _: () = assert!(CUZK_MEMORY_ESTIMATE_SIZE_V1 as usize == size_of::<cuzk_memory_estimate>());

// SAFETY: repr(C), plain data (integers), starting with its u32 struct_size.
unsafe impl SizedStruct for cuzk_memory_estimate {
    const NAME: &'static str = "cuzk_memory_estimate";
    const MIN_SIZE: u32 = CUZK_MEMORY_ESTIMATE_SIZE_V1;
}

/// The memory a PoRep C2 of `registered_proof` (filecoin-ffi numbering) takes with this
/// engine: what it keeps between calls and what a call adds, on the host and on each GPU.
/// Reads the counts of the proving key's file (not its points) unless the key is resident;
/// extracts the circuit's shape when the engine does not hold it yet (as a preload does, and
/// keeps it). The key's file must be in the parameter directory
/// (CUZK_STATUS_PARAMETERS_NOT_FOUND otherwise).
///
/// `engine`: not NULL, a handle from `cuzk_engine_new` not yet freed. `estimate_out`: not
/// NULL, a cuzk_memory_estimate with its `struct_size` set, written no further than that.
/// `err`: NULL, or where to store the call's error. All are read or written during the call
/// only.
#[no_mangle]
pub extern "C" fn cuzk_engine_memory_estimate(
    engine: *const cuzk_engine,
    registered_proof: u32,
    estimate_out: *mut cuzk_memory_estimate,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        estimate(engine, || Ok(seal_proof_from_abi(registered_proof)?.into()), estimate_out)
    })
}

/// `cuzk_engine_memory_estimate` for a registered PoSt proof (go-state-types numbering): one
/// WindowPoSt partition, or a WinningPoSt.
#[no_mangle]
pub extern "C" fn cuzk_engine_memory_estimate_post(
    engine: *const cuzk_engine,
    registered_post_proof: u32,
    estimate_out: *mut cuzk_memory_estimate,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        estimate(engine, || Ok(post_proof_from_abi(registered_post_proof)?.into()), estimate_out)
    })
}

/// `cuzk_engine_memory_estimate` for a registered update proof (go-state-types numbering): a
/// sector's SnapDeals update proof.
#[no_mangle]
pub extern "C" fn cuzk_engine_memory_estimate_update(
    engine: *const cuzk_engine,
    registered_update_proof: u32,
    estimate_out: *mut cuzk_memory_estimate,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        estimate(engine, || Ok(update_proof_from_abi(registered_update_proof)?.into()), estimate_out)
    })
}

fn estimate(engine: *const cuzk_engine, proof: impl FnOnce() -> Result<RegisteredProof>, estimate_out: *mut cuzk_memory_estimate) -> Result<()> {
    let out = SizedOut::required(estimate_out, "estimate_out")?;
    let estimate = engine_of(engine)?.memory_estimate(proof()?)?;
    out.write(&cuzk_memory_estimate {
        struct_size: 0, // not written: the caller's stays
        partitions: estimate.partitions,
        host_resident_bytes: estimate.host_resident_bytes,
        host_call_bytes: estimate.host_call_bytes,
        device_resident_bytes: estimate.device_resident_bytes,
        device_call_bytes: estimate.device_call_bytes,
    });
    Ok(())
}

/// What the engine holds and does, as a JSON object:
/// `{"version", "backend": "gpu"|"cpu", "worker_threads", "proofs_in_flight",
///   "host_memory_trims", "idle_releases", "host_keys": [{"label", "bytes", "points_bytes"}],
///   "circuit_shapes": [{"id", "constraints", "bytes", "shape_bytes"}],
///   "devices": [{"ordinal", "name", "memory_total", "memory_free", "memory_used_by_cuzk",
///     "ntt_buffer_bytes", "witness_buffer_bytes", "key_budget",
///     "resident_keys": [{"label", "bytes", "table_bytes", "uses", "loaded",
///       "class": "Sealing"|"WindowPost"|"WinningPost"}],
///     "resident_shapes": [{"constraints", "bytes"}],
///     "pinned_pool": {"buffer_bytes", "limit_bytes", "allocated_bytes", "in_use_bytes",
///     "acquisitions", "allocations"}, "proofs_in_flight", "proofs_done"}]}`.
/// Sizes are bytes: a key's or a shape's `bytes` are what host memory holds of it (a key
/// resident on the GPUs: none; a shape: its matrices go once the GPUs hold them and its shape
/// file can give them back), `points_bytes` and `shape_bytes` its whole size; a resident key's
/// `bytes` its device memory, of which `table_bytes` its H table (a key whose H query has at
/// most 2^22 points: a copy of the query for each window of H's MSM but the first, made on the
/// device where it fits). Fields may be added, never removed.
///
/// `engine`: not NULL, a handle from `cuzk_engine_new` not yet freed. `json_out`: not NULL;
/// receives the JSON (the caller's, free with `cuzk_bytes_free`), NULL on failure. `err`: NULL,
/// or where to store the call's error. All are read or written during the call only.
#[no_mangle]
pub extern "C" fn cuzk_engine_status(engine: *const cuzk_engine, json_out: *mut *mut cuzk_bytes, err: *mut *mut cuzk_error) -> Status {
    boundary(err, || {
        let json_out = required_mut(json_out, "json_out")?;
        *json_out = std::ptr::null_mut();
        let json = serde_json::to_vec(&engine_of(engine)?.status()).map_err(|e| Error::internal(format!("status as JSON: {e}")))?;
        *json_out = owned_bytes(json);
        Ok(())
    })
}
