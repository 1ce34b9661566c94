package client

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
)

// fakeConsumers is a fakeBackend that is a ConsumerBackend too.
type fakeConsumers struct {
	fakeBackend
	groups map[string]wire.ConsumerGroup
}

var _ api.ConsumerBackend = (*fakeConsumers)(nil)

func (f *fakeConsumers) Consumer(_ context.Context, group string, _ wire.ReadOptions) (wire.ConsumerGroup, error) {
	g, ok := f.groups[group]
	if !ok {
		return wire.ConsumerGroup{}, wire.ErrNotFound
	}
	return g, nil
}

func (f *fakeConsumers) Consumers(context.Context, wire.ReadOptions) ([]wire.ConsumerGroup, error) {
	var out []wire.ConsumerGroup
	for _, name := range []string{"a/b", "z"} {
		if g, ok := f.groups[name]; ok {
			out = append(out, g)
		}
	}
	return out, nil
}

func TestConsumerClient(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var got []wire.TxRequest
	b := &fakeConsumers{groups: map[string]wire.ConsumerGroup{"a/b": {Group: "a/b", Offset: 4, UpdatedAt: at, Lag: 2}}}
	b.SubmitFunc = func(_ context.Context, tx wire.TxRequest, _ wire.SubmitOptions) (wire.TxResult, error) {
		got = append(got, tx)
		if tx.Ops[0].Offset <= 4 && !tx.Ops[0].Reset {
			return wire.TxResult{TxID: 1, Status: wire.StatusRejected, Conflict: &wire.Conflict{Group: tx.Ops[0].Group, Expected: tx.Ops[0].Offset, Actual: 4}}, nil
		}
		return wire.TxResult{TxID: 2, Status: wire.StatusCommitted, Index: 7}, nil
	}
	c := testClient(testNode(t, b).URL)
	ctx := context.Background()
	fence := &wire.Fence{Lease: "consumer/a", Token: 3}
	if res, err := c.CommitOffset(ctx, "a/b", 5, fence); err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("CommitOffset() = %+v, %v", res, err)
	}
	want := []wire.Op{{Op: wire.OpCommitOffset, Group: "a/b", Offset: 5}}
	if !reflect.DeepEqual(got[0].Ops, want) || !reflect.DeepEqual(got[0].Fence, fence) || got[0].IdempotencyKey == "" {
		t.Fatalf("submitted %+v, want %+v with the fence and a key", got[0], want)
	}
	res, err := c.CommitOffset(ctx, "a/b", 3, nil)
	if err != nil || res.Status != wire.StatusRejected || !reflect.DeepEqual(res.Conflict, &wire.Conflict{Group: "a/b", Expected: 3, Actual: 4}) {
		t.Fatalf("CommitOffset(backward) = %+v, %v; want rejected naming the group", res, err)
	}
	if res, err := c.ResetOffset(ctx, "a/b", 0, nil); err != nil || res.Status != wire.StatusCommitted || !got[2].Ops[0].Reset {
		t.Fatalf("ResetOffset() = %+v, %v (submitted %+v)", res, err, got[2])
	}
	if g, err := c.Consumer(ctx, "a/b"); err != nil || g != b.groups["a/b"] {
		t.Fatalf("Consumer() = %+v, %v", g, err)
	}
	if _, err := c.Consumer(ctx, "other"); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("Consumer(other) = %v, want ErrNotFound", err)
	}
	if l, err := c.Consumers(ctx); err != nil || !reflect.DeepEqual(l, []wire.ConsumerGroup{b.groups["a/b"]}) {
		t.Fatalf("Consumers() = %+v, %v", l, err)
	}
}
