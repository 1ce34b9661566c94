package wire

import (
	"time"
)

// SubmitOptions are the query parameters of a write.
type SubmitOptions struct {
	Timeout time.Duration // query timeout; default DefaultTimeout
	Ack     string        // AckQuorum (default), AckAll or AckAccepted
	// Fresh is for internal proposals only (query parameter fresh=true): no
	// frame of the proposal was sent to a leader before, so none can be in the
	// log yet and the leader need not look them up first.
	Fresh bool
}

// ReadOptions are the query parameters of GET /v1/kv/{key}.
type ReadOptions struct {
	Consistency string // ConsistencyLinearizable (default), ConsistencyLeader, ConsistencyStale
	// Forwarded is true when another node forwarded this request (header
	// X-Txlog-Forwarded); a node that is not the leader must then not forward again.
	Forwarded bool
}
