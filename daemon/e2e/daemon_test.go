//go:build cuzk

// The end-to-end test of cuzk-daemon: it starts the daemon binary on a Unix socket (a GPU when
// the machine has one, else the CPU backend; 2KiB test parameters) and drives it with the Go
// client generated from Curio's proving.proto, filling requests as Curio's
// lib/ffi/cuzk_funcs.go does. Proofs are checked with filecoin-proofs' verifier through the
// cuzkffi package (build tag cuzk).
//
// Environment (scripts/test-go.sh sets it; without it the tests skip):
//
//	CUZK_DAEMON_BIN   the cuzk-daemon binary
//	CUZK_TEST_PARAMS  the parameter directory (random-setup 2KiB parameters)
//	CUZK_FIXTURE_DIR  a 2KiB sealed sector: c1.json and sector.json (cuzk-fixtures seal)
//	CUZK_POST_FIXTURE_DIR  2KiB PoSt vanilla proofs: post.json (cuzk-fixtures post)
//	CUZK_UPDATE_FIXTURE_DIR  a 2KiB SnapDeals update: update.json (cuzk-fixtures update)
//	CUZK_DAEMON_FAULT_BIN  a cuzk-daemon built with --features fault-injection, for the GPU
//	                       test TestDaemonExitsOnQuarantine (unset: it skips)
package e2e

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	commcid "github.com/filecoin-project/go-fil-commcid"
	"github.com/filecoin-project/go-state-types/abi"
	proofs "github.com/filecoin-project/go-state-types/proof"
	"github.com/ipfs/go-cid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/cuzk-dev/cuzk/cuzkffi"
	pb "github.com/cuzk-dev/cuzk/daemon/e2e/cuzkpb"
)

// sector is the fixture: a sealed 2KiB sector and its C1 output.
type sector struct {
	c1                       []byte
	proofType                abi.RegisteredSealProof
	miner                    abi.ActorID
	number                   abi.SectorNumber
	commR, commD, tick, seed []byte
}

func loadSector(t *testing.T) *sector {
	t.Helper()
	if os.Getenv("CUZK_DAEMON_BIN") == "" {
		t.Skip("CUZK_DAEMON_BIN is not set: no daemon to test (scripts/test-go.sh sets it)")
	}
	// With a daemon to test, missing fixtures are an error, not a reason to skip.
	for _, name := range []string{"CUZK_TEST_PARAMS", "CUZK_FIXTURE_DIR", "CUZK_POST_FIXTURE_DIR", "CUZK_UPDATE_FIXTURE_DIR"} {
		if os.Getenv(name) == "" {
			t.Fatalf("%s is not set (scripts/test-go.sh sets it)", name)
		}
	}
	dir := os.Getenv("CUZK_FIXTURE_DIR")
	c1, err := os.ReadFile(filepath.Join(dir, "c1.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "sector.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		RegisteredProof string `json:"registered_proof"`
		MinerID         uint64 `json:"miner_id"`
		SectorID        uint64 `json:"sector_id"`
		CommR           string `json:"comm_r"`
		CommD           string `json:"comm_d"`
		Ticket          string `json:"ticket"`
		Seed            string `json:"seed"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("sector.json: %v", err)
	}
	if s.RegisteredProof != "StackedDrg2KiBV1_1" {
		t.Fatalf("sector.json: registered proof %s, this test proves StackedDrg2KiBV1_1", s.RegisteredProof)
	}
	f := &sector{c1: c1, proofType: abi.RegisteredSealProof_StackedDrg2KiBV1_1, miner: abi.ActorID(s.MinerID), number: abi.SectorNumber(s.SectorID)}
	for _, h := range []struct {
		hex string
		dst *[]byte
	}{{s.CommR, &f.commR}, {s.CommD, &f.commD}, {s.Ticket, &f.tick}, {s.Seed, &f.seed}} {
		if *h.dst, err = hex.DecodeString(h.hex); err != nil || len(*h.dst) != 32 {
			t.Fatalf("sector.json: %q is not 32 bytes of hex", h.hex)
		}
	}
	return f
}

// request is the C2 request Curio's PoRepSnarkCuzk sends: the C1 output in its envelope.
func (f *sector) request(t *testing.T, requestID string) *pb.SubmitProofRequest {
	t.Helper()
	envelope, err := json.Marshal(struct {
		SectorNum  int64  `json:"SectorNum"`
		Phase1Out  []byte `json:"Phase1Out"`
		SectorSize uint64 `json:"SectorSize"`
	}{int64(f.number), f.c1, 2048})
	if err != nil {
		t.Fatal(err)
	}
	return &pb.SubmitProofRequest{
		RequestId:       requestID,
		ProofKind:       pb.ProofKind_POREP_SEAL_COMMIT,
		SectorSize:      2048,
		RegisteredProof: uint64(f.proofType),
		Priority:        pb.Priority_NORMAL,
		VanillaProof:    envelope,
		SectorNumber:    uint64(f.number),
		MinerId:         uint64(f.miner),
	}
}

// verify checks a C2 proof of the fixture's sector with filecoin-proofs' verifier.
func (f *sector) verify(t *testing.T, proofBytes []byte) {
	t.Helper()
	sealed, err := commcid.ReplicaCommitmentV1ToCID(f.commR)
	if err != nil {
		t.Fatal(err)
	}
	unsealed, err := commcid.DataCommitmentV1ToCID(f.commD)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := cuzkffi.VerifySeal(proofs.SealVerifyInfo{
		SealProof:             f.proofType,
		SectorID:              abi.SectorID{Miner: f.miner, Number: f.number},
		Randomness:            f.tick,
		InteractiveRandomness: f.seed,
		Proof:                 proofBytes,
		SealedCID:             sealed,
		UnsealedCID:           unsealed,
	})
	if err != nil || !ok {
		t.Fatalf("VerifySeal of the daemon's proof (%d bytes) = %v, %v", len(proofBytes), ok, err)
	}
}

// winningPoSt is the WinningPoSt of the PoSt fixture: the request Curio's WinningPoStCuzk
// sends, and the check of its proof.
type winningPoSt struct {
	request *pb.SubmitProofRequest
	verify  func(t *testing.T, proofBytes []byte)
}

// postSector is a sector of the PoSt fixture.
type postSector struct {
	SectorID uint64 `json:"sector_id"`
	CommR    string `json:"comm_r"`
}

// postJSON is what `cuzk-fixtures post` writes: the vanilla proofs of a WindowPoSt's
// partitions and of a WinningPoSt, as filecoin-ffi's GenerateSingleVanillaProof returns them.
type postJSON struct {
	MinerID    uint64 `json:"miner_id"`
	Randomness string `json:"randomness"`
	Window     struct {
		ABIProof   int64 `json:"abi_proof"`
		Partitions []struct {
			Index         uint64       `json:"index"`
			VanillaProofs []string     `json:"vanilla_proofs"`
			Sectors       []postSector `json:"sectors"`
		} `json:"partitions"`
	} `json:"window"`
	Winning struct {
		ABIProof      int64        `json:"abi_proof"`
		VanillaProofs []string     `json:"vanilla_proofs"`
		Sectors       []postSector `json:"sectors"`
	} `json:"winning"`
}

func readPostJSON(t *testing.T) *postJSON {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(os.Getenv("CUZK_POST_FIXTURE_DIR"), "post.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j postJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatalf("post.json: %v", err)
	}
	return &j
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("post.json: %q is not hex", s)
	}
	return b
}

func unhexAll(t *testing.T, hexes []string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, h := range hexes {
		out = append(out, unhex(t, h))
	}
	return out
}

// sectorInfos are the fixture's sectors as the PoSt verifiers take them.
func sectorInfos(t *testing.T, sectors []postSector) []proofs.SectorInfo {
	t.Helper()
	var infos []proofs.SectorInfo
	for _, s := range sectors {
		sealed, err := commcid.ReplicaCommitmentV1ToCID(unhex(t, s.CommR))
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, proofs.SectorInfo{SealProof: abi.RegisteredSealProof_StackedDrg2KiBV1_1, SectorNumber: abi.SectorNumber(s.SectorID), SealedCID: sealed})
	}
	return infos
}

func loadWinningPoSt(t *testing.T) *winningPoSt {
	t.Helper()
	j := readPostJSON(t)
	randomness := unhex(t, j.Randomness)
	vanilla := unhexAll(t, j.Winning.VanillaProofs)
	sectors := sectorInfos(t, j.Winning.Sectors)
	registered := abi.RegisteredPoStProof(j.Winning.ABIProof)
	return &winningPoSt{
		request: &pb.SubmitProofRequest{
			RequestId:       fmt.Sprintf("winpost-%d-%x", j.MinerID, randomness[:8]),
			ProofKind:       pb.ProofKind_WINNING_POST,
			SectorSize:      2048,
			RegisteredProof: uint64(registered),
			Priority:        pb.Priority_CRITICAL,
			VanillaProofs:   vanilla,
			MinerId:         j.MinerID,
			Randomness:      randomness,
		},
		verify: func(t *testing.T, proofBytes []byte) {
			t.Helper()
			ok, err := cuzkffi.VerifyWinningPoSt(proofs.WinningPoStVerifyInfo{
				Randomness:        randomness,
				Proofs:            []proofs.PoStProof{{PoStProof: registered, ProofBytes: proofBytes}},
				ChallengedSectors: sectors,
				Prover:            abi.ActorID(j.MinerID),
			})
			if err != nil || !ok {
				t.Fatalf("VerifyWinningPoSt of the daemon's proof (%d bytes) = %v, %v", len(proofBytes), ok, err)
			}
		},
	}
}

// windowPoSt is the WindowPoSt deadline of the PoSt fixture: one request per partition, as
// Curio's GenerateWindowPoStCuzk sends them, and the check of their merged proofs.
type windowPoSt struct {
	requests []*pb.SubmitProofRequest
	verify   func(t *testing.T, partitionProofs [][]byte)
}

func loadWindowPoSt(t *testing.T) *windowPoSt {
	t.Helper()
	j := readPostJSON(t)
	randomness := unhex(t, j.Randomness)
	registered := abi.RegisteredPoStProof(j.Window.ABIProof)
	w := &windowPoSt{}
	var sectors []postSector
	for _, p := range j.Window.Partitions {
		w.requests = append(w.requests, &pb.SubmitProofRequest{
			RequestId:       fmt.Sprintf("wdpost-%d-%x-%d", j.MinerID, randomness[:8], p.Index),
			ProofKind:       pb.ProofKind_WINDOW_POST_PARTITION,
			SectorSize:      2048,
			RegisteredProof: uint64(registered),
			Priority:        pb.Priority_HIGH,
			VanillaProofs:   unhexAll(t, p.VanillaProofs),
			MinerId:         j.MinerID,
			Randomness:      randomness,
			PartitionIndex:  uint32(p.Index),
		})
		sectors = append(sectors, p.Sectors...)
	}
	w.verify = func(t *testing.T, partitionProofs [][]byte) {
		t.Helper()
		var parts []cuzkffi.PartitionProof
		for _, b := range partitionProofs {
			parts = append(parts, cuzkffi.PartitionProof{PoStProof: registered, ProofBytes: b})
		}
		merged, err := cuzkffi.MergeWindowPoStPartitionProofs(registered, parts)
		if err != nil {
			t.Fatal(err)
		}
		ok, err := cuzkffi.VerifyWindowPoSt(proofs.WindowPoStVerifyInfo{
			Randomness:        randomness,
			Proofs:            []proofs.PoStProof{*merged},
			ChallengedSectors: sectorInfos(t, sectors),
			Prover:            abi.ActorID(j.MinerID),
		})
		if err != nil || !ok {
			t.Fatalf("VerifyWindowPoSt of the daemon's %d partition proofs = %v, %v", len(partitionProofs), ok, err)
		}
	}
	return w
}

// snapUpdate is the fixture's SnapDeals update: the request Curio's ProveUpdateCuzk sends, and
// the check of its proof.
type snapUpdate struct {
	request *pb.SubmitProofRequest
	verify  func(t *testing.T, proofBytes []byte)
}

func loadSnapUpdate(t *testing.T) *snapUpdate {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(os.Getenv("CUZK_UPDATE_FIXTURE_DIR"), "update.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		ABIProof      int64    `json:"abi_proof"`
		CommROld      string   `json:"comm_r_old"`
		CommRNew      string   `json:"comm_r_new"`
		CommDNew      string   `json:"comm_d_new"`
		VanillaProofs []string `json:"vanilla_proofs"`
	}
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatalf("update.json: %v", err)
	}
	unhex := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatalf("update.json: %q is not hex", s)
		}
		return b
	}
	var vanilla [][]byte
	for _, v := range j.VanillaProofs {
		vanilla = append(vanilla, unhex(v))
	}
	commROld, commRNew, commDNew := unhex(j.CommROld), unhex(j.CommRNew), unhex(j.CommDNew)
	registered := abi.RegisteredUpdateProof(j.ABIProof)
	return &snapUpdate{
		request: &pb.SubmitProofRequest{
			RequestId:       "snap-e2e-1",
			ProofKind:       pb.ProofKind_SNAP_DEALS_UPDATE,
			SectorSize:      2048,
			RegisteredProof: uint64(registered),
			Priority:        pb.Priority_NORMAL,
			VanillaProofs:   vanilla,
			SectorNumber:    1,
			MinerId:         1000,
			CommROld:        commROld,
			CommRNew:        commRNew,
			CommDNew:        commDNew,
		},
		verify: func(t *testing.T, proofBytes []byte) {
			t.Helper()
			cids := make([]cid.Cid, 3)
			for i, c := range []struct {
				comm  []byte
				toCID func([]byte) (cid.Cid, error)
			}{{commROld, commcid.ReplicaCommitmentV1ToCID}, {commRNew, commcid.ReplicaCommitmentV1ToCID}, {commDNew, commcid.DataCommitmentV1ToCID}} {
				if cids[i], err = c.toCID(c.comm); err != nil {
					t.Fatal(err)
				}
			}
			ok, err := cuzkffi.VerifyUpdateProof(proofs.ReplicaUpdateInfo{
				UpdateProofType:      registered,
				OldSealedSectorCID:   cids[0],
				NewSealedSectorCID:   cids[1],
				NewUnsealedSectorCID: cids[2],
				Proof:                proofBytes,
			})
			if err != nil || !ok {
				t.Fatalf("VerifyUpdateProof of the daemon's proof (%d bytes) = %v, %v", len(proofBytes), ok, err)
			}
		},
	}
}

// daemon is a running cuzk-daemon process.
type daemon struct {
	cmd    *exec.Cmd
	socket string
	// Its stdout and stderr, appended to (the daemons started in one directory share it).
	logPath string
	exited  chan error
	conn    *grpc.ClientConn
	client  pb.ProvingEngineClient
}

// startDaemon starts cuzk-daemon (CUZK_DAEMON_BIN) on a socket in dir with a configuration of
// its own: one sealing job at a time, the test parameters, shapes kept in dir, a GPU when the
// machine has one (else the CPU backend).
func startDaemon(t *testing.T, dir string) *daemon {
	t.Helper()
	return startDaemonBinary(t, dir, os.Getenv("CUZK_DAEMON_BIN"))
}

// startDaemonBinary is startDaemon with the binary bin, env added to the test's environment.
func startDaemonBinary(t *testing.T, dir, bin string, env ...string) *daemon {
	t.Helper()
	socket := filepath.Join(dir, "cuzk.sock")
	config := filepath.Join(dir, "daemon.toml")
	text := fmt.Sprintf("listen = %q\nmax_concurrent_sealing = 1\non_shutdown = \"finish\"\n[engine]\nparam_dir = %q\nshape_cache_dir = %q\n",
		"unix://"+socket, os.Getenv("CUZK_TEST_PARAMS"), filepath.Join(dir, "shapes"))
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", config)
	cmd.Env = append(os.Environ(), env...)
	logPath := filepath.Join(dir, "daemon.log")
	logs, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, socket: socket, logPath: logPath, exited: make(chan error, 1)}
	go func() { d.exited <- cmd.Wait(); logs.Close() }()
	t.Cleanup(func() {
		if d.conn != nil {
			d.conn.Close()
		}
		_ = cmd.Process.Kill()
		<-d.exited
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.log(t))
		}
	})
	// Curio's client: a Unix target, 256 MiB messages both ways.
	d.conn, err = grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20), grpc.MaxCallSendMsgSize(256<<20)))
	if err != nil {
		t.Fatal(err)
	}
	d.client = pb.NewProvingEngineClient(d.conn)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := d.client.GetStatus(ctx, &pb.GetStatusRequest{})
		cancel()
		if err == nil {
			return d
		}
		select {
		case exit := <-d.exited:
			d.exited <- exit
			t.Fatalf("cuzk-daemon exited at start: %v", exit)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("cuzk-daemon did not answer within 60 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// log is what the daemons started in d's directory have written so far.
func (d *daemon) log(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(d.logPath)
	if err != nil {
		t.Errorf("reading the daemon log: %v", err)
	}
	return string(text)
}

// waitExit waits up to timeout for the daemon process to exit: what its Wait returned (nil
// for status 0).
func (d *daemon) waitExit(t *testing.T, timeout time.Duration) error {
	t.Helper()
	select {
	case err := <-d.exited:
		d.exited <- err // for the cleanup
		return err
	case <-time.After(timeout):
		t.Fatalf("the daemon did not exit within %v", timeout)
		return nil
	}
}

func (d *daemon) prove(t *testing.T, ctx context.Context, req *pb.SubmitProofRequest) *pb.AwaitProofResponse {
	t.Helper()
	resp, err := d.client.Prove(ctx, &pb.ProveRequest{Submit: req})
	if err != nil {
		t.Fatalf("Prove %s: %v", req.RequestId, err)
	}
	return resp.Result
}

func (d *daemon) submit(t *testing.T, req *pb.SubmitProofRequest) string {
	t.Helper()
	resp, err := d.client.SubmitProof(context.Background(), req)
	if err != nil {
		t.Fatalf("SubmitProof %s: %v", req.RequestId, err)
	}
	return resp.JobId
}

func (d *daemon) await(t *testing.T, jobID string, timeout time.Duration) *pb.AwaitProofResponse {
	t.Helper()
	resp, err := d.client.AwaitProof(context.Background(), &pb.AwaitProofRequest{JobId: jobID, TimeoutMs: uint64(timeout.Milliseconds())})
	if err != nil {
		t.Fatalf("AwaitProof %s: %v", jobID, err)
	}
	return resp
}

// waitRunning waits until GetStatus shows a running job of kind.
func (d *daemon) waitRunning(t *testing.T, kind pb.ProofKind) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, err := d.client.GetStatus(context.Background(), &pb.GetStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range st.Queues {
			if q.ProofKind == kind.String() && q.InProgress > 0 {
				return
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no %v job started running within 30 s", kind)
}

func wantStatus(t *testing.T, what string, got *pb.AwaitProofResponse, want pb.AwaitProofResponse_Status) {
	t.Helper()
	if got.Status != want {
		t.Fatalf("%s: status %v (%q), want %v", what, got.Status, got.ErrorMessage, want)
	}
}

// metrics parses the Prometheus text: every sample line as "name{labels}" → value.
func metrics(t *testing.T, d *daemon) map[string]float64 {
	t.Helper()
	resp, err := d.client.GetMetrics(context.Background(), &pb.GetMetricsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]float64{}
	scanner := bufio.NewScanner(strings.NewReader(resp.PrometheusText))
	for scanner.Scan() {
		line := scanner.Text()
		if line == "" || strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE ") {
			continue
		}
		cut := strings.LastIndexByte(line, ' ')
		value, err := strconv.ParseFloat(line[cut+1:], 64)
		if cut < 0 || err != nil {
			t.Fatalf("metrics: not a sample line: %q", line)
		}
		samples[line[:cut]] = value
	}
	return samples
}

// The whole protocol on one daemon, in the order a Curio node would meet it. A 2KiB C2 takes
// tens of seconds on a CPU, so the test proves one of each kind Curio sends (a WindowPoSt
// deadline's two partitions, merged and verified as one proof): the other calls fail, are
// cancelled or answer from a job that is already there.
func TestDaemon(t *testing.T) {
	f := loadSector(t)
	dir := t.TempDir()
	d := startDaemon(t, dir)

	t.Run("SubmitProveAwaitIdempotent", func(t *testing.T) {
		req := f.request(t, "porep-e2e-1")
		start := time.Now()
		job := d.submit(t, req)
		if again := d.submit(t, req); again != job {
			t.Fatalf("the same request_id and content gave job %s, then %s", job, again)
		}
		other := proto.Clone(req).(*pb.SubmitProofRequest)
		other.SectorNumber++
		if _, err := d.client.SubmitProof(context.Background(), other); status.Code(err) != codes.AlreadyExists {
			t.Fatalf("same request_id, other content: %v, want AlreadyExists", err)
		}
		// Prove of the same request joins the job: Curio retrying after a lost connection.
		proved := d.prove(t, context.Background(), req)
		wantStatus(t, "Prove", proved, pb.AwaitProofResponse_COMPLETED)
		t.Logf("proof: %d bytes in %v (daemon: total %d ms, proving %d ms, synthesis %d ms)",
			len(proved.Proof), time.Since(start).Round(time.Millisecond), proved.TotalMs, proved.GpuComputeMs, proved.SynthesisMs)
		if proved.JobId != job {
			t.Fatalf("Prove of a submitted request_id ran job %s, want %s", proved.JobId, job)
		}
		f.verify(t, proved.Proof)
		awaited := d.await(t, job, 0)
		wantStatus(t, "AwaitProof", awaited, pb.AwaitProofResponse_COMPLETED)
		if string(awaited.Proof) != string(proved.Proof) {
			t.Fatal("AwaitProof and Prove of one job returned different proofs")
		}
		if _, err := d.client.AwaitProof(context.Background(), &pb.AwaitProofRequest{JobId: "no-such-job"}); status.Code(err) != codes.NotFound {
			t.Fatalf("AwaitProof of an unknown job: %v, want NotFound", err)
		}
	})

	t.Run("SnapDealsUpdate", func(t *testing.T) {
		u := loadSnapUpdate(t)
		res := d.prove(t, context.Background(), u.request)
		wantStatus(t, "SnapDeals update", res, pb.AwaitProofResponse_COMPLETED)
		t.Logf("update proof: %d bytes, daemon total %d ms", len(res.Proof), res.TotalMs)
		u.verify(t, res.Proof)
	})

	t.Run("WindowPoStPartitions", func(t *testing.T) {
		w := loadWindowPoSt(t)
		// Curio submits a deadline's partitions together: PoSt jobs never wait at the sealing
		// gate, so they prove at once.
		var jobs []string
		for _, req := range w.requests {
			jobs = append(jobs, d.submit(t, req))
		}
		var partitionProofs [][]byte
		for i, job := range jobs {
			res := d.await(t, job, 5*time.Minute)
			wantStatus(t, fmt.Sprintf("WindowPoSt partition %d", i), res, pb.AwaitProofResponse_COMPLETED)
			partitionProofs = append(partitionProofs, res.Proof)
		}
		w.verify(t, partitionProofs)
	})

	t.Run("BadRequestsFail", func(t *testing.T) {
		good := f.request(t, "")
		cases := []struct {
			name, want string
			change     func(r *pb.SubmitProofRequest)
		}{
			{"unknown kind", "unknown proof_kind 9", func(r *pb.SubmitProofRequest) { r.ProofKind = 9 }},
			{"unspecified kind", "PROOF_KIND_UNSPECIFIED", func(r *pb.SubmitProofRequest) { r.ProofKind = pb.ProofKind_PROOF_KIND_UNSPECIFIED }},
			{"garbage vanilla proof", "vanilla_proof is not JSON", func(r *pb.SubmitProofRequest) { r.VanillaProof = []byte("\x00\x01garbage") }},
			{"wrong sector size", "sector_size 34359738368", func(r *pb.SubmitProofRequest) { r.SectorSize = 32 << 30 }},
			{"C1 that is not a C1", "(parse error)", func(r *pb.SubmitProofRequest) {
				r.VanillaProof = []byte(`{"SectorNum":` + fmt.Sprint(r.SectorNumber) + `,"Phase1Out":"e30=","SectorSize":2048}`)
			}},
			{"short randomness", "randomness has 3 bytes", func(r *pb.SubmitProofRequest) {
				r.ProofKind, r.RegisteredProof, r.SectorSize = pb.ProofKind_WINNING_POST, uint64(abi.RegisteredPoStProof_StackedDrgWinning2KiBV1), 0
				r.VanillaProofs, r.Randomness = [][]byte{{1}}, []byte{1, 2, 3}
			}},
			{"garbage PoSt vanilla proofs", "FallbackPoStSectorProof", func(r *pb.SubmitProofRequest) {
				r.ProofKind, r.RegisteredProof, r.SectorSize = pb.ProofKind_WINDOW_POST_PARTITION, uint64(abi.RegisteredPoStProof_StackedDrgWindow2KiBV1_1), 0
				r.VanillaProofs, r.Randomness = [][]byte{[]byte("not bincode")}, make([]byte, 32)
			}},
		}
		for _, c := range cases {
			req := proto.Clone(good).(*pb.SubmitProofRequest)
			c.change(req)
			res := d.prove(t, context.Background(), req)
			wantStatus(t, c.name, res, pb.AwaitProofResponse_FAILED)
			if !strings.Contains(res.ErrorMessage, c.want) {
				t.Errorf("%s: message %q does not name %q", c.name, res.ErrorMessage, c.want)
			}
		}
		if _, err := d.client.Prove(context.Background(), &pb.ProveRequest{}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("Prove without a request: %v, want InvalidArgument", err)
		}
		if _, err := d.client.GetStatus(context.Background(), &pb.GetStatusRequest{}); err != nil {
			t.Fatalf("GetStatus after the bad requests: %v", err)
		}
	})

	t.Run("StatusMetricsAndKeys", func(t *testing.T) {
		st, err := d.client.GetStatus(context.Background(), &pb.GetStatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Queues) != 4 || st.TotalProofsCompleted != 4 || st.TotalProofsFailed != 7 {
			t.Fatalf("GetStatus: %v", st)
		}
		// The backend the daemon proves on: its GPUs, or none (the CPU backend). A GPU's key
		// is resident on it (HOT); the CPU backend's is in host memory (WARM).
		t.Logf("the daemon proves on %d GPU(s)", len(st.Gpus))
		wantTier := pb.SRSStatus_WARM
		if len(st.Gpus) > 0 {
			wantTier = pb.SRSStatus_HOT
		}
		for _, g := range st.Gpus {
			if g.Name == "" || g.VramTotalBytes == 0 || g.CurrentJobId != "" {
				t.Fatalf("GetStatus: GPU %v (no job runs)", g)
			}
		}
		var porep *pb.SRSStatus
		for _, s := range st.LoadedSrs {
			if s.CircuitId == "porep-2k" {
				porep = s
			}
		}
		if porep == nil || porep.Tier != wantTier || porep.SizeBytes == 0 {
			t.Fatalf("GetStatus: porep-2k is not a %v key (%d GPUs): %v", wantTier, len(st.Gpus), st.LoadedSrs)
		}
		m := metrics(t, d)
		samples := map[string]float64{
			`cuzk_proofs_total{kind="POREP_SEAL_COMMIT",status="completed"}`:              1,
			`cuzk_proofs_total{kind="POREP_SEAL_COMMIT",status="failed"}`:                 3,
			`cuzk_phase_seconds_count{kind="POREP_SEAL_COMMIT",phase="synthesis"}`:        1,
			`cuzk_phase_seconds_bucket{kind="POREP_SEAL_COMMIT",phase="total",le="+Inf"}`: 1,
			`cuzk_jobs_pending{kind="POREP_SEAL_COMMIT"}`:                                 0,
			`cuzk_proofs_total{kind="WINDOW_POST_PARTITION",status="completed"}`:          2,
		}
		for _, g := range st.Gpus {
			samples[fmt.Sprintf(`cuzk_gpu_healthy{gpu="%d"}`, g.Ordinal)] = 1
			samples[fmt.Sprintf(`cuzk_gpu_faults_total{gpu="%d"}`, g.Ordinal)] = 0
		}
		for sample, want := range samples {
			if got, ok := m[sample]; !ok || got != want {
				t.Errorf("GetMetrics: %s = %v (present: %v), want %v", sample, got, ok, want)
			}
		}
		evicted, err := d.client.EvictSRS(context.Background(), &pb.EvictSrsRequest{CircuitId: "porep-2k"})
		if err != nil || !evicted.WasLoaded || evicted.FreedBytes == 0 {
			t.Fatalf("EvictSRS porep-2k: %v, %v", evicted, err)
		}
		loaded, err := d.client.PreloadSRS(context.Background(), &pb.PreloadSrsRequest{CircuitId: "porep-2k"})
		if err != nil || loaded.AlreadyLoaded {
			t.Fatalf("PreloadSRS porep-2k after eviction: %v, %v", loaded, err)
		}
		loaded, err = d.client.PreloadSRS(context.Background(), &pb.PreloadSrsRequest{CircuitId: "porep-2k"})
		if err != nil || !loaded.AlreadyLoaded {
			t.Fatalf("PreloadSRS porep-2k again: %v, %v", loaded, err)
		}
		if _, err := d.client.PreloadSRS(context.Background(), &pb.PreloadSrsRequest{CircuitId: "porep-16g"}); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("PreloadSRS of an unknown circuit: %v, want InvalidArgument", err)
		}
	})

	t.Run("CancelRunningAndPending", func(t *testing.T) {
		running := d.submit(t, f.request(t, "porep-e2e-cancel-running"))
		pending := d.submit(t, f.request(t, "porep-e2e-cancel-pending"))
		d.waitRunning(t, pb.ProofKind_POREP_SEAL_COMMIT)
		if res := d.await(t, pending, 10*time.Millisecond); res.Status != pb.AwaitProofResponse_TIMEOUT {
			t.Fatalf("AwaitProof with a 10 ms timeout on a pending job: %v", res.Status)
		}
		for _, job := range []string{pending, running} {
			resp, err := d.client.CancelProof(context.Background(), &pb.CancelProofRequest{JobId: job})
			if err != nil || !resp.WasRunning {
				t.Fatalf("CancelProof %s: %v, %v", job, resp, err)
			}
		}
		wantStatus(t, "the pending job", d.await(t, pending, 0), pb.AwaitProofResponse_CANCELLED)
		wantStatus(t, "the running job", d.await(t, running, 0), pb.AwaitProofResponse_CANCELLED)
		if resp, err := d.client.CancelProof(context.Background(), &pb.CancelProofRequest{JobId: running}); err != nil || resp.WasRunning {
			t.Fatalf("CancelProof of an ended job: %v, %v", resp, err)
		}
		// A cancelled request_id submitted again is a new job.
		retry := d.submit(t, f.request(t, "porep-e2e-cancel-pending"))
		if retry == pending {
			t.Fatal("a retry after cancellation got the cancelled job")
		}
		if _, err := d.client.CancelProof(context.Background(), &pb.CancelProofRequest{JobId: retry}); err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "the retry, cancelled", d.await(t, retry, 0), pb.AwaitProofResponse_CANCELLED)
	})

	t.Run("ProveCallerGoesAway", func(t *testing.T) {
		const cancelled = `cuzk_proofs_total{kind="POREP_SEAL_COMMIT",status="cancelled"}`
		before := metrics(t, d)[cancelled]
		// The caller leaves once its job runs: not after a fixed time, which a GPU's C2 may
		// take less than.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		proveErr := make(chan error, 1)
		go func() {
			_, err := d.client.Prove(ctx, &pb.ProveRequest{Submit: f.request(t, "porep-e2e-gone")})
			proveErr <- err
		}()
		d.waitRunning(t, pb.ProofKind_POREP_SEAL_COMMIT)
		cancel()
		if err := <-proveErr; status.Code(err) != codes.Canceled {
			t.Fatalf("Prove whose caller left: %v", err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for metrics(t, d)[cancelled] != before+1 {
			if time.Now().After(deadline) {
				t.Fatal("the job of a Prove whose caller went away was not cancelled")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	t.Run("KilledMidProof", func(t *testing.T) {
		proveErr := make(chan error, 1)
		go func() {
			_, err := d.client.Prove(context.Background(), &pb.ProveRequest{Submit: f.request(t, "porep-e2e-killed")})
			proveErr <- err
		}()
		d.waitRunning(t, pb.ProofKind_POREP_SEAL_COMMIT)
		if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := <-proveErr
		if err == nil {
			t.Fatal("Prove returned no error although the daemon was killed")
		}
		t.Logf("Prove while the daemon was killed: %v", err)
	})

	// A new daemon on the same socket serves the next call: a WinningPoSt (CRITICAL, as Curio
	// sends it), during which SIGTERM lets the job finish (on_shutdown = "finish") and the
	// daemon then exits 0.
	t.Run("RestartedProvesWinningPoStThenSigterm", func(t *testing.T) {
		w := loadWinningPoSt(t)
		restarted := startDaemon(t, dir)
		result := make(chan *pb.AwaitProofResponse, 1)
		go func() {
			resp, err := restarted.client.Prove(context.Background(), &pb.ProveRequest{Submit: w.request})
			if err != nil {
				t.Errorf("Prove on the restarted daemon: %v", err)
			}
			result <- resp.GetResult()
		}()
		restarted.waitRunning(t, pb.ProofKind_WINNING_POST)
		if err := restarted.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		res := <-result
		if res == nil {
			t.FailNow()
		}
		wantStatus(t, "WinningPoSt across SIGTERM", res, pb.AwaitProofResponse_COMPLETED)
		t.Logf("WinningPoSt: %d bytes, daemon total %d ms", len(res.Proof), res.TotalMs)
		w.verify(t, res.Proof)
		if err := restarted.waitExit(t, 30*time.Second); err != nil {
			t.Fatalf("the daemon's exit after SIGTERM: %v", err)
		}
	})
}
