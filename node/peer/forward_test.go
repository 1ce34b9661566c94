package peer

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
)

// fakeLeader is an api.Server whose Propose answers each frame, an 8-byte
// number, with that number as the result's index. gate, when set, holds each
// exchange until it is closed; from the (hold+1)th exchange on, hold2 holds
// them instead when set.
type fakeLeader struct {
	srv      *streamServer
	requests atomic.Int64
	frames   atomic.Int64
	mu       sync.Mutex
	sizes    []int // frames per request, in arrival order
	gate     chan struct{}
	hold     int64
	hold2    chan struct{}
	started  chan struct{} // one value per exchange that reached the handler
}

// proposeOnly is an api.Backend that implements Propose alone; the forwarding
// tests call nothing else.
type proposeOnly struct {
	api.Backend
	propose func(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error)
}

func (b proposeOnly) Propose(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	return b.propose(ctx, payloads, opts)
}

func newFakeLeader(t *testing.T, gate chan struct{}) *fakeLeader {
	t.Helper()
	l := &fakeLeader{gate: gate, started: make(chan struct{}, 1024)}
	l.srv = newStreamServerConfig(t, api.Config{}, proposeOnly{propose: l.propose})
	return l
}

func (l *fakeLeader) propose(ctx context.Context, frames [][]byte, _ wire.SubmitOptions) ([]wire.TxResult, error) {
	nth := l.requests.Add(1)
	l.frames.Add(int64(len(frames)))
	l.mu.Lock()
	l.sizes = append(l.sizes, len(frames))
	l.mu.Unlock()
	l.started <- struct{}{}
	switch {
	case l.hold2 != nil && nth > l.hold:
		select {
		case <-l.hold2:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case l.gate != nil:
		<-l.gate
	}
	var results []wire.TxResult
	for _, f := range frames {
		results = append(results, wire.TxResult{Status: wire.StatusCommitted, Index: binary.BigEndian.Uint64(f)})
	}
	return results, nil
}

func frameOf(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// forwardNode returns a follower's Forwarder that forwards in mode
// (modeStream or modeHTTP, as node's --forward).
func forwardNode(t *testing.T, mode string) *Forwarder {
	link := newLink(t, "follower")
	c, streams := NewClient(link), NewStreams(link)
	t.Cleanup(func() { streams.Close() })
	propose := streams.Propose
	if mode == modeHTTP {
		propose = c.Propose
	}
	return NewForwarder(propose)
}

// The forwarding modes of node's --forward.
const (
	modeStream = "stream"
	modeHTTP   = "http"
)

// eachForward runs test once per forwarding mode.
func eachForward(t *testing.T, test func(t *testing.T, mode string)) {
	for _, mode := range []string{modeStream, modeHTTP} {
		t.Run(mode, func(t *testing.T) { test(t, mode) })
	}
}

// checkResults fails unless results answer frames first..first+n-1 in order.
func checkResults(t *testing.T, results []wire.TxResult, err error, first uint64, n int) {
	t.Helper()
	if err != nil {
		t.Errorf("forward %d: %v", first, err)
		return
	}
	if len(results) != n {
		t.Errorf("forward %d: %d results for %d frames", first, len(results), n)
		return
	}
	for i, r := range results {
		if r.Index != first+uint64(i) {
			t.Errorf("forward %d: result %d has index %d, want %d", first, i, r.Index, first+uint64(i))
		}
	}
}

func TestForwardAlone(t *testing.T) {
	eachForward(t, func(t *testing.T, mode string) {
		l := newFakeLeader(t, nil)
		n := forwardNode(t, mode)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for i := range 5 {
			v := uint64(100 * (i + 1))
			res, err := n.Forward(ctx, l.srv.URL, [][]byte{frameOf(v), frameOf(v + 1)}, wire.SubmitOptions{})
			checkResults(t, res, err, v, 2)
		}
		if got := l.requests.Load(); got != 5 {
			t.Errorf("%d requests for 5 forwards one after another, want 5", got)
		}
		if len(n.queues) != 0 {
			t.Errorf("%d queues left after the forwards", len(n.queues))
		}
	})
}

// fwdHarness is a follower's Forwarder forwarding to a fake leader whose exchanges
// wait for gate, with the callers it starts.
type fwdHarness struct {
	t    *testing.T
	l    *fakeLeader
	n    *Forwarder
	gate chan struct{}
	ctx  context.Context
	wg   sync.WaitGroup
}

func newFwdHarness(t *testing.T, timeout time.Duration, mode string) *fwdHarness {
	h := &fwdHarness{t: t, n: forwardNode(t, mode), gate: make(chan struct{})}
	h.l = newFakeLeader(t, h.gate)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	h.ctx = ctx
	return h
}

// call starts a caller that forwards frames numbered v, v+1, … and checks
// that it gets their results.
func (h *fwdHarness) call(v uint64, frames int) {
	h.wg.Go(func() {
		fs := make([][]byte, frames)
		for i := range fs {
			fs[i] = frameOf(v + uint64(i))
		}
		res, err := h.n.Forward(h.ctx, h.l.srv.URL, fs, wire.SubmitOptions{})
		checkResults(h.t, res, err, v, frames)
	})
}

// takePlaces starts one caller per place and waits until each one's exchange
// is held at the leader.
func (h *fwdHarness) takePlaces(base uint64) {
	for i := range forwarders {
		h.call(base*uint64(i+1), 1)
	}
	for range forwarders {
		<-h.l.started
	}
}

// waitQueued waits until k callers wait in the queue.
func (h *fwdHarness) waitQueued(k int) {
	waitFor(h.t, func() bool {
		h.n.mu.Lock()
		defer h.n.mu.Unlock()
		q := h.n.queues[h.l.srv.URL]
		return q != nil && len(q.calls) == k
	})
}

// TestForwardGroups holds the leader's first exchanges so that every place is
// taken, queues more callers behind them, and checks that those go out grouped
// (one exchange, handed to the first of them) and that every caller gets its
// own results.
func TestForwardGroups(t *testing.T) {
	eachForward(t, func(t *testing.T, mode string) {
		h := newFwdHarness(t, 10*time.Second, mode)
		h.takePlaces(1000)
		// Every place is taken: these wait in the queue.
		const queued = 20
		for i := range queued {
			h.call(uint64(100_000+1000*i), 3)
		}
		h.waitQueued(queued)
		close(h.gate)
		h.wg.Wait()

		l, n := h.l, h.n
		if got, want := l.frames.Load(), int64(forwarders+3*queued); got != want {
			t.Errorf("leader saw %d frames, want %d", got, want)
		}
		if got := l.requests.Load(); got != forwarders+1 {
			t.Errorf("%d exchanges, want %d (one per place, then the queue as one group); sizes %v", got, forwarders+1, l.sizes)
		}
		if len(n.queues) != 0 {
			t.Errorf("%d queues left after the forwards", len(n.queues))
		}
	})
}

// TestForwardGroupLimit: queued frames beyond maxFwdFrames go in further
// exchanges, each within the limit.
func TestForwardGroupLimit(t *testing.T) {
	eachForward(t, func(t *testing.T, mode string) {
		h := newFwdHarness(t, 10*time.Second, mode)
		h.takePlaces(1_000_000)
		const queued, each = 10, 300 // 3,000 frames: at least 3 groups of ≤ 1,024
		for i := range queued {
			h.call(uint64(10_000_000+1000*i), each)
		}
		h.waitQueued(queued)
		close(h.gate)
		h.wg.Wait()
		l := h.l
		l.mu.Lock()
		defer l.mu.Unlock()
		total := 0
		for _, s := range l.sizes {
			if s > maxFwdFrames {
				t.Errorf("an exchange carried %d frames, more than %d", s, maxFwdFrames)
			}
			total += s
		}
		if total != forwarders+queued*each {
			t.Errorf("%d frames forwarded, want %d", total, forwarders+queued*each)
		}
	})
}

// TestForwardGiveUp: a queued caller whose context ends leaves the queue and
// is not forwarded; the others still are.
func TestForwardGiveUp(t *testing.T) {
	eachForward(t, func(t *testing.T, mode string) {
		h := newFwdHarness(t, 10*time.Second, mode)
		h.takePlaces(1000)
		short, cancelShort := context.WithCancel(h.ctx)
		gaveUp := make(chan error, 1)
		go func() {
			_, err := h.n.Forward(short, h.l.srv.URL, [][]byte{frameOf(7)}, wire.SubmitOptions{})
			gaveUp <- err
		}()
		h.waitQueued(1)
		h.call(9000, 1)
		h.waitQueued(2)
		cancelShort()
		if err := <-gaveUp; !errors.Is(err, context.Canceled) {
			t.Errorf("the caller that gave up got %v, want context.Canceled", err)
		}
		close(h.gate)
		h.wg.Wait()
		if got, want := h.l.frames.Load(), int64(forwarders+1); got != want {
			t.Errorf("leader saw %d frames, want %d (the caller that gave up must not be sent)", got, want)
		}
	})
}

// TestForwardDeadline: a caller that sends a group for others is not held past
// its own deadline when the exchange hangs; the exchange is cut then.
func TestForwardDeadline(t *testing.T) {
	eachForward(t, func(t *testing.T, mode string) {
		hang := make(chan struct{})
		defer close(hang)
		h := newFwdHarness(t, 20*time.Second, mode)
		h.l.hold, h.l.hold2 = forwarders, hang
		h.takePlaces(1000)
		short, cancelShort := context.WithTimeout(h.ctx, 500*time.Millisecond)
		defer cancelShort()
		type outcome struct {
			err  error
			took time.Duration
		}
		shortDone, longDone := make(chan outcome, 1), make(chan outcome, 1)
		start := time.Now()
		forward := func(ctx context.Context, v uint64, done chan<- outcome) {
			_, err := h.n.Forward(ctx, h.l.srv.URL, [][]byte{frameOf(v)}, wire.SubmitOptions{})
			done <- outcome{err, time.Since(start)}
		}
		go forward(short, 1, shortDone)
		h.waitQueued(1)
		go forward(h.ctx, 2, longDone)
		h.waitQueued(2)
		close(h.gate) // the places free up; the short caller sends both, and that hangs
		h.wg.Wait()
		s := <-shortDone
		if s.err == nil || s.took > 3*time.Second {
			t.Errorf("the short caller got %v after %v; want an error at about its 500ms deadline", s.err, s.took)
		}
		select {
		case lo := <-longDone:
			if lo.err == nil {
				t.Errorf("the long caller's exchange hung, yet it got results")
			}
		case <-time.After(5 * time.Second):
			t.Errorf("the long caller is still held 5s after the short caller's deadline cut the exchange")
		}
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
