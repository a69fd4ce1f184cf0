//! Filecoin PoRep commit phase 2 on top of filecoin-proofs: decoding the C1 output, checking it,
//! building the partition circuits, and verifying the result with filecoin-proofs' own
//! verification path (StackedCompound::verify → bellperson's batch verifier).

use bellperson::groth16::PreparedVerifyingKey;
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Bls12;
use blstrs::Scalar;
use ff::Field;
use filecoin_hashers::Hasher;
use filecoin_proofs::as_safe_commitment;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::parameters::{public_params, setup_params};
use filecoin_proofs::types::{MerkleTreeTrait, PoRepConfig};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{RegisteredSealProof, SectorId};
use rand::{Rng, SeedableRng};
use std::ops::Range;
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_core::merkle::{base_path_length, MerkleProof};
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, ChallengeRequirements, Column, ColumnProof, EncodingProof, LabelingProof, StackedCircuit, StackedCompound, StackedDrg,
    Tau,
};
use typenum::{Unsigned, U0, U2};

use crate::cancel::CancelToken;
use crate::kinds::vanilla::is_canonical;
use crate::kinds::CircuitSource;
use crate::synthesis::r1cs::{SegmentedCircuit, Witness};

mod check;
mod column;
mod job;
mod witness;

#[cfg(feature = "internals")]
pub use job::MadeUpSector;
pub use job::{SectorInput, SectorRequest};

use crate::error::{Error, Result, Status};

/// Runs `$f::<Tree>(args)` with the merkle tree shape of a registered proof's sector size (seal
/// or PoSt); sizes cuzk does not support become an error instead of filecoin-proofs' panic, of
/// the error type `$f` returns (cuzk's, or any that converts from it).
#[macro_export]
macro_rules! with_tree_shape {
    ($proof:expr, $f:ident ( $($arg:expr),* $(,)? )) => {{
        use filecoin_proofs::constants as c;
        match u64::from($proof.sector_size()) {
            c::SECTOR_SIZE_2_KIB => $f::<c::SectorShape2KiB>($($arg),*),
            c::SECTOR_SIZE_8_MIB => $f::<c::SectorShape8MiB>($($arg),*),
            c::SECTOR_SIZE_512_MIB => $f::<c::SectorShape512MiB>($($arg),*),
            c::SECTOR_SIZE_32_GIB => $f::<c::SectorShape32GiB>($($arg),*),
            c::SECTOR_SIZE_64_GIB => $f::<c::SectorShape64GiB>($($arg),*),
            other => Err(::std::convert::From::from($crate::error::Error::invalid(format!(
                "unsupported sector size {other}"
            )))),
        }
    }};
}

pub type StackedPublicInputs<Tree> =
    stacked::PublicInputs<<<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain, <DefaultPieceHasher as Hasher>::Domain>;
pub type VanillaProofs<Tree> = Vec<Vec<stacked::Proof<Tree, DefaultPieceHasher>>>;
type CompoundParams<'a, Tree> = compound_proof::PublicParams<'a, StackedDrg<'a, Tree, DefaultPieceHasher>>;

/// Decodes filecoin-proofs-api's `SealCommitPhase1Output` from the JSON filecoin-ffi passes.
pub fn parse_c1(json: &[u8]) -> Result<SealCommitPhase1Output> {
    if json.is_empty() {
        return Err(Error::new(Status::ParseError, "C1 JSON is empty"));
    }
    serde_json::from_slice(json).map_err(|e| Error::from_dependency(Status::ParseError, "C1 JSON is not a SealCommitPhase1Output", e))
}

/// The filecoin-proofs configuration of a registered seal proof, or why cuzk can't prove it.
pub fn porep_config(proof: RegisteredSealProof) -> Result<PoRepConfig> {
    if proof.major_version() != 1 {
        return Err(Error::invalid(format!("{proof:?}: unsupported proof version")));
    }
    let config = proof.as_v1_config();
    if config.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(Error::invalid(format!(
            "{proof:?}: non-interactive PoRep (aggregated C2) is not supported"
        )));
    }
    Ok(config)
}

/// Name of the proving key file in filecoin-proofs' cache naming (`v28-<circuit id>`), without
/// the extension.
pub fn parameter_cache_id<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<String> {
    config
        .get_cache_identifier::<Tree>()
        .map_err(|e| Error::from_dependency(Status::Internal, "circuit identifier", e))
}

/// Everything the partition circuits of one sector are built from.
pub struct SealInputs<Tree: 'static + MerkleTreeTrait> {
    pub config: PoRepConfig,
    pub public_inputs: StackedPublicInputs<Tree>,
    pub vanilla_proofs: VanillaProofs<Tree>,
}

fn dependency(context: &'static str) -> impl Fn(anyhow::Error) -> Error {
    move |e| Error::from_dependency(Status::InvalidArgument, context, e)
}

fn compound_params<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<CompoundParams<'static, Tree>> {
    let setup = compound_proof::SetupParams {
        vanilla_params: setup_params(config).map_err(dependency("PoRep setup parameters"))?,
        partitions: Some(usize::from(config.partitions)),
        priority: false,
    };
    StackedCompound::<Tree, DefaultPieceHasher>::setup(&setup).map_err(dependency("PoRep public parameters"))
}

fn public_inputs<Tree: 'static + MerkleTreeTrait>(
    replica_id: <Tree::Hasher as Hasher>::Domain,
    comm_r: [u8; 32],
    comm_d: [u8; 32],
    seed: [u8; 32],
) -> Result<StackedPublicInputs<Tree>> {
    if comm_d == [0; 32] || comm_r == [0; 32] {
        return Err(Error::invalid("all-zero commitment (comm_r or comm_d)"));
    }
    if seed == [0; 32] {
        return Err(Error::invalid("all-zero PoRep challenge seed"));
    }
    Ok(stacked::PublicInputs {
        replica_id,
        tau: Some(Tau {
            comm_r: as_safe_commitment(&comm_r, "comm_r").map_err(dependency("comm_r"))?,
            comm_d: as_safe_commitment(&comm_d, "comm_d").map_err(dependency("comm_d"))?,
        }),
        k: None,
        seed: Some(seed),
    })
}

/// Checks a C1 output for this prover and sector and returns the inputs of its circuits. The
/// vanilla proofs' structure is checked ([`check`]), then they are verified here (cheap next to
/// C2): a malformed, tampered or mismatched C1 is reported before any synthesis time is spent
/// on it.
pub fn check_c1<Tree: 'static + MerkleTreeTrait>(c1: SealCommitPhase1Output, prover_id: [u8; 32], sector_id: u64) -> Result<SealInputs<Tree>> {
    let config = porep_config(c1.registered_proof)?;
    let (proof_size, vanilla_size) = (u64::from(c1.registered_proof.sector_size()), vanilla_sector_size(&c1.vanilla_proofs));
    if proof_size != vanilla_size {
        // Some shapes share a tree type (2KiB and 8MiB), so the conversion below would not notice.
        return Err(Error::invalid(format!(
            "C1's vanilla proofs are for a {vanilla_size} byte sector, its registered proof {:?} is for {proof_size} byte sectors",
            c1.registered_proof
        )));
    }
    let vanilla_proofs: VanillaProofs<Tree> = c1.vanilla_proofs.try_into().map_err(|e| {
        Error::from_dependency(
            Status::InvalidArgument,
            "vanilla proofs do not match the registered proof's sector size",
            e,
        )
    })?;
    if vanilla_proofs.len() != usize::from(config.partitions) || vanilla_proofs.iter().any(|p| p.is_empty()) {
        return Err(Error::invalid(format!(
            "C1 has {} partitions of vanilla proofs, {:?} needs {}",
            vanilla_proofs.len(),
            c1.registered_proof,
            config.partitions.0
        )));
    }
    let params = public_params::<Tree>(&config).map_err(dependency("PoRep public parameters"))?;
    let nodes = (proof_size / storage_proofs_core::util::NODE_SIZE as u64) as usize;
    check::check_structure::<Tree>(
        &vanilla_proofs,
        nodes,
        params.num_layers,
        params.challenges.num_challenges_per_partition(),
    )?;
    if !is_canonical(&c1.replica_id) {
        return Err(Error::invalid("replica_id is not a canonical field element"));
    }
    let replica_id = generate_replica_id::<Tree::Hasher, _>(&prover_id, sector_id, &c1.ticket, c1.comm_d, &config.porep_id);
    let c1_replica_id: <Tree::Hasher as Hasher>::Domain = blstrs::Scalar::from(c1.replica_id).into();
    if replica_id != c1_replica_id {
        return Err(Error::invalid(format!(
            "C1 was sealed for a different prover id, sector id, ticket, comm_d or registered proof (its registered proof says {:?})",
            c1.registered_proof
        )));
    }
    let public_inputs = public_inputs::<Tree>(replica_id, c1.comm_r, c1.comm_d, c1.seed)?;
    let valid = StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(&params, &public_inputs, &vanilla_proofs)
        .map_err(dependency("checking the vanilla proofs"))?;
    if !valid {
        return Err(Error::invalid(
            "the vanilla proofs in C1 do not verify against comm_r, comm_d and the seed",
        ));
    }
    Ok(SealInputs {
        config,
        public_inputs,
        vanilla_proofs,
    })
}

/// The sector size the vanilla proofs of a C1 output were made for.
fn vanilla_sector_size(proofs: &VanillaSealProof) -> u64 {
    use filecoin_proofs::constants as c;
    match proofs {
        VanillaSealProof::StackedDrg2KiBV1(_) => c::SECTOR_SIZE_2_KIB,
        VanillaSealProof::StackedDrg8MiBV1(_) => c::SECTOR_SIZE_8_MIB,
        VanillaSealProof::StackedDrg512MiBV1(_) => c::SECTOR_SIZE_512_MIB,
        VanillaSealProof::StackedDrg32GiBV1(_) => c::SECTOR_SIZE_32_GIB,
        VanillaSealProof::StackedDrg64GiBV1(_) => c::SECTOR_SIZE_64_GIB,
    }
}

/// The circuit of one partition: what filecoin-proofs' `StackedCompound::circuit` builds,
/// synthesized through `StackedCircuit::synthesize`, but holding the vanilla proofs so that its
/// challenges can be synthesized apart ([`SegmentedCircuit`]): each challenge's sub-circuit
/// reads only the commitments and replica id bits allocated before the first challenge.
pub struct PartitionCircuit<Tree: 'static + MerkleTreeTrait> {
    replica_id: Option<TreeDomain<Tree>>,
    comm_d: Option<<DefaultPieceHasher as Hasher>::Domain>,
    comm_r: Option<TreeDomain<Tree>>,
    comm_r_last: Option<TreeDomain<Tree>>,
    comm_c: Option<TreeDomain<Tree>>,
    /// One per challenge.
    proofs: Vec<stacked::Proof<Tree, DefaultPieceHasher>>,
    /// Layers of the sector's replication (a column has one row per layer).
    num_layers: usize,
}

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

impl<Tree: 'static + MerkleTreeTrait> SegmentedCircuit for PartitionCircuit<Tree> {
    fn num_segments(&self) -> usize {
        self.proofs.len()
    }

    /// Finer than by challenge: see [`witness`].
    fn witness(&self, cancel: Option<&CancelToken>) -> std::result::Result<Witness, SynthesisError> {
        witness::partition_witness(self, cancel)
    }

    fn synthesize_segments<CS: ConstraintSystem<Scalar>>(&self, cs: &mut CS, segments: Range<usize>) -> std::result::Result<(), SynthesisError> {
        let proofs = self.proofs[segments].iter().cloned().map(Into::into).collect();
        StackedCircuit::<Tree, DefaultPieceHasher>::synthesize(cs, self.replica_id, self.comm_d, self.comm_r, self.comm_r_last, self.comm_c, proofs)
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Scalar> for PartitionCircuit<Tree> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> std::result::Result<(), SynthesisError> {
        self.synthesize_segments(cs, 0..self.proofs.len())
    }
}

/// The parameter id of `proof`'s partition circuit and the extraction of its shape.
pub(crate) fn circuit_of<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof) -> Result<(String, CircuitSource<'static>)> {
    let config = porep_config(proof)?;
    let id = parameter_cache_id::<Tree>(&config)?;
    Ok((id, Box::new(move || job::extract_shape::<Tree>(&config))))
}

/// The circuit of partition `k`.
pub fn partition_circuit<Tree: 'static + MerkleTreeTrait>(inputs: &SealInputs<Tree>, k: usize) -> Result<PartitionCircuit<Tree>> {
    let proofs = inputs
        .vanilla_proofs
        .get(k)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| Error::invalid(format!("no vanilla proofs for partition {k}")))?;
    // The checks of StackedCompound::circuit.
    let (comm_r_last, comm_c) = (proofs[0].comm_r_last(), proofs[0].comm_c());
    if proofs.iter().any(|p| p.comm_r_last() != comm_r_last || p.comm_c() != comm_c) {
        return Err(Error::invalid(format!(
            "partition {k}: the vanilla proofs disagree on comm_r_last or comm_c"
        )));
    }
    let tau = inputs.public_inputs.tau.as_ref();
    Ok(PartitionCircuit {
        replica_id: Some(inputs.public_inputs.replica_id),
        comm_d: tau.map(|t| t.comm_d),
        comm_r: tau.map(|t| t.comm_r),
        comm_r_last: Some(comm_r_last),
        comm_c: Some(comm_c),
        proofs: proofs.clone(),
        num_layers: setup_params(&inputs.config).map_err(dependency("PoRep setup parameters"))?.num_layers,
    })
}

/// A partition circuit of a proof kind's exact shape built from made-up vanilla proofs: the
/// merkle paths have the depths and arities of the sector's trees, the columns one row per
/// layer, a challenge has the graph's parents. Its values are random (`seed`), so its witness
/// looks like a real one (hash outputs), but nothing in it is consistent: for the circuit's
/// shape (extracted without values; tests/r1cs.rs compares it with filecoin-proofs' blank
/// circuit) and for benchmarks at sizes no sector can be sealed for here (PERFORMANCE ONLY:
/// its proofs cannot verify).
pub fn synthetic_partition_circuit<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig, seed: u64) -> Result<PartitionCircuit<Tree>> {
    let params = public_params::<Tree>(config).map_err(dependency("PoRep public parameters"))?;
    let nodes = params.graph.size();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut value = || Scalar::random(&mut rng);
    let comm_r_last: TreeDomain<Tree> = value().into();
    let comm_c: TreeDomain<Tree> = value().into();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let made_up_path = |root: TreeDomain<Tree>,
                        rng: &mut rand_chacha::ChaCha8Rng|
     -> MerkleProof<Tree::Hasher, Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity> {
        let level = |arity: usize, rng: &mut rand_chacha::ChaCha8Rng| {
            (
                (1..arity).map(|_| Scalar::random(&mut *rng).into()).collect::<Vec<_>>(),
                rng.gen_range(0..arity),
            )
        };
        let base = base_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(nodes);
        let mut path: Vec<_> = (0..base).map(|_| level(Tree::Arity::to_usize(), rng)).collect();
        for arity in [Tree::SubTreeArity::to_usize(), Tree::TopTreeArity::to_usize()]
            .into_iter()
            .filter(|&a| a > 0)
        {
            path.push(level(arity, rng));
        }
        MerkleProof::from_parts(Scalar::random(&mut *rng).into(), root, path)
    };
    let num_layers = params.num_layers;
    let proofs = (0..params.challenges.num_challenges_per_partition())
        .map(|_| {
            let rng = &mut rng;
            let challenge = rng.gen_range(0..nodes as u64);
            let column = |index: u64, rng: &mut rand_chacha::ChaCha8Rng| {
                let rows = (0..num_layers).map(|_| Scalar::random(&mut *rng).into()).collect();
                let column = Column::new(index as u32, rows).expect("a column of layers");
                ColumnProof::from_column(column, made_up_path(comm_c, rng)).expect("a column proof")
            };
            let c_x = column(challenge, rng);
            let drg_parents = (0..params.graph.base_graph().degree())
                .map(|_| column(rng.gen_range(0..nodes as u64), rng))
                .collect();
            let exp_parents = (0..params.graph.expansion_degree())
                .map(|_| column(rng.gen_range(0..nodes as u64), rng))
                .collect();
            let comm_d_path = (0..base_path_length::<U2, U0, U0>(nodes))
                .map(|_| (vec![Scalar::random(&mut *rng).into()], rng.gen_range(0..2)))
                .collect();
            let data_leaf = Scalar::random(&mut *rng).into();
            stacked::Proof {
                comm_d_proofs: MerkleProof::from_parts(data_leaf, Scalar::random(&mut *rng).into(), comm_d_path),
                comm_r_last_proof: made_up_path(comm_r_last, rng),
                replica_column_proofs: stacked::ReplicaColumnProof {
                    c_x,
                    drg_parents,
                    exp_parents,
                },
                labeling_proofs: (1..=num_layers as u32)
                    .map(|layer| LabelingProof::new(layer, challenge, Vec::new()))
                    .collect(),
                encoding_proof: EncodingProof::new(num_layers as u32, challenge, Vec::new()),
            }
        })
        .collect();
    let mut value = || Scalar::random(&mut rng);
    Ok(PartitionCircuit {
        replica_id: Some(value().into()),
        comm_d: Some(value().into()),
        comm_r: Some(value().into()),
        comm_r_last: Some(comm_r_last),
        comm_c: Some(comm_c),
        proofs,
        num_layers,
    })
}

/// What a seal proof is verified against (filecoin-proofs-api's `verify_seal` arguments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealStatement {
    pub registered_proof: RegisteredSealProof,
    pub comm_r: [u8; 32],
    pub comm_d: [u8; 32],
    pub prover_id: [u8; 32],
    pub sector_id: u64,
    pub ticket: [u8; 32],
    pub seed: [u8; 32],
}

/// filecoin-proofs' `verify_seal` with the verifying key supplied by the caller (so that it
/// comes from the engine's parameter directory, not from a process-wide setting).
pub fn verify_seal<Tree: 'static + MerkleTreeTrait>(statement: &SealStatement, vk: &PreparedVerifyingKey<Bls12>, proof: &[u8]) -> Result<bool> {
    let config = porep_config(statement.registered_proof)?;
    if proof.is_empty() {
        return Err(Error::invalid("proof is empty"));
    }
    let replica_id = generate_replica_id::<Tree::Hasher, _>(
        &statement.prover_id,
        SectorId::from(statement.sector_id).into(),
        &statement.ticket,
        statement.comm_d,
        &config.porep_id,
    );
    let public_inputs = public_inputs::<Tree>(replica_id, statement.comm_r, statement.comm_d, statement.seed)?;
    let compound = compound_params::<Tree>(&config)?;
    let multi_proof = MultiProof::new_from_bytes(Some(usize::from(config.partitions)), proof, vk)
        .map_err(|e| Error::from_dependency(Status::InvalidArgument, "proof bytes", e))?;
    StackedCompound::<Tree, DefaultPieceHasher>::verify(
        &compound,
        &public_inputs,
        &multi_proof,
        &ChallengeRequirements {
            minimum_challenges: config.minimum_challenges(),
        },
    )
    .map_err(|e| Error::from_dependency(Status::Internal, "verifying the seal proof", e))
}
