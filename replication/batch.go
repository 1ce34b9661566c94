package replication

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/txlog/txlog/store"
)

// Applied is the outcome of one entry proposed by ApplyMany.
type Applied struct {
	Result store.Result
	Index  uint64
	Err    error // as Apply's errors
}

// ApplyMany proposes entries in the order given, so that they enter the log in
// that order, and waits for all of them. Raft writes them in shared batches.
// Errors per entry are Apply's. Once one entry cannot be proposed
// (ErrNotLeader, or ctx's deadline passed before it reached raft), the later
// ones are not proposed either. One exception: if this server loses and
// regains leadership while ApplyMany hands entries to raft, an entry can fail
// with ErrNotLeader and a later one still be proposed.
func (r *Raft) ApplyMany(ctx context.Context, datas [][]byte) []Applied {
	out := make([]Applied, len(datas))
	futures := make([]raft.ApplyFuture, len(datas))
	var stop error // why the rest are not proposed
	for i, d := range datas {
		// Recomputed per entry: once an enqueue timed out at the deadline, every
		// later entry finds no time left, so none is proposed after a gap.
		timeout, err := raftTimeout(ctx)
		switch {
		case stop != nil:
		case err != nil:
			stop = fmt.Errorf("apply: %w", err)
		case r.raft.State() != raft.Leader:
			stop = ErrNotLeader
		}
		if stop != nil {
			out[i].Err = stop
			continue
		}
		futures[i] = r.raft.Apply(d, timeout)
	}
	waits := make([]raft.Future, len(futures))
	for i, f := range futures {
		if f != nil {
			waits[i] = f
		}
	}
	errs := r.awaitMany(ctx, waits)
	for i, f := range futures {
		if f != nil {
			out[i] = r.outcome(f, errs[i])
		}
	}
	return out
}

// awaitMany waits for futures (nil ones are skipped) in order, for ctx and for
// Close, whichever comes first, and returns each future's raw error: when ctx
// ends or the server stops first, the futures resolved by then keep their result
// (a known outcome beats an unknown one) and the rest get ctx's or the shutdown's
// error. Raft futures have no channel, so one goroutine blocks in their Error()
// in turn (raft resolves a server's futures in log order). It is not tracked:
// raft answers every future it dequeues, but not one still queued when it shuts
// down, and then the goroutine (which holds nothing) stays blocked for good.
func (r *Raft) awaitMany(ctx context.Context, futures []raft.Future) []error {
	errs := make([]error, len(futures))
	var resolved atomic.Int64 // futures[:resolved] have their errs set
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i, f := range futures {
			if f != nil {
				errs[i] = f.Error()
			}
			resolved.Store(int64(i + 1))
		}
	}()
	var stopped error
	select {
	case <-finished:
		return errs
	case <-ctx.Done():
		stopped = timeoutError(ctx)
	case <-r.done:
		stopped = ErrShutdown
	}
	k := int(resolved.Load())
	out := make([]error, len(futures))
	copy(out, errs[:k]) // the goroutine writes only errs[k:] from here on
	for i := k; i < len(futures); i++ {
		out[i] = stopped
	}
	return out
}

// Apply proposes data as a new log entry and waits until this server's state
// machine has applied it. It returns the entry's Result and index.
//
// Errors: ErrNotLeader (nothing was proposed); ctx's error itself, not wrapped
// in ErrTimeout, when ctx ended before the entry reached raft (nothing was
// proposed); and, with the outcome unknown, ErrLeadershipLost, ErrTimeout
// (ctx ended after the entry was proposed) and ErrShutdown. See OutcomeUnknown.
// ErrStateMachine means the entry committed but this server failed to apply it.
//
// Concurrent calls are written to the log in batches.
func (r *Raft) Apply(ctx context.Context, data []byte) (store.Result, uint64, error) {
	a := r.ApplyMany(ctx, [][]byte{data})[0]
	return a.Result, a.Index, a.Err
}

// outcome decodes the outcome of a proposed entry whose wait ended with err.
// A command the state machine skipped (its index was applied already) is
// never reported as applied: ErrNotApplied, logged at Error.
func (r *Raft) outcome(f raft.ApplyFuture, err error) Applied {
	if err != nil {
		if errors.Is(err, raft.ErrEnqueueTimeout) {
			// Raft's enqueue timer is ctx's deadline: nothing was proposed.
			return Applied{Err: fmt.Errorf("apply: %w", context.DeadlineExceeded)}
		}
		return Applied{Err: translate("apply", err)}
	}
	switch resp := f.Response().(type) {
	case store.Result:
		if resp.Skipped {
			r.logger.Error("committed entry skipped by the state machine: its index was applied already; answering unknown outcome",
				"index", f.Index(), "applied", r.AppliedIndex())
			return Applied{Index: f.Index(), Err: fmt.Errorf("%w: index %d", ErrNotApplied, f.Index())}
		}
		return Applied{Result: resp, Index: f.Index()}
	case error: // from the glue: wraps ErrStateMachine
		return Applied{Index: f.Index(), Err: resp}
	default:
		return Applied{Index: f.Index(), Err: fmt.Errorf("apply: unexpected response %T at index %d", resp, f.Index())}
	}
}
