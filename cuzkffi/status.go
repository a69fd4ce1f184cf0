package cuzkffi

import "time"

// PreloadReport is what PreloadKey did: the time to read the key from disk and to copy it to
// the GPUs (each 0 when it was already there).
type PreloadReport struct {
	SRSLoad   time.Duration
	SRSUpload time.Duration
}

// EngineStatus is what the engine holds and does (cuzk_engine_status). Sizes are bytes.
type EngineStatus struct {
	Version        string `json:"version"`
	Backend        string `json:"backend"` // "gpu" or "cpu"
	WorkerThreads  int    `json:"worker_threads"`
	ProofsInFlight uint64 `json:"proofs_in_flight"`
	// HostMemoryTrims counts the times the engine returned free host memory to the OS (when
	// it went idle, after key evictions, and during calls when more was kept than their
	// partitions reuse).
	HostMemoryTrims uint64 `json:"host_memory_trims"`
	// IdleReleases counts the times the idle policy (Config.IdleRelease) released memory.
	IdleReleases uint64          `json:"idle_releases"`
	HostKeys     []HostKeyStatus `json:"host_keys"`
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

// HostKeyStatus is a proving key the engine holds. Its points are in host memory only where
// they are needed there (the CPU backend, a key streamed to the GPUs); a key resident on the
// GPUs is read from its file as it is copied there.
type HostKeyStatus struct {
	Label       string `json:"label"`        // its file
	Bytes       uint64 `json:"bytes"`        // its points in host memory (0: resident on the GPUs alone)
	PointsBytes uint64 `json:"points_bytes"` // all its points
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

// ResidentShapeStatus is a circuit's R1CS matrices in device memory; Bytes counts its A and
// B selections of the witness too, once a call of the circuit sent them.
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
