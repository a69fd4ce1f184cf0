package cuzk

/*
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/filecoin-project/go-address"
	"github.com/filecoin-project/go-state-types/abi"
)

// Backend says which kind of backend ran a proof.
type Backend uint32

// Backends (cuzk_backend_kind).
const (
	BackendNone Backend = C.CUZK_BACKEND_KIND_NONE
	BackendCPU  Backend = C.CUZK_BACKEND_KIND_CPU
	BackendGPU  Backend = C.CUZK_BACKEND_KIND_GPU
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

// KeyResidency is where the GPU read a proof's proving key from (cuzk_key_residency).
type KeyResidency uint32

const (
	KeyNotOnGPU KeyResidency = C.CUZK_KEY_RESIDENCY_NOT_ON_GPU
	KeyResident KeyResidency = C.CUZK_KEY_RESIDENCY_RESIDENT
	KeyStreamed KeyResidency = C.CUZK_KEY_RESIDENCY_STREAMED
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
	SRSUpload time.Duration // copying the proving key to device memory (0 when resident)
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
	Assembly      time.Duration // combining into A, B, C and serialising the proof
	Verify        time.Duration // self-verification (0 when it is off)
	// ProvingWait is synthesized partitions waiting for the proving stage (the GPU busy with
	// the partition before or with another call).
	ProvingWait time.Duration

	// SectorIndex is the sector of the call these timings are of (its index in a batch);
	// PartitionIndex the partition in a partition's timings, -1 in a sector's.
	SectorIndex    int
	PartitionIndex int
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

func nanos(ns C.uint64_t) time.Duration {
	if uint64(ns) > math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ns)
}

func timingsFromC(ct *C.cuzk_timings) Timings {
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
	}
}

// Priority is the class of a call's work, by deadline (cuzk_prove_options.priority). A class
// takes each GPU before waiting calls of lower classes, so it overtakes a running batch at the
// batch's next partition boundary; within a class calls take the GPU in arrival order. From
// the top: WinningPoSt (block production, seconds of slack), WindowPoSt (minutes), sealing
// (hours).
type Priority uint32

const (
	// PriorityNormal is the proof kind's own class: WinningPoSt's calls the top class
	// (PriorityHigh), WindowPoSt's PriorityWindowPoSt, PoRep C2's PrioritySealing. The default.
	PriorityNormal Priority = C.CUZK_PRIORITY_NORMAL
	// PriorityHigh is the top class, WinningPoSt's: before every other class, and its calls
	// never wait for the host memory budget.
	PriorityHigh Priority = C.CUZK_PRIORITY_HIGH
	// PriorityWindowPoSt is the WindowPoSt class: after the top class, before sealing work.
	PriorityWindowPoSt Priority = C.CUZK_PRIORITY_WINDOW_POST
	// PrioritySealing is the sealing class (PoRep C2), after every other.
	PrioritySealing Priority = C.CUZK_PRIORITY_SEALING
)

// ProveOption changes how a proving call (SealCommitPhase2WithTimings, SealCommitPhase2Batch,
// GenerateSinglePartitionWindowPoStWithVanillaWithTimings,
// GenerateWinningPoStWithVanillaWithTimings) proves.
type ProveOption func(*proveConfig)

type proveConfig struct {
	priority   Priority
	pinDevice  bool
	device     int
	partitions *[]Timings
}

// WithPriority sets the call's class (PriorityNormal, the proof kind's own, by default).
func WithPriority(p Priority) ProveOption {
	return func(c *proveConfig) { c.priority = p }
}

// WithDevice runs the call's GPU phases on CUDA device ordinal instead of the least busy one.
// On an engine without GPUs (Config.CPUOnly, or none present) the call fails with
// ErrInvalidArgument.
func WithDevice(ordinal int) ProveOption {
	return func(c *proveConfig) { c.pinDevice, c.device = true, ordinal }
}

// WithPartitionTimings makes SealCommitPhase2WithTimings store the timings of each partition
// in *dst, in order (SealCommitPhase2Batch always gives them in SectorResult.Partitions).
func WithPartitionTimings(dst *[]Timings) ProveOption {
	return func(c *proveConfig) { c.partitions = dst }
}

func proveConfigOf(opts []ProveOption) proveConfig {
	var c proveConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// check refuses options the C struct cannot carry.
func (c proveConfig) check() error {
	if c.pinDevice && (c.device < 0 || c.device > math.MaxUint32) {
		return newError(StatusInvalidArgument, "device %d out of range", c.device)
	}
	return nil
}

// maxPartitions is the most partitions a PoRep sector has (32GiB and 64GiB: 10).
const maxPartitions = 10

// partitionTimings is a C array for the library to write n sectors' partition timings into.
type partitionTimings []C.cuzk_timings

func newPartitionTimings(sectors int) partitionTimings {
	pt := partitionTimings(cArray[C.cuzk_timings](sectors * maxPartitions))
	for i := range pt {
		pt[i].struct_size = C.uint32_t(unsafe.Sizeof(pt[i]))
	}
	return pt
}

// setIn points opts at the array.
func (pt partitionTimings) setIn(opts *C.cuzk_prove_options) {
	opts.partition_timings = &pt[0]
	opts.partition_timings_len = C.size_t(len(pt))
}

// of returns the timings the library wrote for sector i (entries it did not write keep a
// zero version).
func (pt partitionTimings) of(sector int) []Timings {
	var out []Timings
	for i := range pt {
		if pt[i].version != 0 && int(pt[i].sector_index) == sector {
			out = append(out, timingsFromC(&pt[i]))
		}
	}
	return out
}

func (pt partitionTimings) free() {
	C.free(unsafe.Pointer(&pt[0]))
}

// ProverID is the 32-byte prover id of a miner, derived as filecoin-ffi does: the payload of
// the miner's ID address, zero-padded.
func ProverID(minerID abi.ActorID) ([32]byte, error) {
	var id [32]byte
	addr, err := address.NewIDAddress(uint64(minerID))
	if err != nil {
		return id, newError(StatusInvalidArgument, "miner id %d: %v", minerID, err)
	}
	payload := addr.Payload()
	if len(payload) > len(id) {
		return id, newError(StatusInvalidArgument, "miner id %d: address payload is %d bytes", minerID, len(payload))
	}
	copy(id[:], payload)
	return id, nil
}

// SealCommitPhase2 makes the PoRep proof of a sector from its commit phase 1 output (the JSON
// of filecoin-proofs-api's SealCommitPhase1Output), like filecoin-ffi's function of the same
// signature. It blocks until the proof is made and cannot be cancelled: see
// SealCommitPhase2WithTimings.
func SealCommitPhase2(phase1Output []byte, sectorNum abi.SectorNumber, minerID abi.ActorID) ([]byte, error) {
	proof, _, err := SealCommitPhase2WithTimings(context.Background(), phase1Output, sectorNum, minerID)
	return proof, err
}

// SealCommitPhase2WithTimings is SealCommitPhase2 with a context and the per-phase timings.
//
// When ctx is done before the proof is made, it returns ctx.Err() at once (the proof is then
// lost) and the engine stops the proof at its next phase boundary, in the background: a proof
// queued behind it may wait until then, and Close waits for it.
func SealCommitPhase2WithTimings(ctx context.Context, phase1Output []byte, sectorNum abi.SectorNumber, minerID abi.ActorID, opts ...ProveOption) ([]byte, Timings, error) {
	config := proveConfigOf(opts)
	if err := ctx.Err(); err != nil {
		return nil, Timings{}, err
	}
	if err := config.check(); err != nil {
		return nil, Timings{}, err
	}
	proverID, err := ProverID(minerID)
	if err != nil {
		return nil, Timings{}, err
	}
	eng, err := acquire()
	if err != nil {
		return nil, Timings{}, err
	}
	r, err := callCancellable(ctx, eng, func(tok *C.cuzk_cancel_token) proveResult {
		return eng.sealCommitPhase2(phase1Output, uint64(sectorNum), &proverID, config, tok)
	}, func(r proveResult) error { return r.err })
	if err != nil {
		return nil, Timings{}, err
	}
	if config.partitions != nil {
		*config.partitions = r.partitions
	}
	return r.resultFor(ctx)
}

// callCancellable makes a library call that takes a cancel token (NULL when ctx can never be
// done) and releases eng after it. When ctx is done first it returns ctx.Err() at once; the
// token is cancelled and the call ends at its next phase boundary in the background (errOf
// gives its error to the test hook).
func callCancellable[R any](ctx context.Context, eng *engine, call func(*C.cuzk_cancel_token) R, errOf func(R) error) (R, error) {
	if ctx.Done() == nil { // never cancelled: no token, no goroutine
		defer eng.release()
		return call(nil), nil
	}
	tok := &cancelToken{ptr: C.cuzk_cancel_token_new()}
	done := make(chan R, 1)
	go func() {
		defer eng.release()
		r := call(tok.ptr)
		tok.free() // the library call has returned: nothing uses the token any more
		if h := testHookCallReturned; h != nil {
			h(errOf(r))
		}
		done <- r
	}()

	select {
	case r := <-done:
		return r, nil
	case <-ctx.Done():
		select {
		case r := <-done: // finished at the same time: keep the result
			return r, nil
		default:
		}
		tok.cancel()
		var none R
		return none, ctx.Err()
	}
}

// testHookCallReturned, when set (by tests only), is called when a cancellable library call
// has returned, with its error.
var testHookCallReturned func(error)

type proveResult struct {
	proof      []byte
	timings    Timings
	partitions []Timings
	err        error
}

func (r proveResult) resultFor(ctx context.Context) ([]byte, Timings, error) {
	if errors.Is(r.err, ErrCancelled) && ctx.Err() != nil {
		return nil, Timings{}, ctx.Err()
	}
	return r.proof, r.timings, r.err
}

// cOptions are the call's cuzk_prove_options (without partition timings).
func (c proveConfig) cOptions(tok *C.cuzk_cancel_token) C.cuzk_prove_options {
	var opts C.cuzk_prove_options
	opts.struct_size = C.uint32_t(unsafe.Sizeof(opts))
	opts.cancel = tok
	opts.pin_device = C.bool(c.pinDevice)
	opts.device = C.uint32_t(c.device)
	opts.priority = C.uint32_t(c.priority)
	return opts
}

// cancelToken owns a cuzk_cancel_token; cancel and free may race (a context cancelled just as
// the call returns), so both take mu and the token is cancelled only while not yet freed.
type cancelToken struct {
	mu  sync.Mutex
	ptr *C.cuzk_cancel_token
}

func (t *cancelToken) cancel() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ptr != nil {
		C.cuzk_cancel_token_cancel(t.ptr)
	}
}

func (t *cancelToken) free() {
	t.mu.Lock()
	defer t.mu.Unlock()
	C.cuzk_cancel_token_free(t.ptr)
	t.ptr = nil
}

// sealCommitPhase2 makes the library call. Only Go memory without Go pointers is passed
// (the input bytes, the prover id, the options and timings structs, the out-pointers), and
// only for the duration of the call.
func (e *engine) sealCommitPhase2(c1 []byte, sector uint64, proverID *[32]byte, config proveConfig, tok *C.cuzk_cancel_token) proveResult {
	return callProve("cuzk_seal_commit_phase2", config, tok, func(opts *C.cuzk_prove_options, out **C.cuzk_bytes, ct *C.cuzk_timings, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_seal_commit_phase2(e.ptr, bytesArg(c1), C.size_t(len(c1)), C.uint64_t(sector),
			(*C.uint8_t)(unsafe.Pointer(&proverID[0])), opts, out, ct, cerr)
	})
}

// callProve makes one prove call of the library (`name`) through call, given the call's
// options and where its proof, timings and error go; the proof is copied out and the
// library's bytes freed.
func callProve(name string, config proveConfig, tok *C.cuzk_cancel_token,
	call func(*C.cuzk_prove_options, **C.cuzk_bytes, *C.cuzk_timings, **C.cuzk_error) C.enum_cuzk_status) proveResult {
	opts := config.cOptions(tok)
	var partitions partitionTimings
	if config.partitions != nil {
		partitions = newPartitionTimings(1)
		defer partitions.free()
		partitions.setIn(&opts)
	}
	var ct C.cuzk_timings
	ct.struct_size = C.uint32_t(unsafe.Sizeof(ct))
	var out *C.cuzk_bytes
	var cerr *C.cuzk_error
	status := call(&opts, &out, &ct, &cerr)
	defer C.cuzk_bytes_free(out) // NULL on failure
	if err := takeError(status, cerr); err != nil {
		return proveResult{err: err}
	}
	if out == nil || out.data == nil || out.len == 0 {
		return proveResult{err: newError(StatusInternal, "%s returned no proof", name)}
	}
	if out.len > math.MaxInt32 {
		return proveResult{err: newError(StatusInternal, "%s returned a proof of %d bytes", name, uint64(out.len))}
	}
	proof := C.GoBytes(unsafe.Pointer(out.data), C.int(out.len))
	return proveResult{proof: proof, timings: timingsFromC(&ct), partitions: partitions.of(0)}
}
