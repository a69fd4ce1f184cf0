//! Synthesis split in two (issue 7): the circuit's R1CS matrices are extracted once per circuit
//! shape ([`CircuitShape::extract`]); each proof then runs only a witness-only synthesis
//! ([`synthesize_witness`]) and computes a = A·z, b = B·z, c = C·z as sparse matrix–vector
//! products ([`CircuitShape::synthesized`]). The result equals [`crate::synthesis::synthesize`]'s
//! value for value, densities included, so it feeds the backends unchanged. Circuits made of
//! independent parts ([`SegmentedCircuit`]: a PoRep partition's challenges) have both their
//! shape and their witness made on all cores.

mod compact;
mod matrix;
mod segmented;
mod shape;
mod witness;

pub use compact::CompactWitness;
pub use matrix::{Assignment, SparseMatrix, MINUS_ONE, ONE};
pub use segmented::{synthesize_witness_parallel, SegmentedCircuit, Segments, Whole};
pub use shape::{CircuitShape, CoefficientStats};
pub use witness::{synthesize_witness, Witness, WitnessCs};
