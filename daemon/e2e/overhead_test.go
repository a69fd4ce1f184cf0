//go:build cuzk

package e2e

import (
	"context"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cuzk-dev/cuzk/cuzkffi"
	pb "github.com/cuzk-dev/cuzk/daemon/e2e/cuzkpb"
)

// TestDaemonOverhead measures what going through cuzk-daemon costs a C2 against proving in the
// caller's process, in one run on one machine (CUZK_DAEMON_OVERHEAD_CALLS=N; not in CI, where
// the CPU's tens of seconds per proof would hide it): N warm C2s of the fixture's sector
// through cuzkffi in this process, the engine closed, then N through the daemon's Prove (GPU
// when present), one at a time. Every proof is verified. It prints each path's median wall
// time and the daemon's median overhead: its own job time (total_ms) less the engine's, and
// the client's wall time less the in-process call's.
func TestDaemonOverhead(t *testing.T) {
	calls, _ := strconv.Atoi(os.Getenv("CUZK_DAEMON_OVERHEAD_CALLS"))
	if calls <= 0 {
		t.Skip("CUZK_DAEMON_OVERHEAD_CALLS is not set: a measurement for the GPU machine")
	}
	f := loadSector(t)

	// In process, as Curio calls filecoin-ffi: one engine, the key resident after the first call.
	cfg := cuzkffi.DefaultConfig()
	cfg.ParamCacheDir = os.Getenv("CUZK_TEST_PARAMS")
	if err := cuzkffi.Init(cfg); err != nil {
		t.Fatal(err)
	}
	inProcess := make([]time.Duration, 0, calls)
	var backend cuzkffi.Backend
	for i := 0; i <= calls; i++ {
		start := time.Now()
		proof, timings, err := cuzkffi.SealCommitPhase2WithOptions(context.Background(), f.c1, f.number, f.miner)
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("in-process C2 %d: %v", i, err)
		}
		f.verify(t, proof)
		backend = timings.Backend
		if i > 0 { // the first call loads the key
			inProcess = append(inProcess, elapsed)
		}
	}
	if err := cuzkffi.Close(); err != nil {
		t.Fatal(err)
	}

	d := startDaemon(t, t.TempDir())
	client := make([]time.Duration, 0, calls)
	jobExtra := make([]time.Duration, 0, calls)
	for i := 0; i <= calls; i++ {
		start := time.Now()
		resp, err := d.client.Prove(context.Background(), &pb.ProveRequest{Submit: f.request(t, "porep-overhead-"+strconv.Itoa(i))})
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("daemon C2 %d: %v", i, err)
		}
		wantStatus(t, "daemon C2", resp.Result, pb.AwaitProofResponse_COMPLETED)
		f.verify(t, resp.Result.Proof)
		if i > 0 {
			client = append(client, elapsed)
			jobExtra = append(jobExtra, elapsed-time.Duration(resp.Result.TotalMs)*time.Millisecond)
		}
	}
	median := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Logf("%d warm C2s each, backend %v: in-process median %v; through cuzk-daemon median %v (overhead %v); "+
		"client wall less the daemon's job time (gRPC, message encoding) median %v",
		calls, backend, median(inProcess), median(client), median(client)-median(inProcess), median(jobExtra))
}
