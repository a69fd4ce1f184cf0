//! Parallel synthesis of circuits made of independent parts.
//!
//! A PoRep partition circuit is a short prefix (the public commitments, the replica id's bits)
//! followed by one sub-circuit per challenge; each sub-circuit reads only the prefix's
//! variables. Synthesizing "prefix + challenge i" on its own therefore allocates exactly what
//! the sequential synthesis allocates for challenge i, after a copy of the prefix. Both the
//! witness and the shape of the whole circuit are put together from such runs, made on all
//! cores: the copies of the prefix are dropped and the variables of each part are renumbered to
//! where the sequential synthesis puts them.

use std::ops::Range;

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use rayon::prelude::*;

use super::witness::{synthesize_witness, NotInPlace, Witness};
use crate::cancel::CancelToken;
use crate::parallel::{extend_parallel, try_fill_tiles, write_copy};

/// A circuit that synthesizes as a prefix followed by `num_segments()` segments, where each
/// segment uses the prefix's variables and its own, never another segment's.
///
/// `synthesize_segments(cs, a..b)` synthesizes the prefix and then segments a..b in order; over
/// `0..num_segments()` it is the whole circuit, over `0..0` the prefix alone. The prefix must
/// not depend on which segments follow it (callers check that it comes out the same).
pub trait SegmentedCircuit: Sync {
    fn num_segments(&self) -> usize;

    fn synthesize_segments<CS: ConstraintSystem<Scalar>>(&self, cs: &mut CS, segments: Range<usize>) -> Result<(), SynthesisError>;

    /// The witness of the prefix followed by segment `i`, as `synthesize_witness` gives it.
    /// Circuits that compute a segment's witness faster than their gadgets do may override it.
    fn segment_witness(&self, i: usize, cancel: Option<&CancelToken>) -> Result<Witness, SynthesisError>
    where
        Self: Sized,
    {
        synthesize_witness(Segments::one(self, i), cancel)
    }

    /// The witness of the whole circuit, as `synthesize_witness` gives it; by default with the
    /// segments synthesized in parallel. Circuits that know a finer split may override it.
    fn witness(&self, cancel: Option<&CancelToken>) -> Result<Witness, SynthesisError>
    where
        Self: Sized,
    {
        synthesize_witness_parallel(self, cancel)
    }
}

/// Any circuit as a segmented one: an empty prefix and one segment, the whole circuit (for
/// circuits without independent parts, such as a hash chain).
pub struct Whole<C>(pub C);

impl<C: Circuit<Scalar> + Clone + Sync> SegmentedCircuit for Whole<C> {
    fn num_segments(&self) -> usize {
        1
    }

    fn synthesize_segments<CS: ConstraintSystem<Scalar>>(&self, cs: &mut CS, segments: Range<usize>) -> Result<(), SynthesisError> {
        match segments.is_empty() {
            true => Ok(()),
            false => self.0.clone().synthesize(cs),
        }
    }

    fn witness(&self, cancel: Option<&CancelToken>) -> Result<Witness, SynthesisError> {
        synthesize_witness(self.0.clone(), cancel)
    }
}

/// Some of a segmented circuit's segments, after its prefix, as a bellperson `Circuit`.
pub struct Segments<'a, C> {
    pub circuit: &'a C,
    pub range: Range<usize>,
}

impl<'a, C: SegmentedCircuit> Segments<'a, C> {
    #[cfg(any(test, feature = "internals"))]
    pub fn all(circuit: &'a C) -> Self {
        Segments {
            circuit,
            range: 0..circuit.num_segments(),
        }
    }

    pub fn prefix(circuit: &'a C) -> Self {
        Segments { circuit, range: 0..0 }
    }

    pub fn one(circuit: &'a C, segment: usize) -> Self {
        Segments {
            circuit,
            range: segment..segment + 1,
        }
    }
}

impl<C: SegmentedCircuit> Circuit<Scalar> for Segments<'_, C> {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        self.circuit.synthesize_segments(cs, self.range)
    }
}

fn prefix_mismatch(segment: usize) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(format!(
        "segment {segment} of the circuit does not start with the circuit's prefix: it cannot be synthesized in parallel"
    )))
}

/// What a segment adds to the prefix.
#[derive(Clone, Copy, PartialEq, Eq)]
struct OwnSize {
    inputs: usize,
    aux: usize,
    constraints: usize,
}

impl OwnSize {
    /// The size of what `segment` (segment `i`) adds to `prefix`, after checking that it starts
    /// with the prefix.
    fn of(prefix: &Witness, i: usize, segment: &Witness) -> Result<Self, SynthesisError> {
        if !(segment.input_assignment.starts_with(&prefix.input_assignment) && segment.aux_assignment.starts_with(&prefix.aux_assignment)) {
            return Err(prefix_mismatch(i));
        }
        // Each segment's count includes the prefix's constraints (its input constraints too).
        Ok(OwnSize {
            inputs: segment.input_assignment.len() - prefix.input_assignment.len(),
            aux: segment.aux_assignment.len() - prefix.aux_assignment.len(),
            constraints: segment.num_constraints - prefix.num_constraints,
        })
    }
}

/// The witness of the whole circuit, equal to `synthesize_witness(Segments::all(circuit))`,
/// with the segments synthesized in parallel on the current rayon pool.
///
/// When every segment adds as many variables as the first (a PoSt's slots do), each is copied to
/// its place in the whole as soon as it is made, while it is still in cache: the whole's memory
/// is written once, and no segment outlives its task (a 32GiB WindowPoSt partition's 2 349
/// segments hold 4 GB). Otherwise the segments are all made, then copied.
pub fn synthesize_witness_parallel<C: SegmentedCircuit>(circuit: &C, cancel: Option<&CancelToken>) -> Result<Witness, SynthesisError> {
    let prefix = synthesize_witness(Segments::prefix(circuit), cancel)?;
    let n = circuit.num_segments();
    if n == 0 {
        return Ok(prefix);
    }
    let first = circuit.segment_witness(0, cancel)?;
    let size = OwnSize::of(&prefix, 0, &first)?;
    let (p_inputs, p_aux) = (prefix.input_assignment.len(), prefix.aux_assignment.len());
    let mut aux_assignment = prefix.aux_assignment.clone();
    let placed = try_fill_tiles(&mut aux_assignment, &vec![size.aux; n], |i, tile| {
        let made;
        let segment = match i {
            0 => &first,
            _ => {
                made = circuit.segment_witness(i, cancel).map_err(NotInPlace::Failed)?;
                &made
            }
        };
        if OwnSize::of(&prefix, i, segment).map_err(NotInPlace::Failed)? != size {
            return Err(NotInPlace::Uneven);
        }
        write_copy(tile, &segment.aux_assignment[p_aux..]);
        Ok(segment.input_assignment[p_inputs..].to_vec())
    });
    match placed {
        Ok(inputs) => {
            let mut input_assignment = prefix.input_assignment;
            input_assignment.extend(inputs.into_iter().flatten());
            Ok(Witness {
                input_assignment,
                aux_assignment,
                num_constraints: prefix.num_constraints + n * size.constraints,
            })
        }
        Err(NotInPlace::Failed(e)) => Err(e),
        Err(NotInPlace::Uneven) => {
            drop(aux_assignment);
            let mut segments = (1..n)
                .into_par_iter()
                .map(|i| circuit.segment_witness(i, cancel))
                .collect::<Result<Vec<_>, _>>()?;
            segments.insert(0, first);
            assemble(prefix, &segments)
        }
    }
}

/// The prefix followed by what each of `segments` adds to it, copied on all cores.
fn assemble(prefix: Witness, segments: &[Witness]) -> Result<Witness, SynthesisError> {
    let sizes = segments
        .iter()
        .enumerate()
        .map(|(i, s)| OwnSize::of(&prefix, i, s))
        .collect::<Result<Vec<_>, _>>()?;
    let (p_inputs, p_aux) = (prefix.input_assignment.len(), prefix.aux_assignment.len());
    let Witness {
        mut input_assignment,
        mut aux_assignment,
        num_constraints,
    } = prefix;
    let own = |values: fn(&Witness) -> &[Scalar], skip: usize| segments.iter().map(|s| &values(s)[skip..]).collect::<Vec<_>>();
    extend_parallel(&mut input_assignment, &own(|s| &s.input_assignment, p_inputs));
    extend_parallel(&mut aux_assignment, &own(|s| &s.aux_assignment, p_aux));
    Ok(Witness {
        input_assignment,
        aux_assignment,
        num_constraints: num_constraints + sizes.iter().map(|s| s.constraints).sum::<usize>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthesis::r1cs::CircuitShape;
    use crate::synthesis::SynthesizedCircuit;
    use bellperson::LinearCombination;
    use ff::Field;

    /// A prefix (an input x and an aux y = x²) and segments that each allocate aux and input
    /// variables, use the prefix's, and bring their own coefficients. With `prefix_varies`,
    /// the prefix allocates one variable per segment before the first it is followed by (not a
    /// segmented circuit); with `uneven`, segment i allocates i % 3 more aux variables.
    struct Toy {
        segments: usize,
        prefix_varies: bool,
        uneven: bool,
    }

    impl SegmentedCircuit for Toy {
        fn num_segments(&self) -> usize {
            self.segments
        }

        fn synthesize_segments<CS: ConstraintSystem<Scalar>>(&self, cs: &mut CS, segments: Range<usize>) -> Result<(), SynthesisError> {
            let x_value = Scalar::from(3);
            let x = cs.alloc_input(|| "x", || Ok(x_value))?;
            if self.prefix_varies {
                for _ in 0..segments.start {
                    cs.alloc(|| "extra", || Ok(Scalar::ONE))?;
                }
            }
            let y = cs.alloc(|| "y", || Ok(x_value.square()))?;
            cs.enforce(|| "y = x²", |lc| lc + x, |lc| lc + x, |lc| lc + y);
            for i in segments {
                let k = Scalar::from(i as u64 + 5);
                let a_value = x_value.square() + k;
                let a = cs.alloc(|| "a", || Ok(a_value))?;
                cs.enforce(|| "a = y + k", |lc| lc + y + (k, CS::one()), |lc| lc + CS::one(), |lc| lc + a);
                let b = cs.alloc_input(|| "b", || Ok(a_value * x_value))?;
                cs.enforce(
                    || "b = a·x",
                    |lc| lc + a,
                    |lc| lc + x,
                    |lc: LinearCombination<Scalar>| lc + (Scalar::ONE, b),
                );
                let bit = cs.alloc(|| "bit", || Ok(Scalar::from(i as u64 % 2)))?;
                cs.enforce(|| "bit", |lc| lc + bit, |lc| lc + CS::one() - bit, |lc| lc);
                for extra in 0..if self.uneven { i % 3 } else { 0 } {
                    let e = cs.alloc(|| "extra", || Ok(Scalar::from(extra as u64)))?;
                    cs.enforce(
                        || "extra",
                        |lc| lc + e,
                        |lc| lc + CS::one(),
                        |lc| lc + (Scalar::from(extra as u64), CS::one()),
                    );
                }
            }
            Ok(())
        }
    }

    #[test]
    fn parallel_synthesis_equals_sequential() {
        for (segments, uneven) in [(0, false), (1, false), (2, false), (7, false), (2, true), (7, true)] {
            let toy = Toy {
                segments,
                prefix_varies: false,
                uneven,
            };
            let sequential = synthesize_witness(Segments::all(&toy), None).unwrap();
            assert_eq!(
                synthesize_witness_parallel(&toy, None).unwrap(),
                sequential,
                "{segments} segments (uneven: {uneven}): witness"
            );
            let shape = CircuitShape::extract(Segments::all(&toy)).unwrap();
            assert_eq!(
                CircuitShape::extract_parallel(&toy).unwrap(),
                shape,
                "{segments} segments (uneven: {uneven}): shape"
            );
            assert_eq!(shape.num_inputs(), 2 + segments);
            // The parallel shape accepts the parallel witness.
            SynthesizedCircuit::from_shape(&shape, synthesize_witness_parallel(&toy, None).unwrap()).unwrap();
        }
    }

    #[test]
    fn a_prefix_that_depends_on_its_segments_is_refused() {
        let toy = Toy {
            segments: 3,
            prefix_varies: true,
            uneven: false,
        };
        assert!(synthesize_witness_parallel(&toy, None).unwrap_err().to_string().contains("prefix"));
        assert!(CircuitShape::extract_parallel(&toy).unwrap_err().to_string().contains("prefix"));
    }
}
