//! The bellperson oracle for PoSt: the exact circuit filecoin-proofs builds for a WindowPoSt
//! partition or a WinningPoSt from vanilla proofs, proved by bellperson with caller-chosen
//! r and s. cuzk's PoSt proofs must equal its output byte for byte for the same r, s.
//!
//! It follows filecoin-proofs 19.1 step by step: `generate_single_window_post_with_vanilla`
//! and `generate_winning_post_with_vanilla` (public inputs from the vanilla proofs, vanilla
//! proofs shaped per partition by `single_partition_vanilla_proofs` /
//! `partition_vanilla_proofs`, which also check them), then `FallbackPoStCompound::circuit`
//! with `partition_k = Some(0)` as `CompoundProof::circuit_proofs` calls it; only the random
//! `create_random_proof_batch` is replaced by `create_proof_batch` with the given r, s.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::{ensure, Context, Result};
use bellperson::groth16::{create_proof_batch, Parameters};
use blstrs::{Bls12, Scalar};
use filecoin_hashers::Hasher;
use filecoin_proofs::types::{MerkleTreeTrait, PoStConfig, PoStType};
use filecoin_proofs::{as_safe_commitment, partition_vanilla_proofs, single_partition_vanilla_proofs, FallbackPoStSectorProof};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::parameter_cache::parameter_id;
use storage_proofs_post::fallback::{self, FallbackPoStCircuit, FallbackPoStCompound, PublicSector};

use cuzk::with_tree_shape;

use crate::fixtures::post_public_params;

type Domain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// bellperson's proof (192 bytes) of WindowPoSt partition `partition_index` from the vanilla
/// proofs of that partition's sectors (filecoin-proofs-api's bincode bytes, in sector order),
/// with the Groth16 parameters of `params_dir` and randomness r, s.
#[allow(clippy::too_many_arguments)]
pub fn bellperson_window_post(
    proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    vanilla_proofs: &[Vec<u8>],
    partition_index: usize,
    params_dir: &Path,
    r: Scalar,
    s: Scalar,
) -> Result<Vec<u8>> {
    ensure!(proof.typ() == PoStType::Window, "{proof:?} is not a WindowPoSt proof");
    with_tree_shape!(
        proof,
        window_proof(proof, randomness, prover_id, vanilla_proofs, partition_index, params_dir, r, s)
    )
}

/// bellperson's proof (192 bytes) of a WinningPoSt from its vanilla proofs (one, of the
/// challenged sector), with the Groth16 parameters of `params_dir` and randomness r, s.
pub fn bellperson_winning_post(
    proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    vanilla_proofs: &[Vec<u8>],
    params_dir: &Path,
    r: Scalar,
    s: Scalar,
) -> Result<Vec<u8>> {
    ensure!(proof.typ() == PoStType::Winning, "{proof:?} is not a WinningPoSt proof");
    with_tree_shape!(proof, winning_proof(proof, randomness, prover_id, vanilla_proofs, params_dir, r, s))
}

/// The circuit of WindowPoSt partition `partition_index`, as
/// `generate_single_window_post_with_vanilla` builds it.
pub fn window_post_circuit<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    vanilla_proofs: &[Vec<u8>],
    partition_index: usize,
) -> Result<FallbackPoStCircuit<Tree>> {
    ensure!(config.typ == PoStType::Window, "not a WindowPoSt configuration");
    let vanilla = decode_vanilla::<Tree>(vanilla_proofs)?;
    // filecoin-proofs' public params also carry a partition count (from the number of vanilla
    // proofs given), but building one partition's circuit reads only the vanilla ones.
    let pub_params = post_public_params::<Tree>(config)?;
    let pub_inputs = public_inputs::<Tree>(randomness, prover_id, &vanilla, Some(partition_index))?;
    let partition = single_partition_vanilla_proofs(config, &pub_params, &pub_inputs, &vanilla)?;
    FallbackPoStCompound::<Tree>::circuit(&pub_inputs, Default::default(), &partition, &pub_params, Some(0))
}

/// The circuit of a WinningPoSt, as `generate_winning_post_with_vanilla` builds it: the one
/// sector's challenges unrolled into `challenge_count` one-challenge "sectors".
pub fn winning_post_circuit<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    vanilla_proofs: &[Vec<u8>],
) -> Result<FallbackPoStCircuit<Tree>> {
    ensure!(config.typ == PoStType::Winning, "not a WinningPoSt configuration");
    let vanilla = decode_vanilla::<Tree>(vanilla_proofs)?;
    ensure!(
        vanilla.len() == config.sector_count,
        "{} vanilla proofs, WinningPoSt takes {}",
        vanilla.len(),
        config.sector_count
    );
    let pub_params = post_public_params::<Tree>(config)?;
    let pub_inputs = public_inputs::<Tree>(randomness, prover_id, &vanilla, None)?;
    // WinningPoSt has one partition (its compound setup passes `partitions: None`).
    let mut partitions = partition_vanilla_proofs(config, &pub_params, &pub_inputs, 1, &vanilla)?;
    ensure!(partitions.len() == 1, "WinningPoSt made {} partitions", partitions.len());
    let partition = partitions.remove(0);
    FallbackPoStCompound::<Tree>::circuit(&pub_inputs, Default::default(), &partition, &pub_params, Some(0))
}

/// Where filecoin-proofs keeps the Groth16 parameters of a PoSt configuration, under `dir`.
pub fn post_params_path<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig, dir: &Path) -> Result<std::path::PathBuf> {
    Ok(dir.join(parameter_id(&config.get_cache_identifier::<Tree>()?)))
}

#[allow(clippy::too_many_arguments)]
fn window_proof<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    vanilla_proofs: &[Vec<u8>],
    partition_index: usize,
    params_dir: &Path,
    r: Scalar,
    s: Scalar,
) -> Result<Vec<u8>> {
    let config = proof.as_v1_config();
    let circuit = window_post_circuit::<Tree>(&config, randomness, prover_id, vanilla_proofs, partition_index)?;
    prove::<Tree>(&config, circuit, params_dir, r, s)
}

fn winning_proof<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredPoStProof,
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    vanilla_proofs: &[Vec<u8>],
    params_dir: &Path,
    r: Scalar,
    s: Scalar,
) -> Result<Vec<u8>> {
    let config = proof.as_v1_config();
    let circuit = winning_post_circuit::<Tree>(&config, randomness, prover_id, vanilla_proofs)?;
    prove::<Tree>(&config, circuit, params_dir, r, s)
}

fn prove<Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    circuit: FallbackPoStCircuit<Tree>,
    params_dir: &Path,
    r: Scalar,
    s: Scalar,
) -> Result<Vec<u8>> {
    let path = post_params_path::<Tree>(config, params_dir)?;
    let file = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    let params = Parameters::<Bls12>::read(BufReader::new(file), false).with_context(|| format!("reading {}", path.display()))?;
    let proof = create_proof_batch(vec![circuit], &params, vec![r], vec![s])
        .context("bellperson proof")?
        .remove(0);
    let mut bytes = Vec::with_capacity(192);
    proof.write(&mut bytes)?;
    Ok(bytes)
}

fn decode_vanilla<Tree: 'static + MerkleTreeTrait>(vanilla_proofs: &[Vec<u8>]) -> Result<Vec<FallbackPoStSectorProof<Tree>>> {
    ensure!(!vanilla_proofs.is_empty(), "no vanilla proofs");
    vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, bytes)| bincode::deserialize(bytes).with_context(|| format!("vanilla proof {i} is not a FallbackPoStSectorProof")))
        .collect()
}

/// filecoin-proofs' public inputs: the randomness and prover id as field elements (refused
/// when not canonical) and the sectors of the vanilla proofs, in their order.
fn public_inputs<Tree: 'static + MerkleTreeTrait>(
    randomness: &[u8; 32],
    prover_id: [u8; 32],
    vanilla: &[FallbackPoStSectorProof<Tree>],
    k: Option<usize>,
) -> Result<fallback::PublicInputs<Domain<Tree>>> {
    Ok(fallback::PublicInputs {
        randomness: as_safe_commitment(randomness, "randomness")?,
        prover_id: as_safe_commitment(&prover_id, "prover_id")?,
        sectors: vanilla
            .iter()
            .map(|v| PublicSector {
                id: v.sector_id,
                comm_r: v.comm_r,
            })
            .collect(),
        k,
    })
}
