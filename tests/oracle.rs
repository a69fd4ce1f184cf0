//! The public circuit prover (CPU backend) against bellperson's prover on random circuits, on
//! the classic and the R1CS synthesis paths: with the same r, s the proofs must be identical
//! byte for byte, and bellperson's verifier must accept them.

use std::sync::{Arc, OnceLock};

use bellperson::groth16::{create_proof_batch, generate_random_parameters, prepare_verifying_key, verify_proof, Proof};
use blstrs::{Bls12, Scalar};
use cuzk::engine::EngineConfig;
use cuzk::timings::Timings;
use cuzk::{BackendChoice, CircuitOptions, CircuitShape, Prover, Whole};
use cuzk_tools::circuits::RandomCircuit;
use ff::Field;
use rand::SeedableRng;

fn prover() -> &'static Prover {
    static PROVER: OnceLock<Prover> = OnceLock::new();
    PROVER.get_or_init(|| Prover::new(BackendChoice::Cpu, &EngineConfig::default()).expect("CPU prover"))
}

fn check(constraints: usize, bit_heavy: bool, seed: u64) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let circuit = RandomCircuit::new(&mut rng, constraints, bit_heavy);
    let params = cuzk::ProvingKey::new(
        generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).expect("parameters"),
        "setup",
    );
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));

    let expected: Proof<Bls12> = create_proof_batch(vec![circuit.clone()], &*params, vec![r], vec![s])
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
        .prove_with_shape(&params, &shape, &Whole(circuit.clone()), &options, &mut r1cs_timings)
        .expect("cuzk proof on the R1CS path");
    assert_eq!(r1cs_timings.r1cs_synthesis, 1);

    let (mut a, mut b) = (Vec::new(), Vec::new());
    expected.write(&mut a).unwrap();
    ours.write(&mut b).unwrap();
    assert_eq!(a, b, "{constraints} constraints, bit_heavy {bit_heavy}: proofs differ");
    let mut c = Vec::new();
    ours_r1cs.write(&mut c).unwrap();
    assert_eq!(a, c, "{constraints} constraints, bit_heavy {bit_heavy}: the R1CS path's proof differs");
    let pvk = prepare_verifying_key(&params.vk);
    assert!(
        verify_proof(&pvk, &ours, &circuit.inputs).expect("verifier"),
        "bellperson rejects our proof"
    );
    assert!(timings.synthesis_ns > 0 && timings.msm_h_ns > 0 && timings.ntt_ns > 0);
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
