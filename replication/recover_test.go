package replication

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestRecover stops a three-server cluster and opens one server alone with
// Recover: it elects itself, keeps every entry (those before its snapshot
// and those after), commits new ones, and a new server joins it and catches
// up. A second Recover on the running configuration of one changes nothing.
func TestRecover(t *testing.T) {
	for _, tt := range []struct {
		name     string
		snapshot bool   // the survivor snapshots before the stop
		logStore string // Config.LogStore
	}{
		{"log only", false, ""},
		{"snapshot and log", true, ""},
		{"snapshot and log, raft-boltdb", true, LogStoreBolt},
	} {
		t.Run(tt.name, func(t *testing.T) {
			nodes := newCluster(t, 3, func(c *Config) { c.LogStore = tt.logStore })
			l := leader(t, nodes)
			var want []string
			var index uint64
			for i := range 10 {
				d := fmt.Sprintf("a%d", i)
				index = apply(t, l, d)
				want = append(want, d)
			}
			waitApplied(t, nodes, index)
			if tt.snapshot {
				if err := l.r.raft.Snapshot().Error(); err != nil {
					t.Fatalf("snapshot: %v", err)
				}
				index = apply(t, l, "after-snapshot")
				want = append(want, "after-snapshot")
				waitApplied(t, nodes, index)
			}
			before := l.r.Status()
			for _, n := range followers(nodes, l) {
				n.stop(t)
			}
			l.stop(t)

			l.cfg.Recover = true
			l.resume(t) // the state machine it had, as a store keeps its state
			// Alone and leading: asked again until both hold at once, since a
			// starved single server can time out its own heartbeat and run
			// one more election in between.
			var m map[string]Member
			waitFor(t, 10*time.Second, "the recovered server to lead alone", func() bool {
				m = members(t, l)
				return l.r.IsLeader() && len(m) == 1 && m[l.cfg.ID].Leader
			})
			if len(m) != 1 {
				t.Fatalf("members after Recover = %v, want %s alone", m, l.cfg.ID)
			}
			if st := l.r.Status(); st.LastIndex < before.LastIndex || st.Term < before.Term {
				t.Errorf("Status() after Recover = %+v, want log and term at least %+v", st, before)
			}
			index = apply(t, l, "recovered")
			want = append(want, "recovered")

			n4 := &testNode{cfg: testConfig(t, "n4", "127.0.0.1:0")}
			n4.start(t)
			if err := l.r.Join(ctxTimeout(t, 10*time.Second), "n4", n4.r.Addr(), true); err != nil {
				t.Fatalf("Join(n4): %v", err)
			}
			index = apply(t, l, "joined")
			want = append(want, "joined")
			both := []*testNode{l, n4}
			waitApplied(t, both, index)
			sameData(t, both, want)
			if got := l.sm.data(); !slices.Equal(got, want) {
				t.Errorf("recovered server applied %q, want %q", got, want)
			}
		})
	}
}

// TestRecoverNoState: Recover on a Dir without Raft state fails with
// ErrNoState and starts nothing.
func TestRecoverNoState(t *testing.T) {
	cfg := testConfig(t, "n1", "127.0.0.1:0")
	cfg.Recover = true
	r, err := open(cfg, &fakeMachine{})
	if err == nil {
		r.Close()
	}
	if !errors.Is(err, ErrNoState) {
		t.Fatalf("open with Recover on an empty Dir: err = %v, want ErrNoState", err)
	}
}

// TestRecoverAmnesia: a server whose log was lost is not recovered: Open
// fails with the AmnesiaError before it rewrites anything.
func TestRecoverAmnesia(t *testing.T) {
	nodes := newCluster(t, 3, nil)
	l := leader(t, nodes)
	index := apply(t, l, "a")
	waitApplied(t, nodes, index)
	f := followers(nodes, l)[0]
	f.stop(t)
	f.cfg.Dir = t.TempDir() // the same state machine, an empty Raft dir
	f.cfg.Recover = true
	f.cfg.Bootstrap = nil
	r, err := open(f.cfg, f.sm)
	if err == nil {
		r.Close()
	}
	if !errors.Is(err, ErrAmnesia) {
		t.Fatalf("open with Recover after losing the log: err = %v, want ErrAmnesia", err)
	}
}
