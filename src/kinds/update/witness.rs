//! The witness of an update partition, made in parallel parts with its hashes computed natively.
//!
//! filecoin-proofs' `EmptySectorUpdateCircuit` is a prefix (the public inputs and their bits,
//! phi, comm_c and the replica roots, the apex leaves and their tree up to comm_d_new, every
//! challenge's generated bits) followed by one part per challenge that reads only prefix
//! variables and its own: rho, the new label, the TreeROld and TreeRNew paths and the TreeDNew
//! path up to the apex leaf. Nearly all of it is SHA-256 (the apex tree and each challenge's
//! TreeDNew path: ≈ 78M of a 32GiB partition's ≈ 81M constraints), the rest Poseidon.
//!
//! Here the Poseidon hashes and inclusion paths are computed natively (`kinds::poseidon`,
//! `kinds::por`) and every SHA-256 node hash ([`hash_multi_leaf`]) is a part of its own: the
//! hashes' values are computed first on plain field elements, so each hash's inputs are known
//! before any part is made, and the parts are made on all cores, each written into its place
//! in the whole as soon as it is made (every part of a kind allocates the same variables, so
//! one of each kind gives every place), in the order the sequential synthesis allocates them. `WitnessCs` never evaluates a linear combination, so a
//! part may be handed variables of another system (only their values are read). The
//! assignment is the gadgets' value for value (the tests compare them). The gadgets
//! storage-proofs-update keeps crate-private are written out below, allocation for allocation.

use bellperson::gadgets::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellperson::gadgets::multipack::pack_bits;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_hashers::{HashFunction, Hasher, POSEIDON_CONSTANTS_2};
use filecoin_proofs::types::MerkleTreeTrait;
use rayon::prelude::*;
use storage_proofs_core::gadgets::insertion::{insert, select};
use storage_proofs_update::circuit::ChallengeProof;
use storage_proofs_update::constants::{hs, TreeDDomain, TreeDHasher, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::EmptySectorUpdateCircuit;

use crate::cancel::CancelToken;
use crate::kinds::por::inclusion_at_challenge;
use crate::kinds::poseidon::poseidon_hash;
use crate::kinds::sha256::hash_multi_leaf;
use crate::synthesis::r1cs::{NotInPlace, PartBuffers, Witness, WitnessCs};

type Num = AllocatedNum<Scalar>;

fn alloc<CS: ConstraintSystem<Scalar>>(cs: &mut CS, value: Option<Scalar>) -> Result<Num, SynthesisError> {
    AllocatedNum::alloc(&mut *cs, || value.ok_or(SynthesisError::AssignmentMissing))
}

fn value(value: Option<Scalar>) -> Result<Scalar, SynthesisError> {
    value.ok_or(SynthesisError::AssignmentMissing)
}

/// Input the checks before synthesis refuse, met in synthesis.
fn malformed(what: &str) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(format!("malformed update partition: {what}")))
}

fn bit_value(bit: &AllocatedBit) -> Result<bool, SynthesisError> {
    bit.get_value().ok_or(SynthesisError::AssignmentMissing)
}

/// What the challenges read from the prefix.
struct Prefix {
    partition_bits: Vec<AllocatedBit>,
    h_select_bits: Vec<AllocatedBit>,
    partition: Num,
    comm_r_new: Num,
    phi: Num,
    root_r_old: Num,
    root_r_new: Num,
    apex_leafs: Vec<Num>,
}

/// One SHA-256 node hash of the TreeDNew tree (filecoin-hashers' `hash2_circuit`, or a level of
/// `por_no_challenge_input`), with the values of what it hashes.
struct NodeHash {
    node: Scalar,
    /// The other child.
    sibling: Scalar,
    /// On an inclusion path: the index bit `insert` orders the two by (set: `node` is the
    /// right child). In the apex tree: None, `node` is the left child.
    right: Option<AllocatedBit>,
}

impl NodeHash {
    /// The hash's allocations, its inputs allocated in a scratch system (only their values are
    /// read).
    fn synthesize(&self, cs: &mut WitnessCs) -> Result<(), SynthesisError> {
        let mut scratch = WitnessCs::part(None);
        let node = alloc(&mut scratch, Some(self.node))?;
        let sibling = alloc(&mut scratch, Some(self.sibling))?;
        let children = match &self.right {
            None => vec![node, sibling],
            Some(bit) => insert(&mut *cs, &node, &[Boolean::from(bit.clone())], &[sibling])?,
        };
        hash_multi_leaf(cs, &children)?;
        Ok(())
    }

    /// The hash's value (`node` and `sibling` in their order).
    fn parent(&self) -> Result<Scalar, SynthesisError> {
        let hash = |left: Scalar, right: Scalar| -> Scalar {
            <TreeDHasher as Hasher>::Function::hash2(&TreeDDomain::from(left), &TreeDDomain::from(right)).into()
        };
        Ok(match &self.right {
            Some(bit) if bit_value(bit)? => hash(self.sibling, self.node),
            _ => hash(self.node, self.sibling),
        })
    }
}

/// The node hashes of `por_no_challenge_input::<TreeD>` from `leaf` up `siblings`, ordered by
/// `bits` (one per level, the challenge's little-endian bits).
fn path_hashes(leaf: Scalar, bits: &[AllocatedBit], siblings: &[Scalar]) -> Result<Vec<NodeHash>, SynthesisError> {
    if bits.len() != siblings.len() {
        return Err(malformed("a TreeDNew path whose levels and index bits differ in number"));
    }
    let mut node = leaf;
    let mut hashes = Vec::with_capacity(siblings.len());
    for (bit, &sibling) in bits.iter().zip(siblings) {
        let hash = NodeHash {
            node,
            sibling,
            right: Some(bit.clone()),
        };
        node = hash.parent()?;
        hashes.push(hash);
    }
    Ok(hashes)
}

/// A part of the witness after the prefix, in the order the gadgets allocate.
enum Part {
    Hash(NodeHash),
    /// A challenge up to its TreeDNew path's hashes.
    Challenge {
        index: usize,
        c_bits: Vec<AllocatedBit>,
    },
}

impl Part {
    /// Parts of one kind allocate the same variables: an apex tree hash, a hash on an
    /// inclusion path (its index bit inserted), a challenge.
    fn kind(&self) -> usize {
        match self {
            Part::Hash(NodeHash { right: None, .. }) => 0,
            Part::Hash(_) => 1,
            Part::Challenge { .. } => 2,
        }
    }
}

/// The witness of `circuit` (a partition's, with values), equal to its sequential synthesis'.
pub(super) fn partition_witness<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: EmptySectorUpdateCircuit<Tree>,
    cancel: Option<&CancelToken>,
) -> Result<Witness, SynthesisError> {
    let params = &circuit.pub_params;
    let private = &circuit.priv_inputs;
    let (challenge_bit_len, partition_bit_len) = (params.challenge_bit_len, params.partition_bit_len);
    let first = private.challenge_proofs.first().ok_or(SynthesisError::AssignmentMissing)?;
    let partition_path = first
        .path_d_new
        .get(challenge_bit_len - partition_bit_len..)
        .ok_or_else(|| malformed("a TreeDNew path shorter than the challenge's bits"))?;

    let mut cs = WitnessCs::whole(cancel);
    let prefix = prefix(&mut cs, &circuit, partition_path)?;

    // apex_por: the apex tree over the leaves, row by row, then its root's path to comm_d_new
    // (the root check it ends with is one constraint, counted with the prefix's: a witness
    // counts constraints in total only).
    let mut parts = Vec::new();
    let mut row = private.apex_leafs.iter().map(|&leaf| value(leaf)).collect::<Result<Vec<_>, _>>()?;
    if !row.len().is_power_of_two() {
        return Err(malformed("apex leaves not a power of two"));
    }
    while row.len() > 1 {
        let hashes: Vec<NodeHash> = row
            .chunks_exact(2)
            .map(|pair| NodeHash {
                node: pair[0],
                sibling: pair[1],
                right: None,
            })
            .collect();
        row = hashes.iter().map(NodeHash::parent).collect::<Result<_, _>>()?;
        parts.extend(hashes.into_iter().map(Part::Hash));
    }
    let apex_root = row.first().copied().ok_or(SynthesisError::AssignmentMissing)?;
    let siblings = partition_path
        .iter()
        .map(|s| value(s.first().copied().flatten()))
        .collect::<Result<Vec<_>, _>>()?;
    parts.extend(path_hashes(apex_root, &prefix.partition_bits, &siblings)?.into_iter().map(Part::Hash));
    cs.count_constraints(1);

    // Every challenge's generated bits, a part made here (the challenges read its bits).
    let generate = || -> Result<(WitnessCs, Vec<Vec<AllocatedBit>>), SynthesisError> {
        let mut generated = WitnessCs::part(cancel);
        let bits = gen_challenge_bits(
            &mut generated,
            &prefix.comm_r_new,
            &prefix.partition,
            params.challenge_count,
            challenge_bit_len - partition_bit_len,
        )?;
        Ok((generated, bits))
    };
    let (generated, generated_bits) = generate()?;
    let generated_at = parts.len();

    // Each challenge: its first part, then its TreeDNew path's hashes (its root check counted
    // here).
    let to_apex = challenge_bit_len - partition_bit_len - params.apex_leaf_bit_len;
    for (index, (proof, bits)) in private.challenge_proofs.iter().zip(generated_bits).enumerate() {
        let c_bits: Vec<AllocatedBit> = bits.into_iter().chain(prefix.partition_bits.iter().cloned()).collect();
        let siblings = proof
            .path_d_new
            .get(..to_apex)
            .ok_or_else(|| malformed("a TreeDNew path shorter than the challenge's bits"))?
            .iter()
            .map(|s| value(s.first().copied().flatten()))
            .collect::<Result<Vec<_>, _>>()?;
        let hashes = path_hashes(value(proof.leaf_d_new)?, &c_bits[..to_apex], &siblings)?;
        parts.push(Part::Challenge { index, c_bits });
        parts.extend(hashes.into_iter().map(Part::Hash));
        cs.count_constraints(1);
    }

    let make = |part: &Part, mut cs: WitnessCs| -> Result<WitnessCs, SynthesisError> {
        match part {
            Part::Hash(hash) => hash.synthesize(&mut cs)?,
            Part::Challenge { index, c_bits } => challenge(&mut cs, &circuit, &prefix, c_bits, &private.challenge_proofs[*index])?,
        }
        Ok(cs)
    };
    // Each part's place: the first part of each kind made apart, its length every part's of
    // the kind (the generated bits' their own).
    let mut kind_lengths = [None; 3];
    let mut lengths = Vec::with_capacity(parts.len() + 1);
    for part in &parts {
        let length = match kind_lengths[part.kind()] {
            Some(length) => length,
            None => *kind_lengths[part.kind()].insert(make(part, WitnessCs::part(cancel))?.aux_len()),
        };
        lengths.push(length);
    }
    lengths.insert(generated_at, generated.aux_len());
    let buffers = PartBuffers::default();
    let generated = std::sync::Mutex::new(Some(generated));
    let placed = cs.try_append_in_place(&lengths, |k, tile| {
        let part = match k.cmp(&generated_at) {
            std::cmp::Ordering::Less => make(&parts[k], buffers.part(cancel))?,
            std::cmp::Ordering::Equal => generated.lock().unwrap_or_else(|p| p.into_inner()).take().ok_or(NotInPlace::Uneven)?,
            std::cmp::Ordering::Greater => make(&parts[k - 1], buffers.part(cancel))?,
        };
        Ok(vec![buffers.place(part, tile)?])
    });
    match placed {
        Ok(()) => {}
        Err(NotInPlace::Failed(e)) => return Err(e),
        Err(NotInPlace::Uneven) => {
            log::warn!("an update part's witness does not fit the place its kind's first part gives it: parts made apart, then copied");
            let mut made = parts
                .par_iter()
                .map(|part| make(part, WitnessCs::part(cancel)))
                .collect::<Result<Vec<_>, SynthesisError>>()?;
            made.insert(generated_at, generate()?.0);
            cs.append_all(made);
        }
    }
    Ok(cs.into_witness())
}

/// `EmptySectorUpdateCircuit::synthesize` up to `apex_por`.
fn prefix<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    cs: &mut WitnessCs,
    circuit: &EmptySectorUpdateCircuit<Tree>,
    partition_path: &[Vec<Option<Scalar>>],
) -> Result<Prefix, SynthesisError> {
    let params = &circuit.pub_params;
    let (inputs, private) = (&circuit.pub_inputs, &circuit.priv_inputs);
    let hs = hs(params.sector_nodes);

    let k_and_h_select = alloc(cs, inputs.k_and_h_select)?;
    k_and_h_select.inputize(&mut *cs)?;
    let bit_len = params.partition_bit_len + hs.len();
    let bits = value(k_and_h_select.get_value())?
        .to_le_bits()
        .into_iter()
        .take(bit_len)
        .map(|bit| AllocatedBit::alloc(&mut *cs, Some(bit)))
        .collect::<Result<Vec<_>, _>>()?;
    cs.enforce(|| "k_and_h_select binary decomp", |lc| lc, |lc| lc, |lc| lc);
    let (partition_bits, h_select_bits) = bits.split_at(params.partition_bit_len);
    let partition_booleans: Vec<Boolean> = partition_bits.iter().cloned().map(Into::into).collect();
    let partition = pack_bits(&mut *cs, &partition_booleans)?;

    let comm_r_old = alloc(cs, inputs.comm_r_old)?;
    comm_r_old.inputize(&mut *cs)?;
    let comm_d_new = alloc(cs, inputs.comm_d_new)?;
    comm_d_new.inputize(&mut *cs)?;
    let comm_r_new = alloc(cs, inputs.comm_r_new)?;
    comm_r_new.inputize(&mut *cs)?;
    let phi = poseidon_hash(cs, &[comm_d_new, comm_r_old], &POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;

    let comm_c = alloc(cs, private.comm_c)?;
    let root_r_old = alloc(cs, private.root_r_old)?;
    let root_r_new = alloc(cs, private.root_r_new)?;
    let apex_leafs = private.apex_leafs.iter().map(|leaf| alloc(cs, *leaf)).collect::<Result<Vec<_>, _>>()?;
    for siblings in partition_path {
        alloc(cs, siblings.first().copied().flatten())?;
    }

    // comm_r_old = H(comm_c ‖ root_r_old), comm_r_new = H(comm_c ‖ root_r_new) (the TreeR
    // hasher's `hash2_circuit`).
    for root in [&root_r_old, &root_r_new] {
        poseidon_hash(cs, &[comm_c.clone(), root.clone()], &POSEIDON_CONSTANTS_2)?;
        cs.enforce(|| "comm_r_calc == comm_r", |lc| lc, |lc| lc, |lc| lc);
    }
    Ok(Prefix {
        partition_bits: partition_bits.to_vec(),
        h_select_bits: h_select_bits.to_vec(),
        partition,
        comm_r_new,
        phi,
        root_r_old,
        root_r_new,
        apex_leafs,
    })
}

/// One iteration of the circuit's challenge loop, up to its TreeDNew path's hashes (made as
/// parts of their own): `c_bits` are the challenge's bits, little-endian.
fn challenge<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    cs: &mut WitnessCs,
    circuit: &EmptySectorUpdateCircuit<Tree>,
    prefix: &Prefix,
    c_bits: &[AllocatedBit],
    proof: &ChallengeProof<Tree>,
) -> Result<(), SynthesisError> {
    let params = &circuit.pub_params;
    let c_booleans: Vec<Boolean> = c_bits.iter().cloned().map(Into::into).collect();
    let c_high = challenge_high_bits(cs, &c_booleans, &prefix.h_select_bits, &hs(params.sector_nodes))?;
    let rho = poseidon_hash(cs, &[prefix.phi.clone(), c_high], &POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;
    let leaf_r_old = alloc(cs, proof.leaf_r_old)?;
    let leaf_d_new = alloc(cs, proof.leaf_d_new)?;
    let leaf_r_new = label_r_new(cs, &leaf_r_old, &leaf_d_new, &rho)?;

    let path = |cs: &mut WitnessCs, rows: &[Vec<Option<Scalar>>]| {
        rows.iter()
            .map(|siblings| siblings.iter().map(|s| alloc(cs, *s)).collect::<Result<Vec<_>, _>>())
            .collect::<Result<Vec<_>, SynthesisError>>()
    };
    let path_r_old = path(cs, &proof.path_r_old)?;
    inclusion_at_challenge(cs, &c_booleans, &leaf_r_old, &path_r_old, &prefix.root_r_old)?;
    let path_r_new = path(cs, &proof.path_r_new)?;
    inclusion_at_challenge(cs, &c_booleans, &leaf_r_new, &path_r_new, &prefix.root_r_new)?;

    let to_apex = params.challenge_bit_len - params.partition_bit_len - params.apex_leaf_bit_len;
    select(&mut *cs, &prefix.apex_leafs, &c_booleans[to_apex..to_apex + params.apex_leaf_bit_len])?;
    for siblings in proof
        .path_d_new
        .get(..to_apex)
        .ok_or_else(|| malformed("a TreeDNew path shorter than the challenge's bits"))?
    {
        alloc(cs, siblings.first().copied().flatten())?;
    }
    Ok(())
}

/// `challenges` challenges' bits of `bits_per_challenge` each, from digests H(comm_r_new ‖
/// k · digests + j) (storage-proofs-update's `gen_challenge_bits`).
fn gen_challenge_bits(
    cs: &mut WitnessCs,
    comm_r_new: &Num,
    partition: &Num,
    challenges: usize,
    bits_per_challenge: usize,
) -> Result<Vec<Vec<AllocatedBit>>, SynthesisError> {
    let per_digest = Scalar::CAPACITY as usize / bits_per_challenge;
    let digests = challenges.div_ceil(per_digest) as u64;
    let mut generated = Vec::with_capacity(challenges);
    for j in 0..digests {
        let k = value(partition.get_value())?;
        let digest_index = alloc(cs, Some(k * Scalar::from(digests) + Scalar::from(j)))?;
        cs.enforce(|| "digest_index", |lc| lc, |lc| lc, |lc| lc);
        let digest = poseidon_hash(cs, &[comm_r_new.clone(), digest_index], &POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;
        let bits = field_into_allocated_bits_le(&mut *cs, digest.get_value())?;
        cs.enforce(|| "digest binary decomp", |lc| lc, |lc| lc, |lc| lc);
        let take = (challenges - generated.len()).min(per_digest);
        generated.extend(bits.chunks(bits_per_challenge).take(take).map(<[AllocatedBit]>::to_vec));
    }
    Ok(generated)
}

/// The challenge's `h` high bits, `h` chosen by the one set bit of `h_select_bits`
/// (storage-proofs-update's `get_challenge_high_bits`).
fn challenge_high_bits(cs: &mut WitnessCs, c_bits: &[Boolean], h_select_bits: &[AllocatedBit], hs: &[usize]) -> Result<Num, SynthesisError> {
    let mut selected = Scalar::ZERO;
    for (h, select_bit) in hs.iter().zip(h_select_bits) {
        let c_high = pack_bits(&mut *cs, &c_bits[c_bits.len() - h..])?;
        let value = match bit_value(select_bit)? {
            true => value(c_high.get_value())?,
            false => Scalar::ZERO,
        };
        alloc(cs, Some(value))?;
        cs.enforce(|| "c_high_or_zero", |lc| lc, |lc| lc, |lc| lc);
        selected += value;
    }
    let c_high = alloc(cs, Some(selected))?;
    cs.enforce(|| "c_high_selected", |lc| lc, |lc| lc, |lc| lc);
    Ok(c_high)
}

/// label_r_new = label_r_old + label_d_new · rho (storage-proofs-update's `label_r_new`).
fn label_r_new(cs: &mut WitnessCs, label_r_old: &Num, label_d_new: &Num, rho: &Num) -> Result<Num, SynthesisError> {
    let product = label_d_new.mul(&mut *cs, rho)?;
    let label = alloc(cs, Some(value(label_r_old.get_value())? + value(product.get_value())?))?;
    cs.enforce(|| "label_r_new", |lc| lc, |lc| lc, |lc| lc);
    Ok(label)
}

#[cfg(test)]
mod tests {
    use filecoin_proofs::constants::SectorShape8MiB;
    use filecoin_proofs_api::RegisteredUpdateProof;
    use rand::SeedableRng;

    use super::super::circuit::UpdateCircuit;
    use super::super::{made_up_inputs, made_up_partition, public_params, update_config};
    use super::partition_witness;
    use crate::synthesis::r1cs::synthesize_witness;

    /// An 8MiB partition (4 partitions, so the apex root has a path to comm_d_new; 128 apex
    /// leaves; h one of six) with made-up values: the parallel native witness of its last
    /// partition is the gadgets' value for value. (The 2KiB real update is compared in
    /// tests/update_2k.rs.)
    #[test]
    fn native_witness_equals_the_gadgets_at_8mib() {
        let config = update_config(RegisteredUpdateProof::StackedDrg8MiBV1).unwrap();
        let params = public_params(&config);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let inputs = made_up_inputs(&config, &mut rng);
        let last = params.partition_count - 1;
        let proof = made_up_partition::<SectorShape8MiB>(&params, &inputs, last, &mut rng);
        let circuit = || UpdateCircuit::partition(&params, &inputs, last, &proof).build().unwrap();
        let native = partition_witness(circuit(), None).unwrap();
        let gadgets = synthesize_witness(circuit(), None).unwrap();
        assert_eq!(native.input_assignment, gadgets.input_assignment);
        assert_eq!(native.num_constraints, gadgets.num_constraints);
        assert_eq!(native.aux_assignment.len(), gadgets.aux_assignment.len());
        let first_difference = native.aux_assignment.iter().zip(&gadgets.aux_assignment).position(|(a, b)| a != b);
        assert_eq!(first_difference, None, "aux values differ from the gadgets'");
    }
}
