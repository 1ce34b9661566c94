package store

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// dirRecorder records the directory fsyncs made through it, in order, each
// with the names its directory held when it was fsynced: what a power loss
// keeps of that directory, under POSIX rules, once the fsync returned.
type dirRecorder struct {
	mu     sync.Mutex
	events []dirEvent
}

type dirEvent struct {
	dir   string
	names map[string]bool
}

func (r *dirRecorder) sync(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, dirEvent{dir: filepath.Clean(dir), names: names})
	return nil
}

// first returns the position of the first fsync of dir that covered name, or
// -1 when none did.
func (r *dirRecorder) first(dir, name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range r.events {
		if e.dir == filepath.Clean(dir) && e.names[name] {
			return i
		}
	}
	return -1
}

// last returns the names dir held at its last recorded fsync, nil if none.
func (r *dirRecorder) last(dir string) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].dir == filepath.Clean(dir) {
			return r.events[i].names
		}
	}
	return nil
}

// wantDurable fails unless each of names was in dir at a recorded fsync of
// it, in the order given: name i first covered before name i+1 (each pair is
// (dir, name)).
func (r *dirRecorder) wantInOrder(t *testing.T, pairs ...[2]string) {
	t.Helper()
	prev := -1
	for _, p := range pairs {
		at := r.first(p[0], p[1])
		if at < 0 {
			t.Fatalf("no fsync of %s covered %s", p[0], p[1])
		}
		if at < prev {
			t.Fatalf("%s/%s made durable at fsync #%d, after the entry that depends on it (#%d)", p[0], p[1], at, prev)
		}
		prev = at
	}
}

// TestDirSyncsOpen opens a new store and checks that state.db and its side
// file were in a fsync of their directory before Open returned (after it,
// Apply's results are answered, and commits rely on the side file).
func TestDirSyncsOpen(t *testing.T) {
	rec := &dirRecorder{}
	dir := t.TempDir()
	db, err := Open(filepath.Join(dir, "state.db"), Config{syncDir: rec.sync})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec.wantInOrder(t, [2]string{dir, "state.db"}, [2]string{dir, "state.db" + metaFileSuffix})
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

	rec := &dirRecorder{}
	dir := t.TempDir()
	b, err := Open(filepath.Join(dir, "state.db"), Config{syncDir: rec.sync})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	applyOK(t, b, txEntry(1, 7, "", put("other", `1`)))
	if err := b.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	names := rec.last(dir)
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
