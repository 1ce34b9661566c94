package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// openStream makes c open its stream to n with one Submit, so that the
// SubmitAsyncs after it find it open and queue on it themselves.
func openStream(t *testing.T, c *Client) {
	t.Helper()
	tx := put("open")
	tx.IdempotencyKey = "open-1"
	if _, err := c.Submit(t.Context(), tx, wire.SubmitOptions{}); err != nil {
		t.Fatalf("Submit() to open the stream: %v", err)
	}
}

// asyncKeys submits n puts with the keys prefix-0... from one goroutine and
// returns their futures.
func asyncKeys(ctx context.Context, c *Client, prefix string, n int) ([]string, []*Future) {
	keys := make([]string, n)
	fs := make([]*Future, n)
	for i := range n {
		keys[i] = fmt.Sprint(prefix, i)
		tx := put("k")
		tx.IdempotencyKey = keys[i]
		fs[i] = c.SubmitAsync(ctx, tx, wire.SubmitOptions{})
	}
	return keys, fs
}

func TestSubmitAsyncQueuesOnTheStream(t *testing.T) {
	const writes = 64
	l := newLedger()
	n := newStreamNode(t, l.backend())
	g := newGate(writes)
	var goroutines atomic.Int64
	n.onRequest = func(k int, id uint64, tx wire.TxRequest) action {
		if k == 1 {
			return action{} // the Submit that opens the stream
		}
		g.wait(func() { goroutines.Store(int64(runtime.NumGoroutine())) }) // every request is in flight at once
		return action{}
	}
	c := NewClient(ClientConfig{Endpoints: []string{n.srv.URL}, MaxAsyncPending: writes})
	defer c.Close()
	openStream(t, c)
	before := runtime.NumGoroutine()
	writesBefore := c.conn.streams.writes.Load()
	keys, fs := asyncKeys(t.Context(), c, "async-", writes)
	for i, f := range fs {
		if res, err := f.Result(); err != nil || res.Status != wire.StatusCommitted || res.IdempotencyKey != keys[i] {
			t.Errorf("Result(%s) = %+v, %v; want committed", keys[i], res, err)
		}
	}
	l.wantOnce(t, keys...)
	// The node holds a goroutine per request; the Client none per write.
	if g := goroutines.Load(); g >= int64(before+writes+writes/2) {
		t.Errorf("%d goroutines with %d writes in flight, %d before: want no goroutine per SubmitAsync", g, writes, before)
	}
	if got := c.conn.streams.writes.Load() - writesBefore; got >= writes {
		t.Errorf("writes = %d for %d requests, want fewer: queued requests share a Write", got, writes)
	}
	if got := n.opened.Load(); got != 1 {
		t.Errorf("streams opened = %d, want 1", got)
	}
	if got := c.AsyncPending(); got != 0 {
		t.Errorf("AsyncPending() = %d, want 0", got)
	}
}

func TestSubmitAsyncStreamDies(t *testing.T) {
	const writes = 32
	l := newLedger()
	n := newStreamNode(t, l.backend())
	n.onRequest = loseAnswers(l, 2, writes) // the opening Submit, and the new stream's: served
	c := streamClient(n.srv.URL)
	defer c.Close()
	openStream(t, c)
	keys, fs := asyncKeys(t.Context(), c, "dies-", writes)
	for i, f := range fs {
		if res, err := f.Result(); err != nil || res.Status != wire.StatusCommitted {
			t.Errorf("Result(%s) = %+v, %v; want committed, resolved by a lookup", keys[i], res, err)
		}
	}
	l.wantOnce(t, keys...)
}

func TestSubmitAsyncStreamFull(t *testing.T) {
	l := newLedger()
	n := newStreamNode(t, l.backend())
	n.onRequest = func(k int, id uint64, tx wire.TxRequest) action {
		if k >= 2 && k <= 4 {
			return streamFull
		}
		return action{}
	}
	c := streamClient(n.srv.URL)
	defer c.Close()
	openStream(t, c)
	tx := put("k")
	tx.IdempotencyKey = "full-async"
	if res, err := c.SubmitAsync(t.Context(), tx, wire.SubmitOptions{}).Result(); err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("Result() = %+v, %v; want committed after the 429s", res, err)
	}
	if got := n.requests.Load(); got != 5 {
		t.Errorf("stream requests = %d, want 5 (the opening one, three refused, one served)", got)
	}
	l.wantOnce(t, "full-async")
}

func TestSubmitAsyncErrorAnswer(t *testing.T) {
	n := newStreamNode(t, newLedger().backend())
	n.onRequest = func(k int, id uint64, tx wire.TxRequest) action {
		if k >= 2 {
			return action{status: http.StatusBadRequest, body: `{"error":{"code":"invalid_param","message":"ack=all: not available"}}`}
		}
		return action{}
	}
	c := streamClient(n.srv.URL)
	defer c.Close()
	openStream(t, c)
	_, err := c.SubmitAsync(t.Context(), put("k"), wire.SubmitOptions{}).Result()
	_, want := c.Submit(t.Context(), put("k"), wire.SubmitOptions{})
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("Result() = %v, want invalid_param as Submit gives it: %v", err, want)
	}
	if got := n.requests.Load(); got != 3 {
		t.Errorf("stream requests = %d, want 3: a 400 is not retried", got)
	}
}

func TestSubmitAsyncDeadline(t *testing.T) {
	l := newLedger()
	n := newStreamNode(t, l.backend())
	hold := make(chan struct{})
	defer close(hold)
	n.onRequest = func(k int, id uint64, tx wire.TxRequest) action {
		if k == 1 {
			return action{}
		}
		<-hold // never answered while the test runs; pings are
		return action{drop: true}
	}
	c := streamClient(n.srv.URL)
	defer c.Close()
	openStream(t, c)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	tx := put("k")
	tx.IdempotencyKey = "late-1"
	f := c.SubmitAsync(ctx, tx, wire.SubmitOptions{})
	select {
	case <-f.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("future not done 10 s after its ctx's deadline")
	}
	res, err := f.Result()
	if !errors.Is(err, wire.ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Result() error = %v, want ErrUnknownOutcome and the deadline", err)
	}
	if res.Status != wire.StatusUnknown || res.IdempotencyKey != "late-1" {
		t.Errorf("Result() = %+v, want status unknown with the key", res)
	}
	if got := c.AsyncPending(); got != 0 {
		t.Errorf("AsyncPending() = %d, want 0", got)
	}
}

// TestStreamAttemptDeadline checks that an attempt on an open stream ends at
// AttemptTimeout plus the server's time, not earlier and not only at the
// call's end, and that Submit and SubmitAsync then go on: look the write up,
// send it again, once.
func TestStreamAttemptDeadline(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprint("async=", async), func(t *testing.T) {
			l := newLedger()
			n := newStreamNode(t, l.backend())
			hold := make(chan struct{})
			defer close(hold)
			n.onRequest = func(k int, id uint64, tx wire.TxRequest) action {
				if k == 2 {
					<-hold // the first attempt: never answered; pings are
					return action{drop: true}
				}
				return action{}
			}
			c := NewClient(ClientConfig{Endpoints: []string{n.srv.URL}, Timeout: 20 * time.Second,
				AttemptTimeout: 300 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
				LookupWait: 10 * time.Millisecond, streamPingAfter: 50 * time.Millisecond, streamDeadAfter: 5 * time.Second})
			defer c.Close()
			openStream(t, c)
			tx := put("k")
			tx.IdempotencyKey = "attempt-1"
			opts := wire.SubmitOptions{Timeout: 100 * time.Millisecond}
			start := time.Now()
			var res wire.TxResult
			var err error
			if async {
				res, err = c.SubmitAsync(t.Context(), tx, opts).Result()
			} else {
				res, err = c.Submit(t.Context(), tx, opts)
			}
			took := time.Since(start)
			if err != nil || res.Status != wire.StatusCommitted {
				t.Fatalf("= %+v, %v; want committed by the second attempt", res, err)
			}
			if took < 400*time.Millisecond || took > 10*time.Second {
				t.Errorf("took %v, want the first attempt to end at its bound (400ms) and well before the call's (20s)", took)
			}
			if got := n.requests.Load(); got != 3 {
				t.Errorf("stream requests = %d, want 3 (opening, lost, again)", got)
			}
			if got := l.count("attempt-1"); got != 1 {
				t.Errorf("carried out %d times, want once", got)
			}
		})
	}
}

func TestSubmitAsyncUnknownOutcome(t *testing.T) {
	l := newLedger()
	n := newStreamNode(t, l.backend())
	n.onRequest = func(k int, id uint64, tx wire.TxRequest) action {
		if k == 2 {
			r := l.submit(tx) // carried out; the answer says the outcome is open
			return action{status: http.StatusServiceUnavailable,
				body: fmt.Sprintf(`{"error":{"code":"unknown_outcome","message":"lost the leader","txid":%q},"txid":%q,"status":"unknown"}`, r.TxID, r.TxID)}
		}
		return action{}
	}
	c := streamClient(n.srv.URL)
	defer c.Close()
	openStream(t, c)
	tx := put("k")
	tx.IdempotencyKey = "open-outcome"
	res, err := c.SubmitAsync(t.Context(), tx, wire.SubmitOptions{}).Result()
	if err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("Result() = %+v, %v; want committed, found by a lookup", res, err)
	}
	if got := l.count("open-outcome"); got != 1 {
		t.Errorf("carried out %d times, want once", got)
	}
	if got := n.requests.Load(); got != 2 {
		t.Errorf("stream requests = %d, want 2: looked up, not sent again", got)
	}
}
