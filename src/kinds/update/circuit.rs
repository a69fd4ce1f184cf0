//! An update partition's circuit: filecoin-proofs' `EmptySectorUpdateCircuit`, built from the
//! partition's vanilla proof each time it is synthesized (it is consumed by synthesis), as one
//! segment; its witness with the challenges in parallel (`witness`).

use std::ops::Range;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use filecoin_proofs::types::MerkleTreeTrait;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_update::constants::TreeRHasher;
use storage_proofs_update::{EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof, PublicInputs, PublicParams};

use super::witness::partition_witness;
use crate::cancel::CancelToken;
use crate::synthesis::r1cs::{SegmentedCircuit, Witness};

/// Partition `k` of an update (or the blank circuit, for its shape).
pub(super) struct UpdateCircuit<'a, Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    params: &'a PublicParams,
    partition: Option<(&'a PublicInputs, usize, &'a PartitionProof<Tree>)>,
}

impl<'a, Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> UpdateCircuit<'a, Tree> {
    pub fn blank(params: &'a PublicParams) -> Self {
        UpdateCircuit { params, partition: None }
    }

    pub fn partition(params: &'a PublicParams, inputs: &'a PublicInputs, k: usize, proof: &'a PartitionProof<Tree>) -> Self {
        UpdateCircuit {
            params,
            partition: Some((inputs, k, proof)),
        }
    }

    /// filecoin-proofs' circuit, as `EmptySectorUpdateCompound::circuit_proofs` builds it.
    pub(super) fn build(&self) -> Result<EmptySectorUpdateCircuit<Tree>, SynthesisError> {
        match self.partition {
            None => Ok(EmptySectorUpdateCompound::<Tree>::blank_circuit(self.params)),
            Some((inputs, k, proof)) => EmptySectorUpdateCompound::<Tree>::circuit(inputs, (), proof, self.params, Some(k))
                .map_err(|e| SynthesisError::IoError(std::io::Error::other(format!("the update circuit: {e}")))),
        }
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> SegmentedCircuit for UpdateCircuit<'_, Tree> {
    fn num_segments(&self) -> usize {
        1
    }

    fn synthesize_segments<CS: ConstraintSystem<Scalar>>(&self, cs: &mut CS, segments: Range<usize>) -> Result<(), SynthesisError> {
        match segments.is_empty() {
            true => Ok(()),
            false => self.build()?.synthesize(cs),
        }
    }

    fn witness(&self, cancel: Option<&CancelToken>) -> Result<Witness, SynthesisError> {
        partition_witness(self.build()?, cancel)
    }
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> Circuit<Scalar> for UpdateCircuit<'_, Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.synthesize_segments(cs, 0..1)
    }
}
