//! The split synthesis path (shape extracted once, witness-only synthesis, A·z, B·z, C·z)
//! against classic `synthesize`: the SynthesizedCircuit must be equal value for value, and a
//! proof made from it equal to bellperson's for the same r, s.

mod common;

use common::{assert_same, check_job_split_path};

use std::sync::Arc;
use std::time::{Duration, Instant};

use bellperson::groth16::{create_proof_batch, prepare_verifying_key, verify_proof};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use cuzk::cancel::CancelToken;
use cuzk::engine::EngineConfig;
use cuzk::engine::PostKind;
use cuzk::error::Status;
use cuzk::internals::porep::{self, SealInputs};
use cuzk::internals::r1cs::{synthesize_witness, synthesize_witness_parallel, CircuitShape, SegmentedCircuit};
use cuzk::internals::{synthesize, MadeUpPost, ProofRequest, SynthesizedCircuit};
use cuzk::timings::Timings;
use cuzk::{BackendChoice, CircuitOptions, Prover};
use cuzk_tools::circuits::RandomCircuit;
use cuzk_tools::setup::random_parameters;
use cuzk_tools::sha_chain::ShaChain;
use ff::Field;
use filecoin_proofs::constants::{DefaultPieceHasher, SectorShape2KiB, SectorShape8MiB};
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredSealProof;
use rand::SeedableRng;
use rayon::prelude::*;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::StackedCompound;

/// The split path on `circuit`, the shape extracted from a clone of it.
fn split_path<C: Circuit<Scalar> + Clone>(circuit: &C) -> SynthesizedCircuit {
    let shape = CircuitShape::extract(circuit.clone()).expect("shape");
    SynthesizedCircuit::from_shape(&shape, synthesize_witness(circuit.clone(), None).expect("witness")).expect("witness fits its shape")
}

fn check_split_path<C: Circuit<Scalar> + Clone>(circuit: &C, what: &str) -> SynthesizedCircuit {
    let theirs = synthesize(circuit.clone(), None).expect("synthesis");
    assert_same(&split_path(circuit), &theirs, what);
    theirs
}

#[test]
fn random_circuits_match_synthesis() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
    for constraints in [1usize, 2, 5, 31, 1000, 4099] {
        for bit_heavy in [true, false] {
            let circuit = RandomCircuit::new(&mut rng, constraints, bit_heavy);
            check_split_path(&circuit, &format!("RandomCircuit({constraints}, bit_heavy {bit_heavy})"));
        }
    }
}

#[test]
fn random_circuit_zero_coefficients_leave_density_and_matrix() {
    // RandomCircuit's shape 3 puts x into B with coefficient 0 (x + ... − x), 1 in 16 constraints.
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(8);
    let circuit = RandomCircuit::new(&mut rng, 4096, true);
    let shape = CircuitShape::extract(circuit.clone()).unwrap();
    let theirs = check_split_path(&circuit, "RandomCircuit(4096)");
    // Without the zero terms, B has one entry per circuit constraint (none in input constraints).
    assert_eq!(shape.matrices().unwrap().b.num_nonzeros(), theirs.num_constraints() - shape.num_inputs());
    let stats = shape.coefficient_stats().unwrap();
    assert!(stats.other > 0 && stats.distinct_other == 1, "coefficient 2 of shape 2: {stats:?}");
}

#[test]
fn sha_chains_match_synthesis_and_share_one_shape() {
    let shape = CircuitShape::extract(ShaChain::new(2, 100, 1)).unwrap();
    for seed in [1, 2, 3] {
        let circuit = ShaChain::new(2, 100, seed);
        let theirs = synthesize(circuit.clone(), None).unwrap();
        let ours = SynthesizedCircuit::from_shape(&shape, synthesize_witness(circuit, None).unwrap()).unwrap();
        assert_same(&ours, &theirs, &format!("ShaChain(2, 100, seed {seed}) on the shape of seed 1"));
    }
    let stats = shape.coefficient_stats().unwrap();
    eprintln!(
        "ShaChain(2, 100): {} constraints, {} non-zeros, {stats:?}",
        shape.num_constraints(),
        shape.num_nonzeros()
    );
    assert!(stats.plus_one + stats.minus_one > stats.nonzeros / 2);
}

/// What neither RandomCircuit nor SHA-256 does: a variable twice in one linear combination
/// (merged to coefficient 2, or cancelling to 0), explicit zero coefficients, a general negative
/// coefficient, the constant ONE, inputs in B and C, an empty constraint, and an input
/// allocated after aux variables and constraints.
#[derive(Clone)]
struct EdgeTerms;

impl Circuit<Scalar> for EdgeTerms {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x = cs.alloc(|| "x", || Ok(Scalar::from(3)))?;
        let y = cs.alloc(|| "y", || Ok(Scalar::from(5)))?;
        let u = cs.alloc(|| "u", || Ok(Scalar::from(7)))?;
        let input = cs.alloc_input(|| "in", || Ok(Scalar::from(11)))?;
        let (two, seven) = (Scalar::from(2), Scalar::from(7));
        cs.enforce(|| "twice", |lc| lc + x + x, |lc| lc + y, |lc| lc + (Scalar::from(30), CS::one()));
        cs.enforce(
            || "cancelling",
            |lc| lc + y - y + (Scalar::ZERO, u) + x,
            |lc| lc + input + (Scalar::ZERO, u),
            |lc| lc - input - x + (two, u) - (two, u),
        );
        cs.enforce(
            || "general",
            |lc| lc + (-seven, x),
            |lc| lc + (seven, input) + CS::one(),
            |lc| lc + (seven, u),
        );
        cs.enforce(|| "empty", |lc| lc, |lc| lc, |lc| lc);
        let late = cs.alloc_input(|| "late input", || Ok(Scalar::from(13)))?;
        cs.enforce(|| "late", |lc| lc + late, |lc| lc + u + late, |lc| lc + late - CS::one());
        Ok(())
    }
}

#[test]
fn merged_and_zero_terms_match_synthesis() {
    let theirs = check_split_path(&EdgeTerms, "EdgeTerms");
    // u is in A only with coefficient 0, and in B with 0 and then 1; y is in A only cancelled.
    assert!(!theirs.a_aux_density.get(2) && !theirs.a_aux_density.get(1) && theirs.a_aux_density.get(0));
    assert!(theirs.b_aux_density.get(2) && theirs.b_aux_density.get(1) && !theirs.b_aux_density.get(0));
    assert_eq!(theirs.evaluated().expect("evaluated").0[0], Scalar::from(6), "x + x merged");
    let shape = CircuitShape::extract(EdgeTerms).unwrap();
    assert_eq!((shape.num_inputs(), shape.num_aux(), shape.num_constraints()), (3, 3, 5 + 3));
    assert_eq!(
        &shape.matrices().unwrap().a.row_starts()[..3],
        &[0, 1, 2],
        "one A entry each for x + x and y − y + 0·u + x"
    );
}

/// Independent parts, synthesized in parallel into fresh systems joined with `extend` where
/// the system is extensible (as storage-proofs' Window PoSt does), else one after the other.
#[derive(Clone)]
struct Parts(Vec<RandomCircuit>);

impl Circuit<Scalar> for Parts {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        if !CS::is_extensible() {
            for (i, part) in self.0.into_iter().enumerate() {
                part.synthesize(&mut cs.namespace(|| format!("part {i}")))?;
            }
            return Ok(());
        }
        let systems = self
            .0
            .into_par_iter()
            .map(|part| {
                let mut cs = CS::new();
                cs.alloc_input(|| "temp ONE", || Ok(Scalar::ONE))?;
                part.synthesize(&mut cs)?;
                Ok(cs)
            })
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        for part in &systems {
            cs.extend(part);
        }
        Ok(())
    }
}

#[test]
fn extended_witness_matches_sequential_synthesis() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
    let parts = Parts((0..4).map(|i| RandomCircuit::new(&mut rng, 100 + i, i % 2 == 0)).collect());
    check_split_path(&parts, "Parts (witness through extend, synthesis sequential)");
}

#[test]
fn witness_of_another_shape_is_refused() {
    let shape = CircuitShape::extract(ShaChain::new(0, 10, 1)).unwrap();
    let err = SynthesizedCircuit::from_shape(&shape, synthesize_witness(ShaChain::new(0, 11, 1), None).unwrap()).unwrap_err();
    assert_eq!(err.status, Status::InvalidArgument, "{err}");
}

#[test]
fn cancelled_witness_synthesis_stops() {
    let cancel = CancelToken::new();
    cancel.cancel();
    match synthesize_witness(ShaChain::new(1, 0, 1), Some(&cancel)) {
        Err(SynthesisError::IoError(e)) => assert_eq!(e.kind(), std::io::ErrorKind::Interrupted),
        other => panic!("expected an Interrupted error, got {:?}", other.map(|w| w.aux_assignment.len())),
    }
}

#[test]
fn split_path_proof_equals_bellperson() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(10);
    for (constraints, bit_heavy) in [(1000, true), (777, false)] {
        let circuit = RandomCircuit::new(&mut rng, constraints, bit_heavy);
        let params = cuzk::ProvingKey::new(random_parameters(circuit.clone(), &mut rng).unwrap(), "setup");
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let theirs = create_proof_batch(vec![circuit.clone()], &*params.held_host_points().unwrap(), vec![r], vec![s])
            .unwrap()
            .remove(0);
        let synthesized = split_path(&circuit);
        let prover = Prover::new(BackendChoice::Cpu, &EngineConfig::default()).unwrap();
        let options = CircuitOptions {
            randomness: Some((r, s)),
            cancel: None,
        };
        let ours = prover.prove_synthesized(&params, synthesized, &options, &mut Timings::new()).unwrap();
        assert!(ours == theirs, "{constraints} constraints, bit_heavy {bit_heavy}: proofs differ");
        assert!(verify_proof(&prepare_verifying_key(&params.vk), &ours, &circuit.inputs).unwrap());

        // a, b, c left to the backend (what a GPU with resident matrices gets): the CPU backend
        // computes them itself, timed as SpMV, and proves the same bytes.
        let shape = Arc::new(CircuitShape::extract(circuit.clone()).unwrap());
        let deferred = SynthesizedCircuit::deferred(&shape, synthesize_witness(circuit.clone(), None).unwrap()).unwrap();
        assert!(deferred.evaluated().is_none());
        let mut t = Timings::new();
        let ours = prover.prove_synthesized(&params, deferred, &options, &mut t).unwrap();
        assert!(
            ours == theirs,
            "{constraints} constraints, bit_heavy {bit_heavy}: deferred products, proofs differ"
        );
        assert!(t.spmv_ns > 0 && t.spmv_on_device == 0, "{t:?}");
    }
}

fn seal_inputs() -> SealInputs<SectorShape2KiB> {
    let f = common::fixture();
    porep::check_c1::<SectorShape2KiB>(porep::parse_c1(&f.c1_json).unwrap(), f.sector.prover_id, f.sector.sector_id).unwrap()
}

#[test]
fn porep_2k_split_path_matches_synthesis() {
    let inputs = seal_inputs();
    let circuit = || porep::partition_circuit(&inputs, 0).unwrap();
    // The shape recorded sequentially, recorded challenge by challenge in parallel, and the
    // shape of filecoin-proofs' blank circuit (what its parameters are generated from).
    let shape = CircuitShape::extract(circuit()).unwrap();
    assert!(
        CircuitShape::extract_parallel(&circuit()).unwrap() == shape,
        "parallel shape extraction differs"
    );
    let public_params = filecoin_proofs::parameters::public_params::<SectorShape2KiB>(&inputs.config).unwrap();
    let blank = <StackedCompound<SectorShape2KiB, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&public_params);
    assert!(
        CircuitShape::extract(blank).unwrap() == shape,
        "the blank circuit's shape differs from the sector's"
    );

    // The witness of parallel synthesis (by challenge, and finer: the engine's) is the
    // sequential one.
    let sequential = synthesize_witness(circuit(), None).unwrap();
    assert!(
        synthesize_witness_parallel(&circuit(), None).unwrap() == sequential,
        "witness by challenge differs"
    );
    assert!(circuit().witness(None).unwrap() == sequential, "witness by challenge parts differs");
    // Our PartitionCircuit synthesizes what filecoin-proofs' StackedCompound::circuit does.
    let params = filecoin_proofs::parameters::public_params::<SectorShape2KiB>(&inputs.config).unwrap();
    let theirs = <StackedCompound<SectorShape2KiB, DefaultPieceHasher> as CompoundProof<_, _>>::circuit(
        &inputs.public_inputs,
        (),
        &inputs.vanilla_proofs[0],
        &params,
        Some(0),
    )
    .unwrap();
    assert!(
        synthesize_witness(theirs, None).unwrap() == sequential,
        "PartitionCircuit's witness differs from StackedCircuit's"
    );

    let ours = SynthesizedCircuit::from_shape(&shape, synthesize_witness_parallel(&circuit(), None).unwrap()).unwrap();
    let theirs = synthesize(circuit(), None).unwrap();
    assert_same(&ours, &theirs, "2KiB PoRep partition 0");
}

/// The made-up partitions the engine extracts shapes from (at preload) have the shape of
/// filecoin-proofs' blank circuits, and the split path (parallel witness, A·z, B·z, C·z) gives
/// classic synthesis' result on them: checked here for the sizes that synthesize in seconds
/// (2KiB: 2.7M constraints, 8MiB: 3.8M); the 32GiB shape (130M) by
/// `cuzk-bench porep-partition --sector-size 32GiB --check-shape` on the GPU machine.
#[test]
fn synthetic_partitions_have_the_blank_circuits_shape() {
    fn check<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof) {
        let config = porep::porep_config(proof).unwrap();
        let public_params = filecoin_proofs::parameters::public_params::<Tree>(&config).unwrap();
        let blank = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&public_params);
        let theirs = CircuitShape::extract(blank).unwrap();
        let ours = CircuitShape::extract_parallel(&porep::synthetic_partition_circuit::<Tree>(&config, 1).unwrap()).unwrap();
        assert!(
            ours == theirs,
            "{proof:?}: {} vs {} constraints",
            ours.num_constraints(),
            theirs.num_constraints()
        );
        // Its witness fits the shape, and parallel generation gives the sequential witness.
        let circuit = porep::synthetic_partition_circuit::<Tree>(&config, 2).unwrap();
        let witness = circuit.witness(None).unwrap();
        assert!(
            synthesize_witness(porep::synthetic_partition_circuit::<Tree>(&config, 2).unwrap(), None).unwrap() == witness,
            "{proof:?}: witness"
        );
        // And the split path's a, b, c, assignments and densities are classic synthesis'.
        let theirs = synthesize(porep::synthetic_partition_circuit::<Tree>(&config, 2).unwrap(), None).unwrap();
        assert_same(
            &SynthesizedCircuit::from_shape(&ours, witness).unwrap(),
            &theirs,
            &format!("{proof:?}, made-up partition"),
        );
    }
    check::<SectorShape2KiB>(RegisteredSealProof::StackedDrg2KiBV1_1);
    check::<SectorShape8MiB>(RegisteredSealProof::StackedDrg8MiBV1_1);
}

/// Made-up PoSts of every tree geometry (2KiB: one 8-ary tree; 32GiB: 8-ary sub-trees; 64GiB:
/// a binary top tree too): their witness, computed natively, is the gadgets'.
#[test]
fn post_split_path_equals_classic_synthesis() {
    use filecoin_proofs_api::RegisteredPoStProof::*;
    let cases = [
        (PostKind::Window, StackedDrgWindow2KiBV1_2, 2),
        (PostKind::Winning, StackedDrgWinning2KiBV1, 1),
        (PostKind::Winning, StackedDrgWinning32GiBV1, 1),
        (PostKind::Winning, StackedDrgWinning64GiBV1, 1),
    ];
    for (kind, proof, sectors) in cases {
        let made_up = MadeUpPost {
            kind,
            proof,
            sectors,
            seed: 5,
            key: None,
        };
        let job = made_up.check(&mut Timings::default()).unwrap();
        let (classic, split) = check_job_split_path(job.as_ref(), 0, &format!("made-up {proof:?}"));
        eprintln!("{proof:?}: classic synthesis {classic:?}, split path {split:?}");
    }
}

/// Prints classic synthesis vs the split path's parts, and the shape's size, for `circuit`.
/// Times are the best of a few runs, each circuit built outside the timed section.
fn measure<C: Circuit<Scalar>>(name: &str, circuit: impl Fn() -> C) {
    const RUNS: usize = 3;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let timed = |f: &dyn Fn(C)| {
        (0..RUNS)
            .map(|_| {
                let c = circuit();
                let start = Instant::now();
                f(c);
                start.elapsed()
            })
            .min()
            .unwrap()
    };
    let extract = timed(&|c| drop(CircuitShape::extract(c).unwrap()));
    let classic = timed(&|c| drop(synthesize(c, None).unwrap()));
    let witness_only = timed(&|c| drop(synthesize_witness(c, None).unwrap()));
    let shape = CircuitShape::extract(circuit()).unwrap();
    let witness = synthesize_witness(circuit(), None).unwrap();
    let evaluate = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            drop(shape.evaluate(&witness.input_assignment, &witness.aux_assignment).unwrap());
            start.elapsed()
        })
        .min()
        .unwrap();
    let stats = shape.coefficient_stats().unwrap();
    let nnz = shape.num_nonzeros();
    eprintln!(
        "{name}: {} constraints, {} inputs, {} aux; rayon threads {}",
        shape.num_constraints(),
        shape.num_inputs(),
        shape.num_aux(),
        rayon::current_num_threads()
    );
    eprintln!("  classic synthesize      {:>9.1} ms", ms(classic));
    eprintln!("  witness-only synthesis  {:>9.1} ms", ms(witness_only));
    eprintln!("  evaluate (A·z, B·z, C·z){:>9.1} ms", ms(evaluate));
    eprintln!(
        "  split path total        {:>9.1} ms ({:.1}x faster)",
        ms(witness_only + evaluate),
        classic.as_secs_f64() / (witness_only + evaluate).as_secs_f64()
    );
    eprintln!("  shape extraction        {:>9.1} ms", ms(extract));
    eprintln!(
        "  non-zeros {nnz} (A {}, B {}, C {}); shape {} bytes = {:.2} bytes/non-zero (36 with a scalar and a u32 column each)",
        shape.matrices().unwrap().a.num_nonzeros(),
        shape.matrices().unwrap().b.num_nonzeros(),
        shape.matrices().unwrap().c.num_nonzeros(),
        shape.size_bytes(),
        shape.size_bytes() as f64 / nnz as f64
    );
    eprintln!(
        "  coefficients: +1 {:.2} %, -1 {:.2} %, other {:.2} % ({} distinct)",
        100.0 * stats.plus_one as f64 / nnz as f64,
        100.0 * stats.minus_one as f64 / nnz as f64,
        100.0 * stats.other as f64 / nnz as f64,
        stats.distinct_other
    );
}

#[test]
#[ignore = "measurement: cargo test --release --test r1cs -- --ignored --nocapture"]
fn measure_split_path() {
    let inputs = seal_inputs();
    measure("2KiB PoRep partition 0", || porep::partition_circuit(&inputs, 0).unwrap());
    let circuit = porep::partition_circuit(&inputs, 0).unwrap();
    let parallel = (0..3)
        .map(|_| {
            let start = Instant::now();
            drop(synthesize_witness_parallel(&circuit, None).unwrap());
            start.elapsed()
        })
        .min()
        .unwrap();
    eprintln!(
        "  witness, challenges in parallel {:>9.1} ms ({} challenges)",
        parallel.as_secs_f64() * 1e3,
        circuit.num_segments()
    );
    let parts = (0..3)
        .map(|_| {
            let start = Instant::now();
            drop(circuit.witness(None).unwrap());
            start.elapsed()
        })
        .min()
        .unwrap();
    eprintln!("  witness, challenge parts in parallel {:>9.1} ms", parts.as_secs_f64() * 1e3);
    let start = Instant::now();
    drop(CircuitShape::extract_parallel(&circuit).unwrap());
    eprintln!("  shape extraction in parallel    {:>9.1} ms", start.elapsed().as_secs_f64() * 1e3);
    measure("ShaChain 2^18", || ShaChain::with_constraints((1 << 18) - 64, 1));
}
