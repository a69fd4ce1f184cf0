//! Backends compute the MSMs of a synthesized circuit; everything around them (synthesis,
//! key handling, assembly, verification) is shared. The CPU backend runs everywhere; a GPU
//! backend plugs in behind the same trait.

pub mod cpu;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod host_copies;
pub mod pinned;
pub mod prep;
pub mod resident;
pub mod turn;

use std::sync::atomic::AtomicU64;

use rayon::ThreadPool;

use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::groth16::{MsmResults, ProvingKey, QuerySizes};
use crate::synthesis::SynthesizedCircuit;
pub use crate::timings::BackendKind;
use crate::timings::Timings;
pub use pinned::PoolUsage;
pub use resident::ResidentKey;
pub use turn::Priority;

/// Refuses to wait for a turn on one of `pool`'s workers (see [`turn`]).
pub(crate) fn check_not_a_worker(pool: &ThreadPool) -> Result<()> {
    match pool.current_thread_index() {
        Some(_) => Err(Error::internal(
            "a proof's MSMs were started on one of the engine's workers (they may wait for a turn the worker's own jobs hold up)",
        )),
        None => Ok(()),
    }
}

/// What a device holds and does (engine status).
#[derive(Clone, Debug, serde::Serialize)]
pub struct DeviceStatus {
    pub ordinal: i32,
    pub name: String,
    pub memory_total: u64,
    pub memory_free: u64,
    /// Resident keys and circuit matrices, plus the NTT and witness buffers.
    pub memory_used_by_cuzk: u64,
    pub ntt_buffer_bytes: u64,
    /// The device copy of the witness (when the device computes a, b, c).
    pub witness_buffer_bytes: u64,
    /// Device memory resident keys may take.
    pub key_budget: u64,
    /// Most recently used first.
    pub resident_keys: Vec<ResidentKey>,
    /// Circuits whose R1CS matrices are resident, most recently used first.
    pub resident_shapes: Vec<ResidentShape>,
    pub pinned_pool: PoolUsage,
    pub proofs_in_flight: u64,
    pub proofs_done: u64,
    /// Time calls have held the device (its turn: GPU phases, uploads, evictions) since the
    /// engine started; the busy fraction over a window is its growth over the window.
    pub busy_ns: u64,
    pub health: DeviceHealth,
    /// Sticky CUDA faults seen on the device (each one reset or quarantined it).
    pub faults: u64,
    /// The last fault's message.
    pub last_fault: Option<String>,
    /// How long the last recovery took: the reset and a new context (keys and matrices are
    /// uploaded again by the calls that next need them, timed there).
    pub last_recovery_ns: u64,
}

/// Whether a device takes calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceHealth {
    /// Usable (also after a fault it was recovered from).
    Healthy,
    /// A fault this process could not recover from: its calls go to the other devices, or to
    /// the CPU when none is left.
    Quarantined,
}

/// How the GPU backend decides, per MSM, whether batch addition of the bases whose scalar is 1
/// pays against leaving them in the tail MSM: by its cost model, or forced (for measuring the
/// model).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SplitPolicy {
    #[default]
    CostModel,
    Always,
    Never,
}

/// Which MSM implementation the GPU backend runs where both apply (env
/// CUZK_MSM=cuzk|cuzk-affine|sppark, for comparing them in one binary).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MsmChoice {
    /// cuzk's own (cuda/msm.cuh), measured faster at every size (2^16 … 2^27 points, G1 and
    /// G2): every MSM, and a full-width witness's H, L, A, B_G1 and B_G2 MSMs at the same time
    /// when each has at most 2^20 points.
    #[default]
    Cuzk,
    /// cuzk's, its G1 MSMs' bucket sums begun by batched-affine rounds (cuda/affine_rounds.cuh:
    /// a bucket's points added two by two in affine coordinates, one field inversion shared by
    /// a whole round); G2 and a small proof's MSMs at once as under `Cuzk`. Correct, but measured
    /// 1.17–1.44 × slower than `Cuzk` from 2^20 to 2^27 points (run 101, docs/PERFORMANCE.md):
    /// not the default; the base of the next attempt (rounds within a block).
    CuzkAffine,
    /// sppark's everywhere, one MSM after another.
    Sppark,
}

impl MsmChoice {
    /// cuzk's own MSM, with batched-affine rounds or without.
    pub(crate) fn is_cuzk(self) -> bool {
        matches!(self, MsmChoice::Cuzk | MsmChoice::CuzkAffine)
    }
}

/// A circuit's R1CS matrices resident on a device (engine status); `bytes` with its A's and B's
/// selections of the witness once a call of it sent them.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ResidentShape {
    pub constraints: u64,
    pub bytes: u64,
}

pub trait Backend: Send + Sync {
    fn kind(&self) -> BackendKind;

    /// Whether R1CS synthesis should leave a = A·z, b = B·z, c = C·z to this backend
    /// ([`crate::synthesis::Products::Deferred`]) instead of computing them on the host first.
    fn evaluates_products(&self) -> bool {
        false
    }

    /// The H, L, A, B_G1 and B_G2 sums of one circuit. Consumes the circuit so that its large
    /// vectors can be freed (or handed to the device) as soon as they are used. Adds the time
    /// of each phase to `timings` (the wait for the turn into `proving_wait_ns`) and says
    /// there which device ran it; stops with `Cancelled` between phases once `cancel` is set.
    /// Runs its parallel work in `pool` (the CPU backend its NTTs and MSMs in a pool of its
    /// own, see [`cpu::CpuBackend`]); call it from a thread that is not one of `pool`'s
    /// workers, since it may wait for a [`turn`] (an error otherwise).
    fn compute_msms(
        &self,
        key: &ProvingKey,
        circuit: SynthesizedCircuit,
        pool: &ThreadPool,
        cancel: &CancelToken,
        timings: &mut Timings,
    ) -> Result<MsmResults>;

    /// Makes `key` ready for calls of `class`: resident where the backend keeps keys (every
    /// device; `class` says which keys it may displace), else its points decoded in host memory
    /// (timed into `decode_ns`). Returns the upload time, 0 when it was already there or the
    /// backend keeps nothing. Called as `compute_msms` is.
    fn preload(&self, key: &ProvingKey, class: Priority, pool: &ThreadPool, decode_ns: &mut u64) -> Result<u64> {
        host_copies::host_points(key, class, pool, decode_ns)?;
        Ok(0)
    }

    /// The devices (ordinals) where the pipeline uploads `key` as a call of `partitions`
    /// partitions starts ([`Backend::upload_key_ahead`]): those it may use that lack the key
    /// and have room for it, when the call has a partition for each device it may use (with
    /// fewer, which devices its partitions take is not known ahead). None for backends that
    /// keep no keys.
    fn devices_to_upload_ahead(&self, _key: &ProvingKey, _partitions: usize) -> Vec<i32> {
        Vec::new()
    }

    /// Makes `key` resident on device `ordinal` for this call before its first partition there
    /// needs it (which then finds it, or waits for it), adding the upload's time to
    /// `upload_ns` before any partition can use the copy; stops between two parts of the
    /// upload once `cancel` is set. Called as `compute_msms` is.
    fn upload_key_ahead(
        &self,
        _key: &ProvingKey,
        _ordinal: i32,
        _pool: &ThreadPool,
        _cancel: Option<&CancelToken>,
        _upload_ns: &AtomicU64,
    ) -> Result<()> {
        Ok(())
    }

    /// Drops the resident copies of the key file `label`, and the matrices of circuit shapes
    /// the engine no longer holds; how many key copies there were.
    fn evict(&self, _label: &str) -> usize {
        0
    }

    /// Gives back the memory the backend keeps between calls (resident keys but those `keep`
    /// accepts by key file, matrices, buffers); what it freed. The CPU backend keeps nothing.
    fn release_memory(&self, _keep: &dyn Fn(&str) -> bool) -> BackendRelease {
        BackendRelease::default()
    }

    /// A view of this backend for one call: its GPU phases on the device `device` (an error
    /// when there is no such device) or the least busy one, ordered by `priority` against other
    /// calls' (see [`turn`]).
    fn for_call(&self, device: Option<u32>, priority: Priority) -> Result<Box<dyn Backend + '_>>;

    /// How many partitions of a call the pipeline proves at once (its proving lanes). The CPU
    /// backend proves one at a time, on all cores.
    fn proving_lanes(&self) -> usize {
        1
    }

    /// The devices and what they hold (empty for the CPU).
    fn devices(&self) -> Vec<DeviceStatus> {
        Vec::new()
    }

    /// Where the next calls find a split witness's scalar classes where both can: on the
    /// device (`on_device`) or on the host (`EngineConfig::prep_on_gpu` at the start; changed
    /// by benchmarks that compare the two in one process). The CPU backend has one place.
    #[cfg(feature = "internals")]
    fn set_prep_on_device(&self, _on_device: bool) {}

    /// The points of a chunk of H's MSM in the next calls (`EngineConfig::gpu_h_msm_chunk` at
    /// the start, 0 for its default; changed by benchmarks that compare chunk sizes in one
    /// process). The CPU backend's H is one MSM.
    #[cfg(feature = "internals")]
    fn set_h_msm_chunk(&self, _points: u64) {}

    /// The memory `compute_msms` takes for a circuit of a key with `sizes` whose shape (R1CS
    /// matrices, when the engine synthesizes with one) holds `shape_bytes` on the host.
    fn call_memory(&self, sizes: &QuerySizes, shape_bytes: u64) -> CallMemory;
}

/// What one `compute_msms` takes beside the synthesized circuit it is given (an upper bound,
/// `Engine::memory_estimate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallMemory {
    /// Host memory of the proving key's points: none for a key resident on the devices (its
    /// points are read from the parameter file as they are copied there), all of them for
    /// the CPU and for a streamed key.
    pub host_key_bytes: u64,
    /// Host memory a call adds while it uploads a resident key that is not on the devices yet
    /// (its parts read from the parameter file, two at a time).
    pub host_key_upload_bytes: u64,
    /// Host working memory of one proving lane: the scalar classes of the MSMs and the
    /// compact witness; on the CPU, the quotient's scalars too.
    pub host_lane_bytes: u64,
    /// Device memory kept between calls, per device: the proving key's copy (when it fits
    /// the key budget) and the circuit's matrices.
    pub device_resident_bytes: u64,
    /// Device memory of one proof on a device besides the resident part: the NTT and witness
    /// buffers and the largest MSM's scratch (the key's points of that MSM too, when the key
    /// is streamed).
    pub device_call_bytes: u64,
}

/// What a backend gave back (`Backend::release_memory`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackendRelease {
    /// Device memory freed, as the driver counts it (all devices).
    pub device_bytes: u64,
    /// Pinned host staging memory freed.
    pub pinned_bytes: u64,
}

impl std::ops::AddAssign for BackendRelease {
    fn add_assign(&mut self, other: Self) {
        self.device_bytes += other.device_bytes;
        self.pinned_bytes += other.pinned_bytes;
    }
}
