//! R1CS synthesis: the circuit's R1CS matrices are extracted once per circuit shape
//! ([`CircuitShape::extract`]); each proof then runs only a witness-only synthesis
//! ([`synthesize_witness`]) and computes a = A·z, b = B·z, c = C·z as sparse matrix–vector
//! products ([`super::SynthesizedCircuit::from_shape`]), or leaves them to a backend that
//! computes them on its device. The result equals classic synthesis's
//! value for value, densities included, so it feeds the backends unchanged. Circuits made of
//! independent parts ([`SegmentedCircuit`]: a PoRep partition's challenges) have both their
//! shape and their witness made on all cores.

mod compact;
mod matrix;
mod matrix_blocks;
mod segmented;
mod shape;
mod shape_file;
mod witness;

pub use compact::CompactWitness;
pub use matrix::{Assignment, SparseMatrix};
#[cfg(feature = "internals")]
pub use segmented::{synthesize_witness_parallel, Segments};
pub use segmented::{SegmentedCircuit, Whole};
pub use shape::CircuitShape;
#[cfg(feature = "internals")]
pub use shape::CoefficientStats;
pub use shape_file::FORMAT_VERSION as SHAPE_FILE_VERSION;
#[cfg(feature = "internals")]
pub use witness::synthesize_witness;
pub(crate) use witness::{NotInPlace, PartBuffers, Placed};
pub use witness::{Witness, WitnessCs};
