//go:build cuzk

package cuzkffi

/*
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import (
	"context"
	"errors"
	"math"
	"unsafe"
)

// SealCommitPhase2Batch proves several sectors in one call: their partitions go through one
// pipeline (a partition is synthesized while the one before it is proven, within the engine's
// HostMemoryBudget), so the batch takes less time than the sectors one by one. Results are in
// the order of sectors; a sector that fails (bad input, failed verification) has its own Err and
// the others are proven. The returned error is for the call as a whole: a bad miner id, or ctx
// done (as in SealCommitPhase2WithOptions, the call then stops in the background).
func SealCommitPhase2Batch(ctx context.Context, sectors []SectorRequest, opts ...ProveOption) ([]SectorResult, error) {
	config := proveConfigOf(opts)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := config.check(); err != nil {
		return nil, err
	}
	proverIDs := make([][32]byte, len(sectors))
	for i, s := range sectors {
		id, err := ProverID(s.MinerID)
		if err != nil {
			return nil, err
		}
		proverIDs[i] = id
	}
	eng, err := acquire()
	if err != nil {
		return nil, err
	}
	return callBatch(ctx, eng, func(tok *C.cuzk_cancel_token) batchResult {
		return eng.sealCommitPhase2Batch(sectors, proverIDs, config, tok)
	})
}

// callBatch makes a batch call as callCancellable does; a sector cancelled because ctx is done
// has ctx.Err() as its error.
func callBatch(ctx context.Context, eng *engine, call func(*C.cuzk_cancel_token) batchResult) ([]SectorResult, error) {
	r, err := callCancellable(ctx, eng, call, func(r batchResult) error { return r.err })
	if err != nil {
		return nil, err
	}
	if r.err != nil {
		return nil, r.err
	}
	for i := range r.results {
		if errors.Is(r.results[i].Err, ErrCancelled) && ctx.Err() != nil {
			r.results[i].Err = ctx.Err()
		}
	}
	return r.results, nil
}

type batchResult struct {
	results []SectorResult
	err     error
}

// cArray allocates n zeroed T in C memory: the library's request and result arrays hold
// pointers, which Go memory passed to C may not.
func cArray[T any](n int) []T {
	var t T
	return unsafe.Slice((*T)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(t)))), n)
}

// cCopy copies b into C memory (at least one byte, so that an empty input is not NULL).
func cCopy(b []byte) unsafe.Pointer {
	p := C.malloc(C.size_t(max(len(b), 1)))
	copy(unsafe.Slice((*byte)(p), len(b)), b)
	return p
}

// sealCommitPhase2Batch makes the library call with every input copied into C memory, and
// copies the proofs out.
func (e *engine) sealCommitPhase2Batch(sectors []SectorRequest, proverIDs [][32]byte, config proveConfig, tok *C.cuzk_cancel_token) batchResult {
	n := len(sectors)
	if n == 0 {
		return batchResult{results: []SectorResult{}}
	}
	requests := cArray[C.cuzk_sector_request](n)
	var inputs []unsafe.Pointer
	defer func() {
		for _, p := range inputs {
			C.free(p)
		}
		C.free(unsafe.Pointer(&requests[0]))
	}()
	for i, s := range sectors {
		c1, id := cCopy(s.Phase1Output), cCopy(proverIDs[i][:])
		inputs = append(inputs, c1, id)
		requests[i] = C.cuzk_sector_request{
			c1_json:     (*C.uint8_t)(c1),
			c1_json_len: C.size_t(len(s.Phase1Output)),
			sector_id:   C.uint64_t(s.SectorNum),
			prover_id:   (*C.uint8_t)(id),
		}
	}
	return batchCall(n, config, tok, func(results *C.cuzk_sector_result, opts *C.cuzk_prove_options, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_seal_commit_phase2_batch(e.ptr, &requests[0], results, C.size_t(n), opts, cerr)
	})
}

// batchCall makes a batch call of the library (call, over n requests the caller has put in C
// memory) with result and timings arrays in C memory, and copies each sector's proof, timings
// and partitions' timings, or its error, out.
func batchCall(n int, config proveConfig, tok *C.cuzk_cancel_token,
	call func(*C.cuzk_sector_result, *C.cuzk_prove_options, **C.cuzk_error) C.enum_cuzk_status) batchResult {
	results := cArray[C.cuzk_sector_result](n)
	timings := cArray[C.cuzk_timings](n)
	defer func() {
		C.free(unsafe.Pointer(&results[0]))
		C.free(unsafe.Pointer(&timings[0]))
	}()
	for i := range results {
		timings[i].struct_size = C.uint32_t(unsafe.Sizeof(timings[i]))
		results[i].timings = &timings[i]
	}
	opts := config.cOptions(tok)
	partitions := newPartitionTimings(n)
	defer partitions.free()
	partitions.setIn(&opts)
	var cerr *C.cuzk_error
	if err := takeError(call(&results[0], &opts, &cerr), cerr); err != nil {
		return batchResult{err: err}
	}
	out := make([]SectorResult, n)
	for i := range results {
		r := &results[i]
		if err := takeError(r.status, r.error); err != nil {
			out[i].Err = err
			continue
		}
		switch {
		case r.proof == nil || (r.proof.data == nil && r.proof.len != 0):
			out[i].Err = newError(StatusInternal, "sector %d: no proof", i)
		case r.proof.len > math.MaxInt32:
			out[i].Err = newError(StatusInternal, "sector %d: proof of %d bytes", i, uint64(r.proof.len))
		default:
			out[i].Proof = C.GoBytes(unsafe.Pointer(r.proof.data), C.int(r.proof.len))
			out[i].Timings = timingsFromC(rawTimingsOf(&timings[i]))
			out[i].Partitions = partitions.of(i)
		}
		C.cuzk_bytes_free(r.proof)
	}
	return batchResult{results: out}
}
