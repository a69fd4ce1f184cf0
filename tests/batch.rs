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
    let options = ProveOptions {
        randomness: Some(vec![(r, s)]),
        ..Default::default()
    };
    let sector = SectorRequest {
        c1_json: &f.c1_json,
        sector_id: f.sector.sector_id,
        prover_id: f.sector.prover_id,
    };
    let not_json = SectorRequest {
        c1_json: b"{not json",
        ..sector
    };
    let other_prover = SectorRequest {
        prover_id: [9; 32],
        ..sector
    };
    {
        let engine = RustEngine::acquire(EngineConfig {
            param_cache_dir: Some(f.params_dir.clone()),
            ..Default::default()
        })
        .unwrap();
        let results = engine
            .seal_commit_phase2_batch(&[sector, not_json, other_prover, sector], &options)
            .unwrap();
        assert_eq!(results.len(), 4);
        let single = engine
            .seal_commit_phase2(&f.c1_json, f.sector.sector_id, f.sector.prover_id, &options)
            .unwrap()
            .proof;
        let first = results[0].as_ref().expect("sector 0 proves");
        let last = results[3].as_ref().expect("sector 3 proves");
        assert!(
            first.proof == single && last.proof == single,
            "a batch's proofs differ from the sector proven alone (same r, s)"
        );
        assert!(filecoin_verify(&f.sector, &first.proof));
        assert_eq!(results[1].as_ref().unwrap_err().status, Status::ParseError);
        assert_eq!(
            results[2].as_ref().unwrap_err().status,
            Status::InvalidArgument,
            "C1 sealed for another prover"
        );
        // Per-sector timings: sector 3 waited for the sectors before it.
        let (t0, t3) = (&first.timings, &last.timings);
        assert_eq!((t0.partitions, t3.partitions), (1, 1));
        assert_eq!((t0.sector_index, t0.partition_index, t3.sector_index), (0, -1, 3));
        assert!(t0.synthesis_ns > 0 && t3.synthesis_ns > 0 && t0.verify_ns > 0);
        assert!(
            t3.queue_wait_ns >= t0.synthesis_ns,
            "sector 3 queued {} ns, sector 0 synthesized {} ns",
            t3.queue_wait_ns,
            t0.synthesis_ns
        );
        assert!(t3.total_ns > t0.total_ns);
        // Per-partition timings: the one partition's are the sector's less its sector-wide phases.
        for (proven, sector_index) in [(first, 0), (last, 3)] {
            let [p] = proven.partitions.as_slice() else {
                panic!("one partition's timings")
            };
            assert_eq!(
                (p.sector_index, p.partition_index, p.partitions, p.queue_wait_ns, p.verify_ns),
                (sector_index, 0, 1, 0, 0)
            );
            let t = &proven.timings;
            assert_eq!(
                (p.synthesis_ns, p.witness_ns, p.proving_wait_ns, p.msm_h_ns, p.assembly_ns),
                (t.synthesis_ns, t.witness_ns, t.proving_wait_ns, t.msm_h_ns, t.assembly_ns)
            );
            let phases = p.serial_ns();
            assert!(p.synthesis_ns > 0 && phases <= p.total_ns && p.total_ns < t.total_ns, "{p:?}");
        }
        // Occupancy: nothing left in a stage; both stages were busy.
        let pipeline = engine.status().pipeline;
        assert_eq!(
            (pipeline.partitions_synthesizing, pipeline.partitions_waiting, pipeline.partitions_proving),
            (0, 0, 0)
        );
        assert!(
            pipeline.synthesis_busy_ns >= t0.synthesis_ns && pipeline.proving_busy_ns >= t0.msm_h_ns,
            "{pipeline:?}"
        );
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
    let requests = [
        request(&f.c1_json, f.sector.prover_id.as_ptr()),
        request(&garbage, f.sector.prover_id.as_ptr()),
        request(&f.c1_json, std::ptr::null()),
    ];
    let mut timings: Vec<Timings> = (0..3)
        .map(|_| Timings {
            struct_size: std::mem::size_of::<Timings>() as u32,
            ..Default::default()
        })
        .collect();
    let mut results: Vec<cuzk_sector_result> = timings
        .iter_mut()
        .map(|t| cuzk_sector_result {
            status: Status::Internal,
            proof: std::ptr::null_mut(),
            error: std::ptr::null_mut(),
            timings: t,
        })
        .collect();
    // Room for more partitions than are proven: the rest stay as they were.
    let mut partitions: Vec<Timings> = (0..3)
        .map(|_| Timings {
            struct_size: std::mem::size_of::<Timings>() as u32,
            ..Default::default()
        })
        .collect();
    let options = cuzk_prove_options {
        partition_timings: partitions.as_mut_ptr(),
        partition_timings_len: partitions.len(),
        ..Default::default()
    };
    let mut err = std::ptr::null_mut();
    let status = cuzk_seal_commit_phase2_batch(engine.0, requests.as_ptr(), results.as_mut_ptr(), 3, &options, &mut err);
    assert_eq!(status, Status::Ok);
    let p = &partitions[0];
    assert_eq!(
        (p.version, p.sector_index, p.partition_index, p.partitions),
        (cuzk::timings::CUZK_TIMINGS_VERSION, 0, 0, 1)
    );
    assert!(p.synthesis_ns > 0 && p.total_ns > 0 && p.total_ns < timings[0].total_ns, "{p:?}");
    assert_eq!(timings[0].partition_index, -1, "a sector's timings");
    assert!(
        partitions[1..].iter().all(|p| p.total_ns == 0 && p.version == 0),
        "only one partition was proven"
    );
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
    assert_eq!(
        cuzk_seal_commit_phase2_batch(
            engine.0,
            std::ptr::null(),
            results.as_mut_ptr(),
            0,
            std::ptr::null(),
            std::ptr::null_mut()
        ),
        Status::Ok
    );
    let status = cuzk_seal_commit_phase2_batch(engine.0, std::ptr::null(), results.as_mut_ptr(), 2, std::ptr::null(), &mut err);
    assert_eq!(take_error(err).0, Status::NullArgument);
    assert_eq!(status, Status::NullArgument);
    let status = cuzk_seal_commit_phase2_batch(std::ptr::null(), requests.as_ptr(), results.as_mut_ptr(), 3, std::ptr::null(), &mut err);
    assert_eq!((status, take_error(err).0), (Status::NullArgument, Status::NullArgument));
}

#[test]
fn made_up_sector_partitions_flow_through_the_pipeline() {
    // Two made-up 2KiB partitions (a real partition's shape, made-up values) with a synthetic
    // key: the pipeline proves what the benchmark's porep-32g-sector workload proves, without a
    // sealed sector. Their proofs cannot verify, so none is self-verified.
    use cuzk::engine::{MadeUpSector, SectorInput};
    use filecoin_proofs_api::RegisteredSealProof;
    let f = fixture();
    let engine = RustEngine::acquire(EngineConfig {
        param_cache_dir: Some(f.params_dir.clone()),
        ..Default::default()
    })
    .unwrap();
    let proof = RegisteredSealProof::StackedDrg2KiBV1_1;
    let config = cuzk::internals::porep::porep_config(proof).unwrap();
    let shape = cuzk::internals::porep::synthetic_partition_circuit::<filecoin_proofs::constants::SectorShape2KiB>(&config, 0).unwrap();
    let key = std::sync::Arc::new(cuzk_tools::circuits::synthetic_key(&cuzk::internals::synthesize(shape, None).unwrap(), 3));
    let sector = MadeUpSector {
        proof,
        partitions: 2,
        seed: 5,
        key,
    };
    let mut rng = rand::thread_rng();
    let randomness = vec![(Scalar::random(&mut rng), Scalar::random(&mut rng)); 2];
    let options = ProveOptions {
        randomness: Some(randomness),
        ..Default::default()
    };
    let results = engine.prove_sectors(&[SectorInput::MadeUp(sector)], &options).unwrap();
    let [Ok(proven)] = results.as_slice() else { panic!("{results:?}") };
    assert_eq!(proven.proof.len(), 2 * 192);
    assert_ne!(proven.proof[..192], proven.proof[192..], "the partitions have their own values");
    let t = &proven.timings;
    assert_eq!(
        (t.partitions, t.verify_ns, t.input_check_ns, t.srs_load_ns),
        (2, 0, 0, 0),
        "nothing to check, load or verify: {t:?}"
    );
    let indices: Vec<_> = proven.partitions.iter().map(|p| (p.sector_index, p.partition_index)).collect();
    assert_eq!(indices, [(0, 0), (0, 1)]);
    let synthesis: u64 = proven.partitions.iter().map(|p| p.synthesis_ns).sum();
    assert_eq!(synthesis, t.synthesis_ns, "the sector's synthesis is its partitions'");
    // Partition 1 was synthesized while partition 0 was proven: their spans overlap, so they
    // add up to more than the sector's time from its first synthesis on.
    let spans: u64 = proven.partitions.iter().map(|p| p.total_ns).sum();
    assert!(
        spans > t.total_ns - t.queue_wait_ns - t.shape_extract_ns,
        "{:?} vs {t:?}",
        proven.partitions
    );
}
