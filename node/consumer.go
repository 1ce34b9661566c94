package node

import (
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/store"
)

var _ api.ConsumerBackend = (*Node)(nil)

// consumers answers api.ConsumerBackend for Node, which embeds it, from this
// node's applied state.
type consumers struct {
	look *lookups
	db   *store.DB
}

// Consumer implements api.ConsumerBackend, at the consistency of opts
// (consistentRead).
func (cg *consumers) Consumer(ctx context.Context, group string, opts wire.ReadOptions) (wire.ConsumerGroup, error) {
	return consistentRead(ctx, cg.look, opts, func(context.Context) (wire.ConsumerGroup, error) {
		c, err := cg.db.Reads().Consumer(group)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return wire.ConsumerGroup{}, wire.New(wire.MsgConsumerNotFound, group)
		case err != nil:
			return wire.ConsumerGroup{}, err
		}
		return fromConsumer(c, cg.db.AppliedIndex()), nil
	}, func(ctx context.Context, addr string, opts wire.ReadOptions) (wire.ConsumerGroup, error) {
		var g wire.ConsumerGroup
		err := cg.look.peers.client.Read(ctx, addr, "/v1/consumers/"+url.PathEscape(group), nil, opts, &g)
		return g, err
	})
}

// Consumers implements api.ConsumerBackend, at the consistency of opts
// (consistentRead).
func (cg *consumers) Consumers(ctx context.Context, opts wire.ReadOptions) ([]wire.ConsumerGroup, error) {
	return consistentRead(ctx, cg.look, opts, func(context.Context) ([]wire.ConsumerGroup, error) {
		cs, err := cg.db.Reads().Consumers()
		if err != nil {
			return nil, err
		}
		applied := cg.db.AppliedIndex()
		out := make([]wire.ConsumerGroup, len(cs))
		for i, c := range cs {
			out[i] = fromConsumer(c, applied)
		}
		return out, nil
	}, func(ctx context.Context, addr string, opts wire.ReadOptions) ([]wire.ConsumerGroup, error) {
		var list wire.ConsumerList
		err := cg.look.peers.client.Read(ctx, addr, "/v1/consumers", nil, opts, &list)
		return list.Consumers, err
	})
}

// fromConsumer converts a group's state; lag is applied minus the offset,
// 0 for an offset at or past applied.
func fromConsumer(c store.Consumer, applied uint64) wire.ConsumerGroup {
	var lag uint64
	if applied > c.Offset {
		lag = applied - c.Offset
	}
	return wire.ConsumerGroup{Group: c.Group, Offset: c.Offset, UpdatedAt: time.Unix(0, c.Time).UTC(), Lag: lag}
}
