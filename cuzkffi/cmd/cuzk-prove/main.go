// Command cuzk-prove makes the PoRep commit phase 2 proof of a sector with cuzk, prints the
// per-phase timings and verifies the proof: the calls a proving service makes, in one file.
//
//	cuzk-prove -c1 c1.json -sector 1 -miner 1000 [-params DIR] [-out proof.bin]
//
// Ctrl-C cancels the proof (the engine stops at its next phase boundary). Build it with
// -tags cuzk: without the tag the package links no library and the command only says so.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	commcid "github.com/filecoin-project/go-fil-commcid"
	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"

	"github.com/cuzk-dev/cuzk/cuzkffi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "cuzk-prove:", err)
		os.Exit(1)
	}
}

func run() error {
	c1Path := flag.String("c1", "", "commit phase 1 output (JSON of SealCommitPhase1Output)")
	sector := flag.Uint64("sector", 0, "sector number")
	miner := flag.Uint64("miner", 0, "miner actor id (the number of its f0 address)")
	params := flag.String("params", "", "parameter cache directory (default: $FIL_PROOFS_PARAMETER_CACHE, else /var/tmp/filecoin-proof-parameters)")
	cpuOnly := flag.Bool("cpu", false, "never use a GPU")
	threads := flag.Int("threads", 0, "worker threads (0: one per core)")
	timeout := flag.Duration("timeout", 0, "give up after this long (0: no limit)")
	outPath := flag.String("out", "", "write the proof to this file")
	flag.Parse()
	if *c1Path == "" || flag.NArg() != 0 {
		flag.Usage()
		return errors.New("-c1 is required")
	}

	phase1Output, err := os.ReadFile(*c1Path)
	if err != nil {
		return err
	}
	info, err := cuzkffi.ParseC1Info(phase1Output)
	if errors.Is(err, cuzkffi.ErrNotBuilt) {
		return err
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", *c1Path, err)
	}

	cfg := cuzkffi.DefaultConfig()
	cfg.ParamCacheDir = *params
	cfg.CPUOnly = *cpuOnly
	cfg.NumThreads = *threads
	if err := cuzkffi.Init(cfg); err != nil {
		return err
	}
	// No cuzkffi.Close here: it would wait for a cancelled proof to unwind, and exiting the
	// process releases the engine anyway. A long-lived service calls Close on shutdown.
	fmt.Printf("cuzk %s: sector %d of f0%d, seal proof %d, %d partition(s)\n",
		cuzkffi.Version(), *sector, *miner, info.RegisteredProof, info.Partitions)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}

	proofBytes, timings, err := cuzkffi.SealCommitPhase2WithOptions(ctx, phase1Output, abi.SectorNumber(*sector), abi.ActorID(*miner))
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("proof abandoned: %w", err)
	case errors.Is(err, cuzkffi.ErrParametersNotFound):
		return fmt.Errorf("%w\n(fetch the parameters, or pass -params DIR)", err)
	case err != nil:
		return err
	}
	printTimings(timings)

	svi, err := sealVerifyInfo(info, abi.ActorID(*miner), abi.SectorNumber(*sector), proofBytes)
	if err != nil {
		return err
	}
	ok, err := cuzkffi.VerifySeal(svi)
	if err != nil {
		return fmt.Errorf("verifying: %w", err)
	}
	if !ok {
		return errors.New("the proof does not verify")
	}
	fmt.Printf("proof: %d bytes, verified\n", len(proofBytes))
	if *outPath != "" {
		if err := os.WriteFile(*outPath, proofBytes, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sealVerifyInfo is the sector of a C1 output as VerifySeal takes it (filecoin-ffi's
// proof.SealVerifyInfo): the commitments as CIDs, the ticket and seed as its randomness.
func sealVerifyInfo(info cuzkffi.C1Info, miner abi.ActorID, sector abi.SectorNumber, proofBytes []byte) (proof.SealVerifyInfo, error) {
	sealed, err := commcid.ReplicaCommitmentV1ToCID(info.CommR[:])
	if err != nil {
		return proof.SealVerifyInfo{}, fmt.Errorf("comm_r: %w", err)
	}
	unsealed, err := commcid.DataCommitmentV1ToCID(info.CommD[:])
	if err != nil {
		return proof.SealVerifyInfo{}, fmt.Errorf("comm_d: %w", err)
	}
	return proof.SealVerifyInfo{
		SealProof:             info.RegisteredProof,
		SectorID:              abi.SectorID{Miner: miner, Number: sector},
		Randomness:            info.Ticket[:],
		InteractiveRandomness: info.Seed[:],
		Proof:                 proofBytes,
		SealedCID:             sealed,
		UnsealedCID:           unsealed,
	}, nil
}

func printTimings(t cuzkffi.Timings) {
	device := ""
	if t.Backend == cuzkffi.BackendGPU {
		device = fmt.Sprintf(" (device %d)", t.DeviceIndex)
	}
	fmt.Printf("backend %v%s, %d partition(s), %d constraints each, domain 2^%d\n",
		t.Backend, device, t.Partitions, t.NumConstraints, t.DomainLog2)
	fmt.Printf("%-12s %14s %7s\n", "phase", "time", "share")
	for _, p := range t.Phases() {
		if p.Duration == 0 {
			continue
		}
		fmt.Printf("%-12s %14v %6.1f%%\n", p.Name, p.Duration.Round(time.Microsecond), 100*p.Duration.Seconds()/t.Total.Seconds())
	}
	fmt.Printf("%-12s %14v\n", "total", t.Total.Round(time.Microsecond))
}
