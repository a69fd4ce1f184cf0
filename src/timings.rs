//! Per-phase timings of a call, in nanoseconds. The struct is part of the C ABI
//! (`cuzk_timings`): it starts with its own size and version so that it can grow; fields are
//! only ever appended. A phase a backend does not have stays 0 — never an invented number.

use std::time::{Duration, Instant};

/// Version of the `cuzk_timings` layout this library writes.
pub const CUZK_TIMINGS_VERSION: u32 = 5;

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

/// Per-phase timings of one call in nanoseconds (`cuzk_timings`). Within a partition the
/// phases never overlap; with several partitions, one partition's synthesis overlaps the
/// proving of the one before, so their sum may exceed `total_ns`. Phases a backend does not
/// have are 0.
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
    /// Reading the proving key from disk (0 when it was already resident): opening its file, and
    /// decoding its points into host memory where the call needs them there (the CPU, a key
    /// streamed to the device).
    pub srs_load_ns: u64,
    /// Decoding the input and checking the vanilla proofs.
    pub input_check_ns: u64,
    /// Building the partition circuits and running them through the constraint system
    /// (a, b, c and the witness).
    pub synthesis_ns: u64,
    /// Sorting scalars into zero / one / full-width and building the MSM inputs: on the host,
    /// or (a split witness with its key resident and H's MSM in chunks: a 32GiB PoRep or update
    /// partition) on the device, its time there counted here.
    pub prep_msm_ns: u64,
    /// Host-to-device copies of a, b, c (GPU only; the pinning itself is `pin_ns`).
    pub pin_h2d_ns: u64,
    /// The 6 NTTs and the pointwise steps of H.
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
    /// Copying the proving key's points into device memory (0 when they were resident), decoded
    /// from its file part by part as they go when the host does not hold them. A proof's
    /// timings count an upload started with the call too, beside its synthesis: its
    /// partitions' proving wait holds what they waited for it.
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
    /// partition before it, with another call's, or with the key's upload started with the
    /// call), and, between its MSMs, making way for calls of higher classes; summed over the
    /// sector's partitions.
    pub proving_wait_ns: u64,
    /// Which sector of the call these timings are of (its index in a batch; 0 for a single
    /// sector).
    pub sector_index: u32,
    /// Which partition of the sector (timings of one partition, `cuzk_prove_options.
    /// partition_timings`); -1 in a sector's timings, which sum its partitions'.
    pub partition_index: i32,
    // Version 5:
    /// Wall time of the H, L, A, B_G1 and B_G2 MSMs (batch additions included) when they ran
    /// at the same time, each query on a stream of its own: a witness read on the device with
    /// queries of up to 2^20 points, or a split witness with H's query of up to 2^22 − 1 and
    /// the key resident. Each one's own duration is still in `msm_h_ns` … `msm_b_g2_ns` and
    /// `batch_add_ns`, and these overlap. 0 when they ran one after another. Where the phases
    /// add up to `total_ns`, the six count as this once (`Timings::serial_ns`). A split
    /// witness's MSMs start before the quotient stage: their start (their inputs sent) counts
    /// here with the wall from H's launch, and their own durations overlap `ntt_ns` too.
    pub msm_at_once_ns: u64,
}

/// What a span of a call is to `total_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A phase: a disjoint part of `total_ns`, listed by `Timings::phases`.
    Phase,
    /// A part of the synthesis phase (its R1CS path), not a phase of its own.
    PartOfSynthesis,
    /// The wall time of phases that ran at the same time ([`AT_ONCE`]), not a phase of its own.
    WallOfOverlap,
}

/// The phases that may run at the same time, `msm_at_once_ns` being then their wall time.
pub const AT_ONCE: [&str; 6] = ["msm_h", "batch_add", "msm_l", "msm_a", "msm_b_g1", "msm_b_g2"];

/// A span of a call that a duration field of `Timings` measures.
pub struct Span {
    /// Its name: in `Timings::phases`, the Go package's `Timings.Phases`, and the `<name>_s`
    /// keys of cuzk-bench's records.
    pub name: &'static str,
    /// The field of `Timings` (and of `cuzk_timings`) that holds it, in nanoseconds.
    pub field: &'static str,
    pub role: Role,
    /// Whether the field holds this span in a given call's timings: `spmv_ns` is host time
    /// inside synthesis or device time of its own, as `spmv_on_device` says.
    applies: fn(&Timings) -> bool,
    get: fn(&Timings) -> u64,
    get_mut: fn(&mut Timings) -> &mut u64,
}

impl Span {
    /// The span's time in `t`: its field, or 0 where the field holds the other span.
    pub fn ns(&self, t: &Timings) -> u64 {
        if (self.applies)(t) {
            (self.get)(t)
        } else {
            0
        }
    }
}

/// The `Span` named `$name` that the `Timings` field `$field` holds (where `$applies`).
macro_rules! span {
    ($name:literal, $role:ident, $field:ident) => {
        span!($name, $role, $field, |_| true)
    };
    ($name:literal, $role:ident, $field:ident, $applies:expr) => {
        Span {
            name: $name,
            field: stringify!($field),
            role: Role::$role,
            applies: $applies,
            get: |t| t.$field,
            get_mut: |t| &mut t.$field,
        }
    };
}

/// Every duration of `Timings` but `total_ns`, in the order the spans run (a part after the
/// phase it is part of). The one list of them: `Timings::merge` and `Timings::phases` are made
/// from it, and tests/phases.rs checks the C header, the Go package, the C example and
/// scripts/bench-table.py against it. Each field is one span, except `spmv_ns`: the products
/// a = A·z, b = B·z, c = C·z are part of synthesis on the host and a phase of their own on the
/// device, and exactly one of its two spans applies to a call.
pub const SPANS: &[Span] = &[
    span!("queue_wait", Phase, queue_wait_ns),
    span!("srs_load", Phase, srs_load_ns),
    span!("srs_upload", Phase, srs_upload_ns),
    span!("pin", Phase, pin_ns),
    span!("shape_extract", Phase, shape_extract_ns),
    span!("shape_upload", Phase, shape_upload_ns),
    span!("input_check", Phase, input_check_ns),
    span!("synthesis", Phase, synthesis_ns),
    span!("witness", PartOfSynthesis, witness_ns),
    span!("spmv_host", PartOfSynthesis, spmv_ns, |t| t.spmv_on_device != 1),
    span!("proving_wait", Phase, proving_wait_ns),
    span!("prep_msm", Phase, prep_msm_ns),
    span!("pin_h2d", Phase, pin_h2d_ns),
    span!("witness_upload", Phase, witness_upload_ns),
    span!("spmv_gpu", Phase, spmv_ns, |t| t.spmv_on_device == 1),
    span!("ntt", Phase, ntt_ns),
    span!("msm_h", Phase, msm_h_ns),
    span!("batch_add", Phase, batch_add_ns),
    span!("msm_l", Phase, msm_l_ns),
    span!("msm_a", Phase, msm_a_ns),
    span!("msm_b_g1", Phase, msm_b_g1_ns),
    span!("msm_b_g2", Phase, msm_b_g2_ns),
    span!("msm_at_once", WallOfOverlap, msm_at_once_ns),
    span!("assembly", Phase, assembly_ns),
    span!("verify", Phase, verify_ns),
];

/// How many of `SPANS` are phases.
pub const PHASE_COUNT: usize = {
    let mut count = 0;
    let mut i = 0;
    while i < SPANS.len() {
        if matches!(SPANS[i].role, Role::Phase) {
            count += 1;
        }
        i += 1;
    }
    count
};

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
    /// durations, and its flags where `self` has none.
    pub fn merge(&mut self, other: &Timings) {
        for span in SPANS.iter().filter(|span| (span.applies)(other)) {
            *(span.get_mut)(self) += (span.get)(other);
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

    /// The phases of `SPANS` in their order, then `total`. They never overlap within a
    /// partition; with several partitions, one partition's synthesis overlaps the proving of
    /// the one before (the prove pipeline), so their sum may exceed `total_ns`.
    pub fn phases(&self) -> [(&'static str, u64); PHASE_COUNT + 1] {
        let mut phases = SPANS
            .iter()
            .filter(|span| span.role == Role::Phase)
            .map(|span| (span.name, span.ns(self)))
            .chain([("total", self.total_ns)]);
        std::array::from_fn(|_| phases.next().expect("PHASE_COUNT counts the phases of SPANS"))
    }
}

impl Timings {
    /// The MSM phases' time ([`AT_ONCE`]: H's, the batch additions and the tails) as the
    /// call's wall counts it: their sum, or their wall time when they ran at the same time.
    pub fn msms_ns(&self) -> u64 {
        match self.msm_at_once_ns {
            0 => self.msm_h_ns + self.batch_add_ns + self.msm_l_ns + self.msm_a_ns + self.msm_b_g1_ns + self.msm_b_g2_ns,
            wall => wall,
        }
    }

    /// The phases' time as `total_ns` counts it: their sum, with the [`AT_ONCE`] phases
    /// counted as their wall time when they overlapped (`msm_at_once_ns` non-zero).
    pub fn serial_ns(&self) -> u64 {
        let phases = self.phases();
        let sum = |keep: &dyn Fn(&str) -> bool| -> u64 { phases.iter().filter(|(name, _)| *name != "total" && keep(name)).map(|(_, ns)| ns).sum() };
        if self.msm_at_once_ns == 0 {
            sum(&|_| true)
        } else {
            sum(&|name| !AT_ONCE.contains(&name)) + self.msm_at_once_ns
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields of `Timings` in declaration order, as its derived `Debug` writes them.
    fn field_names() -> Vec<String> {
        let debug = format!("{:?}", Timings::default());
        let fields = debug
            .strip_prefix("Timings { ")
            .and_then(|f| f.strip_suffix(" }"))
            .expect("derived Debug of a struct");
        fields.split(", ").map(|field| field.split(':').next().unwrap().to_string()).collect()
    }

    #[test]
    fn spans_hold_every_duration_field_once() {
        let fields = field_names();
        assert_eq!(fields[0], "struct_size", "{fields:?}");
        let durations: Vec<&String> = fields.iter().filter(|f| f.ends_with("_ns") && *f != "total_ns").collect();
        for span in SPANS {
            assert!(
                durations.iter().any(|f| *f == span.field),
                "span {} holds {}, not a duration field of Timings",
                span.name,
                span.field
            );
        }
        for spmv_on_device in [0, 1] {
            let t = Timings {
                spmv_on_device,
                ..Timings::new()
            };
            for field in &durations {
                let spans: Vec<&str> = SPANS.iter().filter(|s| s.field == *field && (s.applies)(&t)).map(|s| s.name).collect();
                assert_eq!(spans.len(), 1, "{field} is in the spans {spans:?} with spmv_on_device = {spmv_on_device}");
            }
        }
    }

    #[test]
    fn serial_time_counts_the_msms_run_at_once_as_their_wall_time() {
        let mut t = Timings {
            ntt_ns: 10,
            msm_h_ns: 20,
            batch_add_ns: 25,
            msm_l_ns: 30,
            msm_a_ns: 40,
            msm_b_g1_ns: 50,
            msm_b_g2_ns: 60,
            assembly_ns: 5,
            ..Timings::new()
        };
        assert_eq!(t.serial_ns(), 10 + 20 + 25 + 30 + 40 + 50 + 60 + 5, "one after another");
        assert_eq!(t.msms_ns(), 20 + 25 + 30 + 40 + 50 + 60, "one after another");
        t.msm_at_once_ns = 70;
        assert_eq!(t.serial_ns(), 10 + 70 + 5, "at once: their wall time, once");
        assert_eq!(t.msms_ns(), 70, "at once: their wall time");
        assert!(SPANS.iter().any(|s| s.name == "msm_at_once" && s.role == Role::WallOfOverlap));
        for name in AT_ONCE {
            assert!(SPANS.iter().any(|s| s.name == name && s.role == Role::Phase), "{name}");
        }
    }

    #[test]
    fn merge_adds_every_duration_and_phases_list_them() {
        for spmv_on_device in [0, 1] {
            let mut part = Timings {
                spmv_on_device,
                total_ns: 1000,
                ..Timings::new()
            };
            for (i, span) in SPANS.iter().enumerate() {
                *(span.get_mut)(&mut part) = i as u64 + 1;
            }
            let mut sum = Timings::new();
            sum.merge(&part);
            sum.merge(&part);
            for span in SPANS {
                assert_eq!(span.ns(&sum), 2 * span.ns(&part), "{}", span.name);
            }
            let phases = sum.phases();
            let names: Vec<&str> = phases.iter().map(|(name, _)| *name).collect();
            let expected: Vec<&str> = SPANS.iter().filter(|s| s.role == Role::Phase).map(|s| s.name).chain(["total"]).collect();
            assert_eq!(names, expected);
            assert_eq!(
                phases.iter().find(|(name, _)| *name == "spmv_gpu").unwrap().1,
                spmv_on_device as u64 * 2 * part.spmv_ns
            );
        }
    }
}
