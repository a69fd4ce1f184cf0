//! WindowPoSt partitions and WinningPoSt: proving from vanilla proofs, and verifying.

use super::boundary::{array32, boundary, owned_bytes, required_mut, slice};
use super::engine::{engine_of, verifier_of};
use super::prove::{prove_options, TimingsOut};
use super::registered_proof::post_proof_from_abi;
use super::{cuzk_bytes, cuzk_engine, cuzk_error, cuzk_prove_options};
use crate::engine::{PostKind, PostRequest, PostStatement};
use crate::error::{Error, Result, Status};
use crate::timings::Timings;

/// Largest number of vanilla proofs or sectors one call accepts: a 32GiB WindowPoSt partition
/// has 2 349 sectors; a deadline (what `cuzk_verify_window_post` checks) at most 3 000
/// partitions of them.
pub const CUZK_MAX_POST_SECTORS: usize = 3000 * 2349;

/// Largest vanilla proof accepted, in bytes (a 32GiB sector's WindowPoSt vanilla proof is
/// ≈ 25 KB, its WinningPoSt one ≈ 170 KB).
pub const CUZK_MAX_VANILLA_PROOF_BYTES: usize = 1 << 22;
const _: () = assert!(CUZK_MAX_VANILLA_PROOF_BYTES == crate::engine::MAX_VANILLA_PROOF_BYTES);

/// Bytes the caller lends for the duration of a call (a vanilla proof).
#[repr(C)]
pub struct cuzk_byte_slice {
    /// `len` readable bytes; NULL only when `len` is 0.
    pub data: *const u8,
    pub len: usize,
}

/// A challenged sector of a PoSt: its number and its comm_r (32 bytes).
#[repr(C)]
pub struct cuzk_post_sector {
    pub sector_id: u64,
    pub comm_r: [u8; 32],
}

/// The vanilla proofs of a call, at most `max` of them (each checked against
/// CUZK_MAX_VANILLA_PROOF_BYTES when decoded).
pub(super) fn vanilla_proofs<'a>(ptr: *const cuzk_byte_slice, len: usize, max: usize) -> Result<Vec<&'a [u8]>> {
    if len > max {
        return Err(Error::invalid(format!("{len} vanilla proofs, more than the {max} this call takes")));
    }
    slice(ptr, len, "vanilla_proofs")?
        .iter()
        .enumerate()
        .map(|(i, proof)| slice(proof.data, proof.len, &format!("vanilla_proofs[{i}].data")))
        .collect()
}

/// The request of a prove call, proven, its proof and timings handed to the caller.
#[allow(clippy::too_many_arguments)]
fn generate(
    engine: *const cuzk_engine,
    kind: PostKind,
    registered_proof: u32,
    prover_id: *const u8,
    randomness: *const u8,
    vanilla: (*const cuzk_byte_slice, usize),
    partition_index: usize,
    options: *const cuzk_prove_options,
    proof_out: *mut *mut cuzk_bytes,
    timings: *mut Timings,
) -> Result<()> {
    let proof_out = required_mut(proof_out, "proof_out")?;
    *proof_out = std::ptr::null_mut();
    let engine = engine_of(engine)?;
    let vanilla_proofs = vanilla_proofs(vanilla.0, vanilla.1, CUZK_MAX_POST_SECTORS)?;
    let request = PostRequest {
        kind,
        registered_proof: post_proof_from_abi(registered_proof)?,
        prover_id: array32(prover_id, "prover_id")?,
        randomness: array32(randomness, "randomness")?,
        vanilla_proofs: &vanilla_proofs,
        partition_index,
    };
    let timings = TimingsOut::new(timings)?;
    let (options, partition_timings) = prove_options(options)?;
    let proven = engine.generate_post(&request, &options)?;
    timings.write(&proven.timings);
    partition_timings.write(std::iter::once((0, &proven)));
    *proof_out = owned_bytes(proven.proof);
    Ok(())
}

/// One WindowPoSt partition, with the inputs of filecoin-ffi's
/// `GenerateSinglePartitionWindowPoStWithVanilla`: the registered PoSt proof (go-state-types
/// numbering, a WindowPoSt one), the 32-byte prover id and randomness, the partition's vanilla
/// proofs (one per sector, as `GenerateSingleVanillaProof` returns them, in the partition's
/// sector order: increasing sector numbers, as verifiers take them, else
/// CUZK_STATUS_INVALID_ARGUMENT; fewer than a partition holds are padded as filecoin-proofs
/// pads them) and the partition's index in the deadline. On success `*proof_out` holds the
/// partition's proof (192 bytes: filecoin-proofs-api's `PartitionSnarkProof`, to merge with the
/// other partitions'); on CUZK_STATUS_FAULTY_SECTORS `cuzk_error_faulty_sectors` lists the
/// sectors whose vanilla proofs do not verify.
///
/// `engine`: not NULL, a handle from `cuzk_engine_new` not yet freed. `prover_id`,
/// `randomness`: not NULL, 32 readable bytes each (canonical field elements). `vanilla_proofs`:
/// `vanilla_proofs_len` readable slices (NULL only when the length is 0, which is an error).
/// `options`: NULL (all defaults) or a cuzk_prove_options (see there). `proof_out`: not NULL;
/// receives the proof (the caller's, free with `cuzk_bytes_free`), NULL on failure. `timings`:
/// NULL, or a cuzk_timings with its `struct_size` set. `err`: NULL, or where to store the
/// call's error. All are read or written during the call only.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cuzk_generate_window_post_partition(
    engine: *const cuzk_engine,
    registered_post_proof: u32,
    prover_id: *const u8,
    randomness: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    vanilla_proofs_len: usize,
    partition_index: usize,
    options: *const cuzk_prove_options,
    proof_out: *mut *mut cuzk_bytes,
    timings: *mut Timings,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let vanilla = (vanilla_proofs, vanilla_proofs_len);
        let kind = PostKind::Window;
        generate(
            engine,
            kind,
            registered_post_proof,
            prover_id,
            randomness,
            vanilla,
            partition_index,
            options,
            proof_out,
            timings,
        )
    })
}

/// A WinningPoSt, with the inputs of filecoin-ffi's `GenerateWinningPoStWithVanilla`: the
/// registered PoSt proof (a WinningPoSt one), the 32-byte prover id and randomness, and the
/// challenged sector's vanilla proof (`vanilla_proofs_len` is 1). On success `*proof_out`
/// holds the proof (192 bytes); the rest as `cuzk_generate_window_post_partition`. Its class
/// is the top one: it takes each GPU before any other waiting work.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cuzk_generate_winning_post(
    engine: *const cuzk_engine,
    registered_post_proof: u32,
    prover_id: *const u8,
    randomness: *const u8,
    vanilla_proofs: *const cuzk_byte_slice,
    vanilla_proofs_len: usize,
    options: *const cuzk_prove_options,
    proof_out: *mut *mut cuzk_bytes,
    timings: *mut Timings,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let vanilla = (vanilla_proofs, vanilla_proofs_len);
        let kind = PostKind::Winning;
        generate(
            engine,
            kind,
            registered_post_proof,
            prover_id,
            randomness,
            vanilla,
            0,
            options,
            proof_out,
            timings,
        )
    })
}

#[allow(clippy::too_many_arguments)]
fn verify(
    engine: *const cuzk_engine,
    kind: PostKind,
    registered_proof: u32,
    prover_id: *const u8,
    randomness: *const u8,
    sectors: (*const cuzk_post_sector, usize),
    proof: (*const u8, usize),
    valid_out: *mut bool,
) -> Result<()> {
    let valid_out = required_mut(valid_out, "valid_out")?;
    *valid_out = false;
    let verifier = verifier_of(engine)?;
    if sectors.1 > CUZK_MAX_POST_SECTORS {
        return Err(Error::invalid(format!("{} sectors, more than a deadline holds", sectors.1)));
    }
    let statement = PostStatement {
        kind,
        registered_proof: post_proof_from_abi(registered_proof)?,
        randomness: array32(randomness, "randomness")?,
        prover_id: array32(prover_id, "prover_id")?,
        sectors: slice(sectors.0, sectors.1, "sectors")?.iter().map(|s| (s.sector_id, s.comm_r)).collect(),
    };
    *valid_out = verifier.verify_post(&statement, slice(proof.0, proof.1, "proof")?)?;
    Ok(())
}

/// filecoin-proofs-api's `verify_window_post`: whether `proof` (every partition's proof of a
/// deadline, merged in partition order) proves the `sectors` (all the proven sectors, in any
/// order: as filecoin-proofs-api does, the verifier sorts them by sector number, a number given
/// twice counting once, and partition k is the k-th chunk of the sorted sectors) for this
/// prover id and randomness. `*valid_out` is false for a proof that
/// does not verify; an error is returned only for unusable arguments (CUZK_STATUS_INVALID_ARGUMENT)
/// or a missing verifying key.
///
/// `engine`: NULL (verify without an engine: no GPU is opened, the verifying key comes from
/// FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters), or a handle from
/// `cuzk_engine_new` not yet freed (its parameter directory). `prover_id`, `randomness`: not
/// NULL, 32 readable bytes each. `sectors`: `sectors_len` readable entries.
/// `proof`: `proof_len` readable bytes. `valid_out`: not NULL, writable (false on failure).
/// `err`: NULL, or where to store the call's error. All are read or written during the call
/// only.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cuzk_verify_window_post(
    engine: *const cuzk_engine,
    registered_post_proof: u32,
    prover_id: *const u8,
    randomness: *const u8,
    sectors: *const cuzk_post_sector,
    sectors_len: usize,
    proof: *const u8,
    proof_len: usize,
    valid_out: *mut bool,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let kind = PostKind::Window;
        verify(
            engine,
            kind,
            registered_post_proof,
            prover_id,
            randomness,
            (sectors, sectors_len),
            (proof, proof_len),
            valid_out,
        )
    })
}

/// filecoin-proofs-api's `verify_winning_post`: as `cuzk_verify_window_post`, for the one
/// challenged sector (`sectors_len` is 1) and a 192-byte proof.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cuzk_verify_winning_post(
    engine: *const cuzk_engine,
    registered_post_proof: u32,
    prover_id: *const u8,
    randomness: *const u8,
    sectors: *const cuzk_post_sector,
    sectors_len: usize,
    proof: *const u8,
    proof_len: usize,
    valid_out: *mut bool,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let kind = PostKind::Winning;
        verify(
            engine,
            kind,
            registered_post_proof,
            prover_id,
            randomness,
            (sectors, sectors_len),
            (proof, proof_len),
            valid_out,
        )
    })
}
