//! Stage H on the device (cuda/quotient.cuh): the coefficients of H = (A·B − C)/Z by 6 NTTs,
//! from a, b, c evaluated on the host or from the witness and the circuit's resident matrices
//! (spmv.rs), then their MSM with the H query in chunks.

use std::ffi::c_void;
use std::sync::Arc;

use blstrs::{G1Projective, Scalar};
use group::Group;

use super::device::Device;
use super::device_key::PointSource;
use super::msm::implementation;
use super::spmv::DeviceWitness;
use super::sys::{self, call, to_projective};
use super::{GpuBackend, MsmPlan};
use crate::error::{Error, Result};
use crate::synthesis::r1cs::CircuitShape;
use crate::timings::{nanos, Timings};

/// What H is computed from on the device.
pub(super) enum HInput {
    /// a, b, c evaluated on the host; with the witness when the MSMs read it on the device
    /// (sent after them).
    Products {
        abc: (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>),
        witness: Option<DeviceWitness>,
    },
    /// The witness; the device evaluates a, b, c with its resident copy of `shape`.
    Witness { shape: Arc<CircuitShape>, witness: DeviceWitness },
}

/// H's MSM is split into chunks of this many points by default (`EngineConfig::gpu_h_msm_chunk`;
/// a 32GiB partition's 2^27 in two) so that a WinningPoSt waits for one chunk, not the whole.
/// By cuzk's MSM the chunks are parts of one MSM that share its buckets (cuda/quotient.cuh):
/// its windows are the whole MSM's, reduced once (docs/PERFORMANCE.md).
pub(super) const H_MSM_CHUNK: u64 = 1 << 26;

impl GpuBackend {
    /// H's coefficients on the device, left in the context's buffers of `set`: from a, b, c
    /// (freed as soon as they are on it), or from the witness and the device's resident copy
    /// of the shape's matrices. Either way a witness given is left in the set's witness buffer.
    pub(super) fn quotient(device: &Device, set: u32, input: HInput, lg_domain: u32, staging: &sys::Staging, t: &mut Timings) -> Result<()> {
        let ctx = device.ctx.ptr()?;
        if lg_domain == 0 {
            // A domain of size 1 (only the constant input's constraint): H has no coefficient
            // and the H query no point (`h_msm` gives the identity, as bellperson computes
            // it); no NTT is launched with that size.
            return match input {
                HInput::Products { witness: Some(witness), .. }
                | HInput::Witness {
                    witness: witness @ DeviceWitness::Whole { .. },
                    ..
                } => send_witness(ctx, set, &witness, staging, t),
                _ => Ok(()),
            };
        }
        let mut times = sys::HTimes::default();
        match input {
            HInput::Products { abc: (a, b, c), witness } => {
                // SAFETY: a, b, c hold n scalars each; all outlive the synchronous call.
                call("H's coefficients (NTT)", |msg| unsafe {
                    sys::cuzk_gpu_quotient(
                        ctx,
                        set,
                        a.as_ptr() as *const c_void,
                        b.as_ptr() as *const c_void,
                        c.as_ptr() as *const c_void,
                        a.len(),
                        lg_domain,
                        staging,
                        &mut times,
                        msg,
                    )
                })?;
                t.pin_h2d_ns += times.h2d_ns;
                drop((a, b, c));
                if let Some(witness) = witness {
                    send_witness(ctx, set, &witness, staging, t)?;
                }
            }
            HInput::Witness { shape, witness } => {
                let shapes = device.shapes.lock().unwrap_or_else(|p| p.into_inner());
                let resident = shapes.iter().find(|r| Arc::ptr_eq(&r.shape, &shape)).map(|r| r.matrices.ptr());
                let resident = resident.ok_or_else(|| Error::internal("the circuit's matrices left the device during the call"))?;
                let z = witness.raw();
                // SAFETY: the resident shape stays alive while `shapes` is locked; the
                // witness's vectors hold the lengths given and outlive the synchronous call.
                call("H's coefficients (A·z, B·z, C·z + NTT)", |msg| unsafe {
                    sys::cuzk_gpu_quotient_r1cs(ctx, set, resident, &z, lg_domain, staging, &mut times, msg)
                })?;
                t.witness_upload_ns += times.h2d_ns;
                t.spmv_ns += times.spmv_ns;
                t.spmv_on_device = 1;
            }
        }
        t.ntt_ns += times.ntt_ns;
        Ok(())
    }

    /// H = Σ hᵢ·Pᵢ over the coefficients `quotient` left in `set` and the H query, in chunks
    /// of `msms.h_chunk` points, each by `msms.choice`'s MSM for its size (by cuzk's, parts of
    /// one MSM: the identity from each chunk but the last, which gives the whole sum);
    /// `between` runs before each chunk (the caller making way).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn h_msm(
        device: &Device,
        set: u32,
        src: &PointSource,
        lg_domain: u32,
        msms: MsmPlan,
        t: &mut Timings,
        between: &mut dyn FnMut(&mut Timings) -> Result<()>,
    ) -> Result<G1Projective> {
        let npoints = (1usize << lg_domain) - 1;
        let mut h = G1Projective::identity();
        if lg_domain == 0 {
            return Ok(h);
        }
        let ctx = device.ctx.ptr()?;
        let h_points = src.points(sys::QUERY_H);
        let mut first = 0;
        while first < npoints {
            between(t)?;
            let count = (msms.h_chunk as usize).min(npoints - first);
            let mut chunk = sys::G1::default();
            let start = std::time::Instant::now();
            // SAFETY: the H query holds the domain size - 1 points (checked by check_key_fits)
            // and outlives the synchronous call; the chunk lies inside it.
            call("H's MSM", |msg| unsafe {
                sys::cuzk_gpu_h_msm(
                    ctx,
                    set,
                    lg_domain,
                    &h_points,
                    first,
                    count,
                    implementation(msms.choice, count),
                    &mut chunk,
                    msg,
                )
            })?;
            t.msm_h_ns += nanos(start.elapsed());
            h += to_projective(&chunk);
            first += count;
        }
        Ok(h)
    }
}

/// The witness into the witness buffer of `set` alone (no matrices evaluated with it).
fn send_witness(ctx: *mut sys::Context, set: u32, witness: &DeviceWitness, staging: &sys::Staging, t: &mut Timings) -> Result<()> {
    let z = witness.raw();
    let mut h2d_ns = 0;
    // SAFETY: the witness's vectors hold the lengths given and outlive the synchronous call.
    call("sending the witness", |msg| unsafe {
        sys::cuzk_gpu_witness_upload(ctx, set, &z, staging, &mut h2d_ns, msg)
    })?;
    t.witness_upload_ns += h2d_ns;
    Ok(())
}
