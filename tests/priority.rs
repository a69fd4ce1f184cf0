//! Priorities, in a process of its own (the engine is one per process): a call of a higher
//! class (WindowPoSt, WinningPoSt) takes the backend's turn at the next partition boundary,
//! before sealing calls that were waiting for it longer. On the CPU backend (explicitly), whose turn orders the MSMs of
//! partitions exactly as a device's turn orders its GPU phases.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk::engine::Priority;
use cuzk::engine::{Engine, EngineConfig, MadeUpSector, ProveOptions, SectorInput};
use filecoin_proofs::constants::SectorShape2KiB;
use filecoin_proofs_api::RegisteredSealProof;

/// Polls the engine until `ready` holds for the number of partitions in the proving stage.
fn wait_for_proving(engine: &Engine, ready: impl Fn(u64) -> bool) {
    let start = Instant::now();
    while !ready(engine.status().pipeline.partitions_proving) {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "the pipeline never reached the expected state"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn higher_classes_overtake_waiting_sealing_calls_at_the_partition_boundary() {
    let engine = Engine::acquire(EngineConfig {
        cpu_only: true,
        ..Default::default()
    })
    .unwrap();
    // Made-up 2KiB partitions with a synthetic key: no parameters needed, and every partition
    // takes the same time to prove.
    let proof = RegisteredSealProof::StackedDrg2KiBV1_1;
    let config = cuzk::internals::porep::porep_config(proof).unwrap();
    let circuit = cuzk::internals::porep::synthetic_partition_circuit::<SectorShape2KiB>(&config, 0).unwrap();
    let key = Arc::new(cuzk_tools::circuits::synthetic_key(
        &cuzk::internals::synthesize(circuit, None).unwrap(),
        3,
    ));
    let sector = |seed| {
        [SectorInput::MadeUp(MadeUpSector {
            proof,
            partitions: 1,
            seed,
            key: key.clone(),
        })]
    };
    // One class after the other: the two must not share the turn.
    for class in [Priority::WindowPost, Priority::WinningPost] {
        overtakes(&engine, &sector, class);
    }
}

/// Two sealing calls, then one of `class`: the latter proves second.
fn overtakes(engine: &Engine, sector: &(dyn Fn(u64) -> [SectorInput<'static>; 1] + Sync), class: Priority) {
    let normal = ProveOptions::default();
    let high = ProveOptions {
        priority: Some(class),
        ..Default::default()
    };

    let start = Instant::now();
    let prove = |seed, options: &ProveOptions| {
        let proven = engine
            .prove_sectors(&sector(seed), options)
            .unwrap()
            .remove(0)
            .expect("the made-up sector proves");
        (start.elapsed(), proven)
    };
    let (first, second, urgent) = std::thread::scope(|scope| {
        // The first normal call holds the turn: its partition is proving.
        let first = scope.spawn(|| prove(1, &normal));
        wait_for_proving(engine, |n| n == 1);
        // The second normal call's partition waits for the turn.
        let second = scope.spawn(|| prove(2, &normal));
        wait_for_proving(engine, |n| n == 2);
        // The high-priority call arrives last; its partition is synthesized while the first
        // call still proves (a 2KiB partition's MSMs take ~40 s on 2 cores, its synthesis ~2 s).
        let urgent = scope.spawn(|| prove(3, &high));
        (first.join().unwrap(), second.join().unwrap(), urgent.join().unwrap())
    });
    let report = format!(
        "done at: first {:.1?}, second {:.1?}, high {:.1?}; turn waits: second {:.1} s, high {:.1} s",
        first.0,
        second.0,
        urgent.0,
        second.1.timings.proving_wait_ns as f64 / 1e9,
        urgent.1.timings.proving_wait_ns as f64 / 1e9
    );
    eprintln!("{class:?}: {report}");
    // In arrival order the second call would prove before the high-priority one.
    assert!(
        first.0 < urgent.0 && urgent.0 < second.0,
        "the high-priority call did not overtake: {report}"
    );
    // The second call waited for the first partition and all of the high-priority one.
    assert!(second.1.timings.proving_wait_ns > urgent.1.timings.proving_wait_ns, "{report}");
}
