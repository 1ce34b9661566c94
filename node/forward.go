package node

import (
	"github.com/txlog/txlog/node/peer"
)

// newForwarder returns the Forwarder of a follower's proposals to the leader
// (node/peer/forward.go): over propose streams, or a POST per group with
// --forward=http, both on the peer link.
func newForwarder(cfg Config, c *peer.Client, streams *peer.Streams) *peer.Forwarder {
	propose := streams.Propose
	if cfg.Forward == ForwardHTTP {
		propose = c.Propose
	}
	return peer.NewForwarder(propose)
}
