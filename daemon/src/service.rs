//! The gRPC service cuzk.v1.ProvingEngine: each RPC on the job table and the engine.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cuzk::engine::{Engine, RegisteredProof};
use cuzk::timings::{Timings, AT_ONCE};
use tonic::{Request, Response, Status};

use crate::circuits;
use crate::jobs::{End, Job, Jobs, Outcome, Refused, Submitted, Waiter};
use crate::proto::await_proof_response::Status as AwaitStatus;
use crate::proto::proving_engine_server::ProvingEngine;
use crate::proto::srs_status::Tier;
use crate::proto::*;

/// Phases of cuzk's timings that are the proving itself (GPU, or the CPU backend's NTTs and
/// MSMs): AwaitProofResponse.gpu_compute_ms is their sum.
const PROVING_PHASES: [&str; 12] = [
    "pin_h2d",
    "witness_upload",
    "spmv_gpu",
    "ntt",
    "msm_h",
    "batch_add",
    "msm_l",
    "msm_a",
    "msm_b_g1",
    "msm_b_g2",
    "srs_upload",
    "shape_upload",
];

pub struct Service {
    engine: Arc<Engine>,
    jobs: Arc<Jobs>,
    started: Instant,
    /// Curio circuit ids by proving key file (the label engine status gives a key).
    circuit_of_key: HashMap<String, String>,
}

impl Service {
    pub fn new(engine: Arc<Engine>, jobs: Arc<Jobs>) -> Self {
        let circuit_of_key = circuits::all()
            .into_iter()
            .filter_map(|(id, proof)| Some((engine.proving_key_file(proof).ok()?.display().to_string(), id)))
            .collect();
        Service {
            engine,
            jobs,
            started: Instant::now(),
            circuit_of_key,
        }
    }

    fn submit(&self, request: SubmitProofRequest) -> Result<Submitted, Status> {
        self.jobs.submit(request).map_err(|refused| match refused {
            Refused::ShuttingDown => Status::unavailable("cuzk-daemon is shutting down"),
            Refused::RequestIdInUse { job_id } => Status::already_exists(format!(
                "this request_id belongs to job {job_id}, whose request differs from this one (it is pending, running or completed)"
            )),
        })
    }

    fn job(&self, job_id: &str) -> Result<Arc<Job>, Status> {
        self.jobs
            .get(job_id)
            .ok_or_else(|| Status::not_found(format!("no job {job_id:?} (never submitted, or ended and no longer kept)")))
    }

    /// The circuit id of a key label: Curio's id when it is one of theirs, else the file name.
    fn circuit_id_of(&self, label: &str) -> String {
        self.circuit_of_key.get(label).cloned().unwrap_or_else(|| {
            std::path::Path::new(label)
                .file_name()
                .map_or_else(|| label.to_string(), |name| name.to_string_lossy().into_owned())
        })
    }

    fn proof_of(circuit_id: &str) -> Result<RegisteredProof, Status> {
        circuits::registered_proof(circuit_id).map_err(Status::invalid_argument)
    }
}

/// The AwaitProof answer of a job that ended with `outcome`.
fn ended(job_id: &str, outcome: &Outcome) -> AwaitProofResponse {
    let ms = |ns: u64| ns / 1_000_000;
    AwaitProofResponse {
        job_id: job_id.to_string(),
        status: match outcome.end {
            End::Completed => AwaitStatus::Completed,
            End::Failed => AwaitStatus::Failed,
            End::Cancelled => AwaitStatus::Cancelled,
        } as i32,
        proof: outcome.proof.clone(),
        error_message: outcome.message.clone(),
        queue_wait_ms: ms(outcome.timings.queue_wait_ns),
        srs_load_ms: ms(outcome.timings.srs_load_ns),
        synthesis_ms: ms(outcome.timings.synthesis_ns),
        gpu_compute_ms: ms(proving_ns(&outcome.timings)),
        total_ms: outcome.total.as_millis() as u64,
    }
}

/// The sum of [`PROVING_PHASES`], with the MSMs that ran at the same time counted once, as
/// their wall time.
fn proving_ns(t: &Timings) -> u64 {
    let phases = t.phases();
    let sum = |names: &[&str]| -> u64 { phases.iter().filter(|(name, _)| names.contains(name)).map(|(_, ns)| ns).sum() };
    match t.msm_at_once_ns {
        0 => sum(&PROVING_PHASES),
        wall => sum(&PROVING_PHASES) - sum(&AT_ONCE) + wall,
    }
}

fn timed_out(job_id: &str) -> AwaitProofResponse {
    AwaitProofResponse {
        job_id: job_id.to_string(),
        status: AwaitStatus::Timeout as i32,
        ..AwaitProofResponse::default()
    }
}

#[tonic::async_trait]
impl ProvingEngine for Service {
    async fn submit_proof(&self, request: Request<SubmitProofRequest>) -> Result<Response<SubmitProofResponse>, Status> {
        let submitted = self.submit(request.into_inner())?;
        Ok(Response::new(SubmitProofResponse {
            job_id: submitted.job.id.clone(),
            queue_position: submitted.queue_position,
            assigned_gpu: String::new(),
        }))
    }

    async fn await_proof(&self, request: Request<AwaitProofRequest>) -> Result<Response<AwaitProofResponse>, Status> {
        let request = request.into_inner();
        let job = self.job(&request.job_id)?;
        let waiter = Waiter::new(job, false);
        let timeout = (request.timeout_ms > 0).then(|| Duration::from_millis(request.timeout_ms));
        let answer = match waiter.job().wait(timeout).await {
            Some(outcome) => ended(&request.job_id, &outcome),
            None => timed_out(&request.job_id),
        };
        Ok(Response::new(answer))
    }

    async fn prove(&self, request: Request<ProveRequest>) -> Result<Response<ProveResponse>, Status> {
        let submit = request
            .into_inner()
            .submit
            .ok_or_else(|| Status::invalid_argument("ProveRequest.submit is missing"))?;
        let submitted = self.submit(submit)?;
        // Dropped when the caller goes away: the job is then cancelled unless another waits.
        let waiter = Waiter::new(submitted.job, true);
        let outcome = waiter.job().wait(None).await.expect("no timeout");
        Ok(Response::new(ProveResponse {
            result: Some(ended(&waiter.job().id, &outcome)),
        }))
    }

    async fn cancel_proof(&self, request: Request<CancelProofRequest>) -> Result<Response<CancelProofResponse>, Status> {
        let job = self.job(&request.into_inner().job_id)?;
        Ok(Response::new(CancelProofResponse {
            was_running: self.jobs.cancel(&job),
        }))
    }

    async fn get_status(&self, _request: Request<GetStatusRequest>) -> Result<Response<GetStatusResponse>, Status> {
        let status = self.engine.status();
        let snapshot = self.jobs.snapshot();
        let only_job = match snapshot.running.as_slice() {
            [job] => Some(job),
            _ => None,
        };
        let gpus = status
            .devices
            .iter()
            .map(|device| {
                let current = only_job.filter(|_| device.proofs_in_flight > 0);
                GpuStatus {
                    ordinal: device.ordinal.max(0) as u32,
                    name: device.name.clone(),
                    vram_total_bytes: device.memory_total,
                    vram_free_bytes: device.memory_free,
                    current_job_id: current.map(|job| job.id.clone()).unwrap_or_default(),
                    current_proof_kind: current.map(|job| job.kind.as_str_name().to_string()).unwrap_or_default(),
                }
            })
            .collect();
        let ref_count = |circuit_id: &str| {
            let running = snapshot
                .running
                .iter()
                .filter(|job| job.circuit_id.as_deref() == Some(circuit_id))
                .count();
            u32::try_from(running).unwrap_or(u32::MAX)
        };
        let mut loaded_srs: Vec<SrsStatus> = Vec::new();
        for key in status.devices.iter().flat_map(|d| &d.resident_keys).filter(|k| k.loaded) {
            let circuit_id = self.circuit_id_of(&key.label);
            if loaded_srs.iter().all(|s| s.circuit_id != circuit_id) {
                loaded_srs.push(SrsStatus {
                    ref_count: ref_count(&circuit_id),
                    circuit_id,
                    tier: Tier::Hot as i32,
                    size_bytes: key.bytes,
                });
            }
        }
        // Keys whose points are in host memory (a key the engine holds open but decodes only as
        // it uploads it holds none there).
        for key in status.host_keys.iter().filter(|k| k.bytes > 0) {
            let circuit_id = self.circuit_id_of(&key.label);
            if loaded_srs.iter().all(|s| s.circuit_id != circuit_id) {
                loaded_srs.push(SrsStatus {
                    ref_count: ref_count(&circuit_id),
                    circuit_id,
                    tier: Tier::Warm as i32,
                    size_bytes: key.bytes,
                });
            }
        }
        let queues = [
            ProofKind::PorepSealCommit,
            ProofKind::SnapDealsUpdate,
            ProofKind::WindowPostPartition,
            ProofKind::WinningPost,
        ]
        .into_iter()
        .map(|kind| {
            let counts = snapshot.queues.get(&kind).copied().unwrap_or_default();
            QueueStatus {
                proof_kind: kind.as_str_name().to_string(),
                pending: counts.pending,
                in_progress: counts.running,
            }
        })
        .collect();
        Ok(Response::new(GetStatusResponse {
            gpus,
            loaded_srs,
            queues,
            total_proofs_completed: self.jobs.metrics.total(End::Completed),
            total_proofs_failed: self.jobs.metrics.total(End::Failed),
            uptime_seconds: self.started.elapsed().as_secs(),
            pinned_memory_bytes: status.devices.iter().map(|d| d.pinned_pool.allocated_bytes).sum(),
            pinned_memory_limit_bytes: status.devices.iter().map(|d| d.pinned_pool.limit_bytes).sum(),
        }))
    }

    async fn get_metrics(&self, _request: Request<GetMetricsRequest>) -> Result<Response<GetMetricsResponse>, Status> {
        let status = self.engine.status();
        let prometheus_text = self.jobs.metrics.render(&self.jobs.snapshot(), &status, self.started.elapsed());
        Ok(Response::new(GetMetricsResponse { prometheus_text }))
    }

    async fn preload_srs(&self, request: Request<PreloadSrsRequest>) -> Result<Response<PreloadSrsResponse>, Status> {
        let circuit_id = request.into_inner().circuit_id;
        let proof = Self::proof_of(&circuit_id)?;
        let report = preload(self.engine.clone(), &circuit_id, proof)
            .await
            .map_err(Status::failed_precondition)?;
        let load_ns = report.srs_load_ns + report.srs_upload_ns + report.shape_extract_ns;
        Ok(Response::new(PreloadSrsResponse {
            already_loaded: load_ns == 0,
            load_time_ms: load_ns / 1_000_000,
        }))
    }

    async fn evict_srs(&self, request: Request<EvictSrsRequest>) -> Result<Response<EvictSrsResponse>, Status> {
        let circuit_id = request.into_inner().circuit_id;
        let proof = Self::proof_of(&circuit_id)?;
        let label = self
            .engine
            .proving_key_file(proof)
            .map_err(|e| Status::invalid_argument(e.to_string()))?
            .display()
            .to_string();
        let status = self.engine.status();
        let held: u64 = status.host_keys.iter().filter(|k| k.label == label).map(|k| k.bytes).sum::<u64>()
            + status
                .devices
                .iter()
                .flat_map(|d| &d.resident_keys)
                .filter(|k| k.label == label)
                .map(|k| k.bytes)
                .sum::<u64>();
        let engine = self.engine.clone();
        let was_loaded = tokio::task::spawn_blocking(move || engine.evict_key(proof))
            .await
            .map_err(|e| Status::internal(format!("evicting {circuit_id}: {e}")))?
            .map_err(|e| Status::failed_precondition(e.to_string()))?;
        log::info!("circuit={circuit_id}: evicted (was loaded: {was_loaded}, {held} bytes)");
        Ok(Response::new(EvictSrsResponse {
            was_loaded,
            freed_bytes: held,
        }))
    }
}

/// Loads a circuit's key (host, devices) and shape on a blocking thread.
pub async fn preload(engine: Arc<Engine>, circuit_id: &str, proof: RegisteredProof) -> Result<cuzk::engine::PreloadReport, String> {
    let report = tokio::task::spawn_blocking(move || engine.preload_key(proof))
        .await
        .map_err(|e| format!("preloading {circuit_id}: {e}"))?
        .map_err(|e| format!("preloading {circuit_id}: {e}"))?;
    log::info!(
        "circuit={circuit_id}: preloaded (key read {} ms, uploaded {} ms, shape {} ms)",
        report.srs_load_ns / 1_000_000,
        report.srs_upload_ns / 1_000_000,
        report.shape_extract_ns / 1_000_000
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proving_time_counts_the_msms_run_at_once_once() {
        let mut t = Timings {
            ntt_ns: 7,
            msm_h_ns: 10,
            batch_add_ns: 15,
            msm_l_ns: 20,
            msm_a_ns: 30,
            msm_b_g1_ns: 40,
            msm_b_g2_ns: 50,
            ..Timings::new()
        };
        assert_eq!(proving_ns(&t), 7 + 10 + 15 + 20 + 30 + 40 + 50);
        t.msm_at_once_ns = 55;
        assert_eq!(proving_ns(&t), 7 + 55);
    }
}
