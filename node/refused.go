package node

import (
	"context"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/txid"
)

// A node whose Raft directory holds less than its store applied from it (a
// lost Raft log, or a lost stable store with its term and vote) must not vote
// or take entries: replication.Open refuses it (replication.AmnesiaError).
// The node then runs without Raft: it serves HTTP so that an operator and a
// load balancer see why, answering /readyz, every write and every read with
// 503 raft_state_lost and the reason, and it keeps its data directory as it
// is (the intake WAL's unresolved records included) for the operator to
// inspect. It logs the numbers at Error once at start. /healthz stays 200:
// the process works, it must not be restarted in a loop.

var _ api.Backend = refusedBackend{}

// refusedBackend is the api.Backend of a node that refused to start Raft.
type refusedBackend struct{ err *wire.Error }

func newRefusedBackend(ae *replication.AmnesiaError) refusedBackend {
	return refusedBackend{err: &wire.Error{Code: wire.CodeRaftStateLost, Message: ae.Error()}}
}

func (b refusedBackend) Submit(context.Context, wire.TxRequest, wire.SubmitOptions) (wire.TxResult, error) {
	return wire.TxResult{}, b.err
}

func (b refusedBackend) SubmitBatch(context.Context, []wire.TxRequest, wire.SubmitOptions) ([]wire.TxResult, error) {
	return nil, b.err
}

func (b refusedBackend) Propose(context.Context, [][]byte, wire.SubmitOptions) ([]wire.TxResult, error) {
	return nil, b.err
}

func (b refusedBackend) Tx(context.Context, txid.ID, time.Duration, wire.ReadOptions) (wire.TxResult, error) {
	return wire.TxResult{}, b.err
}

func (b refusedBackend) TxByIdempotencyKey(context.Context, string, time.Duration, wire.ReadOptions) (wire.TxResult, error) {
	return wire.TxResult{}, b.err
}

func (b refusedBackend) Get(context.Context, string, wire.ReadOptions) (wire.KV, error) {
	return wire.KV{}, b.err
}

func (b refusedBackend) Log(context.Context, uint64, int) (wire.LogPage, error) {
	return wire.LogPage{}, b.err
}

func (b refusedBackend) Range(context.Context, wire.RangeRequest, wire.ReadOptions) (wire.KVPage, error) {
	return wire.KVPage{}, b.err
}

func (b refusedBackend) Cluster(context.Context, wire.ReadOptions) (wire.ClusterStatus, error) {
	return wire.ClusterStatus{}, b.err
}

func (b refusedBackend) Join(context.Context, wire.JoinRequest) (wire.JoinResult, error) {
	return wire.JoinResult{}, b.err
}

func (b refusedBackend) Remove(context.Context, string) error { return b.err }

func (b refusedBackend) TransferLeadership(context.Context, wire.TransferRequest) (wire.TransferResult, error) {
	return wire.TransferResult{}, b.err
}

func (b refusedBackend) Ready(context.Context) error { return b.err }
