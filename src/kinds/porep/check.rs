//! The structure of a C1's vanilla proofs, checked before filecoin-proofs' verifier and
//! circuits read them: both assume it (a path one hash short fails an assertion inside the
//! inclusion gadget, a non-canonical element an `expect` in a conversion), so without these
//! checks such input was a panic — or, for a tampered comm_d or tree_r_last path, a whole proof
//! that failed self-verification (and with self-verify off, a proof that does not verify).
//! Every error names the place in the C1 JSON.

use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::MerkleTreeTrait;
use storage_proofs_core::drgraph::BASE_DEGREE;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_porep::stacked::{self, ColumnProof, EXP_DEGREE};

use super::column::{column_parts, TreePath};
use super::VanillaProofs;
use crate::error::{Error, Result};
use crate::kinds::vanilla::{check_path, is_canonical};

/// Checks every vanilla proof of `proofs` against the geometry of its sector size: `nodes`
/// nodes, `layers` layers, `challenges` challenges per partition.
pub(super) fn check_structure<Tree: 'static + MerkleTreeTrait>(
    proofs: &VanillaProofs<Tree>,
    nodes: usize,
    layers: usize,
    challenges: usize,
) -> Result<()> {
    for (k, partition) in proofs.iter().enumerate() {
        if partition.len() != challenges {
            return Err(Error::invalid(format!(
                "vanilla_proofs[{k}] has {} challenge proofs, a partition of this sector size has {challenges}",
                partition.len()
            )));
        }
        for (i, proof) in partition.iter().enumerate() {
            check_challenge::<Tree>(proof, nodes, layers).map_err(|(at, what)| Error::invalid(format!("vanilla_proofs[{k}][{i}].{at}: {what}")))?;
        }
    }
    Ok(())
}

/// One challenge's proof; the error is where (below the proof) and what.
fn check_challenge<Tree: 'static + MerkleTreeTrait>(
    proof: &stacked::Proof<Tree, DefaultPieceHasher>,
    nodes: usize,
    layers: usize,
) -> std::result::Result<(), (String, String)> {
    fn at(place: &str) -> impl Fn(String) -> (String, String) + '_ {
        move |what| (place.to_string(), what)
    }
    // filecoin-proofs' verifier checks only these two paths' roots and indices (the columns'
    // paths it hashes): a changed sibling passed it and made a proof that does not verify.
    check_hashed_path(&proof.comm_d_proofs, nodes).map_err(at("comm_d_proofs"))?;
    check_hashed_path(&proof.comm_r_last_proof, nodes).map_err(at("comm_r_last_proof"))?;
    let columns = &proof.replica_column_proofs;
    check_column::<Tree>(&columns.c_x, nodes, layers).map_err(at("replica_column_proofs.c_x"))?;
    for (name, parents, count) in [
        ("drg_parents", &columns.drg_parents, BASE_DEGREE),
        ("exp_parents", &columns.exp_parents, EXP_DEGREE),
    ] {
        if parents.len() != count {
            return Err(at(&format!("replica_column_proofs.{name}"))(format!(
                "{} columns, expected {count}",
                parents.len()
            )));
        }
        for (j, column) in parents.iter().enumerate() {
            check_column::<Tree>(column, nodes, layers).map_err(at(&format!("replica_column_proofs.{name}[{j}]")))?;
        }
    }
    if proof.labeling_proofs.len() != layers {
        return Err(at("labeling_proofs")(format!(
            "{} proofs, expected one per layer ({layers})",
            proof.labeling_proofs.len()
        )));
    }
    Ok(())
}

/// A path of the tree's shape that hashes to its root.
fn check_hashed_path<P: MerkleProofTrait>(path: &P, nodes: usize) -> std::result::Result<(), String> {
    check_path(path, nodes)?;
    match path.verify() {
        true => Ok(()),
        false => Err("the path does not hash to its root".into()),
    }
}

/// A parent or challenge column: one canonical row per layer, and its hash's inclusion path.
fn check_column<Tree: 'static + MerkleTreeTrait>(
    column: &ColumnProof<TreePath<Tree>>,
    nodes: usize,
    layers: usize,
) -> std::result::Result<(), String> {
    let parts = column_parts::<Tree>(column)?;
    let rows = &parts.column.rows;
    if rows.len() != layers {
        return Err(format!("{} rows, expected one per layer ({layers})", rows.len()));
    }
    if let Some(row) = rows.iter().position(|r| !is_canonical(r)) {
        return Err(format!("row {row} is not a canonical field element"));
    }
    check_path(&parts.inclusion_proof, nodes).map_err(|e| format!("inclusion_proof: {e}"))
}
