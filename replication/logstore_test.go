package replication

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWALLogStore runs a cluster on hashicorp/raft-wal: entries replicate, and a
// follower restarted on its Dir keeps its log and catches up.
func TestWALLogStore(t *testing.T) {
	nodes := newCluster(t, 3, func(c *Config) { c.LogStore = LogStoreWAL })
	l := leader(t, nodes)
	var want []string
	var index uint64
	for i := range 10 {
		d := fmt.Sprintf("w%d", i)
		index = apply(t, l, d)
		want = append(want, d)
	}
	waitApplied(t, nodes, index)
	f := followers(nodes, l)[0]
	before := f.r.Status()
	f.stop(t)
	index = apply(t, l, "while-down")
	want = append(want, "while-down")
	f.start(t)
	if st := f.r.Status(); st.LastIndex < before.LastIndex {
		t.Errorf("Status() after restart = %+v, want the log kept from %+v", st, before)
	}
	waitApplied(t, nodes, index)
	sameData(t, nodes, want)
	waitFor(t, 10*time.Second, "a leader", func() bool { id, _ := f.r.Leader(); return id != "" })
}

// TestLogStoreKindKept refuses to open a Dir with the other log store kind: the
// empty store would look like a new server and bootstrap again. Without a kind,
// a Dir keeps the one it holds, and a new Dir gets raft-wal.
func TestLogStoreKindKept(t *testing.T) {
	nodes := newCluster(t, 1, func(c *Config) { c.LogStore = LogStoreBolt })
	n := nodes[0]
	apply(t, leader(t, nodes), "x")
	n.stop(t)
	cfg := n.cfg
	cfg.LogStore = LogStoreWAL
	_, err := open(cfg, &fakeMachine{})
	if err == nil || !strings.Contains(err.Error(), "other log store kind") {
		t.Fatalf("open with the other kind = %v, want a refusal", err)
	}
	if err := (Config{ID: "a", Dir: "d", BindAddr: "127.0.0.1:0", LogStore: "rocks"}).Validate(); err == nil || !strings.Contains(err.Error(), "LogStore") {
		t.Fatalf("Validate(LogStore rocks) = %v, want an error naming LogStore", err)
	}

	// The default opens the raft-boltdb Dir as raft-boltdb, with its log.
	n.cfg.LogStore = ""
	n.resume(t)
	if _, err := os.Stat(filepath.Join(n.cfg.Dir, "wal")); err == nil {
		t.Errorf("default kind on a raft-boltdb Dir made a raft-wal log")
	}
	waitFor(t, 10*time.Second, "the node to lead again", func() bool { id, _ := n.r.Leader(); return id == n.cfg.ID })
	if got := n.sm.data(); len(got) != 1 || got[0] != "x" {
		t.Errorf("data after reopening with the default kind = %q, want [x]", got)
	}

	// A new Dir gets raft-wal by default.
	fresh := newCluster(t, 1, nil)
	apply(t, leader(t, fresh), "y")
	if _, err := os.Stat(filepath.Join(fresh[0].cfg.Dir, "wal")); err != nil {
		t.Errorf("default kind on a new Dir: no raft-wal log: %v", err)
	}
	if _, err := os.Stat(filepath.Join(fresh[0].cfg.Dir, "raft.db")); err == nil {
		t.Errorf("default kind on a new Dir made raft.db")
	}
}
