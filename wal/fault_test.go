package wal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// faultFS is the OS file system with a hook before each file fsync.
type faultFS struct {
	osFS
	// beforeSync runs before each file Sync and SyncAll; an error it
	// returns is returned instead of syncing. Nil means no hook.
	beforeSync func(name string) error
	// onSyncAll runs before each file SyncAll, after beforeSync. Nil means
	// no hook.
	onSyncAll func(name string)
}

func (f faultFS) Create(name string) (file, error) {
	fl, err := f.osFS.Create(name)
	if err != nil {
		return nil, err
	}
	return faultFile{file: fl, name: name, beforeSync: f.beforeSync, onSyncAll: f.onSyncAll}, nil
}

func (f faultFS) OpenWrite(name string) (file, error) {
	fl, err := f.osFS.OpenWrite(name)
	if err != nil {
		return nil, err
	}
	return faultFile{file: fl, name: name, beforeSync: f.beforeSync, onSyncAll: f.onSyncAll}, nil
}

type faultFile struct {
	file
	name       string
	beforeSync func(name string) error
	onSyncAll  func(name string)
}

func (f faultFile) Sync() error {
	if f.beforeSync != nil {
		if err := f.beforeSync(f.name); err != nil {
			return err
		}
	}
	return f.file.Sync()
}

func (f faultFile) SyncAll() error {
	if f.beforeSync != nil {
		if err := f.beforeSync(f.name); err != nil {
			return err
		}
	}
	if f.onSyncAll != nil {
		f.onSyncAll(f.name)
	}
	return f.file.SyncAll()
}

func TestSyncErrorIsSticky(t *testing.T) {
	errDisk := errors.New("injected fsync failure")
	var failing atomic.Bool
	fsys := faultFS{beforeSync: func(string) error {
		if failing.Load() {
			return errDisk
		}
		return nil
	}}
	dir := t.TempDir()
	l, err := openFS(dir, Config{}, fsys)
	if err != nil {
		t.Fatal(err)
	}
	recs := appendN(t, l, 0, 2, 10)
	if err := l.Stats().Err; err != nil {
		t.Fatalf("Stats().Err of a working log = %v, want nil", err)
	}
	failing.Store(true)
	ctx := context.Background()
	if _, err := l.Append(ctx, []byte("lost")); !errors.Is(err, errDisk) {
		t.Fatalf("Append() with failing fsync = %v, want %v", err, errDisk)
	}
	failing.Store(false)
	if _, err := l.Append(ctx, []byte("after")); !errors.Is(err, errDisk) {
		t.Fatalf("Append() after a failed fsync = %v, want the same error", err)
	}
	if err := l.Stats().Err; !errors.Is(err, errDisk) {
		t.Fatalf("Stats().Err of a broken log = %v, want %v", err, errDisk)
	}
	checkPending(t, l, recs)
	if err := l.Close(); !errors.Is(err, errDisk) {
		t.Fatalf("Close() = %v, want %v", err, errDisk)
	}
	if err := l.Stats().Err; !errors.Is(err, errDisk) {
		t.Fatalf("Stats().Err of a broken log after Close = %v, want %v", err, errDisk)
	}
	// The record whose fsync failed may or may not be there after a new
	// Open; the acknowledged ones are.
	l = openT(t, dir, Config{})
	if got := l.Pending(); len(got) < len(recs) || got[0].Seq != 1 || got[1].Seq != 2 {
		t.Fatalf("Pending() after reopen = %v, want records 1 and 2 first", seqsOf(got))
	}
}

// TestAbandonedAppend cancels an Append while its fsync is under way: the
// record is then written but nobody owns it, so the log marks it done.
func TestAbandonedAppend(t *testing.T) {
	var blocking atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	fsys := faultFS{beforeSync: func(string) error {
		if blocking.Load() {
			entered <- struct{}{}
			<-release
		}
		return nil
	}}
	dir := t.TempDir()
	l, err := openFS(dir, Config{}, fsys)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	kept := appendN(t, l, 0, 1, 10)

	blocking.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error)
	go func() {
		_, err := l.Append(ctx, []byte("abandoned"))
		result <- err
	}()
	<-entered // the writer is in fsync with our record
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("Append() canceled during fsync = %v, want context.Canceled", err)
	}
	blocking.Store(false)
	close(release)

	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkPending(t, l, kept)
	if s := l.Stats(); s.NextSeq != 3 {
		t.Fatalf("Stats().NextSeq = %d, want 3: the abandoned record took seq 2", s.NextSeq)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkPending(t, openT(t, dir, Config{}), kept)
}

// TestRotationSyncsTruncation: rotation cuts the zeros off the segment it
// closes and makes the cut durable with a full fsync before the next
// segment exists, so that recovery never finds a closed segment longer than
// its records. With NoSync there is no fsync of any kind.
func TestRotationSyncsTruncation(t *testing.T) {
	for _, noSync := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoSync=%t", noSync), func(t *testing.T) {
			var mu sync.Mutex
			var full []string
			fsys := faultFS{onSyncAll: func(name string) {
				mu.Lock()
				defer mu.Unlock()
				full = append(full, filepath.Base(name))
			}}
			dir := t.TempDir()
			l, err := openFS(dir, Config{SegmentBytes: 2048, NoSync: noSync}, fsys)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			appendN(t, l, 0, 100, 40) // 60 bytes a record: 3 segments or more
			segs := l.Stats().Segments
			if segs < 3 {
				t.Fatalf("%d segments, want rotations", segs)
			}
			mu.Lock()
			defer mu.Unlock()
			if noSync {
				if len(full) != 0 {
					t.Fatalf("full fsyncs of %v with NoSync", full)
				}
				return
			}
			want := []string{segName(segHeader{id: 1, firstSeq: 1})}
			if len(full) != segs-1 || full[0] != want[0] {
				t.Fatalf("full fsyncs of %v, want one per rotation (%d), the first of %s", full, segs-1, want[0])
			}
		})
	}
}
