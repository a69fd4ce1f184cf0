//! Our synthesis + CPU backend against bellperson's prover on random circuits: with the same
//! r, s the proofs must be identical byte for byte, and bellperson's verifier must accept them.

use std::sync::Arc;

use bellperson::groth16::{create_proof_batch, generate_random_parameters, prepare_verifying_key, verify_proof, Proof};
use blstrs::{Bls12, Scalar};
use cuzk::engine::{Engine, EngineConfig};
use cuzk::testing::RandomCircuit;
use cuzk::timings::Timings;
use ff::Field;
use rand::SeedableRng;

fn engine() -> Arc<Engine> {
    Engine::acquire(EngineConfig {
        cpu_only: true,
        ..Default::default()
    })
    .expect("engine")
}

fn check(constraints: usize, bit_heavy: bool, seed: u64) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let circuit = RandomCircuit::new(&mut rng, constraints, bit_heavy);
    let params = cuzk::groth16::ProvingKey::new(
        generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).expect("parameters"),
        "setup",
    );
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));

    let expected: Proof<Bls12> = create_proof_batch(vec![circuit.clone()], &*params, vec![r], vec![s])
        .expect("bellperson proof")
        .remove(0);
    let mut timings = Timings::new();
    let ours = engine()
        .prove_circuit(&params, circuit.clone(), (r, s), None, &mut timings)
        .expect("cuzk proof");

    let (mut a, mut b) = (Vec::new(), Vec::new());
    expected.write(&mut a).unwrap();
    ours.write(&mut b).unwrap();
    assert_eq!(a, b, "{constraints} constraints, bit_heavy {bit_heavy}: proofs differ");
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
