//! SnapDeals (empty-sector update) proofs on top of filecoin-proofs: the partition vanilla
//! proofs filecoin-ffi's `GenerateUpdateVanillaProofs` returns, checked; one partition circuit
//! per vanilla proof (`EmptySectorUpdateCompound::circuit`: 16 for a 32GiB sector, each ≈ 81M
//! constraints); verification with filecoin-proofs' own verifier.
//!
//! The proof is what filecoin-proofs-api's `generate_empty_sector_update_proof_with_vanilla`
//! returns: every partition's Groth16 proof (192 bytes), in partition order.

use bellperson::groth16::PreparedVerifyingKey;
use blstrs::Bls12;
use filecoin_proofs::types::{MerkleTreeTrait, PoRepConfig, SectorUpdateConfig};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain, TreeRHasher};
use storage_proofs_update::{EmptySectorUpdateCompound, PartitionProof, PublicInputs, PublicParams, SetupParams};

use std::sync::Arc;

use crate::backend::Priority;
use crate::cancel::CancelToken;
use crate::error::{Error, Result, Status};
use crate::groth16::ProvingKey;
use crate::kinds::vanilla::{canonical, decode_bincode};
use crate::kinds::{CircuitSource, ProofJob, ProofRequest, SynthesisPath};
use crate::synthesis::r1cs::CircuitShape;
use crate::synthesis::SynthesizedCircuit;
use crate::timings::{timed, Timings};
use crate::with_tree_shape;

mod check;
mod circuit;
mod witness;
use circuit::UpdateCircuit;

/// One sector update to prove: the arguments of filecoin-ffi's
/// `GenerateUpdateProofWithVanilla` (commitments as their 32 bytes).
#[derive(Clone, Copy, Debug)]
pub struct UpdateRequest<'a> {
    pub registered_proof: RegisteredUpdateProof,
    /// The sector's comm_r before the update (its sealed CC replica's).
    pub comm_r_old: [u8; 32],
    /// The updated replica's comm_r.
    pub comm_r_new: [u8; 32],
    /// The new data's comm_d.
    pub comm_d_new: [u8; 32],
    /// One per partition, in order, as filecoin-proofs-api's `generate_partition_proofs`
    /// returns them (bincode of `PartitionProof`).
    pub vanilla_proofs: &'a [&'a [u8]],
}

impl ProofRequest for UpdateRequest<'_> {
    fn check(&self, t: &mut Timings) -> Result<Box<dyn ProofJob>> {
        timed(&mut t.input_check_ns, || with_tree_shape!(self.registered_proof, update_job(self)))
    }

    fn class(&self) -> Priority {
        Priority::Sealing
    }
}

/// filecoin-proofs' configuration of a registered update proof, or why cuzk can't prove it.
pub fn update_config(proof: RegisteredUpdateProof) -> Result<SectorUpdateConfig> {
    if proof.major_version() != 1 {
        return Err(Error::invalid(format!("{proof:?}: unsupported proof version")));
    }
    let config: PoRepConfig = proof.as_v1_config();
    Ok(SectorUpdateConfig::from_porep_config(&config))
}

/// The vanilla parameters of a sector size's update circuit (challenges, partitions, apex tree).
fn public_params(config: &SectorUpdateConfig) -> PublicParams {
    PublicParams::from_sector_size(u64::from(config.sector_size))
}

/// The parameter id of `proof`'s partition circuit and the extraction of its shape.
pub(crate) fn circuit_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredUpdateProof,
) -> Result<(String, CircuitSource<'static>)> {
    let params = public_params(&update_config(proof)?);
    let id = circuit_id::<Tree>(&params);
    Ok((id, Box::new(move || extract_shape::<Tree>(&params))))
}

/// filecoin-proofs' parameter id of the update circuit (`empty-sector-update-…`).
fn circuit_id<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(params: &PublicParams) -> String {
    <EmptySectorUpdateCompound<Tree> as CacheableParameters<_, _>>::cache_identifier(params)
}

/// The partition circuit's shape, from filecoin-proofs' blank circuit.
fn extract_shape<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(params: &PublicParams) -> Result<CircuitShape> {
    CircuitShape::extract_parallel(&UpdateCircuit::<Tree>::blank(params))
}

/// The public inputs of every partition (filecoin-proofs sets `k` per partition).
fn public_inputs(config: &SectorUpdateConfig, comm_r_old: &[u8; 32], comm_r_new: &[u8; 32], comm_d_new: &[u8; 32]) -> Result<PublicInputs> {
    Ok(PublicInputs {
        k: 0,
        comm_r_old: canonical::<TreeRDomain>(comm_r_old, "comm_r_old")?,
        comm_d_new: canonical::<TreeDDomain>(comm_d_new, "comm_d_new")?,
        comm_r_new: canonical::<TreeRDomain>(comm_r_new, "comm_r_new")?,
        h: config.h,
    })
}

/// A checked update: its partitions' vanilla proofs and public inputs.
struct UpdateJob<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    /// The made-up inputs' synthetic key (nothing to verify then); None for real inputs.
    own_key: Option<Arc<ProvingKey>>,
    params: PublicParams,
    circuit_id: String,
    inputs: PublicInputs,
    proofs: Vec<PartitionProof<Tree>>,
}

fn update_job<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(request: &UpdateRequest) -> Result<Box<dyn ProofJob>> {
    let config = update_config(request.registered_proof)?;
    let params = public_params(&config);
    let inputs = public_inputs(&config, &request.comm_r_old, &request.comm_r_new, &request.comm_d_new)?;
    if request.vanilla_proofs.len() != params.partition_count {
        return Err(Error::invalid(format!(
            "{} vanilla proofs; a {:?} update has {} partitions, one vanilla proof each",
            request.vanilla_proofs.len(),
            request.registered_proof,
            params.partition_count
        )));
    }
    let mut proofs = Vec::with_capacity(params.partition_count);
    for (k, bytes) in request.vanilla_proofs.iter().enumerate() {
        let place = format!("vanilla_proofs[{k}]");
        let proof: PartitionProof<Tree> = decode_bincode(bytes, "a PartitionProof of this sector size").map_err(|e| e.context(&place))?;
        check::structure(&params, &proof).map_err(|m| Error::invalid(format!("{place}: {m}")))?;
        check::verifies(&params, &inputs, k, &proof).map_err(|m| Error::invalid(format!("{place}: {m}")))?;
        proofs.push(proof);
    }
    Ok(Box::new(UpdateJob::<Tree> {
        own_key: None,
        circuit_id: circuit_id::<Tree>(&params),
        params,
        inputs,
        proofs,
    }))
}

impl<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> ProofJob for UpdateJob<Tree> {
    fn circuit_id(&self) -> &str {
        &self.circuit_id
    }

    fn partitions(&self) -> usize {
        self.proofs.len()
    }

    fn extract_shape(&self) -> Result<CircuitShape> {
        extract_shape::<Tree>(&self.params)
    }

    fn synthesize(&self, k: usize, path: &SynthesisPath, cancel: Option<&CancelToken>, t: &mut Timings) -> Result<SynthesizedCircuit> {
        let proof = self
            .proofs
            .get(k)
            .ok_or_else(|| Error::internal(format!("partition {k} of an update of {} was asked for", self.proofs.len())))?;
        path.run(UpdateCircuit::partition(&self.params, &self.inputs, k, proof), cancel, t)
    }

    fn verify(&self, vk: &PreparedVerifyingKey<Bls12>, proof: &[u8]) -> Option<Result<bool>> {
        if self.own_key.is_some() {
            return None;
        }
        Some(verify_with::<Tree>(&self.params, &self.inputs, vk, proof))
    }

    fn own_key(&self) -> Option<Arc<ProvingKey>> {
        self.own_key.clone()
    }
}

/// What an update proof is verified against: filecoin-proofs-api's
/// `verify_empty_sector_update_proof` arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpdateStatement {
    pub registered_proof: RegisteredUpdateProof,
    pub comm_r_old: [u8; 32],
    pub comm_r_new: [u8; 32],
    pub comm_d_new: [u8; 32],
}

/// filecoin-proofs' `verify_empty_sector_update_proof` with the verifying key supplied by the
/// caller (from the engine's parameter directory).
pub fn verify_update<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    statement: &UpdateStatement,
    vk: &PreparedVerifyingKey<Bls12>,
    proof: &[u8],
) -> Result<bool> {
    let config = update_config(statement.registered_proof)?;
    let inputs = public_inputs(&config, &statement.comm_r_old, &statement.comm_r_new, &statement.comm_d_new)?;
    verify_with::<Tree>(&public_params(&config), &inputs, vk, proof)
}

fn verify_with<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    params: &PublicParams,
    inputs: &PublicInputs,
    vk: &PreparedVerifyingKey<Bls12>,
    proof: &[u8],
) -> Result<bool> {
    let partitions = params.partition_count;
    let expected = partitions * crate::engine::GROTH_PROOF_BYTES;
    if proof.len() != expected {
        return Err(Error::invalid(format!(
            "the proof is {} bytes; this sector size's update proof is {partitions} partition(s) of 192 bytes",
            proof.len()
        )));
    }
    let setup = compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: (params.sector_nodes as u64) << 5,
        },
        partitions: Some(partitions),
        priority: false,
    };
    let compound =
        EmptySectorUpdateCompound::<Tree>::setup(&setup).map_err(|e| Error::from_dependency(Status::Internal, "update public parameters", e))?;
    let multi_proof =
        MultiProof::new_from_bytes(Some(partitions), proof, vk).map_err(|e| Error::from_dependency(Status::InvalidArgument, "proof bytes", e))?;
    EmptySectorUpdateCompound::<Tree>::verify(&compound, inputs, &multi_proof, &())
        .map_err(|e| Error::from_dependency(Status::Internal, "verifying the update proof", e))
}

/// An update of `proof`'s sector size made from made-up partition vanilla proofs: `partitions`
/// partitions (at most the sector size's) whose paths, apex leaves and commitments have the
/// exact shape of a real update's with random values (`seed`), so the circuits and their
/// witnesses have a real update's shape and density but nothing is consistent: for benchmarks
/// at sizes no sector can be updated for here (PERFORMANCE ONLY: its proof cannot verify, so
/// none is verified). Proven with `key` (a synthetic key); without one it can only be
/// synthesized (to make that key from).
#[cfg(feature = "internals")]
#[derive(Clone)]
pub struct MadeUpUpdate {
    pub proof: RegisteredUpdateProof,
    pub partitions: usize,
    pub seed: u64,
    pub key: Option<Arc<ProvingKey>>,
}

#[cfg(feature = "internals")]
impl ProofRequest for MadeUpUpdate {
    fn check(&self, t: &mut Timings) -> Result<Box<dyn ProofJob>> {
        timed(&mut t.input_check_ns, || with_tree_shape!(self.proof, made_up_job(self)))
    }

    fn class(&self) -> Priority {
        Priority::Sealing
    }
}

#[cfg(feature = "internals")]
fn made_up_job<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(made_up: &MadeUpUpdate) -> Result<Box<dyn ProofJob>> {
    use rand::SeedableRng;

    let config = update_config(made_up.proof)?;
    let params = public_params(&config);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(made_up.seed);
    let inputs = made_up_inputs(&config, &mut rng);
    let proofs = (0..made_up.partitions.clamp(1, params.partition_count))
        .map(|k| made_up_partition(&params, &inputs, k, &mut rng))
        .collect();
    Ok(Box::new(UpdateJob::<Tree> {
        own_key: made_up.key.clone(),
        circuit_id: circuit_id::<Tree>(&params),
        params,
        inputs,
        proofs,
    }))
}

/// Random commitments for a made-up update ([`MadeUpUpdate`]).
#[cfg(any(test, feature = "internals"))]
fn made_up_inputs(config: &SectorUpdateConfig, rng: &mut impl rand::Rng) -> PublicInputs {
    use ff::Field;
    PublicInputs {
        k: 0,
        comm_r_old: blstrs::Scalar::random(&mut *rng).into(),
        comm_d_new: blstrs::Scalar::random(&mut *rng).into(),
        comm_r_new: blstrs::Scalar::random(&mut *rng).into(),
        h: config.h,
    }
}

/// A made-up vanilla proof of partition `k` ([`MadeUpUpdate`]): every path of the tree's shape
/// with random values, except what filecoin-proofs' circuit asserts while it is synthesized: the
/// challenges' TreeDNew paths pass through one apex root and each new label is the old one
/// encoded with the new data (label_r_new = label_r_old + label_d_new · rho).
#[cfg(any(test, feature = "internals"))]
fn made_up_partition<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    params: &PublicParams,
    inputs: &PublicInputs,
    k: usize,
    rng: &mut impl rand::Rng,
) -> PartitionProof<Tree> {
    use crate::kinds::vanilla::made_up_path;
    use ff::Field;
    use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};
    use storage_proofs_update::constants::TreeDHasher;
    use storage_proofs_update::vanilla::{phi, rho};
    use storage_proofs_update::{ChallengeProof, Challenges};

    type PathR<Tree> =
        MerkleProof<TreeRHasher, <Tree as MerkleTreeTrait>::Arity, <Tree as MerkleTreeTrait>::SubTreeArity, <Tree as MerkleTreeTrait>::TopTreeArity>;
    let nodes = params.sector_nodes;
    let mut scalar = || blstrs::Scalar::random(&mut *rng);
    let (root_r_old, root_r_new, comm_c) = (scalar().into(), scalar().into(), scalar().into());
    let apex_leafs = (0..params.apex_leaf_count).map(|_| scalar().into()).collect();
    let below_partition = params.challenge_bit_len - params.partition_bit_len;
    let partition_path: Vec<TreeDDomain> = (0..params.partition_bit_len).map(|_| scalar().into()).collect();
    let path_d = |rng: &mut dyn rand::RngCore| {
        let levels = (0..params.challenge_bit_len)
            .map(|level| {
                let sibling = match level.checked_sub(below_partition) {
                    Some(top) => partition_path[top],
                    None => blstrs::Scalar::random(&mut *rng).into(),
                };
                (vec![sibling], rand::Rng::gen_range(rng, 0..2))
            })
            .collect();
        MerkleProof::from_parts(blstrs::Scalar::random(&mut *rng).into(), inputs.comm_d_new, levels)
    };
    let phi = phi(&inputs.comm_d_new, &inputs.comm_r_old);
    let high_shift = params.challenge_bit_len - inputs.h;
    let challenge_proofs = Challenges::new(nodes, inputs.comm_r_new, k)
        .map(|c| {
            let proof_r_old: PathR<Tree> = made_up_path(nodes, root_r_old, &mut *rng);
            let proof_d_new: MerkleProof<TreeDHasher, typenum::U2> = path_d(&mut *rng);
            let (old, data): (blstrs::Scalar, blstrs::Scalar) = (proof_r_old.leaf().into(), proof_d_new.leaf().into());
            let label = old + data * rho(&phi, c >> high_shift);
            let path_r_new: PathR<Tree> = made_up_path(nodes, root_r_new, &mut *rng);
            ChallengeProof::<Tree> {
                proof_r_old,
                proof_d_new,
                proof_r_new: MerkleProof::from_parts(label.into(), root_r_new, path_r_new.path()),
            }
        })
        .collect();
    PartitionProof::<Tree> {
        comm_c,
        apex_leafs,
        challenge_proofs,
    }
}
