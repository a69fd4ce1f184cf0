//! Which variables occur in the A and B queries: one bit per variable, set when the variable
//! appears with a non-zero coefficient. The densities select the points of the A and B queries
//! a variable's scalar is multiplied with.

/// One bit per variable: does the variable occur (with a non-zero coefficient) in a query?
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
}

impl Density {
    pub fn with_len(len: usize) -> Self {
        Density {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// The density of `len` variables whose bits are `words` (as [`Self::words`] gives them);
    /// None when they are not ⌈len / 64⌉ words or a bit past `len` is set.
    pub fn from_words(words: Vec<u64>, len: usize) -> Option<Self> {
        let tail_clear = match (len % 64, words.last()) {
            (0, _) | (_, None) => true,
            (bits, Some(last)) => last >> bits == 0,
        };
        (words.len() == len.div_ceil(64) && tail_clear).then_some(Density { words, len })
    }

    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Appends a variable that occurs in no constraint yet.
    pub(crate) fn push_unset(&mut self) {
        if self.len % 64 == 0 {
            self.words.push(0);
        }
        self.len += 1;
    }

    pub fn set(&mut self, index: usize) {
        debug_assert!(index < self.len);
        self.words[index / 64] |= 1 << (index % 64);
    }

    pub fn get(&self, index: usize) -> bool {
        self.words[index / 64] >> (index % 64) & 1 == 1
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Set bits among the variables of `range`, which starts at a multiple of 64.
    pub fn count_ones_in(&self, range: std::ops::Range<usize>) -> usize {
        assert!(range.start % 64 == 0 && range.end <= self.len, "{range:?} of {}", self.len);
        let whole = &self.words[range.start / 64..range.end / 64];
        let partial = match range.end % 64 {
            0 => 0,
            bits => (self.words[range.end / 64] & ((1u64 << bits) - 1)).count_ones(),
        };
        whole.iter().map(|w| w.count_ones() as usize).sum::<usize>() + partial as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_bits_roundtrip() {
        let mut d = Density::default();
        for _ in 0..130 {
            d.push_unset();
        }
        d.set(0);
        d.set(64);
        d.set(129);
        assert_eq!(d.len(), 130);
        assert_eq!(d.count_ones(), 3);
        assert!(d.get(64) && d.get(129) && !d.get(1) && !d.get(128));
    }
}
