package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/txlog/txlog/api/wire"
)

// consumers are the consumer-group calls; offsets are committed by
// transactions, through kv.
type consumers struct {
	*conn
	kv kv
}

// CommitOffset commits offset as group's offset, under fence when it is not
// nil: the transaction whose one op is that commit_offset, run as Submit runs
// it (same retries, a random idempotency key). An offset not above the
// group's, or a fence whose lease was taken over, is a rejected result with
// its Conflict (Group, or Fence), not an error. To commit the offset with
// other ops, Submit a transaction with a commit_offset op among them.
func (c *consumers) CommitOffset(ctx context.Context, group string, offset uint64, fence *wire.Fence) (wire.TxResult, error) {
	return c.kv.Submit(ctx, offsetTx(group, offset, false, fence), wire.SubmitOptions{})
}

// ResetOffset is CommitOffset with reset: it sets any offset, lower or 0 too.
func (c *consumers) ResetOffset(ctx context.Context, group string, offset uint64, fence *wire.Fence) (wire.TxResult, error) {
	return c.kv.Submit(ctx, offsetTx(group, offset, true, fence), wire.SubmitOptions{})
}

func offsetTx(group string, offset uint64, reset bool, fence *wire.Fence) wire.TxRequest {
	return wire.TxRequest{Fence: fence, Ops: []wire.Op{{Op: wire.OpCommitOffset, Group: group, Offset: offset, Reset: reset}}}
}

// Consumer reads group's committed offset from any node, linearizably
// unless opts set another Consistency (as Get); ErrNotFound when the group
// has none.
func (c *consumers) Consumer(ctx context.Context, group string, opts ...wire.ReadOptions) (wire.ConsumerGroup, error) {
	var g wire.ConsumerGroup
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/consumers/" + url.PathEscape(group), query: readQuery(nil, opts)}, true, &g)
	return g, err
}

// Consumers lists the consumer groups in name order, from any node; opts
// as for Consumer.
func (c *consumers) Consumers(ctx context.Context, opts ...wire.ReadOptions) ([]wire.ConsumerGroup, error) {
	var l wire.ConsumerList
	err := c.call(ctx, request{method: http.MethodGet, path: "/v1/consumers", query: readQuery(nil, opts)}, true, &l)
	return l.Consumers, err
}
