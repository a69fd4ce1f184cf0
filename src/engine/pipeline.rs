//! The prove pipeline of one call: the partitions of its sectors flow through two stages, so
//! that one partition is synthesized while the one before it is proven.
//! (One file past 500 lines: the two stages, the jobs they hand each other and the memory
//! budget that couples them are one mechanism, whose private types no other file uses.)
//!
//! 1. Synthesis (a thread of the call, its parallel work on the engine's workers): per sector
//!    decode and check the C1 output, get the proving key and the circuit shape, then
//!    synthesize its partitions in order.
//! 2. Proving (lanes: threads of the call, two per GPU it may use, see
//!    `Engine::proving_lanes`): each synthesized partition on the backend, taken in order by
//!    the next free lane, which waits there for the backend's turn (never on a worker); the
//!    lane that proves a sector's last partition self-verifies the sector.
//!
//! A synthesized partition holds a, b, c and the witness (32GiB: ≈ 17 GB). Synthesis takes a
//! share of the host memory budget for each one before making it and proving returns it when
//! the proof is made, so what waits between the stages stays within the budget (one partition
//! at a time is always allowed, however small the budget). A sector that fails fails alone:
//! its remaining partitions are skipped, the next sector goes on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use bellperson::groth16::Proof;
use blstrs::Bls12;
use filecoin_proofs::types::MerkleTreeTrait;
#[cfg(feature = "internals")]
use filecoin_proofs_api::RegisteredSealProof;

use super::{Counted, Engine, ProveOptions, GROTH_PROOF_BYTES};
use crate::backend::{Backend, Priority};
use crate::error::{Error, Result, Status};
use crate::groth16::ProvingKey;
use crate::kinds::porep::{self, SealStatement};
use crate::prover::prove_synthesized;
use crate::synthesis::{synthesize_classic, synthesize_with_shape, SynthesizedCircuit};
use crate::timings::{nanos, timed, Timings};
use crate::with_porep_shape;

/// One sector of a call: the arguments of filecoin-ffi's `seal_commit_phase2`.
#[derive(Clone, Copy, Debug)]
pub struct SectorRequest<'a> {
    pub c1_json: &'a [u8],
    pub sector_id: u64,
    pub prover_id: [u8; 32],
}

/// What the pipeline proves for one sector.
#[derive(Clone, Debug)]
pub enum SectorInput<'a> {
    /// A sealed sector's C1 output.
    Sealed(SectorRequest<'a>),
    /// Made-up partitions of a proof kind's exact shape: PERFORMANCE ONLY.
    #[cfg(feature = "internals")]
    MadeUp(MadeUpSector),
}

#[cfg(feature = "internals")]
/// `partitions` partitions of `proof`'s circuit made from made-up vanilla proofs (partition
/// k: `porep::synthetic_partition_circuit` with seed `(seed << 8) + k + 1`), proven with `key`: for
/// benchmarking the pipeline at sizes no sector can be sealed for here. Their proofs cannot
/// verify, so none is self-verified.
#[derive(Clone)]
pub struct MadeUpSector {
    pub proof: RegisteredSealProof,
    pub partitions: usize,
    pub seed: u64,
    pub key: Arc<ProvingKey>,
}

#[cfg(feature = "internals")]
impl std::fmt::Debug for MadeUpSector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MadeUpSector({:?}, {} partitions, seed {})", self.proof, self.partitions, self.seed)
    }
}

/// A proven sector: its proof (192 bytes per partition, filecoin-proofs' format), its timings
/// and those of each of its partitions (in order).
#[derive(Clone, Debug)]
pub struct SectorProof {
    pub proof: Vec<u8>,
    pub timings: Timings,
    pub partitions: Vec<Timings>,
}

/// What synthesis hands to proving, in order.
enum Job<'e> {
    /// Sector `index`'s `partitions` partitions follow, to be proven with `key` (and verified
    /// against `statement` when there is one).
    Sector {
        index: usize,
        statement: Option<SealStatement>,
        key: Arc<ProvingKey>,
        partitions: usize,
        timings: Timings,
    },
    /// Partition `k` of sector `index`, holding `share` of the memory budget, counted as
    /// `waiting` for proving since `synthesized_at`; `timings` are its synthesis's.
    Partition {
        index: usize,
        k: usize,
        synthesized: SynthesizedCircuit,
        share: BudgetShare,
        waiting: Counted<'e>,
        synthesized_at: Instant,
        timings: Timings,
    },
    /// Sector `index` failed before its last partition was synthesized.
    Failed { index: usize, error: Error },
}

/// How busy the pipeline's stages are, over every call (engine status).
#[derive(Default)]
pub(super) struct Occupancy {
    synthesizing: AtomicU64,
    waiting: AtomicU64,
    proving: AtomicU64,
    synthesis_busy_ns: AtomicU64,
    proving_busy_ns: AtomicU64,
}

/// `Occupancy` as the engine status shows it: partitions in each stage now, and the time
/// each stage has been busy since the engine started (summed over calls, so it can exceed the
/// engine's lifetime when calls overlap).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PipelineStatus {
    pub partitions_synthesizing: u64,
    /// Synthesized, waiting for the proving stage.
    pub partitions_waiting: u64,
    pub partitions_proving: u64,
    pub synthesis_busy_ns: u64,
    pub proving_busy_ns: u64,
}

impl Occupancy {
    pub(super) fn status(&self) -> PipelineStatus {
        PipelineStatus {
            partitions_synthesizing: self.synthesizing.load(Ordering::Relaxed),
            partitions_waiting: self.waiting.load(Ordering::Relaxed),
            partitions_proving: self.proving.load(Ordering::Relaxed),
            synthesis_busy_ns: self.synthesis_busy_ns.load(Ordering::Relaxed),
            proving_busy_ns: self.proving_busy_ns.load(Ordering::Relaxed),
        }
    }

    /// Runs `f` as one partition in the stage counted by `in_stage`, adding its time to `busy`.
    fn stage<T>(&self, in_stage: &AtomicU64, busy: &AtomicU64, f: impl FnOnce() -> T) -> T {
        in_stage.fetch_add(1, Ordering::Relaxed);
        let start = Instant::now();
        let out = f();
        busy.fetch_add(nanos(start.elapsed()), Ordering::Relaxed);
        in_stage.fetch_sub(1, Ordering::Relaxed);
        out
    }
}

/// Host memory for synthesized partitions waiting for (or in) proving, in bytes.
pub(super) struct MemoryBudget {
    limit: u64,
    used: Mutex<u64>,
    /// The most ever taken at once.
    peak: AtomicU64,
    returned: Condvar,
}

/// A part of the budget, returned when dropped.
struct BudgetShare {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl MemoryBudget {
    pub(super) fn new(limit: u64) -> Arc<Self> {
        Arc::new(MemoryBudget {
            limit,
            used: Mutex::new(0),
            peak: AtomicU64::new(0),
            returned: Condvar::new(),
        })
    }

    /// Waits until `bytes` fit beside what is taken (or nothing is taken) and takes them; a
    /// high-priority call takes them at once (latency work may exceed the budget by its
    /// partitions rather than wait behind a batch).
    fn take(self: &Arc<Self>, bytes: u64, priority: Priority) -> BudgetShare {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        while priority == Priority::Normal && *used > 0 && *used + bytes > self.limit {
            used = self.returned.wait(used).unwrap_or_else(|p| p.into_inner());
        }
        *used += bytes;
        self.peak.fetch_max(*used, Ordering::Relaxed);
        BudgetShare { budget: self.clone(), bytes }
    }

    pub(super) fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    pub(super) fn used(&self) -> u64 {
        *self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn limit(&self) -> u64 {
        self.limit
    }
}

impl Drop for BudgetShare {
    fn drop(&mut self) {
        *self.budget.used.lock().unwrap_or_else(|p| p.into_inner()) -= self.bytes;
        self.budget.returned.notify_all();
    }
}

/// Host bytes of one synthesized partition for `key`: the assignment, and a, b, c over the
/// domain unless `backend` computes them itself; 32 bytes a scalar.
fn partition_bytes(key: &ProvingKey, backend: &dyn Backend) -> u64 {
    let domain = key.h.len() as u64 + 1;
    let assignment = key.l.len() as u64 + key.vk.ic.len() as u64;
    let products = if backend.evaluates_products() { 0 } else { 3 * domain };
    32 * (products + assignment)
}

/// Proves `sectors` (results in their order), the call having started at `start`.
pub(super) fn run(
    engine: &Engine,
    backend: &dyn Backend,
    sectors: &[SectorInput],
    options: &ProveOptions,
    start: Instant,
) -> Vec<Result<SectorProof>> {
    let mut results: Vec<Option<Result<SectorProof>>> = sectors.iter().map(|_| None).collect();
    let (sender, receiver) = mpsc::channel();
    std::thread::scope(|scope| {
        // The synthesis thread owns the sender: proving ends when it is done.
        scope.spawn(move || {
            for (index, input) in sectors.iter().enumerate() {
                let mut t = Timings::new();
                t.queue_wait_ns = nanos(start.elapsed());
                t.sector_index = index as u32;
                if let Err(error) = synthesize_sector(engine, backend, index, input, options, &sender, &mut t) {
                    if sender.send(Job::Failed { index, error }).is_err() {
                        return;
                    }
                }
            }
        });
        prove_jobs(engine, backend, options, receiver, start, engine.proving_lanes(backend), &mut results);
    });
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::internal("a sector of the call got no result"))))
        .collect()
}

/// Stage 1 for one sector: everything up to its synthesized partitions, sent in order.
fn synthesize_sector<'e>(
    engine: &'e Engine,
    backend: &dyn Backend,
    index: usize,
    input: &SectorInput,
    options: &ProveOptions,
    sender: &mpsc::Sender<Job<'e>>,
    t: &mut Timings,
) -> Result<()> {
    options.check_cancel()?;
    match input {
        SectorInput::Sealed(request) => {
            let c1 = timed(&mut t.input_check_ns, || porep::parse_c1(request.c1_json))?;
            with_porep_shape!(
                c1.registered_proof,
                synthesize_sealed(engine, backend, index, request, c1, options, sender, t)
            )
        }
        #[cfg(feature = "internals")]
        SectorInput::MadeUp(sector) => with_porep_shape!(sector.proof, synthesize_made_up(engine, backend, index, sector, options, sender, t)),
    }
}

#[allow(clippy::too_many_arguments)]
fn synthesize_sealed<'e, Tree: 'static + MerkleTreeTrait>(
    engine: &'e Engine,
    backend: &dyn Backend,
    index: usize,
    request: &SectorRequest,
    c1: filecoin_proofs_api::seal::SealCommitPhase1Output,
    options: &ProveOptions,
    sender: &mpsc::Sender<Job<'e>>,
    t: &mut Timings,
) -> Result<()> {
    let statement = SealStatement {
        registered_proof: c1.registered_proof,
        comm_r: c1.comm_r,
        comm_d: c1.comm_d,
        prover_id: request.prover_id,
        sector_id: request.sector_id,
        ticket: c1.ticket,
        seed: c1.seed,
    };
    let inputs = engine.prover.pool.install(|| {
        timed(&mut t.input_check_ns, || {
            porep::check_c1::<Tree>(c1, request.prover_id, request.sector_id)
        })
    })?;
    options.check_cancel()?;
    // Key and shape are waited for on this thread, not on a worker (see `KeyStore::proving_key`).
    let key = engine
        .keys
        .proving_key(&engine.key_path::<Tree>(&inputs.config, false)?, &engine.prover.pool, &mut t.srs_load_ns)?;
    let sector = SectorPlan {
        index,
        statement: Some(statement),
        key,
        partitions: inputs.vanilla_proofs.len(),
    };
    synthesize_partitions(
        engine,
        backend,
        sector,
        &inputs.config,
        |k| porep::partition_circuit(&inputs, k),
        options,
        sender,
        t,
    )
}

#[cfg(feature = "internals")]
fn synthesize_made_up<'e, Tree: 'static + MerkleTreeTrait>(
    engine: &'e Engine,
    backend: &dyn Backend,
    index: usize,
    sector: &MadeUpSector,
    options: &ProveOptions,
    sender: &mpsc::Sender<Job<'e>>,
    t: &mut Timings,
) -> Result<()> {
    let config = porep::porep_config(sector.proof)?;
    let plan = SectorPlan {
        index,
        statement: None,
        key: sector.key.clone(),
        partitions: sector.partitions,
    };
    // Distinct values per sector and partition, as real sectors have.
    let circuit = |k: usize| porep::synthetic_partition_circuit::<Tree>(&config, (sector.seed << 8) + k as u64 + 1);
    synthesize_partitions(engine, backend, plan, &config, circuit, options, sender, t)
}

/// A sector whose partitions are about to be synthesized.
struct SectorPlan {
    index: usize,
    statement: Option<SealStatement>,
    key: Arc<ProvingKey>,
    partitions: usize,
}

#[allow(clippy::too_many_arguments)]
fn synthesize_partitions<'e, Tree: 'static + MerkleTreeTrait>(
    engine: &'e Engine,
    backend: &dyn Backend,
    sector: SectorPlan,
    config: &filecoin_proofs::types::PoRepConfig,
    circuit: impl Fn(usize) -> Result<porep::PartitionCircuit<Tree>> + Sync,
    options: &ProveOptions,
    sender: &mpsc::Sender<Job<'e>>,
    t: &mut Timings,
) -> Result<()> {
    let SectorPlan {
        index,
        statement,
        key,
        partitions,
    } = sector;
    t.partitions = partitions as u32;
    // Every partition circuit of a proof kind has the same shape (the proving key is made for
    // it); a witness that does not fit it is refused by `synthesized`, never proven.
    let shape = super::porep_shape::<Tree>(engine, config, t)?;
    let bytes = partition_bytes(&key, backend);
    let sector = Job::Sector {
        index,
        statement,
        key,
        partitions,
        timings: std::mem::replace(t, Timings::new()),
    };
    sender.send(sector).map_err(|_| Error::internal("the proving stage ended early"))?;
    let cancel = options.cancel.as_ref();
    let occupancy = &engine.occupancy;
    for k in 0..partitions {
        options.check_cancel()?;
        let share = engine.pipeline_budget.take(bytes, options.priority);
        let synthesis_start = Instant::now();
        let synthesized = occupancy.stage(&occupancy.synthesizing, &occupancy.synthesis_busy_ns, || {
            engine.prover.pool.install(|| -> Result<SynthesizedCircuit> {
                let circuit = timed(&mut t.synthesis_ns, || circuit(k))?;
                match &shape {
                    Some(shape) => synthesize_with_shape(backend.evaluates_products(), shape, &circuit, cancel, t),
                    None => synthesize_classic(circuit, cancel, t),
                }
            })
        })?;
        let mut timings = std::mem::replace(t, Timings::new());
        (timings.sector_index, timings.partition_index, timings.partitions) = (index as u32, k as i32, 1);
        // The partition's own total counts from its synthesis; its proving adds to it.
        timings.total_ns = nanos(synthesis_start.elapsed());
        let waiting = Counted::new(&occupancy.waiting);
        let job = Job::Partition {
            index,
            k,
            synthesized,
            share,
            waiting,
            synthesized_at: Instant::now(),
            timings,
        };
        sender.send(job).map_err(|_| Error::internal("the proving stage ended early"))?;
    }
    Ok(())
}

/// A sector in stage 2: what its partitions' lanes fill in.
struct Proving {
    index: usize,
    statement: Option<SealStatement>,
    key: Arc<ProvingKey>,
    timings: Timings,
    /// Each partition's proof bytes and timings, by partition.
    proofs: Vec<Option<(Vec<u8>, Timings)>>,
    /// Partitions not proven yet; the lane that proves the last one finishes the sector.
    remaining: usize,
    /// Set when a partition failed or synthesis gave up on the sector: its other partitions
    /// are dropped unproven and the result is (or was) this error.
    failed: bool,
}

/// A partition handed to a lane.
struct LaneJob<'e> {
    sector: Arc<Mutex<Proving>>,
    k: usize,
    synthesized: SynthesizedCircuit,
    share: BudgetShare,
    waiting: Counted<'e>,
    synthesized_at: Instant,
    timings: Timings,
}

/// Stage 2: proves partitions as they arrive, on `lanes` threads (two per device the call may
/// use: partitions of one sector spread over the devices, each taking the least busy one, and
/// one partition's host work overlaps another's device turn);
/// records each sector's result when its last partition is proven, or when it fails.
fn prove_jobs<'e>(
    engine: &Engine,
    backend: &dyn Backend,
    options: &ProveOptions,
    receiver: mpsc::Receiver<Job<'e>>,
    start: Instant,
    lanes: usize,
    results: &mut [Option<Result<SectorProof>>],
) {
    let results = Mutex::new(results);
    let record = |index: usize, result: Result<SectorProof>| results.lock().unwrap_or_else(|p| p.into_inner())[index] = Some(result);
    // A lane takes the next partition only when it is free, so partitions enter proving (and
    // the device turns) in order.
    let (to_lanes, from_dispatch) = mpsc::sync_channel::<LaneJob<'e>>(0);
    let from_dispatch = Mutex::new(from_dispatch);
    std::thread::scope(|scope| {
        for _ in 0..lanes.max(1) {
            scope.spawn(|| loop {
                let Ok(job) = from_dispatch.lock().unwrap_or_else(|p| p.into_inner()).recv() else {
                    return;
                };
                if let Some((index, result)) = prove_partition(engine, backend, options, start, job) {
                    record(index, result);
                }
            });
        }
        let mut sectors: Vec<Option<Arc<Mutex<Proving>>>> = Vec::new();
        for job in receiver {
            match job {
                Job::Sector {
                    index,
                    statement,
                    key,
                    partitions,
                    mut timings,
                } => {
                    timings.backend = backend.kind() as u32;
                    let proofs = (0..partitions).map(|_| None).collect();
                    let sector = Proving {
                        index,
                        statement,
                        key,
                        timings,
                        proofs,
                        remaining: partitions,
                        failed: false,
                    };
                    sectors.resize(sectors.len().max(index + 1), None);
                    sectors[index] = Some(Arc::new(Mutex::new(sector)));
                }
                Job::Failed { index, error } => {
                    if let Some(sector) = sectors.get(index).and_then(Option::as_ref) {
                        sector.lock().unwrap_or_else(|p| p.into_inner()).failed = true;
                    }
                    record(index, Err(error));
                }
                Job::Partition {
                    index,
                    k,
                    synthesized,
                    share,
                    waiting,
                    synthesized_at,
                    timings,
                } => {
                    let Some(sector) = sectors.get(index).and_then(Option::clone) else {
                        continue;
                    };
                    let job = LaneJob {
                        sector,
                        k,
                        synthesized,
                        share,
                        waiting,
                        synthesized_at,
                        timings,
                    };
                    if to_lanes.send(job).is_err() {
                        return;
                    }
                }
            }
        }
        drop(to_lanes);
    });
}

/// Proves partition `job.k` of its sector on a lane; when it was the sector's last, the
/// sector's result.
fn prove_partition(
    engine: &Engine,
    backend: &dyn Backend,
    options: &ProveOptions,
    start: Instant,
    job: LaneJob,
) -> Option<(usize, Result<SectorProof>)> {
    let LaneJob {
        sector,
        k,
        synthesized,
        share,
        waiting,
        synthesized_at,
        mut timings,
    } = job;
    drop(waiting);
    timings.proving_wait_ns = nanos(synthesized_at.elapsed());
    let key = {
        let sector = sector.lock().unwrap_or_else(|p| p.into_inner());
        if sector.failed {
            return None;
        }
        sector.key.clone()
    };
    timings.backend = backend.kind() as u32;
    let occupancy = &engine.occupancy;
    let proved = options.randomness_for(k).and_then(|randomness| {
        // On this thread, not on a worker: it may wait for a turn.
        occupancy.stage(&occupancy.proving, &occupancy.proving_busy_ns, || {
            prove_synthesized(
                backend,
                &engine.prover.pool,
                &key,
                synthesized,
                randomness,
                options.cancel.as_ref(),
                &mut timings,
            )
        })
    });
    let mut bytes = Vec::with_capacity(GROTH_PROOF_BYTES);
    let written = proved.and_then(|proof| write_proof(&proof, &mut bytes, &mut timings));
    timings.total_ns += nanos(synthesized_at.elapsed());
    drop(share);
    let mut sector = sector.lock().unwrap_or_else(|p| p.into_inner());
    if sector.failed {
        return None;
    }
    if let Err(error) = written {
        sector.failed = true;
        return Some((sector.index, Err(error)));
    }
    sector.proofs[k] = Some((bytes, timings));
    sector.remaining -= 1;
    if sector.remaining > 0 {
        return None;
    }
    let index = sector.index;
    Some((index, finish_sector(engine, options, &mut sector, start)))
}

fn write_proof(proof: &Proof<Bls12>, bytes: &mut Vec<u8>, t: &mut Timings) -> Result<()> {
    timed(&mut t.assembly_ns, || proof.write(bytes)).map_err(|e| Error::internal(format!("writing proof: {e}")))
}

/// A sector's result once all its partitions are proven: its proof bytes and timings in
/// partition order, self-verified when configured and the sector has a statement.
fn finish_sector(engine: &Engine, options: &ProveOptions, sector: &mut Proving, start: Instant) -> Result<SectorProof> {
    let (mut bytes, mut partitions) = (
        Vec::with_capacity(sector.proofs.len() * GROTH_PROOF_BYTES),
        Vec::with_capacity(sector.proofs.len()),
    );
    for (proof, timings) in sector.proofs.drain(..).flatten() {
        bytes.extend_from_slice(&proof);
        sector.timings.merge(&timings);
        partitions.push(timings);
    }
    options.check_cancel()?;
    let mut timings = sector.timings;
    if let (true, Some(statement)) = (engine.config.self_verify, &sector.statement) {
        let verify_start = Instant::now();
        let vk = porep::prepare_vk(&sector.key.vk);
        let valid = engine
            .prover
            .pool
            .install(|| with_porep_shape!(statement.registered_proof, verify_statement(statement, &vk, &bytes)))?;
        timings.verify_ns += nanos(verify_start.elapsed());
        if !valid {
            return Err(Error::new(
                Status::VerifyFailed,
                "the proof failed self-verification (inconsistent proving key?)",
            ));
        }
    }
    timings.total_ns = nanos(start.elapsed());
    Ok(SectorProof {
        proof: bytes,
        timings,
        partitions,
    })
}

fn verify_statement<Tree: 'static + MerkleTreeTrait>(
    statement: &SealStatement,
    vk: &bellperson::groth16::PreparedVerifyingKey<Bls12>,
    proof: &[u8],
) -> Result<bool> {
    porep::verify_seal::<Tree>(statement, vk, proof)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn budget_blocks_normal_takes_and_lets_high_priority_through() {
        let budget = MemoryBudget::new(100);
        let first = budget.take(80, Priority::Normal);
        // Over the limit, but latency work does not wait.
        let high = budget.take(80, Priority::High);
        assert_eq!(budget.used(), 160);
        let taken = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _share = budget.take(30, Priority::Normal);
                taken.store(true, Ordering::SeqCst);
            });
            std::thread::sleep(Duration::from_millis(50));
            assert!(!taken.load(Ordering::SeqCst), "a normal take waits while the budget is full");
            drop(high);
            std::thread::sleep(Duration::from_millis(50));
            assert!(!taken.load(Ordering::SeqCst), "80 + 30 still exceeds 100");
            drop(first);
        });
        assert!(taken.load(Ordering::SeqCst));
        assert_eq!(budget.used(), 0, "every share returned");
        assert_eq!(budget.peak(), 160, "the high-water mark");
    }
}
