//! Proving any bellperson circuit with a given key on a chosen backend — the CPU, or GPU device
//! N — on the classic or the R1CS (shape + witness) synthesis path, optionally with fixed r, s.
//! The engine proves its proof kinds through the same [`prove_synthesized`].

use std::sync::Arc;

use bellperson::groth16::Proof;
use bellperson::Circuit;
use blstrs::{Bls12, Scalar};
use ff::Field;
use rayon::ThreadPool;

use crate::backend::cpu::{CpuBackend, Domain};
use crate::backend::{Backend, DeviceStatus};
use crate::cancel::CancelToken;
use crate::engine::config::EngineConfig;
use crate::error::{Error, Result};
use crate::groth16::{assemble, ProvingKey};
use crate::synthesis::r1cs::{CircuitShape, SegmentedCircuit};
use crate::synthesis::{synthesize_classic, synthesize_with_shape, SynthesizedCircuit};
use crate::timings::{timed, BackendKind, Timings};

/// Where a [`Prover`] runs its NTTs and MSMs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendChoice {
    /// The CPU cores.
    Cpu,
    /// The CUDA device of this ordinal (after CUDA_VISIBLE_DEVICES); an error when it is not
    /// usable or the library was built without the `cuda` feature.
    Gpu { device: u32 },
}

/// Options of one circuit proof.
#[derive(Clone, Debug, Default)]
pub struct CircuitOptions {
    /// Fixed (r, s) instead of fresh randomness: for comparing provers bit for bit. Never use
    /// fixed randomness for proofs that leave the machine.
    pub randomness: Option<(Scalar, Scalar)>,
    pub cancel: Option<CancelToken>,
}

/// A Groth16 prover: a backend and the worker threads its synthesis and host work run on.
/// The engine has one ([`crate::engine::Engine::prover`]); [`Prover::new`] makes a standalone
/// one on a chosen backend.
pub struct Prover {
    pub(crate) backend: Box<dyn Backend>,
    pub(crate) pool: ThreadPool,
}

impl Prover {
    /// A prover on `choice`, with `config`'s worker threads (0: one per core), GPU key budget,
    /// pinned pool, 0/1 split policy and placement of a, b, c (the environment is not read).
    pub fn new(choice: BackendChoice, config: &EngineConfig) -> Result<Self> {
        let threads = match config.num_threads {
            0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            n => n,
        };
        let backend: Box<dyn Backend> = match choice {
            BackendChoice::Cpu => Box::new(CpuBackend::new(threads)?),
            BackendChoice::Gpu { device } => gpu_backend(config, Some(device))?,
        };
        Self::with_backend(backend, threads)
    }

    pub(crate) fn with_backend(backend: Box<dyn Backend>, threads: usize) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("cuzk-worker-{i}"))
            .build()
            .map_err(|e| Error::internal(format!("starting worker threads: {e}")))?;
        Ok(Prover { backend, pool })
    }

    /// The kind of backend the proofs run on.
    pub fn backend_kind(&self) -> BackendKind {
        self.backend.kind()
    }

    /// The devices the prover uses and what they hold (empty on the CPU).
    pub fn devices(&self) -> Vec<DeviceStatus> {
        self.backend.devices()
    }

    /// Synthesizes `circuit` the classic way (every linear combination built) and proves it.
    /// Call it from a thread that is not one of this prover's workers.
    pub fn prove<C: Circuit<Scalar> + Send>(&self, key: &ProvingKey, circuit: C, options: &CircuitOptions, t: &mut Timings) -> Result<Proof<Bls12>> {
        let cancel = options.cancel.as_ref();
        let synthesized = self.pool.install(|| synthesize_classic(circuit, cancel, t))?;
        prove_synthesized(&*self.backend, &self.pool, key, synthesized, randomness(options), cancel, t)
    }

    /// Proves `circuit` on the R1CS path: its witness only, then a, b, c as products with the
    /// matrices of `shape` (extracted once with [`CircuitShape::extract`] from a circuit of the
    /// same shape), computed on the device when the backend can. Wrap a plain circuit in
    /// [`crate::Whole`]. Call it from a thread that is not one of this prover's workers.
    pub fn prove_with_shape<C: SegmentedCircuit>(
        &self,
        key: &ProvingKey,
        shape: &Arc<CircuitShape>,
        circuit: &C,
        options: &CircuitOptions,
        t: &mut Timings,
    ) -> Result<Proof<Bls12>> {
        let defer = self.backend.evaluates_products();
        let cancel = options.cancel.as_ref();
        let synthesized = self.pool.install(|| synthesize_with_shape(defer, shape, circuit, cancel, t))?;
        prove_synthesized(&*self.backend, &self.pool, key, synthesized, randomness(options), cancel, t)
    }
}

/// For benchmarks and tests (`internals`): the synthesis and proving steps one by one.
#[cfg(feature = "internals")]
impl Prover {
    /// Runs `f` on the prover's worker threads.
    pub fn install<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        self.pool.install(f)
    }

    /// Whether the backend computes a, b, c itself on the R1CS path.
    pub fn evaluates_products(&self) -> bool {
        self.backend.evaluates_products()
    }

    /// Where the next proofs find a split witness's scalar classes where both can: on the GPU
    /// or on the host (`EngineConfig::prep_on_gpu` until changed; for comparing the two in
    /// one process).
    pub fn set_prep_on_gpu(&self, on_gpu: bool) {
        self.backend.set_prep_on_device(on_gpu)
    }

    /// The points of a chunk of H's MSM on the GPU in the next proofs
    /// (`EngineConfig::gpu_h_msm_chunk` until changed, 0 for its default; for comparing chunk
    /// sizes in one process).
    pub fn set_gpu_h_msm_chunk(&self, points: u64) {
        self.backend.set_h_msm_chunk(points)
    }

    /// Proves an already synthesized circuit.
    pub fn prove_synthesized(
        &self,
        key: &ProvingKey,
        synthesized: SynthesizedCircuit,
        options: &CircuitOptions,
        t: &mut Timings,
    ) -> Result<Proof<Bls12>> {
        prove_synthesized(
            &*self.backend,
            &self.pool,
            key,
            synthesized,
            randomness(options),
            options.cancel.as_ref(),
            t,
        )
    }
}

/// The fixed (r, s) of `options`, or fresh ones.
fn randomness(options: &CircuitOptions) -> (Scalar, Scalar) {
    options.randomness.unwrap_or_else(fresh_randomness)
}

/// Fresh (r, s) from the operating system's generator.
pub(crate) fn fresh_randomness() -> (Scalar, Scalar) {
    let mut rng = rand::rngs::OsRng;
    (Scalar::random(&mut rng), Scalar::random(&mut rng))
}

/// Proves an already synthesized circuit on `backend` with the randomness (r, s), the
/// parallel work in `pool`; called from a thread that is not one of its workers, since the
/// backend may wait there for its turn (`backend::turn`).
pub(crate) fn prove_synthesized(
    backend: &dyn Backend,
    pool: &ThreadPool,
    key: &ProvingKey,
    synthesized: SynthesizedCircuit,
    (r, s): (Scalar, Scalar),
    cancel: Option<&CancelToken>,
    t: &mut Timings,
) -> Result<Proof<Bls12>> {
    t.num_constraints = synthesized.num_constraints() as u64;
    t.domain_log2 = Domain::for_len(synthesized.num_constraints()).map_or(0, |d| d.log_size);
    if let Some(c) = cancel {
        c.check()?;
    }
    let never = CancelToken::new();
    let msm = backend.compute_msms(key, synthesized, pool, cancel.unwrap_or(&never), t)?;
    Ok(timed(&mut t.assembly_ns, || pool.install(|| assemble(key, &msm, r, s))))
}

/// The GPU backend for `config` on `device`, or on every device when None.
#[cfg(feature = "cuda")]
pub(crate) fn gpu_backend(config: &EngineConfig, device: Option<u32>) -> Result<Box<dyn Backend>> {
    use crate::backend::gpu::{GpuBackend, GpuConfig};
    config.check_gpu_h_msm_chunk()?;
    let gpu = GpuConfig {
        devices: device.map(|d| vec![d as i32]).unwrap_or_else(|| config.devices.clone()),
        key_memory_budget: config.gpu_key_memory_budget,
        pinned_pool_bytes: config.pinned_pool_bytes,
        split: config.gpu_split,
        msm: config.gpu_msm,
        h_msm_chunk: config.gpu_h_msm_chunk,
        products_on_device: config.products_on_gpu,
        prep_on_device: config.prep_on_gpu,
        h_table: config.gpu_h_table,
    };
    Ok(Box::new(GpuBackend::new(&gpu)?))
}

#[cfg(not(feature = "cuda"))]
pub(crate) fn gpu_backend(_config: &EngineConfig, _device: Option<u32>) -> Result<Box<dyn Backend>> {
    Err(Error::new(
        crate::error::Status::GpuError,
        "this library was built without the cuda feature: no GPU backend",
    ))
}
