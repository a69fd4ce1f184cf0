//! The GPU backend: H (7 NTTs + MSM), batch addition and tail MSMs of every query, B_G2
//! included, on CUDA devices through cuda/ (sppark's kernels). Prep_msm (the 0/1/tail split)
//! is shared with the CPU backend, so both feed their MSMs the same classes.
//!
//! Per device, made once: a context (NTT buffers, copy threads), a staging pool of pinned
//! host buffers, and a budgeted cache of proving keys resident in device memory, read in
//! place by the MSMs. A key larger than the budget is streamed from host memory per call.
//! GPU phases of one device run one call at a time (the device turn); uploads and evictions
//! happen inside it, so no other call holds a key copy while one is freed or made.

// sppark's device registry (select_gpu, ngpus) is compiled by its build script into its rlib:
// name the crate so that it is linked.
extern crate sppark;

use std::borrow::Cow;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use group::prime::PrimeCurveAffine;
use group::Group;
use rayon::prelude::*;
use rayon::ThreadPool;

use super::cpu::Domain;
use super::prep::{ClassifiedScalars, PreparedMsms};
use super::turn::{Priority, Turn};
use super::{check_not_a_worker, Backend, BackendKind, DeviceStatus, ResidentShape};
use crate::backend::pinned::{BufferPool, PinnedMemory, PooledBuffer};
use crate::backend::resident::{KeyRef, Residency, ResidentCache};
use crate::cancel::CancelToken;
use crate::error::{Error, Result, Status};
use crate::groth16::{check_key_fits, MsmResults, ProvingKey};
use crate::r1cs::{Assignment, CircuitShape, CompactWitness, SparseMatrix};
use crate::synthesis::{Products, SynthesizedCircuit};
use crate::timings::{nanos, timed, KeyResidency, Timings};

mod sys {
    //! cuda/cuzk_gpu.h
    use std::ffi::{c_char, c_int, c_void};

    pub const OK: c_int = 0;
    pub const OUT_OF_MEMORY: c_int = 2;

    #[repr(C)]
    #[derive(Default)]
    pub struct G1 {
        pub x: [u64; 6],
        pub y: [u64; 6],
        pub infinity: u32,
        pub padding: u32,
    }

    #[repr(C)]
    #[derive(Default)]
    pub struct G2 {
        pub x: [u64; 12],
        pub y: [u64; 12],
        pub infinity: u32,
        pub padding: u32,
    }

    #[repr(C)]
    #[derive(Default)]
    pub struct HTimes {
        pub h2d_ns: u64,
        pub spmv_ns: u64,
        pub ntt_ns: u64,
        pub msm_ns: u64,
    }

    #[repr(C)]
    pub struct Message {
        pub text: [c_char; 512],
    }

    pub enum Context {}
    pub enum Key {}
    pub enum Shape {}

    #[repr(C)]
    pub struct Staging {
        pub buffers: [*mut c_void; 2],
        pub bytes: usize,
    }

    pub const QUERY_H: u32 = 0;
    pub const QUERY_L: u32 = 1;
    pub const QUERY_A: u32 = 2;
    pub const QUERY_B_G1: u32 = 3;
    pub const QUERY_B_G2: u32 = 4;
    pub const QUERIES: usize = 5;

    #[repr(C)]
    pub struct Points {
        pub key: *const Key,
        pub query: u32,
        pub host: *const c_void,
        pub n: usize,
    }

    #[repr(C)]
    pub struct KeyPoints {
        pub host: [*const c_void; QUERIES],
        pub n: [usize; QUERIES],
    }

    #[repr(C)]
    #[derive(Default)]
    pub struct Memory {
        pub total: u64,
        pub free: u64,
        pub ntt_buffer_bytes: u64,
        pub witness_buffer_bytes: u64,
    }

    #[repr(C)]
    pub struct CsrHost {
        pub row_starts: *const u32,
        pub columns: *const u32,
        pub coefficient_ids: *const u32,
        pub nonzeros: usize,
    }

    #[repr(C)]
    pub struct ShapeHost {
        pub matrices: [CsrHost; 3],
        pub coefficients: *const c_void,
        pub num_coefficients: usize,
        pub rows: usize,
        pub variables: usize,
    }

    #[repr(C)]
    pub struct Witness {
        pub kinds: *const u64,
        pub full_offsets: *const u32,
        pub full: *const c_void,
        pub num_full: usize,
        pub n: usize,
    }

    extern "C" {
        pub fn cuzk_gpu_device_count(count: *mut c_int, msg: *mut Message) -> c_int;
        pub fn cuzk_gpu_device_info(device: c_int, name: *mut c_char, total_memory: *mut u64, msg: *mut Message) -> c_int;
        pub fn cuzk_gpu_context_new(device: c_int, out: *mut *mut Context, msg: *mut Message) -> c_int;
        pub fn cuzk_gpu_context_free(ctx: *mut Context);
        pub fn cuzk_gpu_memory_info(ctx: *mut Context, out: *mut Memory, msg: *mut Message) -> c_int;
        pub fn cuzk_gpu_pinned_alloc(bytes: usize, out: *mut *mut c_void, msg: *mut Message) -> c_int;
        pub fn cuzk_gpu_pinned_free(ptr: *mut c_void);
        pub fn cuzk_gpu_key_upload(
            ctx: *mut Context,
            points: *const KeyPoints,
            staging: *const Staging,
            out: *mut *mut Key,
            msg: *mut Message,
        ) -> c_int;
        pub fn cuzk_gpu_key_free(key: *mut Key);
        pub fn cuzk_gpu_quotient_msm(
            ctx: *mut Context,
            a: *const c_void,
            b: *const c_void,
            c: *const c_void,
            n: usize,
            lg_domain: u32,
            h_points: *const Points,
            staging: *const Staging,
            out: *mut G1,
            times: *mut HTimes,
            msg: *mut Message,
        ) -> c_int;
        pub fn cuzk_gpu_shape_upload(
            ctx: *mut Context,
            shape: *const ShapeHost,
            staging: *const Staging,
            out: *mut *mut Shape,
            bytes: *mut u64,
            msg: *mut Message,
        ) -> c_int;
        pub fn cuzk_gpu_shape_free(shape: *mut Shape);
        pub fn cuzk_gpu_quotient_msm_r1cs(
            ctx: *mut Context,
            shape: *const Shape,
            witness: *const Witness,
            lg_domain: u32,
            h_points: *const Points,
            staging: *const Staging,
            out: *mut G1,
            times: *mut HTimes,
            msg: *mut Message,
        ) -> c_int;
        pub fn cuzk_gpu_batch_add(
            ctx: *mut Context,
            points: *const Points,
            bitmap: *const u32,
            staging: *const Staging,
            out: *mut G1,
            msg: *mut Message,
        ) -> c_int;
        pub fn cuzk_gpu_msm(
            ctx: *mut Context,
            points: *const Points,
            indices: *const u32,
            scalars: *const c_void,
            n: usize,
            out: *mut G1,
            msg: *mut Message,
        ) -> c_int;
        pub fn cuzk_gpu_batch_add_g2(
            ctx: *mut Context,
            points: *const Points,
            bitmap: *const u32,
            staging: *const Staging,
            out: *mut G2,
            msg: *mut Message,
        ) -> c_int;
        pub fn cuzk_gpu_msm_g2(
            ctx: *mut Context,
            points: *const Points,
            indices: *const u32,
            scalars: *const c_void,
            n: usize,
            out: *mut G2,
            msg: *mut Message,
        ) -> c_int;
    }
}

/// Calls a cuda/ entry point and turns its code and message into an [`Error`].
fn call(what: &str, f: impl FnOnce(*mut sys::Message) -> i32) -> Result<()> {
    let mut msg = sys::Message { text: [0; 512] };
    let code = f(&mut msg);
    if code == sys::OK {
        return Ok(());
    }
    // SAFETY: the C side always NUL-terminates the message buffer.
    let text = unsafe { CStr::from_ptr(msg.text.as_ptr()) }.to_string_lossy().into_owned();
    let status = if code == sys::OUT_OF_MEMORY {
        Status::OutOfMemory
    } else {
        Status::GpuError
    };
    Err(Error::new(status, format!("{what}: {text}")))
}

fn to_projective(p: &sys::G1) -> G1Projective {
    if p.infinity != 0 {
        return G1Projective::identity();
    }
    G1Affine::from_raw_unchecked(Fp::from_raw_unchecked(p.x), Fp::from_raw_unchecked(p.y), false).to_curve()
}

fn to_projective_g2(p: &sys::G2) -> G2Projective {
    if p.infinity != 0 {
        return G2Projective::identity();
    }
    let fp = |limbs: &[u64]| Fp::from_raw_unchecked(limbs.try_into().expect("6 limbs"));
    let fp2 = |c: &[u64; 12]| Fp2::new(fp(&c[..6]), fp(&c[6..]));
    G2Affine::from_raw_unchecked(fp2(&p.x), fp2(&p.y), false).to_curve()
}

/// Number of CUDA devices usable by this process (0 without a driver or device).
pub fn device_count() -> Result<usize> {
    let mut count = 0;
    // SAFETY: out-pointers to locals.
    call("counting CUDA devices", |msg| unsafe { sys::cuzk_gpu_device_count(&mut count, msg) })?;
    Ok(count.max(0) as usize)
}

/// CUDA's page-locked host allocator, for the staging pools.
struct CudaPinned;

impl PinnedMemory for CudaPinned {
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        call("allocating pinned host memory", |msg| unsafe {
            sys::cuzk_gpu_pinned_alloc(bytes, &mut ptr, msg)
        })?;
        NonNull::new(ptr.cast()).ok_or_else(|| Error::new(Status::OutOfMemory, "cudaHostAlloc returned NULL"))
    }

    unsafe fn free(&self, ptr: NonNull<u8>, _bytes: usize) {
        sys::cuzk_gpu_pinned_free(ptr.as_ptr().cast());
    }
}

/// One staging buffer of the pool: two halves, filled and sent alternately.
fn staging(buffer: &PooledBuffer<'_, CudaPinned>) -> sys::Staging {
    let half = buffer.len() / 2;
    // SAFETY: both halves lie inside the buffer.
    let second = unsafe { buffer.as_ptr().add(half) };
    sys::Staging {
        buffers: [buffer.as_ptr().cast(), second.cast()],
        bytes: half,
    }
}

/// A device context (cuda/context.cuh).
struct Context(NonNull<sys::Context>);

// SAFETY: the context is used by one call at a time (the device turn), from any thread.
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

impl Context {
    fn new(device: i32) -> Result<Self> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: out-pointer to a local.
        call("creating the device context", |msg| unsafe {
            sys::cuzk_gpu_context_new(device, &mut ctx, msg)
        })?;
        NonNull::new(ctx).map(Context).ok_or_else(|| Error::internal("device context is NULL"))
    }

    fn ptr(&self) -> *mut sys::Context {
        self.0.as_ptr()
    }

    fn memory(&self) -> Result<sys::Memory> {
        let mut memory = sys::Memory::default();
        // SAFETY: live context, out-pointer to a local.
        call("querying device memory", |msg| unsafe {
            sys::cuzk_gpu_memory_info(self.ptr(), &mut memory, msg)
        })?;
        Ok(memory)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: made by cuzk_gpu_context_new, freed once.
        unsafe { sys::cuzk_gpu_context_free(self.ptr()) }
    }
}

/// A proving key's points in device memory (cuda/device_key.cuh).
struct DeviceKey(NonNull<sys::Key>);

// SAFETY: immutable device memory, read by one call at a time.
unsafe impl Send for DeviceKey {}
unsafe impl Sync for DeviceKey {}

impl DeviceKey {
    fn upload(ctx: &Context, key: &ProvingKey, staging: &sys::Staging) -> Result<Self> {
        let queries: [(*const c_void, usize); sys::QUERIES] = [
            (key.h.as_ptr().cast(), key.h.len()),
            (key.l.as_ptr().cast(), key.l.len()),
            (key.a.as_ptr().cast(), key.a.len()),
            (key.b_g1.as_ptr().cast(), key.b_g1.len()),
            (key.b_g2.as_ptr().cast(), key.b_g2.len()),
        ];
        let points = sys::KeyPoints {
            host: queries.map(|q| q.0),
            n: queries.map(|q| q.1),
        };
        let mut out = std::ptr::null_mut();
        // SAFETY: the key's vectors hold the given numbers of blst affine points and outlive
        // the synchronous call; the staging halves belong to this call.
        call("uploading the proving key", |msg| unsafe {
            sys::cuzk_gpu_key_upload(ctx.ptr(), &points, staging, &mut out, msg)
        })?;
        NonNull::new(out).map(DeviceKey).ok_or_else(|| Error::internal("device key is NULL"))
    }
}

impl Drop for DeviceKey {
    fn drop(&mut self) {
        // SAFETY: made by cuzk_gpu_key_upload, freed once.
        unsafe { sys::cuzk_gpu_key_free(self.0.as_ptr()) }
    }
}

/// A circuit's R1CS matrices in device memory (cuda/spmv.cuh).
struct DeviceShape {
    ptr: NonNull<sys::Shape>,
    bytes: u64,
}

// SAFETY: immutable device memory, read by one call at a time (the device turn).
unsafe impl Send for DeviceShape {}
unsafe impl Sync for DeviceShape {}

impl DeviceShape {
    fn upload(ctx: &Context, shape: &CircuitShape, staging: &sys::Staging) -> Result<Self> {
        let csr = |m: &SparseMatrix| sys::CsrHost {
            row_starts: m.row_starts().as_ptr(),
            columns: m.columns().as_ptr(),
            coefficient_ids: m.coefficient_ids().as_ptr(),
            nonzeros: m.num_nonzeros(),
        };
        let host = sys::ShapeHost {
            matrices: [csr(shape.a()), csr(shape.b()), csr(shape.c())],
            coefficients: shape.coefficients().as_ptr().cast(),
            num_coefficients: shape.coefficients().len(),
            rows: shape.num_constraints(),
            variables: shape.num_inputs() + shape.num_aux(),
        };
        let (mut out, mut bytes) = (std::ptr::null_mut(), 0u64);
        // SAFETY: the shape's vectors hold the lengths given and outlive the synchronous call.
        call("uploading the circuit's R1CS matrices", |msg| unsafe {
            sys::cuzk_gpu_shape_upload(ctx.ptr(), &host, staging, &mut out, &mut bytes, msg)
        })?;
        let ptr = NonNull::new(out).ok_or_else(|| Error::internal("device shape is NULL"))?;
        Ok(DeviceShape { ptr, bytes })
    }
}

impl Drop for DeviceShape {
    fn drop(&mut self) {
        // SAFETY: made by cuzk_gpu_shape_upload, freed once.
        unsafe { sys::cuzk_gpu_shape_free(self.ptr.as_ptr()) }
    }
}

/// Device memory a call still allocates beyond the resident data: sppark's MSM scratch and
/// the compact witness. Matrices are made resident only with this much left free.
const CALL_HEADROOM_BYTES: u64 = 4 << 30;

/// Pinned staging per device unless configured: one buffer of two 32 MiB halves is what one
/// call uses at a time (GPU phases of a device are ordered); the second serves a key upload
/// from another thread.
pub const DEFAULT_PINNED_POOL_BYTES: u64 = 128 << 20;
const STAGING_BUFFER_BYTES: usize = 64 << 20;

/// The GPU backend's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuConfig {
    /// CUDA ordinals to use (CUDA_VISIBLE_DEVICES applies first); empty: every device.
    pub devices: Vec<i32>,
    /// Device memory per device for resident proving keys; 0: 3/4 of the device's memory
    /// (the rest is for the NTT buffers and MSM scratch of the calls).
    pub key_memory_budget: u64,
    /// Pinned host memory per device for staging copies; 0: DEFAULT_PINNED_POOL_BYTES.
    pub pinned_pool_bytes: u64,
    pub split: SplitPolicy,
    /// Compute a = A·z, b = B·z, c = C·z on the device from resident matrices (R1CS
    /// synthesis), sending only the compact witness; false: on the host, a, b, c sent.
    pub products_on_device: bool,
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            devices: Vec::new(),
            key_memory_budget: 0,
            pinned_pool_bytes: 0,
            split: SplitPolicy::CostModel,
            products_on_device: true,
        }
    }
}

impl GpuConfig {
    /// `CUZK_SPMV=device|host` (device when unset): where a, b, c are computed, for measuring
    /// one against the other.
    pub fn products_on_device_from_env() -> Result<bool> {
        match std::env::var("CUZK_SPMV").as_deref() {
            Err(_) | Ok("") | Ok("device") => Ok(true),
            Ok("host") => Ok(false),
            Ok(other) => Err(Error::invalid(format!("CUZK_SPMV={other:?}: expected device or host"))),
        }
    }
}

/// One CUDA device and what the backend keeps on it.
struct Device {
    ordinal: i32,
    name: String,
    ctx: Context,
    /// GPU phases of one device run one call at a time, high-priority calls first (see
    /// `backend::turn`); waiting for it is the partition's proving wait.
    turn: Turn,
    keys: ResidentCache<DeviceKey>,
    /// Circuit shapes whose matrices are resident, most recently used first; the shape is
    /// held so that its address identifies it.
    shapes: Mutex<Vec<(Arc<CircuitShape>, DeviceShape)>>,
    staging: BufferPool<CudaPinned>,
    in_flight: AtomicUsize,
    proofs: AtomicU64,
}

impl Device {
    fn open(ordinal: i32, config: &GpuConfig) -> Result<Self> {
        let mut name = [0 as c_char; 256];
        let mut memory = 0u64;
        // SAFETY: out-pointers to locals of the sizes the C side writes.
        call("querying the CUDA device", |msg| unsafe {
            sys::cuzk_gpu_device_info(ordinal, name.as_mut_ptr(), &mut memory, msg)
        })?;
        // SAFETY: NUL-terminated by the C side.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
        let budget = if config.key_memory_budget > 0 {
            config.key_memory_budget
        } else {
            memory / 4 * 3
        };
        let pool = if config.pinned_pool_bytes > 0 {
            config.pinned_pool_bytes
        } else {
            DEFAULT_PINNED_POOL_BYTES
        };
        log::info!(
            "cuzk GPU device {ordinal}: {name}, {} GiB, key budget {} GiB, pinned pool {} MiB, 0/1 split: {:?}",
            memory >> 30,
            budget >> 30,
            pool >> 20,
            config.split
        );
        Ok(Device {
            ordinal,
            name,
            ctx: Context::new(ordinal)?,
            turn: Turn::default(),
            keys: ResidentCache::new(budget),
            shapes: Mutex::new(Vec::new()),
            staging: BufferPool::new(CudaPinned, STAGING_BUFFER_BYTES, pool as usize),
            in_flight: AtomicUsize::new(0),
            proofs: AtomicU64::new(0),
        })
    }

    /// The key's copy in this device's memory, uploaded now if it is not there (timed into
    /// `srs_upload_ns`); `None` when it is larger than the budget. Call inside the turn.
    fn resident_key(&self, key: &ProvingKey, staging: &sys::Staging, t: &mut Timings) -> Result<Option<Arc<DeviceKey>>> {
        let key_ref = KeyRef {
            id: key.id(),
            label: key.label().to_string(),
            bytes: key.points_bytes(),
            alive: key.liveness(),
        };
        let start = Instant::now();
        let residency = match self.keys.get(&key_ref, || DeviceKey::upload(&self.ctx, key, staging)) {
            // The budget is a plan; the device may hold less (other processes use it too).
            Err(e) if e.status == Status::OutOfMemory => {
                log::warn!(
                    "{} does not fit on device {} after all ({}): streamed",
                    key.label(),
                    self.ordinal,
                    e.message
                );
                Residency::TooLarge
            }
            other => other?,
        };
        match residency {
            Residency::Resident { copy, loaded } => {
                if loaded {
                    t.srs_upload_ns += nanos(start.elapsed());
                    log::info!(
                        "{} resident on device {} ({} MiB) in {:.2?}",
                        key.label(),
                        self.ordinal,
                        key_ref.bytes >> 20,
                        start.elapsed()
                    );
                }
                t.key_residency = KeyResidency::Resident as u32;
                Ok(Some(copy))
            }
            Residency::TooLarge => {
                log::debug!(
                    "{} ({} MiB) exceeds device {}'s key budget: streamed",
                    key.label(),
                    key_ref.bytes >> 20,
                    self.ordinal
                );
                t.key_residency = KeyResidency::Streamed as u32;
                Ok(None)
            }
        }
    }

    /// Makes `shape`'s matrices resident on this device (timed into `shape_upload_ns`) unless
    /// they are already; false when they do not fit beside the key, the buffers of a domain of
    /// 2^lg_domain and the call's headroom, other shapes evicted first. Call inside the turn.
    fn make_shape_resident(&self, shape: &Arc<CircuitShape>, lg_domain: u32, staging: &sys::Staging, t: &mut Timings) -> Result<bool> {
        let mut shapes = self.shapes.lock().unwrap_or_else(|p| p.into_inner());
        // A shape only this cache still holds was dropped by the engine (its key evicted): it
        // can never be asked for again, so its device memory goes now.
        shapes.retain(|(s, _)| Arc::strong_count(s) > 1);
        if let Some(i) = shapes.iter().position(|(s, _)| Arc::ptr_eq(s, shape)) {
            let entry = shapes.remove(i);
            shapes.insert(0, entry);
            return Ok(true);
        }
        let memory = self.ctx.memory()?;
        let scalars = |n: u64| 32 * n;
        let buffers = scalars(3 << lg_domain).saturating_sub(memory.ntt_buffer_bytes)
            + scalars((shape.num_inputs() + shape.num_aux()) as u64).saturating_sub(memory.witness_buffer_bytes);
        let needed = shape.size_bytes() as u64 + buffers + CALL_HEADROOM_BYTES;
        let mut free = memory.free;
        while free < needed {
            let Some((_, evicted)) = shapes.pop() else {
                return Ok(false);
            };
            free += evicted.bytes;
        }
        let start = Instant::now();
        let uploaded = match DeviceShape::upload(&self.ctx, shape, staging) {
            Err(e) if e.status == Status::OutOfMemory => return Ok(false),
            other => other?,
        };
        t.shape_upload_ns += nanos(start.elapsed());
        log::info!(
            "circuit matrices ({} constraints, {} MiB) resident on device {} in {:.2?}",
            shape.num_constraints(),
            uploaded.bytes >> 20,
            self.ordinal,
            start.elapsed()
        );
        shapes.insert(0, (Arc::clone(shape), uploaded));
        Ok(true)
    }

    fn status(&self) -> DeviceStatus {
        let memory = self.ctx.memory().unwrap_or_default();
        let keys = self.keys.entries();
        let shapes: Vec<ResidentShape> = self
            .shapes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(shape, device)| ResidentShape {
                constraints: shape.num_constraints() as u64,
                bytes: device.bytes,
            })
            .collect();
        DeviceStatus {
            ordinal: self.ordinal,
            name: self.name.clone(),
            memory_total: memory.total,
            memory_free: memory.free,
            memory_used_by_cuzk: self.keys.used_bytes()
                + shapes.iter().map(|s| s.bytes).sum::<u64>()
                + memory.ntt_buffer_bytes
                + memory.witness_buffer_bytes,
            ntt_buffer_bytes: memory.ntt_buffer_bytes,
            witness_buffer_bytes: memory.witness_buffer_bytes,
            resident_shapes: shapes,
            key_budget: self.keys.budget(),
            resident_keys: keys,
            pinned_pool: self.staging.usage(),
            proofs_in_flight: self.in_flight.load(Ordering::Relaxed) as u64,
            proofs_done: self.proofs.load(Ordering::Relaxed),
            busy_ns: self.turn.held_ns(),
        }
    }
}

/// Where one MSM's points are for the device: the resident copy's query, or host memory.
struct PointSource<'a> {
    resident: Option<&'a DeviceKey>,
}

impl PointSource<'_> {
    fn points<P>(&self, query: u32, host: &[P]) -> sys::Points {
        match self.resident {
            Some(key) => sys::Points {
                key: key.0.as_ptr(),
                query,
                host: std::ptr::null(),
                n: host.len(),
            },
            None => sys::Points {
                key: std::ptr::null(),
                query,
                host: host.as_ptr().cast(),
                n: host.len(),
            },
        }
    }

    fn is_resident(&self) -> bool {
        self.resident.is_some()
    }
}

pub struct GpuBackend {
    devices: Vec<Device>,
    split: SplitPolicy,
    products_on_device: bool,
    /// Where the search for the least busy device starts, so that ties rotate.
    next: AtomicUsize,
}

/// Counts a call as in flight on a device for as long as it lives.
struct InFlight<'a>(&'a Device);

impl<'a> InFlight<'a> {
    fn new(device: &'a Device) -> Self {
        device.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(device)
    }
}

/// The GPU backend for one call: on one device or the least busy, at a priority.
struct GpuCall<'a> {
    gpu: &'a GpuBackend,
    device: Option<&'a Device>,
    priority: Priority,
}

/// Proving lanes per device: a sector's partitions spread over the devices and, on each, one
/// partition's host share (its scalar classes and compact witness, freeing its witness) runs
/// while the other holds the device. On the H200 with 16 cores two lanes took a 32GiB sector
/// from 38.1 to 31.3 s alone and from 39.9 to 25.4 s in 4-sector calls, GPU busy 54 → 74 %
/// (docs/PERFORMANCE.md, runs 26–27).
const LANES_PER_DEVICE: usize = 2;

impl Backend for GpuCall<'_> {
    fn kind(&self) -> BackendKind {
        BackendKind::Gpu
    }

    fn evaluates_products(&self) -> bool {
        self.gpu.products_on_device
    }

    fn compute_msms(
        &self,
        key: &ProvingKey,
        circuit: SynthesizedCircuit,
        pool: &ThreadPool,
        cancel: &CancelToken,
        t: &mut Timings,
    ) -> Result<MsmResults> {
        let device = self.device.map_or_else(|| self.gpu.least_busy_device(), InFlight::new);
        self.gpu.compute_on(device, self.priority, key, circuit, pool, cancel, t)
    }

    fn for_call(&self, device: Option<u32>, priority: Priority) -> Result<Box<dyn Backend + '_>> {
        self.gpu.for_call(device, priority)
    }

    /// [`LANES_PER_DEVICE`] per device the call may use.
    fn proving_lanes(&self) -> usize {
        if self.device.is_some() {
            LANES_PER_DEVICE
        } else {
            self.gpu.proving_lanes()
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl GpuBackend {
    /// The backend of every device (or those `config.devices` names).
    pub fn new(config: &GpuConfig) -> Result<Self> {
        let ordinals: Vec<i32> = if config.devices.is_empty() {
            (0..device_count()? as i32).collect()
        } else {
            config.devices.clone()
        };
        if ordinals.is_empty() {
            return Err(Error::new(Status::GpuError, "no CUDA device"));
        }
        let devices = ordinals.into_iter().map(|d| Device::open(d, config)).collect::<Result<_>>()?;
        Ok(GpuBackend {
            devices,
            split: config.split,
            products_on_device: config.products_on_device,
            next: AtomicUsize::new(0),
        })
    }

    /// The backend of one device with the given split policy (tests and benchmarks).
    pub fn on_device(device: i32, split: SplitPolicy) -> Result<Self> {
        Self::new(&GpuConfig {
            devices: vec![device],
            split,
            ..GpuConfig::default()
        })
    }

    /// `CUZK_GPU_SPLIT` as a policy (auto when unset).
    pub fn split_from_env() -> Result<SplitPolicy> {
        SplitPolicy::from_env()
    }

    /// The device with the fewest calls in flight, ties taken in turn, so that calls spread
    /// over the devices.
    fn least_busy_device(&self) -> InFlight<'_> {
        let n = self.devices.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        let device = (0..n)
            .map(|k| &self.devices[(start + k) % n])
            .min_by_key(|d| d.in_flight.load(Ordering::Relaxed))
            .expect("at least one device");
        InFlight::new(device)
    }

    /// The MSMs of one circuit on the device `in_flight` counts the call on: the host's share
    /// (scalar classes, compact witness) in `pool`, then the device turn, waited for on this
    /// thread; inside it, host work (gathering a streamed key's tail points, a, b, c when the
    /// matrices do not fit) runs in `pool` too.
    #[allow(clippy::too_many_arguments)]
    fn compute_on(
        &self,
        in_flight: InFlight<'_>,
        priority: Priority,
        key: &ProvingKey,
        circuit: SynthesizedCircuit,
        pool: &ThreadPool,
        cancel: &CancelToken,
        t: &mut Timings,
    ) -> Result<MsmResults> {
        check_not_a_worker(pool)?;
        let domain = Domain::for_len(circuit.num_constraints())
            .ok_or_else(|| Error::invalid("circuit has more constraints than the field's 2^32 FFT domain"))?;
        let layout = check_key_fits(key, &circuit, domain.size())?;
        let SynthesizedCircuit {
            products,
            input_assignment,
            aux_assignment,
            a_aux_density,
            b_input_density,
            b_aux_density,
            ..
        } = circuit;
        let device = in_flight.0;
        t.device_index = device.ordinal;
        // Whether the key will be resident decides where the tails are gathered; a key that
        // fits the budget is (or is about to be) resident.
        let resident = key.points_bytes() <= device.keys.budget();
        let policy = self.split;

        let p = timed(&mut t.prep_msm_ns, || {
            pool.install(|| {
                PreparedMsms::new(
                    &layout,
                    &input_assignment,
                    &aux_assignment,
                    &a_aux_density,
                    &b_input_density,
                    &b_aux_density,
                )
            })
        });
        let ([l, a_q, b_q], b_g2_bitmap) = timed(&mut t.prep_msm_ns, || {
            pool.install(|| {
                let g1 = [
                    G1Msm::plan("L", sys::QUERY_L, &key.l, &p.l, policy, resident),
                    G1Msm::plan("A", sys::QUERY_A, &key.a, &p.a, policy, resident),
                    G1Msm::plan("B_G1", sys::QUERY_B_G1, &key.b_g1, &p.b, policy, resident),
                ];
                // B_G2 always splits (below): B_G1's bitmap unless its ones went to the tail.
                let same_as_b_g1 = matches!(g1[2].classes, Cow::Borrowed(_)) && key.b_g1.len() == key.b_g2.len();
                let b_g2_bitmap = if same_as_b_g1 || p.b.ones.is_empty() {
                    Vec::new()
                } else {
                    p.b.ones_bitmap(key.b_g2.len())
                };
                (g1, b_g2_bitmap)
            })
        });
        let z = Assignment {
            inputs: &input_assignment,
            aux: &aux_assignment,
        };
        let mut h_input = match products {
            Products::Deferred(shape) => {
                // L's classes are every aux value's kind.
                let witness = timed(&mut t.witness_upload_ns, || {
                    pool.install(|| CompactWitness::encode(z, &p.l.ones, &p.l.tail_indices))
                })?;
                HInput::Witness { witness, shape }
            }
            Products::Evaluated { a, b, c } => HInput::Products(a, b, c),
        };
        // Freed before the device turn, not inside it (86 MB at 2KiB, 4.2 GB at 32GiB).
        drop((input_assignment, aux_assignment));
        cancel.check()?;

        let device_turn = timed(&mut t.proving_wait_ns, || device.turn.take(priority));
        cancel.check()?;
        let buffer = device.staging.acquire(&mut t.pin_ns)?;
        let staging = staging(&buffer);
        let copy = device.resident_key(key, &staging, t)?;
        if let HInput::Witness { shape, witness } = &h_input {
            if !device.make_shape_resident(shape, domain.log_size, &staging, t)? {
                log::warn!(
                    "the R1CS matrices of a {}-constraint circuit do not fit in device {}'s memory beside the key: a, b, c computed on the host",
                    shape.num_constraints(),
                    device.ordinal
                );
                let (a, b, c) = timed(&mut t.spmv_ns, || {
                    pool.install(|| {
                        let z = witness.decode();
                        let (inputs, aux) = z.split_at(shape.num_inputs());
                        shape.evaluate(inputs, aux)
                    })
                });
                h_input = HInput::Products(a, b, c);
            }
        }
        let src = PointSource { resident: copy.as_deref() };
        let h = Self::quotient_msm(device, &src, key, h_input, domain.log_size, &staging, t)?;
        cancel.check()?;
        let l = l.run(device, &src, &staging, pool, &mut t.batch_add_ns, &mut t.msm_l_ns)?;
        let a = a_q.run(device, &src, &staging, pool, &mut t.batch_add_ns, &mut t.msm_a_ns)?;
        let b_g1 = b_q.run(device, &src, &staging, pool, &mut t.batch_add_ns, &mut t.msm_b_g1_ns)?;
        // On the device, not on the CPU cores beside it: measured faster at every size
        // (docs/PERFORMANCE.md). Always split: the cost model was fitted to G1 only.
        let b_g2_bitmap = if b_g2_bitmap.is_empty() { &b_q.ones_bitmap } else { &b_g2_bitmap };
        let b_g2 = Self::b_g2_msm(device, &src, &key.b_g2, &p.b, b_g2_bitmap, &staging, pool, t)?;
        drop((copy, buffer, device_turn));
        device.proofs.fetch_add(1, Ordering::Relaxed);
        Ok(MsmResults { h, l, a, b_g1, b_g2 })
    }

    fn batch_add(device: &Device, points: &sys::Points, bitmap: &[u32], staging: &sys::Staging) -> Result<G1Projective> {
        let mut out = sys::G1::default();
        // SAFETY: `points` describes live host or device points, `bitmap` has ⌈n/32⌉ words;
        // all outlive the synchronous call.
        call("batch addition", |msg| unsafe {
            sys::cuzk_gpu_batch_add(device.ctx.ptr(), points, bitmap.as_ptr(), staging, &mut out, msg)
        })?;
        Ok(to_projective(&out))
    }

    /// The whole B_G2 MSM on the device: batch addition of the 1-scalars (`ones_bitmap`,
    /// timed into batch_add), then the tail (into msm_b_g2).
    #[allow(clippy::too_many_arguments)]
    fn b_g2_msm(
        device: &Device,
        src: &PointSource,
        points: &[G2Affine],
        classes: &ClassifiedScalars,
        ones_bitmap: &[u32],
        staging: &sys::Staging,
        pool: &ThreadPool,
        t: &mut Timings,
    ) -> Result<G2Projective> {
        let query = src.points(sys::QUERY_B_G2, points);
        let mut ones = sys::G2::default();
        let start = Instant::now();
        if !classes.ones.is_empty() {
            // SAFETY: as in batch_add.
            call("G2 batch addition", |msg| unsafe {
                sys::cuzk_gpu_batch_add_g2(device.ctx.ptr(), &query, ones_bitmap.as_ptr(), staging, &mut ones, msg)
            })?;
        }
        t.batch_add_ns += nanos(start.elapsed());
        let start = Instant::now();
        let gathered = if src.is_resident() {
            Vec::new()
        } else {
            pool.install(|| gather_tail(points, classes))
        };
        let tail_points = if src.is_resident() {
            query
        } else {
            src.points(sys::QUERY_B_G2, &gathered)
        };
        let mut tail = sys::G2::default();
        // SAFETY: as many scalars (and indices, or gathered host points) as n; all alive for
        // the synchronous call.
        call("G2 tail MSM", |msg| unsafe {
            sys::cuzk_gpu_msm_g2(
                device.ctx.ptr(),
                &tail_points,
                classes.tail_indices.as_ptr(),
                classes.tail_scalars.as_ptr() as *const c_void,
                classes.tail_scalars.len(),
                &mut tail,
                msg,
            )
        })?;
        t.msm_b_g2_ns += nanos(start.elapsed());
        Ok(to_projective_g2(&ones) + to_projective_g2(&tail))
    }

    /// H on the device from a, b, c (freed as soon as they are on it), or from the compact
    /// witness and the device's resident copy of the shape's matrices.
    fn quotient_msm(
        device: &Device,
        src: &PointSource,
        key: &ProvingKey,
        input: HInput,
        lg_domain: u32,
        staging: &sys::Staging,
        t: &mut Timings,
    ) -> Result<G1Projective> {
        let h_points = src.points(sys::QUERY_H, &key.h);
        let mut h = sys::G1::default();
        let mut times = sys::HTimes::default();
        match input {
            HInput::Products(a, b, c) => {
                // SAFETY: a, b, c hold n scalars each and the H query the domain size - 1
                // points (checked by check_key_fits); all outlive the synchronous call.
                call("H (NTT + MSM)", |msg| unsafe {
                    sys::cuzk_gpu_quotient_msm(
                        device.ctx.ptr(),
                        a.as_ptr() as *const c_void,
                        b.as_ptr() as *const c_void,
                        c.as_ptr() as *const c_void,
                        a.len(),
                        lg_domain,
                        &h_points,
                        staging,
                        &mut h,
                        &mut times,
                        msg,
                    )
                })?;
                t.pin_h2d_ns += times.h2d_ns;
            }
            HInput::Witness { shape, witness } => {
                let shapes = device.shapes.lock().unwrap_or_else(|p| p.into_inner());
                let resident = shapes.iter().find(|(s, _)| Arc::ptr_eq(s, &shape)).map(|(_, d)| d.ptr.as_ptr());
                let resident = resident.ok_or_else(|| Error::internal("the circuit's matrices left the device during the call"))?;
                let z = sys::Witness {
                    kinds: witness.kinds.as_ptr(),
                    full_offsets: witness.full_offsets.as_ptr(),
                    full: witness.full.as_ptr().cast(),
                    num_full: witness.full.len(),
                    n: witness.len,
                };
                // SAFETY: the resident shape stays alive while `shapes` is locked; the compact
                // witness's vectors hold the lengths given and outlive the synchronous call.
                call("H (A·z, B·z, C·z + NTT + MSM)", |msg| unsafe {
                    sys::cuzk_gpu_quotient_msm_r1cs(device.ctx.ptr(), resident, &z, lg_domain, &h_points, staging, &mut h, &mut times, msg)
                })?;
                t.witness_upload_ns += times.h2d_ns;
                t.spmv_ns += times.spmv_ns;
                t.spmv_on_device = 1;
            }
        }
        t.ntt_ns += times.ntt_ns;
        t.msm_h_ns += times.msm_ns;
        Ok(to_projective(&h))
    }

    fn tail_msm(device: &Device, points: &sys::Points, classes: &ClassifiedScalars) -> Result<G1Projective> {
        let mut out = sys::G1::default();
        // SAFETY: as many scalars (and indices, or gathered host points) as n; all alive for
        // the synchronous call.
        call("tail MSM", |msg| unsafe {
            sys::cuzk_gpu_msm(
                device.ctx.ptr(),
                points,
                classes.tail_indices.as_ptr(),
                classes.tail_scalars.as_ptr() as *const c_void,
                classes.tail_scalars.len(),
                &mut out,
                msg,
            )
        })?;
        Ok(to_projective(&out))
    }
}

/// What H is computed from on the device.
enum HInput {
    /// a, b, c evaluated on the host.
    Products(Vec<Scalar>, Vec<Scalar>, Vec<Scalar>),
    /// The witness; the device evaluates a, b, c with its resident copy of `shape`.
    Witness { shape: Arc<CircuitShape>, witness: CompactWitness },
}

/// The points of a query whose scalars are full-width, gathered contiguously for the device.
fn gather_tail<P: Copy + Send + Sync>(points: &[P], classes: &ClassifiedScalars) -> Vec<P> {
    classes.tail_indices.par_iter().map(|&i| points[i as usize]).collect()
}

/// The device's cost model of the 0/1 split, in ns per point, for each place the points can
/// be, fitted on the H200 to the 2KiB PoRep C2 with the split forced on and off
/// (docs/PERFORMANCE.md). Streamed: batch addition sends every point of the query over PCIe
/// and scans it, whatever its scalar; a 1-scalar left in the tail MSM costs its gather on the
/// host, its transfer and additions into the one bucket all 1-scalars share: splitting pays
/// above ~28 % of 1-scalars. Resident: batch addition reads the query in device memory
/// (~1.6 ns per point); a 1-scalar folded into the tail costs ~18 ns on the host (moved
/// between the classes) and ~10 ns on the device: splitting pays above ~6 % of 1-scalars.
struct SplitCosts {
    batch_add_per_query_point: f64,
    one_in_tail: f64,
}

const STREAMED_COSTS: SplitCosts = SplitCosts {
    batch_add_per_query_point: 12.0,
    one_in_tail: 42.0,
};
const RESIDENT_COSTS: SplitCosts = SplitCosts {
    batch_add_per_query_point: 1.6,
    one_in_tail: 28.0,
};

/// How the backend decides the 0/1 split per MSM: by the cost model, or forced
/// (`CUZK_GPU_SPLIT=always|never`, for measuring the model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitPolicy {
    CostModel,
    Always,
    Never,
}

impl SplitPolicy {
    fn from_env() -> Result<Self> {
        match std::env::var("CUZK_GPU_SPLIT").as_deref() {
            Err(_) | Ok("") | Ok("auto") => Ok(SplitPolicy::CostModel),
            Ok("always") => Ok(SplitPolicy::Always),
            Ok("never") => Ok(SplitPolicy::Never),
            Ok(other) => Err(Error::invalid(format!("CUZK_GPU_SPLIT={other:?}: expected auto, always or never"))),
        }
    }

    /// Whether batch addition of the 1-scalars pays for a query of `npoints`, against adding
    /// them to the tail MSM.
    fn split_pays(self, npoints: usize, ones: usize, resident: bool) -> bool {
        let costs = if resident { RESIDENT_COSTS } else { STREAMED_COSTS };
        match self {
            SplitPolicy::Always => true,
            SplitPolicy::Never => false,
            SplitPolicy::CostModel => ones as f64 * costs.one_in_tail > npoints as f64 * costs.batch_add_per_query_point,
        }
    }

    /// The classes the device uses for a query of `npoints`: as they are, or with the 1-scalars
    /// moved into the tail when their batch addition does not pay.
    fn apply<'a>(self, name: &str, npoints: usize, classes: &'a ClassifiedScalars, resident: bool) -> Cow<'a, ClassifiedScalars> {
        let mut classes = Cow::Borrowed(classes);
        if !self.split_pays(npoints, classes.ones.len(), resident) {
            log::debug!(
                "{name}: batch addition of {} 1-scalars does not pay over {npoints} points",
                classes.ones.len()
            );
            classes.to_mut().fold_ones_into_tail();
        }
        classes
    }
}

/// One G1 query's MSM as the device computes it: the sum of the bases whose scalar is 1 by
/// batch addition (when the split pays) plus the tail MSM, whose points the device gathers
/// from a resident key or the host gathers from a streamed one.
struct G1Msm<'a> {
    query: u32,
    points: &'a [G1Affine],
    classes: Cow<'a, ClassifiedScalars>,
    /// The 1-scalars as the device's batch addition reads them; empty when there are none.
    ones_bitmap: Vec<u32>,
}

impl<'a> G1Msm<'a> {
    /// Decides the split and makes the bitmap (before the device turn, on all cores).
    fn plan(name: &str, query: u32, points: &'a [G1Affine], classes: &'a ClassifiedScalars, policy: SplitPolicy, resident: bool) -> Self {
        let classes = policy.apply(name, points.len(), classes, resident);
        let ones_bitmap = if classes.ones.is_empty() {
            Vec::new()
        } else {
            classes.ones_bitmap(points.len())
        };
        G1Msm {
            query,
            points,
            classes,
            ones_bitmap,
        }
    }

    /// Σ sᵢ·Pᵢ on the device, the batch addition timed into `batch_ns` and the tail into
    /// `tail_ns`.
    fn run(
        &self,
        device: &Device,
        src: &PointSource,
        staging: &sys::Staging,
        pool: &ThreadPool,
        batch_ns: &mut u64,
        tail_ns: &mut u64,
    ) -> Result<G1Projective> {
        let query = src.points(self.query, self.points);
        let ones = if self.classes.ones.is_empty() {
            G1Projective::identity()
        } else {
            timed(batch_ns, || GpuBackend::batch_add(device, &query, &self.ones_bitmap, staging))?
        };
        let tail = timed(tail_ns, || {
            let host_tail = if src.is_resident() {
                Vec::new()
            } else {
                pool.install(|| gather_tail(self.points, &self.classes))
            };
            let tail_points = if src.is_resident() { query } else { src.points(self.query, &host_tail) };
            GpuBackend::tail_msm(device, &tail_points, &self.classes)
        })?;
        Ok(ones + tail)
    }
}

impl Backend for GpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Gpu
    }

    fn evaluates_products(&self) -> bool {
        self.products_on_device
    }

    fn compute_msms(
        &self,
        key: &ProvingKey,
        circuit: SynthesizedCircuit,
        pool: &ThreadPool,
        cancel: &CancelToken,
        t: &mut Timings,
    ) -> Result<MsmResults> {
        self.compute_on(self.least_busy_device(), Priority::Normal, key, circuit, pool, cancel, t)
    }

    fn for_call(&self, device: Option<u32>, priority: Priority) -> Result<Box<dyn Backend + '_>> {
        let device = match device {
            None => None,
            Some(ordinal) => Some(self.devices.iter().find(|d| d.ordinal as u32 == ordinal).ok_or_else(|| {
                let have: Vec<i32> = self.devices.iter().map(|d| d.ordinal).collect();
                Error::invalid(format!("device {ordinal} requested; the engine uses devices {have:?}"))
            })?),
        };
        Ok(Box::new(GpuCall { gpu: self, device, priority }))
    }

    fn preload(&self, key: &ProvingKey, pool: &ThreadPool) -> Result<u64> {
        check_not_a_worker(pool)?;
        let mut upload_ns = 0;
        for device in &self.devices {
            let _turn = device.turn.take(Priority::Normal);
            let mut t = Timings::new();
            let buffer = device.staging.acquire(&mut t.pin_ns)?;
            device.resident_key(key, &staging(&buffer), &mut t)?;
            upload_ns += t.srs_upload_ns;
        }
        Ok(upload_ns)
    }

    fn evict(&self, label: &str) -> usize {
        self.devices
            .iter()
            .map(|device| {
                // Inside the turn: no call is reading the copy while it is freed.
                let _turn = device.turn.take(Priority::Normal);
                device.keys.evict_label(label)
            })
            .sum()
    }

    /// Those of a call that may use every device.
    fn proving_lanes(&self) -> usize {
        LANES_PER_DEVICE * self.devices.len()
    }

    fn devices(&self) -> Vec<DeviceStatus> {
        self.devices.iter().map(Device::status).collect()
    }
}
