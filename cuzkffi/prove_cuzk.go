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
	"sync"
	"unsafe"

	"github.com/filecoin-project/go-state-types/abi"
)

// SealCommitPhase2 makes the PoRep proof of a sector from its commit phase 1 output (the JSON
// of filecoin-proofs-api's SealCommitPhase1Output), like filecoin-ffi's function of the same
// signature. It blocks until the proof is made and cannot be cancelled: see
// SealCommitPhase2WithOptions.
func SealCommitPhase2(phase1Output []byte, sectorNum abi.SectorNumber, minerID abi.ActorID) ([]byte, error) {
	proof, _, err := SealCommitPhase2WithOptions(context.Background(), phase1Output, sectorNum, minerID)
	return proof, err
}

// SealCommitPhase2WithOptions is SealCommitPhase2 with a context, options (WithPriority,
// WithDevice, WithPartitionTimings) and the per-phase timings. Its class is the sealing one
// unless WithPriority says otherwise.
//
// When ctx is done before the proof is made, it returns ctx.Err() at once (the proof is then
// lost) and the engine stops the proof at its next phase boundary, in the background: a proof
// queued behind it may wait until then, and Close waits for it.
func SealCommitPhase2WithOptions(ctx context.Context, phase1Output []byte, sectorNum abi.SectorNumber, minerID abi.ActorID, opts ...ProveOption) ([]byte, Timings, error) {
	config := proveConfigOf(opts)
	if err := ctx.Err(); err != nil {
		return nil, Timings{}, err
	}
	if err := config.check(); err != nil {
		return nil, Timings{}, err
	}
	proverID, err := ProverID(minerID)
	if err != nil {
		return nil, Timings{}, err
	}
	eng, err := acquire()
	if err != nil {
		return nil, Timings{}, err
	}
	r, err := callCancellable(ctx, eng, func(tok *C.cuzk_cancel_token) proveResult {
		return eng.sealCommitPhase2(phase1Output, uint64(sectorNum), &proverID, config, tok)
	}, func(r proveResult) error { return r.err })
	if err != nil {
		return nil, Timings{}, err
	}
	if config.partitions != nil {
		*config.partitions = r.partitions
	}
	return r.resultFor(ctx)
}

// callCancellable makes a library call that takes a cancel token (NULL when ctx can never be
// done) and releases eng after it. When ctx is done first it returns ctx.Err() at once; the
// token is cancelled and the call ends at its next phase boundary in the background (errOf
// gives its error to the test hook).
func callCancellable[R any](ctx context.Context, eng *engine, call func(*C.cuzk_cancel_token) R, errOf func(R) error) (R, error) {
	if ctx.Done() == nil { // never cancelled: no token, no goroutine
		defer eng.release()
		return call(nil), nil
	}
	tok := &cancelToken{ptr: C.cuzk_cancel_token_new()}
	done := make(chan R, 1)
	go func() {
		defer eng.release()
		r := call(tok.ptr)
		tok.free() // the library call has returned: nothing uses the token any more
		if h := testHookCallReturned; h != nil {
			h(errOf(r))
		}
		done <- r
	}()

	select {
	case r := <-done:
		return r, nil
	case <-ctx.Done():
		select {
		case r := <-done: // finished at the same time: keep the result
			return r, nil
		default:
		}
		tok.cancel()
		var none R
		return none, ctx.Err()
	}
}

// testHookCallReturned, when set (by tests only), is called when a cancellable library call
// has returned, with its error.
var testHookCallReturned func(error)

type proveResult struct {
	proof      []byte
	timings    Timings
	partitions []Timings
	err        error
}

func (r proveResult) resultFor(ctx context.Context) ([]byte, Timings, error) {
	if errors.Is(r.err, ErrCancelled) && ctx.Err() != nil {
		return nil, Timings{}, ctx.Err()
	}
	return r.proof, r.timings, r.err
}

// cOptions are the call's cuzk_prove_options (without partition timings).
func (c proveConfig) cOptions(tok *C.cuzk_cancel_token) C.cuzk_prove_options {
	var opts C.cuzk_prove_options
	opts.struct_size = C.uint32_t(unsafe.Sizeof(opts))
	opts.cancel = tok
	opts.pin_device = C.bool(c.pinDevice)
	opts.device = C.uint32_t(c.device)
	opts.priority = C.uint32_t(c.priority)
	return opts
}

// cancelToken owns a cuzk_cancel_token; cancel and free may race (a context cancelled just as
// the call returns), so both take mu and the token is cancelled only while not yet freed.
type cancelToken struct {
	mu  sync.Mutex
	ptr *C.cuzk_cancel_token
}

func (t *cancelToken) cancel() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ptr != nil {
		C.cuzk_cancel_token_cancel(t.ptr)
	}
}

func (t *cancelToken) free() {
	t.mu.Lock()
	defer t.mu.Unlock()
	C.cuzk_cancel_token_free(t.ptr)
	t.ptr = nil
}

// sealCommitPhase2 makes the library call. Only Go memory without Go pointers is passed
// (the input bytes, the prover id, the options and timings structs, the out-pointers), and
// only for the duration of the call.
func (e *engine) sealCommitPhase2(c1 []byte, sector uint64, proverID *[32]byte, config proveConfig, tok *C.cuzk_cancel_token) proveResult {
	return callProve("cuzk_seal_commit_phase2", config, tok, func(opts *C.cuzk_prove_options, out **C.cuzk_bytes, ct *C.cuzk_timings, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_seal_commit_phase2(e.ptr, bytesArg(c1), C.size_t(len(c1)), C.uint64_t(sector),
			(*C.uint8_t)(unsafe.Pointer(&proverID[0])), opts, out, ct, cerr)
	})
}

// callProve makes one prove call of the library (`name`) through call, given the call's
// options and where its proof, timings and error go; the proof is copied out and the
// library's bytes freed.
func callProve(name string, config proveConfig, tok *C.cuzk_cancel_token,
	call func(*C.cuzk_prove_options, **C.cuzk_bytes, *C.cuzk_timings, **C.cuzk_error) C.enum_cuzk_status) proveResult {
	opts := config.cOptions(tok)
	var partitions partitionTimings
	if config.partitions != nil {
		partitions = newPartitionTimings(1)
		defer partitions.free()
		partitions.setIn(&opts)
	}
	var ct C.cuzk_timings
	ct.struct_size = C.uint32_t(unsafe.Sizeof(ct))
	var out *C.cuzk_bytes
	var cerr *C.cuzk_error
	status := call(&opts, &out, &ct, &cerr)
	defer C.cuzk_bytes_free(out) // NULL on failure
	if err := takeError(status, cerr); err != nil {
		return proveResult{err: err}
	}
	if out == nil || out.data == nil || out.len == 0 {
		return proveResult{err: newError(StatusInternal, "%s returned no proof", name)}
	}
	if out.len > math.MaxInt32 {
		return proveResult{err: newError(StatusInternal, "%s returned a proof of %d bytes", name, uint64(out.len))}
	}
	proof := C.GoBytes(unsafe.Pointer(out.data), C.int(out.len))
	return proveResult{proof: proof, timings: timingsFromC(rawTimingsOf(&ct)), partitions: partitions.of(0)}
}
