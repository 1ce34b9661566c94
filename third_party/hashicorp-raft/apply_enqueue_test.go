package raft

import (
	"errors"
	"testing"
	"time"
)

// TestApplyLogEnqueue: txlog's ApplyLog enqueues without a timer when applyCh
// has room, and otherwise keeps upstream's outcomes: ErrEnqueueTimeout once
// the timeout passes with applyCh full, ErrRaftShutdown after shutdown.
func TestApplyLogEnqueue(t *testing.T) {
	r := &Raft{applyCh: make(chan *logFuture, 1), shutdownCh: make(chan struct{})}

	f := r.ApplyLog(Log{Data: []byte("a")}, time.Minute)
	lf, ok := f.(*logFuture)
	if !ok {
		t.Fatalf("with room in applyCh: %T, want the log future", f)
	}
	if got := <-r.applyCh; got != lf || string(got.log.Data) != "a" || got.log.Type != LogCommand {
		t.Fatalf("applyCh holds %+v, want the future of entry a", got)
	}

	r.applyCh <- &logFuture{} // full now
	start := time.Now()
	if err := r.ApplyLog(Log{Data: []byte("b")}, 20*time.Millisecond).Error(); !errors.Is(err, ErrEnqueueTimeout) {
		t.Fatalf("with applyCh full: %v, want ErrEnqueueTimeout", err)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("gave up after %v, before the timeout", waited)
	}

	// Full, no timeout: it waits until the leader loop takes an entry.
	done := make(chan ApplyFuture)
	go func() { done <- r.ApplyLog(Log{Data: []byte("c")}, 0) }()
	select {
	case f := <-done:
		t.Fatalf("returned %v with applyCh full and no timeout", f)
	case <-time.After(20 * time.Millisecond):
	}
	<-r.applyCh
	if got := (<-r.applyCh).log.Data; string(got) != "c" {
		t.Fatalf("applyCh holds %q, want c", got)
	}
	if _, ok := (<-done).(*logFuture); !ok {
		t.Fatal("the waiting ApplyLog did not return its future")
	}

	close(r.shutdownCh)
	if err := r.ApplyLog(Log{Data: []byte("d")}, time.Minute).Error(); !errors.Is(err, ErrRaftShutdown) {
		t.Fatalf("after shutdown, with room in applyCh: %v, want ErrRaftShutdown", err)
	}
	if len(r.applyCh) != 0 {
		t.Fatal("an entry was enqueued after shutdown")
	}
}
