package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

// This file holds the encodings of the values in the bbolt buckets. They are
// internal to the store (a snapshot carries them, so they are versioned too) and
// use the notation of codec.go.

// Bucket names. See doc.go for what each holds.
var (
	bucketMeta      = []byte("meta")
	bucketLog       = []byte("log")
	bucketTxs       = []byte("txs")
	bucketDedupTime = []byte("dedup_time")
	bucketKV        = []byte("kv")
	bucketNodes     = []byte("nodes")

	allBuckets = [][]byte{bucketMeta, bucketLog, bucketTxs, bucketDedupTime, bucketKV, bucketNodes}
)

// Keys of the meta bucket.
var (
	metaSchema  = []byte("schema")   // 1 byte: schemaVersion
	metaApplied = []byte("applied")  // index (8) | term (8)
	metaMaxTime = []byte("max_time") // int64 (8): the largest Command.Time applied
	// index (8): the kv bucket holds the key states as of this applied index;
	// the log records after it are the redo log of the kv overlay (overlay.go).
	metaKVApplied = []byte("kv_applied")
	// index (8) | term (8): the applied entry of the snapshot stream this file
	// was restored from (Restore writes it into the stream's copy before the
	// rename); Apply never changes it. While the applied index equals it, the
	// file holds exactly that snapshot.
	metaRestored = []byte("restored")
)

// readRestored returns the index in the meta bucket's restored key, 0 when
// the file was never restored from a snapshot.
func readRestored(tx *bolt.Tx) (uint64, error) {
	v := tx.Bucket(bucketMeta).Get(metaRestored)
	switch {
	case v == nil:
		return 0, nil
	case len(v) != 16:
		return 0, fmt.Errorf("%w: restored index of %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// schemaVersion is the version of the bucket layout. Version 1 had an idem
// bucket (idempotency key → txid), now an index in memory (idem.go). Version 2
// kept the kv bucket current up to the applied index and had no kv_applied; a
// version 2 file opens as one whose kv_applied is its applied index. Versions
// 2 and 3 wrote kv values of format 1 only (the value in the kv bucket);
// version 4 writes format 2 (the value in the log) and reads both (encodeKV).
// Open rewrites a version 2 or 3 file as version 4, which a store of version 3
// refuses to open rather than misread. The store opens no other versions.
const (
	schemaVersion   = 4
	schemaVersionKV = 2 // the last version without kv_applied
)

// knownSchema reports whether the store opens files of schema version v.
func knownSchema(v byte) bool { return v >= schemaVersionKV && v <= schemaVersion }

// appliedState is what the meta bucket says about the applied entries.
type appliedState struct {
	index, term uint64
	// maxTime is the largest leader time of any applied command, Unix nanoseconds;
	// math.MinInt64 before the first. Invariant: it never decreases.
	maxTime int64
	// kvApplied is the applied index the kv bucket is current to. Invariant:
	// kvApplied <= index.
	kvApplied uint64
	// schema is the file's schema version: schemaVersion, or an older one
	// (knownSchema) until Open rewrites it.
	schema byte
}

func u64Key(v uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), v) }

func txidKey(id txid.ID) []byte { return u64Key(uint64(id)) }

// appendDedupTimeKey appends to b the key of the dedup_time bucket:
//
//	+----------------------+----------+
//	| time ^ 1<<63 (8)     | txid (8) |
//	+----------------------+----------+
//
// Flipping the sign bit makes the big-endian bytes sort like the signed time.
func appendDedupTimeKey(b []byte, t int64, id txid.ID) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
	return binary.BigEndian.AppendUint64(b, uint64(id))
}

func parseDedupTimeKey(k []byte) (int64, []byte, error) {
	if len(k) != 16 {
		return 0, nil, fmt.Errorf("%w: dedup_time key of %d bytes", ErrCorrupt, len(k))
	}
	return int64(binary.BigEndian.Uint64(k) ^ (1 << 63)), k[8:], nil
}

func encodeApplied(index, term uint64) []byte {
	b := make([]byte, 0, 16)
	b = binary.BigEndian.AppendUint64(b, index)
	return binary.BigEndian.AppendUint64(b, term)
}

// readState checks that tx holds a txlog store of a known schema and reads its
// meta bucket.
func readState(tx *bolt.Tx) (appliedState, error) {
	for _, name := range allBuckets {
		if tx.Bucket(name) == nil {
			return appliedState{}, fmt.Errorf("%w: no bucket %q", ErrCorrupt, name)
		}
	}
	meta := tx.Bucket(bucketMeta)
	v := meta.Get(metaSchema)
	if len(v) != 1 || !knownSchema(v[0]) {
		return appliedState{}, fmt.Errorf("%w: schema version %x, want %d to %d", ErrCorrupt, v, schemaVersionKV, schemaVersion)
	}
	st := appliedState{maxTime: math.MinInt64, schema: v[0]}
	if v := meta.Get(metaApplied); v != nil {
		if len(v) != 16 {
			return appliedState{}, fmt.Errorf("%w: applied index of %d bytes", ErrCorrupt, len(v))
		}
		st.index = binary.BigEndian.Uint64(v)
		st.term = binary.BigEndian.Uint64(v[8:])
	}
	if v := meta.Get(metaMaxTime); v != nil {
		if len(v) != 8 {
			return appliedState{}, fmt.Errorf("%w: max time of %d bytes", ErrCorrupt, len(v))
		}
		st.maxTime = int64(binary.BigEndian.Uint64(v))
	}
	switch v := meta.Get(metaKVApplied); {
	case st.schema == schemaVersionKV:
		st.kvApplied = st.index
	case len(v) != 8:
		return appliedState{}, fmt.Errorf("%w: kv_applied of %d bytes", ErrCorrupt, len(v))
	default:
		st.kvApplied = binary.BigEndian.Uint64(v)
		if st.kvApplied > st.index {
			return appliedState{}, fmt.Errorf("%w: kv_applied %d past the applied index %d", ErrCorrupt, st.kvApplied, st.index)
		}
	}
	return st, nil
}

// writeSchema makes the meta bucket of a new file (no schema), of a schema
// version 2 file (kv current up to the applied index) or of a version 3 file
// schema version 4, and returns its state as readState does.
func writeSchema(tx *bolt.Tx) (appliedState, error) {
	meta := tx.Bucket(bucketMeta)
	if meta.Get(metaSchema) == nil {
		if err := meta.Put(metaSchema, []byte{schemaVersion}); err != nil {
			return appliedState{}, err
		}
		if err := meta.Put(metaKVApplied, u64Key(0)); err != nil {
			return appliedState{}, err
		}
	}
	st, err := readState(tx)
	if err != nil || st.schema == schemaVersion {
		return st, err
	}
	if err := meta.Put(metaKVApplied, u64Key(st.kvApplied)); err != nil {
		return appliedState{}, err
	}
	if err := meta.Put(metaSchema, []byte{schemaVersion}); err != nil {
		return appliedState{}, err
	}
	st.schema = schemaVersion
	return st, nil
}

// The kv bucket's values come in two formats, told apart by their first byte.
// Format 1 holds the value itself; stores of schema 2 and 3 wrote it, and a
// key keeps it until a flush writes the key again:
//
//	+-------+--------------+---------------+--------------+
//	| 1 (1) | version (uv) | modIndex (uv) | value (rest) |
//	+-------+--------------+---------------+--------------+
//
// Format 2, which every flush writes since schema 4, leaves the value where it
// already is, in the log record at modIndex (kvValueAt):
//
//	+-------+--------------+---------------+
//	| 2 (1) | version (uv) | modIndex (uv) |
//	+-------+--------------+---------------+
//
// A flush rewrites each leaf page of the kv bucket that holds a key written
// since the last flush: with keys spread over the key space, nearly all of
// them. With the values in the pages, that was most of the bytes the store
// wrote (docs/performance.md, "The kv bucket is a checkpoint of the log");
// without them the bucket is a seventh of the size for 256-byte values. The
// log bucket keeps the record a key's state points at as long as the state
// does: retention (retain.go) copies the value into the key's entry, format
// 1, before it drops the record.
const (
	kvInline = 1
	kvByRef  = 2
)

// encodeKV encodes the kv bucket value, format 2, of a key's state.
func encodeKV(version, modIndex uint64) []byte {
	return appendKV(make([]byte, 0, kvEncodedLen(version, modIndex)), version, modIndex)
}

// appendKV appends encodeKV bytes to b.
func appendKV(b []byte, version, modIndex uint64) []byte {
	b = append(b, kvByRef)
	b = binary.AppendUvarint(b, version)
	return binary.AppendUvarint(b, modIndex)
}

// kvEncodedLen returns the length of encodeKV's bytes.
func kvEncodedLen(version, modIndex uint64) int {
	return 1 + uvarintLen(version) + uvarintLen(modIndex)
}

// decodeKV decodes a kv bucket value of either format. In format 1 the
// Value aliases v; in format 2 it is nil and byRef is true: the value is
// kvValueAt's.
func decodeKV(key string, v []byte) (kv KV, byRef bool, err error) {
	d := decoder{what: "kv", key: key, b: v}
	format := d.u8("format")
	kv = KV{Key: key, Version: d.uvarint("version"), ModIndex: d.uvarint("mod index")}
	switch {
	case d.err != nil:
	case format == kvInline:
		kv.Value = d.rest()
	case format == kvByRef:
		byRef = true
	default:
		d.fail("unknown format %d", format)
	}
	return kv, byRef, d.finish()
}

// kvValueAt returns the value of key at version as the transaction at log
// index modIndex left it: the value of its last op on key, which must be a
// put. The result does not alias bbolt memory.
func kvValueAt(log *bolt.Bucket, key string, version, modIndex uint64) ([]byte, error) {
	rec := log.Get(u64Key(modIndex))
	if rec == nil {
		return nil, fmt.Errorf("%w: kv %q version %d: no log record at its mod index %d", ErrCorrupt, key, version, modIndex)
	}
	r, err := decodeLogValue(modIndex, rec, true)
	if err != nil {
		return nil, err
	}
	if got, ok := r.Versions[key]; r.Status != StatusCommitted || !ok || got != version {
		return nil, fmt.Errorf("%w: kv %q version %d: the log record at its mod index %d did not write that version", ErrCorrupt, key, version, modIndex)
	}
	for _, op := range slices.Backward(r.Ops) {
		if op.Key != key || op.Kind == OpCommitOffset {
			continue
		}
		if op.Kind != OpPut {
			break
		}
		return op.Value, nil
	}
	return nil, fmt.Errorf("%w: kv %q version %d: the transaction at its mod index %d does not end with a put of it", ErrCorrupt, key, version, modIndex)
}

// appendLogValue appends to b the value of an index in the log bucket: the outcome
// without what the key (the index) or the tx itself (txid, idempotency key) says,
// followed by the EncodeTx bytes as they came in the entry.
//
//	+---------+-----------+----------+------------+-----------+--------------------+
//	| ver (1) | term (uv) | time (8) | status (1) | details   | tx (rest: EncodeTx)|
//	+---------+-----------+----------+------------+-----------+--------------------+
//
// details of a rejected tx (the conflict):
//
//	+-------------+-----+---------------+-------------+
//	| keyLen (uv) | key | expected (uv) | actual (uv) |
//	+-------------+-----+---------------+-------------+
//
// details of a committed tx (the versions), keys in ascending order:
//
//	+---------+-------------+-----+--------------+-----+
//	| n (uv)  | keyLen (uv) | key | version (uv) | ... |  n times
//	+---------+-------------+-----+--------------+-----+
//
// A transaction rejected by its fence (Conflict.Fence) has status byte 3
// (statusFenced) and, as details, the fence's lease, token and the lease's
// token, in the layout of the conflict above; it reads back as
// StatusRejected. One rejected by an OpCommitOffset (Conflict.Group) has
// status byte 4 (statusOffset) and the group, the offset asked for and the
// group's offset, in the same layout.
//
// writes are the versions of a committed tx, o.Versions in ascending key
// order, as evaluate returns them; a rejected tx has none.
func appendLogValue(b []byte, o Outcome, writes []pending, tx []byte) []byte {
	b = append(b, codecVersion)
	b = binary.AppendUvarint(b, o.Term)
	b = binary.BigEndian.AppendUint64(b, uint64(o.Time))
	if o.Status == StatusRejected && o.Conflict.Fence != "" {
		b = append(b, statusFenced)
		b = appendString(b, o.Conflict.Fence)
		b = binary.AppendUvarint(b, o.Conflict.Expected)
		b = binary.AppendUvarint(b, o.Conflict.Actual)
		return append(b, tx...)
	}
	if o.Status == StatusRejected && o.Conflict.Group != "" {
		b = append(b, statusOffset)
		b = appendString(b, o.Conflict.Group)
		b = binary.AppendUvarint(b, o.Conflict.Expected)
		b = binary.AppendUvarint(b, o.Conflict.Actual)
		return append(b, tx...)
	}
	b = append(b, byte(o.Status))
	if o.Status == StatusRejected {
		b = appendString(b, o.Conflict.Key)
		b = binary.AppendUvarint(b, o.Conflict.Expected)
		b = binary.AppendUvarint(b, o.Conflict.Actual)
	} else {
		b = binary.AppendUvarint(b, uint64(len(writes)))
		for _, w := range writes {
			b = appendString(b, w.key)
			b = binary.AppendUvarint(b, w.version)
		}
	}
	return append(b, tx...)
}

// logValueLen returns the length of appendLogValue's bytes.
func logValueLen(o Outcome, writes []pending, tx []byte) int {
	n := 1 + uvarintLen(o.Term) + 8 + 1 + len(tx)
	if o.Status == StatusRejected {
		k := len(o.Conflict.Key) + len(o.Conflict.Fence) + len(o.Conflict.Group) // one is not empty
		return n + uvarintLen(uint64(k)) + k + uvarintLen(o.Conflict.Expected) + uvarintLen(o.Conflict.Actual)
	}
	n += uvarintLen(uint64(len(writes)))
	for _, w := range writes {
		n += uvarintLen(uint64(len(w.key))) + len(w.key) + uvarintLen(w.version)
	}
	return n
}

// decodeLogValue decodes appendLogValue bytes stored at index. With withOps it
// decodes the whole tx into the record's Ops; without, only the tx header. The
// result does not alias v.
func decodeLogValue(index uint64, v []byte, withOps bool) (LogRecord, error) {
	r, _, err := decodeLogRecord(index, v, withOps)
	return r, err
}

// decodeLogRecord is decodeLogValue that also returns the record's EncodeTx
// bytes, which alias v.
func decodeLogRecord(index uint64, v []byte, withOps bool) (LogRecord, []byte, error) {
	d := decoder{what: fmt.Sprintf("log record %d", index), b: v}
	d.version()
	var r LogRecord
	r.Index = index
	r.Term = d.uvarint("term")
	r.Time = int64(d.u64("time"))
	r.Status = Status(d.u8("status"))
	switch {
	case d.err != nil:
	case r.Status == StatusRejected:
		c := Conflict{Key: string(d.bytes("conflict key", MaxKeyBytes))}
		c.Expected = d.uvarint("expected version")
		c.Actual = d.uvarint("actual version")
		r.Conflict = &c
	case r.Status == statusFenced:
		c := Conflict{Fence: string(d.bytes("fence lease", MaxKeyBytes))}
		c.Expected = d.uvarint("expected token")
		c.Actual = d.uvarint("actual token")
		r.Status, r.Conflict = StatusRejected, &c
	case r.Status == statusOffset:
		c := Conflict{Group: string(d.bytes("conflict group", MaxKeyBytes))}
		c.Expected = d.uvarint("expected offset")
		c.Actual = d.uvarint("actual offset")
		r.Status, r.Conflict = StatusRejected, &c
	case r.Status == StatusCommitted:
		n := d.uvarint("version count")
		if d.err == nil && (n > MaxOps || n > uint64(len(d.b)/3)) {
			d.fail("version count %d too large", n)
		}
		if d.err != nil {
			break
		}
		r.Versions = make(map[string]uint64, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			k := string(d.bytes("version key", MaxKeyBytes))
			r.Versions[k] = d.uvarint("version")
		}
	default:
		d.fail("unknown status %d", r.Status)
	}
	if d.err != nil {
		return LogRecord{}, nil, d.err
	}
	txBytes := d.rest()
	if withOps {
		tx, err := DecodeTx(txBytes)
		if err != nil {
			return LogRecord{}, nil, fmt.Errorf("log record %d: %w", index, err)
		}
		r.TxID, r.IdempotencyKey, r.Ops, r.Fence = tx.ID, tx.IdempotencyKey, tx.Ops, tx.Fence
		return r, txBytes, nil
	}
	hd := decoder{what: fmt.Sprintf("log record %d tx", index), b: txBytes}
	tx, _ := decodeTxHeader(&hd, true)
	if hd.err != nil {
		return LogRecord{}, nil, hd.err
	}
	r.TxID, r.IdempotencyKey = tx.ID, tx.IdempotencyKey
	return r, txBytes, nil
}

// Status bytes of rejected log records beyond StatusRejected: by the fence,
// by an OpCommitOffset.
const (
	statusFenced = 3
	statusOffset = 4
)

func u64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
