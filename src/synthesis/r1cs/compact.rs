//! The witness as it crosses PCIe to a GPU that evaluates A·z, B·z, C·z itself: a 2-bit kind
//! per value (0, 1 or full-width) plus the full-width values in order. A PoRep witness is
//! ~97 % zeros and ones, so this is ~1/20 of its 32 bytes a value (32GiB partition: ≈ 170 MB
//! instead of 4.2 GB). The layout is `cuzk_gpu_witness`'s (cuda/cuzk_gpu.h).

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::matrix::Assignment;
use crate::error::{Error, Result};
use crate::parallel::extend_parallel;

/// Values per kinds word.
const PER_WORD: usize = 32;
/// The high bit of every 2-bit kind in a word: set only by kind 2 (full-width).
const FULL_BITS: u64 = 0xAAAA_AAAA_AAAA_AAAA;
/// Words per rayon task (131 072 values): setting a word's kinds takes nanoseconds.
const WORDS_PER_TASK: usize = 1 << 12;

#[repr(u64)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Zero = 0,
    One = 1,
    Full = 2,
}

fn kind(value: &Scalar) -> Kind {
    if value.is_zero_vartime() {
        Kind::Zero
    } else if *value == Scalar::ONE {
        Kind::One
    } else {
        Kind::Full
    }
}

/// z's length, refused from 2^32 values on (the offsets are 32-bit).
fn checked_len(z: &Assignment<'_>) -> Result<usize> {
    let len = z.len();
    if u32::try_from(len).is_err() {
        return Err(Error::invalid(format!(
            "a witness of {len} values is too long for the GPU's 32-bit offsets"
        )));
    }
    Ok(len)
}

/// z = (inputs..., aux...) compactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactWitness {
    /// Value i's kind is bits 2(i % 32).. of word i / 32.
    pub kinds: Vec<u64>,
    /// Full-width values before each word.
    pub full_offsets: Vec<u32>,
    /// The full-width values, in order (Montgomery form, as `Scalar` holds them).
    pub full: Vec<Scalar>,
    pub len: usize,
}

impl CompactWitness {
    /// Encodes z from its aux values' kinds as prep_msm found them (`aux_ones`, `aux_full`:
    /// ascending aux indices of the values 1 and of the full-width values; the rest are 0),
    /// on all cores: it reads only the full-width values of the 4.2 GB of a 32GiB partition's
    /// aux scalars, not all of them again. Fails when z has 2^32 or more values (offsets are
    /// 32-bit).
    pub fn encode(z: Assignment<'_>, aux_ones: &[u32], aux_full: &[u32]) -> Result<Self> {
        let len = checked_len(&z)?;
        let inputs = z.inputs.len();
        let mut kinds = vec![0u64; len.div_ceil(PER_WORD)];
        for (i, value) in z.inputs.iter().enumerate() {
            kinds[i / PER_WORD] |= (kind(value) as u64) << (2 * (i % PER_WORD));
        }
        // Each task owns its words and sets the kinds of the aux indices that fall in them.
        kinds.par_chunks_mut(WORDS_PER_TASK).enumerate().for_each(|(task, words)| {
            let first_word = task * WORDS_PER_TASK;
            let aux_index = |word: usize| (word * PER_WORD).saturating_sub(inputs) as u32;
            let aux_range = aux_index(first_word)..aux_index(first_word + words.len());
            for (indices, kind) in [(aux_ones, Kind::One), (aux_full, Kind::Full)] {
                let from = indices.partition_point(|&i| i < aux_range.start);
                let to = indices.partition_point(|&i| i < aux_range.end);
                for &i in &indices[from..to] {
                    let v = inputs + i as usize;
                    words[v / PER_WORD - first_word] |= (kind as u64) << (2 * (v % PER_WORD));
                }
            }
        });
        let mut full: Vec<Scalar> = z.inputs.iter().filter(|v| kind(v) == Kind::Full).copied().collect();
        full.par_extend(aux_full.par_iter().map(|&i| z.aux[i as usize]));
        Ok(Self::with_kinds(kinds, full, len))
    }

    /// Encodes z from its values alone, in one pass on all cores: for a backend that finds the
    /// scalars' classes on the device (the host finds each value's kind, nothing more). Fails as
    /// [`Self::encode`].
    pub fn from_values(z: Assignment<'_>) -> Result<Self> {
        let len = checked_len(&z)?;
        let inputs = z.inputs.len();
        let value = |v: usize| if v < inputs { &z.inputs[v] } else { &z.aux[v - inputs] };
        let mut kinds = vec![0u64; len.div_ceil(PER_WORD)];
        // Each task owns its words, and finds the full-width values among theirs, in order.
        let parts: Vec<Vec<Scalar>> = kinds
            .par_chunks_mut(WORDS_PER_TASK)
            .enumerate()
            .map(|(task, words)| {
                let mut full = Vec::new();
                for (w, word) in words.iter_mut().enumerate() {
                    let first = (task * WORDS_PER_TASK + w) * PER_WORD;
                    for v in first..len.min(first + PER_WORD) {
                        let k = kind(value(v));
                        *word |= (k as u64) << (2 * (v % PER_WORD));
                        if k == Kind::Full {
                            full.push(*value(v));
                        }
                    }
                }
                full
            })
            .collect();
        let mut full = Vec::new();
        extend_parallel(&mut full, &parts.iter().map(Vec::as_slice).collect::<Vec<_>>());
        Ok(Self::with_kinds(kinds, full, len))
    }

    fn with_kinds(kinds: Vec<u64>, full: Vec<Scalar>, len: usize) -> Self {
        let full_offsets = kinds
            .iter()
            .scan(0u32, |before, &word| {
                let offset = *before;
                *before += (word & FULL_BITS).count_ones();
                Some(offset)
            })
            .collect();
        CompactWitness {
            kinds,
            full_offsets,
            full,
            len,
        }
    }

    /// How many values are 1.
    pub fn count_ones(&self) -> u64 {
        // Kind 1 is the only one whose low bit is set.
        self.kinds.iter().map(|word| u64::from((word & !FULL_BITS).count_ones())).sum()
    }

    /// The most host bytes the encoding of `len` values takes (every value full-width).
    pub fn max_bytes(len: u64) -> u64 {
        8 * len.div_ceil(32) + 4 * len.div_ceil(32) + 32 * len
    }

    /// Host bytes of the encoding: what crosses PCIe.
    #[cfg(any(test, feature = "internals"))]
    pub fn size_bytes(&self) -> usize {
        8 * self.kinds.len() + 4 * self.full_offsets.len() + 32 * self.full.len()
    }

    /// z again, as the device decodes it (the GPU backend's host fallback when the matrices
    /// do not fit the device).
    pub fn decode(&self) -> Vec<Scalar> {
        (0..self.len)
            .map(|i| {
                let word = self.kinds[i / PER_WORD];
                let slot = i % PER_WORD;
                match (word >> (2 * slot)) & 3 {
                    0 => Scalar::ZERO,
                    1 => Scalar::ONE,
                    _ => {
                        // Full values before this one in its word.
                        let below = word & ((1u64 << (2 * slot)) - 1);
                        let rank = (below & FULL_BITS).count_ones();
                        self.full[(self.full_offsets[i / PER_WORD] + rank) as usize]
                    }
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_roundtrips_and_is_compact() {
        for (inputs, aux) in [(1usize, 0usize), (3, 29), (1, 32), (40, 1000), (2, 4099), (5, 300_000)] {
            let value = |i: usize| match i % 7 {
                0 | 3 => Scalar::ZERO,
                1 | 4 | 5 => Scalar::ONE,
                2 => Scalar::from(i as u64 + 2),
                _ => -Scalar::from(i as u64),
            };
            let z: Vec<Scalar> = (0..inputs + aux).map(value).collect();
            let (input_part, aux_part) = z.split_at(inputs);
            let aux_of = |k: Kind| (0..aux as u32).filter(|&i| kind(&aux_part[i as usize]) == k).collect::<Vec<_>>();
            let compact = CompactWitness::encode(
                Assignment {
                    inputs: input_part,
                    aux: aux_part,
                },
                &aux_of(Kind::One),
                &aux_of(Kind::Full),
            )
            .unwrap();
            assert_eq!(compact.decode(), z, "{inputs} inputs, {aux} aux");
            let from_values = CompactWitness::from_values(Assignment {
                inputs: input_part,
                aux: aux_part,
            })
            .unwrap();
            assert_eq!(from_values, compact, "{inputs} inputs, {aux} aux: from the values alone");
            assert_eq!(compact.count_ones(), z.iter().filter(|v| kind(v) == Kind::One).count() as u64);
            let full = z.iter().filter(|v| kind(v) == Kind::Full).count();
            assert_eq!(compact.full.len(), full);
            assert_eq!(compact.size_bytes(), 12 * z.len().div_ceil(32) + 32 * full);
        }
    }
}
