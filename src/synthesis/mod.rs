//! Synthesis: a circuit and its witness turned into what a Groth16 backend proves — a, b, c,
//! the assignments and the A/B densities ([`SynthesizedCircuit`]). Two paths give the same
//! values: `classic` builds every linear combination (bellperson's way); `r1cs` extracts the
//! circuit's matrices once per circuit shape and per proof runs a witness-only synthesis and
//! sparse products (on the host here, or on the device by the backend).

mod circuit;
mod classic;
mod density;
pub mod r1cs;

use std::sync::Arc;
use std::time::Instant;

use bellperson::{Circuit, SynthesisError};
use blstrs::Scalar;

pub use circuit::{Products, SynthesizedCircuit};
pub use classic::synthesize;
pub use density::Density;
use r1cs::{CircuitShape, SegmentedCircuit};

use crate::cancel::CancelToken;
use crate::error::{Error, Result, Status};
use crate::timings::{nanos, timed, Timings};

/// Classic synthesis (every linear combination built), timed into `synthesis_ns`.
pub fn synthesize_classic<C: Circuit<Scalar>>(circuit: C, cancel: Option<&CancelToken>, t: &mut Timings) -> Result<SynthesizedCircuit> {
    timed(&mut t.synthesis_ns, || synthesize(circuit, cancel)).map_err(|e| synthesis_error(cancel, e))
}

/// Synthesis on the R1CS path: the witness of `circuit`, then a, b, c as products with the
/// matrices of its `shape` — on the host (timed into `synthesis_ns`, split into `witness_ns`
/// and `spmv_ns`), or, with `defer_products` (for a backend that evaluates products), left to
/// the backend (`synthesis_ns` is then the witness alone; the backend times the products).
pub fn synthesize_with_shape<C: SegmentedCircuit>(
    defer_products: bool,
    shape: &Arc<CircuitShape>,
    circuit: &C,
    cancel: Option<&CancelToken>,
    t: &mut Timings,
) -> Result<SynthesizedCircuit> {
    t.r1cs_synthesis = 1;
    let start = Instant::now();
    let witness = timed(&mut t.witness_ns, || circuit.witness(cancel)).map_err(|e| synthesis_error(cancel, e))?;
    let synthesized = match defer_products {
        true => SynthesizedCircuit::deferred(shape, witness),
        false => timed(&mut t.spmv_ns, || SynthesizedCircuit::from_shape(shape, witness)),
    };
    t.synthesis_ns += nanos(start.elapsed());
    synthesized
}

fn synthesis_error(cancel: Option<&CancelToken>, e: SynthesisError) -> Error {
    match cancel {
        Some(c) if c.is_cancelled() => Error::new(Status::Cancelled, "the call was cancelled during synthesis"),
        _ => Error::from_dependency(Status::InvalidArgument, "circuit synthesis failed", e),
    }
}
