//! The witness of an update partition with its challenges in parallel.
//!
//! filecoin-proofs' `EmptySectorUpdateCircuit` is a prefix (the public inputs and their bits,
//! phi, comm_c and the replica roots, the apex leaves and their tree up to comm_d_new, every
//! challenge's generated bits) followed by one part per challenge that reads only prefix
//! variables and its own: rho, the new label, the TreeROld and TreeRNew paths and the TreeDNew
//! path up to the apex leaf. Here the same gadgets run in the same order, the prefix once and
//! then the challenges on all cores, each into a part appended in challenge order; the
//! assignment is the sequential synthesis' value for value (the tests compare them). The
//! gadgets storage-proofs-update keeps crate-private are written out below, allocation for
//! allocation.

use bellperson::gadgets::boolean::{field_into_allocated_bits_le, AllocatedBit, Boolean};
use bellperson::gadgets::multipack::pack_bits;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::{ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField, PrimeFieldBits};
use filecoin_hashers::{HashFunction, Hasher};
use filecoin_proofs::types::MerkleTreeTrait;
use neptune::circuit::poseidon_hash;
use rayon::prelude::*;
use storage_proofs_core::gadgets::insertion::select;
use storage_proofs_core::gadgets::por::por_no_challenge_input;
use storage_proofs_update::circuit::ChallengeProof;
use storage_proofs_update::constants::{hs, TreeD, TreeDHasher, TreeRHasher, POSEIDON_CONSTANTS_GEN_RANDOMNESS};
use storage_proofs_update::EmptySectorUpdateCircuit;

use crate::cancel::CancelToken;
use crate::synthesis::r1cs::{Witness, WitnessCs};

type Num = AllocatedNum<Scalar>;

fn alloc<CS: ConstraintSystem<Scalar>>(cs: &mut CS, value: Option<Scalar>) -> Result<Num, SynthesisError> {
    AllocatedNum::alloc(&mut *cs, || value.ok_or(SynthesisError::AssignmentMissing))
}

/// What the challenges read from the prefix.
struct Prefix {
    partition_bits: Vec<AllocatedBit>,
    h_select_bits: Vec<AllocatedBit>,
    phi: Num,
    root_r_old: Num,
    root_r_new: Num,
    apex_leafs: Vec<Num>,
    /// Each challenge's generated bits (little-endian, without the partition's).
    generated_bits: Vec<Vec<AllocatedBit>>,
}

/// The witness of `circuit` (a partition's, with values), equal to its sequential synthesis'.
pub(super) fn partition_witness<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    circuit: EmptySectorUpdateCircuit<Tree>,
    cancel: Option<&CancelToken>,
) -> Result<Witness, SynthesisError> {
    let mut cs = WitnessCs::whole(cancel);
    let prefix = prefix::<Tree>(&mut cs, &circuit)?;
    let parts = circuit
        .priv_inputs
        .challenge_proofs
        .par_iter()
        .zip(&prefix.generated_bits)
        .map(|(proof, bits)| {
            let mut part = WitnessCs::part(cancel);
            challenge::<Tree>(&mut part, &circuit, &prefix, bits, proof)?;
            Ok(part)
        })
        .collect::<Result<Vec<_>, SynthesisError>>()?;
    cs.append_all(parts);
    Ok(cs.into_witness())
}

/// `EmptySectorUpdateCircuit::synthesize` up to its challenge loop.
fn prefix<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    cs: &mut WitnessCs,
    circuit: &EmptySectorUpdateCircuit<Tree>,
) -> Result<Prefix, SynthesisError> {
    let params = &circuit.pub_params;
    let (inputs, private) = (&circuit.pub_inputs, &circuit.priv_inputs);
    let hs = hs(params.sector_nodes);
    let partition_path = &private.challenge_proofs[0].path_d_new[params.challenge_bit_len - params.partition_bit_len..];

    let k_and_h_select = alloc(cs, inputs.k_and_h_select)?;
    k_and_h_select.inputize(&mut *cs)?;
    let bit_len = params.partition_bit_len + hs.len();
    let value = k_and_h_select.get_value().ok_or(SynthesisError::AssignmentMissing)?;
    let bits = value
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
    let phi = poseidon_hash(&mut *cs, vec![comm_d_new.clone(), comm_r_old.clone()], &POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;

    let comm_c = alloc(cs, private.comm_c)?;
    let root_r_old = alloc(cs, private.root_r_old)?;
    let root_r_new = alloc(cs, private.root_r_new)?;
    let apex_leafs = private.apex_leafs.iter().map(|leaf| alloc(cs, *leaf)).collect::<Result<Vec<_>, _>>()?;
    let partition_path = partition_path
        .iter()
        .map(|siblings| Ok(vec![alloc(cs, siblings[0])?]))
        .collect::<Result<Vec<_>, SynthesisError>>()?;

    // comm_r_old = H(comm_c ‖ root_r_old), comm_r_new = H(comm_c ‖ root_r_new).
    for root in [&root_r_old, &root_r_new] {
        <TreeRHasher as Hasher>::Function::hash2_circuit(&mut *cs, &comm_c, root)?;
        cs.enforce(|| "comm_r_calc == comm_r", |lc| lc, |lc| lc, |lc| lc);
    }

    apex_por(cs, &apex_leafs, partition_bits, partition_path, comm_d_new)?;
    let generated_bits = gen_challenge_bits(
        cs,
        &comm_r_new,
        &partition,
        params.challenge_count,
        params.challenge_bit_len - params.partition_bit_len,
    )?;
    Ok(Prefix {
        partition_bits: partition_bits.to_vec(),
        h_select_bits: h_select_bits.to_vec(),
        phi,
        root_r_old,
        root_r_new,
        apex_leafs,
        generated_bits,
    })
}

/// One iteration of the circuit's challenge loop.
fn challenge<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    cs: &mut WitnessCs,
    circuit: &EmptySectorUpdateCircuit<Tree>,
    prefix: &Prefix,
    generated_bits: &[AllocatedBit],
    proof: &ChallengeProof<Tree>,
) -> Result<(), SynthesisError> {
    let params = &circuit.pub_params;
    let c_bits: Vec<AllocatedBit> = generated_bits.iter().chain(&prefix.partition_bits).cloned().collect();
    let c_high = challenge_high_bits(cs, &c_bits, &prefix.h_select_bits, &hs(params.sector_nodes))?;
    let rho = poseidon_hash(&mut *cs, vec![prefix.phi.clone(), c_high], &POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;
    let leaf_r_old = alloc(cs, proof.leaf_r_old)?;
    let leaf_d_new = alloc(cs, proof.leaf_d_new)?;
    let leaf_r_new = label_r_new(cs, &leaf_r_old, &leaf_d_new, &rho)?;

    let path = |cs: &mut WitnessCs, rows: &[Vec<Option<Scalar>>]| {
        rows.iter()
            .map(|siblings| siblings.iter().map(|s| alloc(cs, *s)).collect::<Result<Vec<_>, _>>())
            .collect::<Result<Vec<_>, SynthesisError>>()
    };
    let path_r_old = path(cs, &proof.path_r_old)?;
    por_no_challenge_input::<Tree, _>(&mut *cs, c_bits.clone(), leaf_r_old, path_r_old, prefix.root_r_old.clone())?;
    let path_r_new = path(cs, &proof.path_r_new)?;
    por_no_challenge_input::<Tree, _>(&mut *cs, c_bits.clone(), leaf_r_new, path_r_new, prefix.root_r_new.clone())?;

    let to_apex = params.challenge_bit_len - params.partition_bit_len - params.apex_leaf_bit_len;
    let apex_leaf_bits: Vec<Boolean> = c_bits[to_apex..to_apex + params.apex_leaf_bit_len]
        .iter()
        .cloned()
        .map(Into::into)
        .collect();
    let apex_leaf = select(&mut *cs, &prefix.apex_leafs, &apex_leaf_bits)?;
    let path_to_apex = proof.path_d_new[..to_apex]
        .iter()
        .map(|siblings| Ok(vec![alloc(cs, siblings[0])?]))
        .collect::<Result<Vec<_>, SynthesisError>>()?;
    por_no_challenge_input::<TreeD, _>(&mut *cs, c_bits[..to_apex].to_vec(), leaf_d_new, path_to_apex, apex_leaf)
}

/// The apex tree over `apex_leafs` and its root's path to comm_d (storage-proofs-update's
/// `apex_por`).
fn apex_por(
    cs: &mut WitnessCs,
    apex_leafs: &[Num],
    partition_bits: &[AllocatedBit],
    partition_path: Vec<Vec<Num>>,
    comm_d: Num,
) -> Result<(), SynthesisError> {
    let mut row = apex_leafs.to_vec();
    while row.len() > 1 {
        row = row
            .chunks(2)
            .map(|pair| <TreeDHasher as Hasher>::Function::hash2_circuit(&mut *cs, &pair[0], &pair[1]))
            .collect::<Result<Vec<_>, _>>()?;
    }
    por_no_challenge_input::<TreeD, _>(&mut *cs, partition_bits.to_vec(), row.remove(0), partition_path, comm_d)
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
        let k = partition.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        let digest_index = alloc(cs, Some(k * Scalar::from(digests) + Scalar::from(j)))?;
        cs.enforce(|| "digest_index", |lc| lc, |lc| lc, |lc| lc);
        let digest = poseidon_hash(&mut *cs, vec![comm_r_new.clone(), digest_index], &POSEIDON_CONSTANTS_GEN_RANDOMNESS)?;
        let bits = field_into_allocated_bits_le(&mut *cs, digest.get_value())?;
        cs.enforce(|| "digest binary decomp", |lc| lc, |lc| lc, |lc| lc);
        let take = (challenges - generated.len()).min(per_digest);
        generated.extend(bits.chunks(bits_per_challenge).take(take).map(<[AllocatedBit]>::to_vec));
    }
    Ok(generated)
}

/// The challenge's `h` high bits, `h` chosen by the one set bit of `h_select_bits`
/// (storage-proofs-update's `get_challenge_high_bits`).
fn challenge_high_bits(cs: &mut WitnessCs, c_bits: &[AllocatedBit], h_select_bits: &[AllocatedBit], hs: &[usize]) -> Result<Num, SynthesisError> {
    let c_bits: Vec<Boolean> = c_bits.iter().cloned().map(Into::into).collect();
    let mut selected = Scalar::ZERO;
    for (h, select_bit) in hs.iter().zip(h_select_bits) {
        let c_high = pack_bits(&mut *cs, &c_bits[c_bits.len() - h..])?;
        let chosen = select_bit.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        let value = if chosen {
            c_high.get_value().ok_or(SynthesisError::AssignmentMissing)?
        } else {
            Scalar::ZERO
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
    let old = label_r_old.get_value().ok_or(SynthesisError::AssignmentMissing)?;
    let label = alloc(cs, Some(old + product.get_value().ok_or(SynthesisError::AssignmentMissing)?))?;
    cs.enforce(|| "label_r_new", |lc| lc, |lc| lc, |lc| lc);
    Ok(label)
}
