package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/node/parking"
	"github.com/txlog/txlog/store"
	"github.com/txlog/txlog/txid"
	"github.com/txlog/txlog/wal"
)

// parker is what the intake and the leader's drain need from Redis. parking.Redis
// implements it; it is nil when no Redis is configured.
type parker interface {
	Park(ctx context.Context, id uint64, payload []byte) error
	Claim(ctx context.Context, max int) ([]parking.Entry, error)
	Ack(ctx context.Context, streamIDs ...string) error
	State() parking.BreakerState
}

var _ parker = (*parking.Redis)(nil)

// intake tracks the transactions this node accepted and has not seen resolved:
// in flight in a request, or parked (answered 202) and waiting for the replayer.
// It owns the intake WAL's done-marks.
type intake struct {
	wal  *wal.Log
	kick chan struct{} // capacity 1: wakes the replayer

	mu      sync.Mutex // guards entries, byKey and the fields of every entry in them
	entries map[txid.ID]*intakeEntry
	// byKey holds the entries with an idempotency key, one per key, each in
	// entries too (an intake WAL written before keys were held here may
	// hold two records of a key: the older is in entries only).
	byKey map[string]*intakeEntry
}

// intakeEntry is one accepted, unresolved transaction.
type intakeEntry struct {
	id      txid.ID
	key     string // idempotency key; may be empty
	payload []byte // EncodeTx bytes: the same in the WAL, in Redis and in Raft
	seq     uint64 // WAL sequence; 0 until the append returns
	// busy is true while a request or the replayer proposes the entry.
	// Invariant: an entry that is not busy has seq != 0 and belongs to the replayer.
	busy bool
	// heldBy is set once the entry is parked (answered 202 pending): where
	// it is held, as TxResult.HeldBy says.
	heldBy []string
	// settled is true once the entry is parked or forgotten, whichever comes
	// first; a resubmission of its key waits for that on wake (resubmitted),
	// made only then, and closed once settled is true.
	settled bool
	wake    chan struct{}
	// res and err are its request's answer, once it has a final one: a
	// resubmission answers the same, even on a node whose store has not
	// applied the outcome yet.
	res      wire.TxResult
	err      error
	answered bool
}

func newIntake(w *wal.Log) *intake {
	return &intake{wal: w, kick: make(chan struct{}, 1), entries: map[txid.ID]*intakeEntry{}, byKey: map[string]*intakeEntry{}}
}

func newEntry(id txid.ID, key string, payload []byte) *intakeEntry {
	return &intakeEntry{id: id, key: key, payload: payload}
}

// settleLocked marks e settled and wakes whoever waits. The caller holds in.mu.
func (e *intakeEntry) settleLocked() {
	if e.settled {
		return
	}
	e.settled = true
	if e.wake != nil {
		close(e.wake)
	}
}

// closedChan is a closed channel: what settledChan returns for a settled entry.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// settledChan returns a channel closed once e is settled (see intakeEntry).
func (in *intake) settledChan(e *intakeEntry) <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	if e.settled {
		return closedChan
	}
	if e.wake == nil {
		e.wake = make(chan struct{})
	}
	return e.wake
}

// forgetLocked removes e from entries and byKey. The caller holds in.mu.
func (in *intake) forgetLocked(e *intakeEntry) {
	delete(in.entries, e.id)
	if e.key != "" && in.byKey[e.key] == e {
		delete(in.byKey, e.key)
	}
	e.settleLocked()
}

// recover loads the WAL's records that are not done, for the replayer.
func (in *intake) recover() (int, error) {
	recs := in.wal.Pending()
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range recs {
		tx, err := store.DecodeTx(r.Payload)
		if err != nil {
			return 0, fmt.Errorf("intake wal record %d: %w", r.Seq, err)
		}
		e := newEntry(tx.ID, tx.IdempotencyKey, r.Payload)
		e.seq = r.Seq
		// A record not done was answered 202, or its request found no
		// outcome: held by the WAL, wherever else it may be.
		e.heldBy = []string{wire.HeldByWAL}
		e.settleLocked()
		in.entries[tx.ID] = e
		if e.key != "" {
			in.byKey[e.key] = e
		}
	}
	return len(recs), nil
}

// add registers transactions a request is about to propose, in order, except
// one whose idempotency key another unresolved entry holds (one of an earlier
// request, or of an earlier transaction of ps): es[i] is then nil and held[i]
// that entry, which the request answers for it (see resubmitted). held is nil
// when no key was held.
func (in *intake) add(ps []*pending) (es, held []*intakeEntry) {
	es = make([]*intakeEntry, len(ps))
	in.mu.Lock()
	for i, p := range ps {
		if p.key != "" {
			if e, ok := in.byKey[p.key]; ok {
				if held == nil {
					held = make([]*intakeEntry, len(ps))
				}
				held[i] = e
				continue
			}
		}
		es[i] = newEntry(p.id, p.key, p.payload)
		es[i].busy = true
		in.entries[p.id] = es[i]
		if p.key != "" {
			in.byKey[p.key] = es[i]
		}
	}
	in.mu.Unlock()
	return es, held
}

// parked records that es were answered 202 pending, held by heldBy[i].
func (in *intake) parked(es []*intakeEntry, heldBy [][]string) {
	in.mu.Lock()
	for i, e := range es {
		e.heldBy = heldBy[i]
		e.settleLocked()
	}
	in.mu.Unlock()
}

// resolved records the final answer of e's request, before e is forgotten.
func (in *intake) resolved(e *intakeEntry, res wire.TxResult, err error) {
	in.mu.Lock()
	e.res, e.err, e.answered = res, err, true
	in.mu.Unlock()
}

// pendingKey returns the unresolved entry's txid under idempotency key, and
// where it is held if it is parked.
func (in *intake) pendingKey(key string) (txid.ID, []string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	e, ok := in.byKey[key]
	if !ok {
		return 0, nil, false
	}
	return e.id, e.heldBy, true
}

// state returns e's request's final answer if it has one (answered), else
// where e is held if it is parked (nil if not yet or never), and whether e is
// still unresolved.
func (in *intake) state(e *intakeEntry) (res wire.TxResult, err error, answered bool, heldBy []string, open bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return e.res, e.err, e.answered, e.heldBy, in.entries[e.id] == e
}

// appended records the WAL sequences of entries.
func (in *intake) appended(es []*intakeEntry, seqs []uint64) {
	in.mu.Lock()
	for i, e := range es {
		e.seq = seqs[i]
	}
	in.mu.Unlock()
}

// finish forgets resolved entries and marks their WAL records done. An entry
// whose append failed has no record to mark.
func (in *intake) finish(es ...*intakeEntry) {
	seqs := make([]uint64, 0, len(es))
	in.mu.Lock()
	for _, e := range es {
		in.forgetLocked(e)
		if e.seq != 0 {
			seqs = append(seqs, e.seq)
		}
	}
	in.mu.Unlock()
	if len(seqs) > 0 {
		_ = in.wal.MarkDone(seqs...) // only fails when closed: the record is then replayed, harmlessly
	}
}

// release hands entries to the replayer.
func (in *intake) release(es ...*intakeEntry) {
	in.mu.Lock()
	for _, e := range es {
		e.busy = false
	}
	in.mu.Unlock()
	select {
	case in.kick <- struct{}{}:
	default:
	}
}

// releaseQuiet hands entries back to the replayer without waking it: they wait
// for its next tick.
func (in *intake) releaseQuiet(es ...*intakeEntry) {
	in.mu.Lock()
	for _, e := range es {
		e.busy = false
	}
	in.mu.Unlock()
}

// drop forgets entries without marking their WAL records done: entries whose
// append failed (their requests report an error), and resolved entries whose
// append is still on its way (finish marks them once it is through).
func (in *intake) drop(es ...*intakeEntry) {
	in.mu.Lock()
	for _, e := range es {
		in.forgetLocked(e)
	}
	in.mu.Unlock()
}

// take marks up to max idle entries busy and returns them, oldest txid first.
func (in *intake) take(max int) []*intakeEntry {
	in.mu.Lock()
	defer in.mu.Unlock()
	var es []*intakeEntry
	for _, e := range in.entries {
		if !e.busy && e.seq != 0 {
			es = append(es, e)
		}
	}
	sortByID(es)
	if len(es) > max {
		es = es[:max]
	}
	for _, e := range es {
		e.busy = true
	}
	return es
}

// pendingTx reports whether a transaction is accepted here and unresolved,
// and where it is held if it is parked.
func (in *intake) pendingTx(id txid.ID) ([]string, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	e, ok := in.entries[id]
	if !ok {
		return nil, false
	}
	return e.heldBy, true
}

// size returns how many transactions are unresolved here.
func (in *intake) size() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return len(in.entries)
}

// walFuture is the result of an intake WAL append running beside a proposal.
type walFuture struct {
	done chan struct{} // closed once seqs and err are set
	lazy bool          // written without an fsync: sync before parking
	seqs []uint64
	err  error

	mu       sync.Mutex
	finished bool   // done is closed or about to be
	then     func() // run once, when the append is through (see whenDone)
}

// complete records the append's outcome, closes done and runs what whenDone
// registered.
func (f *walFuture) complete(seqs []uint64, err error) {
	f.seqs, f.err = seqs, err
	f.mu.Lock()
	f.finished = true
	then := f.then
	f.mu.Unlock()
	close(f.done)
	if then != nil {
		then()
	}
}

// whenDone runs fn once the append is through: now, if it is, or else on the
// goroutine that completes it (for a lazy append, the WAL's writer; fn must
// not block).
func (f *walFuture) whenDone(fn func()) {
	f.mu.Lock()
	if !f.finished {
		f.then = fn
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	<-f.done
	fn()
}

// appendAsync appends entries to the intake WAL in the background. The append
// does not depend on the request's ctx: once started it completes, so that a
// transaction parked later is on disk. A lazy append is queued for the WAL's
// writer, which writes it without an fsync within the WAL's LazyDelay, with the
// others queued meanwhile (see durable); the others run in a goroutine of their
// own and wait for their fsync.
func (n *Node) appendAsync(es []*intakeEntry, lazy bool) *walFuture {
	f := &walFuture{done: make(chan struct{}), lazy: lazy}
	payloads := make([][]byte, len(es))
	for i, e := range es {
		payloads[i] = e.payload
	}
	if lazy {
		// The payloads are EncodeTx bytes that nothing modifies.
		err := n.intake.wal.AppendBatchLazyFunc(payloads, func(seqs []uint64, err error) {
			if err == nil {
				n.intake.appended(es, seqs)
			}
			f.complete(seqs, err)
		})
		if err != nil {
			f.complete(nil, err)
		}
		return f
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), walAppendTimeout)
		defer cancel()
		seqs, err := n.intake.wal.AppendBatch(ctx, payloads)
		if err == nil {
			n.intake.appended(es, seqs)
		}
		f.complete(seqs, err)
	}()
	return f
}

// durable waits for the append and, if it was lazy, for an fsync that covers
// it: what parking needs before it answers 202. It waits past the request's
// deadline (walAppendTimeout bounds the append): an append that lands after the
// request gave up puts the transaction in the WAL all the same, and a restart
// would replay it, so the only true answer then is 202 pending, not "unknown"
// or "no leader" (which says it was not carried out).
func (n *Node) durable(f *walFuture) bool {
	if !f.lazy {
		<-f.done
		return f.err == nil
	}
	// The record is queued or written: Sync writes it now if it is not, and
	// fsyncs it.
	sctx, cancel := context.WithTimeout(context.Background(), walAppendTimeout)
	serr := n.intake.wal.Sync(sctx)
	cancel()
	<-f.done
	if f.err != nil {
		return false
	}
	if serr != nil {
		f.err = serr
		return false
	}
	return true
}

// walAppendTimeout bounds one intake WAL append (a group commit: one fsync).
const walAppendTimeout = 30 * time.Second

// Submit implements api.Backend.
func (n *Node) Submit(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
	results, err := n.SubmitBatch(ctx, []wire.TxRequest{tx}, opts)
	if err != nil {
		return wire.TxResult{}, err
	}
	r := results[0]
	if r.Error != nil {
		err := r.Error.Err()
		r.Error = nil
		return r, err
	}
	return r, nil
}

// SubmitBatch implements api.Backend. Each transaction gets its txid here, on the
// receiving node, and goes into the intake WAL. Then, by acknowledgement level:
//
//   - quorum (default), all: it is proposed through the leader while the WAL append
//     runs beside it (the Raft commit is the durability point, so the WAL fsync is
//     not on this path's latency). If no leader commits it within the timeout, the
//     node waits for the WAL append, parks it in Redis and answers 202 pending.
//   - accepted: the node waits for the WAL fsync (and parks it in Redis when
//     configured), answers 202, and the replayer commits it in the background.
func (n *Node) SubmitBatch(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	if err := n.mem.writeErr(); err != nil {
		return nil, err // removed, a node number clash, or none yet (number.go)
	}
	if opts.Ack == "" {
		opts.Ack = wire.AckQuorum
	}
	if n.intake.size()+len(txs) > n.cfg.MaxUnresolved {
		return nil, wire.ErrOverloaded
	}
	results := make([]wire.TxResult, len(txs))
	ps := make([]*pending, 0, len(txs))
	slot := make([]int, 0, len(txs))
	var known []*pending // resubmissions answered from the store or the intake
	var knownSlot []int
	for i, req := range txs {
		id := n.ids.Next()
		tx, err := toStoreTx(id, req)
		if err != nil {
			return nil, err
		}
		p := &pending{kind: store.KindTx, payload: store.EncodeTx(tx), id: id, key: req.IdempotencyKey}
		if req.IdempotencyKey != "" && n.recorded(p, req.IdempotencyKey) {
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
			r := p.res
			if p.err != nil {
				r.Error = wire.NewErrorBody(p.err)
			}
			results[knownSlot[j]] = r
		}
	}()
	// A key unresolved here answers as its entry does: the transactions are
	// not added again.
	es, held := n.intake.add(ps)
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
		n.resubmitted(ctx, heldPs, heldEs)
		if opts.Ack == wire.AckAll {
			n.awaitAll(ctx, known)
		}
		return results, nil
	}
	var walf *walFuture
	switch {
	case opts.Ack == wire.AckAccepted:
		walf = n.appendAsync(es, false)
	case n.cfg.IntakeWAL == IntakeParallel:
		// The Raft commit is this answer's durability point: the record need not
		// be fsynced unless the transaction ends up parked.
		walf = n.appendAsync(es, true)
	case n.cfg.IntakeWAL == IntakeSync:
		walf = n.appendAsync(es, false)
		select {
		case <-walf.done:
		case <-ctx.Done():
		}
	}
	if opts.Ack != wire.AckAccepted {
		pctx, cancel := withReserve(ctx)
		n.propose(pctx, ps, opts)
		cancel()
	}
	n.parkOrSettle(ctx, ps, es, walf)
	n.resubmitted(ctx, heldPs, heldEs)
	if opts.Ack == wire.AckAll {
		n.awaitAll(ctx, append(slices.Clip(ps), known...))
	}
	for j, p := range ps {
		r := p.res
		if p.err != nil {
			r.Error = wire.NewErrorBody(p.err)
		}
		results[slot[j]] = r
	}
	return results, nil
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
func (n *Node) recorded(p *pending, key string) bool {
	o, err := n.db.TxByIdempotencyKeyFor(key, p.payload)
	if e, ok := errors.AsType[*store.KeyReusedError](err); ok {
		p.resolve(wire.TxResult{}, &wire.KeyReusedError{Key: key, TxID: e.TxID})
		return true
	}
	if err != nil {
		return false
	}
	p.resolve(n.result(o, true), nil)
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
func (n *Node) resubmitted(ctx context.Context, ps []*pending, es []*intakeEntry) {
	for i, p := range ps {
		e := es[i]
		if !store.SameTx(e.payload, p.payload) {
			p.resolve(wire.TxResult{}, &wire.KeyReusedError{Key: e.key, TxID: e.id})
			continue
		}
		select {
		case <-n.intake.settledChan(e):
		case <-ctx.Done():
		}
		res, err, answered, heldBy, open := n.intake.state(e)
		if answered {
			if err == nil {
				res.Duplicate = true
			}
			p.resolve(res, err)
			continue
		}
		if !open {
			if o, err := n.db.Tx(e.id); err == nil {
				p.resolve(n.result(o, true), nil)
				continue
			}
		}
		if heldBy != nil {
			p.resolve(wire.TxResult{TxID: e.id, Status: wire.StatusPending, Durability: wire.AckAccepted, Duplicate: true, HeldBy: heldBy}, nil)
			continue
		}
		p.resolve(wire.TxResult{TxID: e.id, Status: wire.StatusUnknown}, wire.ErrUnknownOutcome)
	}
}

// parkOrSettle finishes the intake side of a request. Resolved transactions are
// forgotten once their WAL append is through (in the background, off the answer's
// path). Open ones are parked: they answer 202 pending once the WAL has them, and
// the replayer owns them from then on. If the WAL append failed, an open one is
// settled the old way: looked up, else 503.
func (n *Node) parkOrSettle(ctx context.Context, ps []*pending, es []*intakeEntry, walf *walFuture) {
	var open []int
	for i, p := range ps {
		if !p.done || (p.err != nil && !isClientError(p.err)) {
			open = append(open, i)
			continue
		}
		n.intake.resolved(es[i], p.res, p.err)
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
		n.intake.finish(doneEs...)
		if len(openEs) == 0 {
			return
		}
		ps, es, open = openPs, openEs, nil
		for i := range ps {
			open = append(open, i)
		}
		walf = n.appendAsync(es, false)
	}
	if len(open) == 0 {
		// Resolved: forgotten now, as a lookup expects; their records are
		// marked done once written (on the WAL's writer, for a lazy append).
		n.intake.drop(es...)
		walf.whenDone(func() { n.intake.finish(es...) })
		return
	}
	walOK := n.durable(walf)
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
			p.done, p.err, p.sent = false, nil, true
			settled = append(settled, p)
			continue
		}
		held := []string{wire.HeldByWAL}
		if n.park != nil {
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), parkTimeout)
			if err := n.park.Park(pctx, uint64(p.id), p.payload); err != nil {
				n.log.Warn("park in redis failed; the wal has it", "txid", p.id, "err", err)
			} else {
				held = append(held, wire.HeldByRedis)
			}
			cancel()
		}
		p.resolve(wire.TxResult{TxID: p.id, Status: wire.StatusPending, Durability: wire.AckAccepted, HeldBy: held}, nil)
		parked = append(parked, es[i])
		heldBy = append(heldBy, held)
	}
	n.intake.parked(parked, heldBy)
	if !walOK {
		n.log.Warn("intake wal append failed", "err", walf.err)
		n.settle(ctx, settled)
	}
	n.wg.Go(func() {
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
		n.intake.finish(done...)
		n.intake.drop(failed...)
		n.intake.release(parked...)
	})
}

// parkTimeout bounds parking one transaction in Redis; the breaker keeps a down
// Redis from costing even that.
const parkTimeout = 250 * time.Millisecond

// isClientError reports whether err is about the transaction itself (a 4xx),
// so retrying it can never succeed.
func isClientError(err error) bool {
	var ae *wire.Error
	return errors.As(err, &ae) || errors.Is(err, wire.ErrIdempotencyKeyReused)
}

// awaitAll upgrades committed results to durability "all" once every voter has
// applied them; if one has not by the timeout, the answer is 202 pending with
// durability "quorum" (the transaction is committed by the quorum regardless).
func (n *Node) awaitAll(ctx context.Context, ps []*pending) {
	// A voter applies entries in log order: once it has applied the batch's
	// highest index it has applied them all, so one wait per voter covers the
	// whole batch.
	var committed []*pending
	var top *pending
	for _, p := range ps {
		if !p.done || p.err != nil || p.res.Status == wire.StatusPending || p.res.Index == 0 {
			continue
		}
		committed = append(committed, p)
		if top == nil || p.res.Index > top.res.Index {
			top = p
		}
	}
	if len(committed) == 0 {
		return
	}
	// This node is a voter too: a follower has the outcome from the leader,
	// and may not have applied it yet itself.
	here := n.raft.WaitApplied(ctx, top.res.Index) == nil
	voters, err := n.otherVoters(ctx)
	everywhere := here && err == nil && n.appliedEverywhere(ctx, voters, top.res.Index, top.res.TxID)
	for _, p := range committed {
		if everywhere {
			p.res.Durability = wire.AckAll
			continue
		}
		p.res.Status = wire.StatusPending
		p.res.Durability = wire.AckQuorum
	}
}

// otherVoters returns the HTTP base URLs of the voters other than this node.
func (n *Node) otherVoters(ctx context.Context) ([]string, error) {
	members, err := n.raft.Members(ctx)
	if err != nil {
		return nil, err
	}
	var urls []string
	for _, m := range members {
		if m.ID == n.cfg.ID || m.Suffrage != "voter" {
			continue
		}
		info, ok := n.peers.lookup(m.ID)
		if !ok || info.HTTPAddr == "" {
			return nil, fmt.Errorf("voter %s: HTTP address unknown", m.ID)
		}
		urls = append(urls, "http://"+info.HTTPAddr)
	}
	return urls, nil
}

// peerClient returns a client bound to one node, cached.
func (n *Node) peerClient(base string) *client.Client {
	if c, ok := n.peerClients.Load(base); ok {
		return c.(*client.Client)
	}
	c, _ := n.peerClients.LoadOrStore(base, client.NewClient(client.ClientConfig{Endpoints: []string{base}, MaxBackoff: 50 * time.Millisecond}))
	return c.(*client.Client)
}
