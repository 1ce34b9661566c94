package alert

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// memEpisodes is an Episodes in memory, shared by the Managers of a test
// as Redis is by the nodes of a cluster. TTLs are ignored; closed keys
// kept with keep > 0 stay closed.
type memEpisodes struct {
	mu   sync.Mutex
	keys map[string]string // "open" or "closed"
	err  error
}

var _ Episodes = (*memEpisodes)(nil)

func (e *memEpisodes) Open(_ context.Context, key string, _ time.Duration) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return false, e.err
	}
	if e.keys == nil {
		e.keys = map[string]string{}
	}
	if _, ok := e.keys[key]; ok {
		return false, nil
	}
	e.keys[key] = "open"
	return true, nil
}

func (e *memEpisodes) Keep(context.Context, string, time.Duration) error { return e.err }

func (e *memEpisodes) Close(_ context.Context, key string, keep time.Duration) (bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return false, e.err
	}
	if e.keys[key] != "open" {
		return false, nil
	}
	if keep > 0 {
		e.keys[key] = "closed"
	} else {
		delete(e.keys, key)
	}
	return true, nil
}

// oneCopyPerEpisode is the check of the alert-copies tests: every
// cluster-wide episode was sent firing at most once and resolved at most
// once, whichever nodes saw it.
func oneCopyPerEpisode(evs []Event) error {
	n := map[string]int{}
	var errs []error
	for _, e := range evs {
		if e.Scope != ScopeCluster {
			continue
		}
		k := fmt.Sprintf("%s %v %s %s", e.Alert, e.Labels, e.Episode, e.Status)
		if n[k]++; n[k] == 2 {
			errs = append(errs, fmt.Errorf("%s sent more than once (again by %s)", k, e.Node))
		}
	}
	return errors.Join(errs...)
}

// twoNodesLeaderless runs n1 and n3 through one leaderless episode after
// term 5 (both see it, as when the lower voter's probe cannot tell) and a
// leader coming back, and returns every event they sent.
func twoNodesLeaderless(t *testing.T, eps Episodes) []Event {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ms []*Manager
	for _, id := range []string{"n1", "n3"} {
		m, err := New(Config{Node: id, Episodes: eps})
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	var all []Event
	for i := range 10 {
		now := start.Add(time.Duration(i) * time.Second)
		for _, m := range ms {
			all = append(all, m.Step(Snapshot{Now: now, LeaderlessSince: start, LeaderTerm: 5, Term: 5 + uint64(i), DiskFreeRatio: -1})...)
		}
	}
	for _, m := range ms {
		all = append(all, m.Step(Snapshot{Now: start.Add(10 * time.Second), Leader: "n2", Term: 15, DiskFreeRatio: -1})...)
	}
	return all
}

// TestEpisodeDedup: two nodes that both see one leaderless episode page
// once with a shared Episodes; without it (the bad case the check must
// catch) they page twice.
func TestEpisodeDedup(t *testing.T) {
	if err := oneCopyPerEpisode(twoNodesLeaderless(t, nil)); err == nil {
		t.Fatal("two nodes without Episodes: the check saw one copy; it must see two")
	}
	evs := twoNodesLeaderless(t, &memEpisodes{})
	if err := oneCopyPerEpisode(evs); err != nil {
		t.Fatal(err)
	}
	want(t, "with episodes", evs, NoLeader+":"+Firing, NoLeader+":"+Resolved)
	if evs[0].Episode != "after-term-5" || evs[0].Scope != ScopeCluster {
		t.Fatalf("firing %+v", evs[0])
	}
}

// TestEpisodeStoreDownSends: when the store does not answer, a node sends
// (two pages rather than none).
func TestEpisodeStoreDownSends(t *testing.T) {
	evs := twoNodesLeaderless(t, &memEpisodes{err: errors.New("redis down")})
	want(t, "store down", evs, NoLeader+":"+Firing, NoLeader+":"+Firing, NoLeader+":"+Resolved, NoLeader+":"+Resolved)
}

// TestLateCopyOfClosedEpisode: a node that comes back with the same
// episode after it was resolved does not page again.
func TestLateCopyOfClosedEpisode(t *testing.T) {
	eps := &memEpisodes{}
	evs := twoNodesLeaderless(t, eps)
	m, _ := New(Config{Node: "n2", Episodes: eps})
	start := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	for i := range 10 {
		evs = append(evs, m.Step(Snapshot{Now: start.Add(time.Duration(i) * time.Second), LeaderlessSince: start, LeaderTerm: 5, DiskFreeRatio: -1})...)
	}
	want(t, "late copy", evs, NoLeader+":"+Firing, NoLeader+":"+Resolved)
}

// TestPausedNodeDoesNotFireStale: a node whose samples stop for 8s (SIGSTOP)
// and that comes back leaderless, with a leaderless time that began before
// the pause, does not fire at once from that stale view; it needs the whole
// hold of fresh evidence.
func TestPausedNodeDoesNotFireStale(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := newTestManager(t)
	want(t, "leader", m.Step(Snapshot{Now: c.t, Leader: "n1", IsLeader: true, DiskFreeRatio: -1}))
	lost := c.add(time.Second)
	want(t, "just lost", m.Step(Snapshot{Now: lost, LeaderlessSince: lost, DiskFreeRatio: -1}))
	c.add(8 * time.Second) // stopped
	for range 6 {          // resumed, then 5s of fresh evidence: not yet
		want(t, "resumed", m.Step(Snapshot{Now: c.add(time.Second), LeaderlessSince: lost, DiskFreeRatio: -1}))
	}
	evs := m.Step(Snapshot{Now: c.add(time.Second), LeaderlessSince: lost, DiskFreeRatio: -1})
	want(t, "fresh evidence", evs, NoLeader+":"+Firing)

	// The same for an unreachable member on a leader.
	m = newTestManager(t)
	c.add(time.Second)
	want(t, "leader", m.Step(Snapshot{Now: c.t, Leader: "n1", IsLeader: true, DiskFreeRatio: -1}))
	c.add(20 * time.Second)
	unr := map[string]time.Duration{"n3": 21 * time.Second}
	want(t, "resumed leader", m.Step(Snapshot{Now: c.add(time.Second), Leader: "n1", IsLeader: true, Unreachable: unr, DiskFreeRatio: -1}))
}

// TestUnreachableGoesOnAcrossLeaders: a member unreachable across a change
// of leader is one episode: the first leader sends the firing, steps down
// without resolving, and the next leader resolves it.
func TestUnreachableGoesOnAcrossLeaders(t *testing.T) {
	eps := &memEpisodes{}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := New(Config{Node: "n1", Episodes: eps})
	b, _ := New(Config{Node: "n2", Episodes: eps})
	unr := map[string]time.Duration{"n3": 11 * time.Second}
	var evs []Event
	evs = append(evs, a.Step(Snapshot{Now: now, Leader: "n1", IsLeader: true, Term: 2, Unreachable: unr, DiskFreeRatio: -1})...)
	evs = append(evs, a.Step(Snapshot{Now: now.Add(time.Second), Leader: "n2", Term: 3, DiskFreeRatio: -1})...)
	evs = append(evs, b.Step(Snapshot{Now: now.Add(time.Second), Leader: "n2", IsLeader: true, Term: 3, Unreachable: unr, DiskFreeRatio: -1})...)
	evs = append(evs, b.Step(Snapshot{Now: now.Add(2 * time.Second), Leader: "n2", IsLeader: true, Term: 3, DiskFreeRatio: -1})...)
	want(t, "across leaders", evs, MemberUnreachable+":"+Firing, MemberUnreachable+":"+Resolved)
	if evs[0].Node != "n1" || evs[1].Node != "n2" {
		t.Fatalf("sent by %s then %s", evs[0].Node, evs[1].Node)
	}
}

func TestBackupStale(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m, _ := New(Config{Node: "n1", Thresholds: Thresholds{BackupStale: 10 * time.Second}})
	want(t, "fresh", m.Step(Snapshot{Now: now, BackupLast: now.Add(-10 * time.Second), DiskFreeRatio: -1}))
	evs := m.Step(Snapshot{Now: now.Add(time.Second), BackupLast: now.Add(-10 * time.Second), DiskFreeRatio: -1})
	want(t, "stale", evs, BackupStale+":"+Firing)
	if evs[0].Scope != ScopeNode || !evs[0].Since.Equal(now) {
		t.Fatalf("%+v", evs[0])
	}
	want(t, "off", m.Step(Snapshot{Now: now.Add(2 * time.Second), DiskFreeRatio: -1}), BackupStale+":"+Resolved)
}

// TestSweepResolvesHandedOverEpisode: a leader that took over while a
// member was down, and never saw it unreachable itself, resolves the
// episode the earlier leader left open once the member answers it, and not
// while it does not.
func TestSweepResolvesHandedOverEpisode(t *testing.T) {
	eps := &memEpisodes{}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	up := false
	a, _ := New(Config{Node: "n1", Episodes: eps})
	b, _ := New(Config{Node: "n2", Episodes: eps, Reachable: func(context.Context, string) bool { return up }})
	var evs []Event
	evs = append(evs, a.Step(Snapshot{Now: now, Leader: "n1", IsLeader: true, Members: []string{"n2", "n3"}, Unreachable: map[string]time.Duration{"n3": 11 * time.Second}, DiskFreeRatio: -1})...)
	evs = append(evs, a.Step(Snapshot{Now: now.Add(time.Second), Leader: "n2", DiskFreeRatio: -1})...)
	for i := range 3 { // n3 still down, not yet flagged by n2's heartbeats
		evs = append(evs, b.Step(Snapshot{Now: now.Add(time.Duration(2+i) * time.Second), Leader: "n2", IsLeader: true, Members: []string{"n1", "n3"}, DiskFreeRatio: -1})...)
	}
	want(t, "member still down", evs, MemberUnreachable+":"+Firing)
	up = true
	evs = append(evs, b.Step(Snapshot{Now: now.Add(5 * time.Second), Leader: "n2", IsLeader: true, Members: []string{"n1", "n3"}, DiskFreeRatio: -1})...)
	evs = append(evs, b.Step(Snapshot{Now: now.Add(6 * time.Second), Leader: "n2", IsLeader: true, Members: []string{"n1", "n3"}, DiskFreeRatio: -1})...)
	want(t, "member back", evs, MemberUnreachable+":"+Firing, MemberUnreachable+":"+Resolved)
	if evs[1].Node != "n2" || evs[1].Labels["member"] != "n3" || evs[1].Episode != "member-n3" {
		t.Fatalf("resolved %+v", evs[1])
	}
}

// TestFiringIncludesSilentEpisodes: a node that keeps a cluster episode
// another node sent lists it as firing now, and not once it resolved.
func TestFiringIncludesSilentEpisodes(t *testing.T) {
	eps := &memEpisodes{}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, _ := New(Config{Node: "n1", Episodes: eps})
	b, _ := New(Config{Node: "n3", Episodes: eps})
	s := Snapshot{Now: start.Add(6 * time.Second), LeaderlessSince: start, LeaderTerm: 4, DiskFreeRatio: -1}
	want(t, "n1 sends", a.Step(s), NoLeader+":"+Firing)
	want(t, "n3 joins silently", b.Step(s))
	if f := b.Firing(); len(f) != 1 || f[0].Alert != NoLeader || f[0].Episode != "after-term-4" || !f[0].Since.Equal(start) || f[0].Node != "n3" {
		t.Fatalf("n3 firing now: %+v", f)
	}
	want(t, "leader back", b.Step(Snapshot{Now: start.Add(7 * time.Second), Leader: "n2", DiskFreeRatio: -1}), NoLeader+":"+Resolved)
	if f := b.Firing(); len(f) != 0 {
		t.Fatalf("n3 firing after resolve: %+v", f)
	}
}
