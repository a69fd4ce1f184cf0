//! Several sectors in one call (issue 8): through the Rust API with fixed randomness (a batch
//! gives the proofs of the sectors proven one by one, a bad sector fails alone) and through the
//! C ABI (per-sector results, errors and timings; bad arguments).
//! One test function: the engine is one per process and the two parts configure it differently.

mod common;

use blstrs::Scalar;
use common::*;
use cuzk::engine::{Engine as RustEngine, EngineConfig, ProveOptions, SectorRequest};
use cuzk::error::Status;
use cuzk::ffi::*;
use cuzk::timings::Timings;
use ff::Field;

#[test]
fn batch_equals_sectors_one_by_one_and_bad_sectors_fail_alone() {
    let f = fixture();
    let mut rng = rand::thread_rng();
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let options = ProveOptions { randomness: Some(vec![(r, s)]), ..Default::default() };
    let sector = SectorRequest { c1_json: &f.c1_json, sector_id: f.sector.sector_id, prover_id: f.sector.prover_id };
    let not_json = SectorRequest { c1_json: b"{not json", ..sector };
    let other_prover = SectorRequest { prover_id: [9; 32], ..sector };
    {
        let engine = RustEngine::acquire(EngineConfig { param_cache_dir: Some(f.params_dir.clone()), ..Default::default() }).unwrap();
        let results = engine.seal_commit_phase2_batch(&[sector, not_json, other_prover, sector], &options).unwrap();
        assert_eq!(results.len(), 4);
        let (single, _) = engine.seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &options).unwrap();
        let (first, t0) = results[0].as_ref().expect("sector 0 proves");
        let (last, t3) = results[3].as_ref().expect("sector 3 proves");
        assert!(first == &single && last == &single, "a batch's proofs differ from the sector proven alone (same r, s)");
        assert!(filecoin_verify(&f.sector, first));
        assert_eq!(results[1].as_ref().unwrap_err().status, Status::ParseError);
        assert_eq!(results[2].as_ref().unwrap_err().status, Status::InvalidArgument, "C1 sealed for another prover");
        // Per-sector timings: sector 3 waited for the sectors before it.
        assert_eq!((t0.partitions, t3.partitions), (1, 1));
        assert!(t0.synthesis_ns > 0 && t3.synthesis_ns > 0 && t0.verify_ns > 0);
        assert!(t3.queue_wait_ns >= t0.synthesis_ns, "sector 3 queued {} ns, sector 0 synthesized {} ns", t3.queue_wait_ns, t0.synthesis_ns);
        assert!(t3.total_ns > t0.total_ns);
        assert_eq!(engine.status().pipeline_memory_in_use, 0, "every partition's memory share is returned");
    }

    // The C ABI: per-sector results in the caller's array.
    let engine = engine();
    let garbage = b"[1, 2".to_vec();
    let request = |c1: &[u8], prover_id: *const u8| cuzk_sector_request {
        c1_json: c1.as_ptr(),
        c1_json_len: c1.len(),
        sector_id: f.sector.sector_id,
        prover_id,
    };
    let requests = [request(&f.c1_json, f.sector.prover_id.as_ptr()), request(&garbage, f.sector.prover_id.as_ptr()), request(&f.c1_json, std::ptr::null())];
    let mut timings: Vec<Timings> = (0..3).map(|_| Timings { struct_size: std::mem::size_of::<Timings>() as u32, ..Default::default() }).collect();
    let mut results: Vec<cuzk_sector_result> = timings
        .iter_mut()
        .map(|t| cuzk_sector_result { status: Status::Internal, proof: std::ptr::null_mut(), error: std::ptr::null_mut(), timings: t })
        .collect();
    let mut err = std::ptr::null_mut();
    let status = cuzk_seal_commit_phase2_batch(engine.0, requests.as_ptr(), results.as_mut_ptr(), 3, std::ptr::null(), &mut err);
    assert_eq!(status, Status::Ok);
    assert!(err.is_null());
    assert_eq!(results[0].status, Status::Ok);
    assert!(results[0].error.is_null() && !results[0].proof.is_null());
    let proof = unsafe { std::slice::from_raw_parts((*results[0].proof).data, (*results[0].proof).len) }.to_vec();
    cuzk_bytes_free(results[0].proof);
    assert!(filecoin_verify(&f.sector, &proof), "the batch's proof verifies");
    assert!(timings[0].total_ns > 0 && timings[0].partitions == 1);
    for (i, expected) in [(1, Status::ParseError), (2, Status::NullArgument)] {
        assert_eq!(results[i].status, expected, "sector {i}");
        assert!(results[i].proof.is_null());
        let (status, message) = take_error(results[i].error);
        assert_eq!(status, expected, "sector {i}: {message}");
        assert_eq!(timings[i].total_ns, 0, "no timings for a failed sector");
    }

    // Bad calls fail as a whole; an empty batch does nothing.
    assert_eq!(cuzk_seal_commit_phase2_batch(engine.0, std::ptr::null(), results.as_mut_ptr(), 0, std::ptr::null(), std::ptr::null_mut()), Status::Ok);
    let status = cuzk_seal_commit_phase2_batch(engine.0, std::ptr::null(), results.as_mut_ptr(), 2, std::ptr::null(), &mut err);
    assert_eq!(take_error(err).0, Status::NullArgument);
    assert_eq!(status, Status::NullArgument);
    let status = cuzk_seal_commit_phase2_batch(std::ptr::null(), requests.as_ptr(), results.as_mut_ptr(), 3, std::ptr::null(), &mut err);
    assert_eq!((status, take_error(err).0), (Status::NullArgument, Status::NullArgument));
}
