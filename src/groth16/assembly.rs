//! What every backend shares around its MSMs: the check that a key fits a circuit, where each
//! part of a query starts, and the assembly of A, B, C from the MSM results with r, s.

use std::ops::Mul;

use bellperson::groth16::Proof;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use group::prime::PrimeCurveAffine;
use group::Curve;

use super::params::ProvingKey;
use crate::error::{Error, Result, Status};
use crate::synthesis::SynthesizedCircuit;

/// The five multi-scalar multiplications of one proof. `a` and `b_*` include both the input
/// and the aux part of their query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MsmResults {
    pub h: G1Projective,
    pub l: G1Projective,
    pub a: G1Projective,
    pub b_g1: G1Projective,
    pub b_g2: G2Projective,
}

/// Where each part of a circuit's MSMs starts in the key's queries (bellperson's layout:
/// A = all inputs then the aux variables in A's density; B = the inputs in B's density then
/// the aux variables in B's density).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryLayout {
    pub num_inputs: usize,
    pub b_inputs: usize,
}

/// Checks that the key was generated for this circuit's shape; a mismatch would otherwise give
/// an invalid proof (or an out-of-bounds read) deep inside an MSM.
pub fn check_key_fits(key: &ProvingKey, circuit: &SynthesizedCircuit, domain_size: usize) -> Result<QueryLayout> {
    let num_inputs = circuit.input_assignment.len();
    let b_inputs = circuit.b_input_density.count_ones();
    let sizes = key.query_sizes();
    let expect = [
        ("h", sizes.h, domain_size - 1),
        ("l", sizes.l, circuit.aux_assignment.len()),
        ("a", sizes.a, num_inputs + circuit.a_aux_density.count_ones()),
        ("b_g1", sizes.b_g1, b_inputs + circuit.b_aux_density.count_ones()),
        ("b_g2", sizes.b_g2, b_inputs + circuit.b_aux_density.count_ones()),
        ("ic", sizes.ic, num_inputs),
    ];
    for (query, have, want) in expect {
        if have != want as u64 {
            return Err(Error::new(
                Status::ParametersInvalid,
                format!("proving key does not match the circuit: query {query} has {have} points, the circuit needs {want}"),
            ));
        }
    }
    if bool::from(key.vk.delta_g1.is_identity() | key.vk.delta_g2.is_identity()) {
        return Err(Error::new(
            Status::ParametersInvalid,
            "proving key has delta at infinity (subverted setup)",
        ));
    }
    Ok(QueryLayout { num_inputs, b_inputs })
}

/// A = α + Σa + rδ;  B = β + Σb + sδ;  C = s·Σa + r·Σb₁ + rs·δ + s·α + r·β + H + L.
/// (C expands s·A + r·B₁ - rs·δ; for fixed r, s every correct prover gets the same bytes.)
pub fn assemble(key: &ProvingKey, msm: &MsmResults, r: Scalar, s: Scalar) -> Proof<Bls12> {
    let vk = &key.vk;
    let g_a = vk.delta_g1.mul(r) + vk.alpha_g1 + msm.a;
    let g_b = vk.delta_g2.mul(s) + vk.beta_g2 + msm.b_g2;
    let g_c = msm.a * s + msm.b_g1 * r + vk.delta_g1.mul(r * s) + vk.alpha_g1.mul(s) + vk.beta_g1.mul(r) + msm.h + msm.l;
    Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    }
}
