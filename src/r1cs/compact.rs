//! The witness as it crosses PCIe to a GPU that evaluates A·z, B·z, C·z itself: a 2-bit kind
//! per value (0, 1 or full-width) plus the full-width values in order. A PoRep witness is
//! ~97 % zeros and ones, so this is ~1/20 of its 32 bytes a value (32GiB partition: ≈ 170 MB
//! instead of 4.2 GB). The layout is `cuzk_gpu_witness`'s (cuda/cuzk_gpu.h).

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::matrix::Assignment;
use crate::error::{Error, Result};

/// Values per kinds word.
const PER_WORD: usize = 32;
/// Words per rayon task: ~1 µs per word, so that scheduling stays negligible.
const WORDS_PER_TASK: usize = 1 << 10;

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
    /// Encodes z on all cores. Fails when z has 2^32 or more values (offsets are 32-bit).
    pub fn encode(z: Assignment<'_>) -> Result<Self> {
        let len = z.len();
        if u32::try_from(len).is_err() {
            return Err(Error::invalid(format!("a witness of {len} values is too long for the GPU's 32-bit offsets")));
        }
        let word_values = |w: usize| (w * PER_WORD..len.min((w + 1) * PER_WORD)).map(move |i| z.get(i as u32));
        let words = len.div_ceil(PER_WORD);
        let (kinds, full_counts): (Vec<u64>, Vec<u32>) = (0..words)
            .into_par_iter()
            .with_min_len(WORDS_PER_TASK)
            .map(|w| {
                word_values(w).enumerate().fold((0u64, 0u32), |(word, full), (slot, value)| {
                    let k = kind(&value);
                    (word | (k as u64) << (2 * slot), full + u32::from(k == Kind::Full))
                })
            })
            .unzip();
        let full_offsets = full_counts
            .iter()
            .scan(0u32, |before, &n| {
                let offset = *before;
                *before += n;
                Some(offset)
            })
            .collect();
        let full = (0..words)
            .into_par_iter()
            .with_min_len(WORDS_PER_TASK)
            .flat_map_iter(|w| word_values(w).filter(|v| kind(v) == Kind::Full))
            .collect();
        Ok(CompactWitness { kinds, full_offsets, full, len })
    }

    /// Host bytes of the encoding: what crosses PCIe.
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
                        // Full values before this one in its word: kind 2 sets the high bit of its pair.
                        let below = word & ((1u64 << (2 * slot)) - 1);
                        let rank = (below & 0xAAAA_AAAA_AAAA_AAAA).count_ones();
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
        for (inputs, aux) in [(1usize, 0usize), (3, 29), (1, 32), (40, 1000), (2, 4099)] {
            let value = |i: usize| match i % 7 {
                0 | 3 => Scalar::ZERO,
                1 | 4 | 5 => Scalar::ONE,
                2 => Scalar::from(i as u64 + 2),
                _ => -Scalar::from(i as u64),
            };
            let z: Vec<Scalar> = (0..inputs + aux).map(value).collect();
            let (input_part, aux_part) = z.split_at(inputs);
            let compact = CompactWitness::encode(Assignment { inputs: input_part, aux: aux_part }).unwrap();
            assert_eq!(compact.decode(), z, "{inputs} inputs, {aux} aux");
            let full = z.iter().filter(|v| kind(v) == Kind::Full).count();
            assert_eq!(compact.full.len(), full);
            assert_eq!(compact.size_bytes(), 12 * z.len().div_ceil(32) + 32 * full);
        }
    }
}
