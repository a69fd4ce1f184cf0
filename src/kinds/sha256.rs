//! The witness of bellpepper's SHA-256 gadget, computed on plain bits: the variables
//! `sha256` / `sha256_compression_function` allocate, in their order and with their values,
//! and the number of constraints they enforce.
//!
//! SHA-256 is nearly all of a PoRep partition (the labels and the data leaf's inclusion path),
//! and witness generation bounds the proving pipeline. The gadget builds linear combinations
//! outside `enforce` (`UInt32::addmany` adds a term per operand bit, `MultiEq` clones its
//! growing sums on every addition), which witness-only synthesis cannot skip; here a bit is
//! two bytes and an addition a `u64` sum.
//!
//! The gadget decides per bit whether to allocate by the bit's kind — a constant, an allocated
//! variable, or one negated (bellpepper's `Boolean`) — so [`Bit`] keeps the kind and every
//! operation below follows its gadget's branches in the gadget's order. Valid only for
//! witness-only synthesis ([`WitnessCs`] never evaluates a linear combination); the tests
//! compare with the gadget bit for bit on random mixes of kinds.

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::multipack;
use bellperson::gadgets::num::AllocatedNum;
use bellperson::SynthesisError;
use blstrs::Scalar;
use ff::PrimeField;

use crate::synthesis::r1cs::WitnessCs;

/// A bit as bellpepper's `Boolean` holds it. `Is` and `Not` carry the allocated variable's
/// value (so `Not(v)` is worth `!v`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bit {
    Constant(bool),
    Is(bool),
    Not(bool),
}

impl Bit {
    /// The kind and value of a gadget's bit.
    pub fn of(bit: &Boolean) -> Result<Bit, SynthesisError> {
        let value = |v: Option<bool>| v.ok_or(SynthesisError::AssignmentMissing);
        Ok(match bit {
            Boolean::Constant(v) => Bit::Constant(*v),
            Boolean::Is(b) => Bit::Is(value(b.get_value())?),
            Boolean::Not(b) => Bit::Not(value(b.get_value())?),
        })
    }

    /// A gadget bit of this kind and value for gadgets that read only values (witness-only
    /// synthesis): its variable is allocated in a scratch system.
    fn to_boolean(self, scratch: &mut WitnessCs) -> Result<Boolean, SynthesisError> {
        Ok(match self {
            Bit::Constant(v) => Boolean::Constant(v),
            Bit::Is(v) => Boolean::from(AllocatedBit::alloc(scratch, Some(v))?),
            Bit::Not(v) => Boolean::from(AllocatedBit::alloc(scratch, Some(v))?).not(),
        })
    }

    fn value(self) -> bool {
        match self {
            Bit::Constant(v) | Bit::Is(v) => v,
            Bit::Not(v) => !v,
        }
    }

    fn is_constant(self) -> bool {
        matches!(self, Bit::Constant(_))
    }

    fn not(self) -> Bit {
        match self {
            Bit::Constant(v) => Bit::Constant(!v),
            Bit::Is(v) => Bit::Not(v),
            Bit::Not(v) => Bit::Is(v),
        }
    }
}

/// bellpepper's `UInt32`: 32 bits, least significant first, and their value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Word {
    bits: [Bit; 32],
    value: u32,
}

impl Word {
    pub fn constant(value: u32) -> Word {
        Word {
            bits: std::array::from_fn(|i| Bit::Constant((value >> i) & 1 == 1)),
            value,
        }
    }

    /// A word whose every bit is an allocated variable (a sum's, `addmany`).
    fn allocated(value: u32) -> Word {
        Word {
            bits: std::array::from_fn(|i| Bit::Is((value >> i) & 1 == 1)),
            value,
        }
    }

    fn from_bits_le(bits: [Bit; 32]) -> Word {
        let value = bits.iter().rev().fold(0, |acc, bit| (acc << 1) | u32::from(bit.value()));
        Word { bits, value }
    }

    fn from_bits_be(bits: &[Bit]) -> Word {
        Word::from_bits_le(std::array::from_fn(|i| bits[31 - i]))
    }

    /// Most significant bit first (`UInt32::into_bits_be`).
    pub fn bits_be(&self) -> impl Iterator<Item = Bit> + '_ {
        self.bits.iter().rev().copied()
    }

    fn rotr(&self, by: usize) -> Word {
        Word {
            bits: std::array::from_fn(|i| self.bits[(i + by) % 32]),
            value: self.value.rotate_right(by as u32),
        }
    }

    fn shr(&self, by: usize) -> Word {
        Word {
            bits: std::array::from_fn(|i| self.bits.get(i + by).copied().unwrap_or(Bit::Constant(false))),
            value: self.value >> by,
        }
    }
}

/// The gadget's output bits (big-endian words, `into_bits_be`) as gadget bits, for the gadgets
/// that consume a digest (packing it into a number).
pub fn to_booleans(bits: impl Iterator<Item = Bit>) -> Result<Vec<Boolean>, SynthesisError> {
    let mut scratch = WitnessCs::part(None);
    bits.map(|bit| bit.to_boolean(&mut scratch)).collect()
}

/// SHA-256's initial state.
pub const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// bellpepper's `sha256`: `input` padded (the padding is constants), its blocks compressed from
/// the IV (constants). Returns the digest's words.
pub fn sha256(cs: &mut WitnessCs, input: &[Bit]) -> Result<[Word; 8], SynthesisError> {
    let blocks = Blocks::of(input);
    let mut digest = blocks.states[0];
    for k in 0..blocks.count() {
        digest = blocks.compress(cs, k)?;
    }
    Ok(digest)
}

/// The blocks of `sha256(input)` with the state each is compressed from, computed natively
/// first, so that each block's compression (≈ 27k variables) can be made in a part of its own,
/// on a core of its own: the parts in block order are `sha256`'s witness. A message's blocks
/// are otherwise compressed one after another (a 2KiB PoRep label's 20 blocks were the
/// partition's longest task).
pub struct Blocks {
    /// The padded message.
    padded: Vec<Bit>,
    /// The state block k is compressed from (the IV's constants first); the last is the digest.
    states: Vec<[Word; 8]>,
}

impl Blocks {
    pub fn of(input: &[Bit]) -> Blocks {
        assert!(input.len() % 8 == 0, "SHA-256 of a whole number of bytes");
        let mut padded = input.to_vec();
        padded.push(Bit::Constant(true));
        padded.resize((padded.len() + 64).next_multiple_of(512) - 64, Bit::Constant(false));
        padded.extend((0..64).rev().map(|i| Bit::Constant(((input.len() as u64) >> i) & 1 == 1)));
        let mut states = vec![IV.map(Word::constant)];
        for block in padded.chunks(512) {
            let state = states[states.len() - 1];
            let mut values = state.map(|w| w.value);
            let bytes: Vec<u8> = block
                .chunks(8)
                .map(|byte| byte.iter().fold(0, |acc, bit| (acc << 1) | u8::from(bit.value())))
                .collect();
            sha2::compress256(&mut values, &[*sha2::digest::generic_array::GenericArray::from_slice(&bytes)]);
            // The gadget's output words are sums: constants when every operand is, which only
            // an all-constant block and state give; else every bit is allocated.
            let constant = block.iter().chain(state.iter().flat_map(|w| &w.bits)).all(|b| b.is_constant());
            states.push(values.map(|v| if constant { Word::constant(v) } else { Word::allocated(v) }));
        }
        Blocks { padded, states }
    }

    /// How many blocks the padded message has.
    pub fn count(&self) -> usize {
        self.states.len() - 1
    }

    /// Block k's compression (`compression`), written into `cs`; its output, the state block
    /// k + 1 is compressed from.
    pub fn compress(&self, cs: &mut WitnessCs, k: usize) -> Result<[Word; 8], SynthesisError> {
        let out = compression(cs, &self.padded[512 * k..512 * (k + 1)], &self.states[k])?;
        debug_assert_eq!(out, self.states[k + 1], "block {k}'s compression differs from the native state");
        Ok(out)
    }

    /// The digest's words, as the last block's compression outputs them.
    pub fn digest(&self) -> &[Word; 8] {
        &self.states[self.count()]
    }
}

/// bellpepper's `sha256_compression_function` of one 512-bit block from `state`.
pub fn compression(cs: &mut WitnessCs, block: &[Bit], state: &[Word; 8]) -> Result<[Word; 8], SynthesisError> {
    assert_eq!(block.len(), 512);
    let mut gadget = Gadget { cs, multieq_bits: 0 };
    let c = &mut gadget;

    let mut w: Vec<Word> = block.chunks(32).map(Word::from_bits_be).collect();
    for i in 16..64 {
        let s0 = c.xor(&w[i - 15].rotr(7), &w[i - 15].rotr(18))?;
        let s0 = c.xor(&s0, &w[i - 15].shr(3))?;
        let s1 = c.xor(&w[i - 2].rotr(17), &w[i - 2].rotr(19))?;
        let s1 = c.xor(&s1, &w[i - 2].shr(10))?;
        let wi = c.addmany(&[w[i - 16], s0, w[i - 7], s1])?;
        w.push(wi);
    }

    let (mut a, mut b, mut cc, mut d) = (Sum::Done(state[0]), state[1], state[2], state[3]);
    let (mut e, mut f, mut g, mut h) = (Sum::Done(state[4]), state[5], state[6], state[7]);
    for i in 0..64 {
        let new_e = e.compute(c, &[])?;
        let s1 = c.xor(&new_e.rotr(6), &new_e.rotr(11))?;
        let s1 = c.xor(&s1, &new_e.rotr(25))?;
        let ch = c.word3(&new_e, &f, &g, Gadget::ch)?;
        let temp1 = [h, s1, ch, Word::constant(ROUND_CONSTANTS[i]), w[i]];

        let new_a = a.compute(c, &[])?;
        let s0 = c.xor(&new_a.rotr(2), &new_a.rotr(13))?;
        let s0 = c.xor(&s0, &new_a.rotr(22))?;
        let maj = c.word3(&new_a, &b, &cc, Gadget::maj)?;

        h = g;
        g = f;
        f = new_e;
        e = Sum::Deferred([&temp1[..], &[d]].concat());
        d = cc;
        cc = b;
        b = new_a;
        a = Sum::Deferred([&temp1[..], &[s0, maj]].concat());
    }

    let out = [
        a.compute(c, &[state[0]])?,
        c.addmany(&[state[1], b])?,
        c.addmany(&[state[2], cc])?,
        c.addmany(&[state[3], d])?,
        e.compute(c, &[state[4]])?,
        c.addmany(&[state[5], f])?,
        c.addmany(&[state[6], g])?,
        c.addmany(&[state[7], h])?,
    ];
    gadget.finish();
    Ok(out)
}

/// The compression function's `Maybe`: a word, or the operands of an addition not made yet
/// (the gadget adds `a` and `e` only when a later round or the final sum reads them).
enum Sum {
    Done(Word),
    Deferred(Vec<Word>),
}

impl Sum {
    fn compute(self, gadget: &mut Gadget, others: &[Word]) -> Result<Word, SynthesisError> {
        match self {
            Sum::Done(word) => Ok(word),
            Sum::Deferred(mut operands) => {
                operands.extend_from_slice(others);
                gadget.addmany(&operands)
            }
        }
    }
}

/// The gadget's operations on one compression's system. `multieq_bits` is its `MultiEq`'s
/// packing state: additions' equalities share a constraint until a field element is full.
struct Gadget<'a> {
    cs: &'a mut WitnessCs,
    multieq_bits: usize,
}

impl Gadget<'_> {
    /// Every variable these gadgets allocate comes with one constraint (a booleanity check or
    /// the gate that computes it).
    fn new_bit(&mut self, value: bool) -> Result<bool, SynthesisError> {
        self.cs.alloc_constrained_bit(value)?;
        Ok(value)
    }

    /// `Boolean::xor`.
    fn xor_bit(&mut self, a: Bit, b: Bit) -> Result<Bit, SynthesisError> {
        Ok(match (a, b) {
            (Bit::Constant(false), x) | (x, Bit::Constant(false)) => x,
            (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x.not(),
            // The negated operand is used as is and the result negated.
            (Bit::Is(_), Bit::Not(_)) | (Bit::Not(_), Bit::Is(_)) => Bit::Not(self.new_bit(!(a.value() ^ b.value()))?),
            (Bit::Is(_), Bit::Is(_)) | (Bit::Not(_), Bit::Not(_)) => Bit::Is(self.new_bit(a.value() ^ b.value())?),
        })
    }

    /// `Boolean::and` (its `and`, `and_not` and `nor` all allocate the result's value).
    fn and(&mut self, a: Bit, b: Bit) -> Result<Bit, SynthesisError> {
        Ok(match (a, b) {
            (Bit::Constant(false), _) | (_, Bit::Constant(false)) => Bit::Constant(false),
            (Bit::Constant(true), x) | (x, Bit::Constant(true)) => x,
            _ => Bit::Is(self.new_bit(a.value() & b.value())?),
        })
    }

    /// `Boolean::sha256_ch`.
    fn ch(&mut self, a: Bit, b: Bit, c: Bit) -> Result<Bit, SynthesisError> {
        let value = (a.value() & b.value()) ^ (!a.value() & c.value());
        Ok(match (a, b, c) {
            (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(value),
            (Bit::Constant(false), _, c) => c,
            (a, Bit::Constant(false), c) => self.and(a.not(), c)?,
            (a, b, Bit::Constant(false)) => self.and(a, b)?,
            (a, b, Bit::Constant(true)) => self.and(a, b.not())?.not(),
            (a, Bit::Constant(true), c) => self.and(a.not(), c.not())?.not(),
            _ => Bit::Is(self.new_bit(value)?),
        })
    }

    /// `Boolean::sha256_maj`.
    fn maj(&mut self, a: Bit, b: Bit, c: Bit) -> Result<Bit, SynthesisError> {
        let value = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
        Ok(match (a, b, c) {
            (Bit::Constant(_), Bit::Constant(_), Bit::Constant(_)) => Bit::Constant(value),
            (Bit::Constant(false), b, c) => self.and(b, c)?,
            (a, Bit::Constant(false), c) => self.and(a, c)?,
            (a, b, Bit::Constant(false)) => self.and(a, b)?,
            (a, b, Bit::Constant(true)) => self.and(a.not(), b.not())?.not(),
            (a, Bit::Constant(true), c) => self.and(a.not(), c.not())?.not(),
            (Bit::Constant(true), b, c) => self.and(b.not(), c.not())?.not(),
            // The majority's variable, then b AND c's (its gate uses both).
            _ => {
                let maj = self.new_bit(value)?;
                self.and(b, c)?;
                Bit::Is(maj)
            }
        })
    }

    /// `UInt32::xor`, bit 0 first.
    fn xor(&mut self, a: &Word, b: &Word) -> Result<Word, SynthesisError> {
        let mut bits = [Bit::Constant(false); 32];
        for (i, bit) in bits.iter_mut().enumerate() {
            *bit = self.xor_bit(a.bits[i], b.bits[i])?;
        }
        Ok(Word {
            bits,
            value: a.value ^ b.value,
        })
    }

    /// `UInt32::sha256_ch` / `sha256_maj`: `op` bit by bit, bit 0 first.
    fn word3(
        &mut self,
        a: &Word,
        b: &Word,
        c: &Word,
        op: fn(&mut Self, Bit, Bit, Bit) -> Result<Bit, SynthesisError>,
    ) -> Result<Word, SynthesisError> {
        let mut bits = [Bit::Constant(false); 32];
        for (i, bit) in bits.iter_mut().enumerate() {
            *bit = op(self, a.bits[i], b.bits[i], c.bits[i])?;
        }
        Ok(Word::from_bits_le(bits))
    }

    /// `UInt32::addmany`: a sum of constants is a constant; otherwise every bit of the sum up
    /// to the largest possible one is allocated (33 to 35 bits), the low 32 kept, and the
    /// equality goes to the `MultiEq`.
    fn addmany(&mut self, operands: &[Word]) -> Result<Word, SynthesisError> {
        let sum: u64 = operands.iter().map(|w| u64::from(w.value)).sum();
        if operands.iter().all(|w| w.bits.iter().all(|b| b.is_constant())) {
            return Ok(Word::constant(sum as u32));
        }
        let max_sum = operands.len() as u64 * u64::from(u32::MAX);
        let sum_bits = (u64::BITS - max_sum.leading_zeros()) as usize;
        let mut bits = [Bit::Constant(false); 32];
        // Every bit of the sum is allocated; the word keeps the low 32.
        for i in 0..sum_bits {
            let bit = Bit::Is(self.new_bit((sum >> i) & 1 == 1)?);
            if let Some(slot) = bits.get_mut(i) {
                *slot = bit;
            }
        }
        self.multieq_equal(sum_bits);
        Ok(Word { bits, value: sum as u32 })
    }

    /// `MultiEq::enforce_equal` of a `bits`-bit equality: a new constraint once the packed
    /// ones would not fit in a field element.
    fn multieq_equal(&mut self, bits: usize) {
        if Scalar::CAPACITY as usize <= self.multieq_bits + bits {
            self.cs.count_constraints(1);
            self.multieq_bits = 0;
        }
        self.multieq_bits += bits;
    }

    /// `MultiEq`'s drop: the last, partly filled constraint.
    fn finish(self) {
        if self.multieq_bits > 0 {
            self.cs.count_constraints(1);
        }
    }
}

/// filecoin-hashers' SHA-256 `hash_multi_leaf_circuit` (and `hash2_circuit`, the same for two
/// leaves), its hash computed natively: the
/// leaves' bits (little-endian, padded to whole bytes, each byte's bits reversed), their
/// SHA-256, and the digest's first 254 bits (each byte's bits reversed) packed into a number.
pub(crate) fn hash_multi_leaf(cs: &mut WitnessCs, leaves: &[AllocatedNum<Scalar>]) -> Result<AllocatedNum<Scalar>, SynthesisError> {
    let mut input = Vec::new();
    for leaf in leaves {
        let mut bits = leaf.to_bits_le(&mut *cs)?;
        bits.resize(bits.len().next_multiple_of(8), Boolean::Constant(false));
        for bit in bits.chunks_exact(8).flat_map(|byte| byte.iter().rev()) {
            input.push(Bit::of(bit)?);
        }
    }
    let digest: Vec<Bit> = sha256(cs, &input)?.iter().flat_map(Word::bits_be).collect();
    let bits = to_booleans(
        digest
            .chunks(8)
            .flat_map(|byte| byte.iter().rev().copied())
            .take(Scalar::CAPACITY as usize),
    )?;
    multipack::pack_bits(cs, &bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellperson::gadgets::sha256::{sha256 as gadget_sha256, sha256_compression_function};
    use bellperson::gadgets::uint32::UInt32;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use sha2::Digest;

    /// A random bit of a random kind; `constants` is the chance of a constant.
    fn random_bit(rng: &mut impl Rng, constants: f64) -> Bit {
        let value = rng.gen();
        match rng.gen_bool(constants) {
            true => Bit::Constant(value),
            false if rng.gen_bool(0.5) => Bit::Is(value),
            false => Bit::Not(value),
        }
    }

    /// The gadget's bits for `bits`: their variables allocated in the gadget's system and, so
    /// that the two line up, in ours.
    fn gadget_bits(bits: impl Iterator<Item = Bit>, theirs: &mut WitnessCs, ours: &mut WitnessCs) -> Vec<Boolean> {
        bits.map(|bit| {
            if let Bit::Is(v) | Bit::Not(v) = bit {
                ours.alloc_constrained_bit(v).unwrap();
            }
            bit.to_boolean(theirs).unwrap()
        })
        .collect()
    }

    #[test]
    fn compression_matches_the_gadget_for_every_mix_of_bit_kinds() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for (round, constants) in [0.0, 0.1, 0.5, 0.9, 1.0, 0.3, 0.7, 0.02].into_iter().enumerate() {
            let block: Vec<Bit> = (0..512).map(|_| random_bit(&mut rng, constants)).collect();
            // The IV as constants (a first block), allocated words (later blocks), random mixes.
            let state: [Word; 8] = match round % 3 {
                0 => IV.map(Word::constant),
                1 => std::array::from_fn(|_| Word::from_bits_le(std::array::from_fn(|_| Bit::Is(rng.gen())))),
                _ => std::array::from_fn(|_| Word::from_bits_le(std::array::from_fn(|_| random_bit(&mut rng, constants)))),
            };
            let (mut theirs, mut ours) = (WitnessCs::whole(None), WitnessCs::whole(None));
            let gadget_block = gadget_bits(block.iter().copied(), &mut theirs, &mut ours);
            let gadget_state: Vec<UInt32> = state
                .iter()
                .map(|w| UInt32::from_bits_be(&gadget_bits(w.bits_be(), &mut theirs, &mut ours)))
                .collect();
            let their_out = sha256_compression_function(&mut theirs, &gadget_block, &gadget_state).unwrap();
            let our_out = compression(&mut ours, &block, &state).unwrap();
            let their_bits: Vec<Bit> = their_out
                .into_iter()
                .flat_map(UInt32::into_bits_be)
                .map(|b| Bit::of(&b).unwrap())
                .collect();
            let our_bits: Vec<Bit> = our_out.iter().flat_map(Word::bits_be).collect();
            assert_eq!(our_bits, their_bits, "constants {constants}: digest bits and kinds");
            assert!(
                ours.into_witness() == theirs.into_witness(),
                "constants {constants}: variables or constraint count differ"
            );
        }
    }

    /// The native states of `Blocks` are the compressions' outputs, value and kind, for
    /// messages of every mix of bit kinds (all constants included) and several blocks; the
    /// blocks made apart, in order, are `sha256`'s witness.
    #[test]
    fn blocks_made_apart_are_sha256() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        for (bytes, constants) in [(0, 0.0), (64, 1.0), (130, 0.5), (1248, 0.1), (200, 0.98)] {
            let message: Vec<Bit> = (0..bytes * 8).map(|_| random_bit(&mut rng, constants)).collect();
            let blocks = Blocks::of(&message);
            let mut whole = WitnessCs::whole(None);
            let digest = sha256(&mut whole, &message).unwrap();
            assert_eq!(&digest, blocks.digest(), "{bytes} bytes, constants {constants}");
            let mut apart = WitnessCs::whole(None);
            let parts: Vec<WitnessCs> = (0..blocks.count())
                .map(|k| {
                    let mut part = WitnessCs::part(None);
                    let out = blocks.compress(&mut part, k).unwrap();
                    assert_eq!(out, blocks.states[k + 1], "{bytes} bytes, block {k}");
                    part
                })
                .collect();
            apart.append_all(parts);
            assert!(apart.into_witness() == whole.into_witness(), "{bytes} bytes: parts differ from the whole");
        }
    }

    #[test]
    fn sha256_matches_the_gadget_and_the_hash() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for bytes in [0, 1, 55, 56, 64, 100, 156] {
            let message: Vec<Bit> = (0..bytes * 8).map(|_| random_bit(&mut rng, 0.2)).collect();
            let (mut theirs, mut ours) = (WitnessCs::whole(None), WitnessCs::whole(None));
            let gadget_message = gadget_bits(message.iter().copied(), &mut theirs, &mut ours);
            let their_bits: Vec<Bit> = gadget_sha256(&mut theirs, &gadget_message)
                .unwrap()
                .iter()
                .map(|b| Bit::of(b).unwrap())
                .collect();
            let digest = sha256(&mut ours, &message).unwrap();
            let our_bits: Vec<Bit> = digest.iter().flat_map(Word::bits_be).collect();
            assert_eq!(our_bits, their_bits, "{bytes} bytes");
            assert!(
                ours.into_witness() == theirs.into_witness(),
                "{bytes} bytes: variables or constraint count differ"
            );
            // And it is SHA-256.
            let bytes: Vec<u8> = message
                .chunks(8)
                .map(|byte| byte.iter().fold(0, |acc, bit| (acc << 1) | u8::from(bit.value())))
                .collect();
            let expected: Vec<u32> = sha2::Sha256::digest(&bytes)
                .chunks(4)
                .map(|w| u32::from_be_bytes(w.try_into().unwrap()))
                .collect();
            assert_eq!(digest.map(|w| w.value).to_vec(), expected, "{} bytes", bytes.len());
        }
    }
}
