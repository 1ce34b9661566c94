package main

import (
	"context"
	"errors"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// fakeBackend is an api.Backend whose methods call its function fields; a nil
// field fails with errNotSet (a 500).
type fakeBackend struct {
	SubmitFunc  func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error)
	GetFunc     func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error)
	LogFunc     func(ctx context.Context, from uint64, limit int) (wire.LogPage, error)
	ClusterFunc func(ctx context.Context) (wire.ClusterStatus, error)
}

var _ api.Backend = (*fakeBackend)(nil)

var errNotSet = errors.New("fake: method not set")

func (f *fakeBackend) Submit(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
	if f.SubmitFunc == nil {
		return wire.TxResult{}, errNotSet
	}
	return f.SubmitFunc(ctx, tx, opts)
}

func (f *fakeBackend) SubmitBatch(context.Context, []wire.TxRequest, wire.SubmitOptions) ([]wire.TxResult, error) {
	return nil, errNotSet
}

func (f *fakeBackend) Propose(context.Context, [][]byte, wire.SubmitOptions) ([]wire.TxResult, error) {
	return nil, errNotSet
}

func (f *fakeBackend) Tx(context.Context, txid.ID, time.Duration) (wire.TxResult, error) {
	return wire.TxResult{}, errNotSet
}

func (f *fakeBackend) TxByIdempotencyKey(context.Context, string, time.Duration, bool) (wire.TxResult, error) {
	return wire.TxResult{}, errNotSet
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

func (f *fakeBackend) Join(context.Context, wire.JoinRequest) (wire.JoinResult, error) {
	return wire.JoinResult{}, errNotSet
}
func (f *fakeBackend) Remove(context.Context, string) error { return errNotSet }

func (f *fakeBackend) TransferLeadership(context.Context, wire.TransferRequest) (wire.TransferResult, error) {
	return wire.TransferResult{}, errNotSet
}

func (f *fakeBackend) Ready(context.Context) error { return nil }
