// Command curio-shaped runs the proving load of a Curio node through one cuzk engine, the way
// Curio's tasks call filecoin-ffi: PoRep C2 tasks in a loop on worker goroutines (sealing),
// a WindowPoSt deadline's partitions arriving while they run, and a WinningPoSt (block
// production) arriving during both. It prints every call's latency and timings as it ends,
// then the GPU's busy fraction, and verifies every proof with the filecoin-ffi-shaped
// verifiers.
//
//	curio-shaped -c1 c1.json -sector 1 -miner 1000 -post post.json [-params DIR]
//	    [-c2 8] [-c2-workers 2] [-window-after 1s] [-winning-after 2s]
//
// c1.json and post.json are what `cuzk-fixtures seal` and `cuzk-fixtures post` write (the PoSt
// fixture's miner is the one of its sectors). Build with -tags cuzk.
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	commcid "github.com/filecoin-project/go-fil-commcid"
	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"

	"github.com/cuzk-dev/cuzk/cuzkffi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "curio-shaped:", err)
		os.Exit(1)
	}
}

// postInput is the part of `cuzk-fixtures post`'s post.json a PoSt task has: the vanilla
// proofs (as filecoin-ffi's GenerateSingleVanillaProof returns them) and the sectors.
type postInput struct {
	MinerID    uint64 `json:"miner_id"`
	Randomness string `json:"randomness"`
	Window     struct {
		ABIProof   int64 `json:"abi_proof"`
		Partitions []struct {
			Index         uint         `json:"index"`
			VanillaProofs []string     `json:"vanilla_proofs"`
			Sectors       []sectorJSON `json:"sectors"`
		} `json:"partitions"`
	} `json:"window"`
	Winning struct {
		ABIProof      int64        `json:"abi_proof"`
		VanillaProofs []string     `json:"vanilla_proofs"`
		Sectors       []sectorJSON `json:"sectors"`
	} `json:"winning"`
}

type sectorJSON struct {
	SectorID uint64 `json:"sector_id"`
	CommR    string `json:"comm_r"`
}

// report prints calls as they end, from any goroutine.
type report struct {
	mu    sync.Mutex
	start time.Time
}

func (r *report) call(what string, elapsed time.Duration, t cuzkffi.Timings, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := time.Since(r.start).Seconds()
	if err != nil {
		fmt.Printf("%7.2fs  %-22s FAILED after %v: %v\n", at, what, elapsed.Round(time.Millisecond), err)
		return
	}
	on := t.Backend.String()
	if t.Backend == cuzkffi.BackendGPU {
		on = fmt.Sprintf("GPU %d", t.DeviceIndex)
	}
	fmt.Printf("%7.2fs  %-22s %8v  (queue %v, proving wait %v, synthesis %v, on %s)\n", at, what,
		elapsed.Round(time.Millisecond), t.QueueWait.Round(time.Millisecond), t.ProvingWait.Round(time.Millisecond),
		t.Synthesis.Round(time.Millisecond), on)
}

func run() error {
	c1Path := flag.String("c1", "", "commit phase 1 output of a sector (cuzk-fixtures seal's c1.json)")
	sector := flag.Uint64("sector", 0, "its sector number")
	miner := flag.Uint64("miner", 0, "its miner actor id")
	postPath := flag.String("post", "", "PoSt vanilla proofs (cuzk-fixtures post's post.json)")
	params := flag.String("params", "", "parameter cache directory (default: $FIL_PROOFS_PARAMETER_CACHE)")
	c2Calls := flag.Int("c2", 8, "C2 tasks to run")
	c2Workers := flag.Int("c2-workers", 2, "C2 tasks in flight at once")
	windowAfter := flag.Duration("window-after", time.Second, "when the WindowPoSt deadline's partitions arrive")
	winningAfter := flag.Duration("winning-after", 2*time.Second, "when the WinningPoSt arrives")
	flag.Parse()
	if *c1Path == "" || *postPath == "" || flag.NArg() != 0 || *c2Workers < 1 {
		flag.Usage()
		return errors.New("-c1 and -post are required, -c2-workers at least 1")
	}
	c1, err := os.ReadFile(*c1Path)
	if err != nil {
		return err
	}
	rawPost, err := os.ReadFile(*postPath)
	if err != nil {
		return err
	}
	var post postInput
	if err := json.Unmarshal(rawPost, &post); err != nil {
		return fmt.Errorf("%s: %w", *postPath, err)
	}
	randomness, err := hex.DecodeString(post.Randomness)
	if err != nil {
		return fmt.Errorf("%s: randomness: %w", *postPath, err)
	}

	// One engine for the process, as Curio would hold it; the keys stay resident between tasks.
	cfg := cuzkffi.DefaultConfig()
	cfg.ParamCacheDir = *params
	if err := cuzkffi.Init(cfg); err != nil {
		return err
	}
	defer cuzkffi.Close()
	if err := declareResources(c1, &post); err != nil {
		return err
	}
	rep := &report{start: time.Now()}
	ctx := context.Background()
	var wg sync.WaitGroup
	var failures sync.Map

	// Sealing: C2 tasks on worker goroutines, each verified as Curio's task does.
	tasks := make(chan int)
	for range *c2Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range tasks {
				start := time.Now()
				p, t, err := cuzkffi.SealCommitPhase2WithOptions(ctx, c1, abi.SectorNumber(*sector), abi.ActorID(*miner))
				if err == nil {
					err = verifySeal(c1, *sector, *miner, p)
				}
				rep.call(fmt.Sprintf("C2 %d", i), time.Since(start), t, err)
				if err != nil {
					failures.Store(fmt.Sprintf("C2 %d", i), err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(tasks)
		for i := range *c2Calls {
			tasks <- i
		}
	}()

	// A WindowPoSt deadline: its partitions, merged and verified as Curio's compute task does.
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(*windowAfter)
		if err := windowPoSt(ctx, rep, &post, randomness); err != nil {
			failures.Store("WindowPoSt", err)
		}
	}()
	// Block production: a WinningPoSt, the top class.
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(*winningAfter)
		if err := winningPoSt(ctx, rep, &post, randomness); err != nil {
			failures.Store("WinningPoSt", err)
		}
	}()
	wg.Wait()
	wall := time.Since(rep.start)

	status, err := cuzkffi.ReadEngineStatus()
	if err != nil {
		return err
	}
	for _, d := range status.Devices {
		fmt.Printf("GPU %d (%s): busy %.0f%% of %v, %d proofs\n", d.Ordinal, d.Name,
			100*float64(d.BusyNs)/float64(wall.Nanoseconds()), wall.Round(time.Millisecond), d.ProofsDone)
	}
	failed := 0
	failures.Range(func(what, err any) bool {
		failed++
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return true
	})
	if failed > 0 {
		return fmt.Errorf("%d calls failed", failed)
	}
	fmt.Println("every proof verified")
	return nil
}

func windowPoSt(ctx context.Context, rep *report, post *postInput, randomness []byte) error {
	proofType := abi.RegisteredPoStProof(post.Window.ABIProof)
	var partitions []cuzkffi.PartitionProof
	var sectors []proof.SectorInfo
	for _, p := range post.Window.Partitions {
		vanilla, err := unhexAll(p.VanillaProofs)
		if err != nil {
			return err
		}
		start := time.Now()
		pp, t, err := cuzkffi.GenerateSinglePartitionWindowPoStWithVanillaWithOptions(ctx, proofType,
			abi.ActorID(post.MinerID), randomness, vanilla, p.Index)
		rep.call(fmt.Sprintf("WindowPoSt partition %d", p.Index), time.Since(start), t, err)
		if err != nil {
			return err
		}
		partitions = append(partitions, *pp)
		more, err := sectorInfos(p.Sectors)
		if err != nil {
			return err
		}
		sectors = append(sectors, more...)
	}
	merged, err := cuzkffi.MergeWindowPoStPartitionProofs(proofType, partitions)
	if err != nil {
		return err
	}
	ok, err := cuzkffi.VerifyWindowPoSt(proof.WindowPoStVerifyInfo{
		Randomness: randomness, Proofs: []proof.PoStProof{*merged}, ChallengedSectors: sectors, Prover: abi.ActorID(post.MinerID),
	})
	return verdict("WindowPoSt", ok, err)
}

func winningPoSt(ctx context.Context, rep *report, post *postInput, randomness []byte) error {
	vanilla, err := unhexAll(post.Winning.VanillaProofs)
	if err != nil {
		return err
	}
	start := time.Now()
	proofs, t, err := cuzkffi.GenerateWinningPoStWithVanillaWithOptions(ctx, abi.RegisteredPoStProof(post.Winning.ABIProof),
		abi.ActorID(post.MinerID), randomness, vanilla)
	rep.call("WinningPoSt", time.Since(start), t, err)
	if err != nil {
		return err
	}
	sectors, err := sectorInfos(post.Winning.Sectors)
	if err != nil {
		return err
	}
	// VerifyWinningPoSt takes the WinningPoSt proof from the sectors' seal proof.
	sealProof, err := sealProofOf(abi.RegisteredPoStProof(post.Winning.ABIProof))
	if err != nil {
		return err
	}
	for i := range sectors {
		sectors[i].SealProof = sealProof
	}
	ok, err := cuzkffi.VerifyWinningPoSt(proof.WinningPoStVerifyInfo{
		Randomness: randomness, Proofs: proofs, ChallengedSectors: sectors, Prover: abi.ActorID(post.MinerID),
	})
	return verdict("WinningPoSt", ok, err)
}

// declareResources prints what each task kind takes, as a Curio task declares its resources
// (RAM) before the scheduler gives it a machine.
func declareResources(c1 []byte, post *postInput) error {
	info, err := cuzkffi.ParseC1Info(c1)
	if err != nil {
		return err
	}
	kinds := []struct {
		name     string
		estimate func() (cuzkffi.MemoryEstimate, error)
	}{
		{"C2", func() (cuzkffi.MemoryEstimate, error) { return cuzkffi.EstimateMemory(info.RegisteredProof) }},
		{"WindowPoSt partition", func() (cuzkffi.MemoryEstimate, error) {
			return cuzkffi.EstimatePoStMemory(abi.RegisteredPoStProof(post.Window.ABIProof))
		}},
		{"WinningPoSt", func() (cuzkffi.MemoryEstimate, error) {
			return cuzkffi.EstimatePoStMemory(abi.RegisteredPoStProof(post.Winning.ABIProof))
		}},
	}
	const mib = 1 << 20
	for _, kind := range kinds {
		e, err := kind.estimate()
		if err != nil {
			return fmt.Errorf("%s: %w", kind.name, err)
		}
		fmt.Printf("resources  %-22s host %6d MiB kept + %6d MiB a call; per GPU %6d MiB kept + %6d MiB a call\n",
			kind.name, e.HostResidentBytes/mib, e.HostCallBytes/mib, e.DeviceResidentBytes/mib, e.DeviceCallBytes/mib)
	}
	return nil
}

func verifySeal(c1 []byte, sector, miner uint64, p []byte) error {
	info, err := cuzkffi.ParseC1Info(c1)
	if err != nil {
		return err
	}
	sealed, err := commcid.ReplicaCommitmentV1ToCID(info.CommR[:])
	if err != nil {
		return err
	}
	unsealed, err := commcid.DataCommitmentV1ToCID(info.CommD[:])
	if err != nil {
		return err
	}
	ok, err := cuzkffi.VerifySeal(proof.SealVerifyInfo{
		SealProof: info.RegisteredProof, SectorID: abi.SectorID{Miner: abi.ActorID(miner), Number: abi.SectorNumber(sector)},
		Randomness: info.Ticket[:], InteractiveRandomness: info.Seed[:], Proof: p, SealedCID: sealed, UnsealedCID: unsealed,
	})
	return verdict("C2", ok, err)
}

// sealProofOf is a seal proof whose WinningPoSt proof is winning.
func sealProofOf(winning abi.RegisteredPoStProof) (abi.RegisteredSealProof, error) {
	for sp := abi.RegisteredSealProof(0); sp < 64; sp++ {
		if p, err := sp.RegisteredWinningPoStProof(); err == nil && p == winning {
			return sp, nil
		}
	}
	return 0, fmt.Errorf("no seal proof has the WinningPoSt proof %d", winning)
}

// sectorInfos are the PoSt's sectors as the verifiers take them (VerifyWindowPoSt reads no
// SealProof; winningPoSt sets it).
func sectorInfos(in []sectorJSON) ([]proof.SectorInfo, error) {
	var out []proof.SectorInfo
	for _, s := range in {
		commR, err := hex.DecodeString(s.CommR)
		if err != nil {
			return nil, err
		}
		sealed, err := commcid.ReplicaCommitmentV1ToCID(commR)
		if err != nil {
			return nil, err
		}
		out = append(out, proof.SectorInfo{SectorNumber: abi.SectorNumber(s.SectorID), SealedCID: sealed})
	}
	return out, nil
}

func unhexAll(in []string) ([][]byte, error) {
	out := make([][]byte, len(in))
	for i, s := range in {
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("vanilla proof %d: %w", i, err)
		}
		out[i] = b
	}
	return out, nil
}

func verdict(what string, ok bool, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("verifying the %s proof: %w", what, err)
	case !ok:
		return fmt.Errorf("the %s proof does not verify", what)
	}
	return nil
}
