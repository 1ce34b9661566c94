package client

import (
	"context"

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

// SubmitAsync submits tx as Submit does, in a goroutine of its own, and
// returns its Future at once, as nats.go's PublishAsync does. Concurrent
// submissions share the node's write stream: their requests go out together
// and their answers come back as each commits. At most
// ClientConfig.MaxAsyncPending futures are unresolved at a time: SubmitAsync
// blocks while that many are, and when ctx ends first it returns a Future
// that is already done with ctx's error (nothing was sent). ctx bounds the
// submission too, as it bounds Submit.
func (c *kv) SubmitAsync(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) *Future {
	f := &Future{done: make(chan struct{})}
	select {
	case c.async <- struct{}{}:
	case <-ctx.Done():
		f.err = ctx.Err()
		close(f.done)
		return f
	}
	go func() {
		f.res, f.err = c.Submit(ctx, tx, opts)
		<-c.async
		close(f.done)
	}()
	return f
}

// AsyncPending returns the number of SubmitAsync futures not resolved yet.
func (c *kv) AsyncPending() int { return len(c.async) }
