//! supraseal-bench: times supraseal-c2 (the CUDA Groth16 prover behind bellperson's
//! `cuda-supraseal` feature) on the workloads cuzk is benchmarked on, printing one JSON line
//! per run in the shape cuzk's benchmark tools use, so results can be compared side by side.
//!
//!   supraseal-bench c2 --fixture DIR --params DIR [--repeat N]
//!       DIR/c1.json + DIR/sector.json (as written by `cuzk-fixtures seal`), proved with
//!       filecoin-proofs-api's seal_commit_phase2 and checked with its verify_seal.
//!   supraseal-bench post --fixture DIR --params DIR [--repeat N]
//!       DIR/post.json (as written by `cuzk-fixtures post`): each WindowPoSt partition with
//!       filecoin-proofs-api's generate_single_window_post_with_vanilla, the WinningPoSt with
//!       generate_winning_post_with_vanilla; checked with verify_window_post (the partitions
//!       merged) and verify_winning_post.
//!   supraseal-bench update --fixture DIR --params DIR [--repeat N]
//!       DIR/update.json (as written by `cuzk-fixtures update`): the SnapDeals update proof with
//!       filecoin-proofs-api's generate_empty_sector_update_proof_with_vanilla, checked with
//!       verify_empty_sector_update_proof.
//!   supraseal-bench circuit --workload sha --log-constraints K --params FILE [--repeat N]
//!       the shared SHA-256 chain circuit (tools/src/sha_chain.rs) with 2^K - 64
//!       constraints, proved with bellperson's supraseal path against a bellperson-format key
//!       FILE for exactly that circuit (random points, so the proof is not verified).
//!
//! Timing notes: run 0 is cold. For c2 filecoin-proofs loads the parameters inside run 0 and
//! keeps them in memory for later runs; for `circuit` the key is opened before the runs, but
//! supraseal reads its points on a background thread, which run 0 may wait for. Peak RSS is
//! the process's peak so far (getrusage), so it never decreases across runs.
//! `RUST_LOG=info` shows bellperson's own "synthesis time" / "prover time" lines.

// The workload is shared source with cuzk: compiled into this crate rather than depended on,
// so that cuzk (and its features) stays out of this build and vice versa.
#[path = "../../../../tools/src/sha_chain.rs"]
mod sha_chain;
mod shape;

use std::{
    fs,
    panic::{self, AssertUnwindSafe},
    path::{Path, PathBuf},
    process::ExitCode,
    time::Instant,
};

use anyhow::{anyhow, bail, Context, Result};
use filecoin_proofs_api::{post, seal, update, PartitionProofBytes, PublicReplicaInfo, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof, SectorId};
use rand_chacha::{rand_core::SeedableRng, ChaCha20Rng};
use serde::Deserialize;

const SYSTEM: &str = "supraseal-c2";

const USAGE: &str = "usage:
  supraseal-bench c2 --fixture DIR --params DIR [--repeat N]
  supraseal-bench post --fixture DIR --params DIR [--repeat N]
  supraseal-bench update --fixture DIR --params DIR [--repeat N]
  supraseal-bench circuit --workload sha --log-constraints K --params FILE [--repeat N]";

/// The fields of cuzk's `fixtures::SealedSector` (sector.json) this tool needs; the rest
/// (miner_id, ...) is ignored.
#[derive(Deserialize)]
struct Sector {
    registered_proof: RegisteredSealProof,
    #[serde(with = "hex::serde")]
    prover_id: [u8; 32],
    sector_id: u64,
    #[serde(with = "hex::serde")]
    comm_r: [u8; 32],
    #[serde(with = "hex::serde")]
    comm_d: [u8; 32],
    #[serde(with = "hex::serde")]
    ticket: [u8; 32],
    #[serde(with = "hex::serde")]
    seed: [u8; 32],
}

/// The fields of cuzk's `fixtures::PostFixture` (post.json) this tool needs.
#[derive(Deserialize)]
struct PostFixture {
    #[serde(with = "hex::serde")]
    prover_id: [u8; 32],
    #[serde(with = "hex::serde")]
    randomness: [u8; 32],
    window: PostProofs,
    winning: PostProofs,
}

/// A fixture's WindowPoSt (partitions) or WinningPoSt (one, its fields flattened).
#[derive(Deserialize)]
struct PostProofs {
    registered_proof: RegisteredPoStProof,
    #[serde(default)]
    partitions: Vec<PostPartition>,
    #[serde(default)]
    vanilla_proofs: Vec<HexBytes>,
    #[serde(default)]
    sectors: Vec<PostSector>,
}

#[derive(Deserialize)]
struct PostPartition {
    index: usize,
    vanilla_proofs: Vec<HexBytes>,
    sectors: Vec<PostSector>,
}

#[derive(Deserialize)]
struct PostSector {
    sector_id: u64,
    #[serde(with = "hex::serde")]
    comm_r: [u8; 32],
}

#[derive(Deserialize)]
#[serde(transparent)]
struct HexBytes(#[serde(with = "hex::serde")] Vec<u8>);

/// The fields of cuzk's `fixtures::UpdateFixture` (update.json) this tool needs.
#[derive(Deserialize)]
struct UpdateFixture {
    registered_proof: RegisteredUpdateProof,
    #[serde(with = "hex::serde")]
    comm_r_old: [u8; 32],
    #[serde(with = "hex::serde")]
    comm_r_new: [u8; 32],
    #[serde(with = "hex::serde")]
    comm_d_new: [u8; 32],
    vanilla_proofs: Vec<HexBytes>,
}

#[derive(Debug, Default)]
struct Args {
    command: String,
    fixture: Option<PathBuf>,
    params: Option<PathBuf>,
    workload: Option<String>,
    log_constraints: Option<u32>,
    repeat: usize,
}

/// A command-line mistake: reported with the usage text and exit status 2.
struct UsageError(String);

fn parse_args(mut argv: impl Iterator<Item = String>) -> Result<Args, UsageError> {
    let command = argv.next().ok_or_else(|| UsageError("missing command".into()))?;
    if !["c2", "circuit", "post", "update"].contains(&command.as_str()) {
        return Err(UsageError(format!("unknown command {command:?}")));
    }
    let mut args = Args {
        command,
        repeat: 1,
        ..Args::default()
    };
    while let Some(flag) = argv.next() {
        let value = argv.next().ok_or_else(|| UsageError(format!("{flag} needs a value")))?;
        let bad = |what: &str| UsageError(format!("{flag}: {what}, got {value:?}"));
        match flag.as_str() {
            "--fixture" => args.fixture = Some(value.into()),
            "--params" => args.params = Some(value.into()),
            "--workload" => args.workload = Some(value),
            "--log-constraints" => {
                let k: u32 = value.parse().map_err(|_| bad("expected an integer"))?;
                // 2^K - 64 must leave room for the fixed part; 2^31 is far past any GPU.
                if !(10..=31).contains(&k) {
                    return Err(bad("expected 10..=31"));
                }
                args.log_constraints = Some(k);
            }
            "--repeat" => {
                args.repeat = value.parse().map_err(|_| bad("expected a positive integer"))?;
                if args.repeat == 0 {
                    return Err(bad("expected a positive integer"));
                }
            }
            _ => return Err(UsageError(format!("unknown flag {flag:?}"))),
        }
    }
    let need = |present: bool, flag: &str| {
        if present {
            Ok(())
        } else {
            Err(UsageError(format!("{} needs {flag}", args.command)))
        }
    };
    need(args.params.is_some(), "--params")?;
    match args.command.as_str() {
        "c2" | "post" | "update" => {
            need(args.fixture.is_some(), "--fixture")?;
            if args.workload.is_some() || args.log_constraints.is_some() {
                return Err(UsageError(format!("{} takes no --workload/--log-constraints", args.command)));
            }
        }
        _ => {
            need(args.log_constraints.is_some(), "--log-constraints")?;
            match args.workload.as_deref() {
                Some("sha") => {}
                Some(w) => return Err(UsageError(format!("unknown workload {w:?} (known: sha)"))),
                None => return Err(UsageError("circuit needs --workload sha".into())),
            }
            if args.fixture.is_some() {
                return Err(UsageError("circuit takes no --fixture".into()));
            }
        }
    }
    Ok(args)
}

/// Threads the prover can use: supraseal's pool sizes itself by the CPU affinity mask and
/// rayon (synthesis) by the same unless RAYON_NUM_THREADS says otherwise.
fn threads() -> usize {
    std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn peak_rss_mib() -> u64 {
    // SAFETY: getrusage only writes the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0;
    }
    // ru_maxrss is in KiB on Linux.
    (usage.ru_maxrss.max(0) as u64) / 1024
}

/// When this process started, for the peak device memory of its records (cuzk-bench's
/// `window_fields`: scripts/gpu-run.sh gives each record the peak over this window).
static STARTED_UNIX_MS: std::sync::OnceLock<u128> = std::sync::OnceLock::new();

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// One result line on stdout (the machine-readable record) and a human line on stderr.
fn report(workload: &str, run: usize, wall_s: f64, verified: Option<bool>) {
    let rss = peak_rss_mib();
    let threads = threads();
    let verified_json = verified.map_or("null".to_string(), |v| v.to_string());
    let started = STARTED_UNIX_MS.get().copied().unwrap_or(0);
    // Written by hand rather than through serde_json::json!, whose map would sort the keys.
    println!(
        "{{\"workload\":{},\"system\":\"{SYSTEM}\",\"run\":{run},\"threads\":{threads},\"wall_s\":{wall_s:.3},\"peak_rss_mib\":{rss},\"started_unix_ms\":{started},\"reported_unix_ms\":{},\"verified\":{verified_json}}}",
        serde_json::to_string(workload).expect("a string serialises"),
        unix_ms(),
    );
    let check = match verified {
        Some(true) => "verified",
        Some(false) => "NOT VERIFIED",
        None => "not verifiable (synthetic key)",
    };
    eprintln!("supraseal-bench: {workload}: run {run}: {wall_s:.3} s, peak RSS {rss} MiB, {threads} threads, {check}");
}

/// Runs `f`, turning a panic (supraseal-c2 panics on CUDA errors) into an error so the tool
/// exits with a status and a message instead of unwinding out of main.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied())
                .unwrap_or("(non-string panic payload)");
            Err(anyhow!("{what} failed: {msg}"))
        }
    }
}

fn run_c2(fixture: &Path, params: &Path, repeat: usize) -> Result<bool> {
    let c1_path = fixture.join("c1.json");
    let sector_path = fixture.join("sector.json");
    let sector: Sector = serde_json::from_slice(&fs::read(&sector_path).with_context(|| format!("reading {}", sector_path.display()))?)
        .with_context(|| format!("parsing {}", sector_path.display()))?;
    let c1: seal::SealCommitPhase1Output = serde_json::from_slice(&fs::read(&c1_path).with_context(|| format!("reading {}", c1_path.display()))?)
        .with_context(|| format!("parsing {} as SealCommitPhase1Output", c1_path.display()))?;
    if c1.registered_proof != sector.registered_proof {
        bail!(
            "{} is for {:?} but {} says {:?}",
            c1_path.display(),
            c1.registered_proof,
            sector_path.display(),
            sector.registered_proof
        );
    }
    let workload = format!("porep-c2 {:?}", sector.registered_proof);
    eprintln!(
        "supraseal-bench: {workload}: sector {} from {}, parameters from {}",
        sector.sector_id,
        fixture.display(),
        params.display()
    );

    let mut all_verified = true;
    for run in 0..repeat {
        let input = c1.clone();
        let start = Instant::now();
        let out = guarded("seal_commit_phase2", || {
            seal::seal_commit_phase2(input, sector.prover_id, SectorId::from(sector.sector_id)).context("seal_commit_phase2")
        })?;
        let wall = start.elapsed().as_secs_f64();
        let verified = seal::verify_seal(
            sector.registered_proof,
            sector.comm_r,
            sector.comm_d,
            sector.prover_id,
            SectorId::from(sector.sector_id),
            sector.ticket,
            sector.seed,
            &out.proof,
        )
        .context("verify_seal")?;
        all_verified &= verified;
        report(&workload, run, wall, Some(verified));
    }
    Ok(all_verified)
}

fn run_post(fixture: &Path, repeat: usize) -> Result<bool> {
    let path = fixture.join("post.json");
    let f: PostFixture =
        serde_json::from_slice(&fs::read(&path).with_context(|| format!("reading {}", path.display()))?).with_context(|| format!("parsing {}", path.display()))?;
    let bytes = |hex: &[HexBytes]| hex.iter().map(|h| h.0.clone()).collect::<Vec<_>>();
    let replicas = |proof: RegisteredPoStProof, sectors: &mut dyn Iterator<Item = &PostSector>| {
        sectors
            .map(|s| (SectorId::from(s.sector_id), PublicReplicaInfo::new(proof, s.comm_r)))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let window = f.window.registered_proof;
    let all_sectors = replicas(window, &mut f.window.partitions.iter().flat_map(|p| &p.sectors));
    let mut all_verified = true;
    for run in 0..repeat {
        let mut merged = Vec::new();
        let mut walls = Vec::new();
        for p in &f.window.partitions {
            let vanilla = bytes(&p.vanilla_proofs);
            let start = Instant::now();
            let proof = guarded("generate_single_window_post_with_vanilla", || {
                post::generate_single_window_post_with_vanilla(window, &f.randomness, f.prover_id, &vanilla, p.index)
                    .context("generate_single_window_post_with_vanilla")
            })?;
            walls.push((format!("post-window {window:?} partition {} ({} sectors)", p.index, p.sectors.len()), start.elapsed().as_secs_f64()));
            merged.extend_from_slice(&proof.0);
        }
        let verified = post::verify_window_post(&f.randomness, &[(window, &merged[..])], &all_sectors, f.prover_id).context("verify_window_post")?;
        all_verified &= verified;
        for (workload, wall) in walls {
            report(&workload, run, wall, Some(verified));
        }
    }
    let winning = f.winning.registered_proof;
    let winning_sector = replicas(winning, &mut f.winning.sectors.iter());
    let vanilla = bytes(&f.winning.vanilla_proofs);
    for run in 0..repeat {
        let start = Instant::now();
        let proofs = guarded("generate_winning_post_with_vanilla", || {
            post::generate_winning_post_with_vanilla(winning, &f.randomness, f.prover_id, &vanilla).context("generate_winning_post_with_vanilla")
        })?;
        let wall = start.elapsed().as_secs_f64();
        let proof = &proofs.first().context("no WinningPoSt proof")?.1;
        let verified = post::verify_winning_post(&f.randomness, proof, &winning_sector, f.prover_id).context("verify_winning_post")?;
        all_verified &= verified;
        report(&format!("post-winning {winning:?}"), run, wall, Some(verified));
    }
    Ok(all_verified)
}

fn run_update(fixture: &Path, repeat: usize) -> Result<bool> {
    let path = fixture.join("update.json");
    let f: UpdateFixture =
        serde_json::from_slice(&fs::read(&path).with_context(|| format!("reading {}", path.display()))?).with_context(|| format!("parsing {}", path.display()))?;
    let proof = f.registered_proof;
    let mut all_verified = true;
    for run in 0..repeat {
        let vanilla = f.vanilla_proofs.iter().map(|h| PartitionProofBytes(h.0.clone())).collect();
        let start = Instant::now();
        let bytes = guarded("generate_empty_sector_update_proof_with_vanilla", || {
            update::generate_empty_sector_update_proof_with_vanilla(proof, vanilla, f.comm_r_old, f.comm_r_new, f.comm_d_new)
                .context("generate_empty_sector_update_proof_with_vanilla")
        })?;
        let wall = start.elapsed().as_secs_f64();
        let verified = update::verify_empty_sector_update_proof(proof, &bytes.0, f.comm_r_old, f.comm_r_new, f.comm_d_new)
            .context("verify_empty_sector_update_proof")?;
        all_verified &= verified;
        report(&format!("update {proof:?}"), run, wall, Some(verified));
    }
    Ok(all_verified)
}

fn run_circuit(k: u32, key: &Path, repeat: usize) -> Result<bool> {
    use bellperson::groth16::{create_random_proof_batch, SuprasealParameters};
    use blstrs::Bls12;

    // Leave room for the constraints the prover adds per public input, so the evaluation
    // domain stays 2^K (the same target cuzk's tools use for this workload).
    let target = (1usize << k) - 64;
    let workload = format!("sha-2^{k} (synthetic key, performance only)");
    let probe = sha_chain::ShaChain::with_constraints(target, 1);
    eprintln!(
        "supraseal-bench: {workload}: {} constraints ({} SHA-256 hashes + {} filler bits), key {}",
        probe.num_constraints(),
        probe.links(),
        probe.filler_bits(),
        key.display()
    );
    if !key.is_file() {
        bail!("{}: no such key file", key.display());
    }
    // supraseal-c2 would abort (C asserts) on a key for another circuit: check first.
    shape::check_key(key, &probe)?;
    let start = Instant::now();
    let params = guarded("loading the key", || {
        SuprasealParameters::<Bls12>::new(key.to_path_buf()).with_context(|| format!("loading {} with supraseal-c2", key.display()))
    })?;
    eprintln!(
        "supraseal-bench: key opened in {:.3} s (points are read on in the background)",
        start.elapsed().as_secs_f64()
    );

    for run in 0..repeat {
        let mut rng = ChaCha20Rng::seed_from_u64(run as u64);
        let start = Instant::now();
        let circuit = sha_chain::ShaChain::with_constraints(target, 1);
        let proofs = guarded("proving", || {
            create_random_proof_batch(vec![circuit], &params, &mut rng).context("create_random_proof_batch")
        })?;
        let wall = start.elapsed().as_secs_f64();
        if proofs.len() != 1 {
            bail!("expected 1 proof, got {}", proofs.len());
        }
        report(&workload, run, wall, None);
    }
    Ok(true)
}

fn main() -> ExitCode {
    STARTED_UNIX_MS.get_or_init(unix_ms);
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(UsageError(msg)) => {
            eprintln!("supraseal-bench: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let params = args.params.clone().expect("checked by parse_args");
    if args.command != "circuit" {
        // filecoin-proofs reads its settings (the parameter directory among them) once, on
        // first use: set the variable before any of its code runs.
        if !params.is_dir() {
            eprintln!("supraseal-bench: --params {}: not a directory", params.display());
            return ExitCode::from(2);
        }
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &params);
    }
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();

    // One line per panic (with its location), in the tool's own voice; `guarded` then turns a
    // panic on the main thread into the final error message and exit status 1.
    panic::set_hook(Box::new(|info| eprintln!("supraseal-bench: panic: {info}")));

    let result = match args.command.as_str() {
        "c2" => run_c2(args.fixture.as_deref().expect("checked"), &params, args.repeat),
        "post" => run_post(args.fixture.as_deref().expect("checked"), args.repeat),
        "update" => run_update(args.fixture.as_deref().expect("checked"), args.repeat),
        _ => run_circuit(args.log_constraints.expect("checked"), &params, args.repeat),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("supraseal-bench: error: a proof failed verification");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("supraseal-bench: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Args, String> {
        parse_args(s.split_whitespace().map(String::from)).map_err(|UsageError(m)| m)
    }

    #[test]
    fn args() {
        let a = parse("c2 --fixture /f --params /p --repeat 3").unwrap();
        assert_eq!((a.command.as_str(), a.repeat), ("c2", 3));
        let a = parse("circuit --workload sha --log-constraints 20 --params /k").unwrap();
        assert_eq!((a.log_constraints, a.repeat), (Some(20), 1));
        for bad in [
            "",
            "prove",
            "c2 --params /p",
            "c2 --fixture /f",
            "c2 --fixture /f --params /p --repeat 0",
            "c2 --fixture /f --params /p --repeat",
            "circuit --workload sha --params /k",
            "circuit --workload md5 --log-constraints 20 --params /k",
            "circuit --workload sha --log-constraints 99 --params /k",
            "circuit --workload sha --log-constraints 20 --params /k --bogus 1",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn sector_json_matches_cuzk_fixture_format() {
        let s: Sector = serde_json::from_str(
            r#"{"registered_proof":"StackedDrg2KiBV1_1","miner_id":1000,
            "prover_id":"e807000000000000000000000000000000000000000000000000000000000000","sector_id":7,
            "comm_r":"c70552474b29b3361bae494fffe375605b2fb6c55f135e64fe29ba3d97554337",
            "comm_d":"e6242238948124cbfcadd9b72574da9dbee01ea670664108b2c4cc912c71b309",
            "ticket":"088fa676fcff43f1bdbd1756e288496ffc429267379eb2dfdf2da1aceef9991f",
            "seed":"4e6f9e9ab0f0f51dae64d6f39eaa7a0c4c8bfe43de00124220ac1b28ed23b611"}"#,
        )
        .unwrap();
        assert_eq!(format!("porep-c2 {:?}", s.registered_proof), "porep-c2 StackedDrg2KiBV1_1");
        assert_eq!((s.sector_id, s.prover_id[0], s.prover_id[1]), (7, 0xe8, 0x07));
    }
}
