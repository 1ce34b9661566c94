package wal

import (
	"context"
	"errors"
	"testing"
	"time"
)

// lazyOutcome is what AppendBatchLazyFunc's then received.
type lazyOutcome struct {
	seqs []uint64
	err  error
}

// appendLazy queues payloads with AppendBatchLazyFunc and returns the channel
// that receives the outcome.
func appendLazy(t *testing.T, l *Log, payloads [][]byte) <-chan lazyOutcome {
	t.Helper()
	ch := make(chan lazyOutcome, 1)
	if err := l.AppendBatchLazyFunc(payloads, func(seqs []uint64, err error) { ch <- lazyOutcome{seqs, err} }); err != nil {
		t.Fatalf("AppendBatchLazyFunc() = %v", err)
	}
	return ch
}

func awaitLazy(t *testing.T, ch <-chan lazyOutcome, within time.Duration) lazyOutcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(within):
		t.Fatalf("then not called within %v", within)
		return lazyOutcome{}
	}
}

// TestAppendBatchLazyFunc: queued lazy appends are written together, in one
// write and without an fsync, once LazyDelay has passed; a process crash then
// keeps them and a power loss may not.
func TestAppendBatchLazyFunc(t *testing.T) {
	st := &syncTracker{synced: map[string][]byte{}}
	dir := t.TempDir()
	l, err := openFS(dir, Config{LazyDelay: 50 * time.Millisecond}, faultFS{beforeSync: st.beforeSync})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	first := appendN(t, l, 0, 1, 40)
	syncs, writes := l.w.syncs.Load(), l.w.writes.Load()
	start := time.Now()
	var chs []<-chan lazyOutcome
	var want []Record
	for i := 1; i <= 3; i++ {
		payloads := [][]byte{payloadFor(2*i, 40), payloadFor(2*i+1, 40)}
		chs = append(chs, appendLazy(t, l, payloads))
		want = append(want, Record{Payload: payloads[0]}, Record{Payload: payloads[1]})
	}
	for i, ch := range chs {
		o := awaitLazy(t, ch, 10*time.Second)
		if o.err != nil || len(o.seqs) != 2 {
			t.Fatalf("append %d: then(%v, %v), want two seqs and no error", i, o.seqs, o.err)
		}
		want[2*i].Seq, want[2*i+1].Seq = o.seqs[0], o.seqs[1]
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("lazy appends written after %v, before LazyDelay (50ms)", d)
	}
	if got := l.w.writes.Load() - writes; got != 1 {
		t.Errorf("three lazy appends took %d writes, want 1", got)
	}
	if got := l.w.syncs.Load() - syncs; got != 0 {
		t.Errorf("lazy appends made %d fsyncs, want 0", got)
	}
	all := append(append([]Record{}, first...), want...)
	checkPending(t, l, all)
	last := want[len(want)-1].Seq
	checkRecovered(t, copyDir(t, dir), Config{}, all, last+1)
	checkRecovered(t, st.powerLoss(t, dir), Config{}, first, first[0].Seq+1)
}

// TestAppendBatchLazyFuncSync: Sync writes and fsyncs queued lazy appends at
// once, without waiting for LazyDelay.
func TestAppendBatchLazyFuncSync(t *testing.T) {
	st := &syncTracker{synced: map[string][]byte{}}
	dir := t.TempDir()
	l, err := openFS(dir, Config{LazyDelay: time.Hour}, faultFS{beforeSync: st.beforeSync})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := payloadFor(1, 40)
	ch := appendLazy(t, l, [][]byte{p})
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	o := awaitLazy(t, ch, 10*time.Second)
	if o.err != nil || len(o.seqs) != 1 {
		t.Fatalf("then(%v, %v), want one seq", o.seqs, o.err)
	}
	want := []Record{{Seq: o.seqs[0], Payload: p}}
	checkRecovered(t, st.powerLoss(t, dir), Config{}, want, o.seqs[0]+1)
}

// TestAppendBatchLazyFuncClose: Close writes queued lazy appends and answers
// them before it returns; after it, AppendBatchLazyFunc refuses. A payload
// too large is refused at once, and then is never called.
func TestAppendBatchLazyFuncClose(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Config{LazyDelay: time.Hour, SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	called := false
	if err := l.AppendBatchLazyFunc([][]byte{make([]byte, 8192)}, func([]uint64, error) { called = true }); !errors.Is(err, ErrTooLarge) {
		t.Errorf("AppendBatchLazyFunc(too large) = %v, want ErrTooLarge", err)
	}
	p := payloadFor(1, 40)
	ch := appendLazy(t, l, [][]byte{p})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var o lazyOutcome
	select {
	case o = <-ch:
	default:
		t.Fatal("Close returned before then was called")
	}
	if o.err != nil || len(o.seqs) != 1 {
		t.Fatalf("then(%v, %v), want one seq", o.seqs, o.err)
	}
	if err := l.AppendBatchLazyFunc([][]byte{p}, func([]uint64, error) { called = true }); !errors.Is(err, ErrClosed) {
		t.Errorf("AppendBatchLazyFunc after Close = %v, want ErrClosed", err)
	}
	if called {
		t.Error("then was called for a refused append")
	}
	checkRecovered(t, dir, Config{}, []Record{{Seq: o.seqs[0], Payload: p}}, o.seqs[0]+1)
}

// TestMarksGather: done-marks wait for LazyDelay (here, for a Sync) and go out
// in one write.
func TestMarksGather(t *testing.T) {
	l, err := Open(t.TempDir(), Config{LazyDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	recs := appendN(t, l, 0, 4, 40)
	writes := l.w.writes.Load()
	for _, r := range recs[:3] {
		if err := l.MarkDone(r.Seq); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if got := l.w.writes.Load() - writes; got != 0 {
		t.Errorf("marks written %d times before LazyDelay or a Sync, want 0", got)
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := l.w.writes.Load() - writes; got != 1 {
		t.Errorf("three marks and a Sync took %d writes, want 1", got)
	}
	checkPending(t, l, recs[3:])
}

// TestCloseWritesCallbackMarks: the marks that lazy appends' callbacks make
// while Close writes them (a request answered just before the node stops)
// are written too, so a clean restart replays nothing.
func TestCloseWritesCallbackMarks(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Config{LazyDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	markErr := make(chan error, 1)
	if err := l.AppendBatchLazyFunc([][]byte{payloadFor(1, 40)}, func(seqs []uint64, err error) {
		if err == nil {
			err = l.MarkDone(seqs...)
		}
		markErr <- err
	}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-markErr; err != nil {
		t.Fatalf("MarkDone in the callback during Close = %v", err)
	}
	if err := l.MarkDone(1); !errors.Is(err, ErrClosed) {
		t.Errorf("MarkDone after Close = %v, want ErrClosed", err)
	}
	l, err = Open(dir, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	checkPending(t, l, nil)
}
