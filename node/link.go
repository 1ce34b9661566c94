package node

import (
	"github.com/txlog/txlog/peerlink"
)

// openLink listens for the peer link on the Raft address. The node's
// identity (identity.go) fills the link's hooks: the cluster ID it presents,
// the answer to bootstrap probes, and the policy (identity.accept).
func openLink(cfg Config, ident *identity) (*peerlink.Link, error) {
	return peerlink.Listen(cfg.RaftAddr, peerlink.Config{
		NodeID:    cfg.ID,
		ClusterID: ident.clusterID,
		Accept:    ident.accept,
		Bootstrap: ident.answerProbe,
		Logger:    cfg.Logger.With("component", "peerlink"),
	})
}
