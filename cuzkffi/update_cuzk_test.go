//go:build cuzk

package cuzkffi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	commcid "github.com/filecoin-project/go-fil-commcid"
	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
	"github.com/ipfs/go-cid"
)

// The update tests need a 2KiB update fixture and the update parameters (scripts/test-go.sh
// makes and sets both):
//
//	CUZK_UPDATE_FIXTURE_DIR  a directory with update.json (cuzk-fixtures update --out DIR)
//	CUZK_TEST_PARAMS         the parameter cache directory, with the update parameters
var updateFixtureDir = os.Getenv("CUZK_UPDATE_FIXTURE_DIR")

type updateFixture struct {
	proofType                      abi.RegisteredUpdateProof
	oldSealed, newSealed, unsealed cid.Cid
	vanilla                        [][]byte
}

// needUpdateFixture loads update.json, or skips the test when CUZK_UPDATE_FIXTURE_DIR is not set.
func needUpdateFixture(t *testing.T) *updateFixture {
	t.Helper()
	if updateFixtureDir == "" {
		t.Skip("CUZK_UPDATE_FIXTURE_DIR is not set: no 2KiB update fixture to prove with (cuzk-fixtures update --out DIR makes one; scripts/test-go.sh sets it)")
	}
	raw, err := os.ReadFile(filepath.Join(updateFixtureDir, "update.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		ABIProof      *int64   `json:"abi_proof"`
		CommROld      string   `json:"comm_r_old"`
		CommRNew      string   `json:"comm_r_new"`
		CommDNew      string   `json:"comm_d_new"`
		VanillaProofs []string `json:"vanilla_proofs"`
	}
	if err := json.Unmarshal(raw, &j); err != nil || j.ABIProof == nil || len(j.VanillaProofs) == 0 {
		t.Fatalf("update.json: %v (abi_proof or vanilla_proofs missing?)", err)
	}
	unhex := func(what, s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatalf("update.json: %s: %v", what, err)
		}
		return b
	}
	toCID := func(what, s string, f func([]byte) (cid.Cid, error)) cid.Cid {
		c, err := f(unhex(what, s))
		if err != nil {
			t.Fatalf("update.json: %s: %v", what, err)
		}
		return c
	}
	f := &updateFixture{
		proofType: abi.RegisteredUpdateProof(*j.ABIProof),
		oldSealed: toCID("comm_r_old", j.CommROld, commcid.ReplicaCommitmentV1ToCID),
		newSealed: toCID("comm_r_new", j.CommRNew, commcid.ReplicaCommitmentV1ToCID),
		unsealed:  toCID("comm_d_new", j.CommDNew, commcid.DataCommitmentV1ToCID),
	}
	for i, v := range j.VanillaProofs {
		f.vanilla = append(f.vanilla, unhex(fmt.Sprintf("vanilla proof %d", i), v))
	}
	return f
}

func (f *updateFixture) info(p []byte) proof.ReplicaUpdateInfo {
	return proof.ReplicaUpdateInfo{
		UpdateProofType:      f.proofType,
		OldSealedSectorCID:   f.oldSealed,
		NewSealedSectorCID:   f.newSealed,
		NewUnsealedSectorCID: f.unsealed,
		Proof:                p,
	}
}

func TestUpdateProofVerifies(t *testing.T) {
	f := needUpdateFixture(t)
	p, err := GenerateUpdateProofWithVanilla(f.proofType, f.oldSealed, f.newSealed, f.unsealed, f.vanilla)
	if err != nil {
		t.Fatalf("GenerateUpdateProofWithVanilla: %v", err)
	}
	if len(p) != 192*len(f.vanilla) {
		t.Fatalf("proof of %d bytes for %d partitions", len(p), len(f.vanilla))
	}
	if ok, err := VerifyUpdateProof(f.info(p)); err != nil || !ok {
		t.Fatalf("VerifyUpdateProof = %v, %v; want true", ok, err)
	}
	swapped := f.info(p)
	swapped.OldSealedSectorCID, swapped.NewSealedSectorCID = f.newSealed, f.oldSealed
	if ok, err := VerifyUpdateProof(swapped); err != nil || ok {
		t.Fatalf("VerifyUpdateProof with the sealed CIDs swapped = %v, %v; want false", ok, err)
	}
	var partitions []Timings
	_, tm, err := GenerateUpdateProofWithVanillaWithOptions(context.Background(), f.proofType, f.oldSealed, f.newSealed, f.unsealed,
		f.vanilla, WithPartitionTimings(&partitions))
	if err != nil || tm.Total <= 0 || len(partitions) != len(f.vanilla) {
		t.Fatalf("WithOptions: err %v, total %v, %d partition timings", err, tm.Total, len(partitions))
	}
}

func TestUpdateProofBatchFailsTheBadSectorAlone(t *testing.T) {
	f := needUpdateFixture(t)
	good := UpdateRequest{f.proofType, f.oldSealed, f.newSealed, f.unsealed, f.vanilla}
	bad := good
	bad.VanillaProofs = [][]byte{[]byte("not a vanilla proof")}
	results, err := GenerateUpdateProofBatch(context.Background(), []UpdateRequest{good, bad, good})
	if err != nil || len(results) != 3 {
		t.Fatalf("GenerateUpdateProofBatch: %v (%d results)", err, len(results))
	}
	for i, r := range results {
		if i == 1 {
			if !errors.Is(r.Err, ErrParse) {
				t.Fatalf("sector 1: %v, want ErrParse", r.Err)
			}
			continue
		}
		if r.Err != nil {
			t.Fatalf("sector %d: %v", i, r.Err)
		}
		if ok, err := VerifyUpdateProof(f.info(r.Proof)); err != nil || !ok {
			t.Fatalf("sector %d: VerifyUpdateProof = %v, %v", i, ok, err)
		}
	}
}

func TestUpdateBadArgumentsAreInvalidArgument(t *testing.T) {
	f := needUpdateFixture(t)
	cases := map[string]func() error{
		"undefined old sealed CID": func() error {
			_, err := GenerateUpdateProofWithVanilla(f.proofType, cid.Undef, f.newSealed, f.unsealed, f.vanilla)
			return err
		},
		"unsealed CID as the new sealed CID": func() error {
			_, err := GenerateUpdateProofWithVanilla(f.proofType, f.oldSealed, f.unsealed, f.unsealed, f.vanilla)
			return err
		},
		"unknown proof type": func() error {
			_, err := GenerateUpdateProofWithVanilla(abi.RegisteredUpdateProof(99), f.oldSealed, f.newSealed, f.unsealed, f.vanilla)
			return err
		},
		"no vanilla proofs": func() error {
			_, err := GenerateUpdateProofWithVanilla(f.proofType, f.oldSealed, f.newSealed, f.unsealed, nil)
			return err
		},
		"commitments of another sector": func() error {
			_, err := GenerateUpdateProofWithVanilla(f.proofType, f.newSealed, f.newSealed, f.unsealed, f.vanilla)
			return err
		},
		"verify with a truncated proof": func() error {
			_, err := VerifyUpdateProof(f.info(make([]byte, 191)))
			return err
		},
	}
	for name, call := range cases {
		if err := call(); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
}
