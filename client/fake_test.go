package client

import (
	"context"
	"errors"
	"time"

	"github.com/txlog/txlog/api"

	"github.com/txlog/txlog/api/wire"

	"github.com/txlog/txlog/txid"
)

// fakeBackend (a copy of api's) is an api.Backend whose methods call its function fields. A method
// whose field is nil fails with errNotSet, which the handlers answer with 500.
type fakeBackend struct {
	SubmitFunc             func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error)
	SubmitBatchFunc        func(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error)
	ProposeFunc            func(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error)
	TxFunc                 func(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error)
	TxByIdempotencyKeyFunc func(ctx context.Context, key string, wait time.Duration) (wire.TxResult, error)
	GetFunc                func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error)
	LogFunc                func(ctx context.Context, from uint64, limit int) (wire.LogPage, error)
	ClusterFunc            func(ctx context.Context) (wire.ClusterStatus, error)
	JoinFunc               func(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error)
	RemoveFunc             func(ctx context.Context, id string) error
	TransferLeadershipFunc func(ctx context.Context, req wire.TransferRequest) (wire.TransferResult, error)
	ReadyFunc              func(ctx context.Context) error
}

var _ api.Backend = (*fakeBackend)(nil)

var errNotSet = errors.New("fake: method not set")

func (f *fakeBackend) Submit(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
	if f.SubmitFunc == nil {
		return wire.TxResult{}, errNotSet
	}
	return f.SubmitFunc(ctx, tx, opts)
}

func (f *fakeBackend) SubmitBatch(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	if f.SubmitBatchFunc == nil {
		return nil, errNotSet
	}
	return f.SubmitBatchFunc(ctx, txs, opts)
}

func (f *fakeBackend) Propose(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	if f.ProposeFunc == nil {
		return nil, errNotSet
	}
	return f.ProposeFunc(ctx, payloads, opts)
}

func (f *fakeBackend) Tx(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error) {
	if f.TxFunc == nil {
		return wire.TxResult{}, errNotSet
	}
	return f.TxFunc(ctx, id, wait)
}

func (f *fakeBackend) TxByIdempotencyKey(ctx context.Context, key string, wait time.Duration, _ bool) (wire.TxResult, error) {
	if f.TxByIdempotencyKeyFunc == nil {
		return wire.TxResult{}, errNotSet
	}
	return f.TxByIdempotencyKeyFunc(ctx, key, wait)
}

func (f *fakeBackend) Get(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
	if f.GetFunc == nil {
		return wire.KV{}, errNotSet
	}
	return f.GetFunc(ctx, key, opts)
}

func (f *fakeBackend) Log(ctx context.Context, from uint64, limit int) (wire.LogPage, error) {
	if f.LogFunc == nil {
		return wire.LogPage{}, errNotSet
	}
	return f.LogFunc(ctx, from, limit)
}

func (f *fakeBackend) Cluster(ctx context.Context) (wire.ClusterStatus, error) {
	if f.ClusterFunc == nil {
		return wire.ClusterStatus{}, errNotSet
	}
	return f.ClusterFunc(ctx)
}

func (f *fakeBackend) Join(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error) {
	if f.JoinFunc == nil {
		return wire.JoinResult{}, errNotSet
	}
	return f.JoinFunc(ctx, req)
}

func (f *fakeBackend) Remove(ctx context.Context, id string) error {
	if f.RemoveFunc == nil {
		return errNotSet
	}
	return f.RemoveFunc(ctx, id)
}

func (f *fakeBackend) TransferLeadership(ctx context.Context, req wire.TransferRequest) (wire.TransferResult, error) {
	if f.TransferLeadershipFunc == nil {
		return wire.TransferResult{}, errNotSet
	}
	return f.TransferLeadershipFunc(ctx, req)
}

func (f *fakeBackend) Ready(ctx context.Context) error {
	if f.ReadyFunc == nil {
		return errNotSet
	}
	return f.ReadyFunc(ctx)
}

const testID = txid.ID(0x0123456789ABCDEF)
