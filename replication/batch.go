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
// Errors per entry are Apply's; once one entry cannot be proposed
// (ErrNotLeader, or ctx ended before it reached raft), neither can the rest.
func (r *Raft) ApplyMany(ctx context.Context, datas [][]byte) []Applied {
	out := make([]Applied, len(datas))
	timeout, err := raftTimeout(ctx)
	if err != nil {
		for i := range out {
			out[i].Err = fmt.Errorf("apply: %w", err)
		}
		return out
	}
	futures := make([]raft.ApplyFuture, len(datas))
	for i, d := range datas {
		if r.raft.State() != raft.Leader {
			for j := i; j < len(datas); j++ {
				out[j].Err = ErrNotLeader
			}
			break
		}
		futures[i] = r.raft.Apply(d, timeout)
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		if err := r.await(ctx, f); err != nil {
			if errors.Is(err, raft.ErrEnqueueTimeout) {
				out[i].Err = fmt.Errorf("apply: %w", context.DeadlineExceeded)
			} else {
				out[i].Err = translate("apply", err)
			}
			continue
		}
		out[i].Index = f.Index()
		switch resp := f.Response().(type) {
		case store.Result:
			out[i].Result = resp
		case error:
			out[i].Err = resp
		default:
			out[i].Err = fmt.Errorf("apply: unexpected response %T at index %d", resp, f.Index())
		}
	}
	return out
}
