//! Radix-2 number-theoretic transforms over the BLS12-381 scalar field, parallel with rayon,
//! and the quotient polynomial H of Groth16 built from them (6 transforms of the domain size).

use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use crate::cancel::CancelToken;

/// Work below this many butterflies per task is not split further.
const MIN_PARALLEL_CHUNK: usize = 1 << 12;

/// An evaluation domain of size 2^log_size.
pub struct Domain {
    pub log_size: u32,
    omega: Scalar,
    omega_inv: Scalar,
    size_inv: Scalar,
}

impl Domain {
    /// The smallest power-of-two domain holding `len` values; `None` if the field's two-adicity
    /// (2^32) is exceeded.
    pub fn for_len(len: usize) -> Option<Self> {
        let log_size = len.max(1).next_power_of_two().trailing_zeros();
        if log_size > Scalar::S {
            return None;
        }
        let mut omega = Scalar::ROOT_OF_UNITY;
        for _ in log_size..Scalar::S {
            omega = omega.square();
        }
        let size_inv = Scalar::from(1u64 << log_size).invert().unwrap();
        Some(Domain {
            log_size,
            omega,
            omega_inv: omega.invert().unwrap(),
            size_inv,
        })
    }

    pub fn size(&self) -> usize {
        1 << self.log_size
    }

    /// The domain's generator: a primitive root of unity of order `size()` (cuzk-tools'
    /// random setup).
    #[cfg(feature = "internals")]
    pub fn omega(&self) -> Scalar {
        self.omega
    }

    pub fn fft(&self, values: &mut [Scalar]) {
        transform(values, self.omega, self.log_size);
    }

    pub fn ifft(&self, values: &mut [Scalar]) {
        transform(values, self.omega_inv, self.log_size);
        scale(values, self.size_inv);
    }

    /// Evaluations on the coset g·⟨ω⟩ of the polynomial whose coefficients are `values`.
    pub fn coset_fft(&self, values: &mut [Scalar]) {
        distribute_powers(values, Scalar::MULTIPLICATIVE_GENERATOR);
        self.fft(values);
    }

    pub fn icoset_fft(&self, values: &mut [Scalar]) {
        self.ifft(values);
        distribute_powers(values, Scalar::MULTIPLICATIVE_GENERATOR.invert().unwrap());
    }

    /// 1 / Z(x) on the coset, where Z(x) = x^n - 1 is constant there: g^n - 1.
    pub fn z_inverse_on_coset(&self) -> Scalar {
        let g_pow_n = Scalar::MULTIPLICATIVE_GENERATOR.pow_vartime([self.size() as u64]);
        (g_pow_n - Scalar::ONE).invert().unwrap()
    }
}

fn scale(values: &mut [Scalar], factor: Scalar) {
    values
        .par_chunks_mut(MIN_PARALLEL_CHUNK)
        .for_each(|chunk| chunk.iter_mut().for_each(|v| *v *= factor));
}

/// values[i] *= g^i.
fn distribute_powers(values: &mut [Scalar], g: Scalar) {
    values.par_chunks_mut(MIN_PARALLEL_CHUNK).enumerate().for_each(|(chunk_index, chunk)| {
        let mut power = g.pow_vartime([(chunk_index * MIN_PARALLEL_CHUNK) as u64]);
        for v in chunk.iter_mut() {
            *v *= power;
            power *= g;
        }
    });
}

fn bit_reverse_permute(values: &mut [Scalar], log_size: u32) {
    if log_size == 0 {
        return;
    }
    let shift = usize::BITS - log_size;
    for i in 0..values.len() {
        let j = i.reverse_bits() >> shift;
        if i < j {
            values.swap(i, j);
        }
    }
}

/// In-place iterative Cooley-Tukey transform with root `omega` of order 2^log_size.
fn transform(values: &mut [Scalar], omega: Scalar, log_size: u32) {
    let n = values.len();
    assert_eq!(n, 1 << log_size, "transform length must be the domain size");
    bit_reverse_permute(values, log_size);
    if n < 2 {
        return;
    }
    // twiddles[k] = omega^k for k < n/2; stage of block length `len` uses stride n/len.
    let mut twiddles = vec![Scalar::ONE; n / 2];
    twiddles.par_chunks_mut(MIN_PARALLEL_CHUNK).enumerate().for_each(|(chunk_index, chunk)| {
        let mut power = omega.pow_vartime([(chunk_index * MIN_PARALLEL_CHUNK) as u64]);
        for t in chunk.iter_mut() {
            *t = power;
            power *= omega;
        }
    });
    let mut len = 2;
    while len <= n {
        let half = len / 2;
        let stride = n / len;
        let butterflies = |lo: &mut [Scalar], hi: &mut [Scalar], first: usize| {
            for (k, (x, y)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                let t = *y * twiddles[(first + k) * stride];
                *y = *x - t;
                *x += t;
            }
        };
        if half >= MIN_PARALLEL_CHUNK {
            // Few large blocks: split each block's butterflies across threads.
            for block in values.chunks_mut(len) {
                let (lo, hi) = block.split_at_mut(half);
                lo.par_chunks_mut(MIN_PARALLEL_CHUNK)
                    .zip(hi.par_chunks_mut(MIN_PARALLEL_CHUNK))
                    .enumerate()
                    .for_each(|(i, (lo, hi))| butterflies(lo, hi, i * MIN_PARALLEL_CHUNK));
            }
        } else {
            values.par_chunks_mut(len.max(MIN_PARALLEL_CHUNK)).for_each(|group| {
                for block in group.chunks_mut(len) {
                    let (lo, hi) = block.split_at_mut(half);
                    butterflies(lo, hi, 0);
                }
            });
        }
        len *= 2;
    }
}

/// Coefficients of H = (A·B - C) / Z for the evaluations a, b, c (one per constraint; padded
/// with zeros to the domain size). Returns the domain size - 1 coefficients that the H query
/// has points for; `None` when the circuit is too large for the field's 2-adic domain.
///
/// Six transforms, not the textbook seven: H = icoset((A·B - C) / Z on the coset), Z is the
/// constant z there, and the inverse coset transform of C's coset values is C's coefficients
/// (deg C < n). So H = (icoset(A·B on the coset) - C's coefficients) / z, and C needs only its
/// inverse transform — for any a, b, c, satisfied or not.
pub fn quotient_coefficients(mut a: Vec<Scalar>, mut b: Vec<Scalar>, mut c: Vec<Scalar>, cancel: &CancelToken) -> Option<Vec<Scalar>> {
    let domain = Domain::for_len(a.len())?;
    // Abandoned between transforms once cancelled (the caller checks the token next).
    for (v, to_coset) in [(&mut a, true), (&mut b, true), (&mut c, false)] {
        v.resize(domain.size(), Scalar::ZERO);
        let transforms: &[fn(&Domain, &mut [Scalar])] = if to_coset { &[Domain::ifft, Domain::coset_fft] } else { &[Domain::ifft] };
        for transform in transforms {
            if cancel.is_cancelled() {
                return Some(Vec::new());
            }
            transform(&domain, v);
        }
    }
    a.par_iter_mut().zip(b.par_iter()).for_each(|(a, b)| *a *= b);
    drop(b);
    domain.icoset_fft(&mut a);
    let z_inv = domain.z_inverse_on_coset();
    a.par_iter_mut().zip(c.par_iter()).for_each(|(a, c)| *a = (*a - c) * z_inv);
    a.truncate(domain.size() - 1);
    Some(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn evaluate(coeffs: &[Scalar], x: Scalar) -> Scalar {
        coeffs.iter().rev().fold(Scalar::ZERO, |acc, c| acc * x + c)
    }

    #[test]
    fn fft_matches_naive_evaluation_and_inverts() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for log in [0u32, 1, 3, 13] {
            let domain = Domain::for_len(1 << log).unwrap();
            let coeffs: Vec<Scalar> = (0..domain.size()).map(|_| Scalar::random(&mut rng)).collect();
            let mut values = coeffs.clone();
            domain.fft(&mut values);
            let last = domain.size() - 1;
            for i in [0usize, 1.min(last), domain.size() / 2, last] {
                assert_eq!(values[i], evaluate(&coeffs, domain.omega.pow_vartime([i as u64])), "log {log} index {i}");
            }
            domain.ifft(&mut values);
            assert_eq!(values, coeffs);
            domain.coset_fft(&mut values);
            let x = Scalar::MULTIPLICATIVE_GENERATOR * domain.omega.pow_vartime([last as u64]);
            assert_eq!(values[last], evaluate(&coeffs, x));
            domain.icoset_fft(&mut values);
            assert_eq!(values, coeffs);
        }
    }

    #[test]
    fn quotient_equals_the_seven_transform_one_for_unsatisfied_evaluations() {
        // The textbook order: a, b, c each to the coset, (a·b - c)/z there, back.
        let seven = |mut a: Vec<Scalar>, mut b: Vec<Scalar>, mut c: Vec<Scalar>| {
            let domain = Domain::for_len(a.len()).unwrap();
            for v in [&mut a, &mut b, &mut c] {
                v.resize(domain.size(), Scalar::ZERO);
                domain.ifft(v);
                domain.coset_fft(v);
            }
            let z_inv = domain.z_inverse_on_coset();
            for ((a, b), c) in a.iter_mut().zip(&b).zip(&c) {
                *a = (*a * b - c) * z_inv;
            }
            domain.icoset_fft(&mut a);
            a.truncate(domain.size() - 1);
            a
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for n in [1usize, 2, 3, 5, 8, 1000, 1024] {
            let mut random = || (0..n).map(|_| Scalar::random(&mut rng)).collect::<Vec<_>>();
            let (a, b, c) = (random(), random(), random());
            let h = quotient_coefficients(a.clone(), b.clone(), c.clone(), &CancelToken::new()).unwrap();
            assert_eq!(h, seven(a, b, c), "{n} evaluations");
        }
    }

    #[test]
    fn quotient_times_z_is_ab_minus_c() {
        // a·b - c must vanish on the domain: choose c = a·b on the domain points.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let n = 1000;
        let a: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let b: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        let c: Vec<Scalar> = a.iter().zip(&b).map(|(a, b)| *a * b).collect();
        let domain = Domain::for_len(n).unwrap();
        let h = quotient_coefficients(a.clone(), b.clone(), c.clone(), &CancelToken::new()).unwrap();
        assert_eq!(h.len(), domain.size() - 1);
        let interpolate = |mut v: Vec<Scalar>| {
            v.resize(domain.size(), Scalar::ZERO);
            domain.ifft(&mut v);
            v
        };
        let (pa, pb, pc) = (interpolate(a), interpolate(b), interpolate(c));
        let x = Scalar::random(&mut rng);
        let z = x.pow_vartime([domain.size() as u64]) - Scalar::ONE;
        assert_eq!(evaluate(&pa, x) * evaluate(&pb, x) - evaluate(&pc, x), evaluate(&h, x) * z);
    }
}
