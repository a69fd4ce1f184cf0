//! Per-phase timings of a call, in nanoseconds. The struct is part of the C ABI
//! (`cuzk_timings`): it starts with its own size and version so that it can grow; fields are
//! only ever appended. A phase a backend does not have stays 0 — never an invented number.

use std::time::{Duration, Instant};

/// Version of the `cuzk_timings` layout this library writes.
pub const CUZK_TIMINGS_VERSION: u32 = 4;

/// Which kind of backend ran a proof (the `backend` field of `cuzk_timings`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    None = 0,
    Cpu = 1,
    Gpu = 2,
}

/// Where the GPU read the proving key's points from (the `key_residency` field of
/// `cuzk_timings`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyResidency {
    /// No GPU phase ran (CPU backend).
    NotOnGpu = 0,
    /// Device memory, where the key stays between calls.
    Resident = 1,
    /// Host memory, sent to the device by this call: the key did not fit the device-memory
    /// budget.
    Streamed = 2,
}

/// Per-phase timings of one call in nanoseconds (`cuzk_timings`). Phases never overlap, so
/// their sum is at most `total_ns`; phases a backend does not have are 0.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timings {
    /// sizeof(cuzk_timings) as the caller compiled it; the library writes no byte past it.
    pub struct_size: u32,
    /// The layout version the library wrote (CUZK_TIMINGS_VERSION).
    pub version: u32,
    /// 1 = CPU, 2 = GPU (cuzk_backend_kind).
    pub backend: u32,
    /// CUDA device ordinal that ran the GPU phases, -1 on the CPU backend.
    pub device_index: i32,
    /// Number of Groth16 proofs (PoRep partitions) made.
    pub partitions: u32,
    /// log2 of the FFT domain of one partition circuit.
    pub domain_log2: u32,
    /// Constraints of one partition circuit, inputs' constraints included.
    pub num_constraints: u64,
    /// Wall time of the whole call.
    pub total_ns: u64,
    /// Waiting before work on this sector began: behind the sectors before it in a batch call,
    /// and for the GPU while another call's GPU phases run.
    pub queue_wait_ns: u64,
    /// Reading the proving key from disk (0 when it was already resident).
    pub srs_load_ns: u64,
    /// Decoding the input and checking the vanilla proofs.
    pub input_check_ns: u64,
    /// Building the partition circuits and running them through the constraint system
    /// (a, b, c and the witness).
    pub synthesis_ns: u64,
    /// Sorting scalars into zero / one / full-width and building the MSM inputs.
    pub prep_msm_ns: u64,
    /// Host-to-device copies of a, b, c (GPU only; the pinning itself is `pin_ns`).
    pub pin_h2d_ns: u64,
    /// The 7 NTTs and the pointwise steps of H.
    pub ntt_ns: u64,
    pub msm_h_ns: u64,
    /// Additions of the bases whose scalar is 1 (L, A, B_G1, B_G2 together).
    pub batch_add_ns: u64,
    pub msm_l_ns: u64,
    pub msm_a_ns: u64,
    pub msm_b_g1_ns: u64,
    pub msm_b_g2_ns: u64,
    /// Combining the MSM results with r, s into A, B, C and serialising the proof.
    pub assembly_ns: u64,
    /// Verifying the proof before returning it (0 when self-verify is off).
    pub verify_ns: u64,
    // Version 2:
    /// Copying the proving key's points into device memory (0 when they were resident).
    pub srs_upload_ns: u64,
    /// Allocating pinned host buffers for the pool (0 once the pool is warm).
    pub pin_ns: u64,
    /// Where the GPU read the key from (cuzk_key_residency); 0 on the CPU backend.
    pub key_residency: u32,
    /// 1 when synthesis ran as witness generation plus sparse products with the circuit's
    /// R1CS matrices, 0 for classic synthesis (building every linear combination).
    pub r1cs_synthesis: u32,
    /// Extracting the circuit's R1CS matrices (once per circuit shape; 0 afterwards).
    pub shape_extract_ns: u64,
    /// Parts of `synthesis_ns` on the R1CS path: generating the witness, and computing
    /// a = A·z, b = B·z, c = C·z from it (not separate phases: `synthesis_ns` includes them),
    /// except that with `spmv_on_device` the products are device time, outside synthesis.
    pub witness_ns: u64,
    pub spmv_ns: u64,
    // Version 3:
    /// Copying the circuit's R1CS matrices into device memory (once per shape and device).
    pub shape_upload_ns: u64,
    /// Encoding the witness compactly (2 bits per 0/1 value) and sending it to the device,
    /// which computes a, b, c from it (`spmv_on_device`); 0 otherwise.
    pub witness_upload_ns: u64,
    /// 1 when a, b, c were computed on the device from its resident copy of the matrices:
    /// `spmv_ns` is then a GPU phase, not part of `synthesis_ns`.
    pub spmv_on_device: u32,
    pub reserved: u32,
    // Version 4:
    /// A synthesized partition waiting for the proving stage (the device busy with the
    /// partition before it or with another call's); summed over the sector's partitions.
    pub proving_wait_ns: u64,
    /// Which sector of the call these timings are of (its index in a batch; 0 for a single
    /// sector).
    pub sector_index: u32,
    /// Which partition of the sector (timings of one partition, `cuzk_prove_options.
    /// partition_timings`); -1 in a sector's timings, which sum its partitions'.
    pub partition_index: i32,
}

impl Timings {
    pub fn new() -> Self {
        Timings {
            struct_size: std::mem::size_of::<Timings>() as u32,
            version: CUZK_TIMINGS_VERSION,
            device_index: -1,
            partition_index: -1,
            ..Default::default()
        }
    }

    /// Adds what `other` measured of the same call (another stage or partition of it): its
    /// phase times, and its flags where `self` has none.
    pub fn merge(&mut self, other: &Timings) {
        let sums = [
            (&mut self.queue_wait_ns, other.queue_wait_ns),
            (&mut self.srs_load_ns, other.srs_load_ns),
            (&mut self.input_check_ns, other.input_check_ns),
            (&mut self.synthesis_ns, other.synthesis_ns),
            (&mut self.prep_msm_ns, other.prep_msm_ns),
            (&mut self.pin_h2d_ns, other.pin_h2d_ns),
            (&mut self.ntt_ns, other.ntt_ns),
            (&mut self.msm_h_ns, other.msm_h_ns),
            (&mut self.batch_add_ns, other.batch_add_ns),
            (&mut self.msm_l_ns, other.msm_l_ns),
            (&mut self.msm_a_ns, other.msm_a_ns),
            (&mut self.msm_b_g1_ns, other.msm_b_g1_ns),
            (&mut self.msm_b_g2_ns, other.msm_b_g2_ns),
            (&mut self.assembly_ns, other.assembly_ns),
            (&mut self.verify_ns, other.verify_ns),
            (&mut self.srs_upload_ns, other.srs_upload_ns),
            (&mut self.pin_ns, other.pin_ns),
            (&mut self.shape_extract_ns, other.shape_extract_ns),
            (&mut self.witness_ns, other.witness_ns),
            (&mut self.spmv_ns, other.spmv_ns),
            (&mut self.shape_upload_ns, other.shape_upload_ns),
            (&mut self.witness_upload_ns, other.witness_upload_ns),
            (&mut self.proving_wait_ns, other.proving_wait_ns),
        ];
        for (sum, ns) in sums {
            *sum += ns;
        }
        self.r1cs_synthesis |= other.r1cs_synthesis;
        self.spmv_on_device |= other.spmv_on_device;
        if self.backend == BackendKind::None as u32 {
            self.backend = other.backend;
        }
        if self.key_residency == 0 {
            self.key_residency = other.key_residency;
        }
        if self.device_index < 0 {
            self.device_index = other.device_index;
        }
        self.num_constraints = self.num_constraints.max(other.num_constraints);
        self.domain_log2 = self.domain_log2.max(other.domain_log2);
    }

    /// The phases that are disjoint parts of `total_ns`. They never overlap within a
    /// partition; with several partitions, one partition's synthesis overlaps the proving of
    /// the one before (the prove pipeline), so their sum may exceed `total_ns`.
    pub fn phases(&self) -> [(&'static str, u64); 23] {
        let spmv_gpu = if self.spmv_on_device == 1 { self.spmv_ns } else { 0 };
        [
            ("queue_wait", self.queue_wait_ns),
            ("srs_load", self.srs_load_ns),
            ("srs_upload", self.srs_upload_ns),
            ("pin", self.pin_ns),
            ("shape_extract", self.shape_extract_ns),
            ("shape_upload", self.shape_upload_ns),
            ("input_check", self.input_check_ns),
            ("synthesis", self.synthesis_ns),
            ("proving_wait", self.proving_wait_ns),
            ("prep_msm", self.prep_msm_ns),
            ("pin_h2d", self.pin_h2d_ns),
            ("witness_upload", self.witness_upload_ns),
            ("spmv_gpu", spmv_gpu),
            ("ntt", self.ntt_ns),
            ("msm_h", self.msm_h_ns),
            ("batch_add", self.batch_add_ns),
            ("msm_l", self.msm_l_ns),
            ("msm_a", self.msm_a_ns),
            ("msm_b_g1", self.msm_b_g1_ns),
            ("msm_b_g2", self.msm_b_g2_ns),
            ("assembly", self.assembly_ns),
            ("verify", self.verify_ns),
            ("total", self.total_ns),
        ]
    }
}

pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Runs `f`, adding its wall time to `slot`.
pub fn timed<T>(slot: &mut u64, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    *slot += nanos(start.elapsed());
    out
}
