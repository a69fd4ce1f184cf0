//go:build cuzk

package cuzkffi

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
	"time"
	"unsafe"

	"github.com/filecoin-project/go-state-types/abi"
)

// Compile-time checks that the Go constants (errors.go, engine.go; timings_cuzk.go and
// post_cuzk.go check the others) are the header's: a difference either way fails the build (an
// index out of range, or a negative constant that overflows the unsigned type or is refused as
// an index).
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
var _ = [1]struct{}{}[ABIVersion-C.CUZK_ABI_VERSION]

// Version returns the version of the loaded library ("0.1.0").
func Version() string { return C.GoString(C.cuzk_version()) }

// LibraryABIVersion returns the CUZK_ABI_VERSION of the loaded library. The engine refuses to
// start when it differs from ABIVersion.
func LibraryABIVersion() uint32 { return uint32(C.cuzk_abi_version()) }

// DefaultConfig returns the library's defaults (cuzk_config_default): all cores, a GPU when
// present, self-verification on, the parameter directory from the environment.
func DefaultConfig() Config {
	var cc C.cuzk_config
	cc.struct_size = C.uint32_t(unsafe.Sizeof(cc))
	var cerr *C.cuzk_error
	if err := takeError(C.cuzk_config_default(&cc, &cerr), cerr); err != nil {
		// Only a struct_size mismatch fails, and this package sets it from the header.
		panic("cuzkffi: cuzk_config_default: " + err.Error())
	}
	cfg := Config{
		CPUOnly:             bool(cc.cpu_only),
		NumThreads:          int(cc.num_threads),
		SelfVerify:          bool(cc.self_verify),
		GPUKeyMemoryBudget:  uint64(cc.gpu_key_memory_budget),
		PinnedPoolBytes:     uint64(cc.pinned_pool_bytes),
		HostMemoryBudget:    uint64(cc.host_memory_budget),
		ProvingLanes:        int(cc.proving_lanes),
		IdleRelease:         time.Duration(cc.idle_release_ms) * time.Millisecond,
		IdleReleasePoStKeys: !bool(cc.idle_keep_post_keys),
		MallocArenaMax:      int(cc.malloc_arena_max),
		GPUHMSMChunk:        uint64(cc.gpu_h_msm_chunk),
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

func (e *engine) release() {
	if e != nil {
		e.calls.Done()
	}
}

// running returns the engine when one is running, counting a call on it (release it as
// acquire's), and nil otherwise: for calls that need no engine of their own (verification
// without one opens no GPU).
func running() *engine {
	engineMu.Lock()
	defer engineMu.Unlock()
	if current != nil {
		current.calls.Add(1)
	}
	return current
}

// handle is the engine's pointer for a library call, NULL for no engine.
func (e *engine) handle() *C.cuzk_engine {
	if e == nil {
		return nil
	}
	return e.ptr
}

// ReleaseMemory gives back, at once, the memory the running engine keeps between calls: the
// proving keys on the host and the GPUs (but the WindowPoSt and WinningPoSt keys it has used
// when keepPoStKeys), the circuit shapes, the GPUs' matrices, NTT and witness buffers and
// pinned staging buffers, then the allocator's free host memory. Calls in flight keep what
// they use; the next call reads and uploads again what it needs. Without a running engine
// there is nothing to release (no engine is started for it).
func ReleaseMemory(keepPoStKeys bool) (MemoryReleased, error) {
	eng := running()
	if eng == nil {
		return MemoryReleased{}, nil
	}
	defer eng.release()
	var r C.cuzk_memory_released
	r.struct_size = C.uint32_t(unsafe.Sizeof(r))
	var cerr *C.cuzk_error
	if err := takeError(C.cuzk_engine_release_memory(eng.ptr, C.bool(keepPoStKeys), &r, &cerr), cerr); err != nil {
		return MemoryReleased{}, err
	}
	return MemoryReleased{
		HostKeyBytes:   uint64(r.host_key_bytes),
		HostShapeBytes: uint64(r.host_shape_bytes),
		DeviceBytes:    uint64(r.device_bytes),
		PinnedBytes:    uint64(r.pinned_bytes),
		Duration:       nanos(uint64(r.duration_ns)),
	}, nil
}

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
	if strings.IndexByte(cfg.ShapeCacheDir, 0) >= 0 {
		return nil, newError(StatusInvalidArgument, "ShapeCacheDir contains a NUL byte")
	}
	if cfg.NoShapeCache && cfg.ShapeCacheDir != "" {
		return nil, newError(StatusInvalidArgument, "ShapeCacheDir %q set with NoShapeCache", cfg.ShapeCacheDir)
	}
	if cfg.ProvingLanes < 0 || cfg.ProvingLanes > math.MaxUint32 {
		return nil, newError(StatusInvalidArgument, "ProvingLanes %d out of range", cfg.ProvingLanes)
	}
	if cfg.IdleRelease < 0 {
		return nil, newError(StatusInvalidArgument, "IdleRelease %v is negative", cfg.IdleRelease)
	}
	if cfg.MallocArenaMax < 0 || cfg.MallocArenaMax > math.MaxInt32 {
		return nil, newError(StatusInvalidArgument, "MallocArenaMax %d out of range", cfg.MallocArenaMax)
	}
	if len(cfg.Devices) > math.MaxUint32 {
		return nil, newError(StatusInvalidArgument, "%d devices", len(cfg.Devices))
	}
	for i, d := range cfg.Devices {
		if d < 0 || d > math.MaxInt32 {
			return nil, newError(StatusInvalidArgument, "Devices[%d] is %d: not a CUDA ordinal", i, d)
		}
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
	cc.proving_lanes = C.uint32_t(cfg.ProvingLanes)
	cc.idle_release_ms = C.uint64_t(idleReleaseMillis(cfg.IdleRelease))
	cc.idle_keep_post_keys = C.bool(!cfg.IdleReleasePoStKeys)
	cc.malloc_arena_max = C.uint32_t(cfg.MallocArenaMax)
	cc.gpu_h_msm_chunk = C.uint64_t(cfg.GPUHMSMChunk)
	if len(cfg.Devices) > 0 {
		// C memory: the struct passed to the library may hold no Go pointers.
		devices := cArray[C.int32_t](len(cfg.Devices))
		defer C.free(unsafe.Pointer(&devices[0]))
		for i, d := range cfg.Devices {
			devices[i] = C.int32_t(d)
		}
		cc.devices = &devices[0] // the library copies it during cuzk_engine_new
		cc.devices_len = C.uint32_t(len(cfg.Devices))
	}
	// The library copies the strings during cuzk_engine_new.
	if cfg.ParamCacheDir != "" {
		dir := C.CString(cfg.ParamCacheDir)
		defer C.free(unsafe.Pointer(dir))
		cc.param_cache_dir = dir
	}
	if cfg.ShapeCacheDir != "" || cfg.NoShapeCache {
		dir := C.CString(cfg.ShapeCacheDir) // "" with NoShapeCache (checked above): none kept
		defer C.free(unsafe.Pointer(dir))
		cc.shape_cache_dir = dir
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

// idleReleaseMillis is d in whole milliseconds, at least 1 for a positive d (0 is "never").
func idleReleaseMillis(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
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
