package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Retention: a store may drop the log records beyond a horizon
// (Config.Retention). It is a node's own setting, as Kafka's retention is a
// broker's: what it changes is which old log records the node still serves
// (Log, FirstIndex), never a Result, a key's value or version, or what Tx and
// TxByIdempotencyKey find. Replicas with different settings, or none, stay
// consistent; a snapshot carries its source's log as it is.
//
// A record goes only when all of these hold:
//
//   - it is beyond the horizon: its index is at least Entries below the
//     applied index, or its time is more than Age before the dedup clock
//     (either limit, as Kafka's retention.ms and retention.bytes);
//   - its index is at most kv_applied: the records after it are the
//     overlay's redo log;
//   - no dedup record can still point at it (the gates below);
//   - with RespectConsumers, its index is below the lowest committed offset
//     of the consumer groups (an offset is the next index a group reads).
//
// Before a record goes, every key whose kv entry points at it (the key's
// value is in the record) gets its value copied into its kv entry, format 1
// of record.go, which every schema reads: a key last written long ago keeps
// its value. A flush writes the key by reference again when it changes.
//
// The dedup check of a resubmission reads the original's record (its outcome,
// and its EncodeTx bytes for SameTx), through txs: the original's txid, or
// an alias, a duplicate's txid filed later. So a record is kept while any
// dedup record may point at it. dedup_time is pruned oldest first by filing
// time (the dedup clock), so a gate (index g, clock C) opens in two phases:
// once the oldest dedup_time record is filed after C, every original of the
// records up to g (filed at or before C) is gone, and no new alias of them
// can be made; then C becomes the dedup clock of that moment, and once the
// oldest record is filed after it, every alias made before is gone too. So
// the records up to g may go about two dedup windows after g was applied.
// Gates are in memory: after Open or Restore they start again, which only
// keeps records longer.
//
// Each Apply drops at most maxRetainPerApply records, oldest first, in the
// same bbolt transaction as its entries, like the dedup prune.

// Retention is how much of the log a store keeps. The zero value keeps
// everything.
type Retention struct {
	// Entries keeps the records whose index is less than Entries below the
	// applied index (Raft indexes: the log has gaps, so it keeps at most
	// Entries records). 0: no limit by count.
	Entries uint64
	// Age keeps the records whose leader time is at most Age before the
	// dedup clock, the largest leader time applied. 0: no limit by age.
	Age time.Duration
	// RespectConsumers keeps every record at or after the lowest committed
	// offset of the consumer groups.
	RespectConsumers bool
}

// On reports whether r drops anything.
func (r Retention) On() bool { return r.Entries > 0 || r.Age > 0 }

// String returns r in ParseRetention's syntax.
func (r Retention) String() string {
	var parts []string
	if r.Entries > 0 {
		parts = append(parts, strconv.FormatUint(r.Entries, 10))
	}
	if r.Age > 0 {
		parts = append(parts, r.Age.String())
	}
	if len(parts) == 0 {
		return "off"
	}
	return strings.Join(parts, ",")
}

// ErrRetention is the error of a retention spec that ParseRetention refuses.
var ErrRetention = errors.New("store: bad retention")

// ParseRetention parses a retention spec: "off" (or empty), a number of
// entries ("1000000"), a duration ("24h"), or both, comma-separated
// ("1000000,24h"). RespectConsumers is not part of it.
func ParseRetention(s string) (Retention, error) {
	var r Retention
	s = strings.TrimSpace(s)
	if s == "" || s == "off" {
		return r, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if n, err := strconv.ParseUint(part, 10, 64); err == nil {
			if n == 0 || r.Entries != 0 {
				return Retention{}, fmt.Errorf("%w %q: entries must be given once and be positive", ErrRetention, s)
			}
			r.Entries = n
			continue
		}
		d, err := time.ParseDuration(part)
		if err != nil || d <= 0 || r.Age != 0 {
			return Retention{}, fmt.Errorf("%w %q: want off, N entries, a positive duration, or N,duration", ErrRetention, s)
		}
		r.Age = d
	}
	return r, nil
}

// maxRetainPerApply bounds the records one Apply drops. A variable so that
// tests can make it small.
var maxRetainPerApply = 1000

// maxRetainGates bounds the gates in memory; past it no new gate is made
// until the oldest opens.
const maxRetainGates = 128

// retainGate is a gate of the comment at the top: the records up to index
// may go once the oldest dedup_time record is filed after clock, in phase 2.
type retainGate struct {
	index  uint64
	clock  int64
	phase2 bool
}

// retainState is a DB's retention progress, used by the apply goroutine only.
type retainState struct {
	cfg Retention
	// gates, oldest first; cleared is the highest index no dedup record
	// points at or below. Apply works on a copy and keeps it once its bbolt
	// transaction has succeeded.
	gates   []retainGate
	cleared uint64
	window  time.Duration // the dedup window of the last transaction applied
}

// retainer is the retention step of one Apply, in its applier's transaction
// (applyIn, once per Apply).
type retainer struct{ a *applier }

// step drops up to maxRetainPerApply records beyond the horizon from
// the start of the log, in a's transaction, and returns the new progress.
// window is the dedup window of the batch's last transaction (defaulted), 0
// if it had none.
func (rt retainer) step(rs retainState, window time.Duration) (retainState, error) {
	a := rt.a
	rs.gates = slices.Clone(rs.gates)
	oldest := int64(math.MaxInt64) // filing time of the oldest dedup record
	if k, _ := a.dedupTime.Cursor().First(); k != nil {
		t, _, err := parseDedupTimeKey(k)
		if err != nil {
			return rs, err
		}
		oldest = t
	}
	// Phase 1 ends for the gates whose clock the oldest record is past (in
	// clock order), phase 2 for the first ones likewise.
	for i := range rs.gates {
		g := &rs.gates[i]
		if g.phase2 {
			continue
		}
		if oldest <= g.clock {
			break
		}
		g.phase2, g.clock = true, a.st.maxTime
	}
	for len(rs.gates) > 0 && rs.gates[0].phase2 && oldest > rs.gates[0].clock {
		rs.cleared = rs.gates[0].index
		rs.gates = rs.gates[1:]
	}
	// Gates a 32nd of the dedup window apart: about 64 in flight, so that
	// records go about that often.
	if window > 0 {
		rs.window = window
	}
	spacing := max(int64(rs.window)/32, int64(time.Millisecond))
	if n := len(rs.gates); n < maxRetainGates && a.st.index > rs.cleared &&
		(n == 0 || (a.st.index > rs.gates[n-1].index && a.st.maxTime-rs.gates[n-1].clock >= spacing)) {
		rs.gates = append(rs.gates, retainGate{index: a.st.index, clock: a.st.maxTime})
	}

	limit := min(a.st.kvApplied, rs.cleared) // the highest index that may go
	if rs.cfg.RespectConsumers {
		if low, ok := rt.minConsumerOffset(); ok {
			if low == 0 {
				return rs, nil
			}
			limit = min(limit, low-1)
		}
	}
	ageCut := int64(math.MinInt64)
	if rs.cfg.Age > 0 {
		ageCut = cutoff(a.st.maxTime, rs.cfg.Age)
	}
	type victim struct {
		index uint64
		rec   []byte
	}
	var victims []victim
	c := a.log.Cursor()
	for k, v := c.First(); k != nil && len(victims) < maxRetainPerApply; k, v = c.Next() {
		i := u64(k)
		if i > limit {
			break
		}
		beyond := rs.cfg.Entries > 0 && i <= a.st.index-min(a.st.index, rs.cfg.Entries)
		if !beyond && rs.cfg.Age > 0 {
			t, err := logRecordTime(i, v)
			if err != nil {
				return rs, err
			}
			beyond = t < ageCut
		}
		if !beyond {
			break
		}
		victims = append(victims, victim{i, bytes.Clone(v)})
	}
	for _, vc := range victims {
		if err := rt.keepValues(vc.index, vc.rec); err != nil {
			return rs, err
		}
		if err := a.log.Delete(u64Key(vc.index)); err != nil {
			return rs, err
		}
	}
	if n := len(victims); n > 0 { // RetainedFrom (first.go)
		if err := a.meta.Put(metaLogFirst, u64Key(victims[n-1].index+1)); err != nil {
			return rs, err
		}
	}
	return rs, nil
}

// keepValues copies into kv the value of every key whose kv entry points at
// the record at index, which is about to go.
func (rt retainer) keepValues(index uint64, rec []byte) error {
	a := rt.a
	r, err := decodeLogValue(index, rec, true)
	if err != nil {
		return err
	}
	if r.Status != StatusCommitted {
		return nil
	}
	for key, version := range r.Versions {
		if version == 0 {
			continue // a delete
		}
		cur := a.kv.Get([]byte(key))
		if cur == nil {
			continue
		}
		kv, byRef, err := decodeKV(key, cur)
		if err != nil {
			return err
		}
		if !byRef || kv.ModIndex != index {
			continue
		}
		value, err := valueIn(r, key, version)
		if err != nil {
			return err
		}
		if err := a.kv.Put([]byte(key), encodeKVInline(kv.Version, kv.ModIndex, value)); err != nil {
			return err
		}
	}
	return nil
}

// valueIn returns the value r's last op on key put, as kvValueAt does.
func valueIn(r LogRecord, key string, version uint64) ([]byte, error) {
	for _, op := range slices.Backward(r.Ops) {
		if op.Key != key {
			continue
		}
		if op.Kind == OpPut {
			return op.Value, nil
		}
		break
	}
	return nil, fmt.Errorf("%w: kv %q version %d: the transaction at its mod index %d does not end with a put of it", ErrCorrupt, key, version, r.Index)
}

// encodeKVInline encodes a kv bucket value of format 1: the value held.
func encodeKVInline(version, modIndex uint64, value []byte) []byte {
	b := make([]byte, 0, kvEncodedLen(version, modIndex)+len(value))
	b = append(b, kvInline)
	b = binary.AppendUvarint(b, version)
	b = binary.AppendUvarint(b, modIndex)
	return append(b, value...)
}

// logRecordTime returns the leader time of the log record v at index.
func logRecordTime(index uint64, v []byte) (int64, error) {
	r, err := decodeLogValue(index, v, false)
	if err != nil {
		return 0, err
	}
	return r.Time, nil
}

// minConsumerOffset is Reader.MinConsumerOffset in a's transaction, which the
// DB's own reads may not enter during Apply.
func (rt retainer) minConsumerOffset() (uint64, bool) {
	a := rt.a
	b := a.btx.Bucket(bucketConsumers)
	if b == nil {
		return 0, false
	}
	low, found := uint64(math.MaxUint64), false
	err := b.ForEach(func(k, v []byte) error {
		c, err := decodeConsumer(string(k), v)
		if err != nil {
			return err
		}
		low, found = min(low, c.Offset), true
		return nil
	})
	if err != nil {
		return 0, true // keep everything
	}
	return low, found
}
