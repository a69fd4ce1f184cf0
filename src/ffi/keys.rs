//! Proving keys kept resident by the engine, and the engine's status.

use super::boundary::{boundary, optional_mut, owned_bytes, required_mut};
use super::registered_proof::{post_proof_from_abi, seal_proof_from_abi, update_proof_from_abi};
use super::{cuzk_bytes, cuzk_engine, cuzk_error, engine::engine_of};
use crate::engine::RegisteredProof;
use crate::error::{Error, Result, Status};

/// Reads the proving key of `registered_proof` (filecoin-ffi numbering) from the parameter
/// directory and makes it resident on every GPU the engine uses, so that the next proof of
/// that kind loads nothing. `srs_load_ns` / `srs_upload_ns`, when not NULL, get the time to
/// read it from disk and to copy it to the devices (0 when it was already there).
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

/// What the engine holds and does, as a JSON object:
/// `{"version", "backend": "gpu"|"cpu", "worker_threads", "proofs_in_flight",
///   "host_keys": [{"label", "bytes"}],
///   "devices": [{"ordinal", "name", "memory_total", "memory_free", "memory_used_by_cuzk",
///     "ntt_buffer_bytes", "witness_buffer_bytes", "key_budget",
///     "resident_keys": [{"label", "bytes", "uses", "loaded",
///       "class": "Sealing"|"WindowPost"|"WinningPost"}],
///     "resident_shapes": [{"constraints", "bytes"}],
///     "pinned_pool": {"buffer_bytes", "limit_bytes", "allocated_bytes", "in_use_bytes",
///     "acquisitions", "allocations"}, "proofs_in_flight", "proofs_done"}]}`.
/// Sizes are bytes. Fields may be added, never removed.
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
