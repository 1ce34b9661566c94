package store

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlog/txlog/dirsync/dirsynctest"
)

// TestDirSyncsOpen opens a new store and checks that state.db and its side
// file were in a fsync of their directory before Open returned (after it,
// Apply's results are answered, and commits rely on the side file).
func TestDirSyncsOpen(t *testing.T) {
	rec := &dirsynctest.Recorder{}
	dir := t.TempDir()
	db, err := Open(filepath.Join(dir, "state.db"), Config{syncDir: rec.Sync})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec.WantInOrder(t, [2]string{dir, "state.db"}, [2]string{dir, "state.db" + metaFileSuffix})
	applyOK(t, db, txEntry(1, 1, "", put("k", `1`)))
}

// TestDirSyncsRestore restores a snapshot and checks that, when Restore
// returns, the last fsync of the directory held the new state.db and its new
// side file and no restore temporary file: the side file is created after the
// rename's fsync, and only its own fsync (openMetaFile) covers it. Without it,
// a power loss could keep the restored file and lose the side file, and the
// next start would open a file whose later commits had no fsync as it is.
func TestDirSyncsRestore(t *testing.T) {
	a := openTest(t)
	e2 := txEntry(2, 2, "", put("k", `2`))
	e2.Term = 3
	applyOK(t, a, txEntry(1, 1, "", put("k", `1`)), e2)
	s, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	s.Release()

	rec := &dirsynctest.Recorder{}
	dir := t.TempDir()
	b, err := Open(filepath.Join(dir, "state.db"), Config{syncDir: rec.Sync})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	applyOK(t, b, txEntry(1, 7, "", put("other", `1`)))
	if err := b.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	names := rec.Last(dir)
	for _, want := range []string{"state.db", "state.db" + metaFileSuffix} {
		if !names[want] {
			t.Fatalf("after Restore, the last fsync of the directory did not hold %s: %v", want, names)
		}
	}
	for name := range names {
		if strings.Contains(name, ".restore-") {
			t.Fatalf("after Restore, the last fsync of the directory held the temporary file %s", name)
		}
	}
	if got := b.AppliedIndex(); got != 2 {
		t.Fatalf("AppliedIndex() after Restore = %d, want 2", got)
	}
	if got := b.AppliedTerm(); got != 3 {
		t.Fatalf("AppliedTerm() after Restore = %d, want 3", got)
	}
	if got := b.RestoredIndex(); got != 2 {
		t.Fatalf("RestoredIndex() after Restore = %d, want 2", got)
	}
	applyOK(t, b, txEntry(3, 8, "", put("k", `3`)))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(filepath.Join(dir, "state.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, applied := b.RestoredIndex(), b.AppliedIndex(); got != 2 || applied != 3 {
		t.Fatalf("after reopen RestoredIndex, AppliedIndex = %d, %d, want 2, 3", got, applied)
	}
}

// TestAppliedTerm checks that the store reports the term of its last applied
// entry, which replication compares with its Raft log and stable store at
// start: after Apply, after a skipped replay, and after a reopen.
func TestAppliedTerm(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openAt(t, path)
	e1, e2 := txEntry(1, 1, "", put("k", `1`)), txEntry(2, 2, "", put("k", `2`))
	e1.Term, e2.Term = 2, 5
	applyOK(t, db, e1, e2)
	if got := db.AppliedTerm(); got != 5 {
		t.Fatalf("AppliedTerm() = %d, want 5", got)
	}
	applyOK(t, db, e1) // skipped: at or below the applied index
	if got := db.AppliedTerm(); got != 5 {
		t.Fatalf("AppliedTerm() after a skipped entry = %d, want 5", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openAt(t, path)
	if got, idx := db.AppliedTerm(), db.AppliedIndex(); got != 5 || idx != 2 {
		t.Fatalf("after reopen AppliedIndex, AppliedTerm = %d, %d, want 2, 5", idx, got)
	}
}
