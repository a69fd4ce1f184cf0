//! cuzk-bench: one system per process (so peak RSS belongs to that system); prints a table row
//! on stderr and a JSON line on stdout per run.
//!
//!   cuzk-bench c2 --system cuzk|cuzk-streamed|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]
//!       PoRep C2 of a fixture made by `cuzk-fixtures seal`.
//!   cuzk-bench circuit --system cuzk|cuzk-streamed|cuzk-cpu|bellperson --log-constraints K [--witness porep|uniform|sha]
//!                      [--write-key FILE] [--repeat N]
//!       a circuit of 2^K constraints with a synthetic key: PERFORMANCE ONLY (its proofs cannot
//!       verify), for sizes no test parameters exist for. porep|uniform: a random circuit whose
//!       witness is PoRep-like (mostly 0/1) or uniform; sha: the SHA-256 chain of
//!       tools/src/sha_chain.rs, also proven by the peers under bench/peers/, which read the
//!       key that --write-key saves (bellperson's params format). --setup-key (K <= 20): a key
//!       from bellperson's random setup instead, and every proof verified ("verified" field).
//!
//!   cuzk-bench porep-partition --system cuzk|cuzk-streamed|cuzk-cpu --sector-size 2KiB|8MiB|512MiB|32GiB|64GiB
//!                              [--check-shape] [--compare-spmv] [--compare-prep] [--compare-h-chunks] [--repeat N]
//!       one partition of the real PoRep circuit of that sector size (32GiB: 130M constraints,
//!       domain 2^27), made from made-up vanilla proofs of the right geometry, with a synthetic
//!       key: PERFORMANCE ONLY. The R1CS path as the engine runs it (shape extracted in parallel
//!       once, then per proof the witness with the challenges in parallel, A·z, B·z, C·z, GPU).
//!       --check-shape also records filecoin-proofs' blank circuit sequentially and fails unless
//!       its shape is the made-up partition's (the engine's preload relies on it).
//!       --compare-spmv: odd runs compute a, b, c on the host (records `…[spmv=host]`);
//!       --compare-prep: odd runs find the witness's classes on the host (`…[prep=host]`),
//!       the even ones on the device: both in one process, on one key.
//!       --compare-h-chunks: every run proves its circuit again with H's MSM whole, in one
//!       chunk (`…[h=whole]`), and fails unless the two proofs are the same bytes.
//!
//!   cuzk-bench porep-sector --system cuzk|cuzk-cpu --sector-size 32GiB [--sectors 1,2,4] [--partitions P] [--lanes L] [--repeat N]
//!       whole sectors of made-up partitions (PERFORMANCE ONLY, synthetic key) through the
//!       engine's pipeline, N sectors per call (one record per call): partitions synthesized
//!       while earlier ones are proven, within the host memory budget. Records the wall time
//!       per sector, the device's and each stage's busy fraction, each partition's timings.
//!
//!   cuzk-bench update --system cuzk|cuzk-cpu|bellperson --fixture DIR --params DIR [--repeat N]
//!       the SnapDeals update proof of a fixture made by `cuzk-fixtures update` (bellperson:
//!       filecoin-proofs-api's own `generate_empty_sector_update_proof_with_vanilla`).
//!   cuzk-bench update --system cuzk|cuzk-cpu --sector-size 32GiB [--partitions P] [--repeat N]
//!       an update of the sector size's exact shape from made-up vanilla proofs with a synthetic
//!       key (PERFORMANCE ONLY): P of its partitions (default all) through the pipeline.
//!
//!   cuzk-bench keys --system cuzk --sector-size 32GiB [--partitions P] [--repeat N]
//!       the keys of every proof kind in use on one engine (PERFORMANCE ONLY, keys that repeat
//!       a pool of random points): N rounds of a WinningPoSt, a WindowPoSt partition, a PoRep
//!       sector and an update (P of their partitions), one record per call with its key's
//!       residency and the device's resident keys; fails unless the PoSt keys stay resident.
//!
//!   cuzk-bench soak --system cuzk|cuzk-cpu --fixture DIR --params DIR --repeat CALLS
//!       reliability: CALLS PoRep C2 calls of a `cuzk-fixtures seal` fixture from two threads,
//!       one in ten a malformed C1, one in ten cancelled after a random delay, the key evicted
//!       and preloaded by a third thread; every proof verified by filecoin-proofs; host RSS and
//!       device memory sampled against their post-warm-up values (fails beyond 64 MiB).
//!
//!   cuzk-bench pressure --system cuzk --fixture DIR --params DIR --hog PROGRAM [--repeat CALLS]
//!       reliability: PoRep C2 calls of a fixture before, while and after another process
//!       (PROGRAM, tools/cuda/gpu_hog.cu) holds nearly all of the device's memory: under
//!       pressure a verifying proof or a clean OUT_OF_MEMORY, afterwards the key resident and
//!       the speed of before (see pressure.rs).
//!
//!   cuzk-bench msm --system cuzk --log-points K,K.. [--curve g1|g2|both] [--digit-bits C,C..] [--repeat N]
//!       cuzk's MSM against sppark's at 2^K points (random scalars; points repeated beyond
//!       2^20), their inputs on the device: each size by sppark's, by ours at the digit width
//!       it picks and at each --digit-bits; every sum of ours held to sppark's.
//!
//! `cuzk` uses the GPU when one is usable (else the CPU), keeping the key resident in device
//! memory; `cuzk-streamed` the GPU with a key budget of one byte, so that the key's points are
//! streamed from host memory on every call (resident against streamed); `cuzk-cpu` always the
//! CPU backend.
//! `bellperson` is filecoin-proofs-api's own `seal_commit_phase2` (bellperson's CPU prover,
//! with filecoin-proofs' verification of the result), the reference the CPU path is held to.

mod args;
mod c2;
mod circuit;
mod keys;
#[cfg(feature = "cuda")]
mod msm;
mod porep_partition;
mod porep_sector;
mod post;
mod pressure;
mod record;
mod soak;
mod update;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use blstrs::Scalar;
use cuzk::engine::{Engine, EngineConfig, MsmChoice};
use cuzk::internals::{ProofRequest, SynthesisPath};
use cuzk::timings::Timings;
use cuzk::CircuitOptions;
use cuzk_tools::circuits::KeySizes;
use ff::Field;
use serde::Serialize;

use args::{forced_split, Args, Named, Workload};

/// A benchmark: its command line and the engine configuration its `--system` asks for.
struct Bench {
    args: Args,
    config: EngineConfig,
}

impl Bench {
    /// The engine of `--system`.
    fn engine(&self) -> Result<Arc<Engine>> {
        Ok(Engine::acquire(self.config.clone())?)
    }

    /// `--system`, with what the environment makes the engine do differently as part of the
    /// name: a forced 0/1 split (CUZK_GPU_SPLIT=always|never, for measuring the GPU's cost
    /// model), a, b, c on the host (CUZK_SPMV=host), a witness's classes on the host
    /// (CUZK_PREP=host), an MSM other than the default
    /// (CUZK_MSM=cuzk-affine|sppark), resident keys' H tables (CUZK_H_TABLE=on, under cuzk's
    /// MSM), classic synthesis (CUZK_SYNTHESIS=classic), capped malloc arenas (--malloc-arena-max).
    fn system_name(&self) -> String {
        let system = self.args.system;
        let mut name = system.name().to_string();
        if system.prefers_gpu() {
            if let Some(split) = forced_split(self.config.gpu_split) {
                name += &format!("[split={split}]");
            }
            if !self.config.products_on_gpu {
                name += "[spmv=host]";
            }
            if !self.config.prep_on_gpu {
                name += "[prep=host]";
            }
            match self.config.gpu_msm {
                MsmChoice::Cuzk if self.config.gpu_h_table => name += "[h-table]",
                MsmChoice::Cuzk => {}
                MsmChoice::CuzkAffine => name += "[msm=cuzk-affine]",
                MsmChoice::Sppark => name += "[msm=sppark]",
            }
        }
        if system.is_cuzk() && self.config.classic_synthesis {
            name += "[classic synthesis]";
        }
        if system.is_cuzk() && self.config.malloc_arena_max > 0 {
            name += &format!("[malloc arenas={}]", self.config.malloc_arena_max);
        }
        name
    }

    /// Reports run `run` of `label` under the system's name (see `record::report`).
    fn report(&self, label: &str, run: usize, wall: f64, measured: &impl Serialize, engine: Option<&Engine>) {
        record::report(&self.system_name(), label, run, wall, measured, engine)
    }
}

/// r = s = 1: every system proves the same bytes for the same circuit and key.
fn fixed_randomness() -> CircuitOptions {
    CircuitOptions {
        randomness: Some((Scalar::ONE, Scalar::ONE)),
        cancel: None,
    }
}

/// A synthetic key for `request`'s circuit, and the circuit's constraints.
fn made_up_key(engine: &Engine, request: &dyn ProofRequest) -> Result<(Arc<cuzk::ProvingKey>, usize)> {
    let (sizes, constraints) = made_up_key_sizes(engine, request)?;
    Ok((Arc::new(sizes.synthetic_key(7)), constraints))
}

/// The query sizes of `request`'s circuit's key, from one synthesized proof (a, b, c on the
/// host), and the circuit's constraints. The circuit's shape comes from the engine's cache, so
/// that its calls do not extract it again (81M constraints of a 32GiB update: ≈ 85 s each time).
fn made_up_key_sizes(engine: &Engine, request: &dyn ProofRequest) -> Result<(KeySizes, usize)> {
    let mut t = Timings::new();
    let job = engine.prover().install(|| request.check(&mut t))?;
    let shape = match engine.job_shape(job.as_ref(), &mut t)? {
        Some(shape) => shape,
        None => Arc::new(job.extract_shape()?),
    };
    let path = SynthesisPath::Shape {
        shape,
        defer_products: false,
    };
    let synthesized = engine.prover().install(|| job.synthesize(0, &path, None, &mut t))?;
    Ok((KeySizes::of(&synthesized), synthesized.num_constraints()))
}

fn run() -> Result<()> {
    let args = Args::parse()?;
    let bench = Bench {
        config: args.engine_config()?,
        args,
    };
    match bench.args.workload {
        Workload::C2 => c2::run(&bench),
        Workload::Circuit => circuit::run(&bench),
        Workload::PorepPartition => porep_partition::run(&bench),
        Workload::PorepSector => porep_sector::run(&bench),
        Workload::Post => post::run(&bench),
        Workload::Update => update::run(&bench),
        Workload::Keys => keys::run(&bench),
        Workload::Soak => soak::run(&bench),
        Workload::Pressure => pressure::run(&bench),
        #[cfg(feature = "cuda")]
        Workload::Msm => msm::run(&bench),
        #[cfg(not(feature = "cuda"))]
        Workload::Msm => anyhow::bail!("cuzk-bench was built without its `cuda` feature: no GPU MSM to compare"),
    }
}

fn main() -> ExitCode {
    record::note_start();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cuzk-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
