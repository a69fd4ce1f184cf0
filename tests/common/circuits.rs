//! Random circuits for comparing provers: multiplication constraints over a witness shaped like
//! PoRep's (mostly 0/1) or uniformly random, with public inputs mixed in.

use bellperson::{Circuit, ConstraintSystem, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;
use rand::Rng;

/// A circuit of `n` multiplication constraints over a witness shaped like PoRep's (mostly 0/1)
/// or uniformly random, with a few public inputs mixed into the constraints.
#[derive(Clone)]
pub struct RandomCircuit {
    constraints: usize,
    pub inputs: Vec<Scalar>,
    witness: Vec<Scalar>,
    /// Per constraint: the operands x, y and the shape of the linear combinations.
    wiring: Vec<(usize, usize, u8)>,
}

impl RandomCircuit {
    pub fn new(rng: &mut impl Rng, constraints: usize, bit_heavy: bool) -> Self {
        let witness_len = constraints;
        let witness = (0..witness_len)
            .map(|_| match (bit_heavy, rng.gen_range(0..100)) {
                (true, 0..=49) => Scalar::ZERO,
                (true, 50..=95) => Scalar::ONE,
                (true, _) => Scalar::random(&mut *rng),
                (false, _) => Scalar::random(&mut *rng),
            })
            .collect();
        let inputs = (0..3).map(|_| Scalar::random(&mut *rng)).collect();
        // Every witness variable is used (x = k): the generator rejects unconstrained variables.
        let wiring = (0..constraints).map(|k| (k, rng.gen_range(0..witness_len), rng.gen_range(0..4))).collect();
        RandomCircuit { constraints, inputs, witness, wiring }
    }
}

impl Circuit<Scalar> for RandomCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let inputs: Vec<Variable> =
            self.inputs.iter().enumerate().map(|(i, v)| cs.alloc_input(|| format!("in{i}"), || Ok(*v))).collect::<Result<_, _>>()?;
        let vars: Vec<Variable> =
            self.witness.iter().enumerate().map(|(i, v)| cs.alloc(|| format!("w{i}"), || Ok(*v))).collect::<Result<_, _>>()?;
        for (k, &(x, y, shape)) in self.wiring.iter().enumerate().take(self.constraints) {
            // z = (x + shape·in) · y, allocated so that the constraint holds.
            let input = inputs[k % inputs.len()];
            let coeff = Scalar::from(shape as u64);
            let left = self.witness[x] + coeff * self.inputs[k % inputs.len()];
            let z_value = left * self.witness[y];
            let z = cs.alloc(|| format!("z{k}"), || Ok(z_value))?;
            cs.enforce(
                || format!("c{k}"),
                |lc| lc + vars[x] + (coeff, input),
                // shape 3 leaves x in B with coefficient 0: it must not count in B's density.
                |lc| if shape == 3 { lc + vars[y] + vars[x] - vars[x] } else { lc + vars[y] },
                |lc| lc + z,
            );
        }
        Ok(())
    }
}

