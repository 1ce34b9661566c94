package node

import (
	"os"
	"path/filepath"
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

// TestDirSyncsAtOpen opens a node in a data dir whose parent does not exist
// and checks that Open made the data dir's name durable in its parent, and
// fsynced the data dir with every part's entry in it, before it returned
// (after Open the node serves: Run answers writes).
func TestDirSyncsAtOpen(t *testing.T) {
	addrs := freeAddrs(t, 2)
	base := t.TempDir()
	data := filepath.Join(base, "new", "data")
	cfg := Config{
		ID:       "n1",
		DataDir:  data,
		HTTPAddr: addrs[0],
		RaftAddr: addrs[1],
		Cluster:  []Peer{{ID: "n1", RaftAddr: addrs[1]}},
	}
	rec := &dirRecorder{}
	n, err := open(cfg, rec.sync)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	rec.wantInOrder(t, [2]string{base, "new"}, [2]string{filepath.Join(base, "new"), "data"})
	names := rec.last(data)
	for _, want := range []string{"raft", "wal", "state.db", "state.db.meta", "txid.hwm"} {
		if !names[want] {
			t.Fatalf("the last fsync of the data dir before Open returned did not hold %s: %v", want, names)
		}
	}
}
