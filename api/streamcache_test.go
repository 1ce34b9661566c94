package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pageReader is a read function for streamCache.get that counts its calls
// and answers count entries from its from, or err.
func pageReader(calls *atomic.Int32, from uint64, count int, err error) func() ([]byte, int, uint64, error) {
	return func() ([]byte, int, uint64, error) {
		calls.Add(1)
		if err != nil {
			return nil, 0, 0, err
		}
		return fmt.Appendf(nil, "events %d+%d", from, count), count, from + uint64(count), nil
	}
}

// TestStreamCacheShares: the streams that read a page from the same index get
// the events of one read; another index reads again.
func TestStreamCacheShares(t *testing.T) {
	c := newStreamCache()
	ctx := context.Background()
	var calls atomic.Int32
	for range 3 {
		ev, n, next, err := c.get(ctx, 10, pageReader(&calls, 10, 5, nil))
		if err != nil || string(ev) != "events 10+5" || n != 5 || next != 15 {
			t.Fatalf("get(10) = %q, %d, %d, %v; want events 10+5, 5, 15", ev, n, next, err)
		}
	}
	if calls.Load() != 1 {
		t.Fatalf("%d reads for three gets of one page; want 1", calls.Load())
	}
	if _, _, _, err := c.get(ctx, 15, pageReader(&calls, 15, 1, nil)); err != nil || calls.Load() != 2 {
		t.Fatalf("get(15): %v, %d reads in all; want a second read", err, calls.Load())
	}
}

// TestStreamCacheKeepsNoEmptyOrFailedPage: an empty page and a failed read are
// read again by the next get, so a stream at the tail sees what is applied
// after it and an error is not served to others.
func TestStreamCacheKeepsNoEmptyOrFailedPage(t *testing.T) {
	c := newStreamCache()
	ctx := context.Background()
	var calls atomic.Int32
	c.get(ctx, 7, pageReader(&calls, 7, 0, nil))
	if _, n, _, _ := c.get(ctx, 7, pageReader(&calls, 7, 2, nil)); n != 2 || calls.Load() != 2 {
		t.Fatalf("after an empty page: %d entries, %d reads; want 2 entries from a second read", n, calls.Load())
	}
	boom := errors.New("boom")
	if _, _, _, err := c.get(ctx, 20, pageReader(&calls, 20, 0, boom)); !errors.Is(err, boom) {
		t.Fatalf("failed read: %v, want boom", err)
	}
	if _, n, _, err := c.get(ctx, 20, pageReader(&calls, 20, 3, nil)); err != nil || n != 3 {
		t.Fatalf("after a failed read: %d entries, %v; want 3 from a new read", n, err)
	}
}

// TestStreamCacheWaiterReadsAfterEmpty: a stream that waited for another's
// read of a page that came back empty reads for itself: the other may have
// read before the entry this one was woken for.
func TestStreamCacheWaiterReadsAfterEmpty(t *testing.T) {
	c := newStreamCache()
	ctx := context.Background()
	release := make(chan struct{})
	var first atomic.Int32
	var wg sync.WaitGroup
	wg.Go(func() {
		c.get(ctx, 30, func() ([]byte, int, uint64, error) {
			first.Add(1)
			<-release
			return nil, 0, 30, nil
		})
	})
	for first.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	var calls atomic.Int32
	done := make(chan int)
	go func() {
		_, n, _, _ := c.get(ctx, 30, pageReader(&calls, 30, 4, nil))
		done <- n
	}()
	time.Sleep(20 * time.Millisecond) // the second get waits on the first's read
	close(release)
	if n := <-done; n != 4 || calls.Load() != 1 {
		t.Fatalf("waiter after an empty page: %d entries, %d reads of its own; want 4 from 1", n, calls.Load())
	}
	wg.Wait()
}

// TestStreamCacheEvicts: the cache keeps at most streamCachePages pages, the
// newest.
func TestStreamCacheEvicts(t *testing.T) {
	c := newStreamCache()
	ctx := context.Background()
	var calls atomic.Int32
	for i := range uint64(streamCachePages + 10) {
		c.get(ctx, 100+i, pageReader(&calls, 100+i, 1, nil))
	}
	if len(c.pages) != streamCachePages {
		t.Fatalf("%d pages kept; want %d", len(c.pages), streamCachePages)
	}
	before := calls.Load()
	c.get(ctx, 100, pageReader(&calls, 100, 1, nil)) // evicted: read again
	c.get(ctx, 100+streamCachePages+9, pageReader(&calls, 0, 1, nil))
	if got := calls.Load() - before; got != 1 {
		t.Fatalf("%d reads for an evicted and a kept page; want 1", got)
	}
}

// TestStreamCacheWaiterContext: a stream waiting for another's read stops
// with its context.
func TestStreamCacheWaiterContext(t *testing.T) {
	c := newStreamCache()
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	go c.get(context.Background(), 5, func() ([]byte, int, uint64, error) {
		close(started)
		<-release
		return []byte("x"), 1, 6, nil
	})
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, _, err := c.get(ctx, 5, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter: %v, want its deadline", err)
	}
}
