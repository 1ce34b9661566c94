package replication

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHasState: a Dir that does not exist, an empty one and one whose log
// store has no entry hold no state; a Dir a bootstrapped server used does,
// with either log store kind. HasState creates nothing in a Dir without a
// log store.
func TestHasState(t *testing.T) {
	for _, kind := range []string{LogStoreWAL, LogStoreBolt} {
		t.Run(kind, func(t *testing.T) {
			addr := freeAddrs(t, 1)[0]
			cfg := testConfig(t, "n1", addr)
			cfg.LogStore = kind
			cfg.Dir = filepath.Join(t.TempDir(), "raft")
			if has, err := HasState(cfg); err != nil || has {
				t.Fatalf("HasState(missing dir) = %v, %v; want false, nil", has, err)
			}
			if err := os.Mkdir(cfg.Dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if has, err := HasState(cfg); err != nil || has {
				t.Fatalf("HasState(empty dir) = %v, %v; want false, nil", has, err)
			}
			if ents, _ := os.ReadDir(cfg.Dir); len(ents) != 0 {
				t.Fatalf("HasState created %d entries in an empty dir", len(ents))
			}
			n := &testNode{cfg: cfg} // no Bootstrap: a log store, no entry
			n.start(t)
			n.stop(t)
			if has, err := HasState(cfg); err != nil || has {
				t.Fatalf("HasState(log store without entries) = %v, %v; want false, nil", has, err)
			}
			n.cfg.Bootstrap = []Server{{ID: "n1", Addr: addr}}
			n.start(t)
			n.stop(t)
			if has, err := HasState(cfg); err != nil || !has {
				t.Fatalf("HasState(bootstrapped) = %v, %v; want true, nil", has, err)
			}
		})
	}
}
