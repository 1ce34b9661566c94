package api

import (
	"context"
	"errors"
	"time"

	"github.com/txlog/txlog/txid"
)

// fakeBackend is a Backend whose methods call its function fields. A method
// whose field is nil fails with errNotSet, which the handlers answer with 500.
type fakeBackend struct {
	SubmitFunc             func(ctx context.Context, tx TxRequest, opts SubmitOptions) (TxResult, error)
	SubmitBatchFunc        func(ctx context.Context, txs []TxRequest, opts SubmitOptions) ([]TxResult, error)
	ProposeFunc            func(ctx context.Context, payloads [][]byte, opts SubmitOptions) ([]TxResult, error)
	TxFunc                 func(ctx context.Context, id txid.ID, wait time.Duration) (TxResult, error)
	TxByIdempotencyKeyFunc func(ctx context.Context, key string, wait time.Duration) (TxResult, error)
	GetFunc                func(ctx context.Context, key string, opts ReadOptions) (KV, error)
	LogFunc                func(ctx context.Context, from uint64, limit int) (LogPage, error)
	ClusterFunc            func(ctx context.Context) (ClusterStatus, error)
	JoinFunc               func(ctx context.Context, req JoinRequest) (JoinResult, error)
	RemoveFunc             func(ctx context.Context, id string) error
	TransferLeadershipFunc func(ctx context.Context, req TransferRequest) (TransferResult, error)
	ReadyFunc              func(ctx context.Context) error
}

var _ Backend = (*fakeBackend)(nil)

var errNotSet = errors.New("fake: method not set")

func (f *fakeBackend) Submit(ctx context.Context, tx TxRequest, opts SubmitOptions) (TxResult, error) {
	if f.SubmitFunc == nil {
		return TxResult{}, errNotSet
	}
	return f.SubmitFunc(ctx, tx, opts)
}

func (f *fakeBackend) SubmitBatch(ctx context.Context, txs []TxRequest, opts SubmitOptions) ([]TxResult, error) {
	if f.SubmitBatchFunc == nil {
		return nil, errNotSet
	}
	return f.SubmitBatchFunc(ctx, txs, opts)
}

func (f *fakeBackend) Propose(ctx context.Context, payloads [][]byte, opts SubmitOptions) ([]TxResult, error) {
	if f.ProposeFunc == nil {
		return nil, errNotSet
	}
	return f.ProposeFunc(ctx, payloads, opts)
}

func (f *fakeBackend) Tx(ctx context.Context, id txid.ID, wait time.Duration) (TxResult, error) {
	if f.TxFunc == nil {
		return TxResult{}, errNotSet
	}
	return f.TxFunc(ctx, id, wait)
}

func (f *fakeBackend) TxByIdempotencyKey(ctx context.Context, key string, wait time.Duration, _ bool) (TxResult, error) {
	if f.TxByIdempotencyKeyFunc == nil {
		return TxResult{}, errNotSet
	}
	return f.TxByIdempotencyKeyFunc(ctx, key, wait)
}

func (f *fakeBackend) Get(ctx context.Context, key string, opts ReadOptions) (KV, error) {
	if f.GetFunc == nil {
		return KV{}, errNotSet
	}
	return f.GetFunc(ctx, key, opts)
}

func (f *fakeBackend) Log(ctx context.Context, from uint64, limit int) (LogPage, error) {
	if f.LogFunc == nil {
		return LogPage{}, errNotSet
	}
	return f.LogFunc(ctx, from, limit)
}

func (f *fakeBackend) Cluster(ctx context.Context) (ClusterStatus, error) {
	if f.ClusterFunc == nil {
		return ClusterStatus{}, errNotSet
	}
	return f.ClusterFunc(ctx)
}

func (f *fakeBackend) Join(ctx context.Context, req JoinRequest) (JoinResult, error) {
	if f.JoinFunc == nil {
		return JoinResult{}, errNotSet
	}
	return f.JoinFunc(ctx, req)
}

func (f *fakeBackend) Remove(ctx context.Context, id string) error {
	if f.RemoveFunc == nil {
		return errNotSet
	}
	return f.RemoveFunc(ctx, id)
}

func (f *fakeBackend) TransferLeadership(ctx context.Context, req TransferRequest) (TransferResult, error) {
	if f.TransferLeadershipFunc == nil {
		return TransferResult{}, errNotSet
	}
	return f.TransferLeadershipFunc(ctx, req)
}

func (f *fakeBackend) Ready(ctx context.Context) error {
	if f.ReadyFunc == nil {
		return errNotSet
	}
	return f.ReadyFunc(ctx)
}
