package cuzk

/*
#include "cuzk.h"
*/
import "C"

import (
	"encoding/json"
	"math"
	"time"
	"unsafe"

	"github.com/filecoin-project/go-state-types/abi"
)

// PreloadReport is what PreloadKey did: the time to read the key from disk and to copy it to
// the GPUs (each 0 when it was already there).
type PreloadReport struct {
	SRSLoad   time.Duration
	SRSUpload time.Duration
}

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
	return PreloadReport{SRSLoad: nanos(load), SRSUpload: nanos(upload)}, nil
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

// EngineStatus is what the engine holds and does (cuzk_engine_status). Sizes are bytes.
type EngineStatus struct {
	Version        string `json:"version"`
	Backend        string `json:"backend"` // "gpu" or "cpu"
	WorkerThreads  int    `json:"worker_threads"`
	ProofsInFlight uint64 `json:"proofs_in_flight"`
	// HostMemoryTrims counts the times the engine returned free host memory to the OS (when
	// it went idle, and after key evictions).
	HostMemoryTrims uint64          `json:"host_memory_trims"`
	HostKeys        []HostKeyStatus `json:"host_keys"`
	// PipelineMemoryInUse is the host memory of synthesized partitions waiting for or in
	// proving, across all calls; PipelineMemoryBudget bounds it (Config.HostMemoryBudget).
	PipelineMemoryInUse  uint64         `json:"pipeline_memory_in_use"`
	PipelineMemoryBudget uint64         `json:"pipeline_memory_budget"`
	PipelineMemoryPeak   uint64         `json:"pipeline_memory_peak"` // the most in use so far
	Pipeline             PipelineStatus `json:"pipeline"`
	Devices              []DeviceStatus `json:"devices"`
}

// PipelineStatus is how busy the prove pipeline's stages are, across all calls: partitions in
// each stage now, and each stage's busy time since the engine started (summed over calls).
type PipelineStatus struct {
	PartitionsSynthesizing uint64 `json:"partitions_synthesizing"`
	PartitionsWaiting      uint64 `json:"partitions_waiting"` // synthesized, waiting for proving
	PartitionsProving      uint64 `json:"partitions_proving"`
	SynthesisBusyNs        uint64 `json:"synthesis_busy_ns"`
	ProvingBusyNs          uint64 `json:"proving_busy_ns"`
}

// HostKeyStatus is a proving key resident in host memory.
type HostKeyStatus struct {
	Label string `json:"label"` // its file
	Bytes uint64 `json:"bytes"`
}

// DeviceStatus is one GPU and what the engine keeps on it.
type DeviceStatus struct {
	Ordinal          int    `json:"ordinal"`
	Name             string `json:"name"`
	MemoryTotal      uint64 `json:"memory_total"`
	MemoryFree       uint64 `json:"memory_free"`
	MemoryUsedByCuzk uint64 `json:"memory_used_by_cuzk"` // resident keys and matrices + buffers
	NTTBufferBytes   uint64 `json:"ntt_buffer_bytes"`
	// WitnessBufferBytes is the device copy of the witness (when the GPU computes a, b, c).
	WitnessBufferBytes uint64              `json:"witness_buffer_bytes"`
	KeyBudget          uint64              `json:"key_budget"`
	ResidentKeys       []ResidentKeyStatus `json:"resident_keys"` // most recently used first
	// ResidentShapes are circuits whose R1CS matrices are in device memory.
	ResidentShapes []ResidentShapeStatus `json:"resident_shapes"`
	PinnedPool     PinnedPoolStatus      `json:"pinned_pool"`
	ProofsInFlight uint64                `json:"proofs_in_flight"`
	ProofsDone     uint64                `json:"proofs_done"`
	// BusyNs is the time calls have held the device (GPU phases, uploads) since the engine
	// started: its growth over a window, divided by the window, is the GPU's busy fraction.
	BusyNs uint64 `json:"busy_ns"`
	// Health is "healthy", or "quarantined" after a fault this process could not recover from
	// (its calls go to the other devices, or to the CPU when none is left).
	Health string `json:"health"`
	// Faults counts sticky CUDA faults on the device; each one reset this process's context of
	// the device (keys are uploaded again on next use) or quarantined it.
	Faults         uint64  `json:"faults"`
	LastFault      *string `json:"last_fault"`
	LastRecoveryNs uint64  `json:"last_recovery_ns"`
}

// ResidentShapeStatus is a circuit's R1CS matrices in device memory.
type ResidentShapeStatus struct {
	Constraints uint64 `json:"constraints"`
	Bytes       uint64 `json:"bytes"`
}

// ResidentKeyStatus is a proving key's copy in device memory.
type ResidentKeyStatus struct {
	Label  string `json:"label"`
	Bytes  uint64 `json:"bytes"`
	Uses   uint64 `json:"uses"`   // calls that used it
	Loaded bool   `json:"loaded"` // false while it is being copied
	// Class is the highest class of the calls that used it ("Sealing", "WindowPost",
	// "WinningPost"): calls of lower classes never evict it, they stream their key instead.
	Class string `json:"class"`
}

// PinnedPoolStatus is a GPU's pool of pinned host staging buffers.
type PinnedPoolStatus struct {
	BufferBytes    uint64 `json:"buffer_bytes"`
	LimitBytes     uint64 `json:"limit_bytes"`
	AllocatedBytes uint64 `json:"allocated_bytes"`
	InUseBytes     uint64 `json:"in_use_bytes"`
	Acquisitions   uint64 `json:"acquisitions"`
	Allocations    uint64 `json:"allocations"`
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
