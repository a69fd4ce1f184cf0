//! prep_msm, shared by the backends: the witness scalars of each query sorted into zero (skip),
//! one (batch addition) and full-width (the tail MSM). A PoRep witness is ~50 % zeros, ~47 %
//! ones and ~3 % full-width, so the tail MSMs are ~30× smaller than the queries.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::groth16::QueryLayout;
use crate::synthesis::Density;

/// The scalars of one MSM sorted into the three classes.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct ClassifiedScalars {
    /// Indices (into the query's points) whose scalar is 1.
    pub ones: Vec<u32>,
    /// Indices and canonical little-endian bytes of the other non-zero scalars.
    pub tail_indices: Vec<u32>,
    pub tail_scalars: Vec<[u8; 32]>,
}

impl ClassifiedScalars {
    /// Classifies `scalars[i]` for the i that `selected` keeps; the k-th kept scalar belongs to
    /// point `first_point + k` (the layout of density-filtered A and B queries). In parallel:
    /// each chunk learns its first point from the kept counts of the chunks before it.
    fn append(&mut self, scalars: &[Scalar], selected: impl Fn(usize) -> bool + Sync, first_point: u32) {
        const CHUNK: usize = 1 << 16;
        let kept: Vec<u32> = scalars
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(k, chunk)| (k * CHUNK..k * CHUNK + chunk.len()).filter(|&i| selected(i)).count() as u32)
            .collect();
        let firsts: Vec<u32> = kept.iter().scan(first_point, |next, &n| Some(std::mem::replace(next, *next + n))).collect();
        let parts: Vec<ClassifiedScalars> = scalars
            .par_chunks(CHUNK)
            .zip(firsts.par_iter())
            .enumerate()
            .map(|(k, (chunk, &first))| {
                let mut part = ClassifiedScalars::default();
                part.append_chunk(chunk, |i| selected(k * CHUNK + i), first);
                part
            })
            .collect();
        for mut part in parts {
            self.ones.append(&mut part.ones);
            self.tail_indices.append(&mut part.tail_indices);
            self.tail_scalars.append(&mut part.tail_scalars);
        }
    }

    fn append_chunk(&mut self, scalars: &[Scalar], selected: impl Fn(usize) -> bool, first_point: u32) {
        let mut point = first_point;
        for (i, s) in scalars.iter().enumerate() {
            if !selected(i) {
                continue;
            }
            if *s == Scalar::ONE {
                self.ones.push(point);
            } else if !bool::from(s.is_zero()) {
                self.tail_indices.push(point);
                self.tail_scalars.push(s.to_repr());
            }
            point += 1;
        }
    }

    /// Classifies every scalar: scalar i belongs to point i (the full-density L and H queries).
    pub fn all(scalars: &[Scalar]) -> Self {
        let mut out = Self::default();
        out.append(scalars, |_| true, 0);
        out
    }

    /// Moves the 1-scalars into the tail (as full-width scalars equal to 1): for a backend
    /// whose batch addition costs a pass over every point of the query, that pass does not pay
    /// when few scalars are 1. The sum is the same either way.
    pub fn fold_ones_into_tail(&mut self) {
        let one = Scalar::ONE.to_repr();
        self.tail_scalars.extend(std::iter::repeat(one).take(self.ones.len()));
        self.tail_indices.append(&mut self.ones);
    }

    /// One bit per point of a query of `npoints`, set where the scalar is 1 (bit i in word i/32).
    pub fn ones_bitmap(&self, npoints: usize) -> Vec<u32> {
        let mut bitmap = vec![0u32; npoints.div_ceil(32)];
        for &i in &self.ones {
            bitmap[i as usize / 32] |= 1 << (i % 32);
        }
        bitmap
    }
}

/// The classified scalars of the witness MSMs of one circuit. B_G1 and B_G2 share theirs: same
/// variables, same densities.
#[derive(Debug)]
pub struct PreparedMsms {
    pub l: ClassifiedScalars,
    pub a: ClassifiedScalars,
    pub b: ClassifiedScalars,
}

impl PreparedMsms {
    /// A's points are all inputs, then the aux variables in A; B's are the inputs in B, then
    /// the aux variables in B (bellperson's query layout, see [`QueryLayout`]).
    pub fn new(
        layout: &QueryLayout,
        inputs: &[Scalar],
        aux: &[Scalar],
        a_aux_density: &Density,
        b_input_density: &Density,
        b_aux_density: &Density,
    ) -> Self {
        let a = || {
            let mut a = ClassifiedScalars::default();
            a.append(inputs, |_| true, 0);
            a.append(aux, |i| a_aux_density.get(i), layout.num_inputs as u32);
            a
        };
        let b = || {
            let mut b = ClassifiedScalars::default();
            b.append(inputs, |i| b_input_density.get(i), 0);
            b.append(aux, |i| b_aux_density.get(i), layout.b_inputs as u32);
            b
        };
        let (l, (a, b)) = rayon::join(|| ClassifiedScalars::all(aux), || rayon::join(a, b));
        PreparedMsms { l, a, b }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_chunks_classify_like_one_pass() {
        let values = [Scalar::ZERO, Scalar::ONE, Scalar::from(7u64), -Scalar::ONE];
        let scalars: Vec<Scalar> = (0..3 * (1 << 16) + 5).map(|i: usize| values[(i * 7919) % 4]).collect();
        let selected = |i: usize| i % 3 != 1;
        let mut parallel = ClassifiedScalars::default();
        parallel.append(&scalars, selected, 40);
        let mut sequential = ClassifiedScalars::default();
        sequential.append_chunk(&scalars, selected, 40);
        assert_eq!(parallel, sequential);
        assert!(!parallel.ones.is_empty() && !parallel.tail_indices.is_empty());
    }

    #[test]
    fn selected_scalars_map_to_consecutive_points_after_the_first() {
        let scalars = [Scalar::ONE, Scalar::from(5u64), Scalar::ONE, Scalar::ZERO, Scalar::from(9u64)];
        let mut classes = ClassifiedScalars::default();
        classes.append(&scalars, |i| i != 1, 10);
        assert_eq!(classes.ones, vec![10, 11]);
        assert_eq!(classes.tail_indices, vec![13]);
        assert_eq!(classes.tail_scalars, vec![Scalar::from(9u64).to_repr()]);
        let bitmap = classes.ones_bitmap(40);
        assert_eq!(bitmap, vec![0b11 << 10, 0]);

        classes.fold_ones_into_tail();
        assert!(classes.ones.is_empty());
        assert_eq!(classes.tail_indices, vec![13, 10, 11]);
        assert_eq!(classes.tail_scalars, vec![Scalar::from(9u64).to_repr(), Scalar::ONE.to_repr(), Scalar::ONE.to_repr()]);
    }
}
