//! Circuits and keys for tests and benchmarks: random circuits whose witness is shaped like
//! PoRep's (mostly 0/1, a few percent full-width) or uniformly random, and synthetic proving
//! keys of the right shape made of random points — for comparing provers and timing them.
//! Proofs made with a synthetic key never verify: performance and comparison only.

use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use bellperson::{Circuit, ConstraintSystem, SynthesisError, Variable};
use blstrs::{Bls12, G1Affine, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use cuzk::internals::Domain;
use cuzk::internals::QuerySizes;
use cuzk::internals::SynthesizedCircuit;
use cuzk::ProvingKey;

/// A circuit of `n` multiplication constraints over a witness shaped like PoRep's (mostly 0/1)
/// or uniformly random, with a few public inputs mixed into the constraints.
#[derive(Clone)]
pub struct RandomCircuit {
    constraints: usize,
    pub inputs: Vec<Scalar>,
    witness: Vec<Scalar>,
    /// Per constraint: the operands x, y and the shape of the linear combinations.
    wiring: Vec<(usize, usize, u8)>,
}

impl RandomCircuit {
    pub fn new<R: Rng>(rng: &mut R, constraints: usize, bit_heavy: bool) -> Self {
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
        // Shapes 1, 2 bring the inputs in, shape 3 a zero-coefficient term; most constraints
        // are plain x·y = z, so the full-width values of z stay as diverse as the witness.
        let shape = |rng: &mut R| match rng.gen_range(0..64) {
            0 => 1,
            1 => 2,
            2..=5 => 3,
            _ => 0,
        };
        let wiring = (0..constraints).map(|k| (k, rng.gen_range(0..witness_len), shape(&mut *rng))).collect();
        RandomCircuit {
            constraints,
            inputs,
            witness,
            wiring,
        }
    }
}

impl Circuit<Scalar> for RandomCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let inputs: Vec<Variable> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, v)| cs.alloc_input(|| format!("in{i}"), || Ok(*v)))
            .collect::<Result<_, _>>()?;
        let vars: Vec<Variable> = self
            .witness
            .iter()
            .enumerate()
            .map(|(i, v)| cs.alloc(|| format!("w{i}"), || Ok(*v)))
            .collect::<Result<_, _>>()?;
        for (k, &(x, y, shape)) in self.wiring.iter().enumerate().take(self.constraints) {
            // z = (x + c·in) · y with c = 1, 2 for shapes 1, 2 (else 0), allocated so that the
            // constraint holds.
            let input = inputs[k % inputs.len()];
            let coeff = Scalar::from(if shape == 3 { 0 } else { shape as u64 });
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

/// `n` distinct pseudo-random points, fast: each thread walks from a random start by a random
/// step. For MSM comparisons only (no setup behind them).
pub fn random_points<P: Group + Curve + Send>(n: usize, seed: u64) -> Vec<P::AffineRepr>
where
    P::AffineRepr: Send + Default + Copy,
{
    let chunk = 1 << 14;
    let mut out = vec![P::AffineRepr::default(); n];
    out.par_chunks_mut(chunk).enumerate().for_each(|(i, dst)| {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ (i as u64) << 20);
        let (mut p, step) = (P::random(&mut rng), P::random(&mut rng));
        let mut projective = Vec::with_capacity(dst.len());
        for _ in 0..dst.len() {
            projective.push(p);
            p += step;
        }
        P::batch_normalize(&projective, dst);
    });
    out
}

/// A proving key of the right shape for a circuit (given synthesized: its sizes and densities)
/// made of random points: GPU, CPU and bellperson must produce the same proof with it, though
/// none verifies.
pub fn synthetic_key(shape: &SynthesizedCircuit, seed: u64) -> ProvingKey {
    KeySizes::of(shape).synthetic_key(seed)
}

/// The query lengths of a circuit's proving key: what a synthetic key needs of the circuit, so
/// that the synthesized circuit can be dropped before the key is made (a 32GiB PoSt's key is
/// ≈ 86 GB, its synthesized circuit ≈ 17 GB).
#[derive(Clone, Copy, Debug)]
pub struct KeySizes {
    pub h: usize,
    pub l: usize,
    pub a: usize,
    pub b: usize,
    pub inputs: usize,
}

impl KeySizes {
    pub fn of(shape: &SynthesizedCircuit) -> Self {
        KeySizes {
            h: Domain::for_len(shape.num_constraints()).expect("circuit fits the FFT domain").size() - 1,
            l: shape.aux_assignment.len(),
            a: shape.input_assignment.len() + shape.a_aux_density.count_ones(),
            b: shape.b_input_density.count_ones() + shape.b_aux_density.count_ones(),
            inputs: shape.input_assignment.len(),
        }
    }

    /// A key of these sizes made of random points. The G1 queries are prefixes of one pool of
    /// distinct points (one pool to make, not four), the largest query taking the pool itself
    /// so that no more than the key is ever held.
    pub fn synthetic_key(self, seed: u64) -> ProvingKey {
        let lengths = [self.h, self.a, self.b, self.l];
        let largest = (0..4).max_by_key(|&q| lengths[q]).expect("four queries");
        let mut pool = Some(random_points::<G1Projective>(lengths[largest], seed));
        let mut queries: [Option<Arc<Vec<G1Affine>>>; 4] = Default::default();
        for q in (0..4).filter(|&q| q != largest) {
            queries[q] = Some(Arc::new(pool.as_ref().expect("the pool")[..lengths[q]].to_vec()));
        }
        queries[largest] = pool.take().map(Arc::new);
        let [h, a, b_g1, l] = queries.map(|q| q.expect("every query made"));
        let params = Parameters {
            vk: self.random_verifying_key(seed),
            h,
            a,
            b_g1,
            l,
            b_g2: Arc::new(random_points::<G2Projective>(self.b, seed + 2)),
        };
        ProvingKey::new(params, format!("synthetic key (seed {seed}, performance only)"))
    }

    /// A key of these sizes whose G1 queries repeat one pool of `REPEATING_G1_POOL` random
    /// points and whose B_G2 query repeats one of `REPEATING_G2_POOL`: host memory holds the
    /// pools only (a device copy, or a host copy for a streamed call, is made from them on
    /// demand), so that the keys of every proof kind of a 32GiB sector (≈ 140 GB) can be in use
    /// in one process. Performance only, like `synthetic_key`.
    pub fn repeating_key(self, seed: u64, label: &str) -> cuzk::error::Result<ProvingKey> {
        let sizes = QuerySizes {
            ic: self.inputs as u64,
            h: self.h as u64,
            l: self.l as u64,
            a: self.a as u64,
            b_g1: self.b as u64,
            b_g2: self.b as u64,
        };
        let g1 = random_points::<G1Projective>(REPEATING_G1_POOL.min(self.h.max(self.l).max(self.a).max(self.b)), seed);
        let g2 = random_points::<G2Projective>(REPEATING_G2_POOL.min(self.b), seed + 2);
        let label = format!("{label} (repeating key, seed {seed}, performance only)");
        ProvingKey::repeating(self.random_verifying_key(seed), sizes, g1, g2, label)
    }

    fn random_verifying_key(self, seed: u64) -> VerifyingKey<Bls12> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        VerifyingKey::<Bls12> {
            alpha_g1: G1Projective::random(&mut rng).to_affine(),
            beta_g1: G1Projective::random(&mut rng).to_affine(),
            beta_g2: G2Projective::random(&mut rng).to_affine(),
            gamma_g2: G2Projective::random(&mut rng).to_affine(),
            delta_g1: G1Projective::random(&mut rng).to_affine(),
            delta_g2: G2Projective::random(&mut rng).to_affine(),
            ic: random_points::<G1Projective>(self.inputs, seed + 1),
        }
    }
}

/// Points in a repeating key's pools: enough that an MSM's buckets see distinct points (its
/// speed is a real key's), few enough to make in a second.
const REPEATING_G1_POOL: usize = 1 << 20;
const REPEATING_G2_POOL: usize = 1 << 16;

/// A circuit with nothing but the constant input: one constraint (the input's), an FFT domain
/// of size 1 and an empty H query: the smallest circuit a prover can be handed.
#[derive(Clone, Copy, Debug)]
pub struct OnlyTheConstant;

impl Circuit<Scalar> for OnlyTheConstant {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, _: &mut CS) -> Result<(), SynthesisError> {
        Ok(())
    }
}
