package node

import "github.com/txlog/txlog/api"

var (
	_ api.TxStreamBackend  = (*Node)(nil)
	_ api.SelfTimedBackend = (*Node)(nil)
)

// SubmitTimesItself implements api.SelfTimedBackend: Submit and SubmitBatch
// end by ctx's deadline, or without one by opts.Timeout (writer.submit,
// deadline.go).
func (n *Node) SubmitTimesItself() {}

// TxStreamLeader returns this node's ID and the leader's client address, as
// Cluster gives them (ID, LeaderHTTPAddr), without reading the membership:
// for the 101 answer and the pings of a client stream (api/txstream.go).
func (n *Node) TxStreamLeader() (node, leaderHTTPAddr string) {
	id, _ := n.raft.Leader()
	if id == "" {
		return n.cfg.ID, ""
	}
	info, _ := n.peers.lookup(id)
	return n.cfg.ID, info.HTTPAddr
}
