package store

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestNoSyncSurvivesReopen checks that with NoSync a Sync before Close leaves
// every applied entry in the file, and that Sync after Close is ErrClosed.
func TestNoSyncSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path, Config{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	applyOK(t, db, txEntry(1, 11, "a", put("k", "1")), txEntry(2, 12, "b", put("k", "2")))
	if err := db.Sync(); err != nil {
		t.Fatalf("Sync() = %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Sync(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Sync() after Close = %v, want ErrClosed", err)
	}
	db = openAt(t, path)
	if got := db.AppliedIndex(); got != 2 {
		t.Fatalf("AppliedIndex() after reopen = %d, want 2", got)
	}
	if kv := mustGet(t, db, "k"); kv.Version != 2 {
		t.Fatalf("Get(k).Version = %d, want 2", kv.Version)
	}
}
