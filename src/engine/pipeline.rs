//! The prove pipeline of one call: the partitions of its sectors flow through two stages, so
//! that one partition is synthesized while the one before it is proven.
//!
//! 1. Synthesis (a thread of the call, its parallel work on the engine's workers): per sector
//!    decode and check the C1 output, get the proving key and the circuit shape, then
//!    synthesize its partitions in order.
//! 2. Proving (the calling thread): each synthesized partition on the backend, in the same
//!    order; after a sector's last partition, its self-verification.
//!
//! A synthesized partition holds a, b, c and the witness (32GiB: ≈ 17 GB). Synthesis takes a
//! share of the host memory budget for each one before making it and proving returns it when
//! the proof is made, so what waits between the stages stays within the budget (one partition
//! at a time is always allowed, however small the budget). A sector that fails fails alone:
//! its remaining partitions are skipped, the next sector goes on.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use bellperson::groth16::Proof;
use blstrs::Bls12;
use filecoin_proofs::types::MerkleTreeTrait;

use super::{prove_synthesized, synthesize_classic, synthesize_with_shape, Engine, ProveOptions, GROTH_PROOF_BYTES};
use crate::backend::{Backend, Priority};
use crate::error::{Error, Result, Status};
use crate::groth16::ProvingKey;
use crate::porep::{self, SealStatement};
use crate::r1cs::CircuitShape;
use crate::synthesis::SynthesizedCircuit;
use crate::timings::{nanos, timed, Timings};
use crate::with_porep_shape;

/// One sector of a call: the arguments of filecoin-ffi's `seal_commit_phase2`.
#[derive(Clone, Copy, Debug)]
pub struct SectorRequest<'a> {
    pub c1_json: &'a [u8],
    pub sector_id: u64,
    pub prover_id: [u8; 32],
}

/// What synthesis hands to proving, in order.
enum Job {
    /// Sector `index`'s `partitions` partitions follow, to be proven with `key`.
    Sector { index: usize, statement: SealStatement, key: Arc<ProvingKey>, partitions: usize, timings: Timings },
    /// Partition `k` of the current sector, holding `share` of the memory budget.
    Partition { k: usize, synthesized: SynthesizedCircuit, share: BudgetShare, timings: Timings },
    /// Sector `index` failed before its last partition was synthesized.
    Failed { index: usize, error: Error },
}

/// Host memory for synthesized partitions waiting for (or in) proving, in bytes.
pub(super) struct MemoryBudget {
    limit: u64,
    used: Mutex<u64>,
    returned: Condvar,
}

/// A part of the budget, returned when dropped.
struct BudgetShare {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl MemoryBudget {
    pub(super) fn new(limit: u64) -> Arc<Self> {
        Arc::new(MemoryBudget { limit, used: Mutex::new(0), returned: Condvar::new() })
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
        BudgetShare { budget: self.clone(), bytes }
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
pub(super) fn run(engine: &Engine, backend: &dyn Backend, sectors: &[SectorRequest], options: &ProveOptions, start: Instant) -> Vec<Result<(Vec<u8>, Timings)>> {
    let mut results: Vec<Option<Result<(Vec<u8>, Timings)>>> = sectors.iter().map(|_| None).collect();
    let (sender, receiver) = mpsc::channel();
    std::thread::scope(|scope| {
        // The synthesis thread owns the sender: proving ends when it is done.
        scope.spawn(move || {
            for (index, request) in sectors.iter().enumerate() {
                let mut t = Timings::new();
                t.queue_wait_ns = nanos(start.elapsed());
                if let Err(error) = synthesize_sector(engine, backend, index, request, options, &sender, &mut t) {
                    if sender.send(Job::Failed { index, error }).is_err() {
                        return;
                    }
                }
            }
        });
        prove_jobs(engine, backend, options, receiver, start, &mut results);
    });
    results.into_iter().map(|r| r.unwrap_or_else(|| Err(Error::internal("a sector of the call got no result")))).collect()
}

/// Stage 1 for one sector: everything up to its synthesized partitions, sent in order.
fn synthesize_sector(engine: &Engine, backend: &dyn Backend, index: usize, request: &SectorRequest, options: &ProveOptions, sender: &mpsc::Sender<Job>, t: &mut Timings) -> Result<()> {
    options.check_cancel()?;
    let c1 = timed(&mut t.input_check_ns, || porep::parse_c1(request.c1_json))?;
    with_porep_shape!(c1.registered_proof, synthesize_partitions(engine, backend, index, request, c1, options, sender, t))
}

#[allow(clippy::too_many_arguments)]
fn synthesize_partitions<Tree: 'static + MerkleTreeTrait>(
    engine: &Engine,
    backend: &dyn Backend,
    index: usize,
    request: &SectorRequest,
    c1: filecoin_proofs_api::seal::SealCommitPhase1Output,
    options: &ProveOptions,
    sender: &mpsc::Sender<Job>,
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
    let inputs = engine.pool.install(|| timed(&mut t.input_check_ns, || porep::check_c1::<Tree>(c1, request.prover_id, request.sector_id)))?;
    options.check_cancel()?;
    let key = engine.pool.install(|| engine.keys.proving_key(&engine.key_path::<Tree>(&inputs.config, false)?, &mut t.srs_load_ns))?;
    let partitions = inputs.vanilla_proofs.len();
    t.partitions = partitions as u32;
    // Every partition circuit of a proof kind has the same shape (the proving key is made for
    // it); a witness that does not fit it is refused by `synthesized`, never proven.
    let shape = match engine.config.classic_synthesis {
        true => None,
        false => {
            let id = porep::parameter_cache_id::<Tree>(&inputs.config)?;
            Some(engine.pool.install(|| engine.shapes.get(&id, || CircuitShape::extract_parallel(&porep::partition_circuit(&inputs, 0)?), t))?)
        }
    };
    let bytes = partition_bytes(&key, backend);
    let sector = Job::Sector { index, statement, key, partitions, timings: std::mem::replace(t, Timings::new()) };
    sender.send(sector).map_err(|_| Error::internal("the proving stage ended early"))?;
    let cancel = options.cancel.as_ref();
    for k in 0..partitions {
        options.check_cancel()?;
        let share = engine.pipeline_budget.take(bytes, options.priority);
        let synthesized = engine.pool.install(|| -> Result<SynthesizedCircuit> {
            let circuit = timed(&mut t.synthesis_ns, || porep::partition_circuit(&inputs, k))?;
            match &shape {
                Some(shape) => synthesize_with_shape(backend.evaluates_products(), shape, &circuit, cancel, t),
                None => synthesize_classic(circuit, cancel, t),
            }
        })?;
        let job = Job::Partition { k, synthesized, share, timings: std::mem::replace(t, Timings::new()) };
        sender.send(job).map_err(|_| Error::internal("the proving stage ended early"))?;
    }
    Ok(())
}

/// The sector stage 2 is proving.
struct Proving {
    index: usize,
    statement: SealStatement,
    key: Arc<ProvingKey>,
    partitions: usize,
    bytes: Vec<u8>,
    timings: Timings,
    /// Set when a partition failed: the sector's remaining partitions are dropped unproven.
    error: Option<Error>,
}

/// Stage 2: proves partitions as they arrive; records each sector's result when its last
/// partition is proven (or it fails).
fn prove_jobs(
    engine: &Engine,
    backend: &dyn Backend,
    options: &ProveOptions,
    receiver: mpsc::Receiver<Job>,
    start: Instant,
    results: &mut [Option<Result<(Vec<u8>, Timings)>>],
) {
    let mut current: Option<Proving> = None;
    let cancel = options.cancel.as_ref();
    for job in receiver {
        match job {
            Job::Sector { index, statement, key, partitions, mut timings } => {
                timings.backend = backend.kind() as u32;
                let bytes = Vec::with_capacity(partitions * GROTH_PROOF_BYTES);
                current = Some(Proving { index, statement, key, partitions, bytes, timings, error: None });
            }
            Job::Failed { index, error } => {
                if current.as_ref().is_some_and(|p| p.index == index) {
                    current = None;
                }
                results[index] = Some(Err(error));
            }
            Job::Partition { k, synthesized, share, timings } => {
                let Some(sector) = current.as_mut() else { continue };
                sector.timings.merge(&timings);
                if sector.error.is_none() {
                    let proved = options.randomness_for(k).and_then(|randomness| {
                        engine.pool.install(|| prove_synthesized(backend, &sector.key, synthesized, randomness, cancel, &mut sector.timings))
                    });
                    match proved.and_then(|proof| write_proof(&proof, &mut sector.bytes, &mut sector.timings)) {
                        Ok(()) => {}
                        Err(e) => sector.error = Some(e),
                    }
                }
                drop(share);
                if k + 1 == sector.partitions {
                    let sector = current.take().expect("the current sector");
                    let index = sector.index;
                    results[index] = Some(finish_sector(engine, options, sector, start));
                }
            }
        }
    }
}

fn write_proof(proof: &Proof<Bls12>, bytes: &mut Vec<u8>, t: &mut Timings) -> Result<()> {
    timed(&mut t.assembly_ns, || proof.write(bytes)).map_err(|e| Error::internal(format!("writing proof: {e}")))
}

/// A sector's result once all its partitions are proven: self-verified when configured.
fn finish_sector(engine: &Engine, options: &ProveOptions, sector: Proving, start: Instant) -> Result<(Vec<u8>, Timings)> {
    let Proving { statement, key, bytes, mut timings, error, .. } = sector;
    if let Some(error) = error {
        return Err(error);
    }
    options.check_cancel()?;
    if engine.config.self_verify {
        let verify_start = Instant::now();
        let vk = porep::prepare_vk(&key.vk);
        let valid = engine.pool.install(|| with_porep_shape!(statement.registered_proof, verify_statement(&statement, &vk, &bytes)))?;
        timings.verify_ns += nanos(verify_start.elapsed());
        if !valid {
            return Err(Error::new(Status::VerifyFailed, "the proof failed self-verification (inconsistent proving key?)"));
        }
    }
    timings.total_ns = nanos(start.elapsed());
    Ok((bytes, timings))
}

fn verify_statement<Tree: 'static + MerkleTreeTrait>(statement: &SealStatement, vk: &bellperson::groth16::PreparedVerifyingKey<Bls12>, proof: &[u8]) -> Result<bool> {
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
    }
}
