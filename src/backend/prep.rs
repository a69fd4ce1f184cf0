//! prep_msm, shared by the backends: the witness scalars of each query sorted into zero (skip),
//! one (batch addition) and full-width (the tail MSM). A PoRep witness is ~50 % zeros, ~47 %
//! ones and ~3 % full-width, so the tail MSMs are ~30× smaller than the queries. A PoSt
//! witness is ~99 % full-width: its queries' scalars are kept dense (one per point) instead.

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::groth16::QueryLayout;
use crate::parallel::{extend_parallel, extend_selected};
use crate::synthesis::Density;

/// A non-zero scalar's class: None for 1, else its canonical little-endian bytes.
fn full_width(s: &Scalar) -> Option<[u8; 32]> {
    (*s != Scalar::ONE).then(|| s.to_repr())
}

/// The scalars of one MSM sorted into the three classes.
#[derive(Clone, Default, Debug, PartialEq, Eq)]
pub struct ClassifiedScalars {
    /// Indices (into the query's points) whose scalar is 1.
    pub ones: Vec<u32>,
    /// Indices and canonical little-endian bytes of the other non-zero scalars.
    pub tail_indices: Vec<u32>,
    pub tail_scalars: Vec<[u8; 32]>,
    /// The tail is dense: `tail_scalars[i]` is point i's scalar for every point of the query
    /// (zeros and ones included), `ones` and `tail_indices` are empty.
    pub dense: bool,
}

/// Scalars per parallel task; a multiple of 64, so that a task's density bits are whole words.
const CHUNK: usize = 1 << 16;

impl ClassifiedScalars {
    /// Sorts `s` (whose point is `point`) into its class.
    fn push(&mut self, point: u32, s: &Scalar) {
        if !s.is_zero_vartime() {
            self.push_nonzero(point, full_width(s));
        }
    }

    /// Adds a non-zero scalar: a one, or (`full`) a tail scalar in canonical form.
    fn push_nonzero(&mut self, point: u32, full: Option<[u8; 32]>) {
        match full {
            None => self.ones.push(point),
            Some(repr) => {
                self.tail_indices.push(point);
                self.tail_scalars.push(repr);
            }
        }
    }

    /// Classifies `scalars[i]` for the i that `selected` keeps; the k-th kept scalar belongs to
    /// point `first_point + k` (the layout of density-filtered A and B queries). One thread:
    /// for the public inputs and the tests.
    fn append_chunk(&mut self, scalars: &[Scalar], selected: impl Fn(usize) -> bool, first_point: u32) {
        let chosen = scalars.iter().enumerate().filter(|&(i, _)| selected(i));
        for (point, (_, s)) in (first_point..).zip(chosen) {
            self.push(point, s);
        }
    }

    /// Classifies every scalar: scalar i belongs to point i (the full-density L and H queries).
    pub fn all(scalars: &[Scalar]) -> Self {
        let parts: Vec<ClassifiedScalars> = scalars
            .par_chunks(CHUNK)
            .enumerate()
            .map(|(k, chunk)| {
                let mut part = ClassifiedScalars::default();
                part.append_chunk(chunk, |_| true, (k * CHUNK) as u32);
                part
            })
            .collect();
        Self::concat(Self::default(), &parts.iter().collect::<Vec<_>>())
    }

    /// `head`, then `parts` in order, copied on all cores.
    fn concat(mut head: Self, parts: &[&Self]) -> Self {
        let ones: Vec<&[u32]> = parts.iter().map(|p| p.ones.as_slice()).collect();
        let tail_indices: Vec<&[u32]> = parts.iter().map(|p| p.tail_indices.as_slice()).collect();
        let tail_scalars: Vec<&[[u8; 32]]> = parts.iter().map(|p| p.tail_scalars.as_slice()).collect();
        rayon::join(
            || extend_parallel(&mut head.ones, &ones),
            || {
                rayon::join(
                    || extend_parallel(&mut head.tail_indices, &tail_indices),
                    || extend_parallel(&mut head.tail_scalars, &tail_scalars),
                )
            },
        );
        head
    }

    /// Moves the 1-scalars into the tail (as full-width scalars equal to 1): for a backend
    /// whose batch addition costs a pass over every point of the query, that pass does not pay
    /// when few scalars are 1. The sum is the same either way.
    pub fn fold_ones_into_tail(&mut self) {
        let one = Scalar::ONE.to_repr();
        self.tail_scalars.extend(std::iter::repeat_n(one, self.ones.len()));
        self.tail_indices.append(&mut self.ones);
    }

    /// These scalars as one dense tail over a query of `npoints` (see `dense`), made on all
    /// cores: for a device that then reads the query's points in place instead of gathering a
    /// copy of the tail's, which pays when most scalars are full-width (a PoSt's witness).
    pub fn densified(&self, npoints: usize) -> Self {
        let one = Scalar::ONE.to_repr();
        let mut dense = vec![[0u8; 32]; npoints];
        // Both index lists ascend: each task fills its range from their slices inside it.
        dense.par_chunks_mut(CHUNK).enumerate().for_each(|(k, out)| {
            let range = (k * CHUNK) as u32..(k * CHUNK + out.len()) as u32;
            let within = |indices: &[u32]| indices.partition_point(|&i| i < range.start)..indices.partition_point(|&i| i < range.end);
            for &i in &self.ones[within(&self.ones)] {
                out[(i - range.start) as usize] = one;
            }
            let tail = within(&self.tail_indices);
            for (&i, s) in self.tail_indices[tail.clone()].iter().zip(&self.tail_scalars[tail]) {
                out[(i - range.start) as usize] = *s;
            }
        });
        ClassifiedScalars {
            ones: Vec::new(),
            tail_indices: Vec::new(),
            tail_scalars: dense,
            dense: true,
        }
    }

    /// One bit per point of a query of `npoints`, set where the scalar is 1 (bit i in word i/32),
    /// on all cores.
    pub fn ones_bitmap(&self, npoints: usize) -> Vec<u32> {
        let bitmap: Vec<AtomicU32> = (0..npoints.div_ceil(32)).map(|_| AtomicU32::new(0)).collect();
        // The ones are ascending: tasks share at most the words at their ends.
        self.ones.par_chunks(CHUNK).for_each(|ones| {
            for &i in ones {
                bitmap[i as usize / 32].fetch_or(1 << (i % 32), Ordering::Relaxed);
            }
        });
        bitmap.into_iter().map(AtomicU32::into_inner).collect()
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
    /// The most host memory the classes of a circuit with `variables` values take: in each
    /// of the three, a value is at most a one's index or a tail index and scalar.
    pub fn max_bytes(variables: u64) -> u64 {
        3 * variables * (4 + 32)
    }

    /// A's points are all inputs, then the aux variables in A; B's are the inputs in B, then
    /// the aux variables in B (bellperson's query layout, see [`QueryLayout`]). One pass over
    /// the aux scalars, on all cores: each is classified once for L, A and B; or, when most are
    /// full-width, made canonical once into dense scalars for all three.
    pub fn new(
        layout: &QueryLayout,
        inputs: &[Scalar],
        aux: &[Scalar],
        a_aux_density: &Density,
        b_input_density: &Density,
        b_aux_density: &Density,
    ) -> Self {
        match mostly_full_width(aux) {
            true => Self::dense(layout, inputs, aux, a_aux_density, b_input_density, b_aux_density),
            false => Self::classified(layout, inputs, aux, a_aux_density, b_input_density, b_aux_density),
        }
    }

    /// Every query's scalars sorted into their classes (for a witness known not to be mostly
    /// full-width: [`mostly_full_width`]).
    pub fn classified(
        layout: &QueryLayout,
        inputs: &[Scalar],
        aux: &[Scalar],
        a_aux_density: &Density,
        b_input_density: &Density,
        b_aux_density: &Density,
    ) -> Self {
        let mut a_inputs = ClassifiedScalars::default();
        a_inputs.append_chunk(inputs, |_| true, 0);
        let mut b_inputs = ClassifiedScalars::default();
        b_inputs.append_chunk(inputs, |i| b_input_density.get(i), 0);
        // Each task's first A and B points: the kept counts of the tasks before it.
        let kept: Vec<(u32, u32)> = (0..aux.len().div_ceil(CHUNK))
            .into_par_iter()
            .map(|k| {
                let range = k * CHUNK..aux.len().min((k + 1) * CHUNK);
                (
                    a_aux_density.count_ones_in(range.clone()) as u32,
                    b_aux_density.count_ones_in(range) as u32,
                )
            })
            .collect();
        let firsts: Vec<(u32, u32)> = kept
            .iter()
            .scan((layout.num_inputs as u32, layout.b_inputs as u32), |next, &(a, b)| {
                Some(std::mem::replace(next, (next.0 + a, next.1 + b)))
            })
            .collect();
        let parts: Vec<[ClassifiedScalars; 3]> = aux
            .par_chunks(CHUNK)
            .zip(firsts)
            .enumerate()
            .map(|(k, (chunk, (mut a_point, mut b_point)))| {
                let [mut l, mut a, mut b] = [(); 3].map(|_| ClassifiedScalars::default());
                for (i, s) in chunk.iter().enumerate() {
                    let variable = k * CHUNK + i;
                    let (in_a, in_b) = (a_aux_density.get(variable), b_aux_density.get(variable));
                    if !s.is_zero_vartime() {
                        // Classified and made canonical once for the three queries.
                        let full = full_width(s);
                        l.push_nonzero(variable as u32, full);
                        if in_a {
                            a.push_nonzero(a_point, full);
                        }
                        if in_b {
                            b.push_nonzero(b_point, full);
                        }
                    }
                    a_point += u32::from(in_a);
                    b_point += u32::from(in_b);
                }
                [l, a, b]
            })
            .collect();
        let query = |q: usize| parts.iter().map(|p| &p[q]).collect::<Vec<_>>();
        let (l, (a, b)) = rayon::join(
            || ClassifiedScalars::concat(ClassifiedScalars::default(), &query(0)),
            || {
                rayon::join(
                    || ClassifiedScalars::concat(a_inputs, &query(1)),
                    || ClassifiedScalars::concat(b_inputs, &query(2)),
                )
            },
        );
        PreparedMsms { l, a, b }
    }

    /// Every query's scalars dense (see [`ClassifiedScalars::dense`]): each aux scalar made
    /// canonical once, on all cores, for L (point = variable), then copied to its A and B
    /// points. No index lists, no concatenation: for a witness of mostly full-width scalars,
    /// where the classes would hold nearly every scalar three times over (a 32GiB WindowPoSt
    /// partition: 125M scalars, 6.6–7.8 s of prep that way).
    fn dense(
        layout: &QueryLayout,
        inputs: &[Scalar],
        aux: &[Scalar],
        a_aux_density: &Density,
        b_input_density: &Density,
        b_aux_density: &Density,
    ) -> Self {
        let mut l = vec![[0u8; 32]; aux.len()];
        l.par_chunks_mut(CHUNK).zip(aux.par_chunks(CHUNK)).for_each(|(out, scalars)| {
            for (o, s) in out.iter_mut().zip(scalars) {
                *o = s.to_repr();
            }
        });
        let a_inputs: Vec<[u8; 32]> = inputs.iter().map(|s| s.to_repr()).collect();
        let b_inputs: Vec<[u8; 32]> = (0..inputs.len())
            .filter(|&i| b_input_density.get(i))
            .map(|i| inputs[i].to_repr())
            .collect();
        debug_assert_eq!((a_inputs.len(), b_inputs.len()), (layout.num_inputs, layout.b_inputs));
        let dense = |tail_scalars| ClassifiedScalars {
            tail_scalars,
            dense: true,
            ..ClassifiedScalars::default()
        };
        let (a, b) = rayon::join(|| select_dense(a_inputs, &l, a_aux_density), || select_dense(b_inputs, &l, b_aux_density));
        PreparedMsms {
            l: dense(l),
            a: dense(a),
            b: dense(b),
        }
    }
}

/// Witnesses up to this many values are counted whole by [`mostly_full_width`]; above, one
/// value in [`WIDTH_SAMPLE_STRIDE`].
const WIDTH_COUNTED_WHOLE: usize = 1 << 20;
/// Every how many values of a larger witness [`mostly_full_width`] looks at one. The answer
/// only picks the faster of two exact paths, and the witnesses it tells apart are far from
/// half full-width (a PoRep's or an update's ~3 %, a PoSt's ~99 %): a uniform sample of a
/// 32GiB partition's 130M values is 8M of them. Counting every value was a pass over the whole
/// witness (4.2 GB at 32GiB) on the partition's critical path, 40 % of prep_msm's time here
/// (docs/PERFORMANCE.md).
const WIDTH_SAMPLE_STRIDE: usize = 16;

/// Whether more than half of `aux` is full-width (neither 0 nor 1), counted on all cores (for a
/// large witness, over a uniform sample).
pub fn mostly_full_width(aux: &[Scalar]) -> bool {
    let stride = if aux.len() > WIDTH_COUNTED_WHOLE { WIDTH_SAMPLE_STRIDE } else { 1 };
    // CHUNK is a multiple of the stride: every chunk's sample starts at its first value.
    let full: usize = aux
        .par_chunks(CHUNK)
        .map(|chunk| {
            chunk
                .iter()
                .step_by(stride)
                .filter(|s| !s.is_zero_vartime() && **s != Scalar::ONE)
                .count()
        })
        .sum();
    full * 2 > aux.len().div_ceil(stride)
}

/// A density-filtered query's dense scalars: `head` (its inputs'), then the aux scalars of
/// `all` (canonical, one per variable) whose variable `density` keeps, in order.
fn select_dense(mut head: Vec<[u8; 32]>, all: &[[u8; 32]], density: &Density) -> Vec<[u8; 32]> {
    extend_selected(&mut head, all, |variable, _| density.get(variable));
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A density of `len` variables, set where `keep` says.
    fn density(keep: fn(usize) -> bool, len: usize) -> Density {
        let mut d = Density::with_len(len);
        (0..len).filter(|&i| keep(i)).for_each(|i| d.set(i));
        d
    }

    #[test]
    fn one_parallel_pass_classifies_like_a_query_at_a_time() {
        let values = [Scalar::ZERO, Scalar::ONE, Scalar::from(7u64), -Scalar::ONE];
        let n = 3 * CHUNK + 5;
        let scalar = |i: usize| values[(i * 7919) % 4];
        let aux: Vec<Scalar> = (0..n).map(scalar).collect();
        let inputs = [Scalar::ONE, Scalar::from(3u64), Scalar::ZERO];
        let (a_aux, b_aux, b_inputs) = (density(|i| i % 3 != 1, n), density(|i| i % 5 < 2, n), density(|i| i != 1, 3));
        let layout = QueryLayout { num_inputs: 3, b_inputs: 2 };
        let p = PreparedMsms::new(&layout, &inputs, &aux, &a_aux, &b_inputs, &b_aux);

        let mut l = ClassifiedScalars::default();
        l.append_chunk(&aux, |_| true, 0);
        let mut a = ClassifiedScalars::default();
        a.append_chunk(&inputs, |_| true, 0);
        a.append_chunk(&aux, |i| a_aux.get(i), 3);
        let mut b = ClassifiedScalars::default();
        b.append_chunk(&inputs, |i| b_inputs.get(i), 0);
        b.append_chunk(&aux, |i| b_aux.get(i), 2);
        assert_eq!((p.l, p.a, p.b.clone()), (l.clone(), a, b));
        assert_eq!(ClassifiedScalars::all(&aux), l);
        assert!(!p.b.ones.is_empty() && !p.b.tail_indices.is_empty());

        let mut bitmap = vec![0u32; (n + 2).div_ceil(32)];
        p.b.ones.iter().for_each(|&i| bitmap[i as usize / 32] |= 1 << (i % 32));
        assert_eq!(p.b.ones_bitmap(n + 2), bitmap);

        // Dense: scalar i at point i, over chunk boundaries, with the points past the last
        // scalar zero.
        let dense = l.densified(n + 70);
        let expected: Vec<[u8; 32]> = (0..n + 70).map(|i| if i < n { scalar(i).to_repr() } else { [0; 32] }).collect();
        assert!(dense.dense && dense.ones.is_empty() && dense.tail_indices.is_empty());
        assert_eq!(dense.tail_scalars, expected);
    }

    #[test]
    fn a_mostly_full_width_witness_gets_dense_queries_equal_to_its_classes() {
        let n = 2 * CHUNK + 77;
        let scalar = |i: usize| match i % 10 {
            0 => Scalar::ZERO,
            1 => Scalar::ONE,
            _ => Scalar::from(i as u64) - Scalar::from(5u64),
        };
        let aux: Vec<Scalar> = (0..n).map(scalar).collect();
        let inputs = [Scalar::ONE, -Scalar::ONE, Scalar::ZERO];
        let (a_aux, b_aux, b_inputs) = (density(|i| i % 7 != 3, n), density(|i| i % 3 == 0, n), density(|i| i != 0, 3));
        let layout = QueryLayout { num_inputs: 3, b_inputs: 2 };
        let dense = PreparedMsms::new(&layout, &inputs, &aux, &a_aux, &b_inputs, &b_aux);
        let classes = PreparedMsms::classified(&layout, &inputs, &aux, &a_aux, &b_inputs, &b_aux);
        let points = |d: &Density, head: usize| head + d.count_ones_in(0..n);
        for (name, ours, theirs, npoints) in [
            ("L", &dense.l, &classes.l, n),
            ("A", &dense.a, &classes.a, points(&a_aux, 3)),
            ("B", &dense.b, &classes.b, points(&b_aux, 2)),
        ] {
            assert!(ours.dense, "{name}");
            assert_eq!(ours, &theirs.densified(npoints), "{name}");
        }
        // Half full-width is not mostly: classified.
        let half: Vec<Scalar> = (0..n).map(|i| if i % 2 == 0 { Scalar::ZERO } else { Scalar::from(3u64) }).collect();
        assert!(!PreparedMsms::new(&layout, &inputs, &half, &a_aux, &b_inputs, &b_aux).l.dense);
    }

    #[test]
    fn a_large_witness_is_told_full_width_or_not_from_a_sample() {
        let n = WIDTH_COUNTED_WHOLE * 2 + 123;
        // Full-width with probability `permille`/1000 at pseudo-random places, else 0 or 1.
        let witness = |permille: u64| -> Vec<Scalar> {
            (0..n as u64)
                .map(|i| match (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) % 1000 {
                    r if r < permille => Scalar::from(i + 2),
                    r if r % 2 == 0 => Scalar::ZERO,
                    _ => Scalar::ONE,
                })
                .collect()
        };
        let exact = |aux: &[Scalar]| aux.iter().filter(|s| !s.is_zero_vartime() && **s != Scalar::ONE).count() * 2 > aux.len();
        for (permille, mostly) in [(30, false), (990, true), (400, false), (600, true)] {
            let aux = witness(permille);
            assert_eq!(exact(&aux), mostly, "{permille}‰");
            assert_eq!(mostly_full_width(&aux), mostly, "{permille}‰ full-width");
        }
        // Small witnesses are counted whole: one full-width value in three is not mostly, two are.
        let small = |full_every: usize| -> Vec<Scalar> {
            (0..3000)
                .map(|i| if i % 3 < full_every { Scalar::from(9u64) } else { Scalar::ZERO })
                .collect()
        };
        assert!(!mostly_full_width(&small(1)));
        assert!(mostly_full_width(&small(2)));
    }

    #[test]
    fn selected_scalars_map_to_consecutive_points_after_the_first() {
        let scalars = [Scalar::ONE, Scalar::from(5u64), Scalar::ONE, Scalar::ZERO, Scalar::from(9u64)];
        let mut classes = ClassifiedScalars::default();
        classes.append_chunk(&scalars, |i| i != 1, 10);
        assert_eq!(classes.ones, vec![10, 11]);
        assert_eq!(classes.tail_indices, vec![13]);
        assert_eq!(classes.tail_scalars, vec![Scalar::from(9u64).to_repr()]);
        let bitmap = classes.ones_bitmap(40);
        assert_eq!(bitmap, vec![0b11 << 10, 0]);

        classes.fold_ones_into_tail();
        assert!(classes.ones.is_empty());
        assert_eq!(classes.tail_indices, vec![13, 10, 11]);
        assert_eq!(
            classes.tail_scalars,
            vec![Scalar::from(9u64).to_repr(), Scalar::ONE.to_repr(), Scalar::ONE.to_repr()]
        );
    }
}
