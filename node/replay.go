package node

import (
	"context"
	"slices"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/store"
)

// Replay pacing and batch sizes.
const (
	replayInterval = 250 * time.Millisecond
	replayBatch    = 512
	replayTimeout  = 5 * time.Second
	drainInterval  = 200 * time.Millisecond
	drainBatch     = 256
)

func sortByID(es []*intakeEntry) {
	slices.SortFunc(es, func(a, b *intakeEntry) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
}

// replayLoop proposes, through the current leader, the transactions this node
// accepted and parked: those answered 202, and after a restart every WAL record
// not marked done. The store's dedup by txid makes replaying a transaction that
// already committed (through Redis, or an earlier attempt) harmless: its original
// outcome comes back and no second entry is written.
func (n *Node) replayLoop() {
	n.every(replayInterval, n.intake.kick, n.replayOnce)
}

// every runs once on each tick of interval and each signal on kick (nil: none),
// again at once while once reports a full batch, until the node stops.
func (n *Node) every(interval time.Duration, kick <-chan struct{}, once func() bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-n.life.Done():
			return
		case <-t.C:
		case <-kick:
		}
		for n.life.Err() == nil && once() {
		}
	}
}

// replayOnce proposes one batch of parked transactions. It reports whether it
// resolved a full batch, so that the caller goes on at once.
func (n *Node) replayOnce() bool {
	if leader, _ := n.raft.Leader(); leader == "" {
		return false
	}
	es := n.intake.take(replayBatch)
	if len(es) == 0 {
		return false
	}
	ps := make([]*pending, len(es))
	for i, e := range es {
		ps[i] = &pending{kind: store.KindTx, payload: e.payload, id: e.id, sent: true}
	}
	ctx, cancel := context.WithTimeout(n.life, replayTimeout)
	n.propose(ctx, ps, wire.SubmitOptions{})
	cancel()
	done := n.finishReplayed(es, ps)
	if done > 0 {
		n.log.Debug("parked transactions replayed", "count", done, "open", len(es)-done)
	}
	return len(es) == replayBatch && done == len(es)
}

// finishReplayed ends a proposal of taken entries es (ps aligned with them):
// those resolved, or refused for good, are marked done; the rest go back to
// the replayer. It returns how many were marked done.
func (n *Node) finishReplayed(es []*intakeEntry, ps []*pending) int {
	var done, open = es[:0:0], es[:0:0]
	for i, p := range ps {
		switch {
		case p.done && p.err == nil:
			done = append(done, es[i])
		case p.done && isClientError(p.err):
			n.log.Error("parked transaction refused; dropping it", "txid", p.id, "err", p.err)
			done = append(done, es[i])
		default:
			open = append(open, es[i])
		}
	}
	n.intake.finish(done...)
	n.intake.releaseQuiet(open...)
	return len(done)
}

// drainLoop runs on every node with Redis; while the node leads, it moves the
// parked entries from Redis into Raft and acknowledges each in Redis only after
// its commit. Entries a leader claimed and did not acknowledge before dying are
// claimed again after parking.Config.ClaimIdle.
func (n *Node) drainLoop() {
	n.every(drainInterval, nil, func() bool { return n.raft.IsLeader() && n.drainOnce() })
}

// drainOnce proposes one batch of Redis entries; it reports whether the batch was
// full and fully committed, so that the caller goes on at once.
func (n *Node) drainOnce() bool {
	ctx, cancel := context.WithTimeout(n.life, replayTimeout)
	defer cancel()
	entries, err := n.park.Claim(ctx, drainBatch)
	if err != nil || len(entries) == 0 {
		return false
	}
	var ps []*pending
	var ids []string // stream IDs, aligned with ps
	var junk []string
	for _, e := range entries {
		tx, err := store.DecodeTx(e.Payload)
		if err != nil || uint64(tx.ID) != e.TxID {
			n.log.Error("parked entry is not a transaction; dropping it", "stream_id", e.StreamID, "err", err)
			junk = append(junk, e.StreamID)
			continue
		}
		ps = append(ps, &pending{kind: store.KindTx, payload: e.Payload, id: tx.ID, sent: true})
		ids = append(ids, e.StreamID)
	}
	n.proposeLocal(ctx, ps)
	acks := junk
	for i, p := range ps {
		if p.done && (p.err == nil || isClientError(p.err)) {
			acks = append(acks, ids[i])
		}
	}
	if len(acks) > 0 {
		if err := n.park.Ack(ctx, acks...); err != nil {
			n.log.Warn("ack parked entries", "err", err) // they come back after ClaimIdle: harmless
		}
		n.log.Debug("parked entries drained", "count", len(acks)-len(junk))
	}
	return len(entries) == drainBatch && len(acks) == len(entries)
}
