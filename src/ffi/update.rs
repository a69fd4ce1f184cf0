//! SnapDeals (empty-sector update) proofs: proving from partition vanilla proofs, and verifying.

use super::batch::{cuzk_sector_result, prove_batch};
use super::boundary::{array32, boundary, owned_bytes, required_mut, slice};
use super::engine::{engine_of, verifier_of};
use super::post::{cuzk_byte_slice, vanilla_proofs};
use super::prove::{prove_options, TimingsOut};
use super::registered_proof::update_proof_from_abi;
use super::{cuzk_bytes, cuzk_engine, cuzk_error, cuzk_prove_options};
use crate::engine::{UpdateRequest, UpdateStatement};
use crate::error::{Result, Status};
use crate::timings::Timings;

/// Most partitions an update proof has (32GiB and 64GiB sectors: 16), so the most vanilla
/// proofs one update takes.
pub const CUZK_MAX_UPDATE_PARTITIONS: usize = 16;

/// One sector's update, with the inputs of filecoin-ffi's `GenerateUpdateProofWithVanilla`:
/// the registered update proof (go-state-types numbering), the commitments as their 32 bytes
/// (comm_r_old: the sealed CC sector's; comm_r_new, comm_d_new: the updated replica's and the
/// new data's), and the partition vanilla proofs as `GenerateUpdateVanillaProofs` returns them
/// (one per partition, in order). The pointers follow `cuzk_generate_update_proof`'s rules.
#[repr(C)]
pub struct cuzk_update_request {
    pub registered_update_proof: u32,
    /// 32 bytes each.
    pub comm_r_old: *const u8,
    pub comm_r_new: *const u8,
    pub comm_d_new: *const u8,
    pub vanilla_proofs: *const cuzk_byte_slice,
    pub vanilla_proofs_len: usize,
}

/// The request's arguments read from the caller's memory (the vanilla proofs borrowed).
struct UpdateArgs<'a> {
    registered_proof: filecoin_proofs_api::RegisteredUpdateProof,
    comms: [[u8; 32]; 3],
    vanilla_proofs: Vec<&'a [u8]>,
}

impl UpdateArgs<'_> {
    fn read(request: &cuzk_update_request) -> Result<Self> {
        Ok(UpdateArgs {
            registered_proof: update_proof_from_abi(request.registered_update_proof)?,
            comms: [
                array32(request.comm_r_old, "comm_r_old")?,
                array32(request.comm_r_new, "comm_r_new")?,
                array32(request.comm_d_new, "comm_d_new")?,
            ],
            vanilla_proofs: vanilla_proofs(request.vanilla_proofs, request.vanilla_proofs_len, CUZK_MAX_UPDATE_PARTITIONS)?,
        })
    }

    fn request(&self) -> UpdateRequest<'_> {
        let [comm_r_old, comm_r_new, comm_d_new] = self.comms;
        UpdateRequest {
            registered_proof: self.registered_proof,
            comm_r_old,
            comm_r_new,
            comm_d_new,
            vanilla_proofs: &self.vanilla_proofs,
        }
    }
}

/// A SnapDeals update proof of one sector (see `cuzk_update_request` for the inputs). On success
/// `*proof_out` holds the proof: what filecoin-proofs-api's
/// `generate_empty_sector_update_proof_with_vanilla` returns (192 bytes per partition, in
/// order). Vanilla proofs that do not prove the commitments are CUZK_STATUS_INVALID_ARGUMENT
/// naming the partition, challenge and path.
///
/// `engine`: not NULL, a handle from `cuzk_engine_new` not yet freed. `request`: not NULL; its
/// commitments not NULL, 32 readable bytes each (canonical field elements); its vanilla proofs
/// `vanilla_proofs_len` readable slices (NULL only when the length is 0, which is an error).
/// `options`: NULL (all defaults) or a cuzk_prove_options (see there). `proof_out`: not NULL;
/// receives the proof (the caller's, free with `cuzk_bytes_free`), NULL on failure. `timings`:
/// NULL, or a cuzk_timings with its `struct_size` set. `err`: NULL, or where to store the
/// call's error. All are read or written during the call only.
#[no_mangle]
pub extern "C" fn cuzk_generate_update_proof(
    engine: *const cuzk_engine,
    request: *const cuzk_update_request,
    options: *const cuzk_prove_options,
    proof_out: *mut *mut cuzk_bytes,
    timings: *mut Timings,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let proof_out = required_mut(proof_out, "proof_out")?;
        *proof_out = std::ptr::null_mut();
        let engine = engine_of(engine)?;
        let request = slice(request, 1, "request")?;
        let args = UpdateArgs::read(&request[0])?;
        let timings = TimingsOut::new(timings)?;
        let (options, partition_timings) = prove_options(options)?;
        let proven = engine.generate_update(&args.request(), &options)?;
        timings.write(&proven.timings);
        partition_timings.write(std::iter::once((0, &proven)));
        *proof_out = owned_bytes(proven.proof);
        Ok(())
    })
}

/// Update proofs of `count` sectors in one call: their partitions flow through one pipeline, as
/// `cuzk_seal_commit_phase2_batch`'s, whose rules the results follow (`results[i]` receives
/// sector i's outcome; a sector that fails fails alone).
///
/// `engine`: not NULL, a handle from `cuzk_engine_new` not yet freed. `requests`: `count`
/// readable requests (NULL only when `count` is 0). `results`: `count` writable results (NULL
/// only when `count` is 0). `options`: NULL or a cuzk_prove_options. `err`: NULL, or where to
/// store the call's error. All are read or written during the call only.
#[no_mangle]
pub extern "C" fn cuzk_generate_update_proof_batch(
    engine: *const cuzk_engine,
    requests: *const cuzk_update_request,
    results: *mut cuzk_sector_result,
    count: usize,
    options: *const cuzk_prove_options,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let engine = engine_of(engine)?;
        let prove = |args: &[&UpdateArgs], options: &_| {
            let requests: Vec<UpdateRequest> = args.iter().map(|a| a.request()).collect();
            engine.generate_update_batch(&requests, options)
        };
        prove_batch((requests, count), results, options, UpdateArgs::read, prove)
    })
}

/// filecoin-proofs-api's `verify_empty_sector_update_proof`: whether `proof` (every partition's
/// proof, in order) proves the update from comm_r_old to comm_r_new with the data of
/// comm_d_new. `*valid_out` is false for a proof that does not verify; an error is returned
/// only for unusable arguments (CUZK_STATUS_INVALID_ARGUMENT: a proof of the wrong length,
/// non-canonical commitments) or a missing verifying key.
///
/// `engine`: NULL (verify without an engine: no GPU is opened, the verifying key comes from
/// FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters), or a handle from
/// `cuzk_engine_new` not yet freed (its parameter directory). `comm_r_old`, `comm_r_new`,
/// `comm_d_new`: not NULL, 32 readable bytes each. `proof`: `proof_len` readable
/// bytes. `valid_out`: not NULL, writable (false on failure). `err`: NULL, or where to store
/// the call's error. All are read or written during the call only.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cuzk_verify_update_proof(
    engine: *const cuzk_engine,
    registered_update_proof: u32,
    comm_r_old: *const u8,
    comm_r_new: *const u8,
    comm_d_new: *const u8,
    proof: *const u8,
    proof_len: usize,
    valid_out: *mut bool,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let valid_out = required_mut(valid_out, "valid_out")?;
        *valid_out = false;
        let verifier = verifier_of(engine)?;
        let statement = UpdateStatement {
            registered_proof: update_proof_from_abi(registered_update_proof)?,
            comm_r_old: array32(comm_r_old, "comm_r_old")?,
            comm_r_new: array32(comm_r_new, "comm_r_new")?,
            comm_d_new: array32(comm_d_new, "comm_d_new")?,
        };
        *valid_out = verifier.verify_update(&statement, slice(proof, proof_len, "proof")?)?;
        Ok(())
    })
}
