//! A circuit's R1CS matrices resident in device memory (cuda/spmv.cuh), from which the device
//! evaluates a = A·z, b = B·z, c = C·z for stage H: their upload and free, and the device's
//! cache of them, most recently used first, evicted when a new shape needs the room.

use std::ptr::NonNull;

use super::context::Context;
use super::sys::{self, call};
use crate::error::{Error, Result};
use crate::synthesis::r1cs::{CircuitShape, SparseMatrix};

/// A circuit's R1CS matrices in device memory (cuda/spmv.cuh).
pub(super) struct DeviceShape {
    pub(super) ptr: NonNull<sys::Shape>,
    pub(super) bytes: u64,
}

// SAFETY: immutable device memory, read by one call at a time (the device turn).
unsafe impl Send for DeviceShape {}
unsafe impl Sync for DeviceShape {}

impl DeviceShape {
    pub(super) fn upload(ctx: &Context, shape: &CircuitShape, staging: &sys::Staging) -> Result<Self> {
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
        let ctx = ctx.ptr()?;
        let (mut out, mut bytes) = (std::ptr::null_mut(), 0u64);
        // SAFETY: the shape's vectors hold the lengths given and outlive the synchronous call.
        call("uploading the circuit's R1CS matrices", |msg| unsafe {
            sys::cuzk_gpu_shape_upload(ctx, &host, staging, &mut out, &mut bytes, msg)
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
