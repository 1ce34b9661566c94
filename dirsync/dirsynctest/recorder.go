// Package dirsynctest records directory fsyncs for tests of their order.
package dirsynctest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/txlog/txlog/dirsync"
)

// Recorder records the directory fsyncs made through its Sync, in order, each
// with the names its directory held when it was fsynced: what a power loss
// keeps of that directory, under POSIX rules, once the fsync returned. The
// zero value is ready to use; it is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []event
}

type event struct {
	dir   string
	names map[string]bool
}

// Sync lists dir, fsyncs it with dirsync.Sync and records both.
func (r *Recorder) Sync(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		names[e.Name()] = true
	}
	if err := dirsync.Sync(dir); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{dir: filepath.Clean(dir), names: names})
	return nil
}

// First returns the position of the first fsync of dir that covered name, or
// -1 when none did.
func (r *Recorder) First(dir, name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, e := range r.events {
		if e.dir == filepath.Clean(dir) && e.names[name] {
			return i
		}
	}
	return -1
}

// Last returns the names dir held at its last recorded fsync, nil if none.
func (r *Recorder) Last(dir string) map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.events) - 1; i >= 0; i-- {
		if r.events[i].dir == filepath.Clean(dir) {
			return r.events[i].names
		}
	}
	return nil
}

// WantInOrder fails t unless each (dir, name) pair was in dir at a recorded
// fsync of it, in the order given: pair i first covered no later than pair i+1.
func (r *Recorder) WantInOrder(t testing.TB, pairs ...[2]string) {
	t.Helper()
	prev := -1
	for _, p := range pairs {
		at := r.First(p[0], p[1])
		if at < 0 {
			t.Fatalf("no fsync of %s covered %s", p[0], p[1])
		}
		if at < prev {
			t.Fatalf("%s/%s made durable at fsync #%d, after the entry that depends on it (#%d)", p[0], p[1], at, prev)
		}
		prev = at
	}
}
