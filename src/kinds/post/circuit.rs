//! A PoSt's circuit: filecoin-proofs' `FallbackPoStCircuit` with its slots as segments, and the
//! witness of a slot computed natively.

use std::ops::Range;

use bellperson::gadgets::num::AllocatedNum;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::{Hasher, POSEIDON_CONSTANTS_2};
use filecoin_proofs::types::MerkleTreeTrait;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_post::fallback::{PublicSector, Sector};

use super::{TreeDomain, TreeSectorProof};
use crate::cancel::CancelToken;
use crate::kinds::por;
use crate::kinds::poseidon::poseidon_hash;
use crate::synthesis::r1cs::{SegmentedCircuit, Witness, WitnessCs};

/// `FallbackPoStCircuit` with its slots as segments: slot i's sub-circuit allocates its own
/// variables only (its comm_r input, comm_c, comm_r_last and paths), so the slots synthesize
/// apart and in parallel; the prefix is empty.
pub(super) struct PostCircuit<'a, Tree: 'static + MerkleTreeTrait> {
    /// filecoin-proofs' sub-circuit of each slot (classic synthesis and shapes).
    pub slots: Vec<Sector<Tree>>,
    /// Each slot's sector and vanilla proof, what its witness is computed from; none in a
    /// blank circuit.
    pub proofs: Vec<&'a (PublicSector<TreeDomain<Tree>>, TreeSectorProof<Tree>)>,
}

impl<Tree: 'static + MerkleTreeTrait> SegmentedCircuit for PostCircuit<'_, Tree> {
    fn num_segments(&self) -> usize {
        self.slots.len()
    }

    fn synthesize_segments<CS: ConstraintSystem<Scalar>>(&self, cs: &mut CS, segments: Range<usize>) -> Result<(), SynthesisError> {
        for i in segments {
            Circuit::synthesize(&self.slots[i], &mut cs.namespace(|| format!("sector_{i}")))?;
        }
        Ok(())
    }

    fn segment_witness(&self, i: usize, cancel: Option<&CancelToken>) -> Result<Witness, SynthesisError> {
        let (sector, proof) = self.proofs.get(i).ok_or(SynthesisError::AssignmentMissing)?;
        let mut cs = WitnessCs::whole(cancel);
        slot_witness::<Tree>(&mut cs, sector, proof)?;
        Ok(cs.into_witness())
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for PostCircuit<'_, Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.synthesize_segments(cs, 0..self.slots.len())
    }
}

/// The witness of a slot's sub-circuit (`Sector::synthesize`, storage-proofs-post), its
/// Poseidon hashes computed natively: comm_r_last, comm_c, comm_r (an input), comm_r =
/// H(comm_c ‖ comm_r_last), then each challenge's leaf and its inclusion in comm_r_last.
fn slot_witness<Tree: 'static + MerkleTreeTrait>(
    cs: &mut WitnessCs,
    sector: &PublicSector<TreeDomain<Tree>>,
    proof: &TreeSectorProof<Tree>,
) -> Result<(), SynthesisError> {
    if <Tree::Hasher as Hasher>::name() != PoseidonHasher::name() {
        return Err(SynthesisError::IoError(std::io::Error::other("a PoSt tree is a Poseidon tree")));
    }
    let alloc = |cs: &mut WitnessCs, value: TreeDomain<Tree>| AllocatedNum::alloc(cs, || Ok(value.into()));
    let comm_r_last = alloc(cs, proof.comm_r_last)?;
    let comm_c = alloc(cs, proof.comm_c)?;
    let comm_r = alloc(cs, sector.comm_r)?;
    comm_r.inputize(&mut *cs)?;
    let hash = poseidon_hash(cs, &[comm_c, comm_r_last.clone()], &POSEIDON_CONSTANTS_2)?;
    constraint::equal(cs, || "comm_r = H(comm_c ‖ comm_r_last)", &comm_r, &hash);
    for path in &proof.inclusion_proofs {
        let leaf = alloc(cs, path.leaf())?;
        por::inclusion(cs, &leaf, &por::levels(path), &comm_r_last)?;
    }
    Ok(())
}
