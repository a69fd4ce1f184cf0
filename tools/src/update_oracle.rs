//! The bellperson oracle for SnapDeals updates: the exact partition circuits filecoin-proofs
//! builds from an update's vanilla proofs, proved by bellperson with caller-chosen r and s per
//! partition. cuzk's update proofs must equal its output byte for byte for the same r, s.
//!
//! It follows filecoin-proofs 19.1's `generate_empty_sector_update_proof_with_vanilla`: the
//! public inputs (`k` = the partition count, replaced per partition), the compound setup, then
//! `EmptySectorUpdateCompound::circuit` per partition with `Some(k)` as
//! `CompoundProof::circuit_proofs` calls it; only the random `create_random_proof_batch` is
//! replaced by `create_proof_batch` with the given r, s.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{ensure, Context, Result};
use bellperson::groth16::{create_proof_batch, Parameters};
use blstrs::{Bls12, Scalar};
use filecoin_hashers::Domain;
use filecoin_proofs::types::{MerkleTreeTrait, SectorUpdateConfig};
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::{parameter_id, CacheableParameters};
use storage_proofs_update::constants::{TreeDDomain, TreeRDomain, TreeRHasher};
use storage_proofs_update::{EmptySectorUpdateCompound, PartitionProof, PublicInputs, PublicParams};

use cuzk::with_tree_shape;

/// bellperson's update proof (192 bytes per partition, in order) from the partition vanilla
/// proofs (filecoin-proofs-api's bincode bytes), with the Groth16 parameters of `params_dir`
/// and randomness `rs[k]` for partition k.
pub fn bellperson_update(
    proof: RegisteredUpdateProof,
    comms: ([u8; 32], [u8; 32], [u8; 32]),
    vanilla_proofs: &[Vec<u8>],
    params_dir: &Path,
    rs: &[(Scalar, Scalar)],
) -> Result<Vec<u8>> {
    with_tree_shape!(proof, update_proof(proof, comms, vanilla_proofs, params_dir, rs))
}

/// Where filecoin-proofs keeps the Groth16 parameters of an update proof, under `dir`.
pub fn update_params_path<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(proof: RegisteredUpdateProof, dir: &Path) -> std::path::PathBuf {
    let params = PublicParams::from_sector_size(u64::from(proof.sector_size()));
    dir.join(parameter_id(
        &<EmptySectorUpdateCompound<Tree> as CacheableParameters<_, _>>::cache_identifier(&params),
    ))
}

fn update_proof<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    proof: RegisteredUpdateProof,
    (comm_r_old, comm_r_new, comm_d_new): ([u8; 32], [u8; 32], [u8; 32]),
    vanilla_proofs: &[Vec<u8>],
    params_dir: &Path,
    rs: &[(Scalar, Scalar)],
) -> Result<Vec<u8>> {
    let config = SectorUpdateConfig::from_porep_config(&proof.as_v1_config());
    let partitions = usize::from(config.update_partitions);
    ensure!(
        vanilla_proofs.len() == partitions,
        "{} vanilla proofs for {partitions} partitions",
        vanilla_proofs.len()
    );
    ensure!(rs.len() == partitions, "{} (r, s) for {partitions} partitions", rs.len());
    let pub_inputs = PublicInputs {
        k: partitions,
        comm_r_old: TreeRDomain::try_from_bytes(&comm_r_old)?,
        comm_d_new: TreeDDomain::try_from_bytes(&comm_d_new)?,
        comm_r_new: TreeRDomain::try_from_bytes(&comm_r_new)?,
        h: config.h,
    };
    let pub_params = PublicParams::from_sector_size(u64::from(config.sector_size));
    let circuits = vanilla_proofs
        .iter()
        .enumerate()
        .map(|(k, bytes)| {
            let vanilla: PartitionProof<Tree> = bincode::deserialize(bytes).with_context(|| format!("vanilla proof {k} is not a PartitionProof"))?;
            EmptySectorUpdateCompound::<Tree>::circuit(&pub_inputs, (), &vanilla, &pub_params, Some(k))
        })
        .collect::<Result<Vec<_>>>()?;
    let path = update_params_path::<Tree>(proof, params_dir);
    let file = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let params = Parameters::<Bls12>::read(BufReader::new(file), false).with_context(|| format!("reading {}", path.display()))?;
    let (r, s): (Vec<Scalar>, Vec<Scalar>) = rs.iter().copied().unzip();
    let proofs = create_proof_batch(circuits, &params, r, s).context("bellperson proof")?;
    let mut bytes = Vec::with_capacity(192 * partitions);
    for proof in proofs {
        proof.write(&mut bytes)?;
    }
    Ok(bytes)
}
