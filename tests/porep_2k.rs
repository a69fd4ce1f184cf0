//! 2KiB PoRep C2 end to end through the C ABI, checked by filecoin-proofs' own verifier, and
//! our proof compared bit for bit with bellperson's for the same r, s.

mod common;

use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bellperson::groth16::create_proof_batch;
use blstrs::Scalar;
use common::*;
use cuzk::cancel::CancelToken;
use cuzk::engine::{Engine as RustEngine, EngineConfig, ProofOutput, ProveOptions};
use cuzk::error::Status;
use cuzk::ffi::*;
use cuzk::internals::porep;
use ff::Field;
use filecoin_proofs::constants::SectorShape2KiB;

/// The tests of this file run in parallel on one engine. A test that checks a latency holds
/// the machine `alone()`, the others `shared()`: otherwise on a 2-core CI machine the cancelled
/// call waits behind four concurrent proofs' work in the engine's thread pool (its next cancel
/// check comes only when that pool picks its job up), and the check measures the load instead.
static MACHINE: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn alone() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One proof of the fixture, shared by the tests that only inspect it.
fn proved() -> &'static Proved {
    static PROVED: OnceLock<Proved> = OnceLock::new();
    PROVED.get_or_init(|| {
        let f = fixture();
        prove(&engine(), &f.c1_json, f.sector.sector_id, &f.sector.prover_id, None).expect("2KiB C2 through the C ABI")
    })
}

#[test]
fn c2_proof_is_accepted_by_filecoin_proofs_and_by_cuzk() {
    let _machine = shared();
    let f = fixture();
    let p = proved();
    assert_eq!(p.proof.len(), 192, "one partition, 192 bytes");
    assert!(filecoin_verify(&f.sector, &p.proof), "filecoin-proofs-api verify_seal rejects the proof");
    assert_eq!(verify(&engine(), &f.sector, &p.proof), Ok(true));
}

#[test]
fn proof_verifies_without_an_engine() {
    let _machine = shared();
    let f = fixture();
    let p = proved();
    // NULL engine: the standalone verifier, with the keys of FIL_PROOFS_PARAMETER_CACHE (the
    // fixture's directory) and no GPU.
    assert_eq!(verify_on(std::ptr::null(), &f.sector, &p.proof), Ok(true));
    let mut other_seed = f.sector.clone();
    other_seed.seed[0] ^= 1;
    assert_eq!(verify_on(std::ptr::null(), &other_seed, &p.proof), Ok(false));
    let err = verify_on(std::ptr::null(), &f.sector, &p.proof[..191]).expect_err("a short proof");
    assert_eq!(err.0, Status::InvalidArgument, "{}", err.1);
}

#[test]
fn proof_is_rejected_for_another_seed_or_comm_r() {
    let _machine = shared();
    let f = fixture();
    let p = proved();
    let mut other_seed = f.sector.clone();
    other_seed.seed[0] ^= 1;
    assert!(!filecoin_verify(&other_seed, &p.proof));
    assert_eq!(verify(&engine(), &other_seed, &p.proof), Ok(false));
    let mut other_comm_r = f.sector.clone();
    other_comm_r.comm_r[3] ^= 1;
    assert!(matches!(
        verify(&engine(), &other_comm_r, &p.proof),
        Ok(false) | Err((Status::InvalidArgument, _))
    ));
    let mut flipped = p.proof.clone();
    flipped[100] ^= 1;
    assert!(matches!(
        verify(&engine(), &f.sector, &flipped),
        Ok(false) | Err((Status::InvalidArgument, _))
    ));
}

#[test]
fn tampered_c1_is_refused_before_proving() {
    let _machine = shared();
    let f = fixture();
    let mut c1: serde_json::Value = serde_json::from_slice(&f.c1_json).unwrap();
    let seed = c1["seed"].as_array_mut().unwrap();
    seed[0] = serde_json::json!((seed[0].as_u64().unwrap() + 1) % 256);
    let tampered = serde_json::to_vec(&c1).unwrap();
    let err = prove(&engine(), &tampered, f.sector.sector_id, &f.sector.prover_id, None)
        .err()
        .expect("tampered C1 must fail");
    assert_eq!(err.0, Status::InvalidArgument, "{}", err.1);
    assert!(err.1.contains("vanilla proofs"), "{}", err.1);
    let err = prove(&engine(), &f.c1_json, f.sector.sector_id + 1, &f.sector.prover_id, None)
        .err()
        .expect("wrong sector id must fail");
    assert_eq!(err.0, Status::InvalidArgument, "{}", err.1);
}

#[test]
fn timings_are_filled_and_consistent() {
    let _machine = shared();
    let t = proved().timings;
    assert_eq!(t.struct_size as usize, std::mem::size_of::<cuzk::timings::Timings>());
    assert_eq!(t.version, cuzk::timings::CUZK_TIMINGS_VERSION);
    assert_eq!(t.backend, cuzk::timings::BackendKind::Cpu as u32);
    assert_eq!(t.device_index, -1);
    assert_eq!(t.partitions, 1);
    assert_eq!(t.domain_log2, 22);
    assert!(t.num_constraints > 2_000_000, "{}", t.num_constraints);
    let cpu_fields = [
        ("total", t.total_ns),
        ("input_check", t.input_check_ns),
        ("synthesis", t.synthesis_ns),
        ("prep_msm", t.prep_msm_ns),
        ("ntt", t.ntt_ns),
        ("msm_h", t.msm_h_ns),
        ("batch_add", t.batch_add_ns),
        ("msm_l", t.msm_l_ns),
        ("msm_a", t.msm_a_ns),
        ("msm_b_g1", t.msm_b_g1_ns),
        ("msm_b_g2", t.msm_b_g2_ns),
        ("assembly", t.assembly_ns),
        ("verify", t.verify_ns),
    ];
    for (name, ns) in cpu_fields {
        assert!(ns > 0, "{name} is 0 on the CPU path");
    }
    // Synthesis ran on the R1CS path (the default): witness generation and the sparse
    // products are its parts.
    assert_eq!(t.r1cs_synthesis, 1);
    assert!(t.witness_ns > 0 && t.spmv_ns > 0 && t.witness_ns + t.spmv_ns <= t.synthesis_ns, "{t:?}");
    assert_eq!(t.pin_h2d_ns, 0, "the CPU path has no host-to-device copies");
    let parts = t.serial_ns();
    assert!(parts <= t.total_ns, "phases {parts} ns exceed the total {} ns", t.total_ns);
    assert!(
        parts * 100 >= t.total_ns * 98,
        "phases {parts} ns cover less than 98 % of the total {} ns",
        t.total_ns
    );
}

#[test]
fn fixed_randomness_proof_equals_bellperson_bit_for_bit() {
    let _machine = shared();
    let f = fixture();
    let mut rng = rand::thread_rng();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let engine = RustEngine::acquire(EngineConfig {
        param_cache_dir: Some(f.params_dir.clone()),
        ..Default::default()
    })
    .unwrap();
    let options = ProveOptions {
        randomness: Some(vec![(r, s)]),
        ..Default::default()
    };
    let ProofOutput { proof: ours, timings: t, .. } = engine
        .seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &options)
        .expect("cuzk proof");
    assert_eq!(t.r1cs_synthesis, 1, "the default synthesis is the R1CS path");

    let c1 = porep::parse_c1(&f.c1_json).unwrap();
    let inputs = porep::check_c1::<SectorShape2KiB>(c1, f.sector.prover_id, f.sector.sector_id).unwrap();
    let circuit = porep::partition_circuit(&inputs, 0).unwrap();
    let key = bellperson::groth16::Parameters::<blstrs::Bls12>::read(
        std::io::BufReader::new(std::fs::File::open(porep_params_path(&inputs.config)).unwrap()),
        false,
    )
    .unwrap();
    let theirs = create_proof_batch(vec![circuit], &key, vec![r], vec![s])
        .expect("bellperson proof")
        .remove(0);
    let mut expected = Vec::new();
    theirs.write(&mut expected).unwrap();
    assert_eq!(ours, expected, "cuzk and bellperson proofs differ for the same r, s");
    assert!(filecoin_verify(&f.sector, &ours));
}

fn porep_params_path(config: &filecoin_proofs::types::PoRepConfig) -> std::path::PathBuf {
    let id = porep::parameter_cache_id::<SectorShape2KiB>(config).unwrap();
    fixture().params_dir.join(storage_proofs_core::parameter_cache::parameter_id(&id))
}

/// Two calls at once on one engine (each 2KiB CPU proof is ~50 s of a 2-core CI machine, so
/// two, not more): every proof belongs to its own call.
#[test]
fn two_threads_proving_concurrently_both_verify() {
    let _machine = shared();
    let f = fixture();
    let engine = engine();
    let proofs: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| prove(&engine, &f.c1_json, f.sector.sector_id, &f.sector.prover_id, None)))
            .collect();
        handles.into_iter().map(|h| h.join().expect("no panic")).collect()
    });
    for proof in proofs {
        let proof = proof.expect("concurrent proof");
        assert!(filecoin_verify(&f.sector, &proof.proof));
    }
}

#[test]
fn cancelled_call_stops_early_and_engine_keeps_working() {
    let f = fixture();
    let engine = engine();
    let token = cuzk_cancel_token_new();
    let options = cuzk_prove_options {
        cancel: token,
        ..Default::default()
    };
    cuzk_cancel_token_cancel(token);
    let start = std::time::Instant::now();
    let err = prove(&engine, &f.c1_json, f.sector.sector_id, &f.sector.prover_id, Some(&options))
        .err()
        .expect("cancelled");
    assert_eq!(err.0, Status::Cancelled, "{}", err.1);
    assert!(start.elapsed().as_secs() < 10, "a cancelled call must stop at the first phase boundary");
    cuzk_cancel_token_free(token);

    // Cancel mid-proof from another thread, once the key is resident (a key load itself cannot
    // be interrupted: the call stops right after it).
    proved();
    let _machine = alone();
    let token = CancelToken::new();
    let options = ProveOptions {
        cancel: Some(token.clone()),
        ..Default::default()
    };
    let rust_engine = RustEngine::acquire(EngineConfig {
        param_cache_dir: Some(f.params_dir.clone()),
        ..Default::default()
    })
    .unwrap();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(1500));
        token.cancel();
        std::time::Instant::now()
    });
    let err = rust_engine
        .seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &options)
        .unwrap_err();
    let cancelled_at = canceller.join().unwrap();
    assert_eq!(err.status, Status::Cancelled, "{err}");
    assert!(
        cancelled_at.elapsed().as_secs() < 5,
        "stopped {:?} after the cancel",
        cancelled_at.elapsed()
    );
    assert!(
        prove(&engine, &f.c1_json, f.sector.sector_id, &f.sector.prover_id, None).is_ok(),
        "next proof after a cancel"
    );
}
