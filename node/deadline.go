package node

import (
	"context"
	"time"
)

// A write request has two deadlines: its own (ctx's, or opts.Timeout), by
// which it is answered, and its proposal's, a little earlier (withReserve),
// which keeps the rest for parking or looking up what is still open. Each
// deadline of a context is a runtime timer, made and stopped per request:
// on the write path that was a measurable share of the CPU per write
// (docs/performance.md). So the API leaves the request's own deadline to the
// node (api.SelfTimedBackend), and a request makes its proposal's timer
// only: its own is made only when something waits on it after the proposal
// (an open transaction to park or look up, ack=all's checks, a resubmission
// that waits for its entry), which the common write does not.

// reqDeadline is a write request's context and deadline, its deadline's
// timer made the first time ctx is asked for. Used by the request's
// goroutine only.
type reqDeadline struct {
	parent context.Context
	dl     time.Time // zero: none
	made   context.Context
	cancel context.CancelFunc
}

// newReqDeadline returns the deadline of a request with context ctx and
// timeout: ctx's deadline when it has one (the API's handlers then made it
// timeout from the request's start), else timeout from now (0: none).
func newReqDeadline(ctx context.Context, timeout time.Duration) *reqDeadline {
	r := &reqDeadline{parent: ctx}
	if dl, ok := ctx.Deadline(); ok {
		r.dl = dl
	} else if timeout > 0 {
		r.dl = time.Now().Add(timeout)
	}
	return r
}

// ctx returns the request's context, which ends at its deadline.
func (r *reqDeadline) ctx() context.Context {
	if r.made != nil {
		return r.made
	}
	if _, ok := r.parent.Deadline(); ok || r.dl.IsZero() {
		r.made, r.cancel = r.parent, func() {} // the parent's deadline is the request's
		return r.made
	}
	r.made, r.cancel = context.WithDeadline(r.parent, r.dl)
	return r.made
}

// proposal returns the context of the request's proposal: withReserve of
// the request's context, made from the parent, with one timer.
func (r *reqDeadline) proposal() (context.Context, context.CancelFunc) {
	if r.made != nil {
		return withReserve(r.made)
	}
	if r.dl.IsZero() {
		return context.WithCancel(r.parent)
	}
	return context.WithDeadline(r.parent, reserved(r.dl))
}

// stop releases the request's timer, if it made one.
func (r *reqDeadline) stop() {
	if r.cancel != nil {
		r.cancel()
	}
}
