package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// Future is the result of a SubmitAsync to come. Done is closed once it is
// there; Result returns it.
type Future struct {
	done chan struct{}
	res  wire.TxResult
	err  error
}

// Done returns a channel closed when the result is there.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result waits for the result and returns it: what Submit would have
// returned.
func (f *Future) Result() (wire.TxResult, error) {
	<-f.done
	return f.res, f.err
}

// SubmitAsync submits tx as Submit does and returns its Future at once, as
// nats.go's PublishAsync does. Concurrent submissions share the node's write
// stream: their requests go out together and their answers come back as
// each commits. At most ClientConfig.MaxAsyncPending futures are unresolved
// at a time: SubmitAsync blocks while that many are, and when ctx ends first
// it returns a Future that is already done with ctx's error (nothing was
// sent). ctx bounds the submission too, as it bounds Submit.
//
// When the stream to the node a write goes to first is open, SubmitAsync
// queues the request on it itself, and the stream's reader resolves the
// Future from the answer: no goroutine per write. Anything but a plain
// answer 200 or 202 (an error, a lost stream, the time of the attempt
// running out) hands the write to a goroutine that goes on as Submit does
// after that first attempt: the same retries, idempotency key and lookups.
func (c *kv) SubmitAsync(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) *Future {
	f := &Future{done: make(chan struct{})}
	select {
	case c.async <- struct{}{}:
	case <-ctx.Done():
		f.err = ctx.Err()
		close(f.done)
		return f
	}
	if c.submitQueued(ctx, &tx, opts, f) {
		return f
	}
	go func() {
		c.settle(f)(c.Submit(ctx, tx, opts))
	}()
	return f
}

// settle returns what resolves f with a result and frees its place.
func (c *kv) settle(f *Future) func(wire.TxResult, error) {
	return func(res wire.TxResult, err error) {
		f.res, f.err = res, err
		<-c.async
		close(f.done)
	}
}

// AsyncPending returns the number of SubmitAsync futures not resolved yet.
func (c *kv) AsyncPending() int { return len(c.async) }

// asyncWrite is a SubmitAsync write whose first attempt is queued on a
// stream, waiting for its answer.
type asyncWrite struct {
	c      *kv
	f      *Future
	ctx    context.Context // the caller's
	t      *txStream
	base   string
	req    request
	opts   wire.SubmitOptions
	key    string
	callDL time.Time // the bound of the whole call, as callContext sets it
	tryDL  time.Time // the bound of the first attempt, as attemptContext sets it

	mu      sync.Mutex // held while the call is queued and its timers set
	id      uint64
	timer   *time.Timer
	stopCtx func() bool
}

// submitQueued queues tx's first attempt on the open stream of the node a
// write goes to first, and reports whether it did; false leaves the write to
// Submit (tx has its idempotency key by then, if it had none).
func (c *kv) submitQueued(ctx context.Context, tx *wire.TxRequest, opts wire.SubmitOptions, f *Future) bool {
	if c.streams == nil || ctx.Err() != nil {
		return false
	}
	base, err := c.firstWrite()
	if err != nil {
		return false
	}
	t := c.streams.open(base)
	if t == nil {
		return false
	}
	req, err := writeRequest(tx)
	if err != nil {
		return false // Submit reports it
	}
	now := time.Now()
	callDL := now.Add(max(c.cfg.Timeout, serverTimeout(opts)+c.cfg.AttemptTimeout))
	if dl, ok := ctx.Deadline(); ok && dl.Before(callDL) {
		callDL = dl
	}
	var ok bool
	if req.rawQuery, req.serverTime, ok = writeQueryBy(callDL, true, opts); !ok {
		return false
	}
	w := &asyncWrite{c: c, f: f, ctx: ctx, t: t, base: base, req: req, opts: opts, key: tx.IdempotencyKey,
		callDL: callDL, tryDL: now.Add(c.cfg.AttemptTimeout + req.serverTime)}
	if w.tryDL.After(callDL) {
		w.tryDL = callDL
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.id, err = t.enqueue(req.rawQuery, req.body, &streamCall{fn: w.answered}); err != nil {
		return false
	}
	w.timer = time.AfterFunc(time.Until(w.tryDL), w.expired)
	if ctx.Done() != nil {
		w.stopCtx = context.AfterFunc(ctx, w.expired)
	}
	return true
}

// stop stops the timers of w.
func (w *asyncWrite) stop() {
	w.mu.Lock()
	w.timer.Stop()
	if w.stopCtx != nil {
		w.stopCtx()
	}
	w.mu.Unlock()
}

// answered takes the answer of the stream (or its failure); it runs in the
// stream's reader and must not block.
func (w *asyncWrite) answered(r streamReply) {
	w.stop()
	if r.err == nil {
		w.c.setDown(w.base, false)
		if r.a.status == http.StatusOK || r.a.status == http.StatusAccepted {
			var res wire.TxResult
			if wire.DecodeTxResultJSON(r.a.body, &res) {
				w.c.prefer(w.base)
				w.c.settle(w.f)(res, nil)
				return
			}
		}
	} else if te, ok := errors.AsType[*TransportError](r.err); ok && te.sent && w.ctx.Err() == nil && time.Now().Before(w.tryDL) {
		w.c.setDown(w.base, true) // as streams.roundTrip does
	}
	go w.goOn(&attemptOutcome{a: r.a, err: r.err})
}

// expired ends the first attempt when its time or the caller's ctx ran out
// before its answer: its message went out (or will), so its outcome is open.
func (w *asyncWrite) expired() {
	w.mu.Lock()
	id := w.id
	w.mu.Unlock()
	if !w.t.forget(id) {
		return // answered meanwhile
	}
	w.stop()
	err := w.ctx.Err()
	if err == nil {
		err = context.DeadlineExceeded
	}
	go w.goOn(&attemptOutcome{err: &TransportError{endpoint: w.base, err: fmt.Errorf("write stream: %w", err), sent: true}})
}

// goOn runs the rest of Submit after the first attempt's outcome first.
func (w *asyncWrite) goOn(first *attemptOutcome) {
	ctx, cancel := context.WithDeadline(w.ctx, w.callDL)
	defer cancel()
	if first.err == nil && first.a.status == http.StatusTooManyRequests {
		if code, aerr := classify(first.a); code == wire.CodeStreamFull {
			// Not carried out: send it again after a pause, as
			// streams.roundTrip does.
			first = nil
			if err := w.c.pause(ctx, 1); err != nil {
				w.c.settle(w.f)(wire.TxResult{}, giveUp(aerr, err))
				return
			}
		}
	}
	w.c.settle(w.f)(w.c.submit(ctx, w.base, w.req, w.opts, w.key, first))
}
