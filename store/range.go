package store

import (
	"bytes"
	"errors"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// KeySpan is the keys from Start (included) to End (excluded); End "" has no
// end.
type KeySpan struct{ Start, End string }

// has reports whether key is in s.
func (s KeySpan) has(key string) bool {
	return key >= s.Start && (s.End == "" || key < s.End)
}

// RangePage is one page of Reader.Range.
type RangePage struct {
	// Index is the applied index the page is as of: every key in it, and
	// every key it passed over, is as that index left it.
	Index uint64
	KVs   []KV
	// More is true when a key of the spans follows the last of KVs.
	More bool
}

// Range returns the keys of spans strictly after after, in key order, up to
// limit of them, with their current state as of one applied index
// (RangePage.Index); keysOnly leaves each Value nil. spans must be sorted and
// must not overlap; a key outside them is never looked at, so a caller that
// may see only some keys passes only those. A state it cannot decode is
// returned with KV.Unreadable set, as Get does. The caller owns the result.
//
// The work is bounded per page: the overlay's keys (at most
// Config.KVFlushKeys, a scan of a map in memory under the writer lock that
// Apply also takes: the one moment a Range holds Apply up) and limit+1 keys
// of the kv bucket, found by cursor seeks. It takes its bbolt read
// transaction under that lock too, so the overlay and the bucket it reads
// agree: the bucket holds, for every key the overlay lacks, its state as of
// the applied index (overlay.go), and a flush that would change that commits
// only after the overlay it shadows has been taken.
func (r *Reader) Range(spans []KeySpan, after string, limit int, keysOnly bool) (RangePage, error) {
	db := r.db
	if limit <= 0 {
		return RangePage{Index: db.applied.Load()}, nil
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.bolt == nil {
		return RangePage{}, ErrClosed
	}
	if db.broken.Load() {
		return RangePage{}, db.failure()
	}
	in := func(key string) bool {
		if key <= after && !(after == "" && key == "") {
			return false
		}
		for _, s := range spans {
			if s.has(key) {
				return true
			}
		}
		return false
	}
	db.wmu.Lock()
	if db.failed != nil {
		err := db.failed
		db.wmu.Unlock()
		return RangePage{}, err
	}
	index := db.applied.Load()
	over := db.kv.inRange(in)
	btx, err := db.bolt.Begin(false)
	db.wmu.Unlock()
	if err != nil {
		return RangePage{}, err
	}
	defer btx.Rollback()
	page := RangePage{Index: index}
	err = rangeMerge(btx, spans, after, over, limit+1, keysOnly, func(kv KV) { page.KVs = append(page.KVs, kv) })
	if err != nil {
		return RangePage{}, err
	}
	if len(page.KVs) > limit {
		page.KVs, page.More = page.KVs[:limit], true
	}
	return page, nil
}

// overKV is a key's state in the overlay, for Range.
type overKV struct {
	key string
	s   kvState
}

// inRange returns the overlay's key states whose key in accepts, in key
// order: keys' over frozen's. The values stay the overlay's, which never
// changes them.
func (ov *kvOverlay) inRange(in func(string) bool) []overKV {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	var out []overKV
	for k, s := range ov.keys {
		if in(k) {
			out = append(out, overKV{k, s})
		}
	}
	for k, s := range ov.frozen {
		if _, ok := ov.keys[k]; !ok && in(k) {
			out = append(out, overKV{k, s})
		}
	}
	slices.SortFunc(out, func(a, b overKV) int { return strings.Compare(a.key, b.key) })
	return out
}

// rangeMerge walks the kv bucket of btx over spans, strictly after after,
// merged with over (the overlay's states there, in key order, which win over
// the bucket's), and gives emit up to n live keys in key order.
func rangeMerge(btx *bolt.Tx, spans []KeySpan, after string, over []overKV, n int, keysOnly bool, emit func(KV)) error {
	c := btx.Bucket(bucketKV).Cursor()
	logs := btx.Bucket(bucketLog)
	left := n
	for _, sp := range spans {
		start := sp.Start
		if after != "" && after >= start {
			start = after + "\x00" // the least key above after
		}
		if sp.End != "" && start >= sp.End {
			continue
		}
		k, v := c.Seek([]byte(start))
		for left > 0 {
			bucketHas := k != nil && (sp.End == "" || string(k) < sp.End)
			overHas := len(over) > 0 && sp.has(over[0].key)
			if !bucketHas && !overHas {
				break
			}
			if overHas && (!bucketHas || over[0].key <= string(k)) {
				o := over[0]
				over = over[1:]
				if bucketHas && o.key == string(k) {
					k, v = c.Next() // the overlay shadows the bucket's state
				}
				if o.s.version == 0 {
					continue // deleted since kv_applied
				}
				kv := KV{Key: o.key, Version: o.s.version, ModIndex: o.s.modIndex}
				if !keysOnly {
					kv.Value = bytes.Clone(o.s.value)
				}
				emit(kv)
				left--
				continue
			}
			kv, err := rangeKV(logs, string(k), v, keysOnly)
			if err != nil {
				return err
			}
			emit(kv)
			left--
			k, v = c.Next()
		}
	}
	return nil
}

// rangeKV decodes a kv bucket entry as Get does, its value out of bbolt
// memory (none with keysOnly).
func rangeKV(logs *bolt.Bucket, key string, v []byte, keysOnly bool) (KV, error) {
	kv, byRef, err := decodeKV(key, v)
	switch {
	case err != nil:
		return KV{Key: key, Unreadable: err}, nil
	case keysOnly:
		kv.Value = nil
	case byRef:
		kv.Value, err = kvValueAt(logs, key, kv.Version, kv.ModIndex)
		if errors.Is(err, ErrCorrupt) {
			kv.Value, kv.Unreadable, err = nil, err, nil
		}
	default:
		kv.Value = bytes.Clone(kv.Value)
	}
	return kv, err
}
