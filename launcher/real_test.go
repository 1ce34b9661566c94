package launcher

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// realTxlogd builds cmd/txlogd once for the tests that need the real node.
var realTxlogd = sync.OnceValues(func() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return BuildBinaries(ctx, realBinDir)
})

// realBinDir is where realTxlogd puts the binary; TestMain removes it.
var realBinDir string

// TestRealCluster runs the launcher against real txlogd processes: election,
// a killed leader, a restart on the same data dir, a pause and a clean close.
func TestRealCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs txlogd")
	}
	bin, err := realTxlogd()
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		t.Skipf("txlogd does not build here: %s", first)
	}
	ctx := testCtx(t, 2*time.Minute)
	c := startFakeCluster(t, ctx, ClusterConfig{Bin: bin})

	leader, err := c.Leader(ctx)
	if err != nil {
		failWithLogs(t, c, "Leader() = %v", err)
	}
	if err := c.WaitReady(ctx); err != nil {
		failWithLogs(t, c, "WaitReady() = %v", err)
	}

	if err := c.Kill(leader); err != nil {
		t.Fatalf("Kill(%s) = %v", leader, err)
	}
	next, err := c.Leader(ctx)
	if err != nil {
		failWithLogs(t, c, "Leader() after killing %s = %v", leader, err)
	}
	if next == leader {
		t.Fatalf("Leader() = %s, the killed node", next)
	}
	if err := c.Restart(ctx, leader); err != nil {
		failWithLogs(t, c, "Restart(%s) = %v", leader, err)
	}
	if err := c.WaitReady(ctx); err != nil {
		failWithLogs(t, c, "WaitReady() after restart = %v", err)
	}

	var follower string
	for _, p := range c.Nodes() {
		if p.ID() != next {
			follower = p.ID()
		}
	}
	if err := c.Pause(follower); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(ctx); err != nil {
		failWithLogs(t, c, "Leader() with %s paused = %v", follower, err)
	}
	if err := c.Resume(follower); err != nil {
		t.Fatal(err)
	}

	if err := c.Close(ctx); err != nil {
		failWithLogs(t, c, "Close() = %v", err)
	}
}
