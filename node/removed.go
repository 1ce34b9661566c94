package node

import (
	"context"
	"slices"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
)

// A removed member stops taking writes, hands what it still holds to the
// cluster, and stops. It cannot count on learning of its removal from the
// log: the leader stops replicating to it once the change is appended, and a
// member that was down or cut off then never receives it. So it asks: when
// its own configuration no longer lists it, when its Raft has shut down (a
// leader that removed itself), or when it has been a member and has known no
// leader for leaderlessAsk, it asks the nodes of its registry for the leader,
// and takes the leader's configuration as the answer. Only a leader's answer
// that lacks it counts as a removal; a node that is still joining (no
// configuration yet, or one from before its join while it catches up) is
// listed by the leader and goes on.
const (
	removalInterval = 500 * time.Millisecond
	leaderlessAsk   = 3 * time.Second
	askTimeout      = time.Second
	handOffRetry    = 250 * time.Millisecond
)

// removalLoop watches for this node's removal from the cluster, and then
// leaves (see leave).
func (n *Node) removalLoop() {
	t := time.NewTicker(removalInterval)
	defer t.Stop()
	wasMember := false
	lastLeader := time.Now()
	for {
		select {
		case <-n.life.Done():
			return
		case <-t.C:
		}
		st := n.raft.Status()
		if st.LeaderID != "" {
			lastLeader = time.Now()
		}
		listed, known := n.listed()
		wasMember = wasMember || listed
		suspect := st.State == "shutdown" ||
			(known && !listed) ||
			(wasMember && time.Since(lastLeader) > leaderlessAsk)
		if !suspect {
			continue
		}
		base, removed := n.askLeader()
		if removed {
			n.leave(base)
			return
		}
	}
}

// listed reports whether this node's latest configuration lists it; known is
// false when the configuration is empty (a node not joined yet) or cannot be
// read.
func (n *Node) listed() (listed, known bool) {
	ctx, cancel := context.WithTimeout(n.life, askTimeout)
	defer cancel()
	members, err := n.raft.Members(ctx)
	if err != nil || len(members) == 0 {
		return false, false
	}
	return slices.ContainsFunc(members, func(m replication.Member) bool { return m.ID == n.cfg.ID }), true
}

// askLeader asks the registered nodes for the leader, following their leader
// hints, and reports the leader's HTTP base URL and whether its configuration
// lacks this node. It reports "", false when no leader answered, or only one
// whose commit index is below this node's.
func (n *Node) askLeader() (base string, removed bool) {
	var queue []string
	for id, info := range n.peers.all() {
		if id != n.cfg.ID && info.HTTPAddr != "" {
			queue = append(queue, info.HTTPAddr)
		}
	}
	slices.Sort(queue)
	asked := map[string]bool{}
	for len(queue) > 0 && n.life.Err() == nil {
		addr := queue[0]
		queue = queue[1:]
		if asked[addr] || addr == n.httpAddr {
			continue
		}
		asked[addr] = true
		ctx, cancel := context.WithTimeout(n.life, askTimeout)
		st, err := n.client.ClusterFrom(ctx, "http://"+addr)
		cancel()
		if err != nil {
			continue
		}
		if st.State == "leader" && st.ID == st.LeaderID {
			// A leader behind what this node knows is committed is a deposed
			// one that has not noticed yet: its configuration may be old.
			if st.CommitIndex < n.raft.Status().CommitIndex {
				continue
			}
			return "http://" + addr, !slices.ContainsFunc(st.Members, func(m wire.Member) bool { return m.ID == n.cfg.ID })
		}
		if st.LeaderHTTPAddr != "" {
			queue = append([]string{st.LeaderHTTPAddr}, queue...)
		}
	}
	return "", false
}

// leave is what a removed node does: it answers writes (and /readyz) with 503
// removed from now on, proposes every transaction it accepted and has not
// seen resolved through the leader at base, as the replayer would, marking
// each done only once the leader resolved it, and then, no sooner than
// ShutdownTimeout after it learned of its removal, makes Run stop the node.
// It gives up only when the node is closed; what is unresolved then stays in
// its intake WAL, and the next start hands it off again.
func (n *Node) leave(base string) {
	start := time.Now()
	n.mem.removed.Store(true)
	n.log.Warn("removed from the cluster: taking no more writes, handing unresolved transactions to the leader",
		"leader", base, "unresolved", n.intake.size())
	for n.life.Err() == nil && n.intake.size() > 0 {
		if n.handOff(base) {
			continue
		}
		select {
		case <-n.life.Done():
			return
		case <-time.After(handOffRetry):
		}
		if b, removed := n.askLeader(); removed && b != "" {
			base = b // the leader may have changed
		}
	}
	if n.life.Err() != nil {
		return
	}
	n.log.Info("unresolved transactions handed off; stopping after the shutdown timeout", "after", n.cfg.ShutdownTimeout-time.Since(start))
	select {
	case <-n.life.Done():
		return
	case <-time.After(n.cfg.ShutdownTimeout - time.Since(start)):
	}
	n.stopWith(wire.ErrRemoved)
}

// handOff proposes one batch of unresolved transactions through the leader at
// base. It reports whether it resolved any.
func (n *Node) handOff(base string) bool {
	es := n.intake.take(replayBatch)
	if len(es) == 0 {
		return false // all busy in requests still under way: they come back parked or resolved
	}
	ps := make([]*pending, len(es))
	for i, e := range es {
		ps[i] = &pending{kind: store.KindTx, payload: e.payload, id: e.id, sent: true}
	}
	ctx, cancel := context.WithTimeout(n.life, replayTimeout)
	n.proposeRemote(ctx, base, ps, wire.SubmitOptions{})
	cancel()
	done := n.finishReplayed(es, ps)
	if done > 0 {
		n.log.Info("unresolved transactions handed off", "count", done, "open", len(es)-done)
	}
	return done > 0
}
