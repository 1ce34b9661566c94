package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
)

// fakeConsumers serves two consumer groups.
type fakeConsumers struct {
	*fakeLeases
}

var groups = []wire.ConsumerGroup{
	{Group: "audit", Offset: 3, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Lag: 7},
	{Group: "billing", Offset: 9, UpdatedAt: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC), Lag: 1},
}

func (f *fakeConsumers) Consumer(_ context.Context, group string, _ wire.ReadOptions) (wire.ConsumerGroup, error) {
	for _, g := range groups {
		if g.Group == group {
			return g, nil
		}
	}
	return wire.ConsumerGroup{}, wire.ErrNotFound
}

func (f *fakeConsumers) Consumers(context.Context, wire.ReadOptions) ([]wire.ConsumerGroup, error) {
	return groups, nil
}

func TestConsumersCommand(t *testing.T) {
	srv := httptest.NewServer(api.NewServer(api.Config{}, &fakeConsumers{fakeLeases: newFakeLeases()}))
	t.Cleanup(srv.Close)
	env := map[string]string{targetsEnv: srv.URL}
	ctx := testCtx(t)
	r := runCLI(t, ctx, env, "consumers")
	if l := decodeOut[wire.ConsumerList](t, r); r.code != 0 || len(l.Consumers) != 2 || l.Consumers[1] != groups[1] {
		t.Fatalf("consumers: exit %d %+v; stderr %s", r.code, l, r.stderr)
	}
	r = runCLI(t, ctx, env, "consumers", "billing")
	if g := decodeOut[wire.ConsumerGroup](t, r); r.code != 0 || g != groups[1] {
		t.Fatalf("consumers billing: exit %d %+v; stderr %s", r.code, g, r.stderr)
	}
	if r = runCLI(t, ctx, env, "consumers", "nobody"); r.code != 1 || !strings.Contains(r.stderr, `consumer group "nobody" has no committed offset`) || strings.Count(r.stderr, "nobody") != 1 {
		t.Fatalf("consumers nobody: exit %d; stderr %s; want the node's 404, said once", r.code, r.stderr)
	}
	if r = runCLI(t, ctx, env, "consumers", "-o", "table"); r.code != 0 || !strings.HasPrefix(r.stdout, "GROUP") || strings.Count(r.stdout, "\n") != 3 {
		t.Fatalf("consumers -o table: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	if r = runCLI(t, ctx, env, "consumers", "-o", "yaml"); r.code != 2 || !strings.Contains(r.stderr, `-o "yaml"`) {
		t.Fatalf("consumers -o yaml: exit %d; stderr %s", r.code, r.stderr)
	}
	if r = runCLI(t, ctx, env, "consumers", "a", "b"); r.code != 2 || !strings.Contains(r.stderr, "at most one GROUP") {
		t.Fatalf("consumers a b: exit %d; stderr %s", r.code, r.stderr)
	}
}
