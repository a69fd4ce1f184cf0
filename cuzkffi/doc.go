// Package cuzkffi binds libcuzk, an embeddable Groth16 proving engine for Filecoin, through its
// C ABI (include/cuzk.h). Its proving and verifying functions have the names and signatures of
// filecoin-ffi's (SealCommitPhase2, VerifySeal, GenerateSinglePartitionWindowPoStWithVanilla,
// MergeWindowPoStPartitionProofs, GenerateWinningPoStWithVanilla,
// GenerateUpdateProofWithVanilla, VerifyUpdateProof, VerifyWindowPoSt, VerifyWinningPoSt), so
// a Go proving service can switch by changing an import; the ...WithOptions variants add a
// context for cancellation, options (priority class, device, partition timings) and per-phase
// timings.
//
// # Build tag
//
// The library is linked only when the package is built with the build tag cuzk
// (go build -tags cuzk), which needs cgo and libcuzk through pkg-config (see the README).
// Without the tag the package is pure Go and builds anywhere (CGO_ENABLED=0 included): its
// types, constants, options, errors, ProverID and MergeWindowPoStPartitionProofs are the same,
// and every function that needs the library returns ErrNotBuilt (Version returns "",
// LibraryABIVersion 0, and DefaultConfig the library's defaults that Go knows). A service can
// so import the package unconditionally and fall back to filecoin-ffi on ErrNotBuilt.
//
// # Engine
//
// The package keeps one engine handle for the process. Init sets its configuration; without
// Init the first call starts it with DefaultConfig. The library allows one configuration per
// process at a time: Init with a different one while the engine is alive fails with
// ErrEngineState (call Close first).
//
// Verification (VerifySeal, VerifyWindowPoSt, VerifyWinningPoSt, VerifyUpdateProof) never
// starts the engine or opens a GPU: it uses the running engine's parameter directory, or
// without one $FIL_PROOFS_PARAMETER_CACHE (else /var/tmp/filecoin-proof-parameters), as
// filecoin-ffi does.
//
// # Memory
//
// The engine keeps proving keys (host and GPUs), circuit shapes and GPU buffers between calls.
// ReleaseMemory gives them back at once; Config.IdleRelease does it after an idle time,
// keeping the PoSt keys unless Config.IdleReleasePoStKeys. ReadEngineStatus shows what is
// held.
package cuzkffi

//go:generate ../scripts/install-libcuzk.sh
