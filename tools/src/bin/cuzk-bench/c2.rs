//! `c2`: PoRep commit phase 2 of a fixture made by `cuzk-fixtures seal`.

use std::time::Instant;

use anyhow::{Context, Result};
use cuzk::engine::ProveOptions;
use cuzk_tools::fixtures::SealedSector;

use crate::args::{Args, System};
use crate::record::TimingFields;
use crate::Bench;

/// `--fixture`'s C1 JSON and sector, with FIL_PROOFS_PARAMETER_CACHE set to `--params`:
/// filecoin-proofs reads its parameter directory once, from the environment, so it is set
/// while this process is still single-threaded.
pub fn sealed_fixture(args: &Args) -> Result<(Vec<u8>, SealedSector)> {
    let fixture = args.fixture.as_ref().context("--fixture is required")?;
    let params = args.params.as_ref().context("--params is required")?;
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params);
    SealedSector::read_fixture(fixture)
}

pub fn run(bench: &Bench) -> Result<()> {
    let args = &bench.args;
    let (c1_json, sector) = sealed_fixture(args)?;
    let label = format!("porep-c2 {:?}", sector.registered_proof);
    let engine = match args.system {
        System::Bellperson => None,
        _ => Some(bench.engine()?),
    };
    for run in 0..args.repeat {
        let start = Instant::now();
        let timings = match &engine {
            Some(engine) => Some(
                engine
                    .seal_commit_phase2(&c1_json, sector.sector_id, sector.prover_id, &ProveOptions::default())?
                    .timings,
            ),
            None => {
                // filecoin-proofs-api's own commit phase 2, which verifies its result.
                let c1 = cuzk::internals::porep::parse_c1(&c1_json)?;
                filecoin_proofs_api::seal::seal_commit_phase2(c1, sector.prover_id, sector.sector_id.into())?;
                None
            }
        };
        let wall = start.elapsed().as_secs_f64();
        bench.report(&label, run, wall, &timings.as_ref().map(TimingFields), engine.as_deref());
    }
    Ok(())
}
