package main

import (
	"context"
	"errors"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/txid"
)

// fakeBackend is an api.Backend whose methods call its function fields; a nil
// field fails with errNotSet (a 500).
type fakeBackend struct {
	SubmitFunc  func(ctx context.Context, tx api.TxRequest, opts api.SubmitOptions) (api.TxResult, error)
	GetFunc     func(ctx context.Context, key string, opts api.ReadOptions) (api.KV, error)
	LogFunc     func(ctx context.Context, from uint64, limit int) (api.LogPage, error)
	ClusterFunc func(ctx context.Context) (api.ClusterStatus, error)
}

var _ api.Backend = (*fakeBackend)(nil)

var errNotSet = errors.New("fake: method not set")

func (f *fakeBackend) Submit(ctx context.Context, tx api.TxRequest, opts api.SubmitOptions) (api.TxResult, error) {
	if f.SubmitFunc == nil {
		return api.TxResult{}, errNotSet
	}
	return f.SubmitFunc(ctx, tx, opts)
}

func (f *fakeBackend) SubmitBatch(context.Context, []api.TxRequest, api.SubmitOptions) ([]api.TxResult, error) {
	return nil, errNotSet
}

func (f *fakeBackend) Propose(context.Context, [][]byte, api.SubmitOptions) ([]api.TxResult, error) {
	return nil, errNotSet
}

func (f *fakeBackend) Tx(context.Context, txid.ID, time.Duration) (api.TxResult, error) {
	return api.TxResult{}, errNotSet
}

func (f *fakeBackend) TxByIdempotencyKey(context.Context, string, time.Duration, bool) (api.TxResult, error) {
	return api.TxResult{}, errNotSet
}

func (f *fakeBackend) Get(ctx context.Context, key string, opts api.ReadOptions) (api.KV, error) {
	if f.GetFunc == nil {
		return api.KV{}, errNotSet
	}
	return f.GetFunc(ctx, key, opts)
}

func (f *fakeBackend) Log(ctx context.Context, from uint64, limit int) (api.LogPage, error) {
	if f.LogFunc == nil {
		return api.LogPage{}, errNotSet
	}
	return f.LogFunc(ctx, from, limit)
}

func (f *fakeBackend) Cluster(ctx context.Context) (api.ClusterStatus, error) {
	if f.ClusterFunc == nil {
		return api.ClusterStatus{}, errNotSet
	}
	return f.ClusterFunc(ctx)
}

func (f *fakeBackend) Join(context.Context, api.JoinRequest) (api.JoinResult, error) {
	return api.JoinResult{}, errNotSet
}
func (f *fakeBackend) Remove(context.Context, string) error { return errNotSet }

func (f *fakeBackend) TransferLeadership(context.Context, api.TransferRequest) (api.TransferResult, error) {
	return api.TransferResult{}, errNotSet
}

func (f *fakeBackend) Ready(context.Context) error { return nil }
