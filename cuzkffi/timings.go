package cuzkffi

import (
	"math"
	"strconv"
	"time"
)

// Backend says which kind of backend ran a proof.
type Backend uint32

// Backends (cuzk_backend_kind; the cuzk build checks the values against the header).
const (
	BackendNone Backend = 0
	BackendCPU  Backend = 1
	BackendGPU  Backend = 2
)

func (b Backend) String() string {
	switch b {
	case BackendNone:
		return "none"
	case BackendCPU:
		return "cpu"
	case BackendGPU:
		return "gpu"
	}
	return "backend(" + strconv.FormatUint(uint64(b), 10) + ")"
}

// KeyResidency is where the GPU read a proof's proving key from (cuzk_key_residency; the cuzk
// build checks the values against the header).
type KeyResidency uint32

const (
	KeyNotOnGPU KeyResidency = 0
	KeyResident KeyResidency = 1
	KeyStreamed KeyResidency = 2
)

// Timings are the per-phase timings of one proof (cuzk_timings). Within a partition the
// phases never overlap; with several partitions one partition's synthesis overlaps the proving
// of the one before, so their sum may exceed Total. Phases a backend does not have are 0.
type Timings struct {
	Backend        Backend // BackendCPU or BackendGPU
	DeviceIndex    int     // CUDA device that ran the GPU phases; -1 on the CPU backend
	Partitions     int     // Groth16 proofs made: PoRep partitions; 1 for a PoSt
	NumConstraints uint64  // constraints of one partition circuit
	DomainLog2     int     // log2 of the FFT domain of one partition circuit

	// KeyResidency says where the GPU read the proving key from: KeyResident (device
	// memory, kept between calls) or KeyStreamed (host memory, sent per call: the key did not
	// fit the device budget); KeyNotOnGPU on the CPU backend.
	KeyResidency KeyResidency

	Total     time.Duration // wall time of the whole call
	QueueWait time.Duration // waiting before work on the sector began
	SRSLoad   time.Duration // reading the proving key (0 when already resident)
	SRSUpload time.Duration // copying the proving key to device memory (0 when resident; beside synthesis when started with the call)
	Pin       time.Duration // allocating pinned host buffers (0 once the pool is warm)
	// ShapeExtract is extracting the circuit's R1CS matrices (once per proof kind).
	ShapeExtract time.Duration
	InputCheck   time.Duration // decoding the C1 or PoSt vanilla proofs and checking them
	Synthesis    time.Duration // running the circuits (a, b, c and the witness)
	// Witness and SpMV are the parts of Synthesis on the R1CS path (R1CSSynthesis true):
	// generating the witness, then a = A·z, b = B·z, c = C·z; not phases of their own —
	// except with SpMVOnDevice, where the GPU computed a, b, c from its resident copy of the
	// circuit's matrices: SpMV is then GPU time outside Synthesis, after WitnessUpload
	// (encoding the witness compactly and sending it).
	Witness       time.Duration
	SpMV          time.Duration
	R1CSSynthesis bool
	SpMVOnDevice  bool
	WitnessUpload time.Duration
	ShapeUpload   time.Duration // copying the circuit's matrices to the device (once)
	PrepMSM       time.Duration // sorting scalars and building the MSM inputs
	PinH2D        time.Duration // host-to-device copies of a, b, c (GPU only)
	NTT           time.Duration // the NTTs and pointwise steps of H
	MSMH          time.Duration
	BatchAdd      time.Duration // additions of the bases whose scalar is 1
	MSML          time.Duration
	MSMA          time.Duration
	MSMBG1        time.Duration
	MSMBG2        time.Duration
	// MSMAtOnce is the wall time of MSMH, BatchAdd, MSML, MSMA, MSMBG1 and MSMBG2 when they ran
	// at the same time (each query on a stream of its own; their durations overlap), 0 when one
	// after another. A split witness's MSMs start before H's transforms: their start counts
	// here, and their durations overlap NTT too.
	MSMAtOnce time.Duration
	Assembly  time.Duration // combining into A, B, C and serialising the proof
	Verify    time.Duration // self-verification (0 when it is off)
	// ProvingWait is synthesized partitions waiting for the proving stage (the GPU busy with
	// the partition before, with another call, or with the key's upload started with the call).
	ProvingWait time.Duration

	// SectorIndex is the sector of the call these timings are of (its index in a batch);
	// PartitionIndex the partition in a partition's timings, -1 in a sector's.
	SectorIndex    int
	PartitionIndex int
}

// Serial is the phases' time as Total counts it: their sum, with MSMH, BatchAdd, MSML, MSMA,
// MSMBG1 and MSMBG2 counted once as MSMAtOnce when they ran at the same time (their durations
// overlap).
func (t Timings) Serial() time.Duration {
	var sum time.Duration
	for _, p := range t.Phases() {
		sum += p.Duration
	}
	if t.MSMAtOnce > 0 {
		sum += t.MSMAtOnce - (t.MSMH + t.BatchAdd + t.MSML + t.MSMA + t.MSMBG1 + t.MSMBG2)
	}
	return sum
}

// spmvOnGPU is SpMV when it was a GPU phase (SpMVOnDevice), else 0 (part of Synthesis).
func (t Timings) spmvOnGPU() time.Duration {
	if t.SpMVOnDevice {
		return t.SpMV
	}
	return 0
}

// Phase is one named phase of Timings.
type Phase struct {
	Name     string
	Duration time.Duration
}

// Phases lists the phases in the order they run (Total not included): those of the library's
// list (src/timings.rs, SPANS), which tests/phases.rs checks this one against.
func (t Timings) Phases() []Phase {
	return []Phase{
		{"queue_wait", t.QueueWait},
		{"srs_load", t.SRSLoad},
		{"srs_upload", t.SRSUpload},
		{"pin", t.Pin},
		{"shape_extract", t.ShapeExtract},
		{"shape_upload", t.ShapeUpload},
		{"input_check", t.InputCheck},
		{"synthesis", t.Synthesis},
		{"proving_wait", t.ProvingWait},
		{"prep_msm", t.PrepMSM},
		{"pin_h2d", t.PinH2D},
		{"witness_upload", t.WitnessUpload},
		{"spmv_gpu", t.spmvOnGPU()},
		{"ntt", t.NTT},
		{"msm_h", t.MSMH},
		{"batch_add", t.BatchAdd},
		{"msm_l", t.MSML},
		{"msm_a", t.MSMA},
		{"msm_b_g1", t.MSMBG1},
		{"msm_b_g2", t.MSMBG2},
		{"assembly", t.Assembly},
		{"verify", t.Verify},
	}
}

// nanos is a duration of the C ABI (nanoseconds), saturated at the largest time.Duration.
func nanos(ns uint64) time.Duration {
	if ns > math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}

// rawTimings is cuzk_timings (include/cuzk.h) field by field, with the header's names and
// widths: the cuzk build reads the library's cuzk_timings as one (rawTimingsOf), and checks at
// compile time that every field has the header's name, type and offset and that the sizes are
// equal, so a change of the header fails the build until this mirror follows it. It lives here,
// in pure Go, so that timingsFromC sits next to Phases (tests/phases.rs reads both from this
// file).
type rawTimings struct {
	struct_size       uint32
	version           uint32
	backend           uint32
	device_index      int32
	partitions        uint32
	domain_log2       uint32
	num_constraints   uint64
	total_ns          uint64
	queue_wait_ns     uint64
	srs_load_ns       uint64
	input_check_ns    uint64
	synthesis_ns      uint64
	prep_msm_ns       uint64
	pin_h2d_ns        uint64
	ntt_ns            uint64
	msm_h_ns          uint64
	batch_add_ns      uint64
	msm_l_ns          uint64
	msm_a_ns          uint64
	msm_b_g1_ns       uint64
	msm_b_g2_ns       uint64
	assembly_ns       uint64
	verify_ns         uint64
	srs_upload_ns     uint64
	pin_ns            uint64
	key_residency     uint32
	r1cs_synthesis    uint32
	shape_extract_ns  uint64
	witness_ns        uint64
	spmv_ns           uint64
	shape_upload_ns   uint64
	witness_upload_ns uint64
	spmv_on_device    uint32
	reserved          uint32
	proving_wait_ns   uint64
	sector_index      uint32
	partition_index   int32
	msm_at_once_ns    uint64
}

// timingsFromC converts the library's timings (read as rawTimings) into Timings.
func timingsFromC(ct *rawTimings) Timings {
	return Timings{
		Backend:        Backend(ct.backend),
		DeviceIndex:    int(ct.device_index),
		Partitions:     int(ct.partitions),
		NumConstraints: uint64(ct.num_constraints),
		DomainLog2:     int(ct.domain_log2),
		Total:          nanos(ct.total_ns),
		QueueWait:      nanos(ct.queue_wait_ns),
		SRSLoad:        nanos(ct.srs_load_ns),
		SRSUpload:      nanos(ct.srs_upload_ns),
		Pin:            nanos(ct.pin_ns),
		KeyResidency:   KeyResidency(ct.key_residency),
		ShapeExtract:   nanos(ct.shape_extract_ns),
		Witness:        nanos(ct.witness_ns),
		SpMV:           nanos(ct.spmv_ns),
		R1CSSynthesis:  ct.r1cs_synthesis == 1,
		SpMVOnDevice:   ct.spmv_on_device == 1,
		WitnessUpload:  nanos(ct.witness_upload_ns),
		ShapeUpload:    nanos(ct.shape_upload_ns),
		InputCheck:     nanos(ct.input_check_ns),
		Synthesis:      nanos(ct.synthesis_ns),
		PrepMSM:        nanos(ct.prep_msm_ns),
		PinH2D:         nanos(ct.pin_h2d_ns),
		NTT:            nanos(ct.ntt_ns),
		MSMH:           nanos(ct.msm_h_ns),
		BatchAdd:       nanos(ct.batch_add_ns),
		MSML:           nanos(ct.msm_l_ns),
		MSMA:           nanos(ct.msm_a_ns),
		MSMBG1:         nanos(ct.msm_b_g1_ns),
		MSMBG2:         nanos(ct.msm_b_g2_ns),
		Assembly:       nanos(ct.assembly_ns),
		Verify:         nanos(ct.verify_ns),
		ProvingWait:    nanos(ct.proving_wait_ns),
		SectorIndex:    int(ct.sector_index),
		PartitionIndex: int(ct.partition_index),
		MSMAtOnce:      nanos(ct.msm_at_once_ns),
	}
}
