package replication

import (
	"context"
	"errors"
	"fmt"

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
	for i, f := range futures {
		if f != nil {
			out[i] = r.applied(ctx, f)
		}
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

// applied waits for a proposed entry and decodes its outcome.
func (r *Raft) applied(ctx context.Context, f raft.ApplyFuture) Applied {
	if err := r.await(ctx, f); err != nil {
		if errors.Is(err, raft.ErrEnqueueTimeout) {
			// Raft's enqueue timer is ctx's deadline: nothing was proposed.
			return Applied{Err: fmt.Errorf("apply: %w", context.DeadlineExceeded)}
		}
		return Applied{Err: translate("apply", err)}
	}
	switch resp := f.Response().(type) {
	case store.Result:
		return Applied{Result: resp, Index: f.Index()}
	case error: // from the glue: wraps ErrStateMachine
		return Applied{Index: f.Index(), Err: resp}
	default:
		return Applied{Index: f.Index(), Err: fmt.Errorf("apply: unexpected response %T at index %d", resp, f.Index())}
	}
}
