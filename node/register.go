package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/store"
)

// registerInterval paces the check that this node's published info is current.
const registerInterval = 250 * time.Millisecond

// registerRetry is how long a node waits for its committed registration to be
// applied locally before it proposes it again.
const registerRetry = 5 * time.Second

// registerLoop publishes this node's HTTP address and txid node number through
// the log whenever the registry lacks them or holds old ones, so every node can
// reach the leader's HTTP address and see every member's number. On each tick
// it also checks that no other member holds this node's number (checkClash). A
// joining node without a number yet publishes nothing: the leader registers it
// at join, and the node takes its number from the join's answer or from that
// registration (adoptNumber).
func (n *Node) registerLoop() {
	t := time.NewTicker(registerInterval)
	defer t.Stop()
	var sent time.Time // when this node last proposed its info
	for {
		n.checkClash()
		select {
		case <-n.life.Done():
			return
		case <-t.C:
		}
		if n.life.Err() != nil {
			return // a tick that won the select against life.Done()
		}
		num := n.nodeNumber()
		if num == 0 {
			n.adoptNumber()
			continue
		}
		if n.mem.removed.Load() {
			continue
		}
		me := store.NodeInfo{ID: n.cfg.ID, HTTPAddr: n.httpAddr, RaftAddr: n.cfg.RaftAddr, TxIDNode: uint16(num)}
		if info, _ := n.peers.lookup(me.ID); info == me || time.Since(sent) < registerRetry {
			// Current, or proposed a moment ago and not applied here yet.
			continue
		}
		if leader, _ := n.raft.Leader(); leader == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(n.life, 2*time.Second)
		p := &pending{kind: store.KindRegisterNode, payload: store.EncodeNode(me)}
		n.propose(ctx, []*pending{p}, wire.SubmitOptions{})
		cancel()
		if p.err == nil && p.done {
			sent = time.Now()
			n.log.Info("node registered", "http_addr", me.HTTPAddr, "node_number", num)
		}
	}
}

// checkClash sets or clears the clash that makes this node refuse writes:
// another member of the configuration registered with this node's txid node
// number. The first time it finds this node's own entry it also lets the node
// take writes (membership.registered).
func (n *Node) checkClash() {
	num := n.nodeNumber()
	if num == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(n.life, time.Second)
	members, err := n.raft.Members(ctx)
	cancel()
	if err != nil {
		return // shutting down, or timed out: keep what was known
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	nodes, err := n.db.Nodes()
	if err != nil {
		return
	}
	holder := clashWith(n.cfg.ID, num, ids, nodes)
	own := slices.ContainsFunc(nodes, func(e store.NodeInfo) bool { return e.ID == n.cfg.ID && int(e.TxIDNode) == num })
	defer func() {
		if own {
			n.mem.registered.Store(true) // after the clash is stored
		}
	}()
	prev := n.mem.clash.Load()
	switch {
	case holder != "" && (prev == nil || *prev != holder):
		n.mem.clash.Store(&holder)
		n.log.Error("txid node number held by another member; refusing writes until one of the two is removed", "peer", holder, "node_number", num)
	case holder == "" && prev != nil:
		n.mem.clash.Store(nil)
		n.log.Info("txid node number no longer held by another member; taking writes", "peer", *prev, "node_number", num)
	}
}

// joinLoop asks the cluster behind cfg.Join to add this node, until it is a
// member. The request carries the node's txid node number, if it has one (or
// --node-number asks for one); the answer carries the number it holds, which a
// node without one persists before it takes a write. A refusal of the number
// (node_number_taken) stops the node: asking again cannot succeed.
func (n *Node) joinLoop() {
	c := client.NewClient(client.ClientConfig{Endpoints: []string{n.cfg.Join}})
	backoff := 100 * time.Millisecond
	for {
		if n.removedWhileAway() {
			n.log.Warn("not joining again: this member was removed from the cluster", "via", n.cfg.Join)
			return // removalLoop finds the same and stops the node
		}
		want := n.nodeNumber()
		if want == 0 {
			want = n.cfg.NodeNumber
		}
		req := wire.JoinRequest{ID: n.cfg.ID, RaftAddr: n.cfg.RaftAddr, HTTPAddr: n.httpAddr, NodeNumber: want}
		ctx, cancel := context.WithTimeout(n.life, 10*time.Second)
		res, err := c.Join(ctx, req)
		cancel()
		if err == nil {
			err = n.joined(res)
			if err == nil {
				n.log.Info("joined cluster", "via", n.cfg.Join, "node_number", res.NodeNumber)
				return
			}
			n.stopWith(err)
			return
		}
		if ae, ok := errors.AsType[*wire.Error](err); ok && ae.Code == wire.CodeNodeNumberTaken {
			n.stopWith(fmt.Errorf("join via %s refused: %w", n.cfg.Join, err))
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

// removedWhileAway reports whether this node has been in a cluster (its Raft
// configuration is not empty) and the leader's configuration no longer lists
// it: it was removed while it was down or cut off, and --join must not undo
// the removal. A node that never received a configuration (a new one) and one
// the leader lists (a restart; a join whose answer was lost) join as usual;
// so does one that finds no leader to ask, which the leader decides on.
func (n *Node) removedWhileAway() bool {
	if _, known := n.listed(); !known {
		return false
	}
	_, removed := n.askLeader()
	return removed
}

// joined takes the node number of a successful join: it persists and uses it
// if this node had none, and checks it otherwise.
func (n *Node) joined(res wire.JoinResult) error {
	have := n.nodeNumber()
	switch {
	case have == 0 && res.NodeNumber == 0:
		return fmt.Errorf("join via %s: the answer assigns no txid node number (an older leader?); give --node-number", n.cfg.Join)
	case have == 0:
		return n.setNumber(res.NodeNumber, true) // the leader registered it, clash-free
	case have != res.NodeNumber:
		return fmt.Errorf("join via %s: the cluster says this node holds txid node number %d, its data dir says %d", n.cfg.Join, res.NodeNumber, have)
	}
	return nil
}

// stopWith makes Run stop the node and return err.
func (n *Node) stopWith(err error) {
	select {
	case n.mem.stop <- err:
	default:
	}
}

// joinLocal adds a server on the leader. It first registers the server through
// the log with its txid node number (the one it asks for, unless another member
// holds it, or a free one: pickNumber), so that the number is taken before the
// server is a member, and a second join cannot get it; then it changes the
// configuration. joinMu serializes the choice; the barrier makes the registry
// read here include everything committed.
func (n *Node) joinLocal(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error) {
	n.mem.joinMu.Lock()
	defer n.mem.joinMu.Unlock()
	if _, err := n.raft.ReadIndex(ctx); err != nil {
		return wire.JoinResult{}, translate(err)
	}
	members, err := n.raft.Members(ctx)
	if err != nil {
		return wire.JoinResult{}, translate(err)
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	registry, err := n.db.Nodes()
	if err != nil {
		return wire.JoinResult{}, err
	}
	num, err := pickNumber(req.ID, req.NodeNumber, ids, registry)
	if err != nil {
		return wire.JoinResult{}, err
	}
	info := store.NodeInfo{ID: req.ID, HTTPAddr: req.HTTPAddr, RaftAddr: req.RaftAddr, TxIDNode: uint16(num)}
	registered := false
	for _, e := range registry {
		registered = registered || e == info
	}
	if !registered {
		p := &pending{kind: store.KindRegisterNode, payload: store.EncodeNode(info)}
		n.proposeLocal(ctx, []*pending{p})
		switch {
		case p.done && p.err != nil:
			return wire.JoinResult{}, p.err
		case !p.done && p.sent:
			return wire.JoinResult{}, wire.ErrUnknownOutcome
		case !p.done:
			return wire.JoinResult{}, wire.ErrNotLeader
		}
		n.log.Info("joining server registered", "peer", req.ID, "node_number", num)
	}
	voter := req.Voter == nil || *req.Voter
	if err := translate(n.raft.Join(ctx, req.ID, req.RaftAddr, voter)); err != nil {
		return wire.JoinResult{}, err
	}
	return wire.JoinResult{NodeNumber: num}, nil
}
