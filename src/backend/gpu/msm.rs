//! cuzk's own MSM (cuda/msm.cuh): Pippenger with signed digits whose every device step runs on
//! a stream of the caller's, so that a proof's MSMs can run at the same time (witness_msm.rs).
//! Here: which implementation an MSM of a given size gets, its device memory for the estimate,
//! and one MSM from host points and scalars for the tests and benchmarks that hold it against
//! sppark's and the CPU's.

use crate::backend::MsmChoice;

use super::sys;

/// The most points for which cuzk's MSM runs in place of sppark's under [`MsmChoice::Cuzk`]: all
/// it takes (cuda/msm.cuh's MAX_POINTS). Measured faster at every size from 2^16 to 2^27, in G1
/// and G2 (docs/PERFORMANCE.md, runs 82–84).
pub(super) const OWN_MSM_MAX_POINTS: usize = 1 << 30;

/// Which implementation (`sys::MSM_*`) computes an MSM of `n` points under `choice`.
pub(super) fn implementation(choice: MsmChoice, n: usize) -> u32 {
    if choice == MsmChoice::Cuzk && n <= OWN_MSM_MAX_POINTS {
        sys::MSM_CUZK
    } else {
        sys::MSM_SPPARK
    }
}

/// The narrowest and widest digits cuda/msm.cuh picks from by size, and its scalars' bits.
const MIN_BITS: u32 = 8;
const MAX_BITS: u32 = 22;
const SCALAR_BITS: u32 = 255;
/// A bucket's cost in its window sum against an entry's in the bucket sums.
const BUCKET_COST: f64 = 4.0;
/// Sorted entries per thread at its first and later run-sum levels, buckets per segment.
const FIRST_CHUNK: u64 = 32;
const LATER_CHUNK: u64 = 8;
const SEGMENT: u64 = 16;
/// The most entries one group of windows sorts.
const GROUP_ITEMS: u64 = 1 << 28;

fn windows_of(c: u32) -> u64 {
    u64::from(SCALAR_BITS / c + 1)
}

/// The digit width cuda/msm.cuh's `digit_bits` picks for `n` points.
fn digit_bits(n: u64) -> u32 {
    (MIN_BITS..=MAX_BITS)
        .min_by(|&x, &y| {
            let cost = |c: u32| windows_of(c) as f64 * (n as f64 + BUCKET_COST * f64::from(1u32 << (c - 1)));
            cost(x).total_cmp(&cost(y))
        })
        .expect("a range of widths")
}

fn next_level_entries(m: u64, chunk: u64) -> u64 {
    let chunks = m.div_ceil(chunk);
    if chunks > 1 {
        2 * chunks
    } else {
        0
    }
}

/// Device memory one MSM of `n` points takes besides its points and scalars, as cuda/msm.cuh's
/// `msm_on_stream` allocates it (for one group of windows: keys, entries, cub's temporary
/// storage ≈ one more array, the first two run-sum levels' partial sums; the buckets, the
/// window sums' levels), for buckets (xyzz) of `bucket_bytes`.
pub(super) fn scratch_bytes(n: u64, bucket_bytes: u64) -> u64 {
    let c = digit_bits(n);
    let (windows, half) = (windows_of(c), 1u64 << (c - 1));
    let group = (GROUP_ITEMS / n.max(1)).clamp(1, windows);
    let m = group * n;
    let first = next_level_entries(m, FIRST_CHUNK);
    let second = next_level_entries(first, LATER_CHUNK);
    let partial = 4 + bucket_bytes;
    // Step 4: the first level's segments and two run-sum levels over them, the plain sums'
    // two buffers, a row of sums per level.
    let segments = windows * (half / SEGMENT);
    let segments_next = next_level_entries(segments, LATER_CHUNK);
    let step4 = (segments + segments_next + next_level_entries(segments_next, LATER_CHUNK)) * partial
        + (segments + (segments / SEGMENT).max(windows)) * bucket_bytes
        + levels(half) * windows * bucket_bytes;
    5 * 4 * m + (first + second) * partial + (windows * half + 1) * bucket_bytes + step4
}

/// Step 4's levels for `half` buckets a window: segments of SEGMENT down to one a window.
fn levels(half: u64) -> u64 {
    let (mut levels, mut len) = (1, half);
    while len > SEGMENT {
        levels += 1;
        len /= SEGMENT;
    }
    levels
}

/// One MSM from host points and scalars, for the tests and benchmarks (`internals`).
#[cfg(feature = "internals")]
mod compare {
    use std::ffi::{c_int, c_void};

    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
    use ff::PrimeField;

    use super::super::sys::{self, call, to_projective, to_projective_g2};
    use super::super::GpuBackend;
    use super::MsmChoice;
    use crate::error::{Error, Result};

    /// `cuzk_gpu_msm_by` (G1) or `cuzk_gpu_msm_by_g2` (G2), the sum written to `Out`.
    type MsmByEntry<Out> =
        unsafe extern "C" fn(*mut sys::Context, *const sys::Points, *const c_void, c_int, u32, u32, *mut Out, *mut u64, *mut sys::Message) -> c_int;

    impl GpuBackend {
        /// Σ sᵢ·Pᵢ in G1 on the first device by `choice`'s MSM, the points and scalars copied
        /// there first, and the MSM's own wall time (ns), for the tests and benchmarks that
        /// hold the MSMs against each other and the CPU. The scalars are read as blstrs holds
        /// them (Montgomery form) when `montgomery`, else canonical. `digit_bits`: cuzk's digit
        /// width (8 to 22), or 0 for the one it picks for the size (sppark's: 0 only).
        pub fn msm_g1(
            &self,
            points: &[G1Affine],
            scalars: &[Scalar],
            choice: MsmChoice,
            digit_bits: u32,
            montgomery: bool,
        ) -> Result<(G1Projective, u64)> {
            let (sum, ns) = self.msm_by(sys::cuzk_gpu_msm_by, points, scalars, choice, digit_bits, montgomery)?;
            Ok((to_projective(&sum), ns))
        }

        /// The same in G2.
        pub fn msm_g2(
            &self,
            points: &[G2Affine],
            scalars: &[Scalar],
            choice: MsmChoice,
            digit_bits: u32,
            montgomery: bool,
        ) -> Result<(G2Projective, u64)> {
            let (sum, ns) = self.msm_by(sys::cuzk_gpu_msm_by_g2, points, scalars, choice, digit_bits, montgomery)?;
            Ok((to_projective_g2(&sum), ns))
        }

        fn msm_by<P, Out: Default>(
            &self,
            entry: MsmByEntry<Out>,
            points: &[P],
            scalars: &[Scalar],
            choice: MsmChoice,
            digit_bits: u32,
            montgomery: bool,
        ) -> Result<(Out, u64)> {
            if points.len() != scalars.len() {
                return Err(Error::invalid(format!("{} points and {} scalars", points.len(), scalars.len())));
            }
            if choice == MsmChoice::Sppark && digit_bits != 0 {
                return Err(Error::invalid("sppark's MSM picks its own windows: digit_bits must be 0"));
            }
            let device = self.devices.first().ok_or_else(|| Error::invalid("no device"))?;
            let ctx = device.ctx.ptr()?;
            let host_points = sys::Points {
                key: std::ptr::null(),
                query: sys::QUERY_L,
                host: points.as_ptr().cast(),
                n: points.len(),
            };
            let canonical: Vec<[u8; 32]> = if montgomery {
                Vec::new()
            } else {
                scalars.iter().map(|s| s.to_repr()).collect()
            };
            let raw: *const c_void = if montgomery {
                scalars.as_ptr().cast()
            } else {
                canonical.as_ptr().cast()
            };
            let implementation = match choice {
                MsmChoice::Cuzk => sys::MSM_CUZK,
                MsmChoice::Sppark => sys::MSM_SPPARK,
            };
            let mut out = Out::default();
            let mut msm_ns = 0;
            // SAFETY: n points of `entry`'s group and n scalars, alive for the synchronous call.
            call("MSM", |msg| unsafe {
                entry(
                    ctx,
                    &host_points,
                    raw,
                    c_int::from(montgomery),
                    implementation,
                    digit_bits,
                    &mut out,
                    &mut msm_ns,
                    msg,
                )
            })?;
            Ok((out, msm_ns))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digit_width_minimises_the_additions() {
        assert_eq!(digit_bits(1), MIN_BITS);
        assert_eq!(digit_bits(1 << 10), 8);
        assert_eq!(digit_bits(370_000), 14);
        assert_eq!(digit_bits(1 << 22), 16);
        assert_eq!(digit_bits(1 << 24), 20);
        // 12 windows of 22 bits: 2^27 entries fewer than 13 of 20, for 4 × 18.4M more buckets.
        assert_eq!(digit_bits(1 << 27), 22);
    }

    #[test]
    fn scratch_grows_with_the_points() {
        let small = scratch_bytes(1 << 10, 192);
        let winning = scratch_bytes(370_000, 192);
        assert!(small < winning && winning < scratch_bytes(1 << 20, 192) && winning < scratch_bytes(370_000, 384));
        // The sort's keys and entries alone: 19 windows (14 bits) × 370k × 16 bytes.
        assert!(winning > 19 * 370_000 * 16, "{winning}");
        // 2^27 points: the sort takes a group of two windows (2^28 entries), not all 12.
        let largest = scratch_bytes(1 << 27, 192);
        assert!(largest > 2 * (1 << 27) * 16 && largest < 12 * (1 << 27) * 16, "{largest}");
    }
}
