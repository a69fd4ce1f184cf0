//! 2KiB SnapDeals update proofs through the C ABI, from the partition vanilla proofs
//! filecoin-proofs-api makes for a CC sector updated with random data: accepted by
//! filecoin-proofs-api's own verifier, equal to bellperson's proofs for the same r, s, and
//! every bad input a clean error naming its place, with the engine still proving afterwards.

mod common;

use blstrs::Scalar;
use common::{check_job_split_path, engine_for, filecoin_verify_update, take_error, update_fixture as fixture, Engine};
use cuzk::engine::{Engine as RustEngine, EngineConfig, ProveOptions, UpdateRequest};
use cuzk::error::Status;
use cuzk::ffi::*;
use cuzk::internals::ProofRequest;
use cuzk::timings::Timings;
use cuzk_tools::fixtures::default_test_params_dir;
use cuzk_tools::update_oracle::bellperson_update;
use ff::Field;

fn c_engine() -> Engine {
    engine_for(&default_test_params_dir()).expect("engine")
}

/// The fixture's vanilla proofs as bytes.
fn vanilla() -> Vec<Vec<u8>> {
    fixture().vanilla_proofs.iter().map(|h| h.0.clone()).collect()
}

fn comms() -> [[u8; 32]; 3] {
    let f = fixture();
    [f.comm_r_old, f.comm_r_new, f.comm_d_new]
}

/// A failed call's status and message.
type Failed = (Status, String);

/// The C request of an update with `abi_proof`, `comms` and `vanilla` (borrowed by the slices).
fn c_request(abi_proof: u32, comms: &[[u8; 32]; 3], slices: &[cuzk_byte_slice]) -> cuzk_update_request {
    cuzk_update_request {
        registered_update_proof: abi_proof,
        comm_r_old: comms[0].as_ptr(),
        comm_r_new: comms[1].as_ptr(),
        comm_d_new: comms[2].as_ptr(),
        vanilla_proofs: if slices.is_empty() { std::ptr::null() } else { slices.as_ptr() },
        vanilla_proofs_len: slices.len(),
    }
}

fn slices(proofs: &[Vec<u8>]) -> Vec<cuzk_byte_slice> {
    proofs
        .iter()
        .map(|p| cuzk_byte_slice {
            data: p.as_ptr(),
            len: p.len(),
        })
        .collect()
}

/// `cuzk_generate_update_proof`.
fn generate(engine: &Engine, abi_proof: u32, comms: [[u8; 32]; 3], vanilla: &[Vec<u8>]) -> Result<(Vec<u8>, Timings), Failed> {
    let slices = slices(vanilla);
    let request = c_request(abi_proof, &comms, &slices);
    let mut proof = std::ptr::null_mut();
    let mut timings = Timings {
        struct_size: std::mem::size_of::<Timings>() as u32,
        ..Default::default()
    };
    let mut err = std::ptr::null_mut();
    let status = cuzk_generate_update_proof(engine.0, &request, std::ptr::null(), &mut proof, &mut timings, &mut err);
    if status != Status::Ok {
        assert!(proof.is_null(), "no proof on failure");
        let (s, m) = take_error(err);
        assert_eq!(s, status);
        return Err((s, m));
    }
    let bytes = unsafe { std::slice::from_raw_parts((*proof).data, (*proof).len) }.to_vec();
    cuzk_bytes_free(proof);
    Ok((bytes, timings))
}

/// `cuzk_verify_update_proof`.
fn c_verify(engine: &Engine, comms: [[u8; 32]; 3], proof: &[u8]) -> Result<bool, Failed> {
    let (mut valid, mut err) = (false, std::ptr::null_mut());
    let f = fixture();
    let status = cuzk_verify_update_proof(
        engine.0,
        f.abi_proof,
        comms[0].as_ptr(),
        comms[1].as_ptr(),
        comms[2].as_ptr(),
        proof.as_ptr(),
        proof.len(),
        &mut valid,
        &mut err,
    );
    if status != Status::Ok {
        return Err(take_error(err));
    }
    Ok(valid)
}

#[test]
fn update_proof_is_accepted_by_filecoin_proofs_and_by_cuzk() {
    let f = fixture();
    let engine = c_engine();
    let (proof, timings) = generate(&engine, f.abi_proof, comms(), &vanilla()).expect("update proof through the C ABI");
    assert_eq!(proof.len(), 192 * f.vanilla_proofs.len());
    assert!(timings.total_ns > 0 && timings.input_check_ns > 0);
    assert!(filecoin_verify_update(comms(), &proof), "filecoin-proofs-api rejects the update proof");
    assert_eq!(c_verify(&engine, comms(), &proof), Ok(true));
    // The same proof against other commitments: both verifiers say no.
    let [old, new, d] = comms();
    for other in [[new, old, d], [old, new, old]] {
        assert!(!filecoin_verify_update(other, &proof));
        assert_eq!(c_verify(&engine, other, &proof), Ok(false));
    }
    let err = c_verify(&engine, comms(), &proof[..191]).unwrap_err();
    assert_eq!(err.0, Status::InvalidArgument, "{}", err.1);
}

#[test]
fn a_batch_proves_each_update_and_fails_the_bad_one_alone() {
    let f = fixture();
    let engine = c_engine();
    let good = vanilla();
    let good_slices = slices(&good);
    let bad = vec![b"not a vanilla proof".to_vec()];
    let bad_slices = slices(&bad);
    let comms = comms();
    let requests = [
        c_request(f.abi_proof, &comms, &good_slices),
        c_request(f.abi_proof, &comms, &bad_slices),
        c_request(f.abi_proof, &comms, &good_slices),
    ];
    let mut results: Vec<cuzk_sector_result> = (0..3)
        .map(|_| cuzk_sector_result {
            status: Status::Ok,
            proof: std::ptr::null_mut(),
            error: std::ptr::null_mut(),
            timings: std::ptr::null_mut(),
        })
        .collect();
    let mut err = std::ptr::null_mut();
    let status = cuzk_generate_update_proof_batch(engine.0, requests.as_ptr(), results.as_mut_ptr(), 3, std::ptr::null(), &mut err);
    assert_eq!(status, Status::Ok);
    for (i, result) in results.iter().enumerate() {
        if i == 1 {
            assert!(result.proof.is_null());
            let (s, m) = take_error(result.error);
            assert_eq!((result.status, s), (Status::ParseError, Status::ParseError), "{m}");
            assert!(m.contains("vanilla_proofs[0]"), "{m}");
            continue;
        }
        assert_eq!(result.status, Status::Ok);
        let proof = unsafe { std::slice::from_raw_parts((*result.proof).data, (*result.proof).len) }.to_vec();
        cuzk_bytes_free(result.proof);
        assert!(filecoin_verify_update(comms, &proof), "sector {i} of the batch");
    }
}

/// The fixture's update as the engine takes it, over `proofs` (its vanilla proofs, borrowed).
fn rust_request<'a>(proofs: &'a [&'a [u8]]) -> UpdateRequest<'a> {
    let f = fixture();
    let [comm_r_old, comm_r_new, comm_d_new] = comms();
    UpdateRequest {
        registered_proof: f.registered_proof,
        comm_r_old,
        comm_r_new,
        comm_d_new,
        vanilla_proofs: proofs,
    }
}

/// The update circuit on the split path (its shape, the witness of filecoin-proofs' gadgets)
/// gives classic synthesis' result value for value.
#[test]
fn split_path_equals_classic_synthesis_on_real_vanilla_proofs() {
    let bytes = vanilla();
    let proofs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let request = rust_request(&proofs);
    let job = request.check(&mut Timings::default()).expect("valid vanilla proofs");
    for k in 0..job.partitions() {
        check_job_split_path(job.as_ref(), k, &format!("update partition {k}"));
    }
}

#[test]
fn fixed_randomness_update_proofs_equal_bellperson_bit_for_bit() {
    let f = fixture();
    let engine = RustEngine::acquire(EngineConfig {
        param_cache_dir: Some(default_test_params_dir()),
        ..Default::default()
    })
    .unwrap();
    let mut rng = rand::thread_rng();
    let rs: Vec<(Scalar, Scalar)> = (0..f.vanilla_proofs.len())
        .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
        .collect();
    let bytes = vanilla();
    let proofs: Vec<&[u8]> = bytes.iter().map(Vec::as_slice).collect();
    let request = rust_request(&proofs);
    let options = ProveOptions {
        randomness: Some(rs.clone()),
        ..Default::default()
    };
    let ours = engine.generate_update(&request, &options).expect("cuzk update proof").proof;
    let theirs = bellperson_update(
        f.registered_proof,
        (request.comm_r_old, request.comm_r_new, request.comm_d_new),
        &bytes,
        &default_test_params_dir(),
        &rs,
    )
    .unwrap();
    assert_eq!(ours, theirs, "cuzk and bellperson update proofs differ for the same r, s");
}

/// The fixture's 2KiB vanilla proof, repeated to each other sector size's partition count,
/// under that size's registered update proof: a clean error naming the partition, never a PANIC.
#[test]
fn vanilla_proofs_of_another_sector_size_are_refused() {
    let engine = c_engine();
    let good = vanilla();
    // go-state-types numbering: 8MiB, 512MiB, 32GiB, 64GiB.
    for (abi, partitions) in [(1, 4), (2, 16), (3, 16), (4, 16)] {
        let repeated: Vec<Vec<u8>> = std::iter::repeat_n(good[0].clone(), partitions).collect();
        let (status, message) = generate(&engine, abi, comms(), &repeated).expect_err("another size");
        assert!(
            matches!(status, Status::InvalidArgument | Status::ParseError),
            "{abi}: {status:?} {message}"
        );
        assert!(message.contains("vanilla_proofs[0]"), "{abi}: {message}");
    }
}

/// A vanilla proof past CUZK_MAX_VANILLA_PROOF_BYTES is refused before it is decoded, naming
/// the partition and the limit.
#[test]
fn oversized_vanilla_proofs_are_refused() {
    let engine = c_engine();
    let huge = vec![vec![0u8; CUZK_MAX_VANILLA_PROOF_BYTES + 1]];
    // A 2KiB update (one partition), go-state-types numbering.
    let (status, message) = generate(&engine, 0, [[1; 32], [2; 32], [3; 32]], &huge).unwrap_err();
    assert_eq!(status, Status::InvalidArgument, "{message}");
    assert!(message.contains("vanilla_proofs[0]") && message.contains("byte limit"), "{message}");
}

/// `cuzk_verify_update_proof` with arguments no proof can be checked against: each an
/// INVALID_ARGUMENT naming what is wrong, never a PANIC, never an answer.
#[test]
fn verify_refuses_unusable_arguments() {
    let f = fixture();
    let engine = c_engine();
    let length = 192 * f.vanilla_proofs.len();
    let [old, new, d] = comms();
    let mut high = d;
    high[31] = 0xff;
    for (what, comms, proof, needle) in [
        (
            "comm_d_new not canonical",
            [old, new, high],
            vec![0x11; length],
            "comm_d_new is not a canonical",
        ),
        (
            "comm_r_new not canonical",
            [old, high, d],
            vec![0x11; length],
            "comm_r_new is not a canonical",
        ),
        (
            "a partition too many",
            [old, new, d],
            vec![0x11; length + 192],
            "partition(s) of 192 bytes",
        ),
        ("bytes that are no curve points", [old, new, d], vec![0xff; length], "proof bytes"),
    ] {
        let (status, message) = c_verify(&engine, comms, &proof).expect_err(what);
        assert_eq!(status, Status::InvalidArgument, "{what}: {message}");
        assert!(message.contains(needle), "{what}: {message:?} does not say {needle:?}");
    }
}

/// `vanilla` with byte `at` XORed with `mask`.
fn flipped(vanilla: &[u8], at: usize, mask: u8) -> Vec<u8> {
    let mut out = vanilla.to_vec();
    out[at] ^= mask;
    out
}

#[test]
fn bad_inputs_are_clean_errors_naming_their_place() {
    let f = fixture();
    let engine = c_engine();
    let good = vanilla();
    let abi = f.abi_proof;
    let check = |result: Result<(Vec<u8>, Timings), Failed>, status: Status, needle: &str| {
        let (s, m) = result.expect_err("an error");
        assert_eq!(s, status, "{m}");
        assert!(m.to_lowercase().contains(&needle.to_lowercase()), "{m:?} does not mention {needle:?}");
    };
    check(generate(&engine, abi, comms(), &[]), Status::InvalidArgument, "0 vanilla proofs");
    check(
        generate(&engine, 5, comms(), &good),
        Status::InvalidArgument,
        "unknown registered update proof",
    );
    // 8MiB: four partitions of another tree depth.
    check(generate(&engine, abi + 1, comms(), &good), Status::InvalidArgument, "4 partitions");
    let four: Vec<Vec<u8>> = std::iter::repeat_n(good[0].clone(), 4).collect();
    check(generate(&engine, abi + 1, comms(), &four), Status::InvalidArgument, "apex leaves");
    check(
        generate(&engine, abi, comms(), &[b"garbage".to_vec()]),
        Status::ParseError,
        "vanilla_proofs[0]",
    );
    let truncated = vec![good[0][..good[0].len() - 5].to_vec()];
    check(generate(&engine, abi, comms(), &truncated), Status::ParseError, "vanilla_proofs[0]");
    let longer = vec![[good[0].clone(), vec![0]].concat()];
    check(generate(&engine, abi, comms(), &longer), Status::ParseError, "vanilla_proofs[0]");
    let seventeen: Vec<Vec<u8>> = std::iter::repeat_n(good[0].clone(), 17).collect();
    check(generate(&engine, abi, comms(), &seventeen), Status::InvalidArgument, "more than the 16");
    let [old, new, d] = comms();
    let mut high = old;
    high[31] = 0xff;
    check(
        generate(&engine, abi, [high, new, d], &good),
        Status::InvalidArgument,
        "comm_r_old is not a canonical",
    );
    let mut other_d = d;
    other_d[0] ^= 1;
    check(
        generate(&engine, abi, [old, new, other_d], &good),
        Status::InvalidArgument,
        "challenge_proofs[0]",
    );
    check(
        generate(&engine, abi, [new, new, d], &good),
        Status::InvalidArgument,
        "comm_r_old is not H(comm_c",
    );
    // PartitionProof's bincode: comm_c (32 bytes), the apex leaves' count (8) and leaves (32 each).
    check(
        generate(&engine, abi, comms(), &[flipped(&good[0], 0, 1)]),
        Status::InvalidArgument,
        "comm_r_old is not H(comm_c",
    );
    check(
        generate(&engine, abi, comms(), &[flipped(&good[0], 40, 1)]),
        Status::InvalidArgument,
        "apex leaves",
    );
    check(
        generate(&engine, abi, comms(), &[flipped(&good[0], 71, 0xc0)]),
        Status::InvalidArgument,
        "apex_leafs[0] is not a canonical",
    );
    check(
        generate(&engine, abi, comms(), &[flipped(&good[0], 32, 1)]),
        Status::ParseError,
        "vanilla_proofs[0]",
    );
    // A NULL request, NULL commitments.
    let mut proof = std::ptr::null_mut();
    let mut err = std::ptr::null_mut();
    let status = cuzk_generate_update_proof(engine.0, std::ptr::null(), std::ptr::null(), &mut proof, std::ptr::null_mut(), &mut err);
    assert_eq!(take_error(err).0, Status::NullArgument);
    assert_eq!(status, Status::NullArgument);
    let slices = slices(&good);
    let mut request = c_request(abi, &comms(), &slices);
    request.comm_d_new = std::ptr::null();
    let mut err = std::ptr::null_mut();
    let status = cuzk_generate_update_proof(engine.0, &request, std::ptr::null(), &mut proof, std::ptr::null_mut(), &mut err);
    let (s, m) = take_error(err);
    assert_eq!((status, s), (Status::NullArgument, Status::NullArgument), "{m}");
    assert!(m.contains("comm_d_new"), "{m}");
    // The engine proves after all of it.
    let (proof, _) = generate(&engine, abi, comms(), &good).expect("a valid update after bad ones");
    assert!(filecoin_verify_update(comms(), &proof));
}
