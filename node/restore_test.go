package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRestoreRefused: --restore with --cluster or --join, or into a data dir
// that holds anything, is refused before anything is written.
func TestRestoreRefused(t *testing.T) {
	dir := t.TempDir()
	backup := filepath.Join(dir, "x.backup")
	if err := os.WriteFile(backup, []byte("not a backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"cluster", Config{ID: "r1", Cluster: []Peer{{ID: "r1", RaftAddr: "127.0.0.1:1"}}}, "leave out --cluster"},
		{"join", Config{ID: "r1", Join: "http://127.0.0.1:1"}, "leave out --cluster and --join"},
		{"not a backup", Config{ID: "r1"}, "bad backup"},
	} {
		cfg := tc.cfg.withDefaults()
		cfg.Restore = backup
		cfg.DataDir = filepath.Join(t.TempDir(), "data")
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			t.Fatal(err)
		}
		err := restoreBackup(cfg, func(string) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: restoreBackup() = %v, want an error saying %q", tc.name, err, tc.want)
		}
		if entries, _ := os.ReadDir(cfg.DataDir); len(entries) != 0 {
			t.Fatalf("%s: the refused restore left %d entries", tc.name, len(entries))
		}
	}
	cfg := Config{ID: "r1"}.withDefaults()
	cfg.Restore, cfg.DataDir = backup, dir // holds x.backup
	if err := restoreBackup(cfg, func(string) error { return nil }); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("restore into a non-empty dir = %v", err)
	}
}

// TestRestoredNumber: the registry's number for the node's ID, else
// --node-number unless another holds it, else the lowest free one.
func TestRestoredNumber(t *testing.T) {
	nodes := map[string]uint16{"n1": 1, "n2": 2, "n4": 4}
	for _, tc := range []struct {
		id      string
		flag    int
		want    int
		wantErr bool
	}{
		{"n2", 0, 2, false},
		{"n2", 2, 2, false},
		{"n2", 5, 0, true},
		{"r1", 0, 3, false},
		{"r1", 7, 7, false},
		{"r1", 4, 0, true},
	} {
		got, err := restoredNumber(Config{ID: tc.id, NodeNumber: tc.flag}, nodes)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Fatalf("restoredNumber(%s, --node-number %d) = %d, %v; want %d (error %v)", tc.id, tc.flag, got, err, tc.want, tc.wantErr)
		}
	}
}
