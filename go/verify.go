package cuzk

/*
#include "cuzk.h"
*/
import "C"

import (
	"math"
	"unsafe"

	commcid "github.com/filecoin-project/go-fil-commcid"
	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
)

// C1Info is what a commit phase 1 output says about its sector: with the miner and sector
// ids, everything VerifySeal needs besides the proof.
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

// ParseC1Info reads the sector facts out of a commit phase 1 output (JSON). It needs no
// engine and no parameters.
func ParseC1Info(phase1Output []byte) (C1Info, error) {
	var ci C.cuzk_c1_info
	ci.struct_size = C.uint32_t(unsafe.Sizeof(ci))
	var cerr *C.cuzk_error
	status := C.cuzk_c1_info_parse(bytesArg(phase1Output), C.size_t(len(phase1Output)), &ci, &cerr)
	if err := takeError(status, cerr); err != nil {
		return C1Info{}, err
	}
	return C1Info{
		RegisteredProof: abi.RegisteredSealProof(ci.registered_proof),
		Partitions:      int(ci.partitions),
		CommR:           *(*[32]byte)(unsafe.Pointer(&ci.comm_r)),
		CommD:           *(*[32]byte)(unsafe.Pointer(&ci.comm_d)),
		Ticket:          *(*[32]byte)(unsafe.Pointer(&ci.ticket)),
		Seed:            *(*[32]byte)(unsafe.Pointer(&ci.seed)),
	}, nil
}

// VerifySeal checks a C2 proof against its sector: the seal proof type, the replica and
// data commitments (CommR, CommD), the miner and sector ids, the ticket (seal randomness)
// and the seed (interactive randomness). It returns (false, nil) for a proof that does not
// verify and an error only when the check could not be made (no verifying key, malformed
// arguments). The verifying key comes from the engine's parameter directory.
func VerifySeal(registeredProof abi.RegisteredSealProof, commR, commD [32]byte, minerID abi.ActorID,
	sectorNum abi.SectorNumber, ticket, seed [32]byte, proofBytes []byte) (bool, error) {
	if registeredProof < 0 || registeredProof > math.MaxUint32 {
		return false, newError(StatusInvalidArgument, "registered seal proof %d out of range", registeredProof)
	}
	proverID, err := ProverID(minerID)
	if err != nil {
		return false, err
	}
	eng, err := acquire()
	if err != nil {
		return false, err
	}
	defer eng.release()
	var valid C.bool
	var cerr *C.cuzk_error
	status := C.cuzk_verify_seal(eng.ptr, C.uint32_t(registeredProof),
		(*C.uint8_t)(unsafe.Pointer(&commR[0])), (*C.uint8_t)(unsafe.Pointer(&commD[0])),
		(*C.uint8_t)(unsafe.Pointer(&proverID[0])), C.uint64_t(sectorNum),
		(*C.uint8_t)(unsafe.Pointer(&ticket[0])), (*C.uint8_t)(unsafe.Pointer(&seed[0])),
		bytesArg(proofBytes), C.size_t(len(proofBytes)), &valid, &cerr)
	if err := takeError(status, cerr); err != nil {
		return false, err
	}
	return bool(valid), nil
}

// VerifySealInfo is VerifySeal with filecoin-ffi's signature: the commitments come from the
// sealed and unsealed CIDs, the ticket and seed from Randomness and InteractiveRandomness.
func VerifySealInfo(info proof.SealVerifyInfo) (bool, error) {
	commR, err := commcid.CIDToReplicaCommitmentV1(info.SealedCID)
	if err != nil {
		return false, newError(StatusInvalidArgument, "sealed CID: %v", err)
	}
	commD, err := commcid.CIDToDataCommitmentV1(info.UnsealedCID)
	if err != nil {
		return false, newError(StatusInvalidArgument, "unsealed CID: %v", err)
	}
	var r, d, ticket, seed [32]byte
	for _, f := range []struct {
		name string
		dst  *[32]byte
		src  []byte
	}{
		{"CommR", &r, commR},
		{"CommD", &d, commD},
		{"Randomness", &ticket, info.Randomness},
		{"InteractiveRandomness", &seed, info.InteractiveRandomness},
	} {
		if len(f.src) != 32 {
			return false, newError(StatusInvalidArgument, "%s is %d bytes, not 32", f.name, len(f.src))
		}
		copy(f.dst[:], f.src)
	}
	return VerifySeal(info.SealProof, r, d, info.SectorID.Miner, info.SectorID.Number, ticket, seed, info.Proof)
}
