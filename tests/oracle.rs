//! Our synthesis + CPU backend against bellperson's prover on random circuits: with the same
//! r, s the proofs must be identical byte for byte, and bellperson's verifier must accept them.

use std::sync::Arc;

use bellperson::groth16::{create_proof_batch, generate_random_parameters, prepare_verifying_key, verify_proof, Proof};
use bellperson::{Circuit, ConstraintSystem, SynthesisError, Variable};
use blstrs::{Bls12, Scalar};
use cuzk::engine::{Engine, EngineConfig};
use cuzk::timings::Timings;
use ff::Field;
use rand::{Rng, SeedableRng};

/// A circuit of `n` multiplication constraints over a witness shaped like PoRep's (mostly 0/1)
/// or uniformly random, with a few public inputs mixed into the constraints.
#[derive(Clone)]
struct RandomCircuit {
    constraints: usize,
    inputs: Vec<Scalar>,
    witness: Vec<Scalar>,
    /// Per constraint: the operands x, y and the shape of the linear combinations.
    wiring: Vec<(usize, usize, u8)>,
}

impl RandomCircuit {
    fn new(rng: &mut impl Rng, constraints: usize, bit_heavy: bool) -> Self {
        let witness_len = constraints;
        let witness = (0..witness_len)
            .map(|_| match (bit_heavy, rng.gen_range(0..100)) {
                (true, 0..=49) => Scalar::ZERO,
                (true, 50..=95) => Scalar::ONE,
                (true, _) => Scalar::random(&mut *rng),
                (false, _) => Scalar::random(&mut *rng),
            })
            .collect();
        let inputs = (0..3).map(|_| Scalar::random(&mut *rng)).collect();
        // Every witness variable is used (x = k): the generator rejects unconstrained variables.
        let wiring = (0..constraints).map(|k| (k, rng.gen_range(0..witness_len), rng.gen_range(0..4))).collect();
        RandomCircuit { constraints, inputs, witness, wiring }
    }
}

impl Circuit<Scalar> for RandomCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let inputs: Vec<Variable> =
            self.inputs.iter().enumerate().map(|(i, v)| cs.alloc_input(|| format!("in{i}"), || Ok(*v))).collect::<Result<_, _>>()?;
        let vars: Vec<Variable> =
            self.witness.iter().enumerate().map(|(i, v)| cs.alloc(|| format!("w{i}"), || Ok(*v))).collect::<Result<_, _>>()?;
        for (k, &(x, y, shape)) in self.wiring.iter().enumerate().take(self.constraints) {
            // z = (x + shape·in) · y, allocated so that the constraint holds.
            let input = inputs[k % inputs.len()];
            let coeff = Scalar::from(shape as u64);
            let left = self.witness[x] + coeff * self.inputs[k % inputs.len()];
            let z_value = left * self.witness[y];
            let z = cs.alloc(|| format!("z{k}"), || Ok(z_value))?;
            cs.enforce(
                || format!("c{k}"),
                |lc| lc + vars[x] + (coeff, input),
                // shape 3 leaves x in B with coefficient 0: it must not count in B's density.
                |lc| if shape == 3 { lc + vars[y] + vars[x] - vars[x] } else { lc + vars[y] },
                |lc| lc + z,
            );
        }
        Ok(())
    }
}

fn engine() -> Arc<Engine> {
    Engine::acquire(EngineConfig { cpu_only: true, ..Default::default() }).expect("engine")
}

fn check(constraints: usize, bit_heavy: bool, seed: u64) {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let circuit = RandomCircuit::new(&mut rng, constraints, bit_heavy);
    let params = generate_random_parameters::<Bls12, _, _>(circuit.clone(), &mut rng).expect("parameters");
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));

    let expected: Proof<Bls12> = create_proof_batch(vec![circuit.clone()], &params, vec![r], vec![s]).expect("bellperson proof").remove(0);
    let mut timings = Timings::new();
    let ours = engine().prove_circuit(&params, circuit.clone(), (r, s), None, &mut timings).expect("cuzk proof");

    let (mut a, mut b) = (Vec::new(), Vec::new());
    expected.write(&mut a).unwrap();
    ours.write(&mut b).unwrap();
    assert_eq!(a, b, "{constraints} constraints, bit_heavy {bit_heavy}: proofs differ");
    let pvk = prepare_verifying_key(&params.vk);
    assert!(verify_proof(&pvk, &ours, &circuit.inputs).expect("verifier"), "bellperson rejects our proof");
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
