//go:build cuzk

package cuzkffi

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	commcid "github.com/filecoin-project/go-fil-commcid"
	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
)

// The PoSt tests need a 2KiB PoSt fixture and the PoSt parameters (scripts/test-go.sh makes
// and sets both):
//
//	CUZK_POST_FIXTURE_DIR  a directory with post.json (cuzk-fixtures post --out DIR)
//	CUZK_TEST_PARAMS       the parameter cache directory, with the WindowPoSt and WinningPoSt
//	                       parameters (cuzk-fixtures params makes them)
var postFixtureDir = os.Getenv("CUZK_POST_FIXTURE_DIR")

type postSector struct {
	id    abi.SectorNumber
	commR [32]byte
}

// postSet is what one PoSt SNARK is made from: vanilla proofs of sectors.
type postSet struct {
	index   uint
	vanilla [][]byte
	sectors []postSector
}

type postFixture struct {
	miner      abi.ActorID
	proverID   [32]byte
	randomness abi.PoStRandomness
	window     abi.RegisteredPoStProof
	partitions []postSet
	winning    abi.RegisteredPoStProof
	winner     postSet
}

// needPostFixture loads post.json, or skips the test when CUZK_POST_FIXTURE_DIR is not set.
func needPostFixture(t *testing.T) *postFixture {
	t.Helper()
	if postFixtureDir == "" {
		t.Skip("CUZK_POST_FIXTURE_DIR is not set: no 2KiB PoSt fixture to prove with (cuzk-fixtures post --out DIR makes one; scripts/test-go.sh sets it)")
	}
	raw, err := os.ReadFile(filepath.Join(postFixtureDir, "post.json"))
	if err != nil {
		t.Fatal(err)
	}
	type sectorJSON struct {
		SectorID uint64 `json:"sector_id"`
		CommR    string `json:"comm_r"`
	}
	type setJSON struct {
		Index         uint         `json:"index"`
		VanillaProofs []string     `json:"vanilla_proofs"`
		Sectors       []sectorJSON `json:"sectors"`
	}
	var j struct {
		MinerID    uint64 `json:"miner_id"`
		ProverID   string `json:"prover_id"`
		Randomness string `json:"randomness"`
		Window     struct {
			RegisteredProof string    `json:"registered_proof"`
			ABIProof        *int64    `json:"abi_proof"`
			Partitions      []setJSON `json:"partitions"`
		} `json:"window"`
		Winning struct {
			RegisteredProof string       `json:"registered_proof"`
			ABIProof        *int64       `json:"abi_proof"`
			VanillaProofs   []string     `json:"vanilla_proofs"`
			Sectors         []sectorJSON `json:"sectors"`
		} `json:"winning"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatalf("post.json: %v", err)
	}
	if j.Window.ABIProof == nil || j.Winning.ABIProof == nil || len(j.Window.Partitions) == 0 {
		t.Fatalf("post.json: no abi_proof or no partitions")
	}
	unhex := func(what, s string, n int) []byte {
		b, err := hex.DecodeString(s)
		if err != nil || (n > 0 && len(b) != n) {
			t.Fatalf("post.json: %s %.40q… is not %d bytes of hex", what, s, n)
		}
		return b
	}
	set := func(index uint, vanilla []string, sectors []sectorJSON) postSet {
		s := postSet{index: index}
		for _, v := range vanilla {
			s.vanilla = append(s.vanilla, unhex("vanilla proof", v, 0))
		}
		for _, sec := range sectors {
			ps := postSector{id: abi.SectorNumber(sec.SectorID)}
			copy(ps.commR[:], unhex("comm_r", sec.CommR, 32))
			s.sectors = append(s.sectors, ps)
		}
		if len(s.vanilla) != len(s.sectors) || len(s.vanilla) == 0 {
			t.Fatalf("post.json: %d vanilla proofs for %d sectors", len(s.vanilla), len(s.sectors))
		}
		return s
	}
	f := &postFixture{
		miner:      abi.ActorID(j.MinerID),
		randomness: unhex("randomness", j.Randomness, 32),
		window:     abi.RegisteredPoStProof(*j.Window.ABIProof),
		winning:    abi.RegisteredPoStProof(*j.Winning.ABIProof),
		winner:     set(0, j.Winning.VanillaProofs, j.Winning.Sectors),
	}
	copy(f.proverID[:], unhex("prover_id", j.ProverID, 32))
	for _, p := range j.Window.Partitions {
		f.partitions = append(f.partitions, set(p.Index, p.VanillaProofs, p.Sectors))
	}
	if id, err := ProverID(f.miner); err != nil || id != f.proverID {
		t.Fatalf("post.json: prover_id %x is not miner %d's (%x, %v)", f.proverID, f.miner, id, err)
	}
	t.Logf("PoSt fixture: miner %d, %s (%d) in %d partition(s), %s (%d)", f.miner,
		j.Window.RegisteredProof, f.window, len(f.partitions), j.Winning.RegisteredProof, f.winning)
	return f
}

// sectorInfos are the sectors as the verifiers take them.
func sectorInfos(t *testing.T, sealProof abi.RegisteredSealProof, sectors []postSector) []proof.SectorInfo {
	t.Helper()
	var out []proof.SectorInfo
	for _, s := range sectors {
		sealed, err := commcid.ReplicaCommitmentV1ToCID(s.commR[:])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, proof.SectorInfo{SealProof: sealProof, SectorNumber: s.id, SealedCID: sealed})
	}
	return out
}

// sealProofOf2KiB is the seal proof of the fixture's sectors (for VerifyWinningPoSt, which
// derives the WinningPoSt proof from it).
const sealProofOf2KiB = abi.RegisteredSealProof_StackedDrg2KiBV1_1

func (f *postFixture) allSectors() []postSector {
	var all []postSector
	for _, p := range f.partitions {
		all = append(all, p.sectors...)
	}
	return all
}

func (f *postFixture) windowInfo(t *testing.T, merged *proof.PoStProof, randomness abi.PoStRandomness) proof.WindowPoStVerifyInfo {
	return proof.WindowPoStVerifyInfo{
		Randomness:        randomness,
		Proofs:            []proof.PoStProof{*merged},
		ChallengedSectors: sectorInfos(t, sealProofOf2KiB, f.allSectors()),
		Prover:            f.miner,
	}
}

// otherRandomness is r with its lowest bit flipped: still a canonical field element.
func otherRandomness(r abi.PoStRandomness) abi.PoStRandomness {
	o := slices.Clone(r)
	o[0] ^= 1
	return o
}

func checkPoStTimings(t *testing.T, tm Timings) {
	t.Helper()
	if tm.Backend != BackendCPU && tm.Backend != BackendGPU {
		t.Errorf("Backend = %v", tm.Backend)
	}
	if tm.Partitions != 1 || tm.Total <= 0 || tm.Synthesis <= 0 || tm.InputCheck <= 0 || tm.NumConstraints == 0 {
		t.Errorf("PoSt timings: %+v", tm)
	}
	if tm.SectorIndex != 0 || tm.PartitionIndex != -1 {
		t.Errorf("SectorIndex = %d, PartitionIndex = %d", tm.SectorIndex, tm.PartitionIndex)
	}
	for _, p := range tm.Phases() {
		if p.Duration < 0 {
			t.Errorf("%s = %v", p.Name, p.Duration)
		}
	}
	if sum := tm.Serial(); sum > tm.Total {
		t.Errorf("phases sum to %v, more than Total %v", sum, tm.Total)
	}
}

func wantFaulty(t *testing.T, err error, sectors ...abi.SectorNumber) {
	t.Helper()
	wantIs(t, err, ErrFaultySectors)
	var faulty *FaultySectorsError
	if !errors.As(err, &faulty) {
		t.Fatalf("error %v is not a *FaultySectorsError", err)
	}
	if !slices.Equal(faulty.Sectors, sectors) {
		t.Fatalf("faulty sectors %v, want %v (%v)", faulty.Sectors, sectors, err)
	}
	t.Logf("faulty sectors %v: %v", faulty.Sectors, err)
}

// Arguments refused before any parameters are read: these need no fixture.
func TestPoStBadInput(t *testing.T) {
	const window = abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1
	const winning = abi.RegisteredPoStProof_StackedDrgWinning2KiBV1
	randomness := make(abi.PoStRandomness, 32)
	vanilla := [][]byte{[]byte("not a vanilla proof")}
	ctx := context.Background()
	for name, c := range map[string]struct {
		call func() error
		want error
	}{
		"no-vanilla-proofs-window": {func() error {
			_, err := GenerateSinglePartitionWindowPoStWithVanilla(window, 1000, randomness, nil, 0)
			return err
		}, ErrInvalidArgument},
		"no-vanilla-proofs-winning": {func() error {
			_, err := GenerateWinningPoStWithVanilla(winning, 1000, randomness, [][]byte{})
			return err
		}, ErrInvalidArgument},
		"garbage-vanilla-proof": {func() error {
			_, err := GenerateSinglePartitionWindowPoStWithVanilla(window, 1000, randomness, vanilla, 0)
			return err
		}, ErrParse},
		"winning-type-to-window": {func() error {
			_, err := GenerateSinglePartitionWindowPoStWithVanilla(winning, 1000, randomness, vanilla, 0)
			return err
		}, ErrInvalidArgument},
		"window-type-to-winning": {func() error {
			_, err := GenerateWinningPoStWithVanilla(window, 1000, randomness, vanilla)
			return err
		}, ErrInvalidArgument},
		"unknown-type": {func() error {
			_, err := GenerateSinglePartitionWindowPoStWithVanilla(15, 1000, randomness, vanilla, 0)
			return err
		}, ErrInvalidArgument},
		"negative-type": {func() error {
			_, err := GenerateWinningPoStWithVanilla(-1, 1000, randomness, vanilla)
			return err
		}, ErrInvalidArgument},
		"short-randomness": {func() error {
			_, err := GenerateSinglePartitionWindowPoStWithVanilla(window, 1000, randomness[:31], vanilla, 0)
			return err
		}, ErrInvalidArgument},
		"non-canonical-randomness": {func() error {
			_, err := GenerateSinglePartitionWindowPoStWithVanilla(window, 1000, bytes.Repeat([]byte{0xff}, 32), vanilla, 0)
			return err
		}, ErrInvalidArgument},
		"bad-miner": {func() error {
			_, err := GenerateWinningPoStWithVanilla(winning, 1<<63, randomness, vanilla)
			return err
		}, ErrInvalidArgument},
		"oversized-vanilla-proof": {func() error {
			_, err := GenerateSinglePartitionWindowPoStWithVanilla(window, 1000, randomness, [][]byte{make([]byte, maxVanillaProofBytes+1)}, 0)
			return err
		}, ErrInvalidArgument},
		"unknown-priority": {func() error {
			_, _, err := GenerateSinglePartitionWindowPoStWithVanillaWithOptions(ctx, window, 1000, randomness, vanilla, 0, WithPriority(99))
			return err
		}, ErrInvalidArgument},
		"device-out-of-range": {func() error {
			_, _, err := GenerateWinningPoStWithVanillaWithOptions(ctx, winning, 1000, randomness, vanilla, WithDevice(-1))
			return err
		}, ErrInvalidArgument},
		"preload-unknown": {func() error {
			_, err := PreloadPoStKey(99)
			return err
		}, ErrInvalidArgument},
		"evict-negative": {func() error {
			_, err := EvictPoStKey(-1)
			return err
		}, ErrInvalidArgument},
		"verify-window-no-proof": {func() error {
			_, err := VerifyWindowPoSt(proof.WindowPoStVerifyInfo{Randomness: randomness, Prover: 1000})
			return err
		}, ErrInvalidArgument},
		"verify-window-two-proofs": {func() error {
			p := proof.PoStProof{PoStProof: window, ProofBytes: make([]byte, 192)}
			_, err := VerifyWindowPoSt(proof.WindowPoStVerifyInfo{Randomness: randomness, Proofs: []proof.PoStProof{p, p}, Prover: 1000})
			return err
		}, ErrInvalidArgument},
		"verify-window-unsealed-cid": {func() error {
			unsealed, err := commcid.DataCommitmentV1ToCID(make([]byte, 32))
			if err != nil {
				return err
			}
			p := proof.PoStProof{PoStProof: window, ProofBytes: make([]byte, 192)}
			_, err = VerifyWindowPoSt(proof.WindowPoStVerifyInfo{Randomness: randomness, Proofs: []proof.PoStProof{p}, Prover: 1000,
				ChallengedSectors: []proof.SectorInfo{{SealProof: sealProofOf2KiB, SectorNumber: 1, SealedCID: unsealed}}})
			return err
		}, ErrInvalidArgument},
		"verify-winning-no-sectors": {func() error {
			p := proof.PoStProof{PoStProof: winning, ProofBytes: make([]byte, 192)}
			_, err := VerifyWinningPoSt(proof.WinningPoStVerifyInfo{Randomness: randomness, Proofs: []proof.PoStProof{p}, Prover: 1000})
			return err
		}, ErrInvalidArgument},
	} {
		t.Run(name, func(t *testing.T) {
			err := c.call()
			wantIs(t, err, c.want)
			t.Log(err)
		})
	}
}

// On an engine without GPUs a call pinned to a device is refused before anything else.
func TestPoStDeviceOnCPU(t *testing.T) {
	st, err := ReadEngineStatus()
	if err != nil {
		t.Fatal(err)
	}
	if st.Backend != "cpu" {
		t.Skipf("the engine runs on %s: device 0 exists", st.Backend)
	}
	_, _, err = GenerateWinningPoStWithVanillaWithOptions(context.Background(), abi.RegisteredPoStProof_StackedDrgWinning2KiBV1,
		1000, make(abi.PoStRandomness, 32), [][]byte{{1}}, WithDevice(0))
	wantIs(t, err, ErrInvalidArgument)
}

func TestPoStContextCancelledBeforeCall(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := GenerateSinglePartitionWindowPoStWithVanillaWithOptions(ctx, abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1,
		1000, make(abi.PoStRandomness, 32), [][]byte{{1}}, 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	_, _, err = GenerateWinningPoStWithVanillaWithOptions(ctx, abi.RegisteredPoStProof_StackedDrgWinning2KiBV1,
		1000, make(abi.PoStRandomness, 32), [][]byte{{1}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// Every partition proven, merged, verified as filecoin-ffi's callers do; then the statements
// the proof must not verify against.
func TestWindowPoSt(t *testing.T) {
	f := needPostFixture(t)
	var parts []PartitionProof
	for i, p := range f.partitions {
		var partitions []Timings
		start := time.Now()
		pp, tm, err := GenerateSinglePartitionWindowPoStWithVanillaWithOptions(context.Background(), f.window, f.miner,
			f.randomness, p.vanilla, p.index, WithPartitionTimings(&partitions))
		if err != nil {
			t.Fatalf("partition %d: %v", p.index, err)
		}
		t.Logf("partition %d (%d sectors) proved in %v", p.index, len(p.sectors), time.Since(start).Round(time.Millisecond))
		logTimings(t, tm)
		checkPoStTimings(t, tm)
		if len(partitions) != 1 || partitions[0].PartitionIndex != 0 || partitions[0].Total <= 0 {
			t.Errorf("partition timings: %+v", partitions)
		}
		if pp.PoStProof != f.window || len(pp.ProofBytes) != 192 {
			t.Fatalf("partition %d: proof of type %d, %d bytes", i, pp.PoStProof, len(pp.ProofBytes))
		}
		parts = append(parts, *pp)
	}
	// filecoin-ffi's signature, no context: the same partition proves again (with fresh
	// Groth16 randomness, so other bytes).
	again, err := GenerateSinglePartitionWindowPoStWithVanilla(f.window, f.miner, f.randomness, f.partitions[0].vanilla, f.partitions[0].index)
	if err != nil || len(again.ProofBytes) != 192 || bytes.Equal(again.ProofBytes, parts[0].ProofBytes) {
		t.Fatalf("partition 0 again: %v", err)
	}

	merged, err := MergeWindowPoStPartitionProofs(f.window, parts)
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.ProofBytes) != 192*len(parts) {
		t.Fatalf("merged proof of %d bytes", len(merged.ProofBytes))
	}
	info := f.windowInfo(t, merged, f.randomness)
	if ok, err := VerifyWindowPoSt(info); err != nil || !ok {
		t.Fatalf("VerifyWindowPoSt = %v, %v", ok, err)
	}
	// filecoin-ffi orders the challenged sectors by number: any order verifies.
	reversed := info
	reversed.ChallengedSectors = slices.Clone(info.ChallengedSectors)
	slices.Reverse(reversed.ChallengedSectors)
	if ok, err := VerifyWindowPoSt(reversed); err != nil || !ok {
		t.Fatalf("VerifyWindowPoSt, sectors in reverse = %v, %v", ok, err)
	}

	// The prover id is no public input of filecoin-proofs' PoSt circuits (the challenges come
	// from the randomness and the sector numbers; the miner actor binds the sectors): the proof
	// verifies for any miner, as with filecoin-ffi.
	anyMiner := info
	anyMiner.Prover = f.miner + 1
	if ok, err := VerifyWindowPoSt(anyMiner); err != nil || !ok {
		t.Fatalf("VerifyWindowPoSt for another miner = %v, %v; filecoin-proofs says true", ok, err)
	}

	for name, bad := range map[string]func(i *proof.WindowPoStVerifyInfo){
		"randomness": func(i *proof.WindowPoStVerifyInfo) { i.Randomness = otherRandomness(f.randomness) },
		"comm_r": func(i *proof.WindowPoStVerifyInfo) {
			s := f.allSectors()
			s[0].commR[0] ^= 1
			i.ChallengedSectors = sectorInfos(t, sealProofOf2KiB, s)
		},
		"sector-number": func(i *proof.WindowPoStVerifyInfo) {
			s := f.allSectors()
			s[len(s)-1].id += 1000
			i.ChallengedSectors = sectorInfos(t, sealProofOf2KiB, s)
		},
		"partitions-swapped": func(i *proof.WindowPoStVerifyInfo) {
			if len(parts) < 2 {
				t.Skip("one partition")
			}
			swapped := []PartitionProof{parts[1], parts[0]}
			swapped = append(swapped, parts[2:]...)
			m, _ := MergeWindowPoStPartitionProofs(f.window, swapped)
			i.Proofs = []proof.PoStProof{*m}
		},
	} {
		t.Run("wrong-"+name, func(t *testing.T) {
			i := f.windowInfo(t, merged, f.randomness)
			bad(&i)
			if ok, err := VerifyWindowPoSt(i); ok || err != nil {
				t.Fatalf("VerifyWindowPoSt with another %s = %v, %v; want false, nil", name, ok, err)
			}
		})
	}
	t.Run("wrong-proof-length", func(t *testing.T) {
		i := f.windowInfo(t, merged, f.randomness)
		i.Proofs[0].ProofBytes = merged.ProofBytes[:192*len(parts)-1]
		_, err := VerifyWindowPoSt(i)
		wantIs(t, err, ErrInvalidArgument)
	})
	t.Run("winning-type", func(t *testing.T) {
		i := f.windowInfo(t, merged, f.randomness)
		i.Proofs[0].PoStProof = f.winning
		_, err := VerifyWindowPoSt(i)
		wantIs(t, err, ErrInvalidArgument)
	})
}

func (f *postFixture) winningInfo(t *testing.T, proofs []proof.PoStProof, randomness abi.PoStRandomness) proof.WinningPoStVerifyInfo {
	return proof.WinningPoStVerifyInfo{
		Randomness:        randomness,
		Proofs:            proofs,
		ChallengedSectors: sectorInfos(t, sealProofOf2KiB, f.winner.sectors),
		Prover:            f.miner,
	}
}

func TestWinningPoSt(t *testing.T) {
	f := needPostFixture(t)
	start := time.Now()
	proofs, tm, err := GenerateWinningPoStWithVanillaWithOptions(context.Background(), f.winning, f.miner, f.randomness, f.winner.vanilla)
	if err != nil {
		t.Fatalf("GenerateWinningPoStWithVanillaWithOptions: %v", err)
	}
	t.Logf("proved in %v", time.Since(start).Round(time.Millisecond))
	logTimings(t, tm)
	checkPoStTimings(t, tm)
	if len(proofs) != 1 || proofs[0].PoStProof != f.winning || len(proofs[0].ProofBytes) != 192 {
		t.Fatalf("proofs: %+v", proofs)
	}
	if ok, err := VerifyWinningPoSt(f.winningInfo(t, proofs, f.randomness)); err != nil || !ok {
		t.Fatalf("VerifyWinningPoSt = %v, %v", ok, err)
	}
	// filecoin-ffi's signature, no context.
	plain, err := GenerateWinningPoStWithVanilla(f.winning, f.miner, f.randomness, f.winner.vanilla)
	if err != nil || len(plain) != 1 {
		t.Fatalf("GenerateWinningPoStWithVanilla: %v, %d proofs", err, len(plain))
	}
	if ok, err := VerifyWinningPoSt(f.winningInfo(t, plain, f.randomness)); err != nil || !ok {
		t.Fatalf("VerifyWinningPoSt = %v, %v", ok, err)
	}
	// The proof's bytes may come split over several PoStProofs: filecoin-ffi concatenates them.
	split := []proof.PoStProof{
		{PoStProof: f.winning, ProofBytes: proofs[0].ProofBytes[:100]},
		{PoStProof: f.winning, ProofBytes: proofs[0].ProofBytes[100:]},
	}
	if ok, err := VerifyWinningPoSt(f.winningInfo(t, split, f.randomness)); err != nil || !ok {
		t.Fatalf("VerifyWinningPoSt, split = %v, %v", ok, err)
	}

	if ok, err := VerifyWinningPoSt(f.winningInfo(t, proofs, otherRandomness(f.randomness))); ok || err != nil {
		t.Fatalf("VerifyWinningPoSt with other randomness = %v, %v; want false, nil", ok, err)
	}
	other := f.winningInfo(t, proofs, f.randomness)
	other.ChallengedSectors = sectorInfos(t, sealProofOf2KiB, []postSector{{id: f.winner.sectors[0].id + 1, commR: f.winner.sectors[0].commR}})
	if ok, err := VerifyWinningPoSt(other); ok || err != nil {
		t.Fatalf("VerifyWinningPoSt for another sector number = %v, %v; want false, nil", ok, err)
	}
	// As for WindowPoSt, the prover id is no public input.
	other = f.winningInfo(t, proofs, f.randomness)
	other.Prover++
	if ok, err := VerifyWinningPoSt(other); err != nil || !ok {
		t.Fatalf("VerifyWinningPoSt for another miner = %v, %v; filecoin-proofs says true", ok, err)
	}
	// A WinningPoSt challenges one sector.
	more := f.winningInfo(t, proofs, f.randomness)
	more.ChallengedSectors = sectorInfos(t, sealProofOf2KiB, f.allSectors())
	if len(more.ChallengedSectors) > 1 {
		_, err := VerifyWinningPoSt(more)
		wantIs(t, err, ErrInvalidArgument)
	}
}

// tamper returns a copy of proofs with proof i changed by change.
func tamper(proofs [][]byte, i int, change func(p []byte)) [][]byte {
	out := slices.Clone(proofs)
	out[i] = slices.Clone(proofs[i])
	change(out[i])
	return out
}

// A vanilla proof (bincode of filecoin-proofs' FallbackPoStSectorProof) ends with its sector
// proof's comm_c and comm_r_last; flipping comm_c's lowest bit keeps every value canonical but
// breaks comm_r = H(comm_c ‖ comm_r_last).
func flipCommC(p []byte) { p[len(p)-64] ^= 1 }

// firstSibling is the offset of the first sibling hash of the first inclusion path of a 2KiB
// vanilla proof: sector_id (8), comm_r (32), sector proofs (8: length), inclusion proofs (8:
// length), the path's variant (4: one tree), root (32), leaf (32), levels (8: length), the
// level's siblings (8: length).
const firstSibling = 8 + 32 + 8 + 8 + 4 + 32 + 32 + 8 + 8

func TestPoStFaultySectors(t *testing.T) {
	f := needPostFixture(t)
	p := f.partitions[0]
	last := len(p.vanilla) - 1
	t.Run("window-comm_c", func(t *testing.T) {
		_, err := GenerateSinglePartitionWindowPoStWithVanilla(f.window, f.miner, f.randomness, tamper(p.vanilla, last, flipCommC), p.index)
		wantFaulty(t, err, p.sectors[last].id)
	})
	t.Run("window-merkle-sibling", func(t *testing.T) {
		_, err := GenerateSinglePartitionWindowPoStWithVanilla(f.window, f.miner, f.randomness,
			tamper(p.vanilla, 0, func(b []byte) { b[firstSibling] ^= 1 }), p.index)
		wantFaulty(t, err, p.sectors[0].id)
	})
	t.Run("window-other-randomness", func(t *testing.T) {
		// Every sector's challenges move: all are faulty, in order.
		var ids []abi.SectorNumber
		for _, s := range p.sectors {
			ids = append(ids, s.id)
		}
		_, err := GenerateSinglePartitionWindowPoStWithVanilla(f.window, f.miner, otherRandomness(f.randomness), p.vanilla, p.index)
		wantFaulty(t, err, ids...)
	})
	t.Run("window-sector-twice", func(t *testing.T) {
		if len(p.vanilla) < 2 {
			t.Skip("one sector")
		}
		twice := slices.Clone(p.vanilla)
		twice[1] = twice[0]
		_, err := GenerateSinglePartitionWindowPoStWithVanilla(f.window, f.miner, f.randomness, twice, p.index)
		wantIs(t, err, ErrInvalidArgument)
	})
	t.Run("window-other-sector-size", func(t *testing.T) {
		_, err := GenerateSinglePartitionWindowPoStWithVanilla(abi.RegisteredPoStProof_StackedDrgWindow8MiBV1_1, f.miner, f.randomness, p.vanilla, p.index)
		if err == nil || errors.Is(err, ErrFaultySectors) {
			t.Fatalf("2KiB vanilla proofs as 8MiB ones: %v", err)
		}
		t.Logf("2KiB vanilla proofs as 8MiB ones: %v", err)
	})
	t.Run("winning-comm_c", func(t *testing.T) {
		_, err := GenerateWinningPoStWithVanilla(f.winning, f.miner, f.randomness, tamper(f.winner.vanilla, 0, flipCommC))
		wantFaulty(t, err, f.winner.sectors[0].id)
	})
	t.Run("winning-window-vanilla-proof", func(t *testing.T) {
		// A WindowPoSt vanilla proof has 10 inclusion paths, a WinningPoSt one 66.
		_, err := GenerateWinningPoStWithVanilla(f.winning, f.miner, f.randomness, p.vanilla[:1])
		wantIs(t, err, ErrInvalidArgument)
	})
	t.Run("winning-two-vanilla-proofs", func(t *testing.T) {
		_, err := GenerateWinningPoStWithVanilla(f.winning, f.miner, f.randomness, [][]byte{f.winner.vanilla[0], f.winner.vanilla[0]})
		wantIs(t, err, ErrInvalidArgument)
	})
	t.Run("wrong-proof-type", func(t *testing.T) {
		_, err := GenerateSinglePartitionWindowPoStWithVanilla(f.winning, f.miner, f.randomness, p.vanilla, p.index)
		wantIs(t, err, ErrInvalidArgument)
		_, err = GenerateWinningPoStWithVanilla(f.window, f.miner, f.randomness, f.winner.vanilla)
		wantIs(t, err, ErrInvalidArgument)
	})
	t.Run("no-vanilla-proofs", func(t *testing.T) {
		_, err := GenerateSinglePartitionWindowPoStWithVanilla(f.window, f.miner, f.randomness, nil, p.index)
		wantIs(t, err, ErrInvalidArgument)
		_, err = GenerateWinningPoStWithVanilla(f.winning, f.miner, f.randomness, nil)
		wantIs(t, err, ErrInvalidArgument)
	})
	// The engine is still fine after all that.
	if _, err := GenerateWinningPoStWithVanilla(f.winning, f.miner, f.randomness, f.winner.vanilla); err != nil {
		t.Fatalf("after the faulty calls: %v", err)
	}
}

// The classes: a WindowPoSt partition proves in any class it is given.
func TestPoStPriorities(t *testing.T) {
	f := needPostFixture(t)
	p := f.partitions[0]
	for _, prio := range []Priority{PriorityNormal, PriorityHigh, PriorityWindowPoSt, PrioritySealing} {
		pp, _, err := GenerateSinglePartitionWindowPoStWithVanillaWithOptions(context.Background(), f.window, f.miner, f.randomness,
			p.vanilla, p.index, WithPriority(prio))
		if err != nil || len(pp.ProofBytes) != 192 {
			t.Fatalf("priority %d: %v", prio, err)
		}
	}
}

func TestPoStPreloadEvict(t *testing.T) {
	f := needPostFixture(t)
	for _, p := range []abi.RegisteredPoStProof{f.window, f.winning} {
		if _, err := EvictPoStKey(p); err != nil {
			t.Fatalf("EvictPoStKey(%d): %v", p, err)
		}
		report, err := PreloadPoStKey(p)
		if err != nil {
			t.Fatalf("PreloadPoStKey(%d): %v", p, err)
		}
		if report.SRSLoad <= 0 {
			t.Fatalf("the first preload reads the key: %+v", report)
		}
		if again, err := PreloadPoStKey(p); err != nil || again != (PreloadReport{}) {
			t.Fatalf("a resident key is not loaded again: %+v, %v", again, err)
		}
		evicted, err := EvictPoStKey(p)
		if err != nil || !evicted {
			t.Fatalf("EvictPoStKey(%d) = %v, %v; want true", p, evicted, err)
		}
		if evicted, err := EvictPoStKey(p); err != nil || evicted {
			t.Fatalf("EvictPoStKey(%d) again = %v, %v; want false", p, evicted, err)
		}
	}
}

// A cancelled WindowPoSt returns at once; the engine proves the next one.
func TestPoStCancel(t *testing.T) {
	f := needPostFixture(t)
	p := f.partitions[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	_, _, err := GenerateSinglePartitionWindowPoStWithVanillaWithOptions(ctx, f.window, f.miner, f.randomness, p.vanilla, p.index)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded (or a proof)", err)
	}
	if _, err := GenerateSinglePartitionWindowPoStWithVanilla(f.window, f.miner, f.randomness, p.vanilla, p.index); err != nil {
		t.Fatalf("the next proof: %v", err)
	}
}
