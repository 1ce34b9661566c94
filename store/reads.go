package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

// Reader is the read side of a DB (DB.Reads): transactions by txid or
// idempotency key, keys, the log, the registered nodes (here), leases
// (lease.go), consumer groups (consumer.go), pending callbacks (notify.go)
// and where the log starts (first.go). Its methods are safe from any goroutine
// at any time, including during Apply and Restore, and see the state after
// the last Apply that has returned, or a later one (with
// Config.CommitInterval, a read that misses in committed state reads again in
// the transaction Apply left open, DB.viewApplied). They return memory the
// caller owns, and ErrClosed once the DB is closed.
type Reader struct{ db *DB }

// Reads returns the DB's read side.
func (db *DB) Reads() *Reader { return &db.reads }

// Tx returns the outcome of a transaction by ID, or ErrNotFound. A transaction
// whose dedup record was pruned (older than the dedup window) is not found here,
// though Log still has it. The caller owns the result.
func (r *Reader) Tx(id txid.ID) (Outcome, error) {
	db := r.db
	var o Outcome
	err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		var err error
		o, err = lookupTx(tx.Bucket(bucketTxs), tx.Bucket(bucketLog), txidKey(id))
		return false, err
	})
	return o, err
}

// TxFor is Tx for a proposal of payload, the EncodeTx bytes of the
// transaction with txid id: when the transaction recorded under id is not the
// same (SameTx), it returns an error wrapping ErrTxIDConflict, as Apply would
// refuse payload (Result.TxIDConflict). A nil payload is not compared.
func (r *Reader) TxFor(id txid.ID, payload []byte) (Outcome, error) {
	db := r.db
	var o Outcome
	err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		key := txidKey(id)
		var recorded []byte
		var err error
		o, recorded, err = outcomeTxAt(tx.Bucket(bucketLog), id, tx.Bucket(bucketTxs).Get(key))
		if err == nil && payload != nil && !SameTx(recorded, payload) {
			err = fmt.Errorf("txid %s: %w (at index %d)", id, ErrTxIDConflict, o.Index)
		}
		return false, err
	})
	if err != nil {
		return Outcome{}, err
	}
	return o, nil
}

// TxByIdempotencyKey returns the outcome of a transaction by idempotency key, or
// ErrNotFound, as Tx does. The empty key is never found. It looks the key up in
// the in-memory index and reads the record from bbolt, so a call that races an
// Apply which records or prunes the key answers as before or as after that
// Apply.
func (r *Reader) TxByIdempotencyKey(key string) (Outcome, error) {
	return r.TxByIdempotencyKeyFor(key, nil)
}

// TxByIdempotencyKeyFor is TxByIdempotencyKey for a resubmission of payload,
// the EncodeTx bytes submitted with key. When the transaction recorded under
// key is not the same (SameTx), it returns a *KeyReusedError naming it, as
// Apply would refuse payload (Result.Reused). A nil payload is not compared.
func (r *Reader) TxByIdempotencyKeyFor(key string, payload []byte) (Outcome, error) {
	db := r.db
	if key == "" || !r.indexed(key) {
		return Outcome{}, ErrNotFound
	}
	var o Outcome
	err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		id, ok := db.idem.candidate(key)
		if !ok {
			return false, errNotIndexed
		}
		txs := tx.Bucket(bucketTxs)
		var recorded []byte
		var err error
		o, recorded, err = outcomeTxAt(tx.Bucket(bucketLog), id, txs.Get(txidKey(id)))
		switch {
		case err != nil:
			return false, err
		case o.IdempotencyKey != key:
			return false, ErrNotFound // another key with the same hash
		case payload != nil && !SameTx(recorded, payload):
			return false, &KeyReusedError{Key: key, TxID: o.TxID}
		}
		return false, nil
	})
	if errors.Is(err, errNotIndexed) {
		err = ErrNotFound // the index is current: no need to commit and look again
	}
	if err != nil {
		return Outcome{}, err
	}
	return o, nil
}

// indexed reports whether the idempotency index has a candidate txid for key,
// or the store cannot tell (closed or broken: the read reports that). The index
// holds every applied entry's key, so a key without a candidate has no
// record, and TxByIdempotencyKey answers ErrNotFound without a bbolt read
// transaction: the common case of a client's first submission, which each
// receiving node checks (node.SubmitBatch).
func (r *Reader) indexed(key string) bool {
	db := r.db
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil || db.idem == nil || db.broken.Load() {
		return true
	}
	_, ok := db.idem.candidate(key)
	return ok
}

// Get returns a key's current state, or ErrNotFound. The caller owns the result.
// It reads the kv overlay and, when the overlay does not have the key, the kv
// bucket. A state it cannot decode, or whose value's log record it cannot,
// is returned with KV.Unreadable set, not as an error.
func (r *Reader) Get(key string) (KV, error) {
	db := r.db
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil {
		return KV{}, ErrClosed
	}
	if db.broken.Load() {
		return KV{}, db.failure()
	}
	// The overlay before the bucket: a flush clears the overlay only after its
	// bbolt transaction, which puts the overlay's keys into the bucket, has
	// committed. A bbolt transaction begun after a miss sees that commit.
	if s, ok := db.kv.get(key); ok {
		if s.version == 0 {
			return KV{}, ErrNotFound
		}
		return KV{Key: key, Value: bytes.Clone(s.value), Version: s.version, ModIndex: s.modIndex}, nil
	}
	var kv KV
	err := db.bolt.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketKV).Get([]byte(key))
		if v == nil {
			return ErrNotFound
		}
		var byRef bool
		var err error
		if kv, byRef, err = decodeKV(key, v); err != nil {
			kv = KV{Key: key, Unreadable: err}
			return nil
		}
		if byRef {
			kv.Value, err = kvValueAt(tx.Bucket(bucketLog), key, kv.Version, kv.ModIndex)
			if errors.Is(err, ErrCorrupt) {
				kv.Value, kv.Unreadable, err = nil, err, nil
			}
			return err
		}
		kv.Value = append([]byte{}, kv.Value...) // out of bbolt memory
		return nil
	})
	if err != nil {
		return KV{}, err
	}
	return kv, nil
}

// Log returns up to limit committed transactions with index >= from, in index
// order, and the index to continue from: the last returned index + 1, or from when
// nothing is returned. A limit <= 0 returns nothing. Indexes have gaps: only
// transaction entries with a new outcome (committed or rejected) are in the log,
// not duplicates or other entries. A record that cannot be decoded is returned
// with LogRecord.Unreadable set, in its place. The caller owns the result.
func (r *Reader) Log(from uint64, limit int) ([]LogRecord, uint64, error) {
	db := r.db
	if limit <= 0 {
		return nil, from, nil
	}
	// A read that comes up short goes on from where it stopped, so the one in
	// the open transaction, under the writer's lock, reads only what is not
	// committed yet. Log records never change once written, and each read
	// sees at least what the one before it saw.
	var recs []LogRecord
	next := from
	err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		more, n, err := readLog(tx, next, limit-len(recs))
		if err != nil {
			return false, err
		}
		recs, next = append(recs, more...), n
		return len(recs) < limit, nil
	})
	if err != nil {
		return nil, from, err
	}
	return recs, next, nil
}

// readLog returns the log records from index from on, up to limit of them,
// and the index after the last (from when there is none).
func readLog(tx *bolt.Tx, from uint64, limit int) ([]LogRecord, uint64, error) {
	var recs []LogRecord
	next := from
	c := tx.Bucket(bucketLog).Cursor()
	for k, v := c.Seek(u64Key(from)); k != nil && len(recs) < limit; k, v = c.Next() {
		if len(k) != 8 {
			return nil, from, fmt.Errorf("%w: log key of %d bytes", ErrCorrupt, len(k))
		}
		index := u64(k)
		r, err := decodeLogValue(index, v, true)
		if err != nil {
			// Not a reason to stop a reader at this index for good: the
			// record goes out as it is stored (LogRecord.Unreadable).
			r = LogRecord{Outcome: Outcome{Index: index}, Unreadable: err, Raw: bytes.Clone(v)}
		}
		recs = append(recs, r)
		next = index + 1
	}
	return recs, next, nil
}

// Nodes returns the registered nodes, ordered by ID. The caller owns the result.
func (r *Reader) Nodes() ([]NodeInfo, error) {
	db := r.db
	var nodes []NodeInfo
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketNodes).ForEach(func(k, v []byte) error {
			n, err := DecodeNode(v)
			if err != nil {
				return fmt.Errorf("node %q: %w", k, err)
			}
			nodes = append(nodes, n)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return nodes, nil
}
