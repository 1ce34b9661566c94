package node

import (
	"github.com/txlog/txlog/peerlink"
)

// openLink listens for the peer link on the Raft address. Until the cluster
// has an identity, a peer is accepted unless its cluster ID conflicts with
// this node's (which the link checks before Accept).
func openLink(cfg Config) (*peerlink.Link, error) {
	return peerlink.Listen(cfg.RaftAddr, peerlink.Config{
		NodeID: cfg.ID,
		Accept: func(byte, peerlink.ClusterID, string) error { return nil },
		Logger: cfg.Logger,
	})
}
