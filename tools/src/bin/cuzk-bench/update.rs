//! `update`: the SnapDeals update proof of a fixture (`cuzk-fixtures update`), proven by the
//! engine or (`--system bellperson`) by filecoin-proofs-api with bellperson's prover.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk::engine::{ProveOptions, UpdateRequest};
use cuzk_tools::fixtures::UpdateFixture;
use filecoin_proofs_api::PartitionProofBytes;
use serde::Serialize;

use crate::args::System;
use crate::record::{RunMemory, RunMemoryFields, TimingFields};
use crate::Bench;

#[derive(Serialize)]
struct UpdateRun<'a> {
    #[serde(flatten)]
    timings: Option<TimingFields<'a>>,
    #[serde(flatten)]
    memory: RunMemoryFields,
    partitions: usize,
}

pub fn run(bench: &Bench) -> Result<()> {
    let args = &bench.args;
    let fixture = args.fixture.as_ref().context("update needs --fixture DIR (cuzk-fixtures update)")?;
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
        let memory = RunMemory::start();
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
