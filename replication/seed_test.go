package replication

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// TestSeed: a seeded dir has raft state, a checkpoint snapshot at the index
// and term with the one-server configuration, and the term as the current
// term; a second Seed of it, and a Seed without an index, term or address,
// are refused.
func TestSeed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "raft")
	cfg := Config{ID: "r1", Dir: dir, BindAddr: "127.0.0.1:1"}
	for _, bad := range []struct {
		name        string
		cfg         Config
		index, term uint64
	}{
		{"no index", cfg, 0, 3},
		{"no term", cfg, 9, 0},
		{"no id", Config{Dir: dir, BindAddr: "127.0.0.1:1"}, 9, 3},
		{"no address", Config{ID: "r1", Dir: dir}, 9, 3},
	} {
		if err := Seed(bad.cfg, bad.index, bad.term); err == nil {
			t.Fatalf("Seed(%s) = nil, want an error", bad.name)
		}
	}
	if err := Seed(cfg, 9, 3); err != nil {
		t.Fatalf("Seed() = %v", err)
	}
	if has, err := HasState(cfg); err != nil || !has {
		t.Fatalf("HasState() after Seed = %v, %v", has, err)
	}
	files, err := raft.NewFileSnapshotStore(dir, snapshotsRetained, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := files.List()
	if err != nil || len(list) != 1 || list[0].Index != 9 || list[0].Term != 3 ||
		len(list[0].Configuration.Servers) != 1 || list[0].Configuration.Servers[0].ID != "r1" || list[0].Size != checkpointMarkerSize {
		t.Fatalf("snapshots after Seed = %+v, %v", list, err)
	}
	logs, err := openLogStore(cfg.withDefaults(), newHCLogger(cfg.withDefaults().Logger))
	if err != nil {
		t.Fatal(err)
	}
	term, err := logs.GetUint64(keyCurrentTerm)
	logs.Close()
	if err != nil || term != 3 {
		t.Fatalf("current term after Seed = %d, %v, want 3", term, err)
	}
	if err := Seed(cfg, 10, 3); err == nil {
		t.Fatal("a second Seed of the dir = nil, want an error")
	}
}
