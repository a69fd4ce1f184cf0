//! A column proof's fields (private in storage-proofs-porep), decoded from its own
//! serialization: the input check reads the rows and the path, the witness the path.

use filecoin_hashers::Hasher;
use filecoin_proofs::types::MerkleTreeTrait;
use serde::Deserialize;
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_porep::stacked::ColumnProof;

pub(super) type TreePath<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;
type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// `ColumnProof`'s layout: the column, then the inclusion path of its hash.
#[derive(Deserialize)]
pub(super) struct ColumnParts<D, P> {
    pub column: ColumnRows<D>,
    pub inclusion_proof: P,
}

/// `Column`'s layout.
#[derive(Deserialize)]
pub(super) struct ColumnRows<D> {
    _index: u32,
    pub rows: Vec<D>,
    _h: std::marker::PhantomData<()>,
}

/// The rows and the inclusion path of `column`.
pub(super) fn column_parts<Tree: 'static + MerkleTreeTrait>(
    column: &ColumnProof<TreePath<Tree>>,
) -> Result<ColumnParts<TreeDomain<Tree>, TreePath<Tree>>, String> {
    let encoded = bincode::serialize(column).map_err(|e| e.to_string())?;
    bincode::deserialize(&encoded).map_err(|e| e.to_string())
}
