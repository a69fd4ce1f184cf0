//! Multi-scalar multiplication on the CPU: the sum Σ sᵢ·Pᵢ split the way a PoRep witness asks
//! for. Scalars 0 are skipped, scalars 1 are plain point additions ("batch addition"), and only
//! the remaining full-width scalars ("the tail") go through Pippenger's bucket method. Both are
//! blst's (under blstrs): its batched affine additions, and its Pippenger
//! (`blst_p1s_tile_pippenger`: signed Booth digits, buckets in XYZZ coordinates), single-threaded
//! calls over tiles of the points and digits on the backend's pool.

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

    /// Σ dᵢ·Pᵢ over `n` ≥ 2 points, dᵢ the signed digit of bits `bit0 .. bit0 + window` of
    /// their little-endian 32-byte scalars (one tile of blst's Pippenger), with blst's arrays: one
    /// pointer per point and per scalar, or `[first, null]` for a contiguous run. `scratch`:
    /// `scratch_words(window)` words, zero, and left zero. Single-threaded.
    ///
    /// # Safety
    /// Every pointer is valid for what blst reads: `n` points and `n` scalars.
    unsafe fn tile_blst(points: &[*const Self], scalars: &[*const u8], n: usize, bit0: usize, window: usize, scratch: &mut [u64]) -> Self::Curve;

    /// The scratch a tile of `window` bits needs (its buckets), in 64-bit words.
    fn scratch_words(window: usize) -> usize;
}

/// `BlstAffine` for an affine type of blstrs through blst's functions of its group. blstrs'
/// affine and projective points are `repr(transparent)` blst points: the pointers and sums
/// cross as they are.
macro_rules! blst_affine {
    ($affine:ty, $projective:ty, $blst_affine:ty, $blst_point:ty, $add:path, $tile:path, $scratch_sizeof:path) => {
        impl BlstAffine for $affine {
            unsafe fn sum_blst(points: &[*const Self]) -> $projective {
                let mut sum = <$blst_point>::default();
                $add(&mut sum, points.as_ptr().cast::<*const $blst_affine>(), points.len());
                std::mem::transmute::<$blst_point, $projective>(sum)
            }

            unsafe fn tile_blst(
                points: &[*const Self],
                scalars: &[*const u8],
                n: usize,
                bit0: usize,
                window: usize,
                scratch: &mut [u64],
            ) -> $projective {
                let mut sum = <$blst_point>::default();
                let nbits = Scalar::NUM_BITS as usize;
                let points = points.as_ptr().cast::<*const $blst_affine>();
                $tile(&mut sum, points, n, scalars.as_ptr(), nbits, scratch.as_mut_ptr(), bit0, window);
                std::mem::transmute::<$blst_point, $projective>(sum)
            }

            fn scratch_words(window: usize) -> usize {
                // SAFETY: a size query: for no points, one bucket.
                (unsafe { $scratch_sizeof(0) } << (window - 1)).div_ceil(8)
            }
        }
    };
}

blst_affine!(
    G1Affine,
    G1Projective,
    blst_p1_affine,
    blst_p1,
    blst::blst_p1s_add,
    blst::blst_p1s_tile_pippenger,
    blst::blst_p1s_mult_pippenger_scratch_sizeof
);
blst_affine!(
    G2Affine,
    G2Projective,
    blst_p2_affine,
    blst_p2,
    blst::blst_p2s_add,
    blst::blst_p2s_tile_pippenger,
    blst::blst_p2s_mult_pippenger_scratch_sizeof
);

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

/// The most points one tile sums: how often a long MSM looks at the cancel token (a tile of
/// 2^21 G1 points is ≈ 0.6 s of one core here).
const MAX_TILE_POINTS: usize = 1 << 21;

/// The scalar 0, paired with a tile's only point (blst sums two at least).
static ZERO_SCALAR: [u8; 32] = [0; 32];

/// The widest digits: 2^15 buckets of XYZZ points (6 MB in G1) per tile. blst's choice for
/// 2^22 points, 19 bits, was slower here (MSM H of a 2KiB PoRep, 2 cores).
const MAX_WINDOW_BITS: usize = 16;

/// The digits' width for `n` points: blst's choice (≈ log2 n − 4 bits), at most
/// `MAX_WINDOW_BITS`.
fn window_bits(n: usize) -> usize {
    match (usize::BITS - n.leading_zeros()) as usize {
        bits if bits > 13 => (bits - 4).min(MAX_WINDOW_BITS),
        bits if bits > 5 => bits - 3,
        _ => 2,
    }
}

/// Σ sᵢ·P[indexᵢ] for the tail scalars (little-endian bytes), or Σ sᵢ·Pᵢ over the first
/// `scalars.len()` points when `indices` is None, on the current pool; abandoned (a
/// meaningless sum) once `cancel` is set. Blst's Pippenger in tiles, as its own threads run it:
/// a row of tiles per window of the digits, a column per range of points (as many as keep
/// every worker busy and a tile under `MAX_TILE_POINTS`), each tile's buckets summed on one
/// core; then the rows combined by doubling.
pub fn pippenger<G: BlstAffine>(points: &[G], indices: Option<&[u32]>, scalars: &[[u8; 32]], cancel: &CancelToken) -> G::Curve {
    let n = scalars.len();
    if n == 0 {
        return G::Curve::identity();
    }
    let window = window_bits(n);
    // A row per window from bit 0, and one above the last whole window for its digit's carry
    // (Booth digits are signed): bit 255 when the window divides 255.
    let rows = Scalar::NUM_BITS as usize / window + 1;
    let columns = n
        .div_ceil(MAX_TILE_POINTS)
        .max(rayon::current_num_threads().div_ceil(rows))
        .min(n.div_ceil(2));
    let point = |k: usize| -> *const G { &points[indices.map_or(k, |indices| indices[k] as usize)] };
    let tiles: Vec<G::Curve> = (0..rows * columns)
        .into_par_iter()
        .map_init(
            || vec![0u64; G::scratch_words(window)],
            |scratch, tile| {
                let (row, column) = (tile / columns, tile % columns);
                let range = column * n / columns..(column + 1) * n / columns;
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
                // `points`; the pointers cover `range.len()` points and scalars (the point
                // twice with the scalar 0 when there is one); the scratch is the window's.
                unsafe { G::tile_blst(&point_ptrs, &scalar_ptrs, range.len().max(2), row * window, window, scratch) }
            },
        )
        .collect();
    let mut total = G::Curve::identity();
    for row in tiles.chunks(columns).rev() {
        for _ in 0..window {
            total = total.double();
        }
        total += row.iter().fold(G::Curve::identity(), |sum, tile| sum + tile);
    }
    total
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
        for n in [1usize, 2, 3, 7, 40, 300, 5000] {
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
