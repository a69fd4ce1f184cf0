//! Priorities, in a process of its own (the engine is one per process): a call of a higher
//! class (WindowPoSt, WinningPoSt) takes the backend's turn at the next partition boundary,
//! before sealing calls that were waiting for it longer, and WinningPoSt before WindowPoSt. On
//! the CPU backend (explicitly), whose turn orders the MSMs of partitions exactly as a device's
//! turn orders its GPU phases.

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
    let normal = ProveOptions::default();
    let class = |priority| ProveOptions {
        priority: Some(priority),
        ..Default::default()
    };
    let (window_options, winning_options) = (class(Priority::WindowPost), class(Priority::WinningPost));

    let start = Instant::now();
    let prove = |seed, options: &ProveOptions| {
        let proven = engine
            .prove_sectors(&sector(seed), options)
            .unwrap()
            .remove(0)
            .expect("the made-up sector proves");
        (start.elapsed(), proven)
    };
    // Each call is let in once the previous one's partition is in the proving stage, so that
    // the arrival order is certain. Each partition is synthesized while the first call still
    // proves (a 2KiB partition's MSMs take ~40 s on 2 cores, its synthesis ~2 s).
    let (first, second, window, winning) = std::thread::scope(|scope| {
        // The first sealing call holds the turn: its partition is proving.
        let first = scope.spawn(|| prove(1, &normal));
        wait_for_proving(&engine, |n| n == 1);
        // The second sealing call's partition waits for the turn.
        let second = scope.spawn(|| prove(2, &normal));
        wait_for_proving(&engine, |n| n == 2);
        // Then a WindowPoSt, and last a WinningPoSt.
        let window = scope.spawn(|| prove(3, &window_options));
        wait_for_proving(&engine, |n| n == 3);
        let winning = scope.spawn(|| prove(4, &winning_options));
        (
            first.join().unwrap(),
            second.join().unwrap(),
            window.join().unwrap(),
            winning.join().unwrap(),
        )
    });
    let wait_s = |p: &(Duration, cuzk::engine::ProofOutput)| p.1.timings.proving_wait_ns as f64 / 1e9;
    let report = format!(
        "done at: first {:.1?}, second {:.1?}, WindowPoSt {:.1?}, WinningPoSt {:.1?}; turn waits: second {:.1} s, \
         WindowPoSt {:.1} s, WinningPoSt {:.1} s",
        first.0,
        second.0,
        window.0,
        winning.0,
        wait_s(&second),
        wait_s(&window),
        wait_s(&winning)
    );
    eprintln!("{report}");
    // In arrival order the second call would prove before both; of the two PoSt calls waiting
    // at the same boundary, WinningPoSt (the higher class) proves first.
    assert!(
        first.0 < winning.0 && winning.0 < window.0 && window.0 < second.0,
        "the higher classes did not overtake in class order: {report}"
    );
    // The second call waited for every other partition.
    assert!(wait_s(&second) > wait_s(&window) && wait_s(&window) > wait_s(&winning), "{report}");
}
