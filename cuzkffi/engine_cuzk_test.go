//go:build cuzk

package cuzkffi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	commcid "github.com/filecoin-project/go-fil-commcid"
	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
	"github.com/ipfs/go-cid"
)

// The proving tests need a 2KiB PoRep fixture and its parameters, given by the environment
// (scripts/test-go.sh sets both):
//
//	CUZK_FIXTURE_DIR  a directory with c1.json and sector.json (cuzk-fixtures seal --out DIR)
//	CUZK_TEST_PARAMS  the parameter cache directory (Config.ParamCacheDir)
var (
	fixtureDir = os.Getenv("CUZK_FIXTURE_DIR")
	testParams = os.Getenv("CUZK_TEST_PARAMS")
)

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.ParamCacheDir = testParams
	return cfg
}

func TestMain(m *testing.M) {
	if err := Init(testConfig()); err != nil {
		fmt.Fprintln(os.Stderr, "cuzkffi test: Init:", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := Close(); err != nil {
		fmt.Fprintln(os.Stderr, "cuzkffi test: Close:", err)
	}
	os.Exit(code)
}

type fixture struct {
	c1        []byte
	proofType abi.RegisteredSealProof
	miner     abi.ActorID
	sector    abi.SectorNumber
	proverID  [32]byte
	commR     [32]byte
	commD     [32]byte
	ticket    [32]byte
	seed      [32]byte
}

// sealProofByName maps go-state-types' names of the seal proof types ("StackedDrg2KiBV1_1")
// to their numbers.
func sealProofByName(name string) (abi.RegisteredSealProof, error) {
	if n, err := strconv.ParseInt(name, 10, 64); err == nil {
		return abi.RegisteredSealProof(n), nil
	}
	for i, size := range []string{"2KiB", "8MiB", "512MiB", "32GiB", "64GiB"} {
		for base, suffix := range map[int]string{0: "V1", 5: "V1_1", 10: "V1_1_Feat_SyntheticPoRep", 15: "V1_2_Feat_NiPoRep"} {
			if name == "StackedDrg"+size+suffix {
				return abi.RegisteredSealProof(base + i), nil
			}
		}
	}
	return 0, fmt.Errorf("unknown registered seal proof %q", name)
}

// needFixture loads the fixture, or skips the test when CUZK_FIXTURE_DIR is not set.
func needFixture(t *testing.T) *fixture {
	t.Helper()
	if fixtureDir == "" {
		t.Skip("CUZK_FIXTURE_DIR is not set: no 2KiB PoRep fixture to prove with (scripts/test-go.sh sets it and CUZK_TEST_PARAMS)")
	}
	c1, err := os.ReadFile(filepath.Join(fixtureDir, "c1.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(fixtureDir, "sector.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		RegisteredProof string `json:"registered_proof"`
		MinerID         uint64 `json:"miner_id"`
		ProverID        string `json:"prover_id"`
		SectorID        uint64 `json:"sector_id"`
		CommR           string `json:"comm_r"`
		CommD           string `json:"comm_d"`
		Ticket          string `json:"ticket"`
		Seed            string `json:"seed"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("sector.json: %v", err)
	}
	f := &fixture{c1: c1, miner: abi.ActorID(s.MinerID), sector: abi.SectorNumber(s.SectorID)}
	if f.proofType, err = sealProofByName(s.RegisteredProof); err != nil {
		t.Fatalf("sector.json: %v", err)
	}
	for _, h := range []struct {
		name string
		hex  string
		dst  *[32]byte
	}{{"prover_id", s.ProverID, &f.proverID}, {"comm_r", s.CommR, &f.commR}, {"comm_d", s.CommD, &f.commD}, {"ticket", s.Ticket, &f.ticket}, {"seed", s.Seed, &f.seed}} {
		b, err := hex.DecodeString(h.hex)
		if err != nil || len(b) != 32 {
			t.Fatalf("sector.json: %s %q is not 32 bytes of hex", h.name, h.hex)
		}
		copy(h.dst[:], b)
	}
	return f
}

// sealInfo is the fixture's sector as VerifySeal takes it (filecoin-ffi's shape): the
// commitments as CIDs.
func (f *fixture) sealInfo(t *testing.T, proofBytes []byte) proof.SealVerifyInfo {
	t.Helper()
	sealed, err := commcid.ReplicaCommitmentV1ToCID(f.commR[:])
	if err != nil {
		t.Fatal(err)
	}
	unsealed, err := commcid.DataCommitmentV1ToCID(f.commD[:])
	if err != nil {
		t.Fatal(err)
	}
	return proof.SealVerifyInfo{
		SealProof:             f.proofType,
		SectorID:              abi.SectorID{Miner: f.miner, Number: f.sector},
		Randomness:            slices.Clone(f.ticket[:]),
		InteractiveRandomness: slices.Clone(f.seed[:]),
		Proof:                 proofBytes,
		SealedCID:             sealed,
		UnsealedCID:           unsealed,
	}
}

func (f *fixture) verify(t *testing.T, proofBytes []byte) {
	t.Helper()
	ok, err := VerifySeal(f.sealInfo(t, proofBytes))
	if err != nil {
		t.Fatalf("VerifySeal: %v", err)
	}
	if !ok {
		t.Fatalf("VerifySeal: the proof does not verify")
	}
}

func TestVersion(t *testing.T) {
	v := Version()
	if !regexp.MustCompile(`^\d+\.\d+\.\d+`).MatchString(v) {
		t.Fatalf("Version() = %q, not a semantic version", v)
	}
	if LibraryABIVersion() != ABIVersion {
		t.Fatalf("library ABI %d, header ABI %d", LibraryABIVersion(), ABIVersion)
	}
	t.Logf("libcuzk %s, ABI %d", v, ABIVersion)
}

// The library's defaults are the documented ones, which the stub build's DefaultConfig returns.
func TestDefaultConfig(t *testing.T) {
	got := DefaultConfig()
	want := Config{ParamCacheDir: "", CPUOnly: false, NumThreads: 0, SelfVerify: true}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got, documentedDefaults()) {
		t.Fatalf("DefaultConfig() = %+v, want %+v", got, want)
	}
}

func TestParseC1InfoBadInput(t *testing.T) {
	for name, input := range map[string][]byte{
		"nil":     nil,
		"empty":   {},
		"garbage": []byte("this is not JSON \x00\xff"),
		"object":  []byte(`{"unexpected": true}`),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseC1Info(input)
			wantIs(t, err, ErrParse)
		})
	}
}

func TestParseC1Info(t *testing.T) {
	f := needFixture(t)
	info, err := ParseC1Info(f.c1)
	if err != nil {
		t.Fatal(err)
	}
	if info.RegisteredProof != f.proofType || info.CommR != f.commR || info.CommD != f.commD ||
		info.Ticket != f.ticket || info.Seed != f.seed {
		t.Fatalf("ParseC1Info = %+v, does not match sector.json", info)
	}
	if info.Partitions < 1 || info.ProofLen() != 192*info.Partitions {
		t.Fatalf("Partitions = %d", info.Partitions)
	}
}

func TestSealCommitPhase2BadInput(t *testing.T) {
	// Empty and malformed C1 outputs fail while decoding: no parameters are needed.
	for name, input := range map[string][]byte{
		"empty":   nil,
		"garbage": []byte("not a C1 output"),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := SealCommitPhase2(input, 1, 1000)
			wantIs(t, err, ErrParse)
		})
	}
	t.Run("wrong-miner", func(t *testing.T) {
		f := needFixture(t)
		_, err := SealCommitPhase2(f.c1, f.sector, f.miner+1)
		wantIs(t, err, ErrInvalidArgument)
	})
	t.Run("wrong-sector", func(t *testing.T) {
		f := needFixture(t)
		_, err := SealCommitPhase2(f.c1, f.sector+1, f.miner)
		wantIs(t, err, ErrInvalidArgument)
	})
}

func TestVerifySealBadInput(t *testing.T) {
	f := needFixture(t)
	proofBytes := make([]byte, 192)
	for name, change := range map[string]func(i *proof.SealVerifyInfo){
		// A proof of the wrong length for the sector's partitions.
		"short-proof":            func(i *proof.SealVerifyInfo) { i.Proof = []byte{1, 2, 3} },
		"negative-proof-type":    func(i *proof.SealVerifyInfo) { i.SealProof = -1 },
		"unsealed-cid-as-comm_r": func(i *proof.SealVerifyInfo) { i.SealedCID = i.UnsealedCID },
		"sealed-cid-as-comm_d":   func(i *proof.SealVerifyInfo) { i.UnsealedCID = i.SealedCID },
		"undefined-cid":          func(i *proof.SealVerifyInfo) { i.SealedCID = cid.Undef },
		"short-ticket":           func(i *proof.SealVerifyInfo) { i.Randomness = i.Randomness[:31] },
		"long-seed":              func(i *proof.SealVerifyInfo) { i.InteractiveRandomness = append(i.InteractiveRandomness, 0) },
		"bad-miner":              func(i *proof.SealVerifyInfo) { i.SectorID.Miner = 1 << 63 },
	} {
		t.Run(name, func(t *testing.T) {
			info := f.sealInfo(t, proofBytes)
			change(&info)
			_, err := VerifySeal(info)
			wantIs(t, err, ErrInvalidArgument)
		})
	}
}

func TestContextCancelledBeforeCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := SealCommitPhase2WithOptions(ctx, []byte("anything"), 1, 1000)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// Contexts that end while, or just after, calls that fail quickly return: the cancel token
// is cancelled and freed concurrently (run with -race to check the locking).
func TestCancelRacesWithReturn(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%8)*50*time.Microsecond)
			defer cancel()
			_, _, err := SealCommitPhase2WithOptions(ctx, []byte("{not json"), 1, 1000)
			if !errors.Is(err, ErrParse) && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want ErrParse or context.DeadlineExceeded", err)
			}
		}()
	}
	wg.Wait()
}

func TestInitDifferentConfig(t *testing.T) {
	base := testConfig()
	if err := Init(base); err != nil {
		t.Fatalf("Init with the same config: %v", err)
	}
	other := base
	other.SelfVerify = !base.SelfVerify
	wantIs(t, Init(other), ErrEngineState)
	other = base
	other.ParamCacheDir = t.TempDir()
	wantIs(t, Init(other), ErrEngineState)

	// Closed, the engine takes a new configuration; then back to the tests' one.
	if err := Close(); err != nil {
		t.Fatal(err)
	}
	if err := Init(other); err != nil {
		t.Fatalf("Init after Close: %v", err)
	}
	wantIs(t, Init(base), ErrEngineState)
	if err := Close(); err != nil {
		t.Fatal(err)
	}
	if err := Init(base); err != nil {
		t.Fatal(err)
	}
}

func checkTimings(t *testing.T, tm Timings) {
	t.Helper()
	if tm.Backend != BackendCPU && tm.Backend != BackendGPU {
		t.Errorf("Backend = %v", tm.Backend)
	}
	if tm.Total <= 0 || tm.Synthesis <= 0 {
		t.Errorf("Total = %v, Synthesis = %v: want both > 0", tm.Total, tm.Synthesis)
	}
	for _, p := range tm.Phases() {
		if p.Duration < 0 {
			t.Errorf("%s = %v", p.Name, p.Duration)
		}
	}
	if sum := tm.Serial(); sum > tm.Total {
		t.Errorf("phases sum to %v, more than Total %v", sum, tm.Total)
	}
	if tm.Partitions < 1 || tm.NumConstraints == 0 || tm.DomainLog2 == 0 {
		t.Errorf("Partitions = %d, NumConstraints = %d, DomainLog2 = %d", tm.Partitions, tm.NumConstraints, tm.DomainLog2)
	}
	if tm.Backend == BackendCPU && tm.DeviceIndex != -1 {
		t.Errorf("DeviceIndex = %d on the CPU backend, want -1", tm.DeviceIndex)
	}
	if !tm.R1CSSynthesis || tm.Witness <= 0 || tm.SpMV <= 0 || tm.Witness+tm.SpMV > tm.Synthesis {
		t.Errorf("R1CS synthesis: %v, witness %v + SpMV %v of synthesis %v", tm.R1CSSynthesis, tm.Witness, tm.SpMV, tm.Synthesis)
	}
	if tm.Backend == BackendCPU && tm.KeyResidency != KeyNotOnGPU {
		t.Errorf("KeyResidency = %d on the CPU backend", tm.KeyResidency)
	}
}

// checkPartitionTimings checks a sector's partition timings against its own.
func checkPartitionTimings(t *testing.T, sector Timings, partitions []Timings, sectorIndex int) {
	t.Helper()
	if sector.SectorIndex != sectorIndex || sector.PartitionIndex != -1 || len(partitions) != sector.Partitions {
		t.Fatalf("sector %d/%d with %d partitions: %d partition timings", sector.SectorIndex, sector.PartitionIndex, sector.Partitions, len(partitions))
	}
	var synthesis time.Duration
	for k, p := range partitions {
		if p.SectorIndex != sectorIndex || p.PartitionIndex != k || p.Partitions != 1 || p.Total <= 0 || p.Total > sector.Total {
			t.Errorf("partition %d: %+v", k, p)
		}
		synthesis += p.Synthesis
	}
	if synthesis != sector.Synthesis {
		t.Errorf("partitions synthesized for %v, the sector for %v", synthesis, sector.Synthesis)
	}
}

func logTimings(t *testing.T, tm Timings) {
	t.Helper()
	line := fmt.Sprintf("backend=%v partitions=%d constraints=%d total=%v", tm.Backend, tm.Partitions, tm.NumConstraints, tm.Total.Round(time.Millisecond))
	for _, p := range tm.Phases() {
		if p.Duration > 0 {
			line += fmt.Sprintf(" %s=%v", p.Name, p.Duration.Round(time.Millisecond))
		}
	}
	t.Log(line)
}

// The fixture's proof from TestProveAndVerify, for the tests that only verify one (a 2KiB CPU
// proof is ~50 s of a 2-core CI machine); nil when that test did not prove.
var fixtureProof []byte

func TestProveAndVerify(t *testing.T) {
	f := needFixture(t)
	start := time.Now()
	var partitions []Timings
	proofBytes, tm, err := SealCommitPhase2WithOptions(context.Background(), f.c1, f.sector, f.miner, WithPriority(PriorityHigh), WithPartitionTimings(&partitions))
	if err != nil {
		t.Fatalf("SealCommitPhase2WithOptions: %v", err)
	}
	fixtureProof = proofBytes
	t.Logf("proved in %v", time.Since(start).Round(time.Millisecond))
	logTimings(t, tm)
	checkTimings(t, tm)
	checkPartitionTimings(t, tm, partitions, 0)
	info, err := ParseC1Info(f.c1)
	if err != nil {
		t.Fatal(err)
	}
	if len(proofBytes) != info.ProofLen() || tm.Partitions != info.Partitions {
		t.Fatalf("proof is %d bytes from %d partitions, want %d bytes from %d", len(proofBytes), tm.Partitions, info.ProofLen(), info.Partitions)
	}
	f.verify(t, proofBytes)

	// The same proof does not verify for another sector, miner or seed.
	for name, change := range map[string]func(i *proof.SealVerifyInfo){
		"sector": func(i *proof.SealVerifyInfo) { i.SectorID.Number++ },
		"miner":  func(i *proof.SealVerifyInfo) { i.SectorID.Miner++ },
		"seed":   func(i *proof.SealVerifyInfo) { i.InteractiveRandomness[0] ^= 1 },
	} {
		info := f.sealInfo(t, proofBytes)
		change(&info)
		if ok, err := VerifySeal(info); ok || err != nil {
			t.Errorf("verify with another %s = %v, %v; want false, nil", name, ok, err)
		}
	}
}

// Two goroutines prove at once on the one engine; every proof and every error belongs to
// its own call (nothing lives in thread-local state). Two, not more: each 2KiB CPU proof is
// ~50 s of a 2-core CI machine.
func TestConcurrentProofs(t *testing.T) {
	f := needFixture(t)
	const n = 2
	type result struct {
		proof   []byte
		timings Timings
		err     error
		elapsed time.Duration
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, tm, err := SealCommitPhase2WithOptions(context.Background(), f.c1, f.sector, f.miner)
			results[i] = result{p, tm, err, time.Since(start)}
		}()
	}
	wg.Wait()
	t.Logf("%d proofs in %v", n, time.Since(start).Round(time.Millisecond))
	for i, r := range results {
		if r.err != nil {
			t.Errorf("goroutine %d: %v", i, r.err)
			continue
		}
		t.Logf("goroutine %d: done after %v", i, r.elapsed.Round(time.Millisecond))
		logTimings(t, r.timings)
		checkTimings(t, r.timings)
		f.verify(t, r.proof)
	}
}

// A context cancelled mid-proof returns context.Canceled at once, the engine stops the proof
// soon after, and the next proof on the same engine succeeds.
func TestCancelMidProof(t *testing.T) {
	f := needFixture(t)
	returned := make(chan error, 1)
	testHookCallReturned = func(err error) {
		select {
		case returned <- err:
		default:
		}
	}
	defer func() { testHookCallReturned = nil }()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		proof []byte
		err   error
	}
	out := make(chan outcome, 1)
	start := time.Now()
	go func() {
		p, _, err := SealCommitPhase2WithOptions(ctx, f.c1, f.sector, f.miner)
		out <- outcome{p, err}
	}()
	time.Sleep(2 * time.Second)
	cancel()
	cancelled := time.Now()
	select {
	case o := <-out:
		if !errors.Is(o.err, context.Canceled) {
			t.Fatalf("got proof of %d bytes and error %v, want context.Canceled (the proof finished within 2 s?)", len(o.proof), o.err)
		}
		t.Logf("returned %v after cancel", time.Since(cancelled).Round(time.Microsecond))
	case <-time.After(5 * time.Second):
		t.Fatalf("still running 5 s after the context was cancelled")
	}

	// The engine notices the token at its next phase boundary: the library call then returns
	// ErrCancelled in the background, without finishing the proof.
	select {
	case err := <-returned:
		t.Logf("library call returned %v after cancel (%v into the proof): %v", time.Since(cancelled).Round(time.Millisecond),
			cancelled.Sub(start).Round(time.Millisecond), err)
		if !errors.Is(err, ErrCancelled) {
			t.Errorf("the cancelled library call returned %v, want ErrCancelled: the engine finished the proof instead of stopping at a phase boundary", err)
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("library call still running 5 min after cancel")
	}

	p, tm, err := SealCommitPhase2WithOptions(context.Background(), f.c1, f.sector, f.miner)
	if err != nil {
		t.Fatalf("the next proof: %v", err)
	}
	logTimings(t, tm)
	f.verify(t, p)
}

func TestPreloadStatusEvict(t *testing.T) {
	f := needFixture(t)
	info, err := ParseC1Info(f.c1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := EvictKey(info.RegisteredProof); err != nil {
		t.Fatalf("EvictKey: %v", err)
	}
	st, err := ReadEngineStatus()
	if err != nil {
		t.Fatalf("ReadEngineStatus: %v", err)
	}
	if len(st.HostKeys) != 0 || st.ProofsInFlight != 0 || (st.Backend != "cpu" && st.Backend != "gpu") {
		t.Fatalf("after eviction: %+v", st)
	}
	report, err := PreloadKey(info.RegisteredProof)
	if err != nil {
		t.Fatalf("PreloadKey: %v", err)
	}
	if report.SRSLoad <= 0 {
		t.Fatalf("the first preload reads the key: %+v", report)
	}
	st, err = ReadEngineStatus()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.HostKeys) != 1 || st.HostKeys[0].Bytes == 0 {
		t.Fatalf("after preload: %+v", st)
	}
	for _, d := range st.Devices {
		if len(d.ResidentKeys) != 1 || !d.ResidentKeys[0].Loaded || d.MemoryUsedByCuzk < d.ResidentKeys[0].Bytes {
			t.Fatalf("device %d after preload: %+v", d.Ordinal, d)
		}
	}
	t.Logf("status after preload (load %v, upload %v): %+v", report.SRSLoad, report.SRSUpload, st)
	again, err := PreloadKey(info.RegisteredProof)
	if err != nil || again != (PreloadReport{}) {
		t.Fatalf("a resident key is not loaded again: %+v, %v", again, err)
	}
	_, err = PreloadKey(abi.RegisteredSealProof(9999))
	wantIs(t, err, ErrInvalidArgument)
}

func TestSealCommitPhase2Batch(t *testing.T) {
	f := needFixture(t)
	results, err := SealCommitPhase2Batch(context.Background(), []SectorRequest{
		{Phase1Output: f.c1, SectorNum: f.sector, MinerID: f.miner},
		{Phase1Output: []byte("{not json"), SectorNum: f.sector, MinerID: f.miner},
		{Phase1Output: f.c1, SectorNum: f.sector, MinerID: f.miner},
	})
	if err != nil {
		t.Fatalf("SealCommitPhase2Batch: %v", err)
	}
	if len(results) != 3 {
		t.Fatalf("%d results for 3 sectors", len(results))
	}
	for _, i := range []int{0, 2} {
		if results[i].Err != nil {
			t.Fatalf("sector %d: %v", i, results[i].Err)
		}
		f.verify(t, results[i].Proof)
		checkTimings(t, results[i].Timings)
		checkPartitionTimings(t, results[i].Timings, results[i].Partitions, i)
	}
	if results[1].Partitions != nil {
		t.Fatalf("a failed sector has partition timings: %+v", results[1].Partitions)
	}
	wantIs(t, results[1].Err, ErrParse)
	if results[1].Proof != nil {
		t.Fatalf("a failed sector has a proof")
	}
	// The third sector waited for the first one's synthesis before its own began.
	if results[2].Timings.QueueWait < results[0].Timings.Synthesis {
		t.Fatalf("sector 2 queued %v, sector 0 synthesized for %v", results[2].Timings.QueueWait, results[0].Timings.Synthesis)
	}
	st, err := ReadEngineStatus()
	if err != nil || st.PipelineMemoryInUse != 0 || st.PipelineMemoryBudget == 0 {
		t.Fatalf("after the batch: pipeline memory %d of %d bytes (%v)", st.PipelineMemoryInUse, st.PipelineMemoryBudget, err)
	}
	p := st.Pipeline
	if p.PartitionsSynthesizing+p.PartitionsWaiting+p.PartitionsProving != 0 || p.SynthesisBusyNs == 0 || p.ProvingBusyNs == 0 {
		t.Fatalf("after the batch: pipeline %+v", p)
	}
	if empty, err := SealCommitPhase2Batch(context.Background(), nil); err != nil || len(empty) != 0 {
		t.Fatalf("empty batch: %v, %d results", err, len(empty))
	}
}

// Without a running engine, verification starts none (no GPU is opened): the verifying key
// comes from $FIL_PROOFS_PARAMETER_CACHE, as filecoin-ffi's.
func TestVerifyWithoutEngine(t *testing.T) {
	f := needFixture(t)
	proofBytes := fixtureProof
	if proofBytes == nil {
		var err error
		if proofBytes, err = SealCommitPhase2(f.c1, f.sector, f.miner); err != nil {
			t.Fatalf("SealCommitPhase2: %v", err)
		}
	}
	if err := Close(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := Init(testConfig()); err != nil {
			t.Fatal(err)
		}
	}()
	t.Setenv("FIL_PROOFS_PARAMETER_CACHE", testParams)
	if ok, err := VerifySeal(f.sealInfo(t, proofBytes)); !ok || err != nil {
		t.Fatalf("VerifySeal without an engine = %v, %v; want true, nil", ok, err)
	}
	info := f.sealInfo(t, proofBytes)
	info.InteractiveRandomness[0] ^= 1
	if ok, err := VerifySeal(info); ok || err != nil {
		t.Fatalf("VerifySeal of another seed without an engine = %v, %v; want false, nil", ok, err)
	}
	// Nothing to release without an engine, and none is started for it.
	if released, err := ReleaseMemory(false); err != nil || released != (MemoryReleased{}) {
		t.Fatalf("ReleaseMemory without an engine = %+v, %v", released, err)
	}
	engineMu.Lock()
	started := current != nil
	engineMu.Unlock()
	if started {
		t.Fatal("verification started an engine")
	}
}

// ReleaseMemory gives the keys and shapes back, and the next proof reads them again.
func TestReleaseMemory(t *testing.T) {
	f := needFixture(t)
	info, err := ParseC1Info(f.c1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PreloadKey(info.RegisteredProof); err != nil {
		t.Fatalf("PreloadKey: %v", err)
	}
	released, err := ReleaseMemory(true)
	if err != nil {
		t.Fatalf("ReleaseMemory: %v", err)
	}
	if released.HostKeyBytes == 0 || released.HostShapeBytes == 0 || released.Duration <= 0 {
		t.Fatalf("ReleaseMemory after a preload released %+v", released)
	}
	st, err := ReadEngineStatus()
	if err != nil {
		t.Fatal(err)
	}
	if len(st.HostKeys) != 0 {
		t.Fatalf("host keys after the release: %+v", st.HostKeys)
	}
	for _, d := range st.Devices {
		if len(d.ResidentKeys) != 0 || d.NTTBufferBytes != 0 {
			t.Fatalf("device %d after the release: %+v", d.Ordinal, d)
		}
	}
	proofBytes, tm, err := SealCommitPhase2WithOptions(context.Background(), f.c1, f.sector, f.miner)
	if err != nil {
		t.Fatalf("a proof after the release: %v", err)
	}
	if tm.SRSLoad <= 0 {
		t.Errorf("the key was not read again: SRSLoad = %v", tm.SRSLoad)
	}
	f.verify(t, proofBytes)
}

// EstimateMemory reports a kind's memory: at least the key the engine then holds, and a call's
// share; a kind without parameters is a clean error.
func TestEstimateMemory(t *testing.T) {
	f := needFixture(t)
	info, err := ParseC1Info(f.c1)
	if err != nil {
		t.Fatal(err)
	}
	e, err := EstimateMemory(info.RegisteredProof)
	if err != nil {
		t.Fatalf("EstimateMemory: %v", err)
	}
	if _, err := PreloadKey(info.RegisteredProof); err != nil {
		t.Fatalf("PreloadKey: %v", err)
	}
	st, err := ReadEngineStatus()
	if err != nil {
		t.Fatal(err)
	}
	var held uint64 // the PoRep key's (other tests' PoSt keys may be resident too)
	for _, k := range st.HostKeys {
		if strings.Contains(k.Label, "stacked-proof-of-replication") {
			held += k.Bytes
		}
	}
	if e.Partitions < 1 || e.HostCallBytes == 0 || e.HostResidentBytes < held || held == 0 {
		t.Fatalf("EstimateMemory = %+v with %d B of keys held after a preload", e, held)
	}
	if st.Backend == "cpu" && (e.DeviceResidentBytes != 0 || e.DeviceCallBytes != 0) {
		t.Fatalf("device memory on the CPU: %+v", e)
	}
	if e, err := EstimatePoStMemory(abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1); err != nil || e.Partitions != 1 {
		t.Fatalf("EstimatePoStMemory = %+v, %v; want one partition", e, err)
	}
	if _, err := EstimateUpdateMemory(abi.RegisteredUpdateProof_StackedDrg2KiBV1); err != nil {
		t.Fatalf("EstimateUpdateMemory: %v", err)
	}
	_, err = EstimateMemory(abi.RegisteredSealProof_StackedDrg64GiBV1_1)
	var cerr *Error
	if !errors.As(err, &cerr) || cerr.Status != StatusParametersNotFound {
		t.Fatalf("EstimateMemory without 64GiB parameters = %v; want StatusParametersNotFound", err)
	}
}

// Configurations the engine could never run with are refused before anything starts.
func TestInitRefusesBadConfig(t *testing.T) {
	for name, change := range map[string]func(*Config){
		"negative device":               func(c *Config) { c.Devices = []int{-1} },
		"device twice":                  func(c *Config) { c.Devices = []int{0, 0} },
		"devices with CPUOnly":          func(c *Config) { c.Devices, c.CPUOnly = []int{0}, true },
		"negative lanes":                func(c *Config) { c.ProvingLanes = -1 },
		"negative idle time":            func(c *Config) { c.IdleRelease = -time.Second },
		"negative arena cap":            func(c *Config) { c.MallocArenaMax = -1 },
		"arena cap past int32":          func(c *Config) { c.MallocArenaMax = math.MaxInt32 + 1 },
		"H's MSM chunk below the least": func(c *Config) { c.GPUHMSMChunk = 65535 },
		"shape cache dir and no shape cache": func(c *Config) {
			c.ShapeCacheDir, c.NoShapeCache = "/tmp/shapes", true
		},
		"NUL in the shape cache dir": func(c *Config) { c.ShapeCacheDir = "a\x00b" },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			change(&cfg)
			wantIs(t, Init(cfg), ErrInvalidArgument)
		})
	}
}
