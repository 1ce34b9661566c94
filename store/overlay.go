package store

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// The kv overlay keeps the kv bucket off the path of each applied entry. The
// bucket is a checkpoint: it holds every key's state as of the applied index
// kv_applied (meta bucket), and the log records after it are its redo log. The
// overlay holds in memory what those records wrote: each key's latest state,
// or a tombstone for a deleted key. A key's current state is the overlay's, or
// failing that the bucket's.
//
// Writing a transaction's keys into the bucket rewrote one random leaf page per
// transaction: most of the cost of Apply with keys spread over a large key
// space. The overlay instead collects the writes, and once it is large enough
// (Config.KVFlushKeys, KVFlushLogBytes and KVFlushRecords) an Apply writes it
// into the bucket in key order, in the same bbolt transaction as its entries,
// and moves kv_applied to its own applied index: each leaf page is rewritten
// once per flush, for all the keys written to it since the last.
//
// Open and Restore rebuild the overlay by replaying the log records with index
// in (kv_applied, applied]. A committed record holds the new version of each
// key it wrote and the transaction's ops, which give each key's final state; a
// rejected one wrote nothing. The three thresholds bound the memory of the
// overlay and how long that replay takes.
//
// Like the idempotency index (idem.go), Apply changes the overlay through a
// kvBatch that Apply itself sees; the shared overlay takes the changes (commit)
// once the bbolt transaction has committed, and a failed Apply drops them. A
// flushing Apply's commit clears the overlay after the bucket holds its keys,
// and readers look in the overlay before they open a bbolt transaction, so no
// reader sees a key step back: it finds the overlay's state until the clear,
// and the bucket, as new or newer, after.

// kvState is a key's state in the overlay. Version 0 is a tombstone: the key
// was deleted since kv_applied, whatever the bucket holds.
type kvState struct {
	version  uint64
	modIndex uint64
	value    []byte // owned by the overlay, never changed; nil for a tombstone
}

// kvOverlay is the committed overlay: the key states written by the log
// records in (kv_applied, applied] of the committed bbolt state. Only its DB's
// apply goroutine changes it (commit, or a swap by Open, Restore and Close).
type kvOverlay struct {
	// mu guards keys, and is held only for map operations; the apply
	// goroutine, the only writer, reads keys without it. Lock order: DB.mu,
	// then mu.
	mu   sync.RWMutex
	keys map[string]kvState

	// records and logBytes count the log records after kv_applied and their
	// bytes: what Open would replay. Used by the apply goroutine only.
	records  int
	logBytes int
}

func newKVOverlay() *kvOverlay { return &kvOverlay{keys: map[string]kvState{}} }

// get returns key's state in the overlay, if the overlay has it.
func (ov *kvOverlay) get(key string) (kvState, bool) {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	s, ok := ov.keys[key]
	return s, ok
}

// len returns the number of keys in the overlay, tombstones included.
func (ov *kvOverlay) len() int {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	return len(ov.keys)
}

// batch returns an empty batch of changes to ov.
func (ov *kvOverlay) batch() *kvBatch {
	return &kvBatch{ov: ov, keys: map[string]kvState{}}
}

// commit applies the changes of b to ov. Call it once the bbolt transaction
// that made them has committed. After a flush the bucket holds every key of ov
// and b, and ov is left empty.
func (ov *kvOverlay) commit(b *kvBatch) {
	if b.flushed {
		ov.mu.Lock()
		ov.keys = map[string]kvState{} // a new map: the old one's memory goes
		ov.mu.Unlock()
		ov.records, ov.logBytes = 0, 0
		return
	}
	if len(b.keys) > 0 {
		ov.mu.Lock()
		maps.Copy(ov.keys, b.keys)
		ov.mu.Unlock()
	}
	ov.records += b.records
	ov.logBytes += b.logBytes
}

// kvLimits are the thresholds at which Apply flushes the overlay.
type kvLimits struct {
	keys, logBytes, records int
}

// kvBatch is the overlay as an Apply in progress sees it: the committed
// overlay with the batch's changes on top. Used by one goroutine.
type kvBatch struct {
	ov      *kvOverlay
	keys    map[string]kvState // the batch's key states
	newKeys int                // keys of keys that ov does not have

	records, logBytes int  // the log records the batch wrote
	flushed           bool // the batch wrote ov and keys into the bucket
}

// version returns key's current version: the batch's, the overlay's, or the
// kv bucket's. 0 means the key does not exist.
func (b *kvBatch) version(kv *bolt.Bucket, key string) (uint64, error) {
	if s, ok := b.keys[key]; ok {
		return s.version, nil
	}
	if s, ok := b.ov.keys[key]; ok { // only this goroutine writes ov.keys
		return s.version, nil
	}
	v := kv.Get([]byte(key))
	if v == nil {
		return 0, nil
	}
	st, err := decodeKV(key, v)
	return st.Version, err
}

// set records key's new state; s.value must not change afterwards.
func (b *kvBatch) set(key string, s kvState) {
	if _, ok := b.keys[key]; !ok {
		if _, ok := b.ov.keys[key]; !ok {
			b.newKeys++
		}
	}
	b.keys[key] = s
}

// logged counts a log record of n bytes written by the batch.
func (b *kvBatch) logged(n int) {
	b.records++
	b.logBytes += n
}

// full reports whether the overlay with the batch's changes has reached one
// of the limits.
func (b *kvBatch) full(l kvLimits) bool {
	return len(b.ov.keys)+b.newKeys >= l.keys ||
		b.ov.logBytes+b.logBytes >= l.logBytes ||
		b.ov.records+b.records >= l.records
}

// flush writes the overlay with the batch's changes into the kv bucket, in key
// order, and marks the batch flushed; the caller moves kv_applied. The encoded
// values share one buffer, which bbolt reads until the transaction ends.
func (b *kvBatch) flush(kv *bolt.Bucket) error {
	merged := make(map[string]kvState, len(b.ov.keys)+b.newKeys)
	maps.Copy(merged, b.ov.keys)
	maps.Copy(merged, b.keys)
	keys := slices.Sorted(maps.Keys(merged))
	size := 0
	for _, k := range keys {
		if s := merged[k]; s.version != 0 {
			size += kvEncodedLen(s.version, s.modIndex, s.value)
		}
	}
	buf := make([]byte, 0, size)
	for _, k := range keys {
		s := merged[k]
		if s.version == 0 {
			if err := kv.Delete([]byte(k)); err != nil {
				return err
			}
			continue
		}
		start := len(buf)
		buf = appendKV(buf, s.version, s.modIndex, s.value)
		if err := kv.Put([]byte(k), buf[start:len(buf):len(buf)]); err != nil {
			return err
		}
	}
	b.flushed = true
	return nil
}

// loadKVOverlay rebuilds the overlay of the state in tx by replaying the log
// records with index in (st.kvApplied, st.index].
func loadKVOverlay(tx *bolt.Tx, st appliedState) (*kvOverlay, error) {
	ov := newKVOverlay()
	if st.kvApplied == st.index {
		return ov, nil
	}
	c := tx.Bucket(bucketLog).Cursor()
	for k, v := c.Seek(u64Key(st.kvApplied + 1)); k != nil; k, v = c.Next() {
		if len(k) != 8 {
			return nil, fmt.Errorf("%w: log key of %d bytes", ErrCorrupt, len(k))
		}
		index := u64(k)
		if index > st.index {
			return nil, fmt.Errorf("%w: log record %d past the applied index %d", ErrCorrupt, index, st.index)
		}
		ov.records++
		ov.logBytes += len(v)
		r, err := decodeLogValue(index, v, true)
		if err != nil {
			return nil, err
		}
		if r.Status != StatusCommitted {
			continue
		}
		if err := ov.redo(r); err != nil {
			return nil, err
		}
	}
	return ov, nil
}

// redo puts the key states a committed log record left into ov, which no
// reader sees yet: for each key, the state of its last op with the version
// recorded.
func (ov *kvOverlay) redo(r LogRecord) error {
	for _, op := range r.Ops {
		ver, ok := r.Versions[op.Key]
		switch {
		case !ok:
			return fmt.Errorf("%w: log record %d has no version of key %q", ErrCorrupt, r.Index, op.Key)
		case op.Kind == OpPut:
			ov.keys[op.Key] = kvState{version: ver, modIndex: r.Index, value: bytes.Clone(op.Value)}
		default:
			ov.keys[op.Key] = kvState{modIndex: r.Index}
		}
	}
	for key, ver := range r.Versions {
		s, ok := ov.keys[key]
		if !ok || s.version != ver || (ver == 0) != (s.value == nil) {
			return fmt.Errorf("%w: log record %d: version %d of key %q does not match its ops", ErrCorrupt, r.Index, ver, key)
		}
	}
	return nil
}
