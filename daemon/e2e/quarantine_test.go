//go:build cuzk

package e2e

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	pb "github.com/cuzk-dev/cuzk/daemon/e2e/cuzkpb"
)

// TestDaemonExitsOnQuarantine proves on a GPU what issue 25 asks of the daemon: on a fault the
// engine cannot recover from, the daemon fails the call, logs why and exits with status 3;
// started again, as systemd's Restart=on-failure does, it proves Curio's retry of the call.
//
// It needs a GPU and a daemon built with the test-only feature (`cargo build -p cuzk-daemon
// --features fault-injection`; scripts/gpu-build.sh with CUZK_CARRY_DAEMON=1 makes
// carry-daemon/cuzk-daemon-fault) in CUZK_DAEMON_FAULT_BIN, besides the environment of
// TestDaemon; without it the test skips. CUZK_DAEMON_TEST_FAULT=quarantine makes that daemon's
// first GPU call fault and the device reset after it fail, so the engine quarantines the GPU.
func TestDaemonExitsOnQuarantine(t *testing.T) {
	faultBin := os.Getenv("CUZK_DAEMON_FAULT_BIN")
	if faultBin == "" {
		t.Skip("CUZK_DAEMON_FAULT_BIN is not set: a GPU test, with a cuzk-daemon built with --features fault-injection (scripts/gpu-run.sh daemon)")
	}
	if os.Getenv("CUZK_DAEMON_BIN") == "" {
		t.Fatal("CUZK_DAEMON_BIN is not set: the daemon started again after the quarantine")
	}
	f := loadSector(t)
	dir := t.TempDir()
	// Split never: as the engine's GPU fault test (tests/gpu.rs), so that the fault surfaces
	// where the engine recovers, not inside sppark's msm_t, whose destructor would end the
	// process on the faulted context.
	faulty := startDaemonBinary(t, dir, faultBin, "CUZK_DAEMON_TEST_FAULT=quarantine", "CUZK_GPU_SPLIT=never")
	if !strings.Contains(faulty.log(t), "TEST FAULT ARMED") {
		t.Fatalf("%s logged no armed test fault: is it built with --features fault-injection?", faultBin)
	}
	st, err := faulty.client.GetStatus(context.Background(), &pb.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Gpus) == 0 {
		t.Fatal("the daemon sees no GPU: the fault needs one")
	}

	req := f.request(t, "porep-e2e-quarantine")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	resp, err := faulty.client.Prove(ctx, &pb.ProveRequest{Submit: req})
	switch {
	case err != nil:
		t.Logf("Prove that met the fault: %v", err)
	case resp.Result.Status == pb.AwaitProofResponse_FAILED && strings.Contains(resp.Result.ErrorMessage, "quarantined"):
		t.Logf("Prove that met the fault: FAILED, %q", resp.Result.ErrorMessage)
	default:
		t.Fatalf("Prove that met the fault: status %v (%q), want FAILED naming the quarantine", resp.Result.Status, resp.Result.ErrorMessage)
	}

	start := time.Now()
	exit := faulty.waitExit(t, 60*time.Second)
	var exitErr *exec.ExitError
	if !errors.As(exit, &exitErr) || exitErr.ExitCode() != 3 {
		t.Fatalf("the daemon's exit after the quarantine: %v, want exit status 3", exit)
	}
	t.Logf("the daemon exited with status 3, %v after the failed call", time.Since(start).Round(time.Millisecond))
	logged := faulty.log(t)
	for _, want := range []string{"is quarantined after", "exiting with status 3 for a restart"} {
		if !strings.Contains(logged, want) {
			t.Errorf("the daemon log has no %q", want)
		}
	}

	// Started again (a fresh process, a fresh CUDA context), it proves Curio's retry: the same
	// request_id, a new job.
	restarted := startDaemon(t, dir)
	proved := restarted.prove(t, ctx, req)
	wantStatus(t, "the retry on the restarted daemon", proved, pb.AwaitProofResponse_COMPLETED)
	f.verify(t, proved.Proof)
	st, err = restarted.client.GetStatus(context.Background(), &pb.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Gpus) == 0 {
		t.Fatal("the restarted daemon sees no GPU")
	}
	t.Logf("the retry: %d bytes, daemon total %d ms, on %d GPU(s)", len(proved.Proof), proved.TotalMs, len(st.Gpus))
}
