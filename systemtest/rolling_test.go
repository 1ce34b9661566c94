package systemtest

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
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
	w := startRollingWriters(ctx, c)
	healthy("the start")
	w.more(ctx, t, "the start")

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
		w.more(ctx, t, "restarting follower "+f)
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
	w.more(ctx, t, "restarting the old leader "+leader)
	results := w.finish()

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

// rollingWriters writes unique keys through every node of c, one client per
// node (each starting its endpoints there), keeping each answer, until
// finish; the rolling tests restart and replace members under it.
type rollingWriters struct {
	mu      sync.Mutex
	results []ack
	next    atomic.Int64
	stop    atomic.Bool
	wg      sync.WaitGroup
}

func startRollingWriters(ctx context.Context, c *launcher.Cluster) *rollingWriters {
	w := &rollingWriters{}
	urls := c.HTTPAddrs()
	for i := range 3 {
		eps := append(append([]string(nil), urls[i:]...), urls[:i]...)
		cl := client.NewClient(client.ClientConfig{Endpoints: eps, Timeout: 20 * time.Second})
		w.wg.Go(func() {
			for !w.stop.Load() && ctx.Err() == nil {
				a := blindPut(ctx, cl, w.next.Add(1))
				w.mu.Lock()
				w.results = append(w.results, a)
				w.mu.Unlock()
			}
		})
	}
	return w
}

// committed counts the writes answered committed so far.
func (w *rollingWriters) committed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, r := range w.results {
		if r.err == nil && r.res.Status == wire.StatusCommitted {
			n++
		}
	}
	return n
}

// more waits for 20 more writes to commit after the step named after.
func (w *rollingWriters) more(ctx context.Context, t *testing.T, after string) {
	t.Helper()
	from := w.committed()
	waitUntil(ctx, t, "writes to commit after "+after, func() bool { return w.committed() >= from+20 })
}

// finish stops the writers and returns every answer.
func (w *rollingWriters) finish() []ack {
	w.stop.Store(true)
	w.wg.Wait()
	return w.results
}
