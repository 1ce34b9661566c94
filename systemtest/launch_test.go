package systemtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/launcher/launchertest"
)

// launchCluster is launchertest.Launch (the cluster started with no wait for
// a leader or readiness, stopped when the test ends) with Dir from
// TXLOG_TEST_DIR when that is set and Bin txlogdBin unless cfg has one: for
// clusters whose nodes answer only a client with credentials, and for tests
// that check the start themselves.
func launchCluster(t testing.TB, cfg launcher.ClusterConfig) *launcher.Cluster {
	t.Helper()
	if d := os.Getenv("TXLOG_TEST_DIR"); d != "" {
		cfg.Dir = d
	}
	if cfg.Bin == "" {
		cfg.Bin = txlogdBin
	}
	return launchertest.Launch(t, cfg)
}

// hostPorts returns the host:port of each node's client port in c, in ID
// order, from the nodes' http.addr files.
func hostPorts(t testing.TB, c *launcher.Cluster) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), launchertest.StartTimeout)
	defer cancel()
	var addrs []string
	for _, p := range c.Nodes() {
		addr, err := p.HTTPAddr(ctx)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, addr)
	}
	return addrs
}

// newProcess makes the process cfg describes (Bin txlogdBin unless cfg has
// one) and kills it when the test ends, printing its log tail first if the
// test failed. It does not start it.
func newProcess(t testing.TB, cfg launcher.ProcessConfig) *launcher.Process {
	t.Helper()
	if cfg.Bin == "" {
		cfg.Bin = txlogdBin
	}
	p, err := launcher.NewProcess(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- %s log tail:\n%s", cfg.ID, p.LogTail(40))
		}
		p.Kill()
	})
	return p
}

// startProcess is newProcess, started.
func startProcess(t testing.TB, cfg launcher.ProcessConfig) *launcher.Process {
	t.Helper()
	p := newProcess(t, cfg)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// rejoinArgs returns the flags of old, a node bootstrapped with --cluster,
// with that flag turned into --join=via: the same node asking to join again.
func rejoinArgs(old *launcher.Process, via string) []string {
	var args []string
	for _, a := range old.Args() {
		if strings.HasPrefix(a, "--cluster=") {
			a = "--join=" + via
		}
		args = append(args, a)
	}
	return args
}
