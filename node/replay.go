package node

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/replication"
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

// replayer proposes, through the leader of the moment, what this node
// accepted and parked (its intake's entries no request is proposing), and,
// while it leads, what any node parked in Redis; a removed node hands its
// entries to the leader with it (handOff).
type replayer struct {
	met    *nodeMetrics
	raft   *replication.Raft
	mem    *membership // issues the fresh txids of reissue
	intake *intake
	park   parker // nil without Redis
	props  *proposer
	log    *slog.Logger
	life   context.Context // the node's: ends when Close begins
}

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

// loop proposes, through the current leader, the transactions this node
// accepted and parked: those answered 202, and after a restart every WAL record
// not marked done. The store's dedup by txid makes replaying a transaction that
// already committed (through Redis, or an earlier attempt) harmless: its original
// outcome comes back and no second entry is written.
func (r *replayer) loop() {
	every(r.life, replayInterval, r.intake.kick, r.once)
}

// every runs once on each tick of interval and each signal on kick (nil: none),
// again at once while once reports a full batch, until life ends (the node
// stops).
func every(life context.Context, interval time.Duration, kick <-chan struct{}, once func() bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-life.Done():
			return
		case <-t.C:
		case <-kick:
		}
		for life.Err() == nil && once() {
		}
	}
}

// once proposes one batch of parked transactions. It reports whether it
// resolved a full batch, so that the caller goes on at once.
func (r *replayer) once() bool {
	if leader, _ := r.raft.Leader(); leader == "" {
		return false
	}
	es := r.intake.take(replayBatch)
	if len(es) == 0 {
		return false
	}
	ps := make([]*pending, len(es))
	for i, e := range es {
		ps[i] = sentTx(e.id, e.payload)
	}
	ctx, cancel := context.WithTimeout(r.life, replayTimeout)
	r.props.proposeReissuing(ctx, ps, es, wire.SubmitOptions{}, r.mem, r.intake, r.met, r.log)
	cancel()
	done := r.finish(es, ps)
	if done > 0 {
		r.log.Debug("parked transactions replayed", "count", done, "open", len(es)-done)
	}
	return len(es) == replayBatch && done == len(es)
}

// finish ends a proposal of taken entries es (ps aligned with them):
// those resolved, or refused for good, are marked done; the rest go back to
// the replayer. It returns how many were marked done.
func (r *replayer) finish(es []*intakeEntry, ps []*pending) int {
	var done, open = es[:0:0], es[:0:0]
	dropped := 0
	for i, p := range ps {
		switch {
		case p.st.isDone() && p.st.err == nil:
			done = append(done, es[i])
		case p.st.isDone() && isClientError(p.st.err):
			r.log.Error("parked transaction refused; dropping it", "txid", p.id, "err", p.st.err)
			done = append(done, es[i])
			dropped++
		default:
			open = append(open, es[i])
		}
	}
	r.intake.finish(done...)
	r.intake.releaseQuiet(open...)
	r.counted(len(done)-dropped, dropped, len(open))
	return len(done)
}

// counted adds one batch's results to txlog_replayed_total.
func (r *replayer) counted(resolved, dropped, retry int) {
	r.met.replayed[replayResolved].Add(float64(resolved))
	r.met.replayed[replayDropped].Add(float64(dropped))
	r.met.replayed[replayRetry].Add(float64(retry))
}

// handOff proposes one batch of unresolved transactions through the leader at
// base. It reports whether it resolved any.
func (r *replayer) handOff(base string) bool {
	es := r.intake.take(replayBatch)
	if len(es) == 0 {
		return false // all busy in requests still under way: they come back parked or resolved
	}
	ps := make([]*pending, len(es))
	for i, e := range es {
		ps[i] = sentTx(e.id, e.payload)
	}
	ctx, cancel := context.WithTimeout(r.life, replayTimeout)
	r.props.proposeRemote(ctx, base, ps, wire.SubmitOptions{HandOff: true})
	cancel()
	done := r.finish(es, ps)
	if done > 0 {
		r.log.Info("unresolved transactions handed off", "count", done, "open", len(es)-done)
	}
	return done > 0
}

// drainLoop runs on every node with Redis; while the node leads, it moves the
// parked entries from Redis into Raft and acknowledges each in Redis only after
// its commit. Entries a leader claimed and did not acknowledge before dying are
// claimed again after parking.Config.ClaimIdle.
func (r *replayer) drainLoop() {
	every(r.life, drainInterval, nil, func() bool { return r.raft.IsLeader() && r.drainOnce() })
}

// drainOnce proposes one batch of Redis entries; it reports whether the batch was
// full and fully committed, so that the caller goes on at once.
func (r *replayer) drainOnce() bool {
	ctx, cancel := context.WithTimeout(r.life, replayTimeout)
	defer cancel()
	entries, err := r.park.Claim(ctx, drainBatch)
	if err != nil || len(entries) == 0 {
		return false
	}
	var ps []*pending
	var ids []string // stream IDs, aligned with ps
	var junk []string
	for _, e := range entries {
		id, err := store.CheckTx(e.Payload)
		if err != nil || uint64(id) != e.TxID {
			r.log.Error("parked entry is not a transaction; dropping it", "stream_id", e.StreamID, "err", err)
			junk = append(junk, e.StreamID)
			continue
		}
		ps = append(ps, sentTx(id, e.Payload))
		ids = append(ids, e.StreamID)
	}
	r.props.proposeLocal(ctx, ps)
	acks := junk
	dropped := len(junk)
	for i, p := range ps {
		if p.st.isDone() && (p.st.err == nil || isClientError(p.st.err)) {
			acks = append(acks, ids[i])
			if p.st.err != nil {
				dropped++
			}
		}
	}
	r.counted(len(acks)-dropped, dropped, len(entries)-len(acks))
	if len(acks) > 0 {
		if err := r.park.Ack(ctx, acks...); err != nil {
			r.log.Warn("ack parked entries", "err", err) // they come back after ClaimIdle: harmless
		}
		r.log.Debug("parked entries drained", "count", len(acks)-len(junk))
	}
	return len(entries) == drainBatch && len(acks) == len(entries)
}
