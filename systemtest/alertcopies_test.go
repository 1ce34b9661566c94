package systemtest

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/txlog/txlog/alert"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/node/parking/redistest"
)

// TestAlertCopies: the leader and one follower are paused (SIGSTOP) long
// enough for the survivor to page TxlogNoLeader, then continued; later one
// follower is paused past --alert-unreachable-for and, while it stays
// paused, leadership moves to the other node. A real receiver counts
// the copies of every cluster-wide alert (alert.ClusterRules): each episode
// is sent firing exactly once and resolved exactly once, whichever nodes saw
// it, and no node pages from the view it had before it was paused.
func TestAlertCopies(t *testing.T) {
	redis := redistest.Start(t)
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	const (
		noLeaderFor    = 2 * time.Second
		unreachableFor = 3 * time.Second
		changedFor     = 5 * time.Second
	)
	c := startClusterWith(t, "--redis-addr="+redis.Addr, "--alert-webhook", srv.URL,
		"--alert-no-leader-for", noLeaderFor.String(), "--alert-unreachable-for", unreachableFor.String(),
		"--alert-leader-changed-for", changedFor.String(), "--alert-disk-free-percent", "0.0001")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	waitFor := func(what string, f func() error) {
		t.Helper()
		if err := launcher.Poll(ctx, 100*time.Millisecond, func(context.Context) error { return f() }); err != nil {
			t.Fatalf("%s: %v; events %+v", what, err, rec.snapshot())
		}
	}
	sleepPolling := func(d time.Duration) { // a quiet period: nothing to wait for but time
		t.Helper()
		until := time.Now().Add(d)
		waitFor("quiet period", func() error {
			if time.Now().Before(until) {
				return fmt.Errorf("waiting")
			}
			return nil
		})
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var followers []string
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			followers = append(followers, p.ID())
		}
	}
	slices.Sort(followers)
	// Pause the leader and the lower follower: the survivor is the higher
	// one, so that the paused nodes are the lower voters when they return.
	paused := []string{leader, followers[0]}
	for _, id := range paused {
		if err := c.Pause(id); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("no leader firing", func() error {
		if n, _ := rec.count(alert.NoLeader, alert.Firing); n == 0 {
			return fmt.Errorf("no firing yet")
		}
		return nil
	})
	sleepPolling(unreachableFor + time.Second) // the paused views go stale
	for _, id := range paused {
		if err := c.Resume(id); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("no leader resolved", func() error {
		if n, _ := rec.count(alert.NoLeader, alert.Resolved); n == 0 {
			return fmt.Errorf("not resolved yet")
		}
		return nil
	})
	if leader, err = c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	// Copies would come from the resumed nodes' old views: wait past every
	// threshold (a leader change resolves after changedFor).
	sleepPolling(changedFor + noLeaderFor + 3*time.Second)

	// A follower unreachable from the leader, across a change of leader:
	// one episode. The first leader sends the firing and, handing over,
	// leaves the episode open; the next one, which sees the member
	// unreachable too, carries it on and resolves it.
	if leader, err = c.Leader(ctx); err != nil { // now, after the quiet period
		t.Fatal(err)
	}
	var f, other string
	for _, p := range c.Nodes() {
		if p.ID() != leader {
			f, other = p.ID(), f
		}
	}
	if err := c.Pause(f); err != nil {
		t.Fatal(err)
	}
	waitFor("member unreachable firing", func() error {
		if n, _ := rec.count(alert.MemberUnreachable, alert.Firing); n == 0 {
			return fmt.Errorf("no firing yet")
		}
		return nil
	})
	cl := client.NewClient(client.ClientConfig{Endpoints: []string{c.URL(leader), c.URL(other)}})
	waitFor("leadership handed to "+other, func() error {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := cl.TransferLeadershipVia(actx, c.URL(leader), wire.TransferRequest{ID: other}); err != nil {
			return err
		}
		if l, err := c.Leader(ctx); err != nil || l != other {
			return fmt.Errorf("leader %q (%v)", l, err)
		}
		return nil
	})
	sleepPolling(unreachableFor + 3*time.Second) // the new leader's own view passes the threshold
	if err := c.Resume(f); err != nil {
		t.Fatal(err)
	}
	waitFor("member unreachable resolved", func() error {
		if n, _ := rec.count(alert.MemberUnreachable, alert.Resolved); n == 0 {
			return fmt.Errorf("not resolved yet")
		}
		return nil
	})
	sleepPolling(changedFor + unreachableFor + 3*time.Second)

	evs := rec.snapshot()
	if err := checkAlertCopies(evs); err != nil {
		t.Fatalf("%v; events %+v", err, evs)
	}
	for _, e := range evs {
		t.Logf("%s %s %v %s from %s", e.Alert, e.Status, e.Labels, e.Episode, e.Node)
	}
	for _, e := range evs {
		if e.Alert == alert.NoLeader && e.Status == alert.Firing && e.FiredAt.Sub(e.Since) < noLeaderFor {
			t.Errorf("%s fired %s after it began, before the %s threshold: %+v", e.Alert, e.FiredAt.Sub(e.Since), noLeaderFor, e)
		}
		if e.FiredAt.IsZero() || !e.At.Equal(e.FiredAt) || e.Since.After(e.FiredAt) {
			t.Errorf("since/fired_at/at: %+v", e)
		}
	}
}

// checkAlertCopies checks what a receiver got: every cluster-wide episode
// (alert, labels, episode) exactly once firing and, after it, exactly once
// resolved; and at least one NoLeader and one MemberUnreachable episode.
func checkAlertCopies(evs []alert.Event) error {
	type count struct{ firing, resolved int }
	eps := map[string]*count{}
	var order []string
	seen := map[string]bool{}
	for _, e := range evs {
		if !slices.Contains(alert.ClusterRules, e.Alert) {
			continue
		}
		if e.Scope != alert.ScopeCluster || e.Episode == "" {
			return fmt.Errorf("%s without a cluster scope and an episode: %+v", e.Alert, e)
		}
		k := fmt.Sprintf("%s %v %s", e.Alert, e.Labels, e.Episode)
		if eps[k] == nil {
			eps[k] = &count{}
			order = append(order, k)
		}
		switch e.Status {
		case alert.Firing:
			eps[k].firing++
		case alert.Resolved:
			if eps[k].firing == 0 {
				return fmt.Errorf("%s resolved before it fired", k)
			}
			eps[k].resolved++
		}
		seen[e.Alert] = true
	}
	for _, k := range order {
		if c := eps[k]; c.firing != 1 || c.resolved != 1 {
			return fmt.Errorf("episode %s: %d firing and %d resolved copies, want 1 and 1", k, c.firing, c.resolved)
		}
	}
	for _, name := range []string{alert.NoLeader, alert.MemberUnreachable} {
		if !seen[name] {
			return fmt.Errorf("no %s episode at all", name)
		}
	}
	return nil
}

// TestCheckAlertCopies feeds the check the bad cases it must catch.
func TestCheckAlertCopies(t *testing.T) {
	ev := func(name, status, node string) alert.Event {
		return alert.Event{Alert: name, Status: status, Node: node, Scope: alert.ScopeCluster, Episode: "after-term-3", Labels: map[string]string{}}
	}
	good := []alert.Event{ev(alert.NoLeader, alert.Firing, "n3"), ev(alert.NoLeader, alert.Resolved, "n3"),
		ev(alert.MemberUnreachable, alert.Firing, "n1"), ev(alert.MemberUnreachable, alert.Resolved, "n2")}
	if err := checkAlertCopies(good); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string][]alert.Event{
		"two firing copies": append(slices.Clone(good), ev(alert.NoLeader, alert.Firing, "n1")),
		"never resolved":    good[:3],
		"no episode":        append(slices.Clone(good), alert.Event{Alert: alert.NoLeader, Status: alert.Firing, Scope: alert.ScopeCluster}),
		"resolved first":    append([]alert.Event{ev(alert.LeaderChanged, alert.Resolved, "n1")}, good...),
	} {
		if err := checkAlertCopies(bad); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}

// TestAlertBackupStale: nodes with --backup-dir page TxlogBackupStale, each
// once for itself, when their backups stop being written (the directory is
// replaced by a file, so that even root cannot write there), and resolve it
// once a fresh backup is written after the directory is back.
func TestAlertBackupStale(t *testing.T) {
	rec := &receiver{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	const stale = 3 * time.Second
	bdir := filepath.Join(t.TempDir(), "backups")
	c := startClusterWith(t, "--backup-dir="+bdir, "--backup-interval=300ms", "--alert-backup-stale="+stale.String(),
		"--alert-webhook", srv.URL, "--alert-disk-free-percent", "0.0001")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitFor := func(what string, f func() error) {
		t.Helper()
		if err := launcher.Poll(ctx, 100*time.Millisecond, func(context.Context) error { return f() }); err != nil {
			t.Fatalf("%s: %v; events %+v", what, err, rec.snapshot())
		}
	}
	nodes := func(status string) error {
		n, from := rec.count(alert.BackupStale, status)
		slices.Sort(from)
		if n != len(c.Nodes()) || len(slices.Compact(from)) != n {
			return fmt.Errorf("%d %s from %v, want one from each node", n, status, from)
		}
		return nil
	}
	waitFor("a backup of every node", func() error {
		for _, p := range c.Nodes() {
			if names, _ := filepath.Glob(filepath.Join(bdir, "txlog-"+p.ID()+"-*.backup")); len(names) == 0 {
				return fmt.Errorf("none of %s yet", p.ID())
			}
		}
		return nil
	})
	if n, _ := rec.count(alert.BackupStale, alert.Firing); n != 0 {
		t.Fatalf("fired while backups are written: %+v", rec.snapshot())
	}
	// Moved away in one step, not removed: the nodes write a backup every
	// 300ms, and a file made while RemoveAll runs makes it fail.
	if err := os.Rename(bdir, bdir+".gone"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bdir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := time.Now()
	waitFor("stale firing from every node", func() error { return nodes(alert.Firing) })
	if d := time.Since(broken); d < stale-time.Second {
		t.Fatalf("fired %s after backups stopped, before the %s bound", d, stale)
	}
	for _, e := range rec.snapshot() {
		if e.Alert == alert.BackupStale && (e.Scope != alert.ScopeNode || e.FiredAt.Sub(e.Since) < 0 || e.Episode != "") {
			t.Fatalf("bad event %+v", e)
		}
	}
	if err := os.Remove(bdir); err != nil {
		t.Fatal(err)
	}
	waitFor("stale resolved on every node", func() error { return nodes(alert.Resolved) })
	if err := nodes(alert.Firing); err != nil { // no second page
		t.Fatal(err)
	}
}
