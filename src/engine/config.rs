//! The engine's configuration: every knob typed, environment overrides read once when the
//! engine starts (so the "same configuration" check of a second `cuzk_engine_new` sees them).

use std::path::PathBuf;

pub use crate::backend::{MsmChoice, SplitPolicy};
use crate::error::{Error, Result};

/// Where filecoin-proofs keeps parameters when FIL_PROOFS_PARAMETER_CACHE is not set.
pub const DEFAULT_PARAMETER_CACHE: &str = "/var/tmp/filecoin-proof-parameters";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// Directory of `v28-*.params` / `.vk` files; `None`: FIL_PROOFS_PARAMETER_CACHE, else
    /// /var/tmp/filecoin-proof-parameters.
    pub param_cache_dir: Option<PathBuf>,
    /// Never use a GPU even when one is present (env CUZK_NO_GPU=1 sets it too).
    pub cpu_only: bool,
    /// Worker threads for synthesis and CPU proving; 0 = one per core; at most [`MAX_THREADS`].
    pub num_threads: usize,
    /// Verify every proof before returning it (filecoin-proofs always does).
    pub self_verify: bool,
    /// Device memory per GPU for resident proving keys, in bytes; 0: 3/4 of the device's
    /// memory. Keys beyond it are evicted least recently used first; a key larger than it is
    /// streamed from host memory on every call.
    pub gpu_key_memory_budget: u64,
    /// Pinned host memory per GPU for staging copies, in bytes; 0: 128 MiB, also the least.
    pub pinned_pool_bytes: u64,
    /// Synthesize by building every linear combination (bellperson's way) instead of
    /// generating the witness and multiplying it with the circuit's R1CS matrices, extracted
    /// once per circuit shape. Both give the same a, b, c; this is for comparing them
    /// (env CUZK_SYNTHESIS=classic sets it too).
    pub classic_synthesis: bool,
    /// Host memory for synthesized partitions waiting to be proven (the prove pipeline, see
    /// `pipeline`), in bytes; 0: a quarter of the machine's memory. One partition at a time is
    /// always allowed.
    pub host_memory_budget: u64,
    /// Partitions one call proves at once (the pipeline's proving lanes); 0: the backend's
    /// choice (GPU: two per device the call may use, so that a sector's partitions spread over
    /// the GPUs and one partition's host work overlaps another's GPU phases; CPU: one); at
    /// most [`MAX_PROVING_LANES`].
    pub proving_lanes: usize,
    /// CUDA ordinals the GPU backend uses (after CUDA_VISIBLE_DEVICES), each once; empty:
    /// every device.
    pub devices: Vec<i32>,
    /// What is given back, and when, while no call is in flight (`idle`).
    pub idle: IdlePolicy,
    /// How the GPU decides, per MSM, whether batch addition of the bases whose scalar is 1
    /// pays (env CUZK_GPU_SPLIT=auto|always|never; forcing it is for measuring the model).
    pub gpu_split: SplitPolicy,
    /// Which MSM the GPU runs where both apply (env CUZK_MSM=cuzk|cuzk-affine|sppark).
    pub gpu_msm: MsmChoice,
    /// H's MSM on a GPU runs in chunks of at most this many points, between which a
    /// WinningPoSt may take the device (it waits for one chunk, not the whole MSM); 0: 2^26,
    /// a 32GiB partition's 2^27 points in two. By cuzk's MSM the chunks add into one set of
    /// buckets, so a chunk costs its launches and a pass over them (docs/PERFORMANCE.md). At
    /// least [`MIN_GPU_H_MSM_CHUNK`].
    pub gpu_h_msm_chunk: u64,
    /// Under cuzk's MSM, keep a resident key's H table on the GPU beside an H query of up to
    /// 2^22 points (a 2KiB PoRep's, a 32GiB WinningPoSt's), where it fits without streaming or
    /// evicting a key: a copy of the query for each window of H's digits, made on the device
    /// at upload (cuda/h_table.cuh), so that H's MSM sums one window instead of ⌊255/c⌋ + 1.
    /// At 2^22 points it is 12 copies (4.8 GB), reported as the key's `table_bytes` in the
    /// status (env CUZK_H_TABLE=on|off). Off by default until the GPU target has run with it
    /// (docs/PERFORMANCE.md).
    pub gpu_h_table: bool,
    /// On the R1CS path with a GPU, compute a = A·z, b = B·z, c = C·z on the device from its
    /// resident copy of the circuit's matrices (true), or on the host and send them (env
    /// CUZK_SPMV=device|host).
    pub products_on_gpu: bool,
    /// With a GPU, find a witness's scalar classes (prep_msm: 0, 1, full-width) on the device,
    /// from its copy of the witness, where it can: a witness of mostly 0s and 1s whose a, b, c
    /// the device computes, a resident key, H's MSM in chunks (a 32GiB PoRep or update
    /// partition); else, or when false, on the host (env CUZK_PREP=device|host).
    pub prep_on_gpu: bool,
    /// Check every parameter file against its digest before first use, as filecoin-proofs
    /// does (env FIL_PROOFS_VERIFY_PRODUCTION_PARAMS=1|true sets it, the same variable): a
    /// file not in the table, or whose BLAKE2b differs, is PARAMETERS_INVALID. Hashing reads
    /// the whole file once per engine (≈ 45 GB for a 32GiB PoRep key).
    pub verify_param_digests: bool,
    /// The digest table: a file of parameters.json's format (env CUZK_PARAMETERS_JSON), e.g.
    /// for parameters of one's own setup; None: filecoin-proofs' parameters.json.
    pub param_digests_file: Option<PathBuf>,
    /// Where circuit shapes are kept between processes, so that a new process reads a
    /// circuit's matrices instead of extracting them (`shapes`).
    pub shape_cache: ShapeCacheLocation,
    /// Caps glibc malloc's arenas at this many when the engine starts (`mallopt(M_ARENA_MAX)`,
    /// what MALLOC_ARENA_MAX does from the environment); 0: the process's allocator is left as
    /// it is. glibc gives each thread that contends an arena of its own (up to 8 per core) and
    /// keeps their freed pages, so a long-running process's RSS wanders by a few hundred MiB
    /// (docs/RELIABILITY.md, soak); 2 keeps it within 64 MiB. The setting is the whole
    /// process's and outlives the engine; it binds arenas created after it, so set it before
    /// the process has many threads. Not glibc: any value but 0 is INVALID_ARGUMENT. With the
    /// `jemalloc` feature (the default) cuzk's Rust allocations are jemalloc's
    /// (src/allocator.rs), and this bounds what glibc serves: the C and CUDA side's, the host
    /// program's.
    pub malloc_arena_max: u32,
}

/// Where the engine keeps circuit shapes on disk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ShapeCacheLocation {
    /// `cuzk-circuit-shapes` beside the parameter directory (/var/tmp/cuzk-circuit-shapes for
    /// /var/tmp/filecoin-proof-parameters), which may be read-only.
    #[default]
    NextToParameters,
    Dir(PathBuf),
    /// Nowhere: every process extracts the shapes it needs.
    Off,
}

/// The directory `ShapeCacheLocation::NextToParameters` names.
pub const SHAPE_CACHE_DIR_NAME: &str = "cuzk-circuit-shapes";

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            param_cache_dir: None,
            cpu_only: false,
            num_threads: 0,
            self_verify: true,
            gpu_key_memory_budget: 0,
            pinned_pool_bytes: 0,
            classic_synthesis: false,
            host_memory_budget: 0,
            proving_lanes: 0,
            devices: Vec::new(),
            idle: IdlePolicy::default(),
            gpu_split: SplitPolicy::CostModel,
            gpu_msm: MsmChoice::Cuzk,
            gpu_h_msm_chunk: 0,
            gpu_h_table: false,
            products_on_gpu: true,
            prep_on_gpu: true,
            verify_param_digests: false,
            param_digests_file: None,
            shape_cache: ShapeCacheLocation::NextToParameters,
            malloc_arena_max: 0,
        }
    }
}

/// Memory given back while the engine is idle: after `release_after` with no call in flight,
/// the proving keys (host and devices), the circuits' shapes and matrices, the devices' NTT
/// buffers and pinned staging buffers, as `Engine::release_memory` does; the keys of the PoSt
/// kinds stay when `keep_post_keys` (their deadlines leave no time to read a key again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdlePolicy {
    /// None: nothing is released for idleness (only host memory the allocator keeps free is
    /// returned, once the engine has been idle for a second).
    pub release_after: Option<std::time::Duration>,
    pub keep_post_keys: bool,
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy {
            release_after: None,
            keep_post_keys: true,
        }
    }
}

/// The most devices a configuration may list.
pub const MAX_DEVICES: usize = 64;

/// The most worker threads a configuration may ask for (more than any machine's cores): each of
/// the engine's thread pools starts this many.
pub const MAX_THREADS: usize = 4096;

/// The fewest points of a chunk of H's MSM a configuration may ask for (`gpu_h_msm_chunk`):
/// fewer would make a 32GiB partition's MSM thousands of launches.
pub const MIN_GPU_H_MSM_CHUNK: u64 = 1 << 16;

/// The most proving lanes a configuration may ask for: four per device of the most devices a
/// configuration may list. Every call starts a thread per lane.
pub const MAX_PROVING_LANES: usize = 4 * MAX_DEVICES;

impl EngineConfig {
    /// The configuration the engine runs with: defaults filled in (FIL_PROOFS_PARAMETER_CACHE
    /// when no directory is given) and [`Self::with_environment`] applied.
    pub(crate) fn resolved(mut self) -> Result<Self> {
        self.check_devices()?;
        self.check_threads()?;
        self.check_gpu_h_msm_chunk()?;
        if self.param_cache_dir.is_none() {
            let from_env = std::env::var_os("FIL_PROOFS_PARAMETER_CACHE").filter(|v| !v.is_empty());
            self.param_cache_dir = Some(from_env.map(PathBuf::from).unwrap_or_else(|| DEFAULT_PARAMETER_CACHE.into()));
        }
        if self.num_threads == 0 {
            self.num_threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        }
        if self.host_memory_budget == 0 {
            self.host_memory_budget = crate::host_memory::physical_memory() / 4;
        }
        self.with_environment()
    }

    /// This configuration with the environment's overrides applied: CUZK_NO_GPU=1|0,
    /// CUZK_SYNTHESIS=classic|r1cs, CUZK_GPU_SPLIT=auto|always|never, CUZK_MSM=cuzk|cuzk-affine|sppark,
    /// CUZK_SPMV=device|host, CUZK_PREP=device|host, CUZK_H_TABLE=on|off,
    /// FIL_PROOFS_VERIFY_PRODUCTION_PARAMS=1|0 (and true|false, yes|no, on|off),
    /// CUZK_PARAMETERS_JSON=FILE, each when set. A value it does not know is an error, not silently ignored.
    pub fn with_environment(mut self) -> Result<Self> {
        if let Some(no_gpu) = env_knob("CUZK_NO_GPU", &[("1", true), ("0", false)])? {
            self.cpu_only |= no_gpu;
        }
        if let Some(classic) = env_knob("CUZK_SYNTHESIS", &[("classic", true), ("r1cs", false)])? {
            self.classic_synthesis |= classic;
        }
        if let Some(split) = env_knob(
            "CUZK_GPU_SPLIT",
            &[
                ("auto", SplitPolicy::CostModel),
                ("always", SplitPolicy::Always),
                ("never", SplitPolicy::Never),
            ],
        )? {
            self.gpu_split = split;
        }
        if let Some(msm) = env_knob(
            "CUZK_MSM",
            &[
                ("cuzk", MsmChoice::Cuzk),
                ("cuzk-affine", MsmChoice::CuzkAffine),
                ("sppark", MsmChoice::Sppark),
            ],
        )? {
            self.gpu_msm = msm;
        }
        if let Some(on_device) = env_knob("CUZK_SPMV", &[("device", true), ("host", false)])? {
            self.products_on_gpu = on_device;
        }
        if let Some(on_device) = env_knob("CUZK_PREP", &[("device", true), ("host", false)])? {
            self.prep_on_gpu = on_device;
        }
        if let Some(table) = env_knob("CUZK_H_TABLE", &[("on", true), ("off", false)])? {
            self.gpu_h_table = table;
        }
        let truth = [
            ("1", true),
            ("true", true),
            ("yes", true),
            ("on", true),
            ("0", false),
            ("false", false),
            ("no", false),
            ("off", false),
        ];
        if let Some(verify) = env_knob("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS", &truth)? {
            self.verify_param_digests |= verify;
        }
        if let Some(table) = std::env::var_os("CUZK_PARAMETERS_JSON").filter(|v| !v.is_empty()) {
            self.param_digests_file = Some(table.into());
        }
        Ok(self)
    }

    /// INVALID_ARGUMENT for a device list the backend could not honour.
    fn check_devices(&self) -> Result<()> {
        if self.devices.is_empty() {
            return Ok(());
        }
        if self.cpu_only {
            return Err(Error::invalid(format!("devices {:?} listed with cpu_only", self.devices)));
        }
        if self.devices.len() > MAX_DEVICES {
            return Err(Error::invalid(format!("{} devices listed, at most {MAX_DEVICES}", self.devices.len())));
        }
        for (i, &d) in self.devices.iter().enumerate() {
            if d < 0 {
                return Err(Error::invalid(format!("devices[{i}] is {d}: CUDA ordinals are not negative")));
            }
            if self.devices[..i].contains(&d) {
                return Err(Error::invalid(format!("devices[{i}]: device {d} is listed twice")));
            }
        }
        Ok(())
    }

    /// INVALID_ARGUMENT for thread counts past their limits: they would start threads by the
    /// thousands (or fail to), with the engine or with every call.
    fn check_threads(&self) -> Result<()> {
        if self.num_threads > MAX_THREADS {
            return Err(Error::invalid(format!("num_threads is {}, at most {MAX_THREADS}", self.num_threads)));
        }
        if self.proving_lanes > MAX_PROVING_LANES {
            return Err(Error::invalid(format!(
                "proving_lanes is {}, at most {MAX_PROVING_LANES}",
                self.proving_lanes
            )));
        }
        Ok(())
    }

    /// INVALID_ARGUMENT for H's MSM chunks below [`MIN_GPU_H_MSM_CHUNK`] points.
    pub(crate) fn check_gpu_h_msm_chunk(&self) -> Result<()> {
        match self.gpu_h_msm_chunk {
            0 | MIN_GPU_H_MSM_CHUNK.. => Ok(()),
            n => Err(Error::invalid(format!(
                "gpu_h_msm_chunk is {n} points, at least {MIN_GPU_H_MSM_CHUNK} (or 0 for the default)"
            ))),
        }
    }

    pub fn param_dir(&self) -> PathBuf {
        self.param_cache_dir.clone().unwrap_or_else(|| DEFAULT_PARAMETER_CACHE.into())
    }

    /// Applies `malloc_arena_max` to the process's allocator (nothing when it is 0).
    pub(crate) fn apply_malloc_arena_max(&self) -> Result<()> {
        if self.malloc_arena_max == 0 {
            return Ok(());
        }
        let arenas = i32::try_from(self.malloc_arena_max)
            .map_err(|_| Error::invalid(format!("malloc_arena_max {} is above {}", self.malloc_arena_max, i32::MAX)))?;
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // SAFETY: mallopt sets one of the allocator's parameters, under its own lock.
            if unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) } != 1 {
                return Err(Error::internal(format!("mallopt(M_ARENA_MAX, {arenas}) failed")));
            }
            log::info!("glibc malloc arenas capped at {arenas}");
            Ok(())
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        Err(Error::invalid(format!(
            "malloc_arena_max {arenas}: the process's allocator is not glibc's"
        )))
    }

    /// The directory of the shape cache, None when it is off.
    pub fn shape_cache_dir(&self) -> Option<PathBuf> {
        match &self.shape_cache {
            ShapeCacheLocation::NextToParameters => {
                let params = self.param_dir();
                Some(params.parent().unwrap_or(&params).join(SHAPE_CACHE_DIR_NAME))
            }
            ShapeCacheLocation::Dir(dir) => Some(dir.clone()),
            ShapeCacheLocation::Off => None,
        }
    }
}

/// The value of the environment variable `name` among `choices`; None when it is unset or
/// empty, an error naming the choices when it is anything else.
fn env_knob<T: Copy>(name: &str, choices: &[(&str, T)]) -> Result<Option<T>> {
    let value = match std::env::var(name) {
        Err(_) => return Ok(None),
        Ok(v) if v.is_empty() => return Ok(None),
        Ok(v) => v,
    };
    match choices.iter().find(|(text, _)| *text == value) {
        Some((_, v)) => Ok(Some(*v)),
        None => {
            let names: Vec<&str> = choices.iter().map(|(text, _)| *text).collect();
            Err(Error::invalid(format!("{name}={value:?}: expected one of {names:?}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h_msm_chunks_of_the_default_or_at_least_the_least_are_taken() {
        let chunk = |points| EngineConfig {
            gpu_h_msm_chunk: points,
            ..EngineConfig::default()
        };
        for points in [0, MIN_GPU_H_MSM_CHUNK, 1 << 26, u64::MAX] {
            assert!(chunk(points).check_gpu_h_msm_chunk().is_ok(), "{points}");
        }
        for points in [1, MIN_GPU_H_MSM_CHUNK - 1] {
            let e = chunk(points).check_gpu_h_msm_chunk().unwrap_err();
            assert_eq!(e.status, crate::error::Status::InvalidArgument);
        }
    }
}
