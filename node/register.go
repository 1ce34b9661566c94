package node

import (
	"context"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/store"
)

// registerInterval paces the check that this node's published info is current.
const registerInterval = 250 * time.Millisecond

// registerRetry is how long a node waits for its committed registration to be
// applied locally before it proposes it again.
const registerRetry = 5 * time.Second

// registerLoop publishes this node's HTTP address (and txid node number) through
// the log whenever the registry lacks it or holds an old one, so every node can
// reach the leader's HTTP address. It also warns when another node claims the
// same txid node number.
func (n *Node) registerLoop() {
	me := store.NodeInfo{ID: n.cfg.ID, HTTPAddr: n.httpAddr, RaftAddr: n.cfg.RaftAddr, TxIDNode: uint16(n.cfg.NodeNumber)}
	t := time.NewTicker(registerInterval)
	defer t.Stop()
	warned := false
	var sent time.Time // when this node last proposed its info
	for {
		select {
		case <-n.life.Done():
			return
		case <-t.C:
		}
		if n.life.Err() != nil {
			return // a tick that won the select against life.Done()
		}
		nodes := n.peers.all()
		for id, info := range nodes {
			if id != me.ID && info.TxIDNode == me.TxIDNode && !warned {
				n.log.Error("txid node number used by another node", "peer", id, "node_number", me.TxIDNode)
				warned = true
			}
		}
		if nodes[me.ID] == me || time.Since(sent) < registerRetry {
			// Current, or proposed a moment ago and not applied here yet.
			continue
		}
		if leader, _ := n.raft.Leader(); leader == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(n.life, 2*time.Second)
		p := &pending{kind: store.KindRegisterNode, payload: store.EncodeNode(me)}
		n.propose(ctx, []*pending{p}, api.SubmitOptions{})
		cancel()
		if p.err == nil && p.done {
			sent = time.Now()
			n.log.Info("node registered", "http_addr", me.HTTPAddr)
		}
	}
}

// joinLoop asks the cluster behind cfg.Join to add this node, until it is a member.
func (n *Node) joinLoop() {
	c := api.NewClient(api.ClientConfig{Endpoints: []string{n.cfg.Join}})
	req := api.JoinRequest{ID: n.cfg.ID, RaftAddr: n.cfg.RaftAddr, HTTPAddr: n.httpAddr}
	backoff := 100 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(n.life, 10*time.Second)
		err := c.Join(ctx, req)
		cancel()
		if err == nil {
			n.log.Info("joined cluster", "via", n.cfg.Join)
			return
		}
		n.log.Warn("join failed", "via", n.cfg.Join, "err", err)
		select {
		case <-n.life.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
