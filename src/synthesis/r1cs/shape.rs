//! The R1CS of a circuit — its matrices A, B, C and the A/B densities — extracted once per
//! circuit shape, and evaluated at a witness to give exactly what [`synthesize`] gives.
//!
//! [`synthesize`]: crate::synthesis::synthesize

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rayon::prelude::*;

use super::matrix::{Assignment, SparseMatrix, MINUS_ONE, ONE};
use super::segmented::{SegmentedCircuit, Segments};
use super::witness::Witness;
use crate::error::{self, Error, Status};
use crate::synthesis::density::Density;

/// Rows per rayon task when evaluating: ~100 µs of work at PoRep's ~5.5 entries per row, so
/// that scheduling stays negligible.
const ROWS_PER_TASK: usize = 1 << 10;

/// During extraction the number of inputs is not known yet (circuits may allocate inputs after
/// aux variables), so input columns carry this flag until `finish` places them before the aux.
const INPUT_FLAG: u32 = 1 << 31;

/// The R1CS of one circuit shape, over z = (inputs..., aux...), input 0 being the constant ONE.
/// Row order and the trailing input constraints are those of [`crate::synthesis::synthesize`].
///
/// Its matrices may leave host memory once a device holds them (32GiB PoRep: 7 GB): after
/// [`Self::release_matrices`], [`Self::matrices`] reads them back from the shape file they
/// were read from or written to ([`Self::set_file`]), checked as any shape file is.
pub struct CircuitShape {
    num_inputs: usize,
    num_aux: usize,
    num_constraints: usize,
    num_nonzeros: usize,
    matrices_bytes: usize,
    a_aux_density: Density,
    b_input_density: Density,
    b_aux_density: Density,
    /// None once released.
    matrices: Mutex<Option<Arc<Matrices>>>,
    /// The shape file that holds the matrices, and the circuit id it is written for.
    file: OnceLock<(PathBuf, String)>,
}

/// A, B and C of a circuit shape and the coefficient table their entries index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matrices {
    pub a: SparseMatrix,
    pub b: SparseMatrix,
    pub c: SparseMatrix,
    /// The distinct coefficients; entries of A, B, C refer to them by id ([`ONE`] and
    /// [`MINUS_ONE`] first).
    pub coefficients: Vec<Scalar>,
}

impl Matrices {
    pub fn num_nonzeros(&self) -> usize {
        self.a.num_nonzeros() + self.b.num_nonzeros() + self.c.num_nonzeros()
    }

    fn size_bytes(&self) -> usize {
        self.a.size_bytes() + self.b.size_bytes() + self.c.size_bytes() + self.coefficients.len() * std::mem::size_of::<Scalar>()
    }

    /// A·z, B·z and C·z, rows in parallel.
    fn evaluate(&self, z: Assignment<'_>) -> (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>) {
        let product = |m: &SparseMatrix| -> Vec<Scalar> {
            (0..m.num_rows())
                .into_par_iter()
                .with_min_len(ROWS_PER_TASK)
                .map(|row| m.row_dot(row, &self.coefficients, z))
                .collect()
        };
        let (a, (b, c)) = rayon::join(|| product(&self.a), || rayon::join(|| product(&self.b), || product(&self.c)));
        (a, b, c)
    }
}

impl std::fmt::Debug for CircuitShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CircuitShape")
            .field("num_inputs", &self.num_inputs)
            .field("num_aux", &self.num_aux)
            .field("num_constraints", &self.num_constraints)
            .field("matrices_bytes", &self.matrices_bytes)
            .field("held", &self.holds_matrices())
            .field("file", &self.file.get())
            .finish()
    }
}

/// Shapes are equal when their sizes, densities and matrices are (matrices not in host
/// memory are read back to compare; a shape whose matrices cannot be read equals none).
impl PartialEq for CircuitShape {
    fn eq(&self, other: &Self) -> bool {
        let sizes = |s: &Self| (s.num_inputs, s.num_aux, s.num_constraints, s.matrices_bytes);
        sizes(self) == sizes(other)
            && self.densities() == other.densities()
            && match (self.matrices(), other.matrices()) {
                (Ok(ours), Ok(theirs)) => ours == theirs,
                _ => false,
            }
    }
}

impl Eq for CircuitShape {}

/// How the non-zero coefficients of a shape (A, B and C together) are distributed.
#[cfg(feature = "internals")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoefficientStats {
    pub nonzeros: usize,
    pub plus_one: usize,
    pub minus_one: usize,
    /// Entries with any other coefficient, and how many distinct such coefficients there are.
    pub other: usize,
    pub distinct_other: usize,
}

impl CircuitShape {
    /// Runs `circuit` through a recording constraint system, the way bellperson's parameter
    /// generator does: value closures are never called, so a circuit without a witness (a
    /// blank circuit) gives the same shape as a real one, and the shape cannot depend on
    /// witness values. Fails when a matrix has 2^32 or more entries, or the circuit 2^31 or
    /// more variables of one kind (the indices are 32-bit).
    pub fn extract<C: Circuit<Scalar>>(circuit: C) -> error::Result<Self> {
        ShapeRecorder::record(circuit)?.finish()
    }

    /// [`Self::extract`] of the whole circuit, its segments recorded in parallel on the
    /// current rayon pool (see [`super::segmented`]).
    pub fn extract_parallel<C: SegmentedCircuit>(circuit: &C) -> error::Result<Self> {
        let mut whole = ShapeRecorder::record(Segments::prefix(circuit))?;
        let prefix = whole.size();
        let segments = (0..circuit.num_segments())
            .into_par_iter()
            .map(|i| ShapeRecorder::record(Segments::one(circuit, i)))
            .collect::<error::Result<Vec<_>>>()?;
        for (i, segment) in segments.iter().enumerate() {
            whole
                .append_segment(segment, &prefix)
                .map_err(|e| Error::internal(format!("segment {i} of the circuit cannot be recorded in parallel: {e}")))?;
        }
        drop(segments);
        whole.finish()
    }

    /// A shape from its parts (as `shape_file` reads them, checked there).
    pub(super) fn from_parts(
        num_inputs: usize,
        num_aux: usize,
        [a, b, c]: [SparseMatrix; 3],
        coefficients: Vec<Scalar>,
        densities: [Density; 3],
    ) -> Self {
        let [a_aux_density, b_input_density, b_aux_density] = densities;
        let matrices = Matrices { a, b, c, coefficients };
        CircuitShape {
            num_inputs,
            num_aux,
            num_constraints: matrices.a.num_rows(),
            num_nonzeros: matrices.num_nonzeros(),
            matrices_bytes: matrices.size_bytes(),
            a_aux_density,
            b_input_density,
            b_aux_density,
            matrices: Mutex::new(Some(Arc::new(matrices))),
            file: OnceLock::new(),
        }
    }

    /// The matrices: the host's copy, or else read back from the shape file (and held again
    /// until released). Fails when they were released and the file cannot be read or no longer
    /// holds this shape.
    pub fn matrices(&self) -> error::Result<Arc<Matrices>> {
        let mut held = self.matrices.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(matrices) = &*held {
            return Ok(Arc::clone(matrices));
        }
        let Some((path, id)) = self.file.get() else {
            return Err(Error::internal("circuit matrices released from host memory without a shape file"));
        };
        let unreadable = |e: String| Error::internal(format!("circuit shape file {}: {e}", path.display()));
        let read = Self::read_path(path, id).map_err(unreadable)?;
        let matrices = read
            .matrices
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .filter(|_| (read.num_inputs, read.num_aux, read.num_constraints) == (self.num_inputs, self.num_aux, self.num_constraints))
            .ok_or_else(|| unreadable("no longer holds this shape".into()))?;
        log::info!(
            "circuit shape {id}: matrices read back from {} ({} MiB)",
            path.display(),
            self.matrices_bytes >> 20
        );
        Ok(Arc::clone(held.insert(matrices)))
    }

    /// Records that `path` holds this shape's matrices, written for circuit `id` (the first
    /// file recorded is kept).
    pub fn set_file(&self, path: &Path, id: &str) {
        let _ = self.file.set((path.to_path_buf(), id.to_string()));
    }

    /// Drops the host's copy of the matrices when a shape file holds them (a device has its
    /// own copy); the bytes released (0: not held, or no file to read them back from).
    pub fn release_matrices(&self) -> u64 {
        if self.file.get().is_none() {
            return 0;
        }
        match self.matrices.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(_) => self.matrices_bytes as u64,
            None => 0,
        }
    }

    fn holds_matrices(&self) -> bool {
        self.matrices.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    /// A's density over the aux variables, B's over the inputs and over the aux variables.
    pub(super) fn densities(&self) -> [&Density; 3] {
        [&self.a_aux_density, &self.b_input_density, &self.b_aux_density]
    }

    pub fn num_inputs(&self) -> usize {
        self.num_inputs
    }

    pub fn num_aux(&self) -> usize {
        self.num_aux
    }

    /// The circuit's constraints plus one per input, like [`SynthesizedCircuit::num_constraints`].
    pub fn num_constraints(&self) -> usize {
        self.num_constraints
    }

    /// Entries of A, B and C.
    pub fn num_nonzeros(&self) -> usize {
        self.num_nonzeros
    }

    /// Heap bytes of the whole shape, matrices included wherever they are.
    pub fn size_bytes(&self) -> usize {
        self.matrices_bytes + self.densities_bytes()
    }

    /// Heap bytes the shape holds now: its densities, and its matrices unless released.
    pub fn held_bytes(&self) -> usize {
        self.densities_bytes() + if self.holds_matrices() { self.matrices_bytes } else { 0 }
    }

    fn densities_bytes(&self) -> usize {
        self.densities().iter().map(|d| d.len().div_ceil(64) * 8).sum()
    }

    #[cfg(feature = "internals")]
    pub fn coefficient_stats(&self) -> error::Result<CoefficientStats> {
        let m = self.matrices()?;
        let ids = || [&m.a, &m.b, &m.c].into_iter().flat_map(|m| m.coefficient_ids());
        let count = |id| ids().filter(|&&i| i == id).count();
        let (nonzeros, plus_one, minus_one) = (m.num_nonzeros(), count(ONE), count(MINUS_ONE));
        Ok(CoefficientStats {
            nonzeros,
            plus_one,
            minus_one,
            other: nonzeros - plus_one - minus_one,
            distinct_other: m.coefficients.len() - 2,
        })
    }

    /// A·z, B·z and C·z for z = (inputs, aux), rows in parallel. Field arithmetic is exact, so
    /// these equal synthesis' evaluations whatever the order of summation. Fails when the
    /// released matrices cannot be read back.
    ///
    /// Panics when the assignment lengths are not the shape's.
    pub fn evaluate(&self, inputs: &[Scalar], aux: &[Scalar]) -> error::Result<(Vec<Scalar>, Vec<Scalar>, Vec<Scalar>)> {
        assert!(
            inputs.len() == self.num_inputs && aux.len() == self.num_aux,
            "assignment of {} inputs and {} aux for a shape of {} inputs and {} aux",
            inputs.len(),
            aux.len(),
            self.num_inputs,
            self.num_aux
        );
        Ok(self.matrices()?.evaluate(Assignment { inputs, aux }))
    }

    /// Refuses a witness whose sizes are not this shape's.
    pub fn check_witness(&self, witness: &Witness) -> error::Result<()> {
        let got = (witness.input_assignment.len(), witness.aux_assignment.len(), witness.num_constraints);
        let want = (self.num_inputs, self.num_aux, self.num_constraints());
        match got == want {
            true => Ok(()),
            false => Err(Error::invalid(format!(
                "a witness of (inputs, aux, constraints) = {got:?} does not belong to a circuit shape of {want:?}"
            ))),
        }
    }

    /// The aux variables that occur in A.
    pub fn a_aux_density(&self) -> &Density {
        &self.a_aux_density
    }

    /// The input variables that occur in B.
    pub fn b_input_density(&self) -> &Density {
        &self.b_input_density
    }

    /// The aux variables that occur in B.
    pub fn b_aux_density(&self) -> &Density {
        &self.b_aux_density
    }
}

/// The ConstraintSystem that records a [`CircuitShape`].
struct ShapeRecorder {
    num_inputs: usize,
    num_aux: usize,
    matrices: [SparseMatrix; 3],
    coefficients: Vec<Scalar>,
    /// Coefficient id by value (canonical little-endian bytes), for the table.
    coefficient_ids: HashMap<[u8; 32], u32>,
    minus_one: Scalar,
    /// Set when an index or an entry count does not fit in 32 bits; `finish` reports it
    /// (`enforce` cannot fail).
    too_large: bool,
}

/// How much of a recording a circuit's prefix takes.
struct RecordedSize {
    inputs: usize,
    aux: usize,
    /// Rows of each matrix (the same in all three).
    rows: usize,
}

fn synthesis_failed(e: SynthesisError) -> Error {
    Error::from_dependency(Status::InvalidArgument, "circuit synthesis failed", e)
}

impl ShapeRecorder {
    /// Runs `circuit` (after the ONE input) through a new recorder.
    fn record<C: Circuit<Scalar>>(circuit: C) -> error::Result<Self> {
        let mut cs = ShapeRecorder::new();
        cs.alloc_input(|| "one", || Ok(Scalar::ONE)).map_err(synthesis_failed)?;
        circuit.synthesize(&mut cs).map_err(synthesis_failed)?;
        Ok(cs)
    }

    fn size(&self) -> RecordedSize {
        RecordedSize {
            inputs: self.num_inputs,
            aux: self.num_aux,
            rows: self.matrices[0].num_rows(),
        }
    }

    /// Appends what `segment` recorded after its copy of the prefix (of size `prefix`, and
    /// equal to the start of `self`): its rows, with its own variables renumbered to follow
    /// those of `self` and its coefficients entered in the table of `self`.
    fn append_segment(&mut self, segment: &ShapeRecorder, prefix: &RecordedSize) -> Result<(), &'static str> {
        if segment.num_inputs < prefix.inputs || segment.num_aux < prefix.aux || segment.matrices[0].num_rows() < prefix.rows {
            return Err("the segment recorded less than the prefix");
        }
        let ids: Vec<u32> = segment.coefficients.iter().map(|c| self.coefficient_id(c)).collect();
        let (input_base, aux_base) = (self.num_inputs, self.num_aux);
        for (dst, src) in self.matrices.iter_mut().zip(&segment.matrices) {
            let skip = src.row_starts[prefix.rows] as usize;
            if src.columns[..skip] != dst.columns[..skip] || src.coefficient_ids[..skip] != dst.coefficient_ids[..skip] {
                return Err("the segment's prefix rows differ from the prefix's");
            }
            for (&column, &id) in src.columns[skip..].iter().zip(&src.coefficient_ids[skip..]) {
                let (index, flag) = (column & !INPUT_FLAG, column & INPUT_FLAG);
                let (own, base) = if flag != 0 {
                    (prefix.inputs, input_base)
                } else {
                    (prefix.aux, aux_base)
                };
                let index = index as usize;
                let placed = if index < own { index } else { base + index - own };
                match u32::try_from(placed).ok().filter(|&p| p < INPUT_FLAG) {
                    Some(placed) => dst.columns.push(placed | flag),
                    None => self.too_large = true,
                }
                dst.coefficient_ids.push(ids[id as usize]);
            }
            let offset = dst.columns.len() as u64 - src.columns.len() as u64;
            for &end in &src.row_starts[prefix.rows + 1..] {
                match u32::try_from(offset + u64::from(end)) {
                    Ok(end) => dst.row_starts.push(end),
                    Err(_) => self.too_large = true,
                }
            }
        }
        self.num_inputs += segment.num_inputs - prefix.inputs;
        self.num_aux += segment.num_aux - prefix.aux;
        self.too_large |= segment.too_large;
        Ok(())
    }

    fn coefficient_id(&mut self, coeff: &Scalar) -> u32 {
        if *coeff == Scalar::ONE {
            return ONE;
        }
        if *coeff == self.minus_one {
            return MINUS_ONE;
        }
        let next = self.coefficients.len() as u32;
        *self.coefficient_ids.entry(coeff.to_repr()).or_insert_with(|| {
            self.coefficients.push(*coeff);
            next
        })
    }

    /// Appends `lc` as the next row of matrix `m`. Terms with a zero coefficient (including a
    /// variable whose terms cancel: bellpepper's LinearCombination keeps one merged term per
    /// variable) are left out, as synthesis neither evaluates nor marks them.
    fn push_row(&mut self, m: usize, lc: &LinearCombination<Scalar>) {
        let inputs = lc.iter_inputs().map(|(&i, coeff)| (i, INPUT_FLAG, coeff));
        let aux = lc.iter_aux().map(|(&i, coeff)| (i, 0, coeff));
        for (index, flag, coeff) in inputs.chain(aux) {
            if coeff.is_zero_vartime() {
                continue;
            }
            let Some(column) = u32::try_from(index).ok().filter(|&c| c < INPUT_FLAG) else {
                self.too_large = true;
                continue;
            };
            let id = self.coefficient_id(coeff);
            self.matrices[m].columns.push(column | flag);
            self.matrices[m].coefficient_ids.push(id);
        }
        let matrix = &mut self.matrices[m];
        let end = u32::try_from(matrix.columns.len()).unwrap_or_else(|_| {
            self.too_large = true;
            0
        });
        matrix.row_starts.push(end);
    }

    /// Places the inputs before the aux in z, checks that every entry names an allocated
    /// variable, and derives the densities the way synthesis marks them: aux variables in A,
    /// inputs and aux variables in B.
    /// Adds the prover's input constraints (as in `synthesis::synthesize`) first.
    fn finish(mut self) -> error::Result<CircuitShape> {
        for i in 0..self.num_inputs {
            self.enforce(|| "", |lc| lc + Variable::new_unchecked(Index::Input(i)), |lc| lc, |lc| lc);
        }
        let (num_inputs, num_aux) = (self.num_inputs, self.num_aux);
        if self.too_large || u32::try_from(num_inputs + num_aux).is_err() {
            return Err(Error::invalid(format!(
                "circuit too large for 32-bit R1CS indices ({num_inputs} inputs, {num_aux} aux, {} non-zeros)",
                self.matrices.iter().map(SparseMatrix::num_nonzeros).sum::<usize>()
            )));
        }
        let [mut a, mut b, mut c] = self.matrices;
        for matrix in [&mut a, &mut b, &mut c] {
            matrix.columns.par_iter_mut().try_for_each(|column| {
                let index = (*column & !INPUT_FLAG) as usize;
                let (kind, placed, allocated) = if *column & INPUT_FLAG != 0 {
                    ("input", index, num_inputs)
                } else {
                    ("aux", num_inputs + index, num_aux)
                };
                if index >= allocated {
                    return Err(Error::invalid(format!(
                        "a constraint uses {kind} variable {index}, but only {allocated} exist"
                    )));
                }
                *column = placed as u32;
                Ok(())
            })?;
        }
        let mut a_aux_density = Density::with_len(num_aux);
        let mut b_input_density = Density::with_len(num_inputs);
        let mut b_aux_density = Density::with_len(num_aux);
        for &column in a.columns() {
            if let Some(aux) = (column as usize).checked_sub(num_inputs) {
                a_aux_density.set(aux);
            }
        }
        for &column in b.columns() {
            match (column as usize).checked_sub(num_inputs) {
                Some(aux) => b_aux_density.set(aux),
                None => b_input_density.set(column as usize),
            }
        }
        Ok(CircuitShape::from_parts(
            num_inputs,
            num_aux,
            [a, b, c],
            self.coefficients,
            [a_aux_density, b_input_density, b_aux_density],
        ))
    }
}

impl ConstraintSystem<Scalar> for ShapeRecorder {
    type Root = Self;

    fn new() -> Self {
        let minus_one = -Scalar::ONE;
        ShapeRecorder {
            num_inputs: 0,
            num_aux: 0,
            matrices: Default::default(),
            coefficients: vec![Scalar::ONE, minus_one],
            coefficient_ids: HashMap::new(),
            minus_one,
            too_large: false,
        }
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.num_aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.num_inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.num_inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.push_row(0, &a(LinearCombination::zero()));
        self.push_row(1, &b(LinearCombination::zero()));
        self.push_row(2, &c(LinearCombination::zero()));
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
