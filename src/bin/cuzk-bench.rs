//! cuzk-bench: one system per process (so peak RSS belongs to that system); prints a table row
//! on stderr and a JSON line on stdout per run.
//!
//!   cuzk-bench c2 --system cuzk|cuzk-streamed|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]
//!       PoRep C2 of a fixture made by `cuzk-fixtures seal`.
//!   cuzk-bench circuit --system cuzk|cuzk-streamed|cuzk-cpu --log-constraints K [--witness porep|uniform|sha]
//!                      [--write-key FILE] [--repeat N]
//!       a circuit of 2^K constraints with a synthetic key: PERFORMANCE ONLY (its proofs cannot
//!       verify), for sizes no test parameters exist for. porep|uniform: a random circuit whose
//!       witness is PoRep-like (mostly 0/1) or uniform; sha: the SHA-256 chain of
//!       src/workloads/sha_chain.rs, also proven by the peers under bench/peers/, which read the
//!       key that --write-key saves (bellperson's params format).
//!
//! `cuzk` uses the GPU when one is usable (else the CPU), keeping the key resident in device
//! memory; `cuzk-streamed` the GPU with a key budget of one byte, so that the key's points are
//! streamed from host memory on every call (resident against streamed); `cuzk-cpu` always the
//! CPU backend.
//! `bellperson` is filecoin-proofs-api's own `seal_commit_phase2` (bellperson's CPU prover,
//! with filecoin-proofs' verification of the result), the reference the CPU path is held to.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use blstrs::Scalar;
use cuzk::backend::BackendKind;
use cuzk::engine::{prove_synthesized, Engine, EngineConfig, ProveOptions};
use cuzk::synthesis::synthesize;
use cuzk::fixtures::SealedSector;
use cuzk::testing::{synthetic_key, RandomCircuit};
use cuzk::workloads::sha_chain::ShaChain;
use bellperson::Circuit;
use std::io::Write;
use cuzk::timings::Timings;
use ff::Field;
use rand::SeedableRng;

struct Args {
    workload: String,
    system: String,
    fixture: Option<PathBuf>,
    params: Option<PathBuf>,
    log_constraints: u32,
    witness: String,
    write_key: Option<PathBuf>,
    repeat: usize,
}

const USAGE: &str = "usage: cuzk-bench c2 --system cuzk|cuzk-streamed|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]\n       cuzk-bench circuit --system cuzk|cuzk-streamed|cuzk-cpu --log-constraints K [--witness porep|uniform|sha] [--write-key FILE] [--repeat N]";

fn parse_args() -> Result<Args> {
    let mut argv = std::env::args().skip(1);
    let workload = argv.next().unwrap_or_default();
    if workload != "c2" && workload != "circuit" {
        bail!("{USAGE}");
    }
    let mut args = Args {
        workload,
        system: String::new(),
        fixture: None,
        params: None,
        log_constraints: 20,
        witness: "porep".into(),
        write_key: None,
        repeat: 1,
    };
    while let Some(flag) = argv.next() {
        let value = argv.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--system" => args.system = value,
            "--fixture" => args.fixture = Some(PathBuf::from(value)),
            "--params" => args.params = Some(PathBuf::from(value)),
            "--log-constraints" => args.log_constraints = value.parse().context("--log-constraints")?,
            "--witness" => args.witness = value,
            "--write-key" => args.write_key = Some(PathBuf::from(value)),
            "--repeat" => args.repeat = value.parse().context("--repeat")?,
            _ => bail!("unknown flag {flag}\n{USAGE}"),
        }
    }
    if !["cuzk", "cuzk-streamed", "cuzk-cpu", "bellperson"].contains(&args.system.as_str()) || (args.workload == "circuit" && args.system == "bellperson") {
        bail!("unknown --system {:?}\n{USAGE}", args.system);
    }
    Ok(args)
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

fn engine(args: &Args) -> Result<Arc<Engine>> {
    let config = EngineConfig {
        param_cache_dir: args.params.clone(),
        cpu_only: args.system == "cuzk-cpu",
        gpu_key_memory_budget: if args.system == "cuzk-streamed" { 1 } else { 0 },
        ..Default::default()
    };
    Ok(Engine::acquire(config)?)
}

/// The JSON fields of a cuzk run: backend and every phase in seconds.
fn timing_fields(t: &Timings) -> String {
    let backend = if t.backend == BackendKind::Gpu as u32 { "gpu" } else { "cpu" };
    let residency = match t.key_residency {
        1 => "resident",
        2 => "streamed",
        _ => "none",
    };
    let mut fields = vec![
        format!("\"backend\":\"{backend}\""),
        format!("\"key\":\"{residency}\""),
        format!("\"synthesis_path\":\"{}\"", if t.r1cs_synthesis == 1 { "r1cs" } else { "classic" }),
        format!("\"log_domain\":{}", t.domain_log2),
        format!("\"witness_s\":{:.4}", t.witness_ns as f64 / 1e9),
        format!("\"spmv_s\":{:.4}", t.spmv_ns as f64 / 1e9),
    ];
    fields.extend(t.phases().iter().map(|(name, ns)| format!("\"{name}_s\":{:.4}", *ns as f64 / 1e9)));
    fields.join(",")
}

/// Where a record was measured: the commit (CUZK_BENCH_COMMIT, which scripts/gpu-run.sh sets
/// from carry/COMMIT), the host, the CUDA driver (CUZK_BENCH_CUDA, from nvidia-smi), and for
/// cuzk's GPU systems the device and the device memory in use after the run, in all and by
/// cuzk (keys, NTT buffers), from the engine status.
fn machine_fields(engine: Option<&Engine>) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let host_memory_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok())))
        .flatten()
        .map_or(0, |kib| kib >> 20);
    let mut fields = serde_json::json!({
        "commit": std::env::var("CUZK_BENCH_COMMIT").unwrap_or_else(|_| "unknown".into()),
        "host": host,
        "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "host_memory_gib": host_memory_gib,
        "cuda": std::env::var("CUZK_BENCH_CUDA").ok(),
    });
    if let Some(device) = engine.and_then(|e| e.status().devices.into_iter().next()) {
        fields["gpu"] = device.name.into();
        fields["gpu_memory_mib"] = (device.memory_total >> 20).into();
        fields["device_memory_in_use_mib"] = ((device.memory_total - device.memory_free) >> 20).into();
        fields["device_memory_cuzk_mib"] = (device.memory_used_by_cuzk >> 20).into();
    }
    let object = fields.to_string();
    object[1..object.len() - 1].to_string()
}

fn report(args: &Args, label: &str, run: usize, wall: f64, fields: &str, engine: Option<&Engine>) {
    let rss = peak_rss_mib();
    let threads = rayon::current_num_threads();
    // A forced 0/1 split (CUZK_GPU_SPLIT, for measuring the GPU's cost model) and classic
    // synthesis (CUZK_SYNTHESIS=classic) are part of the name.
    let mut system = args.system.clone();
    match std::env::var("CUZK_GPU_SPLIT") {
        Ok(split) if !split.is_empty() && args.system.starts_with("cuzk") && args.system != "cuzk-cpu" => system += &format!("[split={split}]"),
        _ => {}
    }
    if std::env::var("CUZK_SYNTHESIS").as_deref() == Ok("classic") && args.system.starts_with("cuzk") {
        system += "[classic synthesis]";
    }
    eprintln!("{system:<11} {label} run {run}: wall {wall:8.3} s  peak RSS {rss:8.0} MiB  ({threads} threads)");
    let sep = if fields.is_empty() { "" } else { "," };
    let machine = machine_fields(engine);
    println!(
        "{{\"workload\":\"{label}\",\"system\":\"{system}\",\"run\":{run},\"threads\":{threads},\"wall_s\":{wall:.3},\"peak_rss_mib\":{rss:.0},{machine}{sep}{fields}}}"
    );
}

fn run_c2(args: &Args) -> Result<()> {
    let fixture = args.fixture.as_ref().context("c2 needs --fixture")?;
    let params = args.params.as_ref().context("c2 needs --params")?;
    // filecoin-proofs reads its parameter directory once, from the environment; set it while
    // this process is still single-threaded.
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params);
    let c1_json = std::fs::read(fixture.join("c1.json"))?;
    let sector: SealedSector = serde_json::from_slice(&std::fs::read(fixture.join("sector.json"))?)?;
    let label = format!("porep-c2 {:?}", sector.registered_proof);
    let engine = if args.system == "bellperson" { None } else { Some(engine(args)?) };
    for run in 0..args.repeat {
        let start = Instant::now();
        let fields = match &engine {
            Some(engine) => {
                let (_, t) = engine.seal_commit_phase2(&c1_json, sector.sector_id, sector.prover_id, &ProveOptions::default())?;
                timing_fields(&t)
            }
            None => {
                let c1 = cuzk::porep::parse_c1(&c1_json)?;
                filecoin_proofs_api::seal::seal_commit_phase2(c1, sector.prover_id, sector.sector_id.into())?;
                String::new()
            }
        };
        report(args, &label, run, start.elapsed().as_secs_f64(), &fields, engine.as_deref());
    }
    Ok(())
}

fn run_circuit(args: &Args) -> Result<()> {
    let constraints = (1usize << args.log_constraints) - 64; // room for the input constraints
    let start = Instant::now();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(u64::from(args.log_constraints));
    match args.witness.as_str() {
        "porep" | "uniform" => {
            let label = format!("circuit-2^{}-{} (synthetic key, performance only)", args.log_constraints, args.witness);
            bench_circuit(args, &label, RandomCircuit::new(&mut rng, constraints, args.witness == "porep"), start)
        }
        // The label and circuit (seed 1) the peers use for the same workload.
        "sha" => {
            let label = format!("sha-2^{} (synthetic key, performance only)", args.log_constraints);
            bench_circuit(args, &label, ShaChain::with_constraints(constraints, 1), start)
        }
        other => bail!("unknown --witness {other:?} (porep, uniform, sha)"),
    }
}

fn bench_circuit<C: Circuit<Scalar> + Clone + Send + Sync>(args: &Args, label: &str, circuit: C, made_since: Instant) -> Result<()> {
    let made = made_since.elapsed().as_secs_f64();
    // The first run's synthesis also gives the key its shape: at 2^26 a synthesis is a minute.
    let engine = engine(args)?;
    let start = Instant::now();
    let synthesized = engine.install(|| synthesize(circuit.clone(), None))?;
    let synthesis_ns = cuzk::timings::nanos(start.elapsed());
    let key = synthetic_key(&synthesized, 7);
    eprintln!("{label}: circuit made in {made:.1} s, synthetic key in {:.1} s", start.elapsed().as_secs_f64() - synthesis_ns as f64 / 1e9);
    if let Some(path) = &args.write_key {
        let start = Instant::now();
        let mut file = std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?);
        key.write(&mut file).and_then(|()| file.flush()).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("{label}: key written to {} in {:.1} s", path.display(), start.elapsed().as_secs_f64());
    }
    let mut first = Some((synthesized, synthesis_ns));
    for run in 0..args.repeat {
        let mut t = Timings::new();
        t.backend = engine.backend().kind() as u32;
        let start = Instant::now();
        let synthesized = match first.take() {
            Some((synthesized, ns)) => {
                t.synthesis_ns = ns;
                synthesized
            }
            None => cuzk::timings::timed(&mut t.synthesis_ns, || engine.install(|| synthesize(circuit.clone(), None)))?,
        };
        engine.install(|| prove_synthesized(engine.backend(), &key, synthesized, (Scalar::ONE, Scalar::ONE), None, &mut t))?;
        let wall = start.elapsed().as_secs_f64() + if run == 0 { synthesis_ns as f64 / 1e9 } else { 0.0 };
        t.total_ns = (wall * 1e9) as u64;
        report(args, &label, run, wall, &timing_fields(&t), Some(&engine));
    }
    Ok(())
}

fn run() -> Result<()> {
    let args = parse_args()?;
    match args.workload.as_str() {
        "c2" => run_c2(&args),
        _ => run_circuit(&args),
    }
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
