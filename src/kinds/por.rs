//! The witness of storage-proofs-core's inclusion gadget (`PoRCircuit`, private: its root is not
//! an input) over a Poseidon tree, its hashes computed natively ([`super::poseidon`]).

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
        let arity = siblings.len() + 1;
        if ![2, 4, 8].contains(&arity) {
            return Err(SynthesisError::IoError(std::io::Error::other(format!(
                "no Poseidon tree of arity {arity}"
            ))));
        }
        let index_bits = (0..arity.trailing_zeros())
            .map(|i| AllocatedBit::alloc(&mut *cs, Some((index >> i) & 1 == 1)).map(Boolean::from))
            .collect::<Result<Vec<_>, _>>()?;
        path_bits.extend_from_slice(&index_bits);
        let siblings = siblings
            .iter()
            .map(|&sibling| AllocatedNum::alloc(&mut *cs, || Ok(sibling)))
            .collect::<Result<Vec<_>, _>>()?;
        let children = insert(cs, &node, &index_bits, &siblings)?;
        node = match arity {
            2 => poseidon_hash(cs, &children, &POSEIDON_CONSTANTS_2),
            4 => poseidon_hash(cs, &children, &POSEIDON_CONSTANTS_4),
            _ => poseidon_hash(cs, &children, &POSEIDON_CONSTANTS_8),
        }?;
    }
    multipack::pack_into_inputs(&mut *cs, &path_bits)?;
    constraint::equal(cs, || "enforce root is correct", &node, root);
    Ok(())
}

/// A vanilla inclusion proof's levels as [`inclusion`] takes them.
pub(crate) fn levels<P: MerkleProofTrait>(path: &P) -> Vec<(Vec<Scalar>, usize)> {
    path.path()
        .into_iter()
        .map(|(siblings, index)| (siblings.into_iter().map(Into::into).collect(), index))
        .collect()
}
