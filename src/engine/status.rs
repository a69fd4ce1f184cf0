//! What the engine holds and does, as `cuzk_engine_status` returns it (JSON).

pub use super::pipeline::PipelineStatus;
pub use super::shapes::ShapeStatus;
pub use crate::backend::{DeviceHealth, DeviceStatus, PoolUsage, ResidentKey, ResidentShape};

/// A proving key the engine holds (engine status): its file open, its points decoded in host
/// memory only where they are needed there (the CPU backend, a key streamed to the devices).
#[derive(Clone, Debug, serde::Serialize)]
pub struct HostKeyStatus {
    pub label: String,
    /// Bytes of its points in host memory: 0 for a key resident on the devices alone.
    pub bytes: u64,
    /// Bytes of all its points (what a device copy or the host copy holds).
    pub points_bytes: u64,
}

/// What the engine holds and does (`cuzk_engine_status`, as JSON).
#[derive(Clone, Debug, serde::Serialize)]
pub struct EngineStatus {
    pub version: &'static str,
    pub backend: &'static str,
    pub worker_threads: usize,
    pub proofs_in_flight: u64,
    /// Times the engine returned free host memory to the OS (each time it went idle, after
    /// key evictions, and during calls when more was kept than their partitions reuse; see
    /// `idle`).
    pub host_memory_trims: u64,
    /// Times the idle policy released the engine's memory (`EngineConfig::idle`).
    pub idle_releases: u64,
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

/// What `Engine::release_memory` gave back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoryReleased {
    /// Host memory of the proving keys dropped (their points held on the host).
    pub host_key_bytes: u64,
    /// Circuit shapes (R1CS matrices) dropped from host memory.
    pub host_shape_bytes: u64,
    /// Device memory freed, as the driver counts it (keys, matrices, buffers; all devices).
    pub device_bytes: u64,
    /// Pinned host staging memory freed.
    pub pinned_bytes: u64,
    pub duration_ns: u64,
}

/// What a preload did: the time to read the key from disk, to copy it to the devices and to
/// extract the circuit's shape (each 0 when it was already there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreloadReport {
    pub srs_load_ns: u64,
    pub srs_upload_ns: u64,
    pub shape_extract_ns: u64,
}
