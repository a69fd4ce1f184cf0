//! The witness of neptune's legacy Poseidon gadget (`circuit::poseidon_hash`, the one
//! filecoin-hashers' circuits hash with), computed on plain field elements.
//!
//! Between S-boxes the gadget carries its state as linear combinations. A witness-only system
//! never reads them, yet the gadget builds them all, and in the partial rounds they grow by a
//! term per round: running the gadget was 60 % of a 32GiB WindowPoSt partition's time (23 s
//! of witness on 16 cores; docs/PERFORMANCE.md). Here the state is field elements and the
//! gadget's allocations are written in its order, each with the one constraint the gadget
//! enforces with it:
//! - first round: per preimage element x (the domain tag is a constant, not allocated)
//!   (x + k)², (x + k)⁴, (x + k)⁵ + k';
//! - every later S-box: its input (a linear combination until then), x², x⁴, x⁵ (+ k);
//! - the result: state element 1 after the last matrix.
//!
//! tests/poseidon_witness.rs checks it value for value against the gadget.

use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar;
use ff::Field;
use neptune::hash_type::HashType;
use neptune::poseidon::{Arity, PoseidonConstants};

use crate::synthesis::r1cs::WitnessCs;

/// `neptune::circuit::poseidon_hash(cs, preimage, constants)`'s witness in `cs`; its result.
pub(crate) fn poseidon_hash<A: Arity<Scalar>>(
    cs: &mut WitnessCs,
    preimage: &[AllocatedNum<Scalar>],
    constants: &PoseidonConstants<Scalar, A>,
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let width = constants.width();
    let wrong = |what: String| SynthesisError::IoError(std::io::Error::other(what));
    if preimage.len() + 1 != width {
        return Err(wrong(format!("a Poseidon hash of arity {} given {} elements", width - 1, preimage.len())));
    }
    if matches!(constants.hash_type, HashType::ConstantLength(length) if length != width - 1) {
        return Err(wrong("the legacy Poseidon gadget hashes whole preimages only".into()));
    }
    let mut state = Vec::with_capacity(width);
    state.push(constants.domain_tag);
    for element in preimage {
        state.push(element.get_value().ok_or(SynthesisError::AssignmentMissing)?);
    }
    let mut permutation = Permutation {
        cs,
        constants,
        state,
        constants_offset: 0,
        round: 0,
    };
    permutation.run()?;
    let result = permutation.state[1];
    let hash = AllocatedNum::alloc(&mut *cs, || Ok(result))?;
    cs.count_constraints(1);
    Ok(hash)
}

/// The gadget's rounds over a state of field elements.
struct Permutation<'a, A: Arity<Scalar>> {
    cs: &'a mut WitnessCs,
    constants: &'a PoseidonConstants<Scalar, A>,
    state: Vec<Scalar>,
    /// The next unused round constant.
    constants_offset: usize,
    /// Rounds done: which matrix the next one ends with.
    round: usize,
}

impl<A: Arity<Scalar>> Permutation<'_, A> {
    fn run(&mut self) -> Result<(), SynthesisError> {
        let half_full = self.constants.full_rounds / 2;
        self.first_round()?;
        for _ in 1..half_full {
            self.full_round(true)?;
        }
        for _ in 0..self.constants.partial_rounds {
            self.partial_round()?;
        }
        for _ in 1..half_full {
            self.full_round(true)?;
        }
        self.full_round(false)
    }

    fn constant(&mut self) -> Scalar {
        let k = self.constants.compressed_round_constants[self.constants_offset];
        self.constants_offset += 1;
        k
    }

    /// Round keys before and after the S-boxes; the tag's S-box is a constant.
    fn first_round(&mut self) -> Result<(), SynthesisError> {
        let width = self.state.len();
        let keys = &self.constants.compressed_round_constants[self.constants_offset..self.constants_offset + 2 * width];
        for i in 0..width {
            let x = self.state[i] + keys[i];
            let x2 = x.square();
            let x4 = x2.square();
            let x5 = x4 * x + keys[width + i];
            if i > 0 {
                for value in [x2, x4, x5] {
                    self.cs.alloc_constrained(value)?;
                }
            }
            self.state[i] = x5;
        }
        self.constants_offset += 2 * width;
        self.mix();
        Ok(())
    }

    /// A full round: every element's S-box, a round key after it unless it is the last round.
    fn full_round(&mut self, keyed: bool) -> Result<(), SynthesisError> {
        for i in 0..self.state.len() {
            let key = if keyed { self.constant() } else { Scalar::ZERO };
            self.state[i] = self.s_box(self.state[i], key)?;
        }
        self.mix();
        Ok(())
    }

    fn partial_round(&mut self) -> Result<(), SynthesisError> {
        let key = self.constant();
        self.state[0] = self.s_box(self.state[0], key)?;
        self.mix();
        Ok(())
    }

    /// x⁵ + key, x allocated first (it was a linear combination).
    fn s_box(&mut self, x: Scalar, key: Scalar) -> Result<Scalar, SynthesisError> {
        let x2 = x.square();
        let x4 = x2.square();
        let x5 = x4 * x + key;
        for value in [x, x2, x4, x5] {
            self.cs.alloc_constrained(value)?;
        }
        Ok(x5)
    }

    /// The round's matrix, as the gadget picks it: the MDS matrix, except the pre-sparse
    /// matrix after the last initial full round and a sparse one after each partial round.
    fn mix(&mut self) {
        let constants = self.constants;
        let sparse_from = constants.half_full_rounds - 1;
        let round = self.round;
        self.round += 1;
        if round > sparse_from && round < constants.half_full_rounds + constants.partial_rounds {
            let sparse = &constants.sparse_matrixes[round - sparse_from - 1];
            let first = self.state[0];
            let mixed_first = self.state.iter().zip(&sparse.w_hat).map(|(x, w)| *x * w).sum();
            for (x, v) in self.state[1..].iter_mut().zip(&sparse.v_rest) {
                *x += first * v;
            }
            self.state[0] = mixed_first;
            return;
        }
        let matrix = if round == sparse_from {
            &constants.pre_sparse_matrix
        } else {
            &constants.mds_matrices.m
        };
        let width = self.state.len();
        let mixed: Vec<Scalar> = (0..width)
            .map(|j| self.state.iter().zip(matrix).map(|(x, row)| *x * row[j]).sum())
            .collect();
        self.state = mixed;
    }
}

#[cfg(test)]
mod tests {
    use bellperson::ConstraintSystem;
    use filecoin_hashers::{POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8};
    use rand::SeedableRng;

    use super::*;

    /// Our witness and the gadget's, for one preimage: every allocation, the constraint count
    /// and the result.
    fn check<A: Arity<Scalar>>(preimage: &[Scalar], constants: &PoseidonConstants<Scalar, A>) {
        let witness = |native: bool| {
            let mut cs = WitnessCs::whole(None);
            let preimage: Vec<_> = preimage.iter().map(|&x| AllocatedNum::alloc(&mut cs, || Ok(x)).unwrap()).collect();
            let hash = match native {
                true => poseidon_hash(&mut cs, &preimage, constants).unwrap(),
                false => neptune::circuit::poseidon_hash(cs.namespace(|| "gadget"), preimage, constants).unwrap(),
            };
            (hash.get_value(), cs.into_witness())
        };
        let (ours, theirs) = (witness(true), witness(false));
        assert_eq!(
            ours.1.aux_assignment.len(),
            theirs.1.aux_assignment.len(),
            "arity {}: allocations",
            A::to_usize()
        );
        assert!(ours == theirs, "arity {}: witness differs", A::to_usize());
    }

    #[test]
    fn equals_the_gadgets_witness_for_every_arity_filecoin_hashes_with() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let p_minus_1 = -Scalar::ONE;
        let edge = |arity: usize| [vec![Scalar::ZERO; arity], vec![Scalar::ONE; arity], vec![p_minus_1; arity]];
        let random = |arity: usize, rng: &mut rand_chacha::ChaCha8Rng| (0..arity).map(|_| Scalar::random(&mut *rng)).collect::<Vec<_>>();
        for preimage in edge(2).into_iter().chain([random(2, &mut rng)]) {
            check(&preimage, &*POSEIDON_CONSTANTS_2);
        }
        for preimage in edge(4).into_iter().chain([random(4, &mut rng)]) {
            check(&preimage, &*POSEIDON_CONSTANTS_4);
        }
        for preimage in edge(8).into_iter().chain([random(8, &mut rng)]) {
            check(&preimage, &*POSEIDON_CONSTANTS_8);
        }
        for preimage in edge(11).into_iter().chain([random(11, &mut rng)]) {
            check(&preimage, &*POSEIDON_CONSTANTS_11);
        }
    }

    #[test]
    fn a_preimage_of_another_arity_is_an_error() {
        let mut cs = WitnessCs::whole(None);
        let x = AllocatedNum::alloc(&mut cs, || Ok(Scalar::ONE)).unwrap();
        assert!(poseidon_hash(&mut cs, &[x.clone(), x.clone(), x], &*POSEIDON_CONSTANTS_2).is_err());
    }
}
