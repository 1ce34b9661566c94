package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

// openRetain opens a DB at path with retention r and a kv flush every few
// records, so that kv_applied moves and records can go.
func openRetain(t testing.TB, path string, r Retention) *DB {
	t.Helper()
	db, err := Open(path, Config{NoSync: true, Retention: r, KVFlushRecords: 4, KVFlushStepKeys: 2})
	if err != nil {
		t.Fatalf("Open(%s) = %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// logCount returns the number of records in the log bucket.
func logCount(t testing.TB, db *DB) int {
	t.Helper()
	n := 0
	err := db.view(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketLog).Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func firstIndex(t testing.TB, db *DB) uint64 {
	t.Helper()
	f, err := db.Reads().FirstIndex()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// wantKeys checks db's keys against model (key → version, value).
func wantKeys(t *testing.T, db *DB, model map[string]KV, what string) {
	t.Helper()
	for k, want := range model {
		got, err := db.Reads().Get(k)
		if want.Version == 0 {
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("%s: Get(%q) = %+v, %v; want ErrNotFound", what, k, got, err)
			}
			continue
		}
		if err != nil || got.Version != want.Version || got.ModIndex != want.ModIndex || !bytes.Equal(got.Value, want.Value) {
			t.Fatalf("%s: Get(%q) = %+v, %v; want %+v", what, k, got, err, want)
		}
	}
}

const ms = int64(time.Millisecond)

// TestRetainLiveKeys overwrites a few keys many times under a short dedup
// window and a retention of 20 entries: old records go, the first index
// moves, and every live key keeps its value and version, a key written once
// at the start included, after a reopen and a restore too; a deleted key's
// records go.
func TestRetainLiveKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openRetain(t, path, Retention{Entries: 20})
	w := 10 * time.Millisecond
	model := map[string]KV{}
	apply := func(i uint64, ops ...Op) {
		res := applyOne(t, db, txAt(i, t0+int64(i)*ms, w, txid.ID(i), fmt.Sprintf("k%d", i), ops...))
		if res.Outcome.Status != StatusCommitted {
			t.Fatalf("entry %d: %+v", i, res)
		}
		for _, op := range ops {
			kv := model[op.Key]
			switch op.Kind {
			case OpPut:
				model[op.Key] = KV{Key: op.Key, Value: op.Value, Version: kv.Version + 1, ModIndex: i}
			case OpDelete:
				model[op.Key] = KV{Key: op.Key}
			}
		}
	}
	apply(1, put("old", `"first"`))
	apply(2, put("gone", `"x"`))
	apply(3, del("gone"))
	for i := uint64(4); i <= 300; i++ {
		apply(i, put(fmt.Sprintf("k%d", i%3), fmt.Sprintf(`%d`, i)), put("twice", fmt.Sprintf(`%d`, i%2)))
	}
	if f := firstIndex(t, db); f < 200 {
		t.Fatalf("FirstIndex() = %d after 300 entries with retention 20, want it moved past 200", f)
	}
	if r, f := db.Reads().RetainedFrom(), firstIndex(t, db); r > f || r < 200 {
		t.Fatalf("RetainedFrom() = %d, FirstIndex() = %d: want the one past the last dropped record, past 200", r, f)
	}
	if n := logCount(t, db); n > 120 {
		t.Fatalf("%d log records with retention 20, want them dropped", n)
	}
	recs, _, err := db.Reads().Log(1, 5)
	if err != nil || len(recs) == 0 || recs[0].Index < 200 {
		t.Fatalf("Log(1, 5) = %+v, %v; want the first record past 200", recs, err)
	}
	wantKeys(t, db, model, "live")
	if kv := mustGet(t, db, "old"); string(kv.Value) != `"first"` || kv.Version != 1 || kv.ModIndex != 1 {
		t.Fatalf("old = %+v, want its first value, version 1, mod index 1", kv)
	}

	snap, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	other := openTest(t)
	if err := other.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, other, model, "restored")

	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openRetain(t, path, Retention{Entries: 20})
	wantKeys(t, db, model, "reopened")
	for i := uint64(301); i <= 400; i++ {
		apply(i, put(fmt.Sprintf("k%d", i%3), fmt.Sprintf(`%d`, i)))
	}
	wantKeys(t, db, model, "after more")
	if f := firstIndex(t, db); f < 300 {
		t.Fatalf("FirstIndex() = %d after reopen and 100 more, want past 300", f)
	}
}

// TestRetainKeepsRedo checks that no record after kv_applied goes: with no
// flush, nothing goes.
func TestRetainKeepsRedo(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "state.db"), Config{NoSync: true, Retention: Retention{Entries: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := uint64(1); i <= 50; i++ {
		applyOne(t, db, txAt(i, t0+int64(i)*ms, time.Millisecond, txid.ID(i), "", put("a", fmt.Sprint(i))))
	}
	if f := firstIndex(t, db); f != 1 {
		t.Fatalf("FirstIndex() = %d with every record after kv_applied, want 1", f)
	}
}

// TestRetainDedup checks that records a dedup record may point at stay:
// inside the window a resubmission by txid or by idempotency key is a
// duplicate and a reused key is refused, an alias made late in the
// original's window keeps the record after the original's own dedup record
// is pruned, and only once the dedup records are gone do the records go.
func TestRetainDedup(t *testing.T) {
	db := openRetain(t, filepath.Join(t.TempDir(), "state.db"), Retention{Entries: 1})
	w := time.Second
	sec := int64(time.Second)
	i := uint64(1)
	next := func(tm int64, id txid.ID, idem string, ops ...Op) Result {
		r := applyOne(t, db, txAt(i, tm, w, id, idem, ops...))
		i++
		return r
	}
	next(t0, 1, "key-a", put("a", "1"))
	// Fill up to 0.9 s: many records, all inside the window.
	for n := 0; n < 30; n++ {
		next(t0+int64(n)*30*ms, txid.ID(100+n), "", put("f", fmt.Sprint(n)))
	}
	if f := firstIndex(t, db); f != 1 {
		t.Fatalf("FirstIndex() = %d inside the dedup window, want 1", f)
	}
	if r := next(t0+900*ms, 1, "key-a", put("a", "1")); !r.Duplicate || r.Outcome.Index != 1 {
		t.Fatalf("same txid resubmitted = %+v, want a duplicate of index 1", r)
	}
	// Same key, same content, another txid: a duplicate, and an alias of 2.
	if r := next(t0+900*ms, 2, "key-a", put("a", "1")); !r.Duplicate || r.Outcome.Index != 1 {
		t.Fatalf("same key resubmitted = %+v, want a duplicate of index 1", r)
	}
	if r := next(t0+900*ms, 3, "key-a", put("a", "other")); !r.Reused {
		t.Fatalf("reused key = %+v, want Reused", r)
	}
	// At 1.5 s the original's dedup records are pruned, the alias's are not:
	// record 1 stays and Tx(2) answers it.
	for n := 0; n < 20; n++ {
		next(t0+1500*ms+int64(n)*ms, txid.ID(200+n), "", put("f", fmt.Sprint(n)))
	}
	if _, err := db.Reads().Tx(1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Tx(1) = %v at 1.5 s, want pruned", err)
	}
	if o, err := db.Reads().Tx(2); err != nil || o.Index != 1 {
		t.Fatalf("Tx(2) (the alias) = %+v, %v; want index 1", o, err)
	}
	if f := firstIndex(t, db); f != 1 {
		t.Fatalf("FirstIndex() = %d while an alias points at record 1, want 1", f)
	}
	if r := next(t0+1600*ms, 2, "key-a", put("a", "1")); !r.Duplicate || r.Outcome.Index != 1 {
		t.Fatalf("the alias's txid resubmitted = %+v, want a duplicate of index 1", r)
	}
	// Well past two windows every dedup record of the start is gone, and so
	// are the records.
	for n := 0; n < 60; n++ {
		next(t0+2*sec+int64(n)*100*ms, txid.ID(300+n), "", put("f", fmt.Sprint(n)))
	}
	if f := firstIndex(t, db); f <= 1 {
		t.Fatalf("FirstIndex() = %d past two windows, want it moved", f)
	}
	if kv := mustGet(t, db, "a"); string(kv.Value) != "1" || kv.Version != 1 {
		t.Fatalf("a = %+v, want value 1 version 1", kv)
	}
}

// TestRetainBounded checks that one Apply drops at most maxRetainPerApply
// records, and later Applies the rest.
func TestRetainBounded(t *testing.T) {
	defer func(n int) { maxRetainPerApply = n }(maxRetainPerApply)
	maxRetainPerApply = 5
	path := filepath.Join(t.TempDir(), "state.db")
	db := openRetain(t, path, Retention{})
	var batch []Entry
	for i := uint64(1); i <= 100; i++ {
		batch = append(batch, txAt(i, t0+int64(i)*ms, time.Nanosecond, txid.ID(i), "", put(fmt.Sprint("k", i%4), fmt.Sprint(i))))
	}
	applyOK(t, db, batch...)
	db.Close()
	db = openRetain(t, path, Retention{Entries: 1})
	prev := logCount(t, db)
	for i := uint64(101); i <= 150; i++ {
		applyOne(t, db, txAt(i, t0+int64(i)*ms, time.Nanosecond, txid.ID(i), "", put("k0", fmt.Sprint(i))))
		n := logCount(t, db)
		if n < prev+1-5 {
			t.Fatalf("entry %d: %d records, %d before: more than 5 dropped by one Apply", i, n, prev)
		}
		prev = n
	}
	if prev > 70 {
		t.Fatalf("%d records after 50 Applies, want the old ones dropped 5 at a time", prev)
	}
}

// TestRetainConsumers checks that a consumer group's offset holds retention
// back with RespectConsumers, and not without.
func TestRetainConsumers(t *testing.T) {
	for _, respect := range []bool{true, false} {
		t.Run(fmt.Sprint("respect=", respect), func(t *testing.T) {
			db := openRetain(t, filepath.Join(t.TempDir(), "state.db"), Retention{Entries: 5, RespectConsumers: respect})
			applyOne(t, db, txAt(1, t0, time.Nanosecond, 1, "", offset("billing", 10)))
			for i := uint64(2); i <= 100; i++ {
				applyOne(t, db, txAt(i, t0+int64(i)*ms, time.Nanosecond, txid.ID(i), "", put("a", fmt.Sprint(i))))
			}
			f := firstIndex(t, db)
			if respect && f != 10 {
				t.Fatalf("FirstIndex() = %d with a group at offset 10, want 10", f)
			}
			if !respect && f < 50 {
				t.Fatalf("FirstIndex() = %d without RespectConsumers, want past 50", f)
			}
		})
	}
}

func TestParseRetention(t *testing.T) {
	good := map[string]Retention{
		"":            {},
		"off":         {},
		"1000":        {Entries: 1000},
		"24h":         {Age: 24 * time.Hour},
		"1000000,24h": {Entries: 1000000, Age: 24 * time.Hour},
		"1h, 5":       {Entries: 5, Age: time.Hour},
	}
	for s, want := range good {
		got, err := ParseRetention(s)
		if err != nil || got != want {
			t.Errorf("ParseRetention(%q) = %+v, %v; want %+v", s, got, err, want)
		}
		if again, err := ParseRetention(got.String()); err != nil || again != want {
			t.Errorf("ParseRetention(%q.String() = %q) = %+v, %v", s, got.String(), again, err)
		}
	}
	for _, s := range []string{"0", "-1", "1h,2h", "5,6", "soon", "1000,", "-1h"} {
		if r, err := ParseRetention(s); !errors.Is(err, ErrRetention) {
			t.Errorf("ParseRetention(%q) = %+v, %v; want ErrRetention", s, r, err)
		}
	}
}

// TestRetainSteady applies a transaction every 2 minutes of leader time for
// 5 days under the default dedup window (24h) and checks that the log never
// reaches back much more than two windows: the gates keep coming (a 32nd of
// the window apart), so records go steadily, not in rare large steps.
func TestRetainSteady(t *testing.T) {
	db := openRetain(t, filepath.Join(t.TempDir(), "state.db"), Retention{Entries: 10})
	step := int64(2 * time.Minute)
	limit := 2*24*time.Hour + 24*time.Hour/8
	for i := uint64(1); i <= 3600; i++ {
		at := t0 + int64(i)*step
		applyOne(t, db, txAt(i, at, 0, txid.ID(i), "", put(fmt.Sprint("k", i%5), fmt.Sprint(i))))
		if i%100 != 0 {
			continue
		}
		recs, _, err := db.Reads().Log(1, 1)
		if err != nil || len(recs) != 1 {
			t.Fatalf("Log(1, 1) = %+v, %v", recs, err)
		}
		if back := time.Duration(at - recs[0].Time); back > limit {
			t.Fatalf("at entry %d the log reaches back %s, want at most %s", i, back, limit)
		}
	}
	if f := firstIndex(t, db); f < 3600-uint64(limit/(2*time.Minute)) {
		t.Fatalf("FirstIndex() = %d at 3600", f)
	}
}
