package node

import (
	"context"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/store"
)

// Range implements api.Backend: one page of keys, at the consistency of
// opts (consistentRead), from one store.Reader.Range on the node that
// serves it. A read forwarded to the leader carries its spans, which the
// credential of the node that took it cut.
func (l *lookups) Range(ctx context.Context, req wire.RangeRequest, opts wire.ReadOptions) (wire.KVPage, error) {
	return consistentRead(ctx, l, opts, func(context.Context) (wire.KVPage, error) {
		spans := make([]store.KeySpan, len(req.Spans))
		for i, s := range req.Spans {
			spans[i] = store.KeySpan{Start: s.Start, End: s.End}
		}
		p, err := l.db.Reads().Range(spans, req.After, req.Limit, req.KeysOnly)
		if err != nil {
			return wire.KVPage{}, translate(err)
		}
		page := wire.KVPage{Index: p.Index, KVs: make([]wire.KV, len(p.KVs)), More: p.More, Next: req.After}
		for i, kv := range p.KVs {
			page.KVs[i] = fromKV(kv)
			page.Next = kv.Key
		}
		return page, nil
	}, func(ctx context.Context, addr string, opts wire.ReadOptions) (wire.KVPage, error) {
		return l.peers.client.Range(ctx, addr, req, opts)
	})
}
