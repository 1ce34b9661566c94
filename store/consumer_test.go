package store

import (
	"bytes"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func offset(group string, n uint64) Op { return Op{Kind: OpCommitOffset, Key: group, Offset: n} }

func reset(group string, n uint64) Op {
	return Op{Kind: OpCommitOffset, Key: group, Offset: n, Reset: true}
}

// wantOffsetConflict checks that r is rejected by a commit_offset of group.
func wantOffsetConflict(t *testing.T, r Result, group string, asked, cur uint64) {
	t.Helper()
	want := &Conflict{Group: group, Expected: asked, Actual: cur}
	if r.Err != nil || r.Outcome.Status != StatusRejected || !reflect.DeepEqual(r.Outcome.Conflict, want) {
		t.Fatalf("tx = %+v (conflict %+v), want rejected with %+v", r, r.Outcome.Conflict, want)
	}
}

// wantOffset checks the group's committed offset and the entry that set it.
func wantOffset(t *testing.T, db *DB, group string, offset, index uint64) {
	t.Helper()
	c, err := db.Reads().Consumer(group)
	if err != nil || c.Offset != offset || c.Index != index || c.Group != group {
		t.Fatalf("Consumer(%q) = %+v, %v; want offset %d at index %d", group, c, err, offset, index)
	}
}

func TestCommitOffsetRules(t *testing.T) {
	db := openTest(t)
	if _, err := db.Reads().Consumer("billing"); !errors.Is(err, ErrConsumerNotFound) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("Consumer() before any = %v, want ErrConsumerNotFound", err)
	}
	if _, ok := db.Reads().MinConsumerOffset(); ok {
		t.Fatal("MinConsumerOffset() with no groups reports one")
	}
	wantCommitted(t, applyOne(t, db, entryAt(1, KindTx, t0+sec, 0, EncodeTx(Tx{ID: 1, Ops: []Op{offset("billing", 5)}}))))
	wantOffset(t, db, "billing", 5, 1)
	if c, _ := db.Reads().Consumer("billing"); c.Time != t0+sec {
		t.Fatalf("Consumer().Time = %d, want the entry's time %d", c.Time, t0+sec)
	}
	// Equal and backward: rejected, naming the group and the current offset.
	wantOffsetConflict(t, applyOne(t, db, txEntry(2, 2, "", offset("billing", 5))), "billing", 5, 5)
	wantOffsetConflict(t, applyOne(t, db, txEntry(3, 3, "", offset("billing", 4))), "billing", 4, 5)
	wantOffset(t, db, "billing", 5, 1)
	// Forward.
	wantCommitted(t, applyOne(t, db, txEntry(4, 4, "", offset("billing", 9))))
	wantOffset(t, db, "billing", 9, 4)
	// Reset moves back, to 0 too.
	wantCommitted(t, applyOne(t, db, txEntry(5, 5, "", reset("billing", 2))))
	wantOffset(t, db, "billing", 2, 5)
	wantCommitted(t, applyOne(t, db, txEntry(6, 6, "", reset("billing", 0))))
	wantOffset(t, db, "billing", 0, 6)
	// A new group's first commit of offset 1; 0 without reset never decodes.
	wantCommitted(t, applyOne(t, db, txEntry(7, 7, "", offset("audit", 1))))
	// Two ops on one group: the second sees the first.
	wantOffsetConflict(t, applyOne(t, db, txEntry(8, 8, "", offset("audit", 3), offset("audit", 3))), "audit", 3, 3)
	wantOffset(t, db, "audit", 1, 7)
	wantCommitted(t, applyOne(t, db, txEntry(9, 9, "", offset("audit", 3), offset("audit", 4))))
	wantOffset(t, db, "audit", 4, 9)

	got, err := db.Reads().Consumers()
	want := []Consumer{{Group: "audit", Offset: 4, Index: 9, Time: t0}, {Group: "billing", Offset: 0, Index: 6, Time: t0}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Consumers() = %+v, %v; want %+v", got, err, want)
	}
	if low, ok := db.Reads().MinConsumerOffset(); !ok || low != 0 {
		t.Fatalf("MinConsumerOffset() = %d, %v; want 0, true", low, ok)
	}
	// The rejected records read back with their conflict.
	rec, err := db.Reads().Tx(3)
	if err != nil || !reflect.DeepEqual(rec.Conflict, &Conflict{Group: "billing", Expected: 4, Actual: 5}) {
		t.Fatalf("Tx(3) = %+v (conflict %+v), %v", rec, rec.Conflict, err)
	}
}

// TestCommitOffsetAtomic: the offset moves with the transaction's other ops
// or not at all.
func TestCommitOffsetAtomic(t *testing.T) {
	db := openTest(t)
	wantCommitted(t, applyOne(t, db, txEntry(1, 1, "", put("k", "1"), offset("g", 3))))
	wantOffset(t, db, "g", 3, 1)
	// A failed if_version after the op, and before it: the offset stays.
	r := applyOne(t, db, txEntry(2, 2, "", offset("g", 4), ifv(put("k", "2"), 7)))
	if r.Outcome.Status != StatusRejected || r.Outcome.Conflict.Key != "k" {
		t.Fatalf("tx = %+v, want rejected by k", r.Outcome)
	}
	r = applyOne(t, db, txEntry(3, 3, "", ifv(put("k", "2"), 7), offset("g", 4)))
	if r.Outcome.Status != StatusRejected || r.Outcome.Conflict.Key != "k" {
		t.Fatalf("tx = %+v, want rejected by k", r.Outcome)
	}
	wantOffset(t, db, "g", 3, 1)
	// A refused offset leaves the puts undone.
	wantOffsetConflict(t, applyOne(t, db, txEntry(4, 4, "", put("k", "3"), offset("g", 2))), "g", 2, 3)
	if kv := mustGet(t, db, "k"); kv.Version != 1 {
		t.Fatalf("k = %+v, want version 1", kv)
	}
	// A key named like the group is another thing: its put and value stay.
	r = applyOne(t, db, txEntry(5, 5, "", put("g", `"v"`), offset("g", 8)))
	wantCommitted(t, r)
	if !reflect.DeepEqual(r.Outcome.Versions, map[string]uint64{"g": 1}) {
		t.Fatalf("Versions = %v, want only the key g", r.Outcome.Versions)
	}
	if kv := mustGet(t, db, "g"); string(kv.Value) != `"v"` {
		t.Fatalf("g = %+v", kv)
	}
	wantOffset(t, db, "g", 8, 5)
}

// TestCommitOffsetFenced: a consumer whose lease was taken over moves no
// offset and writes no effect, however late its transaction comes.
func TestCommitOffsetFenced(t *testing.T) {
	db := openTest(t)
	leaseOut(t, db, leaseEntry(1, t0, acquire("consumer/billing", "a", 5*time.Second)))
	wantCommitted(t, applyOne(t, db, fencedEntry(2, t0, 1, "consumer/billing", 1, put("out", "1"), offset("billing", 10))))
	// a's lease expires and b takes it over.
	wantLease(t, leaseOut(t, db, leaseEntry(3, t0+10*sec, acquire("consumer/billing", "b", 5*time.Second))), LeaseGranted, "b", 3)
	wantFenced(t, applyOne(t, db, fencedEntry(4, t0+10*sec, 2, "consumer/billing", 1, put("out", "2"), offset("billing", 20))), "consumer/billing", 1, 3)
	wantOffset(t, db, "billing", 10, 2)
	if kv := mustGet(t, db, "out"); kv.Version != 1 {
		t.Fatalf("out = %+v, want version 1", kv)
	}
	wantCommitted(t, applyOne(t, db, fencedEntry(5, t0+10*sec, 3, "consumer/billing", 3, offset("billing", 11))))
	wantOffset(t, db, "billing", 11, 5)
}

// TestConsumersSurviveSnapshotReopen: the consumers bucket is in the bbolt
// file, so Restore and a reopen keep every group; a store with no groups has
// no bucket.
func TestConsumersSurviveSnapshotReopen(t *testing.T) {
	dir := t.TempDir()
	a := openAt(t, filepath.Join(dir, "a.db"))
	applyOK(t, a, txEntry(1, 1, "", put("k", "1")))
	if _, ok := dump(t, a)["consumers"]; ok {
		t.Fatal("a plain transaction made the consumers bucket")
	}
	applyOK(t, a, txEntry(2, 2, "", offset("g", 7)), txEntry(3, 3, "", offset("h", 2)))
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	want, _ := a.Reads().Consumers()

	path := filepath.Join(dir, "b.db")
	b := openAt(t, path)
	applyOK(t, b, txEntry(1, 9, "", offset("z", 1))) // state the restore replaces
	if err := b.Restore(&buf); err != nil {
		t.Fatalf("Restore() = %v", err)
	}
	if got, err := b.Reads().Consumers(); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("restored Consumers() = %+v, %v; want %+v", got, err, want)
	}
	wantOffsetConflict(t, applyOne(t, b, txEntry(4, 4, "", offset("g", 7))), "g", 7, 7)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	c := openAt(t, path)
	if got, err := c.Reads().Consumers(); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Consumers() after reopen = %+v, %v; want %+v", got, err, want)
	}
	if low, ok := c.Reads().MinConsumerOffset(); !ok || low != 2 {
		t.Fatalf("MinConsumerOffset() = %d, %v; want 2, true", low, ok)
	}
}

// TestConsumersDeferredReads: with Config.CommitInterval, the reads see an
// offset Apply left in its open transaction, before and after the commit.
func TestConsumersDeferredReads(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"), Config{NoSync: true, CommitInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	applyOK(t, db, txEntry(1, 1, "", offset("g", 1)))
	wantOffset(t, db, "g", 1, 1)
	applyOK(t, db, txEntry(2, 2, "", offset("g", 5)))
	wantOffset(t, db, "g", 5, 2) // committed state has 1 or nothing; the open transaction 5
	if got, err := db.Reads().Consumers(); err != nil || len(got) != 1 || got[0].Offset != 5 {
		t.Fatalf("Consumers() = %+v, %v; want g at 5", got, err)
	}
	if low, ok := db.Reads().MinConsumerOffset(); !ok || low != 5 {
		t.Fatalf("MinConsumerOffset() = %d, %v; want 5", low, ok)
	}
}

// TestCommitOffsetKeyNamedLikeGroup: a key's value read back from the log
// record at its mod index (after a flush, a reopen, a restore) skips an
// OpCommitOffset of a group with the key's name.
func TestCommitOffsetKeyNamedLikeGroup(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openAt(t, path)
	applyOK(t, db, txEntry(1, 1, "", put("g", `"v"`), offset("g", 8)))
	if err := db.Close(); err != nil { // writes the overlay into kv: the value is read from the log
		t.Fatal(err)
	}
	db = openAt(t, path)
	if kv := mustGet(t, db, "g"); string(kv.Value) != `"v"` || kv.Version != 1 {
		t.Fatalf("g after reopen = %+v, want \"v\" at version 1", kv)
	}
	wantOffset(t, db, "g", 8, 1)
}
