//! Multi-scalar multiplication on the CPU: the sum Σ sᵢ·Pᵢ split the way a PoRep witness asks
//! for. Scalars 0 are skipped, scalars 1 are plain point additions ("batch addition"), and only
//! the remaining full-width scalars ("the tail") go through Pippenger's bucket method.

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::PrimeField;
use group::prime::PrimeCurveAffine;
use group::Group;
use rayon::prelude::*;

use crate::cancel::CancelToken;

/// Affine points that can be added into their projective accumulator (mixed addition).
pub trait MixedAdd: PrimeCurveAffine<Scalar = Scalar> + Sync {
    fn add_to(&self, acc: &mut Self::Curve);
}

impl MixedAdd for G1Affine {
    fn add_to(&self, acc: &mut G1Projective) {
        *acc += self;
    }
}

impl MixedAdd for G2Affine {
    fn add_to(&self, acc: &mut G2Projective) {
        *acc += self;
    }
}

/// Σ P[i] over `indices`, the 1-scalar part, in parallel.
pub fn sum_points<G: MixedAdd>(points: &[G], indices: &[u32]) -> G::Curve {
    indices
        .par_chunks(1 << 14)
        .map(|chunk| {
            let mut acc = G::Curve::identity();
            for &i in chunk {
                points[i as usize].add_to(&mut acc);
            }
            acc
        })
        .reduce(G::Curve::identity, |a, b| a + b)
}

/// Window width for Pippenger over `n` points (≈ ln n, the usual optimum for bucket methods).
fn window_bits(n: usize) -> usize {
    if n < 32 {
        3
    } else {
        ((n as f64).ln().ceil() as usize).clamp(4, 16)
    }
}

/// Bits [offset, offset + width) of a little-endian 256-bit scalar.
fn window_digit(scalar: &[u8; 32], offset: usize, width: usize) -> usize {
    let mut digit = 0usize;
    let mut taken = 0;
    while taken < width {
        let bit = offset + taken;
        if bit >= 256 {
            break;
        }
        let byte = scalar[bit / 8] as usize >> (bit % 8);
        let available = (8 - bit % 8).min(width - taken);
        digit |= (byte & ((1 << available) - 1)) << taken;
        taken += available;
    }
    digit
}

/// Points scattered between two looks at the cancel token: ~10 ms of additions.
const POINTS_PER_CANCEL_CHECK: usize = 1 << 14;

/// One chunk's Pippenger: for every window, scatter points into buckets by digit, then sum the
/// buckets with the running-sum trick; combine windows by doubling. Once `cancel` is set it
/// stops early with a meaningless sum (the caller checks the token after the phase).
fn pippenger_chunk<G: MixedAdd>(points: &[G], indices: &[u32], scalars: &[[u8; 32]], width: usize, cancel: &CancelToken) -> G::Curve {
    let num_bits = Scalar::NUM_BITS as usize;
    let windows = num_bits.div_ceil(width);
    let mut buckets = vec![G::Curve::identity(); (1 << width) - 1];
    let mut total = G::Curve::identity();
    for w in (0..windows).rev() {
        for _ in 0..width {
            total = total.double();
        }
        buckets.iter_mut().for_each(|b| *b = G::Curve::identity());
        for (n, (&i, s)) in indices.iter().zip(scalars).enumerate() {
            if n % POINTS_PER_CANCEL_CHECK == 0 && cancel.is_cancelled() {
                return total;
            }
            let digit = window_digit(s, w * width, width);
            if digit != 0 {
                points[i as usize].add_to(&mut buckets[digit - 1]);
            }
        }
        let mut running = G::Curve::identity();
        let mut window_sum = G::Curve::identity();
        for b in buckets.iter().rev() {
            running += b;
            window_sum += running;
        }
        total += window_sum;
    }
    total
}

/// Σ sᵢ·P[indexᵢ] for the tail scalars, split into one chunk per worker thread; abandoned
/// (a meaningless sum) once `cancel` is set.
pub fn pippenger<G: MixedAdd>(points: &[G], indices: &[u32], scalars: &[[u8; 32]], cancel: &CancelToken) -> G::Curve {
    if indices.is_empty() {
        return G::Curve::identity();
    }
    let chunks = rayon::current_num_threads().max(1);
    let chunk_len = indices.len().div_ceil(chunks);
    let width = window_bits(chunk_len);
    indices
        .par_chunks(chunk_len)
        .zip(scalars.par_chunks(chunk_len))
        .map(|(idx, sc)| pippenger_chunk(points, idx, sc, width, cancel))
        .reduce(G::Curve::identity, |a, b| a + b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::prep::ClassifiedScalars;
    use ff::Field;
    use group::Curve;
    use rand::{Rng, SeedableRng};

    fn naive<G: PrimeCurveAffine<Scalar = Scalar>>(points: &[G], scalars: &[Scalar]) -> G::Curve {
        points
            .iter()
            .zip(scalars)
            .map(|(p, s)| p.to_curve() * *s)
            .fold(G::Curve::identity(), |a, b| a + b)
    }

    fn porep_like_scalars(rng: &mut impl Rng, n: usize) -> Vec<Scalar> {
        (0..n)
            .map(|_| match rng.gen_range(0..100) {
                0..=49 => Scalar::ZERO,
                50..=95 => Scalar::ONE,
                96..=97 => Scalar::from(rng.gen::<u64>()),
                _ => Scalar::random(&mut *rng),
            })
            .collect()
    }

    fn check<G: MixedAdd>(points: &[G], scalars: &[Scalar]) {
        let classes = ClassifiedScalars::all(scalars);
        let got = sum_points(points, &classes.ones) + pippenger(points, &classes.tail_indices, &classes.tail_scalars, &CancelToken::new());
        assert!(got == naive(points, scalars));
    }

    #[test]
    fn split_msm_equals_naive_sum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for n in [1usize, 7, 300] {
            let g1: Vec<G1Affine> = (0..n).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
            let g2: Vec<G2Affine> = (0..n).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
            let uniform: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let porep = porep_like_scalars(&mut rng, n);
            check(&g1, &uniform);
            check(&g1, &porep);
            check(&g2, &porep);
        }
    }

    #[test]
    fn window_digits_cover_all_bits() {
        let s = Scalar::random(&mut rand_chacha::ChaCha8Rng::seed_from_u64(3)).to_repr();
        for width in [3usize, 8, 13, 16] {
            let mut rebuilt = [0u8; 32];
            for w in 0..256usize.div_ceil(width) {
                let d = window_digit(&s, w * width, width);
                for b in 0..width {
                    let bit = w * width + b;
                    if bit < 256 && d >> b & 1 == 1 {
                        rebuilt[bit / 8] |= 1 << (bit % 8);
                    }
                }
            }
            assert_eq!(rebuilt, s, "width {width}");
        }
    }
}
