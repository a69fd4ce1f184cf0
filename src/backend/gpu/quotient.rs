//! Stage H on the device (cuda/quotient.cuh): the coefficients of H = (A·B − C)/Z by 7 NTTs
//! and their MSM with the H query, from a, b, c evaluated on the host or from the compact
//! witness and the circuit's resident matrices (spmv.rs).

use std::ffi::c_void;
use std::sync::Arc;

use blstrs::{G1Projective, Scalar};
use group::Group;

use super::device::Device;
use super::device_key::PointSource;
use super::sys::{self, call, to_projective};
use super::GpuBackend;
use crate::error::{Error, Result};
use crate::groth16::ProvingKey;
use crate::synthesis::r1cs::{CircuitShape, CompactWitness};
use crate::timings::Timings;

/// What H is computed from on the device.
pub(super) enum HInput {
    /// a, b, c evaluated on the host.
    Products(Vec<Scalar>, Vec<Scalar>, Vec<Scalar>),
    /// The witness; the device evaluates a, b, c with its resident copy of `shape`.
    Witness { shape: Arc<CircuitShape>, witness: CompactWitness },
}

impl GpuBackend {
    /// H on the device from a, b, c (freed as soon as they are on it), or from the compact
    /// witness and the device's resident copy of the shape's matrices.
    pub(super) fn quotient_msm(
        device: &Device,
        src: &PointSource,
        key: &ProvingKey,
        input: HInput,
        lg_domain: u32,
        staging: &sys::Staging,
        t: &mut Timings,
    ) -> Result<G1Projective> {
        if lg_domain == 0 {
            // A domain of size 1 (only the constant input's constraint): H has no coefficient
            // and the H query no point, so H is the identity, as bellperson computes it; no
            // NTT or MSM is launched with those sizes.
            return Ok(G1Projective::identity());
        }
        let ctx = device.ctx.ptr()?;
        let h_points = src.points(sys::QUERY_H, &key.h);
        let mut h = sys::G1::default();
        let mut times = sys::HTimes::default();
        match input {
            HInput::Products(a, b, c) => {
                // SAFETY: a, b, c hold n scalars each and the H query the domain size - 1
                // points (checked by check_key_fits); all outlive the synchronous call.
                call("H (NTT + MSM)", |msg| unsafe {
                    sys::cuzk_gpu_quotient_msm(
                        ctx,
                        a.as_ptr() as *const c_void,
                        b.as_ptr() as *const c_void,
                        c.as_ptr() as *const c_void,
                        a.len(),
                        lg_domain,
                        &h_points,
                        staging,
                        &mut h,
                        &mut times,
                        msg,
                    )
                })?;
                t.pin_h2d_ns += times.h2d_ns;
            }
            HInput::Witness { shape, witness } => {
                let shapes = device.shapes.lock().unwrap_or_else(|p| p.into_inner());
                let resident = shapes.iter().find(|(s, _)| Arc::ptr_eq(s, &shape)).map(|(_, d)| d.ptr.as_ptr());
                let resident = resident.ok_or_else(|| Error::internal("the circuit's matrices left the device during the call"))?;
                let z = sys::Witness {
                    kinds: witness.kinds.as_ptr(),
                    full_offsets: witness.full_offsets.as_ptr(),
                    full: witness.full.as_ptr().cast(),
                    num_full: witness.full.len(),
                    n: witness.len,
                };
                // SAFETY: the resident shape stays alive while `shapes` is locked; the compact
                // witness's vectors hold the lengths given and outlive the synchronous call.
                call("H (A·z, B·z, C·z + NTT + MSM)", |msg| unsafe {
                    sys::cuzk_gpu_quotient_msm_r1cs(ctx, resident, &z, lg_domain, &h_points, staging, &mut h, &mut times, msg)
                })?;
                t.witness_upload_ns += times.h2d_ns;
                t.spmv_ns += times.spmv_ns;
                t.spmv_on_device = 1;
            }
        }
        t.ntt_ns += times.ntt_ns;
        t.msm_h_ns += times.msm_ns;
        Ok(to_projective(&h))
    }
}
