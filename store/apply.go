package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/txlog/txlog/txid"
)

// maxPrunePerEntry bounds the dedup records one applied entry deletes, so that one
// entry never stalls the apply loop; the rest go with the next entries.
const maxPrunePerEntry = 1000

// Apply applies committed entries in order, all in one bbolt transaction, and
// returns one Result per entry. Entries at or below AppliedIndex are skipped. A
// non-nil error means the database could not be written: the caller must stop
// the node rather than diverge. Called from one goroutine at a time.
//
// The key states the entries write go to the kv overlay (overlay.go); once the
// overlay has reached a limit of Config, each Apply also writes a step of it
// into the kv bucket, in the same bbolt transaction. That changes how long the
// call takes, never its Results or what the reads return.
//
// Apply depends only on the state and the entries: it reads no clock, and no
// configuration changes its Results or what the reads return (the kv flush
// limits change only where key states are kept), so every replica that applies
// the same entries ends in the same state and returns the same Results. Entry
// indexes must increase within entries and across calls; gaps are fine. The
// applied index and term are written in the same bbolt transaction as the
// effects, and AppliedIndex reports the new index once Apply returns. That
// transaction commits before Apply returns, or, with Config.CommitInterval,
// with later Applies' (see commitLocked and viewApplied). Apply does not keep
// entries or their Data.
func (db *DB) Apply(entries []Entry) ([]Result, error) {
	results := make([]Result, len(entries))
	applied := db.applied.Load()
	if !slices.ContainsFunc(entries, func(e Entry) bool { return e.Index > applied }) {
		for i := range results {
			results[i].Skipped = true
		}
		return results, nil
	}

	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil {
		return nil, ErrClosed
	}
	db.wmu.Lock()
	defer db.wmu.Unlock()
	if db.failed != nil {
		return nil, db.failed
	}
	btx := db.wtx
	if btx == nil {
		var err error
		if btx, err = db.bolt.Begin(true); err != nil {
			return nil, err
		}
		db.wtxSince = time.Now()
	}
	db.wtx = nil // back once this Apply has succeeded and leaves it open
	idem, kv := db.idem.batch(), db.kv.batch()
	a, err := db.applyIn(btx, entries, results, idem, kv)
	if err != nil {
		btx.Rollback()
		if db.wtxEntries > 0 {
			// Earlier Applies whose Results are out went with the rollback.
			db.failed = fmt.Errorf("store: %d applied entries rolled back by a failed Apply: %w", db.wtxEntries, err)
			db.broken.Store(true)
			db.wtxEntries = 0
		}
		return nil, err // the batch's index and overlay changes go with the rolled back transaction
	}
	db.wtx, db.wtxIndex = btx, a.st.index
	db.wtxEntries += len(entries)
	// The last step of a flush drops the flushed keys from the overlay, which
	// readers may do only once the bucket they then read holds them; Nodes
	// reads committed state only.
	flushed := kv.stepped && len(kv.pending) == 0
	if db.cfg.CommitInterval <= 0 || flushed || a.nodesChanged ||
		db.wtxEntries >= maxOpenEntries || time.Since(db.wtxSince) >= db.cfg.CommitInterval {
		if err := db.commits.commitLocked(); err != nil {
			return nil, err
		}
	} else if !db.timerArmed {
		db.timerArmed = true
		time.AfterFunc(db.cfg.CommitInterval, db.commits.commitIdle)
	}
	db.idem.commit(idem)
	db.kv.commit(kv)
	if db.retain != nil {
		*db.retain = a.retained
	}
	db.appliedTerm.Store(a.st.term)
	db.applied.Store(a.st.index)
	if a.txidConflicts > 0 {
		db.txidConflicted(entries, results)
	}
	return results, nil
}

// txidConflicted counts and logs the entries Apply refused because their
// txid is recorded for another transaction (Result.TxIDConflict): a client
// that proposed a txid it did not get from a node, or a node that issued one
// twice.
func (db *DB) txidConflicted(entries []Entry, results []Result) {
	for i, r := range results {
		if r.TxIDConflict {
			db.txidConflicts.Inc()
			db.logger.Warn("txid recorded for another transaction; entry refused",
				"txid", r.Outcome.TxID, "index", entries[i].Index, "recorded_index", r.Outcome.Index)
		}
	}
}

// applyIn applies entries in btx and saves the applied state there.
func (db *DB) applyIn(btx *bolt.Tx, entries []Entry, results []Result, idem *idemBatch, kv *kvBatch) (*applier, error) {
	a, err := newApplier(btx, idem, kv)
	if err != nil {
		return nil, err
	}
	before := a.st.index
	for i, e := range entries {
		if e.Index <= a.st.index {
			results[i] = Result{Skipped: true}
			continue
		}
		if results[i], err = a.apply(e); err != nil {
			return nil, fmt.Errorf("apply entry %d: %w", e.Index, err)
		}
		a.st.index, a.st.term = e.Index, e.Term
	}
	to, done, err := kv.flushStep(a.kv, db.kvLimits, before)
	if err != nil {
		return nil, fmt.Errorf("flush kv overlay: %w", err)
	}
	if done {
		a.st.kvApplied = to
	}
	if db.retain != nil {
		if a.retained, err = (retainer{a}).step(*db.retain, a.window); err != nil {
			return nil, fmt.Errorf("retention: %w", err)
		}
	}
	return a, a.saveState()
}

// maxOpenEntries bounds the entries a bbolt transaction left open by Apply
// (Config.CommitInterval) collects before an Apply commits it.
const maxOpenEntries = 1 << 15

// committer commits the bbolt transaction Apply leaves open
// (Config.CommitInterval), whose state is DB's wtx fields, and makes commits
// durable (durable.go). Apply, Sync, Snapshot, Restore, Close, the idle timer
// and the reads that read the open transaction (DB.viewApplied) use it.
type committer struct{ db *DB }

// commitLocked commits the bbolt transaction Apply left open. The caller holds
// db.mu (read) and db.wmu, and db.wtx is not nil. A failed commit breaks the
// database: the Results of the entries in it are out.
func (c *committer) commitLocked() error {
	db := c.db
	btx, index, n := db.wtx, db.wtxIndex, db.wtxEntries
	db.wtx, db.wtxEntries = nil, 0
	if err := c.commitTx(db.bolt, db.dur, btx, index); err != nil {
		db.failed = fmt.Errorf("store: commit of %d applied entries up to index %d: %w", n, index, err)
		db.broken.Store(true)
		return db.failed
	}
	db.committed.Store(index)
	return nil
}

// commitPending commits what Apply left uncommitted, if anything: Sync,
// Snapshot and the idle timer call it before they rely on the file.
func (c *committer) commitPending() error {
	db := c.db
	return c.withWriter(func() error {
		if db.failed != nil {
			return db.failed
		}
		if db.wtx == nil {
			return nil
		}
		return c.commitLocked()
	})
}

// withWriter runs fn holding db.mu (read) and db.wmu, as Apply does, or
// returns ErrClosed.
func (c *committer) withWriter(fn func() error) error {
	db := c.db
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil {
		return ErrClosed
	}
	db.wmu.Lock()
	defer db.wmu.Unlock()
	return fn()
}

// commitIdle is the timer Apply arms when it leaves a transaction open: with
// no Apply to commit it, the transaction is committed after CommitInterval.
func (c *committer) commitIdle() {
	db := c.db
	db.wmu.Lock()
	db.timerArmed = false
	db.wmu.Unlock()
	if err := c.commitPending(); err != nil && !errors.Is(err, ErrClosed) {
		db.logger.Error("commit applied entries", "err", err)
	}
}

// stale reports whether Apply has applied entries that committed state (what
// the read methods see) does not hold yet.
func (db *DB) stale() bool { return db.committed.Load() < db.applied.Load() }

// appendFillPercent is the bbolt FillPercent of the buckets whose keys grow
// (almost) only at their end: log (index), txs (time-ordered txids) and
// dedup_time (time | txid). A page split there leaves the left page as full as
// this, where bbolt's default (0.5) would leave it half empty for good.
const appendFillPercent = 0.95

// applier applies entries inside one bbolt write transaction.
type applier struct {
	meta, log, txs, dedupTime, kv, nodes *bolt.Bucket
	btx                                  *bolt.Tx
	// leases is the leases bucket once a lease command or a fence looked it
	// up (leasesRead), nil if there is none: a plain write never does.
	leases     *bolt.Bucket
	leasesRead bool
	// consumers is the consumers bucket, the same way, once an OpCommitOffset
	// looked it up (consumers.go); offsets is evaluate's result for the
	// OpCommitOffset ops of a transaction.
	consumers     *bolt.Bucket
	consumersRead bool
	offsets       []offsetWrite

	idem    *idemBatch // the idempotency index with this batch's changes
	keyOf   keyOfFunc  // reads a record's idempotency key for idem
	overlay *kvBatch   // the kv overlay with this batch's changes
	writes  []pending  // evaluate's result, reused from entry to entry
	buf     txBuf      // the keys and values put in this bbolt transaction
	kvGet   getter     // reads kv
	txsGet  getter     // reads txs
	// floor is a time no dedup_time record is older than, so that prune
	// reads the bucket only when a record may be older than its cutoff:
	// math.MinInt64 until prune reads it, then the oldest record's time,
	// lowered by puts. Invariant: floor <= the time of every record.
	floor int64

	nodesChanged   bool          // a node was registered
	txidConflicts  int           // transactions refused for a txid recorded for another (Result.TxIDConflict)
	st             appliedState  // updated as entries apply; saved by saveState
	savedMax       int64         // st.maxTime as stored in the meta bucket
	savedKVApplied uint64        // st.kvApplied as stored in the meta bucket
	retained       retainState   // the retention progress after this batch, if on
	window         time.Duration // the dedup window of the last transaction applied (retain.go)
}

func newApplier(btx *bolt.Tx, idem *idemBatch, overlay *kvBatch) (*applier, error) {
	st, err := readState(btx)
	if err != nil {
		return nil, err
	}
	a := &applier{
		meta:           btx.Bucket(bucketMeta),
		log:            btx.Bucket(bucketLog),
		txs:            btx.Bucket(bucketTxs),
		dedupTime:      btx.Bucket(bucketDedupTime),
		kv:             btx.Bucket(bucketKV),
		nodes:          btx.Bucket(bucketNodes),
		btx:            btx,
		idem:           idem,
		overlay:        overlay,
		st:             st,
		savedMax:       st.maxTime,
		savedKVApplied: st.kvApplied,
		floor:          math.MinInt64,
	}
	for _, b := range []*bolt.Bucket{a.log, a.txs, a.dedupTime} {
		b.FillPercent = appendFillPercent
	}
	a.keyOf = recordKeyOf(a.txs, a.log)
	a.kvGet.c, a.txsGet.c = a.kv.Cursor(), a.txs.Cursor()
	a.txsGet.tail = a.txs // most new txids sort after the last leaf's first
	return a, nil
}

func (a *applier) saveState() error {
	if err := a.meta.Put(metaApplied, encodeApplied(a.st.index, a.st.term)); err != nil {
		return err
	}
	if a.st.kvApplied != a.savedKVApplied {
		if err := a.meta.Put(metaKVApplied, u64Key(a.st.kvApplied)); err != nil {
			return err
		}
	}
	if a.st.maxTime == a.savedMax {
		return nil
	}
	return a.meta.Put(metaMaxTime, binary.BigEndian.AppendUint64(nil, uint64(a.st.maxTime)))
}

// apply applies one entry above the applied index. An error is a bbolt failure
// or a broken database; bad entry data is a Result with Err.
func (a *applier) apply(e Entry) (Result, error) {
	c, err := DecodeCommand(e.Data)
	if err != nil {
		return Result{Err: fmt.Errorf("entry %d: %w", e.Index, err)}, nil
	}
	switch c.Kind {
	case KindTx:
		tx, err := DecodeTx(c.Payload)
		if err != nil {
			return Result{Kind: c.Kind, Err: fmt.Errorf("entry %d: %w", e.Index, err)}, nil
		}
		return a.applyTx(e, c, tx)
	case KindRegisterNode:
		n, err := DecodeNode(c.Payload)
		if err != nil {
			return Result{Kind: c.Kind, Err: fmt.Errorf("entry %d: %w", e.Index, err)}, nil
		}
		a.observe(c.Time)
		a.nodesChanged = true
		return Result{Kind: c.Kind}, a.nodes.Put([]byte(n.ID), bytes.Clone(c.Payload))
	case KindLease:
		lc, err := DecodeLeaseCommand(c.Payload)
		if err != nil {
			return Result{Kind: c.Kind, Err: fmt.Errorf("entry %d: %w", e.Index, err)}, nil
		}
		return a.applyLease(e, c, lc)
	case KindNotifyDone:
		idx, err := DecodeNotifyDone(c.Payload)
		if err != nil {
			return Result{Kind: c.Kind, Err: fmt.Errorf("entry %d: %w", e.Index, err)}, nil
		}
		return a.applyNotifyDone(c, idx)
	}
	// DecodeCommand rejects other kinds.
	return Result{}, fmt.Errorf("command kind %d", c.Kind)
}

// observe moves the max leader time forward to t; an older t leaves it alone.
func (a *applier) observe(t int64) { a.st.maxTime = max(a.st.maxTime, t) }

// applyTx applies a decoded transaction: prune old dedup records, answer a
// duplicate with its original outcome, or evaluate the ops and record the outcome.
func (a *applier) applyTx(e Entry, c Command, tx Tx) (Result, error) {
	a.observe(c.Time)
	window := c.DedupWindow
	if window <= 0 {
		window = DefaultDedupWindow
	}
	a.window = window
	if err := a.prune(cutoff(a.st.maxTime, window)); err != nil {
		return Result{}, err
	}

	switch o, dup, err := a.duplicate(tx, c.Payload); {
	case err != nil:
		return Result{}, err
	case dup == seenOther:
		// The key names another transaction: refused, recording nothing, and
		// the same on every node; Outcome names the original.
		return Result{Kind: KindTx, Outcome: o, Reused: true}, nil
	case dup == seenTxID:
		// The txid names another transaction: refused the same way.
		a.txidConflicts++
		return Result{Kind: KindTx, Outcome: o, TxIDConflict: true}, nil
	case dup == seenSame:
		if o.TxID != tx.ID {
			// A resubmission under another txid (same idempotency key): remember
			// that txid too, so that a client holding it finds the outcome.
			err = a.alias(tx.ID, o.Index)
		}
		return Result{Kind: KindTx, Outcome: o, Duplicate: true}, err
	}

	o := Outcome{
		TxID:           tx.ID,
		IdempotencyKey: tx.IdempotencyKey,
		Index:          e.Index,
		Term:           e.Term,
		Time:           c.Time,
	}
	var writes []pending
	var conflict *Conflict
	var err error
	if tx.Fence != nil { // the one cost of fences to a transaction without one
		conflict, err = a.fenceConflict(tx.Fence)
	}
	if conflict == nil && err == nil {
		writes, conflict, err = a.evaluate(tx.Ops)
	}
	if err != nil {
		return Result{}, err
	}
	if conflict != nil {
		o.Status, o.Conflict = StatusRejected, conflict
	} else {
		o.Status = StatusCommitted
		o.Versions = make(map[string]uint64, len(writes))
		for _, w := range writes {
			o.Versions[w.key] = w.version
			a.write(w, e.Index, len(c.Payload))
		}
		if len(a.offsets) > 0 { // the one cost of consumer groups to a transaction without them
			if err := a.commitOffsets(e.Index, c.Time); err != nil {
				return Result{}, err
			}
		}
	}
	if err := a.record(o, writes, c.Payload); err != nil {
		return Result{}, err
	}
	if tx.Notify != "" { // the one cost of callbacks to a transaction without one
		if err := a.addDelivery(tx.Notify, o); err != nil {
			return Result{}, err
		}
	}
	return Result{Kind: KindTx, Outcome: o}, nil
}

// cutoff returns the time before which dedup records are pruned: maxTime minus
// window, or math.MinInt64 (prune nothing) when that would overflow.
func cutoff(maxTime int64, window time.Duration) int64 {
	if maxTime < math.MinInt64+int64(window) {
		return math.MinInt64
	}
	return maxTime - int64(window)
}

// prune deletes up to maxPrunePerEntry dedup records recorded before cutoff,
// oldest first. The log bucket keeps their records.
func (a *applier) prune(cutoff int64) error {
	if a.floor >= cutoff {
		return nil
	}
	type victim struct{ key, idem []byte }
	var victims []victim
	c := a.dedupTime.Cursor()
	for k, v := c.First(); ; k, v = c.Next() {
		if k == nil {
			a.floor = math.MaxInt64 // no record left after the deletes
			break
		}
		if len(victims) == maxPrunePerEntry {
			break // the records left are no older than floor either
		}
		t, _, err := parseDedupTimeKey(k)
		if err != nil {
			return err
		}
		if t >= cutoff {
			a.floor = t
			break
		}
		// Copy out: bbolt memory is not valid across the deletes below.
		victims = append(victims, victim{bytes.Clone(k), bytes.Clone(v)})
	}
	for _, vc := range victims {
		id := vc.key[8:]
		if err := a.dedupTime.Delete(vc.key); err != nil {
			return err
		}
		if err := a.txs.Delete(id); err != nil {
			return err
		}
		// The key may have been recorded again for another txid since; remove
		// keeps that.
		if len(vc.idem) > 0 {
			a.idem.remove(string(vc.idem), txid.ID(u64(id)))
		}
	}
	return nil
}

// seen says what duplicate found.
type seen uint8

const (
	seenNone  seen = iota // a new transaction
	seenSame              // tx's txid, or its idempotency key for the same transaction (SameTx)
	seenOther             // its idempotency key, recorded for another transaction
	seenTxID              // its txid, recorded for another transaction
)

// duplicate returns the recorded outcome of tx's txid or, failing that, of the
// txid its idempotency key maps to, and whether that transaction is the one
// whose EncodeTx bytes are payload (SameTx). A txid names one transaction: a
// hit by txid whose recorded bytes are another transaction's is seenTxID,
// whatever the idempotency key says. The recorded bytes of an alias (a
// resubmission under another txid) are the original's, which SameTx
// compares but for the txid, as it did when it recorded the alias.
func (a *applier) duplicate(tx Tx, payload []byte) (Outcome, seen, error) {
	id := tx.ID
	v := a.txsGet.u64(uint64(id))
	byKey := false
	if v == nil {
		if tx.IdempotencyKey == "" {
			return Outcome{}, seenNone, nil
		}
		cand, ok := a.idem.candidate(tx.IdempotencyKey)
		if !ok {
			return Outcome{}, seenNone, nil
		}
		id, byKey = cand, true
		v = a.txsGet.u64(uint64(id))
	}
	o, recorded, err := outcomeTxAt(a.log, id, v)
	switch {
	case errors.Is(err, ErrNotFound):
		return Outcome{}, seenNone, nil
	case err != nil:
		return Outcome{}, seenNone, err
	case !byKey && !SameTx(recorded, payload):
		return o, seenTxID, nil
	case !byKey:
		return o, seenSame, nil
	case o.IdempotencyKey != tx.IdempotencyKey:
		return Outcome{}, seenNone, nil // the candidate is another key's with the same hash
	case !SameTx(recorded, payload):
		return o, seenOther, nil
	}
	return o, seenSame, nil
}

// pending is a key's state as the ops of a transaction leave it.
type pending struct {
	key      string
	version  uint64 // 0: the key does not exist
	value    []byte // nil when version is 0
	overlaid bool   // kvBatch.version's: the batch or the overlay has the key
}

// evaluateMapOps is the number of ops from which evaluate finds a key's
// pending state through a map rather than by a scan of the keys written.
const evaluateMapOps = 16

// evaluate runs ops in order against the kv overlay and bucket without
// writing, each op seeing the effects of the ones before. It returns each
// written key's final state in key order, or the first failed precondition.
// The slice is a.writes, valid until the next call; the offsets of the
// OpCommitOffset ops are in a.offsets (evaluateOffset).
func (a *applier) evaluate(ops []Op) ([]pending, *Conflict, error) {
	writes := a.writes[:0]
	a.offsets = a.offsets[:0]
	var at map[string]int // with many ops: the index of each key in writes
	if len(ops) >= evaluateMapOps {
		at = make(map[string]int, len(ops))
	}
	for _, op := range ops {
		if op.Kind == OpCommitOffset {
			conflict, err := a.evaluateOffset(op)
			if conflict != nil || err != nil {
				a.writes = writes
				return nil, conflict, err
			}
			continue
		}
		i, ok := -1, false
		if at != nil {
			i, ok = at[op.Key]
		} else {
			i = slices.IndexFunc(writes, func(w pending) bool { return w.key == op.Key })
			ok = i >= 0
		}
		if !ok {
			ver, overlaid, err := a.overlay.version(&a.kvGet, op.Key)
			if err != nil {
				return nil, nil, err
			}
			i = len(writes)
			writes = append(writes, pending{key: op.Key, version: ver, overlaid: overlaid})
			if at != nil {
				at[op.Key] = i
			}
		}
		cur := &writes[i]
		if op.HasIfVersion && op.IfVersion != cur.version {
			a.writes = writes
			return nil, &Conflict{Key: op.Key, Expected: op.IfVersion, Actual: cur.version}, nil
		}
		switch op.Kind {
		case OpPut:
			cur.version, cur.value = cur.version+1, op.Value
		case OpDelete:
			cur.version, cur.value = 0, nil
		}
	}
	a.writes = writes
	if len(writes) > 1 {
		slices.SortFunc(writes, func(x, y pending) int { return strings.Compare(x.key, y.key) })
	}
	return writes, nil, nil
}

// write puts a key's final state into the overlay: a put, or the tombstone
// of a deleted key. The value aliases DecodeTx's copy of the transaction, of
// txBytes bytes, which nothing else keeps or changes, when it is at least
// half of those bytes (a single-op transaction); else the overlay takes a copy
// of its own, so that a small value does not keep a large transaction alive.
func (a *applier) write(w pending, index uint64, txBytes int) {
	if w.version == 0 {
		a.overlay.set(w.key, kvState{modIndex: index}, w.overlaid)
		return
	}
	value := w.value
	if 2*len(value) < txBytes {
		value = bytes.Clone(value)
	}
	a.overlay.set(w.key, kvState{version: w.version, modIndex: index, value: value}, w.overlaid)
}

// record writes a new outcome to the log and the dedup buckets, and indexes its
// idempotency key. The dedup record is filed under the max leader time, not the
// entry's own time, so that an entry from a leader with a slow clock is still
// kept for the whole window.
// writes are the committed tx's writes in key order, as evaluate returns them.
func (a *applier) record(o Outcome, writes []pending, tx []byte) error {
	buf := &a.buf
	buf.reserve(logValueLen(o, writes, tx) + 8 + 8 + 16 + len(o.IdempotencyKey))
	index := buf.u64(o.Index) // the log key and the txs value
	start := len(buf.b)
	buf.b = appendLogValue(buf.b, o, writes, tx)
	rec := buf.cut(start)
	if err := a.log.PutTail(index, rec); err != nil {
		return err
	}
	a.overlay.logged(len(rec))
	if err := a.txs.PutTail(buf.u64(uint64(o.TxID)), index); err != nil {
		return err
	}
	if o.IdempotencyKey != "" {
		if err := a.idem.insert(o.IdempotencyKey, o.TxID, a.keyOf); err != nil {
			return err
		}
	}
	start = len(buf.b)
	buf.b = append(buf.b, o.IdempotencyKey...)
	idemKey := buf.cut(start) // before dedupTimeKey appends to buf
	return a.dedupTime.PutTail(a.dedupTimeKey(o.TxID), idemKey)
}

// alias records txid id as another name of the transaction at log index: Tx(id)
// then returns that transaction's outcome. The alias is pruned with the dedup
// window like any other dedup record.
func (a *applier) alias(id txid.ID, index uint64) error {
	if err := a.txs.PutTail(a.buf.u64(uint64(id)), a.buf.u64(index)); err != nil {
		return err
	}
	return a.dedupTime.PutTail(a.dedupTimeKey(id), nil)
}

// dedupTimeKey returns the dedup_time key of id filed under the dedup clock,
// in a.buf, for a put: the record may be the oldest.
func (a *applier) dedupTimeKey(id txid.ID) []byte {
	a.floor = min(a.floor, a.st.maxTime)
	a.buf.reserve(16)
	start := len(a.buf.b)
	a.buf.b = appendDedupTimeKey(a.buf.b, a.st.maxTime, id)
	return a.buf.cut(start)
}

// getter reads one bucket in a write transaction through a cursor it keeps,
// where Bucket.Get allocates a new cursor, and its stack, for each read. Seek
// starts from the root each time, so the puts between reads do not matter.
type getter struct {
	c    *bolt.Cursor
	key  []byte       // the key read last; bbolt does not keep it
	tail *bolt.Bucket // if set, a bucket written with PutTail: its last leaf answers first
}

// get returns key's value, or nil if key is absent (or names a bucket), like
// Bucket.Get.
func (g *getter) get(key []byte) []byte {
	if g.tail != nil {
		if v, ok := g.tail.LookupTail(key); ok {
			return v
		}
	}
	k, v := g.c.Seek(key)
	if !bytes.Equal(k, key) {
		return nil
	}
	return v
}

// string returns the value of key.
func (g *getter) string(key string) []byte {
	g.key = append(g.key[:0], key...)
	return g.get(g.key)
}

// u64 returns the value of the key of 8 big-endian bytes v.
func (g *getter) u64(v uint64) []byte {
	g.key = binary.BigEndian.AppendUint64(g.key[:0], v)
	return g.get(g.key)
}

// txBufBytes is the size of the buffers a txBuf allocates, unless a record
// needs more.
const txBufBytes = 16 << 10

// txBuf holds the keys and values an applier puts into bbolt, so that they
// take one allocation per txBufBytes rather than a few per entry. bbolt reads
// a value it was given, and keeps a key given to PutTail (the patch in
// third_party/bbolt), until its transaction ends, so txBuf never
// writes over bytes it has handed out: when a buffer is full it starts a new
// one, and an append past the capacity moves on to a copy.
type txBuf struct{ b []byte }

// reserve makes room for n more bytes in a new buffer if b lacks it.
func (t *txBuf) reserve(n int) {
	if cap(t.b)-len(t.b) < n {
		t.b = make([]byte, 0, max(n, txBufBytes))
	}
}

// cut hands out the bytes appended to t.b since start.
func (t *txBuf) cut(start int) []byte { return t.b[start:len(t.b):len(t.b)] }

// u64 hands out the 8 big-endian bytes of v.
func (t *txBuf) u64(v uint64) []byte {
	t.reserve(8)
	start := len(t.b)
	t.b = binary.BigEndian.AppendUint64(t.b, v)
	return t.cut(start)
}

// lookupTx reads the outcome of the txid whose key is id, or ErrNotFound.
func lookupTx(txs, log *bolt.Bucket, id []byte) (Outcome, error) {
	return outcomeAt(log, txid.ID(u64(id)), txs.Get(id))
}

// outcomeAt reads the outcome of txid id from the log, given id's value in
// the txs bucket: ErrNotFound if v is nil.
func outcomeAt(log *bolt.Bucket, id txid.ID, v []byte) (Outcome, error) {
	o, _, err := outcomeTxAt(log, id, v)
	return o, err
}

// outcomeTxAt is outcomeAt that also returns the EncodeTx bytes of the
// transaction, which alias bbolt memory: valid for the bbolt transaction only.
func outcomeTxAt(log *bolt.Bucket, id txid.ID, v []byte) (Outcome, []byte, error) {
	if v == nil {
		return Outcome{}, nil, ErrNotFound
	}
	if len(v) != 8 {
		return Outcome{}, nil, fmt.Errorf("%w: txs value of %d bytes", ErrCorrupt, len(v))
	}
	index := binary.BigEndian.Uint64(v)
	rec := log.Get(v)
	if rec == nil {
		return Outcome{}, nil, fmt.Errorf("%w: txid %x recorded at index %d but no log record", ErrCorrupt, txidKey(id), index)
	}
	r, txBytes, err := decodeLogRecord(index, rec, false)
	return r.Outcome, txBytes, err
}
