//! `update`: SnapDeals update proofs.
//! - With `--fixture DIR` (`cuzk-fixtures update`): the fixture's real vanilla proofs, proven by
//!   the engine or (`--system bellperson`) by filecoin-proofs-api with bellperson's prover.
//! - Else an update of the sector size's exact shape (`--partitions P` of its partitions), made
//!   from made-up vanilla proofs and proven with a synthetic key (performance only).

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk::engine::{ProveOptions, UpdateRequest};
use cuzk::internals::MadeUpUpdate;
use cuzk_tools::fixtures::UpdateFixture;
use filecoin_proofs_api::PartitionProofBytes;
use filecoin_proofs_api::RegisteredUpdateProof;
use serde::Serialize;

use crate::args::System;
use crate::record::{RunMemory, RunMemoryFields, TimingFields};
use crate::{made_up_key, Bench};

#[derive(Serialize)]
struct UpdateRun<'a> {
    #[serde(flatten)]
    timings: Option<TimingFields<'a>>,
    #[serde(flatten)]
    memory: RunMemoryFields,
    partitions: usize,
}

pub fn run(bench: &Bench) -> Result<()> {
    match &bench.args.fixture {
        Some(fixture) => real(bench, fixture),
        None => made_up(bench),
    }
}

/// The fixture's update proof, `--repeat` times.
fn real(bench: &Bench, fixture: &Path) -> Result<()> {
    let args = &bench.args;
    let params = args.params.as_ref().context("update needs --params")?;
    // filecoin-proofs reads its parameter directory once, from the environment; set it while
    // this process is still single-threaded.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params);
    let f: UpdateFixture = serde_json::from_slice(&std::fs::read(fixture.join("update.json"))?)?;
    let engine = match args.system {
        System::Bellperson => None,
        System::Cuzk | System::CuzkCpu | System::CuzkStreamed => Some(bench.engine()?),
    };
    let vanilla: Vec<Vec<u8>> = f.vanilla_proofs.iter().map(|h| h.0.clone()).collect();
    let slices: Vec<&[u8]> = vanilla.iter().map(Vec::as_slice).collect();
    let request = UpdateRequest {
        registered_proof: f.registered_proof,
        comm_r_old: f.comm_r_old,
        comm_r_new: f.comm_r_new,
        comm_d_new: f.comm_d_new,
        vanilla_proofs: &slices,
    };
    let label = format!("update {:?}", f.registered_proof);
    for run in 0..args.repeat {
        let mut memory = RunMemory::start();
        let start = Instant::now();
        let proven = match &engine {
            Some(engine) => Some(engine.generate_update(&request, &ProveOptions::default())?),
            None => {
                let partitions = vanilla.iter().cloned().map(PartitionProofBytes).collect();
                let proof = filecoin_proofs_api::update::generate_empty_sector_update_proof_with_vanilla(
                    f.registered_proof,
                    partitions,
                    f.comm_r_old,
                    f.comm_r_new,
                    f.comm_d_new,
                )?;
                let valid = filecoin_proofs_api::update::verify_empty_sector_update_proof(
                    f.registered_proof,
                    &proof.0,
                    f.comm_r_old,
                    f.comm_r_new,
                    f.comm_d_new,
                )?;
                if !valid {
                    bail!("filecoin-proofs-api's update proof does not verify");
                }
                None
            }
        };
        let wall = start.elapsed().as_secs_f64();
        let measured = UpdateRun {
            timings: proven.as_ref().map(|p| TimingFields(&p.timings)),
            memory: memory.fields(),
            partitions: vanilla.len(),
        };
        bench.report(&label, run, wall, &measured, engine.as_deref());
    }
    Ok(())
}

/// The update of `--sector-size`'s proof: the synthetic key made from one made-up partition (not
/// timed), then `--repeat` updates of `--partitions` partitions (default: all), each a call of
/// its own (warm: the key stays resident), its partitions pipelined.
fn made_up(bench: &Bench) -> Result<()> {
    let args = &bench.args;
    let proof = update_proof(args.sector_size.0)?;
    let short = args.sector_size.short();
    let engine = bench.engine()?;
    let partitions = args.partitions.unwrap_or(usize::MAX);
    let made_up = |seed: u64, key| MadeUpUpdate {
        proof,
        partitions,
        seed,
        key,
    };
    let start = Instant::now();
    let (key, constraints) = made_up_key(&engine, &made_up(1, None))?;
    eprintln!(
        "update-{short}: {constraints} constraints per partition, synthetic key made in {:.1} s (not timed)",
        start.elapsed().as_secs_f64()
    );
    let label = format!("update-{short} (made-up vanilla proofs, synthetic key, performance only)");
    for run in 0..args.repeat {
        let request = made_up(run as u64 + 2, Some(key.clone()));
        let mut memory = RunMemory::start();
        let start = Instant::now();
        let proven = engine.prove_requests(&[&request], &ProveOptions::default())?.remove(0)?;
        let wall = start.elapsed().as_secs_f64();
        let measured = UpdateRun {
            timings: Some(TimingFields(&proven.timings)),
            memory: memory.fields(),
            partitions: proven.partitions.len(),
        };
        bench.report(&label, run, wall, &measured, Some(&engine));
    }
    Ok(())
}

/// The update proof of a seal proof's sector size.
pub(crate) fn update_proof(seal: filecoin_proofs_api::RegisteredSealProof) -> Result<RegisteredUpdateProof> {
    use filecoin_proofs::constants as c;
    use RegisteredUpdateProof::*;
    Ok(match u64::from(seal.sector_size()) {
        c::SECTOR_SIZE_2_KIB => StackedDrg2KiBV1,
        c::SECTOR_SIZE_8_MIB => StackedDrg8MiBV1,
        c::SECTOR_SIZE_512_MIB => StackedDrg512MiBV1,
        c::SECTOR_SIZE_32_GIB => StackedDrg32GiBV1,
        c::SECTOR_SIZE_64_GIB => StackedDrg64GiBV1,
        other => bail!("no update proof for {other} byte sectors"),
    })
}
