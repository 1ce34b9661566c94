package apitest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/apitest"
	"github.com/txlog/txlog/api/wire"
)

var (
	_ api.Backend         = (*apitest.Backend)(nil)
	_ api.LeaseBackend    = (*apitest.LeaseBackend)(nil)
	_ api.ConsumerBackend = (*apitest.ConsumerBackend)(nil)
)

// calls calls every method of b's interfaces once and returns their errors,
// by method name.
func calls(b any) map[string]error {
	ctx := context.Background()
	out := map[string]error{}
	if b, ok := b.(api.Backend); ok {
		_, out["Submit"] = b.Submit(ctx, wire.TxRequest{}, wire.SubmitOptions{})
		_, out["SubmitBatch"] = b.SubmitBatch(ctx, nil, wire.SubmitOptions{})
		_, out["Propose"] = b.Propose(ctx, nil, wire.SubmitOptions{})
		_, out["Tx"] = b.Tx(ctx, 1, 0, wire.ReadOptions{})
		_, out["TxByIdempotencyKey"] = b.TxByIdempotencyKey(ctx, "k", 0, wire.ReadOptions{})
		_, out["Get"] = b.Get(ctx, "k", wire.ReadOptions{})
		_, out["Range"] = b.Range(ctx, wire.RangeRequest{}, wire.ReadOptions{})
		_, out["Log"] = b.Log(ctx, 1, 1)
		_, out["Cluster"] = b.Cluster(ctx, wire.ReadOptions{})
		_, out["Join"] = b.Join(ctx, wire.JoinRequest{})
		out["Remove"] = b.Remove(ctx, "n")
		_, out["TransferLeadership"] = b.TransferLeadership(ctx, wire.TransferRequest{})
		out["Ready"] = b.Ready(ctx)
	}
	if b, ok := b.(api.LeaseBackend); ok {
		_, out["AcquireLease"] = b.AcquireLease(ctx, wire.LeaseRequest{}, false)
		out["ReleaseLease"] = b.ReleaseLease(ctx, "l", "h", 1, false)
		_, out["Lease"] = b.Lease(ctx, "l", 0, 0, wire.ReadOptions{})
		_, out["Leases"] = b.Leases(ctx, wire.ReadOptions{})
	}
	if b, ok := b.(api.ConsumerBackend); ok {
		_, out["Consumer"] = b.Consumer(ctx, "g", wire.ReadOptions{})
		_, out["Consumers"] = b.Consumers(ctx, wire.ReadOptions{})
	}
	return out
}

// TestUnsetFails: every method whose field is nil fails with ErrNotSet but
// Ready, which answers ready (nil), and
// a Backend is neither a LeaseBackend nor a ConsumerBackend, so that a
// Server on it has no leases or consumer groups.
func TestUnsetFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    any
		n    int
	}{
		{"Backend", &apitest.Backend{}, 13},
		{"LeaseBackend", &apitest.LeaseBackend{}, 17},
		{"ConsumerBackend", &apitest.ConsumerBackend{}, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := calls(tc.b)
			if len(errs) != tc.n {
				t.Fatalf("%d methods of api's interfaces, want %d", len(errs), tc.n)
			}
			if err := errs["Ready"]; err != nil {
				t.Errorf("Ready() = %v, want nil", err)
			}
			delete(errs, "Ready")
			for m, err := range errs {
				if !errors.Is(err, apitest.ErrNotSet) {
					t.Errorf("%s() = %v, want ErrNotSet", m, err)
				}
			}
		})
	}
}

// TestSetCalls: a method whose field is set calls it with its arguments and
// returns what it returns.
func TestSetCalls(t *testing.T) {
	injected := errors.New("injected")
	var gotKey string
	var gotWait time.Duration
	b := &apitest.LeaseBackend{
		Backend: apitest.Backend{
			TxByIdempotencyKeyFunc: func(_ context.Context, key string, wait time.Duration) (wire.TxResult, error) {
				gotKey, gotWait = key, wait
				return wire.TxResult{TxID: 7, Status: wire.StatusCommitted}, nil
			},
			ReadyFunc: func(context.Context) error { return injected },
		},
		ReleaseFunc: func(_ context.Context, name, holder string, token uint64, forwarded bool) error {
			if name != "l" || holder != "h" || token != 3 || !forwarded {
				t.Errorf("ReleaseFunc(%q, %q, %d, %v), want l, h, 3, true", name, holder, token, forwarded)
			}
			return nil
		},
	}
	ctx := context.Background()
	if res, err := b.TxByIdempotencyKey(ctx, "key", time.Second, wire.ReadOptions{Forwarded: true}); err != nil || res.TxID != 7 || gotKey != "key" || gotWait != time.Second {
		t.Fatalf("TxByIdempotencyKey() = %+v, %v; the field saw %q, %v", res, err, gotKey, gotWait)
	}
	if err := b.Ready(ctx); err != injected {
		t.Fatalf("Ready() = %v, want the injected error", err)
	}
	if err := b.ReleaseLease(ctx, "l", "h", 3, true); err != nil {
		t.Fatalf("ReleaseLease() = %v", err)
	}
	if _, err := b.Submit(ctx, wire.TxRequest{}, wire.SubmitOptions{}); !errors.Is(err, apitest.ErrNotSet) {
		t.Fatalf("Submit() = %v, want ErrNotSet beside set fields", err)
	}
}
