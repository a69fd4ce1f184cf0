//! `circuit`: a circuit of 2^K constraints with a synthetic key (performance only) or, with
//! `--setup-key`, a key from bellperson's random setup and every proof verified.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use bellperson::groth16::{prepare_verifying_key, verify_proof, Proof};
use bellperson::Circuit;
use blstrs::{Bls12, Scalar};
use cuzk::internals::{synthesize, synthesize_with_shape};
use cuzk::timings::Timings;
use cuzk::{CircuitShape, ProvingKey, Whole};
use cuzk_tools::circuits::{synthetic_key, RandomCircuit};
use cuzk_tools::setup::random_parameters;
use cuzk_tools::sha_chain::ShaChain;
use ff::Field;
use rand::SeedableRng;
use serde::Serialize;

use crate::args::{Named, System, Witness};
use crate::record::{Scalars, TimingFields};
use crate::{fixed_randomness, Bench};

/// What a run of the circuit workload measured: for cuzk its timings and scalars; "verified":
/// null for a synthetic key (its proofs cannot verify), else the verifier's answer.
#[derive(Serialize)]
struct CircuitRun<'a> {
    #[serde(flatten)]
    timings: Option<TimingFields<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scalars: Option<Scalars>,
    verified: Option<bool>,
}

pub fn run(bench: &Bench) -> Result<()> {
    let args = &bench.args;
    let constraints = (1usize << args.log_constraints) - 64; // room for the input constraints
    let start = Instant::now();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(u64::from(args.log_constraints));
    let key = if args.setup_key {
        "random-setup key, proofs verified"
    } else {
        "synthetic key, performance only"
    };
    match args.witness {
        Witness::Porep | Witness::Uniform => {
            let label = format!("circuit-2^{}-{} ({key})", args.log_constraints, args.witness.name());
            let circuit = RandomCircuit::new(&mut rng, constraints, args.witness == Witness::Porep);
            let inputs = circuit.inputs.clone();
            bench_circuit(bench, &label, circuit, &inputs, start)
        }
        // The label and circuit (seed 1) the peers use for the same workload.
        Witness::Sha => {
            let label = format!("sha-2^{} ({key})", args.log_constraints);
            let circuit = ShaChain::with_constraints(constraints, 1);
            let inputs = circuit.public_inputs();
            bench_circuit(bench, &label, circuit, &inputs, start)
        }
    }
}

/// `inputs`: the circuit's public inputs (without ONE), against which proofs made with a
/// random-setup key are verified.
fn bench_circuit<C: Circuit<Scalar> + Clone + Send + Sync>(
    bench: &Bench,
    label: &str,
    circuit: C,
    inputs: &[Scalar],
    made_since: Instant,
) -> Result<()> {
    let args = &bench.args;
    let made = made_since.elapsed().as_secs_f64();
    // The first run's (classic) synthesis also gives the key its shape: at 2^26 a synthesis is
    // a minute.
    let engine = bench.engine()?;
    let start = Instant::now();
    let synthesized = engine.prover().install(|| synthesize(circuit.clone(), None))?;
    let synthesis_ns = cuzk::timings::nanos(start.elapsed());
    let key = match args.setup_key {
        true => {
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
            ProvingKey::new(random_parameters(circuit.clone(), &mut rng)?, "random setup (seed 7)")
        }
        false => synthetic_key(&synthesized, 7),
    };
    let vk = args.setup_key.then(|| prepare_verifying_key(&key.vk));
    let verified = |proof: &Proof<Bls12>| -> Result<Option<bool>> {
        let Some(vk) = &vk else { return Ok(None) };
        let valid = verify_proof(vk, proof, inputs)?;
        if !valid {
            eprintln!("{label}: PROOF DID NOT VERIFY");
        }
        Ok(Some(valid))
    };
    eprintln!(
        "{label}: circuit made in {made:.1} s, key in {:.1} s",
        start.elapsed().as_secs_f64() - synthesis_ns as f64 / 1e9
    );
    if let Some(path) = &args.write_key {
        write_key(&key, path, label)?;
    }
    if args.system == System::Bellperson {
        // bellperson's CPU prover, its own synthesis included, on the same circuit and key.
        drop(synthesized);
        for run in 0..args.repeat {
            let start = Instant::now();
            let proof = bellperson::groth16::create_proof_batch(
                vec![circuit.clone()],
                &*key.held_host_points().context("a synthetic key is made in memory")?,
                vec![Scalar::ONE],
                vec![Scalar::ONE],
            )?
            .remove(0);
            let wall = start.elapsed().as_secs_f64();
            let measured = CircuitRun {
                timings: None,
                scalars: None,
                verified: verified(&proof)?,
            };
            bench.report(label, run, wall, &measured, Some(&engine));
        }
        return Ok(());
    }
    // Later runs synthesize as the engine does (the R1CS path: the shape extracted once, then
    // per proof the witness and A·z, B·z, C·z), or classically when the engine is configured
    // to (CUZK_SYNTHESIS=classic).
    let shape = match bench.config.classic_synthesis {
        true => None,
        false => {
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
        let scalars = Scalars::of(&synthesized);
        let counting = counting.elapsed();
        let proof = engine.prover().prove_synthesized(&key, synthesized, &fixed_randomness(), &mut t)?;
        let wall = (start.elapsed() - counting).as_secs_f64() + if run == 0 { synthesis_ns as f64 / 1e9 } else { 0.0 };
        t.total_ns = (wall * 1e9) as u64;
        let measured = CircuitRun {
            timings: Some(TimingFields(&t)),
            scalars: Some(scalars),
            verified: verified(&proof)?,
        };
        bench.report(label, run, wall, &measured, Some(&engine));
    }
    Ok(())
}

/// `key` (made in memory) written to `path` in bellperson's params format
/// (`cuzk_tools::params_file`; `what` names the workload in the log line).
pub(crate) fn write_key(key: &ProvingKey, path: &Path, what: &str) -> Result<()> {
    let start = Instant::now();
    let params = key.held_host_points().context("a synthetic key is made in memory")?;
    cuzk_tools::params_file::write_parameters(&params, path)?;
    eprintln!(
        "{what}: key written to {} in {:.1} s (not timed)",
        path.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
