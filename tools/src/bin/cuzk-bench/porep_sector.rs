//! `porep-sector`: whole sectors of made-up partitions (synthetic key, performance only)
//! through the engine's pipeline.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use cuzk::engine::{Engine, PartitionSpan, ProveOptions};
use cuzk::internals::{porep, synthesize_with_shape, MadeUpSector, SectorInput, SynthesizedCircuit};
use cuzk::timings::Timings;
use cuzk::{with_tree_shape, CircuitShape};
use cuzk_tools::circuits::KeySizes;
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredSealProof;
use serde::Serialize;

use crate::circuit::write_key;
use crate::record::{rounded, seconds, since_start_s, RunMemory, RunMemoryFields, TimingFields};
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
    /// Times the engine returned freed host memory to the OS during the call (kept beyond
    /// what its partitions reuse; status `host_memory_trims`).
    host_memory_trims: u64,
    /// From the call's start to the first sector's last partition proven.
    first_sector_proven_s: f64,
    /// From the process's start to the call's first partition proven (key and shape loads
    /// included when the call is the process's first).
    time_to_first_proof_s: f64,
    partition_timings: Vec<PartitionTiming>,
}

/// One partition's timings in a sector call, in seconds; fields in alphabetical order, as the
/// records have always had them. The `*_at_s` fields are times from the call's start and, with
/// the durations, what scripts/timeline-svg.py draws: synthesis from `synthesis_at_s` to
/// `synthesized_at_s`, the wait for a free lane until `proving_at_s`, then on `lane` the host
/// work before the device turn (`host_prep_s`), the wait for the turn (`turn_wait_s`), the
/// device phases (`device_s`), and the rest until `proven_at_s`.
#[derive(Serialize)]
struct PartitionTiming {
    device_s: f64,
    host_prep_s: f64,
    lane: usize,
    partition: i32,
    proven_at_s: f64,
    proving_at_s: f64,
    proving_wait_s: f64,
    sector: u32,
    synthesis_at_s: f64,
    synthesis_s: f64,
    synthesized_at_s: f64,
    total_s: f64,
    turn_wait_s: f64,
    witness_s: f64,
}

impl PartitionTiming {
    fn new(p: &Timings, span: &PartitionSpan) -> Self {
        let s = |ns: u64| seconds(ns, 4);
        let spmv_on_device = if p.spmv_on_device == 1 { p.spmv_ns } else { 0 };
        let device = p.srs_upload_ns + p.shape_upload_ns + p.pin_h2d_ns + spmv_on_device + p.ntt_ns + p.msms_ns();
        // The proving wait holds the wait for a free lane, then the wait for the device turn.
        let lane_wait = span.proving_start_ns - span.synthesized_ns;
        PartitionTiming {
            device_s: s(device),
            host_prep_s: s(p.prep_msm_ns + p.witness_upload_ns),
            lane: span.lane,
            partition: p.partition_index,
            proven_at_s: s(span.proven_ns),
            proving_at_s: s(span.proving_start_ns),
            proving_wait_s: s(p.proving_wait_ns),
            sector: p.sector_index,
            synthesis_at_s: s(span.synthesis_start_ns),
            synthesis_s: s(p.synthesis_ns),
            synthesized_at_s: s(span.synthesized_ns),
            total_s: s(p.total_ns),
            turn_wait_s: s(p.proving_wait_ns.saturating_sub(lane_wait)),
            witness_s: s(p.witness_ns),
        }
    }
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
    let what = format!("porep-{short}-sector");
    let (key, key_source) = match &args.write_key {
        None => (porep_synthetic_key(&engine, proof, &what)?, "synthetic key"),
        Some(path) => (key_from_file(&engine, proof, path, &what)?, "synthetic key read from its params file"),
    };
    for &sectors in &args.sectors {
        let label = format!("porep-{short}-sector x{sectors} ({partitions} partitions each; made-up vanilla proofs, {key_source}, performance only)");
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
            let mut memory = RunMemory::start();
            let call_after_s = since_start_s();
            let start = Instant::now();
            let results = engine.prove_sectors(&inputs, &ProveOptions::default())?;
            let wall = start.elapsed().as_secs_f64();
            let after = engine.status();
            let mut sum = Timings::new();
            let mut partition_timings = Vec::new();
            let mut first_sector_proven_ns = u64::MAX;
            let mut first_proven_ns = u64::MAX;
            for result in results {
                let proven = result?;
                sum.merge(&proven.timings);
                partition_timings.extend(proven.partitions.iter().zip(&proven.spans).map(|(p, span)| PartitionTiming::new(p, span)));
                let last = proven.spans.iter().map(|span| span.proven_ns).max().unwrap_or_default();
                first_sector_proven_ns = first_sector_proven_ns.min(last);
                first_proven_ns = proven.spans.iter().map(|span| span.proven_ns).fold(first_proven_ns, u64::min);
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
                host_memory_trims: after.host_memory_trims - before.host_memory_trims,
                first_sector_proven_s: seconds(first_sector_proven_ns, 3),
                time_to_first_proof_s: rounded(call_after_s + first_proven_ns as f64 / 1e9, 3),
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
    let start = Instant::now();
    let key = Arc::new(porep_key_sizes(engine, proof)?.synthetic_key(7));
    // The made-up partition that gave the key's sizes (a, b, c on the host and its witness:
    // ≈ 17 GB at 32GiB) is freed; its pages go back to the OS so that the runs' memory is the
    // engine's (run 114 began its call with them: docs/PERFORMANCE.md).
    cuzk::internals::return_free_memory();
    eprintln!("{what}: synthetic key made in {:.1} s (not timed)", start.elapsed().as_secs_f64());
    Ok(key)
}

/// The query sizes of `proof`'s partition circuit's key, from one made-up partition.
pub(crate) fn porep_key_sizes(engine: &Engine, proof: RegisteredSealProof) -> Result<KeySizes> {
    let config = porep::porep_config(proof)?;
    let mut t = Timings::new();
    let shape = engine
        .porep_shape(proof, &mut t)?
        .context("made-up PoRep sectors need the R1CS synthesis path")?;
    let synthesized = with_tree_shape!(proof, made_up_partition(engine, &config, &shape))?;
    Ok(KeySizes::of(&synthesized))
}

/// The synthetic key for `proof` as the engine reads a parameter file: written to `path` in
/// bellperson's format unless the file is there (not timed), then opened from it, so that its
/// points are decoded from the file where a call needs them (`ProvingKey::open`).
fn key_from_file(engine: &Engine, proof: RegisteredSealProof, path: &Path, what: &str) -> Result<Arc<cuzk::ProvingKey>> {
    if !path.exists() {
        let key = porep_synthetic_key(engine, proof, what)?;
        write_key(&key, path, what)?;
        // Its pages go back to the OS too.
        drop(key);
        cuzk::internals::return_free_memory();
    }
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    Ok(Arc::new(
        cuzk::ProvingKey::open(file, path.display().to_string()).with_context(|| format!("reading {}", path.display()))?,
    ))
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
