//go:build cuzk

package cuzkffi

/*
#include "cuzk.h"
*/
import "C"

import (
	"cmp"
	"math"
	"slices"
	"unsafe"

	commcid "github.com/filecoin-project/go-fil-commcid"
	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
)

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

// VerifySeal checks a C2 proof against its sector, with filecoin-ffi's signature: the seal
// proof type (SealProof), the replica and data commitments (from SealedCID and UnsealedCID),
// the miner and sector ids (SectorID), the ticket (Randomness) and the seed
// (InteractiveRandomness), each 32 bytes (filecoin-ffi zero-pads or truncates other lengths;
// here they are ErrInvalidArgument); DealIDs are not used. It returns (false, nil) for a proof
// that does not verify and an error only when the check could not be made (no verifying key,
// malformed arguments: a CID that is not a commitment of its kind, for one). Verification
// never starts the engine (see the package doc for where the verifying keys come from).
func VerifySeal(info proof.SealVerifyInfo) (bool, error) {
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
	return verifySeal(info.SealProof, r, d, info.SectorID.Miner, info.SectorID.Number, ticket, seed, info.Proof)
}

// verifySeal makes the library call of VerifySeal from the commitments and randomness as bytes.
func verifySeal(registeredProof abi.RegisteredSealProof, commR, commD [32]byte, minerID abi.ActorID,
	sectorNum abi.SectorNumber, ticket, seed [32]byte, proofBytes []byte) (bool, error) {
	if registeredProof < 0 || registeredProof > math.MaxUint32 {
		return false, newError(StatusInvalidArgument, "registered seal proof %d out of range", registeredProof)
	}
	proverID, err := ProverID(minerID)
	if err != nil {
		return false, err
	}
	eng := running() // nil: verified without an engine (no GPU is opened)
	defer eng.release()
	var valid C.bool
	var cerr *C.cuzk_error
	status := C.cuzk_verify_seal(eng.handle(), C.uint32_t(registeredProof),
		(*C.uint8_t)(unsafe.Pointer(&commR[0])), (*C.uint8_t)(unsafe.Pointer(&commD[0])),
		(*C.uint8_t)(unsafe.Pointer(&proverID[0])), C.uint64_t(sectorNum),
		(*C.uint8_t)(unsafe.Pointer(&ticket[0])), (*C.uint8_t)(unsafe.Pointer(&seed[0])),
		bytesArg(proofBytes), C.size_t(len(proofBytes)), &valid, &cerr)
	if err := takeError(status, cerr); err != nil {
		return false, err
	}
	return bool(valid), nil
}

// VerifyWindowPoSt checks a WindowPoSt with filecoin-ffi's signature and rules: info.Proofs
// holds one proof (the deadline's partition proofs merged by MergeWindowPoStPartitionProofs)
// whose PoStProof is the registered WindowPoSt proof; ChallengedSectors are the deadline's
// proven sectors (their SealedCID gives comm_r; their SealProof is not used), ordered by sector
// number as filecoin-ffi orders them. It returns (false, nil) for a proof that does not verify
// and an error only when the check could not be made (no verifying key, malformed arguments:
// no proof or more than one, a CID that is not a sealed sector's, randomness that is not 32
// bytes of a canonical field element).
func VerifyWindowPoSt(info proof.WindowPoStVerifyInfo) (bool, error) {
	if len(info.Proofs) != 1 {
		// filecoin-ffi: "nothing to verify" for none; filecoin-proofs-api: "only one version
		// of PoSt supported" for several.
		return false, newError(StatusInvalidArgument, "%d proofs: a WindowPoSt is verified from one (merged) proof", len(info.Proofs))
	}
	sectors, err := postSectors(info.ChallengedSectors)
	if err != nil {
		return false, err
	}
	p := info.Proofs[0]
	return verifyPoSt(windowPoSt, p.PoStProof, info.Prover, info.Randomness, sectors, p.ProofBytes)
}

// VerifyWinningPoSt checks a WinningPoSt with filecoin-ffi's signature and rules: the
// registered WinningPoSt proof comes from the challenged sector's SealProof, the proof is the
// bytes of info.Proofs concatenated, comm_r comes from the SealedCID. It returns (false, nil)
// for a proof that does not verify, and an error only when the check could not be made.
func VerifyWinningPoSt(info proof.WinningPoStVerifyInfo) (bool, error) {
	if len(info.ChallengedSectors) == 0 {
		return false, newError(StatusInvalidArgument, "no challenged sectors")
	}
	var proofType abi.RegisteredPoStProof
	for i, s := range info.ChallengedSectors {
		p, err := s.SealProof.RegisteredWinningPoStProof()
		if err != nil {
			return false, newError(StatusInvalidArgument, "challenged sector %d: %v", s.SectorNumber, err)
		}
		if i > 0 && p != proofType {
			return false, newError(StatusInvalidArgument, "challenged sectors of different WinningPoSt proofs (%d and %d)", proofType, p)
		}
		proofType = p
	}
	var proofBytes []byte
	for _, p := range info.Proofs {
		if _, ok := postProofKind(p.PoStProof); !ok {
			return false, newError(StatusInvalidArgument, "unknown registered PoSt proof %d", p.PoStProof)
		}
		proofBytes = append(proofBytes, p.ProofBytes...)
	}
	sectors, err := postSectors(info.ChallengedSectors)
	if err != nil {
		return false, err
	}
	return verifyPoSt(winningPoSt, proofType, info.Prover, info.Randomness, sectors, proofBytes)
}

// postSectors are the challenged sectors as the library takes them, in filecoin-ffi's order:
// it collects them into a map by sector number, so they are sorted by it and, of sectors given
// twice, the last one counts.
func postSectors(challenged []proof.SectorInfo) ([]C.cuzk_post_sector, error) {
	sorted := slices.Clone(challenged)
	slices.SortStableFunc(sorted, func(a, b proof.SectorInfo) int { return cmp.Compare(a.SectorNumber, b.SectorNumber) })
	out := make([]C.cuzk_post_sector, 0, len(sorted))
	for i, s := range sorted {
		if i+1 < len(sorted) && sorted[i+1].SectorNumber == s.SectorNumber {
			continue
		}
		commR, err := commcid.CIDToReplicaCommitmentV1(s.SealedCID)
		if err != nil {
			return nil, newError(StatusInvalidArgument, "sealed CID of sector %d: %v", s.SectorNumber, err)
		}
		if len(commR) != 32 {
			return nil, newError(StatusInvalidArgument, "comm_r of sector %d is %d bytes, not 32", s.SectorNumber, len(commR))
		}
		var cs C.cuzk_post_sector
		cs.sector_id = C.uint64_t(s.SectorNumber)
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&cs.comm_r[0])), 32), commR)
		out = append(out, cs)
	}
	return out, nil
}

// verifyPoSt makes the library call of kind.
func verifyPoSt(kind postKind, proofType abi.RegisteredPoStProof, prover abi.ActorID, randomness abi.PoStRandomness,
	sectors []C.cuzk_post_sector, proofBytes []byte) (bool, error) {
	if err := checkPoStProof(proofType); err != nil {
		return false, err
	}
	seed, err := postRandomness(randomness)
	if err != nil {
		return false, err
	}
	proverID, err := ProverID(prover)
	if err != nil {
		return false, err
	}
	eng := running() // nil: verified without an engine (no GPU is opened)
	defer eng.release()
	var sectorsPtr *C.cuzk_post_sector
	if len(sectors) > 0 {
		sectorsPtr = &sectors[0]
	}
	id := (*C.uint8_t)(unsafe.Pointer(&proverID[0]))
	rnd := (*C.uint8_t)(unsafe.Pointer(&seed[0]))
	var valid C.bool
	var cerr *C.cuzk_error
	var status C.enum_cuzk_status
	switch kind {
	case windowPoSt:
		status = C.cuzk_verify_window_post(eng.handle(), C.uint32_t(proofType), id, rnd, sectorsPtr, C.size_t(len(sectors)),
			bytesArg(proofBytes), C.size_t(len(proofBytes)), &valid, &cerr)
	case winningPoSt:
		status = C.cuzk_verify_winning_post(eng.handle(), C.uint32_t(proofType), id, rnd, sectorsPtr, C.size_t(len(sectors)),
			bytesArg(proofBytes), C.size_t(len(proofBytes)), &valid, &cerr)
	}
	if err := takeError(status, cerr); err != nil {
		return false, err
	}
	return bool(valid), nil
}
