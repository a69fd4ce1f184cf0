//! The public circuit prover (CPU backend) against bellperson's prover on random circuits, on
//! the classic and the R1CS synthesis paths: with the same r, s the proofs must be identical
//! byte for byte, and bellperson's verifier must accept them.

use std::sync::{Arc, OnceLock};

use bellperson::groth16::{create_proof_batch, prepare_verifying_key, verify_proof, Proof};
use blstrs::{Bls12, Scalar};
use cuzk::engine::EngineConfig;
use cuzk::timings::Timings;
use cuzk::{BackendChoice, CircuitOptions, CircuitShape, Prover, Whole};
use cuzk_tools::circuits::{OnlyTheConstant, RandomCircuit};
use cuzk_tools::setup::random_parameters;
use ff::Field;
use rand::SeedableRng;

fn prover() -> &'static Prover {
    static PROVER: OnceLock<Prover> = OnceLock::new();
    PROVER.get_or_init(|| Prover::new(BackendChoice::Cpu, &EngineConfig::default()).expect("CPU prover"))
}

fn check(constraints: usize, bit_heavy: bool, seed: u64) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let circuit = RandomCircuit::new(&mut rng, constraints, bit_heavy);
    let inputs = circuit.inputs.clone();
    let timings = check_circuit(circuit, &inputs, &mut rng, &format!("{constraints} constraints, bit_heavy {bit_heavy}"));
    assert!(timings.synthesis_ns > 0 && timings.msm_h_ns > 0 && timings.ntt_ns > 0);
}

/// Our proof of `circuit` (public inputs `inputs`), on both synthesis paths, is bellperson's
/// for the same r, s, and bellperson's verifier accepts it.
fn check_circuit<C: bellperson::Circuit<Scalar> + Clone + Send + Sync>(
    circuit: C,
    inputs: &[Scalar],
    rng: &mut rand_chacha::ChaCha20Rng,
    what: &str,
) -> Timings {
    let params = cuzk::ProvingKey::new(random_parameters(circuit.clone(), &mut *rng).expect("parameters"), "setup");
    let (r, s) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));

    let expected: Proof<Bls12> = create_proof_batch(vec![circuit.clone()], &*params.held_host_points().unwrap(), vec![r], vec![s])
        .expect("bellperson proof")
        .remove(0);
    let options = CircuitOptions {
        randomness: Some((r, s)),
        cancel: None,
    };
    let mut timings = Timings::new();
    let ours = prover().prove(&params, circuit.clone(), &options, &mut timings).expect("cuzk proof");
    let shape = Arc::new(CircuitShape::extract(circuit.clone()).expect("shape"));
    let mut r1cs_timings = Timings::new();
    let ours_r1cs = prover()
        .prove_with_shape(&params, &shape, &Whole(circuit), &options, &mut r1cs_timings)
        .expect("cuzk proof on the R1CS path");
    assert_eq!(r1cs_timings.r1cs_synthesis, 1);

    let (mut a, mut b) = (Vec::new(), Vec::new());
    expected.write(&mut a).unwrap();
    ours.write(&mut b).unwrap();
    assert_eq!(a, b, "{what}: proofs differ");
    let mut c = Vec::new();
    ours_r1cs.write(&mut c).unwrap();
    assert_eq!(a, c, "{what}: the R1CS path's proof differs");
    let pvk = prepare_verifying_key(&params.vk);
    assert!(
        verify_proof(&pvk, &ours, inputs).expect("verifier"),
        "{what}: bellperson rejects our proof"
    );
    timings
}

/// The smallest circuits: only the constant input (one constraint, a domain of size 1, an
/// empty H query), inputs without constraints of their own (domain 4), one constraint.
#[test]
fn smallest_circuits_match_bellperson() {
    let seed: u64 = rand::random();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    check_circuit(OnlyTheConstant, &[], &mut rng, &format!("only the constant input, seed {seed}"));
    for constraints in [0, 1] {
        check(constraints, false, rand::random());
    }
}

#[test]
fn tiny_circuits_match_bellperson() {
    for (i, n) in [1usize, 2, 5, 31].into_iter().enumerate() {
        check(n, i % 2 == 0, rand::random());
        check(n, i % 2 == 1, rand::random());
    }
}

#[test]
fn bit_heavy_2_pow_10_matches_bellperson() {
    check(1 << 10, true, rand::random());
}

#[test]
fn uniform_2_pow_10_matches_bellperson() {
    check((1 << 10) - 3, false, rand::random());
}

#[test]
fn bit_heavy_2_pow_14_matches_bellperson() {
    check((1 << 14) + 5, true, rand::random());
}
