package node

import (
	"context"
	"errors"
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

// Consumer implements api.ConsumerBackend. It reads this node's applied
// state after catching up with the leader's commit index, as a lookup does.
func (cg *consumers) Consumer(ctx context.Context, group string) (wire.ConsumerGroup, error) {
	cg.look.catchUp(ctx)
	c, err := cg.db.Reads().Consumer(group)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return wire.ConsumerGroup{}, wire.New(wire.MsgConsumerNotFound, group)
	case err != nil:
		return wire.ConsumerGroup{}, err
	}
	return fromConsumer(c, cg.db.AppliedIndex()), nil
}

// Consumers implements api.ConsumerBackend.
func (cg *consumers) Consumers(ctx context.Context) ([]wire.ConsumerGroup, error) {
	cg.look.catchUp(ctx)
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
