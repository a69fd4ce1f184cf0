//! PoRep C2 as the pipeline proves it: a sector's C1 output (or, for benchmarks, made-up
//! partitions of a sector size's exact shape) as a [`ProofRequest`] and its checked
//! [`ProofJob`].

#[cfg(feature = "internals")]
use std::sync::Arc;

use bellperson::groth16::PreparedVerifyingKey;
use blstrs::Bls12;
use filecoin_proofs::types::MerkleTreeTrait;
#[cfg(feature = "internals")]
use filecoin_proofs_api::RegisteredSealProof;

#[cfg(feature = "internals")]
use super::porep_config;
use super::{check_c1, parameter_cache_id, parse_c1, partition_circuit, verify_seal, SealInputs, SealStatement};
use crate::backend::Priority;
use crate::cancel::CancelToken;
use crate::error::Result;
#[cfg(feature = "internals")]
use crate::groth16::ProvingKey;
use crate::kinds::{ProofJob, ProofRequest, SynthesisPath};
use crate::synthesis::r1cs::CircuitShape;
use crate::synthesis::SynthesizedCircuit;
use crate::timings::{timed, Timings};
use crate::with_tree_shape;

/// One sector of a call: the arguments of filecoin-ffi's `seal_commit_phase2`.
#[derive(Clone, Copy, Debug)]
pub struct SectorRequest<'a> {
    pub c1_json: &'a [u8],
    pub sector_id: u64,
    pub prover_id: [u8; 32],
}

/// What the pipeline proves for one PoRep sector.
#[derive(Clone, Debug)]
pub enum SectorInput<'a> {
    /// A sealed sector's C1 output.
    Sealed(SectorRequest<'a>),
    /// Made-up partitions of a proof kind's exact shape: PERFORMANCE ONLY.
    #[cfg(feature = "internals")]
    MadeUp(MadeUpSector),
}

#[cfg(feature = "internals")]
/// `partitions` partitions of `proof`'s circuit made from made-up vanilla proofs (partition
/// k: `porep::synthetic_partition_circuit` with seed `(seed << 8) + k + 1`), proven with `key`:
/// for benchmarking the pipeline at sizes no sector can be sealed for here. Their proofs
/// cannot verify, so none is self-verified.
#[derive(Clone)]
pub struct MadeUpSector {
    pub proof: RegisteredSealProof,
    pub partitions: usize,
    pub seed: u64,
    pub key: Arc<ProvingKey>,
}

#[cfg(feature = "internals")]
impl std::fmt::Debug for MadeUpSector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MadeUpSector({:?}, {} partitions, seed {})", self.proof, self.partitions, self.seed)
    }
}

impl ProofRequest for SectorInput<'_> {
    fn check(&self, t: &mut Timings) -> Result<Box<dyn ProofJob>> {
        match self {
            SectorInput::Sealed(request) => {
                let c1 = timed(&mut t.input_check_ns, || parse_c1(request.c1_json))?;
                with_tree_shape!(c1.registered_proof, seal_job(request, c1, t))
            }
            #[cfg(feature = "internals")]
            SectorInput::MadeUp(sector) => with_tree_shape!(sector.proof, made_up_job(sector)),
        }
    }

    fn class(&self) -> Priority {
        Priority::Sealing
    }
}

fn seal_job<Tree: 'static + MerkleTreeTrait>(
    request: &SectorRequest,
    c1: filecoin_proofs_api::seal::SealCommitPhase1Output,
    t: &mut Timings,
) -> Result<Box<dyn ProofJob>> {
    let statement = SealStatement {
        registered_proof: c1.registered_proof,
        comm_r: c1.comm_r,
        comm_d: c1.comm_d,
        prover_id: request.prover_id,
        sector_id: request.sector_id,
        ticket: c1.ticket,
        seed: c1.seed,
    };
    let inputs = timed(&mut t.input_check_ns, || check_c1::<Tree>(c1, request.prover_id, request.sector_id))?;
    let circuit_id = parameter_cache_id::<Tree>(&inputs.config)?;
    Ok(Box::new(SealJob {
        inputs,
        statement,
        circuit_id,
    }))
}

/// A sector's checked C1 output.
struct SealJob<Tree: 'static + MerkleTreeTrait> {
    inputs: SealInputs<Tree>,
    statement: SealStatement,
    circuit_id: String,
}

impl<Tree: 'static + MerkleTreeTrait> ProofJob for SealJob<Tree> {
    fn circuit_id(&self) -> &str {
        &self.circuit_id
    }

    fn partitions(&self) -> usize {
        self.inputs.vanilla_proofs.len()
    }

    fn extract_shape(&self) -> Result<CircuitShape> {
        extract_shape::<Tree>(&self.inputs.config)
    }

    fn synthesize(&self, k: usize, path: &SynthesisPath, cancel: Option<&CancelToken>, t: &mut Timings) -> Result<SynthesizedCircuit> {
        let circuit = timed(&mut t.synthesis_ns, || partition_circuit(&self.inputs, k))?;
        path.run(circuit, cancel, t)
    }

    fn verify(&self, vk: &PreparedVerifyingKey<Bls12>, proof: &[u8]) -> Option<Result<bool>> {
        Some(verify_seal::<Tree>(&self.statement, vk, proof))
    }
}

/// Shapes do not depend on values: a made-up partition of the right geometry has the shape.
pub(super) fn extract_shape<Tree: 'static + MerkleTreeTrait>(config: &filecoin_proofs::types::PoRepConfig) -> Result<CircuitShape> {
    CircuitShape::extract_parallel(&super::synthetic_partition_circuit::<Tree>(config, 0)?)
}

#[cfg(feature = "internals")]
fn made_up_job<Tree: 'static + MerkleTreeTrait>(sector: &MadeUpSector) -> Result<Box<dyn ProofJob>> {
    let config = porep_config(sector.proof)?;
    let circuit_id = parameter_cache_id::<Tree>(&config)?;
    Ok(Box::new(MadeUpJob::<Tree> {
        config,
        sector: sector.clone(),
        circuit_id,
        tree: std::marker::PhantomData,
    }))
}

#[cfg(feature = "internals")]
struct MadeUpJob<Tree> {
    config: filecoin_proofs::types::PoRepConfig,
    sector: MadeUpSector,
    circuit_id: String,
    tree: std::marker::PhantomData<fn() -> Tree>,
}

#[cfg(feature = "internals")]
impl<Tree: 'static + MerkleTreeTrait> ProofJob for MadeUpJob<Tree> {
    fn circuit_id(&self) -> &str {
        &self.circuit_id
    }

    fn partitions(&self) -> usize {
        self.sector.partitions
    }

    fn extract_shape(&self) -> Result<CircuitShape> {
        extract_shape::<Tree>(&self.config)
    }

    fn synthesize(&self, k: usize, path: &SynthesisPath, cancel: Option<&CancelToken>, t: &mut Timings) -> Result<SynthesizedCircuit> {
        // Distinct values per sector and partition, as real sectors have.
        let seed = (self.sector.seed << 8) + k as u64 + 1;
        let circuit = timed(&mut t.synthesis_ns, || super::synthetic_partition_circuit::<Tree>(&self.config, seed))?;
        path.run(circuit, cancel, t)
    }

    fn verify(&self, _: &PreparedVerifyingKey<Bls12>, _: &[u8]) -> Option<Result<bool>> {
        None
    }

    fn own_key(&self) -> Option<Arc<ProvingKey>> {
        Some(self.sector.key.clone())
    }
}
