package replication

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
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

// TestDirSyncsAtOpen opens a new server, which bootstraps, in a data dir that
// does not exist yet, and checks the order of the directory fsyncs: the data
// dir's holds raft/ before raft/'s holds the log store's entry, which comes
// before the log's own files are made durable, and all of it before Open
// returns (after which raft votes and acknowledges entries). Without any one
// of those fsyncs (mkdirSynced, zeroFile.Sync's, Open's fsync of raft/ for
// raft.db) it fails.
func TestDirSyncsAtOpen(t *testing.T) {
	for _, kind := range []string{LogStoreWAL, LogStoreBolt} {
		t.Run(kind, func(t *testing.T) {
			rec := &dirRecorder{}
			data := filepath.Join(t.TempDir(), "data")
			addr := freeAddrs(t, 1)[0]
			cfg := testConfig(t, "n1", addr)
			cfg.Dir = filepath.Join(data, "raft")
			cfg.Bootstrap = []Server{{ID: "n1", Addr: addr}}
			cfg.LogStore = kind
			cfg.syncDir = rec.sync
			n := &testNode{cfg: cfg}
			n.start(t)
			raftDir := cfg.Dir
			pairs := [][2]string{
				{filepath.Dir(data), "data"},
				{data, "raft"},
				{raftDir, "snapshots"},
			}
			if kind == LogStoreWAL {
				walDir := filepath.Join(raftDir, "wal")
				pairs = append(pairs, [2]string{raftDir, "wal"}, [2]string{walDir, "wal-meta.db"})
				// The bootstrap configuration went into the first segment.
				segs, _ := filepath.Glob(filepath.Join(walDir, "*.wal"))
				if len(segs) == 0 {
					t.Fatal("no raft log segment after bootstrap")
				}
				pairs = append(pairs, [2]string{walDir, filepath.Base(segs[0])})
			} else {
				pairs = append(pairs, [2]string{raftDir, "raft.db"})
			}
			rec.wantInOrder(t, pairs...)
			leader(t, []*testNode{n})
			if _, _, err := n.r.Apply(ctxTimeout(t, 5*time.Second), []byte("x")); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDirSyncsSnapshot takes a snapshot and checks that the snapshot's own
// directory was fsynced, holding its files, before raft was told the snapshot
// is done (after which it drops the log the snapshot covers). Raft's
// FileSnapshotSink never fsyncs it (syncedSink does).
func TestDirSyncsSnapshot(t *testing.T) {
	rec := &dirRecorder{}
	addr := freeAddrs(t, 1)[0]
	n := &storeNode{cfg: testConfig(t, "n1", addr)}
	n.cfg.Bootstrap = []Server{{ID: "n1", Addr: addr}}
	n.cfg.syncDir = rec.sync
	n.start(t)
	leader(t, []*testNode{{cfg: n.cfg, r: n.r}})
	for i := range 5 {
		if _, _, err := n.r.Apply(ctxTimeout(t, 5*time.Second), put(txid.ID(i+1), "k", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	f := n.r.raft.Snapshot()
	if err := f.Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	meta, rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	rc.Close() // the live store's stream: Close of the store waits for it
	snapDir := filepath.Join(n.cfg.Dir, "snapshots")
	rec.wantInOrder(t,
		[2]string{snapDir + "/" + meta.ID + snapshotTmpSuffix, "state.bin"},
		[2]string{snapDir + "/" + meta.ID + snapshotTmpSuffix, "meta.json"},
	)
}

// TestDirSyncsRecycle checks that a segment raft-wal deletes is gone, and
// kept as recycle.old, in the directory's next fsync, before Delete returns.
func TestDirSyncsRecycle(t *testing.T) {
	rec := &dirRecorder{}
	dir := t.TempDir()
	for _, name := range []string{"00001.wal", "00002.wal"} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, 4096), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	z := newZeroFS(dir, nil)
	z.syncDir = rec.sync
	defer z.Close()
	for i, name := range []string{"00001.wal", "00002.wal"} {
		if err := z.Delete(dir, name); err != nil {
			t.Fatal(err)
		}
		names := rec.last(dir)
		if names == nil || names[name] {
			t.Fatalf("Delete(%s) returned before an fsync of %s without it: %v", name, dir, names)
		}
		if !names[recycleName] {
			t.Fatalf("Delete(%s) #%d: %s not in the directory's fsync: %v", name, i+1, recycleName, names)
		}
	}
	for name := range rec.last(dir) {
		if strings.HasSuffix(name, ".wal") {
			t.Fatalf("a deleted segment %s is still in the directory", name)
		}
	}
}
