//! `porep-sector`: whole sectors of made-up partitions (synthetic key, performance only)
//! through the engine's pipeline.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use cuzk::engine::{Engine, ProveOptions};
use cuzk::internals::{porep, synthesize_with_shape, MadeUpSector, SectorInput, SynthesizedCircuit};
use cuzk::timings::Timings;
use cuzk::{with_tree_shape, CircuitShape};
use cuzk_tools::circuits::synthetic_key;
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredSealProof;
use serde::Serialize;

use crate::record::{rounded, RunMemory, RunMemoryFields, TimingFields};
use crate::Bench;

/// What a call proving `sectors` sectors measured.
#[derive(Serialize)]
struct SectorRun<'a> {
    #[serde(flatten)]
    timings: TimingFields<'a>,
    #[serde(flatten)]
    memory: RunMemoryFields,
    sectors: usize,
    partitions: usize,
    proving_lanes: usize,
    wall_per_sector_s: f64,
    /// The mean of `device_busy_fractions`; null without devices.
    gpu_busy_fraction: Option<f64>,
    /// Per device: the fraction of the call it was busy, and the partitions it proved (how the
    /// call spread over the GPUs).
    device_busy_fractions: Vec<f64>,
    device_partitions: Vec<u64>,
    synthesis_busy_fraction: f64,
    proving_busy_fraction: f64,
    partition_timings: Vec<PartitionTiming>,
}

/// One partition's timings in a sector call, in seconds; fields in alphabetical order, as the
/// records have always had them.
#[derive(Serialize)]
struct PartitionTiming {
    partition: i32,
    proving_wait_s: f64,
    sector: u32,
    synthesis_s: f64,
    total_s: f64,
    witness_s: f64,
}

/// Whole made-up sectors through the engine's pipeline (`Engine::prove_sectors`), several per
/// call: per call the wall time per sector, the busy fraction of the device and of each stage
/// over the call, every partition's timings. `--sectors 1` runs are the sequential baseline of
/// the batches' throughput.
pub fn run(bench: &Bench) -> Result<()> {
    let args = &bench.args;
    let proof = args.sector_size.0;
    let config = porep::porep_config(proof)?;
    let partitions = args.partitions.unwrap_or(usize::from(config.partitions));
    let short = args.sector_size.short();
    let engine = bench.engine()?;
    let key = porep_synthetic_key(&engine, proof, &format!("porep-{short}-sector"))?;
    for &sectors in &args.sectors {
        let label =
            format!("porep-{short}-sector x{sectors} ({partitions} partitions each; made-up vanilla proofs, synthetic key, performance only)");
        for run in 0..args.repeat {
            let inputs: Vec<SectorInput> = (0..sectors)
                .map(|i| {
                    SectorInput::MadeUp(MadeUpSector {
                        proof,
                        partitions,
                        seed: (run * 64 + i) as u64 + 1,
                        key: key.clone(),
                    })
                })
                .collect();
            let before = engine.status();
            let memory = RunMemory::start();
            let start = Instant::now();
            let results = engine.prove_sectors(&inputs, &ProveOptions::default())?;
            let wall = start.elapsed().as_secs_f64();
            let after = engine.status();
            let mut sum = Timings::new();
            let mut partition_timings = Vec::new();
            for result in results {
                let proven = result?;
                sum.merge(&proven.timings);
                partition_timings.extend(proven.partitions.iter().map(|p| PartitionTiming {
                    partition: p.partition_index,
                    proving_wait_s: p.proving_wait_ns as f64 / 1e9,
                    sector: p.sector_index,
                    synthesis_s: p.synthesis_ns as f64 / 1e9,
                    total_s: p.total_ns as f64 / 1e9,
                    witness_s: p.witness_ns as f64 / 1e9,
                }));
            }
            sum.total_ns = (wall * 1e9) as u64;
            let busy = |ns: u64| ns as f64 / 1e9 / wall;
            let (device_busy, device_partitions): (Vec<f64>, Vec<u64>) = before
                .devices
                .iter()
                .zip(&after.devices)
                .map(|(b, a)| (busy(a.busy_ns - b.busy_ns), a.proofs_done - b.proofs_done))
                .unzip();
            let measured = SectorRun {
                timings: TimingFields(&sum),
                memory: memory.fields(),
                sectors,
                partitions,
                proving_lanes: engine.default_proving_lanes(),
                wall_per_sector_s: rounded(wall / sectors as f64, 3),
                gpu_busy_fraction: match device_busy.len() {
                    0 => None,
                    n => Some(rounded(device_busy.iter().sum::<f64>() / n as f64, 3)),
                },
                device_busy_fractions: device_busy.iter().map(|&f| rounded(f, 3)).collect(),
                device_partitions,
                synthesis_busy_fraction: rounded(busy(after.pipeline.synthesis_busy_ns - before.pipeline.synthesis_busy_ns), 3),
                proving_busy_fraction: rounded(busy(after.pipeline.proving_busy_ns - before.pipeline.proving_busy_ns), 3),
                partition_timings,
            };
            bench.report(&label, run, wall, &measured, Some(&engine));
        }
    }
    Ok(())
}

/// A synthetic key for `proof`'s partition circuit, made from one made-up partition's sizes
/// and densities (not timed; `what` names the workload in the log line).
pub(crate) fn porep_synthetic_key(engine: &Engine, proof: RegisteredSealProof, what: &str) -> Result<Arc<cuzk::ProvingKey>> {
    let config = porep::porep_config(proof)?;
    let mut t = Timings::new();
    let shape = engine
        .porep_shape(proof, &mut t)?
        .context("made-up PoRep sectors need the R1CS synthesis path")?;
    let start = Instant::now();
    let synthesized = with_tree_shape!(proof, made_up_partition(engine, &config, &shape))?;
    let key = Arc::new(synthetic_key(&synthesized, 7));
    eprintln!(
        "{what}: {} constraints a partition, synthetic key made in {:.1} s (not timed)",
        shape.num_constraints(),
        start.elapsed().as_secs_f64()
    );
    Ok(key)
}

/// One made-up partition of `config`'s circuit, synthesized with a, b, c on the host.
fn made_up_partition<Tree: 'static + MerkleTreeTrait>(
    engine: &Engine,
    config: &filecoin_proofs::types::PoRepConfig,
    shape: &Arc<CircuitShape>,
) -> cuzk::error::Result<SynthesizedCircuit> {
    let circuit = porep::synthetic_partition_circuit::<Tree>(config, 0)?;
    engine
        .prover()
        .install(|| synthesize_with_shape(false, shape, &circuit, None, &mut Timings::new()))
}
