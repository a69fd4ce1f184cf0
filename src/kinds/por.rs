//! The witness of storage-proofs-core's inclusion gadgets over a Poseidon tree (`PoRCircuit`,
//! private: its root is not an input; `por_no_challenge_input`), their hashes computed natively
//! ([`super::poseidon`]).

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar;
use filecoin_hashers::{POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8};
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::gadgets::insertion::insert;
use storage_proofs_core::merkle::MerkleProofTrait;

use super::poseidon::poseidon_hash;
use crate::synthesis::r1cs::WitnessCs;

/// `PoRCircuit::synthesize(cs, Root::Var(leaf), path, Root::Var(root), true)`'s witness, for a
/// Poseidon tree: `path` is the proof's levels from the leaf up (`MerkleProofTrait::path`: the
/// siblings and the node's index among them), of arity 2, 4 or 8.
pub(crate) fn inclusion(
    cs: &mut WitnessCs,
    leaf: &AllocatedNum<Scalar>,
    path: &[(Vec<Scalar>, usize)],
    root: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    let mut node = leaf.clone();
    let mut path_bits = Vec::new();
    for (siblings, index) in path {
        let arity = tree_arity(siblings.len())?;
        let index_bits = (0..arity.trailing_zeros())
            .map(|i| AllocatedBit::alloc(&mut *cs, Some((index >> i) & 1 == 1)).map(Boolean::from))
            .collect::<Result<Vec<_>, _>>()?;
        path_bits.extend_from_slice(&index_bits);
        let siblings = siblings
            .iter()
            .map(|&sibling| AllocatedNum::alloc(&mut *cs, || Ok(sibling)))
            .collect::<Result<Vec<_>, _>>()?;
        node = hash_level(cs, &node, &index_bits, &siblings)?;
    }
    multipack::pack_into_inputs(&mut *cs, &path_bits)?;
    constraint::equal(cs, || "enforce root is correct", &node, root);
    Ok(())
}

/// `por_no_challenge_input(cs, challenge_bits, leaf, path, root)`'s witness (storage-proofs-core,
/// for a Poseidon tree): the path's siblings already allocated, a level's insertion index the
/// next of `challenge_bits` (little-endian), every bit used.
pub(crate) fn inclusion_at_challenge(
    cs: &mut WitnessCs,
    challenge_bits: &[Boolean],
    leaf: &AllocatedNum<Scalar>,
    path: &[Vec<AllocatedNum<Scalar>>],
    root: &AllocatedNum<Scalar>,
) -> Result<(), SynthesisError> {
    let mut node = leaf.clone();
    let mut bits = challenge_bits;
    for siblings in path {
        let index_bits = tree_arity(siblings.len())?.trailing_zeros() as usize;
        if bits.len() < index_bits {
            return Err(wrong("a challenge has fewer bits than its inclusion path's levels take"));
        }
        let (index, rest) = bits.split_at(index_bits);
        node = hash_level(cs, &node, index, siblings)?;
        bits = rest;
    }
    if !bits.is_empty() {
        return Err(wrong("a challenge has more bits than its inclusion path's levels take"));
    }
    constraint::equal(cs, || "calculated root == provided root", &node, root);
    Ok(())
}

/// One level of an inclusion path: `node` inserted among `siblings` at `index_bits`, hashed.
fn hash_level(
    cs: &mut WitnessCs,
    node: &AllocatedNum<Scalar>,
    index_bits: &[Boolean],
    siblings: &[AllocatedNum<Scalar>],
) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let children = insert(cs, node, index_bits, siblings)?;
    match children.len() {
        2 => poseidon_hash(cs, &children, &POSEIDON_CONSTANTS_2),
        4 => poseidon_hash(cs, &children, &POSEIDON_CONSTANTS_4),
        _ => poseidon_hash(cs, &children, &POSEIDON_CONSTANTS_8),
    }
}

/// The arity of a level with `siblings` siblings: 2, 4 or 8 (the Poseidon trees').
fn tree_arity(siblings: usize) -> Result<usize, SynthesisError> {
    match siblings + 1 {
        arity @ (2 | 4 | 8) => Ok(arity),
        arity => Err(wrong(&format!("no Poseidon tree of arity {arity}"))),
    }
}

fn wrong(what: &str) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(what.to_string()))
}

/// A vanilla inclusion proof's levels as [`inclusion`] takes them.
pub(crate) fn levels<P: MerkleProofTrait>(path: &P) -> Vec<(Vec<Scalar>, usize)> {
    path.path()
        .into_iter()
        .map(|(siblings, index)| (siblings.into_iter().map(Into::into).collect(), index))
        .collect()
}

#[cfg(test)]
mod tests {
    use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
    use bellperson::gadgets::num::AllocatedNum;
    use blstrs::Scalar;
    use ff::Field;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use filecoin_proofs::constants::{SectorShape2KiB, SectorShape32GiB, SectorShape64GiB};
    use filecoin_proofs::types::MerkleTreeTrait;
    use rand::{Rng, SeedableRng};
    use storage_proofs_core::gadgets::por::por_no_challenge_input;
    use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};

    use super::inclusion_at_challenge;
    use crate::kinds::vanilla::made_up_path;
    use crate::synthesis::r1cs::WitnessCs;

    /// A random path of `Tree`'s shape over `leaves` leaves: `por_no_challenge_input`'s witness
    /// and `inclusion_at_challenge`'s are equal, through base, sub-tree and top-tree levels.
    fn check<Tree: MerkleTreeTrait<Hasher = PoseidonHasher>>(leaves: usize, seed: u64) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let root = Scalar::random(&mut rng);
        let path: MerkleProof<PoseidonHasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity> = made_up_path(leaves, root.into(), &mut rng);
        let challenge: usize = rng.gen_range(0..leaves);
        let witness = |native: bool| {
            let mut cs = WitnessCs::whole(None);
            let bits = (0..leaves.trailing_zeros())
                .map(|i| AllocatedBit::alloc(&mut cs, Some((challenge >> i) & 1 == 1)).unwrap())
                .collect::<Vec<_>>();
            let leaf = AllocatedNum::alloc(&mut cs, || Ok(path.leaf().into())).unwrap();
            let root = AllocatedNum::alloc(&mut cs, || Ok(root)).unwrap();
            let siblings = path
                .path()
                .into_iter()
                .map(|(level, _)| {
                    level
                        .into_iter()
                        .map(|s| AllocatedNum::alloc(&mut cs, || Ok(s.into())).unwrap())
                        .collect()
                })
                .collect::<Vec<Vec<_>>>();
            match native {
                true => {
                    let bits: Vec<Boolean> = bits.into_iter().map(Into::into).collect();
                    inclusion_at_challenge(&mut cs, &bits, &leaf, &siblings, &root).unwrap()
                }
                false => por_no_challenge_input::<Tree, _>(&mut cs, bits, leaf, siblings, root).unwrap(),
            }
            cs.into_witness()
        };
        assert_eq!(witness(true), witness(false), "{leaves} leaves");
    }

    #[test]
    fn inclusion_at_challenge_equals_the_gadget() {
        check::<SectorShape2KiB>(64, 1);
        check::<SectorShape32GiB>(1 << 30, 2);
        check::<SectorShape64GiB>(1 << 31, 3);
    }
}
