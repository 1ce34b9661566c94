package systemtest

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/launcher"
)

// TestRollingRestart runs the procedure of docs/deploy.md, "Upgrading one
// node at a time", on a real three-node cluster under a writer: each
// follower is stopped gracefully and started again on its data dir, then
// `txlog leader transfer` hands leadership to a restarted follower and the
// old leader is restarted last; `txlog endpoint health` must pass before
// each next step. Every acknowledged write is once in every log, and the
// logs agree (checkSettled).
func TestRollingRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	host := launcher.PrivateLoopback()
	base, err := launcher.FreeRange(host, 3)
	if err != nil {
		t.Fatal(err)
	}
	c := startClusterConfig(t, launcher.ClusterConfig{Host: host, HTTPBasePort: base}) // the HTTP ports stay across restarts
	txlog := filepath.Join(t.TempDir(), "txlog")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", txlog, "github.com/txlog/txlog/cmd/txlog").CombinedOutput(); err != nil {
		t.Fatalf("go build txlog: %v\n%s", err, out)
	}
	targets := strings.Join(c.HTTPAddrs(), ",")
	cli := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, txlog, append(args, "--targets", targets)...).CombinedOutput()
		return string(out), err
	}
	healthy := func(after string) {
		t.Helper()
		var out string
		waitUntil(ctx, t, "txlog endpoint health to pass after "+after, func() bool {
			var err error
			out, err = cli("endpoint", "health")
			return err == nil
		})
		t.Logf("after %s: txlog endpoint health:\n%s", after, out)
	}

	// The writer: unique keys through every node, each answer kept.
	w := startPutLoad(ctx, t, c.HTTPAddrs(), 3)
	healthy("the start")
	w.more("the start")

	leader := mustLeaderID(ctx, t, c)
	var followers []string
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			followers = append(followers, p.ID())
		}
	}
	for _, f := range followers {
		if err := c.Restart(ctx, f); err != nil {
			t.Fatalf("restart follower %s: %v", f, err)
		}
		healthy("restarting follower " + f)
		w.more("restarting follower " + f)
	}
	out, err := cli("leader", "transfer", followers[0])
	var tr wire.TransferResult
	if err != nil || json.Unmarshal([]byte(out), &tr) != nil || tr.LeaderID != followers[0] {
		t.Fatalf("txlog leader transfer %s: %v\n%s", followers[0], err, out)
	}
	waitUntil(ctx, t, followers[0]+" to lead", func() bool {
		id, err := c.Leader(ctx)
		return err == nil && id == followers[0]
	})
	healthy("the leader transfer")
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatalf("restart the old leader %s: %v", leader, err)
	}
	healthy("restarting the old leader " + leader)
	w.more("restarting the old leader " + leader)
	results := w.stop()

	failed := 0
	for _, r := range results {
		if r.err != nil {
			failed++
		}
	}
	checkSettled(ctx, t, c, results)
	t.Logf("rolling restart (%v, then %s after the transfer): %d writes acknowledged once in every log, %d without an answer",
		followers, leader, w.committed(), failed)
}
