package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/store"
)

func TestApplyReplicates(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)

	var want []string
	var last uint64
	for i := range 5 {
		d := fmt.Sprintf("e%d", i)
		index := apply(t, l, d)
		if index <= last {
			t.Fatalf("Apply(%q) index = %d, want > %d", d, index, last)
		}
		last = index
		want = append(want, d)
	}
	waitApplied(t, nodes, last)
	sameData(t, nodes, want)

	for _, f := range followers(nodes, l) {
		if _, _, err := f.r.Apply(ctxTimeout(t, time.Second), []byte("x")); !errors.Is(err, ErrNotLeader) {
			t.Errorf("Apply on follower %s: err = %v, want ErrNotLeader", f.cfg.ID, err)
		}
		if _, err := f.r.ReadIndex(ctxTimeout(t, time.Second)); !errors.Is(err, ErrNotLeader) {
			t.Errorf("ReadIndex on follower %s: err = %v, want ErrNotLeader", f.cfg.ID, err)
		}
		st := f.r.Status()
		if st.State != "follower" || st.LeaderID != l.cfg.ID || st.LeaderAddr != l.cfg.BindAddr {
			t.Errorf("Status() on %s = %+v, want follower of %s at %s", f.cfg.ID, st, l.cfg.ID, l.cfg.BindAddr)
		}
	}

	read, err := l.r.ReadIndex(ctxTimeout(t, 5*time.Second))
	if err != nil {
		t.Fatalf("ReadIndex on leader: %v", err)
	}
	if read < last {
		t.Errorf("ReadIndex() = %d, want >= %d", read, last)
	}
	if applied := l.r.AppliedIndex(); applied < read {
		t.Errorf("AppliedIndex() = %d after ReadIndex() = %d", applied, read)
	}
	st := l.r.Status()
	if st.State != "leader" || st.CommitIndex < last || st.AppliedIndex < last || st.LastIndex < last {
		t.Errorf("Status() on leader = %+v, want leader with indexes >= %d", st, last)
	}
}

func TestReadIndexOnNewLeader(t *testing.T) {
	// Right after an election the last entries are raft's no-op and barrier,
	// which the state machine never sees; ReadIndex must not wait for them.
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)
	read, err := l.r.ReadIndex(ctxTimeout(t, 5*time.Second))
	if err != nil {
		t.Fatalf("ReadIndex on new leader: %v", err)
	}
	if applied := l.r.AppliedIndex(); applied < read {
		t.Errorf("AppliedIndex() = %d after ReadIndex() = %d", applied, read)
	}
	// The index is one the followers reach too.
	waitApplied(t, nodes, read)
}

func TestApplyConcurrentBatches(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)

	const n = 200
	var wg sync.WaitGroup
	indexes := make([]uint64, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, indexes[i], errs[i] = l.r.Apply(ctxTimeout(t, 10*time.Second), fmt.Appendf(nil, "c%d", i))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
	}
	sorted := slices.Sorted(slices.Values(indexes))
	if len(slices.Compact(sorted)) != n {
		t.Errorf("Apply returned duplicate indexes: %v", indexes)
	}
	waitApplied(t, nodes, slices.Max(indexes))
	if got := len(l.sm.data()); got != n {
		t.Errorf("leader applied %d commands, want %d", got, n)
	}
	if maxBatch, _ := l.sm.stats(); maxBatch < 2 {
		t.Errorf("largest batch applied = %d, want concurrent proposals batched", maxBatch)
	}
}

func TestFailover(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	old := leader(t, nodes)
	index := apply(t, old, "before")
	waitApplied(t, nodes, index)

	f := followers(nodes, old)[0]
	changes, cancel := f.r.Subscribe()
	defer cancel()
	if c := <-changes; c.LeaderID != old.cfg.ID || c.Self {
		t.Fatalf("first LeaderChange = %+v, want the current leader %s", c, old.cfg.ID)
	}

	old.stop(t)
	l := leader(t, nodes)
	if l == old {
		t.Fatalf("closed leader is still leader")
	}
	timeout := time.After(10 * time.Second)
	for {
		var c LeaderChange
		select {
		case c = <-changes:
		case <-timeout:
			t.Fatalf("no LeaderChange naming the new leader %s", l.cfg.ID)
		}
		if c.LeaderID == l.cfg.ID {
			if c.Self != (l == f) || c.LeaderAddr != l.cfg.BindAddr {
				t.Errorf("LeaderChange = %+v, want Self %v and addr %s", c, l == f, l.cfg.BindAddr)
			}
			break
		}
	}

	index = apply(t, l, "after")
	waitApplied(t, nodes, index)
	sameData(t, nodes, []string{"before", "after"})
}

func TestTransferLeadership(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)
	target := followers(nodes, l)[0]

	got, err := l.r.TransferLeadership(ctxTimeout(t, 10*time.Second), target.cfg.ID)
	if err != nil {
		t.Fatalf("TransferLeadership(%s): %v", target.cfg.ID, err)
	}
	if got != target.cfg.ID {
		t.Errorf("TransferLeadership(%s) = %s", target.cfg.ID, got)
	}
	if l2 := leader(t, nodes); l2 != target {
		t.Errorf("leader after transfer = %s, want %s", l2.cfg.ID, target.cfg.ID)
	}
	if _, err := l.r.TransferLeadership(ctxTimeout(t, time.Second), ""); !errors.Is(err, ErrNotLeader) {
		t.Errorf("TransferLeadership on old leader: err = %v, want ErrNotLeader", err)
	}
	if _, err := target.r.TransferLeadership(ctxTimeout(t, time.Second), "nope"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("TransferLeadership(nope): err = %v, want ErrUnknownServer", err)
	}

	// With no target, raft picks the most up-to-date voter.
	got, err = target.r.TransferLeadership(ctxTimeout(t, 10*time.Second), "")
	if err != nil {
		t.Fatalf("TransferLeadership(\"\"): %v", err)
	}
	if got == target.cfg.ID || got == "" {
		t.Errorf("TransferLeadership(\"\") = %q, want another server", got)
	}
	apply(t, leader(t, nodes), "x")
}

func TestJoinRemove(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)
	index := apply(t, l, "a")

	n4 := &testNode{cfg: testConfig(t, "n4", "127.0.0.1:0")}
	n4.start(t)
	if id, _ := n4.r.Leader(); id != "" {
		t.Fatalf("new node knows a leader %s before it joined", id)
	}
	bound := n4.r.Addr()

	for _, f := range followers(nodes, l) {
		if err := f.r.Join(ctxTimeout(t, time.Second), "n4", bound, true); !errors.Is(err, ErrNotLeader) {
			t.Errorf("Join on follower %s: err = %v, want ErrNotLeader", f.cfg.ID, err)
		}
	}
	if err := l.r.Join(ctxTimeout(t, 10*time.Second), "n4", bound, true); err != nil {
		t.Fatalf("Join(n4): %v", err)
	}
	all := append(slices.Clone(nodes), n4)
	waitApplied(t, all, index)
	index = apply(t, l, "b")
	waitApplied(t, all, index)
	sameData(t, all, []string{"a", "b"})

	waitFor(t, 10*time.Second, "n4 promoted to voter", func() bool {
		m := members(t, l)
		return len(m) == 4 && m["n4"].Suffrage == "voter" && m["n4"].Addr == bound && m[l.cfg.ID].Leader
	})
	if err := l.r.Join(ctxTimeout(t, 10*time.Second), "n4", bound, true); err != nil {
		t.Errorf("Join(n4) again: %v", err)
	}
	if err := l.r.Join(ctxTimeout(t, 10*time.Second), "n4", bound, false); err != nil {
		t.Errorf("Join(n4, nonvoter): %v", err)
	}
	if m := members(t, l); m["n4"].Suffrage != "nonvoter" {
		t.Errorf("n4 after Join as nonvoter = %+v", m["n4"])
	}

	if err := l.r.Remove(ctxTimeout(t, 10*time.Second), "n4"); err != nil {
		t.Fatalf("Remove(n4): %v", err)
	}
	if m := members(t, l); len(m) != 3 {
		t.Errorf("members after Remove = %v", m)
	}
	n4.stop(t) // it may never learn it was removed: the leader stops replicating to it
	if err := l.r.Remove(ctxTimeout(t, 10*time.Second), "n4"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("Remove(n4) again: err = %v, want ErrUnknownServer", err)
	}
	apply(t, l, "c")
}

func members(t *testing.T, n *testNode) map[string]Member {
	t.Helper()
	ms, err := n.r.Members(ctxTimeout(t, time.Second))
	if err != nil {
		t.Fatalf("Members on %s: %v", n.cfg.ID, err)
	}
	out := make(map[string]Member)
	for _, m := range ms {
		out[m.ID] = m
	}
	return out
}

func TestSnapshotCatchUp(t *testing.T) {
	nodes := newCluster(t, 3, func(c *Config) {
		// raft-boltdb: raft-wal drops compacted entries only with whole segments
		// (64 MiB), so with it the leader would still send n4 the log.
		c.LogStore = LogStoreBolt
		c.SnapshotThreshold = 16
		c.TrailingLogs = 4
		c.SnapshotInterval = 50 * time.Millisecond
	})
	l := leader(t, nodes)
	var want []string
	var index uint64
	for i := range 64 {
		d := fmt.Sprintf("s%d", i)
		index = apply(t, l, d)
		want = append(want, d)
	}
	// Snapshots happen on their own at this threshold; force one so the test
	// does not depend on the interval's jitter.
	if err := l.r.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}

	n4 := &testNode{cfg: testConfig(t, "n4", "127.0.0.1:0")}
	n4.start(t)
	if err := l.r.Join(ctxTimeout(t, 10*time.Second), "n4", n4.r.Addr(), true); err != nil {
		t.Fatalf("Join(n4): %v", err)
	}
	if err := n4.r.WaitApplied(ctxTimeout(t, 10*time.Second), index); err != nil {
		t.Fatalf("WaitApplied on n4: %v", err)
	}
	if _, restores := n4.sm.stats(); restores == 0 {
		t.Errorf("n4 caught up without restoring a snapshot")
	}
	sameData(t, []*testNode{n4}, want)
}

func TestRestartKeepsState(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)
	var want []string
	var index uint64
	for i := range 10 {
		d := fmt.Sprintf("r%d", i)
		index = apply(t, l, d)
		want = append(want, d)
	}
	waitApplied(t, nodes, index)

	f := followers(nodes, l)[0]
	// Snapshot the follower, so that the restart restores from it and then
	// replays the log after it.
	if err := f.r.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	index = apply(t, l, "r10")
	want = append(want, "r10")
	waitApplied(t, nodes, index)
	before := f.r.Status()
	f.stop(t)
	waitFor(t, 10*time.Second, "the leader to see the stopped follower unreachable", func() bool {
		return members(t, l)[f.cfg.ID].Unreachable
	})

	index = apply(t, l, "while-down")
	want = append(want, "while-down")

	f.start(t) // same Dir and Bootstrap; a fresh, empty state machine
	if _, restores := f.sm.stats(); restores != 1 {
		t.Errorf("restart restored %d snapshots, want 1", restores)
	}
	if st := f.r.Status(); st.LastIndex < before.LastIndex || st.Term < before.Term {
		t.Errorf("Status() after restart = %+v, want log and term kept from %+v", st, before)
	}
	waitApplied(t, nodes, index)
	sameData(t, nodes, want)
	if id, _ := f.r.Leader(); id != l.cfg.ID {
		t.Errorf("restarted node follows %q, want %s", id, l.cfg.ID)
	}
	waitFor(t, 10*time.Second, "the restarted follower reachable again", func() bool {
		m := members(t, l)[f.cfg.ID]
		return !m.Unreachable && m.LastContact == 0
	})
}

// A node whose state machine kept its state across the restart (at or past the
// latest snapshot) must not restore the snapshot over it: at scale that copy is
// most of a restart. It replays only the entries after its applied index.
func TestRestartSkipsSnapshotRestore(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)
	var want []string
	var index uint64
	for i := range 10 {
		d := fmt.Sprintf("k%d", i)
		index = apply(t, l, d)
		want = append(want, d)
	}
	waitApplied(t, nodes, index)
	f := followers(nodes, l)[0]
	if err := f.r.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	index = apply(t, l, "after-snapshot")
	want = append(want, "after-snapshot")
	waitApplied(t, nodes, index)
	f.stop(t)

	index = apply(t, l, "while-down")
	want = append(want, "while-down")
	f.resume(t)
	waitApplied(t, nodes, index)
	if _, restores := f.sm.stats(); restores != 0 {
		t.Errorf("restart with a current state machine restored %d snapshots, want 0", restores)
	}
	sameData(t, nodes, want)
}

func TestApplyManyKeepsOrder(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)
	var datas [][]byte
	var want []string
	for i := range 50 {
		d := fmt.Sprintf("m%02d", i)
		datas = append(datas, []byte(d))
		want = append(want, d)
	}
	out := l.r.ApplyMany(ctxTimeout(t, 10*time.Second), datas)
	for i, a := range out {
		if a.Err != nil {
			t.Fatalf("ApplyMany entry %d: %v", i, a.Err)
		}
		if i > 0 && a.Index <= out[i-1].Index {
			t.Errorf("entry %d at index %d, not after entry %d at %d", i, a.Index, i-1, out[i-1].Index)
		}
	}
	waitApplied(t, nodes, out[len(out)-1].Index)
	sameData(t, nodes, want)

	f := followers(nodes, l)[0]
	for i, a := range f.r.ApplyMany(ctxTimeout(t, time.Second), datas[:3]) {
		if !errors.Is(a.Err, ErrNotLeader) {
			t.Errorf("ApplyMany on a follower, entry %d: err = %v, want ErrNotLeader", i, a.Err)
		}
	}
	past, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	for i, a := range l.r.ApplyMany(past, datas[:3]) {
		if !errors.Is(a.Err, context.DeadlineExceeded) || OutcomeUnknown(a.Err) {
			t.Errorf("ApplyMany past its deadline, entry %d: err = %v, want DeadlineExceeded, not proposed", i, a.Err)
		}
	}
}

func TestAddressProvider(t *testing.T) {
	// The configuration holds names that do not resolve; the provider maps them
	// to the real addresses, as a fault-injecting proxy would.
	real := make(map[string]string)
	var mu sync.Mutex
	provider := func(id string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if a, ok := real[id]; ok {
			return a, nil
		}
		return "", fmt.Errorf("no address for %s", id)
	}
	nodes := newCluster(t, 3, func(c *Config) {
		mu.Lock()
		real[c.ID] = c.BindAddr
		mu.Unlock()
		for i := range c.Bootstrap {
			c.Bootstrap[i].Addr = c.Bootstrap[i].ID + ".invalid:1"
		}
		c.AddressProvider = provider
	})
	l := leader(t, nodes)
	index := apply(t, l, "via provider")
	waitApplied(t, nodes, index)
}

func TestApplyContext(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)

	done, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := l.r.Apply(done, []byte("x"))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) || OutcomeUnknown(err) {
		t.Errorf("Apply with a done ctx: err = %v, want context.Canceled, not proposed", err)
	}

	// Without a quorum the entry can never commit: the outcome stays unknown.
	for _, f := range followers(nodes, l) {
		f.stop(t)
	}
	_, _, err = l.r.Apply(ctxTimeout(t, 2*time.Second), []byte("y"))
	if !OutcomeUnknown(err) {
		t.Errorf("Apply without quorum: err = %v, want an unknown outcome", err)
	}
	if !errors.Is(err, ErrTimeout) && !errors.Is(err, ErrLeadershipLost) && !errors.Is(err, ErrNotLeader) {
		t.Errorf("Apply without quorum: err = %v, want ErrTimeout or ErrLeadershipLost", err)
	}
}

func TestFatal(t *testing.T) {
	boom := errors.New("disk on fire")
	var failing atomic.Bool
	sm := &fakeMachine{ApplyFunc: func([]store.Entry) error {
		if failing.Load() {
			return boom
		}
		return nil
	}}
	fatal := make(chan error, 1)
	cfg := testConfig(t, "solo", freeAddrs(t, 1)[0])
	cfg.Bootstrap = []Server{{ID: "solo", Addr: cfg.BindAddr}}
	cfg.Fatal = func(err error) { fatal <- err }
	r, err := open(cfg, sm)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	n := &testNode{cfg: cfg, sm: sm, r: r}
	leader(t, []*testNode{n})
	apply(t, n, "ok")

	failing.Store(true)
	_, _, err = r.Apply(ctxTimeout(t, 5*time.Second), []byte("bad"))
	if !errors.Is(err, ErrStateMachine) || !errors.Is(err, boom) {
		t.Errorf("Apply with a failing state machine: err = %v, want ErrStateMachine wrapping %v", err, boom)
	}
	select {
	case err := <-fatal:
		if !errors.Is(err, ErrStateMachine) || !errors.Is(err, boom) {
			t.Errorf("Fatal(%v), want ErrStateMachine wrapping %v", err, boom)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Fatal not called")
	}

	// Nothing is applied after the failure, even once the machine recovers.
	failing.Store(false)
	applied := r.AppliedIndex()
	if _, _, err := r.Apply(ctxTimeout(t, 5*time.Second), []byte("later")); !errors.Is(err, ErrStateMachine) {
		t.Errorf("Apply after the failure: err = %v, want ErrStateMachine", err)
	}
	if got := r.AppliedIndex(); got != applied {
		t.Errorf("AppliedIndex() = %d after the failure, want %d", got, applied)
	}
	if got := sm.data(); len(got) != 1 {
		t.Errorf("state machine applied %q, want only the entry before the failure", got)
	}
}

func TestClose(t *testing.T) {
	nodes := newCluster(t, 1, nil)
	n := leader(t, nodes)
	changes, _ := n.r.Subscribe()
	for _, c := range [2]string{"first", "second"} {
		if err := n.r.Close(); err != nil {
			t.Errorf("%s Close: %v", c, err)
		}
	}
	for range changes {
	} // closed by Close
	ctx := ctxTimeout(t, time.Second)
	if _, _, err := n.r.Apply(ctx, []byte("x")); !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrShutdown) {
		t.Errorf("Apply after Close: err = %v, want ErrShutdown or ErrNotLeader", err)
	}
	if _, err := n.r.ReadIndex(ctx); !errors.Is(err, ErrNotLeader) && !errors.Is(err, ErrShutdown) {
		t.Errorf("ReadIndex after Close: err = %v", err)
	}
	if err := n.r.WaitApplied(ctx, 1<<40); !errors.Is(err, ErrShutdown) {
		t.Errorf("WaitApplied after Close: err = %v, want ErrShutdown", err)
	}
	if ch, _ := n.r.Subscribe(); ch != nil {
		if _, ok := <-ch; ok {
			t.Errorf("Subscribe after Close delivered a value")
		}
	}
	if st := n.r.Status(); st.State != "shutdown" {
		t.Errorf("Status().State after Close = %q", st.State)
	}
	// The Dir can be opened again.
	n.start(t)
	leader(t, nodes)
}

// TestCurrentAfterIdleLeaderChange: after a leader change with no write since,
// the last committed entries are the new leader's no-op and a read's barrier,
// which no state machine sees. Every server's Status must still say it is
// current to the commit index (node's /readyz goes by it), and WaitCurrent for
// the commit index must return, where AppliedIndex and WaitApplied stay short.
func TestCurrentAfterIdleLeaderChange(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)
	last := apply(t, l, "before")
	waitApplied(t, nodes, last)
	target := followers(nodes, l)[0]
	if _, err := l.r.TransferLeadership(ctxTimeout(t, 10*time.Second), target.cfg.ID); err != nil {
		t.Fatalf("TransferLeadership: %v", err)
	}
	l2 := leader(t, nodes)
	if _, err := l2.r.ReadIndex(ctxTimeout(t, 5*time.Second)); err != nil { // commits the term's barrier
		t.Fatalf("ReadIndex on the new leader: %v", err)
	}
	commit := l2.r.Status().CommitIndex
	if commit < last+2 {
		t.Fatalf("commit index %d after the no-op and the barrier, want at least %d", commit, last+2)
	}
	for _, n := range nodes {
		deadline := time.Now().Add(5 * time.Second)
		for {
			st := n.r.Status()
			if st.CommitIndex >= commit && st.AppliedIndex == st.CommitIndex {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: Status() = %+v: the state machine is not current to the commit index", n.cfg.ID, st)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := n.r.AppliedIndex(); got != last {
			t.Errorf("%s: AppliedIndex() = %d, want %d, the last entry the state machine saw", n.cfg.ID, got, last)
		}
		if err := n.r.WaitCurrent(ctxTimeout(t, time.Second), commit); err != nil {
			t.Errorf("%s: WaitCurrent(%d): %v", n.cfg.ID, commit, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		if err := n.r.WaitApplied(ctx, commit); !errors.Is(err, ErrTimeout) {
			t.Errorf("%s: WaitApplied(%d) = %v, want a timeout: no entry the state machine sees is there", n.cfg.ID, commit, err)
		}
		cancel()
	}
	// The next write moves both on.
	next := apply(t, l2, "after")
	waitApplied(t, nodes, next)
	for _, n := range nodes {
		if err := n.r.WaitCurrent(ctxTimeout(t, 5*time.Second), next); err != nil {
			t.Errorf("%s: WaitCurrent(%d) after a write: %v", n.cfg.ID, next, err)
		}
	}
}
