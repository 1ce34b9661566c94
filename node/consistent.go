package node

import (
	"context"

	"github.com/txlog/txlog/api/wire"
)

// consistentRead runs a read at the consistency opts names, the one way
// every read route keeps it (docs/api.md, "Consistency"):
//
//   - stale: read runs here, on this node's applied state as it is.
//   - leader: read runs on the leader, here when this node leads, else
//     remote asks the leader (peers.viaLeader), marked forwarded so that it
//     goes no further.
//   - linearizable (the default): as leader, and the leader first takes a
//     ReadIndex, so that read sees every write committed before the read
//     began. It waits on nothing else: one heartbeat round to a quorum, and
//     the apply of what was committed before it.
//
// Errors are a kv read's: ErrNoLeader while there is none (after retrying
// until ctx ends, as viaLeader does), ErrNotLeader to a forwarded read that
// found this node no longer leading, and *wire.Error for an unknown level.
func consistentRead[T any](ctx context.Context, l *lookups, opts wire.ReadOptions, read func(context.Context) (T, error),
	remote func(ctx context.Context, addr string, opts wire.ReadOptions) (T, error)) (T, error) {
	var out T
	switch opts.Consistency {
	case wire.ConsistencyStale:
		return read(ctx)
	case wire.ConsistencyLeader, wire.ConsistencyLinearizable:
	case "":
		opts.Consistency = wire.ConsistencyLinearizable
	default:
		return out, &wire.Error{Code: wire.CodeInvalidParam, Message: "consistency: want linearizable, leader or stale"}
	}
	err := l.peers.viaLeader(ctx, opts.Forwarded, func(ctx context.Context) error {
		if opts.Consistency == wire.ConsistencyLinearizable {
			if _, err := l.raft.ReadIndex(ctx); err != nil {
				return translate(err)
			}
		}
		var err error
		out, err = read(ctx)
		return err
	}, func(ctx context.Context, addr string) error {
		var err error
		out, err = remote(ctx, addr, wire.ReadOptions{Consistency: opts.Consistency, Forwarded: true})
		return err
	})
	return out, err
}
