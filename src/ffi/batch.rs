//! Proving several sectors in one call (PoRep C2; SnapDeals updates use the same results).

use super::boundary::{array32, boundary, error_object, owned_bytes, slice, slice_mut};
use super::prove::{c1_json, prove_options, TimingsOut};
use super::{cuzk_bytes, cuzk_engine, cuzk_error, cuzk_prove_options, engine::engine_of};
use crate::engine::{ProofOutput, ProveOptions, SectorRequest};
use crate::error::{Error, Result, Status};
use crate::timings::Timings;

/// One sector of `cuzk_seal_commit_phase2_batch`: the inputs of `cuzk_seal_commit_phase2`,
/// with the same rules for its pointers (read during the call only).
#[repr(C)]
pub struct cuzk_sector_request {
    pub c1_json: *const u8,
    pub c1_json_len: usize,
    pub sector_id: u64,
    /// 32 bytes.
    pub prover_id: *const u8,
}

/// The outcome of one sector of `cuzk_seal_commit_phase2_batch` or `cuzk_generate_update_proof_batch`.
#[repr(C)]
pub struct cuzk_sector_result {
    /// CUZK_STATUS_OK, or why this sector failed.
    pub status: Status,
    /// The proof on success (the caller's, free with `cuzk_bytes_free`), else NULL.
    pub proof: *mut cuzk_bytes,
    /// The error on failure (the caller's, free with `cuzk_error_free`), else NULL.
    pub error: *mut cuzk_error,
    /// Set by the caller before the call: NULL, or a `cuzk_timings` (its `struct_size` set)
    /// that receives this sector's timings on success.
    pub timings: *mut Timings,
}

/// PoRep commit phase 2 of `count` sectors in one call: their partitions flow through one
/// pipeline (a partition is synthesized while the previous one is proven, within the
/// engine's host memory budget), so the batch takes less time than the sectors one by one.
/// `results[i]` receives sector i's outcome; a sector that fails (bad input, failed
/// verification) fails alone. Returns CUZK_STATUS_OK when every sector was attempted (check
/// each result's status), or an error for the call as a whole (NULL arrays, unusable options),
/// with every result left without proof or error.
///
/// `engine`: not NULL, a handle from `cuzk_engine_new` not yet freed. `sectors`: `count`
/// readable requests (NULL only when `count` is 0). `results`: `count` writable results (NULL
/// only when `count` is 0); the library reads their `timings` and writes the other fields.
/// `options`: NULL (all defaults) or a cuzk_prove_options (see there). `err`: NULL, or where
/// to store the call's error. All are read or written during the call only.
#[no_mangle]
pub extern "C" fn cuzk_seal_commit_phase2_batch(
    engine: *const cuzk_engine,
    sectors: *const cuzk_sector_request,
    results: *mut cuzk_sector_result,
    count: usize,
    options: *const cuzk_prove_options,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let engine = engine_of(engine)?;
        let read = |s: &cuzk_sector_request| -> Result<SectorRequest> {
            Ok(SectorRequest {
                c1_json: c1_json(s.c1_json, s.c1_json_len, "c1_json")?,
                sector_id: s.sector_id,
                prover_id: array32(s.prover_id, "prover_id")?,
            })
        };
        let prove = |requests: &[&SectorRequest], options: &ProveOptions| {
            let requests: Vec<SectorRequest> = requests.iter().map(|r| **r).collect();
            engine.seal_commit_phase2_batch(&requests, options)
        };
        prove_batch((sectors, count), results, options, read, prove)
    })
}

/// A batch call's common part: `count` requests read from the caller's array (one that cannot
/// be read fails alone), the readable ones proven by `prove` in one call, and each outcome
/// (proof or error, timings) written to the result of the same index. Fails as a whole only
/// for NULL arrays or unusable options, with every result left without proof or error.
pub(super) fn prove_batch<C, R>(
    (requests, count): (*const C, usize),
    results: *mut cuzk_sector_result,
    options: *const cuzk_prove_options,
    read: impl Fn(&C) -> Result<R>,
    prove: impl FnOnce(&[&R], &ProveOptions) -> Result<Vec<Result<ProofOutput>>>,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    if requests.is_null() || results.is_null() {
        return Err(Error::new(
            Status::NullArgument,
            format!("the requests or results are NULL (count {count})"),
        ));
    }
    let requests = slice(requests, count, "requests")?;
    let results = slice_mut(results, count, "results")?;
    for result in results.iter_mut() {
        (result.status, result.proof, result.error) = (Status::Ok, std::ptr::null_mut(), std::ptr::null_mut());
    }
    let (options, partition_timings) = prove_options(options)?;
    let read: Vec<Result<(R, TimingsOut)>> = requests
        .iter()
        .zip(results.iter())
        .map(|(request, result)| Ok((read(request)?, TimingsOut::new(result.timings)?)))
        .collect();
    let valid: Vec<&R> = read.iter().filter_map(|r| r.as_ref().ok().map(|(request, _)| request)).collect();
    let mut proven = prove(&valid, &options)?.into_iter();
    // Each request's outcome, numbered as the caller's array (the unreadable left out).
    let outcomes: Vec<Result<ProofOutput>> = read
        .into_iter()
        .enumerate()
        .map(|(index, request)| {
            let (_, timings) = request?;
            let mut proven = proven.next().expect("one result per valid request")?;
            proven.timings.sector_index = index as u32;
            timings.write(&proven.timings);
            Ok(proven)
        })
        .collect();
    partition_timings.write(
        outcomes
            .iter()
            .enumerate()
            .filter_map(|(index, outcome)| Some((index, outcome.as_ref().ok()?))),
    );
    for (outcome, result) in outcomes.into_iter().zip(results.iter_mut()) {
        match outcome {
            Ok(proven) => result.proof = owned_bytes(proven.proof),
            Err(e) => (result.status, result.error) = (e.status, error_object(e)),
        }
    }
    Ok(())
}
