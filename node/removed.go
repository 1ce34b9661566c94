package node

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/replication"
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

// removal watches for this node's removal from the cluster (loop), and then
// leaves (leave).
type removal struct {
	raft            *replication.Raft
	mem             *membership
	peers           *peers
	intake          *intake
	replay          *replayer
	log             *slog.Logger
	httpAddr        string          // advertised HTTP address
	shutdownTimeout time.Duration   // Config.ShutdownTimeout
	life            context.Context // the node's: ends when Close begins
}

// loop watches for this node's removal from the cluster, and then
// leaves (see leave).
func (rm *removal) loop() {
	t := time.NewTicker(removalInterval)
	defer t.Stop()
	wasMember := false
	lastLeader := time.Now()
	for {
		select {
		case <-rm.life.Done():
			return
		case <-t.C:
		}
		st := rm.raft.Status()
		if st.LeaderID != "" {
			lastLeader = time.Now()
		}
		listed, known := rm.mem.listed()
		wasMember = wasMember || listed
		suspect := st.State == "shutdown" ||
			(known && !listed) ||
			(wasMember && time.Since(lastLeader) > leaderlessAsk)
		if !suspect {
			continue
		}
		base, removed := rm.peers.askLeader(rm.life)
		if removed {
			rm.leave(base)
			return
		}
	}
}

// listed reports whether this node's latest configuration lists it; known is
// false when the configuration is empty (a node not joined yet) or cannot be
// read.
func (m *membership) listed() (listed, known bool) {
	ctx, cancel := context.WithTimeout(m.life, askTimeout)
	defer cancel()
	members, err := m.raft.Members(ctx)
	if err != nil || len(members) == 0 {
		return false, false
	}
	return slices.ContainsFunc(members, func(mb replication.Member) bool { return mb.ID == m.cfg.ID }), true
}

// leave is what a removed node does: it answers writes (and /readyz) with 503
// removed from now on, proposes every transaction it accepted and has not
// seen resolved through the leader at base, as the replayer would, marking
// each done only once the leader resolved it, and then, no sooner than
// ShutdownTimeout after it learned of its removal, makes Run stop the node.
// It gives up only when the node is closed; what is unresolved then stays in
// its intake WAL, and the next start hands it off again.
func (rm *removal) leave(base string) {
	start := time.Now()
	rm.mem.removed.Store(true)
	rm.log.Warn("removed from the cluster: taking no more writes, handing unresolved transactions to the leader",
		"leader", base, "unresolved", rm.intake.size())
	for rm.life.Err() == nil && rm.intake.size() > 0 {
		if rm.replay.handOff(base) {
			continue
		}
		select {
		case <-rm.life.Done():
			return
		case <-time.After(handOffRetry):
		}
		if b, removed := rm.peers.askLeader(rm.life); removed && b != "" {
			base = b // the leader may have changed
		}
	}
	if rm.life.Err() != nil {
		return
	}
	rm.log.Info("unresolved transactions handed off; stopping after the shutdown timeout", "after", rm.shutdownTimeout-time.Since(start))
	select {
	case <-rm.life.Done():
		return
	case <-time.After(rm.shutdownTimeout - time.Since(start)):
	}
	rm.mem.stopWith(wire.ErrRemoved)
}
