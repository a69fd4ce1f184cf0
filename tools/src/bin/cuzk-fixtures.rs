//! Test fixtures for cuzk, made with filecoin-proofs itself.
//!
//!   cuzk-fixtures params --sector-size 2KiB [--dir DIR] [--kinds porep,post,update]
//!       random-setup Groth16 parameters (TEST ONLY; cuzk_tools::setup on filecoin-proofs' blank
//!       circuits) of the PoRep, WindowPoSt, WinningPoSt and SnapDeals update circuits (or of
//!       the kinds listed) into DIR (default:
//!       CUZK_TEST_PARAMS or ~/.cache/cuzk/test-params); nothing is done for those that exist.
//!   cuzk-fixtures seal --sector-size 2KiB --out DIR [--miner ID] [--sector N]
//!       seals a random sector and writes DIR/c1.json and DIR/sector.json.
//!   cuzk-fixtures post --sector-size 2KiB --out DIR [--miner ID] [--sectors N]
//!       seals N random sectors (default 3) and writes DIR/post.json: the vanilla proofs of a
//!       WindowPoSt over them (per partition) and of a WinningPoSt, with the randomness, prover
//!       id and sectors their SNARKs and verifiers take.
//!   cuzk-fixtures update --sector-size 2KiB --out DIR [--miner ID]
//!       seals a CC sector, updates it with random data and writes DIR/update.json: the
//!       update's partition vanilla proofs and its commitments; also as raw bytes for the C
//!       example: DIR/comms.bin (comm_r_old, comm_r_new, comm_d_new) and DIR/vanilla-K.bin.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk_tools::fixtures::{
    default_test_params_dir, ensure_params, ensure_post_params, ensure_update_params, make_post_fixture, make_update_fixture, registered_proof_for,
    seal_random_sector, update_proof_for, window_post_proof_for, winning_post_proof_for,
};
use rand::SeedableRng;

struct Args {
    command: String,
    sector_size: String,
    dir: Option<PathBuf>,
    out: Option<PathBuf>,
    miner: u64,
    sector: u64,
    sectors: usize,
    /// The proof kinds `params` makes parameters for.
    kinds: Vec<String>,
}

fn parse_args() -> Result<Args> {
    let mut argv = std::env::args().skip(1);
    let command = argv.next().unwrap_or_default();
    let mut args = Args {
        command,
        sector_size: "2KiB".into(),
        dir: None,
        out: None,
        miner: 1000,
        sector: 1,
        sectors: 3,
        kinds: ["porep", "post", "update"].map(String::from).to_vec(),
    };
    while let Some(flag) = argv.next() {
        let value = argv.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--sector-size" => args.sector_size = value,
            "--dir" => args.dir = Some(value.into()),
            "--out" => args.out = Some(value.into()),
            "--miner" => args.miner = value.parse().context("--miner")?,
            "--sector" => args.sector = value.parse().context("--sector")?,
            "--sectors" => args.sectors = value.parse().context("--sectors")?,
            "--kinds" => args.kinds = value.split(',').map(String::from).collect(),
            _ => bail!("unknown flag {flag}"),
        }
    }
    Ok(args)
}

fn run() -> Result<()> {
    let args = parse_args()?;
    let proof = registered_proof_for(&args.sector_size)?;
    let mut rng = rand_chacha::ChaCha20Rng::from_entropy();
    match args.command.as_str() {
        "params" => {
            let dir = args.dir.unwrap_or_else(default_test_params_dir);
            // filecoin-proofs reads its cache location once, from the environment; set it
            // before its first call (we are still single-threaded here).
            std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &dir);
            eprintln!(
                "cuzk-fixtures: RANDOM-SETUP parameters of {} {}, for tests only, in {}",
                args.sector_size,
                args.kinds.join(", "),
                dir.display()
            );
            let start = Instant::now();
            for kind in &args.kinds {
                let paths = match kind.as_str() {
                    "porep" => vec![ensure_params(proof, &dir, &mut rng)?],
                    "post" => [window_post_proof_for(&args.sector_size)?, winning_post_proof_for(&args.sector_size)?]
                        .into_iter()
                        .map(|post| ensure_post_params(post, &dir, &mut rng))
                        .collect::<Result<_>>()?,
                    "update" => vec![ensure_update_params(update_proof_for(&args.sector_size)?, &dir, &mut rng)?],
                    other => bail!("unknown kind {other:?} in --kinds (porep, post, update)"),
                };
                for path in paths {
                    println!("{}", path.display());
                }
            }
            eprintln!("cuzk-fixtures: parameters ready in {:.1} s", start.elapsed().as_secs_f64());
        }
        "seal" => {
            let out = args.out.context("seal needs --out DIR")?;
            std::fs::create_dir_all(&out)?;
            let start = Instant::now();
            let (c1, sector) = seal_random_sector(proof, args.miner, args.sector, &out.join("work"), &mut rng)?;
            std::fs::write(out.join("c1.json"), &c1)?;
            std::fs::write(out.join("sector.json"), serde_json::to_vec_pretty(&sector)?)?;
            std::fs::remove_dir_all(out.join("work"))?;
            eprintln!(
                "cuzk-fixtures: sealed {proof:?} sector {} in {:.1} s",
                args.sector,
                start.elapsed().as_secs_f64()
            );
            println!("{}", out.join("c1.json").display());
        }
        "post" => {
            let out = args.out.context("post needs --out DIR")?;
            std::fs::create_dir_all(&out)?;
            let start = Instant::now();
            let work = out.join("work");
            let fixture = make_post_fixture(&args.sector_size, args.miner, args.sectors, &work, &mut rng)?;
            std::fs::write(out.join("post.json"), serde_json::to_vec_pretty(&fixture)?)?;
            std::fs::remove_dir_all(&work)?;
            eprintln!(
                "cuzk-fixtures: {} sectors of {} sealed and their PoSt vanilla proofs made in {:.1} s",
                args.sectors,
                args.sector_size,
                start.elapsed().as_secs_f64()
            );
            println!("{}", out.join("post.json").display());
        }
        "update" => {
            let out = args.out.context("update needs --out DIR")?;
            std::fs::create_dir_all(&out)?;
            let start = Instant::now();
            let work = out.join("work");
            let fixture = make_update_fixture(&args.sector_size, args.miner, &work, &mut rng)?;
            std::fs::write(out.join("update.json"), serde_json::to_vec_pretty(&fixture)?)?;
            // The same inputs as raw bytes, for the C example (examples/prove_update.c).
            std::fs::write(
                out.join("comms.bin"),
                [fixture.comm_r_old, fixture.comm_r_new, fixture.comm_d_new].concat(),
            )?;
            for (k, proof) in fixture.vanilla_proofs.iter().enumerate() {
                std::fs::write(out.join(format!("vanilla-{k}.bin")), &proof.0)?;
            }
            std::fs::remove_dir_all(&work)?;
            eprintln!(
                "cuzk-fixtures: a {} CC sector sealed, updated and its update vanilla proofs made in {:.1} s",
                args.sector_size,
                start.elapsed().as_secs_f64()
            );
            println!("{}", out.join("update.json").display());
        }
        other => bail!("unknown command {other:?}: use `params`, `seal`, `post` or `update`"),
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cuzk-fixtures: {e:#}");
            ExitCode::FAILURE
        }
    }
}
