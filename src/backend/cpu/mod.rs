//! The CPU backend: NTTs and split MSMs on all cores with rayon. Correct on every machine, the
//! fallback when no GPU is present, and the reference the GPU backend is compared with.

mod msm;
mod ntt;

use blstrs::{G1Affine, G1Projective, G2Projective};

use self::msm::{pippenger, sum_points, ClassifiedScalars, MixedAdd};
use super::{Backend, BackendKind};
use crate::error::{Error, Result};
use crate::groth16::{check_key_fits, MsmResults, ProvingKey};
use crate::synthesis::SynthesizedCircuit;
use crate::timings::{timed, Timings};

pub use self::ntt::Domain;

pub struct CpuBackend;

/// The scalars of the four witness MSMs after prep_msm, each against its slice of the key.
struct PreparedMsms {
    l: ClassifiedScalars,
    a_inputs: ClassifiedScalars,
    a_aux: ClassifiedScalars,
    b_inputs: ClassifiedScalars,
    b_aux: ClassifiedScalars,
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn device_index(&self) -> i32 {
        -1
    }

    fn compute_msms(&self, key: &ProvingKey, circuit: SynthesizedCircuit, t: &mut Timings) -> Result<MsmResults> {
        let domain = Domain::for_len(circuit.num_constraints())
            .ok_or_else(|| Error::invalid("circuit has more constraints than the field's 2^32 FFT domain"))?;
        let layout = check_key_fits(key, &circuit, domain.size())?;
        let SynthesizedCircuit { a, b, c, input_assignment, aux_assignment, a_aux_density, b_input_density, b_aux_density } =
            circuit;

        let h_coeffs = timed(&mut t.ntt_ns, || ntt::quotient_coefficients(a, b, c)).expect("domain checked above");

        let (h_scalars, prepared) = timed(&mut t.prep_msm_ns, || {
            let h = ClassifiedScalars::all(&h_coeffs);
            let prepared = PreparedMsms {
                l: ClassifiedScalars::all(&aux_assignment),
                a_inputs: ClassifiedScalars::all(&input_assignment),
                a_aux: ClassifiedScalars::new(&aux_assignment, |i| a_aux_density.get(i)),
                b_inputs: ClassifiedScalars::new(&input_assignment, |i| b_input_density.get(i)),
                b_aux: ClassifiedScalars::new(&aux_assignment, |i| b_aux_density.get(i)),
            };
            (h, prepared)
        });
        drop((h_coeffs, aux_assignment, input_assignment));

        let h = timed(&mut t.msm_h_ns, || split_msm(&key.h, &h_scalars));

        // Queries are laid out inputs first, then aux (see QueryLayout).
        let a_points = key.a.split_at(layout.num_inputs);
        let b_g1_points = key.b_g1.split_at(layout.b_inputs);
        let b_g2_points = key.b_g2.split_at(layout.b_inputs);
        let p = &prepared;

        let (l_ones, a_ones, b_g1_ones, b_g2_ones) = timed(&mut t.batch_add_ns, || {
            (
                sum_points(&key.l, &p.l.ones),
                sum_points(a_points.0, &p.a_inputs.ones) + sum_points(a_points.1, &p.a_aux.ones),
                sum_points(b_g1_points.0, &p.b_inputs.ones) + sum_points(b_g1_points.1, &p.b_aux.ones),
                sum_points(b_g2_points.0, &p.b_inputs.ones) + sum_points(b_g2_points.1, &p.b_aux.ones),
            )
        });
        let l = l_ones + timed(&mut t.msm_l_ns, || tail_msm(&key.l, &p.l));
        let a = a_ones + timed(&mut t.msm_a_ns, || tail_msm(a_points.0, &p.a_inputs) + tail_msm(a_points.1, &p.a_aux));
        let b_g1 = b_g1_ones
            + timed(&mut t.msm_b_g1_ns, || tail_msm(b_g1_points.0, &p.b_inputs) + tail_msm(b_g1_points.1, &p.b_aux));
        let b_g2: G2Projective = b_g2_ones
            + timed(&mut t.msm_b_g2_ns, || tail_msm(b_g2_points.0, &p.b_inputs) + tail_msm(b_g2_points.1, &p.b_aux));
        Ok(MsmResults { h, l, a, b_g1, b_g2 })
    }
}

fn tail_msm<G: MixedAdd>(points: &[G], classes: &ClassifiedScalars) -> G::Curve {
    pippenger(points, &classes.tail_indices, &classes.tail_scalars)
}

/// Ones and tail together (for H, whose coefficients are almost never 0 or 1).
fn split_msm(points: &[G1Affine], classes: &ClassifiedScalars) -> G1Projective {
    sum_points(points, &classes.ones) + tail_msm(points, classes)
}
