package node

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
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
	// id and payload change only by reissue, under mu, by the entry's
	// owner (busy): others read them through ident.
	id      txid.ID
	key     string // idempotency key; may be empty
	payload []byte // EncodeTx bytes: the same in the WAL, in Redis and in Raft, but after a reissue
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

// ident returns e's txid and payload, which its owner may change (reissue)
// while another request reads them (writer.resubmitted).
func (in *intake) ident(e *intakeEntry) (txid.ID, []byte) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return e.id, e.payload
}

// reissue gives e, an entry a request or the replayer is proposing, a new
// txid and payload (node's reissue). Its WAL record, if written, keeps the
// old ones.
func (in *intake) reissue(e *intakeEntry, id txid.ID, payload []byte) {
	in.mu.Lock()
	if in.entries[e.id] == e {
		delete(in.entries, e.id)
		in.entries[id] = e
	}
	e.id, e.payload = id, payload
	in.mu.Unlock()
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
func (in *intake) appendAsync(es []*intakeEntry, lazy bool) *walFuture {
	f := &walFuture{done: make(chan struct{}), lazy: lazy}
	payloads := make([][]byte, len(es))
	for i, e := range es {
		payloads[i] = e.payload
	}
	if lazy {
		// The payloads are EncodeTx bytes that nothing modifies.
		err := in.wal.AppendBatchLazyFunc(payloads, func(seqs []uint64, err error) {
			if err == nil {
				in.appended(es, seqs)
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
		seqs, err := in.wal.AppendBatch(ctx, payloads)
		if err == nil {
			in.appended(es, seqs)
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
func (in *intake) durable(f *walFuture) bool {
	if !f.lazy {
		<-f.done
		return f.err == nil
	}
	// The record is queued or written: Sync writes it now if it is not, and
	// fsyncs it.
	sctx, cancel := context.WithTimeout(context.Background(), walAppendTimeout)
	serr := in.wal.Sync(sctx)
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
