//! The engine: one per process. It owns the configuration, the worker threads, the resident
//! keys and the backend, and runs a C2 from JSON to verified proof bytes with timings.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use bellperson::groth16::Proof;
use bellperson::{Circuit, SynthesisError};
use blstrs::{Bls12, Scalar};
use ff::Field;
use filecoin_proofs::types::MerkleTreeTrait;
use filecoin_proofs_api::RegisteredSealProof;
use once_cell::sync::OnceCell;
use storage_proofs_core::parameter_cache::{parameter_id, verifying_key_id};

use crate::backend::cpu::{CpuBackend, Domain};
use crate::backend::{Backend, DeviceStatus, Priority};
use crate::cancel::CancelToken;
use crate::error::{Error, Result, Status};
use crate::groth16::{assemble, ProvingKey};
use crate::keys::KeyStore;
use crate::porep::{self, SealStatement};
use crate::r1cs::{CircuitShape, SegmentedCircuit};
use crate::synthesis::{synthesize, SynthesizedCircuit};
use crate::timings::{nanos, timed, Timings};
use crate::with_porep_shape;

mod pipeline;

pub use pipeline::{MadeUpSector, PipelineStatus, SectorInput, SectorProof, SectorRequest};
use pipeline::{MemoryBudget, Occupancy};

/// Bytes of one Groth16 proof (compressed A, B, C): one per partition.
pub const GROTH_PROOF_BYTES: usize = 192;

/// Where filecoin-proofs keeps parameters when FIL_PROOFS_PARAMETER_CACHE is not set.
pub const DEFAULT_PARAMETER_CACHE: &str = "/var/tmp/filecoin-proof-parameters";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// Directory of `v28-*.params` / `.vk` files; `None`: FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters.
    pub param_cache_dir: Option<PathBuf>,
    /// Never use a GPU even when one is present.
    pub cpu_only: bool,
    /// Worker threads for synthesis and CPU proving; 0 = one per core.
    pub num_threads: usize,
    /// Verify every proof before returning it (filecoin-proofs always does).
    pub self_verify: bool,
    /// Device memory per GPU for resident proving keys, in bytes; 0: 3/4 of the device's
    /// memory. Keys beyond it are evicted least recently used first; a key larger than it is
    /// streamed from host memory on every call.
    pub gpu_key_memory_budget: u64,
    /// Pinned host memory per GPU for staging copies, in bytes; 0: 128 MiB.
    pub pinned_pool_bytes: u64,
    /// Synthesize by building every linear combination (bellperson's way) instead of
    /// generating the witness and multiplying it with the circuit's R1CS matrices, extracted
    /// once per circuit shape. Both give the same a, b, c; this is for comparing them
    /// (env CUZK_SYNTHESIS=classic sets it too).
    pub classic_synthesis: bool,
    /// Host memory for synthesized partitions waiting to be proven (the prove pipeline, see
    /// `pipeline`), in bytes; 0: a quarter of the machine's memory. One partition at a time is
    /// always allowed.
    pub host_memory_budget: u64,
    /// Partitions one call proves at once (the pipeline's proving lanes); 0: the backend's
    /// choice (GPU: two per device the call may use, so that a sector's partitions spread over
    /// the GPUs and one partition's host work overlaps another's GPU phases; CPU: one).
    pub proving_lanes: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            param_cache_dir: None,
            cpu_only: false,
            num_threads: 0,
            self_verify: true,
            gpu_key_memory_budget: 0,
            pinned_pool_bytes: 0,
            classic_synthesis: false,
            host_memory_budget: 0,
            proving_lanes: 0,
        }
    }
}

impl EngineConfig {
    fn resolved(mut self) -> Self {
        if self.param_cache_dir.is_none() {
            let from_env = std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").filter(|v| !v.is_empty());
            self.param_cache_dir = Some(from_env.map(PathBuf::from).unwrap_or_else(|| DEFAULT_PARAMETER_CACHE.into()));
        }
        if self.num_threads == 0 {
            self.num_threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        }
        if std::env::var("CUZK_SYNTHESIS").as_deref() == Ok("classic") {
            self.classic_synthesis = true;
        }
        if self.host_memory_budget == 0 {
            self.host_memory_budget = physical_memory() / 4;
        }
        self
    }

    pub fn param_dir(&self) -> PathBuf {
        self.param_cache_dir.clone().unwrap_or_else(|| DEFAULT_PARAMETER_CACHE.into())
    }
}

/// Per-call options besides the C2 input.
#[derive(Clone, Debug, Default)]
pub struct ProveOptions {
    pub cancel: Option<CancelToken>,
    /// Fixed (r, s) per partition instead of fresh randomness: for comparing provers bit for
    /// bit. Never use fixed randomness for proofs that leave the machine.
    pub randomness: Option<Vec<(Scalar, Scalar)>>,
    /// Run the GPU phases on this CUDA device instead of the least busy one.
    pub device: Option<u32>,
    /// `High` for latency work: its partitions take every device turn before waiting normal
    /// calls' and never wait for the pipeline's host memory budget (see `backend::turn`).
    pub priority: Priority,
}

impl ProveOptions {
    fn check_cancel(&self) -> Result<()> {
        self.cancel.as_ref().map_or(Ok(()), CancelToken::check)
    }

    fn randomness_for(&self, partition: usize) -> Result<(Scalar, Scalar)> {
        match &self.randomness {
            Some(fixed) => fixed
                .get(partition)
                .copied()
                .ok_or_else(|| Error::invalid(format!("no fixed randomness given for partition {partition}"))),
            None => {
                let mut rng = rand::rngs::OsRng;
                Ok((Scalar::random(&mut rng), Scalar::random(&mut rng)))
            }
        }
    }
}

pub struct Engine {
    config: EngineConfig,
    pool: rayon::ThreadPool,
    backend: Box<dyn Backend>,
    keys: KeyStore,
    shapes: ShapeCache,
    in_flight: AtomicU64,
    /// Host memory for synthesized partitions of every call (`config.host_memory_budget`).
    pipeline_budget: Arc<MemoryBudget>,
    occupancy: Occupancy,
}

/// Circuit shapes (R1CS matrices) by circuit identity, each extracted once.
#[derive(Default)]
struct ShapeCache {
    shapes: Mutex<HashMap<String, Arc<OnceCell<Arc<CircuitShape>>>>>,
}

impl ShapeCache {
    /// The shape of the circuits named `id`, made by `extract` (timed into `shape_extract_ns`)
    /// on first use; concurrent first calls extract it once.
    fn get(&self, id: &str, extract: impl FnOnce() -> Result<CircuitShape>, t: &mut Timings) -> Result<Arc<CircuitShape>> {
        let slot = self
            .shapes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(id.to_string())
            .or_default()
            .clone();
        let shape = slot.get_or_try_init(|| {
            let start = Instant::now();
            let shape = extract()?;
            t.shape_extract_ns += nanos(start.elapsed());
            log::info!(
                "circuit shape {id}: {} constraints, {} MiB, extracted in {:.2?}",
                shape.num_constraints(),
                shape.size_bytes() >> 20,
                start.elapsed()
            );
            Ok::<_, Error>(Arc::new(shape))
        })?;
        Ok(shape.clone())
    }

    fn evict(&self, id: &str) -> bool {
        self.shapes.lock().unwrap_or_else(|p| p.into_inner()).remove(id).is_some()
    }

    fn status(&self) -> Vec<ShapeStatus> {
        let shapes = self.shapes.lock().unwrap_or_else(|p| p.into_inner());
        shapes
            .iter()
            .filter_map(|(id, slot)| {
                slot.get().map(|s| ShapeStatus {
                    id: id.clone(),
                    constraints: s.num_constraints() as u64,
                    bytes: s.size_bytes() as u64,
                })
            })
            .collect()
    }
}

/// A circuit shape the engine holds (engine status).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ShapeStatus {
    pub id: String,
    pub constraints: u64,
    pub bytes: u64,
}

/// A proving key resident in host memory (engine status).
#[derive(Clone, Debug, serde::Serialize)]
pub struct HostKeyStatus {
    pub label: String,
    /// Bytes of its points.
    pub bytes: u64,
}

/// What the engine holds and does (`cuzk_engine_status`, as JSON).
#[derive(Clone, Debug, serde::Serialize)]
pub struct EngineStatus {
    pub version: &'static str,
    pub backend: &'static str,
    pub worker_threads: usize,
    pub proofs_in_flight: u64,
    pub host_keys: Vec<HostKeyStatus>,
    /// R1CS matrices kept for witness-only synthesis, per circuit identity.
    pub circuit_shapes: Vec<ShapeStatus>,
    /// Host memory of synthesized partitions waiting for or in proving (all calls), and the
    /// budget bounding it.
    pub pipeline_memory_in_use: u64,
    pub pipeline_memory_budget: u64,
    /// The most `pipeline_memory_in_use` has been.
    pub pipeline_memory_peak: u64,
    pub pipeline: PipelineStatus,
    pub devices: Vec<DeviceStatus>,
}

/// What a preload did: the time to read the key from disk, to copy it to the devices and to
/// extract the circuit's shape (each 0 when it was already there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreloadReport {
    pub srs_load_ns: u64,
    pub srs_upload_ns: u64,
    pub shape_extract_ns: u64,
}

/// The machine's memory in bytes (0 when it cannot be read).
fn physical_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, page_size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGE_SIZE)) };
    (pages.max(0) as u64).saturating_mul(page_size.max(0) as u64)
}

/// Counts one in its counter for as long as it lives (a call in flight, a partition waiting).
struct Counted<'a>(&'a AtomicU64);

impl<'a> Counted<'a> {
    fn new(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        Counted(counter)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The process's engine while any handle to it is alive.
static ENGINE: Mutex<Weak<Engine>> = Mutex::new(Weak::new());

impl Engine {
    /// The process-wide engine: created on first use; later calls get the same engine when
    /// they ask for the same configuration and an `EngineState` error otherwise. When every
    /// handle is dropped the engine (and its resident keys) goes away.
    pub fn acquire(config: EngineConfig) -> Result<Arc<Engine>> {
        // RUST_LOG=cuzk=debug shows a line per phase per proof, also for C and Go callers;
        // a host program that installed its own logger keeps it.
        let _ = env_logger::Builder::from_default_env().try_init();
        let config = config.resolved();
        let mut current = ENGINE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(engine) = current.upgrade() {
            if engine.config != config {
                return Err(Error::new(
                    Status::EngineState,
                    format!("the engine of this process already runs with {:?}; asked for {:?}", engine.config, config),
                ));
            }
            return Ok(engine);
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.num_threads)
            .thread_name(|i| format!("cuzk-worker-{i}"))
            .build()
            .map_err(|e| Error::internal(format!("starting worker threads: {e}")))?;
        let backend = select_backend(&config)?;
        let engine = Arc::new(Engine {
            pipeline_budget: MemoryBudget::new(config.host_memory_budget),
            occupancy: Occupancy::default(),
            backend,
            config,
            pool,
            keys: KeyStore::default(),
            shapes: ShapeCache::default(),
            in_flight: AtomicU64::new(0),
        });
        *current = Arc::downgrade(&engine);
        log::info!("cuzk engine started: {:?}", engine.config);
        Ok(engine)
    }

    /// PoRep commit phase 2: what filecoin-ffi's `seal_commit_phase2` does, with timings.
    pub fn seal_commit_phase2(&self, c1_json: &[u8], sector_id: u64, prover_id: [u8; 32], options: &ProveOptions) -> Result<SectorProof> {
        let sector = SectorRequest {
            c1_json,
            sector_id,
            prover_id,
        };
        self.seal_commit_phase2_batch(&[sector], options)?.pop().expect("one result per sector")
    }

    /// PoRep C2 of several sectors in one call: their partitions go through one pipeline (a
    /// partition is synthesized while the previous one is proven, see `pipeline`). One result
    /// per sector, in order; a sector that fails fails alone. The call itself fails only when
    /// its options are unusable (a pinned device that does not exist).
    pub fn seal_commit_phase2_batch(&self, sectors: &[SectorRequest], options: &ProveOptions) -> Result<Vec<Result<SectorProof>>> {
        let inputs: Vec<SectorInput> = sectors.iter().map(|s| SectorInput::Sealed(*s)).collect();
        let results = self.prove_sectors(&inputs, options)?;
        for (sector, result) in sectors.iter().zip(&results) {
            if let Ok(proven) = result {
                log_timings(sector.sector_id, &proven.timings);
            }
        }
        Ok(results)
    }

    /// Proves `sectors` as `seal_commit_phase2_batch` does, made-up ones included (benchmarks).
    pub fn prove_sectors(&self, sectors: &[SectorInput], options: &ProveOptions) -> Result<Vec<Result<SectorProof>>> {
        let start = Instant::now();
        let _in_flight = Counted::new(&self.in_flight);
        let backend = self.backend.for_call(options.device, options.priority)?;
        Ok(pipeline::run(self, &*backend, sectors, options, start))
    }

    /// filecoin-proofs-api's `verify_seal`, with the verifying key from the engine's parameter
    /// directory.
    pub fn verify_seal(&self, statement: &SealStatement, proof: &[u8]) -> Result<bool> {
        self.pool
            .install(|| with_porep_shape!(statement.registered_proof, verify_with_vk_file(self, statement, proof)))
    }

    /// Reads the proving key of `proof` into host memory, copies it to every device the
    /// backend uses and extracts the circuit's shape, so that the first proof does none of it.
    pub fn preload_key(&self, proof: RegisteredSealProof) -> Result<PreloadReport> {
        let path = with_porep_shape!(proof, proving_key_path(self, proof))?;
        let mut report = PreloadReport::default();
        let key = self.keys.proving_key(&path, &self.pool, &mut report.srs_load_ns)?;
        report.srs_upload_ns = self.backend.preload(&key, &self.pool)?;
        let mut t = Timings::new();
        self.porep_shape(proof, &mut t)?;
        report.shape_extract_ns = t.shape_extract_ns;
        Ok(report)
    }

    /// Drops the proving key of `proof` from host memory and from every device (calls using
    /// it keep it until they end). True when it was resident anywhere.
    pub fn evict_key(&self, proof: RegisteredSealProof) -> Result<bool> {
        let path = with_porep_shape!(proof, proving_key_path(self, proof))?;
        let shape = with_porep_shape!(proof, circuit_id(proof))?;
        self.shapes.evict(&shape);
        let on_host = self.keys.evict_proving_key(&path);
        let on_devices = self.backend.evict(&path.display().to_string());
        Ok(on_host || on_devices > 0)
    }

    /// The R1CS shape of `proof`'s partition circuits from the engine's cache (extracted on
    /// first use, timed into `t`); None when the engine synthesizes the classic way.
    pub fn porep_shape(&self, proof: RegisteredSealProof, t: &mut Timings) -> Result<Option<Arc<CircuitShape>>> {
        let config = porep::porep_config(proof)?;
        with_porep_shape!(proof, porep_shape(self, &config, t))
    }

    /// What the engine holds and does now.
    pub fn status(&self) -> EngineStatus {
        EngineStatus {
            version: env!("CARGO_PKG_VERSION"),
            backend: match self.backend.kind() {
                crate::timings::BackendKind::Gpu => "gpu",
                _ => "cpu",
            },
            worker_threads: self.config.num_threads,
            proofs_in_flight: self.in_flight.load(Ordering::Relaxed),
            host_keys: self
                .keys
                .resident_proving_keys()
                .iter()
                .map(|k| HostKeyStatus {
                    label: k.label().to_string(),
                    bytes: k.points_bytes(),
                })
                .collect(),
            circuit_shapes: self.shapes.status(),
            pipeline_memory_in_use: self.pipeline_budget.used(),
            pipeline_memory_budget: self.pipeline_budget.limit(),
            pipeline_memory_peak: self.pipeline_budget.peak(),
            pipeline: self.occupancy.status(),
            devices: self.backend.devices(),
        }
    }

    fn key_path<Tree: 'static + MerkleTreeTrait>(&self, config: &filecoin_proofs::types::PoRepConfig, vk: bool) -> Result<PathBuf> {
        let id = porep::parameter_cache_id::<Tree>(config)?;
        let file = if vk { verifying_key_id(&id) } else { parameter_id(&id) };
        Ok(self.config.param_dir().join(file))
    }

    /// Runs `f` on the engine's worker threads (where its calls run their parallel phases).
    pub fn install<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        self.pool.install(f)
    }

    /// The proving lanes of a call on `backend` (its view for the call).
    pub fn proving_lanes(&self, backend: &dyn Backend) -> usize {
        match self.config.proving_lanes {
            0 => backend.proving_lanes(),
            lanes => lanes,
        }
    }

    /// The backend proofs run on.
    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// Synthesizes `circuit` and proves it with this engine's backend.
    pub fn prove_circuit<C: Circuit<Scalar> + Send>(
        &self,
        key: &ProvingKey,
        circuit: C,
        randomness: (Scalar, Scalar),
        cancel: Option<&CancelToken>,
        t: &mut Timings,
    ) -> Result<Proof<Bls12>> {
        prove_with(self.backend(), &self.pool, key, circuit, randomness, cancel, t)
    }

    /// Proves a synthesized circuit with this engine's backend and workers. Not on one of the
    /// engine's workers (see `Backend::compute_msms`).
    pub fn prove_synthesized(
        &self,
        key: &ProvingKey,
        synthesized: SynthesizedCircuit,
        randomness: (Scalar, Scalar),
        cancel: Option<&CancelToken>,
        t: &mut Timings,
    ) -> Result<Proof<Bls12>> {
        prove_synthesized(self.backend(), &self.pool, key, synthesized, randomness, cancel, t)
    }
}

/// Synthesizes `circuit` and proves it on `backend` with the randomness (r, s), the parallel
/// work in `pool` (called from outside it).
pub fn prove_with<C: Circuit<Scalar> + Send>(
    backend: &dyn Backend,
    pool: &rayon::ThreadPool,
    key: &ProvingKey,
    circuit: C,
    (r, s): (Scalar, Scalar),
    cancel: Option<&CancelToken>,
    t: &mut Timings,
) -> Result<Proof<Bls12>> {
    let synthesized = pool.install(|| synthesize_classic(circuit, cancel, t))?;
    prove_synthesized(backend, pool, key, synthesized, (r, s), cancel, t)
}

/// Classic synthesis (every linear combination built), timed into `synthesis_ns`.
fn synthesize_classic<C: Circuit<Scalar>>(circuit: C, cancel: Option<&CancelToken>, t: &mut Timings) -> Result<SynthesizedCircuit> {
    timed(&mut t.synthesis_ns, || synthesize(circuit, cancel)).map_err(|e| synthesis_error(cancel, e))
}

fn synthesis_error(cancel: Option<&CancelToken>, e: SynthesisError) -> Error {
    match cancel {
        Some(c) if c.is_cancelled() => Error::new(Status::Cancelled, "the call was cancelled during synthesis"),
        _ => Error::from_dependency(Status::InvalidArgument, "circuit synthesis failed", e),
    }
}

/// Synthesis on the R1CS path: the witness of `circuit`, then a, b, c as products with the
/// matrices of its `shape` — on the host (timed into `synthesis_ns`, split into `witness_ns`
/// and `spmv_ns`), or, with `defer_products` (for a backend that `evaluates_products`), left to
/// the backend (`synthesis_ns` is then the witness alone; the backend times the products).
pub fn synthesize_with_shape<C: SegmentedCircuit>(
    defer_products: bool,
    shape: &Arc<CircuitShape>,
    circuit: &C,
    cancel: Option<&CancelToken>,
    t: &mut Timings,
) -> Result<SynthesizedCircuit> {
    t.r1cs_synthesis = 1;
    let start = Instant::now();
    let witness = timed(&mut t.witness_ns, || circuit.witness(cancel)).map_err(|e| synthesis_error(cancel, e))?;
    let synthesized = match defer_products {
        true => shape.deferred(witness),
        false => timed(&mut t.spmv_ns, || shape.synthesized(witness)),
    };
    t.synthesis_ns += nanos(start.elapsed());
    synthesized
}

/// Proves an already synthesized circuit on `backend` with the randomness (r, s), the
/// parallel work in `pool`; called from a thread that is not one of its workers, since the
/// backend may wait there for its turn (`backend::turn`).
pub fn prove_synthesized(
    backend: &dyn Backend,
    pool: &rayon::ThreadPool,
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

/// The shape of `config`'s partition circuits, extracted on the engine's workers on first use
/// (timed into `t`); None when the engine synthesizes the classic way. Never called on a
/// worker, for the reason `KeyStore::proving_key` gives.
fn porep_shape<Tree: 'static + MerkleTreeTrait>(
    engine: &Engine,
    config: &filecoin_proofs::types::PoRepConfig,
    t: &mut Timings,
) -> Result<Option<Arc<CircuitShape>>> {
    if engine.config.classic_synthesis {
        return Ok(None);
    }
    if engine.pool.current_thread_index().is_some() {
        return Err(Error::internal(
            "a circuit shape was requested from one of the engine's workers (it may wait for an extraction that needs that worker)",
        ));
    }
    // Shapes do not depend on values: a made-up partition of the right geometry has the shape.
    let extract = || {
        engine
            .pool
            .install(|| CircuitShape::extract_parallel(&porep::synthetic_partition_circuit::<Tree>(config, 0)?))
    };
    engine.shapes.get(&porep::parameter_cache_id::<Tree>(config)?, extract, t).map(Some)
}

/// The identity of a proof kind's partition circuit: filecoin-proofs' parameter id, which
/// names everything its shape depends on (sector size, PoRep parameters, version).
fn circuit_id<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof) -> Result<String> {
    porep::parameter_cache_id::<Tree>(&porep::porep_config(proof)?)
}

fn proving_key_path<Tree: 'static + MerkleTreeTrait>(engine: &Engine, proof: RegisteredSealProof) -> Result<PathBuf> {
    engine.key_path::<Tree>(&porep::porep_config(proof)?, false)
}

/// GPU when one is usable and not switched off (config `cpu_only`, `CUZK_NO_GPU=1`), else CPU.
fn select_backend(config: &EngineConfig) -> Result<Box<dyn Backend>> {
    let no_gpu_env = std::env::var_os("CUZK_NO_GPU").is_some_and(|v| v == "1");
    if config.cpu_only || no_gpu_env {
        log::info!(
            "CPU backend (GPU switched off by {})",
            if config.cpu_only { "config" } else { "CUZK_NO_GPU=1" }
        );
        return Ok(Box::new(CpuBackend::new(config.num_threads)?));
    }
    #[cfg(feature = "cuda")]
    match crate::backend::gpu::device_count() {
        // CUDA_VISIBLE_DEVICES decides which physical devices are used.
        Ok(n) if n > 0 => {
            use crate::backend::gpu::{GpuBackend, GpuConfig};
            let gpu = GpuConfig {
                devices: Vec::new(),
                key_memory_budget: config.gpu_key_memory_budget,
                pinned_pool_bytes: config.pinned_pool_bytes,
                split: GpuBackend::split_from_env()?,
                products_on_device: GpuConfig::products_on_device_from_env()?,
            };
            return Ok(Box::new(GpuBackend::new(&gpu)?));
        }
        Ok(_) => log::info!("no CUDA device: CPU backend"),
        Err(e) => log::warn!("CUDA unavailable, CPU backend: {e}"),
    }
    Ok(Box::new(CpuBackend::new(config.num_threads)?))
}

fn verify_with_vk_file<Tree: 'static + MerkleTreeTrait>(engine: &Engine, statement: &SealStatement, proof: &[u8]) -> Result<bool> {
    let config = porep::porep_config(statement.registered_proof)?;
    let expected = GROTH_PROOF_BYTES * usize::from(config.partitions);
    if proof.len() != expected {
        return Err(Error::invalid(format!(
            "proof is {} bytes, {:?} proofs are {expected}",
            proof.len(),
            statement.registered_proof
        )));
    }
    let vk = engine.keys.verifying_key(&engine.key_path::<Tree>(&config, true)?)?;
    porep::verify_seal::<Tree>(statement, &vk, proof)
}

fn log_timings(sector_id: u64, t: &Timings) {
    if log::log_enabled!(log::Level::Debug) {
        for (phase, ns) in t.phases() {
            log::debug!("sector {sector_id}: {phase:<12} {:>10.3} ms", ns as f64 / 1e6);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::r1cs::synthesize_witness;
    use crate::testing::RandomCircuit;
    use rand::SeedableRng;

    #[test]
    fn shapes_are_extracted_once_per_circuit_id() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(4);
        let small = RandomCircuit::new(&mut rng, 100, true);
        let large = RandomCircuit::new(&mut rng, 200, true);
        let cache = ShapeCache::default();
        let mut t = Timings::new();
        let first = cache.get("small", || CircuitShape::extract(small.clone()), &mut t).unwrap();
        assert!(t.shape_extract_ns > 0);
        let mut t = Timings::new();
        let again = cache.get("small", || panic!("extracted twice"), &mut t).unwrap();
        assert!(Arc::ptr_eq(&first, &again) && t.shape_extract_ns == 0);
        // Another identity (another sector size) gets its own shape, never the cached one.
        let other = cache.get("large", || CircuitShape::extract(large.clone()), &mut t).unwrap();
        assert_ne!(other.num_constraints(), first.num_constraints());
        // A witness of another shape is refused, not proven.
        let witness = synthesize_witness(large, None).unwrap();
        assert_eq!(first.synthesized(witness).err().unwrap().status, Status::InvalidArgument);
        assert!(cache.evict("small") && !cache.evict("small"));
        assert_eq!(cache.status().len(), 1);
    }
}
