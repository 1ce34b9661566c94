package systemtest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
)

// TestLeaderLogWriteFails makes the leader's Raft log writes fail under load,
// as a disk that returns I/O errors would, in txlogd processes built with the
// txlogfaults tag (replication/faults.go: a write fails while a trigger file
// exists in the node's Raft directory). The leader sends new entries while it
// writes them (txlog's raft patch), so the followers may hold entries its own
// log lacks: it must stop rather than step down and go on (docs/durability.md,
// "The leader's write and the followers'"). The test checks that the process
// exits with the patch's panic, that the other two go on taking writes, and
// that once restarted on a working disk the node catches up: every
// acknowledged write is in every node's log exactly once, and the logs are the
// same.
func TestLeaderLogWriteFails(t *testing.T) {
	const trigger = "fail-log-writes"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "txlogd-faults")
	if out, err := exec.CommandContext(ctx, "go", "build", "-tags", "txlogfaults", "-o", bin, launcher.TxlogdPackage).CombinedOutput(); err != nil {
		t.Fatalf("go build -tags txlogfaults: %v\n%s", err, out)
	}
	c := startClusterConfig(t, launcher.ClusterConfig{Bin: bin, Env: []string{"TXLOG_FAULT_RAFT_LOG_WRITE=" + trigger}})
	load := startPutLoad(ctx, t, c.HTTPAddrs(), 8)
	load.committedSince(200)

	failed := mustLeaderID(ctx, t, c)
	p := c.Node(failed)
	triggerPath := filepath.Join(p.DataDir(), "raft", trigger)
	if err := os.WriteFile(triggerPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 30*time.Second)
	err := p.Wait(waitCtx)
	waitCancel()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("leader %s with failing log writes: Wait() = %v, want it to exit", failed, err)
	}
	const msg = "leader failed to write logs it may have sent to followers"
	if tail := p.LogTail(200); !strings.Contains(tail, msg) {
		t.Fatalf("leader %s exited (%v) without %q in its log; tail:\n%s", failed, err, msg, tail)
	}

	newLeader := mustLeaderID(ctx, t, c)
	if newLeader == failed {
		t.Fatalf("leader is still %s after it exited", failed)
	}
	load.committedSince(300)
	if err := os.Remove(triggerPath); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, failed); err != nil {
		t.Fatalf("Restart(%s) = %v", failed, err)
	}
	load.committedSince(200)
	results := load.stop()

	checkSettled(ctx, t, c, results)
	t.Logf("%d writes; leader %s stopped on its failed log write (%v), %s led after it", len(results), failed, err, newLeader)
}
