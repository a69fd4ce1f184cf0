//! `post`: a WindowPoSt partition and a WinningPoSt of a sector size's exact shape, made from
//! made-up vanilla proofs and proven with a synthetic key (performance only), through the
//! engine's pipeline.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use cuzk::engine::PostKind;
use cuzk::engine::{Engine, ProveOptions};
use cuzk::internals::post::MadeUpPost;
use cuzk::internals::{ProofRequest, SynthesisPath};
use cuzk::timings::Timings;
use cuzk_tools::circuits::synthetic_key;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof};
use serde::Serialize;

use crate::record::{RunMemory, RunMemoryFields, TimingFields};
use crate::Bench;

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
fn post_proofs(seal: RegisteredSealProof) -> Result<(RegisteredPoStProof, RegisteredPoStProof)> {
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

/// Per kind (`--post window|winning|both`): the synthetic key made from one made-up proof (not
/// timed), then `--repeat` proofs, each a call of its own (warm: the key stays resident).
pub fn run(bench: &Bench) -> Result<()> {
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
            let memory = RunMemory::start();
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

/// A synthetic key for `request`'s circuit, from one synthesized proof (a, b, c on the host),
/// and the circuit's constraints.
fn made_up_key(engine: &Engine, request: &MadeUpPost) -> Result<(Arc<cuzk::ProvingKey>, usize)> {
    let synthesized = engine.prover().install(|| -> Result<_> {
        let mut t = Timings::new();
        let job = request.check(&mut t)?;
        let path = SynthesisPath::Shape {
            shape: Arc::new(job.extract_shape()?),
            defer_products: false,
        };
        Ok(job.synthesize(0, &path, None, &mut t)?)
    })?;
    let constraints = synthesized.num_constraints();
    let key = Arc::new(synthetic_key(&synthesized, 7));
    Ok((key, constraints))
}
