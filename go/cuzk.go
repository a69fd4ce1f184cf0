// Package cuzk binds libcuzk, an embeddable Groth16 proving engine for Filecoin, through its
// C ABI (include/cuzk.h). SealCommitPhase2 has the signature of filecoin-ffi's, so a Go
// proving service can switch by changing an import; SealCommitPhase2WithTimings adds a
// context for cancellation and per-phase timings.
//
// The package keeps one engine handle for the process. Init sets its configuration; without
// Init the first call starts it with DefaultConfig. The library allows one configuration per
// process at a time: Init with a different one while the engine is alive fails with
// ErrEngineState (call Close first).
package cuzk

/*
#cgo pkg-config: cuzk
#include <stdlib.h>
#include "cuzk.h"
*/
import "C"

import (
	"math"
	"strings"
	"sync"
	"unsafe"

	"github.com/filecoin-project/go-state-types/abi"
)

// Compile-time checks that the Go status numbers are the header's (an index out of range, or
// a negative constant converted to Status, fails the build).
var _ = [1]struct{}{}[StatusOK-C.CUZK_STATUS_OK]
var _ = [1]struct{}{}[StatusNullArgument-C.CUZK_STATUS_NULL_ARGUMENT]
var _ = [1]struct{}{}[StatusInvalidArgument-C.CUZK_STATUS_INVALID_ARGUMENT]
var _ = [1]struct{}{}[StatusParse-C.CUZK_STATUS_PARSE_ERROR]
var _ = [1]struct{}{}[StatusParametersNotFound-C.CUZK_STATUS_PARAMETERS_NOT_FOUND]
var _ = [1]struct{}{}[StatusParametersInvalid-C.CUZK_STATUS_PARAMETERS_INVALID]
var _ = [1]struct{}{}[StatusGPU-C.CUZK_STATUS_GPU_ERROR]
var _ = [1]struct{}{}[StatusOutOfMemory-C.CUZK_STATUS_OUT_OF_MEMORY]
var _ = [1]struct{}{}[StatusCancelled-C.CUZK_STATUS_CANCELLED]
var _ = [1]struct{}{}[StatusPanic-C.CUZK_STATUS_PANIC]
var _ = [1]struct{}{}[StatusInternal-C.CUZK_STATUS_INTERNAL]
var _ = [1]struct{}{}[StatusEngineState-C.CUZK_STATUS_ENGINE_STATE]
var _ = [1]struct{}{}[StatusVerifyFailed-C.CUZK_STATUS_VERIFY_FAILED]
var _ = [1]struct{}{}[StatusFaultySectors-C.CUZK_STATUS_FAULTY_SECTORS]

// ABIVersion is the CUZK_ABI_VERSION of the header this package was compiled against.
const ABIVersion = C.CUZK_ABI_VERSION

// Version returns the version of the loaded library ("0.1.0").
func Version() string { return C.GoString(C.cuzk_version()) }

// LibraryABIVersion returns the CUZK_ABI_VERSION of the loaded library. The engine refuses to
// start when it differs from ABIVersion.
func LibraryABIVersion() uint32 { return uint32(C.cuzk_abi_version()) }

// Config is the engine configuration (cuzk_config).
type Config struct {
	// ParamCacheDir is the directory of the Groth16 parameters (v28-*.params, *.vk).
	// Empty: $FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters.
	ParamCacheDir string
	// CPUOnly never uses a GPU, even when one is present.
	CPUOnly bool
	// NumThreads is the number of worker threads for synthesis and CPU proving; 0 means one
	// per core.
	NumThreads int
	// SelfVerify verifies every proof before returning it, as filecoin-proofs does.
	SelfVerify bool
	// GPUKeyMemoryBudget is the device memory per GPU for resident proving keys, in bytes;
	// 0 means 3/4 of the device's memory. Least recently used keys are evicted beyond it; a
	// key larger than it is streamed from host memory on every call.
	GPUKeyMemoryBudget uint64
	// PinnedPoolBytes is the pinned host memory per GPU for staging copies; 0 means 128 MiB.
	PinnedPoolBytes uint64
	// HostMemoryBudget bounds the host memory of synthesized partitions waiting to be proven
	// (how far synthesis runs ahead of proving); 0 means a quarter of the machine's memory.
	HostMemoryBudget uint64
}

// DefaultConfig returns the library's defaults (cuzk_config_default): all cores, a GPU when
// present, self-verification on, the parameter directory from the environment.
func DefaultConfig() Config {
	var cc C.cuzk_config
	cc.struct_size = C.uint32_t(unsafe.Sizeof(cc))
	var cerr *C.cuzk_error
	if err := takeError(C.cuzk_config_default(&cc, &cerr), cerr); err != nil {
		// Only a struct_size mismatch fails, and this package sets it from the header.
		panic("cuzk: cuzk_config_default: " + err.Error())
	}
	cfg := Config{
		CPUOnly:            bool(cc.cpu_only),
		NumThreads:         int(cc.num_threads),
		SelfVerify:         bool(cc.self_verify),
		GPUKeyMemoryBudget: uint64(cc.gpu_key_memory_budget),
		PinnedPoolBytes:    uint64(cc.pinned_pool_bytes),
		HostMemoryBudget:   uint64(cc.host_memory_budget),
	}
	if cc.param_cache_dir != nil {
		cfg.ParamCacheDir = C.GoString(cc.param_cache_dir)
	}
	return cfg
}

// engine is one handle from cuzk_engine_new. calls counts the library calls that use the
// handle (including ones still unwinding after their context was cancelled); the handle is
// freed only when they have all returned.
type engine struct {
	ptr   *C.cuzk_engine
	calls sync.WaitGroup
}

var (
	engineMu sync.Mutex
	current  *engine // guarded by engineMu
)

// Init starts the process's engine with cfg. Calling it again with the same configuration is
// a no-op; with a different one it returns ErrEngineState while the engine is alive (also
// when it was started implicitly with DefaultConfig by an earlier call). Close the engine
// first to change the configuration.
func Init(cfg Config) error {
	engineMu.Lock()
	defer engineMu.Unlock()
	ptr, err := newEngine(cfg)
	if err != nil {
		return err
	}
	if current != nil {
		// The library handed out another handle to the same engine: one is enough.
		C.cuzk_engine_free(ptr)
		return nil
	}
	current = &engine{ptr: ptr}
	return nil
}

// Close releases the package's engine handle, waiting for the library calls still using it
// to return (calls whose context was cancelled return at the engine's next phase boundary).
// The library stops the engine and frees its resident keys and buffers when its last handle
// is gone. A later call starts a new engine (with DefaultConfig unless Init is called).
func Close() error {
	engineMu.Lock()
	e := current
	current = nil
	engineMu.Unlock()
	if e != nil {
		e.calls.Wait()
		C.cuzk_engine_free(e.ptr)
	}
	return nil
}

// acquire returns the engine, started with DefaultConfig when needed, and counts a call on
// it: the caller must call release once the library call has returned.
func acquire() (*engine, error) {
	engineMu.Lock()
	defer engineMu.Unlock()
	if current == nil {
		ptr, err := newEngine(DefaultConfig())
		if err != nil {
			return nil, err
		}
		current = &engine{ptr: ptr}
	}
	current.calls.Add(1)
	return current, nil
}

func (e *engine) release() { e.calls.Done() }

func newEngine(cfg Config) (*C.cuzk_engine, error) {
	if lib := LibraryABIVersion(); lib != ABIVersion {
		return nil, newError(StatusEngineState, "libcuzk ABI version %d is loaded, this package needs %d", lib, ABIVersion)
	}
	if cfg.NumThreads < 0 || cfg.NumThreads > math.MaxUint32 {
		return nil, newError(StatusInvalidArgument, "NumThreads %d out of range", cfg.NumThreads)
	}
	if strings.IndexByte(cfg.ParamCacheDir, 0) >= 0 {
		return nil, newError(StatusInvalidArgument, "ParamCacheDir contains a NUL byte")
	}
	var cc C.cuzk_config
	cc.struct_size = C.uint32_t(unsafe.Sizeof(cc))
	var cerr *C.cuzk_error
	if err := takeError(C.cuzk_config_default(&cc, &cerr), cerr); err != nil {
		return nil, err
	}
	cc.num_threads = C.uint32_t(cfg.NumThreads)
	cc.cpu_only = C.bool(cfg.CPUOnly)
	cc.self_verify = C.bool(cfg.SelfVerify)
	cc.gpu_key_memory_budget = C.uint64_t(cfg.GPUKeyMemoryBudget)
	cc.pinned_pool_bytes = C.uint64_t(cfg.PinnedPoolBytes)
	cc.host_memory_budget = C.uint64_t(cfg.HostMemoryBudget)
	if cfg.ParamCacheDir != "" {
		dir := C.CString(cfg.ParamCacheDir)
		defer C.free(unsafe.Pointer(dir))
		cc.param_cache_dir = dir // the library copies it during cuzk_engine_new
	}
	var ptr *C.cuzk_engine
	cerr = nil
	if err := takeError(C.cuzk_engine_new(&cc, &ptr, &cerr), cerr); err != nil {
		C.cuzk_engine_free(ptr) // NULL on failure; freed anyway in case
		return nil, err
	}
	if ptr == nil {
		return nil, newError(StatusInternal, "cuzk_engine_new returned no engine")
	}
	return ptr, nil
}

// takeError turns a status and the error object of the same call into a Go error, and frees
// the error object on every path. An error of StatusFaultySectors is a *FaultySectorsError
// with the sectors the library listed.
func takeError(status C.enum_cuzk_status, cerr *C.cuzk_error) error {
	if cerr == nil {
		if status == C.CUZK_STATUS_OK {
			return nil
		}
		return &Error{Status: Status(status)}
	}
	defer C.cuzk_error_free(cerr)
	if status == C.CUZK_STATUS_OK {
		return nil
	}
	e := &Error{
		Status:  Status(C.cuzk_error_status(cerr)),
		Message: C.GoString(C.cuzk_error_message(cerr)),
	}
	if e.Status != StatusFaultySectors {
		return e
	}
	var list *C.uint64_t
	n := C.cuzk_error_faulty_sectors(cerr, &list)
	sectors := make([]abi.SectorNumber, 0, int(n))
	if n > 0 && list != nil {
		for _, s := range unsafe.Slice(list, int(n)) {
			sectors = append(sectors, abi.SectorNumber(s))
		}
	}
	return &FaultySectorsError{Sectors: sectors, Err: e}
}

// zeroByte gives empty inputs a non-NULL pointer: the library reports a NULL pointer as
// ErrNullArgument, while an empty input should fail as what it is (an empty C1 is ErrParse).
var zeroByte [1]byte

// bytesArg is the pointer to pass for b: its first byte, valid for the duration of the call.
func bytesArg(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return (*C.uint8_t)(unsafe.Pointer(&zeroByte[0]))
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}
