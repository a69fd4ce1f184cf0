package cuzkffi

import (
	"github.com/filecoin-project/go-address"
	"github.com/filecoin-project/go-state-types/abi"
)

// SectorRequest is one sector of SealCommitPhase2Batch: the arguments of SealCommitPhase2.
type SectorRequest struct {
	Phase1Output []byte
	SectorNum    abi.SectorNumber
	MinerID      abi.ActorID
}

// SectorResult is the outcome of one sector of SealCommitPhase2Batch or
// GenerateUpdateProofBatch: its proof, its timings and each partition's, or its error.
type SectorResult struct {
	Proof      []byte
	Timings    Timings
	Partitions []Timings
	Err        error
}

// C1Info is what a commit phase 1 output says about its sector: with the miner and sector
// ids, everything VerifySeal needs besides the proof (CommR and CommD are the commitments of
// its SealedCID and UnsealedCID: go-fil-commcid's ReplicaCommitmentV1ToCID and
// DataCommitmentV1ToCID make them; Ticket is its Randomness, Seed its InteractiveRandomness).
type C1Info struct {
	RegisteredProof abi.RegisteredSealProof
	Partitions      int // Groth16 proofs the C2 makes (192 bytes each)
	CommR           [32]byte
	CommD           [32]byte
	Ticket          [32]byte
	Seed            [32]byte
}

// ProofLen is the length of the C2 proof made from this C1 output.
func (i C1Info) ProofLen() int { return 192 * i.Partitions }

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
