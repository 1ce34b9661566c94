package wire

import "time"

// OpCommitOffset is the op that sets a consumer group's committed offset,
// atomically with the other ops of its transaction:
// {"op":"commit_offset","group":"billing","offset":N[,"reset":true]}. The
// offset only moves forward unless Reset is set.
const OpCommitOffset = "commit_offset"

// ConsumerGroup is the answer of GET /v1/consumers/{group} and one element of
// GET /v1/consumers. Lag is the node's last applied index minus Offset.
type ConsumerGroup struct {
	Group     string    `json:"group"`
	Offset    uint64    `json:"offset"`
	UpdatedAt time.Time `json:"updated_at"`
	Lag       uint64    `json:"lag"`
}

// ConsumerList is the answer of GET /v1/consumers, groups in name order.
type ConsumerList struct {
	Consumers []ConsumerGroup `json:"consumers"`
}

// OffsetRequest is the body of POST /v1/consumers/{group}/offset: the same as a
// transaction whose only op is a commit_offset of the group.
type OffsetRequest struct {
	Offset uint64 `json:"offset"`
	Reset  bool   `json:"reset,omitempty"`
	Fence  *Fence `json:"fence,omitempty"`
}
