package apitest

import (
	"context"
	"errors"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// ErrNotSet is what a fake's method returns when its function field is nil.
var ErrNotSet = errors.New("fake: method not set")

// Backend is an api.Backend whose methods call its function fields. It is
// not an api.LeaseBackend or api.ConsumerBackend, so a Server built on it
// has no leases or consumer groups.
type Backend struct {
	SubmitFunc      func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error)
	SubmitBatchFunc func(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error)
	ProposeFunc     func(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error)
	TxFunc          func(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error)
	// TxByIdempotencyKeyFunc is not told whether the request was forwarded.
	TxByIdempotencyKeyFunc func(ctx context.Context, key string, wait time.Duration) (wire.TxResult, error)
	GetFunc                func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error)
	RangeFunc              func(ctx context.Context, req wire.RangeRequest, opts wire.ReadOptions) (wire.KVPage, error)
	LogFunc                func(ctx context.Context, from uint64, limit int) (wire.LogPage, error)
	ClusterFunc            func(ctx context.Context) (wire.ClusterStatus, error)
	JoinFunc               func(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error)
	RemoveFunc             func(ctx context.Context, id string) error
	TransferLeadershipFunc func(ctx context.Context, req wire.TransferRequest) (wire.TransferResult, error)
	ReadyFunc              func(ctx context.Context) error
}

func (f *Backend) Submit(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
	if f.SubmitFunc == nil {
		return wire.TxResult{}, ErrNotSet
	}
	return f.SubmitFunc(ctx, tx, opts)
}

func (f *Backend) SubmitBatch(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	if f.SubmitBatchFunc == nil {
		return nil, ErrNotSet
	}
	return f.SubmitBatchFunc(ctx, txs, opts)
}

func (f *Backend) Propose(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	if f.ProposeFunc == nil {
		return nil, ErrNotSet
	}
	return f.ProposeFunc(ctx, payloads, opts)
}

func (f *Backend) Tx(ctx context.Context, id txid.ID, wait time.Duration, _ wire.ReadOptions) (wire.TxResult, error) {
	if f.TxFunc == nil {
		return wire.TxResult{}, ErrNotSet
	}
	return f.TxFunc(ctx, id, wait)
}

func (f *Backend) TxByIdempotencyKey(ctx context.Context, key string, wait time.Duration, _ wire.ReadOptions) (wire.TxResult, error) {
	if f.TxByIdempotencyKeyFunc == nil {
		return wire.TxResult{}, ErrNotSet
	}
	return f.TxByIdempotencyKeyFunc(ctx, key, wait)
}

func (f *Backend) Get(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
	if f.GetFunc == nil {
		return wire.KV{}, ErrNotSet
	}
	return f.GetFunc(ctx, key, opts)
}

func (f *Backend) Log(ctx context.Context, from uint64, limit int) (wire.LogPage, error) {
	if f.LogFunc == nil {
		return wire.LogPage{}, ErrNotSet
	}
	return f.LogFunc(ctx, from, limit)
}

func (f *Backend) Range(ctx context.Context, req wire.RangeRequest, opts wire.ReadOptions) (wire.KVPage, error) {
	if f.RangeFunc == nil {
		return wire.KVPage{}, ErrNotSet
	}
	return f.RangeFunc(ctx, req, opts)
}

func (f *Backend) Cluster(ctx context.Context, _ wire.ReadOptions) (wire.ClusterStatus, error) {
	if f.ClusterFunc == nil {
		return wire.ClusterStatus{}, ErrNotSet
	}
	return f.ClusterFunc(ctx)
}

func (f *Backend) Join(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error) {
	if f.JoinFunc == nil {
		return wire.JoinResult{}, ErrNotSet
	}
	return f.JoinFunc(ctx, req)
}

func (f *Backend) Remove(ctx context.Context, id string) error {
	if f.RemoveFunc == nil {
		return ErrNotSet
	}
	return f.RemoveFunc(ctx, id)
}

func (f *Backend) TransferLeadership(ctx context.Context, req wire.TransferRequest) (wire.TransferResult, error) {
	if f.TransferLeadershipFunc == nil {
		return wire.TransferResult{}, ErrNotSet
	}
	return f.TransferLeadershipFunc(ctx, req)
}

// Ready is the one method that does not fail when its field is nil: a fake
// is ready unless the test says otherwise, so that clients that wait for
// readiness (cmd/txlog's chaos) can run against it.
func (f *Backend) Ready(ctx context.Context) error {
	if f.ReadyFunc == nil {
		return nil
	}
	return f.ReadyFunc(ctx)
}

// LeaseBackend is a Backend that is an api.LeaseBackend too.
type LeaseBackend struct {
	Backend
	AcquireFunc func(ctx context.Context, req wire.LeaseRequest, forwarded bool) (wire.LeaseResult, error)
	ReleaseFunc func(ctx context.Context, name, holder string, token uint64, forwarded bool) error
	LeaseFunc   func(ctx context.Context, name string, wait time.Duration, after uint64) (wire.Lease, error)
	LeasesFunc  func(ctx context.Context) ([]wire.Lease, error)
}

func (f *LeaseBackend) AcquireLease(ctx context.Context, req wire.LeaseRequest, forwarded bool) (wire.LeaseResult, error) {
	if f.AcquireFunc == nil {
		return wire.LeaseResult{}, ErrNotSet
	}
	return f.AcquireFunc(ctx, req, forwarded)
}

func (f *LeaseBackend) ReleaseLease(ctx context.Context, name, holder string, token uint64, forwarded bool) error {
	if f.ReleaseFunc == nil {
		return ErrNotSet
	}
	return f.ReleaseFunc(ctx, name, holder, token, forwarded)
}

func (f *LeaseBackend) Lease(ctx context.Context, name string, wait time.Duration, after uint64, _ wire.ReadOptions) (wire.Lease, error) {
	if f.LeaseFunc == nil {
		return wire.Lease{}, ErrNotSet
	}
	return f.LeaseFunc(ctx, name, wait, after)
}

func (f *LeaseBackend) Leases(ctx context.Context, _ wire.ReadOptions) ([]wire.Lease, error) {
	if f.LeasesFunc == nil {
		return nil, ErrNotSet
	}
	return f.LeasesFunc(ctx)
}

// ConsumerBackend is a Backend that is an api.ConsumerBackend too.
type ConsumerBackend struct {
	Backend
	ConsumerFunc  func(ctx context.Context, group string) (wire.ConsumerGroup, error)
	ConsumersFunc func(ctx context.Context) ([]wire.ConsumerGroup, error)
}

func (f *ConsumerBackend) Consumer(ctx context.Context, group string, _ wire.ReadOptions) (wire.ConsumerGroup, error) {
	if f.ConsumerFunc == nil {
		return wire.ConsumerGroup{}, ErrNotSet
	}
	return f.ConsumerFunc(ctx, group)
}

func (f *ConsumerBackend) Consumers(ctx context.Context, _ wire.ReadOptions) ([]wire.ConsumerGroup, error) {
	if f.ConsumersFunc == nil {
		return nil, ErrNotSet
	}
	return f.ConsumersFunc(ctx)
}
