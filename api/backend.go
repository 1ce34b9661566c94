package api

import (
	"context"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// Backend is what the HTTP handlers need from a node. node.Node implements it.
//
// Errors: a Backend returns the sentinels and types of this package (ErrNotFound,
// ErrNoLeader, ErrNotLeader, ErrUnknownOutcome, ErrShuttingDown, *Error) so that the
// handlers map each to its status and code through one table. Any other error is a 500.
// A transaction rejected by a failed if_version is not an error: it is a TxResult with
// Status StatusRejected.
//
// For writes, ErrNoLeader, ErrNotLeader and ErrShuttingDown promise that the
// transaction was not carried out and will not be: clients retry them on any node.
// When a write may have entered the log, the answer must be ErrUnknownOutcome (with
// the txid in the TxResult), never one of those.
//
// Deadlines: every call's ctx has a deadline. For Submit, SubmitBatch and Propose
// it is opts.Timeout, which the handlers always fill in (a SelfTimedBackend's
// Submit and SubmitBatch apply it themselves); for Tx and
// TxByIdempotencyKey it is wait plus Config.DefaultTimeout; for the rest it is
// Config.DefaultTimeout. The options and arguments a Backend receives are already
// validated (keys, op names, values, limits, ack and consistency levels).
type Backend interface {
	// Submit runs one validated transaction. With ErrUnknownOutcome the TxResult
	// still carries the txid and Status StatusUnknown.
	Submit(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error)
	// SubmitBatch runs many independent, validated transactions. The results are in
	// the order of txs; one that failed on its own has Error set. The error is for a
	// failure of the whole request.
	SubmitBatch(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error)
	// Propose takes transactions another node accepted and already encoded (the
	// payloads of POST /v1/internal/propose) and proposes them; it answers
	// ErrNotLeader when this node is not the leader. Results are in payload order.
	Propose(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error)
	// Tx looks a transaction up by its ID. With wait > 0 it waits up to wait for a
	// pending or in-flight transaction to be resolved.
	//
	// Every read takes wire.ReadOptions: its consistency level, which it
	// keeps as Get does (docs/api.md, "Consistency"), and whether another
	// node forwarded it.
	Tx(ctx context.Context, id txid.ID, wait time.Duration, opts wire.ReadOptions) (wire.TxResult, error)
	// TxByIdempotencyKey looks a transaction up by its idempotency key. Forwarded
	// without a consistency level (another node asks: header X-Txlog-Forwarded),
	// it answers only a transaction that this node accepted and has not resolved,
	// pending, and asks no other node.
	TxByIdempotencyKey(ctx context.Context, key string, wait time.Duration, opts wire.ReadOptions) (wire.TxResult, error)
	// Get reads one key.
	Get(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error)
	// Range reads a page of keys (api/range.go).
	Range(ctx context.Context, req wire.RangeRequest, opts wire.ReadOptions) (wire.KVPage, error)
	// Log returns up to limit committed transactions from index from on.
	Log(ctx context.Context, from uint64, limit int) (wire.LogPage, error)
	// Cluster describes this node and the cluster as this node sees it.
	Cluster(ctx context.Context, opts wire.ReadOptions) (wire.ClusterStatus, error)
	// Join adds a server to the cluster (forwarded to the leader when needed)
	// and gives the txid node number it holds there.
	Join(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error)
	// Remove takes a server out of the cluster.
	Remove(ctx context.Context, id string) error
	// TransferLeadership hands leadership to another server.
	TransferLeadership(ctx context.Context, req wire.TransferRequest) (wire.TransferResult, error)
	// Ready returns nil when a leader is known and this node has applied what that
	// leader has committed, as far as it knows.
	Ready(ctx context.Context) error
}

// SelfTimedBackend is a Backend whose Submit and SubmitBatch, given a ctx
// without a deadline, end by opts.Timeout on their own: the handlers then
// pass the request's context as it is, so that a write makes no timer the
// Backend does not need (node/deadline.go). A ctx with a deadline still
// gets opts.Timeout as before, and every other call's ctx its deadline.
type SelfTimedBackend interface {
	Backend
	// SubmitTimesItself marks the implementation; it does nothing.
	SubmitTimesItself()
}

// submitContext returns the context of a write through b that ends by
// timeout: ctx itself when b applies the timeout, else ctx with it.
func submitContext(ctx context.Context, b Backend, timeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := b.(SelfTimedBackend); ok {
		if _, has := ctx.Deadline(); !has {
			return ctx, func() {}
		}
	}
	return context.WithTimeout(ctx, timeout)
}
