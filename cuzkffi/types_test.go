package cuzkffi

// The pure-Go parts, the same in both builds (these tests run in both).

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/filecoin-project/go-state-types/abi"
)

func wantIs(t *testing.T, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("got error %v, want %v", err, sentinel)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a *cuzkffi.Error", err)
	}
}

func TestProverID(t *testing.T) {
	for _, c := range []struct {
		miner abi.ActorID
		want  string // hex of the leading bytes; the rest is zero
	}{
		{0, "00"},
		{1000, "e807"}, // uvarint(1000), as filecoin-ffi derives it
		{1<<63 - 1, "ffffffffffffffff7f"},
	} {
		id, err := ProverID(c.miner)
		if err != nil {
			t.Fatalf("ProverID(%d): %v", c.miner, err)
		}
		want := make([]byte, 32)
		prefix, _ := hex.DecodeString(c.want)
		copy(want, prefix)
		if hex.EncodeToString(id[:]) != hex.EncodeToString(want) {
			t.Errorf("ProverID(%d) = %x, want %x", c.miner, id, want)
		}
	}
	// ID addresses stop at 2^63 - 1.
	_, err := ProverID(1 << 63)
	wantIs(t, err, ErrInvalidArgument)
}

func TestErrorSentinels(t *testing.T) {
	all := []error{ErrNullArgument, ErrInvalidArgument, ErrParse, ErrParametersNotFound, ErrParametersInvalid,
		ErrGPU, ErrOutOfMemory, ErrCancelled, ErrPanic, ErrInternal, ErrEngineState, ErrVerifyFailed, ErrFaultySectors}
	for i, sentinel := range all {
		status := Status(i + 1)
		err := fmt.Errorf("context: %w", &Error{Status: status, Message: "the message"})
		for j, other := range all {
			if got := errors.Is(err, other); got != (i == j) {
				t.Errorf("status %d: errors.Is(err, %v) = %v", status, other, got)
			}
		}
		if status.Sentinel() != sentinel {
			t.Errorf("Status(%d).Sentinel() = %v, want %v", status, status.Sentinel(), sentinel)
		}
		var e *Error
		if !errors.As(err, &e) || e.Status != status || e.Message != "the message" {
			t.Errorf("status %d: errors.As gave %+v", status, e)
		}
		if want := sentinel.Error() + ": the message"; e.Error() != want {
			t.Errorf("Error() = %q, want %q", e.Error(), want)
		}
	}
	unknown := &Error{Status: 99, Message: "m"}
	if unknown.Unwrap() != nil || unknown.Error() != "cuzk: status 99: m" {
		t.Errorf("unknown status: Unwrap() = %v, Error() = %q", unknown.Unwrap(), unknown.Error())
	}
}

func TestFaultySectorsError(t *testing.T) {
	var err error = &FaultySectorsError{
		Sectors: []abi.SectorNumber{3, 7},
		Err:     &Error{Status: StatusFaultySectors, Message: "the vanilla proofs of sectors [3, 7] do not verify"},
	}
	err = fmt.Errorf("deadline 4: %w", err)
	if !errors.Is(err, ErrFaultySectors) || errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("errors.Is: %v", err)
	}
	var faulty *FaultySectorsError
	var e *Error
	if !errors.As(err, &faulty) || !slices.Equal(faulty.Sectors, []abi.SectorNumber{3, 7}) || !errors.As(err, &e) || e.Status != StatusFaultySectors {
		t.Fatalf("errors.As: %+v, %+v", faulty, e)
	}
	if want := "deadline 4: cuzk: faulty sectors: the vanilla proofs of sectors [3, 7] do not verify"; err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
	if StatusFaultySectors.Sentinel() != ErrFaultySectors || StatusFaultySectors.String() != "faulty sectors" {
		t.Fatalf("StatusFaultySectors: %v, %q", StatusFaultySectors.Sentinel(), StatusFaultySectors.String())
	}
}

func TestMergeWindowPoStPartitionProofs(t *testing.T) {
	const window = abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1
	parts := []PartitionProof{
		{PoStProof: window, ProofBytes: bytes.Repeat([]byte{1}, 192)},
		{PoStProof: window, ProofBytes: bytes.Repeat([]byte{2}, 192)},
	}
	merged, err := MergeWindowPoStPartitionProofs(window, parts)
	if err != nil {
		t.Fatal(err)
	}
	if merged.PoStProof != window || !bytes.Equal(merged.ProofBytes, append(slices.Clone(parts[0].ProofBytes), parts[1].ProofBytes...)) {
		t.Fatalf("merged: type %d, %d bytes", merged.PoStProof, len(merged.ProofBytes))
	}
	// filecoin-ffi merges nothing into nothing.
	if empty, err := MergeWindowPoStPartitionProofs(window, nil); err != nil || len(empty.ProofBytes) != 0 {
		t.Fatalf("no partitions: %+v, %v", empty, err)
	}
	for _, p := range []abi.RegisteredPoStProof{abi.RegisteredPoStProof_StackedDrgWinning2KiBV1, -1, 15, 99} {
		_, err := MergeWindowPoStPartitionProofs(p, parts)
		wantIs(t, err, ErrInvalidArgument)
	}
}

// Phases lists every phase once, in the library's order, each from its field (spmv_gpu only
// when SpMV ran on the device).
func TestPhases(t *testing.T) {
	tm := Timings{QueueWait: 1, SRSLoad: 2, Synthesis: 3, SpMV: 4, NTT: 5, Verify: 6, ProvingWait: 7}
	want := []string{"queue_wait", "srs_load", "srs_upload", "pin", "shape_extract", "shape_upload", "input_check",
		"synthesis", "proving_wait", "prep_msm", "pin_h2d", "witness_upload", "spmv_gpu", "ntt", "msm_h", "batch_add",
		"msm_l", "msm_a", "msm_b_g1", "msm_b_g2", "assembly", "verify"}
	phases := tm.Phases()
	got := map[string]time.Duration{}
	for i, p := range phases {
		if i >= len(want) || p.Name != want[i] {
			t.Fatalf("phase %d is %q, want %q", i, p.Name, want[min(i, len(want)-1)])
		}
		got[p.Name] = p.Duration
	}
	if len(phases) != len(want) {
		t.Fatalf("%d phases, want %d", len(phases), len(want))
	}
	if got["queue_wait"] != 1 || got["srs_load"] != 2 || got["synthesis"] != 3 || got["ntt"] != 5 || got["verify"] != 6 ||
		got["proving_wait"] != 7 || got["spmv_gpu"] != 0 {
		t.Fatalf("phases %v", got)
	}
	tm.SpMVOnDevice = true
	for _, p := range tm.Phases() {
		if p.Name == "spmv_gpu" && p.Duration != 4 {
			t.Fatalf("spmv_gpu = %v with SpMV on the device, want 4ns", p.Duration)
		}
	}
	if got := tm.Serial(); got != 1+2+3+4+5+6+7 {
		t.Fatalf("Serial = %v one after another, want the phases' sum", got)
	}
	tm.MSMH, tm.BatchAdd, tm.MSML, tm.MSMA, tm.MSMBG1, tm.MSMBG2, tm.MSMAtOnce = 10, 15, 20, 30, 40, 50, 60
	if got := tm.Serial(); got != 1+2+3+4+5+6+7+60 {
		t.Fatalf("Serial = %v with the MSMs at once, want them counted as MSMAtOnce", got)
	}
	if BackendGPU.String() != "gpu" || BackendCPU.String() != "cpu" || Backend(7).String() != "backend(7)" {
		t.Fatalf("Backend.String: %v %v %v", BackendGPU, BackendCPU, Backend(7))
	}
}

// ErrNotBuilt is no status's sentinel: a stub's error never matches a library failure.
func TestErrNotBuiltIsNoStatus(t *testing.T) {
	for s := Status(0); s < 32; s++ {
		if s.Sentinel() == ErrNotBuilt || errors.Is(&Error{Status: s}, ErrNotBuilt) {
			t.Fatalf("status %d matches ErrNotBuilt", s)
		}
	}
}

// The options reach the call's configuration (in the cuzk build, its C options).
func TestProveOptions(t *testing.T) {
	var partitions []Timings
	c := proveConfigOf([]ProveOption{WithPriority(PriorityWindowPoSt), WithDevice(3), WithPartitionTimings(&partitions)})
	if c.priority != PriorityWindowPoSt || !c.pinDevice || c.device != 3 || c.partitions != &partitions || c.check() != nil {
		t.Fatalf("config %+v", c)
	}
	wantIs(t, proveConfigOf([]ProveOption{WithDevice(-1)}).check(), ErrInvalidArgument)
}
