//go:build cuzk

package cuzkffi

/*
#include "cuzk.h"
*/
import "C"

import (
	"encoding/json"
	"math"
	"unsafe"

	"github.com/filecoin-project/go-state-types/abi"
)

func checkProof(registeredProof abi.RegisteredSealProof) error {
	if registeredProof < 0 || registeredProof > math.MaxUint32 {
		return newError(StatusInvalidArgument, "registered seal proof %d out of range", registeredProof)
	}
	return nil
}

// PreloadKey reads the proving key of registeredProof from the parameter directory and makes
// it resident on every GPU the engine uses, so that the next proof of that kind loads
// nothing (a service calls it at start-up, before the first sector arrives).
func PreloadKey(registeredProof abi.RegisteredSealProof) (PreloadReport, error) {
	return preload(checkProof(registeredProof), func(eng *C.cuzk_engine, load, upload *C.uint64_t, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_engine_preload_key(eng, C.uint32_t(registeredProof), load, upload, cerr)
	})
}

// EvictKey drops the proving key of registeredProof from host memory and from every GPU
// (calls using it finish first); it reports whether the key was resident anywhere.
func EvictKey(registeredProof abi.RegisteredSealProof) (bool, error) {
	return evict(checkProof(registeredProof), func(eng *C.cuzk_engine, evicted *C.bool, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_engine_evict_key(eng, C.uint32_t(registeredProof), evicted, cerr)
	})
}

// PreloadPoStKey is PreloadKey for a registered PoSt proof: the WindowPoSt or WinningPoSt
// proving key of a sector size (a WindowPoSt service calls it before its first deadline, a
// WinningPoSt one so that block production never waits for the key).
func PreloadPoStKey(registeredProof abi.RegisteredPoStProof) (PreloadReport, error) {
	return preload(checkPoStProof(registeredProof), func(eng *C.cuzk_engine, load, upload *C.uint64_t, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_engine_preload_post_key(eng, C.uint32_t(registeredProof), load, upload, cerr)
	})
}

// EvictPoStKey is EvictKey for a registered PoSt proof.
func EvictPoStKey(registeredProof abi.RegisteredPoStProof) (bool, error) {
	return evict(checkPoStProof(registeredProof), func(eng *C.cuzk_engine, evicted *C.bool, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_engine_evict_post_key(eng, C.uint32_t(registeredProof), evicted, cerr)
	})
}

// PreloadUpdateKey is PreloadKey for a registered update proof: the SnapDeals proving key of a
// sector size.
func PreloadUpdateKey(registeredProof abi.RegisteredUpdateProof) (PreloadReport, error) {
	return preload(checkUpdateProof(registeredProof), func(eng *C.cuzk_engine, load, upload *C.uint64_t, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_engine_preload_update_key(eng, C.uint32_t(registeredProof), load, upload, cerr)
	})
}

// EvictUpdateKey is EvictKey for a registered update proof.
func EvictUpdateKey(registeredProof abi.RegisteredUpdateProof) (bool, error) {
	return evict(checkUpdateProof(registeredProof), func(eng *C.cuzk_engine, evicted *C.bool, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_engine_evict_update_key(eng, C.uint32_t(registeredProof), evicted, cerr)
	})
}

func checkUpdateProof(p abi.RegisteredUpdateProof) error {
	if p < 0 || p > math.MaxUint32 {
		return newError(StatusInvalidArgument, "registered update proof %d out of range", p)
	}
	return nil
}

// preload runs call, a cuzk_engine_preload*_key, on the engine, unless the proof number was
// refused (checked).
func preload(checked error, call func(*C.cuzk_engine, *C.uint64_t, *C.uint64_t, **C.cuzk_error) C.enum_cuzk_status) (PreloadReport, error) {
	if checked != nil {
		return PreloadReport{}, checked
	}
	eng, err := acquire()
	if err != nil {
		return PreloadReport{}, err
	}
	defer eng.release()
	var load, upload C.uint64_t
	var cerr *C.cuzk_error
	if err := takeError(call(eng.ptr, &load, &upload, &cerr), cerr); err != nil {
		return PreloadReport{}, err
	}
	return PreloadReport{SRSLoad: nanos(uint64(load)), SRSUpload: nanos(uint64(upload))}, nil
}

// evict runs call, a cuzk_engine_evict*_key, on the engine, unless the proof number was
// refused (checked).
func evict(checked error, call func(*C.cuzk_engine, *C.bool, **C.cuzk_error) C.enum_cuzk_status) (bool, error) {
	if checked != nil {
		return false, checked
	}
	eng, err := acquire()
	if err != nil {
		return false, err
	}
	defer eng.release()
	var evicted C.bool
	var cerr *C.cuzk_error
	if err := takeError(call(eng.ptr, &evicted, &cerr), cerr); err != nil {
		return false, err
	}
	return bool(evicted), nil
}

// EstimateMemory reports what a PoRep C2 of registeredProof takes in memory with the engine's
// configuration: what the engine keeps between calls and what a call adds, on the host and on
// each GPU. It reads the counts of the key's file (not its points) and extracts the circuit's
// shape when the engine does not hold it yet (as PreloadKey does; it is kept).
func EstimateMemory(registeredProof abi.RegisteredSealProof) (MemoryEstimate, error) {
	return estimate(checkProof(registeredProof), func(eng *C.cuzk_engine, out *C.cuzk_memory_estimate, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_engine_memory_estimate(eng, C.uint32_t(registeredProof), out, cerr)
	})
}

// EstimatePoStMemory is EstimateMemory for a registered PoSt proof: one WindowPoSt partition,
// or a WinningPoSt.
func EstimatePoStMemory(registeredProof abi.RegisteredPoStProof) (MemoryEstimate, error) {
	return estimate(checkPoStProof(registeredProof), func(eng *C.cuzk_engine, out *C.cuzk_memory_estimate, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_engine_memory_estimate_post(eng, C.uint32_t(registeredProof), out, cerr)
	})
}

// EstimateUpdateMemory is EstimateMemory for a registered update proof: a sector's SnapDeals
// update proof.
func EstimateUpdateMemory(registeredProof abi.RegisteredUpdateProof) (MemoryEstimate, error) {
	return estimate(checkUpdateProof(registeredProof), func(eng *C.cuzk_engine, out *C.cuzk_memory_estimate, cerr **C.cuzk_error) C.enum_cuzk_status {
		return C.cuzk_engine_memory_estimate_update(eng, C.uint32_t(registeredProof), out, cerr)
	})
}

// estimate runs call, a cuzk_engine_memory_estimate*, on the engine, unless the proof number
// was refused (checked).
func estimate(checked error, call func(*C.cuzk_engine, *C.cuzk_memory_estimate, **C.cuzk_error) C.enum_cuzk_status) (MemoryEstimate, error) {
	if checked != nil {
		return MemoryEstimate{}, checked
	}
	eng, err := acquire()
	if err != nil {
		return MemoryEstimate{}, err
	}
	defer eng.release()
	var e C.cuzk_memory_estimate
	e.struct_size = C.uint32_t(unsafe.Sizeof(e))
	var cerr *C.cuzk_error
	if err := takeError(call(eng.ptr, &e, &cerr), cerr); err != nil {
		return MemoryEstimate{}, err
	}
	return MemoryEstimate{
		Partitions:          uint64(e.partitions),
		HostResidentBytes:   uint64(e.host_resident_bytes),
		HostCallBytes:       uint64(e.host_call_bytes),
		DeviceResidentBytes: uint64(e.device_resident_bytes),
		DeviceCallBytes:     uint64(e.device_call_bytes),
	}, nil
}

// ReadEngineStatus reports what the engine holds and does now.
func ReadEngineStatus() (EngineStatus, error) {
	eng, err := acquire()
	if err != nil {
		return EngineStatus{}, err
	}
	defer eng.release()
	var out *C.cuzk_bytes
	var cerr *C.cuzk_error
	status := C.cuzk_engine_status(eng.ptr, &out, &cerr)
	defer C.cuzk_bytes_free(out) // NULL on failure
	if err := takeError(status, cerr); err != nil {
		return EngineStatus{}, err
	}
	if out == nil || out.data == nil || out.len > math.MaxInt32 {
		return EngineStatus{}, newError(StatusInternal, "cuzk_engine_status returned no JSON")
	}
	var st EngineStatus
	if err := json.Unmarshal(C.GoBytes(unsafe.Pointer(out.data), C.int(out.len)), &st); err != nil {
		return EngineStatus{}, newError(StatusInternal, "engine status: %v", err)
	}
	return st, nil
}
