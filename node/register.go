package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/replication"
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
func (m *membership) registerLoop() {
	t := time.NewTicker(registerInterval)
	defer t.Stop()
	var sent time.Time // when this node last proposed its info
	for {
		m.checkClash()
		select {
		case <-m.life.Done():
			return
		case <-t.C:
		}
		if m.life.Err() != nil {
			return // a tick that won the select against life.Done()
		}
		num := m.nodeNumber()
		if num == 0 {
			m.adoptNumber()
			continue
		}
		if m.removed.Load() {
			continue
		}
		me := store.NodeInfo{ID: m.cfg.ID, HTTPAddr: m.httpAddr, RaftAddr: m.cfg.RaftAddr, TxIDNode: uint16(num)}
		if info, _ := m.peers.lookup(me.ID); info == me || time.Since(sent) < registerRetry {
			// Current, or proposed a moment ago and not applied here yet.
			continue
		}
		if leader, _ := m.raft.Leader(); leader == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(m.life, 2*time.Second)
		p := &pending{kind: store.KindRegisterNode, payload: store.EncodeNode(me)}
		m.props.propose(ctx, []*pending{p}, wire.SubmitOptions{})
		cancel()
		if p.st.err == nil && p.st.isDone() {
			sent = time.Now()
			m.log.Info("node registered", "http_addr", me.HTTPAddr, "node_number", num)
		}
	}
}

// checkClash sets or clears the clash that makes this node refuse writes:
// another member of the configuration registered with this node's txid node
// number. The first time it finds this node's own entry it also lets the node
// take writes (membership.registered).
func (m *membership) checkClash() {
	num := m.nodeNumber()
	if num == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(m.life, time.Second)
	members, err := m.raft.Members(ctx)
	cancel()
	if err != nil {
		return // shutting down, or timed out: keep what was known
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	nodes, err := m.db.Reads().Nodes()
	if err != nil {
		return
	}
	holder := clashWith(m.cfg.ID, num, ids, nodes)
	own := slices.ContainsFunc(nodes, func(e store.NodeInfo) bool { return e.ID == m.cfg.ID && int(e.TxIDNode) == num })
	defer func() {
		if own {
			m.registered.Store(true) // after the clash is stored
		}
	}()
	prev := m.clash.Load()
	switch {
	case holder != "" && (prev == nil || *prev != holder):
		m.clash.Store(&holder)
		m.log.Error("txid node number held by another member; refusing writes until one of the two is removed", "peer", holder, "node_number", num)
	case holder == "" && prev != nil:
		m.clash.Store(nil)
		m.log.Info("txid node number no longer held by another member; taking writes", "peer", *prev, "node_number", num)
	}
}

// joinLoop asks the cluster behind cfg.Join to add this node, until it is a
// member. The request carries the node's txid node number, if it has one (or
// --node-number asks for one); the answer carries the number it holds, which a
// node without one persists before it takes a write. A refusal of the number
// (node_number_taken) stops the node: asking again cannot succeed.
func (m *membership) joinLoop() {
	c := m.peers.joinClient(m.cfg.Join)
	backoff := 100 * time.Millisecond
	for {
		if m.removedWhileAway() {
			m.log.Warn("not joining again: this member was removed from the cluster", "via", m.cfg.Join)
			return // removal.loop finds the same and stops the node
		}
		want := m.nodeNumber()
		if want == 0 {
			want = m.cfg.NodeNumber
		}
		req := wire.JoinRequest{ID: m.cfg.ID, RaftAddr: m.cfg.RaftAddr, HTTPAddr: m.httpAddr, NodeNumber: want}
		ctx, cancel := context.WithTimeout(m.life, 10*time.Second)
		res, err := c.Join(ctx, req)
		cancel()
		if err == nil {
			err = m.joined(res)
			if err == nil {
				m.log.Info("joined cluster", "via", m.cfg.Join, "node_number", res.NodeNumber)
				return
			}
			m.stopWith(err)
			return
		}
		if ae, ok := errors.AsType[*wire.Error](err); ok && ae.Code == wire.CodeNodeNumberTaken {
			m.stopWith(fmt.Errorf("join via %s refused: %w", m.cfg.Join, err))
			return
		}
		if ae, ok := errors.AsType[*wire.Error](err); ok && ae.Code == wire.CodeMemberExists {
			if m.memberHere() {
				// A restart on another HTTP port: registerLoop publishes it.
				m.log.Info("already a member at this raft address; not joining again", "via", m.cfg.Join)
				return
			}
			m.stopWith(fmt.Errorf("join via %s refused (another server holds this id or raft address; an operator re-points a member with a join that says \"replace\": true): %w", m.cfg.Join, err))
			return
		}
		m.log.Warn("join failed", "via", m.cfg.Join, "err", err)
		select {
		case <-m.life.Done():
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
func (m *membership) removedWhileAway() bool {
	if _, known := m.listed(); !known {
		return false
	}
	_, removed := m.peers.askLeader(m.life)
	return removed
}

// memberHere reports whether this node's own configuration lists it at its
// raft address and it holds a txid node number: a member restarting, whose
// join the leader refuses only for a new HTTP address.
func (m *membership) memberHere() bool {
	ctx, cancel := context.WithTimeout(m.life, askTimeout)
	defer cancel()
	members, err := m.raft.Members(ctx)
	if err != nil || m.nodeNumber() == 0 {
		return false
	}
	return slices.ContainsFunc(members, func(mb replication.Member) bool { return mb.ID == m.cfg.ID && mb.Addr == m.cfg.RaftAddr })
}

// joined takes the cluster ID and the node number of a successful join: it
// persists and uses each if this node had none, and checks it otherwise.
func (m *membership) joined(res wire.JoinResult) error {
	if res.ClusterID != "" {
		id, err := parseClusterID(res.ClusterID)
		if err != nil {
			return fmt.Errorf("join via %s: %w", m.cfg.Join, err)
		}
		if err := m.ident.set(id, "the join answer of "+m.cfg.Join); err != nil {
			return fmt.Errorf("join via %s: %w", m.cfg.Join, err)
		}
	}
	have := m.nodeNumber()
	switch {
	case have == 0 && res.NodeNumber == 0:
		return fmt.Errorf("join via %s: the answer assigns no txid node number (an older leader?); give --node-number", m.cfg.Join)
	case have == 0:
		return m.setNumber(res.NodeNumber, true) // the leader registered it, clash-free
	case have != res.NodeNumber:
		return fmt.Errorf("join via %s: the cluster says this node holds txid node number %d, its data dir says %d", m.cfg.Join, res.NodeNumber, have)
	}
	return nil
}

// stopWith makes Run stop the node and return err.
func (m *membership) stopWith(err error) {
	select {
	case m.stop <- err:
	default:
	}
}

// joinLocal adds a server on the leader. It first registers the server through
// the log with its txid node number (the one it asks for, unless another member
// holds it, or a free one: pickNumber), so that the number is taken before the
// server is a member, and a second join cannot get it; then it changes the
// configuration. joinMu serializes the choice; the barrier makes the registry
// read here include everything committed.
func (m *membership) joinLocal(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error) {
	m.joinMu.Lock()
	defer m.joinMu.Unlock()
	if _, err := m.raft.ReadIndex(ctx); err != nil {
		return wire.JoinResult{}, translate(err)
	}
	members, err := m.raft.Members(ctx)
	if err != nil {
		return wire.JoinResult{}, translate(err)
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	registry, err := m.db.Reads().Nodes()
	if err != nil {
		return wire.JoinResult{}, err
	}
	if err := sameMember(req, members, registry); err != nil {
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
		m.props.proposeLocal(ctx, []*pending{p})
		switch {
		case p.st.isDone() && p.st.err != nil:
			return wire.JoinResult{}, p.st.err
		case p.st.isSent():
			return wire.JoinResult{}, wire.ErrUnknownOutcome
		case !p.st.isDone():
			return wire.JoinResult{}, wire.ErrNotLeader
		}
		m.log.Info("joining server registered", "peer", req.ID, "node_number", num)
	}
	voter := req.Voter == nil || *req.Voter
	if err := translate(m.raft.Join(ctx, req.ID, req.RaftAddr, voter)); err != nil {
		return wire.JoinResult{}, err
	}
	return wire.JoinResult{NodeNumber: num, ClusterID: clusterID(m.ident.clusterID()).String()}, nil
}

// sameMember refuses a join that names a member's id with another Raft
// address, or another HTTP address than the member registered, or another
// member's Raft address with a new id, with 409 member_exists, unless the
// request says replace: the join would re-point the member (Raft removes a
// server of the same id or address first), which only an operator who means
// it may do. A join with the member's own addresses passes (it is
// idempotent), and so does one of an id that is not a member.
func sameMember(req wire.JoinRequest, members []replication.Member, registry []store.NodeInfo) error {
	if req.Replace {
		return nil
	}
	for _, m := range members {
		if m.ID != req.ID && m.Addr == req.RaftAddr {
			return &wire.Error{Code: wire.CodeMemberExists, Message: fmt.Sprintf("raft address %s is member %s's, not %s's; to replace that member, join with \"replace\": true", req.RaftAddr, m.ID, req.ID)}
		}
	}
	i := slices.IndexFunc(members, func(m replication.Member) bool { return m.ID == req.ID })
	if i < 0 {
		return nil
	}
	if addr := members[i].Addr; addr != req.RaftAddr {
		return &wire.Error{Code: wire.CodeMemberExists, Message: fmt.Sprintf("member %s is at raft address %s, not %s; to re-point it, join again with \"replace\": true", req.ID, addr, req.RaftAddr)}
	}
	for _, e := range registry {
		if e.ID == req.ID && req.HTTPAddr != "" && e.HTTPAddr != "" && e.HTTPAddr != req.HTTPAddr {
			return &wire.Error{Code: wire.CodeMemberExists, Message: fmt.Sprintf("member %s is at http address %s, not %s; to re-point it, join again with \"replace\": true", req.ID, e.HTTPAddr, req.HTTPAddr)}
		}
	}
	return nil
}
