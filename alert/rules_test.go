package alert

import (
	"testing"
	"time"
)

// clock is a fake clock: the tests move it by hand.
type clock struct{ t time.Time }

func (c *clock) add(d time.Duration) time.Time { c.t = c.t.Add(d); return c.t }

func newTestManager(t *testing.T) *Manager {
	t.Helper()
	m, err := New(Config{Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func statuses(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Alert+":"+e.Status)
	}
	return out
}

func want(t *testing.T, step string, got []Event, w ...string) {
	t.Helper()
	g := statuses(got)
	if len(g) != len(w) {
		t.Fatalf("%s: events %v, want %v", step, g, w)
	}
	for i := range w {
		if g[i] != w[i] {
			t.Fatalf("%s: events %v, want %v", step, g, w)
		}
	}
}

func TestNoLeaderFiresOnceAndResolves(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := newTestManager(t)
	since := c.t
	base := Snapshot{Node: "n1", LeaderlessSince: since, DiskFreeRatio: -1}
	for range 5 { // 5s leaderless: not yet
		s := base
		s.Now = c.add(time.Second)
		want(t, "before threshold", m.Step(s))
	}
	s := base
	s.Now = c.add(time.Second)
	evs := m.Step(s)
	want(t, "past threshold", evs, NoLeader+":"+Firing)
	if !evs[0].Since.Equal(since) || !evs[0].FiredAt.Equal(c.t) || !evs[0].At.Equal(c.t) || evs[0].Severity != Critical || evs[0].Node != "n1" {
		t.Fatalf("firing event %+v", evs[0])
	}
	for range 10 {
		s.Now = c.add(time.Second)
		want(t, "still leaderless", m.Step(s))
	}
	evs = m.Step(Snapshot{Now: c.add(time.Second), Leader: "n2", DiskFreeRatio: -1})
	want(t, "leader back", evs, NoLeader+":"+Resolved)
	if !evs[0].Since.Equal(since) || !evs[0].FiredAt.Equal(c.t) || !evs[0].At.Equal(c.t) || evs[0].Scope != ScopeCluster {
		t.Fatalf("resolved %+v: want since %v, fired_at and at %v", evs[0], since, c.t)
	}
	want(t, "after resolve", m.Step(Snapshot{Now: c.add(time.Second), Leader: "n2", DiskFreeRatio: -1}))
	if got := statuses(m.Events()); len(got) != 2 {
		t.Fatalf("ring %v", got)
	}
}

func TestNoLeaderLeftToLowerVoter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := newTestManager(t)
	want(t, "lower voter up", m.Step(Snapshot{Now: now, LeaderlessSince: now.Add(-time.Minute), LowerVoterUp: true, DiskFreeRatio: -1}))
	want(t, "lower voter gone", m.Step(Snapshot{Now: now.Add(time.Second), LeaderlessSince: now.Add(-time.Minute), DiskFreeRatio: -1}), NoLeader+":"+Firing)
	// Once it fired here, it stays here until a leader is seen.
	want(t, "lower voter back", m.Step(Snapshot{Now: now.Add(2 * time.Second), LeaderlessSince: now.Add(-time.Minute), LowerVoterUp: true, DiskFreeRatio: -1}))
	want(t, "leader", m.Step(Snapshot{Now: now.Add(3 * time.Second), Leader: "n1", DiskFreeRatio: -1}), NoLeader+":"+Resolved)
}

func TestClusterRulesOnlyOnLeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := Snapshot{Now: now, Leader: "n2", LeaderChangedAt: now.Add(-time.Second), PrevLeader: "n1",
		Unreachable: map[string]time.Duration{"n3": 11 * time.Second, "n1": 5 * time.Second}, DiskFreeRatio: -1}
	m := newTestManager(t)
	want(t, "follower", m.Step(s))
	s.IsLeader = true
	want(t, "leader", m.Step(s), LeaderChanged+":"+Firing, MemberUnreachable+":"+Firing)
	s.Now = now.Add(time.Minute)
	s.Unreachable = nil
	want(t, "later", m.Step(s), LeaderChanged+":"+Resolved, MemberUnreachable+":"+Resolved)
}

func TestNodeRules(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := newTestManager(t)
	bad := Snapshot{Leader: "n1", Parked: 1001, ParkedOldest: c.t.Add(-61 * time.Second), BreakerOpen: true, DiskFreeRatio: 0.05, FsyncP99: 60 * time.Millisecond}
	bad.Now = c.t
	want(t, "bad", m.Step(bad), ParkedBacklog+":"+Firing, ParkedOld+":"+Firing, BreakerOpen+":"+Firing, DiskLow+":"+Firing)
	for range 59 { // fsync must stay slow a minute
		bad.Now = c.add(time.Second)
		want(t, "fsync pending", m.Step(bad))
	}
	bad.Now = c.add(time.Second)
	want(t, "fsync a minute", m.Step(bad), FsyncSlow+":"+Firing)
	good := Snapshot{Now: c.add(time.Second), Leader: "n1", Parked: 1000, DiskFreeRatio: 0.10, FsyncP99: 50 * time.Millisecond}
	evs := m.Step(good)
	if len(evs) != 5 {
		t.Fatalf("resolved %v, want 5", statuses(evs))
	}
	for _, e := range evs {
		if e.Status != Resolved {
			t.Fatalf("%+v", e)
		}
	}
}

func TestFsyncFlapDoesNotFire(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := newTestManager(t)
	for i := range 200 {
		s := Snapshot{Now: c.add(time.Second), Leader: "n1", DiskFreeRatio: -1, FsyncP99: 60 * time.Millisecond}
		if i%30 == 29 {
			s.FsyncP99 = time.Millisecond
		}
		want(t, "flapping", m.Step(s))
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{}, {Node: "n1", Format: "xml"}, {Node: "n1", Webhooks: []string{"ftp://x"}}, {Node: "n1", Thresholds: Thresholds{DiskFreePercent: 120}}, {Node: "n1", Thresholds: Thresholds{BackupStale: -time.Second}}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := (Config{Node: "n1", Format: FormatSlack, Webhooks: []string{"http://127.0.0.1:1/x"}}).Validate(); err != nil {
		t.Fatal(err)
	}
}
