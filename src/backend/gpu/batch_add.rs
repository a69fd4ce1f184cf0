//! Batch addition on the device (cuda/batch_add.cuh): Σ Pᵢ over the bases whose scalar is 1,
//! one mixed addition per base instead of a Pippenger pass, in G1 and in G2 (B_G2).

use blstrs::{G1Projective, G2Projective};

use super::device::Device;
use super::sys::{self, call, to_projective, to_projective_g2};
use super::GpuBackend;
use crate::error::Result;

impl GpuBackend {
    pub(super) fn batch_add(device: &Device, points: &sys::Points, bitmap: &[u32], staging: &sys::Staging) -> Result<G1Projective> {
        let ctx = device.ctx.ptr()?;
        let mut out = sys::G1::default();
        // SAFETY: `points` describes live host or device points, `bitmap` has ⌈n/32⌉ words;
        // all outlive the synchronous call.
        call("batch addition", |msg| unsafe {
            sys::cuzk_gpu_batch_add(ctx, points, bitmap.as_ptr(), staging, &mut out, msg)
        })?;
        Ok(to_projective(&out))
    }

    pub(super) fn batch_add_g2(device: &Device, points: &sys::Points, bitmap: &[u32], staging: &sys::Staging) -> Result<G2Projective> {
        let ctx = device.ctx.ptr()?;
        let mut out = sys::G2::default();
        // SAFETY: as in batch_add.
        call("G2 batch addition", |msg| unsafe {
            sys::cuzk_gpu_batch_add_g2(ctx, points, bitmap.as_ptr(), staging, &mut out, msg)
        })?;
        Ok(to_projective_g2(&out))
    }
}
