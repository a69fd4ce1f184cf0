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
    match choice {
        MsmChoice::Cuzk if n <= OWN_MSM_MAX_POINTS => sys::MSM_CUZK,
        MsmChoice::CuzkAffine if n <= OWN_MSM_MAX_POINTS => sys::MSM_CUZK_AFFINE,
        _ => sys::MSM_SPPARK,
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
/// The most entries one group of windows sorts, without batched-affine rounds and with them.
const GROUP_ITEMS: u64 = 1 << 28;
const AFFINE_GROUP_ITEMS: u64 = 1 << 25;
/// cuda/affine_rounds.cuh: sorted places per thread of a round, values per node of the
/// inversion tree, the most rounds; an affine point's and an Fp element's bytes.
const ROUND_CHUNK: u64 = 16;
const TREE_FANOUT: u64 = 16;
const MAX_ROUNDS: u32 = 12;
const XY_BYTES: u64 = 96;
const FP_BYTES: u64 = 48;

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

/// cuda/msm.cuh's `affine_rounds_for`: rounds that halve a bucket's expected entries to one.
fn affine_rounds_for(n: u64, c: u32) -> u32 {
    let (mut rounds, mut per_bucket) = (0, n >> (c - 1));
    while per_bucket >= 2 && rounds < MAX_ROUNDS {
        rounds += 1;
        per_bucket /= 2;
    }
    rounds
}

/// cuda/affine_rounds.cuh's `round_capacity`: the places a round writes at most from `len`.
fn round_capacity(len: u64, keys: u64) -> u64 {
    ((len + keys + len.div_ceil(ROUND_CHUNK)) / 2 + 1).min(len)
}

/// cuda/affine_rounds.cuh's `tree_values`: the inversion tree's values for `leaves` leaves.
fn tree_values(leaves: u64) -> u64 {
    let (mut total, mut n) = (1, leaves);
    while n > 1 {
        total += n;
        n = n.div_ceil(TREE_FANOUT);
    }
    total
}

/// Device memory one MSM of `n` points takes besides its points and scalars, as cuda/msm.cuh's
/// `msm_on_stream` allocates it (for one group of windows: keys, entries, cub's temporary
/// storage ≈ one more array, the first two run-sum levels' partial sums; the buckets, the
/// window sums' levels), for buckets (xyzz) of `bucket_bytes`; with `affine` (a G1 MSM under
/// `MSM_CUZK_AFFINE`), a group's batched-affine rounds too: their two lists, the threads'
/// counts and offsets, the inversion tree.
pub(super) fn scratch_bytes(n: u64, bucket_bytes: u64, affine: bool) -> u64 {
    let c = digit_bits(n);
    let half = 1u64 << (c - 1);
    let rounds = if affine { affine_rounds_for(n, c) } else { 0 };
    let (group, m) = group_entries(n, affine);
    let (mut listed, mut lists) = (m, 0);
    for round in 0..rounds {
        listed = round_capacity(listed, group * half);
        if round < 2 {
            lists += listed * (4 + XY_BYTES);
        }
    }
    let threads = m.div_ceil(ROUND_CHUNK) + 1;
    let rounds_bytes = if rounds > 0 {
        lists + 2 * 4 * threads + tree_values(threads) * FP_BYTES
    } else {
        0
    };
    5 * 4 * m + rounds_bytes + run_levels_bytes(listed, bucket_bytes) + buckets_bytes(c, bucket_bytes) + step4_bytes(c, bucket_bytes)
}

/// The first two run-sum levels' partial sums (keys and sums) over `m` sorted entries.
fn run_levels_bytes(m: u64, bucket_bytes: u64) -> u64 {
    let first = next_level_entries(m, FIRST_CHUNK);
    let second = next_level_entries(first, LATER_CHUNK);
    (first + second) * (4 + bucket_bytes)
}

/// cuda/msm.cuh's `buckets_of`: every window's buckets and one past the last.
fn buckets_bytes(c: u32, bucket_bytes: u64) -> u64 {
    (windows_of(c) * (1 << (c - 1)) + 1) * bucket_bytes
}

/// Step 4: the first level's segments and two run-sum levels over them, the plain sums' two
/// buffers, a row of sums per level.
fn step4_bytes(c: u32, bucket_bytes: u64) -> u64 {
    let (windows, half) = (windows_of(c), 1u64 << (c - 1));
    let segments = windows * (half / SEGMENT);
    let segments_next = next_level_entries(segments, LATER_CHUNK);
    (segments + segments_next + next_level_entries(segments_next, LATER_CHUNK)) * (4 + bucket_bytes)
        + (segments + (segments / SEGMENT).max(windows)) * bucket_bytes
        + levels(half) * windows * bucket_bytes
}

/// Device memory a part of `part` points of an H MSM of `npoints` in parts takes beyond the NTT
/// buffers, `free_words` 32-bit words of which its coefficients leave free (cuda/quotient.cuh's
/// `parts_layout`, G1 buckets of `bucket_bytes`): the parts' shared buckets when they do not
/// fit there beside a window's sort (held from the first part to the last), the sort when a
/// group's does not fit in what is left, cub's temporary storage, the run sums' partial sums,
/// the last part's window sums. None where the MSM is one part (`scratch_bytes`).
pub(super) fn part_bytes(npoints: u64, part: u64, free_words: u64, bucket_bytes: u64) -> Option<u64> {
    if part >= npoints {
        return None;
    }
    let c = digit_bits(npoints);
    let buckets = buckets_bytes(c, bucket_bytes);
    let bucket_words = (buckets / 4).next_multiple_of(64);
    let stride = part.next_multiple_of(64);
    let in_ntt_buffers = bucket_words + 4 * stride <= free_words;
    let sort_words = if in_ntt_buffers { free_words - bucket_words } else { free_words };
    let group = (sort_words / (4 * stride)).min(GROUP_ITEMS / part).clamp(1, windows_of(c));
    let m = group * part;
    let sort = 4 * 4 * m.next_multiple_of(64);
    let held_buckets = if in_ntt_buffers { 0 } else { buckets };
    let allocated_sort = if sort <= 4 * sort_words { 0 } else { sort };
    Some(held_buckets + allocated_sort + 4 * m + run_levels_bytes(m, bucket_bytes) + step4_bytes(c, bucket_bytes))
}

/// Windows a group sorts (steps 1–3) and its entries, for an MSM of `n` points.
fn group_entries(n: u64, affine: bool) -> (u64, u64) {
    let c = digit_bits(n);
    let windows = windows_of(c);
    let items = if affine && affine_rounds_for(n, c) > 0 {
        AFFINE_GROUP_ITEMS
    } else {
        GROUP_ITEMS
    };
    let group = (items / n.max(1)).clamp(1, windows);
    (group, group * n)
}

/// Bytes of the sort's keys and entries in an MSM of `n` points (4 arrays of a group's
/// entries, each rounded up to 64), which `msm_on_stream` puts in a scratch given to it when
/// they fit (H's MSM: the NTT buffers its coefficients leave free, cuda/quotient.cuh); part of
/// `scratch_bytes`.
pub(super) fn sort_bytes(n: u64, affine: bool) -> u64 {
    let (_, m) = group_entries(n, affine);
    4 * 4 * m.next_multiple_of(64)
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

    use super::super::device_key::DeviceKey;
    use super::super::sys::{self, call, to_projective, to_projective_g2};
    use super::super::GpuBackend;
    use super::MsmChoice;
    use crate::error::{Error, Result};

    /// Points in host memory for `cuzk_gpu_msm_by*`, which copies them to the device.
    fn host_points<P>(points: &[P]) -> sys::Points {
        sys::Points {
            key: std::ptr::null(),
            query: sys::QUERY_L,
            host: points.as_ptr().cast(),
            n: points.len(),
        }
    }

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
            let (sum, ns) = self.msm_by(sys::cuzk_gpu_msm_by, host_points(points), scalars, choice, digit_bits, montgomery)?;
            Ok((to_projective(&sum), ns))
        }

        /// Σ sᵢ·Pᵢ in G1 by cuzk's MSM over the H table of `points` (cuda/h_table.cuh): a key of
        /// them as its H query, resident on the first device, its table made there, as H's MSM
        /// reads a resident key's; and the MSM's own wall time (ns). `points`: at most 2^22.
        pub fn msm_g1_over_h_table(&self, points: &[G1Affine], scalars: &[Scalar], montgomery: bool) -> Result<(G1Projective, u64)> {
            let device = self.devices.first().ok_or_else(|| Error::invalid("no device"))?;
            let key = DeviceKey::h_query_only(&device.ctx, points)?;
            let source = sys::Points {
                key: key.ptr(),
                query: sys::QUERY_H,
                host: std::ptr::null(),
                n: points.len(),
            };
            let (sum, ns) = self.msm_by(sys::cuzk_gpu_msm_by, source, scalars, MsmChoice::Cuzk, 0, montgomery)?;
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
            let (sum, ns) = self.msm_by(sys::cuzk_gpu_msm_by_g2, host_points(points), scalars, choice, digit_bits, montgomery)?;
            Ok((to_projective_g2(&sum), ns))
        }

        /// `entry` over the points `points` names (held by the caller for the call).
        fn msm_by<Out: Default>(
            &self,
            entry: MsmByEntry<Out>,
            points: sys::Points,
            scalars: &[Scalar],
            choice: MsmChoice,
            digit_bits: u32,
            montgomery: bool,
        ) -> Result<(Out, u64)> {
            if points.n != scalars.len() {
                return Err(Error::invalid(format!("{} points and {} scalars", points.n, scalars.len())));
            }
            if choice == MsmChoice::Sppark && digit_bits != 0 {
                return Err(Error::invalid("sppark's MSM picks its own windows: digit_bits must be 0"));
            }
            let device = self.devices.first().ok_or_else(|| Error::invalid("no device"))?;
            let ctx = device.ctx.ptr()?;
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
                MsmChoice::CuzkAffine => sys::MSM_CUZK_AFFINE,
                MsmChoice::Sppark => sys::MSM_SPPARK,
            };
            let mut out = Out::default();
            let mut msm_ns = 0;
            // SAFETY: n points of `entry`'s group and n scalars, alive for the synchronous call.
            call("MSM", |msg| unsafe {
                entry(
                    ctx,
                    &points,
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
        let small = scratch_bytes(1 << 10, 192, false);
        let winning = scratch_bytes(370_000, 192, false);
        assert!(small < winning && winning < scratch_bytes(1 << 20, 192, false) && winning < scratch_bytes(370_000, 384, false));
        // The sort's keys and entries alone: 19 windows (14 bits) × 370k × 16 bytes.
        assert!(winning > 19 * 370_000 * 16, "{winning}");
        // 2^27 points: the sort takes a group of two windows (2^28 entries), not all 12.
        let largest = scratch_bytes(1 << 27, 192, false);
        assert!(largest > 2 * (1 << 27) * 16 && largest < 12 * (1 << 27) * 16, "{largest}");
        // With batched-affine rounds: one window a group (2^27 entries), plus its two lists
        // (≈ 0.54 and 0.29 of the entries, 100 bytes a place) and the inversion tree.
        let affine = scratch_bytes(1 << 27, 192, true);
        assert!(affine > largest && affine < 2 * largest, "{affine} against {largest}");
        assert!(affine > (1 << 27) * 16 + (1u64 << 27) * 80, "{affine}");
        // Too few points a bucket for a round (200 points, 128 buckets a window): as without.
        assert_eq!(scratch_bytes(200, 192, true), scratch_bytes(200, 192, false));
        assert!(scratch_bytes(1 << 10, 192, true) > small);
        // H's 2^26-point chunks: a window a group sorted, less than four windows without rounds.
        assert!(scratch_bytes(1 << 26, 192, true) < scratch_bytes(1 << 26, 192, false));
    }

    #[test]
    fn parts_of_an_h_msm_share_buckets_where_the_ntt_buffers_hold_them() {
        let free_words = |lg_domain: u32| 2 * 32 * (1u64 << lg_domain) / 4;
        // One part: the MSM alone.
        assert_eq!(part_bytes((1 << 23) - 1, 1 << 23, free_words(23), 192), None);
        // A 32GiB partition's 2^27 - 1 points in two: 22-bit digits (12 windows), their 4.8 GB
        // of buckets and a group of three windows' sort in the 8.6 GB of NTT buffers; what is
        // allocated is less than a 2^26-point chunk alone took (its sort in the NTT buffers).
        let part = part_bytes((1 << 27) - 1, 1 << 26, free_words(27), 192).expect("two parts");
        let buckets = buckets_bytes(22, 192);
        assert!(buckets > 4_800_000_000 && buckets + 4 * 3 * (1 << 26) * 4 <= 4 * free_words(27));
        let alone = scratch_bytes(1 << 26, 192, false) - sort_bytes(1 << 26, false);
        assert!(part < alone, "{part} against {alone}");
        assert!(part > 4 * 3 * (1 << 26), "cub's storage for three windows' sort: {part}");
        // The buckets are not allocated: with room for the same sort but not for them, a part
        // holds them beside the NTT buffers, and takes exactly their bytes more.
        let no_room = part_bytes((1 << 27) - 1, 1 << 26, 4 * 3 * (1 << 26), 192).expect("two parts");
        assert_eq!(no_room - part, buckets);
        // 2^23 - 1 points in parts of 2^21: 19-bit digits, 0.7 GB of buckets that the 0.5 GB
        // of NTT buffers lack room for: held beside them.
        let small = part_bytes((1 << 23) - 1, 1 << 21, free_words(23), 192).expect("four parts");
        assert!(small > buckets_bytes(19, 192) && buckets_bytes(19, 192) > 4 * free_words(23), "{small}");
    }

    /// The batched-affine rounds (cuda/affine_rounds.cuh) run on the host by the steps the
    /// device runs, held against blstrs: every key's sum over the reduced list is the sum of its
    /// entries' points. Runs of every length from 1 to 40 (so thread boundaries inside them),
    /// a point twice in a bucket (tangents, and tangents of their sums), a point and its
    /// negation (infinity), the point at infinity, keys without entries, `none` entries last;
    /// 1 to 12 rounds; 40 000 random entries (an inversion tree of three levels); only `none`
    /// entries.
    #[test]
    fn batched_affine_rounds_keep_every_bucket_sum() {
        use blstrs::{G1Affine, G1Projective};
        use group::prime::PrimeCurveAffine;
        use group::{Curve, Group};
        use rand::{Rng, SeedableRng};

        let seed: u64 = rand::random();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut points: Vec<G1Affine> = (0..96).map(|_| G1Projective::random(&mut rng).to_affine()).collect();
        points[7] = G1Affine::identity();
        // The host check's sums of keys below `none` after `rounds` rounds.
        let reduce = |keys: &[u32], entries: &[u32], none: u32, rounds: u32| {
            let mut sums: Vec<sys::G1> = (0..none).map(|_| sys::G1::default()).collect();
            // SAFETY: the slices' lengths are the counts passed.
            sys::call("affine rounds", |msg| unsafe {
                sys::cuzk_gpu_affine_rounds_check(
                    points.as_ptr().cast(),
                    points.len(),
                    keys.as_ptr(),
                    entries.as_ptr(),
                    keys.len(),
                    none,
                    rounds,
                    sums.as_mut_ptr(),
                    msg,
                )
            })
            .map(|()| sums.iter().map(sys::to_projective).collect::<Vec<_>>())
        };
        let expect = |keys: &[u32], entries: &[u32], none: u32| {
            let mut expected = vec![G1Projective::identity(); none as usize];
            for (&k, &e) in keys.iter().zip(entries).filter(|(&k, _)| k < none) {
                let p = G1Projective::from(points[(e & 0x7fff_ffff) as usize]);
                expected[k as usize] += if e >> 31 == 1 { -p } else { p };
            }
            expected
        };
        let (mut keys, mut entries) = (Vec::new(), Vec::new());
        let mut push = |key: u32, index: u32, negated: bool| {
            keys.push(key);
            entries.push(index | (u32::from(negated) << 31));
        };
        // Key 0: one point 33 times (tangents all the way); key 1: P and −P; key 2: P twice and
        // the point at infinity; then random runs, some keys left empty.
        for _ in 0..33 {
            push(0, 3, false);
        }
        push(1, 4, false);
        push(1, 4, true);
        push(2, 5, true);
        push(2, 7, false);
        push(2, 5, true);
        let mut key = 3;
        for length in (1..=40).chain(std::iter::repeat_n(0, 5)).chain((1..=40).rev()) {
            for _ in 0..length {
                push(key, rng.gen_range(0..points.len() as u32), rng.gen());
            }
            key += 1;
        }
        let none = key;
        for _ in 0..21 {
            push(none, rng.gen_range(0..points.len() as u32), false);
        }
        let expected = expect(&keys, &entries, none);
        for rounds in [1, 2, 3, 6, 12] {
            let sums = reduce(&keys, &entries, none, rounds).unwrap_or_else(|e| panic!("seed {seed}, {rounds} rounds: {e}"));
            for (k, (sum, want)) in sums.iter().zip(&expected).enumerate() {
                assert_eq!(sum, want, "seed {seed}, {rounds} rounds, key {k}");
            }
        }
        // 40 000 random entries over 1 000 keys (2 501 threads in round 0: three tree levels).
        let mut random: Vec<(u32, u32)> = (0..40_000)
            .map(|_| {
                (
                    rng.gen_range(0..1_001),
                    rng.gen_range(0..points.len() as u32) | (u32::from(rng.gen::<bool>()) << 31),
                )
            })
            .collect();
        random.sort_unstable_by_key(|&(k, _)| k);
        let (random_keys, random_entries): (Vec<u32>, Vec<u32>) = random.into_iter().unzip();
        let sums = reduce(&random_keys, &random_entries, 1_000, 6).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert_eq!(sums, expect(&random_keys, &random_entries, 1_000), "seed {seed}, random entries");
        // Only zero digits: every sum is the identity.
        let sums = reduce(&[9; 50], &[1; 50], 9, 3).expect("only `none` entries");
        assert!(sums.iter().all(|s| bool::from(s.is_identity())));
        // Input the steps do not take: unsorted keys, an entry past the points, 0 or 13 rounds.
        let mut unsorted = keys.clone();
        unsorted.swap(0, 40);
        assert!(reduce(&unsorted, &entries, none, 2).is_err());
        let mut past = entries.clone();
        past[3] = points.len() as u32;
        assert!(reduce(&keys, &past, none, 2).is_err());
        assert!(reduce(&keys, &entries, none, 13).is_err());
        assert!(reduce(&keys, &entries, none, 0).is_err());
    }
}
