//! The witness of one PoRep partition, generated on all cores.
//!
//! Splitting by challenge (`SegmentedCircuit`) leaves 2 tasks for a 2KiB partition and 18
//! uneven ones for 32GiB. Inside a challenge the work is still independent: the data leaf's
//! and each parent column's inclusion proofs, and the label of each layer (a SHA-256 over 37
//! parents: most of the constraints) read only values the vanilla proof already holds; only
//! the last step (encoding, the column hash of the labels and their inclusion proofs) needs the
//! labels. So each challenge runs as: its parts and its layers, all in parallel with every
//! other challenge's, then its tail. A label's SHA-256 is itself 20 parts, one per block
//! ([`Blocks`]: the chaining states computed natively first), so that no part is longer than
//! one compression: whole, a label was a quarter of a 2KiB partition on one core.
//!
//! This is valid for witness generation only. `WitnessCs` never evaluates a linear
//! combination, so a gadget may be handed variables allocated in another constraint system
//! (or in a scratch one, from the proof's values): only their values are read. The parts are
//! appended in the order `StackedCircuit::synthesize` allocates them; tests/r1cs.rs checks the
//! result equals its witness exactly. The SHA-256 labels and comm_d path ([`crate::kinds::sha256`])
//! and the Poseidon column hashes and tree_c / tree_r_last paths (`kinds::poseidon`,
//! `kinds::por`) are computed natively, not by running their gadgets.

use std::mem::MaybeUninit;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::gadgets::uint32::UInt32;
use bellperson::SynthesisError;
use blstrs::Scalar;
use ff::PrimeField;
use filecoin_hashers::poseidon::PoseidonHasher;
use filecoin_hashers::{HashFunction, Hasher, POSEIDON_CONSTANTS_11, POSEIDON_CONSTANTS_2};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::MerkleTreeTrait;
use rayon::prelude::*;
use storage_proofs_core::gadgets::constraint;
use storage_proofs_core::gadgets::encode::encode;
use storage_proofs_core::gadgets::insertion::insert;
use storage_proofs_core::gadgets::uint64::UInt64;
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};
use storage_proofs_core::util::reverse_bit_numbering;
use storage_proofs_porep::stacked::{ColumnProof, StackedCircuit};
use typenum::U2;

use super::column::{column_parts, TreePath};
use super::{PartitionCircuit, TreeDomain};
use crate::cancel::CancelToken;
use crate::kinds::por;
use crate::kinds::poseidon::poseidon_hash;
use crate::kinds::sha256::{hash_multi_leaf, to_booleans, Bit, Blocks, Word};
use crate::synthesis::r1cs::{NotInPlace, PartBuffers, Placed, Witness, WitnessCs};

type PieceDomain = <DefaultPieceHasher as Hasher>::Domain;

/// What every challenge reads from the partition's first variables.
struct Prefix {
    replica_id_bits: Vec<Boolean>,
    comm_d: AllocatedNum<Scalar>,
    comm_c: AllocatedNum<Scalar>,
    comm_r_last: AllocatedNum<Scalar>,
}

/// The first variables of `StackedCircuit::synthesize`, in its order.
fn synthesize_prefix<Tree: 'static + MerkleTreeTrait>(cs: &mut WitnessCs, circuit: &PartitionCircuit<Tree>) -> Result<Prefix, SynthesisError> {
    let value = |v: Option<Scalar>| move || v.ok_or(SynthesisError::AssignmentMissing);
    let replica_id = AllocatedNum::alloc(&mut *cs, value(circuit.replica_id.map(Into::into)))?;
    replica_id.inputize(&mut *cs)?;
    let replica_id_bits = reverse_bit_numbering(replica_id.to_bits_le(&mut *cs)?);
    let comm_d = AllocatedNum::alloc(&mut *cs, value(circuit.comm_d.map(Into::into)))?;
    comm_d.inputize(&mut *cs)?;
    let comm_r = AllocatedNum::alloc(&mut *cs, value(circuit.comm_r.map(Into::into)))?;
    comm_r.inputize(&mut *cs)?;
    let comm_r_last = AllocatedNum::alloc(&mut *cs, value(circuit.comm_r_last.map(Into::into)))?;
    let comm_c = AllocatedNum::alloc(&mut *cs, value(circuit.comm_c.map(Into::into)))?;
    let hash = poseidon_hash(cs, &[comm_c.clone(), comm_r_last.clone()], &POSEIDON_CONSTANTS_2)?;
    constraint::equal(cs, || "comm_r = H(comm_c || comm_r_last)", &comm_r, &hash);
    Ok(Prefix {
        replica_id_bits,
        comm_d,
        comm_c,
        comm_r_last,
    })
}

/// storage-proofs-porep's `hash_single_column` (private there), its hash computed natively.
fn hash_column(cs: &mut WitnessCs, column: &[AllocatedNum<Scalar>]) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    match column.len() {
        2 => poseidon_hash(cs, column, &POSEIDON_CONSTANTS_2),
        11 => poseidon_hash(cs, column, &POSEIDON_CONSTANTS_11),
        n => Err(SynthesisError::IoError(std::io::Error::other(format!("no column hash for {n} layers")))),
    }
}

/// filecoin-proofs' per-challenge circuit proof type lives in a private module, so it cannot
/// be named here: this returns its argument unchanged, its element type fixed to that type by
/// `StackedCircuit::synthesize`'s signature (passed as `_synthesize`).
#[allow(clippy::type_complexity)]
fn as_circuit_proofs<Tree: MerkleTreeTrait, P>(
    proofs: Vec<P>,
    _synthesize: fn(
        WitnessCs,
        Option<TreeDomain<Tree>>,
        Option<PieceDomain>,
        Option<TreeDomain<Tree>>,
        Option<TreeDomain<Tree>>,
        Option<TreeDomain<Tree>>,
        Vec<P>,
    ) -> Result<(), SynthesisError>,
) -> Vec<P> {
    proofs
}

/// The levels of a column's inclusion path (the witness reads the vanilla proof: the circuit's
/// copy keeps them private).
fn column_levels<Tree: 'static + MerkleTreeTrait>(column: &ColumnProof<TreePath<Tree>>) -> Result<Vec<(Vec<Scalar>, usize)>, SynthesisError> {
    let parts = column_parts::<Tree>(column).map_err(|e| SynthesisError::IoError(std::io::Error::other(e)))?;
    Ok(por::levels(&parts.inclusion_proof))
}

/// One task of a challenge, in the order `StackedCircuit` synthesizes them.
#[derive(Clone, Copy)]
enum Part {
    /// The data leaf.
    DataLeaf,
    /// Level `h` of the data leaf's inclusion path to comm_d (see [`DataPath`]).
    DataLevel(usize),
    /// The path's index bits packed into public inputs, and its root checked against comm_d.
    DataRoot,
    /// Parent column `j` (DRG parents, then expander parents): its rows, its hash, and the
    /// hash's inclusion in comm_c.
    Parent(usize),
    /// The challenged node's number, also a public input.
    Challenge,
    /// The parents' bits of layer `l`'s label (1-based), as `create_label_circuit` allocates
    /// them before its SHA-256.
    LabelParents(usize),
    /// Block `k` of the SHA-256 of layer `l`'s label (see [`Blocks`]).
    LabelBlock(usize, usize),
    /// Layer `l`'s label: the digest packed into a number.
    Label(usize),
}

/// The witness of `circuit`, equal to `synthesize_witness(circuit)` (tests/r1cs.rs).
///
/// Challenge 0 is made first; every challenge allocates the same variables (the gadgets'
/// choices depend on constants, not on values), so its parts' lengths give every other
/// challenge's place in the whole, and the other challenges are written straight into it as
/// their parts are made. Should a challenge not fit its place, the rest are all made, then
/// copied.
pub fn partition_witness<Tree: 'static + MerkleTreeTrait>(
    circuit: &PartitionCircuit<Tree>,
    cancel: Option<&CancelToken>,
) -> Result<Witness, SynthesisError> {
    if <Tree::Hasher as Hasher>::name() != PoseidonHasher::name() {
        return Err(SynthesisError::IoError(std::io::Error::other(
            "a PoRep's tree_c and tree_r_last are Poseidon trees",
        )));
    }
    let mut whole = WitnessCs::whole(cancel);
    let prefix = synthesize_prefix(&mut whole, circuit)?;
    let proofs = as_circuit_proofs::<Tree, _>(
        circuit.proofs.iter().cloned().map(Into::into).collect(),
        StackedCircuit::<Tree, DefaultPieceHasher>::synthesize::<WitnessCs>,
    );
    let missing = || SynthesisError::AssignmentMissing;

    // Challenge i's parts, in the order `StackedCircuit` synthesizes them (`labels`: its
    // labels' SHA-256 blocks, one per layer).
    let parts_of = |i: usize, labels: &[Blocks]| {
        let proof = &proofs[i];
        let parents = proof.drg_parents_proofs.len() + proof.exp_parents_proofs.len();
        let levels = circuit.proofs[i].comm_d_proofs.path().len();
        let mut parts = vec![Part::DataLeaf];
        parts.extend((0..levels).map(Part::DataLevel));
        parts.push(Part::DataRoot);
        parts.extend((0..parents).map(Part::Parent));
        parts.push(Part::Challenge);
        for (layer, blocks) in (1..=circuit.num_layers).zip(labels) {
            parts.push(Part::LabelParents(layer));
            parts.extend((0..blocks.count()).map(|k| Part::LabelBlock(layer, k)));
            parts.push(Part::Label(layer));
        }
        parts
    };
    // The bits of the parents challenge i's label of `layer` hashes, allocated in `cs` (the
    // rows in a scratch system: only their values are read).
    let parent_bits = |i: usize, layer: usize, cs: &mut WitnessCs| -> Result<Vec<Vec<Boolean>>, SynthesisError> {
        let proof = &proofs[i];
        let mut scratch = WitnessCs::part(None);
        let mut parents = Vec::new();
        for column in &proof.drg_parents_proofs {
            let (rows, _) = column.clone().alloc(&mut scratch)?;
            parents.push(reverse_bit_numbering(rows.get_value(layer).to_bits_le(&mut *cs)?));
        }
        // Layer 1 has no expander parents; theirs are shifted by one layer.
        if layer > 1 {
            for column in &proof.exp_parents_proofs {
                let (rows, _) = column.clone().alloc(&mut scratch)?;
                parents.push(reverse_bit_numbering(rows.get_value(layer - 1).to_bits_le(&mut *cs)?));
            }
        }
        Ok(parents)
    };
    // Challenge i's labels, one per layer: their SHA-256 inputs and blocks, from the proof's
    // values alone.
    let labels_of = |i: usize| -> Result<Vec<Blocks>, SynthesisError> {
        (1..=circuit.num_layers)
            .into_par_iter()
            .map(|layer| {
                let mut scratch = WitnessCs::part(None);
                let challenge = UInt64::alloc(&mut scratch, proofs[i].challenge)?;
                let parents = expand_parents(parent_bits(i, layer, &mut scratch)?, layer);
                Ok(Blocks::of(&label_input(&prefix.replica_id_bits, parents, layer as u32, challenge)?))
            })
            .collect()
    };
    // One part of challenge i, made in `cs`, and the label it computes (a layer's).
    let make_part = |i: usize,
                     part: Part,
                     data_path: &DataPath,
                     labels: &[Blocks],
                     mut cs: WitnessCs|
     -> Result<(WitnessCs, Option<AllocatedNum<Scalar>>), SynthesisError> {
        let proof = &proofs[i];
        let mut label = None;
        match part {
            Part::DataLeaf => {
                AllocatedNum::alloc(&mut cs, || proof.data_leaf.ok_or_else(missing))?;
            }
            Part::DataLevel(height) => data_path.level(&mut cs, height)?,
            Part::DataRoot => data_path.root(&mut cs, &prefix.comm_d)?,
            Part::Parent(j) => {
                let drg = proof.drg_parents_proofs.len();
                let column = if j < drg {
                    &proof.drg_parents_proofs[j]
                } else {
                    &proof.exp_parents_proofs[j - drg]
                };
                let (rows, _) = column.clone().alloc(&mut cs)?;
                let rows: Vec<_> = (1..=circuit.num_layers).map(|layer| rows.get_value(layer).clone()).collect();
                let hash = hash_column(&mut cs, &rows)?;
                let vanilla = &circuit.proofs[i].replica_column_proofs;
                let vanilla = if j < drg {
                    &vanilla.drg_parents[j]
                } else {
                    &vanilla.exp_parents[j - drg]
                };
                por::inclusion(&mut cs, &hash, &column_levels::<Tree>(vanilla)?, &prefix.comm_c)?;
            }
            Part::Challenge => UInt64::alloc(&mut cs, proof.challenge)?.pack_into_input(&mut cs)?,
            Part::LabelParents(layer) => {
                parent_bits(i, layer, &mut cs)?;
            }
            Part::LabelBlock(layer, k) => {
                labels[layer - 1].compress(&mut cs, k)?;
            }
            Part::Label(layer) => label = Some(pack_label(&mut cs, labels[layer - 1].digest())?),
        }
        Ok((cs, label))
    };
    // Challenge i's tail over its layers' labels: the encoding, its inclusion in comm_r_last,
    // the labels' column hash and its inclusion in comm_c.
    let make_tail = |i: usize, labels: &[AllocatedNum<Scalar>]| -> Result<WitnessCs, SynthesisError> {
        let vanilla = &circuit.proofs[i];
        let key = labels.last().ok_or_else(missing)?;
        let mut cs = WitnessCs::part(cancel);
        let leaf = AllocatedNum::alloc(WitnessCs::part(None), || proofs[i].data_leaf.ok_or_else(missing))?;
        let encoded = encode(&mut cs, key, &leaf)?;
        por::inclusion(&mut cs, &encoded, &por::levels(&vanilla.comm_r_last_proof), &prefix.comm_r_last)?;
        let column_hash = hash_column(&mut cs, labels)?;
        por::inclusion(
            &mut cs,
            &column_hash,
            &column_levels::<Tree>(&vanilla.replica_column_proofs.c_x)?,
            &prefix.comm_c,
        )?;
        Ok(cs)
    };
    // Challenge i whole, its parts on all cores, then its tail.
    let make_challenge = |i: usize| -> Result<Vec<WitnessCs>, SynthesisError> {
        let data_path = DataPath::of(&circuit.proofs[i].comm_d_proofs, proofs[i].data_leaf)?;
        let labels = labels_of(i)?;
        let parts = parts_of(i, &labels)
            .into_par_iter()
            .map(|part| make_part(i, part, &data_path, &labels, WitnessCs::part(cancel)))
            .collect::<Result<Vec<_>, _>>()?;
        let labels: Vec<_> = parts.iter().filter_map(|(_, label)| label.clone()).collect();
        let tail = make_tail(i, &labels)?;
        Ok(parts.into_iter().map(|(cs, _)| cs).chain([tail]).collect())
    };
    // Challenge i written into `tile`, its place: each part, then the tail, into its slots of
    // `layout` as soon as it is made, on the buffers of parts placed before.
    let buffers = PartBuffers::default();
    let place_challenge = |i: usize, layout: &[usize], tile: &mut [MaybeUninit<Scalar>]| -> Result<Vec<Placed>, NotInPlace> {
        let labels = labels_of(i)?;
        let parts = parts_of(i, &labels);
        if parts.len() + 1 != layout.len() {
            return Err(NotInPlace::Uneven);
        }
        let mut slots = Vec::with_capacity(layout.len());
        let mut rest = tile;
        for &n in layout {
            let (slot, after) = std::mem::take(&mut rest).split_at_mut_checked(n).ok_or(NotInPlace::Uneven)?;
            slots.push(slot);
            rest = after;
        }
        let tail_slot = slots.pop().expect("a tail");
        let data_path = DataPath::of(&circuit.proofs[i].comm_d_proofs, proofs[i].data_leaf)?;
        let parts = parts
            .into_par_iter()
            .zip(slots)
            .map(|(part, slot)| {
                let (cs, label) = make_part(i, part, &data_path, &labels, buffers.part(cancel))?;
                Ok((buffers.place(cs, slot)?, label))
            })
            .collect::<Result<Vec<_>, NotInPlace>>()?;
        let labels: Vec<_> = parts.iter().filter_map(|(_, label)| label.clone()).collect();
        let tail = buffers.place(make_tail(i, &labels)?, tail_slot)?;
        Ok(parts.into_iter().map(|(placed, _)| placed).chain([tail]).collect())
    };

    let Some(first) = (!proofs.is_empty()).then(|| make_challenge(0)).transpose()? else {
        return Ok(whole.into_witness());
    };
    let layout: Vec<usize> = first.iter().map(WitnessCs::aux_len).collect();
    whole.append_all(first);
    let rest = vec![layout.iter().sum(); proofs.len() - 1];
    match whole.try_append_in_place(&rest, |k, tile| place_challenge(k + 1, &layout, tile)) {
        Ok(()) => {}
        Err(NotInPlace::Failed(e)) => return Err(e),
        Err(NotInPlace::Uneven) => {
            log::warn!("a PoRep challenge's witness does not fit the place challenge 0's gives it: challenges made apart, then copied");
            let made = (1..proofs.len()).into_par_iter().map(make_challenge).collect::<Result<Vec<_>, _>>()?;
            whole.append_all(made.into_iter().flatten().collect());
        }
    }
    Ok(whole.into_witness())
}

/// `enforce_inclusion` of the data leaf in comm_d (`PoRCircuit` over the binary SHA-256 tree:
/// per level an index bit, the sibling, their ordering and a 2-block SHA-256, then the packed
/// index bits as public inputs and the root check), one level at a time: the native hashes give
/// every level's input node, allocated in a scratch system (only values are read), so that the
/// levels are made in parallel as parts of their own.
struct DataPath {
    /// Per level: the node hashed there (the leaf at level 0), its sibling, and whether the
    /// node is the right child.
    levels: Vec<(Scalar, Scalar, bool)>,
    /// The root the path hashes to.
    root: Scalar,
}

impl DataPath {
    fn of(proof: &MerkleProof<DefaultPieceHasher, U2>, leaf: Option<Scalar>) -> Result<Self, SynthesisError> {
        type Sha256 = <DefaultPieceHasher as Hasher>::Function;
        let mut node = proof.leaf();
        let mut levels = Vec::new();
        for (siblings, index) in proof.path() {
            let sibling = siblings.first().copied().ok_or(SynthesisError::AssignmentMissing)?;
            let right = index & 1 == 1;
            // Level 0 hashes the circuit's data leaf (the proof's leaf in a valid proof).
            let hashed = match levels.is_empty() {
                true => leaf.ok_or(SynthesisError::AssignmentMissing)?,
                false => node.into(),
            };
            levels.push((hashed, sibling.into(), right));
            node = if right {
                Sha256::hash2(&sibling, &node)
            } else {
                Sha256::hash2(&node, &sibling)
            };
        }
        Ok(DataPath { levels, root: node.into() })
    }

    /// Level `height`: the index bit, the sibling, their ordering and the parent's hash.
    fn level(&self, cs: &mut WitnessCs, height: usize) -> Result<(), SynthesisError> {
        let &(node, sibling, right) = self.levels.get(height).ok_or(SynthesisError::AssignmentMissing)?;
        let node = AllocatedNum::alloc(WitnessCs::part(None), || Ok(node))?;
        let bit = Boolean::from(AllocatedBit::alloc(&mut *cs, Some(right))?);
        let sibling = AllocatedNum::alloc(&mut *cs, || Ok(sibling))?;
        let inserted = insert(&mut *cs, &node, std::slice::from_ref(&bit), &[sibling])?;
        hash_multi_leaf(cs, &inserted)?;
        Ok(())
    }

    /// The index bits packed into inputs, and the computed root checked against `root`.
    fn root(&self, cs: &mut WitnessCs, root: &AllocatedNum<Scalar>) -> Result<(), SynthesisError> {
        let mut scratch = WitnessCs::part(None);
        let bits = self
            .levels
            .iter()
            .map(|&(_, _, right)| Ok(Boolean::from(AllocatedBit::alloc(&mut scratch, Some(right))?)))
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        multipack::pack_into_inputs(&mut *cs, &bits)?;
        let computed_root = AllocatedNum::alloc(&mut scratch, || Ok(self.root))?;
        constraint::equal(cs, || "enforce root is correct", &computed_root, root);
        Ok(())
    }
}

/// `create_label_circuit`'s SHA-256 input (storage-proofs-porep): the replica id, the layer
/// and node, and the parents, each padded to 32 bytes. Its hash is computed natively
/// ([`crate::kinds::sha256`]: the gadget's own witness was most of a partition's), block by
/// block ([`Blocks`]), then packed into a number ([`pack_label`]).
fn label_input(replica_id: &[Boolean], parents: Vec<Vec<Boolean>>, layer: u32, node: UInt64) -> Result<Vec<Bit>, SynthesisError> {
    let pad_to_multiple = |bits: &mut Vec<Boolean>, n: usize| bits.resize(bits.len().next_multiple_of(n), Boolean::constant(false));
    let mut input = replica_id.to_vec();
    pad_to_multiple(&mut input, 256);
    input.extend(UInt32::constant(layer).into_bits_be());
    input.extend(node.to_bits_be());
    pad_to_multiple(&mut input, 256);
    for parent in &parents {
        input.extend_from_slice(parent);
        pad_to_multiple(&mut input, 256);
    }
    input.iter().map(Bit::of).collect()
}

/// The label: the digest's first 254 bits packed into a number, as `create_label_circuit` does.
fn pack_label(cs: &mut WitnessCs, digest: &[Word; 8]) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let bits = reverse_bit_numbering(to_booleans(digest.iter().flat_map(Word::bits_be))?);
    multipack::pack_bits(cs, &bits[..Scalar::CAPACITY as usize])
}

/// The 37 parents a label hashes, as `StackedCircuit` repeats them: layer 1 has 6 DRG parents
/// (repeated 6 times, then the first once more), later layers 6 + 8 (repeated twice, then the
/// first 9).
fn expand_parents(parents: Vec<Vec<Boolean>>, layer: usize) -> Vec<Vec<Boolean>> {
    let mut expanded = parents.clone();
    if layer > 1 {
        expanded.extend_from_slice(&parents);
        expanded.extend_from_slice(&parents[..9]);
    } else {
        for _ in 0..5 {
            expanded.extend_from_slice(&parents);
        }
        expanded.push(parents[0].clone());
    }
    expanded
}
