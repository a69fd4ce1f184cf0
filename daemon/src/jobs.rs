//! Jobs: every SubmitProofRequest becomes one, from pending to an end (completed, failed or
//! cancelled). The table holds them by job id and by request_id (idempotency), runs each on the
//! engine, holds sealing-class jobs at a concurrency gate (PoSt jobs pass it), cancels, and
//! keeps ended jobs for a bounded time and count.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cuzk::cancel::CancelToken;
use cuzk::engine::{Engine, Priority, ProveOptions};
use cuzk::error::Status as EngineStatus;
use cuzk::timings::Timings;
use tokio::sync::{watch, Notify, Semaphore};

use crate::metrics::Metrics;
use crate::proto::{ProofKind, SubmitProofRequest};
use crate::request::{self, CheckedRequest, ProofInput};

/// How ended jobs are kept, and how many sealing-class jobs run at once.
#[derive(Clone, Debug)]
pub struct JobSettings {
    /// Sealing-class jobs (C2, SnapDeals) proving at once; the others wait, pending.
    pub max_concurrent_sealing: usize,
    /// How long an ended job (its proof or error) stays to be awaited or returned to a retry.
    pub retain_finished: Duration,
    /// The most ended jobs kept; the oldest go first.
    pub retain_finished_jobs: usize,
}

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    Completed,
    Failed,
    Cancelled,
}

impl End {
    pub fn label(self) -> &'static str {
        match self {
            End::Completed => "completed",
            End::Failed => "failed",
            End::Cancelled => "cancelled",
        }
    }
}

/// What an ended job has to say.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub end: End,
    pub proof: Vec<u8>,
    /// Failed or cancelled: why.
    pub message: String,
    /// The engine's timings of the call (zero when it never reached the engine), with the time
    /// the job waited at the daemon's sealing gate added to `queue_wait_ns`.
    pub timings: Timings,
    /// From submission to the end.
    pub total: Duration,
}

#[derive(Clone, Debug)]
pub enum JobState {
    /// Waiting at the sealing gate.
    Pending,
    Running,
    Ended(Arc<Outcome>),
}

impl JobState {
    pub fn ended(&self) -> Option<&Arc<Outcome>> {
        match self {
            JobState::Ended(outcome) => Some(outcome),
            _ => None,
        }
    }
}

pub struct Job {
    pub id: String,
    pub request_id: String,
    pub kind: ProofKind,
    /// Curio's circuit id of what it proves; None when the request was refused.
    pub circuit_id: Option<String>,
    /// Submission order (queue positions count pending gated jobs submitted before).
    seq: u64,
    /// Whether it waits at the sealing gate: a C2 or an update in the sealing class.
    gated: bool,
    fingerprint: [u8; 32],
    submitted: Instant,
    cancel: CancelToken,
    /// Wakes the job when it is cancelled while pending.
    cancel_requested: Notify,
    state: watch::Sender<JobState>,
    /// Callers of Prove and AwaitProof waiting for it now.
    waiters: AtomicUsize,
}

impl Job {
    pub fn state(&self) -> JobState {
        self.state.borrow().clone()
    }

    /// Asks the job to stop: a pending job ends at once, a running one at the engine's next
    /// cancellation point.
    fn request_cancel(&self) {
        self.cancel.cancel();
        self.cancel_requested.notify_one();
    }

    /// Waits for the job to end; None when `timeout` (if any) passes first.
    pub async fn wait(&self, timeout: Option<Duration>) -> Option<Arc<Outcome>> {
        let mut states = self.state.subscribe();
        let ended = async move {
            let state = states.wait_for(|s| s.ended().is_some()).await.expect("the job owns its sender");
            state.ended().cloned().expect("waited for the end")
        };
        match timeout {
            Some(limit) => tokio::time::timeout(limit, ended).await.ok(),
            None => Some(ended.await),
        }
    }
}

/// A caller waiting for a job. The last waiter of a Prove call going away (its client
/// disconnected or its deadline passed) cancels the job when it has not ended.
pub struct Waiter {
    job: Arc<Job>,
    cancel_when_last: bool,
}

impl Waiter {
    pub fn new(job: Arc<Job>, cancel_when_last: bool) -> Self {
        job.waiters.fetch_add(1, Ordering::AcqRel);
        Waiter { job, cancel_when_last }
    }

    pub fn job(&self) -> &Arc<Job> {
        &self.job
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let last = self.job.waiters.fetch_sub(1, Ordering::AcqRel) == 1;
        if last && self.cancel_when_last && self.job.state().ended().is_none() {
            log::info!(
                "job={} request_id={:?}: the Prove caller went away, no one else waits: cancelling",
                self.job.id,
                self.job.request_id
            );
            self.job.request_cancel();
        }
    }
}

/// A submission's answer: the job (new, or the one the request_id already names) and how many
/// sealing-class jobs submitted before it are still pending.
pub struct Submitted {
    pub job: Arc<Job>,
    pub queue_position: u32,
}

/// Why a submission was refused outright (no job made).
pub enum Refused {
    ShuttingDown,
    /// The request_id names a job of other content that has not failed or been cancelled.
    RequestIdInUse {
        job_id: String,
    },
}

#[derive(Default)]
struct Table {
    jobs: HashMap<String, Arc<Job>>,
    by_request_id: HashMap<String, Arc<Job>>,
    /// Ended jobs in the order they ended, with when.
    ended: VecDeque<(Instant, String)>,
}

pub struct Jobs {
    engine: Arc<Engine>,
    settings: JobSettings,
    table: Mutex<Table>,
    sealing_gate: Arc<Semaphore>,
    /// Job ids are this prefix (the daemon's start time) and a sequence number, so that a
    /// restarted daemon's ids differ from those before.
    id_prefix: String,
    next_seq: AtomicU64,
    accepting: AtomicBool,
    /// Jobs not yet ended.
    active: AtomicUsize,
    all_ended: Notify,
    pub metrics: Metrics,
}

impl Jobs {
    pub fn new(engine: Arc<Engine>, settings: JobSettings) -> Arc<Self> {
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        Arc::new(Jobs {
            engine,
            sealing_gate: Arc::new(Semaphore::new(settings.max_concurrent_sealing.max(1))),
            settings,
            table: Mutex::default(),
            id_prefix: format!("{started:x}"),
            next_seq: AtomicU64::new(1),
            accepting: AtomicBool::new(true),
            active: AtomicUsize::new(0),
            all_ended: Notify::new(),
            metrics: Metrics::default(),
        })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes a job of `request` and starts it, or answers with the job its request_id names
    /// (pending, running or completed with the same content). A request the engine cannot take
    /// becomes a job that has failed, its message naming what is wrong.
    pub fn submit(self: &Arc<Self>, request: SubmitProofRequest) -> Result<Submitted, Refused> {
        if !self.accepting.load(Ordering::Acquire) {
            return Err(Refused::ShuttingDown);
        }
        let fingerprint = request::fingerprint(&request);
        let kind = ProofKind::try_from(request.proof_kind).unwrap_or(ProofKind::Unspecified);
        let request_id = request.request_id.clone();
        let mut table = self.table();
        self.forget_old(&mut table);
        if let Some(existing) = table.by_request_id.get(&request_id).filter(|_| !request_id.is_empty()) {
            let retry_after_failure = matches!(existing.state().ended(), Some(o) if o.end != End::Completed);
            if !retry_after_failure {
                if existing.fingerprint != fingerprint {
                    return Err(Refused::RequestIdInUse { job_id: existing.id.clone() });
                }
                let job = existing.clone();
                let queue_position = queue_position(&table, &job);
                return Ok(Submitted { job, queue_position });
            }
        }
        let checked = request::check(request);
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let job = Arc::new(Job {
            id: format!("{}-{seq}", self.id_prefix),
            request_id: request_id.clone(),
            kind,
            circuit_id: checked.as_ref().ok().and_then(|c| c.circuit_id.clone()),
            seq,
            // PoSt jobs never wait at the gate, whatever class their priority asks for.
            gated: matches!(&checked, Ok(c) if c.class == Priority::Sealing && !matches!(c.input, ProofInput::Post { .. })),
            fingerprint,
            submitted: Instant::now(),
            cancel: CancelToken::new(),
            cancel_requested: Notify::new(),
            state: watch::Sender::new(JobState::Pending),
            waiters: AtomicUsize::new(0),
        });
        table.jobs.insert(job.id.clone(), job.clone());
        if !request_id.is_empty() {
            table.by_request_id.insert(request_id, job.clone());
        }
        let queue_position = queue_position(&table, &job);
        self.active.fetch_add(1, Ordering::AcqRel);
        drop(table);
        match checked {
            Ok(checked) => {
                log::info!(
                    "job={} request_id={:?} kind={} circuit={} queue_position={queue_position}: submitted",
                    job.id,
                    job.request_id,
                    kind.as_str_name(),
                    job.circuit_id.as_deref().unwrap_or("?")
                );
                tokio::spawn(self.clone().run(job.clone(), checked));
            }
            Err(message) => {
                log::warn!("job={} request_id={:?}: refused: {message}", job.id, job.request_id);
                self.end(&job, End::Failed, Vec::new(), message, Timings::default());
            }
        }
        Ok(Submitted { job, queue_position })
    }

    /// Runs a job: through the sealing gate when it is of the sealing class, then on the
    /// engine (on a blocking thread: the engine's call runs on its caller's thread).
    async fn run(self: Arc<Self>, job: Arc<Job>, checked: CheckedRequest) {
        let _permit = match job.gated {
            true => tokio::select! {
                permit = self.sealing_gate.clone().acquire_owned() => Some(permit.expect("the sealing gate is never closed")),
                _ = job.cancel_requested.notified() => None,
            },
            false => None,
        };
        let gate_wait = job.submitted.elapsed();
        if job.cancel.is_cancelled() {
            let timings = Timings {
                queue_wait_ns: cuzk::timings::nanos(gate_wait),
                ..Timings::default()
            };
            self.end(&job, End::Cancelled, Vec::new(), "cancelled while pending".into(), timings);
            return;
        }
        job.state.send_replace(JobState::Running);
        log::info!("job={}: running (waited {gate_wait:?})", job.id);
        let engine = self.engine.clone();
        let options = ProveOptions {
            cancel: Some(job.cancel.clone()),
            priority: checked.priority,
            ..ProveOptions::default()
        };
        let proven = tokio::task::spawn_blocking(move || checked.input.prove(&engine, &options)).await;
        let (end, proof, message, mut timings) = match proven {
            Ok(Ok(output)) => (End::Completed, output.proof, String::new(), output.timings),
            Ok(Err(e)) if e.status == EngineStatus::Cancelled => (End::Cancelled, Vec::new(), e.to_string(), Timings::default()),
            Ok(Err(e)) => (End::Failed, Vec::new(), e.to_string(), Timings::default()),
            Err(panicked) => (
                End::Failed,
                Vec::new(),
                format!("the proving task failed: {panicked}"),
                Timings::default(),
            ),
        };
        timings.queue_wait_ns += cuzk::timings::nanos(gate_wait);
        self.end(&job, end, proof, message, timings);
    }

    fn end(&self, job: &Job, end: End, proof: Vec<u8>, message: String, timings: Timings) {
        let total = job.submitted.elapsed();
        match end {
            End::Completed => log::info!("job={}: completed in {total:?}, {} proof bytes", job.id, proof.len()),
            _ => log::warn!("job={}: {} after {total:?}: {message}", job.id, end.label()),
        }
        self.metrics.record(job.kind, end, &timings);
        job.state.send_replace(JobState::Ended(Arc::new(Outcome {
            end,
            proof,
            message,
            timings,
            total,
        })));
        self.table().ended.push_back((Instant::now(), job.id.clone()));
        if self.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.all_ended.notify_waiters();
        }
    }

    pub fn get(&self, job_id: &str) -> Option<Arc<Job>> {
        self.table().jobs.get(job_id).cloned()
    }

    /// Cancels a job; true when it had not ended.
    pub fn cancel(&self, job: &Job) -> bool {
        if job.state().ended().is_some() {
            return false;
        }
        log::info!("job={}: cancel requested", job.id);
        job.request_cancel();
        true
    }

    /// Stops taking submissions (shutdown); with `cancel_running`, cancels every job not ended.
    pub fn close(&self, cancel_running: bool) {
        self.accepting.store(false, Ordering::Release);
        if cancel_running {
            for job in self.table().jobs.values() {
                if job.state().ended().is_none() {
                    job.request_cancel();
                }
            }
        }
    }

    /// Waits until no job is pending or running.
    pub async fn all_ended(&self) {
        loop {
            let notified = self.all_ended.notified();
            if self.active.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }

    /// Per kind: jobs pending and running; and the ids and kinds of the running jobs.
    pub fn snapshot(&self) -> Snapshot {
        let table = self.table();
        let mut snapshot = Snapshot::default();
        for job in table.jobs.values() {
            let counts = snapshot.queues.entry(job.kind).or_default();
            match job.state() {
                JobState::Pending => counts.pending += 1,
                JobState::Running => {
                    counts.running += 1;
                    snapshot.running.push(job.clone());
                }
                JobState::Ended(_) => {}
            }
        }
        snapshot
    }

    /// Drops ended jobs past their retention time, and the oldest beyond the count kept.
    fn forget_old(&self, table: &mut Table) {
        let now = Instant::now();
        while let Some((ended, id)) = table.ended.front().cloned() {
            let expired = now.duration_since(ended) > self.settings.retain_finished;
            if !expired && table.ended.len() <= self.settings.retain_finished_jobs {
                break;
            }
            table.ended.pop_front();
            if let Some(job) = table.jobs.remove(&id) {
                if table.by_request_id.get(&job.request_id).is_some_and(|j| j.id == id) {
                    table.by_request_id.remove(&job.request_id);
                }
            }
        }
    }
}

/// Pending sealing-class jobs submitted before `job` (0 for a job that is not gated).
fn queue_position(table: &Table, job: &Job) -> u32 {
    if !job.gated {
        return 0;
    }
    let ahead = table
        .jobs
        .values()
        .filter(|other| other.gated && other.seq < job.seq && matches!(other.state(), JobState::Pending))
        .count();
    u32::try_from(ahead).unwrap_or(u32::MAX)
}

#[derive(Clone, Copy, Debug, Default)]
pub struct QueueCounts {
    pub pending: u32,
    pub running: u32,
}

#[derive(Default)]
pub struct Snapshot {
    pub queues: HashMap<ProofKind, QueueCounts>,
    pub running: Vec<Arc<Job>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk::engine::EngineConfig;

    /// Jobs on a CPU engine, keeping at most `kept` ended jobs. The requests of these tests
    /// are refused before they reach the engine (no parameters needed).
    fn jobs(kept: usize) -> Arc<Jobs> {
        let engine = Engine::acquire(EngineConfig {
            cpu_only: true,
            num_threads: 1,
            ..EngineConfig::default()
        })
        .expect("a CPU engine");
        Jobs::new(
            engine,
            JobSettings {
                max_concurrent_sealing: 1,
                retain_finished: Duration::from_secs(3600),
                retain_finished_jobs: kept,
            },
        )
    }

    /// A request the daemon refuses (no proof kind): a job that fails at once.
    fn refused(request_id: &str, sector_number: u64) -> SubmitProofRequest {
        SubmitProofRequest {
            request_id: request_id.into(),
            sector_number,
            ..SubmitProofRequest::default()
        }
    }

    fn submit(jobs: &Arc<Jobs>, request: SubmitProofRequest) -> Arc<Job> {
        match jobs.submit(request) {
            Ok(submitted) => submitted.job,
            Err(_) => panic!("the submission was refused outright"),
        }
    }

    #[tokio::test]
    async fn failed_jobs_are_retried_and_old_ones_forgotten() {
        let jobs = jobs(2);
        let first = submit(&jobs, refused("porep-1-1", 1));
        let outcome = first.wait(None).await.expect("no timeout");
        assert_eq!(outcome.end, End::Failed);
        assert!(outcome.message.contains("PROOF_KIND_UNSPECIFIED"), "{}", outcome.message);
        // After FAILED, the same request_id starts a new job, with the same content or not.
        let retry = submit(&jobs, refused("porep-1-1", 1));
        assert_ne!(retry.id, first.id);
        let other = submit(&jobs, refused("porep-1-1", 2));
        assert_ne!(other.id, retry.id);
        // Three ended jobs, two kept: the oldest is forgotten at the next submission.
        submit(&jobs, refused("", 0));
        assert!(jobs.get(&first.id).is_none());
        assert!(jobs.get(&other.id).is_some());
        assert_eq!(jobs.metrics.total(End::Failed), 4);
    }

    #[tokio::test]
    async fn a_closed_table_refuses_submissions() {
        let jobs = jobs(10);
        jobs.close(true);
        assert!(matches!(jobs.submit(refused("x", 1)), Err(Refused::ShuttingDown)));
        jobs.all_ended().await;
    }
}
