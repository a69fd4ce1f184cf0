//! The GPU backend: H (6 NTTs + MSM), batch addition and tail MSMs of every query, B_G2
//! included, on CUDA devices through cuda/ (sppark's kernels). Prep_msm (the 0/1/tail split)
//! is shared with the CPU backend, so both feed their MSMs the same classes.
//!
//! Per device, made once: a context (NTT buffers, copy threads), a staging pool of pinned
//! host buffers, and a budgeted cache of proving keys resident in device memory, read in
//! place by the MSMs. A key larger than the budget is streamed from host memory per call.
//! GPU phases of one device run one call at a time (the device turn); uploads and evictions
//! happen inside it, so no other call holds a key copy while one is freed or made.
//!
//! This file holds the settings, the [`Backend`] impls and `GpuBackend::compute_on`, which
//! takes one proof through the stages; each other file drives the cuda/ file of its name:
//! `sys` (the mirror of cuda/cuzk_gpu.h), `context`, `staging`, `device_key`, `spmv` (the
//! R1CS matrices), `quotient` (H), `batch_add`, `tail_msm`; `split` holds the 0/1 split's
//! cost model and each query's MSM plan, `device` the per-device state.

// cuda/'s pipeline, which sys.rs declares, is compiled by the cuzk-cuda crate into its rlib:
// name the crate so that it is linked.
extern crate cuzk_cuda;

mod batch_add;
mod context;
mod device;
mod device_key;
mod fault;
mod msm;
mod quotient;
mod selection;
mod split;
mod spmv;
mod staging;
mod sys;
mod tail_msm;
mod witness_classes;
mod witness_msm;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use blstrs::G1Projective;
use group::Group;
use rayon::ThreadPool;

use super::cpu::{CpuBackend, Domain};
use super::host_copies;
use super::prep::{mostly_full_width, PreparedMsms};
use super::turn::Priority;
use super::{check_not_a_worker, Backend, BackendKind, BackendRelease, CallMemory, DeviceStatus};
use super::{MsmChoice, SplitPolicy};
use crate::cancel::CancelToken;
use crate::error::{Error, Result, Status};
use crate::groth16::{check_key_fits, MsmResults, ProvingKey, QuerySizes};
use crate::synthesis::r1cs::{Assignment, CompactWitness};
use crate::synthesis::{Products, SynthesizedCircuit};
use crate::timings::{timed, Timings};
pub use context::device_count;
use device::{Device, InFlight, KeyWanted};
use device_key::PointSource;
#[cfg(feature = "fault-injection")]
pub use fault::injection;
use quotient::HInput;
use split::{QueryMsms, TailPlan};
use spmv::DeviceWitness;
use witness_classes::ClassifiedMsms;
use witness_msm::{WitnessMsms, AT_ONCE_MAX_POINTS};

/// The GPU backend's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuConfig {
    /// CUDA ordinals to use (CUDA_VISIBLE_DEVICES applies first); empty: every device.
    pub devices: Vec<i32>,
    /// Device memory per device for resident proving keys; 0: 3/4 of the device's memory
    /// (the rest is for the NTT buffers and MSM scratch of the calls).
    pub key_memory_budget: u64,
    /// Pinned host memory per device for staging copies; 0: DEFAULT_PINNED_POOL_BYTES, also the
    /// least.
    pub pinned_pool_bytes: u64,
    pub split: SplitPolicy,
    pub msm: MsmChoice,
    /// H's MSM in chunks of at most this many points (`EngineConfig::gpu_h_msm_chunk`); 0:
    /// [`quotient::H_MSM_CHUNK`].
    pub h_msm_chunk: u64,
    /// Compute a = A·z, b = B·z, c = C·z on the device from resident matrices (R1CS
    /// synthesis), sending only the compact witness; false: on the host, a, b, c sent.
    pub products_on_device: bool,
    /// Find a split witness's scalar classes (prep_msm) on the device where it can
    /// (`GpuBackend::classifies_on_device`); false: always on the host.
    pub prep_on_device: bool,
    /// Keep a resident key's H table (cuda/h_table.cuh) beside its H query of up to 2^22
    /// points, where it fits, for cuzk's MSM (`MsmChoice::Cuzk`) of H
    /// (`EngineConfig::gpu_h_table`).
    pub h_table: bool,
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            devices: Vec::new(),
            key_memory_budget: 0,
            pinned_pool_bytes: 0,
            split: SplitPolicy::CostModel,
            msm: MsmChoice::Cuzk,
            h_msm_chunk: 0,
            products_on_device: true,
            prep_on_device: true,
            h_table: false,
        }
    }
}

impl GpuConfig {
    /// Whether resident keys get their H tables where they fit: asked for, and H's MSM cuzk's
    /// (the table is read by cuzk's MSM without batched-affine rounds only).
    fn makes_h_tables(&self) -> bool {
        self.h_table && self.msm == MsmChoice::Cuzk
    }
}

pub struct GpuBackend {
    devices: Vec<Device>,
    split: SplitPolicy,
    msm: MsmChoice,
    /// Points of a chunk of H's MSM (`GpuConfig::h_msm_chunk`, resolved).
    h_msm_chunk: AtomicU64,
    products_on_device: bool,
    prep_on_device: AtomicBool,
    /// Whether resident keys get their H tables where they fit (`GpuConfig::h_table`, under
    /// cuzk's MSM).
    h_table: bool,
    /// Where the search for the least busy device starts, so that ties rotate.
    next: AtomicUsize,
    /// Made when every device is quarantined after faults (`fault`): calls are proved on the
    /// CPU then, slowly but proved.
    cpu_fallback: Mutex<Option<Arc<CpuBackend>>>,
}

/// The GPU backend for one call: on one device or the least busy, at a priority.
struct GpuCall<'a> {
    gpu: &'a GpuBackend,
    device: Option<&'a Device>,
    priority: Priority,
}

/// Proving lanes per device: a sector's partitions spread over the devices and, on each, one
/// partition's host share (its scalar classes and compact witness, freeing its witness) runs
/// while the other holds the device, so the device does not sit idle between partitions
/// (docs/PERFORMANCE.md has the measurements).
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
        let device = match self.device {
            Some(device) => InFlight::new(device),
            None => match self.gpu.least_busy_device() {
                Some(device) => device,
                None => return self.gpu.on_cpu(self.priority, key, circuit, pool, cancel, t),
            },
        };
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

    fn call_memory(&self, sizes: &QuerySizes, shape_bytes: u64) -> CallMemory {
        self.gpu.call_memory(sizes, shape_bytes)
    }

    fn devices_to_upload_ahead(&self, key: &ProvingKey, partitions: usize) -> Vec<i32> {
        match partitions >= self.devices().count() {
            true => {
                let call_bytes = self.gpu.call_memory(&key.query_sizes(), 0).device_call_bytes;
                self.devices().filter(|d| d.lacks_key(key, call_bytes)).map(|d| d.ordinal).collect()
            }
            false => Vec::new(),
        }
    }

    /// The upload as the call's first partition there would make it, in the call's turn:
    /// room made for the call's working memory, waiting WinningPoSts let in between two parts.
    fn upload_key_ahead(&self, key: &ProvingKey, ordinal: i32, pool: &ThreadPool, cancel: Option<&CancelToken>, upload_ns: &AtomicU64) -> Result<()> {
        check_not_a_worker(pool)?;
        let Some(device) = self.devices().find(|d| d.ordinal == ordinal) else {
            return Ok(());
        };
        let call_bytes = self.gpu.call_memory(&key.query_sizes(), 0).device_call_bytes;
        let prepare = || {
            device.check_usable()?;
            device.make_room_for_call(key, self.priority, call_bytes)
        };
        let wanted = KeyWanted {
            key,
            class: self.priority,
            ahead: true,
            call_bytes,
        };
        device.upload_in_own_turn(&wanted, pool, cancel, prepare, upload_ns).map(drop)
    }
}

impl GpuCall<'_> {
    /// The devices this call may use: its own, or every one; quarantined ones left out.
    fn devices(&self) -> impl Iterator<Item = &Device> {
        let devices = match self.device {
            Some(device) => std::slice::from_ref(device),
            None => self.gpu.devices.as_slice(),
        };
        devices.iter().filter(|d| !d.is_quarantined())
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
            msm: config.msm,
            h_msm_chunk: AtomicU64::new(h_msm_chunk_or_default(config.h_msm_chunk)),
            products_on_device: config.products_on_device,
            prep_on_device: AtomicBool::new(config.prep_on_device),
            h_table: config.makes_h_tables(),
            next: AtomicUsize::new(0),
            cpu_fallback: Mutex::new(None),
        })
    }

    /// The device with the fewest calls in flight, ties taken in turn, so that calls spread
    /// over the devices; quarantined devices are skipped (`None`: every one is).
    fn least_busy_device(&self) -> Option<InFlight<'_>> {
        let n = self.devices.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        (0..n)
            .map(|k| &self.devices[(start + k) % n])
            .filter(|d| !d.is_quarantined())
            .min_by_key(|d| d.in_flight.load(Ordering::Relaxed))
            .map(InFlight::new)
    }

    /// A call when every device is quarantined: proved by the CPU backend, made on first need.
    fn on_cpu(
        &self,
        priority: Priority,
        key: &ProvingKey,
        circuit: SynthesizedCircuit,
        pool: &ThreadPool,
        cancel: &CancelToken,
        t: &mut Timings,
    ) -> Result<MsmResults> {
        let cpu = {
            let mut fallback = self.cpu_fallback.lock().unwrap_or_else(|p| p.into_inner());
            match &*fallback {
                Some(cpu) => Arc::clone(cpu),
                None => {
                    log::error!("every CUDA device is quarantined after faults: calls are proved on the CPU");
                    let cpu = Arc::new(CpuBackend::new(0)?);
                    *fallback = Some(Arc::clone(&cpu));
                    cpu
                }
            }
        };
        t.backend = BackendKind::Cpu as u32;
        t.device_index = -1;
        let call = cpu.for_call(None, priority)?;
        call.compute_msms(key, circuit, pool, cancel, t)
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
        in_flight.0.check_usable()?;
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
        // A shape's calls take the shape's densities: A's and B's selections of z, made from
        // them, are then the same for all of them, and the device keeps them with the shape.
        let call_shape = match &products {
            Products::Deferred(shape) => Some(Arc::clone(shape)),
            Products::Evaluated { .. } => None,
        };
        let [a_aux_density, b_input_density, b_aux_density] = match &call_shape {
            Some(shape) => [shape.a_aux_density(), shape.b_input_density(), shape.b_aux_density()],
            None => [&a_aux_density, &b_input_density, &b_aux_density],
        };
        let device = in_flight.0;
        t.device_index = device.ordinal;
        // Whether the key will be resident decides where the tails are gathered; a key that
        // fits the budget is (or is about to be) resident.
        let resident = key.points_bytes() <= device.keys.budget();
        // A streamed key's points cross from host memory: decoded there now if the host does
        // not hold them (timed as the key's load), before the turn. A resident key's are read
        // from its file as they are uploaded, and the host keeps none.
        let host = match resident {
            true => key.held_host_points(),
            false => Some(host_copies::host_points(key, priority, pool, &mut t.srs_load_ns)?),
        };

        // A mostly full-width witness (a PoSt's) crosses whole and its MSMs read their scalars
        // on the device (witness_msm.rs); any other is sent compactly, and its MSMs split into
        // batch additions and tails (split.rs), by classes found on the device from its copy of
        // the witness (witness_classes.rs) or here.
        let full_width = timed(&mut t.prep_msm_ns, || pool.install(|| mostly_full_width(&aux_assignment)));
        let sizes = key.query_sizes();
        let mut classes = None;
        let (queries, h_input) = if full_width {
            let msms = timed(&mut t.prep_msm_ns, || {
                pool.install(|| WitnessMsms::new(&layout, a_aux_density, b_input_density, b_aux_density, self.msm))
            });
            let witness = DeviceWitness::Whole {
                inputs: input_assignment,
                aux: aux_assignment,
            };
            let h_input = match products {
                Products::Deferred(shape) => HInput::Witness { witness, shape },
                Products::Evaluated { a, b, c } => HInput::Products {
                    abc: (a, b, c),
                    witness: Some(witness),
                },
            };
            (QueryMsms::OnDevice(msms), h_input)
        } else if let (true, Products::Deferred(shape)) = (self.classifies_on_device(&sizes, resident), &products) {
            let selections = timed(&mut t.prep_msm_ns, || {
                pool.install(|| WitnessMsms::new(&layout, a_aux_density, b_input_density, b_aux_density, self.msm))
            });
            let z = Assignment {
                inputs: &input_assignment,
                aux: &aux_assignment,
            };
            let witness = timed(&mut t.witness_upload_ns, || pool.install(|| CompactWitness::from_values(z)))?;
            let queries = QueryMsms::Classified(ClassifiedMsms::new(selections, &sizes, self.split, &witness));
            let h_input = HInput::Witness {
                witness: DeviceWitness::Compact(witness),
                shape: Arc::clone(shape),
            };
            drop((input_assignment, aux_assignment));
            (queries, h_input)
        } else {
            let p: &PreparedMsms = classes.insert(timed(&mut t.prep_msm_ns, || {
                pool.install(|| PreparedMsms::classified(&layout, &input_assignment, &aux_assignment, a_aux_density, b_input_density, b_aux_density))
            }));
            let queries = timed(&mut t.prep_msm_ns, || {
                pool.install(|| QueryMsms::split(p, &sizes, self.split, resident, self.msm))
            });
            let h_input = match products {
                Products::Deferred(shape) => {
                    let z = Assignment {
                        inputs: &input_assignment,
                        aux: &aux_assignment,
                    };
                    // L's classes are every aux value's kind.
                    let witness = timed(&mut t.witness_upload_ns, || {
                        pool.install(|| CompactWitness::encode(z, &p.l.ones, &p.l.tail_indices))
                    })?;
                    HInput::Witness {
                        witness: DeviceWitness::Compact(witness),
                        shape,
                    }
                }
                Products::Evaluated { a, b, c } => HInput::Products {
                    abc: (a, b, c),
                    witness: None,
                },
            };
            // Freed before the device turn, not inside it (86 MB at 2KiB, 4.2 GB at 32GiB).
            drop((input_assignment, aux_assignment));
            (queries, h_input)
        };
        cancel.check()?;

        // A split witness's tails are known now: its call's memory with them, not with a tail
        // of a whole query, decides whether its key may be resident.
        let matrices = match &h_input {
            HInput::Witness { shape, .. } => shape.size_bytes() as u64,
            HInput::Products { .. } => 0,
        };
        let call_bytes = match queries.tail_plans(&key.query_sizes()) {
            Some(tails) => self.device_call_bytes_with(device, key, &tails, matrices),
            None => self.call_memory(&key.query_sizes(), 0).device_call_bytes,
        };
        let mut device_turn = timed(&mut t.proving_wait_ns, || device.turn.take(priority));
        cancel.check()?;
        // The device's part, whose key copy and staging buffers are released when it returns, so
        // that a failure is looked at (a fault recovered from) inside the turn holding nothing.
        // It makes way for calls of higher classes where its device state is its own: inside
        // H (before each chunk of H's MSM) for the WinningPoSt class, whose NTT and witness
        // buffers are a set of their own, and between its MSMs for every class above its own.
        // Each phase takes its own staging buffer, so that those calls find one free.
        let buffers = if priority == Priority::WinningPost {
            sys::TOP_CLASS_BUFFERS
        } else {
            sys::SHARED_BUFFERS
        };
        let on_device = || -> Result<MsmResults> {
            let _selections = queries.witness_msms().map(WitnessMsms::hold);
            device.check_usable()?;
            device.make_room_for_call(key, priority, call_bytes)?;
            let mut host_classes = None;
            let (copy, split_witness) = device.with_staging(t, |staging, t| {
                let wanted = KeyWanted { key, class: priority, ahead: false, call_bytes };
                let copy = device.resident_key(&wanted, pool, staging, t, &mut |t| device.make_way_in_upload(&mut device_turn, t))?;
                if let (None, QueryMsms::Classified(_), HInput::Witness { witness: DeviceWitness::Compact(compact), .. }) = (&copy, &queries, &h_input) {
                    // Expected resident, and streamed after all (below): the device finds a
                    // witness's classes for a resident key only, so the host finds them, from
                    // the compact witness (z decoded for it: 4.2 GB at 32GiB, in this rare case).
                    let z = compact.decode();
                    let (inputs, aux) = z.split_at(layout.num_inputs);
                    host_classes = Some(timed(&mut t.prep_msm_ns, || {
                        pool.install(|| PreparedMsms::classified(&layout, inputs, aux, a_aux_density, b_input_density, b_aux_density))
                    }));
                }
                let mut input = h_input;
                if let HInput::Witness { shape, witness } = input {
                    input = match device.make_shape_resident(&shape, domain.log_size, staging, t)? {
                        true => {
                            if let Some(msms) = queries.witness_msms() {
                                msms.keep_resident(device, &shape, staging, t)?;
                            }
                            HInput::Witness { shape, witness }
                        }
                        false => {
                            log::warn!(
                                "the R1CS matrices of a {}-constraint circuit do not fit in device {}'s memory beside the key: a, b, c computed on the host",
                                shape.num_constraints(),
                                device.ordinal
                            );
                            let abc = timed(&mut t.spmv_ns, || pool.install(|| witness.evaluate(&shape)))?;
                            // The MSMs may still read the witness on the device.
                            let witness = queries.read_device_witness().then_some(witness);
                            HInput::Products { abc, witness }
                        }
                    };
                }
                // A small proof's split witness MSMs start now, beside the quotient stage
                // (cuda/split.cuh), making way once before them and H's.
                let mut split_witness = None;
                if let Some(resident) = copy.as_deref() {
                    let src = PointSource::new(Some(resident), None, key.query_sizes())?;
                    if queries.split_runs_at_once(&key.query_sizes(), &src) {
                        if let Some(from) = let_in_above(priority, &queries) {
                            device.make_way(&mut device_turn, from, t)?;
                        }
                        cancel.check()?;
                        // Its start (the inputs' copies) counts in the MSMs' wall.
                        let started = timed(&mut t.msm_at_once_ns, || queries.start_split_witness(device, &src, &key.query_sizes()))?;
                        split_witness = Some(started);
                        fault::injection::fire_if_armed(device)?;
                    }
                }
                Self::quotient(device, buffers, input, domain.log_size, staging, t)?;
                Ok((copy, split_witness))
            })?;
            let host = match (&copy, &host) {
                // Expected resident, but its room is held by keys of higher classes (or the
                // device had less memory than planned): streamed after all.
                (None, None) => Some(host_copies::host_points(key, priority, pool, &mut t.srs_load_ns)?),
                _ => host.clone(),
            };
            let src = PointSource::new(copy.as_deref(), host.as_deref(), key.query_sizes())?;
            let host_split = host_classes.as_ref().map(|p| QueryMsms::split(p, &sizes, self.split, false, self.msm));
            let queries = host_split.as_ref().unwrap_or(&queries);
            let let_in = let_in_above(priority, queries);
            if let Some(witness) = split_witness {
                // Its make-way was before the witness MSMs started.
                cancel.check()?;
                let done = queries.split_at_once(device, buffers, domain.log_size, &src, &key.query_sizes(), witness)?;
                return Ok(done.results(t));
            }
            if let Some(msms) = queries.at_once(&key.query_sizes(), domain.log_size) {
                // Latency-bound sizes: H's MSM and the witness's all at the same time, making
                // way once before them.
                if let Some(from) = let_in {
                    device.make_way(&mut device_turn, from, t)?;
                }
                fault::injection::fire_if_armed(device)?;
                cancel.check()?;
                let done = device.with_staging(t, |staging, _| {
                    let points = [sys::QUERY_H, sys::QUERY_L, sys::QUERY_A, sys::QUERY_B_G1, sys::QUERY_B_G2].map(|q| src.points(q));
                    Self::witness_msms_at_once(device, buffers, domain.log_size, &points, msms, staging)
                })?;
                return Ok(done.results(t));
            }
            let msms = self.msm_plan();
            let h = Self::h_msm(device, buffers, &src, domain.log_size, msms, t, &mut |t| match buffers {
                sys::SHARED_BUFFERS => device.make_way(&mut device_turn, Priority::WinningPost, t),
                _ => Ok(()),
            })?;
            fault::injection::fire_if_armed(device)?;
            cancel.check()?;
            let mut make_way = |t: &mut Timings| match let_in {
                Some(from) => device.make_way(&mut device_turn, from, t),
                None => Ok(()),
            };
            let mut l_and_a = [G1Projective::identity(); 2];
            for (q, sum) in l_and_a.iter_mut().enumerate() {
                make_way(t)?;
                *sum = device.with_staging(t, |staging, t| queries.g1(q, device, buffers, &src, staging, pool, t))?;
            }
            let (b_g1, b_g2) = queries.b(device, buffers, &src, &key.query_sizes(), pool, t, &mut make_way)?;
            let [l, a] = l_and_a;
            Ok(MsmResults { h, l, a, b_g1, b_g2 })
        };
        let proved = on_device().map_err(|e| device.after_failure(e));
        drop(device_turn);
        if proved.is_ok() {
            device.proofs.fetch_add(1, Ordering::Relaxed);
        }
        proved
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
        match self.least_busy_device() {
            Some(device) => self.compute_on(device, Priority::Sealing, key, circuit, pool, cancel, t),
            None => self.on_cpu(Priority::Sealing, key, circuit, pool, cancel, t),
        }
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

    /// Uploads the key to every usable device; a device where it is streamed (too large for
    /// its budget, or its room held by keys of higher classes) needs its points in host
    /// memory, decoded then.
    fn preload(&self, key: &ProvingKey, class: Priority, pool: &ThreadPool, decode_ns: &mut u64) -> Result<u64> {
        check_not_a_worker(pool)?;
        let upload_ns = AtomicU64::new(0);
        let mut streamed = false;
        let call_bytes = self.call_memory(&key.query_sizes(), 0).device_call_bytes;
        let wanted = KeyWanted {
            key,
            class,
            ahead: false,
            call_bytes,
        };
        for device in self.devices.iter().filter(|d| !d.is_quarantined()) {
            streamed |= !device.upload_in_own_turn(&wanted, pool, None, || Ok(()), &upload_ns)?;
        }
        if streamed {
            host_copies::host_points(key, class, pool, decode_ns)?;
        }
        Ok(upload_ns.into_inner())
    }

    fn evict(&self, label: &str) -> usize {
        self.devices
            .iter()
            .map(|device| {
                // Inside the turn: no call is reading the copy while it is freed.
                let _turn = device.turn.take(Priority::Sealing);
                // The matrices of shapes nothing else holds any more (the engine drops a
                // key's shape with it): otherwise their host copy lives on until another
                // shape takes their place on the device.
                device
                    .shapes
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retain(|resident| Arc::strong_count(&resident.shape) > 1);
                device.keys.evict_label(label)
            })
            .sum()
    }

    /// Every device's, in turn; a device that fails is logged and the others still release.
    fn release_memory(&self, keep: &dyn Fn(&str) -> bool) -> BackendRelease {
        let mut total = BackendRelease::default();
        for device in &self.devices {
            match device.release_memory(keep) {
                Ok(released) => total += released,
                Err(e) => log::warn!("device {}: releasing memory failed: {e}", device.ordinal),
            }
        }
        total
    }

    /// Those of a call that may use every device.
    fn proving_lanes(&self) -> usize {
        LANES_PER_DEVICE * self.devices.len()
    }

    fn devices(&self) -> Vec<DeviceStatus> {
        self.devices.iter().map(Device::status).collect()
    }

    #[cfg(feature = "internals")]
    fn set_prep_on_device(&self, on_device: bool) {
        self.prep_on_device.store(on_device, Ordering::Relaxed);
    }

    #[cfg(feature = "internals")]
    fn set_h_msm_chunk(&self, points: u64) {
        self.h_msm_chunk.store(h_msm_chunk_or_default(points), Ordering::Relaxed);
    }

    /// A key that may not be resident on every device (`Device::fits_key`: over its key budget,
    /// or over its memory beside this call's, as resident) is streamed: not resident, its
    /// points crossing for each MSM (and its tails gathered on the host).
    fn call_memory(&self, sizes: &QuerySizes, shape_bytes: u64) -> CallMemory {
        let resident = self.call_memory_as(sizes, shape_bytes, false);
        let key_bytes = sizes.points_bytes();
        let fits = !self.devices.is_empty() && self.devices.iter().all(|d| d.fits_key(key_bytes, resident.device_call_bytes));
        match fits {
            true => resident,
            false => self.call_memory_as(sizes, shape_bytes, true),
        }
    }
}

/// The classes a call lets in between its MSMs ([`Device::make_way`]): every class above its
/// own, but while they read the witness in its buffer set only the class whose calls use the
/// other set.
fn let_in_above(priority: Priority, queries: &QueryMsms) -> Option<Priority> {
    match priority.above() {
        Some(_) if queries.read_device_witness() => Some(Priority::WinningPost),
        above => above,
    }
}

/// `points` for a chunk of H's MSM, [`quotient::H_MSM_CHUNK`] for 0.
fn h_msm_chunk_or_default(points: u64) -> u64 {
    match points {
        0 => quotient::H_MSM_CHUNK,
        points => points,
    }
}

/// Which MSM a backend runs where both apply, and the points of a chunk of H's MSM: what its
/// MSMs take, and its memory plan.
#[derive(Clone, Copy, Debug)]
pub(super) struct MsmPlan {
    pub(super) choice: MsmChoice,
    pub(super) h_chunk: u64,
    /// Whether a resident key gets its H table where it fits (`Device::key_copy`).
    pub(super) h_table: bool,
}

impl GpuBackend {
    fn msm_plan(&self) -> MsmPlan {
        MsmPlan {
            choice: self.msm,
            h_chunk: self.h_msm_chunk.load(Ordering::Relaxed),
            h_table: self.h_table,
        }
    }

    /// Whether a split witness's classes are found on the device (witness_classes.rs) for a
    /// call whose key is to be `resident` ([`classified_on_device`] with this backend's
    /// settings).
    fn classifies_on_device(&self, sizes: &QuerySizes, resident: bool) -> bool {
        classified_on_device(
            self.prep_on_device.load(Ordering::Relaxed),
            self.products_on_device,
            self.msm,
            sizes,
            resident,
        )
    }

    /// The call's memory with its key resident or `streamed`, for any witness.
    fn call_memory_as(&self, sizes: &QuerySizes, shape_bytes: u64, streamed: bool) -> CallMemory {
        call_memory_of(
            sizes,
            shape_bytes,
            streamed,
            self.msm_plan(),
            self.products_on_device,
            self.classifies_on_device(sizes, !streamed),
            None,
        )
    }

    /// The device memory of a call whose tails are `tails` (a split witness's, known once its
    /// scalars are classified): with its key resident when that fits the device beside it and
    /// the circuit's matrices (`matrices`), else with the key streamed. The plan for any
    /// witness (`call_memory`) holds a tail of a whole query (26 GB for a 32GiB PoRep's 2^27
    /// points) and so streams a 32GiB PoRep key on an 80 GB card, 4.5 s of device time a
    /// partition (docs/PERFORMANCE.md, run 113); its real tails are ≈ 3 % of its queries.
    fn device_call_bytes_with(&self, device: &Device, key: &ProvingKey, tails: &[TailPlan; 4], matrices: u64) -> u64 {
        let sizes = key.query_sizes();
        let resident = call_memory_of(
            &sizes,
            0,
            false,
            self.msm_plan(),
            self.products_on_device,
            self.classifies_on_device(&sizes, true),
            Some(tails),
        )
        .device_call_bytes;
        match device.fits_key(key.points_bytes(), resident + matrices) {
            true => resident,
            false => self.call_memory_as(&sizes, 0, true).device_call_bytes,
        }
    }
}

/// Whether a split witness's classes are found on the device (witness_classes.rs) for a call
/// whose key is to be `resident`: the switch (`prep_on_device`) on, a, b, c computed there (so
/// z is there), cuzk's MSM, B_G1 and B_G2 as many points (B's scalars), and H's query beyond
/// the small proofs' whose split MSMs run at once with H's (cuda/split.cuh, from the host's
/// classes).
fn classified_on_device(prep_on_device: bool, products_on_device: bool, choice: MsmChoice, sizes: &QuerySizes, resident: bool) -> bool {
    prep_on_device && resident && products_on_device && choice.is_cuzk() && sizes.b_g1 == sizes.b_g2 && sizes.h > split::SPLIT_AT_ONCE_MAX_H
}

/// The memory of a call with a key of `sizes` resident or `streamed`, its MSMs as `msms` says, a,
/// b, c evaluated on the device from matrices of `shape_bytes` when `products_on_device`, a
/// split witness's classes found on the device when `classified`; its tail MSMs `tails` when
/// they are known or bounded (a split witness's, with the key resident), else those of any
/// witness: a tail of every point of the largest query.
fn call_memory_of(
    sizes: &QuerySizes,
    shape_bytes: u64,
    streamed: bool,
    msms: MsmPlan,
    products_on_device: bool,
    classified: bool,
    tails: Option<&[TailPlan; 4]>,
) -> CallMemory {
    const SCALAR: u64 = 32;
    const G1_BUCKET: u64 = 4 * 48;
    const G2_BUCKET: u64 = 4 * 96;
    let MsmPlan { choice, h_chunk, h_table } = msms;
    let key_bytes = sizes.points_bytes();
    // A resident key's H table, at most (made where it fits: `Device::key_copy`).
    let h_table_bytes = if h_table { device_key::h_table_bytes(sizes) } else { 0 };
    let (g1, g2) = (QuerySizes::G1_BYTES, QuerySizes::G2_BYTES);
    let largest_g1 = [sizes.h, sizes.l, sizes.a, sizes.b_g1].into_iter().max().unwrap_or(0);
    // The largest MSM one after another: sppark's, or cuzk's up to its sizes (tails, H's
    // chunks), its points copied for a streamed key.
    let own = |n: u64, point: u64, bucket: u64| match msm::implementation(choice, n as usize) {
        implementation @ (sys::MSM_CUZK | sys::MSM_CUZK_AFFINE) => {
            let affine = implementation == sys::MSM_CUZK_AFFINE && point == g1;
            msm::scratch_bytes(n, bucket, affine) + if streamed { n * point } else { 0 }
        }
        _ => 0,
    };
    // H's MSM a chunk at a time; by cuzk's, its sort's keys and entries in the two NTT
    // buffers its coefficients leave free when they fit there, and the chunks of an MSM of
    // more than one sharing their buckets (cuda/quotient.cuh).
    let largest_h_chunk = sizes.h.min(h_chunk);
    let free_ntt_buffers = 2 * SCALAR * sizes.domain();
    let h_chunk = match msm::implementation(choice, largest_h_chunk as usize) {
        implementation @ (sys::MSM_CUZK | sys::MSM_CUZK_AFFINE) => {
            let affine = implementation == sys::MSM_CUZK_AFFINE;
            match (!affine)
                .then(|| msm::part_bytes(sizes.h, largest_h_chunk, free_ntt_buffers / 4, G1_BUCKET))
                .flatten()
            {
                Some(part) => part + if streamed { largest_h_chunk * g1 } else { 0 },
                None => {
                    let sort = msm::sort_bytes(largest_h_chunk, affine);
                    own(largest_h_chunk, g1, G1_BUCKET) - if sort <= free_ntt_buffers { sort } else { 0 }
                }
            }
        }
        _ => 0,
    };
    let mut scratch = match tails {
        // Each tail's MSM (cuda/tail_msm.cuh) over a resident key: its scratch, its scalars,
        // and its points gathered with their indices unless it is dense (read in place).
        Some(tails) => {
            let tail = |plan: &TailPlan, point: u64, bucket: u64| match own(plan.points, point, bucket) {
                0 => tail_msm::scratch_bytes(plan.points, point, bucket, false),
                own => own + plan.points * SCALAR + if plan.gathered { plan.points * (point + 4) } else { 0 },
            };
            let [l, a, b_g1, b_g2] = tails;
            let g1_tails = [l, a, b_g1].into_iter().map(|plan| tail(plan, g1, G1_BUCKET)).max().unwrap_or(0);
            // Beside each MSM, its query's batch addition reads a bitmap of its 1-scalars.
            let bitmap = largest_g1.div_ceil(32) * 4;
            g1_tails.max(tail(b_g2, g2, G2_BUCKET)).max(h_chunk) + bitmap
        }
        None => tail_msm::scratch_bytes(largest_g1, g1, G1_BUCKET, streamed)
            .max(tail_msm::scratch_bytes(sizes.b_g2, g2, G2_BUCKET, streamed))
            .max(own(largest_g1.min(msm::OWN_MSM_MAX_POINTS as u64), g1, G1_BUCKET))
            .max(h_chunk)
            .max(own(sizes.b_g2, g2, G2_BUCKET)),
    };
    let at_once = [sizes.h, sizes.l, sizes.a, sizes.b_g1];
    if choice.is_cuzk() && at_once.iter().all(|&n| (1..=AT_ONCE_MAX_POINTS as u64).contains(&n)) {
        // A mostly full-width witness's MSMs and H's at once by cuzk's (witness_msm.rs), A's
        // and B's scalars selected into memory of their own, a streamed key's points copied
        // for each.
        let selected = (sizes.a + sizes.b_g1) * SCALAR;
        let copies = if streamed {
            at_once.iter().sum::<u64>() * g1 + sizes.b_g2 * g2
        } else {
            0
        };
        let g1_scratch: u64 = at_once.iter().map(|&n| msm::scratch_bytes(n, G1_BUCKET, false)).sum();
        scratch = scratch.max(g1_scratch + msm::scratch_bytes(sizes.b_g2, G2_BUCKET, false) + selected + copies);
    }
    if choice.is_cuzk() && !streamed && (1..=split::SPLIT_AT_ONCE_MAX_H).contains(&sizes.h) {
        // A split witness's MSMs and H's at once (split.rs): every MSM's scratch together,
        // each tail's gathered points, scalars and indices and each query's bitmap, at worst
        // a tail of the whole query.
        let affine = choice == MsmChoice::CuzkAffine;
        let per_point = |point: u64| point + SCALAR + 4 + 1;
        let g1_tails: u64 = [sizes.l, sizes.a, sizes.b_g1]
            .into_iter()
            .map(|n| msm::scratch_bytes(n, G1_BUCKET, affine) + n * per_point(g1))
            .sum();
        let b_g2_tail = msm::scratch_bytes(sizes.b_g2, G2_BUCKET, false) + sizes.b_g2 * per_point(g2);
        scratch = scratch.max(msm::scratch_bytes(sizes.h, G1_BUCKET, affine) + g1_tails + b_g2_tail);
    }
    let variables = sizes.variables();
    if classified {
        // The classes found on the device (witness_classes.rs), a query at a time: each word of
        // z's counts and selection beside the query's tail MSM (its bitmap of ones and tail
        // counted above when the tails are known), or at worst a tail of the whole query: its
        // indices, Montgomery scalars, gathered points and cuzk's MSM scratch.
        let per_word = variables.div_ceil(32) * (4 * 4 + 2 * 4);
        let affine = choice == MsmChoice::CuzkAffine;
        let whole_query =
            |n: u64, point: u64, bucket: u64| n.div_ceil(8) + n * (4 + SCALAR + point) + msm::scratch_bytes(n, bucket, affine && point == g1);
        let largest_witness_g1 = [sizes.l, sizes.a, sizes.b_g1].into_iter().max().unwrap_or(0);
        scratch = match tails {
            Some(_) => scratch + per_word,
            None => scratch.max(per_word + whole_query(largest_witness_g1, g1, G1_BUCKET).max(whole_query(sizes.b_g2, g2, G2_BUCKET))),
        };
    }
    let matrices = if products_on_device { shape_bytes } else { 0 };
    // The device copy of z: for the R1CS stage, and read by the MSMs of a mostly
    // full-width witness (whose selected scalars, 32 bytes a point, fit in the MSM
    // scratch counted for a gathered tail: its points and scalars).
    let witness = SCALAR * variables;
    let gathered_on_host = if streamed { largest_g1 * g1 + sizes.b_g2 * g2 } else { 0 };
    CallMemory {
        host_key_bytes: if streamed { key_bytes } else { 0 },
        host_key_upload_bytes: if streamed { 0 } else { device_key::upload_host_bytes(sizes) },
        host_lane_bytes: PreparedMsms::max_bytes(variables) + CompactWitness::max_bytes(variables) + variables.div_ceil(8) + gathered_on_host,
        device_resident_bytes: matrices + if streamed { 0 } else { key_bytes + h_table_bytes },
        device_call_bytes: 3 * SCALAR * sizes.domain() + witness + scratch,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 32GiB PoRep partition's queries: a key of 45 155 MiB, as the 45 179 MiB of runs
    /// 103–113, and matrices of 7 002 MiB on the device.
    fn porep_32g() -> (QuerySizes, u64) {
        let sizes = QuerySizes {
            ic: 300,
            h: (1 << 27) - 1,
            l: 130_000_000,
            a: 130_000_300,
            b_g1: 33_000_000,
            b_g2: 33_000_000,
        };
        (sizes, 7_002 << 20)
    }

    /// `choice`'s MSMs, H's in chunks of the default size.
    fn msms(choice: MsmChoice) -> MsmPlan {
        MsmPlan {
            choice,
            h_chunk: quotient::H_MSM_CHUNK,
            h_table: false,
        }
    }

    /// Whether a call of `call` bytes may hold a key of `sizes` resident beside `matrices` on an
    /// 80 GB H100 as the engine sees it (81 079 MiB; the default key budget of three quarters).
    fn fits_an_h100(sizes: &QuerySizes, call: &CallMemory, matrices: u64) -> bool {
        let h100 = 81_079u64 << 20;
        device::key_fits(sizes.points_bytes(), call.device_call_bytes + matrices, h100 / 4 * 3, h100)
    }

    #[test]
    fn a_32gib_porep_key_is_resident_on_an_80gb_card_with_its_real_tails() {
        let (sizes, matrices) = porep_32g();
        let plan = |tails: Option<&[TailPlan; 4]>| call_memory_of(&sizes, 0, false, msms(MsmChoice::Cuzk), true, false, tails);
        let fits = |call: &CallMemory| fits_an_h100(&sizes, call, matrices);
        // For any witness, a tail of every point of the largest query: the key streamed (run 113).
        assert!(!fits(&plan(None)));
        // Its real tails, ≈ 3 % of each query, gathered: the key fits beside them and the
        // matrices. H's 2^26-point chunks are the largest MSM then, parts of one MSM whose
        // buckets and sort are in the NTT buffers the coefficients leave free.
        let gathered = |points| TailPlan { points, gathered: true };
        let real = [gathered(3_900_000), gathered(3_900_000), gathered(1_000_000), gathered(1_000_000)];
        let call = plan(Some(&real));
        assert!(fits(&call), "{} bytes", call.device_call_bytes);
        let ntt_and_witness = 3 * 32 * sizes.domain() + 32 * sizes.variables();
        let free_words = 2 * 32 * sizes.domain() / 4;
        let h_chunk = msm::part_bytes(sizes.h, 1 << 26, free_words, 4 * 48).expect("two parts");
        let alone = msm::scratch_bytes(1 << 26, 4 * 48, false) - msm::sort_bytes(1 << 26, false);
        assert!(h_chunk < alone, "a part {h_chunk} bytes, a chunk alone {alone}");
        assert!(call.device_call_bytes >= ntt_and_witness + h_chunk);
        assert!(call.device_call_bytes < ntt_and_witness + h_chunk + (1 << 30));
        // A tail of half of L gathered, or all of L dense (read in place), needs more: streamed.
        let half = [gathered(65_000_000), gathered(0), gathered(0), gathered(0)];
        assert!(!fits(&plan(Some(&half))));
        let dense = [
            TailPlan {
                points: 130_000_000,
                gathered: false,
            },
            gathered(0),
            gathered(0),
            gathered(0),
        ];
        assert!(!fits(&plan(Some(&dense))));
        // The gathered copy counts: a dense tail takes less than as many points gathered.
        let as_gathered = [gathered(130_000_000), gathered(0), gathered(0), gathered(0)];
        assert!(plan(Some(&dense)).device_call_bytes < plan(Some(&as_gathered)).device_call_bytes);
        // By sppark's MSM, its own model of each tail.
        let sppark = call_memory_of(&sizes, 0, false, msms(MsmChoice::Sppark), true, false, Some(&half));
        assert!(sppark.device_call_bytes >= ntt_and_witness + tail_msm::scratch_bytes(65_000_000, 96, 4 * 48, false));
    }

    /// With its classes found on the device, a 32GiB PoRep partition's tails are bounded before
    /// its turn by the witness's full-width values and the ones a query may fold into its tail
    /// (`ClassifiedMsms::tail_plans`, ≈ 3 % + 5.7 % of a query): the key still fits an 80 GB
    /// card beside them, the counts and the matrices; for any witness it does not.
    #[test]
    fn a_32gib_porep_key_is_resident_on_an_80gb_card_with_its_classes_found_on_the_device() {
        let (sizes, matrices) = porep_32g();
        let plan = |tails: Option<&[TailPlan; 4]>| call_memory_of(&sizes, 0, false, msms(MsmChoice::Cuzk), true, true, tails);
        let fits = |call: &CallMemory| fits_an_h100(&sizes, call, matrices);
        assert!(classified_on_device(true, true, MsmChoice::Cuzk, &sizes, true));
        assert!(
            !classified_on_device(true, true, MsmChoice::Cuzk, &sizes, false),
            "a streamed key: the host's classes"
        );
        assert!(!fits(&plan(None)));
        let full = 3_900_000u64;
        let ones = 61_000_000u64;
        let bound = |n: u64, min_ones: u64| TailPlan {
            points: (full + ones.min(min_ones.saturating_sub(1))).min(n),
            gathered: true,
        };
        let min_ones = |n: u64| SplitPolicy::CostModel.min_ones_to_split(n as usize, true);
        let bounds = [
            bound(sizes.l, min_ones(sizes.l)),
            bound(sizes.a, min_ones(sizes.a)),
            bound(sizes.b_g1, min_ones(sizes.b_g1)),
            bound(sizes.b_g2, 0),
        ];
        assert!(bounds[0].points > 11_000_000 && bounds[3].points == full, "{bounds:?}");
        let call = plan(Some(&bounds));
        assert!(fits(&call), "{} bytes", call.device_call_bytes);
        // The counts and selections per word of z are planned beside the tails.
        let host_classes = call_memory_of(&sizes, 0, false, msms(MsmChoice::Cuzk), true, false, Some(&bounds));
        assert_eq!(
            call.device_call_bytes - host_classes.device_call_bytes,
            sizes.variables().div_ceil(32) * 24
        );
    }
}
