//! Checks shared by the kinds' vanilla proofs, made before filecoin-proofs' code reads them
//! (its hashing and gadgets assert, or convert with `expect`, on what they assume): canonical
//! field elements and Merkle paths of the tree's shape.

use bincode::Options;
use blstrs::Scalar;
use filecoin_hashers::{Domain, Hasher};
use serde::de::DeserializeOwned;
use storage_proofs_core::merkle::{base_path_length, compound_path_length, MerkleProofTrait};
use typenum::Unsigned;

use crate::error::{Error, Result, Status};

/// Largest vanilla proof accepted, in bytes. A 32GiB sector's WindowPoSt vanilla proof is
/// ≈ 25 KB, its WinningPoSt one ≈ 170 KB, a SnapDeals partition's ≈ 0.6 MB; anything past
/// this is not a vanilla proof.
pub const MAX_VANILLA_PROOF_BYTES: usize = 1 << 22;

/// A vanilla proof in filecoin-proofs-api's encoding (bincode's defaults), `what` it must be,
/// with nothing left over and at most [`MAX_VANILLA_PROOF_BYTES`].
pub(crate) fn decode_bincode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    if bytes.len() > MAX_VANILLA_PROOF_BYTES {
        return Err(Error::invalid(format!(
            "{} bytes, more than the {MAX_VANILLA_PROOF_BYTES} byte limit",
            bytes.len()
        )));
    }
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(bytes.len() as u64)
        .reject_trailing_bytes()
        .deserialize(bytes)
        .map_err(|e| Error::from_dependency(Status::ParseError, &format!("not {what}"), e))
}

/// A field element given as 32 little-endian bytes, refused unless canonical (< the modulus).
pub(crate) fn canonical<D: Domain>(bytes: &[u8; 32], what: &str) -> Result<D> {
    if Option::<Scalar>::from(Scalar::from_bytes_le(bytes)).is_none() {
        return Err(Error::invalid(format!(
            "{what} is not a canonical field element (it is ≥ the BLS12-381 scalar modulus)"
        )));
    }
    D::try_from_bytes(bytes).map_err(|e| Error::from_dependency(Status::InvalidArgument, what, e))
}

/// Whether a field element's 32 bytes are canonical (< the BLS12-381 scalar modulus).
pub(crate) fn is_canonical<D: Domain>(value: &D) -> bool {
    let bytes: Option<[u8; 32]> = value.as_ref().try_into().ok();
    bytes.is_some_and(|b| Option::<Scalar>::from(Scalar::from_bytes_le(&b)).is_some())
}

/// Whether an inclusion path has the shape of a tree of `leaves` (what filecoin-proofs' hashing
/// and inclusion gadget assume): the proof variant of the tree's layers, the path length, arity
/// − 1 siblings and an index below the arity at every level, canonical values. (Whether it
/// hashes to its root is the caller's: a PoSt names such a sector faulty.)
pub(crate) fn check_path<P: MerkleProofTrait>(path: &P, leaves: usize) -> std::result::Result<(), String> {
    let (sub, top) = (P::SubTreeArity::to_usize(), P::TopTreeArity::to_usize());
    // The serialized proof starts with its variant: 0 one tree, 1 with sub-trees, 2 with a top tree.
    let variant = bincode::serialize(path).map_err(|e| e.to_string())?;
    let expected_variant: u8 = if top > 0 {
        2
    } else if sub > 0 {
        1
    } else {
        0
    };
    if variant.get(..4) != Some(&[expected_variant, 0, 0, 0][..]) {
        return Err("its layers do not match the sector size's tree".into());
    }
    let levels = path.path();
    let expected = compound_path_length::<P::Arity, P::SubTreeArity, P::TopTreeArity>(leaves);
    if levels.len() != expected {
        return Err(format!("{} levels, the tree has {expected}", levels.len()));
    }
    let arities = level_arities::<P::Arity, P::SubTreeArity, P::TopTreeArity>(leaves);
    for (height, ((siblings, index), arity)) in levels.iter().zip(arities).enumerate() {
        if siblings.len() + 1 != arity || *index >= arity {
            return Err(format!(
                "level {height} has {} siblings and index {index}, the tree's arity there is {arity}",
                siblings.len()
            ));
        }
        if !siblings.iter().all(is_canonical::<<P::Hasher as Hasher>::Domain>) {
            return Err(format!("level {height} has a non-canonical field element"));
        }
    }
    if !is_canonical(&path.leaf()) || !is_canonical(&path.root()) {
        return Err("its leaf or root is not a canonical field element".into());
    }
    Ok(())
}

/// The arity of each level of a path in a tree of `leaves` leaves with these arities: its base
/// tree's levels, then its sub and top trees' (when it has them).
pub(crate) fn level_arities<Base: Unsigned, Sub: Unsigned, Top: Unsigned>(leaves: usize) -> Vec<usize> {
    let base_levels = base_path_length::<Base, Sub, Top>(leaves);
    std::iter::repeat_n(Base::to_usize(), base_levels)
        .chain([Sub::to_usize(), Top::to_usize()].into_iter().filter(|&a| a > 0))
        .collect()
}

/// A path of a tree of `leaves` leaves to `root`, of the tree's exact shape with random values
/// (`rng`): for made-up vanilla proofs (benchmarks at sizes no sector can be sealed for).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn made_up_path<H, Base, Sub, Top>(
    leaves: usize,
    root: H::Domain,
    rng: &mut impl rand::Rng,
) -> storage_proofs_core::merkle::MerkleProof<H, Base, Sub, Top>
where
    H: Hasher,
    H::Domain: From<Scalar>,
    Base: filecoin_hashers::PoseidonArity,
    Sub: filecoin_hashers::PoseidonArity,
    Top: filecoin_hashers::PoseidonArity,
{
    use ff::Field;
    let value = |rng: &mut dyn rand::RngCore| -> H::Domain { Scalar::random(rng).into() };
    let levels = level_arities::<Base, Sub, Top>(leaves)
        .into_iter()
        .map(|arity| ((1..arity).map(|_| value(rng)).collect(), rand::Rng::gen_range(rng, 0..arity)))
        .collect::<Vec<_>>();
    storage_proofs_core::merkle::MerkleProof::from_parts(value(rng), root, levels)
}
