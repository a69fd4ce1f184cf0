package cuzkffi

import (
	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
)

// PartitionProof is the proof of one WindowPoSt partition, as filecoin-ffi defines it: the
// registered PoSt proof and the partition's Groth16 proof (192 bytes), to merge with the
// deadline's other partitions' by MergeWindowPoStPartitionProofs.
type PartitionProof proof.PoStProof

// The largest vanilla proof a PoSt call accepts, and the most vanilla proofs or sectors: the
// library's limits, checked here before the proofs are copied (the cuzk build checks the
// values against the header).
const (
	maxVanillaProofBytes = 1 << 22     // CUZK_MAX_VANILLA_PROOF_BYTES
	maxPoStSectors       = 3000 * 2349 // CUZK_MAX_POST_SECTORS
)

// postKind is which PoSt a call makes or checks.
type postKind uint8

const (
	windowPoSt postKind = iota
	winningPoSt
)

func (k postKind) String() string {
	if k == winningPoSt {
		return "WinningPoSt"
	}
	return "WindowPoSt"
}

// postProofKind says which PoSt a registered PoSt proof (go-state-types numbering) is of;
// false for numbers go-state-types does not define.
func postProofKind(p abi.RegisteredPoStProof) (postKind, bool) {
	switch {
	case p >= abi.RegisteredPoStProof_StackedDrgWinning2KiBV1 && p <= abi.RegisteredPoStProof_StackedDrgWinning64GiBV1:
		return winningPoSt, true
	case p >= abi.RegisteredPoStProof_StackedDrgWindow2KiBV1 && p <= abi.RegisteredPoStProof_StackedDrgWindow64GiBV1_1:
		return windowPoSt, true
	}
	return 0, false
}

// MergeWindowPoStPartitionProofs merges a deadline's partition proofs, in partition order, into
// its WindowPoSt proof, as filecoin-ffi's function of the same signature does: the partition
// proofs' bytes concatenated, under proofType (a WindowPoSt one, else ErrInvalidArgument). It
// needs no engine.
func MergeWindowPoStPartitionProofs(proofType abi.RegisteredPoStProof, partitionProofs []PartitionProof) (*proof.PoStProof, error) {
	if kind, ok := postProofKind(proofType); !ok || kind != windowPoSt {
		return nil, newError(StatusInvalidArgument, "registered PoSt proof %d is not a WindowPoSt proof", proofType)
	}
	n := 0
	for _, p := range partitionProofs {
		n += len(p.ProofBytes)
	}
	merged := make([]byte, 0, n)
	for _, p := range partitionProofs {
		merged = append(merged, p.ProofBytes...)
	}
	return &proof.PoStProof{PoStProof: proofType, ProofBytes: merged}, nil
}
