package launchertest

import (
	"context"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
)

// How long StartCluster waits for the nodes to elect a leader and be ready,
// and how long the cleanup gives them to stop.
const (
	StartTimeout = time.Minute
	StopTimeout  = 30 * time.Second
)

// logTailLines is how many lines of each node's log a failed test prints.
const logTailLines = 40

// StartCluster starts the cluster cfg describes, waits until its nodes agree on
// a leader and answer ready, and stops it when the test ends. Unless cfg sets
// them, it takes Dir from t.TempDir() and, so that a restarted node is where
// the clients knew it and no other test takes a killed node's port before it
// is back, Host from launcher.PrivateLoopback and HTTPBasePort from
// launcher.FreeRange. cfg.Bin is required.
func StartCluster(t testing.TB, cfg launcher.ClusterConfig) *launcher.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	c := launch(ctx, t, cfg)
	if _, err := c.Leader(ctx); err != nil {
		t.Fatalf("Leader() = %v", err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady() = %v", err)
	}
	return c
}

// Launch is StartCluster without its waits: it starts the cluster, with the
// same defaults and cleanup, and returns without waiting for a leader or
// readiness (for a cluster whose nodes answer only a client with
// credentials, or a test that checks the start itself).
func Launch(t testing.TB, cfg launcher.ClusterConfig) *launcher.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	return launch(ctx, t, cfg)
}

// launch fills in cfg's defaults, starts the cluster within ctx and stops it
// when the test ends, printing each node's log tail if the test failed.
func launch(ctx context.Context, t testing.TB, cfg launcher.ClusterConfig) *launcher.Cluster {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Host == "" {
		cfg.Host = launcher.PrivateLoopback()
	}
	if cfg.HTTPBasePort == 0 {
		n := cfg.Nodes
		if n == 0 {
			n = launcher.DefaultNodes
		}
		base, err := launcher.FreeRange(cfg.Host, n)
		if err != nil {
			t.Fatal(err)
		}
		cfg.HTTPBasePort = base
	}
	c, err := launcher.StartCluster(ctx, cfg)
	if err != nil {
		t.Fatalf("StartCluster() = %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.Nodes() {
				t.Logf("--- %s log tail:\n%s", p.ID(), p.LogTail(logTailLines))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), StopTimeout)
		defer cancel()
		c.Close(ctx)
	})
	return c
}
