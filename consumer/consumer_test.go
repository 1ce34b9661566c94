package consumer

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/lease"
)

const group = "proj"

// transfers logs n writes of key "acct" and returns their indexes.
func transfers(f *fakeTxlog, n int) []uint64 {
	var idx []uint64
	for range n {
		idx = append(idx, f.appendWrite(wire.Op{Op: wire.OpPut, Key: "acct", Value: json.RawMessage(`1`)}))
	}
	return idx
}

// project is the Effects of the tests: one unconditional put of proj/<index>
// per write of "acct", so that a key's version counts its applications.
func project(_ context.Context, entries []wire.LogEntry) ([]wire.Op, error) {
	var ops []wire.Op
	for _, e := range entries {
		if e.Status == wire.StatusCommitted && len(e.Ops) > 0 && e.Ops[0].Key == "acct" {
			ops = append(ops, wire.Op{Op: wire.OpPut, Key: projKey(e.Index), Value: json.RawMessage(`1`)})
		}
	}
	return ops, nil
}

func newConsumer(t *testing.T, f *fakeTxlog, batch int) *Consumer {
	t.Helper()
	c, err := New(Config{Client: f, Group: group, Lease: lease.Config{Holder: "c1", TTL: 2 * time.Second}, Batch: batch, RetryEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runUntil runs c with h until group's offset reaches offset, and returns
// what Run returned.
func runUntil(t *testing.T, f *fakeTxlog, c *Consumer, h Handler, offset uint64) error {
	t.Helper()
	f.watch(group, offset)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, h) }()
	select {
	case <-f.reached:
		cancel()
		return <-done
	case err := <-done:
		cancel()
		return err
	case <-time.After(10 * time.Second):
		cancel()
		<-done
		t.Fatalf("offset %d not reached; at %d", offset, f.offset(group))
		return nil
	}
}

func checkOnce(t *testing.T, f *fakeTxlog, idx []uint64) {
	t.Helper()
	for _, i := range idx {
		if v := f.version(projKey(i)); v != 1 {
			t.Errorf("entry %d projected %d times, want once", i, v)
		}
	}
}

// TestExactlyOnce: every write is projected once, in batches, and the
// offset ends at the last one.
func TestExactlyOnce(t *testing.T) {
	f := newFake()
	idx := transfers(f, 25)
	c := newConsumer(t, f, 4)
	if err := runUntil(t, f, c, ExactlyOnce(project), idx[len(idx)-1]); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v, want context.Canceled", err)
	}
	checkOnce(t, f, idx)
}

// TestExactlyOnceUnknownOutcome: commits that applied but answered an error
// are learned by the probe, not applied again.
func TestExactlyOnceUnknownOutcome(t *testing.T) {
	f := newFake()
	idx := transfers(f, 12)
	f.lostAnswers = 3
	c := newConsumer(t, f, 2)
	if err := runUntil(t, f, c, ExactlyOnce(project), idx[len(idx)-1]); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if f.lostAnswers != 0 {
		t.Fatalf("%d lost answers left: the test did not lose any", f.lostAnswers)
	}
	checkOnce(t, f, idx)
}

// TestWaitsForNewEntries: a Consumer that has caught up waits in the read
// of the log, and an entry appended then is handed over at once, not after
// a pause (RetryEvery is an hour here).
func TestWaitsForNewEntries(t *testing.T) {
	f := newFake()
	c, err := New(Config{Client: f, Group: group, Lease: lease.Config{Holder: "c1", TTL: 2 * time.Second}, RetryEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, ExactlyOnce(project)) }()
	defer func() { cancel(); <-done }()
	select {
	case <-f.waiting:
	case err := <-done:
		t.Fatalf("Run: %v before waiting", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the Consumer never waited in a read of the log")
	}
	idx := transfers(f, 1)
	f.watch(group, idx[0])
	select {
	case <-f.reached:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatalf("entry %d not handed over in 5s; offset %d", idx[0], f.offset(group))
	}
	checkOnce(t, f, idx)
}

// TestResumesFromOffset: a second term starts past what the first
// committed.
func TestResumesFromOffset(t *testing.T) {
	f := newFake()
	idx := transfers(f, 3)
	if err := runUntil(t, f, newConsumer(t, f, 3), ExactlyOnce(project), idx[2]); !errors.Is(err, context.Canceled) {
		t.Fatalf("first Run: %v", err)
	}
	f.reached = make(chan struct{})
	idx = append(idx, transfers(f, 3)...)
	if err := runUntil(t, f, newConsumer(t, f, 3), ExactlyOnce(project), idx[5]); !errors.Is(err, context.Canceled) {
		t.Fatalf("second Run: %v", err)
	}
	checkOnce(t, f, idx)
}

// TestFencedOut: once another consumer takes the lease, the old one's
// commit is refused with its effects, and Run stops with ErrFenced.
func TestFencedOut(t *testing.T) {
	f := newFake()
	idx := transfers(f, 6)
	taken := false
	f.afterCommit = func(f *fakeTxlog) {
		if !taken && f.offsets[group] >= idx[1] {
			taken = true
			f.tokens[LeaseName(group)]++ // another consumer's grant
		}
	}
	err := runUntil(t, f, newConsumer(t, f, 2), ExactlyOnce(project), idx[5])
	if !errors.Is(err, ErrFenced) && !errors.Is(err, lease.ErrLost) {
		t.Fatalf("Run: %v, want ErrFenced or lease.ErrLost", err)
	}
	checkOnce(t, f, idx[:2])
	for _, i := range idx[2:] {
		if v := f.version(projKey(i)); v != 0 {
			t.Errorf("entry %d projected by a fenced-out consumer", i)
		}
	}
	if got := f.offset(group); got != idx[1] {
		t.Errorf("offset %d, want %d", got, idx[1])
	}
}

// TestHandlerError: a failing Handler ends Run with its error, and its
// batch's offset is not committed.
func TestHandlerError(t *testing.T) {
	f := newFake()
	idx := transfers(f, 4)
	boom := errors.New("boom")
	calls := 0
	h := func(ctx context.Context, b *Batch) error {
		calls++
		if calls == 2 {
			return boom
		}
		return nil
	}
	if err := runUntil(t, f, newConsumer(t, f, 2), h, idx[3]); !errors.Is(err, boom) {
		t.Fatalf("Run: %v, want boom", err)
	}
	if got := f.offset(group); got != idx[1] {
		t.Errorf("offset %d, want %d (the first batch's)", got, idx[1])
	}
}

// TestConfig: the required fields and bounds.
func TestConfig(t *testing.T) {
	f := newFake()
	for _, cfg := range []Config{
		{Group: group, Lease: lease.Config{Holder: "h"}},
		{Client: f, Lease: lease.Config{Holder: "h"}},
		{Client: f, Group: group},
		{Client: f, Group: group, Lease: lease.Config{Holder: "h"}, Batch: maxBatch + 1},
		{Client: f, Group: group, Lease: lease.Config{Holder: "h"}, RetryEvery: -1},
		{Client: f, Group: group, Lease: lease.Config{Holder: "h", TTL: time.Millisecond}},
		{Client: f, Group: group, Lease: lease.Config{Holder: "h", Name: "other"}},
		{Client: f, Group: group, Lease: lease.Config{Holder: "h", Client: f}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}
