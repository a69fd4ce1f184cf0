//! Verifying a PoRep proof, and reading what a C1 output says about its sector.

use super::boundary::{array32, boundary, required_mut, slice, SizedOut, SizedStruct};
use super::registered_proof::{seal_proof_from_abi, seal_proof_to_abi};
use super::{cuzk_engine, cuzk_error, engine::verifier_of};
use crate::engine::SealStatement;
use crate::error::Status;
use crate::kinds::porep;

/// What a C1 output says about its sector (enough to verify the C2 proof made from it).
///
/// Its only revision is 1 (CUZK_C1_INFO_SIZE_V1 bytes, the smallest `struct_size` accepted).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cuzk_c1_info {
    /// sizeof(cuzk_c1_info) as the caller compiled it.
    pub struct_size: u32,
    /// filecoin-ffi / go-state-types `RegisteredSealProof` number.
    pub registered_proof: u32,
    /// Groth16 proofs the C2 will make (192 bytes each).
    pub partitions: u32,
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
}

/// The smallest `cuzk_c1_info.struct_size` accepted: the size of revision 1.
pub const CUZK_C1_INFO_SIZE_V1: u32 = 140;
const _: () = assert!(CUZK_C1_INFO_SIZE_V1 as usize == size_of::<cuzk_c1_info>());

// SAFETY: repr(C), plain data (integers, pointers, bools), starting with its u32 struct_size.
unsafe impl SizedStruct for cuzk_c1_info {
    const NAME: &'static str = "cuzk_c1_info";
    const MIN_SIZE: u32 = CUZK_C1_INFO_SIZE_V1;
}

/// filecoin-proofs-api's `verify_seal`: `*valid_out` is true when `proof` proves the sector.
///
/// `engine`: NULL (verify without an engine: no GPU is opened, the verifying key comes from
/// FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters), or a handle from
/// `cuzk_engine_new` not yet freed (its parameter directory). `comm_r`, `comm_d`, `prover_id`,
/// `ticket`, `seed`: not NULL, 32 readable bytes each. `proof`: `proof_len` readable bytes
/// (NULL only when the length is 0). `valid_out`: not NULL, writable (false on failure).
/// `err`: NULL, or where to store the call's error. All are read or written during the call
/// only.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn cuzk_verify_seal(
    engine: *const cuzk_engine,
    registered_proof: u32,
    comm_r: *const u8,
    comm_d: *const u8,
    prover_id: *const u8,
    sector_id: u64,
    ticket: *const u8,
    seed: *const u8,
    proof: *const u8,
    proof_len: usize,
    valid_out: *mut bool,
    err: *mut *mut cuzk_error,
) -> Status {
    boundary(err, || {
        let valid_out = required_mut(valid_out, "valid_out")?;
        *valid_out = false;
        let verifier = verifier_of(engine)?;
        let statement = SealStatement {
            registered_proof: seal_proof_from_abi(registered_proof)?,
            comm_r: array32(comm_r, "comm_r")?,
            comm_d: array32(comm_d, "comm_d")?,
            prover_id: array32(prover_id, "prover_id")?,
            sector_id,
            ticket: array32(ticket, "ticket")?,
            seed: array32(seed, "seed")?,
        };
        *valid_out = verifier.verify_seal(&statement, slice(proof, proof_len, "proof")?)?;
        Ok(())
    })
}

/// Reads the sector facts out of a C1 JSON (what `cuzk_verify_seal` needs besides the ids).
/// Needs no engine.
///
/// `c1_json`: `c1_json_len` readable bytes (NULL only when the length is 0), at most
/// CUZK_MAX_C1_JSON_BYTES. `info`: not NULL, a cuzk_c1_info with its `struct_size` set,
/// written no further than that. `err`: NULL, or where to store the call's error. All are read
/// or written during the call only.
#[no_mangle]
pub extern "C" fn cuzk_c1_info_parse(c1_json: *const u8, c1_json_len: usize, info: *mut cuzk_c1_info, err: *mut *mut cuzk_error) -> Status {
    boundary(err, || {
        let info = SizedOut::required(info, "info")?;
        let c1 = porep::parse_c1(super::prove::c1_json(c1_json, c1_json_len, "c1_json")?)?;
        let config = porep::porep_config(c1.registered_proof)?;
        info.write(&cuzk_c1_info {
            struct_size: 0, // not written: the caller's stays
            registered_proof: seal_proof_to_abi(c1.registered_proof),
            partitions: u32::from(config.partitions.0),
            comm_r: c1.comm_r,
            comm_d: c1.comm_d,
            ticket: c1.ticket,
            seed: c1.seed,
        });
        Ok(())
    })
}
