//go:build !cuzk

package cuzkffi

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"testing"

	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
	"github.com/ipfs/go-cid"
)

// Every stub returns ErrNotBuilt; the table covers every function of stub.go.
func TestStubsReturnErrNotBuilt(t *testing.T) {
	ctx := context.Background()
	const window = abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1
	randomness := make(abi.PoStRandomness, 32)
	calls := map[string]func() error{
		"Init":  func() error { return Init(DefaultConfig()) },
		"Close": Close,
		"SetLogger": func() error {
			return SetLogger(slog.Default(), slog.LevelInfo)
		},
		"ReadEngineStatus":   func() error { _, err := ReadEngineStatus(); return err },
		"PreloadKey":         func() error { _, err := PreloadKey(abi.RegisteredSealProof_StackedDrg2KiBV1_1); return err },
		"EvictKey":           func() error { _, err := EvictKey(abi.RegisteredSealProof_StackedDrg2KiBV1_1); return err },
		"PreloadPoStKey":     func() error { _, err := PreloadPoStKey(window); return err },
		"EvictPoStKey":       func() error { _, err := EvictPoStKey(window); return err },
		"PreloadUpdateKey":   func() error { _, err := PreloadUpdateKey(abi.RegisteredUpdateProof_StackedDrg2KiBV1); return err },
		"EvictUpdateKey":     func() error { _, err := EvictUpdateKey(abi.RegisteredUpdateProof_StackedDrg2KiBV1); return err },
		"ReleaseMemory":      func() error { _, err := ReleaseMemory(true); return err },
		"EstimateMemory":     func() error { _, err := EstimateMemory(abi.RegisteredSealProof_StackedDrg2KiBV1_1); return err },
		"EstimatePoStMemory": func() error { _, err := EstimatePoStMemory(window); return err },
		"EstimateUpdateMemory": func() error {
			_, err := EstimateUpdateMemory(abi.RegisteredUpdateProof_StackedDrg2KiBV1)
			return err
		},
		"SealCommitPhase2": func() error { _, err := SealCommitPhase2([]byte("{}"), 1, 1000); return err },
		"SealCommitPhase2WithOptions": func() error {
			_, _, err := SealCommitPhase2WithOptions(ctx, []byte("{}"), 1, 1000, WithPriority(PriorityHigh))
			return err
		},
		"SealCommitPhase2Batch": func() error {
			_, err := SealCommitPhase2Batch(ctx, []SectorRequest{{Phase1Output: []byte("{}"), SectorNum: 1, MinerID: 1000}})
			return err
		},
		"ParseC1Info": func() error { _, err := ParseC1Info([]byte("{}")); return err },
		"VerifySeal":  func() error { _, err := VerifySeal(proof.SealVerifyInfo{}); return err },
		"GenerateSinglePartitionWindowPoStWithVanilla": func() error {
			_, err := GenerateSinglePartitionWindowPoStWithVanilla(window, 1000, randomness, [][]byte{{1}}, 0)
			return err
		},
		"GenerateSinglePartitionWindowPoStWithVanillaWithOptions": func() error {
			_, _, err := GenerateSinglePartitionWindowPoStWithVanillaWithOptions(ctx, window, 1000, randomness, [][]byte{{1}}, 0)
			return err
		},
		"GenerateWinningPoStWithVanilla": func() error {
			_, err := GenerateWinningPoStWithVanilla(abi.RegisteredPoStProof_StackedDrgWinning2KiBV1, 1000, randomness, [][]byte{{1}})
			return err
		},
		"GenerateWinningPoStWithVanillaWithOptions": func() error {
			_, _, err := GenerateWinningPoStWithVanillaWithOptions(ctx, abi.RegisteredPoStProof_StackedDrgWinning2KiBV1, 1000,
				randomness, [][]byte{{1}}, WithDevice(0))
			return err
		},
		"VerifyWindowPoSt":  func() error { _, err := VerifyWindowPoSt(proof.WindowPoStVerifyInfo{}); return err },
		"VerifyWinningPoSt": func() error { _, err := VerifyWinningPoSt(proof.WinningPoStVerifyInfo{}); return err },
		"GenerateUpdateProofWithVanilla": func() error {
			_, err := GenerateUpdateProofWithVanilla(abi.RegisteredUpdateProof_StackedDrg2KiBV1, cid.Undef, cid.Undef, cid.Undef, [][]byte{{1}})
			return err
		},
		"GenerateUpdateProofWithVanillaWithOptions": func() error {
			_, _, err := GenerateUpdateProofWithVanillaWithOptions(ctx, abi.RegisteredUpdateProof_StackedDrg2KiBV1, cid.Undef, cid.Undef,
				cid.Undef, [][]byte{{1}})
			return err
		},
		"GenerateUpdateProofBatch": func() error {
			_, err := GenerateUpdateProofBatch(ctx, []UpdateRequest{{ProofType: abi.RegisteredUpdateProof_StackedDrg2KiBV1}})
			return err
		},
		"VerifyUpdateProof": func() error { _, err := VerifyUpdateProof(proof.ReplicaUpdateInfo{}); return err },
	}
	// The three without an error result.
	withoutError := []string{"Version", "LibraryABIVersion", "DefaultConfig"}
	for _, f := range parseAPI(t) {
		if f.name != "stub.go" {
			continue
		}
		for name := range f.funcs {
			if _, ok := calls[name]; !ok && !slices.Contains(withoutError, name) {
				t.Errorf("stub %s is not checked here", name)
			}
		}
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrNotBuilt) {
			t.Errorf("%s: %v, want ErrNotBuilt", name, err)
		}
	}
	if v := Version(); v != "" {
		t.Errorf("Version() = %q, want \"\"", v)
	}
	if v := LibraryABIVersion(); v != 0 {
		t.Errorf("LibraryABIVersion() = %d, want 0", v)
	}
	if got, want := DefaultConfig(), (Config{SelfVerify: true}); !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultConfig() = %+v, want %+v", got, want)
	}
}

// What a service does without the library: derive prover ids, merge partition proofs it got
// from elsewhere, read timings, tell ErrNotBuilt from a library failure (types_test.go checks
// these parts in detail, in both builds).
func TestStubPureParts(t *testing.T) {
	if id, err := ProverID(1000); err != nil || id[0] != 0xe8 || id[1] != 0x07 {
		t.Fatalf("ProverID(1000) = %x, %v", id, err)
	}
	const window = abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1
	merged, err := MergeWindowPoStPartitionProofs(window, []PartitionProof{
		{PoStProof: window, ProofBytes: []byte{1}}, {PoStProof: window, ProofBytes: []byte{2}},
	})
	if err != nil || !bytes.Equal(merged.ProofBytes, []byte{1, 2}) {
		t.Fatalf("MergeWindowPoStPartitionProofs: %+v, %v", merged, err)
	}
	if n := len((Timings{}).Phases()); n != 22 {
		t.Fatalf("%d phases", n)
	}
	_, err = SealCommitPhase2(nil, 1, 1000)
	if errors.Is(err, ErrParse) || errors.Is(err, ErrInvalidArgument) || StatusParse.Sentinel() != ErrParse {
		t.Fatalf("ErrNotBuilt matches a status sentinel: %v", err)
	}
}
