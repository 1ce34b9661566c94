package client

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// TestRangeAll pages through keys of a fake node and sees each once, in
// order, with the query a node expects.
func TestRangeAll(t *testing.T) {
	var keys []string
	for i := range 25 {
		keys = append(keys, fmt.Sprintf("p/%02d", i))
	}
	b := &fakeBackend{}
	var reqs []wire.RangeRequest
	b.RangeFunc = func(_ context.Context, req wire.RangeRequest, opts wire.ReadOptions) (wire.KVPage, error) {
		reqs = append(reqs, req)
		if opts.Consistency != wire.ConsistencyStale {
			t.Errorf("consistency %q, want stale", opts.Consistency)
		}
		page := wire.KVPage{Index: 3, Next: req.After}
		for _, k := range keys {
			if k <= req.After && req.After != "" {
				continue
			}
			if len(page.KVs) == req.Limit {
				page.More = true
				break
			}
			page.KVs = append(page.KVs, wire.KV{Key: k, Value: json.RawMessage(`1`), Version: 1})
			page.Next = k
		}
		return page, nil
	}
	c := testClient(testNode(t, b).URL)
	var got []string
	err := c.RangeAll(context.Background(), "p/", RangeOptions{Limit: 10, KeysOnly: true, Consistency: wire.ConsistencyStale}, func(p wire.KVPage) error {
		for _, kv := range p.KVs {
			got = append(got, kv.Key)
			if kv.Value != nil {
				t.Errorf("keys only: %s has value %s", kv.Key, kv.Value)
			}
		}
		return nil
	})
	if err != nil || !slices.Equal(got, keys) {
		t.Fatalf("RangeAll = %q, %v; want %q", got, err, keys)
	}
	if len(reqs) != 3 || reqs[1].After != "p/09" || !reqs[0].KeysOnly || reqs[0].Limit != 10 || reqs[0].Spans[0] != (wire.KeySpan{Start: "p/", End: "p0"}) {
		t.Fatalf("requests %+v", reqs)
	}
	if _, err := c.Range(context.Background(), "p/", RangeOptions{Limit: 5000}); err == nil {
		t.Fatal("Range(limit 5000) = nil error")
	}
}
