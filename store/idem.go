package store

import (
	"errors"
	"hash/maphash"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/txlog/txlog/txid"
)

// The idempotency index maps each idempotency key in the dedup window to the
// txid recorded under it. It lives in memory, not in bbolt: a bucket keyed by
// random strings made every transaction rewrite a random leaf page. Open and
// Restore rebuild it from the dedup_time bucket, whose values are the keys.
//
// To stay small (a node keeps a day of keys, a million or more) it holds the
// 64-bit hash of a key, not the key:
//
//	byHash  hash(key) → txid   one key per hash; a hit is only a candidate
//	exact   key       → txid   keys whose hash was taken by another live key
//
// A key is in exact or behind its hash in byHash, never both. Whoever follows a
// byHash hit reads the txid's log record, whose header holds the idempotency key,
// and takes it only if that key is the one looked up. So a result depends only
// on exact key matches, never on the hash or its seed, and every replica
// answers the same.
//
// Apply changes the index through an idemBatch, an overlay of the batch's
// changes that Apply itself sees; the shared index takes them (commit) only after
// the bbolt transaction has committed, and a failed Apply drops them.

// idemHash hashes idempotency keys; tests replace it to force collisions. An
// index keeps the function it was created with.
var idemHash = maphash.String

// idemIndex is the committed index: it matches the committed bbolt state, and
// only its DB's apply goroutine changes it (commit, or a swap by Restore).
type idemIndex struct {
	seed maphash.Seed
	hash func(maphash.Seed, string) uint64

	// mu guards byHash and exact, and is held only for map operations. Lock
	// order: DB.mu, then mu.
	mu     sync.RWMutex
	byHash map[uint64]txid.ID
	exact  map[string]txid.ID

	// The maps of the last batch committed, empty, for the next (batch);
	// used by the apply goroutine only.
	spareHashes map[uint64]idemSlot
	spareExact  map[string]idemSlot
}

func newIdemIndex() *idemIndex {
	return &idemIndex{
		seed:   maphash.MakeSeed(),
		hash:   idemHash,
		byHash: map[uint64]txid.ID{},
		exact:  map[string]txid.ID{},
	}
}

// candidate returns the txid key may be recorded under. A hit from byHash may
// belong to another key with the same hash: the caller compares the key of the
// txid's record with key.
func (x *idemIndex) candidate(key string) (txid.ID, bool) {
	h := x.hash(x.seed, key)
	x.mu.RLock()
	defer x.mu.RUnlock()
	if id, ok := x.exact[key]; ok {
		return id, true
	}
	id, ok := x.byHash[h]
	return id, ok
}

// batch returns an empty overlay of changes to x, in the maps of the last
// batch committed, if any.
func (x *idemIndex) batch() *idemBatch {
	b := &idemBatch{idx: x, hashes: x.spareHashes, exact: x.spareExact}
	x.spareHashes, x.spareExact = nil, nil
	if b.hashes == nil {
		b.hashes = map[uint64]idemSlot{}
	}
	if b.exact == nil {
		b.exact = map[string]idemSlot{}
	}
	return b
}

// commit copies the changes of b into x. Call it once the bbolt transaction that
// made them has committed.
func (x *idemIndex) commit(b *idemBatch) {
	if b.hashes != nil && len(b.hashes)+len(b.exact) <= maxSpareKeys {
		defer func() {
			// The next batch reuses the maps: no allocation, and no growth
			// up to the size of the batches so far.
			clear(b.hashes)
			clear(b.exact)
			x.spareHashes, x.spareExact = b.hashes, b.exact
		}()
	}
	if len(b.hashes) == 0 && len(b.exact) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for h, s := range b.hashes {
		if s.ok {
			x.byHash[h] = s.id
		} else {
			delete(x.byHash, h)
		}
	}
	for k, s := range b.exact {
		if s.ok {
			x.exact[k] = s.id
		} else {
			delete(x.exact, k)
		}
	}
}

// len returns the number of indexed keys.
func (x *idemIndex) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.byHash) + len(x.exact)
}

// idemSlot is the state of one map entry as a batch leaves it.
type idemSlot struct {
	id txid.ID
	ok bool // false: deleted
}

// idemBatch is the index as an Apply in progress sees it: the committed index
// with the batch's changes on top. Each change is the final state of one map
// entry, so copying them into the index in any order gives the same result as
// replaying the adds and deletes in apply order. Used by one goroutine.
type idemBatch struct {
	idx *idemIndex
	// hashes and exact hold the changed entries of idx.byHash and idx.exact; nil
	// in a batch that writes straight into an index no reader sees yet.
	hashes map[uint64]idemSlot
	exact  map[string]idemSlot

	// The last key looked up (find): Apply looks a transaction's key up
	// (duplicate) and then indexes it (record), with no change between.
	last lastLookup
}

// lastLookup is the last key a batch looked up, its hash, and what the
// lookup found, which holds until the batch's next change (valid).
type lastLookup struct {
	key           string
	h             uint64
	id            txid.ID
	inExact, ok   bool
	hashed, valid bool
}

// find is lookup of key, whose hash it computes: both remembered for the
// next find of the same key, the lookup's until the batch changes.
func (b *idemBatch) find(key string) (h uint64, id txid.ID, inExact, ok bool) {
	l := &b.last
	if !l.hashed || l.key != key {
		*l = lastLookup{key: key, h: b.idx.hash(b.idx.seed, key), hashed: true}
	}
	if !l.valid {
		l.id, l.inExact, l.ok = b.lookup(key, l.h)
		l.valid = true
	}
	return l.h, l.id, l.inExact, l.ok
}

// lookup returns where key is indexed: its own entry in exact (inExact), or the
// entry of its hash in byHash, which may belong to another key.
func (b *idemBatch) lookup(key string, h uint64) (id txid.ID, inExact, ok bool) {
	es, eChanged := b.exact[key]
	if eChanged && es.ok {
		return es.id, true, true
	}
	hs, hChanged := b.hashes[h]
	if eChanged && hChanged {
		return hs.id, false, hs.ok
	}
	b.idx.mu.RLock()
	defer b.idx.mu.RUnlock()
	if !eChanged {
		if id, ok := b.idx.exact[key]; ok {
			return id, true, true
		}
	}
	if hChanged {
		return hs.id, false, hs.ok
	}
	id, ok = b.idx.byHash[h]
	return id, false, ok
}

// candidate is idemIndex.candidate with the batch's changes.
func (b *idemBatch) candidate(key string) (txid.ID, bool) {
	_, id, _, ok := b.find(key)
	return id, ok
}

// keyOfFunc returns the idempotency key in the record of txid id; found is
// false when id has no record.
type keyOfFunc func(id txid.ID) (key string, found bool, err error)

// insert indexes key under id, replacing what key was indexed under. When another
// key holds the hash, key goes to exact; keyOf tells whose the hash is.
func (b *idemBatch) insert(key string, id txid.ID, keyOf keyOfFunc) error {
	h, cur, inExact, ok := b.find(key)
	if inExact {
		b.setExact(key, idemSlot{id, true})
		return nil
	}
	if ok && cur != id {
		other, found, err := keyOf(cur)
		if err != nil {
			return err
		}
		// A txid without a record is a stale entry that nothing finds: take
		// its place.
		if found && other != key {
			b.setExact(key, idemSlot{id, true})
			return nil
		}
	}
	b.setHash(h, idemSlot{id, true})
	return nil
}

// remove drops key if it is indexed under id; a key recorded again for another
// txid since stays.
func (b *idemBatch) remove(key string, id txid.ID) {
	h, cur, inExact, ok := b.find(key)
	switch {
	case !ok || cur != id:
	case inExact:
		b.setExact(key, idemSlot{})
	default:
		b.setHash(h, idemSlot{})
	}
}

func (b *idemBatch) setHash(h uint64, s idemSlot) {
	b.last.valid = false
	setSlot(b.hashes, b.idx.byHash, h, s)
}

func (b *idemBatch) setExact(key string, s idemSlot) {
	b.last.valid = false
	setSlot(b.exact, b.idx.exact, key, s)
}

// setSlot records s for k in the batch's overlay when the batch has one, else
// directly in the index's map (an absent slot deletes k).
func setSlot[K comparable](overlay map[K]idemSlot, index map[K]txid.ID, k K, s idemSlot) {
	switch {
	case overlay != nil:
		overlay[k] = s
	case s.ok:
		index[k] = s.id
	default:
		delete(index, k)
	}
}

// recordKeyOf returns a keyOfFunc that reads records through txs and log.
func recordKeyOf(txs, log *bolt.Bucket) keyOfFunc {
	return func(id txid.ID) (string, bool, error) {
		o, err := lookupTx(txs, log, txidKey(id))
		switch {
		case err == nil:
			return o.IdempotencyKey, true, nil
		case errors.Is(err, ErrNotFound):
			return "", false, nil
		}
		return "", false, err
	}
}

// loadIdemIndex builds the index of the state in tx from its dedup_time
// records, oldest first, as Apply built it: a later record of a key replaces an
// earlier one. Alias records (empty value) name no key.
func loadIdemIndex(tx *bolt.Tx, drop *pageDropper) (*idemIndex, error) {
	x := newIdemIndex()
	b := &idemBatch{idx: x} // x is not shared yet: write straight into it
	keyOf := recordKeyOf(tx.Bucket(bucketTxs), tx.Bucket(bucketLog))
	err := tx.Bucket(bucketDedupTime).ForEach(func(k, v []byte) error {
		drop.tick()
		_, id, err := parseDedupTimeKey(k)
		if err != nil || len(v) == 0 {
			return err
		}
		return b.insert(string(v), txid.ID(u64(id)), keyOf)
	})
	if err != nil {
		return nil, err
	}
	return x, nil
}
