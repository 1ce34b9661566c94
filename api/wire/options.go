package wire

import (
	"time"
)

// MaxNodeIDBytes bounds a node's ID (--id), in bytes.
const MaxNodeIDBytes = 64

// SubmitOptions are the query parameters of a write.
type SubmitOptions struct {
	Timeout time.Duration // query timeout; default DefaultTimeout
	Ack     string        // AckQuorum (default), AckAll or AckAccepted
	// Fresh is for internal proposals only (query parameter fresh=true): no
	// frame of the proposal was sent to a leader before, so none can be in the
	// log yet and the leader need not look them up first.
	Fresh bool
	// From is for internal proposals only (query parameter from): the ID of
	// the node that forwards the frames. The leader refuses frames from a
	// node that is not a member, registrations of another node, and txids
	// of another node number (node/framecheck.go). Over POST
	// /v1/internal/propose and a propose stream it is what the sender
	// says; the peer link fills it from its connection header instead.
	From string
	// HandOff is for internal proposals only (query parameter
	// handoff=true): the frames are transactions a removed node accepted
	// before its removal and hands to the leader (node/removed.go), which
	// takes them although From is no longer a member.
	HandOff bool
}

// ReadOptions are the query parameters of GET /v1/kv/{key}.
type ReadOptions struct {
	Consistency string // ConsistencyLinearizable (default), ConsistencyLeader, ConsistencyStale
	// Forwarded is true when another node forwarded this request (header
	// X-Txlog-Forwarded); a node that is not the leader must then not forward again.
	Forwarded bool
}
