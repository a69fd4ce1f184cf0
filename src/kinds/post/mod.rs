//! WindowPoSt (one partition) and WinningPoSt on top of filecoin-proofs: the vanilla proofs
//! filecoin-ffi's `GenerateSingleVanillaProof` returns, checked; the circuit filecoin-proofs
//! builds (`FallbackPoStCompound::circuit`: one sub-circuit per challenged sector, synthesized
//! apart); verification with filecoin-proofs' own verifier.
//!
//! Both kinds prove one Groth16 circuit of `sector_count` slots, each a sector's comm_r check
//! and `challenge_count` inclusion paths in its tree_r_last:
//! - a WindowPoSt partition: its sectors (2 349 for 32GiB) × 10 challenges; a short partition
//!   repeats its last sector, as filecoin-proofs pads it;
//! - WinningPoSt: one sector's 66 challenges as 66 slots of one challenge each.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use bellperson::groth16::{PreparedVerifyingKey, Proof};
use blstrs::{Bls12, Scalar};
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::parameters::{window_post_public_params, winning_post_public_params};
use filecoin_proofs::types::{MerkleTreeTrait, PoStConfig};
use filecoin_proofs::{FallbackPoStSectorProof, PoStType};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::gadgets::por::PoRCompound;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::multi_proof::MultiProof;
use storage_proofs_core::por;
use storage_proofs_core::sector::SectorId;
use storage_proofs_core::util::NODE_SIZE;
use storage_proofs_post::fallback::{
    self, generate_leaf_challenge, get_challenge_index, FallbackPoSt, FallbackPoStCompound, PublicSector, Sector, SectorProof,
};

use crate::backend::Priority;
use crate::cancel::CancelToken;
use crate::error::{Error, Result, Status};
use crate::groth16::ProvingKey;
pub use crate::kinds::vanilla::MAX_VANILLA_PROOF_BYTES;
use crate::kinds::vanilla::{canonical, check_path, decode_bincode, is_canonical};
use crate::kinds::{CircuitSource, ProofJob, ProofRequest, SynthesisPath};
use crate::synthesis::r1cs::CircuitShape;
use crate::synthesis::SynthesizedCircuit;
use crate::timings::{timed, Timings};
use crate::with_tree_shape;

mod circuit;
use circuit::PostCircuit;

/// Which PoSt a request is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostKind {
    Window,
    Winning,
}

impl PostKind {
    pub(crate) fn of(proof: RegisteredPoStProof) -> Self {
        match proof.typ() {
            PoStType::Window => PostKind::Window,
            PoStType::Winning => PostKind::Winning,
        }
    }

    /// The class of the kind's work by deadline.
    pub(crate) fn class(self) -> Priority {
        match self {
            PostKind::Window => Priority::WindowPost,
            PostKind::Winning => Priority::WinningPost,
        }
    }
}

/// One PoSt to prove: the arguments of filecoin-ffi's `GenerateSinglePartitionWindowPoStWithVanilla`
/// (with `partition_index`) or `GenerateWinningPoStWithVanilla` (`partition_index` 0).
#[derive(Clone, Copy, Debug)]
pub struct PostRequest<'a> {
    pub kind: PostKind,
    pub registered_proof: RegisteredPoStProof,
    pub prover_id: [u8; 32],
    pub randomness: [u8; 32],
    /// One per sector, as filecoin-proofs-api's `generate_single_vanilla_proof` returns them
    /// (bincode of `FallbackPoStSectorProof`), in the partition's sector order (increasing
    /// sector numbers).
    pub vanilla_proofs: &'a [&'a [u8]],
    pub partition_index: usize,
}

impl ProofRequest for PostRequest<'_> {
    fn check(&self, t: &mut Timings) -> Result<Box<dyn ProofJob>> {
        timed(&mut t.input_check_ns, || with_tree_shape!(self.registered_proof, post_job(self)))
    }

    fn class(&self) -> Priority {
        self.kind.class()
    }
}

/// filecoin-proofs' configuration of a registered PoSt proof of `kind`, or why cuzk can't
/// prove it.
pub fn post_config(proof: RegisteredPoStProof, kind: PostKind) -> Result<PoStConfig> {
    if proof.major_version() != 1 {
        return Err(Error::invalid(format!("{proof:?}: unsupported proof version")));
    }
    let typ = PostKind::of(proof);
    if typ != kind {
        return Err(Error::invalid(format!(
            "{proof:?} is a {typ:?}PoSt proof, this call makes {kind:?}PoSt proofs"
        )));
    }
    Ok(proof.as_v1_config())
}

fn dependency(context: &'static str) -> impl Fn(anyhow::Error) -> Error {
    move |e| Error::from_dependency(Status::InvalidArgument, context, e)
}

/// The vanilla parameters of `config`'s circuit: its slots (`sector_count`) and challenges per
/// slot.
fn public_params<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<fallback::PublicParams> {
    match config.typ {
        PoStType::Window => window_post_public_params::<Tree>(config),
        PoStType::Winning => winning_post_public_params::<Tree>(config),
    }
    .map_err(dependency("PoSt public parameters"))
}

/// The parameter id of `proof`'s circuit and the extraction of its shape.
pub(crate) fn circuit_of<Tree: 'static + MerkleTreeTrait>(proof: RegisteredPoStProof) -> Result<(String, CircuitSource<'static>)> {
    let config = post_config(proof, PostKind::of(proof))?;
    Ok((circuit_id::<Tree>(&config)?, Box::new(move || extract_shape::<Tree>(&config))))
}

/// filecoin-proofs' parameter id of `config`'s circuit.
pub fn circuit_id<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<String> {
    config
        .get_cache_identifier::<Tree>()
        .map_err(|e| Error::from_dependency(Status::Internal, "circuit identifier", e))
}

/// The shape of `config`'s circuit, from filecoin-proofs' blank circuit (no values).
pub fn extract_shape<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<CircuitShape> {
    blank_shape::<Tree>(&public_params::<Tree>(config)?)
}

fn blank_shape<Tree: 'static + MerkleTreeTrait>(params: &fallback::PublicParams) -> Result<CircuitShape> {
    let blank = PostCircuit::<Tree> {
        slots: (0..params.sector_count).map(|_| Sector::blank_circuit(params)).collect(),
        proofs: Vec::new(),
    };
    CircuitShape::extract_parallel(&blank)
}

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;
type TreeSectorProof<Tree> = SectorProof<<Tree as MerkleTreeTrait>::Proof>;
#[cfg(feature = "internals")]
type TreePath<Tree> = storage_proofs_core::merkle::MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

/// A checked PoSt: the circuit's slots and public inputs.
struct PostJob<Tree: 'static + MerkleTreeTrait> {
    /// The made-up inputs' synthetic key (nothing to verify then); None for real inputs.
    own_key: Option<Arc<ProvingKey>>,
    params: fallback::PublicParams,
    circuit_id: String,
    randomness: TreeDomain<Tree>,
    /// The partition index WindowPoSt challenges are derived with (0 for WinningPoSt).
    k: usize,
    /// The real slots (padding excluded), in circuit order.
    slots: Vec<(PublicSector<TreeDomain<Tree>>, TreeSectorProof<Tree>)>,
}

fn post_job<Tree: 'static + MerkleTreeTrait>(request: &PostRequest) -> Result<Box<dyn ProofJob>> {
    let config = post_config(request.registered_proof, request.kind)?;
    let params = public_params::<Tree>(&config)?;
    let randomness: TreeDomain<Tree> = canonical(&request.randomness, "randomness")?;
    canonical::<TreeDomain<Tree>>(&request.prover_id, "prover_id")?;
    let proofs = decode_vanilla_proofs::<Tree>(request, &config)?;
    let sectors = proofs.into_iter().map(|p| {
        let sector = PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        };
        let proof = p.vanilla_proof.sectors.into_iter().next().expect("checked: one sector proof");
        (sector, proof)
    });
    let slots = match request.kind {
        PostKind::Window => sectors.collect(),
        PostKind::Winning => {
            let (sector, proof) = sectors.into_iter().next().expect("checked: one vanilla proof");
            winning_slots::<Tree>(sector, proof)
        }
    };
    let job = PostJob::<Tree> {
        own_key: None,
        circuit_id: circuit_id::<Tree>(&config)?,
        params,
        randomness,
        k: request.partition_index,
        slots,
    };
    job.check_slots()?;
    Ok(Box::new(job))
}

/// One sector's WinningPoSt challenges as slots of one challenge each, as filecoin-proofs
/// unrolls them.
fn winning_slots<Tree: 'static + MerkleTreeTrait>(
    sector: PublicSector<TreeDomain<Tree>>,
    proof: TreeSectorProof<Tree>,
) -> Vec<(PublicSector<TreeDomain<Tree>>, TreeSectorProof<Tree>)> {
    let (comm_c, comm_r_last) = (proof.comm_c, proof.comm_r_last);
    let slot = |path| SectorProof {
        inclusion_proofs: vec![path],
        comm_c,
        comm_r_last,
    };
    proof.inclusion_proofs.into_iter().map(|path| (sector.clone(), slot(path))).collect()
}

/// Decodes the vanilla proofs and checks their structure: count, sizes, one sector proof each
/// with the configured number of inclusion paths of the sector size's tree shape, canonical
/// field elements, distinct sectors in increasing order (the verifiers take a partition's
/// sectors sorted by number: a proof of other orders never verifies). Errors name the proof
/// (index and sector).
fn decode_vanilla_proofs<Tree: 'static + MerkleTreeTrait>(request: &PostRequest, config: &PoStConfig) -> Result<Vec<FallbackPoStSectorProof<Tree>>> {
    let count = request.vanilla_proofs.len();
    // WindowPoSt: sectors per partition and challenges per sector; WinningPoSt: 1 sector, 66
    // challenges.
    let (most, paths) = (config.sector_count, config.challenge_count);
    if count == 0 {
        return Err(Error::invalid(format!(
            "no vanilla proofs: a {:?} proof needs 1 to {most}",
            request.registered_proof
        )));
    }
    if count > most {
        return Err(Error::invalid(format!(
            "{count} vanilla proofs: a {:?} {} holds at most {most} sectors",
            request.registered_proof,
            if request.kind == PostKind::Window { "partition" } else { "proof" }
        )));
    }
    if request.kind == PostKind::Window && request.partition_index > u32::MAX as usize {
        return Err(Error::invalid(format!("partition index {} is out of range", request.partition_index)));
    }
    if request.kind == PostKind::Winning && request.partition_index != 0 {
        return Err(Error::invalid("WinningPoSt has one partition: its partition index is 0"));
    }
    let leaves = u64::from(config.sector_size) as usize / NODE_SIZE;
    let mut previous = None;
    let mut proofs = Vec::with_capacity(count);
    for (i, bytes) in request.vanilla_proofs.iter().enumerate() {
        let proof = decode_bincode::<FallbackPoStSectorProof<Tree>>(bytes, "a FallbackPoStSectorProof of this sector size")
            .map_err(|e| e.context(&format!("vanilla proof {i}")))?;
        let sector = u64::from(proof.sector_id);
        let named = |message: String| Error::invalid(format!("vanilla proof {i} (sector {sector}): {message}"));
        match previous.replace(sector) {
            Some(p) if p == sector => return Err(named("the sector appears twice".into())),
            Some(p) if p > sector => {
                return Err(named(format!(
                    "sector numbers must increase (the previous is {p}): verifiers take a partition's sectors in that order"
                )))
            }
            _ => {}
        }
        if !is_canonical(&proof.comm_r) {
            return Err(named("comm_r is not a canonical field element".into()));
        }
        let [sector_proof] = proof.vanilla_proof.sectors.as_slice() else {
            return Err(named(format!("{} sector proofs, expected 1", proof.vanilla_proof.sectors.len())));
        };
        if !is_canonical(&sector_proof.comm_c) || !is_canonical(&sector_proof.comm_r_last) {
            return Err(named("comm_c or comm_r_last is not a canonical field element".into()));
        }
        if sector_proof.inclusion_proofs.len() != paths {
            return Err(named(format!(
                "{} inclusion paths, a {:?} proof has {paths}",
                sector_proof.inclusion_proofs.len(),
                request.registered_proof
            )));
        }
        for (n, path) in sector_proof.inclusion_proofs.iter().enumerate() {
            check_path(path, leaves).map_err(|m| named(format!("inclusion path {n}: {m}")))?;
        }
        proofs.push(proof);
    }
    Ok(proofs)
}

impl<Tree: 'static + MerkleTreeTrait> PostJob<Tree> {
    /// The leaf challenged by challenge `n` of slot `i`, as filecoin-proofs derives it.
    fn challenged_leaf(&self, i: usize, sector: SectorId, n: usize) -> u64 {
        let slot_index = self.k * self.params.sector_count + i;
        let index = get_challenge_index(self.params.api_version, slot_index, self.params.challenge_count, n);
        generate_leaf_challenge(&self.params, self.randomness, u64::from(sector), index)
    }

    /// What filecoin-proofs' vanilla verifier checks, slot by slot, so that a sector whose
    /// proof does not verify is named: comm_r = H(comm_c ‖ comm_r_last), every path from the
    /// challenged leaf to comm_r_last. Any failure is the faulty sectors' error.
    fn check_slots(&self) -> Result<()> {
        use rayon::prelude::*;
        let mut faulty: Vec<u64> = self
            .slots
            .par_iter()
            .enumerate()
            .filter(|(i, (sector, proof))| !catch_unwind(AssertUnwindSafe(|| self.slot_is_valid(*i, sector, proof))).unwrap_or(false))
            .map(|(_, (sector, _))| u64::from(sector.id))
            .collect();
        if faulty.is_empty() {
            return Ok(());
        }
        // WinningPoSt's slots are one sector's: named once.
        faulty.dedup();
        Err(Error::faulty_sectors(faulty))
    }

    fn slot_is_valid(&self, i: usize, sector: &PublicSector<TreeDomain<Tree>>, proof: &TreeSectorProof<Tree>) -> bool {
        let comm_r_last = proof.comm_r_last;
        let hashed = <Tree::Hasher as Hasher>::Function::hash2(&proof.comm_c, &comm_r_last);
        hashed == sector.comm_r
            && proof
                .inclusion_proofs
                .iter()
                .enumerate()
                .all(|(n, path)| path.root() == comm_r_last && path.validate(self.challenged_leaf(i, sector.id, n) as usize))
    }

    /// The slots the circuit has: the real ones, then the last repeated up to `sector_count`.
    fn padded_slots(&self) -> impl Iterator<Item = &(PublicSector<TreeDomain<Tree>>, TreeSectorProof<Tree>)> {
        let last = self.slots.last().expect("checked: at least one slot");
        self.slots.iter().chain(std::iter::repeat(last)).take(self.params.sector_count)
    }

    fn circuit(&self) -> Result<PostCircuit<'_, Tree>> {
        let slots = self
            .padded_slots()
            .map(|(sector, proof)| Sector::circuit(sector, proof).map_err(dependency("the PoSt circuit")))
            .collect::<Result<_>>()?;
        Ok(PostCircuit {
            slots,
            proofs: self.padded_slots().collect(),
        })
    }

    /// The circuit's public inputs, as `FallbackPoStCompound::generate_public_inputs` makes them
    /// for this partition: per real slot its comm_r and each challenge's leaf index; padding
    /// repeats the last real slot's.
    fn public_inputs(&self) -> Result<Vec<Scalar>> {
        let por_params = por::PublicParams {
            leaves: self.params.sector_size as usize / NODE_SIZE,
            private: true,
        };
        let mut per_slot = Vec::with_capacity(self.slots.len());
        for (i, (sector, _)) in self.slots.iter().enumerate() {
            let mut inputs = vec![sector.comm_r.into()];
            for n in 0..self.params.challenge_count {
                let challenge = por::PublicInputs {
                    commitment: None,
                    challenge: self.challenged_leaf(i, sector.id, n) as usize,
                };
                let leaf_inputs = PoRCompound::<Tree>::generate_public_inputs(&challenge, &por_params, Some(self.k))
                    .map_err(|e| Error::from_dependency(Status::Internal, "PoSt public inputs", e))?;
                inputs.extend(leaf_inputs);
            }
            per_slot.push(inputs);
        }
        let last = per_slot.last().expect("checked: at least one slot").clone();
        per_slot.resize(self.params.sector_count, last);
        Ok(per_slot.concat())
    }
}

impl<Tree: 'static + MerkleTreeTrait> ProofJob for PostJob<Tree> {
    fn circuit_id(&self) -> &str {
        &self.circuit_id
    }

    fn partitions(&self) -> usize {
        1
    }

    fn extract_shape(&self) -> Result<CircuitShape> {
        blank_shape::<Tree>(&self.params)
    }

    fn synthesize(&self, k: usize, path: &SynthesisPath, cancel: Option<&CancelToken>, t: &mut Timings) -> Result<SynthesizedCircuit> {
        if k != 0 {
            return Err(Error::internal(format!("a PoSt has one partition; partition {k} was asked for")));
        }
        let circuit = timed(&mut t.synthesis_ns, || self.circuit())?;
        path.run(circuit, cancel, t)
    }

    fn verify(&self, vk: &PreparedVerifyingKey<Bls12>, proof: &[u8]) -> Option<Result<bool>> {
        if self.own_key.is_some() {
            return None;
        }
        let verify = || -> Result<bool> {
            let proof = Proof::<Bls12>::read(proof).map_err(|e| Error::from_dependency(Status::Internal, "reading the proof", e))?;
            bellperson::groth16::verify_proof(vk, &proof, &self.public_inputs()?)
                .map_err(|e| Error::from_dependency(Status::Internal, "verifying the proof", e))
        };
        Some(verify())
    }

    fn own_key(&self) -> Option<Arc<ProvingKey>> {
        self.own_key.clone()
    }
}

/// What a PoSt proof is verified against: filecoin-proofs-api's `verify_window_post` /
/// `verify_winning_post` arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PostStatement {
    pub kind: PostKind,
    pub registered_proof: RegisteredPoStProof,
    pub randomness: [u8; 32],
    pub prover_id: [u8; 32],
    /// (sector id, comm_r) of every challenged sector: all the deadline's proven sectors for
    /// WindowPoSt (in any order: as filecoin-proofs-api, the verifier sorts them by number, and
    /// the partitions are the sorted sectors in chunks); the one sector for WinningPoSt.
    pub sectors: Vec<(u64, [u8; 32])>,
}

/// filecoin-proofs' `verify_window_post` / `verify_winning_post` with the verifying key
/// supplied by the caller (from the engine's parameter directory): `proof` is every
/// partition's proof, in order.
pub fn verify_post<Tree: 'static + MerkleTreeTrait>(statement: &PostStatement, vk: &PreparedVerifyingKey<Bls12>, proof: &[u8]) -> Result<bool> {
    let config = post_config(statement.registered_proof, statement.kind)?;
    let params = public_params::<Tree>(&config)?;
    if statement.sectors.is_empty() {
        return Err(Error::invalid("no sectors to verify the PoSt against"));
    }
    if proof.is_empty() || proof.len() % crate::engine::GROTH_PROOF_BYTES != 0 {
        return Err(Error::invalid(format!("a PoSt proof is 192 bytes per partition, not {}", proof.len())));
    }
    let randomness: TreeDomain<Tree> = canonical(&statement.randomness, "randomness")?;
    let prover_id: TreeDomain<Tree> = canonical(&statement.prover_id, "prover_id")?;
    // By sector number, a number given twice counted once (its last comm_r): filecoin-proofs-api
    // takes the sectors as a map, so the partitions are the sorted sectors in chunks.
    let by_number: std::collections::BTreeMap<u64, [u8; 32]> = statement.sectors.iter().copied().collect();
    let mut sectors = Vec::with_capacity(by_number.len());
    for (id, comm_r) in &by_number {
        let comm_r = canonical(comm_r, &format!("comm_r of sector {id}"))?;
        sectors.push(PublicSector {
            id: SectorId::from(*id),
            comm_r,
        });
    }
    let partitions = match statement.kind {
        PostKind::Window => sectors.len().div_ceil(params.sector_count),
        PostKind::Winning => {
            if sectors.len() != config.sector_count {
                return Err(Error::invalid(format!(
                    "a WinningPoSt is verified against {} sector(s)",
                    config.sector_count
                )));
            }
            // One public sector per slot, as filecoin-proofs' verifier lays them out.
            sectors = std::iter::repeat_n(sectors[0].clone(), params.sector_count).collect();
            1
        }
    };
    if proof.len() != partitions * crate::engine::GROTH_PROOF_BYTES {
        return Err(Error::invalid(format!(
            "the proof is {} bytes; {} sector(s) make {partitions} partition(s) of 192 bytes",
            proof.len(),
            by_number.len()
        )));
    }
    let setup = compound_proof::SetupParams {
        vanilla_params: fallback::SetupParams {
            sector_size: params.sector_size,
            challenge_count: params.challenge_count,
            sector_count: params.sector_count,
            api_version: params.api_version,
        },
        partitions: (partitions > 1).then_some(partitions),
        priority: false,
    };
    let compound = FallbackPoStCompound::<Tree>::setup(&setup).map_err(dependency("PoSt public parameters"))?;
    let inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors,
        k: None,
    };
    let multi_proof = MultiProof::new_from_bytes((partitions > 1).then_some(partitions), proof, vk)
        .map_err(|e| Error::from_dependency(Status::InvalidArgument, "proof bytes", e))?;
    let requirements = fallback::ChallengeRequirements {
        minimum_challenge_count: config.challenge_count * config.sector_count,
    };
    <FallbackPoStCompound<Tree> as CompoundProof<FallbackPoSt<Tree>, _>>::verify(&compound, &inputs, &multi_proof, &requirements)
        .map_err(|e| Error::from_dependency(Status::Internal, "verifying the PoSt proof", e))
}

/// A PoSt of `kind` for `proof` made from made-up vanilla proofs: `sectors` sectors (WindowPoSt;
/// WinningPoSt has one) whose inclusion paths have the tree's exact shape and random values
/// (`seed`), so the circuit and its witness have a real one's shape and density but nothing is
/// consistent: for benchmarks at sizes no sector can be sealed for here (PERFORMANCE ONLY: its
/// proof cannot verify, so none is verified). Proven with `key` (a synthetic key); without one
/// it can only be synthesized (to make that key from).
#[cfg(feature = "internals")]
#[derive(Clone)]
pub struct MadeUpPost {
    pub kind: PostKind,
    pub proof: RegisteredPoStProof,
    pub sectors: usize,
    pub seed: u64,
    pub key: Option<Arc<ProvingKey>>,
}

#[cfg(feature = "internals")]
impl ProofRequest for MadeUpPost {
    fn check(&self, t: &mut Timings) -> Result<Box<dyn ProofJob>> {
        timed(&mut t.input_check_ns, || with_tree_shape!(self.proof, made_up_job(self)))
    }

    fn class(&self) -> Priority {
        self.kind.class()
    }
}

#[cfg(feature = "internals")]
fn made_up_job<Tree: 'static + MerkleTreeTrait>(made_up: &MadeUpPost) -> Result<Box<dyn ProofJob>> {
    use crate::kinds::vanilla::made_up_path;
    use ff::Field;
    use rand::SeedableRng;

    let config = post_config(made_up.proof, made_up.kind)?;
    let params = public_params::<Tree>(&config)?;
    let leaves = params.sector_size as usize / NODE_SIZE;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(made_up.seed);
    let value = |rng: &mut rand_chacha::ChaCha8Rng| -> TreeDomain<Tree> { Scalar::random(rng).into() };
    let path = |root: TreeDomain<Tree>, rng: &mut rand_chacha::ChaCha8Rng| -> TreePath<Tree> { made_up_path(leaves, root, rng) };
    let sector = |id: u64, paths: usize, rng: &mut rand_chacha::ChaCha8Rng| {
        let (comm_c, comm_r_last) = (value(rng), value(rng));
        let proof = SectorProof {
            inclusion_proofs: (0..paths).map(|_| path(comm_r_last, rng)).collect(),
            comm_c,
            comm_r_last,
        };
        (
            PublicSector {
                id: SectorId::from(id),
                comm_r: value(rng),
            },
            proof,
        )
    };
    let slots = match made_up.kind {
        PostKind::Window => (0..made_up.sectors.clamp(1, params.sector_count))
            .map(|i| sector(made_up.seed * 10_000 + i as u64, params.challenge_count, &mut rng))
            .collect(),
        PostKind::Winning => {
            let (public, proof) = sector(made_up.seed, params.sector_count, &mut rng);
            winning_slots::<Tree>(public, proof)
        }
    };
    Ok(Box::new(PostJob::<Tree> {
        own_key: made_up.key.clone(),
        circuit_id: circuit_id::<Tree>(&config)?,
        randomness: value(&mut rng),
        params,
        k: 0,
        slots,
    }))
}
