package cuzkffi

import (
	"errors"
	"fmt"

	"github.com/filecoin-project/go-state-types/abi"
)

// Status is a cuzk_status of the C ABI. The numbers are part of the ABI and never change.
type Status uint32

// The statuses of the C ABI (enum cuzk_status in cuzk.h).
const (
	StatusOK                 Status = 0
	StatusNullArgument       Status = 1
	StatusInvalidArgument    Status = 2
	StatusParse              Status = 3
	StatusParametersNotFound Status = 4
	StatusParametersInvalid  Status = 5
	StatusGPU                Status = 6
	StatusOutOfMemory        Status = 7
	StatusCancelled          Status = 8
	StatusPanic              Status = 9
	StatusInternal           Status = 10
	StatusEngineState        Status = 11
	StatusVerifyFailed       Status = 12
	StatusFaultySectors      Status = 13
)

// Sentinel errors, one per failing status. Every error this package returns for a failed
// library call is an *Error, or a *FaultySectorsError wrapping one, that matches exactly one
// of them with errors.Is.
var (
	// ErrNullArgument: a required pointer was NULL (a bug in this package if it happens).
	ErrNullArgument = errors.New("cuzk: null argument")
	// ErrInvalidArgument: an argument is well-formed but not acceptable (wrong size,
	// a C1 output that does not belong to the given sector or miner, ...).
	ErrInvalidArgument = errors.New("cuzk: invalid argument")
	// ErrParse: the C1 JSON could not be decoded.
	ErrParse = errors.New("cuzk: parse error")
	// ErrParametersNotFound: the Groth16 parameters (or verifying key) are not in the
	// parameter cache directory.
	ErrParametersNotFound = errors.New("cuzk: parameters not found")
	// ErrParametersInvalid: the parameter file exists but is unreadable or corrupt.
	ErrParametersInvalid = errors.New("cuzk: parameters invalid")
	// ErrGPU: a GPU (CUDA) operation failed.
	ErrGPU = errors.New("cuzk: GPU error")
	// ErrOutOfMemory: host or device memory could not be allocated, or a key's points do not
	// fit the host's available memory (the call fails before decoding them; the engine goes on).
	ErrOutOfMemory = errors.New("cuzk: out of memory")
	// ErrCancelled: the call was cancelled. The context-aware calls return ctx.Err()
	// instead, so this is seen only from a library cancelled some other way.
	ErrCancelled = errors.New("cuzk: cancelled")
	// ErrPanic: a panic was caught inside the library; the message says where.
	ErrPanic = errors.New("cuzk: panic in library")
	// ErrInternal: a bug or unexpected failure inside the library.
	ErrInternal = errors.New("cuzk: internal error")
	// ErrEngineState: the engine was initialised again with a different Config while it is
	// alive (see Init and Close).
	ErrEngineState = errors.New("cuzk: engine state")
	// ErrVerifyFailed: a proof was made but failed its self-verification, or was rejected.
	ErrVerifyFailed = errors.New("cuzk: verification failed")
	// ErrFaultySectors: the PoSt vanilla proofs of some sectors do not verify (what
	// filecoin-ffi reports as faulty sectors). The error is a *FaultySectorsError that names
	// them.
	ErrFaultySectors = errors.New("cuzk: faulty sectors")
)

// ErrNotBuilt is returned by every function that needs the library when the package was built
// without the build tag cuzk (stub mode, see the package documentation). It is no status of the
// library: a build with the tag never returns it.
var ErrNotBuilt = errors.New("cuzkffi: built without libcuzk: build with -tags cuzk (needs libcuzk through pkg-config, see README)")

var sentinels = [...]error{
	StatusNullArgument:       ErrNullArgument,
	StatusInvalidArgument:    ErrInvalidArgument,
	StatusParse:              ErrParse,
	StatusParametersNotFound: ErrParametersNotFound,
	StatusParametersInvalid:  ErrParametersInvalid,
	StatusGPU:                ErrGPU,
	StatusOutOfMemory:        ErrOutOfMemory,
	StatusCancelled:          ErrCancelled,
	StatusPanic:              ErrPanic,
	StatusInternal:           ErrInternal,
	StatusEngineState:        ErrEngineState,
	StatusVerifyFailed:       ErrVerifyFailed,
	StatusFaultySectors:      ErrFaultySectors,
}

// Sentinel returns the sentinel error of a status, or nil for StatusOK and statuses this
// package does not know (a newer library).
func (s Status) Sentinel() error {
	if int(s) < len(sentinels) {
		return sentinels[s]
	}
	return nil
}

func (s Status) String() string {
	switch {
	case s == StatusOK:
		return "ok"
	case s.Sentinel() != nil:
		return s.Sentinel().Error()[len("cuzk: "):]
	default:
		return fmt.Sprintf("status %d", uint32(s))
	}
}

// Error is a failure reported by the library: its status and its message. It unwraps to the
// status's sentinel, so `errors.Is(err, cuzkffi.ErrParse)` works; use errors.As to get at the
// status and message.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	prefix := "cuzk: " + e.Status.String()
	if e.Message == "" {
		return prefix
	}
	return prefix + ": " + e.Message
}

// Unwrap returns the sentinel error of e.Status.
func (e *Error) Unwrap() error { return e.Status.Sentinel() }

func newError(s Status, format string, args ...any) error {
	return &Error{Status: s, Message: fmt.Sprintf(format, args...)}
}

// FaultySectorsError is the error of a PoSt call whose vanilla proofs of some sectors do not
// verify (StatusFaultySectors): Sectors are their numbers, in the order of the vanilla proofs,
// what filecoin-ffi reports as faulty sectors. It unwraps to its *Error, so
// errors.Is(err, ErrFaultySectors) matches it and errors.As finds either type:
//
//	var faulty *cuzkffi.FaultySectorsError
//	if errors.As(err, &faulty) { declare(faulty.Sectors) }
type FaultySectorsError struct {
	Sectors []abi.SectorNumber
	Err     *Error // Status StatusFaultySectors and the library's message
}

func (e *FaultySectorsError) Error() string { return e.Err.Error() }

// Unwrap returns the *Error, which unwraps to ErrFaultySectors.
func (e *FaultySectorsError) Unwrap() error { return e.Err }
