//! The daemon's configuration: a TOML file (`--config`), then flags over it.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use cuzk::engine::{EngineConfig, IdlePolicy, ShapeCacheLocation};
use serde::Deserialize;

use crate::jobs::JobSettings;

pub const USAGE: &str = "\
cuzk-daemon: Curio's cuzk.v1.ProvingEngine gRPC service on the cuzk proving engine

usage: cuzk-daemon [--config FILE] [--listen ADDR] [--param-dir DIR] [--cpu-only]
                   [--on-shutdown finish|cancel] [--preload CIRCUIT_ID]...

  --config FILE        TOML configuration (daemon/cuzk-daemon.example.toml lists every key)
  --listen ADDR        unix:///path/to.sock, or host:port (TCP); default unix:///run/cuzk/cuzk.sock
  --param-dir DIR      Groth16 parameter directory (default: FIL_PROOFS_PARAMETER_CACHE, else
                       /var/tmp/filecoin-proof-parameters)
  --cpu-only           never use a GPU (also CUZK_NO_GPU=1)
  --on-shutdown MODE   on SIGTERM/SIGINT: finish the jobs not ended (default) or cancel them
  --preload ID         load a circuit's key at start (porep-32g, wpost-32g, winning-32g, snap-32g, ...);
                       repeatable, added to the configuration's list
Logs go to stderr, filtered by RUST_LOG (default info).";

/// What SIGTERM / SIGINT do to the jobs not ended.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnShutdown {
    /// Stop taking submissions, let every pending and running job end, then exit.
    #[default]
    Finish,
    /// Stop taking submissions, cancel every job not ended, then exit.
    Cancel,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// unix:///path/to.sock, or host:port / tcp://host:port.
    pub listen: String,
    /// A file holding the bearer token every call must carry (TCP only: a Unix socket is
    /// guarded by its file permissions).
    pub auth_token_file: Option<PathBuf>,
    pub on_shutdown: OnShutdown,
    /// Sealing-class jobs (C2, SnapDeals) proving at once; more wait as pending.
    pub max_concurrent_sealing: usize,
    /// Ended jobs kept for AwaitProof and retries: this long, and at most this many.
    pub retain_finished_secs: u64,
    pub retain_finished_jobs: usize,
    /// Circuit ids whose keys are loaded at start, in order.
    pub preload: Vec<String>,
    /// How often the engine's device health is looked at (a quarantined GPU ends the daemon).
    pub health_check_secs: u64,
    pub engine: EngineSection,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "unix:///run/cuzk/cuzk.sock".into(),
            auth_token_file: None,
            on_shutdown: OnShutdown::Finish,
            max_concurrent_sealing: 1,
            retain_finished_secs: 3600,
            retain_finished_jobs: 1000,
            preload: Vec::new(),
            health_check_secs: 5,
            engine: EngineSection::default(),
        }
    }
}

/// The engine's knobs (cuzk::engine::EngineConfig); 0 or absent: the engine's default.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EngineSection {
    pub param_dir: Option<PathBuf>,
    pub cpu_only: bool,
    pub num_threads: usize,
    /// CUDA ordinals to use; empty: every device.
    pub devices: Vec<i32>,
    pub gpu_key_memory_budget: u64,
    pub pinned_pool_bytes: u64,
    pub host_memory_budget: u64,
    /// Where circuit shapes are kept between runs; absent: beside the parameter directory.
    pub shape_cache_dir: Option<PathBuf>,
    /// Give the engine's memory back after this many idle seconds; absent: never.
    pub idle_release_secs: Option<u64>,
    /// Keep the PoSt circuits' keys through an idle release.
    pub keep_post_keys: bool,
    /// Partitions one call proves at once; 0: the engine's choice.
    pub proving_lanes: usize,
    /// Caps glibc's malloc arenas (EngineConfig::malloc_arena_max); 0: glibc's default.
    pub malloc_arena_max: u32,
    /// Points of a chunk of H's MSM on a GPU (EngineConfig::gpu_h_msm_chunk); 0: 2^26.
    pub gpu_h_msm_chunk: u64,
}

impl Default for EngineSection {
    fn default() -> Self {
        EngineSection {
            param_dir: None,
            cpu_only: false,
            num_threads: 0,
            devices: Vec::new(),
            gpu_key_memory_budget: 0,
            pinned_pool_bytes: 0,
            host_memory_budget: 0,
            shape_cache_dir: None,
            idle_release_secs: None,
            keep_post_keys: true,
            proving_lanes: 0,
            malloc_arena_max: 0,
            gpu_h_msm_chunk: 0,
        }
    }
}

/// Where the daemon listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

impl Config {
    /// The configuration of the command line `args` (without the program name): the file of
    /// `--config`, then the other flags over it. None for `--help` / `--version`, printed.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Option<Config>, String> {
        let mut args = args.into_iter();
        let mut flags = Vec::new();
        let mut file = None;
        while let Some(arg) = args.next() {
            let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value\n\n{USAGE}"));
            match arg.as_str() {
                "--help" | "-h" => {
                    println!("{USAGE}");
                    return Ok(None);
                }
                "--version" => {
                    println!("cuzk-daemon {}", env!("CARGO_PKG_VERSION"));
                    return Ok(None);
                }
                "--config" => file = Some(value("--config")?),
                "--cpu-only" => flags.push((arg, String::new())),
                "--listen" | "--param-dir" | "--on-shutdown" | "--preload" => {
                    let v = value(&arg)?;
                    flags.push((arg, v));
                }
                other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
            }
        }
        let mut config = match file {
            Some(path) => {
                let text = std::fs::read_to_string(&path).map_err(|e| format!("reading {path}: {e}"))?;
                toml::from_str(&text).map_err(|e| format!("{path}: {e}"))?
            }
            None => Config::default(),
        };
        for (flag, value) in flags {
            match flag.as_str() {
                "--listen" => config.listen = value,
                "--param-dir" => config.engine.param_dir = Some(value.into()),
                "--cpu-only" => config.engine.cpu_only = true,
                "--on-shutdown" => {
                    config.on_shutdown = match value.as_str() {
                        "finish" => OnShutdown::Finish,
                        "cancel" => OnShutdown::Cancel,
                        other => return Err(format!("--on-shutdown {other:?}: expected finish or cancel")),
                    }
                }
                _ => config.preload.push(value),
            }
        }
        Ok(Some(config))
    }

    pub fn listen(&self) -> Result<Listen, String> {
        let address = self.listen.as_str();
        if let Some(path) = address.strip_prefix("unix://").or_else(|| address.strip_prefix("unix:")) {
            if path.is_empty() {
                return Err(format!("listen = {address:?}: no socket path"));
            }
            return Ok(Listen::Unix(path.into()));
        }
        let host_port = address.strip_prefix("tcp://").unwrap_or(address);
        let resolved = host_port.to_socket_addrs().map_err(|e| format!("listen = {address:?}: {e}"))?.next();
        resolved.map(Listen::Tcp).ok_or_else(|| format!("listen = {address:?}: no address"))
    }

    /// The bearer token calls must carry, read from `auth_token_file` (surrounding whitespace
    /// dropped); refused on a Unix socket and when empty.
    pub fn auth_token(&self, listen: &Listen) -> Result<Option<String>, String> {
        let Some(path) = &self.auth_token_file else {
            return Ok(None);
        };
        if matches!(listen, Listen::Unix(_)) {
            return Err("auth_token_file is for TCP only: a Unix socket is guarded by its file permissions".into());
        }
        let token = std::fs::read_to_string(path).map_err(|e| format!("reading auth_token_file {}: {e}", path.display()))?;
        let token = token.trim();
        if token.is_empty() {
            return Err(format!("auth_token_file {} is empty", path.display()));
        }
        Ok(Some(token.to_string()))
    }

    pub fn engine_config(&self) -> EngineConfig {
        let e = &self.engine;
        EngineConfig {
            param_cache_dir: e.param_dir.clone(),
            cpu_only: e.cpu_only,
            num_threads: e.num_threads,
            devices: e.devices.clone(),
            gpu_key_memory_budget: e.gpu_key_memory_budget,
            pinned_pool_bytes: e.pinned_pool_bytes,
            host_memory_budget: e.host_memory_budget,
            shape_cache: match &e.shape_cache_dir {
                Some(dir) => ShapeCacheLocation::Dir(dir.clone()),
                None => ShapeCacheLocation::NextToParameters,
            },
            idle: IdlePolicy {
                release_after: e.idle_release_secs.map(Duration::from_secs),
                keep_post_keys: e.keep_post_keys,
            },
            proving_lanes: e.proving_lanes,
            malloc_arena_max: e.malloc_arena_max,
            gpu_h_msm_chunk: e.gpu_h_msm_chunk,
            ..EngineConfig::default()
        }
    }

    pub fn job_settings(&self) -> JobSettings {
        JobSettings {
            max_concurrent_sealing: self.max_concurrent_sealing.max(1),
            retain_finished: Duration::from_secs(self.retain_finished_secs),
            retain_finished_jobs: self.retain_finished_jobs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_override_the_file() {
        let dir = std::env::temp_dir().join(format!("cuzk-daemon-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("daemon.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9820\"\npreload = [\"wpost-32g\"]\nmax_concurrent_sealing = 2\n[engine]\ncpu_only = false\nnum_threads = 4\n",
        )
        .unwrap();
        let config = Config::from_args(args(&[
            "--config",
            file.to_str().unwrap(),
            "--cpu-only",
            "--preload",
            "porep-32g",
            "--on-shutdown",
            "cancel",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(config.listen().unwrap(), Listen::Tcp("127.0.0.1:9820".parse().unwrap()));
        assert_eq!(config.preload, ["wpost-32g", "porep-32g"]);
        assert_eq!(config.on_shutdown, OnShutdown::Cancel);
        let engine = config.engine_config();
        assert!(engine.cpu_only);
        assert_eq!(engine.num_threads, 4);
        assert_eq!(config.job_settings().max_concurrent_sealing, 2);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn listen_addresses() {
        let with = |listen: &str| Config {
            listen: listen.into(),
            ..Config::default()
        };
        assert_eq!(with("unix:///run/cuzk.sock").listen().unwrap(), Listen::Unix("/run/cuzk.sock".into()));
        assert_eq!(with("unix:/tmp/c.sock").listen().unwrap(), Listen::Unix("/tmp/c.sock".into()));
        assert_eq!(with("tcp://127.0.0.1:1").listen().unwrap(), Listen::Tcp("127.0.0.1:1".parse().unwrap()));
        assert!(with("unix://").listen().is_err());
        let unix_with_token = Config {
            auth_token_file: Some("/dev/null".into()),
            ..with("unix:///x.sock")
        };
        assert!(unix_with_token
            .auth_token(&Listen::Unix("/x.sock".into()))
            .unwrap_err()
            .contains("TCP only"));
    }

    #[test]
    fn unknown_keys_and_flags_are_refused() {
        assert!(toml::from_str::<Config>("lisen = \"x\"").is_err());
        assert!(Config::from_args(args(&["--bogus"])).unwrap_err().contains("unknown argument"));
        assert!(Config::from_args(args(&["--on-shutdown", "later"]))
            .unwrap_err()
            .contains("finish or cancel"));
    }

    /// The example file lists keys the daemon takes (unknown ones are refused), with their
    /// defaults where it sets them.
    #[test]
    fn the_example_file_is_a_configuration() {
        let config: Config = toml::from_str(include_str!("../cuzk-daemon.example.toml")).expect("the example parses");
        let engine = config.engine_config();
        assert_eq!(engine.gpu_h_msm_chunk, 0);
        assert_eq!(engine.malloc_arena_max, 0);
        let chunked: Config = toml::from_str("[engine]\ngpu_h_msm_chunk = 65536\n").unwrap();
        assert_eq!(chunked.engine_config().gpu_h_msm_chunk, 1 << 16);
    }
}
