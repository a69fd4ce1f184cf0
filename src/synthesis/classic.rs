//! Classic synthesis: runs a circuit through our own ConstraintSystem, building every linear
//! combination, and keeps exactly what a Groth16 prover needs — the evaluations a, b, c of every
//! constraint at the witness, the input and aux assignments, and which variables occur in A and
//! B (the densities that select the points of the A and B queries). bellperson keeps its
//! `ProvingAssignment` private; this is ours, and it must agree with it value for value (tests
//! prove against bellperson with the same r, s).

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::circuit::{Products, SynthesizedCircuit};
use super::density::Density;
use crate::cancel::{check_cancel, CancelToken};

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
