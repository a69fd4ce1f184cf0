//! Synthesis: runs a circuit through our own ConstraintSystem and keeps exactly what a Groth16
//! prover needs — the evaluations a, b, c of every constraint at the witness, the input and aux
//! assignments, and which variables occur in A and B (the densities that select the points of
//! the A and B queries). bellperson keeps its `ProvingAssignment` private; this is ours, and it
//! must agree with it value for value (tests prove against bellperson with the same r, s).

use std::sync::Arc;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::cancel::CancelToken;
use crate::r1cs::CircuitShape;

/// Synthesis looks at the cancel token once per this many allocations.
const CANCEL_CHECK_INTERVAL: usize = 1 << 14;

/// Synthesis stops with an `Interrupted` I/O error once `cancel` is set, looking at it before
/// every [`CANCEL_CHECK_INTERVAL`]-th allocation (`allocated` so far).
pub(crate) fn check_cancel(allocated: usize, cancel: Option<&CancelToken>) -> Result<(), SynthesisError> {
    if allocated % CANCEL_CHECK_INTERVAL == 0 && cancel.is_some_and(|c| c.is_cancelled()) {
        return Err(SynthesisError::IoError(std::io::Error::new(std::io::ErrorKind::Interrupted, "cancelled")));
    }
    Ok(())
}

/// One bit per variable: does the variable occur (with a non-zero coefficient) in a query?
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
}

impl Density {
    pub fn with_len(len: usize) -> Self {
        Density {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    fn push_unset(&mut self) {
        if self.len % 64 == 0 {
            self.words.push(0);
        }
        self.len += 1;
    }

    pub fn set(&mut self, index: usize) {
        debug_assert!(index < self.len);
        self.words[index / 64] |= 1 << (index % 64);
    }

    pub fn get(&self, index: usize) -> bool {
        self.words[index / 64] >> (index % 64) & 1 == 1
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn count_ones(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Set bits among the variables of `range`, which starts at a multiple of 64.
    pub fn count_ones_in(&self, range: std::ops::Range<usize>) -> usize {
        assert!(range.start % 64 == 0 && range.end <= self.len, "{range:?} of {}", self.len);
        let whole = &self.words[range.start / 64..range.end / 64];
        let partial = match range.end % 64 {
            0 => 0,
            bits => (self.words[range.end / 64] & ((1u64 << bits) - 1)).count_ones(),
        };
        whole.iter().map(|w| w.count_ones() as usize).sum::<usize>() + partial as usize
    }
}

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
    /// a, b, c, computed on the host from `shape` when they were deferred.
    pub fn evaluate(self, inputs: &[Scalar], aux: &[Scalar]) -> (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>) {
        match self {
            Products::Evaluated { a, b, c } => (a, b, c),
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

    /// a, b, c when they were evaluated on the host.
    pub fn evaluated(&self) -> Option<(&[Scalar], &[Scalar], &[Scalar])> {
        match &self.products {
            Products::Evaluated { a, b, c } => Some((a, b, c)),
            Products::Deferred(_) => None,
        }
    }
}

/// The ConstraintSystem that records a [`SynthesizedCircuit`].
struct Recorder {
    a: Vec<Scalar>,
    b: Vec<Scalar>,
    c: Vec<Scalar>,
    input_assignment: Vec<Scalar>,
    aux_assignment: Vec<Scalar>,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
    cancel: Option<CancelToken>,
}

/// Evaluates a linear combination at the assignment, marking the variables it uses. Terms with
/// a zero coefficient neither count nor mark, exactly as bellperson's prover does (the
/// generator leaves such variables out of the A/B queries, so marking them would misalign the
/// query points).
fn eval_marking(
    lc: &LinearCombination<Scalar>,
    inputs: &[Scalar],
    aux: &[Scalar],
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&index, coeff) in lc.iter_inputs() {
        if coeff.is_zero_vartime() {
            continue;
        }
        acc += if *coeff == Scalar::ONE { inputs[index] } else { inputs[index] * coeff };
        if let Some(density) = input_density.as_deref_mut() {
            density.set(index);
        }
    }
    for (&index, coeff) in lc.iter_aux() {
        if coeff.is_zero_vartime() {
            continue;
        }
        acc += if *coeff == Scalar::ONE { aux[index] } else { aux[index] * coeff };
        if let Some(density) = aux_density.as_deref_mut() {
            density.set(index);
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for Recorder {
    type Root = Self;

    fn new() -> Self {
        Recorder {
            a: Vec::new(),
            b: Vec::new(),
            c: Vec::new(),
            input_assignment: Vec::new(),
            aux_assignment: Vec::new(),
            a_aux_density: Density::default(),
            b_input_density: Density::default(),
            b_aux_density: Density::default(),
            cancel: None,
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        check_cancel(self.aux_assignment.len(), self.cancel.as_ref())?;
        self.aux_assignment.push(f()?);
        self.a_aux_density.push_unset();
        self.b_aux_density.push_unset();
        Ok(Variable::new_unchecked(Index::Aux(self.aux_assignment.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        self.b_input_density.push_unset();
        Ok(Variable::new_unchecked(Index::Input(self.input_assignment.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let out = self;
        let (inputs, aux) = (&out.input_assignment, &out.aux_assignment);
        let a = eval_marking(&a(LinearCombination::zero()), inputs, aux, None, Some(&mut out.a_aux_density));
        let b = eval_marking(
            &b(LinearCombination::zero()),
            inputs,
            aux,
            Some(&mut out.b_input_density),
            Some(&mut out.b_aux_density),
        );
        let c = eval_marking(&c(LinearCombination::zero()), inputs, aux, None, None);
        out.a.push(a);
        out.b.push(b);
        out.c.push(c);
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Synthesizes `circuit` the way a Groth16 prover sees it: the constant ONE is input 0, and
/// after the circuit's own constraints every input gets the constraint `input · 0 = 0`, which
/// puts all inputs into A (the QAP needs them linearly independent). A cancelled `cancel`
/// token ends synthesis early with an `Interrupted` I/O error.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C, cancel: Option<&CancelToken>) -> Result<SynthesizedCircuit, SynthesisError> {
    let mut cs = Recorder::new();
    cs.cancel = cancel.cloned();
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
    circuit.synthesize(&mut cs)?;
    for i in 0..cs.input_assignment.len() {
        cs.enforce(|| "", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
    }
    let Recorder {
        a,
        b,
        c,
        input_assignment,
        aux_assignment,
        a_aux_density,
        b_input_density,
        b_aux_density,
        cancel: _,
    } = cs;
    Ok(SynthesizedCircuit {
        products: Products::Evaluated { a, b, c },
        input_assignment,
        aux_assignment,
        a_aux_density,
        b_input_density,
        b_aux_density,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_bits_roundtrip() {
        let mut d = Density::default();
        for _ in 0..130 {
            d.push_unset();
        }
        d.set(0);
        d.set(64);
        d.set(129);
        assert_eq!(d.len(), 130);
        assert_eq!(d.count_ones(), 3);
        assert!(d.get(64) && d.get(129) && !d.get(1) && !d.get(128));
    }
}
