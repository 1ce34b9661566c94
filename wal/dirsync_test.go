package wal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// opLog is the ordered list of the changes and fsyncs that a recordFS made,
// and of the answers that a test saw, as "op path" lines.
type opLog struct {
	mu  sync.Mutex
	ops []string
}

func (o *opLog) add(op, name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops = append(o.ops, op+" "+name)
}

func (o *opLog) snapshot() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.ops)
}

// inOrder fails the test unless steps occur in ops in this order (with
// anything between them). Each step is matched at its first occurrence after
// the previous step.
func inOrder(t *testing.T, ops []string, steps ...string) {
	t.Helper()
	i := 0
	for _, s := range steps {
		j := slices.Index(ops[i:], s)
		if j < 0 {
			t.Fatalf("no %q after step %d in\n%s\nwant in order:\n%s", s, i, strings.Join(ops, "\n"), strings.Join(steps, "\n"))
		}
		i += j + 1
	}
}

// recordFS is the OS file system that records each directory change, each
// write and each fsync it makes, in order, so that a test can check that an
// entry is durable (its directory fsynced) before an answer rests on it.
type recordFS struct {
	osFS
	log *opLog
}

func (r recordFS) Mkdir(dir string) error {
	err := r.osFS.Mkdir(dir)
	if err == nil {
		r.log.add("mkdir", dir)
	}
	return err
}

func (r recordFS) Create(name string) (file, error) {
	f, err := r.osFS.Create(name)
	if err != nil {
		return nil, err
	}
	r.log.add("create", name)
	return recordFile{file: f, name: name, log: r.log}, nil
}

func (r recordFS) OpenWrite(name string) (file, error) {
	f, err := r.osFS.OpenWrite(name)
	if err != nil {
		return nil, err
	}
	return recordFile{file: f, name: name, log: r.log}, nil
}

func (r recordFS) Truncate(name string, size int64) error {
	r.log.add("truncate", name)
	return r.osFS.Truncate(name, size)
}

func (r recordFS) Remove(name string) error {
	r.log.add("remove", name)
	return r.osFS.Remove(name)
}

func (r recordFS) SyncDir(dir string) error {
	r.log.add("syncdir", dir)
	return r.osFS.SyncDir(dir)
}

type recordFile struct {
	file
	name string
	log  *opLog
}

func (f recordFile) WriteAt(b []byte, off int64) (int, error) {
	f.log.add("write", f.name)
	return f.file.WriteAt(b, off)
}

func (f recordFile) Sync() error {
	f.log.add("sync", f.name)
	return f.file.Sync()
}

func (f recordFile) SyncAll() error {
	f.log.add("syncall", f.name)
	return f.file.SyncAll()
}

func (f recordFile) Truncate(size int64) error {
	f.log.add("truncate", f.name)
	return f.file.Truncate(size)
}

// TestDirectoryFsyncs checks that every directory entry the log creates or
// removes is durable, by a fsync of its directory, before an answer rests on
// it: Open's directory and its parents, a new segment before the first
// record in it is acknowledged, a deleted segment before Sync returns, and a
// tail truncated at Open before Open returns.
func TestDirectoryFsyncs(t *testing.T) {
	ctx := context.Background()
	seg1 := segName(segHeader{id: 1, firstSeq: 1})

	t.Run("Open creates its directory and its parents", func(t *testing.T) {
		root := t.TempDir()
		a, dir := filepath.Join(root, "a"), filepath.Join(root, "a", "wal")
		ops := &opLog{}
		l, err := openFS(dir, Config{}, recordFS{log: ops})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		seq, err := l.Append(ctx, []byte("first"))
		if err != nil {
			t.Fatal(err)
		}
		ops.add("ack", fmt.Sprint(seq))
		seg := filepath.Join(dir, seg1)
		inOrder(t, ops.snapshot(),
			"mkdir "+a, "syncdir "+root, "mkdir "+dir, "syncdir "+a,
			"create "+seg, "sync "+seg, "syncdir "+dir,
			"write "+seg, "sync "+seg, "ack 1")
	})

	t.Run("Open of an existing directory fsyncs its parent", func(t *testing.T) {
		root := t.TempDir()
		dir := filepath.Join(root, "wal")
		if err := os.Mkdir(dir, 0o755); err != nil { // as a crash right after the mkdir leaves it
			t.Fatal(err)
		}
		ops := &opLog{}
		l, err := openFS(dir, Config{}, recordFS{log: ops})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := l.Append(ctx, []byte("first")); err != nil {
			t.Fatal(err)
		}
		ops.add("ack", "1")
		inOrder(t, ops.snapshot(), "syncdir "+root, "syncdir "+dir, "ack 1")
	})

	t.Run("a new segment before its first record is acknowledged", func(t *testing.T) {
		dir := t.TempDir()
		ops := &opLog{}
		l, err := openFS(dir, Config{SegmentBytes: 1024}, recordFS{log: ops})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var seq uint64
		for i := 0; l.Stats().Segments < 2; i++ {
			if i > 100 {
				t.Fatal("no rotation after 100 records")
			}
			if seq, err = l.Append(ctx, payloadFor(i, 100)); err != nil {
				t.Fatal(err)
			}
		}
		ops.add("ack", fmt.Sprint(seq))
		old, seg := filepath.Join(dir, seg1), filepath.Join(dir, segName(segHeader{id: 2, firstSeq: seq}))
		inOrder(t, ops.snapshot(),
			"syncall "+old, "create "+seg, "sync "+seg, "syncdir "+dir,
			"write "+seg, "sync "+seg, fmt.Sprintf("ack %d", seq))
	})

	t.Run("a deleted segment before Sync returns", func(t *testing.T) {
		dir := t.TempDir()
		ops := &opLog{}
		l, err := openFS(dir, Config{SegmentBytes: 1024}, recordFS{log: ops})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		recs := appendN(t, l, 0, 12, 100) // two segments or more
		if l.Stats().Segments < 2 {
			t.Fatal("no rotation")
		}
		if err := l.MarkDone(seqsOf(recs)...); err != nil {
			t.Fatal(err)
		}
		if err := l.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		ops.add("synced", "")
		old := filepath.Join(dir, seg1)
		if _, err := os.Stat(old); !os.IsNotExist(err) {
			t.Fatalf("segment 1 still there after its records are done: %v", err)
		}
		// The marks are fsynced in the active segment before the remove,
		// and the remove before Sync returns.
		ops2 := ops.snapshot()
		rm := slices.Index(ops2, "remove "+old)
		if rm < 0 || !strings.HasPrefix(ops2[rm-1], "sync ") {
			t.Fatalf("the remove of %s does not follow a sync of the active segment:\n%s", old, strings.Join(ops2, "\n"))
		}
		inOrder(t, ops2, "remove "+old, "syncdir "+dir, "synced ")
	})

	t.Run("a tail truncated at Open before Open returns", func(t *testing.T) {
		fx := newFixture(t, Config{NoSync: true}, 3)
		path, buf := fx.lastSeg(t, fx.dir)
		if err := os.WriteFile(path, buf[:len(buf)-5], 0o644); err != nil {
			t.Fatal(err)
		}
		ops := &opLog{}
		l, err := openFS(fx.dir, Config{}, recordFS{log: ops})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ops.add("opened", "")
		inOrder(t, ops.snapshot(), "truncate "+path, "syncall "+path, "opened ")
	})
}
