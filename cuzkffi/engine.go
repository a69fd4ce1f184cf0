package cuzkffi

import "time"

// ABIVersion is the CUZK_ABI_VERSION of the header this package is written against (checked
// against the header at compile time in the cuzk build). The engine refuses to start when the
// loaded library's (LibraryABIVersion) differs.
const ABIVersion = 1

// Config is the engine configuration (cuzk_config).
type Config struct {
	// ParamCacheDir is the directory of the Groth16 parameters (v28-*.params, *.vk).
	// Empty: $FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters.
	ParamCacheDir string
	// CPUOnly never uses a GPU, even when one is present.
	CPUOnly bool
	// NumThreads is the number of worker threads for synthesis and CPU proving; 0 means one
	// per core; at most 4096 (ErrInvalidArgument above).
	NumThreads int
	// SelfVerify verifies every proof before returning it, as filecoin-proofs does.
	SelfVerify bool
	// GPUKeyMemoryBudget is the device memory per GPU for resident proving keys, in bytes;
	// 0 means 3/4 of the device's memory. Least recently used keys are evicted beyond it; a
	// key larger than it is streamed from host memory on every call.
	GPUKeyMemoryBudget uint64
	// PinnedPoolBytes is the pinned host memory per GPU for staging copies; 0 means 128 MiB,
	// also the least.
	PinnedPoolBytes uint64
	// HostMemoryBudget bounds the host memory of synthesized partitions waiting to be proven
	// (how far synthesis runs ahead of proving); 0 means a quarter of the machine's memory.
	HostMemoryBudget uint64
	// Devices are the CUDA device ordinals the engine uses (numbered after
	// CUDA_VISIBLE_DEVICES), each once; empty: every device. A device that is not there fails
	// Init (ErrInvalidArgument), as does a list with CPUOnly.
	Devices []int
	// ProvingLanes is how many partitions one call proves at once; 0: the library's choice
	// (two per GPU the call may use, one on the CPU); at most 256 (ErrInvalidArgument above).
	ProvingLanes int
	// ShapeCacheDir is where circuit shapes (R1CS matrices) are kept between processes, so
	// that a new process reads them instead of extracting them (15.9 s for a 32GiB PoRep
	// circuit). Empty: cuzk-circuit-shapes beside the parameter directory. Files that do not
	// check out are extracted and written again.
	ShapeCacheDir string
	// NoShapeCache keeps no shapes on disk: every process extracts the ones it needs.
	NoShapeCache bool
	// IdleRelease gives memory back after the engine has been idle that long (no call in
	// flight), as ReleaseMemory does; 0: never. Keys and buffers are read and uploaded again
	// by the next call that needs them.
	IdleRelease time.Duration
	// IdleReleasePoStKeys makes the idle release drop the WindowPoSt and WinningPoSt keys
	// too; by default they stay (their deadlines leave no time to read a key again).
	IdleReleasePoStKeys bool
	// MallocArenaMax caps glibc malloc's arenas when the engine starts (as MALLOC_ARENA_MAX
	// does); 0: the process's allocator is left as it is. With glibc's default a long-running
	// process's RSS wanders by a few hundred MiB; 2 keeps it within 64 MiB. It applies to the
	// whole process (Go's own heap is not malloc's), stays after Close, and binds arenas made
	// after it: start the engine early.
	MallocArenaMax int
	// GPUHMSMChunk is the most points of a chunk of H's MSM on a GPU, between which a
	// WinningPoSt may take the device: it waits for one chunk, not the whole MSM (a 32GiB
	// partition's 2^27 points in two chunks by default, ≈ 0.4 s each on an H200); smaller
	// chunks shorten that wait and cost their launches. 0: 2^26; else at least 65536
	// (ErrInvalidArgument below).
	GPUHMSMChunk uint64
}

// MemoryReleased is what ReleaseMemory gave back, in bytes.
type MemoryReleased struct {
	HostKeyBytes   uint64 // proving keys dropped from host memory
	HostShapeBytes uint64 // circuit shapes (R1CS matrices) dropped from host memory
	DeviceBytes    uint64 // device memory freed, as the driver counts it, over all GPUs
	PinnedBytes    uint64 // pinned host staging memory freed
	Duration       time.Duration
}

// MemoryEstimate is what a proof kind takes in memory with the running engine's
// configuration, in bytes: upper bounds for a scheduler to declare before it proves (Curio's
// task resources), from the proving key's query sizes, the circuit's shape, the host memory
// budget, the proving lanes and the GPU key budget.
type MemoryEstimate struct {
	Partitions          uint64 // partition circuits one call proves
	HostResidentBytes   uint64 // kept between calls (what a preload makes resident): key points, circuit shape
	HostCallBytes       uint64 // added by one call while it runs: synthesized partitions, proving lanes' working memory
	DeviceResidentBytes uint64 // kept between calls on each GPU: the key's copy when it fits, the circuit's matrices
	DeviceCallBytes     uint64 // added by one call on each GPU it proves on: NTT and witness buffers, MSM scratch
}

// documentedDefaults are the library's documented defaults (cuzk_config_default) as far as Go
// knows them without the library: self-verification on, everything else zero (all cores, a
// GPU when present, the parameter directory from the environment, the budgets' defaults).
// DefaultConfig returns them in stub mode; the cuzk build's tests check that the library's
// defaults are these.
func documentedDefaults() Config {
	return Config{SelfVerify: true}
}
