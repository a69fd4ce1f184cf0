//! cuzk-daemon: serves Curio's cuzk.v1.ProvingEngine gRPC protocol (proto/cuzk/v1/
//! proving.proto) on a Unix socket or TCP, proving on the cuzk engine in this process.
//!
//! Start-up: configuration (config.rs), logger, engine, listener, then the circuits to preload
//! in the background. Shutdown on SIGTERM / SIGINT: submissions refused, jobs finished or
//! cancelled (`on_shutdown`), then exit; a second signal exits at once. A GPU the engine
//! quarantines (a fault it could not recover from) ends the daemon with exit status 3, its
//! jobs cancelled, so that its supervisor starts a fresh process.

mod circuits;
mod config;
mod jobs;
mod metrics;
mod request;
mod service;

/// The code tonic-prost-build generates from proto/cuzk/v1/proving.proto.
pub mod proto {
    tonic::include_proto!("cuzk.v1");
}

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use cuzk::engine::{DeviceHealth, Engine};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;
use tokio_stream::wrappers::{TcpListenerStream, UnixListenerStream};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Server;

use config::{Config, Listen, OnShutdown};
use jobs::Jobs;
use proto::proving_engine_server::ProvingEngineServer;

/// Curio's client sends and accepts messages up to 256 MiB (a 64GiB C1 output is ~100 MB).
const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Exit status when a GPU is quarantined.
const EXIT_GPU_QUARANTINED: u8 = 3;

/// Why the daemon stops.
#[derive(Clone, Debug)]
enum Stop {
    Signal(&'static str),
    GpuQuarantined(String),
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Signal(name) => write!(f, "{name}"),
            Stop::GpuQuarantined(why) => write!(f, "{why}"),
        }
    }
}

fn main() -> ExitCode {
    init_logging();
    let config = match Config::from_args(std::env::args().skip(1)) {
        Ok(Some(config)) => config,
        Ok(None) => return ExitCode::SUCCESS,
        Err(e) => {
            log::error!("{e}");
            return ExitCode::from(2);
        }
    };
    #[cfg(feature = "fault-injection")]
    if let Err(e) = arm_test_fault() {
        log::error!("{e}");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            log::error!("starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(config)) {
        Ok(Stop::Signal(_)) => ExitCode::SUCCESS,
        Ok(Stop::GpuQuarantined(_)) => ExitCode::from(EXIT_GPU_QUARANTINED),
        Err(e) => {
            log::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// TESTS ONLY: the daemon's side of the device test of its exit on a quarantined GPU
/// (e2e/quarantine_test.go, `scripts/gpu-run.sh daemon`), in builds with the `fault-injection`
/// feature, never in a shipped one. CUZK_DAEMON_TEST_FAULT=quarantine makes the first GPU call
/// fault and the device reset after it fail, so that the engine quarantines the device; unset
/// or empty, nothing is armed; any other value is an error.
#[cfg(feature = "fault-injection")]
fn arm_test_fault() -> Result<(), String> {
    use cuzk::internals::gpu_fault_injection as injection;
    const VARIABLE: &str = "CUZK_DAEMON_TEST_FAULT";
    match std::env::var_os(VARIABLE) {
        None => Ok(()),
        Some(value) if value.is_empty() => Ok(()),
        Some(value) if value == "quarantine" => {
            injection::fault_next_call();
            injection::fail_next_reset();
            log::warn!(
                "TEST FAULT ARMED ({VARIABLE}=quarantine): the first GPU call will fault and the device reset after it fail, \
                 so the GPU is quarantined and the daemon exits with status {EXIT_GPU_QUARANTINED}; a test build, not for production"
            );
            Ok(())
        }
        Some(value) => Err(format!("{VARIABLE}={value:?}: unknown test fault (the only one is \"quarantine\")")),
    }
}

/// Logs as logfmt lines on stderr (RUST_LOG filters, default info): the daemon's records and
/// the engine's (cuzk, filecoin-proofs, bellperson), which go through this logger.
fn init_logging() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format(|out, record| {
            writeln!(
                out,
                "ts={} level={} target={} msg={:?}",
                out.timestamp_millis(),
                record.level().as_str().to_lowercase(),
                record.target(),
                record.args().to_string()
            )
        })
        .init();
}

async fn serve(config: Config) -> Result<Stop, String> {
    let listen = config.listen()?;
    let token = config.auth_token(&listen)?;
    let engine = Engine::acquire(config.engine_config()).map_err(|e| format!("starting the engine: {e}"))?;
    let status = engine.status();
    log::info!(
        "cuzk-daemon {} on cuzk {}: backend {}, {} GPU(s), {} worker threads",
        env!("CARGO_PKG_VERSION"),
        status.version,
        status.backend,
        status.devices.len(),
        status.worker_threads
    );
    let jobs = Jobs::new(engine.clone(), config.job_settings());
    let service = ProvingEngineServer::new(service::Service::new(engine.clone(), jobs.clone()))
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let service = InterceptedService::new(service, bearer_check(token));

    let (stop_sender, mut stopped) = watch::channel(None::<Stop>);
    let reason = stopped.clone();
    watch_signals(stop_sender.clone())?;
    tokio::spawn(watch_device_health(
        engine.clone(),
        Duration::from_secs(config.health_check_secs.max(1)),
        stop_sender,
    ));
    tokio::spawn(preload_all(engine.clone(), config.preload.clone()));

    let on_shutdown = config.on_shutdown;
    let shutdown_jobs = jobs.clone();
    let shutdown = async move {
        let stop = stopped.wait_for(Option::is_some).await.ok().and_then(|s| s.clone());
        let cancel = on_shutdown == OnShutdown::Cancel || matches!(stop, Some(Stop::GpuQuarantined(_)));
        let why = stop.map_or_else(|| "the stop channel closed".to_string(), |s| s.to_string());
        log::info!(
            "stopping ({why}): no new submissions; {} the jobs not ended",
            if cancel { "cancelling" } else { "finishing" }
        );
        shutdown_jobs.close(cancel);
    };
    let server = Server::builder().add_service(service);
    let served = match &listen {
        Listen::Unix(path) => {
            remove_stale_socket(path)?;
            let listener = tokio::net::UnixListener::bind(path).map_err(|e| format!("listening on {}: {e}", path.display()))?;
            log::info!("listening on unix://{}", path.display());
            let served = server.serve_with_incoming_shutdown(UnixListenerStream::new(listener), shutdown).await;
            let _ = std::fs::remove_file(path);
            served
        }
        Listen::Tcp(address) => {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|e| format!("listening on {address}: {e}"))?;
            log::info!(
                "listening on {address} (TCP{})",
                if config.auth_token_file.is_some() {
                    ", bearer token required"
                } else {
                    ""
                }
            );
            server.serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown).await
        }
    };
    served.map_err(|e| format!("serving: {e}"))?;
    jobs.all_ended().await;
    let stop = reason.borrow().clone().ok_or("the server ended without being stopped")?;
    log::info!("stopped ({stop})");
    Ok(stop)
}

/// A description of the first quarantined GPU, if any.
fn quarantined(engine: &Engine) -> Option<String> {
    engine
        .status()
        .devices
        .into_iter()
        .find(|d| d.health == DeviceHealth::Quarantined)
        .map(|d| {
            format!(
                "GPU {} ({}) is quarantined after {} fault(s), last: {}",
                d.ordinal,
                d.name,
                d.faults,
                d.last_fault.unwrap_or_default()
            )
        })
}

/// The first SIGTERM or SIGINT stops the daemon gracefully; a second one exits at once.
fn watch_signals(stop: watch::Sender<Option<Stop>>) -> Result<(), String> {
    let mut terminate = signal(SignalKind::terminate()).map_err(|e| format!("installing the SIGTERM handler: {e}"))?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(|e| format!("installing the SIGINT handler: {e}"))?;
    tokio::spawn(async move {
        let mut received = 0;
        loop {
            let name = tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
            };
            received += 1;
            if received > 1 {
                log::warn!("{name} again: exiting now, jobs not ended are lost");
                std::process::exit(130);
            }
            log::info!("{name} received");
            stop.send_replace(Some(Stop::Signal(name)));
        }
    });
    Ok(())
}

/// Ends the daemon when the engine quarantines a GPU: a fault it could not recover from
/// inside this process; a new process gets a new CUDA context.
async fn watch_device_health(engine: Arc<Engine>, every: Duration, stop: watch::Sender<Option<Stop>>) {
    let mut ticks = tokio::time::interval(every);
    loop {
        ticks.tick().await;
        let checked = engine.clone();
        let Ok(found) = tokio::task::spawn_blocking(move || quarantined(&checked)).await else {
            continue;
        };
        if let Some(why) = found {
            log::error!("{why}: the engine cannot recover it in this process; cancelling the jobs and exiting with status {EXIT_GPU_QUARANTINED} for a restart");
            stop.send_replace(Some(Stop::GpuQuarantined(why)));
            return;
        }
    }
}

/// Loads the keys of `circuit_ids` one after the other; a failure is logged, not fatal.
async fn preload_all(engine: Arc<Engine>, circuit_ids: Vec<String>) {
    for id in circuit_ids {
        let loaded = match circuits::registered_proof(&id) {
            Ok(proof) => service::preload(engine.clone(), &id, proof).await,
            Err(e) => Err(e),
        };
        if let Err(e) = loaded {
            log::error!("preload: {e}");
        }
    }
}

/// Removes a socket file left by a daemon that did not exit cleanly; anything else at that
/// path is left alone (binding then fails and says so).
fn remove_stale_socket(path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(|e| format!("removing the stale socket {}: {e}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Checks the bearer token of every call when the daemon has one (TCP).
fn bearer_check(token: Option<String>) -> impl Fn(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Clone {
    let expected = token.map(|t| Arc::new(format!("Bearer {t}")));
    move |request: tonic::Request<()>| {
        let Some(expected) = &expected else {
            return Ok(request);
        };
        let given = request.metadata().get("authorization").map(|v| v.as_bytes()).unwrap_or_default();
        // Compares every byte whatever the first difference, so the time does not tell where.
        let same = given.len() == expected.len() && given.iter().zip(expected.as_bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
        if same {
            Ok(request)
        } else {
            Err(tonic::Status::unauthenticated("a valid bearer token is required"))
        }
    }
}
