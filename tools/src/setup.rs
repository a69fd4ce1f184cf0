//! Random-setup Groth16 parameters, FOR TESTS AND BENCHMARKS ONLY: what bellperson's
//! `generate_random_parameters` makes (the QAP of the circuit's R1CS evaluated at a random τ,
//! the same queries in the same order, points at infinity filtered from A and B the same way),
//! computed from the circuit's R1CS shape ([`CircuitShape::extract`], bellperson's order of
//! constraints and variables) with fixed-base combs on all cores.
//!
//! Why: bellperson multiplies its generator by every scalar with a window-NAF, about 255
//! doublings a point, and its parameters were the slowest fixture to make (the 2KiB update's
//! 375 s on 2 cores, the 8MiB update's 537 s on the H200's 16). A comb of precomputed
//! multiples needs no doublings: one addition per window of the scalar, affine, many sharing
//! one inversion (docs/PERFORMANCE.md, "Random-setup parameters by fixed-base combs").

use std::sync::Arc;

use anyhow::{bail, ensure, Context, Result};
use bellperson::groth16::{Parameters, VerifyingKey};
use bellperson::Circuit;
use blstrs::{Bls12, Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::{BatchInvert, Field, PrimeField};
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand::RngCore;
use rayon::prelude::*;

use cuzk::internals::r1cs::SparseMatrix;
use cuzk::internals::Domain;
use cuzk::CircuitShape;

/// The secrets of one setup.
pub struct ToxicWaste {
    pub g1: G1Projective,
    pub g2: G2Projective,
    pub alpha: Scalar,
    pub beta: Scalar,
    pub gamma: Scalar,
    pub delta: Scalar,
    pub tau: Scalar,
}

impl ToxicWaste {
    /// Drawn as bellperson's `generate_random_parameters` draws them.
    pub fn random(rng: &mut impl RngCore) -> Self {
        ToxicWaste {
            g1: G1Projective::random(&mut *rng),
            g2: G2Projective::random(&mut *rng),
            alpha: Scalar::random(&mut *rng),
            beta: Scalar::random(&mut *rng),
            gamma: Scalar::random(&mut *rng),
            delta: Scalar::random(&mut *rng),
            tau: Scalar::random(&mut *rng),
        }
    }
}

/// Random-setup parameters of `circuit` (a blank circuit will do: no value is read).
pub fn random_parameters<C: Circuit<Scalar>>(circuit: C, rng: &mut impl RngCore) -> Result<Parameters<Bls12>> {
    let shape = CircuitShape::extract(circuit).map_err(|e| anyhow::anyhow!("extracting the circuit's R1CS: {e}"))?;
    parameters(&shape, &ToxicWaste::random(rng))
}

/// The parameters of `shape` for the secrets `waste`.
pub fn parameters(shape: &CircuitShape, waste: &ToxicWaste) -> Result<Parameters<Bls12>> {
    let ToxicWaste {
        g1,
        g2,
        alpha,
        beta,
        gamma,
        delta,
        tau,
    } = *waste;
    let gamma_inverse = Option::<Scalar>::from(gamma.invert()).context("gamma is zero")?;
    let delta_inverse = Option::<Scalar>::from(delta.invert()).context("delta is zero")?;
    let domain = QapDomain::new(shape.num_constraints())?;
    let vanishing = domain.vanishing_at(tau);
    ensure!(!bool::from(vanishing.is_zero()), "tau is in the evaluation domain");

    // u, v, w of every variable at τ: the columns of A, B, C against the Lagrange basis at τ.
    let lagrange = domain.lagrange_at(tau, shape.num_constraints());
    let matrices = shape.matrices().map_err(|e| anyhow::anyhow!("{e}"))?;
    let variables = shape.num_inputs() + shape.num_aux();
    let at_tau = |m: &SparseMatrix| column_sums(m, &matrices.coefficients, &lagrange, variables);
    let (u, (v, w)) = rayon::join(|| at_tau(&matrices.a), || rayon::join(|| at_tau(&matrices.b), || at_tau(&matrices.c)));
    drop((lagrange, matrices));

    // Every point of the G1 queries comes from one comb, as bellperson's from one window table.
    let nonzero = |values: &[Scalar]| -> Vec<Scalar> { values.par_iter().copied().filter(|s| !bool::from(s.is_zero())).collect() };
    let (a_scalars, b_scalars) = rayon::join(|| nonzero(&u), || nonzero(&v));
    let h_scalars = domain.h_query_scalars(tau, vanishing * delta_inverse);
    let ic_and_l = ic_and_l_scalars(u, v, w, shape.num_inputs(), waste, gamma_inverse, delta_inverse);
    let g1_count = h_scalars.len() + ic_and_l.len() + a_scalars.len() + b_scalars.len();
    let (g1_comb, g2_comb) = rayon::join(|| Comb::new(g1, g1_count), || Comb::new(g2, b_scalars.len()));
    let mut ic = g1_comb.multiply(&ic_and_l);
    let l = ic.split_off(shape.num_inputs());
    if l.par_iter().any(|p| bool::from(p.is_identity())) {
        bail!("a variable of the circuit is in no constraint: its L query point would be at infinity (bellperson's UnconstrainedVariable)");
    }
    let g1_affine = g1.to_affine();
    let g2_affine = g2.to_affine();
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1_affine * alpha).to_affine(),
        beta_g1: (g1_affine * beta).to_affine(),
        beta_g2: (g2_affine * beta).to_affine(),
        gamma_g2: (g2_affine * gamma).to_affine(),
        delta_g1: (g1_affine * delta).to_affine(),
        delta_g2: (g2_affine * delta).to_affine(),
        ic,
    };
    Ok(Parameters {
        vk,
        h: Arc::new(g1_comb.multiply(&h_scalars)),
        l: Arc::new(l),
        a: Arc::new(g1_comb.multiply(&a_scalars)),
        b_g1: Arc::new(g1_comb.multiply(&b_scalars)),
        b_g2: Arc::new(g2_comb.multiply(&b_scalars)),
    })
}

/// bellperson's evaluation domain of a circuit: the smallest power of two m ≥ the constraint
/// count (input constraints included), and its m-th root of unity.
struct QapDomain {
    size: usize,
    omega: Scalar,
}

impl QapDomain {
    fn new(constraints: usize) -> Result<Self> {
        let domain = Domain::for_len(constraints)
            .filter(|d| d.log_size < Scalar::S)
            .with_context(|| format!("{constraints} constraints need a domain past the field's 2^{}", Scalar::S - 1))?;
        Ok(QapDomain {
            size: domain.size(),
            omega: domain.omega(),
        })
    }

    /// Z(x) = x^m − 1.
    fn vanishing_at(&self, x: Scalar) -> Scalar {
        x.pow_vartime([self.size as u64]) - Scalar::ONE
    }

    /// The first `count` Lagrange basis polynomials at τ (τ not in the domain):
    /// L_j(τ) = ω^j · Z(τ) / (m · (τ − ω^j)), what bellperson's inverse FFT of τ's powers gives.
    fn lagrange_at(&self, tau: Scalar, count: usize) -> Vec<Scalar> {
        let scale = self.vanishing_at(tau) * Scalar::from(self.size as u64).invert().unwrap();
        let mut values = vec![Scalar::ZERO; count];
        values.par_chunks_mut(CHUNK).enumerate().for_each(|(k, chunk)| {
            let mut root = self.omega.pow_vartime([(k * CHUNK) as u64]);
            let mut roots = Vec::with_capacity(chunk.len());
            for value in chunk.iter_mut() {
                *value = tau - root;
                roots.push(root);
                root *= self.omega;
            }
            chunk.iter_mut().batch_invert();
            for (value, root) in chunk.iter_mut().zip(roots) {
                *value *= root * scale;
            }
        });
        values
    }

    /// The H query's scalars τ^i · `coefficient` for i < m − 1.
    fn h_query_scalars(&self, tau: Scalar, coefficient: Scalar) -> Vec<Scalar> {
        let mut values = vec![Scalar::ZERO; self.size - 1];
        values.par_chunks_mut(CHUNK).enumerate().for_each(|(k, chunk)| {
            let mut power = tau.pow_vartime([(k * CHUNK) as u64]) * coefficient;
            for value in chunk {
                *value = power;
                power *= tau;
            }
        });
        values
    }
}

/// Scalars per parallel task.
const CHUNK: usize = 1 << 12;

/// Σ_rows M[row][i] · `row_values`[row] for every column i < `columns`: the matrix transposed
/// by a counting sort, then its columns summed in parallel.
fn column_sums(m: &SparseMatrix, coefficients: &[Scalar], row_values: &[Scalar], columns: usize) -> Vec<Scalar> {
    let mut starts = vec![0u32; columns + 1];
    for &column in m.columns() {
        starts[column as usize + 1] += 1;
    }
    for i in 0..columns {
        starts[i + 1] += starts[i];
    }
    let mut next = starts.clone();
    let mut entries = vec![(0u32, 0u32); m.num_nonzeros()];
    for row in 0..m.num_rows() {
        let range = m.row_starts()[row] as usize..m.row_starts()[row + 1] as usize;
        for (&column, &id) in m.columns()[range.clone()].iter().zip(&m.coefficient_ids()[range]) {
            let slot = &mut next[column as usize];
            entries[*slot as usize] = (row as u32, id);
            *slot += 1;
        }
    }
    (0..columns)
        .into_par_iter()
        .with_min_len(CHUNK)
        .map(|i| {
            let column = &entries[starts[i] as usize..starts[i + 1] as usize];
            column
                .iter()
                .fold(Scalar::ZERO, |sum, &(row, id)| sum + coefficients[id as usize] * row_values[row as usize])
        })
        .collect()
}

/// The scalars of IC (the first `inputs` variables) and L (the others): (β·u + α·v + w) / γ
/// and / δ.
fn ic_and_l_scalars(
    u: Vec<Scalar>,
    v: Vec<Scalar>,
    w: Vec<Scalar>,
    inputs: usize,
    waste: &ToxicWaste,
    gamma_inverse: Scalar,
    delta_inverse: Scalar,
) -> Vec<Scalar> {
    (u, v, w)
        .into_par_iter()
        .enumerate()
        .map(|(i, (u, v, w))| (waste.beta * u + waste.alpha * v + w) * if i < inputs { gamma_inverse } else { delta_inverse })
        .collect()
}

/// Fixed-base scalar multiplication: `table` holds d · 2^(bits·k) · base for every window k
/// of a scalar and digit 1 ≤ d < 2^bits, so that a product is one addition per window whose
/// digit is not zero. The additions are affine, a chunk of products at a time sharing one
/// inversion ([`AffineSums`]: ≈ 7 field multiplications against ≈ 16 for a mixed addition).
struct Comb<G: Curve> {
    bits: usize,
    table: Vec<G::AffineRepr>,
}

/// Windows of a 255-bit scalar of `bits` bits each.
fn windows(bits: usize) -> usize {
    (Scalar::NUM_BITS as usize).div_ceil(bits)
}

/// An affine point's coordinates (blstrs keeps them in Montgomery form; these are its own).
trait Coordinates: Copy + Send + Sync {
    type Field: Field;
    fn xy(&self) -> (Self::Field, Self::Field);
    fn from_xy(x: Self::Field, y: Self::Field) -> Self;
}

/// [`Coordinates`] of a blstrs affine point type over its base field.
macro_rules! coordinates {
    ($affine:ty, $field:ty) => {
        impl Coordinates for $affine {
            type Field = $field;
            fn xy(&self) -> ($field, $field) {
                (self.x(), self.y())
            }
            fn from_xy(x: $field, y: $field) -> Self {
                <$affine>::from_raw_unchecked(x, y, false)
            }
        }
    };
}

coordinates!(G1Affine, Fp);
coordinates!(G2Affine, Fp2);

impl<G> Comb<G>
where
    G: Curve + Group + Send + Sync,
    G::AffineRepr: Coordinates,
{
    /// A comb for `count` products: the digit width that costs the fewest additions, the
    /// table's and the products' together (at most 16 bits: 2^16 points a window).
    fn new(base: G, count: usize) -> Self {
        Self::with_bits(base, (4..=16).min_by_key(|&b| windows(b) * (count + (1 << b))).unwrap_or(16))
    }

    fn with_bits(base: G, bits: usize) -> Self {
        let mut window_bases = Vec::with_capacity(windows(bits));
        let mut window_base = base;
        for _ in 0..windows(bits) {
            window_bases.push(window_base);
            for _ in 0..bits {
                window_base = window_base.double();
            }
        }
        let digits = (1usize << bits) - 1;
        let table = window_bases.into_par_iter().flat_map_iter(|b| multiples(b, digits)).collect();
        Comb { bits, table }
    }

    /// base · s for every s of `scalars`, in affine form.
    ///
    /// Window by window from the lowest, a product is (s mod 2^(bits·k)) · base, 0 < … < r, when
    /// the table's d · 2^(bits·k) · base is added to it, d · 2^(bits·k) ≤ s < r: their sum is
    /// neither 0 nor r, so the two points are neither equal nor opposite.
    fn multiply(&self, scalars: &[Scalar]) -> Vec<G::AffineRepr> {
        let digits = (1usize << self.bits) - 1;
        let mut out = vec![G::identity().to_affine(); scalars.len()];
        out.par_chunks_mut(CHUNK).zip(scalars.par_chunks(CHUNK)).for_each(|(products, scalars)| {
            let bytes: Vec<[u8; 32]> = scalars.iter().map(|s| s.to_repr()).collect();
            let mut started = vec![false; scalars.len()];
            let mut pending = Vec::with_capacity(scalars.len());
            let mut sums = AffineSums::default();
            for (window, table) in self.table.chunks(digits).enumerate() {
                pending.clear();
                for (i, bytes) in bytes.iter().enumerate() {
                    let digit = digit(bytes, window * self.bits, self.bits);
                    if digit == 0 {
                        continue;
                    }
                    let point = table[digit - 1];
                    match started[i] {
                        true => pending.push((i, products[i], point)),
                        false => (products[i], started[i]) = (point, true),
                    }
                }
                sums.add(pending.iter().map(|&(_, p, q)| (p, q)));
                for (&(i, _, _), sum) in pending.iter().zip(sums.sums()) {
                    products[i] = sum;
                }
            }
        });
        out
    }
}

/// d · `base` for d = 1 ..= `count`, affine: doubling the multiples made so far, 2^j of them a
/// time from the next power of two, d + 2^j ≠ 2^j (a doubling) and < r (the identity).
fn multiples<G>(base: G, count: usize) -> Vec<G::AffineRepr>
where
    G: Curve + Group,
    G::AffineRepr: Coordinates,
{
    let mut multiples = Vec::with_capacity(count);
    multiples.push(base.to_affine());
    let mut power = base;
    let mut sums = AffineSums::default();
    while multiples.len() < count {
        power = power.double();
        let power_affine = power.to_affine();
        let more = multiples.len().min(count - multiples.len() - 1);
        sums.add(multiples[..more].iter().map(|&p| (p, power_affine)));
        multiples.push(power_affine);
        multiples.extend(sums.sums());
    }
    multiples
}

/// Batches of affine additions p + q whose x coordinates differ (so that none is a doubling
/// or gives the identity), sharing one inversion: ≈ 6 field multiplications and a square an
/// addition. Keeps its buffers for the next batch.
struct AffineSums<A: Coordinates> {
    pairs: Vec<(A, A)>,
    inverses: Vec<A::Field>,
}

impl<A: Coordinates> Default for AffineSums<A> {
    fn default() -> Self {
        AffineSums {
            pairs: Vec::new(),
            inverses: Vec::new(),
        }
    }
}

impl<A: Coordinates> AffineSums<A> {
    fn add(&mut self, pairs: impl Iterator<Item = (A, A)>) {
        self.pairs.clear();
        self.pairs.extend(pairs);
        self.inverses.clear();
        self.inverses.extend(self.pairs.iter().map(|(p, q)| q.xy().0 - p.xy().0));
        self.inverses.iter_mut().batch_invert();
    }

    /// The sums of the last batch, in its order.
    fn sums(&self) -> impl Iterator<Item = A> + '_ {
        self.pairs.iter().zip(&self.inverses).map(|((p, q), inverse)| {
            let ((x1, y1), (x2, y2)) = (p.xy(), q.xy());
            let slope = (y2 - y1) * inverse;
            let x3 = slope.square() - x1 - x2;
            A::from_xy(x3, slope * (x1 - x3) - y1)
        })
    }
}

/// The `bits`-bit digit of little-endian `bytes` that starts at bit `first`.
fn digit(bytes: &[u8; 32], first: usize, bits: usize) -> usize {
    let mut word = [0u8; 4];
    let start = first / 8;
    let available = (bytes.len() - start).min(4);
    word[..available].copy_from_slice(&bytes[start..start + available]);
    (u32::from_le_bytes(word) >> (first % 8)) as usize & ((1 << bits) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::groth16::{create_random_proof, generate_parameters, prepare_verifying_key, verify_proof};
    use bellperson::{ConstraintSystem, SynthesisError};
    use rand::SeedableRng;

    /// x·y = z along a chain, every fifth z an input, repeated terms in B, and a constraint on
    /// the constant alone: y is only in B (filtered from A), x0 only in A (filtered from B).
    #[derive(Clone)]
    struct Chain {
        values: Option<Vec<Scalar>>,
        len: usize,
    }

    impl Circuit<Scalar> for Chain {
        fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let value = |i: usize| self.values.as_ref().map(|v| v[i]).ok_or(SynthesisError::AssignmentMissing);
            let mut x = cs.alloc(|| "x0", || value(0))?;
            let mut x_value = self.values.as_ref().map(|v| v[0]);
            for i in 1..self.len {
                let y = cs.alloc(|| "y", || value(i))?;
                let z_value = x_value.zip(self.values.as_ref().map(|v| v[i])).map(|(x, y)| x * y);
                let z = match i % 5 {
                    0 => cs.alloc_input(|| "z", || z_value.ok_or(SynthesisError::AssignmentMissing))?,
                    _ => cs.alloc(|| "z", || z_value.ok_or(SynthesisError::AssignmentMissing))?,
                };
                let three = Scalar::from(3u64);
                cs.enforce(
                    || "x*y=z",
                    |lc| lc + x,
                    |lc| lc + (three, y) + (three.invert().unwrap(), y),
                    |lc| lc + (three + three.invert().unwrap(), z),
                );
                x = z;
                x_value = z_value;
            }
            cs.enforce(|| "one", |lc| lc + CS::one(), |lc| lc + CS::one(), |lc| lc + CS::one());
            Ok(())
        }
    }

    fn chain(len: usize, rng: &mut impl RngCore) -> Chain {
        Chain {
            values: Some((0..len).map(|_| Scalar::random(&mut *rng)).collect()),
            len,
        }
    }

    fn blank(len: usize) -> Chain {
        Chain { values: None, len }
    }

    /// The same secrets give bellperson's parameters point for point: constraint counts at and
    /// past a power of two (4, 8; 3, 9), and combs of several digit widths.
    #[test]
    fn equal_to_bellpersons_for_the_same_secrets() {
        let seed: u64 = rand::random();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        for len in [2, 3, 6, 7, 100, 1000] {
            let waste = ToxicWaste::random(&mut rng);
            let shape = CircuitShape::extract(blank(len)).unwrap();
            let ours = parameters(&shape, &waste).unwrap();
            let theirs = generate_parameters::<Bls12, _>(
                blank(len),
                waste.g1,
                waste.g2,
                waste.alpha,
                waste.beta,
                waste.gamma,
                waste.delta,
                waste.tau,
            )
            .unwrap();
            assert!(ours.vk == theirs.vk, "verifying keys of a {len}-link chain, seed {seed}");
            assert!(ours.h == theirs.h, "H of a {len}-link chain, seed {seed}");
            assert!(ours.l == theirs.l, "L of a {len}-link chain, seed {seed}");
            assert!(ours.a == theirs.a, "A of a {len}-link chain, seed {seed}");
            assert!(ours.b_g1 == theirs.b_g1, "B_G1 of a {len}-link chain, seed {seed}");
            assert!(ours.b_g2 == theirs.b_g2, "B_G2 of a {len}-link chain, seed {seed}");
        }
    }

    /// bellperson proves with them and its verifier accepts.
    #[test]
    fn bellperson_proves_and_verifies_with_them() {
        let seed: u64 = rand::random();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        let params = random_parameters(blank(300), &mut rng).unwrap();
        let circuit = chain(300, &mut rng);
        let mut inputs = Vec::new();
        let mut x = circuit.values.as_ref().unwrap()[0];
        for (i, y) in circuit.values.as_ref().unwrap().iter().enumerate().skip(1) {
            x *= y;
            if i % 5 == 0 {
                inputs.push(x);
            }
        }
        let proof = create_random_proof(circuit, &params, &mut rng).unwrap();
        let pvk = prepare_verifying_key(&params.vk);
        assert!(verify_proof(&pvk, &proof, &inputs).unwrap(), "seed {seed}");
        inputs[0] += Scalar::ONE;
        assert!(!verify_proof(&pvk, &proof, &inputs).unwrap(), "seed {seed}");
    }

    /// A variable in no constraint is refused, as bellperson refuses it.
    #[test]
    fn an_unconstrained_variable_is_refused() {
        #[derive(Clone)]
        struct Loose;
        impl Circuit<Scalar> for Loose {
            fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
                cs.alloc(|| "loose", || Ok(Scalar::ONE))?;
                Ok(())
            }
        }
        let error = random_parameters(Loose, &mut rand::thread_rng()).err().unwrap();
        assert!(error.to_string().contains("in no constraint"), "{error}");
    }

    /// Products equal to scalar multiplication at the narrowest, the widest and odd widths, for
    /// 0, 1, 2, r − 1, a power of two, scalars whose digits are all the largest, and random ones.
    #[test]
    fn comb_products_are_scalar_multiples() {
        let seed: u64 = rand::random();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        let base = G1Projective::random(&mut rng);
        let mut scalars = vec![
            Scalar::ZERO,
            Scalar::ONE,
            Scalar::from(2u64),
            -Scalar::ONE,
            Scalar::from(2u64).pow_vartime([254]),
        ];
        scalars.push(Scalar::from_repr_vartime([0xff; 32].map(|b| b & 0x3f)).unwrap());
        scalars.extend((0..100).map(|_| Scalar::random(&mut rng)));
        for bits in [4, 9, 13, 16] {
            let products = Comb::with_bits(base, bits).multiply(&scalars);
            for (s, product) in scalars.iter().zip(&products) {
                assert_eq!(*product, (base * s).to_affine(), "{bits}-bit comb, scalar {s:?}, seed {seed}");
            }
        }
        let g2 = G2Projective::random(&mut rng);
        let products = Comb::with_bits(g2, 11).multiply(&scalars);
        for (s, product) in scalars.iter().zip(&products) {
            assert_eq!(*product, (g2 * s).to_affine(), "G2 comb, scalar {s:?}, seed {seed}");
        }
    }

    /// Digits straddling bytes and the scalar's end.
    #[test]
    fn digits_cover_every_bit() {
        let seed: u64 = rand::random();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
        for bits in 4..=16 {
            let s = Scalar::random(&mut rng);
            let bytes = s.to_repr();
            let rebuilt = (0..windows(bits)).rev().fold(Scalar::ZERO, |acc, k| {
                let shifted = (0..bits).fold(acc, |a, _| a.double());
                shifted + Scalar::from(digit(&bytes, k * bits, bits) as u64)
            });
            assert_eq!(rebuilt, s, "{bits}-bit digits, seed {seed}");
        }
    }
}
