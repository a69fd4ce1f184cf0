//! Tail MSMs on the device (cuda/tail_msm.cuh): Pippenger over the full-width scalars left
//! after the 0/1 split, in G1 and in G2 (B_G2). A resident key's tail points are gathered on
//! the device by index, or read in place for a dense tail; a streamed key's are gathered on
//! the host and sent.

use std::ffi::c_void;

use blstrs::{G1Projective, G2Projective};
use rayon::prelude::*;

use super::device::Device;
use super::sys::{self, call, to_projective, to_projective_g2};
use super::GpuBackend;
use crate::backend::prep::ClassifiedScalars;
use crate::error::Result;

impl GpuBackend {
    pub(super) fn tail_msm(device: &Device, points: &sys::Points, classes: &ClassifiedScalars) -> Result<G1Projective> {
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
                &mut out,
                msg,
            )
        })?;
        Ok(to_projective(&out))
    }

    pub(super) fn tail_msm_g2(device: &Device, points: &sys::Points, classes: &ClassifiedScalars) -> Result<G2Projective> {
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
                &mut out,
                msg,
            )
        })?;
        Ok(to_projective_g2(&out))
    }
}

/// The tail's indices as the device takes them: NULL for a dense tail (point i, scalar i).
fn tail_indices(classes: &ClassifiedScalars) -> *const u32 {
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
