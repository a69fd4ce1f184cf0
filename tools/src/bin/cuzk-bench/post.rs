//! `post`: WindowPoSt partitions and WinningPoSt.
//! - With `--fixture DIR` (`cuzk-fixtures post`): the fixture's real vanilla proofs, proven by
//!   the engine or (`--system bellperson`) by filecoin-proofs-api with bellperson's prover.
//! - Else a WindowPoSt partition and a WinningPoSt of the sector size's exact shape, made from
//!   made-up vanilla proofs and proven with a synthetic key (performance only); with
//!   `--during-batch N`, WinningPoSts submitted at random moments while a call proves N made-up
//!   PoRep sectors: their latencies against the batch.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{Context, Result};
use cuzk::engine::{PostKind, PostRequest, ProveOptions};
use cuzk::internals::post::MadeUpPost;
use cuzk::internals::{MadeUpSector, SectorInput};
use cuzk::timings::Timings;
use cuzk_tools::fixtures::{HexBytes, PostFixture};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof};
use serde::Serialize;

use crate::args::System;
use crate::record::{RunMemory, RunMemoryFields, TimingFields};
use crate::{made_up_key, Bench};

#[derive(Serialize)]
struct PostRun<'a> {
    #[serde(flatten)]
    timings: TimingFields<'a>,
    #[serde(flatten)]
    memory: RunMemoryFields,
    kind: &'static str,
    /// WindowPoSt: the partition's sectors when fewer than a full partition's.
    partition_sectors: Option<usize>,
    constraints: usize,
}

/// The current WindowPoSt and WinningPoSt proofs of a seal proof's sector size.
pub(crate) fn post_proofs(seal: RegisteredSealProof) -> Result<(RegisteredPoStProof, RegisteredPoStProof)> {
    use filecoin_proofs::constants as c;
    use RegisteredPoStProof::*;
    Ok(match u64::from(seal.sector_size()) {
        c::SECTOR_SIZE_2_KIB => (StackedDrgWindow2KiBV1_2, StackedDrgWinning2KiBV1),
        c::SECTOR_SIZE_8_MIB => (StackedDrgWindow8MiBV1_2, StackedDrgWinning8MiBV1),
        c::SECTOR_SIZE_512_MIB => (StackedDrgWindow512MiBV1_2, StackedDrgWinning512MiBV1),
        c::SECTOR_SIZE_32_GIB => (StackedDrgWindow32GiBV1_2, StackedDrgWinning32GiBV1),
        c::SECTOR_SIZE_64_GIB => (StackedDrgWindow64GiBV1_2, StackedDrgWinning64GiBV1),
        other => anyhow::bail!("no PoSt for {other} byte sectors"),
    })
}

pub fn run(bench: &Bench) -> Result<()> {
    match (&bench.args.fixture, bench.args.during_batch) {
        (Some(fixture), _) => real(bench, fixture),
        (None, 0) => made_up(bench),
        (None, sectors) => during_batch(bench, sectors),
    }
}

/// One proof of a fixture: its label, kind, registered proof, vanilla proofs, partition index.
type FixtureProof = (String, PostKind, RegisteredPoStProof, Vec<Vec<u8>>, usize);

/// The fixture's WindowPoSt partitions and WinningPoSt, `--repeat` times each.
fn real(bench: &Bench, fixture: &Path) -> Result<()> {
    let args = &bench.args;
    let params = args.params.as_ref().context("post --fixture needs --params")?;
    // filecoin-proofs reads its parameter directory once, from the environment; set it while
    // this process is still single-threaded.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params);
    let f: PostFixture = serde_json::from_slice(&std::fs::read(fixture.join("post.json"))?)?;
    let engine = match args.system {
        System::Bellperson => None,
        _ => Some(bench.engine()?),
    };
    let bytes = |hex: &[HexBytes]| hex.iter().map(|h| h.0.clone()).collect::<Vec<_>>();
    let mut proofs: Vec<FixtureProof> = f
        .window
        .partitions
        .iter()
        .map(|p| {
            let label = format!(
                "post-window {:?} partition {} ({} sectors)",
                f.window.registered_proof,
                p.index,
                p.sectors.len()
            );
            (label, PostKind::Window, f.window.registered_proof, bytes(&p.vanilla_proofs), p.index)
        })
        .collect();
    let winning_label = format!("post-winning {:?}", f.winning.registered_proof);
    proofs.push((
        winning_label,
        PostKind::Winning,
        f.winning.registered_proof,
        bytes(&f.winning.vanilla_proofs),
        0,
    ));
    for (label, kind, proof, vanilla, partition_index) in &proofs {
        for run in 0..args.repeat {
            let slices: Vec<&[u8]> = vanilla.iter().map(Vec::as_slice).collect();
            let start = Instant::now();
            let timings = match &engine {
                Some(engine) => {
                    let request = PostRequest {
                        kind: *kind,
                        registered_proof: *proof,
                        prover_id: f.prover_id,
                        randomness: f.randomness,
                        vanilla_proofs: &slices,
                        partition_index: *partition_index,
                    };
                    Some(engine.generate_post(&request, &ProveOptions::default())?.timings)
                }
                None => {
                    use filecoin_proofs_api::post;
                    match kind {
                        PostKind::Window => {
                            post::generate_single_window_post_with_vanilla(*proof, &f.randomness, f.prover_id, vanilla, *partition_index)?;
                        }
                        PostKind::Winning => {
                            post::generate_winning_post_with_vanilla(*proof, &f.randomness, f.prover_id, vanilla)?;
                        }
                    }
                    None
                }
            };
            let wall = start.elapsed().as_secs_f64();
            bench.report(label, run, wall, &timings.as_ref().map(TimingFields), engine.as_deref());
        }
    }
    Ok(())
}

/// Per kind (`--post window|winning|both`): the synthetic key made from one made-up proof (not
/// timed), then `--repeat` proofs, each a call of its own (warm: the key stays resident).
fn made_up(bench: &Bench) -> Result<()> {
    let args = &bench.args;
    let (window, winning) = post_proofs(args.sector_size.0)?;
    let short = args.sector_size.short();
    let engine = bench.engine()?;
    for (kind, proof) in [(PostKind::Window, window), (PostKind::Winning, winning)] {
        if !args.post_kinds.contains(&kind) {
            continue;
        }
        let sectors = args.partition_sectors.unwrap_or(usize::MAX);
        let made_up = |seed: u64, key| MadeUpPost {
            kind,
            proof,
            sectors,
            seed,
            key,
        };
        let start = Instant::now();
        let (key, constraints) = made_up_key(&engine, &made_up(1, None))?;
        let name = format!("{kind:?}").to_lowercase();
        eprintln!(
            "post-{name}-{short}: {constraints} constraints, synthetic key made in {:.1} s (not timed)",
            start.elapsed().as_secs_f64()
        );
        let label = format!("post-{name}-{short} (made-up vanilla proofs, synthetic key, performance only)");
        for run in 0..args.repeat {
            let request = made_up(run as u64 + 2, Some(key.clone()));
            let mut memory = RunMemory::start();
            let start = Instant::now();
            let proven = engine.prove_requests(&[&request], &ProveOptions::default())?.remove(0)?;
            let wall = start.elapsed().as_secs_f64();
            let measured = PostRun {
                timings: TimingFields(&proven.timings),
                memory: memory.fields(),
                kind: if kind == PostKind::Window { "window" } else { "winning" },
                partition_sectors: args.partition_sectors.filter(|_| kind == PostKind::Window),
                constraints,
            };
            bench.report(&label, run, wall, &measured, Some(&engine));
        }
    }
    Ok(())
}

/// WinningPoSt latency while a batch runs.
#[derive(Serialize)]
struct DuringBatch {
    batch_sectors: usize,
    batch_wall_s: f64,
    /// Warm WinningPoSts with nothing else running, before the batch.
    idle_s: Vec<f64>,
    /// Submitted at random moments while the batch ran: submission to proof.
    during_s: Vec<f64>,
    /// Of each: the wait for the device turn (`proving_wait`), synthesis (witness, products),
    /// prep_msm, and the GPU phases once in the turn.
    during_turn_wait_s: Vec<f64>,
    during_synthesis_s: Vec<f64>,
    during_prep_msm_s: Vec<f64>,
    during_gpu_s: Vec<f64>,
    during_p50_s: f64,
    during_p99_s: f64,
    during_max_s: f64,
    /// The batch's partitions: each one's H (NTT and MSM), and its proving wait (for the turn,
    /// and making way for the WinningPoSts).
    batch_ntt_s: Vec<f64>,
    batch_msm_h_s: Vec<f64>,
    batch_proving_wait_s: Vec<f64>,
}

/// `sectors` made-up PoRep sectors of `--sector-size` in one call, and meanwhile WinningPoSts
/// of the same sector size (made-up, synthetic key) one after another with random pauses
/// (uniform, 0 to 2 s) until the batch ends: how long block production waits behind sealing.
/// Each WinningPoSt submitted during the batch: its latency and its timings.
type WinningRuns = Vec<(f64, Timings)>;

fn during_batch(bench: &Bench, sectors: usize) -> Result<()> {
    use rand::Rng;
    let args = &bench.args;
    let seal = args.sector_size.0;
    let (_, winning) = post_proofs(seal)?;
    let short = args.sector_size.short();
    let engine = bench.engine()?;
    let porep_key = crate::porep_sector::porep_synthetic_key(&engine, seal, &format!("porep-{short}-sector"))?;
    let made_up = |seed: u64, key| MadeUpPost {
        kind: PostKind::Winning,
        proof: winning,
        sectors: 1,
        seed,
        key,
    };
    let (winning_key, constraints) = made_up_key(&engine, &made_up(1, None))?;
    eprintln!("post-winning-{short}: {constraints} constraints");
    let prove_winning = |seed: u64| -> Result<(f64, Timings)> {
        let start = Instant::now();
        let proven = engine
            .prove_requests(&[&made_up(seed, Some(winning_key.clone()))], &ProveOptions::default())?
            .remove(0)?;
        Ok((start.elapsed().as_secs_f64(), proven.timings))
    };
    // Warm: the keys resident, the shapes extracted.
    let idle: Vec<f64> = (0..5).map(|i| prove_winning(100 + i).map(|(wall, _)| wall)).collect::<Result<_>>()?;
    let partitions = usize::from(cuzk::internals::porep::porep_config(seal)?.partitions);
    let batch: Vec<SectorInput> = (0..sectors)
        .map(|i| {
            SectorInput::MadeUp(MadeUpSector {
                proof: seal,
                partitions,
                seed: i as u64 + 1,
                key: porep_key.clone(),
            })
        })
        .collect();
    let done = AtomicBool::new(false);
    let start = Instant::now();
    let (batch_wall, batch_partitions, during) = std::thread::scope(|scope| -> Result<(f64, Vec<Timings>, WinningRuns)> {
        let batch = scope.spawn(|| {
            let results = engine.prove_sectors(&batch, &ProveOptions::default());
            done.store(true, Ordering::SeqCst);
            results.map(|r| (r, start.elapsed().as_secs_f64()))
        });
        let mut rng = rand::thread_rng();
        let mut during = Vec::new();
        let mut seed = 1000;
        while !done.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_secs_f64(rng.gen_range(0.0..2.0)));
            if done.load(Ordering::SeqCst) {
                break;
            }
            seed += 1;
            during.push(prove_winning(seed)?);
        }
        let (results, wall) = batch.join().expect("the batch thread")?;
        let mut partitions = Vec::new();
        for result in results {
            partitions.extend(result?.partitions);
        }
        Ok((wall, partitions, during))
    })?;
    let secs = |ns: u64| ns as f64 / 1e9;
    // A WinningPoSt's MSMs run at once: their wall time, not the sum of their overlapping ones.
    let gpu = |t: &Timings| secs(t.witness_upload_ns + t.spmv_ns * t.spmv_on_device as u64 + t.ntt_ns + t.msms_ns());
    let phase = |f: &dyn Fn(&Timings) -> f64| during.iter().map(|(_, t)| f(t)).collect::<Vec<f64>>();
    let (turn_wait, synthesis, prep) = (
        phase(&|t| secs(t.proving_wait_ns)),
        phase(&|t| secs(t.synthesis_ns)),
        phase(&|t| secs(t.prep_msm_ns)),
    );
    let gpu_s = phase(&gpu);
    let during: Vec<f64> = during.iter().map(|(wall, _)| *wall).collect();
    let mut sorted = during.clone();
    sorted.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        sorted
            .get(((sorted.len() as f64 * q).ceil() as usize).saturating_sub(1))
            .copied()
            .unwrap_or(0.0)
    };
    let measured = DuringBatch {
        batch_sectors: sectors,
        batch_wall_s: batch_wall,
        idle_s: idle,
        during_p50_s: quantile(0.5),
        during_p99_s: quantile(0.99),
        during_max_s: sorted.last().copied().unwrap_or(0.0),
        during_s: during,
        during_turn_wait_s: turn_wait,
        during_synthesis_s: synthesis,
        during_prep_msm_s: prep,
        during_gpu_s: gpu_s,
        batch_ntt_s: batch_partitions.iter().map(|t| secs(t.ntt_ns)).collect(),
        batch_msm_h_s: batch_partitions.iter().map(|t| secs(t.msm_h_ns)).collect(),
        batch_proving_wait_s: batch_partitions.iter().map(|t| secs(t.proving_wait_ns)).collect(),
    };
    let label = format!("post-winning-{short} during a {sectors}-sector porep-{short} batch (made-up, synthetic keys, performance only)");
    bench.report(&label, 0, batch_wall, &measured, Some(&engine));
    Ok(())
}
