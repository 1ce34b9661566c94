// Tests of txlog's patch: Config.ParallelLeaderAppend (PATCHES.md).

package raft

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedStore holds or fails StoreLogs while told to.
type gatedStore struct {
	LogStore
	mu   sync.Mutex
	hold chan struct{} // StoreLogs waits for it to close while non-nil
	fail error         // StoreLogs returns it while non-nil
}

func (g *gatedStore) StoreLogs(logs []*Log) error {
	g.mu.Lock()
	hold, fail := g.hold, g.fail
	g.mu.Unlock()
	if hold != nil {
		<-hold
	}
	if fail != nil {
		return fail
	}
	return g.LogStore.StoreLogs(logs)
}

func (g *gatedStore) StoreLog(l *Log) error { return g.StoreLogs([]*Log{l}) }

func (g *gatedStore) holdWrites() (release func()) {
	ch := make(chan struct{})
	g.mu.Lock()
	g.hold = ch
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.hold = nil
		g.mu.Unlock()
		close(ch)
	}
}

func (g *gatedStore) failWrites(err error) {
	g.mu.Lock()
	g.fail = err
	g.mu.Unlock()
}

// gatedCluster starts three servers, each on a gatedStore.
func gatedCluster(t *testing.T, parallel bool) (*cluster, map[*Raft]*gatedStore) {
	t.Helper()
	conf := inmemConfig(t)
	conf.ParallelLeaderAppend = parallel
	var gates []*gatedStore
	c := MakeClusterCustom(t, &MakeClusterOpts{
		Peers:     3,
		Bootstrap: true,
		Conf:      conf,
		WrapLogStore: func(i int, s LogStore) LogStore {
			g := &gatedStore{LogStore: s}
			gates = append(gates, g)
			return g
		},
	})
	byRaft := make(map[*Raft]*gatedStore)
	for i, r := range c.rafts {
		byRaft[r] = gates[i]
	}
	// Let the leader's first entry commit, so the test's entry is the only
	// one in flight.
	if err := c.Leader().Barrier(time.Second).Error(); err != nil {
		t.Fatalf("barrier: %v", err)
	}
	return c, byRaft
}

func lastIndexOf(t *testing.T, s LogStore) uint64 {
	t.Helper()
	i, err := s.LastIndex()
	if err != nil {
		t.Fatalf("last index: %v", err)
	}
	return i
}

// applyAsync applies cmd on r and sends the result when the future is done.
func applyAsync(r *Raft, cmd string) (ApplyFuture, chan error) {
	f := r.Apply([]byte(cmd), 0)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	return f, done
}

// With ParallelLeaderAppend the followers receive and write an entry while the
// leader's own write is held, but the entry commits only once it is written.
func TestParallelLeaderAppend_SendsWhileLeaderWrites(t *testing.T) {
	c, gates := gatedCluster(t, true)
	defer c.Close()
	leader := c.Leader()
	want := leader.getLastIndex() + 1
	release := gates[leader].holdWrites()
	defer func() {
		if release != nil {
			release()
		}
	}()

	_, done := applyAsync(leader, "x")
	deadline := time.Now().Add(5 * time.Second)
	for _, f := range c.Followers() {
		for lastIndexOf(t, gates[f]) < want {
			if time.Now().After(deadline) {
				t.Fatalf("follower %s did not write index %d while the leader's write was held", f.localID, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	select {
	case err := <-done:
		t.Fatalf("apply finished (err %v) before the leader wrote the entry", err)
	case <-time.After(200 * time.Millisecond):
	}
	if ci := leader.getCommitIndex(); ci >= want {
		t.Fatalf("commit index %d reached the unwritten entry %d", ci, want)
	}
	if got := lastIndexOf(t, gates[leader]); got >= want {
		t.Fatalf("leader's store holds index %d while its write is held", got)
	}

	release()
	release = nil
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("apply did not finish after the leader's write")
	}
	c.WaitForReplication(1)
	c.EnsureSame(t)
}

// Without it, nothing is sent before the leader's write: the test above would
// fail on this behaviour.
func TestParallelLeaderAppend_OffSendsAfterLeaderWrites(t *testing.T) {
	c, gates := gatedCluster(t, false)
	defer c.Close()
	leader := c.Leader()
	want := leader.getLastIndex() + 1
	release := gates[leader].holdWrites()

	_, done := applyAsync(leader, "x")
	time.Sleep(300 * time.Millisecond)
	for _, f := range c.Followers() {
		if got := lastIndexOf(t, gates[f]); got >= want {
			release()
			t.Fatalf("follower %s wrote index %d before the leader did", f.localID, got)
		}
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// A leader whose write fails after it may have sent the entries does not go
// on: leaderWriteFailed (a panic outside tests) is called, and the apply fails.
func TestParallelLeaderAppend_WriteFailureStops(t *testing.T) {
	var mu sync.Mutex
	var failed []error
	orig := leaderWriteFailed
	leaderWriteFailed = func(r *Raft, err error) {
		mu.Lock()
		failed = append(failed, err)
		mu.Unlock()
	}
	defer func() { leaderWriteFailed = orig }()

	c, gates := gatedCluster(t, true)
	defer c.Close()
	leader := c.Leader()
	broken := errors.New("disk gone")
	gates[leader].failWrites(broken)

	_, done := applyAsync(leader, "x")
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("apply succeeded on a leader whose write failed")
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("apply did not finish")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(failed) == 0 || !errors.Is(failed[0], broken) {
		t.Fatalf("leaderWriteFailed got %v, want %v", failed, broken)
	}
	gates[leader].failWrites(nil)
}

// The commit index never passes the leader's written index once capped.
func TestCommitment_capAtLeaderWritten(t *testing.T) {
	commitCh := make(chan struct{}, 1)
	c := newCommitment(commitCh, voters(3), 4)
	c.capAtLeaderWritten(3)
	c.match("s2", 10)
	c.match("s3", 10)
	// The followers' quorum is 10, but the cap keeps it at 3, below the
	// term's start: nothing commits.
	if got := c.getCommitIndex(); got != 0 {
		t.Fatalf("commit index %d with the leader at 3 and the term starting at 4", got)
	}
	drainNotifyCh(commitCh)
	c.leaderWrote(7)
	if got := c.getCommitIndex(); got != 7 {
		t.Fatalf("commit index %d, want 7 (the leader's written index)", got)
	}
	if !drainNotifyCh(commitCh) {
		t.Fatalf("expected commit notify")
	}
	c.leaderWrote(12)
	if got := c.getCommitIndex(); got != 10 {
		t.Fatalf("commit index %d, want 10 (the followers' match)", got)
	}
	c.leaderWrote(5) // never back
	if got := c.getCommitIndex(); got != 10 {
		t.Fatalf("commit index %d after an older write, want 10", got)
	}
	// Without the cap, the followers alone make the quorum.
	u := newCommitment(make(chan struct{}, 1), voters(3), 4)
	u.match("s2", 10)
	u.match("s3", 10)
	if got := u.getCommitIndex(); got != 10 {
		t.Fatalf("uncapped commit index %d, want 10", got)
	}
}

// Outside tests, leaderWriteFailed does not return: it panics with the error.
func TestParallelLeaderAppend_WriteFailurePanics(t *testing.T) {
	r := &Raft{logger: newTestLogger(t)}
	defer func() {
		v := recover()
		msg, ok := v.(string)
		if !ok || !strings.Contains(msg, "disk gone") {
			t.Fatalf("recovered %v, want a panic naming the write error", v)
		}
	}()
	leaderWriteFailed(r, errors.New("disk gone"))
	t.Fatal("leaderWriteFailed returned")
}
