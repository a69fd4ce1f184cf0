//! An update's partition vanilla proofs checked before filecoin-proofs' code reads them: their
//! structure (its circuit and verifier assert on shapes, or index past a short path), then
//! everything the partition circuit proves, so that a proof that would not verify is refused
//! naming its place instead of costing a proof that fails self-verification. filecoin-proofs'
//! vanilla verifier runs last; it does not check the apex leaves against comm_d_new, which the
//! circuit does (`apex_por`).

use std::panic::{catch_unwind, AssertUnwindSafe};

use blstrs::Scalar;
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::types::MerkleTreeTrait;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::constants::{TreeDDomain, TreeDHasher, TreeRDomain, TreeRHasher};
use storage_proofs_update::{phi, rho, Challenges, EmptySectorUpdate, PartitionProof, PublicInputs, PublicParams};

use crate::kinds::vanilla::{check_path, is_canonical};

/// The proof's shape for the sector size: canonical comm_c and apex leaves, their counts, the
/// challenge count, and each challenge's three paths (TreeROld, TreeDNew, TreeRNew) of the
/// sector's trees.
pub(super) fn structure<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    params: &PublicParams,
    proof: &PartitionProof<Tree>,
) -> Result<(), String> {
    if !is_canonical(&proof.comm_c) {
        return Err("comm_c is not a canonical field element".into());
    }
    if proof.apex_leafs.len() != params.apex_leaf_count {
        return Err(format!(
            "{} apex leaves, the sector size's partitions have {}",
            proof.apex_leafs.len(),
            params.apex_leaf_count
        ));
    }
    if let Some(i) = proof.apex_leafs.iter().position(|leaf| !is_canonical(leaf)) {
        return Err(format!("apex_leafs[{i}] is not a canonical field element"));
    }
    if proof.challenge_proofs.len() != params.challenge_count {
        return Err(format!(
            "{} challenge proofs, the sector size's partitions have {}",
            proof.challenge_proofs.len(),
            params.challenge_count
        ));
    }
    for (i, challenge) in proof.challenge_proofs.iter().enumerate() {
        let place = |path: &str, m: String| format!("challenge_proofs[{i}].{path}: {m}");
        check_path(&challenge.proof_r_old, params.sector_nodes).map_err(|m| place("proof_r_old", m))?;
        check_path(&challenge.proof_d_new, params.sector_nodes).map_err(|m| place("proof_d_new", m))?;
        check_path(&challenge.proof_r_new, params.sector_nodes).map_err(|m| place("proof_r_new", m))?;
    }
    Ok(())
}

/// Whether partition `k`'s proof (its structure checked) proves what its circuit proves for
/// `inputs`: the replica roots under comm_r_old and comm_r_new, each challenge's paths at the
/// challenged leaf and hashing to their roots, the new replica's label, and the apex leaves
/// under comm_d_new.
pub(super) fn verifies<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    params: &PublicParams,
    inputs: &PublicInputs,
    k: usize,
    proof: &PartitionProof<Tree>,
) -> Result<(), String> {
    let hash_r = <TreeRHasher as Hasher>::Function::hash2;
    let first = &proof.challenge_proofs[0];
    let (root_r_old, root_r_new) = (first.proof_r_old.root(), first.proof_r_new.root());
    if hash_r(&proof.comm_c, &root_r_old) != inputs.comm_r_old {
        return Err("comm_r_old is not H(comm_c ‖ the TreeROld root of its paths)".into());
    }
    if hash_r(&proof.comm_c, &root_r_new) != inputs.comm_r_new {
        return Err("comm_r_new is not H(comm_c ‖ the TreeRNew root of its paths)".into());
    }
    let phi = phi(&inputs.comm_d_new, &inputs.comm_r_old);
    let high_bits_shift = params.challenge_bit_len - inputs.h;
    let apex_height = params.challenge_bit_len - params.partition_bit_len - params.apex_leaf_bit_len;
    let apex_root = apex_root(&proof.apex_leafs);
    let challenges = Challenges::new(params.sector_nodes, inputs.comm_r_new, k);
    for (i, (c, challenge)) in challenges.zip(&proof.challenge_proofs).enumerate() {
        let place = |m: &str| format!("challenge_proofs[{i}] (leaf {c}): {m}");
        if !challenge.verify_merkle_proofs(c, &root_r_old, &inputs.comm_d_new, &root_r_new) {
            return Err(place(
                "its paths are not at the challenged leaf, or do not hash to the roots under comm_r_old, comm_d_new and comm_r_new",
            ));
        }
        let label_r_old: Scalar = challenge.proof_r_old.leaf().into();
        let label_d_new: Scalar = challenge.proof_d_new.leaf().into();
        let label_r_new: TreeRDomain = (label_r_old + label_d_new * rho(&phi, c >> high_bits_shift)).into();
        if label_r_new != challenge.proof_r_new.leaf() {
            return Err(place("the new replica's label is not the old label + the new data's × rho"));
        }
        let nodes = path_nodes(&challenge.proof_d_new);
        let apex_index = (c as usize >> apex_height) & (params.apex_leaf_count - 1);
        if nodes[apex_height] != proof.apex_leafs[apex_index] || nodes[apex_height + params.apex_leaf_bit_len] != apex_root {
            return Err(place("its TreeDNew path does not pass through the partition's apex leaves"));
        }
    }
    let inputs = PublicInputs { k, ..inputs.clone() };
    let upstream = catch_unwind(AssertUnwindSafe(|| EmptySectorUpdate::<Tree>::verify(params, &inputs, proof)));
    match upstream {
        Ok(Ok(true)) => Ok(()),
        _ => Err("filecoin-proofs' vanilla verifier refuses it".into()),
    }
}

/// The root of the apex tree over `leaves` (a power of two of them), hashed pairwise.
fn apex_root(leaves: &[TreeDDomain]) -> TreeDDomain {
    let mut row = leaves.to_vec();
    while row.len() > 1 {
        row = row
            .chunks(2)
            .map(|pair| <TreeDHasher as Hasher>::Function::hash2(&pair[0], &pair[1]))
            .collect();
    }
    row[0]
}

/// The nodes a binary TreeD path passes through, from its leaf (height 0) to its root.
fn path_nodes<P: MerkleProofTrait<Hasher = TreeDHasher>>(path: &P) -> Vec<TreeDDomain> {
    let mut nodes = vec![path.leaf()];
    for (siblings, index) in path.path() {
        let node = *nodes.last().expect("starts with the leaf");
        let (left, right) = if index == 0 { (node, siblings[0]) } else { (siblings[0], node) };
        nodes.push(<TreeDHasher as Hasher>::Function::hash2(&left, &right));
    }
    nodes
}
