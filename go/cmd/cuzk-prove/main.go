// Command cuzk-prove makes the PoRep commit phase 2 proof of a sector with cuzk, prints the
// per-phase timings and verifies the proof: the calls a proving service makes, in one file.
//
//	cuzk-prove -c1 c1.json -sector 1 -miner 1000 [-params DIR] [-out proof.bin]
//
// Ctrl-C cancels the proof (the engine stops at its next phase boundary).
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

	"github.com/filecoin-project/go-state-types/abi"

	cuzk "github.com/cuzk-dev/cuzk/go"
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
	info, err := cuzk.ParseC1Info(phase1Output)
	if err != nil {
		return fmt.Errorf("reading %s: %w", *c1Path, err)
	}

	cfg := cuzk.DefaultConfig()
	cfg.ParamCacheDir = *params
	cfg.CPUOnly = *cpuOnly
	cfg.NumThreads = *threads
	if err := cuzk.Init(cfg); err != nil {
		return err
	}
	// No cuzk.Close here: it would wait for a cancelled proof to unwind, and exiting the
	// process releases the engine anyway. A long-lived service calls Close on shutdown.
	fmt.Printf("cuzk %s: sector %d of f0%d, seal proof %d, %d partition(s)\n",
		cuzk.Version(), *sector, *miner, info.RegisteredProof, info.Partitions)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}

	proof, timings, err := cuzk.SealCommitPhase2WithTimings(ctx, phase1Output, abi.SectorNumber(*sector), abi.ActorID(*miner))
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("proof abandoned: %w", err)
	case errors.Is(err, cuzk.ErrParametersNotFound):
		return fmt.Errorf("%w\n(fetch the parameters, or pass -params DIR)", err)
	case err != nil:
		return err
	}
	printTimings(timings)

	ok, err := cuzk.VerifySeal(info.RegisteredProof, info.CommR, info.CommD, abi.ActorID(*miner),
		abi.SectorNumber(*sector), info.Ticket, info.Seed, proof)
	if err != nil {
		return fmt.Errorf("verifying: %w", err)
	}
	if !ok {
		return errors.New("the proof does not verify")
	}
	fmt.Printf("proof: %d bytes, verified\n", len(proof))
	if *outPath != "" {
		if err := os.WriteFile(*outPath, proof, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func printTimings(t cuzk.Timings) {
	device := ""
	if t.Backend == cuzk.BackendGPU {
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
