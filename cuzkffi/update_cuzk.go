//go:build cuzk

package cuzkffi

/*
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import (
	"context"
	"math"
	"unsafe"

	commcid "github.com/filecoin-project/go-fil-commcid"
	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
	"github.com/ipfs/go-cid"
)

// GenerateUpdateProofWithVanilla proves a SnapDeals update from its partition vanilla proofs (as
// filecoin-ffi's GenerateUpdateVanillaProofs returns them, one per partition in order), with
// the signature of filecoin-ffi's function of the same name: the proof filecoin-proofs'
// generate_empty_sector_update_proof_with_vanilla returns (192 bytes per partition). Vanilla
// proofs that do not prove the commitments are ErrInvalidArgument naming the partition and
// challenge. It blocks until the proof is made and cannot be cancelled: see
// GenerateUpdateProofWithVanillaWithOptions.
func GenerateUpdateProofWithVanilla(proofType abi.RegisteredUpdateProof, oldSealedCID, newSealedCID, unsealedCID cid.Cid,
	vanillaProofs [][]byte) ([]byte, error) {
	p, _, err := GenerateUpdateProofWithVanillaWithOptions(context.Background(), proofType, oldSealedCID, newSealedCID, unsealedCID, vanillaProofs)
	return p, err
}

// GenerateUpdateProofWithVanillaWithOptions is GenerateUpdateProofWithVanilla with a context,
// the per-phase timings and options (WithPriority, WithDevice, WithPartitionTimings). Its class
// is the sealing one unless WithPriority says otherwise. A done ctx behaves as in
// SealCommitPhase2WithOptions.
func GenerateUpdateProofWithVanillaWithOptions(ctx context.Context, proofType abi.RegisteredUpdateProof, oldSealedCID, newSealedCID,
	unsealedCID cid.Cid, vanillaProofs [][]byte, opts ...ProveOption) ([]byte, Timings, error) {
	config := proveConfigOf(opts)
	if err := ctx.Err(); err != nil {
		return nil, Timings{}, err
	}
	if err := config.check(); err != nil {
		return nil, Timings{}, err
	}
	call, err := newUpdateCall([]UpdateRequest{{proofType, oldSealedCID, newSealedCID, unsealedCID, vanillaProofs}})
	if err != nil {
		return nil, Timings{}, err
	}
	eng, err := acquire()
	if err != nil {
		call.free()
		return nil, Timings{}, err
	}
	r, err := callCancellable(ctx, eng, func(tok *C.cuzk_cancel_token) proveResult {
		defer call.free() // the library call has returned
		return callProve("cuzk_generate_update_proof", config, tok, func(opts *C.cuzk_prove_options, out **C.cuzk_bytes, ct *C.cuzk_timings, cerr **C.cuzk_error) C.enum_cuzk_status {
			return C.cuzk_generate_update_proof(eng.ptr, &call.requests[0], opts, out, ct, cerr)
		})
	}, func(r proveResult) error { return r.err })
	if err != nil {
		return nil, Timings{}, err
	}
	if config.partitions != nil {
		*config.partitions = r.partitions
	}
	return r.resultFor(ctx)
}

// GenerateUpdateProofBatch proves several sectors' updates in one call: their partitions go
// through one pipeline, as SealCommitPhase2Batch's, whose rules the results follow (in the order
// of requests; a sector that fails has its own Err). The returned error is for the call as a
// whole: a request whose arguments cannot be passed (a CID that is not a commitment's), or ctx
// done.
func GenerateUpdateProofBatch(ctx context.Context, requests []UpdateRequest, opts ...ProveOption) ([]SectorResult, error) {
	config := proveConfigOf(opts)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := config.check(); err != nil {
		return nil, err
	}
	if len(requests) == 0 {
		return []SectorResult{}, nil
	}
	call, err := newUpdateCall(requests)
	if err != nil {
		return nil, err
	}
	eng, err := acquire()
	if err != nil {
		call.free()
		return nil, err
	}
	return callBatch(ctx, eng, func(tok *C.cuzk_cancel_token) batchResult {
		defer call.free()
		n := len(requests)
		return batchCall(n, config, tok, func(results *C.cuzk_sector_result, opts *C.cuzk_prove_options, cerr **C.cuzk_error) C.enum_cuzk_status {
			return C.cuzk_generate_update_proof_batch(eng.ptr, &call.requests[0], results, C.size_t(n), opts, cerr)
		})
	})
}

// VerifyUpdateProof checks a SnapDeals update proof with filecoin-ffi's signature: the update
// proof type, the old and new sealed CIDs and the new unsealed CID, and the proof. It returns
// (false, nil) for a proof that does not verify and an error only when the check could not be
// made (no verifying key, malformed arguments).
func VerifyUpdateProof(info proof.ReplicaUpdateInfo) (bool, error) {
	comms, err := updateCommitments(info.UpdateProofType, info.OldSealedSectorCID, info.NewSealedSectorCID, info.NewUnsealedSectorCID)
	if err != nil {
		return false, err
	}
	eng := running() // nil: verified without an engine (no GPU is opened)
	defer eng.release()
	var valid C.bool
	var cerr *C.cuzk_error
	commPtr := func(i int) *C.uint8_t { return (*C.uint8_t)(unsafe.Pointer(&comms[i][0])) }
	status := C.cuzk_verify_update_proof(eng.handle(), C.uint32_t(info.UpdateProofType), commPtr(0), commPtr(1), commPtr(2),
		bytesArg(info.Proof), C.size_t(len(info.Proof)), &valid, &cerr)
	if err := takeError(status, cerr); err != nil {
		return false, err
	}
	return bool(valid), nil
}

// updateCommitments are an update's comm_r_old, comm_r_new and comm_d_new from its CIDs; the
// proof type must fit the C ABI (the library refuses the numbers it does not know).
func updateCommitments(proofType abi.RegisteredUpdateProof, oldSealed, newSealed, unsealed cid.Cid) ([3][32]byte, error) {
	var out [3][32]byte
	if proofType < 0 || proofType > math.MaxUint32 {
		return out, newError(StatusInvalidArgument, "registered update proof %d out of range", proofType)
	}
	for i, c := range []struct {
		name   string
		cid    cid.Cid
		decode func(cid.Cid) ([]byte, error)
	}{
		{"old sealed CID", oldSealed, commcid.CIDToReplicaCommitmentV1},
		{"new sealed CID", newSealed, commcid.CIDToReplicaCommitmentV1},
		{"unsealed CID", unsealed, commcid.CIDToDataCommitmentV1},
	} {
		comm, err := c.decode(c.cid)
		if err != nil {
			return out, newError(StatusInvalidArgument, "%s: %v", c.name, err)
		}
		if len(comm) != 32 {
			return out, newError(StatusInvalidArgument, "%s: a commitment of %d bytes, not 32", c.name, len(comm))
		}
		copy(out[i][:], comm)
	}
	return out, nil
}

// updateCall is the requests of an update prove call in C memory: the request structs, their
// commitments and vanilla proofs, the library's for as long as the call runs.
type updateCall struct {
	requests []C.cuzk_update_request
	comms    unsafe.Pointer
	vanilla  []*vanillaProofs
}

func newUpdateCall(requests []UpdateRequest) (*updateCall, error) {
	all := make([][3][32]byte, len(requests))
	for i, r := range requests {
		comms, err := updateCommitments(r.ProofType, r.OldSealedCID, r.NewSealedCID, r.UnsealedCID)
		if err != nil {
			return nil, err
		}
		all[i] = comms
	}
	call := &updateCall{requests: cArray[C.cuzk_update_request](len(requests)), comms: C.malloc(C.size_t(96 * len(requests)))}
	comms := unsafe.Slice((*[3][32]byte)(call.comms), len(requests))
	for i, r := range requests {
		vanilla, err := copyVanillaProofs(r.VanillaProofs)
		if err != nil {
			call.free()
			return nil, err
		}
		call.vanilla = append(call.vanilla, vanilla)
		comms[i] = all[i]
		call.requests[i] = C.cuzk_update_request{
			registered_update_proof: C.uint32_t(r.ProofType),
			comm_r_old:              (*C.uint8_t)(unsafe.Pointer(&comms[i][0][0])),
			comm_r_new:              (*C.uint8_t)(unsafe.Pointer(&comms[i][1][0])),
			comm_d_new:              (*C.uint8_t)(unsafe.Pointer(&comms[i][2][0])),
			vanilla_proofs:          vanilla.ptr(),
			vanilla_proofs_len:      C.size_t(len(vanilla.slices)),
		}
	}
	return call, nil
}

func (c *updateCall) free() {
	for _, v := range c.vanilla {
		v.free()
	}
	C.free(unsafe.Pointer(&c.requests[0]))
	C.free(c.comms)
	c.vanilla, c.requests, c.comms = nil, nil, nil
}
