//! `cuzk_engine_memory_estimate` (issue 24: a per-call memory estimate for Curio's scheduler):
//! for every proof kind, the host memory a proof really takes (the allocators' live heap, its peak
//! sampled during the call, with nothing resident before it) stays within the estimate, and
//! the estimate is within a small factor of it; the counts read from a key's file equal the
//! decoded key's; bad arguments are clean errors. Its own process: the heap it measures is
//! this test's alone. The GPU side (device memory against the estimate) is in tests/gpu.rs.

mod common;

use std::ptr::null_mut;

use common::*;
use cuzk::engine::{
    Engine as RustEngine, EngineConfig, MemoryEstimate, PostKind, PostRequest, ProofOutput, ProveOptions, RegisteredProof, UpdateRequest,
};
use cuzk::error::Status;
use cuzk::ffi::*;
use cuzk_tools::memory::{heap_in_use_bytes, HeapPeak};

/// How far above the measured peak an estimate may be and still be useful to a scheduler.
const MAX_OVERESTIMATE: u64 = 4;

#[test]
fn estimates_bound_each_kinds_host_memory() {
    let (f, post, update) = (fixture(), post_fixture(), update_fixture());
    let engine = RustEngine::acquire(EngineConfig {
        param_cache_dir: Some(f.params_dir.clone()),
        ..Default::default()
    })
    .unwrap();
    let options = ProveOptions::default();
    let window: Vec<Vec<&[u8]>> = post
        .window
        .partitions
        .iter()
        .map(|partition| partition.vanilla_proofs.iter().map(|p| &p.0[..]).collect())
        .collect();
    let winning: Vec<&[u8]> = post.winning.vanilla_proofs.iter().map(|p| &p.0[..]).collect();
    let update_proofs: Vec<&[u8]> = update.vanilla_proofs.iter().map(|p| &p.0[..]).collect();
    let post_request = |kind, registered_proof, vanilla_proofs, partition_index| PostRequest {
        kind,
        registered_proof,
        prover_id: post.prover_id,
        randomness: post.randomness,
        vanilla_proofs,
        partition_index,
    };
    let window_partition = |k: usize| {
        let request = post_request(PostKind::Window, post.window.registered_proof, &window[k], k);
        engine.generate_post(&request, &options).unwrap()
    };
    // Partition 0 is measured; filecoin-proofs verifies a deadline's partitions together.
    let window_verifies = |first: &[u8]| {
        let mut merged = first.to_vec();
        for k in 1..window.len() {
            merged.extend_from_slice(&window_partition(k).proof);
        }
        filecoin_verify_window(&post.randomness, &merged)
    };
    type Prove<'a> = Box<dyn Fn() -> ProofOutput + 'a>;
    type Verifies<'a> = &'a dyn Fn(&[u8]) -> bool;
    let kinds: [(&str, RegisteredProof, Prove, Verifies); 4] = [
        (
            "PoRep C2",
            f.sector.registered_proof.into(),
            Box::new(|| {
                engine
                    .seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &options)
                    .unwrap()
            }),
            &|proof| filecoin_verify(&f.sector, proof),
        ),
        (
            "WindowPoSt partition",
            post.window.registered_proof.into(),
            Box::new(|| window_partition(0)),
            &window_verifies,
        ),
        (
            "WinningPoSt",
            post.winning.registered_proof.into(),
            Box::new(|| {
                engine
                    .generate_post(&post_request(PostKind::Winning, post.winning.registered_proof, &winning, 0), &options)
                    .unwrap()
            }),
            &|proof| filecoin_verify_winning(&post.randomness, proof),
        ),
        (
            "SnapDeals update",
            update.registered_proof.into(),
            Box::new(|| {
                let request = UpdateRequest {
                    registered_proof: update.registered_proof,
                    comm_r_old: update.comm_r_old,
                    comm_r_new: update.comm_r_new,
                    comm_d_new: update.comm_d_new,
                    vanilla_proofs: &update_proofs,
                };
                engine.generate_update(&request, &options).unwrap()
            }),
            &|proof| filecoin_verify_update([update.comm_r_old, update.comm_r_new, update.comm_d_new], proof),
        ),
    ];
    for (name, proof, prove, verifies) in kinds {
        // A first proof warms what stays whatever the engine releases (thread pools, the
        // verifiers' keys); then nothing of the kind is resident.
        prove();
        engine.release_memory(false);
        let from_file = engine.memory_estimate(proof).unwrap();
        engine.preload_key(proof).unwrap();
        let resident = engine.memory_estimate(proof).unwrap();
        assert_eq!(from_file, resident, "{name}: the key file's counts are the decoded key's");
        engine.release_memory(false);

        let before = heap_in_use_bytes();
        let peak = HeapPeak::start();
        let out = prove();
        let used = peak.stop().saturating_sub(before);
        assert!(verifies(&out.proof), "{name}: the proof verifies");
        let MemoryEstimate {
            host_resident_bytes,
            host_call_bytes,
            ..
        } = resident;
        let estimate = host_resident_bytes + host_call_bytes;
        eprintln!(
            "{name}: {resident:?}; live heap peak +{used} B, estimate {estimate} B ({:.2}x)",
            estimate as f64 / used as f64
        );
        assert!(
            used <= estimate,
            "{name}: the call took {used} B of host memory, more than the estimate {estimate} B"
        );
        assert!(
            estimate <= MAX_OVERESTIMATE * used,
            "{name}: the estimate {estimate} B is over {MAX_OVERESTIMATE}x the {used} B the call took"
        );
    }
}

#[test]
fn estimates_through_the_c_abi_and_bad_arguments() {
    let (f, post, update) = (fixture(), post_fixture(), update_fixture());
    let engine = engine();
    let seal = seal_proof_to_abi(f.sector.registered_proof);
    let porep = c_estimate(&engine, |e, out, err| cuzk_engine_memory_estimate(e, seal, out, err)).expect("PoRep estimate");
    assert!(porep.partitions >= 1 && porep.host_resident_bytes > 1 << 20 && porep.host_call_bytes > 0);
    let window = c_estimate(&engine, |e, out, err| {
        cuzk_engine_memory_estimate_post(e, post.window.abi_proof, out, err)
    })
    .expect("WindowPoSt estimate");
    assert_eq!(window.partitions, 1, "a WindowPoSt call proves one partition");
    let snap = c_estimate(&engine, |e, out, err| cuzk_engine_memory_estimate_update(e, update.abi_proof, out, err)).expect("update estimate");
    assert!(snap.partitions >= 1);
    if status_json(&engine)["backend"] == "cpu" {
        assert_eq!(
            (porep.device_resident_bytes, porep.device_call_bytes),
            (0, 0),
            "no device memory on the CPU"
        );
    }

    // An unknown proof, a kind whose key is not in the directory (64GiB), a NULL output, an
    // output struct older than revision 1, a NULL engine.
    let err = c_estimate(&engine, |e, out, err| cuzk_engine_memory_estimate(e, 9999, out, err)).unwrap_err();
    assert_eq!(err.0, Status::InvalidArgument, "{}", err.1);
    let err = c_estimate(&engine, |e, out, err| cuzk_engine_memory_estimate(e, 4, out, err)).unwrap_err();
    assert_eq!(err.0, Status::ParametersNotFound, "{}", err.1);
    let err = c_estimate(&engine, |e, out, err| cuzk_engine_memory_estimate_post(e, 1 << 20, out, err)).unwrap_err();
    assert_eq!(err.0, Status::InvalidArgument, "{}", err.1);
    let mut err = null_mut();
    assert_eq!(cuzk_engine_memory_estimate(engine.0, seal, null_mut(), &mut err), Status::NullArgument);
    assert!(take_error(err).1.contains("estimate_out"));
    let err = c_estimate(&engine, |e, out, err| {
        // SAFETY: `out` is the test's own struct.
        unsafe { (*out).struct_size = 8 };
        cuzk_engine_memory_estimate(e, seal, out, err)
    })
    .unwrap_err();
    assert_eq!(err.0, Status::InvalidArgument, "{}", err.1);
    let err = c_estimate(&engine, |_, out, err| {
        cuzk_engine_memory_estimate_update(std::ptr::null(), update.abi_proof, out, err)
    })
    .unwrap_err();
    assert_eq!(err.0, Status::NullArgument, "{}", err.1);
}
