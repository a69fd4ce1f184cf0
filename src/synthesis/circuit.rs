//! What synthesis hands to a backend: the products a, b, c (or the shape to compute them from),
//! the input and aux assignments, and the A/B densities.

use std::sync::Arc;

use blstrs::Scalar;

use super::density::Density;
use super::r1cs::{CircuitShape, Witness};
use crate::error::Result;

/// a = A·z, b = B·z, c = C·z: one scalar per constraint, the input constraints (one per
/// input) last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Products {
    /// Evaluated on the host (classic synthesis, or the R1CS path's host products).
    Evaluated { a: Vec<Scalar>, b: Vec<Scalar>, c: Vec<Scalar> },
    /// Left to the backend, which computes them from the circuit's shape and the assignment
    /// (the GPU where the matrices are resident: a, b, c never exist in host memory).
    Deferred(Arc<CircuitShape>),
}

impl Products {
    /// a, b, c, computed on the host from `shape` when they were deferred (its matrices read
    /// back from its file when released: that can fail).
    pub fn evaluate(self, inputs: &[Scalar], aux: &[Scalar]) -> Result<(Vec<Scalar>, Vec<Scalar>, Vec<Scalar>)> {
        match self {
            Products::Evaluated { a, b, c } => Ok((a, b, c)),
            Products::Deferred(shape) => shape.evaluate(inputs, aux),
        }
    }
}

/// The output of synthesis for one circuit: the prover's whole input besides the key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthesizedCircuit {
    pub products: Products,
    /// Input assignment; index 0 is the constant ONE.
    pub input_assignment: Vec<Scalar>,
    pub aux_assignment: Vec<Scalar>,
    pub a_aux_density: Density,
    pub b_input_density: Density,
    pub b_aux_density: Density,
}

impl SynthesizedCircuit {
    pub fn num_constraints(&self) -> usize {
        match &self.products {
            Products::Evaluated { a, .. } => a.len(),
            Products::Deferred(shape) => shape.num_constraints(),
        }
    }

    /// The synthesized circuit of `witness` (from a witness-only synthesis of a circuit of
    /// `shape`): what classic synthesis returns for that circuit, a, b, c computed on the host
    /// with the shape's matrices. A witness whose sizes differ from the shape's is refused.
    pub fn from_shape(shape: &CircuitShape, witness: Witness) -> Result<Self> {
        shape.check_witness(&witness)?;
        let (a, b, c) = shape.evaluate(&witness.input_assignment, &witness.aux_assignment)?;
        Ok(Self::with_products(shape, Products::Evaluated { a, b, c }, witness))
    }

    /// [`Self::from_shape`] with a, b, c left to the backend (see [`Products::Deferred`]).
    pub fn deferred(shape: &Arc<CircuitShape>, witness: Witness) -> Result<Self> {
        shape.check_witness(&witness)?;
        Ok(Self::with_products(shape, Products::Deferred(Arc::clone(shape)), witness))
    }

    fn with_products(shape: &CircuitShape, products: Products, witness: Witness) -> Self {
        SynthesizedCircuit {
            products,
            input_assignment: witness.input_assignment,
            aux_assignment: witness.aux_assignment,
            a_aux_density: shape.a_aux_density().clone(),
            b_input_density: shape.b_input_density().clone(),
            b_aux_density: shape.b_aux_density().clone(),
        }
    }

    /// a, b, c when they were evaluated on the host.
    #[cfg(feature = "internals")]
    pub fn evaluated(&self) -> Option<(&[Scalar], &[Scalar], &[Scalar])> {
        match &self.products {
            Products::Evaluated { a, b, c } => Some((a, b, c)),
            Products::Deferred(_) => None,
        }
    }
}
