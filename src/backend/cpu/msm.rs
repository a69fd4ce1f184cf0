//! Multi-scalar multiplication on the CPU: the sum Σ sᵢ·Pᵢ split the way a PoRep witness asks
//! for. Scalars 0 are skipped, scalars 1 are plain point additions ("batch addition"), and only
//! the remaining full-width scalars ("the tail") go through Pippenger's bucket method. Both are
//! blst's (under blstrs): its batched affine additions, and its Pippenger
//! (`blst_p1s_mult_pippenger`: signed Booth digits, buckets in XYZZ coordinates), single-threaded
//! calls over chunks of the points on the backend's pool.

use blst::{blst_p1, blst_p1_affine, blst_p2, blst_p2_affine};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::PrimeField;
use group::prime::PrimeCurveAffine;
use group::Group;
use rayon::prelude::*;

use crate::cancel::CancelToken;

/// Affine points blst sums: without scalars by its batched affine additions (`blst_p1s_add`: a
/// tree of additions sharing one inversion per level), with scalars by its Pippenger.
pub trait BlstAffine: PrimeCurveAffine<Scalar = Scalar> + Sync {
    /// Σ Pᵢ over `points`, one pointer per point. Single-threaded.
    ///
    /// # Safety
    /// Every pointer is valid.
    unsafe fn sum_blst(points: &[*const Self]) -> Self::Curve;

    /// Σ sᵢ·Pᵢ over `n` ≥ 2 points and their little-endian 32-byte scalars, as blst reads them:
    /// arrays of one pointer per point and per scalar, or `[first, null]` for a contiguous run.
    /// Single-threaded.
    ///
    /// # Safety
    /// Every pointer is valid for what blst reads: `n` points and `n` scalars.
    unsafe fn pippenger_blst(points: &[*const Self], scalars: &[*const u8], n: usize) -> Self::Curve;
}

// G1Affine and G2Affine are `repr(transparent)` blst_p1_affine and blst_p2_affine, G1Projective
// and G2Projective blst_p1 and blst_p2: the pointers and sums cross as they are.
impl BlstAffine for G1Affine {
    unsafe fn sum_blst(points: &[*const Self]) -> G1Projective {
        let mut sum = blst_p1::default();
        blst::blst_p1s_add(&mut sum, points.as_ptr().cast::<*const blst_p1_affine>(), points.len());
        std::mem::transmute::<blst_p1, G1Projective>(sum)
    }

    unsafe fn pippenger_blst(points: &[*const Self], scalars: &[*const u8], n: usize) -> G1Projective {
        let mut scratch = vec![0u64; blst::blst_p1s_mult_pippenger_scratch_sizeof(n).div_ceil(8)];
        let mut sum = blst_p1::default();
        blst::blst_p1s_mult_pippenger(
            &mut sum,
            points.as_ptr().cast::<*const blst_p1_affine>(),
            n,
            scalars.as_ptr(),
            Scalar::NUM_BITS as usize,
            scratch.as_mut_ptr(),
        );
        std::mem::transmute::<blst_p1, G1Projective>(sum)
    }
}

impl BlstAffine for G2Affine {
    unsafe fn sum_blst(points: &[*const Self]) -> G2Projective {
        let mut sum = blst_p2::default();
        blst::blst_p2s_add(&mut sum, points.as_ptr().cast::<*const blst_p2_affine>(), points.len());
        std::mem::transmute::<blst_p2, G2Projective>(sum)
    }

    unsafe fn pippenger_blst(points: &[*const Self], scalars: &[*const u8], n: usize) -> G2Projective {
        let mut scratch = vec![0u64; blst::blst_p2s_mult_pippenger_scratch_sizeof(n).div_ceil(8)];
        let mut sum = blst_p2::default();
        blst::blst_p2s_mult_pippenger(
            &mut sum,
            points.as_ptr().cast::<*const blst_p2_affine>(),
            n,
            scalars.as_ptr(),
            Scalar::NUM_BITS as usize,
            scratch.as_mut_ptr(),
        );
        std::mem::transmute::<blst_p2, G2Projective>(sum)
    }
}

/// Σ P[i] over `indices`, the 1-scalar part, in parallel.
pub fn sum_points<G: BlstAffine>(points: &[G], indices: &[u32]) -> G::Curve {
    indices
        .par_chunks(1 << 14)
        .map(|chunk| {
            let chunk: Vec<*const G> = chunk.iter().map(|&i| &points[i as usize] as *const G).collect();
            // SAFETY: pointers to elements of `points`.
            unsafe { G::sum_blst(&chunk) }
        })
        .reduce(G::Curve::identity, |a, b| a + b)
}

/// The most points one Pippenger call sums: how often a long MSM looks at the cancel token
/// (≈ 0.2 s of one core for G1 here).
const MAX_CHUNK_POINTS: usize = 1 << 17;

/// The scalar 0, paired with a chunk's only point (blst sums two at least).
static ZERO_SCALAR: [u8; 32] = [0; 32];

/// Σ sᵢ·P[indexᵢ] for the tail scalars (little-endian bytes), or Σ sᵢ·Pᵢ over the first
/// `scalars.len()` points when `indices` is None, in chunks over the current pool's workers;
/// abandoned (a meaningless sum) once `cancel` is set.
pub fn pippenger<G: BlstAffine>(points: &[G], indices: Option<&[u32]>, scalars: &[[u8; 32]], cancel: &CancelToken) -> G::Curve {
    let n = scalars.len();
    let chunk_len = n.div_ceil(rayon::current_num_threads().max(1)).clamp(1, MAX_CHUNK_POINTS);
    let chunks = n.div_ceil(chunk_len);
    let point = |k: usize| -> *const G { &points[indices.map_or(k, |indices| indices[k] as usize)] };
    (0..chunks)
        .into_par_iter()
        .map(|c| {
            let range = c * n / chunks..(c + 1) * n / chunks;
            if cancel.is_cancelled() || range.is_empty() {
                return G::Curve::identity();
            }
            let first = scalars[range.start].as_ptr();
            let (point_ptrs, scalar_ptrs) = match (range.len(), indices) {
                (1, _) => (vec![point(range.start); 2], vec![first, ZERO_SCALAR.as_ptr()]),
                (_, Some(_)) => (range.clone().map(point).collect(), vec![first, std::ptr::null()]),
                (_, None) => (vec![point(range.start), std::ptr::null()], vec![first, std::ptr::null()]),
            };
            // SAFETY: `range` is within `scalars` and, by index or by position, within
            // `points`; the pointers cover `range.len()` points and scalars (the point twice
            // with the scalar 0 when there is one).
            unsafe { G::pippenger_blst(&point_ptrs, &scalar_ptrs, range.len().max(2)) }
        })
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

    fn check<G: BlstAffine>(points: &[G], scalars: &[Scalar]) {
        let classes = ClassifiedScalars::all(scalars);
        let got = sum_points(points, &classes.ones) + pippenger(points, Some(&classes.tail_indices), &classes.tail_scalars, &CancelToken::new());
        assert!(got == naive(points, scalars), "{} points, indexed", points.len());
        let every: Vec<[u8; 32]> = scalars.iter().map(|s| s.to_repr()).collect();
        let dense = pippenger(points, None, &every, &CancelToken::new());
        assert!(dense == naive(points, scalars), "{} points, dense", points.len());
    }

    #[test]
    fn split_msm_equals_naive_sum() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for n in [1usize, 2, 7, 300, 5000] {
            let g1: Vec<G1Affine> = (0..n).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
            let g2: Vec<G2Affine> = (0..n).map(|_| G2Projective::random(&mut rng).to_affine()).collect();
            let uniform: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
            let porep = porep_like_scalars(&mut rng, n);
            check(&g1, &uniform);
            check(&g1, &porep);
            check(&g2, &porep);
        }
    }
}
