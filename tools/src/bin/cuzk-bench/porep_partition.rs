//! `porep-partition`: one partition of the real PoRep circuit of a sector size, made from
//! made-up vanilla proofs, with a synthetic key (performance only), on the R1CS path.

use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Result};
use cuzk::internals::{porep, synthesize_with_shape};
use cuzk::timings::Timings;
use cuzk::CircuitShape;
use cuzk_tools::circuits::synthetic_key;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredSealProof;
use serde::Serialize;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_porep::stacked::StackedCompound;

use crate::record::{self, RunMemory, RunMemoryFields, Scalars, TimingFields};
use crate::{fixed_randomness, Bench};

/// What a partition's run measured.
#[derive(Serialize)]
struct PartitionRun<'a> {
    #[serde(flatten)]
    timings: TimingFields<'a>,
    scalars: Scalars,
    #[serde(flatten)]
    memory: RunMemoryFields,
}

pub fn run(bench: &Bench) -> Result<()> {
    use filecoin_proofs::constants as c;
    use RegisteredSealProof as P;
    match bench.args.sector_size.0 {
        proof @ P::StackedDrg2KiBV1_1 => bench_partition::<c::SectorShape2KiB>(bench, proof),
        proof @ P::StackedDrg8MiBV1_1 => bench_partition::<c::SectorShape8MiB>(bench, proof),
        proof @ P::StackedDrg512MiBV1_1 => bench_partition::<c::SectorShape512MiB>(bench, proof),
        proof @ P::StackedDrg32GiBV1_1 => bench_partition::<c::SectorShape32GiB>(bench, proof),
        proof @ P::StackedDrg64GiBV1_1 => bench_partition::<c::SectorShape64GiB>(bench, proof),
        other => unreachable!("--sector-size gave {other:?}"),
    }
}

fn bench_partition<Tree: 'static + MerkleTreeTrait>(bench: &Bench, proof: RegisteredSealProof) -> Result<()> {
    let args = &bench.args;
    let label = format!(
        "porep-{}-partition (made-up vanilla proofs, synthetic key, performance only)",
        args.sector_size.short()
    );
    let config = porep::porep_config(proof)?;
    let engine = bench.engine()?;
    let start = Instant::now();
    let shape = Arc::new(
        engine
            .prover()
            .install(|| CircuitShape::extract_parallel(&porep::synthetic_partition_circuit::<Tree>(&config, 0)?))?,
    );
    let shape_extract_ns = cuzk::timings::nanos(start.elapsed());
    eprintln!(
        "{label}: {} constraints, {} inputs, {} aux; shape {} MiB extracted in {:.2} s (challenges in parallel)",
        shape.num_constraints(),
        shape.num_inputs(),
        shape.num_aux(),
        shape.size_bytes() >> 20,
        shape_extract_ns as f64 / 1e9
    );
    if args.check_shape {
        let start = Instant::now();
        let params = filecoin_proofs::parameters::public_params::<Tree>(&config)?;
        let blank = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<_, _>>::blank_circuit(&params);
        let theirs = CircuitShape::extract(blank)?;
        if theirs != *shape {
            bail!(
                "the made-up partition's shape differs from filecoin-proofs' blank circuit's ({} vs {} constraints)",
                shape.num_constraints(),
                theirs.num_constraints()
            );
        }
        eprintln!(
            "{label}: equal to the blank circuit's shape, recorded sequentially in {:.2} s",
            start.elapsed().as_secs_f64()
        );
    }
    let mut key = None;
    for run in 0..args.repeat {
        // Fresh values every run, as every sector has.
        let circuit = porep::synthetic_partition_circuit::<Tree>(&config, run as u64 + 1)?;
        let mut t = Timings::new();
        t.backend = engine.prover().backend_kind() as u32;
        t.shape_extract_ns = if run == 0 { shape_extract_ns } else { 0 };
        let mut memory = RunMemory::start();
        let start = Instant::now();
        // --compare-spmv: odd runs compute a, b, c on the host, beside the device's even runs;
        // --compare-prep: odd runs find the scalars' classes on the host.
        let host_products = args.compare_spmv && run % 2 == 1;
        let host_prep = args.compare_prep && run % 2 == 1 && bench.config.prep_on_gpu;
        engine.prover().set_prep_on_gpu(bench.config.prep_on_gpu && !host_prep);
        let defer = engine.prover().evaluates_products() && !host_products;
        let synthesized = engine.prover().install(|| synthesize_with_shape(defer, &shape, &circuit, None, &mut t))?;
        let synthesis_done = start.elapsed();
        let scalars = Scalars::of(&synthesized);
        let key = key.get_or_insert_with(|| {
            let start = Instant::now();
            let key = synthetic_key(&synthesized, 7);
            eprintln!("{label}: synthetic key made in {:.1} s (not timed)", start.elapsed().as_secs_f64());
            key
        });
        let start = Instant::now();
        let proof = engine.prover().prove_synthesized(key, synthesized, &fixed_randomness(), &mut t)?;
        let wall = (synthesis_done + start.elapsed()).as_secs_f64();
        t.total_ns = (wall * 1e9) as u64;
        let system = bench.system_name() + if host_products { "[spmv=host]" } else { "" } + if host_prep { "[prep=host]" } else { "" };
        let measured = PartitionRun {
            timings: TimingFields(&t),
            scalars,
            memory: memory.fields(),
        };
        record::report(&system, &label, run, wall, &measured, Some(&engine));
        if args.compare_h_chunks {
            // The same circuit, witness and randomness, H's MSM in one chunk.
            let mut whole = Timings::new();
            whole.backend = t.backend;
            let mut memory = RunMemory::start();
            let start = Instant::now();
            let synthesized = engine
                .prover()
                .install(|| synthesize_with_shape(defer, &shape, &circuit, None, &mut whole))?;
            let synthesis_done = start.elapsed();
            engine.prover().set_gpu_h_msm_chunk(u64::MAX);
            let start = Instant::now();
            let proved = engine.prover().prove_synthesized(key, synthesized, &fixed_randomness(), &mut whole);
            let wall = (synthesis_done + start.elapsed()).as_secs_f64();
            engine.prover().set_gpu_h_msm_chunk(bench.config.gpu_h_msm_chunk);
            if proof_bytes(&proved?) != proof_bytes(&proof) {
                bail!("{label}, run {run}: the proof with H's MSM whole differs from the one with H's MSM in chunks");
            }
            whole.total_ns = (wall * 1e9) as u64;
            let measured = PartitionRun {
                timings: TimingFields(&whole),
                scalars: measured.scalars.clone(),
                memory: memory.fields(),
            };
            record::report(&(system + "[h=whole]"), &label, run, wall, &measured, Some(&engine));
        }
    }
    Ok(())
}

/// A proof as bellperson writes it.
fn proof_bytes(proof: &bellperson::groth16::Proof<blstrs::Bls12>) -> Vec<u8> {
    let mut bytes = Vec::new();
    proof.write(&mut bytes).expect("writing to a vector");
    bytes
}
