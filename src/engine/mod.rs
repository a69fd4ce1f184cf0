//! The engine: one per process. It owns the configuration, the prover (worker threads and
//! backend), the resident keys and circuit shapes, and runs a proof kind's call from its
//! input to verified proof bytes with timings, through the prove pipeline.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use blstrs::Scalar;
use filecoin_proofs_api::RegisteredSealProof;
use storage_proofs_core::parameter_cache::parameter_id;

use crate::backend::cpu::CpuBackend;
use crate::backend::Backend;
pub use crate::backend::Priority;
use crate::cancel::CancelToken;
use crate::error::{Error, Result, Status};
#[cfg(feature = "internals")]
pub use crate::kinds::porep::MadeUpSector;
#[cfg(not(feature = "internals"))]
use crate::kinds::porep::SectorInput;
#[cfg(feature = "internals")]
pub use crate::kinds::porep::SectorInput;
pub use crate::kinds::porep::{SealStatement, SectorRequest};
pub use crate::kinds::post::{PostKind, PostRequest, PostStatement, MAX_VANILLA_PROOF_BYTES};
pub use crate::kinds::update::{UpdateRequest, UpdateStatement};
pub use crate::kinds::RegisteredProof;
use crate::kinds::{CircuitSource, ProofJob, ProofRequest};
use crate::prover::{fresh_randomness, Prover};
use crate::synthesis::r1cs::CircuitShape;
use crate::timings::Timings;

pub(crate) mod config;
mod digests;
mod estimate;
mod idle;
mod keys;
mod pipeline;
mod shapes;
mod status;
mod verifier;

pub use config::{
    EngineConfig, IdlePolicy, MsmChoice, ShapeCacheLocation, SplitPolicy, DEFAULT_PARAMETER_CACHE, MAX_DEVICES, MAX_PROVING_LANES, MAX_THREADS,
    MIN_GPU_H_MSM_CHUNK, SHAPE_CACHE_DIR_NAME,
};
pub use estimate::MemoryEstimate;
use keys::KeyStore;
use pipeline::{MemoryBudget, Occupancy};
pub use pipeline::{PartitionSpan, ProofOutput};
use shapes::ShapeCache;
pub use status::{
    DeviceHealth, DeviceStatus, EngineStatus, HostKeyStatus, MemoryReleased, PipelineStatus, PoolUsage, PreloadReport, ResidentKey, ResidentShape,
    ShapeStatus,
};
pub use verifier::Verifier;

/// Bytes of one Groth16 proof (compressed A, B, C): one per partition.
pub const GROTH_PROOF_BYTES: usize = 192;

/// The prover id Filecoin derives from a miner actor id: the payload of its ID address (the
/// unsigned LEB128 varint of the id), zero-padded to 32 bytes. Same as filecoin-ffi's Go side.
pub fn prover_id_from_miner(miner_id: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let (mut v, mut i) = (miner_id, 0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        out[i] = if v == 0 { byte } else { byte | 0x80 };
        i += 1;
        if v == 0 {
            return out;
        }
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
    /// The class the call's work runs in (see `backend::turn`); None: its proof kind's
    /// (WinningPoSt, WindowPoSt, sealing).
    pub priority: Option<Priority>,
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
            None => Ok(fresh_randomness()),
        }
    }
}

pub struct Engine {
    config: EngineConfig,
    prover: Prover,
    /// Workers of the top class (WinningPoSt) only, as many as the engine's: its input check,
    /// synthesis, prep_msm and self-verify start at once instead of queueing behind a batch's
    /// tasks on the shared workers (which a 32GiB batch keeps busy), share the cores with them
    /// under load and have all of them when idle.
    top_class_pool: rayon::ThreadPool,
    keys: KeyStore,
    verifier: Verifier,
    shapes: ShapeCache,
    /// Circuits of the kinds above the sealing class (WindowPoSt, WinningPoSt) the engine has
    /// proven or preloaded: their keys and shapes survive an idle release that keeps them.
    deadline_circuits: Mutex<HashSet<String>>,
    idle: idle::Idle,
    /// Host memory for synthesized partitions of every call (`config.host_memory_budget`).
    pipeline_budget: Arc<MemoryBudget>,
    occupancy: Occupancy,
}

/// Counts one in its counter for as long as it lives (a partition waiting).
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

/// The digest table the engine checks parameter files against, when it checks them.
fn digest_table(config: &EngineConfig) -> Result<Option<Arc<digests::DigestTable>>> {
    if !config.verify_param_digests {
        return Ok(None);
    }
    Ok(Some(Arc::new(match &config.param_digests_file {
        Some(path) => digests::DigestTable::from_file(path)?,
        None => digests::DigestTable::filecoin_proofs(),
    })))
}

/// The process's engine while any handle to it is alive.
static ENGINE: Mutex<Weak<Engine>> = Mutex::new(Weak::new());

impl Engine {
    /// The process-wide engine: created on first use; later calls get the same engine when
    /// they ask for the same configuration and an `EngineState` error otherwise. When every
    /// handle is dropped the engine (and its resident keys) goes away.
    pub fn acquire(config: EngineConfig) -> Result<Arc<Engine>> {
        // RUST_LOG=cuzk=debug shows a line per phase per proof on stderr, unless the host
        // program takes the records (`cuzk_log_set_callback`) or has its own Rust logger.
        crate::logging::init();
        let config = config.resolved()?;
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
        let digests = digest_table(&config)?;
        config.apply_malloc_arena_max()?;
        let param_dir = config.param_dir();
        let prover = Prover::with_backend(select_backend(&config)?, config.num_threads)?;
        let top_class_pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.num_threads)
            .thread_name(|i| format!("cuzk-top-class-{i}"))
            .build()
            .map_err(|e| Error::internal(format!("starting worker threads: {e}")))?;
        let engine = Arc::new(Engine {
            top_class_pool,
            pipeline_budget: MemoryBudget::new(config.host_memory_budget),
            occupancy: Occupancy::default(),
            prover,
            shapes: ShapeCache::new(config.shape_cache_dir()),
            config,
            keys: KeyStore::new(digests.clone()),
            verifier: Verifier::new(param_dir, digests),
            deadline_circuits: Mutex::default(),
            idle: idle::Idle::default(),
        });
        let policy = engine.config.idle;
        let weak = Arc::downgrade(&engine);
        engine
            .idle
            .start(
                policy.release_after,
                Box::new(move || {
                    if let Some(engine) = weak.upgrade() {
                        let released = engine.release_memory(policy.keep_post_keys);
                        log::info!("idle for {:?}: {released:?}", policy.release_after.unwrap_or_default());
                    }
                }),
            )
            .map_err(|e| Error::internal(format!("starting the engine's idle thread: {e}")))?;
        *current = Arc::downgrade(&engine);
        log::info!("cuzk engine started: {:?}", engine.config);
        Ok(engine)
    }

    /// PoRep commit phase 2: what filecoin-ffi's `seal_commit_phase2` does, with timings.
    pub fn seal_commit_phase2(&self, c1_json: &[u8], sector_id: u64, prover_id: [u8; 32], options: &ProveOptions) -> Result<ProofOutput> {
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
    pub fn seal_commit_phase2_batch(&self, sectors: &[SectorRequest], options: &ProveOptions) -> Result<Vec<Result<ProofOutput>>> {
        let inputs: Vec<SectorInput> = sectors.iter().map(|s| SectorInput::Sealed(*s)).collect();
        let requests: Vec<&dyn ProofRequest> = inputs.iter().map(|i| i as &dyn ProofRequest).collect();
        let results = self.run_pipeline(&requests, options)?;
        for (sector, result) in sectors.iter().zip(&results) {
            if let Ok(proven) = result {
                log_timings(&format!("sector {}", sector.sector_id), &proven.timings);
            }
        }
        Ok(results)
    }

    /// One WindowPoSt partition (`request.kind` Window) or a WinningPoSt (Winning): what
    /// filecoin-proofs-api's `generate_single_window_post_with_vanilla` /
    /// `generate_winning_post_with_vanilla` do, with timings. Vanilla proofs that do not
    /// verify are a `Status::FaultySectors` error naming their sectors.
    pub fn generate_post(&self, request: &PostRequest, options: &ProveOptions) -> Result<ProofOutput> {
        let proven = self
            .run_pipeline(&[request as &dyn ProofRequest], options)?
            .pop()
            .expect("one result per request")?;
        log_timings(&format!("{:?}PoSt", request.kind), &proven.timings);
        Ok(proven)
    }

    /// A SnapDeals update proof: what filecoin-proofs-api's
    /// `generate_empty_sector_update_proof_with_vanilla` does, with timings (its partitions
    /// through the pipeline, as a C2's).
    pub fn generate_update(&self, request: &UpdateRequest, options: &ProveOptions) -> Result<ProofOutput> {
        self.generate_update_batch(std::slice::from_ref(request), options)?
            .pop()
            .expect("one result per request")
    }

    /// Update proofs of several sectors in one call, their partitions through one pipeline: one
    /// result per sector, in order; a sector that fails fails alone (as
    /// `seal_commit_phase2_batch`).
    pub fn generate_update_batch(&self, requests: &[UpdateRequest], options: &ProveOptions) -> Result<Vec<Result<ProofOutput>>> {
        let dyn_requests: Vec<&dyn ProofRequest> = requests.iter().map(|r| r as &dyn ProofRequest).collect();
        let results = self.run_pipeline(&dyn_requests, options)?;
        for (i, proven) in results.iter().enumerate() {
            if let Ok(proven) = proven {
                log_timings(&format!("update {i}"), &proven.timings);
            }
        }
        Ok(results)
    }

    /// Proves `requests` through the pipeline, one result per request.
    fn run_pipeline(&self, requests: &[&dyn ProofRequest], options: &ProveOptions) -> Result<Vec<Result<ProofOutput>>> {
        let start = Instant::now();
        let _in_flight = self.idle.enter_proof();
        // The call's class, settled: the kind's unless the caller chose one.
        let class = options
            .priority
            .unwrap_or_else(|| requests.iter().map(|r| r.class()).max().unwrap_or_default());
        let options = ProveOptions {
            priority: Some(class),
            ..options.clone()
        };
        let backend = self.prover.backend.for_call(options.device, class)?;
        Ok(pipeline::run(self, &*backend, requests, &options, start))
    }

    /// The engine's verifier: the verifying keys of its parameter directory. Its calls run on
    /// the caller's thread (and rayon's global workers), not on the engine's.
    pub fn verifier(&self) -> &Verifier {
        &self.verifier
    }

    /// Reads the proving key of `proof` into host memory, copies it to every device the
    /// backend uses and extracts the circuit's shape, so that the first proof does none of it.
    pub fn preload_key(&self, proof: impl Into<RegisteredProof>) -> Result<PreloadReport> {
        let _in_flight = self.idle.enter();
        let proof = proof.into();
        let (id, source) = proof.circuit()?;
        self.note_circuit(&id, proof.class());
        let mut report = PreloadReport::default();
        let key = self
            .keys
            .proving_key(&self.proving_key_path(&id), &self.prover.pool, &mut report.srs_load_ns)?;
        report.srs_upload_ns = self
            .prover
            .backend
            .preload(&key, proof.class(), &self.prover.pool, &mut report.srs_load_ns)?;
        let mut t = Timings::new();
        self.cached_shape(&id, source, &mut t)?;
        report.shape_extract_ns = t.shape_extract_ns;
        Ok(report)
    }

    /// Drops the proving key of `proof` from host memory and from every device (calls using
    /// it keep it until they end). True when it was resident anywhere.
    pub fn evict_key(&self, proof: impl Into<RegisteredProof>) -> Result<bool> {
        let (id, _) = proof.into().circuit()?;
        let path = self.proving_key_path(&id);
        self.shapes.evict(&id);
        let on_host = self.keys.evict_proving_key(&path);
        let on_devices = self.prover.backend.evict(&path.display().to_string());
        Ok(on_host || on_devices > 0)
    }

    /// Gives back the memory the engine keeps between calls: the proving keys (host and
    /// devices) and circuit shapes, but those of the WindowPoSt and WinningPoSt circuits it
    /// has used when `keep_post_keys`; the devices' matrices, NTT and witness buffers and
    /// pinned staging buffers; then the allocator's free host memory. Calls in flight keep
    /// what they use until they end; the next call reads and uploads again what it needs.
    pub fn release_memory(&self, keep_post_keys: bool) -> MemoryReleased {
        let _in_flight = self.idle.enter();
        let start = Instant::now();
        let kept_circuits = match keep_post_keys {
            true => self.deadline_circuits.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            false => HashSet::new(),
        };
        let kept_keys: HashSet<String> = kept_circuits.iter().map(|id| self.proving_key_path(id).display().to_string()).collect();
        let mut released = MemoryReleased::default();
        for key in self.keys.resident_proving_keys() {
            let host_bytes = key.host_bytes();
            if !kept_keys.contains(key.label()) && self.keys.evict_proving_key(Path::new(key.label())) {
                released.host_key_bytes += host_bytes;
            }
        }
        released.host_shape_bytes = self.shapes.evict_unless(|id| kept_circuits.contains(id));
        let on_backend = self.prover.backend.release_memory(&|label| kept_keys.contains(label));
        released.device_bytes = on_backend.device_bytes;
        released.pinned_bytes = on_backend.pinned_bytes;
        crate::allocator::return_free_memory();
        released.duration_ns = crate::timings::nanos(start.elapsed());
        released
    }

    /// Remembers that circuit `id` is proven in `class` (see `deadline_circuits`).
    fn note_circuit(&self, id: &str, class: Priority) {
        if class > Priority::Sealing {
            self.deadline_circuits.lock().unwrap_or_else(|p| p.into_inner()).insert(id.to_string());
        }
    }

    /// The R1CS shape of `proof`'s partition circuits from the engine's cache (extracted on
    /// first use, timed into `t`); None when the engine synthesizes the classic way.
    pub fn porep_shape(&self, proof: RegisteredSealProof, t: &mut Timings) -> Result<Option<Arc<CircuitShape>>> {
        let (id, source) = RegisteredProof::Seal(proof).circuit()?;
        self.cached_shape(&id, source, t)
    }

    /// [`Self::shape`], for benchmarks and tests (a synthetic key made from the shape the
    /// engine's calls then use).
    #[cfg(feature = "internals")]
    pub fn job_shape(&self, job: &dyn ProofJob, t: &mut Timings) -> Result<Option<Arc<CircuitShape>>> {
        self.shape(job, t)
    }

    /// The shape of `job`'s partition circuits, as `porep_shape`.
    fn shape(&self, job: &dyn ProofJob, t: &mut Timings) -> Result<Option<Arc<CircuitShape>>> {
        self.cached_shape(job.circuit_id(), Box::new(|| job.extract_shape()), t)
    }

    /// The shape of circuit `id` from the cache, extracted on the engine's workers on first use
    /// (timed into `t`); None when the engine synthesizes the classic way. Never called on a
    /// worker, for the reason `KeyStore::proving_key` gives.
    fn cached_shape<'a>(&self, id: &str, source: CircuitSource<'a>, t: &mut Timings) -> Result<Option<Arc<CircuitShape>>> {
        if self.config.classic_synthesis {
            return Ok(None);
        }
        if self.prover.pool.current_thread_index().is_some() {
            return Err(Error::internal(
                "a circuit shape was requested from one of the engine's workers (it may wait for an extraction that needs that worker)",
            ));
        }
        self.shapes.get(id, &self.prover.pool, source, t).map(Some)
    }

    /// What the engine holds and does now.
    pub fn status(&self) -> EngineStatus {
        EngineStatus {
            version: env!("CARGO_PKG_VERSION"),
            backend: match self.prover.backend.kind() {
                crate::timings::BackendKind::Gpu => "gpu",
                _ => "cpu",
            },
            worker_threads: self.config.num_threads,
            proofs_in_flight: self.idle.proofs(),
            host_memory_trims: self.idle.trims(),
            idle_releases: self.idle.releases(),
            host_keys: self
                .keys
                .resident_proving_keys()
                .iter()
                .map(|k| HostKeyStatus {
                    label: k.label().to_string(),
                    bytes: k.host_bytes(),
                    points_bytes: k.points_bytes(),
                })
                .collect(),
            circuit_shapes: self.shapes.status(),
            pipeline_memory_in_use: self.pipeline_budget.used(),
            pipeline_memory_budget: self.pipeline_budget.limit(),
            pipeline_memory_peak: self.pipeline_budget.peak(),
            pipeline: self.occupancy.status(),
            devices: self.prover.backend.devices(),
        }
    }

    /// The proving key file of `proof`'s circuit in the parameter directory: the label the
    /// engine's status gives the key (`HostKeyStatus::label`, `ResidentKey::label`).
    pub fn proving_key_file(&self, proof: impl Into<RegisteredProof>) -> Result<PathBuf> {
        let (id, _) = proof.into().circuit()?;
        Ok(self.proving_key_path(&id))
    }

    /// The proving key file of circuit `id` in the parameter directory, in filecoin-proofs'
    /// naming.
    fn proving_key_path(&self, id: &str) -> PathBuf {
        self.config.param_dir().join(parameter_id(id))
    }

    /// The workers of a call of `class`'s parallel work.
    pub(crate) fn pool(&self, class: Priority) -> &rayon::ThreadPool {
        match class {
            Priority::WinningPost => &self.top_class_pool,
            _ => &self.prover.pool,
        }
    }

    /// The proving lanes of a call on `backend` (its view for the call).
    pub(crate) fn proving_lanes(&self, backend: &dyn Backend) -> usize {
        match self.config.proving_lanes {
            0 => backend.proving_lanes(),
            lanes => lanes,
        }
    }

    /// The engine's prover (its backend and worker threads): for proving circuits of your own
    /// with the engine's resident GPU context.
    pub fn prover(&self) -> &Prover {
        &self.prover
    }
}

/// GPU when one is usable and not switched off (`cpu_only`), else CPU. A device list
/// (`config.devices`) must name devices that are there.
fn select_backend(config: &EngineConfig) -> Result<Box<dyn Backend>> {
    if config.cpu_only {
        log::info!("CPU backend (cpu_only)");
        return Ok(Box::new(CpuBackend::new(config.num_threads)?));
    }
    #[cfg(feature = "cuda")]
    // CUDA_VISIBLE_DEVICES decides which physical devices are used and how they are numbered.
    let visible = crate::backend::gpu::device_count();
    #[cfg(not(feature = "cuda"))]
    let visible: Result<usize> = Err(Error::new(Status::GpuError, "this library was built without the cuda feature"));
    match visible {
        Ok(n) if n > 0 => {
            if let Some(d) = config.devices.iter().find(|&&d| d as usize >= n) {
                return Err(Error::invalid(format!("device {d} listed; {n} CUDA device(s) visible to this process")));
            }
            return crate::prover::gpu_backend(config, None);
        }
        _ if !config.devices.is_empty() => {
            let why = visible.err().map_or_else(|| "no CUDA device is visible".to_string(), |e| e.message);
            return Err(Error::new(Status::GpuError, format!("devices {:?} listed, but {why}", config.devices)));
        }
        Ok(_) => log::info!("no CUDA device: CPU backend"),
        Err(e) => log::warn!("CUDA unavailable, CPU backend: {e}"),
    }
    Ok(Box::new(CpuBackend::new(config.num_threads)?))
}

fn log_timings(what: &str, t: &Timings) {
    if log::log_enabled!(log::Level::Debug) {
        for (phase, ns) in t.phases() {
            log::debug!("{what}: {phase:<12} {:>10.3} ms", ns as f64 / 1e6);
        }
    }
}

/// For benchmarks and tests (`internals`).
#[cfg(feature = "internals")]
impl Engine {
    /// Proves `sectors` as `seal_commit_phase2_batch` does, made-up ones included.
    pub fn prove_sectors(&self, sectors: &[SectorInput], options: &ProveOptions) -> Result<Vec<Result<ProofOutput>>> {
        let requests: Vec<&dyn ProofRequest> = sectors.iter().map(|s| s as &dyn ProofRequest).collect();
        self.run_pipeline(&requests, options)
    }

    /// Proves any proof requests (made-up PoSts included) through the pipeline, one result per
    /// request.
    pub fn prove_requests(&self, requests: &[&dyn ProofRequest], options: &ProveOptions) -> Result<Vec<Result<ProofOutput>>> {
        self.run_pipeline(requests, options)
    }

    /// The proving lanes of a call that may use every device.
    pub fn default_proving_lanes(&self) -> usize {
        self.proving_lanes(&*self.prover.backend)
    }
}
