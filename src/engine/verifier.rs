//! Verification: filecoin-proofs' verifiers with the verifying keys of a parameter directory,
//! read once and kept. The engine has one; calls without an engine (a C caller's NULL engine,
//! Go's verification before anything was proven) use the process's standalone verifier, which
//! opens no GPU and starts no worker threads.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use filecoin_proofs::types::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::verifying_key_id;

use super::digests::DigestTable;
use super::keys::KeyStore;
use super::{EngineConfig, PostStatement, RegisteredProof, SealStatement, UpdateStatement, GROTH_PROOF_BYTES};
use crate::error::{Error, Result};
use crate::kinds::porep;
use crate::kinds::post::verify_post;
use crate::kinds::update::verify_update;
use crate::with_tree_shape;

pub struct Verifier {
    param_dir: PathBuf,
    /// Only its verifying keys are used.
    keys: KeyStore,
}

/// The standalone verifier and the configuration it was made for.
static STANDALONE: Mutex<Option<(EngineConfig, Arc<Verifier>)>> = Mutex::new(None);

impl Verifier {
    pub(super) fn new(param_dir: PathBuf, digests: Option<Arc<DigestTable>>) -> Self {
        Verifier {
            param_dir,
            keys: KeyStore::new(digests),
        }
    }

    /// The verifier for calls without an engine: the parameter directory of
    /// FIL_PROOFS_PARAMETER_CACHE (else the default one) and the digest checks of
    /// FIL_PROOFS_VERIFY_PRODUCTION_PARAMS, as an engine with the default configuration would
    /// have. Made again when the environment changed since the last call.
    pub fn standalone() -> Result<Arc<Verifier>> {
        let config = EngineConfig::default().resolved()?;
        let mut standalone = STANDALONE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((made_for, verifier)) = &*standalone {
            if made_for.param_dir() == config.param_dir()
                && made_for.verify_param_digests == config.verify_param_digests
                && made_for.param_digests_file == config.param_digests_file
            {
                return Ok(Arc::clone(verifier));
            }
        }
        let verifier = Arc::new(Verifier::new(config.param_dir(), super::digest_table(&config)?));
        *standalone = Some((config, Arc::clone(&verifier)));
        Ok(verifier)
    }

    /// filecoin-proofs-api's `verify_seal`.
    pub fn verify_seal(&self, statement: &SealStatement, proof: &[u8]) -> Result<bool> {
        with_tree_shape!(statement.registered_proof, verify_seal_with(self, statement, proof))
    }

    /// filecoin-proofs-api's `verify_window_post` (`statement.kind` Window: every partition's
    /// proof, merged) or `verify_winning_post`.
    pub fn verify_post(&self, statement: &PostStatement, proof: &[u8]) -> Result<bool> {
        let (id, _) = RegisteredProof::Post(statement.registered_proof).circuit()?;
        let vk = self.verifying_key(&id)?;
        with_tree_shape!(statement.registered_proof, verify_post(statement, &vk, proof))
    }

    /// filecoin-proofs-api's `verify_empty_sector_update_proof`.
    pub fn verify_update(&self, statement: &UpdateStatement, proof: &[u8]) -> Result<bool> {
        let (id, _) = RegisteredProof::Update(statement.registered_proof).circuit()?;
        let vk = self.verifying_key(&id)?;
        with_tree_shape!(statement.registered_proof, verify_update(statement, &vk, proof))
    }

    /// The prepared verifying key of circuit `id`, from its `.vk` file.
    fn verifying_key(&self, id: &str) -> Result<Arc<bellperson::groth16::PreparedVerifyingKey<blstrs::Bls12>>> {
        self.keys.verifying_key(&self.param_dir.join(verifying_key_id(id)))
    }
}

/// `Verifier::verify_seal` for the tree shape of the statement's sector size.
fn verify_seal_with<Tree: 'static + MerkleTreeTrait>(verifier: &Verifier, statement: &SealStatement, proof: &[u8]) -> Result<bool> {
    let config = porep::porep_config(statement.registered_proof)?;
    let expected = GROTH_PROOF_BYTES * usize::from(config.partitions);
    if proof.len() != expected {
        return Err(Error::invalid(format!(
            "proof is {} bytes, {:?} proofs are {expected}",
            proof.len(),
            statement.registered_proof
        )));
    }
    let vk = verifier.verifying_key(&porep::parameter_cache_id::<Tree>(&config)?)?;
    porep::verify_seal::<Tree>(statement, &vk, proof)
}
