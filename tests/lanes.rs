//! Proving lanes, in a process of its own (its engine is configured with two): a sector's
//! partitions are proven two at a time, as over two GPUs, and the sector's proof is still its
//! partitions' proofs in partition order, the same bytes as each partition proven alone.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use blstrs::Scalar;
use cuzk::engine::{Engine, EngineConfig, MadeUpSector, ProveOptions, SectorInput};
use cuzk::timings::Timings;
use cuzk::CircuitOptions;
use filecoin_proofs::constants::SectorShape2KiB;
use filecoin_proofs_api::RegisteredSealProof;

#[test]
fn two_lanes_prove_partitions_at_once_and_keep_their_order() {
    let engine = Engine::acquire(EngineConfig {
        cpu_only: true,
        proving_lanes: 2,
        ..Default::default()
    })
    .unwrap();
    let proof = RegisteredSealProof::StackedDrg2KiBV1_1;
    let config = cuzk::internals::porep::porep_config(proof).unwrap();
    let circuit = |seed| cuzk::internals::porep::synthetic_partition_circuit::<SectorShape2KiB>(&config, seed).unwrap();
    let key = Arc::new(cuzk_tools::circuits::synthetic_key(
        &cuzk::internals::synthesize(circuit(0), None).unwrap(),
        3,
    ));
    let randomness: Vec<(Scalar, Scalar)> = (0..2u64).map(|k| (Scalar::from(11 + k), Scalar::from(23 + k))).collect();
    let options = ProveOptions {
        randomness: Some(randomness.clone()),
        ..Default::default()
    };
    let seed = 5;
    let sector = SectorInput::MadeUp(MadeUpSector {
        proof,
        partitions: 2,
        seed,
        key: key.clone(),
    });

    // The most partitions in the proving stage at once, sampled while the call runs.
    let (most_proving, done) = (AtomicU64::new(0), AtomicBool::new(false));
    let proven = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                most_proving.fetch_max(engine.status().pipeline.partitions_proving, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let proven = engine.prove_sectors(&[sector], &options).unwrap().remove(0);
        done.store(true, Ordering::SeqCst);
        proven.expect("the made-up sector proves")
    });
    assert_eq!(most_proving.into_inner(), 2, "both partitions were in the proving stage at once");

    // Each partition alone (classic synthesis, the values MadeUpSector documents), same r, s.
    let mut expected = Vec::new();
    for (k, &rs) in randomness.iter().enumerate() {
        let alone = engine
            .prover()
            .prove(&key, circuit((seed << 8) + k as u64 + 1), &fixed(rs), &mut Timings::new())
            .unwrap();
        alone.write(&mut expected).unwrap();
    }
    assert!(proven.proof == expected, "the sector's proof is not its partitions' proofs in order");
    let order: Vec<i32> = proven.partitions.iter().map(|t| t.partition_index).collect();
    assert_eq!(order, [0, 1]);

    // Each partition's span: its stages in order, synthesis one partition after the other,
    // proving on two lanes (both partitions were proving at once).
    let spans = &proven.spans;
    assert_eq!(spans.len(), 2, "{spans:?}");
    for span in spans {
        assert!(
            span.synthesis_start_ns <= span.synthesized_ns && span.synthesized_ns <= span.proving_start_ns && span.proving_start_ns < span.proven_ns,
            "{span:?}"
        );
        assert!(span.lane < 2, "{span:?}");
    }
    assert!(spans[0].synthesized_ns <= spans[1].synthesis_start_ns, "{spans:?}");
    assert_ne!(spans[0].lane, spans[1].lane, "{spans:?}");
}

fn fixed(rs: (Scalar, Scalar)) -> CircuitOptions {
    CircuitOptions {
        randomness: Some(rs),
        cancel: None,
    }
}
