//! A circuit's R1CS matrices resident in device memory (cuda/spmv.cuh), from which the device
//! evaluates a = A·z, b = B·z, c = C·z for stage H: their upload and free, and the device's
//! cache of them, most recently used first, evicted when a new shape needs the room; and the
//! witness z as it crosses to the device.

use blstrs::Scalar;

use super::context::{Context, ContextObject};
use super::sys::{self, call};
use crate::error::Result;
use crate::synthesis::r1cs::{CircuitShape, CompactWitness, SparseMatrix};

/// A circuit's R1CS matrices in device memory (cuda/spmv.cuh).
pub(super) struct DeviceShape {
    object: ContextObject<sys::Shape>,
    pub(super) bytes: u64,
}

// SAFETY: immutable device memory, read by one call at a time (the device turn).
unsafe impl Send for DeviceShape {}
unsafe impl Sync for DeviceShape {}

impl DeviceShape {
    /// Copies the shape's matrices to the device (read back from its file first when the
    /// host released them).
    pub(super) fn upload(ctx: &Context, shape: &CircuitShape, staging: &sys::Staging) -> Result<Self> {
        let m = shape.matrices()?;
        let csr = |m: &SparseMatrix| sys::CsrHost {
            row_starts: m.row_starts().as_ptr(),
            columns: m.columns().as_ptr(),
            coefficient_ids: m.coefficient_ids().as_ptr(),
            nonzeros: m.num_nonzeros(),
        };
        let host = sys::ShapeHost {
            matrices: [csr(&m.a), csr(&m.b), csr(&m.c)],
            coefficients: m.coefficients.as_ptr().cast(),
            num_coefficients: m.coefficients.len(),
            rows: shape.num_constraints(),
            variables: shape.num_inputs() + shape.num_aux(),
        };
        let (ctx, life) = ctx.current()?;
        let (mut out, mut bytes) = (std::ptr::null_mut(), 0u64);
        // SAFETY: the matrices' vectors hold the lengths given and outlive the synchronous call.
        call("uploading the circuit's R1CS matrices", |msg| unsafe {
            sys::cuzk_gpu_shape_upload(ctx, &host, staging, &mut out, &mut bytes, msg)
        })?;
        // SAFETY: made by cuzk_gpu_shape_upload in this context, owned here.
        let object = unsafe { ContextObject::new(out, life, sys::cuzk_gpu_shape_free, "device shape")? };
        Ok(DeviceShape { object, bytes })
    }

    pub(super) fn ptr(&self) -> *const sys::Shape {
        self.object.ptr()
    }
}

/// The witness z = (inputs..., aux...) as it crosses to the device (`cuzk_gpu_witness`).
pub(super) enum DeviceWitness {
    /// A 2-bit kind per value and the full-width values: for a witness of mostly 0s and 1s
    /// (PoRep: ~1/20 of its bytes).
    Compact(CompactWitness),
    /// Every value as it is: for a mostly full-width witness (a PoSt's), whose MSMs then read
    /// their scalars on the device (witness_msm.rs).
    Whole { inputs: Vec<Scalar>, aux: Vec<Scalar> },
}

impl DeviceWitness {
    /// The C view; valid while `self` lives.
    pub(super) fn raw(&self) -> sys::Witness {
        match self {
            DeviceWitness::Compact(w) => sys::Witness {
                kinds: w.kinds.as_ptr(),
                full_offsets: w.full_offsets.as_ptr(),
                full: w.full.as_ptr().cast(),
                num_full: w.full.len(),
                aux: std::ptr::null(),
                n: w.len,
            },
            DeviceWitness::Whole { inputs, aux } => sys::Witness {
                kinds: std::ptr::null(),
                full_offsets: std::ptr::null(),
                full: inputs.as_ptr().cast(),
                num_full: inputs.len(),
                aux: aux.as_ptr().cast(),
                n: inputs.len() + aux.len(),
            },
        }
    }

    /// A, B, C times z on the host (the matrices did not fit on the device).
    pub(super) fn evaluate(&self, shape: &CircuitShape) -> Result<(Vec<Scalar>, Vec<Scalar>, Vec<Scalar>)> {
        match self {
            DeviceWitness::Compact(w) => {
                let z = w.decode();
                let (inputs, aux) = z.split_at(shape.num_inputs());
                shape.evaluate(inputs, aux)
            }
            DeviceWitness::Whole { inputs, aux } => shape.evaluate(inputs, aux),
        }
    }
}
