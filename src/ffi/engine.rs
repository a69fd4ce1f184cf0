//! The engine: its configuration and the handles to it.

use std::ffi::c_char;
use std::mem::offset_of;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::boundary::{boundary, free_owned, into_owned, optional, optional_c_str, read_sized, required, required_mut, slice, SizedOut, SizedStruct};
use super::cuzk_error;
use crate::engine::{Engine, EngineConfig, IdlePolicy, ShapeCacheLocation, Verifier, MAX_DEVICES};
use crate::error::{Error, Result, Status};

/// A handle to the process's engine. Free with `cuzk_engine_free`, and only after every call
/// that uses it has returned.
pub struct cuzk_engine {
    engine: Arc<Engine>,
}

/// The engine behind the caller's handle `ptr` (NULL: CUZK_STATUS_NULL_ARGUMENT).
pub(super) fn engine_of<'a>(ptr: *const cuzk_engine) -> Result<&'a Engine> {
    Ok(&required(ptr, "engine")?.engine)
}

/// The verifier of a verify call: the engine's behind the caller's handle `ptr`, or for NULL
/// the process's standalone verifier (no engine, no GPU; the parameter directory of
/// FIL_PROOFS_PARAMETER_CACHE, else the default one).
pub(super) fn verifier_of<'a>(ptr: *const cuzk_engine) -> Result<VerifierRef<'a>> {
    match optional(ptr) {
        Some(handle) => Ok(VerifierRef::Engine(&handle.engine)),
        None => Ok(VerifierRef::Standalone(Verifier::standalone()?)),
    }
}

/// The verifier of one verify call.
pub(super) enum VerifierRef<'a> {
    Engine(&'a Engine),
    Standalone(Arc<Verifier>),
}

impl std::ops::Deref for VerifierRef<'_> {
    type Target = Verifier;
    fn deref(&self) -> &Verifier {
        match self {
            VerifierRef::Engine(engine) => engine.verifier(),
            VerifierRef::Standalone(verifier) => verifier,
        }
    }
}

/// Engine configuration. Fill with `cuzk_config_default` after setting `struct_size`.
///
/// Revisions; a caller compiled against an earlier one passes its smaller `struct_size` and
/// the later fields keep their defaults:
/// 1. `struct_size` to `param_cache_dir` (CUZK_CONFIG_SIZE_V1 bytes);
/// 2. adds `gpu_key_memory_budget` and `pinned_pool_bytes`;
/// 3. adds `host_memory_budget`;
/// 4. adds `devices`, `devices_len`, `proving_lanes`, `idle_release_ms` and
///    `idle_keep_post_keys`;
/// 5. adds `shape_cache_dir`;
/// 6. adds `malloc_arena_max`;
/// 7. adds `gpu_h_msm_chunk`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct cuzk_config {
    /// sizeof(cuzk_config) as the caller compiled it.
    pub struct_size: u32,
    /// Worker threads for synthesis and CPU proving; 0 = one per core; at most 4096
    /// (CUZK_STATUS_INVALID_ARGUMENT above).
    pub num_threads: u32,
    /// Never use a GPU, even when one is present.
    pub cpu_only: bool,
    /// Verify every proof before returning it (default true, as filecoin-proofs does).
    pub self_verify: bool,
    /// Directory of the Groth16 parameters (NUL-terminated UTF-8); NULL: FIL_PROOFS_PARAMETER_CACHE,
    /// else /var/tmp/filecoin-proof-parameters. Copied during `cuzk_engine_new`.
    pub param_cache_dir: *const c_char,
    // Revision 2.
    /// Device memory per GPU for resident proving keys, in bytes; 0: 3/4 of the device's
    /// memory. Least recently used keys are evicted beyond it; a key larger than it is
    /// streamed from host memory on every call (cuzk_timings.key_residency says so).
    pub gpu_key_memory_budget: u64,
    /// Pinned host memory per GPU for staging copies, in bytes; 0: 128 MiB, also the least.
    pub pinned_pool_bytes: u64,
    // Revision 3.
    /// Host memory for synthesized partitions waiting to be proven, over every call, in bytes
    /// (bounds how far synthesis runs ahead of proving; a call also holds at most one
    /// partition more than its proving lanes); 0: a quarter of the machine's memory.
    pub host_memory_budget: u64,
    // Revision 4.
    /// CUDA device ordinals to use (numbered after CUDA_VISIBLE_DEVICES), `devices_len` of
    /// them, each once; NULL or 0: every device. Copied during `cuzk_engine_new`. A device that
    /// is not there is an error (CUZK_STATUS_INVALID_ARGUMENT), as is a list with `cpu_only`.
    pub devices: *const i32,
    pub devices_len: u32,
    /// Partitions one call proves at once (the proving lanes); 0: the backend's choice (GPU:
    /// two per device the call may use; CPU: one); at most 256 (CUZK_STATUS_INVALID_ARGUMENT
    /// above).
    pub proving_lanes: u32,
    /// After this many milliseconds with no call in flight the engine gives memory back, as
    /// `cuzk_engine_release_memory(engine, idle_keep_post_keys, ...)` does; 0: never.
    pub idle_release_ms: u64,
    /// Whether the idle release keeps the WindowPoSt and WinningPoSt proving keys (default
    /// true: their deadlines leave no time to read a key again).
    pub idle_keep_post_keys: bool,
    // Revision 5.
    /// Directory where circuit shapes (R1CS matrices) are kept between processes, so that a
    /// new process reads them instead of extracting them (15.9 s for a 32GiB PoRep circuit)
    /// (NUL-terminated UTF-8); NULL: `cuzk-circuit-shapes` beside the parameter directory;
    /// "": none kept. Files that do not check out are extracted and written again. Copied
    /// during `cuzk_engine_new`.
    pub shape_cache_dir: *const c_char,
    // Revision 6.
    /// Caps glibc malloc's arenas at this many when the engine starts (mallopt(M_ARENA_MAX),
    /// as MALLOC_ARENA_MAX does); 0 (default): the process's allocator is left as it is. With
    /// glibc's default a long-running process's RSS wanders by a few hundred MiB; 2 keeps it
    /// within 64 MiB (docs/RELIABILITY.md). It applies to the whole process, stays after the
    /// engine stops, and binds only arenas made after it: set it before the process has many
    /// threads. Not glibc: any value but 0 is CUZK_STATUS_INVALID_ARGUMENT.
    pub malloc_arena_max: u32,
    // Revision 7.
    /// H's MSM on a GPU runs in chunks of at most this many points, between which a
    /// WinningPoSt may take the device: it waits for one chunk, not the whole MSM (a 32GiB
    /// partition's 2^27 points in two chunks by default, ≈ 0.4 s each on an H200); smaller
    /// chunks shorten that wait and cost their launches. 0: 2^26; else at least 65 536
    /// (CUZK_STATUS_INVALID_ARGUMENT below).
    pub gpu_h_msm_chunk: u64,
}

/// The smallest `cuzk_config.struct_size` accepted: the size of revision 1 (64-bit targets).
pub const CUZK_CONFIG_SIZE_V1: u32 = 24;
const _: () = assert!(CUZK_CONFIG_SIZE_V1 as usize == offset_of!(cuzk_config, gpu_key_memory_budget));
// The limits the documentation of `num_threads`, `proving_lanes` and `gpu_h_msm_chunk` states.
const _: () = assert!(crate::engine::MAX_THREADS == 4096 && crate::engine::MAX_PROVING_LANES == 256);
const _: () = assert!(crate::engine::MIN_GPU_H_MSM_CHUNK == 65_536);

// SAFETY: repr(C), plain data (integers, pointers, bools), starting with its u32 struct_size.
unsafe impl SizedStruct for cuzk_config {
    const NAME: &'static str = "cuzk_config";
    const MIN_SIZE: u32 = CUZK_CONFIG_SIZE_V1;
}

/// Fills `config` with the defaults (all cores, GPU when present, self-verify on, parameter
/// directory from FIL_PROOFS_PARAMETER_CACHE). Set `config->struct_size` first.
///
/// `config`: not NULL, a cuzk_config with its `struct_size` set, written no further than that
/// (and `struct_size` itself not at all). `err`: NULL, or where to store the call's error. All
/// are read or written during the call only.
#[no_mangle]
pub extern "C" fn cuzk_config_default(config: *mut cuzk_config, err: *mut *mut cuzk_error) -> Status {
    boundary(err, || {
        SizedOut::required(config, "config")?.write(&default_config());
        Ok(())
    })
}

/// The defaults as a cuzk_config (`struct_size` 0: `SizedOut::write` keeps the caller's).
fn default_config() -> cuzk_config {
    let defaults = EngineConfig::default();
    cuzk_config {
        struct_size: 0,
        num_threads: defaults.num_threads as u32,
        cpu_only: defaults.cpu_only,
        self_verify: defaults.self_verify,
        param_cache_dir: std::ptr::null(),
        gpu_key_memory_budget: defaults.gpu_key_memory_budget,
        pinned_pool_bytes: defaults.pinned_pool_bytes,
        host_memory_budget: defaults.host_memory_budget,
        devices: std::ptr::null(),
        devices_len: 0,
        proving_lanes: defaults.proving_lanes as u32,
        idle_release_ms: defaults.idle.release_after.map_or(0, |d| d.as_millis() as u64),
        idle_keep_post_keys: defaults.idle.keep_post_keys,
        shape_cache_dir: std::ptr::null(),
        malloc_arena_max: defaults.malloc_arena_max,
        gpu_h_msm_chunk: defaults.gpu_h_msm_chunk,
    }
}

/// What the caller's configuration asks for.
fn engine_config(config: &cuzk_config) -> Result<EngineConfig> {
    let path = |ptr, name: &str| -> Result<Option<PathBuf>> {
        match optional_c_str(ptr) {
            None => Ok(None),
            Some(dir) => Ok(Some(PathBuf::from(
                dir.to_str().map_err(|_| Error::invalid(format!("{name} is not UTF-8")))?,
            ))),
        }
    };
    let param_cache_dir = path(config.param_cache_dir, "param_cache_dir")?.filter(|dir| !dir.as_os_str().is_empty());
    let shape_cache = match path(config.shape_cache_dir, "shape_cache_dir")? {
        None => ShapeCacheLocation::NextToParameters,
        Some(dir) if dir.as_os_str().is_empty() => ShapeCacheLocation::Off,
        Some(dir) => ShapeCacheLocation::Dir(dir),
    };
    let devices_len = config.devices_len as usize;
    if devices_len > MAX_DEVICES {
        return Err(Error::invalid(format!("devices_len is {devices_len}, at most {MAX_DEVICES}")));
    }
    let devices = slice(config.devices, devices_len, "devices")?.to_vec();
    Ok(EngineConfig {
        param_cache_dir,
        cpu_only: config.cpu_only,
        num_threads: config.num_threads as usize,
        self_verify: config.self_verify,
        gpu_key_memory_budget: config.gpu_key_memory_budget,
        pinned_pool_bytes: config.pinned_pool_bytes,
        host_memory_budget: config.host_memory_budget,
        proving_lanes: config.proving_lanes as usize,
        devices,
        idle: IdlePolicy {
            release_after: (config.idle_release_ms > 0).then(|| Duration::from_millis(config.idle_release_ms)),
            keep_post_keys: config.idle_keep_post_keys,
        },
        shape_cache,
        malloc_arena_max: config.malloc_arena_max,
        gpu_h_msm_chunk: config.gpu_h_msm_chunk,
        ..EngineConfig::default()
    })
}

/// Starts (or joins) the process's engine. A second call with the same configuration returns
/// another handle to the same engine; with a different one it fails with
/// CUZK_STATUS_ENGINE_STATE while any handle is alive.
///
/// `config`: NULL (all defaults) or a cuzk_config with its `struct_size` set, read no further
/// than that (`param_cache_dir` and `devices` are copied). `engine_out`: not NULL; receives the new handle
/// (the caller's, free with `cuzk_engine_free`), NULL on failure. `err`: NULL, or where to
/// store the call's error. All are read or written during the call only.
#[no_mangle]
pub extern "C" fn cuzk_engine_new(config: *const cuzk_config, engine_out: *mut *mut cuzk_engine, err: *mut *mut cuzk_error) -> Status {
    boundary(err, || {
        let out = required_mut(engine_out, "engine_out")?;
        *out = std::ptr::null_mut();
        let config = match read_sized(config, default_config())? {
            None => EngineConfig::default(),
            Some(config) => engine_config(&config)?,
        };
        *out = into_owned(cuzk_engine {
            engine: Engine::acquire(config)?,
        });
        Ok(())
    })
}

/// Releases a handle; the engine stops when the last handle is freed.
///
/// `engine`: NULL (ignored) or a handle from `cuzk_engine_new` not yet freed, which no call is
/// using any more; invalid afterwards.
#[no_mangle]
pub extern "C" fn cuzk_engine_free(engine: *mut cuzk_engine) {
    free_owned(engine);
}
