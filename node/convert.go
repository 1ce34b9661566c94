package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
)

// toStoreTx converts a validated wire transaction into a store transaction.
func toStoreTx(id txid.ID, req wire.TxRequest) (store.Tx, error) {
	tx := store.Tx{ID: id, IdempotencyKey: req.IdempotencyKey, Ops: make([]store.Op, len(req.Ops))}
	if f := req.Fence; f != nil {
		tx.Fence = &store.Fence{Lease: f.Lease, Token: f.Token}
	}
	if n := req.Notify; n != nil {
		tx.Notify = n.URL
	}
	for i, op := range req.Ops {
		o := store.Op{Key: op.Key}
		switch op.Op {
		case "put":
			o.Kind = store.OpPut
			o.Value = []byte(op.Value)
		case "delete":
			o.Kind = store.OpDelete
		case wire.OpCommitOffset:
			o = store.Op{Kind: store.OpCommitOffset, Key: op.Group, Offset: op.Offset, Reset: op.Reset}
		default:
			return store.Tx{}, &wire.Error{Code: wire.CodeInvalidTx, Message: fmt.Sprintf("ops[%d].op: unknown %q", i, op.Op)}
		}
		if op.IfVersion != nil {
			o.HasIfVersion, o.IfVersion = true, *op.IfVersion
		}
		tx.Ops[i] = o
	}
	return tx, nil
}

func fromStoreOps(ops []store.Op) []wire.Op {
	out := make([]wire.Op, len(ops))
	for i, op := range ops {
		o := wire.Op{Key: op.Key}
		switch op.Kind {
		case store.OpPut:
			o.Op, o.Value = "put", op.Value
		case store.OpDelete:
			o.Op = "delete"
		case store.OpCommitOffset:
			o = wire.Op{Op: wire.OpCommitOffset, Group: op.Key, Offset: op.Offset, Reset: op.Reset}
		}
		if op.HasIfVersion {
			v := op.IfVersion
			o.IfVersion = &v
		}
		out[i] = o
	}
	return out
}

func statusString(s store.Status) string {
	if s == store.StatusRejected {
		return wire.StatusRejected
	}
	return wire.StatusCommitted
}

func fromConflict(c *store.Conflict) *wire.Conflict {
	if c == nil {
		return nil
	}
	return &wire.Conflict{Key: c.Key, Fence: c.Fence, Group: c.Group, Expected: c.Expected, Actual: c.Actual}
}

// fromOutcome converts a recorded outcome to a wire result.
func fromOutcome(o store.Outcome) wire.TxResult {
	return wire.TxResult{
		TxID:           o.TxID,
		Status:         statusString(o.Status),
		IdempotencyKey: o.IdempotencyKey,
		Index:          o.Index,
		Term:           o.Term,
		Versions:       o.Versions,
		Conflict:       fromConflict(o.Conflict),
	}
}

// fromLogRecord converts a log record; one the store could not decode is an
// entry with Unreadable and the stored bytes, in its place.
func fromLogRecord(r store.LogRecord) wire.LogEntry {
	if r.Unreadable != nil {
		return wire.LogEntry{Index: r.Index, Ops: []wire.Op{}, Status: wire.StatusUnreadable, Unreadable: true, Record: r.Raw}
	}
	return wire.LogEntry{
		Index:          r.Index,
		Term:           r.Term,
		TxID:           r.TxID,
		IdempotencyKey: r.IdempotencyKey,
		Time:           time.Unix(0, r.Time).UTC(),
		Ops:            fromStoreOps(r.Ops),
		Fence:          fromFence(r.Fence),
		Status:         statusString(r.Status),
		Conflict:       fromConflict(r.Conflict),
		Versions:       r.Versions,
	}
}

func fromFence(f *store.Fence) *wire.Fence {
	if f == nil {
		return nil
	}
	return &wire.Fence{Lease: f.Lease, Token: f.Token}
}

func fromKV(kv store.KV) wire.KV {
	return wire.KV{Key: kv.Key, Value: kv.Value, Version: kv.Version, Index: kv.ModIndex, Unreadable: kv.Unreadable != nil}
}

// Errors inside node: whether a proposal may have reached a leader decides
// between "no leader" (nothing happened) and "unknown outcome".
var errRetry = errors.New("retry with the current leader")

// translate maps replication and store errors to the errors api.Backend documents.
func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return wire.ErrNotFound
	case errors.Is(err, replication.ErrNotLeader):
		return wire.ErrNotLeader
	case errors.Is(err, replication.ErrShutdown):
		return wire.ErrShuttingDown
	case errors.Is(err, replication.ErrLeadershipLost), errors.Is(err, replication.ErrTimeout):
		return wire.ErrUnknownOutcome
	}
	return err
}
