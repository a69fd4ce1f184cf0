//! cuzk-bench: PoRep C2 timed on one system per process (so peak RSS belongs to that system),
//! on a fixture made by `cuzk-fixtures seal`. Prints a table row and a JSON line per run.
//!
//!   cuzk-bench c2 --system cuzk|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]
//!
//! `cuzk` uses the GPU when one is usable (else the CPU), `cuzk-cpu` always the CPU backend.
//! `bellperson` is filecoin-proofs-api's own `seal_commit_phase2` (bellperson's CPU prover,
//! with filecoin-proofs' verification of the result), the reference the CPU path is held to.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use cuzk::engine::{Engine, EngineConfig, ProveOptions};
use cuzk::fixtures::SealedSector;

struct Args {
    system: String,
    fixture: PathBuf,
    params: PathBuf,
    repeat: usize,
}

fn parse_args() -> Result<Args> {
    let mut argv = std::env::args().skip(1);
    if argv.next().as_deref() != Some("c2") {
        bail!("usage: cuzk-bench c2 --system cuzk|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]");
    }
    let (mut system, mut fixture, mut params, mut repeat) = (None, None, None, 1);
    while let Some(flag) = argv.next() {
        let value = argv.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--system" => system = Some(value),
            "--fixture" => fixture = Some(PathBuf::from(value)),
            "--params" => params = Some(PathBuf::from(value)),
            "--repeat" => repeat = value.parse().context("--repeat")?,
            _ => bail!("unknown flag {flag}"),
        }
    }
    Ok(Args {
        system: system.context("--system is required")?,
        fixture: fixture.context("--fixture is required")?,
        params: params.context("--params is required")?,
        repeat,
    })
}

fn peak_rss_mib() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a rusage into the pointer.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    usage.ru_maxrss as f64 / 1024.0
}

fn run() -> Result<()> {
    let args = parse_args()?;
    // filecoin-proofs reads its parameter directory once, from the environment; set it while
    // this process is still single-threaded.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", &args.params);
    let c1_json = std::fs::read(args.fixture.join("c1.json"))?;
    let sector: SealedSector = serde_json::from_slice(&std::fs::read(args.fixture.join("sector.json"))?)?;
    let threads = rayon::current_num_threads();
    for run in 0..args.repeat {
        let start = Instant::now();
        let phases = match args.system.as_str() {
            "cuzk" | "cuzk-cpu" => {
                let cpu_only = args.system == "cuzk-cpu";
                let config = EngineConfig { param_cache_dir: Some(args.params.clone()), cpu_only, ..Default::default() };
                let engine = Engine::acquire(config)?;
                let (_, t) = engine.seal_commit_phase2(&c1_json, sector.sector_id, sector.prover_id, &ProveOptions::default())?;
                let backend = if t.backend == cuzk::backend::BackendKind::Gpu as u32 { "gpu" } else { "cpu" };
                let mut fields = vec![format!("\"backend\":\"{backend}\"")];
                fields.extend(t.phases().iter().map(|(name, ns)| format!("\"{name}_s\":{:.4}", *ns as f64 / 1e9)));
                fields.join(",")
            }
            "bellperson" => {
                let c1 = cuzk::porep::parse_c1(&c1_json)?;
                filecoin_proofs_api::seal::seal_commit_phase2(c1, sector.prover_id, sector.sector_id.into())?;
                String::new()
            }
            other => bail!("unknown system {other:?} (cuzk, cuzk-cpu, bellperson)"),
        };
        let total = start.elapsed().as_secs_f64();
        let rss = peak_rss_mib();
        eprintln!("{:<11} run {run}: total {total:8.2} s  peak RSS {rss:8.0} MiB  ({threads} threads)", args.system);
        let sep = if phases.is_empty() { "" } else { "," };
        println!(
            "{{\"workload\":\"porep-c2\",\"proof\":\"{:?}\",\"system\":\"{}\",\"run\":{run},\"threads\":{threads},\"total_s\":{total:.3},\"peak_rss_mib\":{rss:.0}{sep}{phases}}}",
            sector.registered_proof, args.system
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cuzk-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
