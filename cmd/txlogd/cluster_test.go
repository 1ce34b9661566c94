package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/chaos"
	"github.com/txlog/txlog/client"
)

// txlogdBin is the txlogd binary built once for the tests of this package.
var txlogdBin string

func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" { // a lease holder process (lease_test.go)
		os.Exit(runLeaseHolder())
	}
	dir, err := os.MkdirTemp("", "txlogd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	txlogdBin, err = chaos.BuildBinaries(ctx, dir)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startCluster starts three txlogd processes on loopback ports chosen now, and
// stops them when the test ends, printing each node's log tail if it failed.
func startCluster(t *testing.T) *chaos.Cluster {
	t.Helper()
	return startClusterWith(t)
}

// startClusterWith is startCluster with extra txlogd flags for every node.
func startClusterWith(t *testing.T, args ...string) *chaos.Cluster {
	t.Helper()
	return startClusterConfig(t, chaos.ClusterConfig{ExtraArgs: args})
}

// startClusterConfig is startCluster with cfg's settings; it sets Dir, Host,
// HTTPBasePort and, unless cfg has one, Bin.
func startClusterConfig(t *testing.T, cfg chaos.ClusterConfig) *chaos.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg.Dir = t.TempDir()
	if d := os.Getenv("TXLOG_TEST_DIR"); d != "" {
		cfg.Dir = d
	}
	if cfg.Bin == "" {
		cfg.Bin = txlogdBin
	}
	// Fixed HTTP ports, so that a restarted node is where the clients knew it,
	// on an address of the cluster's own, so that no other test takes a killed
	// node's port before it is back.
	cfg.Host = chaos.PrivateLoopback()
	base, err := chaos.FreeRange(cfg.Host, 3)
	if err != nil {
		t.Fatal(err)
	}
	cfg.HTTPBasePort = base
	c, err := chaos.StartCluster(ctx, cfg)
	if err != nil {
		t.Fatalf("StartCluster() = %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range c.Nodes() {
				t.Logf("--- %s log tail:\n%s", p.ID(), p.LogTail(40))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c.Close(ctx)
	})
	if _, err := c.Leader(ctx); err != nil {
		t.Fatalf("Leader() = %v", err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady() = %v", err)
	}
	return c
}

// hotKeys are the keys the compare-and-set chains contend on.
var hotKeys = []string{"hot/a", "hot/b", "hot/c", "hot/d"}

// ack is what a client learned about one transaction it sent.
type ack struct {
	key    string // idempotency key
	res    wire.TxResult
	err    error // non-nil: the outcome stayed unknown to the client
	casKey string
	at     time.Time // when the answer came (set by the failover load)
}

// TestClusterSurvivesLeaderKill is the core cluster's acceptance test: 16 clients
// submit 2,000 transactions through all three nodes while the leader is killed
// with SIGKILL and later restarted.
func TestClusterSurvivesLeaderKill(t *testing.T) {
	const (
		clients = 16
		total   = 2000
	)
	c := startCluster(t)
	urls := c.HTTPAddrs()

	var (
		next    atomic.Int64 // the next transaction number to send
		done    atomic.Int64 // transactions finished, for the fault schedule
		quarter = make(chan struct{})
		half    = make(chan struct{})
		mu      sync.Mutex
		results []ack
	)
	record := func(a ack) {
		mu.Lock()
		results = append(results, a)
		mu.Unlock()
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for w := range clients {
		// Each client prefers a different node, so writes enter through all three.
		eps := append(append([]string(nil), urls[w%3:]...), urls[:w%3]...)
		cl := client.NewClient(client.ClientConfig{Endpoints: eps, Timeout: 20 * time.Second})
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		wg.Go(func() {
			for {
				n := next.Add(1)
				if n > total {
					return
				}
				if rng.IntN(5) == 0 {
					record(casOnce(ctx, cl, w, n, hotKeys[rng.IntN(len(hotKeys))]))
				} else {
					record(blindPut(ctx, cl, n))
				}
				switch done.Add(1) {
				case total / 4:
					close(quarter)
				case total / 2:
					close(half)
				}
			}
		})
	}

	// The nemesis: SIGKILL the leader a quarter of the way in, restart it at half way.
	waitFor := func(ch <-chan struct{}) {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("workload stalled: %d of %d done", done.Load(), total)
		}
	}
	waitFor(quarter)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader() = %v", err)
	}
	killedAt := time.Now()
	if err := c.Kill(leader); err != nil {
		t.Fatalf("Kill(%s) = %v", leader, err)
	}
	newLeader, err := c.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader() after kill = %v", err)
	}
	t.Logf("killed leader %s; %s leads after %v", leader, newLeader, time.Since(killedAt).Round(time.Millisecond))
	waitFor(half)
	if err := c.Restart(ctx, leader); err != nil {
		t.Fatalf("Restart(%s) = %v", leader, err)
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("workload did not finish: %v", ctx.Err())
	}

	// Every node catches up with the same applied index.
	logs := checkSettled(ctx, t, c, results)
	// A linearizable read sees the last committed version of each hot key.
	cl := client.NewClient(client.ClientConfig{Endpoints: urls})
	want := lastVersions(logs["n1"])
	for _, k := range hotKeys {
		kv, err := cl.Get(ctx, k, wire.ReadOptions{})
		switch {
		case errors.Is(err, wire.ErrNotFound) && want[k] == 0:
		case err != nil:
			t.Fatalf("Get(%s) = %v", k, err)
		case kv.Version != want[k]:
			t.Fatalf("Get(%s).Version = %d, want %d (last committed in the log)", k, kv.Version, want[k])
		}
	}
	var unknown int
	for _, r := range results {
		if r.err != nil {
			unknown++
		}
	}
	t.Logf("%d transactions, %d log entries, %d outcomes unknown to their client", len(results), len(logs["n1"]), unknown)
}

// blindPut writes one key with an idempotency key; on an error it retries with
// the same idempotency key until it learns the outcome or ctx ends.
func blindPut(ctx context.Context, cl *client.Client, n int64) ack {
	key := fmt.Sprintf("put-%d", n)
	tx := wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: fmt.Sprintf("k/%d", n), Value: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}}}
	return submit(ctx, cl, tx)
}

// casOnce reads a hot key and writes it back with if_version, once. A 409 is a
// fine outcome: the chain has moved on.
func casOnce(ctx context.Context, cl *client.Client, w int, n int64, k string) ack {
	var v uint64
	kv, err := cl.Get(ctx, k, wire.ReadOptions{})
	if err == nil {
		v = kv.Version
	} else if !errors.Is(err, wire.ErrNotFound) {
		return ack{key: fmt.Sprintf("cas-%d", n), err: fmt.Errorf("read %s: %w", k, err), casKey: k}
	}
	tx := wire.TxRequest{IdempotencyKey: fmt.Sprintf("cas-%d", n), Ops: []wire.Op{{
		Op: "put", Key: k, IfVersion: &v, Value: json.RawMessage(fmt.Sprintf(`{"w":%d,"n":%d,"prev":%d}`, w, n, v)),
	}}}
	a := submit(ctx, cl, tx)
	a.casKey = k
	return a
}

func submit(ctx context.Context, cl *client.Client, tx wire.TxRequest) ack {
	var err error
	for attempt := 0; attempt < 5 && ctx.Err() == nil; attempt++ {
		var res wire.TxResult
		res, err = cl.Submit(ctx, tx, wire.SubmitOptions{})
		if err == nil {
			return ack{key: tx.IdempotencyKey, res: res}
		}
		var ae *wire.Error
		if errors.As(err, &ae) {
			break // bad input is not worth retrying
		}
	}
	return ack{key: tx.IdempotencyKey, err: err}
}

// lastIndex returns the highest commit index among the nodes that answer: a
// node just restarted may not have heard of the leader's yet.
func lastIndex(ctx context.Context, t *testing.T, c *chaos.Cluster) uint64 {
	t.Helper()
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	var last uint64
	var errs []error
	for _, base := range c.HTTPAddrs() {
		st, err := cl.ClusterFrom(ctx, base)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		last = max(last, st.CommitIndex)
	}
	if last == 0 {
		t.Fatalf("no node knows a commit index: %v", errs)
	}
	return last
}

// readLog pages through one node's log, first waiting until it has applied upTo.
func readLog(ctx context.Context, t *testing.T, base string, upTo uint64) []wire.LogEntry {
	t.Helper()
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{base}})
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := cl.ClusterFrom(ctx, base)
		if err == nil && st.AppliedIndex >= upTo {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not apply up to %d: %+v, %v", base, upTo, st, err)
		}
		select { // poll with a deadline
		case <-ctx.Done():
			t.Fatalf("%s: %v", base, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	var all []wire.LogEntry
	from := uint64(1)
	for {
		page, err := cl.Log(ctx, from, 1000)
		if err != nil {
			t.Fatalf("Log(%s, %d) = %v", base, from, err)
		}
		all = append(all, page.Entries...)
		if len(page.Entries) == 0 || page.Next <= from {
			return all
		}
		from = page.Next
	}
}

// checkSettled waits until every node is ready, reads each node's log up to
// the highest commit index and checks it and results with checkCluster. It
// returns the logs by node.
func checkSettled(ctx context.Context, t *testing.T, c *chaos.Cluster, results []ack) map[string][]wire.LogEntry {
	t.Helper()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady() = %v", err)
	}
	upTo := lastIndex(ctx, t, c)
	logs := make(map[string][]wire.LogEntry)
	for _, p := range c.Nodes() {
		logs[p.ID()] = readLog(ctx, t, c.URL(p.ID()), upTo)
	}
	if err := checkCluster(results, logs); err != nil {
		t.Fatal(err)
	}
	return logs
}

// checkCluster checks the acknowledged results against every node's log.
func checkCluster(results []ack, logs map[string][]wire.LogEntry) error {
	ids := make([]string, 0, len(logs))
	for id := range logs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	ref := logs[ids[0]]

	// The logs are identical.
	for _, id := range ids[1:] {
		l := logs[id]
		if len(l) != len(ref) {
			return fmt.Errorf("log of %s has %d entries, %s has %d", id, len(l), ids[0], len(ref))
		}
		for i := range l {
			a, b := l[i], ref[i]
			if a.Index != b.Index || a.TxID != b.TxID || a.Status != b.Status || a.IdempotencyKey != b.IdempotencyKey {
				return fmt.Errorf("logs diverge at position %d: %s has %+v, %s has %+v", i, id, a, ids[0], b)
			}
		}
	}
	// No txid and no idempotency key appears twice.
	byTx := map[string]wire.LogEntry{}
	byKey := map[string]wire.LogEntry{}
	for _, e := range ref {
		tx := e.TxID.String()
		if prev, dup := byTx[tx]; dup {
			return fmt.Errorf("txid %s in the log twice: index %d and %d", tx, prev.Index, e.Index)
		}
		byTx[tx] = e
		if e.IdempotencyKey != "" {
			if prev, dup := byKey[e.IdempotencyKey]; dup {
				return fmt.Errorf("idempotency key %s in the log twice: index %d and %d", e.IdempotencyKey, prev.Index, e.Index)
			}
			byKey[e.IdempotencyKey] = e
		}
	}
	// Every acknowledged transaction is there, once, as acknowledged.
	for _, r := range results {
		if r.err != nil {
			continue
		}
		e, ok := byTx[r.res.TxID.String()]
		if !ok {
			return fmt.Errorf("acknowledged %s (key %s, index %d) missing from the log", r.res.TxID, r.key, r.res.Index)
		}
		if e.Index != r.res.Index || e.Status != r.res.Status || e.IdempotencyKey != r.key {
			return fmt.Errorf("acknowledged %+v but the log has %+v", r.res, e)
		}
	}
	// Version chains have no gaps: each committed write of a key is the previous
	// version plus one, and a put with if_version N commits version N+1.
	versions := map[string]uint64{}
	for _, e := range ref {
		if e.Status != wire.StatusCommitted {
			continue
		}
		for _, op := range e.Ops {
			if op.Op == "delete" {
				versions[op.Key] = 0
				continue
			}
			want := versions[op.Key] + 1
			if got := e.Versions[op.Key]; got != want {
				return fmt.Errorf("index %d: %s at version %d, want %d (gap in the chain)", e.Index, op.Key, got, want)
			}
			if op.IfVersion != nil && *op.IfVersion+1 != want {
				return fmt.Errorf("index %d: %s committed with if_version %d over version %d", e.Index, op.Key, *op.IfVersion, want-1)
			}
			versions[op.Key] = want
		}
	}
	return nil
}

// lastVersions returns each key's version after the whole log.
func lastVersions(log []wire.LogEntry) map[string]uint64 {
	v := map[string]uint64{}
	for _, e := range log {
		if e.Status != wire.StatusCommitted {
			continue
		}
		for k, ver := range e.Versions {
			v[k] = ver
		}
	}
	return v
}
