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

	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
)

// The library's limits (post.go) are the header's.
var (
	_ = [1]struct{}{}[maxVanillaProofBytes-C.CUZK_MAX_VANILLA_PROOF_BYTES]
	_ = [1]struct{}{}[maxPoStSectors-C.CUZK_MAX_POST_SECTORS]
)

// checkPoStProof refuses registered PoSt proofs the C ABI cannot carry; the library refuses
// the numbers it does not know, and a proof of the other kind, with ErrInvalidArgument.
func checkPoStProof(p abi.RegisteredPoStProof) error {
	if p < 0 || p > math.MaxUint32 {
		return newError(StatusInvalidArgument, "registered PoSt proof %d out of range", p)
	}
	return nil
}

// postRandomness is a PoSt randomness as the 32 bytes the library takes. filecoin-ffi copies
// a shorter one into 32 zeroed bytes (and panics on a longer one); here any length but 32 is
// ErrInvalidArgument. Like filecoin-ffi it is passed unchanged: callers clear its top bits
// (randomness[31] &= 0x3f, as lotus and curio do before calling filecoin-ffi), and the engine
// refuses a value that is not a canonical field element with ErrInvalidArgument.
func postRandomness(r abi.PoStRandomness) ([32]byte, error) {
	var out [32]byte
	if len(r) != len(out) {
		return out, newError(StatusInvalidArgument, "PoSt randomness is %d bytes, not 32", len(r))
	}
	copy(out[:], r)
	return out, nil
}

// vanillaProofs are a call's vanilla proofs copied into C memory: cuzk_byte_slices over one
// buffer. The copy is the library's for as long as the call runs, even after a cancelled
// context has handed the caller's slices back.
type vanillaProofs struct {
	slices []C.cuzk_byte_slice // empty for no proofs
	buf    unsafe.Pointer
}

func copyVanillaProofs(proofs [][]byte) (*vanillaProofs, error) {
	if len(proofs) > maxPoStSectors {
		return nil, newError(StatusInvalidArgument, "%d vanilla proofs, more than any PoSt holds", len(proofs))
	}
	total := 0
	for i, p := range proofs {
		if len(p) > maxVanillaProofBytes {
			return nil, newError(StatusInvalidArgument, "vanilla proof %d is %d bytes, more than the %d byte limit", i, len(p), maxVanillaProofBytes)
		}
		total += len(p)
	}
	v := &vanillaProofs{}
	if len(proofs) == 0 {
		return v, nil
	}
	v.buf = C.malloc(C.size_t(max(total, 1)))
	buf := unsafe.Slice((*byte)(v.buf), total)
	v.slices = cArray[C.cuzk_byte_slice](len(proofs))
	offset := 0
	for i, p := range proofs {
		copy(buf[offset:], p)
		if len(p) > 0 {
			v.slices[i].data = (*C.uint8_t)(unsafe.Pointer(&buf[offset]))
		}
		v.slices[i].len = C.size_t(len(p))
		offset += len(p)
	}
	return v, nil
}

func (v *vanillaProofs) ptr() *C.cuzk_byte_slice {
	if len(v.slices) == 0 {
		return nil
	}
	return &v.slices[0]
}

func (v *vanillaProofs) free() {
	if len(v.slices) > 0 {
		C.free(unsafe.Pointer(&v.slices[0]))
		C.free(v.buf)
	}
	v.slices, v.buf = nil, nil
}

// GenerateSinglePartitionWindowPoStWithVanilla proves one partition of a WindowPoSt deadline
// from its sectors' vanilla proofs (as filecoin-ffi's GenerateSingleVanillaProof returns them,
// in the partition's sector order: increasing sector numbers, else ErrInvalidArgument), with
// the signature of filecoin-ffi's function of the same name. When vanilla proofs do not verify, the error is a *FaultySectorsError
// (errors.Is(err, ErrFaultySectors)) naming their sectors. It blocks until the proof is made
// and cannot be cancelled: see GenerateSinglePartitionWindowPoStWithVanillaWithOptions.
func GenerateSinglePartitionWindowPoStWithVanilla(proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte, partitionIndex uint) (*PartitionProof, error) {
	p, _, err := GenerateSinglePartitionWindowPoStWithVanillaWithOptions(context.Background(), proofType, minerID, randomness, proofs, partitionIndex)
	return p, err
}

// GenerateSinglePartitionWindowPoStWithVanillaWithOptions is
// GenerateSinglePartitionWindowPoStWithVanilla with a context, the per-phase timings and
// options (WithPriority, WithDevice, WithPartitionTimings). Its class is PriorityWindowPoSt
// unless WithPriority says otherwise. A done ctx behaves as in SealCommitPhase2WithOptions.
func GenerateSinglePartitionWindowPoStWithVanillaWithOptions(ctx context.Context, proofType abi.RegisteredPoStProof,
	minerID abi.ActorID, randomness abi.PoStRandomness, proofs [][]byte, partitionIndex uint,
	opts ...ProveOption) (*PartitionProof, Timings, error) {
	b, tm, err := generatePoSt(ctx, windowPoSt, proofType, minerID, randomness, proofs, partitionIndex, opts)
	if err != nil {
		return nil, Timings{}, err
	}
	return &PartitionProof{PoStProof: proofType, ProofBytes: b}, tm, nil
}

// GenerateWinningPoStWithVanilla makes a WinningPoSt from the challenged sector's vanilla proof
// (one), with the signature of filecoin-ffi's function of the same name: one PoStProof. Faulty
// vanilla proofs are a *FaultySectorsError. It blocks until the proof is made and cannot be
// cancelled: see GenerateWinningPoStWithVanillaWithOptions.
func GenerateWinningPoStWithVanilla(proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte) ([]proof.PoStProof, error) {
	p, _, err := GenerateWinningPoStWithVanillaWithOptions(context.Background(), proofType, minerID, randomness, proofs)
	return p, err
}

// GenerateWinningPoStWithVanillaWithOptions is GenerateWinningPoStWithVanilla with a context,
// the per-phase timings and options. Its class is the top one (PriorityHigh) unless
// WithPriority says otherwise. A done ctx behaves as in SealCommitPhase2WithOptions.
func GenerateWinningPoStWithVanillaWithOptions(ctx context.Context, proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte, opts ...ProveOption) ([]proof.PoStProof, Timings, error) {
	b, tm, err := generatePoSt(ctx, winningPoSt, proofType, minerID, randomness, proofs, 0, opts)
	if err != nil {
		return nil, Timings{}, err
	}
	return []proof.PoStProof{{PoStProof: proofType, ProofBytes: b}}, tm, nil
}

// generatePoSt checks the arguments, then makes the library call as callCancellable does.
func generatePoSt(ctx context.Context, kind postKind, proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte, partitionIndex uint, opts []ProveOption) ([]byte, Timings, error) {
	config := proveConfigOf(opts)
	if err := ctx.Err(); err != nil {
		return nil, Timings{}, err
	}
	if err := config.check(); err != nil {
		return nil, Timings{}, err
	}
	if err := checkPoStProof(proofType); err != nil {
		return nil, Timings{}, err
	}
	seed, err := postRandomness(randomness)
	if err != nil {
		return nil, Timings{}, err
	}
	proverID, err := ProverID(minerID)
	if err != nil {
		return nil, Timings{}, err
	}
	vanilla, err := copyVanillaProofs(proofs)
	if err != nil {
		return nil, Timings{}, err
	}
	eng, err := acquire()
	if err != nil {
		vanilla.free()
		return nil, Timings{}, err
	}
	call := postCall{kind: kind, proofType: proofType, proverID: proverID, randomness: seed, vanilla: vanilla, partition: partitionIndex}
	r, err := callCancellable(ctx, eng, func(tok *C.cuzk_cancel_token) proveResult {
		defer vanilla.free() // the library call has returned
		return eng.generatePoSt(&call, config, tok)
	}, func(r proveResult) error { return r.err })
	if err != nil {
		return nil, Timings{}, err
	}
	if config.partitions != nil {
		*config.partitions = r.partitions
	}
	return r.resultFor(ctx)
}

// postCall is the arguments of a PoSt prove call, in the form the library takes.
type postCall struct {
	kind       postKind
	proofType  abi.RegisteredPoStProof
	proverID   [32]byte
	randomness [32]byte
	vanilla    *vanillaProofs
	partition  uint
}

// generatePoSt makes the library call.
func (e *engine) generatePoSt(c *postCall, config proveConfig, tok *C.cuzk_cancel_token) proveResult {
	proverID := (*C.uint8_t)(unsafe.Pointer(&c.proverID[0]))
	randomness := (*C.uint8_t)(unsafe.Pointer(&c.randomness[0]))
	vanilla, count := c.vanilla.ptr(), C.size_t(len(c.vanilla.slices))
	if c.kind == winningPoSt {
		return callProve("cuzk_generate_winning_post", config, tok, func(opts *C.cuzk_prove_options, out **C.cuzk_bytes, ct *C.cuzk_timings, cerr **C.cuzk_error) C.enum_cuzk_status {
			return C.cuzk_generate_winning_post(e.ptr, C.uint32_t(c.proofType), proverID, randomness, vanilla, count, opts, out, ct, cerr)
		})
	}
	return callProve("cuzk_generate_window_post_partition", config, tok, func(opts *C.cuzk_prove_options, out **C.cuzk_bytes, ct *C.cuzk_timings, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_generate_window_post_partition(e.ptr, C.uint32_t(c.proofType), proverID, randomness,
			vanilla, count, C.size_t(c.partition), opts, out, ct, cerr)
	})
}
