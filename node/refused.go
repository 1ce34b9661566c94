package node

import (
	"context"
	"time"

	"github.com/txlog/txlog/api"
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
type refusedBackend struct{ err *api.Error }

func newRefusedBackend(ae *replication.AmnesiaError) refusedBackend {
	return refusedBackend{err: &api.Error{Code: api.CodeRaftStateLost, Message: ae.Error()}}
}

func (b refusedBackend) Submit(context.Context, api.TxRequest, api.SubmitOptions) (api.TxResult, error) {
	return api.TxResult{}, b.err
}

func (b refusedBackend) SubmitBatch(context.Context, []api.TxRequest, api.SubmitOptions) ([]api.TxResult, error) {
	return nil, b.err
}

func (b refusedBackend) Propose(context.Context, [][]byte, api.SubmitOptions) ([]api.TxResult, error) {
	return nil, b.err
}

func (b refusedBackend) Tx(context.Context, txid.ID, time.Duration) (api.TxResult, error) {
	return api.TxResult{}, b.err
}

func (b refusedBackend) TxByIdempotencyKey(context.Context, string, time.Duration, bool) (api.TxResult, error) {
	return api.TxResult{}, b.err
}

func (b refusedBackend) Get(context.Context, string, api.ReadOptions) (api.KV, error) {
	return api.KV{}, b.err
}

func (b refusedBackend) Log(context.Context, uint64, int) (api.LogPage, error) {
	return api.LogPage{}, b.err
}

func (b refusedBackend) Cluster(context.Context) (api.ClusterStatus, error) {
	return api.ClusterStatus{}, b.err
}

func (b refusedBackend) Join(context.Context, api.JoinRequest) (api.JoinResult, error) {
	return api.JoinResult{}, b.err
}

func (b refusedBackend) Remove(context.Context, string) error { return b.err }

func (b refusedBackend) TransferLeadership(context.Context, api.TransferRequest) (api.TransferResult, error) {
	return api.TransferResult{}, b.err
}

func (b refusedBackend) Ready(context.Context) error { return b.err }
