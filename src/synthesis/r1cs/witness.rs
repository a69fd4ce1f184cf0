//! Witness-only synthesis: runs a circuit for its assignment alone. `enforce` never calls its
//! closures, so none of the linear combinations that dominate classic synthesis is built; the
//! constraints come from the circuit's [`super::CircuitShape`] instead.

use std::mem::MaybeUninit;
use std::sync::Mutex;

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use crate::cancel::check_cancel;
use crate::cancel::CancelToken;
use crate::parallel::{extend_parallel, try_fill_tiles, write_copy};

/// The assignment of one circuit, and how many constraints it enforced (its own plus one per
/// input, as a prover counts them), so that it can be checked against a shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    /// Index 0 is the constant ONE.
    pub input_assignment: Vec<Scalar>,
    pub aux_assignment: Vec<Scalar>,
    pub num_constraints: usize,
}

/// What a part written in place ([`PartBuffers::place`]) adds besides its aux values.
pub(crate) struct Placed {
    inputs: Vec<Scalar>,
    constraints: usize,
}

/// The aux buffers of parts written in place ([`WitnessCs::try_append_in_place`]): a placed
/// part's buffer is reused by a later part, so that its memory is not faulted in (the kernel
/// zeroing every page) anew for every part. At most one buffer per part being made at once;
/// freed with `self`.
#[derive(Default)]
pub(crate) struct PartBuffers(Mutex<Vec<Vec<Scalar>>>);

impl PartBuffers {
    /// A system for a part (as [`WitnessCs::part`]) on a reused buffer.
    pub(crate) fn part(&self, cancel: Option<&CancelToken>) -> WitnessCs {
        let aux = self.0.lock().unwrap_or_else(|p| p.into_inner()).pop().unwrap_or_default();
        WitnessCs {
            aux_assignment: aux,
            ..WitnessCs::part(cancel)
        }
    }

    /// Writes `part`'s aux values into `tile`, their place in a whole, keeps its buffer for
    /// the next part, and returns the rest of it; `Uneven` when `tile` is not their length
    /// (nothing is written then).
    pub(crate) fn place(&self, part: WitnessCs, tile: &mut [MaybeUninit<Scalar>]) -> Result<Placed, NotInPlace> {
        if tile.len() != part.aux_assignment.len() {
            return Err(NotInPlace::Uneven);
        }
        write_copy(tile, &part.aux_assignment);
        let mut aux = part.aux_assignment;
        aux.clear();
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(aux);
        Ok(Placed {
            inputs: part.input_assignment,
            constraints: part.num_constraints,
        })
    }
}

/// Why parts were not written in place as they were made.
pub(crate) enum NotInPlace {
    Failed(SynthesisError),
    /// A part allocates more or fewer variables than its place has room for.
    Uneven,
}

impl From<SynthesisError> for NotInPlace {
    fn from(e: SynthesisError) -> Self {
        NotInPlace::Failed(e)
    }
}

/// The ConstraintSystem of witness-only synthesis.
///
/// Gadgets choose code paths by two properties of the constraint system, and this one answers
/// both as bellperson's prover (`ProvingAssignment`) does, so that every gadget runs the path
/// whose witness bellperson proves with:
/// - extensible: yes. Circuits may synthesize independent parts into `new()` systems in
///   parallel and `extend` this one with them (storage-proofs' Window PoSt does).
/// - witness generator: no (the default). Gadgets with a witness-generator fast path
///   (neptune's `circuit2` Poseidon) would allocate through `allocate_empty` without
///   enforcing, on a path neither bellperson's prover nor shape extraction takes.
pub struct WitnessCs {
    input_assignment: Vec<Scalar>,
    aux_assignment: Vec<Scalar>,
    num_constraints: usize,
    cancel: Option<CancelToken>,
}

impl ConstraintSystem<Scalar> for WitnessCs {
    type Root = Self;

    fn new() -> Self {
        WitnessCs {
            input_assignment: Vec::new(),
            aux_assignment: Vec::new(),
            num_constraints: 0,
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
        Ok(Variable::new_unchecked(Index::Aux(self.aux_assignment.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.input_assignment.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.input_assignment.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.num_constraints += 1;
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

    fn is_extensible() -> bool {
        true
    }

    /// Appends `other`, a system made with `new()` whose first input is its own temporary ONE
    /// (bellperson's `ProvingAssignment::extend` convention), after everything in `self`.
    fn extend(&mut self, other: &Self) {
        self.input_assignment.extend_from_slice(&other.input_assignment[1..]);
        self.aux_assignment.extend_from_slice(&other.aux_assignment);
        self.num_constraints += other.num_constraints;
    }
}

impl WitnessCs {
    /// An empty system (no ONE input) whose allocations stop with an `Interrupted` error once
    /// `cancel` is cancelled: for synthesizing a part of a circuit, to be `append`ed.
    pub fn part(cancel: Option<&CancelToken>) -> Self {
        WitnessCs {
            cancel: cancel.cloned(),
            ..WitnessCs::new()
        }
    }

    /// Allocates an aux variable and counts the one constraint that comes with it (the gate
    /// that computes it): for witness writers that compute a gadget's allocations natively
    /// (`kinds::poseidon`).
    pub(crate) fn alloc_constrained(&mut self, value: Scalar) -> Result<(), SynthesisError> {
        check_cancel(self.aux_assignment.len(), self.cancel.as_ref())?;
        self.aux_assignment.push(value);
        self.num_constraints += 1;
        Ok(())
    }

    /// [`Self::alloc_constrained`] of a bit (its constraint: its booleanity, or the gate that
    /// computes it): `kinds::sha256`.
    pub(crate) fn alloc_constrained_bit(&mut self, value: bool) -> Result<(), SynthesisError> {
        self.alloc_constrained(if value { Scalar::ONE } else { Scalar::ZERO })
    }

    /// Counts `n` constraints that a natively computed gadget enforces without allocating.
    pub(crate) fn count_constraints(&mut self, n: usize) {
        self.num_constraints += n;
    }

    /// Appends everything each of `parts` allocated and enforced, in order, after everything in
    /// `self`: the aux values copied on all cores into one
    /// allocation (a 32GiB partition's witness is 4.2 GB: appended part by part it was copied
    /// on one core, and again whenever the vector grew).
    pub fn append_all(&mut self, parts: Vec<WitnessCs>) {
        let aux: Vec<&[Scalar]> = parts.iter().map(|p| p.aux_assignment.as_slice()).collect();
        extend_parallel(&mut self.aux_assignment, &aux);
        for part in parts {
            self.input_assignment.extend_from_slice(&part.input_assignment);
            self.num_constraints += part.num_constraints;
        }
    }

    /// How many aux values this system allocated.
    pub(crate) fn aux_len(&self) -> usize {
        self.aux_assignment.len()
    }

    /// Appends parts whose aux lengths are known before they are made: tile `i`, the next
    /// `lengths[i]` aux slots, is filled on all cores by `fill(i, tile)`, which places parts
    /// ([`PartBuffers::place`]) covering the tile exactly and returns them in order. The whole's memory
    /// is written once, each part while it is still in cache, and no part outlives its task. On
    /// an error `self` is unchanged.
    pub(crate) fn try_append_in_place(
        &mut self,
        lengths: &[usize],
        fill: impl Fn(usize, &mut [MaybeUninit<Scalar>]) -> Result<Vec<Placed>, NotInPlace> + Sync,
    ) -> Result<(), NotInPlace> {
        let placed = try_fill_tiles(&mut self.aux_assignment, lengths, fill)?;
        for part in placed.into_iter().flatten() {
            self.input_assignment.extend(part.inputs);
            self.num_constraints += part.constraints;
        }
        Ok(())
    }

    /// The witness of a whole circuit synthesized into `self` (which starts with ONE).
    pub fn into_witness(mut self) -> Witness {
        // The prover's input constraints (one per input, see `synthesize`) live in the shape.
        self.num_constraints += self.input_assignment.len();
        Witness {
            input_assignment: self.input_assignment,
            aux_assignment: self.aux_assignment,
            num_constraints: self.num_constraints,
        }
    }

    /// A system for a whole circuit: ONE allocated as input 0.
    pub fn whole(cancel: Option<&CancelToken>) -> Self {
        let mut cs = WitnessCs::part(cancel);
        cs.input_assignment.push(Scalar::ONE);
        cs
    }
}

/// The witness of `circuit` as [`crate::synthesis::synthesize`] would assign it (input 0 is
/// ONE), without building a single linear combination. A cancelled `cancel` token ends it early
/// with an `Interrupted` I/O error, as it does synthesis.
pub fn synthesize_witness<C: Circuit<Scalar>>(circuit: C, cancel: Option<&CancelToken>) -> Result<Witness, SynthesisError> {
    let mut cs = WitnessCs::whole(cancel);
    circuit.synthesize(&mut cs)?;
    Ok(cs.into_witness())
}
