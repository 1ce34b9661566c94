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
// kv_applied (meta bucket), or a newer one written by a flush in progress, and
// the log records after kv_applied are its redo log. The
// overlay holds in memory what those records wrote: each key's latest state,
// or a tombstone for a deleted key. A key's current state is the overlay's, or
// failing that the bucket's.
//
// Writing a transaction's keys into the bucket rewrote one random leaf page per
// transaction: most of the cost of Apply with keys spread over a large key
// space. The overlay instead collects the writes, and once it is large enough
// (Config.KVFlushKeys, KVFlushLogBytes and KVFlushRecords) Applies write it
// into the bucket in key order, Config.KVFlushStepKeys keys each, in the same
// bbolt transactions as their entries; the last step moves kv_applied to the
// applied index at which the flush began. Each leaf page is rewritten once per
// flush, for all the keys written to it since the last, and no Apply writes
// more than a step.
//
// Open and Restore rebuild the overlay by replaying the log records with index
// in (kv_applied, applied]. A committed record holds the new version of each
// key it wrote and the transaction's ops, which give each key's final state; a
// rejected one wrote nothing. The three thresholds bound the memory of the
// overlay and how long that replay takes.
//
// Like the idempotency index (idem.go), Apply changes the overlay through a
// kvBatch that Apply itself sees; the shared overlay takes the changes (commit)
// once the bbolt transaction has committed, and a failed Apply drops them. The
// commit of a flush's last step drops the flushed keys after the bucket holds
// them, and readers look in the overlay before they open a bbolt transaction,
// so no reader sees a key step back: it finds the overlay's state until the
// drop, and the bucket's, the same or newer, after.

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
//
// A flush runs in steps. The Apply that finds the overlay full freezes it:
// frozen takes keys, the states as of the applied index before that Apply
// (flushTo), and keys starts with that Apply's own. That Apply and the next
// ones each write the next
// Config.KVFlushStepKeys keys of frozen, in key order, into the bucket; the one
// that writes the last moves kv_applied to flushTo, and frozen goes. A key's
// state is the one in keys, else in frozen, else in the bucket.
//
// Invariant: the bucket holds, for every key in neither keys nor frozen, its
// state as of the applied index, and for every key of frozen not in pending,
// its state in frozen. A key that keys or frozen shadows may have any state in
// the bucket, and replaying the log from kv_applied, which a flush moves only
// at its last step, overwrites it.
type kvOverlay struct {
	// mu guards keys and frozen, and is held only for map operations; the
	// apply goroutine, the only writer, reads them without it. Lock order:
	// DB.mu, then mu.
	mu     sync.RWMutex
	keys   map[string]kvState // written after flushTo, or after kv_applied when frozen is nil
	frozen map[string]kvState // nil, or the states as of flushTo being written; never changed

	// Used by the apply goroutine only.
	pending []string // the keys of frozen not yet in the bucket, in key order
	flushTo uint64   // the index frozen is as of: kv_applied once pending is empty
	// records and logBytes count the log records after flushTo (or
	// kv_applied) and their bytes, which the flush limits apply to.
	records  int
	logBytes int
	// clean caches versions the bucket holds, for Apply's version checks,
	// which would otherwise look up every key neither keys nor frozen has in
	// the bucket. A key's entry is its version in the bucket (0: absent),
	// learnt from a lookup there or from the flush that wrote it. Only the
	// bucket's writes, which are flushes of frozen, change a key's state
	// there, and a key is in frozen, which version reads first, until the
	// commit of the flush's last step updates clean. At most maxCleanKeys
	// entries: past it clean starts again empty.
	clean map[string]uint64
	// spare is the map of the last batch committed, empty, for the next
	// (batch); nil when a flush took it as keys.
	spare map[string]kvState
}

// maxSpareKeys bounds the batch maps kept for the next batch (kvOverlay.spare,
// idemIndex.spareHashes and spareExact): a map keeps the size it grew to.
const maxSpareKeys = 4096

// maxCleanKeys bounds kvOverlay.clean: with the keys, about 50 bytes each. A
// variable so that tests can make it small.
var maxCleanKeys = 256 << 10

func newKVOverlay() *kvOverlay {
	return &kvOverlay{keys: map[string]kvState{}, clean: map[string]uint64{}}
}

// remember caches key's version in the bucket, as clean's comment says.
func (ov *kvOverlay) remember(key string, version uint64) {
	if len(ov.clean) >= maxCleanKeys {
		clear(ov.clean)
	}
	ov.clean[key] = version
}

// get returns key's state in the overlay, if the overlay has it.
func (ov *kvOverlay) get(key string) (kvState, bool) {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	if s, ok := ov.keys[key]; ok {
		return s, true
	}
	s, ok := ov.frozen[key]
	return s, ok
}

// len returns the number of keys in the overlay, tombstones included; a key
// in keys and frozen counts twice.
func (ov *kvOverlay) len() int {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	return len(ov.keys) + len(ov.frozen)
}

// empty reports whether the bucket holds every key state: no log record
// follows kv_applied.
func (ov *kvOverlay) empty() bool { return ov.records == 0 && ov.frozen == nil }

// batch returns an empty batch of changes to ov, in the map of the last
// batch committed, if ov did not take it.
func (ov *kvOverlay) batch() *kvBatch {
	keys := ov.spare
	ov.spare = nil
	if keys == nil {
		keys = map[string]kvState{}
	}
	return &kvBatch{ov: ov, keys: keys}
}

// commit applies the changes of b to ov. Call it once the bbolt transaction
// that made them has committed: the bucket then holds the keys b's flush step
// wrote, so dropping frozen after the last step leaves no gap.
func (ov *kvOverlay) commit(b *kvBatch) {
	ov.mu.Lock()
	defer ov.mu.Unlock()
	if b.frozen != nil {
		// b started a flush of ov.keys as they were before b, and b's own
		// keys and records are the first after it.
		ov.frozen, ov.flushTo = b.frozen, b.flushTo
		ov.keys = b.keys
		ov.records, ov.logBytes = b.records, b.logBytes
	} else {
		maps.Copy(ov.keys, b.keys)
		ov.records += b.records
		ov.logBytes += b.logBytes
		// The next batch reuses the map: no allocation, and no growth up
		// to the size of the batches so far. Not a large one, whose
		// clear and iteration cost its size for every batch after.
		if len(b.keys) <= maxSpareKeys {
			clear(b.keys)
			ov.spare = b.keys
		}
	}
	if b.stepped {
		ov.pending = b.pending
		if len(ov.pending) == 0 {
			// The bucket now holds every key of frozen as frozen has it.
			for k, s := range ov.frozen {
				ov.remember(k, s.version)
			}
			ov.frozen, ov.pending = nil, nil
		}
	}
}

// kvLimits are the thresholds at which Apply flushes the overlay, and the
// keys one flush step writes.
type kvLimits struct {
	keys, logBytes, records int
	stepKeys                int
}

// kvBatch is the overlay as an Apply in progress sees it: the committed
// overlay with the batch's changes on top. Used by one goroutine.
type kvBatch struct {
	ov      *kvOverlay
	keys    map[string]kvState // the batch's key states
	newKeys int                // keys of keys that ov.keys does not have

	records, logBytes int // the log records the batch wrote

	// The batch's flush step, if stepped.
	frozen  map[string]kvState // set when the batch started a flush: ov.keys, which the batch did not change
	flushTo uint64             // with frozen: the applied index before the batch
	pending []string           // the flush's keys not yet in the bucket after the step
	stepped bool
}

// version returns key's current version: the batch's, the overlay's, or the
// kv bucket's. 0 means the key does not exist. overlaid reports whether the
// batch's keys or ov.keys have the key, which set takes so as not to look
// again.
func (b *kvBatch) version(kv *getter, key string) (ver uint64, overlaid bool, err error) {
	if s, ok := b.keys[key]; ok {
		return s.version, true, nil
	}
	// Only this goroutine writes ov's maps.
	if s, ok := b.ov.keys[key]; ok {
		return s.version, true, nil
	}
	if s, ok := b.ov.frozen[key]; ok {
		return s.version, false, nil
	}
	if v, ok := b.ov.clean[key]; ok {
		return v, false, nil
	}
	v := kv.string(key)
	if v == nil {
		b.ov.remember(key, 0)
		return 0, false, nil
	}
	st, _, err := decodeKV(key, v)
	if err != nil {
		return 0, false, err
	}
	b.ov.remember(key, st.Version)
	return st.Version, false, nil
}

// set records key's new state; s.value must not change afterwards.
// overlaid is version's for key, with no set of key since.
func (b *kvBatch) set(key string, s kvState, overlaid bool) {
	if !overlaid {
		b.newKeys++
	}
	b.keys[key] = s
}

// logged counts a log record of n bytes written by the batch.
func (b *kvBatch) logged(n int) {
	b.records++
	b.logBytes += n
}

// full reports whether the keys written since flushTo (or kv_applied), with
// the batch's, have reached one of the limits.
func (b *kvBatch) full(l kvLimits) bool {
	return len(b.ov.keys)+b.newKeys >= l.keys ||
		b.ov.logBytes+b.logBytes >= l.logBytes ||
		b.ov.records+b.records >= l.records
}

// flushStep writes the next l.stepKeys keys of the flush in progress into the
// kv bucket, after starting one if none runs and the overlay is full. A flush
// it starts is of the committed overlay, as of before, the applied index
// before the batch: it takes ov.keys as they are, which no one changes any
// more, without a copy, and the batch's own keys go to the next overlay. When
// it writes the last key, it returns the index kv_applied moves to, which the
// caller stores in the same transaction.
func (b *kvBatch) flushStep(kv *bolt.Bucket, l kvLimits, before uint64) (kvApplied uint64, done bool, err error) {
	frozen, pending, to := b.ov.frozen, b.ov.pending, b.ov.flushTo
	if frozen == nil {
		if !b.full(l) {
			return 0, false, nil
		}
		frozen = b.ov.keys
		pending, to = slices.Sorted(maps.Keys(frozen)), before
		b.frozen, b.flushTo = frozen, to
	}
	n := min(len(pending), max(l.stepKeys, 1))
	if err := writeKV(kv, frozen, pending[:n]); err != nil {
		return 0, false, err
	}
	b.pending, b.stepped = pending[n:], true
	return to, len(b.pending) == 0, nil
}

// writeKV writes the states of keys, in their order, into the kv bucket, in
// format 2: their values stay in the log (encodeKV). The encoded states share
// one buffer, which bbolt reads until the transaction ends. The keys pass
// through one scratch buffer: bbolt's Put copies the key it stores (go.mod
// requires bbolt 1.5), and Delete keeps none; TestOverlayModel reads every key
// back after flushes.
func writeKV(kv *bolt.Bucket, states map[string]kvState, keys []string) error {
	size, longest := 0, 0
	for _, k := range keys {
		longest = max(longest, len(k))
		if s := states[k]; s.version != 0 {
			size += kvEncodedLen(s.version, s.modIndex)
		}
	}
	buf := make([]byte, 0, size)
	scratch := make([]byte, 0, longest)
	for _, k := range keys {
		s := states[k]
		scratch = append(scratch[:0], k...)
		if s.version == 0 {
			if err := kv.Delete(scratch); err != nil {
				return err
			}
			continue
		}
		start := len(buf)
		buf = appendKV(buf, s.version, s.modIndex)
		if err := kv.Put(scratch, buf[start:len(buf):len(buf)]); err != nil {
			return err
		}
	}
	return nil
}

// flushAll writes every key state of ov, which no reader or Apply uses any
// more, into the kv bucket: what Close does.
func (ov *kvOverlay) flushAll(kv *bolt.Bucket) error {
	all := make(map[string]kvState, len(ov.frozen)+len(ov.keys))
	maps.Copy(all, ov.frozen)
	maps.Copy(all, ov.keys)
	return writeKV(kv, all, slices.Sorted(maps.Keys(all)))
}

// loadKVOverlay rebuilds the overlay of the state in tx by replaying the log
// records with index in (st.kvApplied, st.index].
func loadKVOverlay(tx *bolt.Tx, st appliedState, drop *pageDropper) (*kvOverlay, error) {
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
		drop.tick()
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
		if op.Kind == OpCommitOffset {
			continue // the consumers bucket, not kv
		}
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
