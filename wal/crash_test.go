package wal

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// syncTracker is a faultFS hook that remembers each file's content at its
// last fsync, so a test can put files back to it: what a power loss may
// leave. (Records overwrite zeros written ahead, so the size alone does not
// tell what a sync covered.)
type syncTracker struct {
	mu     sync.Mutex
	synced map[string][]byte // base name → content at last fsync
}

func (st *syncTracker) beforeSync(name string) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.synced[filepath.Base(name)] = b
	return nil
}

// powerLoss copies dir and puts each segment in the copy back to its
// content at its last fsync.
func (st *syncTracker) powerLoss(t *testing.T, dir string) string {
	t.Helper()
	cp := copyDir(t, dir)
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, name := range segFiles(t, cp) {
		b, ok := st.synced[name]
		if !ok {
			t.Fatalf("segment %s was never fsynced", name)
		}
		if err := os.WriteFile(filepath.Join(cp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cp
}

// waitFor polls cond until it holds or a deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDurability backs the durability contract in doc.go: what a process
// crash (the files as the OS has them) and a power loss (the files as of
// their last fsync) leave of acknowledged appends and of done-marks.
func TestDurability(t *testing.T) {
	tests := []struct {
		name        string
		syncMarks   bool // call Sync after MarkDone
		powerLoss   bool
		marksKept   bool
		appendAfter int // records appended after the marks
	}{
		{name: "process crash keeps written marks", marksKept: true},
		{name: "power loss may lose unsynced marks", powerLoss: true},
		{name: "power loss keeps synced marks", syncMarks: true, powerLoss: true, marksKept: true},
		{name: "power loss keeps marks followed by an append", powerLoss: true, marksKept: true, appendAfter: 1},
		{name: "power loss keeps marks across rotation", powerLoss: true, marksKept: true, appendAfter: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &syncTracker{synced: map[string][]byte{}}
			dir := t.TempDir()
			l, err := openFS(dir, Config{SegmentBytes: 2048}, faultFS{beforeSync: st.beforeSync})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			recs := appendN(t, l, 0, 5, 40)
			before := l.Stats().Bytes
			if err := l.MarkDone(1, 2); err != nil {
				t.Fatal(err)
			}
			if tt.syncMarks {
				if err := l.Sync(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "the done-mark to be written", func() bool { return l.Stats().Bytes > before })
			more := appendN(t, l, 5, tt.appendAfter, 40)

			// The crash: the log is never closed; we look at its files.
			var crashed string
			if tt.powerLoss {
				crashed = st.powerLoss(t, dir)
			} else {
				crashed = copyDir(t, dir)
			}
			want := append(recs, more...)
			if tt.marksKept {
				want = want[2:]
			}
			checkRecovered(t, crashed, Config{}, want, uint64(len(recs)+len(more)+1))
		})
	}
}

// TestLazyAppend: a lazy append is written (a process crash keeps it) but not
// fsynced (a power loss may lose it) until Sync, which makes it durable.
func TestLazyAppend(t *testing.T) {
	for _, synced := range []bool{false, true} {
		t.Run(map[bool]string{false: "not synced", true: "synced"}[synced], func(t *testing.T) {
			st := &syncTracker{synced: map[string][]byte{}}
			dir := t.TempDir()
			l, err := openFS(dir, Config{}, faultFS{beforeSync: st.beforeSync})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			first := appendN(t, l, 0, 1, 40) // an fsynced record, so the segment has a sync point
			syncs := l.w.syncs.Load()
			payloads := [][]byte{payloadFor(1, 40), payloadFor(2, 40)}
			seqs, err := l.AppendBatchLazy(context.Background(), payloads)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.w.syncs.Load(); got != syncs {
				t.Errorf("lazy append made %d fsyncs, want 0", got-syncs)
			}
			lazy := []Record{{Seq: seqs[0], Payload: payloads[0]}, {Seq: seqs[1], Payload: payloads[1]}}
			if synced {
				if err := l.Sync(context.Background()); err != nil {
					t.Fatal(err)
				}
				if l.w.syncs.Load() == syncs {
					t.Errorf("Sync after a lazy append made no fsync")
				}
			}
			all := append(append([]Record{}, first...), lazy...)
			checkRecovered(t, copyDir(t, dir), Config{}, all, seqs[1]+1)
			want := first
			if synced {
				want = all
			}
			next := seqs[1] + 1
			if !synced {
				next = first[0].Seq + 1
			}
			checkRecovered(t, st.powerLoss(t, dir), Config{}, want, next)
		})
	}
}
