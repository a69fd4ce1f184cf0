//go:build !cuzk

// Stub mode: the package built without the build tag cuzk links no library (and needs no cgo).
// Every function of the cuzk build that needs the library is here with the same signature and
// does nothing but return ErrNotBuilt (wrapped by nothing: errors.Is and == both match), except
// the three without an error result: Version returns "", LibraryABIVersion 0 and DefaultConfig
// the library's documented defaults. Types, constants, options, errors, ProverID and
// MergeWindowPoStPartitionProofs are the pure-Go files', the same in both builds. api_test.go
// fails the stub build when a function is missing here, and TestStubsMatchLibrary when a
// signature differs from the cuzk build's.

package cuzkffi

import (
	"context"
	"log/slog"

	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
	"github.com/ipfs/go-cid"
)

// Version returns "" in stub mode: no library is loaded.
func Version() string { return "" }

// LibraryABIVersion returns 0 in stub mode (no ABI version is 0): no library is loaded.
func LibraryABIVersion() uint32 { return 0 }

// DefaultConfig returns, in stub mode, the library's documented defaults as far as Go knows
// them without the library: SelfVerify true, every other field zero (all cores, a GPU when
// present, the parameter directory from the environment, the budgets' defaults). The cuzk
// build's tests check that the library's cuzk_config_default gives the same.
func DefaultConfig() Config { return documentedDefaults() }

// Init returns ErrNotBuilt in stub mode.
func Init(cfg Config) error { return ErrNotBuilt }

// Close returns ErrNotBuilt in stub mode.
func Close() error { return ErrNotBuilt }

// SetLogger returns ErrNotBuilt in stub mode.
func SetLogger(logger *slog.Logger, minLevel slog.Level) error { return ErrNotBuilt }

// SealCommitPhase2 returns ErrNotBuilt in stub mode.
func SealCommitPhase2(phase1Output []byte, sectorNum abi.SectorNumber, minerID abi.ActorID) ([]byte, error) {
	return nil, ErrNotBuilt
}

// SealCommitPhase2WithOptions returns ErrNotBuilt in stub mode.
func SealCommitPhase2WithOptions(ctx context.Context, phase1Output []byte, sectorNum abi.SectorNumber, minerID abi.ActorID,
	opts ...ProveOption) ([]byte, Timings, error) {
	return nil, Timings{}, ErrNotBuilt
}

// SealCommitPhase2Batch returns ErrNotBuilt in stub mode.
func SealCommitPhase2Batch(ctx context.Context, sectors []SectorRequest, opts ...ProveOption) ([]SectorResult, error) {
	return nil, ErrNotBuilt
}

// ParseC1Info returns ErrNotBuilt in stub mode.
func ParseC1Info(phase1Output []byte) (C1Info, error) { return C1Info{}, ErrNotBuilt }

// VerifySeal returns ErrNotBuilt in stub mode.
func VerifySeal(info proof.SealVerifyInfo) (bool, error) { return false, ErrNotBuilt }

// GenerateSinglePartitionWindowPoStWithVanilla returns ErrNotBuilt in stub mode.
func GenerateSinglePartitionWindowPoStWithVanilla(proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte, partitionIndex uint) (*PartitionProof, error) {
	return nil, ErrNotBuilt
}

// GenerateSinglePartitionWindowPoStWithVanillaWithOptions returns ErrNotBuilt in stub mode.
func GenerateSinglePartitionWindowPoStWithVanillaWithOptions(ctx context.Context, proofType abi.RegisteredPoStProof,
	minerID abi.ActorID, randomness abi.PoStRandomness, proofs [][]byte, partitionIndex uint,
	opts ...ProveOption) (*PartitionProof, Timings, error) {
	return nil, Timings{}, ErrNotBuilt
}

// GenerateWinningPoStWithVanilla returns ErrNotBuilt in stub mode.
func GenerateWinningPoStWithVanilla(proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte) ([]proof.PoStProof, error) {
	return nil, ErrNotBuilt
}

// GenerateWinningPoStWithVanillaWithOptions returns ErrNotBuilt in stub mode.
func GenerateWinningPoStWithVanillaWithOptions(ctx context.Context, proofType abi.RegisteredPoStProof, minerID abi.ActorID,
	randomness abi.PoStRandomness, proofs [][]byte, opts ...ProveOption) ([]proof.PoStProof, Timings, error) {
	return nil, Timings{}, ErrNotBuilt
}

// VerifyWindowPoSt returns ErrNotBuilt in stub mode.
func VerifyWindowPoSt(info proof.WindowPoStVerifyInfo) (bool, error) { return false, ErrNotBuilt }

// VerifyWinningPoSt returns ErrNotBuilt in stub mode.
func VerifyWinningPoSt(info proof.WinningPoStVerifyInfo) (bool, error) { return false, ErrNotBuilt }

// GenerateUpdateProofWithVanilla returns ErrNotBuilt in stub mode.
func GenerateUpdateProofWithVanilla(proofType abi.RegisteredUpdateProof, oldSealedCID, newSealedCID, unsealedCID cid.Cid,
	vanillaProofs [][]byte) ([]byte, error) {
	return nil, ErrNotBuilt
}

// GenerateUpdateProofWithVanillaWithOptions returns ErrNotBuilt in stub mode.
func GenerateUpdateProofWithVanillaWithOptions(ctx context.Context, proofType abi.RegisteredUpdateProof, oldSealedCID, newSealedCID,
	unsealedCID cid.Cid, vanillaProofs [][]byte, opts ...ProveOption) ([]byte, Timings, error) {
	return nil, Timings{}, ErrNotBuilt
}

// GenerateUpdateProofBatch returns ErrNotBuilt in stub mode.
func GenerateUpdateProofBatch(ctx context.Context, requests []UpdateRequest, opts ...ProveOption) ([]SectorResult, error) {
	return nil, ErrNotBuilt
}

// VerifyUpdateProof returns ErrNotBuilt in stub mode.
func VerifyUpdateProof(info proof.ReplicaUpdateInfo) (bool, error) { return false, ErrNotBuilt }

// PreloadKey returns ErrNotBuilt in stub mode.
func PreloadKey(registeredProof abi.RegisteredSealProof) (PreloadReport, error) {
	return PreloadReport{}, ErrNotBuilt
}

// EvictKey returns ErrNotBuilt in stub mode.
func EvictKey(registeredProof abi.RegisteredSealProof) (bool, error) { return false, ErrNotBuilt }

// PreloadPoStKey returns ErrNotBuilt in stub mode.
func PreloadPoStKey(registeredProof abi.RegisteredPoStProof) (PreloadReport, error) {
	return PreloadReport{}, ErrNotBuilt
}

// EvictPoStKey returns ErrNotBuilt in stub mode.
func EvictPoStKey(registeredProof abi.RegisteredPoStProof) (bool, error) { return false, ErrNotBuilt }

// PreloadUpdateKey returns ErrNotBuilt in stub mode.
func PreloadUpdateKey(registeredProof abi.RegisteredUpdateProof) (PreloadReport, error) {
	return PreloadReport{}, ErrNotBuilt
}

// EvictUpdateKey returns ErrNotBuilt in stub mode.
func EvictUpdateKey(registeredProof abi.RegisteredUpdateProof) (bool, error) {
	return false, ErrNotBuilt
}

// ReadEngineStatus returns ErrNotBuilt in stub mode.
func ReadEngineStatus() (EngineStatus, error) { return EngineStatus{}, ErrNotBuilt }

// EstimateMemory returns ErrNotBuilt in stub mode.
func EstimateMemory(registeredProof abi.RegisteredSealProof) (MemoryEstimate, error) {
	return MemoryEstimate{}, ErrNotBuilt
}

// EstimatePoStMemory returns ErrNotBuilt in stub mode.
func EstimatePoStMemory(registeredProof abi.RegisteredPoStProof) (MemoryEstimate, error) {
	return MemoryEstimate{}, ErrNotBuilt
}

// EstimateUpdateMemory returns ErrNotBuilt in stub mode.
func EstimateUpdateMemory(registeredProof abi.RegisteredUpdateProof) (MemoryEstimate, error) {
	return MemoryEstimate{}, ErrNotBuilt
}

// ReleaseMemory returns ErrNotBuilt in stub mode.
func ReleaseMemory(keepPoStKeys bool) (MemoryReleased, error) { return MemoryReleased{}, ErrNotBuilt }
