//! 2KiB WindowPoSt partitions and WinningPoSt through the C ABI, from vanilla proofs made by
//! filecoin-proofs-api for freshly sealed sectors: accepted by filecoin-proofs-api's own
//! verifiers, equal to bellperson's proofs for the same r, s, and every bad input a clean error
//! (faulty sectors named) with the engine still proving afterwards.

mod common;

use blstrs::Scalar;
use common::{
    all_window_sectors, check_job_split_path, engine_for, filecoin_verify_window, filecoin_verify_winning, post_fixture as fixture, take_error,
    Engine,
};
use cuzk::engine::{Engine as RustEngine, EngineConfig, PostKind, PostRequest, ProveOptions};
use cuzk::error::Status;
use cuzk::ffi::*;
use cuzk::internals::ProofRequest;
use cuzk::timings::Timings;
use cuzk_tools::fixtures::{default_test_params_dir, HexBytes};
use cuzk_tools::post_oracle::{bellperson_window_post, bellperson_winning_post};
use ff::Field;

fn bytes(hex: &[HexBytes]) -> Vec<Vec<u8>> {
    hex.iter().map(|h| h.0.clone()).collect()
}

fn c_engine() -> Engine {
    engine_for(&default_test_params_dir()).expect("engine")
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

/// A failed call's status, message and faulty sectors.
type Failed = (Status, String, Vec<u64>);

/// A proof and its timings, or why not.
type Generated = Result<(Vec<u8>, Timings), Failed>;

/// `cuzk_generate_window_post_partition` (`partition` Some) or `cuzk_generate_winning_post`.
fn generate(
    engine: &Engine,
    abi_proof: u32,
    prover_id: &[u8; 32],
    randomness: &[u8; 32],
    vanilla: &[Vec<u8>],
    partition: Option<usize>,
) -> Generated {
    let vanilla = slices(vanilla);
    let mut proof = std::ptr::null_mut();
    let mut timings = Timings {
        struct_size: std::mem::size_of::<Timings>() as u32,
        ..Default::default()
    };
    let mut err = std::ptr::null_mut();
    let (e, id, rnd, vp, n) = (engine.0, prover_id.as_ptr(), randomness.as_ptr(), vanilla.as_ptr(), vanilla.len());
    let none = std::ptr::null();
    let status = match partition {
        Some(k) => cuzk_generate_window_post_partition(e, abi_proof, id, rnd, vp, n, k, none, &mut proof, &mut timings, &mut err),
        None => cuzk_generate_winning_post(e, abi_proof, id, rnd, vp, n, none, &mut proof, &mut timings, &mut err),
    };
    if status != Status::Ok {
        assert!(proof.is_null(), "no proof on failure");
        let mut ids = std::ptr::null();
        let count = cuzk_error_faulty_sectors(err, &mut ids);
        let faulty = if count == 0 {
            Vec::new()
        } else {
            unsafe { std::slice::from_raw_parts(ids, count) }.to_vec()
        };
        let (s, m) = take_error(err);
        assert_eq!(s, status);
        return Err((s, m, faulty));
    }
    let bytes = unsafe { std::slice::from_raw_parts((*proof).data, (*proof).len) }.to_vec();
    cuzk_bytes_free(proof);
    Ok((bytes, timings))
}

fn window(engine: &Engine, partition: usize) -> Result<Vec<u8>, Failed> {
    let f = fixture();
    let p = &f.window.partitions[partition];
    generate(
        engine,
        f.window.abi_proof,
        &f.prover_id,
        &f.randomness,
        &bytes(&p.vanilla_proofs),
        Some(p.index),
    )
    .map(|(proof, _)| proof)
}

fn winning(engine: &Engine) -> Result<Vec<u8>, Failed> {
    let f = fixture();
    generate(
        engine,
        f.winning.abi_proof,
        &f.prover_id,
        &f.randomness,
        &bytes(&f.winning.vanilla_proofs),
        None,
    )
    .map(|(proof, _)| proof)
}

/// `cuzk_verify_window_post` / `cuzk_verify_winning_post`.
fn c_verify(
    engine: &Engine,
    kind: PostKind,
    abi_proof: u32,
    randomness: &[u8; 32],
    sectors: &[(u64, [u8; 32])],
    proof: &[u8],
) -> Result<bool, (Status, String)> {
    let sectors: Vec<cuzk_post_sector> = sectors
        .iter()
        .map(|&(sector_id, comm_r)| cuzk_post_sector { sector_id, comm_r })
        .collect();
    let (mut valid, mut err) = (false, std::ptr::null_mut());
    let f = fixture();
    let verify = match kind {
        PostKind::Window => cuzk_verify_window_post,
        PostKind::Winning => cuzk_verify_winning_post,
    };
    let status = verify(
        engine.0,
        abi_proof,
        f.prover_id.as_ptr(),
        randomness.as_ptr(),
        sectors.as_ptr(),
        sectors.len(),
        proof.as_ptr(),
        proof.len(),
        &mut valid,
        &mut err,
    );
    match status {
        Status::Ok => Ok(valid),
        _ => Err(take_error(err)),
    }
}

#[test]
fn window_post_partitions_are_accepted_by_filecoin_proofs_and_by_cuzk() {
    let f = fixture();
    let engine = c_engine();
    assert!(f.window.partitions.len() >= 2, "a full and a short partition");
    let mut merged = Vec::new();
    for partition in 0..f.window.partitions.len() {
        let proof = window(&engine, partition).expect("WindowPoSt partition through the C ABI");
        assert_eq!(proof.len(), 192);
        merged.extend_from_slice(&proof);
    }
    assert!(
        filecoin_verify_window(&f.randomness, &merged),
        "filecoin-proofs-api verify_window_post rejects the proof"
    );
    let sectors = all_window_sectors();
    assert_eq!(
        c_verify(&engine, PostKind::Window, f.window.abi_proof, &f.randomness, &sectors, &merged),
        Ok(true)
    );
    let mut other = f.randomness;
    other[0] ^= 1;
    assert!(!filecoin_verify_window(&other, &merged));
    assert_eq!(
        c_verify(&engine, PostKind::Window, f.window.abi_proof, &other, &sectors, &merged),
        Ok(false)
    );
}

#[test]
fn winning_post_is_accepted_by_filecoin_proofs_and_by_cuzk() {
    let f = fixture();
    let engine = c_engine();
    let proof = winning(&engine).expect("WinningPoSt through the C ABI");
    assert_eq!(proof.len(), 192);
    assert!(
        filecoin_verify_winning(&f.randomness, &proof),
        "filecoin-proofs-api verify_winning_post rejects the proof"
    );
    let sector = [(f.winning.sectors[0].sector_id, f.winning.sectors[0].comm_r)];
    assert_eq!(
        c_verify(&engine, PostKind::Winning, f.winning.abi_proof, &f.randomness, &sector, &proof),
        Ok(true)
    );
    let mut other = f.randomness;
    other[5] ^= 1;
    assert!(!filecoin_verify_winning(&other, &proof));
    assert_eq!(
        c_verify(&engine, PostKind::Winning, f.winning.abi_proof, &other, &sector, &proof),
        Ok(false)
    );
}

/// Real vanilla proofs (every partition, and WinningPoSt): the native witness gives classic
/// synthesis' a, b, c and assignments.
#[test]
fn native_witness_equals_the_gadgets_on_real_vanilla_proofs() {
    let f = fixture();
    let mut requests = Vec::new();
    let window: Vec<Vec<Vec<u8>>> = f.window.partitions.iter().map(|p| bytes(&p.vanilla_proofs)).collect();
    let winning = bytes(&f.winning.vanilla_proofs);
    let window_slices: Vec<Vec<&[u8]>> = window.iter().map(|p| p.iter().map(Vec::as_slice).collect()).collect();
    let winning_slices: Vec<&[u8]> = winning.iter().map(Vec::as_slice).collect();
    for (index, proofs) in window_slices.iter().enumerate() {
        requests.push(PostRequest {
            kind: PostKind::Window,
            registered_proof: f.window.registered_proof,
            prover_id: f.prover_id,
            randomness: f.randomness,
            vanilla_proofs: proofs,
            partition_index: index,
        });
    }
    requests.push(PostRequest {
        kind: PostKind::Winning,
        registered_proof: f.winning.registered_proof,
        prover_id: f.prover_id,
        randomness: f.randomness,
        vanilla_proofs: &winning_slices,
        partition_index: 0,
    });
    for request in &requests {
        let job = request.check(&mut Timings::default()).expect("valid vanilla proofs");
        check_job_split_path(job.as_ref(), 0, &format!("{:?} partition {}", request.kind, request.partition_index));
    }
}

#[test]
fn fixed_randomness_proofs_equal_bellperson_bit_for_bit() {
    let f = fixture();
    let engine = RustEngine::acquire(EngineConfig {
        param_cache_dir: Some(default_test_params_dir()),
        ..Default::default()
    })
    .unwrap();
    let mut rng = rand::thread_rng();
    let params = default_test_params_dir();
    // The short partition (padded) and the full one, and the WinningPoSt.
    for p in f.window.partitions.iter().rev() {
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let vanilla = bytes(&p.vanilla_proofs);
        let request = PostRequest {
            kind: PostKind::Window,
            registered_proof: f.window.registered_proof,
            prover_id: f.prover_id,
            randomness: f.randomness,
            vanilla_proofs: &vanilla.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            partition_index: p.index,
        };
        let options = ProveOptions {
            randomness: Some(vec![(r, s)]),
            ..Default::default()
        };
        let ours = engine.generate_post(&request, &options).expect("cuzk WindowPoSt").proof;
        let theirs = bellperson_window_post(f.window.registered_proof, &f.randomness, f.prover_id, &vanilla, p.index, &params, r, s).unwrap();
        assert_eq!(ours, theirs, "partition {}: cuzk and bellperson proofs differ for the same r, s", p.index);
    }
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let vanilla = bytes(&f.winning.vanilla_proofs);
    let request = PostRequest {
        kind: PostKind::Winning,
        registered_proof: f.winning.registered_proof,
        prover_id: f.prover_id,
        randomness: f.randomness,
        vanilla_proofs: &vanilla.iter().map(Vec::as_slice).collect::<Vec<_>>(),
        partition_index: 0,
    };
    let options = ProveOptions {
        randomness: Some(vec![(r, s)]),
        ..Default::default()
    };
    let ours = engine.generate_post(&request, &options).expect("cuzk WinningPoSt").proof;
    let theirs = bellperson_winning_post(f.winning.registered_proof, &f.randomness, f.prover_id, &vanilla, &params, r, s).unwrap();
    assert_eq!(ours, theirs, "WinningPoSt: cuzk and bellperson proofs differ for the same r, s");
    assert!(filecoin_verify_winning(&f.randomness, &ours));
}

/// A WindowPoSt partition's vanilla proofs out of sector-number order: the verifiers
/// (filecoin-proofs-api's `verify_window_post`, `cuzk_verify_window_post`) take a partition's
/// sectors sorted by number, so its proof could never verify. Refused, naming the sector.
#[test]
fn window_post_vanilla_proofs_out_of_sector_order_are_refused() {
    let f = fixture();
    let engine = c_engine();
    let p = &f.window.partitions[0];
    assert!(p.sectors[0].sector_id < p.sectors[1].sector_id, "the fixture's partitions are sorted");
    let mut vanilla = bytes(&p.vanilla_proofs);
    vanilla.swap(0, 1);
    let (status, message, _) = generate(&engine, f.window.abi_proof, &f.prover_id, &f.randomness, &vanilla, Some(p.index)).expect_err("out of order");
    assert_eq!(status, Status::InvalidArgument, "{message}");
    let named = format!("vanilla proof 1 (sector {}): sector numbers must increase", p.sectors[0].sector_id);
    assert!(message.contains(&named), "{message:?} does not say {named:?}");
}

/// The fixture's 2KiB vanilla proofs under every other sector size's registered proof (V1 and
/// V1_2): a clean INVALID_ARGUMENT or PARSE_ERROR naming the vanilla proof, never a PANIC.
#[test]
fn vanilla_proofs_of_another_sector_size_are_refused() {
    let f = fixture();
    let engine = c_engine();
    let window = bytes(&f.window.partitions[0].vanilla_proofs);
    let winning = bytes(&f.winning.vanilla_proofs);
    // go-state-types numbering: WinningPoSt 1..=4, WindowPoSt 6..=9 and 11..=14 (8MiB to 64GiB).
    for abi in (1..=4).chain(6..=9).chain(11..=14) {
        let (vanilla, partition) = if abi < 5 { (&winning, None) } else { (&window, Some(0)) };
        let (status, message, _) = generate(&engine, abi, &f.prover_id, &f.randomness, vanilla, partition).expect_err("another size");
        assert!(
            matches!(status, Status::InvalidArgument | Status::ParseError),
            "{abi}: {status:?} {message}"
        );
        assert!(message.contains("vanilla proof 0"), "{abi}: {message}");
    }
}

/// A vanilla proof past CUZK_MAX_VANILLA_PROOF_BYTES is refused before it is decoded, naming
/// the proof and the limit.
#[test]
fn oversized_vanilla_proofs_are_refused() {
    let engine = c_engine();
    let huge = vec![vec![0u8; CUZK_MAX_VANILLA_PROOF_BYTES + 1]];
    // WindowPoSt and WinningPoSt 2KiB, go-state-types numbering.
    for (abi, partition) in [(10, Some(0)), (0, None)] {
        let (status, message, _) = generate(&engine, abi, &[1; 32], &[2; 32], &huge, partition).unwrap_err();
        assert_eq!(status, Status::InvalidArgument, "{message}");
        assert!(message.contains("vanilla proof 0") && message.contains("byte limit"), "{message}");
    }
}

/// Verify calls with arguments no proof can be checked against: each an INVALID_ARGUMENT
/// naming what is wrong, never a PANIC, never an answer.
#[test]
fn verify_calls_refuse_unusable_arguments() {
    let f = fixture();
    let engine = c_engine();
    let (window_abi, winning_abi, rnd) = (f.window.abi_proof, f.winning.abi_proof, &f.randomness);
    let sectors = all_window_sectors();
    // 3 sectors, 2 per partition: 2 partitions.
    let (proof, garbage) = (vec![0x11; 384], vec![0xff; 384]);
    let mut high = *rnd;
    high[31] = 0xff;
    let mut non_canonical = sectors.clone();
    non_canonical[1].1 = high;
    let winner = (f.winning.sectors[0].sector_id, f.winning.sectors[0].comm_r);
    let other = sectors.iter().copied().find(|s| s.0 != winner.0).unwrap();
    for (what, kind, abi, randomness, sectors, proof, needle) in [
        (
            "randomness not canonical",
            PostKind::Window,
            window_abi,
            &high,
            &sectors[..],
            &proof[..],
            "randomness",
        ),
        (
            "a comm_r not canonical",
            PostKind::Window,
            window_abi,
            rnd,
            &non_canonical[..],
            &proof[..],
            "comm_r of sector",
        ),
        (
            "one partition's proof for two",
            PostKind::Window,
            window_abi,
            rnd,
            &sectors[..],
            &proof[..192],
            "2 partition(s)",
        ),
        (
            "bytes that are no curve points",
            PostKind::Window,
            window_abi,
            rnd,
            &sectors[..],
            &garbage[..],
            "proof bytes",
        ),
        (
            "two WinningPoSt sectors",
            PostKind::Winning,
            winning_abi,
            rnd,
            &[winner, other][..],
            &proof[..192],
            "1 sector",
        ),
        (
            "a WinningPoSt of no curve points",
            PostKind::Winning,
            winning_abi,
            rnd,
            &[winner][..],
            &garbage[..192],
            "proof bytes",
        ),
    ] {
        let (status, message) = c_verify(&engine, kind, abi, randomness, sectors, proof).expect_err(what);
        assert_eq!(status, Status::InvalidArgument, "{what}: {message}");
        assert!(message.contains(needle), "{what}: {message:?} does not say {needle:?}");
    }
}

/// Flips the lowest bit of a vanilla proof's comm_c (its bincode ends with comm_c and
/// comm_r_last, 32 little-endian bytes each): still a canonical field element, the structure
/// intact, but H(comm_c ‖ comm_r_last) is no longer the sector's comm_r.
fn tampered(vanilla: &[u8]) -> Vec<u8> {
    let mut out = vanilla.to_vec();
    out[vanilla.len() - 64] ^= 0x01;
    out
}

#[test]
fn faulty_vanilla_proofs_name_their_sectors_and_the_engine_keeps_proving() {
    let f = fixture();
    let engine = c_engine();
    let p = &f.window.partitions[0];
    let mut vanilla = bytes(&p.vanilla_proofs);
    vanilla[1] = tampered(&vanilla[1]);
    let err = generate(&engine, f.window.abi_proof, &f.prover_id, &f.randomness, &vanilla, Some(p.index)).unwrap_err();
    assert_eq!((err.0, err.2), (Status::FaultySectors, vec![p.sectors[1].sector_id]), "{}", err.1);
    assert!(err.1.contains(&p.sectors[1].sector_id.to_string()), "{}", err.1);
    let winning_vanilla = vec![tampered(&bytes(&f.winning.vanilla_proofs)[0])];
    let err = generate(&engine, f.winning.abi_proof, &f.prover_id, &f.randomness, &winning_vanilla, None).unwrap_err();
    assert_eq!((err.0, err.2), (Status::FaultySectors, vec![f.winning.sectors[0].sector_id]), "{}", err.1);
    // Other randomness: every sector's paths are for other challenges.
    let mut other = f.randomness;
    other[3] ^= 0x10;
    let err = generate(
        &engine,
        f.window.abi_proof,
        &f.prover_id,
        &other,
        &bytes(&p.vanilla_proofs),
        Some(p.index),
    )
    .unwrap_err();
    assert_eq!(err.0, Status::FaultySectors, "{}", err.1);
    let mut expected: Vec<u64> = p.sectors.iter().map(|s| s.sector_id).collect();
    expected.sort();
    let mut got = err.2.clone();
    got.sort();
    assert_eq!(got, expected);
    let err = generate(
        &engine,
        f.winning.abi_proof,
        &f.prover_id,
        &other,
        &bytes(&f.winning.vanilla_proofs),
        None,
    )
    .unwrap_err();
    assert_eq!((err.0, err.2), (Status::FaultySectors, vec![f.winning.sectors[0].sector_id]));
    assert!(winning(&engine).is_ok(), "the engine proves after bad input");
}

#[test]
fn bad_arguments_are_clean_errors() {
    let f = fixture();
    let engine = c_engine();
    let p = &f.window.partitions[0];
    let (id, rnd) = (&f.prover_id, &f.randomness);
    let window_abi = f.window.abi_proof;
    let check = |result: Generated, status: Status, needle: &str| {
        let (s, m, _) = result.expect_err("an error");
        assert_eq!(s, status, "{m}");
        assert!(m.to_lowercase().contains(&needle.to_lowercase()), "{m:?} does not mention {needle:?}");
    };
    check(
        generate(&engine, window_abi, id, rnd, &[], Some(0)),
        Status::InvalidArgument,
        "no vanilla proofs",
    );
    check(
        generate(&engine, 99, id, rnd, &bytes(&p.vanilla_proofs), Some(0)),
        Status::InvalidArgument,
        "unknown registered PoSt proof",
    );
    check(
        generate(&engine, f.winning.abi_proof, id, rnd, &bytes(&p.vanilla_proofs), Some(0)),
        Status::InvalidArgument,
        "Winning",
    );
    check(
        generate(&engine, window_abi, id, rnd, &bytes(&f.winning.vanilla_proofs), None),
        Status::InvalidArgument,
        "Window",
    );
    // 8MiB WindowPoSt with 2KiB vanilla proofs: same tree type, other depth.
    check(
        generate(&engine, window_abi + 1, id, rnd, &bytes(&p.vanilla_proofs), Some(0)),
        Status::InvalidArgument,
        "levels",
    );
    check(
        generate(&engine, window_abi, id, rnd, &[b"garbage".to_vec()], Some(0)),
        Status::ParseError,
        "vanilla proof 0",
    );
    let vanilla = bytes(&p.vanilla_proofs);
    let truncated = vanilla[0][..vanilla[0].len() - 7].to_vec();
    check(
        generate(&engine, window_abi, id, rnd, &[truncated], Some(0)),
        Status::ParseError,
        "vanilla proof 0",
    );
    let mut longer = vanilla[0].clone();
    longer.push(0);
    check(
        generate(&engine, window_abi, id, rnd, &[longer], Some(0)),
        Status::ParseError,
        "vanilla proof 0",
    );
    let all: Vec<Vec<u8>> = f.window.partitions.iter().flat_map(|p| bytes(&p.vanilla_proofs)).collect();
    check(
        generate(&engine, window_abi, id, rnd, &all, Some(0)),
        Status::InvalidArgument,
        "at most 2",
    );
    check(
        generate(&engine, window_abi, id, rnd, &[vanilla[0].clone(), vanilla[0].clone()], Some(0)),
        Status::InvalidArgument,
        "twice",
    );
    let mut high = *rnd;
    high[31] = 0xff;
    check(
        generate(&engine, window_abi, id, &high, &vanilla, Some(0)),
        Status::InvalidArgument,
        "randomness",
    );
    check(
        generate(&engine, window_abi, &[0xff; 32], rnd, &vanilla, Some(0)),
        Status::InvalidArgument,
        "prover_id",
    );
    check(
        generate(&engine, window_abi, id, rnd, &vanilla, Some(usize::MAX)),
        Status::InvalidArgument,
        "partition index",
    );
    // NULL pointers.
    let mut proof = std::ptr::null_mut();
    let mut err = std::ptr::null_mut();
    let slice = slices(&vanilla);
    let status = cuzk_generate_window_post_partition(
        engine.0,
        window_abi,
        std::ptr::null(),
        rnd.as_ptr(),
        slice.as_ptr(),
        slice.len(),
        0,
        std::ptr::null(),
        &mut proof,
        std::ptr::null_mut(),
        &mut err,
    );
    assert_eq!(take_error(err).0, Status::NullArgument);
    assert_eq!(status, Status::NullArgument);
    let status = cuzk_generate_winning_post(
        engine.0,
        0,
        id.as_ptr(),
        rnd.as_ptr(),
        std::ptr::null(),
        1,
        std::ptr::null(),
        &mut proof,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    assert_eq!(status, Status::NullArgument);
    let holes = [cuzk_byte_slice {
        data: std::ptr::null(),
        len: 10,
    }];
    let status = cuzk_generate_winning_post(
        engine.0,
        0,
        id.as_ptr(),
        rnd.as_ptr(),
        holes.as_ptr(),
        1,
        std::ptr::null(),
        &mut proof,
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    assert_eq!(status, Status::NullArgument);
    let status = cuzk_generate_winning_post(
        engine.0,
        0,
        id.as_ptr(),
        rnd.as_ptr(),
        slice.as_ptr(),
        1,
        std::ptr::null(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    assert_eq!(status, Status::NullArgument);
    // Verify calls: wrong proof length, no sectors, wrong kind.
    let sectors = all_window_sectors();
    assert_eq!(
        c_verify(&engine, PostKind::Window, window_abi, rnd, &sectors, &[0; 191]).unwrap_err().0,
        Status::InvalidArgument
    );
    assert_eq!(
        c_verify(&engine, PostKind::Window, window_abi, rnd, &[], &[0; 192]).unwrap_err().0,
        Status::InvalidArgument
    );
    assert_eq!(
        c_verify(&engine, PostKind::Winning, window_abi, rnd, &sectors[..1], &[0; 192])
            .unwrap_err()
            .0,
        Status::InvalidArgument
    );
    // Keys: unknown numbers, NULL out-pointer; a known one preloads and evicts.
    let mut err = std::ptr::null_mut();
    let status = cuzk_engine_preload_post_key(engine.0, 99, std::ptr::null_mut(), std::ptr::null_mut(), &mut err);
    assert_eq!((status, take_error(err).0), (Status::InvalidArgument, Status::InvalidArgument));
    let status = cuzk_engine_evict_post_key(engine.0, f.winning.abi_proof, std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(status, Status::NullArgument);
    let mut load_ns = 0;
    let status = cuzk_engine_preload_post_key(engine.0, f.winning.abi_proof, &mut load_ns, std::ptr::null_mut(), std::ptr::null_mut());
    assert_eq!(status, Status::Ok);
    let mut evicted = false;
    assert_eq!(
        cuzk_engine_evict_post_key(engine.0, f.winning.abi_proof, &mut evicted, std::ptr::null_mut()),
        Status::Ok
    );
    assert!(evicted, "the preloaded WinningPoSt key was resident");
    assert!(winning(&engine).is_ok(), "the engine proves after bad input");
}
