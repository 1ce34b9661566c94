package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// TestLeaseClient: the client's methods, and a lease_held answer as a
// *LeaseError with the lease.
func TestLeaseClient(t *testing.T) {
	held := wire.Lease{Name: "l", Holder: "b", Token: 9, TTL: "5s", ExpiresIn: "2s"}
	b := &fakeLeases{
		AcquireFunc: func(_ context.Context, req wire.LeaseRequest, _ bool) (wire.LeaseResult, error) {
			if req.Holder == "b" {
				return wire.LeaseResult{Lease: held}, nil
			}
			return wire.LeaseResult{}, &wire.LeaseError{Code: wire.CodeLeaseHeld, Message: "held by b", Lease: held}
		},
		ReleaseFunc: func(_ context.Context, name, holder string, token uint64, _ bool) error {
			if name != "a/b" || holder != "h x" || token != 9 {
				t.Errorf("release(%q, %q, %d)", name, holder, token)
			}
			return nil
		},
		LeaseFunc: func(context.Context, string, time.Duration, uint64) (wire.Lease, error) {
			return wire.Lease{}, wire.ErrNotFound
		},
		LeasesFunc: func(context.Context) ([]wire.Lease, error) { return nil, nil },
	}
	c := testClient(testNode(t, b).URL)
	ctx := context.Background()
	_, err := c.AcquireLease(ctx, "l", "a", 5*time.Second)
	le, ok := errors.AsType[*wire.LeaseError](err)
	if !errors.Is(err, wire.ErrLeaseHeld) || errors.Is(err, wire.ErrFenced) || !ok || le.Lease != held {
		t.Fatalf("AcquireLease() = %v (%+v), want ErrLeaseHeld with the lease", err, le)
	}
	if res, err := c.RenewLease(ctx, "l", "b", 9, 5*time.Second); err != nil || res.Lease != held || res.Lease.Remaining() != 2*time.Second {
		t.Fatalf("RenewLease() = %+v, %v", res, err)
	}
	if err := c.ReleaseLease(ctx, "a/b", "h x", 9); err != nil {
		t.Fatalf("ReleaseLease() = %v", err)
	}
	if _, err := c.Lease(ctx, "l", 0, 0); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("Lease() = %v, want ErrNotFound", err)
	}
	if ls, err := c.Leases(ctx); err != nil || ls == nil || len(ls) != 0 {
		t.Fatalf("Leases() = %#v, %v; want an empty list", ls, err)
	}
}
