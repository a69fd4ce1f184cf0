//! The proof kinds the engine proves: each turns its caller's input (filecoin-ffi's arguments)
//! into checked partition circuits of filecoin-proofs, names their circuit identity (and so
//! their proving key and shape), and verifies its proofs with filecoin-proofs' own verifier.
//! PoRep C2 (`porep`), WindowPoSt and WinningPoSt (`post`), SnapDeals updates (`update`).
//!
//! The pipeline sees a kind only through two traits: a [`ProofRequest`] (the caller's input,
//! not yet checked) becomes a [`ProofJob`] (checked: the partitions to synthesize and how to
//! verify their proof), so keys, shapes, the memory budget, priorities, timings and
//! cancellation are the same for every kind.

use std::sync::Arc;

use bellperson::groth16::PreparedVerifyingKey;
use bellperson::Circuit;
use blstrs::{Bls12, Scalar};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use crate::backend::Priority;
use crate::cancel::CancelToken;
use crate::error::Result;
use crate::groth16::ProvingKey;
use crate::synthesis::r1cs::{CircuitShape, SegmentedCircuit};
use crate::synthesis::{synthesize_classic, synthesize_with_shape, SynthesizedCircuit};
use crate::timings::Timings;
use crate::with_tree_shape;

mod por;
pub mod porep;
mod poseidon;
pub mod post;
mod sha256;
pub mod update;
mod vanilla;

/// One proof of some kind as its caller gave it (one sector's C2, one WindowPoSt partition, a
/// WinningPoSt).
pub trait ProofRequest: Sync {
    /// Decodes and checks the input (structure, field elements, vanilla proofs) on the current
    /// rayon pool, timed into `t.input_check_ns`: bad input is refused here, before any
    /// synthesis time is spent on it.
    fn check(&self, t: &mut Timings) -> Result<Box<dyn ProofJob>>;

    /// The class the kind's work runs in when the call does not choose one.
    fn class(&self) -> Priority;
}

/// A checked proof: what the pipeline synthesizes, proves and verifies.
pub trait ProofJob: Send + Sync {
    /// filecoin-proofs' parameter id of the partition circuit (the `v28-<id>` file names):
    /// it names everything the circuit's shape depends on, so keys and shapes are cached by it.
    fn circuit_id(&self) -> &str;

    /// Groth16 proofs (partition circuits) this proof is made of.
    fn partitions(&self) -> usize;

    /// The partition circuit's shape, extracted from a circuit of the same geometry (on the
    /// current rayon pool).
    fn extract_shape(&self) -> Result<CircuitShape>;

    /// Partition `k` synthesized the way `path` says.
    fn synthesize(&self, k: usize, path: &SynthesisPath, cancel: Option<&CancelToken>, t: &mut Timings) -> Result<SynthesizedCircuit>;

    /// Whether `proof` (every partition's proof, in order) is a valid proof of this input
    /// under `vk` (the key's, prepared once: `ProvingKey::prepared_verifying_key`); None when
    /// there is nothing to verify against (made-up inputs of benchmarks).
    fn verify(&self, vk: &PreparedVerifyingKey<Bls12>, proof: &[u8]) -> Option<Result<bool>>;

    /// The proving key, when the job brings its own instead of the parameter file's (made-up
    /// inputs with synthetic keys).
    fn own_key(&self) -> Option<Arc<ProvingKey>> {
        None
    }
}

/// How a partition is synthesized: classic (every linear combination built), or on the R1CS
/// path with the circuit's shape (a, b, c left to the backend with `defer_products`).
pub enum SynthesisPath {
    Classic,
    Shape { shape: Arc<CircuitShape>, defer_products: bool },
}

impl SynthesisPath {
    /// Synthesizes `circuit` this way.
    pub fn run<C: SegmentedCircuit + Circuit<Scalar>>(
        &self,
        circuit: C,
        cancel: Option<&CancelToken>,
        t: &mut Timings,
    ) -> Result<SynthesizedCircuit> {
        match self {
            SynthesisPath::Classic => synthesize_classic(circuit, cancel, t),
            SynthesisPath::Shape { shape, defer_products } => synthesize_with_shape(*defer_products, shape, &circuit, cancel, t),
        }
    }
}

/// Extracts a circuit's shape (on the current rayon pool).
pub(crate) type CircuitSource<'a> = Box<dyn FnOnce() -> Result<CircuitShape> + Send + 'a>;

/// A proof kind and sector size: what names a proving key (`cuzk_engine_preload_key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisteredProof {
    Seal(RegisteredSealProof),
    Post(RegisteredPoStProof),
    Update(RegisteredUpdateProof),
}

impl RegisteredProof {
    /// The class of the proof's calls by deadline (what its key may displace on a device).
    pub(crate) fn class(self) -> Priority {
        match self {
            RegisteredProof::Post(proof) => post::PostKind::of(proof).class(),
            RegisteredProof::Seal(_) | RegisteredProof::Update(_) => Priority::Sealing,
        }
    }

    /// Partition circuits a call of this proof proves: a sector's PoRep or update partitions,
    /// one for a WindowPoSt partition or a WinningPoSt.
    pub(crate) fn partitions(self) -> Result<usize> {
        match self {
            RegisteredProof::Seal(proof) => Ok(usize::from(proof.partitions())),
            RegisteredProof::Post(_) => Ok(1),
            RegisteredProof::Update(proof) => Ok(usize::from(update::update_config(proof)?.update_partitions)),
        }
    }

    /// The parameter id of the proof's (partition) circuit and the extraction of its shape.
    pub(crate) fn circuit(self) -> Result<(String, CircuitSource<'static>)> {
        match self {
            RegisteredProof::Seal(proof) => with_tree_shape!(proof, circuit_of_seal(proof)),
            RegisteredProof::Post(proof) => with_tree_shape!(proof, circuit_of_post(proof)),
            RegisteredProof::Update(proof) => with_tree_shape!(proof, circuit_of_update(proof)),
        }
    }
}

fn circuit_of_seal<Tree: 'static + filecoin_proofs::types::MerkleTreeTrait>(proof: RegisteredSealProof) -> Result<(String, CircuitSource<'static>)> {
    porep::circuit_of::<Tree>(proof)
}

fn circuit_of_post<Tree: 'static + filecoin_proofs::types::MerkleTreeTrait>(proof: RegisteredPoStProof) -> Result<(String, CircuitSource<'static>)> {
    post::circuit_of::<Tree>(proof)
}

fn circuit_of_update<Tree: 'static + filecoin_proofs::types::MerkleTreeTrait<Hasher = storage_proofs_update::constants::TreeRHasher>>(
    proof: RegisteredUpdateProof,
) -> Result<(String, CircuitSource<'static>)> {
    update::circuit_of::<Tree>(proof)
}

impl From<RegisteredSealProof> for RegisteredProof {
    fn from(proof: RegisteredSealProof) -> Self {
        RegisteredProof::Seal(proof)
    }
}

impl From<RegisteredPoStProof> for RegisteredProof {
    fn from(proof: RegisteredPoStProof) -> Self {
        RegisteredProof::Post(proof)
    }
}

impl From<RegisteredUpdateProof> for RegisteredProof {
    fn from(proof: RegisteredUpdateProof) -> Self {
        RegisteredProof::Update(proof)
    }
}
