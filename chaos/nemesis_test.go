package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/launcher"
)

// flakyStart is a target whose first fails calls to Start fail without starting
// the node, as a node that exits before it listens does.
type flakyStart struct {
	Target
	fails  int
	starts int
}

func (f *flakyStart) Start(ctx context.Context, id string) error {
	f.starts++
	if f.starts <= f.fails {
		return fmt.Errorf("http addr of %s: exited before listening (try %d)", id, f.starts)
	}
	return f.Target.Start(ctx, id)
}

// TestNemesisRetriesStart: a killed leader that fails to start is started
// again, so that the cluster is whole for the next fault, and the fault still
// records the failure; a node that never starts leaves the fault unrecovered.
func TestNemesisRetriesStart(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fails     int
		recover   time.Duration
		recovered bool
	}{
		{"starts at the third try", 2, 20 * time.Second, true},
		{"never starts", 1000, 2500 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 60*time.Second)
			host := launcher.PrivateLoopback()
			base, err := launcher.FreeRange(host, launcher.DefaultNodes)
			if err != nil {
				t.Fatal(err)
			}
			c := startFakeCluster(t, ctx, launcher.ClusterConfig{Host: host, HTTPBasePort: base})
			urls := map[string]string{}
			for _, p := range c.Nodes() {
				urls[p.ID()] = c.URL(p.ID())
			}
			target := &flakyStart{Target: &localTarget{c: c}, fails: tc.fails}
			n := &nemesis{
				cfg:    NemesisConfig{RecoverTimeout: tc.recover}.withDefaults(),
				target: target,
				sched:  NewSchedule(1, []FaultWeight{{Fault: FaultKillLeader, Weight: 1}}),
				mon:    newMonitor(urls, Credentials{}),
				log:    slog.New(slog.DiscardHandler),
			}
			ev := n.inject(ctx, FaultKillLeader)
			if ev.Leader == "" || len(ev.Nodes) != 1 || ev.Nodes[0] != ev.Leader {
				t.Fatalf("event %+v: want the leader killed", ev)
			}
			if !strings.Contains(ev.Err, "exited before listening (try 1)") {
				t.Errorf("event error %q, want the first failed start", ev.Err)
			}
			killed := c.Node(ev.Leader)
			if tc.recovered {
				if target.starts != tc.fails+1 {
					t.Errorf("Start called %d times, want %d", target.starts, tc.fails+1)
				}
				if !slices.Equal(ev.StartRetried, []string{ev.Leader}) || len(ev.NotRestarted) != 0 || CheckRestarts([]FaultEvent{ev}).Pass {
					t.Errorf("start retried %v, not restarted %v; want [%s] and none, and CheckRestarts to fail", ev.StartRetried, ev.NotRestarted, ev.Leader)
				}
				if !killed.Running() || ev.Recovered.IsZero() {
					t.Errorf("after the retries: %s running %v, recovered at %v; want running and recovered",
						ev.Leader, killed.Running(), ev.Recovered)
				}
				return
			}
			if target.starts < 3 {
				t.Errorf("Start called %d times in %v, want a try every %v", target.starts, tc.recover, startRetry)
			}
			if !slices.Equal(ev.NotRestarted, []string{ev.Leader}) || len(ev.StartRetried) != 0 {
				t.Errorf("not restarted %v, start retried %v; want [%s] and none", ev.NotRestarted, ev.StartRetried, ev.Leader)
			}
			if killed.Running() || !ev.Recovered.IsZero() {
				t.Errorf("%s running %v, recovered at %v; want neither", ev.Leader, killed.Running(), ev.Recovered)
			}
		})
	}
}
