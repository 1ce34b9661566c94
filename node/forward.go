package node

import (
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/node/peer"
)

// newForwarder returns the Forwarder of a follower's proposals to the leader
// (node/peer/forward.go): over propose streams, or a POST per group with
// --forward=http.
func newForwarder(cfg Config, c *client.Client, streams *peer.Streams) *peer.Forwarder {
	propose := streams.Propose
	if cfg.Forward == ForwardHTTP {
		propose = c.ProposeTo
	}
	return peer.NewForwarder(propose)
}
