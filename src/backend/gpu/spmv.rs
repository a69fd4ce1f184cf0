//! A circuit's R1CS matrices resident in device memory (cuda/spmv.cuh), from which the device
//! evaluates a = A·z, b = B·z, c = C·z for stage H: their upload and free, and the device's
//! cache of them, most recently used first, evicted when a new shape needs the room.

use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Instant;

use super::context::Context;
use super::device::Device;
use super::sys::{self, call};
use crate::error::{Error, Result, Status};
use crate::synthesis::r1cs::{CircuitShape, SparseMatrix};
use crate::timings::{nanos, Timings};

/// A circuit's R1CS matrices in device memory (cuda/spmv.cuh).
pub(super) struct DeviceShape {
    pub(super) ptr: NonNull<sys::Shape>,
    pub(super) bytes: u64,
}

// SAFETY: immutable device memory, read by one call at a time (the device turn).
unsafe impl Send for DeviceShape {}
unsafe impl Sync for DeviceShape {}

impl DeviceShape {
    fn upload(ctx: &Context, shape: &CircuitShape, staging: &sys::Staging) -> Result<Self> {
        let csr = |m: &SparseMatrix| sys::CsrHost {
            row_starts: m.row_starts().as_ptr(),
            columns: m.columns().as_ptr(),
            coefficient_ids: m.coefficient_ids().as_ptr(),
            nonzeros: m.num_nonzeros(),
        };
        let host = sys::ShapeHost {
            matrices: [csr(shape.a()), csr(shape.b()), csr(shape.c())],
            coefficients: shape.coefficients().as_ptr().cast(),
            num_coefficients: shape.coefficients().len(),
            rows: shape.num_constraints(),
            variables: shape.num_inputs() + shape.num_aux(),
        };
        let (mut out, mut bytes) = (std::ptr::null_mut(), 0u64);
        // SAFETY: the shape's vectors hold the lengths given and outlive the synchronous call.
        call("uploading the circuit's R1CS matrices", |msg| unsafe {
            sys::cuzk_gpu_shape_upload(ctx.ptr(), &host, staging, &mut out, &mut bytes, msg)
        })?;
        let ptr = NonNull::new(out).ok_or_else(|| Error::internal("device shape is NULL"))?;
        Ok(DeviceShape { ptr, bytes })
    }
}

impl Drop for DeviceShape {
    fn drop(&mut self) {
        // SAFETY: made by cuzk_gpu_shape_upload, freed once.
        unsafe { sys::cuzk_gpu_shape_free(self.ptr.as_ptr()) }
    }
}

/// Device memory a call still allocates beyond the resident data: sppark's MSM scratch and
/// the compact witness. Matrices are made resident only with this much left free.
const CALL_HEADROOM_BYTES: u64 = 4 << 30;

impl Device {
    /// Makes `shape`'s matrices resident on this device (timed into `shape_upload_ns`) unless
    /// they are already; false when they do not fit beside the key, the buffers of a domain of
    /// 2^lg_domain and the call's headroom, other shapes evicted first. Call inside the turn.
    pub(super) fn make_shape_resident(&self, shape: &Arc<CircuitShape>, lg_domain: u32, staging: &sys::Staging, t: &mut Timings) -> Result<bool> {
        let mut shapes = self.shapes.lock().unwrap_or_else(|p| p.into_inner());
        // A shape only this cache still holds was dropped by the engine (its key evicted): it
        // can never be asked for again, so its device memory goes now.
        shapes.retain(|(s, _)| Arc::strong_count(s) > 1);
        if let Some(i) = shapes.iter().position(|(s, _)| Arc::ptr_eq(s, shape)) {
            let entry = shapes.remove(i);
            shapes.insert(0, entry);
            return Ok(true);
        }
        let memory = self.ctx.memory()?;
        let scalars = |n: u64| 32 * n;
        let buffers = scalars(3 << lg_domain).saturating_sub(memory.ntt_buffer_bytes)
            + scalars((shape.num_inputs() + shape.num_aux()) as u64).saturating_sub(memory.witness_buffer_bytes);
        let needed = shape.size_bytes() as u64 + buffers + CALL_HEADROOM_BYTES;
        let mut free = memory.free;
        while free < needed {
            let Some((_, evicted)) = shapes.pop() else {
                return Ok(false);
            };
            free += evicted.bytes;
        }
        let start = Instant::now();
        let uploaded = match DeviceShape::upload(&self.ctx, shape, staging) {
            Err(e) if e.status == Status::OutOfMemory => return Ok(false),
            other => other?,
        };
        t.shape_upload_ns += nanos(start.elapsed());
        log::info!(
            "circuit matrices ({} constraints, {} MiB) resident on device {} in {:.2?}",
            shape.num_constraints(),
            uploaded.bytes >> 20,
            self.ordinal,
            start.elapsed()
        );
        shapes.insert(0, (Arc::clone(shape), uploaded));
        Ok(true)
    }
}
