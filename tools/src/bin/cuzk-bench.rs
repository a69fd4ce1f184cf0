//! cuzk-bench: one system per process (so peak RSS belongs to that system); prints a table row
//! on stderr and a JSON line on stdout per run.
//!
//!   cuzk-bench c2 --system cuzk|cuzk-streamed|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]
//!       PoRep C2 of a fixture made by `cuzk-fixtures seal`.
//!   cuzk-bench circuit --system cuzk|cuzk-streamed|cuzk-cpu|bellperson --log-constraints K [--witness porep|uniform|sha]
//!                      [--write-key FILE] [--repeat N]
//!       a circuit of 2^K constraints with a synthetic key: PERFORMANCE ONLY (its proofs cannot
//!       verify), for sizes no test parameters exist for. porep|uniform: a random circuit whose
//!       witness is PoRep-like (mostly 0/1) or uniform; sha: the SHA-256 chain of
//!       src/workloads/sha_chain.rs, also proven by the peers under bench/peers/, which read the
//!       key that --write-key saves (bellperson's params format). --setup-key (K <= 20): a key
//!       from bellperson's random setup instead, and every proof verified ("verified" field).
//!
//!   cuzk-bench porep-partition --system cuzk|cuzk-streamed|cuzk-cpu --sector-size 2KiB|8MiB|512MiB|32GiB|64GiB
//!                              [--check-shape] [--repeat N]
//!       one partition of the real PoRep circuit of that sector size (32GiB: 130M constraints,
//!       domain 2^27), made from made-up vanilla proofs of the right geometry, with a synthetic
//!       key: PERFORMANCE ONLY. The R1CS path as the engine runs it (shape extracted in parallel
//!       once, then per proof the witness with the challenges in parallel, A·z, B·z, C·z, GPU).
//!       --check-shape also records filecoin-proofs' blank circuit sequentially and fails unless
//!       its shape is the made-up partition's (the engine's preload relies on it).
//!
//!   cuzk-bench porep-sector --system cuzk|cuzk-cpu --sector-size 32GiB [--sectors 1,2,4] [--partitions P] [--lanes L] [--repeat N]
//!       whole sectors of made-up partitions (PERFORMANCE ONLY, synthetic key) through the
//!       engine's pipeline, N sectors per call (one record per call): partitions synthesized
//!       while earlier ones are proven, within the host memory budget. Records the wall time
//!       per sector, the device's and each stage's busy fraction, each partition's timings.
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
use bellperson::groth16::{generate_random_parameters, prepare_verifying_key, verify_proof, Proof};
use bellperson::Circuit;
use blstrs::Bls12;
use blstrs::Scalar;
use cuzk::engine::{Engine, EngineConfig, ProveOptions};
use cuzk::internals::porep;
use cuzk::internals::{synthesize, SynthesizedCircuit};
use cuzk::internals::{synthesize_with_shape, MadeUpSector, SectorInput};
use cuzk::timings::BackendKind;
use cuzk::timings::Timings;
use cuzk::with_porep_shape;
use cuzk::{CircuitOptions, ProvingKey};
use cuzk::{CircuitShape, Whole};
use cuzk_tools::circuits::{synthetic_key, RandomCircuit};
use cuzk_tools::fixtures::SealedSector;
use cuzk_tools::sha_chain::ShaChain;
use ff::Field;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use std::io::Write;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::StackedCompound;

struct Args {
    workload: String,
    system: String,
    fixture: Option<PathBuf>,
    params: Option<PathBuf>,
    log_constraints: u32,
    witness: String,
    write_key: Option<PathBuf>,
    repeat: usize,
    sector_size: String,
    check_shape: bool,
    /// Prove with a key from bellperson's random setup (`--setup-key`) and verify every proof.
    setup_key: bool,
    /// porep-partition: alternate runs with a, b, c on the device and on the host.
    compare_spmv: bool,
    /// porep-sector: sectors per call, one call per entry and run (`--sectors 1,2,4`).
    sectors: Vec<usize>,
    /// porep-sector: partitions per sector (default: the proof kind's).
    partitions: Option<usize>,
    /// porep-sector: the engine's proving lanes (`EngineConfig::proving_lanes`; 0: automatic).
    lanes: usize,
}

const USAGE: &str = "usage: cuzk-bench c2 --system cuzk|cuzk-streamed|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]\n       cuzk-bench circuit --system cuzk|cuzk-streamed|cuzk-cpu|bellperson --log-constraints K [--witness porep|uniform|sha] [--setup-key] [--write-key FILE] [--repeat N]\n       cuzk-bench porep-partition --system cuzk|cuzk-streamed|cuzk-cpu --sector-size 2KiB|8MiB|512MiB|32GiB|64GiB [--check-shape] [--compare-spmv] [--repeat N]\n       cuzk-bench porep-sector --system cuzk|cuzk-cpu --sector-size 2KiB|8MiB|512MiB|32GiB|64GiB [--sectors N,N..] [--partitions P] [--lanes L] [--repeat N]";

fn parse_args() -> Result<Args> {
    let mut argv = std::env::args().skip(1);
    let workload = argv.next().unwrap_or_default();
    if !["c2", "circuit", "porep-partition", "porep-sector"].contains(&workload.as_str()) {
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
        sector_size: "32GiB".into(),
        check_shape: false,
        setup_key: false,
        compare_spmv: false,
        sectors: vec![1],
        partitions: None,
        lanes: 0,
    };
    while let Some(flag) = argv.next() {
        if ["--check-shape", "--setup-key", "--compare-spmv"].contains(&flag.as_str()) {
            args.check_shape |= flag == "--check-shape";
            args.setup_key |= flag == "--setup-key";
            args.compare_spmv |= flag == "--compare-spmv";
            continue;
        }
        let value = argv.next().with_context(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--system" => args.system = value,
            "--fixture" => args.fixture = Some(PathBuf::from(value)),
            "--params" => args.params = Some(PathBuf::from(value)),
            "--log-constraints" => args.log_constraints = value.parse().context("--log-constraints")?,
            "--witness" => args.witness = value,
            "--write-key" => args.write_key = Some(PathBuf::from(value)),
            "--repeat" => args.repeat = value.parse().context("--repeat")?,
            "--sector-size" => args.sector_size = value,
            "--sectors" => args.sectors = value.split(',').map(|n| n.parse().context("--sectors")).collect::<Result<_>>()?,
            "--partitions" => args.partitions = Some(value.parse().context("--partitions")?),
            "--lanes" => args.lanes = value.parse().context("--lanes")?,
            _ => bail!("unknown flag {flag}\n{USAGE}"),
        }
    }
    if args.setup_key && args.log_constraints > 20 {
        bail!("--setup-key: a random setup above 2^20 constraints takes too long; use the synthetic key");
    }
    if !["cuzk", "cuzk-streamed", "cuzk-cpu", "bellperson"].contains(&args.system.as_str())
        || (args.workload.starts_with("porep-") && args.system == "bellperson")
    {
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

/// Host memory of one run apart from what the process held before it (keys, shapes): Linux
/// resets the peak (VmHWM) on `clear_refs` 5, so the peak read at the end is the run's own.
struct RunMemory {
    baseline_mib: Option<f64>,
}

impl RunMemory {
    fn start() -> Self {
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        RunMemory {
            baseline_mib: if reset { proc_status_mib("VmRSS") } else { None },
        }
    }

    /// `"run_baseline_rss_mib"` (resident at the start) and `"run_peak_rss_mib"` (the peak
    /// since), null where the kernel does not say.
    fn fields(&self) -> String {
        let peak = self.baseline_mib.and(proc_status_mib("VmHWM"));
        let json = |v: Option<f64>| v.map_or("null".to_string(), |v| format!("{v:.0}"));
        format!("\"run_baseline_rss_mib\":{},\"run_peak_rss_mib\":{}", json(self.baseline_mib), json(peak))
    }
}

/// A `kB` line of /proc/self/status in MiB.
fn proc_status_mib(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?;
    let kib: f64 = line.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib / 1024.0)
}

fn engine(args: &Args) -> Result<Arc<Engine>> {
    let config = EngineConfig {
        param_cache_dir: args.params.clone(),
        cpu_only: args.system == "cuzk-cpu",
        gpu_key_memory_budget: if args.system == "cuzk-streamed" { 1 } else { 0 },
        proving_lanes: args.lanes,
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
        format!("\"spmv_on\":\"{}\"", if t.spmv_on_device == 1 { "device" } else { "host" }),
    ];
    fields.extend(t.phases().iter().map(|(name, ns)| format!("\"{name}_s\":{:.4}", *ns as f64 / 1e9)));
    fields.join(",")
}

/// Where a record was measured: the commit (CUZK_BENCH_COMMIT, which scripts/gpu-run.sh sets
/// from carry/COMMIT), the host, the CUDA driver (CUZK_BENCH_CUDA, from nvidia-smi), and for
/// cuzk's GPU systems the device and the device memory in use after the run, in all and by
/// cuzk (keys, NTT buffers), from the engine status: of the first device, with the number of
/// devices the engine uses.
fn machine_fields(engine: Option<&Engine>) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let host_memory_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().trim_end_matches(" kB").parse::<u64>().ok()))
        })
        .flatten()
        .map_or(0, |kib| kib >> 20);
    let mut fields = serde_json::json!({
        "commit": std::env::var("CUZK_BENCH_COMMIT").unwrap_or_else(|_| "unknown".into()),
        "host": host,
        "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "host_memory_gib": host_memory_gib,
        "cuda": std::env::var("CUZK_BENCH_CUDA").ok(),
    });
    let devices = engine.map(|e| e.status().devices).unwrap_or_default();
    if let Some(device) = devices.first() {
        fields["gpus"] = devices.len().into();
        fields["gpu"] = device.name.clone().into();
        fields["gpu_memory_mib"] = (device.memory_total >> 20).into();
        fields["device_memory_in_use_mib"] = ((device.memory_total - device.memory_free) >> 20).into();
        fields["device_memory_cuzk_mib"] = (device.memory_used_by_cuzk >> 20).into();
    }
    let object = fields.to_string();
    object[1..object.len() - 1].to_string()
}

fn report(args: &Args, label: &str, run: usize, wall: f64, fields: &str, engine: Option<&Engine>) {
    report_as(&system_name(args), label, run, wall, fields, engine)
}

/// `--system`, with what the environment forces as part of the name: a 0/1 split
/// (CUZK_GPU_SPLIT, for measuring the GPU's cost model), a, b, c on the host (CUZK_SPMV=host),
/// classic synthesis (CUZK_SYNTHESIS=classic).
fn system_name(args: &Args) -> String {
    let mut system = args.system.clone();
    match std::env::var("CUZK_GPU_SPLIT") {
        Ok(split) if !split.is_empty() && args.system.starts_with("cuzk") && args.system != "cuzk-cpu" => system += &format!("[split={split}]"),
        _ => {}
    }
    if std::env::var("CUZK_SPMV").as_deref() == Ok("host") && args.system.starts_with("cuzk") && args.system != "cuzk-cpu" {
        system += "[spmv=host]";
    }
    if std::env::var("CUZK_SYNTHESIS").as_deref() == Ok("classic") && args.system.starts_with("cuzk") {
        system += "[classic synthesis]";
    }
    system
}

fn report_as(system: &str, label: &str, run: usize, wall: f64, fields: &str, engine: Option<&Engine>) {
    let rss = peak_rss_mib();
    let threads = rayon::current_num_threads();
    eprintln!("{system:<11} {label} run {run}: wall {wall:8.3} s  peak RSS {rss:8.0} MiB  ({threads} threads)");
    let sep = if fields.is_empty() { "" } else { "," };
    let machine = machine_fields(engine);
    let window = window_fields();
    println!(
        "{{\"workload\":\"{label}\",\"system\":\"{system}\",\"run\":{run},\"threads\":{threads},\"wall_s\":{wall:.3},\"peak_rss_mib\":{rss:.0},{window},{machine}{sep}{fields}}}"
    );
}

/// How the aux scalars of each MSM split into zeros (skipped), ones (batch addition) and
/// full-width values (tail MSMs): `"scalars":{"l":[zeros,ones,full],"a":[..],"b":[..]}`, from
/// which scripts/bench-table.py computes each phase's arithmetic floor.
fn scalar_fields(synthesized: &SynthesizedCircuit) -> String {
    let count = |density: Option<&cuzk::internals::Density>| {
        let (mut zeros, mut ones, mut full) = (0u64, 0u64, 0u64);
        for (i, value) in synthesized.aux_assignment.iter().enumerate() {
            if density.is_some_and(|d| !d.get(i)) {
                continue;
            }
            match value {
                v if bool::from(v.is_zero()) => zeros += 1,
                v if *v == Scalar::ONE => ones += 1,
                _ => full += 1,
            }
        }
        format!("[{zeros},{ones},{full}]")
    };
    format!(
        "\"scalars\":{{\"l\":{},\"a\":{},\"b\":{}}}",
        count(None),
        count(Some(&synthesized.a_aux_density)),
        count(Some(&synthesized.b_aux_density))
    )
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
                let proven = engine.seal_commit_phase2(&c1_json, sector.sector_id, sector.prover_id, &ProveOptions::default())?;
                timing_fields(&proven.timings)
            }
            None => {
                let c1 = cuzk::internals::porep::parse_c1(&c1_json)?;
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
    let key = if args.setup_key {
        "random-setup key, proofs verified"
    } else {
        "synthetic key, performance only"
    };
    match args.witness.as_str() {
        "porep" | "uniform" => {
            let label = format!("circuit-2^{}-{} ({key})", args.log_constraints, args.witness);
            let circuit = RandomCircuit::new(&mut rng, constraints, args.witness == "porep");
            let inputs = circuit.inputs.clone();
            bench_circuit(args, &label, circuit, &inputs, start)
        }
        // The label and circuit (seed 1) the peers use for the same workload.
        "sha" => {
            let label = format!("sha-2^{} ({key})", args.log_constraints);
            let circuit = ShaChain::with_constraints(constraints, 1);
            let inputs = circuit.public_inputs();
            bench_circuit(args, &label, circuit, &inputs, start)
        }
        other => bail!("unknown --witness {other:?} (porep, uniform, sha)"),
    }
}

/// `inputs`: the circuit's public inputs (without ONE), against which proofs made with a
/// random-setup key are verified.
fn bench_circuit<C: Circuit<Scalar> + Clone + Send + Sync>(
    args: &Args,
    label: &str,
    circuit: C,
    inputs: &[Scalar],
    made_since: Instant,
) -> Result<()> {
    let made = made_since.elapsed().as_secs_f64();
    // The first run's (classic) synthesis also gives the key its shape: at 2^26 a synthesis is
    // a minute.
    let engine = engine(args)?;
    let start = Instant::now();
    let synthesized = engine.prover().install(|| synthesize(circuit.clone(), None))?;
    let synthesis_ns = cuzk::timings::nanos(start.elapsed());
    let key = match args.setup_key {
        true => {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
            ProvingKey::new(
                generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng)?,
                "random setup (seed 7)",
            )
        }
        false => synthetic_key(&synthesized, 7),
    };
    let vk = args.setup_key.then(|| prepare_verifying_key(&key.vk));
    // "verified": null for a synthetic key (its proofs cannot verify), else the verifier's answer.
    let verified = |proof: &Proof<Bls12>| -> Result<String> {
        Ok(match &vk {
            Some(vk) => {
                let valid = verify_proof(vk, proof, inputs)?;
                if !valid {
                    eprintln!("{label}: PROOF DID NOT VERIFY");
                }
                format!("\"verified\":{valid}")
            }
            None => "\"verified\":null".into(),
        })
    };
    eprintln!(
        "{label}: circuit made in {made:.1} s, key in {:.1} s",
        start.elapsed().as_secs_f64() - synthesis_ns as f64 / 1e9
    );
    if let Some(path) = &args.write_key {
        let start = Instant::now();
        let mut file = std::io::BufWriter::new(std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?);
        key.write(&mut file)
            .and_then(|()| file.flush())
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("{label}: key written to {} in {:.1} s", path.display(), start.elapsed().as_secs_f64());
    }
    if args.system == "bellperson" {
        // bellperson's CPU prover, its own synthesis included, on the same circuit and key.
        drop(synthesized);
        for run in 0..args.repeat {
            let start = Instant::now();
            let proof = bellperson::groth16::create_proof_batch(vec![circuit.clone()], &*key, vec![Scalar::ONE], vec![Scalar::ONE])?.remove(0);
            let wall = start.elapsed().as_secs_f64();
            report(args, label, run, wall, &verified(&proof)?, Some(&engine));
        }
        return Ok(());
    }
    // Later runs synthesize as the engine does (the R1CS path: the shape extracted once, then
    // per proof the witness and A·z, B·z, C·z), or classically with CUZK_SYNTHESIS=classic.
    let shape = match std::env::var("CUZK_SYNTHESIS").as_deref() {
        Ok("classic") => None,
        _ => {
            let start = Instant::now();
            let shape = Arc::new(engine.prover().install(|| CircuitShape::extract(circuit.clone()))?);
            eprintln!(
                "{label}: shape {} MiB extracted in {:.2} s (not timed)",
                shape.size_bytes() >> 20,
                start.elapsed().as_secs_f64()
            );
            Some(shape)
        }
    };
    let whole = Whole(circuit.clone());
    let mut first = Some((synthesized, synthesis_ns));
    for run in 0..args.repeat {
        let mut t = Timings::new();
        t.backend = engine.prover().backend_kind() as u32;
        let start = Instant::now();
        let synthesized = match (first.take(), &shape) {
            (Some((synthesized, ns)), _) => {
                t.synthesis_ns = ns;
                synthesized
            }
            (None, Some(shape)) => engine
                .prover()
                .install(|| synthesize_with_shape(engine.prover().evaluates_products(), shape, &whole, None, &mut t))?,
            (None, None) => cuzk::timings::timed(&mut t.synthesis_ns, || engine.prover().install(|| synthesize(circuit.clone(), None)))?,
        };
        let counting = Instant::now();
        let scalars = scalar_fields(&synthesized);
        let counting = counting.elapsed();
        let proof = engine.prover().prove_synthesized(&key, synthesized, &fixed_randomness(), &mut t)?;
        let wall = (start.elapsed() - counting).as_secs_f64() + if run == 0 { synthesis_ns as f64 / 1e9 } else { 0.0 };
        t.total_ns = (wall * 1e9) as u64;
        report(
            args,
            label,
            run,
            wall,
            &format!("{},{scalars},{}", timing_fields(&t), verified(&proof)?),
            Some(&engine),
        );
    }
    Ok(())
}

fn run_porep_partition(args: &Args) -> Result<()> {
    use filecoin_proofs::constants as c;
    use RegisteredSealProof as P;
    match sector_proof(args)? {
        proof @ P::StackedDrg2KiBV1_1 => bench_partition::<c::SectorShape2KiB>(args, proof),
        proof @ P::StackedDrg8MiBV1_1 => bench_partition::<c::SectorShape8MiB>(args, proof),
        proof @ P::StackedDrg512MiBV1_1 => bench_partition::<c::SectorShape512MiB>(args, proof),
        proof @ P::StackedDrg32GiBV1_1 => bench_partition::<c::SectorShape32GiB>(args, proof),
        proof @ P::StackedDrg64GiBV1_1 => bench_partition::<c::SectorShape64GiB>(args, proof),
        other => unreachable!("sector_proof gave {other:?}"),
    }
}

/// The proof kind of `--sector-size`.
fn sector_proof(args: &Args) -> Result<RegisteredSealProof> {
    use RegisteredSealProof as P;
    Ok(match args.sector_size.as_str() {
        "2KiB" => P::StackedDrg2KiBV1_1,
        "8MiB" => P::StackedDrg8MiBV1_1,
        "512MiB" => P::StackedDrg512MiBV1_1,
        "32GiB" => P::StackedDrg32GiBV1_1,
        "64GiB" => P::StackedDrg64GiBV1_1,
        other => bail!("unknown --sector-size {other:?}\n{USAGE}"),
    })
}

/// Whole made-up sectors through the engine's pipeline (`Engine::prove_sectors`), several per
/// call: per call the wall time per sector, the busy fraction of the device and of each stage
/// over the call, every partition's timings. `--sectors 1` runs are the sequential baseline of
/// the batches' throughput.
fn run_porep_sector(args: &Args) -> Result<()> {
    let proof = sector_proof(args)?;
    let config = porep::porep_config(proof)?;
    let partitions = args.partitions.unwrap_or(usize::from(config.partitions));
    let short = args.sector_size.to_lowercase().trim_end_matches("ib").to_string();
    let engine = engine(args)?;
    let mut t = Timings::new();
    let shape = engine.porep_shape(proof, &mut t)?.context("porep-sector needs the R1CS synthesis path")?;
    // The synthetic key needs a synthesized partition's sizes and densities (not timed).
    let start = Instant::now();
    let synthesized = with_porep_shape!(proof, made_up_partition(&engine, &config, &shape))?;
    let key = Arc::new(synthetic_key(&synthesized, 7));
    drop(synthesized);
    eprintln!(
        "porep-{short}-sector: {} constraints a partition, synthetic key made in {:.1} s (not timed)",
        shape.num_constraints(),
        start.elapsed().as_secs_f64()
    );
    for &sectors in &args.sectors {
        let label =
            format!("porep-{short}-sector x{sectors} ({partitions} partitions each; made-up vanilla proofs, synthetic key, performance only)");
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
            let memory = RunMemory::start();
            let start = Instant::now();
            let results = engine.prove_sectors(&inputs, &ProveOptions::default())?;
            let wall = start.elapsed().as_secs_f64();
            let after = engine.status();
            let mut sum = Timings::new();
            let mut partition_records = Vec::new();
            for result in results {
                let proven = result?;
                sum.merge(&proven.timings);
                partition_records.extend(proven.partitions.iter().map(|p| {
                    serde_json::json!({"sector": p.sector_index, "partition": p.partition_index, "witness_s": p.witness_ns as f64 / 1e9,
                        "synthesis_s": p.synthesis_ns as f64 / 1e9, "proving_wait_s": p.proving_wait_ns as f64 / 1e9, "total_s": p.total_ns as f64 / 1e9})
                }));
            }
            sum.total_ns = (wall * 1e9) as u64;
            let busy = |ns: u64| ns as f64 / 1e9 / wall;
            // Per device: the busy fraction and the partitions it proved (how a call spread over
            // the GPUs); gpu_busy_fraction is their mean.
            let devices: Vec<(f64, u64)> = before
                .devices
                .iter()
                .zip(&after.devices)
                .map(|(b, a)| (busy(a.busy_ns - b.busy_ns), a.proofs_done - b.proofs_done))
                .collect();
            let device_busy = match devices.len() {
                0 => "null".into(),
                n => format!("{:.3}", devices.iter().map(|d| d.0).sum::<f64>() / n as f64),
            };
            let device_busy_each: Vec<String> = devices.iter().map(|d| format!("{:.3}", d.0)).collect();
            let device_partitions: Vec<String> = devices.iter().map(|d| d.1.to_string()).collect();
            let fields = format!(
                "{},{},\"sectors\":{sectors},\"partitions\":{partitions},\"proving_lanes\":{},\"wall_per_sector_s\":{:.3},\"gpu_busy_fraction\":{device_busy},\"device_busy_fractions\":[{}],\"device_partitions\":[{}],\"synthesis_busy_fraction\":{:.3},\"proving_busy_fraction\":{:.3},\"partition_timings\":{}",
                timing_fields(&sum),
                memory.fields(),
                engine.default_proving_lanes(),
                wall / sectors as f64,
                device_busy_each.join(","),
                device_partitions.join(","),
                busy(after.pipeline.synthesis_busy_ns - before.pipeline.synthesis_busy_ns),
                busy(after.pipeline.proving_busy_ns - before.pipeline.proving_busy_ns),
                serde_json::Value::from(partition_records)
            );
            report(args, &label, run, wall, &fields, Some(&engine));
        }
    }
    Ok(())
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

fn bench_partition<Tree: 'static + MerkleTreeTrait>(args: &Args, proof: RegisteredSealProof) -> Result<()> {
    let short = args.sector_size.to_lowercase().trim_end_matches("ib").to_string();
    let label = format!("porep-{short}-partition (made-up vanilla proofs, synthetic key, performance only)");
    let config = porep::porep_config(proof)?;
    let engine = engine(args)?;
    let start = Instant::now();
    let shape = Arc::new(
        engine
            .prover()
            .install(|| CircuitShape::extract_parallel(&porep::synthetic_partition_circuit::<Tree>(&config, 0)?))?,
    );
    let shape_extract_ns = cuzk::timings::nanos(start.elapsed());
    eprintln!(
        "{label}: {} constraints, {} inputs, {} aux; shape {} MiB extracted in {:.2} s (challenges in parallel)",
        shape.num_constraints(),
        shape.num_inputs(),
        shape.num_aux(),
        shape.size_bytes() >> 20,
        shape_extract_ns as f64 / 1e9
    );
    if args.check_shape {
        let start = Instant::now();
        let params = filecoin_proofs::parameters::public_params::<Tree>(&config)?;
        let blank = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&params);
        let theirs = CircuitShape::extract(blank)?;
        if theirs != *shape {
            bail!(
                "the made-up partition's shape differs from filecoin-proofs' blank circuit's ({} vs {} constraints)",
                shape.num_constraints(),
                theirs.num_constraints()
            );
        }
        eprintln!(
            "{label}: equal to the blank circuit's shape, recorded sequentially in {:.2} s",
            start.elapsed().as_secs_f64()
        );
    }
    let mut key = None;
    for run in 0..args.repeat {
        // Fresh values every run, as every sector has.
        let circuit = porep::synthetic_partition_circuit::<Tree>(&config, run as u64 + 1)?;
        let mut t = Timings::new();
        t.backend = engine.prover().backend_kind() as u32;
        t.shape_extract_ns = if run == 0 { shape_extract_ns } else { 0 };
        let memory = RunMemory::start();
        let start = Instant::now();
        // --compare-spmv: odd runs compute a, b, c on the host, beside the device's even runs.
        let host_products = args.compare_spmv && run % 2 == 1;
        let defer = engine.prover().evaluates_products() && !host_products;
        let synthesized = engine.prover().install(|| synthesize_with_shape(defer, &shape, &circuit, None, &mut t))?;
        let synthesis_done = start.elapsed();
        let scalars = scalar_fields(&synthesized);
        let key = key.get_or_insert_with(|| {
            let start = Instant::now();
            let key = synthetic_key(&synthesized, 7);
            eprintln!("{label}: synthetic key made in {:.1} s (not timed)", start.elapsed().as_secs_f64());
            key
        });
        let start = Instant::now();
        engine.prover().prove_synthesized(key, synthesized, &fixed_randomness(), &mut t)?;
        let wall = (synthesis_done + start.elapsed()).as_secs_f64();
        t.total_ns = (wall * 1e9) as u64;
        let system = system_name(args) + if host_products { "[spmv=host]" } else { "" };
        report_as(
            &system,
            &label,
            run,
            wall,
            &format!("{},{scalars},{}", timing_fields(&t), memory.fields()),
            Some(&engine),
        );
    }
    Ok(())
}

fn run() -> Result<()> {
    let args = parse_args()?;
    match args.workload.as_str() {
        "c2" => run_c2(&args),
        "porep-partition" => run_porep_partition(&args),
        "porep-sector" => run_porep_sector(&args),
        _ => run_circuit(&args),
    }
}

/// When this process started, for the peak device memory of its records (see `window_fields`).
static STARTED_UNIX_MS: std::sync::OnceLock<u128> = std::sync::OnceLock::new();

fn unix_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// The process's lifetime so far: scripts/gpu-run.sh samples the device's memory in use
/// (nvidia-smi) and gives each record the peak over this window, as peak RSS is for the host.
fn window_fields() -> String {
    format!(
        "\"started_unix_ms\":{},\"reported_unix_ms\":{}",
        STARTED_UNIX_MS.get().copied().unwrap_or(0),
        unix_ms()
    )
}

fn main() -> ExitCode {
    STARTED_UNIX_MS.get_or_init(unix_ms);
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cuzk-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// r = s = 1: every system proves the same bytes for the same circuit and key.
fn fixed_randomness() -> CircuitOptions {
    CircuitOptions {
        randomness: Some((Scalar::ONE, Scalar::ONE)),
        cancel: None,
    }
}
