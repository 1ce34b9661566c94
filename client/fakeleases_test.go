package client

import (
	"context"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
)

// fakeLeases is a fakeBackend that is a LeaseBackend too.
type fakeLeases struct {
	fakeBackend
	AcquireFunc func(ctx context.Context, req wire.LeaseRequest, forwarded bool) (wire.LeaseResult, error)
	ReleaseFunc func(ctx context.Context, name, holder string, token uint64, forwarded bool) error
	LeaseFunc   func(ctx context.Context, name string, wait time.Duration, after uint64) (wire.Lease, error)
	LeasesFunc  func(ctx context.Context) ([]wire.Lease, error)
}

var _ api.LeaseBackend = (*fakeLeases)(nil)

func (f *fakeLeases) AcquireLease(ctx context.Context, req wire.LeaseRequest, forwarded bool) (wire.LeaseResult, error) {
	if f.AcquireFunc == nil {
		return wire.LeaseResult{}, errNotSet
	}
	return f.AcquireFunc(ctx, req, forwarded)
}

func (f *fakeLeases) ReleaseLease(ctx context.Context, name, holder string, token uint64, forwarded bool) error {
	if f.ReleaseFunc == nil {
		return errNotSet
	}
	return f.ReleaseFunc(ctx, name, holder, token, forwarded)
}

func (f *fakeLeases) Lease(ctx context.Context, name string, wait time.Duration, after uint64) (wire.Lease, error) {
	if f.LeaseFunc == nil {
		return wire.Lease{}, errNotSet
	}
	return f.LeaseFunc(ctx, name, wait, after)
}

func (f *fakeLeases) Leases(ctx context.Context) ([]wire.Lease, error) {
	if f.LeasesFunc == nil {
		return nil, errNotSet
	}
	return f.LeasesFunc(ctx)
}
