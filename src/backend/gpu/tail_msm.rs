//! Tail MSMs on the device (cuda/tail_msm.cuh): Pippenger over the full-width scalars left
//! after the 0/1 split, in G1 and in G2 (B_G2), by cuzk's MSM or sppark's (msm.rs). A resident
//! key's tail points are gathered on the device by index, or read in place for a dense tail; a
//! streamed key's are gathered on the host and sent.

use std::ffi::c_void;

use blstrs::{G1Projective, G2Projective};
use rayon::prelude::*;

use super::device::Device;
use super::msm::implementation;
use super::sys::{self, call, to_projective, to_projective_g2};
use super::GpuBackend;
use crate::backend::prep::ClassifiedScalars;
use crate::backend::MsmChoice;
use crate::error::Result;

/// Bits of a scalar of BLS12-381's scalar field, as sppark's MSM splits it into windows.
const SCALAR_BITS: u64 = 255;
/// sppark's MSM keeps a bucket per eight threads of a batch-addition block on every SM (a
/// block of 256 threads; 256 SMs bound every device it runs on).
const SPARE_BUCKETS: u64 = 256 * 256 / 32;

/// The most device memory one MSM of `n` points takes besides the points' resident copy, as
/// sppark's `msm_t` and cuda/tail_msm.cuh allocate it: the buckets and their histogram (the
/// window width follows `n`, as `msm_t`'s constructor picks it), each batch's scalars and
/// digits, our gathered tail points and their indices; with `streamed`, the points sent
/// (sppark holds two batches of them). `point_bytes` / `bucket_bytes`: an affine point and a
/// bucket (xyzz) of the MSM's group.
pub(super) fn scratch_bytes(n: u64, point_bytes: u64, bucket_bytes: u64, streamed: bool) -> u64 {
    let lg2 = |x: u64| u64::from(63 - x.max(1).leading_zeros());
    let wbits = if n > 192 { lg2(n + n / 2).saturating_sub(8).clamp(10, 18) } else { 10 };
    let windows = (SCALAR_BITS - 1) / wbits + 1;
    let buckets = windows << (wbits - 1);
    let per_point = 32 + 4 * windows + 4 + point_bytes + if streamed { 2 * point_bytes } else { 0 };
    (buckets + SPARE_BUCKETS) * bucket_bytes + 4 * buckets + n.next_multiple_of(32) * per_point
}

impl GpuBackend {
    /// The tail's MSM by `msm`'s choice for its size.
    pub(super) fn tail_msm(device: &Device, points: &sys::Points, classes: &ClassifiedScalars, msm: MsmChoice) -> Result<G1Projective> {
        let ctx = device.ctx.ptr()?;
        let mut out = sys::G1::default();
        // SAFETY: as many scalars (and indices, or gathered host points) as n; all alive for
        // the synchronous call.
        call("tail MSM", |msg| unsafe {
            sys::cuzk_gpu_msm(
                ctx,
                points,
                tail_indices(classes),
                classes.tail_scalars.as_ptr() as *const c_void,
                classes.tail_scalars.len(),
                implementation(msm, classes.tail_scalars.len()),
                &mut out,
                msg,
            )
        })?;
        Ok(to_projective(&out))
    }

    pub(super) fn tail_msm_g2(device: &Device, points: &sys::Points, classes: &ClassifiedScalars, msm: MsmChoice) -> Result<G2Projective> {
        let ctx = device.ctx.ptr()?;
        let mut out = sys::G2::default();
        // SAFETY: as many scalars (and indices, or gathered host points) as n; all alive for
        // the synchronous call.
        call("G2 tail MSM", |msg| unsafe {
            sys::cuzk_gpu_msm_g2(
                ctx,
                points,
                tail_indices(classes),
                classes.tail_scalars.as_ptr() as *const c_void,
                classes.tail_scalars.len(),
                implementation(msm, classes.tail_scalars.len()),
                &mut out,
                msg,
            )
        })?;
        Ok(to_projective_g2(&out))
    }
}

/// The tail's indices as the device takes them: NULL for a dense tail (point i, scalar i).
pub(super) fn tail_indices(classes: &ClassifiedScalars) -> *const u32 {
    if classes.dense {
        std::ptr::null()
    } else {
        classes.tail_indices.as_ptr()
    }
}

/// The points of a query whose scalars are full-width, gathered contiguously for the device.
pub(super) fn gather_tail<P: Copy + Send + Sync>(points: &[P], classes: &ClassifiedScalars) -> Vec<P> {
    classes.tail_indices.par_iter().map(|&i| points[i as usize]).collect()
}
