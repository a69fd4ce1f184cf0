//! The pipeline's host memory budget, in a process of its own (the peak RSS it measures is its
//! own): a partition is synthesized only when its share fits the budget (one at a time always
//! does), so with a one-byte budget a sector's partitions never overlap and the call holds one
//! synthesized partition at a time; with a large budget a call still holds at most one
//! partition more than its proving lanes.

use std::sync::Arc;

use cuzk::engine::{Engine, EngineConfig, MadeUpSector, ProveOptions, SectorInput};
use filecoin_proofs::constants::SectorShape2KiB;
use filecoin_proofs_api::RegisteredSealProof;

/// A `kB` line of /proc/self/status, in bytes.
fn proc_status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .unwrap_or_else(|| panic!("no {field}"));
    line.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap() * 1024
}

#[test]
fn a_one_byte_budget_keeps_one_partition_in_memory() {
    let engine = Engine::acquire(EngineConfig {
        host_memory_budget: 1,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(engine.status().pipeline_memory_budget, 1);
    // Two made-up 2KiB partitions with a synthetic key (no parameters needed).
    let proof = RegisteredSealProof::StackedDrg2KiBV1_1;
    let config = cuzk::internals::porep::porep_config(proof).unwrap();
    let circuit = cuzk::internals::porep::synthetic_partition_circuit::<SectorShape2KiB>(&config, 0).unwrap();
    let key = Arc::new(cuzk_tools::circuits::synthetic_key(
        &cuzk::internals::synthesize(circuit, None).unwrap(),
        3,
    ));
    // What the engine counts for one synthesized partition on the CPU backend: a, b, c over
    // the domain and the assignment, 32 bytes a scalar.
    let sizes = key.query_sizes();
    let partition_bytes = 32 * (3 * sizes.domain() + sizes.variables());

    std::fs::write("/proc/self/clear_refs", "5").expect("resetting the peak RSS (clear_refs 5)");
    let baseline = proc_status_bytes("VmRSS");
    let sector = SectorInput::MadeUp(MadeUpSector {
        proof,
        partitions: 2,
        seed: 9,
        key: Arc::clone(&key),
    });
    let results = engine.prove_sectors(&[sector], &ProveOptions::default()).unwrap();
    let peak_rise = proc_status_bytes("VmHWM") - baseline;
    let proven = results.into_iter().next().unwrap().expect("the made-up sector proves");

    let status = engine.status();
    assert_eq!(status.pipeline_memory_peak, partition_bytes, "the budget held one partition at a time");
    assert_eq!(status.pipeline_memory_in_use, 0);
    // Partition 1 was synthesized only once partition 0 was proven: their spans do not overlap.
    let spans: u64 = proven.partitions.iter().map(|p| p.total_ns).sum();
    assert!(
        spans <= proven.timings.total_ns,
        "partitions overlapped: {:?} in {} ns",
        proven.partitions,
        proven.timings.total_ns
    );
    // One partition and the CPU prover's scratch (measured 826 MiB for a 465 MiB partition on
    // 2 cores); a second partition held at once would add another 465 MiB.
    eprintln!("peak RSS rise {} MiB, one partition {} MiB", peak_rise >> 20, partition_bytes >> 20);
    assert!(
        peak_rise < partition_bytes * 5 / 2,
        "peak RSS rose {peak_rise} bytes; one partition is {partition_bytes}"
    );
    drop(engine);

    // A budget of many partitions and one proving lane: synthesis (faster than the CPU's
    // proving) runs one partition ahead of the lane, no further: partition 2 is synthesized
    // only once partition 0 is proven.
    let engine = Engine::acquire(EngineConfig {
        host_memory_budget: 100 * partition_bytes,
        proving_lanes: 1,
        ..Default::default()
    })
    .unwrap();
    let sector = SectorInput::MadeUp(MadeUpSector {
        proof,
        partitions: 3,
        seed: 10,
        key,
    });
    let results = engine.prove_sectors(&[sector], &ProveOptions::default()).unwrap();
    let proven = results.into_iter().next().unwrap().expect("the made-up sector proves");
    let status = engine.status();
    assert_eq!(status.pipeline_memory_peak, 2 * partition_bytes, "one partition in the lane, one ahead");
    assert_eq!(status.pipeline_memory_in_use, 0);
    let spans = &proven.spans;
    assert!(spans[2].synthesis_start_ns >= spans[0].proven_ns, "{spans:?}");
}
