package replication

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/store"
)

// fakeMachine is an in-memory state machine: it keeps the commands applied.
type fakeMachine struct {
	// ApplyFunc, if set, is called before each Apply; an error fails the Apply.
	ApplyFunc func(entries []store.Entry) error

	mu       sync.Mutex
	applied  uint64
	term     uint64 // of the entry at applied
	restored uint64 // the applied index of the last Restore
	entries  []store.Entry
	maxBatch int
	restores int
}

func (m *fakeMachine) Apply(entries []store.Entry) ([]store.Result, error) {
	if m.ApplyFunc != nil {
		if err := m.ApplyFunc(entries); err != nil {
			return nil, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maxBatch = max(m.maxBatch, len(entries))
	results := make([]store.Result, len(entries))
	for i, e := range entries {
		if e.Index <= m.applied {
			results[i].Skipped = true
			continue
		}
		m.applied, m.term = e.Index, e.Term
		m.entries = append(m.entries, store.Entry{Index: e.Index, Term: e.Term, Data: bytes.Clone(e.Data)})
		results[i].Outcome = store.Outcome{Index: e.Index, Term: e.Term, Status: store.StatusCommitted}
	}
	return results, nil
}

func (m *fakeMachine) AppliedIndex() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applied
}

func (m *fakeMachine) RestoredIndex() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.restored
}

func (m *fakeMachine) AppliedTerm() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.term
}

// fakeState is the snapshot stream of a fakeMachine.
type fakeState struct {
	Applied uint64
	Term    uint64
	Entries []store.Entry
}

func (m *fakeMachine) Snapshot() (snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := json.Marshal(fakeState{Applied: m.applied, Term: m.term, Entries: m.entries})
	return &fakeSnapshot{b: b}, err
}

func (m *fakeMachine) Restore(r io.Reader) error {
	var st fakeState
	if err := json.NewDecoder(r).Decode(&st); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.applied, m.term, m.entries = st.Applied, st.Term, st.Entries
	m.restored = st.Applied
	m.restores++
	return nil
}

// data returns the Data of the applied commands, in order.
func (m *fakeMachine) data() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, e := range m.entries {
		out = append(out, string(e.Data))
	}
	return out
}

func (m *fakeMachine) stats() (maxBatch, restores int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxBatch, m.restores
}

type fakeSnapshot struct{ b []byte }

func (s *fakeSnapshot) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(s.b)
	return int64(n), err
}

func (s *fakeSnapshot) Release() {}

// testLogger returns a logger that writes to t until the test's cleanups run;
// raft's transport goroutines may still log after Close returns.
func testLogger(t *testing.T, id string) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.stop) // registered first, so it runs after the nodes are closed
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})).With("node", id)
}

type testWriter struct {
	mu      sync.Mutex
	t       *testing.T
	stopped bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.stopped {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
}

// freeAddrs reserves n loopback ports for servers that their peers must know
// before they start (static bootstrap). The listeners stay open until all n
// are bound, so the ports differ. The ports are on a loopback address of the
// test's own (see privateLoopback): a test that restarts a server binds its
// port again, and on 127.0.0.1 that port, from the kernel's ephemeral range,
// could meanwhile be the local end of any process's outgoing connection.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	host := privateLoopback()
	var addrs []string
	for range n {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatalf("listen: %v", err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// privateLoopback returns a random address in 127.0.0.0/8 other than 127.0.0.1
// that can be bound here (Linux routes the whole block to the loopback
// interface), or 127.0.0.1. Outgoing connections to it come from 127.0.0.1, so
// no other process takes its ports. A copy of launcher.PrivateLoopback: the Raft
// layer's tests do not depend on the process launcher above it.
func privateLoopback() string {
	for range 10 {
		ip := net.IPv4(127, byte(1+rand.IntN(254)), byte(rand.IntN(256)), byte(1+rand.IntN(254))).String()
		if l, err := net.Listen("tcp", net.JoinHostPort(ip, "0")); err == nil {
			l.Close()
			return ip
		}
	}
	return "127.0.0.1"
}

// testNode is one server of a test cluster.
type testNode struct {
	cfg Config
	sm  *fakeMachine
	r   *Raft
}

// testConfig returns a config for a test server. Its timeouts are twice the
// defaults: three servers per test, the race detector and a busy machine can
// starve a heartbeat for a few hundred milliseconds, and a leader that steps
// down mid-test makes the test fail, not wrong.
func testConfig(t *testing.T, id, addr string) Config {
	return Config{
		ID:                 id,
		Dir:                t.TempDir(),
		BindAddr:           addr,
		HeartbeatTimeout:   2 * DefaultHeartbeatTimeout,
		ElectionTimeout:    2 * DefaultElectionTimeout,
		LeaderLeaseTimeout: 2 * DefaultLeaderLeaseTimeout,
		Logger:             testLogger(t, id),
	}
}

// start opens n's Raft with a new, empty state machine.
func (n *testNode) start(t *testing.T) {
	t.Helper()
	n.sm = &fakeMachine{}
	n.resume(t)
}

// resume starts n's Raft again with the state machine it had, as a node whose
// store persisted its state does.
func (n *testNode) resume(t *testing.T) {
	t.Helper()
	r, err := open(n.cfg, n.sm)
	if err != nil {
		t.Fatalf("open %s: %v", n.cfg.ID, err)
	}
	n.r = r
	t.Cleanup(func() { r.Close() })
}

// stop closes n's Raft.
func (n *testNode) stop(t *testing.T) {
	t.Helper()
	if err := n.r.Close(); err != nil {
		t.Errorf("close %s: %v", n.cfg.ID, err)
	}
}

// newCluster starts size servers bootstrapped together. edit, if set, changes
// each config before its server starts.
func newCluster(t *testing.T, size int, edit func(*Config)) []*testNode {
	t.Helper()
	nodes := make([]*testNode, size)
	var boot []Server
	addrs := freeAddrs(t, size)
	for i := range nodes {
		id := fmt.Sprintf("n%d", i+1)
		nodes[i] = &testNode{cfg: testConfig(t, id, addrs[i])}
		boot = append(boot, Server{ID: id, Addr: nodes[i].cfg.BindAddr})
	}
	for _, n := range nodes {
		n.cfg.Bootstrap = boot
		if edit != nil {
			edit(&n.cfg)
		}
		n.start(t)
	}
	return nodes
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// leader waits until exactly one running node is leader and every running node
// agrees on it, and returns it.
func leader(t *testing.T, nodes []*testNode) *testNode {
	t.Helper()
	var l *testNode
	waitFor(t, 10*time.Second, "a leader all nodes agree on", func() bool {
		l = nil
		for _, n := range running(nodes) {
			if n.r.IsLeader() {
				if l != nil {
					return false
				}
				l = n
			}
		}
		if l == nil {
			return false
		}
		for _, n := range running(nodes) {
			if id, _ := n.r.Leader(); id != l.cfg.ID {
				return false
			}
		}
		return true
	})
	return l
}

func running(nodes []*testNode) []*testNode {
	var out []*testNode
	for _, n := range nodes {
		if n.r.Status().State != "shutdown" {
			out = append(out, n)
		}
	}
	return out
}

func followers(nodes []*testNode, l *testNode) []*testNode {
	var out []*testNode
	for _, n := range running(nodes) {
		if n != l {
			out = append(out, n)
		}
	}
	return out
}

// ctxTimeout returns a context that ends after d or with the test.
func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// apply proposes data on n and fails the test on error.
func apply(t *testing.T, n *testNode, data string) uint64 {
	t.Helper()
	res, index, err := n.r.Apply(ctxTimeout(t, 5*time.Second), []byte(data))
	if err != nil {
		t.Fatalf("Apply(%q) on %s: %v", data, n.cfg.ID, err)
	}
	if res.Outcome.Index != index {
		t.Fatalf("Apply(%q) = result for index %d, index %d", data, res.Outcome.Index, index)
	}
	return index
}

// waitApplied waits until every running node has applied index.
func waitApplied(t *testing.T, nodes []*testNode, index uint64) {
	t.Helper()
	for _, n := range running(nodes) {
		if err := n.r.WaitApplied(ctxTimeout(t, 10*time.Second), index); err != nil {
			t.Fatalf("WaitApplied(%d) on %s: %v", index, n.cfg.ID, err)
		}
	}
}

// sameData fails the test unless every running node applied want.
func sameData(t *testing.T, nodes []*testNode, want []string) {
	t.Helper()
	for _, n := range running(nodes) {
		if got := n.sm.data(); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s applied %q, want %q", n.cfg.ID, got, want)
		}
	}
}
