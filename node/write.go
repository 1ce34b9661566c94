package node

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/store"
)

// writer is the write path: it takes a client's transactions (SubmitBatch),
// gives each its txid, adds it to the intake and its WAL, proposes it
// through the proposer, and answers it as its state (state.go) ends: with
// its outcome, 202 pending once parked, or an error.
type writer struct {
	met           *nodeMetrics
	maxUnresolved int    // Config.MaxUnresolved
	intakeWAL     string // Config.IntakeWAL
	mem           *membership
	db            *store.DB
	intake        *intake
	park          parker // nil without Redis
	props         *proposer
	acks          *ackAll
	log           *slog.Logger
	wg            *sync.WaitGroup // the node's: Close waits for what a request leaves running
}

// submit is SubmitBatch. Each transaction gets its txid here, on the
// receiving node, and goes into the intake WAL. Then, by acknowledgement level:
//
//   - quorum (default), all: it is proposed through the leader while the WAL append
//     runs beside it (the Raft commit is the durability point, so the WAL fsync is
//     not on this path's latency). If no leader commits it within the timeout, the
//     node waits for the WAL append, parks it in Redis and answers 202 pending.
//   - accepted: the node waits for the WAL fsync (and parks it in Redis when
//     configured), answers 202, and the replayer commits it in the background.
func (w *writer) submit(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	rd := newReqDeadline(ctx, opts.Timeout)
	defer rd.stop()
	if err := w.mem.writeErr(); err != nil {
		return nil, err // removed, a node number clash, or none yet (number.go)
	}
	if opts.Ack == "" {
		opts.Ack = wire.AckQuorum
	}
	if w.intake.size()+len(txs) > w.maxUnresolved {
		return nil, wire.ErrOverloaded
	}
	results := make([]wire.TxResult, len(txs))
	ps := make([]*pending, 0, len(txs))
	slot := make([]int, 0, len(txs))
	var known []*pending // resubmissions answered from the store or the intake
	var knownSlot []int
	for i, req := range txs {
		id := w.mem.ids.Next()
		tx, err := toStoreTx(id, req)
		if err != nil {
			return nil, err
		}
		p := &pending{kind: store.KindTx, payload: store.EncodeTx(tx), id: id, key: req.IdempotencyKey}
		if req.IdempotencyKey != "" && w.recorded(p, req.IdempotencyKey) {
			// Fast path: a resubmission this node already knows about.
			known = append(known, p)
			knownSlot = append(knownSlot, i)
			continue
		}
		ps = append(ps, p)
		slot = append(slot, i)
	}
	defer func() {
		for j, p := range known {
			r := p.st.res
			if p.st.err != nil {
				r.Error = wire.NewErrorBody(p.st.err)
			}
			results[knownSlot[j]] = r
		}
	}()
	// A key unresolved here answers as its entry does: the transactions are
	// not added again.
	es, held := w.intake.add(ps)
	var heldPs []*pending
	var heldEs []*intakeEntry
	for j := range held {
		if held[j] != nil {
			heldPs, heldEs = append(heldPs, ps[j]), append(heldEs, held[j])
			known, knownSlot = append(known, ps[j]), append(knownSlot, slot[j])
		}
	}
	if len(heldPs) > 0 {
		ps, slot, es = keep(ps, held), keep(slot, held), keep(es, held)
	}
	if len(ps) == 0 {
		if len(heldPs) > 0 {
			w.resubmitted(rd.ctx(), heldPs, heldEs)
		}
		if opts.Ack == wire.AckAll {
			w.acks.await(rd.ctx(), known)
		}
		return results, nil
	}
	var walf *walFuture
	switch {
	case opts.Ack == wire.AckAccepted:
		walf = w.intake.appendAsync(es, false)
	case w.intakeWAL == IntakeParallel:
		// The Raft commit is this answer's durability point: the record need not
		// be fsynced unless the transaction ends up parked.
		walf = w.intake.appendAsync(es, true)
	case w.intakeWAL == IntakeSync:
		walf = w.intake.appendAsync(es, false)
		select {
		case <-walf.done:
		case <-rd.ctx().Done():
		}
	}
	if opts.Ack != wire.AckAccepted {
		pctx, cancel := rd.proposal()
		w.props.proposeReissuing(pctx, ps, es, opts, w.mem, w.intake, w.met, w.log)
		cancel()
	}
	w.parkOrSettle(rd, ps, es, walf)
	if len(heldPs) > 0 {
		w.resubmitted(rd.ctx(), heldPs, heldEs)
	}
	if opts.Ack == wire.AckAll {
		w.acks.await(rd.ctx(), append(slices.Clip(ps), known...))
	}
	for j, p := range ps {
		r := p.st.res
		if p.st.err != nil {
			r.Error = wire.NewErrorBody(p.st.err)
		}
		results[slot[j]] = r
	}
	return results, nil
}

// maxReissues bounds how many fresh txids one transaction gets in one
// proposal (proposeReissuing): a squatter that took the next txids of this
// node, one millisecond after another, delays a write by as many proposals;
// past the bound it answers 409 txid_conflict.
const maxReissues = 8

// proposeReissuing proposes ps (es aligned with it), this node's own
// transactions (a request's, or the replayer's), and proposes again under a
// fresh txid each one refused because its txid is recorded for another
// transaction (reissue), up to maxReissues times.
func (pr *proposer) proposeReissuing(ctx context.Context, ps []*pending, es []*intakeEntry, opts wire.SubmitOptions, mem *membership, in *intake, met *nodeMetrics, log *slog.Logger) {
	pr.propose(ctx, ps, opts)
	for range maxReissues {
		ps, es = reissue(mem, in, met, log, ps, es)
		if len(ps) == 0 || ctx.Err() != nil {
			return
		}
		pr.propose(ctx, ps, opts)
	}
}

// reissue gives a fresh txid to each transaction of ps (es aligned with it)
// that was refused because its txid is recorded for another transaction
// (wire.ErrTxIDConflict), and returns them, open, for one more proposal, with
// their entries. ps are this node's (a request's, or the replayer's), and so
// are their txids: another process proposed one first (a squatter) or the
// node issued one twice. The transaction was not carried out, and under a
// txid of its own it is a new one, with the same idempotency key (nothing was
// recorded under the key). A transaction refused maxReissues times answers
// 409 txid_conflict.
//
// The intake entry takes the new txid and payload; a WAL record already
// written keeps the old ones. So a transaction parked after its retry, and
// replayed from the WAL after a restart, meets the conflict again and is
// reissued once more by the replayer: if the retry did commit before the
// restart, and the transaction has no idempotency key, it commits twice.
func reissue(mem *membership, in *intake, met *nodeMetrics, log *slog.Logger, ps []*pending, es []*intakeEntry) ([]*pending, []*intakeEntry) {
	var again []*pending
	var againEs []*intakeEntry
	if mem.writeErr() != nil {
		return nil, nil // no txids to issue (number.go): refused as it is
	}
	for i, p := range ps {
		if !p.st.isDone() || !errors.Is(p.st.err, wire.ErrTxIDConflict) {
			continue
		}
		old, id := p.id, mem.reissueID()
		p.id, p.payload = id, store.WithTxID(p.payload, id)
		p.st.reissue()
		in.reissue(es[i], id, p.payload)
		met.txidReissued.Inc()
		log.Warn("txid taken by another transaction; proposing under a fresh one", "txid", old, "new_txid", id)
		again = append(again, p)
		againEs = append(againEs, es[i])
	}
	return again, againEs
}

// keep returns the elements of xs whose held is nil.
func keep[T any](xs []T, held []*intakeEntry) []T {
	out := xs[:0:0]
	for i, x := range xs {
		if held[i] == nil {
			out = append(out, x)
		}
	}
	return out
}

// recorded resolves p, a transaction submitted with idempotency key, if the
// store has a transaction under the key: with its outcome, as a duplicate, if
// it is the same transaction (store.SameTx), else with a *wire.KeyReusedError
// naming it. It reports whether it resolved p; a store that cannot answer
// leaves p to the proposal, which the store's Apply decides the same way.
func (w *writer) recorded(p *pending, key string) bool {
	o, err := w.db.Reads().TxByIdempotencyKeyFor(key, p.payload)
	if e, ok := errors.AsType[*store.KeyReusedError](err); ok {
		p.resolve(wire.TxResult{}, &wire.KeyReusedError{Key: key, TxID: e.TxID})
		return true
	}
	if err != nil {
		return false
	}
	p.resolve(result(o, true), nil)
	return true
}

// resubmitted answers ps, transactions whose idempotency key the unresolved
// entries es[i] hold, as those entries are answered, and adds nothing: another
// transaction under the key is refused (*wire.KeyReusedError naming the
// entry); the same one waits until the entry is resolved or parked, then
// answers as the entry's request did (an outcome as a duplicate, or its
// refusal), or 202 pending with the entry's txid and where it is held. An
// entry neither resolved nor parked by ctx's end, or forgotten without an
// answer (its request failed), answers unknown with the entry's txid: the
// client looks it up, or submits again.
func (w *writer) resubmitted(ctx context.Context, ps []*pending, es []*intakeEntry) {
	for i, p := range ps {
		e := es[i]
		id, payload := w.intake.ident(e)
		if !store.SameTx(payload, p.payload) {
			p.resolve(wire.TxResult{}, &wire.KeyReusedError{Key: e.key, TxID: id})
			continue
		}
		select {
		case <-w.intake.settledChan(e):
		case <-ctx.Done():
		}
		res, err, answered, heldBy, open := w.intake.state(e)
		if answered {
			if err == nil {
				res.Duplicate = true
			}
			p.resolve(res, err)
			continue
		}
		id, payload = w.intake.ident(e) // reissued meanwhile, maybe
		if !open {
			if o, err := w.db.Reads().TxFor(id, payload); err == nil {
				p.resolve(result(o, true), nil)
				continue
			}
		}
		if heldBy != nil {
			p.resolve(wire.TxResult{TxID: id, Status: wire.StatusPending, Durability: wire.AckAccepted, Duplicate: true, HeldBy: heldBy}, nil)
			continue
		}
		p.resolve(wire.TxResult{TxID: id, Status: wire.StatusUnknown}, wire.ErrUnknownOutcome)
	}
}

// parkOrSettle finishes the intake side of a request. Resolved transactions are
// forgotten once their WAL append is through (in the background, off the answer's
// path). Open ones are parked: they answer 202 pending once the WAL has them, and
// the replayer owns them from then on. If the WAL append failed, an open one is
// settled the old way: looked up, else 503.
//
// rd is the request's deadline: its context is made only for what is open.
func (w *writer) parkOrSettle(rd *reqDeadline, ps []*pending, es []*intakeEntry, walf *walFuture) {
	var open []int
	for i, p := range ps {
		if p.st.parkable() {
			open = append(open, i)
			continue
		}
		w.intake.resolved(es[i], p.st.res, p.st.err)
	}
	if walf == nil {
		// --intake-wal=off: only what has to be parked goes into the WAL.
		var openPs []*pending
		var openEs, doneEs []*intakeEntry
		for i, e := range es {
			if slices.Contains(open, i) {
				openPs, openEs = append(openPs, ps[i]), append(openEs, e)
			} else {
				doneEs = append(doneEs, e)
			}
		}
		w.intake.finish(doneEs...)
		if len(openEs) == 0 {
			return
		}
		ps, es, open = openPs, openEs, nil
		for i := range ps {
			open = append(open, i)
		}
		walf = w.intake.appendAsync(es, false)
	}
	if len(open) == 0 {
		// Resolved: forgotten now, as a lookup expects; their records are
		// marked done once written (on the WAL's writer, for a lazy append).
		w.intake.drop(es...)
		walf.whenDone(func() { w.intake.finish(es...) })
		return
	}
	ctx := rd.ctx()
	walOK := w.intake.durable(walf)
	var parked []*intakeEntry
	var heldBy [][]string
	var settled []*pending
	for i, p := range ps {
		if !slices.Contains(open, i) {
			continue
		}
		if !walOK {
			// A failed append may or may not be on disk (docs/wal.md: an fsync
			// that failed after the write), and a restart would replay what is:
			// never answer that it was not carried out.
			p.st.reopen()
			settled = append(settled, p)
			continue
		}
		held := []string{wire.HeldByWAL}
		if w.park != nil {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), parkTimeout)
			if err := w.park.Park(pctx, uint64(p.id), p.payload); err != nil {
				w.log.Warn("park in redis failed; the wal has it", "txid", p.id, "err", err)
			} else {
				held = append(held, wire.HeldByRedis)
				w.met.parkedRedis.Inc()
			}
			cancel()
		}
		p.st.park(p.id, held)
		w.met.parkedWAL.Inc()
		parked = append(parked, es[i])
		heldBy = append(heldBy, held)
	}
	w.intake.parked(parked, heldBy)
	if !walOK {
		w.log.Warn("intake wal append failed", "err", walf.err)
		w.props.settle(ctx, settled)
	}
	w.wg.Go(func() {
		<-walf.done
		var done, failed []*intakeEntry
		for i, e := range es {
			switch {
			case slices.Contains(open, i) && walf.err == nil:
			case walf.err != nil:
				failed = append(failed, e)
			default:
				done = append(done, e)
			}
		}
		w.intake.finish(done...)
		w.intake.drop(failed...)
		w.intake.release(parked...)
	})
}

// parkTimeout bounds parking one transaction in Redis; the breaker keeps a down
// Redis from costing even that.
const parkTimeout = 250 * time.Millisecond

// isClientError reports whether err is about the transaction itself (a 4xx),
// so retrying it can never succeed.
func isClientError(err error) bool {
	var ae *wire.Error
	return errors.As(err, &ae) || errors.Is(err, wire.ErrIdempotencyKeyReused) || errors.Is(err, wire.ErrTxIDConflict)
}
