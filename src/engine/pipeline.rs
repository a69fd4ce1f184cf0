//! The prove pipeline of one call: the partitions of its proofs (sectors' C2s, a WindowPoSt
//! partition, a WinningPoSt: any `kinds::ProofRequest`) flow through two stages, so that one
//! partition is synthesized while the one before it is proven.
//! (One file past 500 lines: the two stages, the jobs they hand each other and the memory
//! budget that couples them are one mechanism, whose private types no other file uses.)
//!
//! 1. Synthesis (a thread of the call, its parallel work on the engine's workers): per proof
//!    decode and check its input, get the proving key and the circuit shape, then synthesize
//!    its partitions in order.
//! 2. Proving (lanes: threads of the call, two per GPU it may use, see
//!    `Engine::proving_lanes`): each synthesized partition on the backend, taken in order by
//!    the next free lane, which waits there for the backend's turn (never on a worker); the
//!    lane that proves a proof's last partition self-verifies the proof.
//!
//! A synthesized partition holds its witness, and a, b, c unless the backend computes them
//! (32GiB PoRep: 4.2 GB, ≈ 17 GB with a, b, c). Synthesis takes a share of the engine's host
//! memory budget for each one before making it and proving returns it when the proof is made,
//! so what waits between the stages stays within the budget (one partition at a time is always
//! allowed, however small the budget). A call also holds at most one partition more than its
//! lanes (`places_ahead`): every lane has one and the next is ready when a lane frees, which
//! keeps the device busy whenever synthesis is the faster stage; more would only hold host
//! memory. A proof that fails fails alone: its remaining partitions are skipped, the next
//! proof goes on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use bellperson::groth16::Proof;
use blstrs::Bls12;

use super::{Counted, Engine, ProveOptions, GROTH_PROOF_BYTES};
use crate::backend::{Backend, Priority};
use crate::error::{Error, Result, Status};
use crate::groth16::{ProvingKey, QuerySizes};
use crate::kinds::{ProofJob, ProofRequest, SynthesisPath};
use crate::prover::prove_synthesized;
use crate::synthesis::SynthesizedCircuit;
use crate::timings::{nanos, timed, Timings};

/// A proof made by the pipeline: its bytes (192 bytes per partition, filecoin-proofs'
/// format), its timings and those of each of its partitions, and when each partition was in
/// which stage (both in partition order).
#[derive(Clone, Debug)]
pub struct ProofOutput {
    pub proof: Vec<u8>,
    pub timings: Timings,
    pub partitions: Vec<Timings>,
    pub spans: Vec<PartitionSpan>,
}

/// When one partition of a call went through the pipeline's stages, in nanoseconds from the
/// call's start, and the proving lane that proved it: with its timings, what a timeline of the
/// call is drawn from (`cuzk-bench porep-sector`, scripts/timeline-svg.py).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PartitionSpan {
    pub synthesis_start_ns: u64,
    pub synthesized_ns: u64,
    /// A lane took it (the wait before is for a free lane).
    pub proving_start_ns: u64,
    pub proven_ns: u64,
    pub lane: usize,
}

/// What synthesis hands to proving, in order.
enum Job<'e> {
    /// Proof `index`'s `partitions` partitions follow, to be proven with `key` (and verified
    /// as `job` says).
    Proof {
        index: usize,
        job: Arc<dyn ProofJob>,
        key: Arc<ProvingKey>,
        partitions: usize,
        timings: Timings,
        /// The key's upload started with the call, when this proof started it (its time,
        /// set when it ends).
        upload_ahead_ns: Option<Arc<AtomicU64>>,
    },
    /// Partition `k` of sector `index`, holding its `held` budgets, counted as
    /// `waiting` for proving since `synthesized_at` (its synthesis began at
    /// `synthesis_started`); `timings` are its synthesis's.
    Partition {
        index: usize,
        k: usize,
        synthesized: SynthesizedCircuit,
        held: Held,
        waiting: Counted<'e>,
        synthesis_started: Instant,
        synthesized_at: Instant,
        timings: Box<Timings>,
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

/// Host memory for synthesized partitions waiting for (or in) proving, in bytes; a call's
/// places (`places_ahead`) are the same mechanism counted in partitions.
pub(super) struct MemoryBudget {
    limit: u64,
    used: Mutex<u64>,
    /// The most ever taken at once.
    peak: AtomicU64,
    /// The largest share ever taken (the largest partition the engine has held).
    largest_share: AtomicU64,
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
            largest_share: AtomicU64::new(0),
            returned: Condvar::new(),
        })
    }

    /// Waits until `bytes` fit beside what is taken (or nothing is taken) and takes them; a
    /// call of the top class (WinningPoSt) takes them at once (block production may exceed the
    /// budget by its one small partition rather than wait behind a batch).
    fn take(self: &Arc<Self>, bytes: u64, priority: Priority) -> BudgetShare {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        while priority != Priority::WinningPost && *used > 0 && *used + bytes > self.limit {
            used = self.returned.wait(used).unwrap_or_else(|p| p.into_inner());
        }
        *used += bytes;
        self.peak.fetch_max(*used, Ordering::Relaxed);
        self.largest_share.fetch_max(bytes, Ordering::Relaxed);
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

    fn largest_share(&self) -> u64 {
        self.largest_share.load(Ordering::Relaxed)
    }
}

/// What a partition holds from before its synthesis until its proof is made: its share of
/// the engine's host memory budget and one of its call's places ahead of proving.
struct Held {
    _memory: BudgetShare,
    _place: BudgetShare,
}

/// The partitions one call may hold at once (synthesized or being synthesized, and not proven
/// yet) with `lanes` proving lanes.
pub(super) fn places_ahead(lanes: usize) -> u64 {
    lanes.max(1) as u64 + 1
}

impl Drop for BudgetShare {
    fn drop(&mut self) {
        *self.budget.used.lock().unwrap_or_else(|p| p.into_inner()) -= self.bytes;
        self.budget.returned.notify_all();
    }
}

/// Freed host memory the allocators may keep while calls run, in bytes, when the largest
/// partition the engine has held takes `largest_partition`: two such partitions (the next
/// partition's buffers reuse the pages the last one freed), and never less than
/// `KEPT_FREE_FLOOR`. Beyond it, pages were freed that no partition reuses: with jemalloc's
/// decay off they only add up, ≈ 0.5 GB a 32GiB PoRep partition in run 113
/// (docs/PERFORMANCE.md).
fn kept_free_limit(largest_partition: u64) -> u64 {
    largest_partition.saturating_mul(2).max(KEPT_FREE_FLOOR)
}

/// The least freed memory kept during calls: a small proof's pages (a 2KiB C2 keeps ≈ 1.5
/// GiB) stay with the allocator, whose reuse saves their page faults every call.
const KEPT_FREE_FLOOR: u64 = 4 << 30;

/// After a partition's buffers are freed: when the allocators keep more freed memory than
/// `kept_free_limit`, the engine's janitor thread hands it back to the OS (not this lane's
/// thread, which goes on to its next partition).
fn bound_kept_free_memory(engine: &Engine) {
    let limit = kept_free_limit(engine.pipeline_budget.largest_share());
    let kept = crate::allocator::kept_free_bytes();
    if kept > limit {
        log::debug!("{kept} bytes of freed host memory kept, above {limit}: returning them");
        engine.idle.request_trim();
    }
}

/// Host bytes of one synthesized partition of a key with `sizes`: the assignment, and a, b, c
/// over the domain unless the backend computes them itself (`evaluates_products`); 32 bytes
/// a scalar.
pub(super) fn partition_bytes(sizes: &QuerySizes, evaluates_products: bool) -> u64 {
    let products = if evaluates_products { 0 } else { 3 * sizes.domain() };
    32 * (products + sizes.variables())
}

/// Proves `requests` (results in their order) in the call's class (`options.priority`, set),
/// the call having started at `start`.
pub(super) fn run(
    engine: &Engine,
    backend: &dyn Backend,
    requests: &[&dyn ProofRequest],
    options: &ProveOptions,
    start: Instant,
) -> Vec<Result<ProofOutput>> {
    let class = options.priority.unwrap_or_default();
    let mut results: Vec<Option<Result<ProofOutput>>> = requests.iter().map(|_| None).collect();
    let (sender, receiver) = mpsc::channel();
    let lanes = engine.proving_lanes(backend);
    let places = MemoryBudget::new(places_ahead(lanes));
    std::thread::scope(|scope| {
        // The synthesis thread owns the sender: proving ends when it is done.
        let places = &places;
        scope.spawn(move || {
            let stage = SynthesisStage {
                engine,
                backend,
                options,
                class,
                places,
                sender: &sender,
                scope,
            };
            for (index, request) in requests.iter().enumerate() {
                let mut t = Timings::new();
                t.queue_wait_ns = nanos(start.elapsed());
                t.sector_index = index as u32;
                if let Err(error) = stage.synthesize_proof(index, *request, &mut t) {
                    if sender.send(Job::Failed { index, error }).is_err() {
                        return;
                    }
                }
            }
        });
        prove_jobs(engine, backend, options, receiver, start, lanes, &mut results);
    });
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::internal("a proof of the call got no result"))))
        .collect()
}

/// Stage 1 of a call, on its synthesis thread.
struct SynthesisStage<'a, 's, 'e> {
    engine: &'e Engine,
    backend: &'e dyn Backend,
    options: &'e ProveOptions,
    class: Priority,
    /// The call's places ahead of proving.
    places: &'a Arc<MemoryBudget>,
    sender: &'a mpsc::Sender<Job<'e>>,
    /// The call's scope, where a key's upload ahead runs.
    scope: &'s std::thread::Scope<'s, 'e>,
}

impl<'s, 'e> SynthesisStage<'_, 's, 'e> {
    /// Starts copying `key` to the devices that lack it (one thread each), beside the proof's
    /// shape read and its first partitions' synthesis and host work, which otherwise come
    /// before it (a cold 32GiB PoRep: 31 s of upload after ≈ 5 s of them). A failed upload is
    /// left to the first partition on that device, which uploads the key itself and reports
    /// the error.
    fn upload_ahead(&self, key: &Arc<ProvingKey>, partitions: usize) -> Option<Arc<AtomicU64>> {
        let devices = self.backend.devices_to_upload_ahead(key, partitions);
        if devices.is_empty() {
            return None;
        }
        let upload_ns = Arc::new(AtomicU64::new(0));
        let (backend, cancel, pool) = (self.backend, self.options.cancel.as_ref(), self.engine.pool(self.class));
        for ordinal in devices {
            let (key, upload_ns) = (key.clone(), upload_ns.clone());
            self.scope
                .spawn(move || match backend.upload_key_ahead(&key, ordinal, pool, cancel, &upload_ns) {
                    Err(e) if e.status == Status::Cancelled => {
                        log::info!("{}: its upload to device {ordinal} stopped: the call was cancelled", key.label())
                    }
                    Err(e) => log::warn!(
                        "{}: its upload to device {ordinal} with the call failed ({e}); the call's first partition there uploads it",
                        key.label()
                    ),
                    Ok(()) => {}
                });
        }
        Some(upload_ns)
    }

    /// Stage 1 for one proof: its input checked, its key (its upload started) and shape, then
    /// its partitions synthesized and sent in order, each once it has a share of the memory
    /// budget and one of the call's places.
    fn synthesize_proof(&self, index: usize, request: &dyn ProofRequest, t: &mut Timings) -> Result<()> {
        let SynthesisStage {
            engine,
            backend,
            options,
            class,
            places,
            sender,
            ..
        } = *self;
        options.check_cancel()?;
        let pool = engine.pool(class);
        let job: Arc<dyn ProofJob> = pool.install(|| request.check(t))?.into();
        engine.note_circuit(job.circuit_id(), request.class());
        options.check_cancel()?;
        // Key and shape are waited for on this thread, not on a worker (see `KeyStore::proving_key`).
        let key = match job.own_key() {
            Some(key) => key,
            None => engine
                .keys
                .proving_key(&engine.proving_key_path(job.circuit_id()), &engine.prover.pool, &mut t.srs_load_ns)?,
        };
        let partitions = job.partitions();
        t.partitions = partitions as u32;
        let upload_ahead_ns = self.upload_ahead(&key, partitions);
        // Every partition circuit of a proof kind has the same shape (the proving key is made for
        // it); a witness that does not fit it is refused by `synthesized`, never proven.
        let path = match engine.shape(&*job, t)? {
            Some(shape) => SynthesisPath::Shape {
                shape,
                defer_products: backend.evaluates_products(),
            },
            None => SynthesisPath::Classic,
        };
        let bytes = partition_bytes(&key.query_sizes(), backend.evaluates_products());
        let proof = Job::Proof {
            index,
            job: job.clone(),
            key,
            partitions,
            timings: std::mem::replace(t, Timings::new()),
            upload_ahead_ns,
        };
        sender.send(proof).map_err(|_| Error::internal("the proving stage ended early"))?;
        let cancel = options.cancel.as_ref();
        let occupancy = &engine.occupancy;
        for k in 0..partitions {
            options.check_cancel()?;
            let held = Held {
                _place: places.take(1, class),
                _memory: engine.pipeline_budget.take(bytes, class),
            };
            let synthesis_start = Instant::now();
            let synthesized = occupancy.stage(&occupancy.synthesizing, &occupancy.synthesis_busy_ns, || {
                pool.install(|| job.synthesize(k, &path, cancel, t))
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
                held,
                waiting,
                synthesis_started: synthesis_start,
                synthesized_at: Instant::now(),
                timings: Box::new(timings),
            };
            sender.send(job).map_err(|_| Error::internal("the proving stage ended early"))?;
        }
        Ok(())
    }
}

/// A sector in stage 2: what its partitions' lanes fill in.
struct Proving {
    index: usize,
    job: Arc<dyn ProofJob>,
    key: Arc<ProvingKey>,
    timings: Timings,
    /// Its key's upload started with the call (`SynthesisStage::upload_ahead`), whose time
    /// the proof's `srs_upload_ns` counts.
    upload_ahead_ns: Option<Arc<AtomicU64>>,
    /// Each partition's proof bytes, timings and span, by partition.
    proofs: Vec<Option<(Vec<u8>, Timings, PartitionSpan)>>,
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
    held: Held,
    waiting: Counted<'e>,
    synthesis_started: Instant,
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
    results: &mut [Option<Result<ProofOutput>>],
) {
    let results = Mutex::new(results);
    let record = |index: usize, result: Result<ProofOutput>| results.lock().unwrap_or_else(|p| p.into_inner())[index] = Some(result);
    // A lane takes the next partition only when it is free, so partitions enter proving (and
    // the device turns) in order.
    let (to_lanes, from_dispatch) = mpsc::sync_channel::<LaneJob<'e>>(0);
    let from_dispatch = Mutex::new(from_dispatch);
    let (from_dispatch, record) = (&from_dispatch, &record);
    std::thread::scope(|scope| {
        for lane in 0..lanes.max(1) {
            scope.spawn(move || loop {
                let Ok(job) = from_dispatch.lock().unwrap_or_else(|p| p.into_inner()).recv() else {
                    return;
                };
                if let Some((index, result)) = prove_partition(engine, backend, options, start, lane, job) {
                    record(index, result);
                }
            });
        }
        let mut sectors: Vec<Option<Arc<Mutex<Proving>>>> = Vec::new();
        for job in receiver {
            match job {
                Job::Proof {
                    index,
                    job,
                    key,
                    partitions,
                    mut timings,
                    upload_ahead_ns,
                } => {
                    timings.backend = backend.kind() as u32;
                    let proofs = (0..partitions).map(|_| None).collect();
                    let sector = Proving {
                        index,
                        job,
                        key,
                        timings,
                        upload_ahead_ns,
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
                    held,
                    waiting,
                    synthesis_started,
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
                        held,
                        waiting,
                        synthesis_started,
                        synthesized_at,
                        timings: *timings,
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

/// Proves partition `job.k` of its sector on proving lane `lane`; when it was the sector's
/// last, the sector's result.
fn prove_partition(
    engine: &Engine,
    backend: &dyn Backend,
    options: &ProveOptions,
    start: Instant,
    lane: usize,
    job: LaneJob,
) -> Option<(usize, Result<ProofOutput>)> {
    let LaneJob {
        sector,
        k,
        synthesized,
        held,
        waiting,
        synthesis_started,
        synthesized_at,
        mut timings,
    } = job;
    drop(waiting);
    let since_start = |at: Instant| nanos(at.saturating_duration_since(start));
    let mut span = PartitionSpan {
        synthesis_start_ns: since_start(synthesis_started),
        synthesized_ns: since_start(synthesized_at),
        proving_start_ns: since_start(Instant::now()),
        proven_ns: 0,
        lane,
    };
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
                engine.pool(options.priority.unwrap_or_default()),
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
    span.proven_ns = since_start(Instant::now());
    drop(held);
    bound_kept_free_memory(engine);
    let mut sector = sector.lock().unwrap_or_else(|p| p.into_inner());
    if sector.failed {
        return None;
    }
    if let Err(error) = written {
        sector.failed = true;
        return Some((sector.index, Err(error)));
    }
    sector.proofs[k] = Some((bytes, timings, span));
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

/// A proof's result once all its partitions are proven: its bytes and timings in partition
/// order, self-verified when configured and the job has something to verify against.
fn finish_sector(engine: &Engine, options: &ProveOptions, sector: &mut Proving, start: Instant) -> Result<ProofOutput> {
    let (mut bytes, mut partitions, mut spans) = (
        Vec::with_capacity(sector.proofs.len() * GROTH_PROOF_BYTES),
        Vec::with_capacity(sector.proofs.len()),
        Vec::with_capacity(sector.proofs.len()),
    );
    for (proof, timings, span) in sector.proofs.drain(..).flatten() {
        bytes.extend_from_slice(&proof);
        sector.timings.merge(&timings);
        partitions.push(timings);
        spans.push(span);
    }
    options.check_cancel()?;
    let mut timings = sector.timings;
    // Its partitions waited for the rest of it in their proving wait.
    timings.srs_upload_ns += sector.upload_ahead_ns.as_ref().map_or(0, |ns| ns.load(Ordering::Relaxed));
    if engine.config.self_verify {
        let verify_start = Instant::now();
        let pool = engine.pool(options.priority.unwrap_or_default());
        let verified = pool.install(|| sector.job.verify(sector.key.prepared_verifying_key(), &bytes));
        if let Some(valid) = verified {
            timings.verify_ns += nanos(verify_start.elapsed());
            if !valid? {
                return Err(Error::new(
                    Status::VerifyFailed,
                    "the proof failed self-verification (inconsistent proving key?)",
                ));
            }
        }
    }
    timings.total_ns = nanos(start.elapsed());
    Ok(ProofOutput {
        proof: bytes,
        timings,
        partitions,
        spans,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn freed_memory_kept_is_bounded_by_twice_the_largest_partition() {
        let budget = MemoryBudget::new(u64::MAX);
        assert_eq!(kept_free_limit(budget.largest_share()), KEPT_FREE_FLOOR, "nothing held yet");
        drop(budget.take(5 << 30, Priority::Sealing));
        drop(budget.take(1 << 30, Priority::WinningPost));
        assert_eq!(budget.largest_share(), 5 << 30, "the largest share, not the last");
        assert_eq!(kept_free_limit(budget.largest_share()), 10 << 30);
        // A 2KiB PoRep partition (2.7M values) keeps the floor; no overflow at the top.
        assert_eq!(kept_free_limit(32 * 2_700_000), KEPT_FREE_FLOOR);
        assert_eq!(kept_free_limit(u64::MAX), u64::MAX);
    }

    #[test]
    fn budget_blocks_normal_takes_and_lets_high_priority_through() {
        let budget = MemoryBudget::new(100);
        let first = budget.take(80, Priority::Sealing);
        // Over the limit, but latency work does not wait.
        let high = budget.take(80, Priority::WinningPost);
        assert_eq!(budget.used(), 160);
        let taken = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _share = budget.take(30, Priority::Sealing);
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
