//! Where the library's log records go (its own and its dependencies': filecoin-proofs,
//! bellperson): to stderr, filtered by RUST_LOG as env_logger does, or to a sink the host
//! program installs (`cuzk_log_set_callback`; Go forwards it to a `slog.Logger`), so that a
//! host like Curio gets them in its own logs instead of on stderr.
//!
//! The `log` crate has one logger per process. cuzk installs its own the first time the engine
//! starts or a sink is set; a Rust host program that installed a logger before keeps it, and
//! the records go there.

use std::sync::{OnceLock, RwLock};

use log::{LevelFilter, Log, Metadata, Record};

use crate::error::{Error, Result, Status};

/// Receives one record: its level, its target (the module that logged it) and its text.
/// Called on the thread that logged, any of the library's.
pub type Sink = Box<dyn Fn(log::Level, &str, &str) + Send + Sync>;

struct ProcessLogger {
    /// RUST_LOG's filter and format, used while no sink is installed.
    stderr: env_logger::Logger,
    sink: RwLock<Option<(Sink, LevelFilter)>>,
}

/// cuzk's logger once installed; None when the host program's was there first.
static LOGGER: OnceLock<Option<&'static ProcessLogger>> = OnceLock::new();

impl Log for ProcessLogger {
    fn enabled(&self, metadata: &Metadata) -> bool {
        match &*self.sink.read().unwrap_or_else(|p| p.into_inner()) {
            Some((_, max)) => metadata.level() <= *max,
            None => self.stderr.enabled(metadata),
        }
    }

    fn log(&self, record: &Record) {
        match &*self.sink.read().unwrap_or_else(|p| p.into_inner()) {
            Some((sink, max)) if record.level() <= *max => sink(record.level(), record.target(), &record.args().to_string()),
            Some(_) => {}
            None => self.stderr.log(record),
        }
    }

    fn flush(&self) {
        self.stderr.flush();
    }
}

/// cuzk's logger, installed as the process's on first use; None when the host program had
/// installed its own before.
fn logger() -> Option<&'static ProcessLogger> {
    *LOGGER.get_or_init(|| {
        let logger: &'static ProcessLogger = Box::leak(Box::new(ProcessLogger {
            stderr: env_logger::Builder::from_default_env().build(),
            sink: RwLock::new(None),
        }));
        log::set_logger(logger).ok()?;
        log::set_max_level(logger.stderr.filter());
        Some(logger)
    })
}

/// Makes sure the library's records go somewhere (stderr under RUST_LOG, unless a sink is
/// installed or the host program has a logger of its own).
pub fn init() {
    logger();
}

/// Sends every record at `max` or more severe to `sink` instead of stderr; `None` sends them
/// back to stderr (RUST_LOG). Fails when the host program installed a logger of its own.
pub fn set_sink(sink: Option<(Sink, LevelFilter)>) -> Result<()> {
    let logger = logger().ok_or_else(|| {
        Error::new(
            Status::EngineState,
            "the host program installed its own Rust logger: cuzk's records already go to it",
        )
    })?;
    let max = sink.as_ref().map_or(logger.stderr.filter(), |(_, max)| *max);
    *logger.sink.write().unwrap_or_else(|p| p.into_inner()) = sink;
    log::set_max_level(max);
    Ok(())
}
