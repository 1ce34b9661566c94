package store

import (
	"errors"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
)

// txAt is a tx entry at index with leader time at and dedup window w.
func txAt(index uint64, at int64, w time.Duration, id txid.ID, idem string, ops ...Op) Entry {
	return entryAt(index, KindTx, at, w, EncodeTx(Tx{ID: id, IdempotencyKey: idem, Ops: ops}))
}

// known reports whether the dedup tables still know id (by txid and, if idem is
// not empty, by idempotency key), failing the test if they disagree.
func known(t *testing.T, db *DB, id txid.ID, idem string) bool {
	t.Helper()
	_, err := db.Reads().Tx(id)
	byID := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		t.Fatalf("Tx(%d) = %v", id, err)
	}
	if idem != "" {
		_, err := db.Reads().TxByIdempotencyKey(idem)
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatalf("TxByIdempotencyKey(%q) = %v", idem, err)
		}
		if byKey := err == nil; byKey != byID {
			t.Fatalf("txid %d known by id %v, by key %q %v", id, byID, idem, byKey)
		}
	}
	return byID
}

func TestPruneWindow(t *testing.T) {
	tests := []struct {
		name   string
		window time.Duration // stamped in every entry
		keep   time.Duration // the effective window
	}{
		{"default", 0, DefaultDedupWindow},
		{"negative means default", -time.Second, DefaultDedupWindow},
		{"one hour", time.Hour, time.Hour},
		{"one nanosecond", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openTest(t)
			w := tt.window
			applyOne(t, db, txAt(1, t0, w, 1, "k1", put("a", "1")))
			applyOne(t, db, txAt(2, t0+int64(tt.keep)/2+1, w, 2, "k2", put("a", "2")))

			// At exactly t0+window the first record is as old as the window: kept.
			applyOne(t, db, txAt(3, t0+int64(tt.keep), w, 3, "", put("b", "1")))
			if !known(t, db, 1, "k1") {
				t.Fatalf("tx 1 pruned at t0+window, want kept until after it")
			}

			// One nanosecond later it is gone; the second is not.
			applyOne(t, db, txAt(4, t0+int64(tt.keep)+1, w, 4, "", put("b", "2")))
			if known(t, db, 1, "k1") {
				t.Fatalf("tx 1 still known after t0+window")
			}
			if !known(t, db, 2, "k2") {
				t.Fatalf("tx 2 pruned too early")
			}

			// The log keeps the pruned record.
			recs, _, err := db.Reads().Log(1, 1)
			if err != nil || len(recs) != 1 || recs[0].TxID != 1 {
				t.Fatalf("Log(1, 1) = %+v, %v; want tx 1", recs, err)
			}

			// A resubmission after the window applies anew.
			res := applyOne(t, db, txAt(5, t0+int64(tt.keep)+1, w, 1, "k1", put("a", "3")))
			if res.Duplicate || res.Outcome.Index != 5 || res.Outcome.Versions["a"] != 3 {
				t.Fatalf("resubmission after the window = %+v, want a new outcome at index 5", res)
			}
		})
	}
}

// TestPruneOlderTime checks that only the max leader time drives pruning: an entry
// from a leader with a slower clock neither brings records back nor prunes more.
func TestPruneOlderTime(t *testing.T) {
	db := openTest(t)
	hour := int64(time.Hour)
	w := time.Hour
	applyOne(t, db, txAt(1, t0, w, 1, "k1", put("a", "1")))
	applyOne(t, db, txAt(2, t0+hour/2, w, 2, "k2", put("a", "2")))
	applyOne(t, db, txAt(3, t0+hour+1, w, 3, "k3", put("a", "3"))) // prunes 1
	if known(t, db, 1, "k1") || !known(t, db, 2, "k2") {
		t.Fatalf("after t0+1h: tx 1 known %v, tx 2 known %v; want false, true", known(t, db, 1, "k1"), known(t, db, 2, "k2"))
	}

	// A slow leader: its time is far behind, so cutoff stays at t0+1ns.
	res := applyOne(t, db, txAt(4, t0-10*hour, w, 4, "k4", put("a", "4")))
	if res.Outcome.Time != t0-10*hour {
		t.Fatalf("Outcome.Time = %d, want the entry's time %d", res.Outcome.Time, t0-10*hour)
	}
	if known(t, db, 1, "k1") {
		t.Fatalf("an older leader time brought back a pruned record")
	}
	if !known(t, db, 2, "k2") || !known(t, db, 3, "k3") {
		t.Fatalf("an older leader time pruned more")
	}
	// Its record is filed under the max time seen, so it lasts a whole window
	// from then, not from its own (older) time.
	applyOne(t, db, txAt(5, t0+2*hour+1, w, 5, "", put("b", "1")))
	if !known(t, db, 4, "k4") {
		t.Fatalf("record of the slow leader's tx pruned within its window")
	}
	if known(t, db, 2, "k2") {
		t.Fatalf("tx 2 still known after its window")
	}

	// A resubmission by the slow leader's clients is still a duplicate.
	if res := applyOne(t, db, txAt(6, t0-10*hour, w, 40, "k4", put("a", "4"))); !res.Duplicate {
		t.Fatalf("resubmission of k4 = %+v, want Duplicate", res)
	}
}

// TestPruneWindowChange checks that the window of the entry being applied sets
// the cutoff.
func TestPruneWindowChange(t *testing.T) {
	db := openTest(t)
	applyOne(t, db, txAt(1, t0, 24*time.Hour, 1, "", put("a", "1")))
	applyOne(t, db, txAt(2, t0+int64(2*time.Hour), 24*time.Hour, 2, "", put("a", "2")))
	if !known(t, db, 1, "") {
		t.Fatalf("tx 1 pruned within a 24h window")
	}
	// The leader's configuration now says one hour.
	applyOne(t, db, txAt(3, t0+int64(2*time.Hour), time.Hour, 3, "", put("a", "3")))
	if known(t, db, 1, "") || !known(t, db, 2, "") {
		t.Fatalf("with a 1h window at t0+2h: tx 1 known %v, tx 2 known %v; want false, true", known(t, db, 1, ""), known(t, db, 2, ""))
	}
}

// TestPruneBounded checks that one entry prunes at most maxPrunePerEntry records
// and the next entries prune the rest.
func TestPruneBounded(t *testing.T) {
	db := openTest(t)
	const n = maxPrunePerEntry + 500
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = txAt(uint64(i+1), t0+int64(i), time.Hour, txid.ID(i+1), "", put("a", "1"))
	}
	applyOK(t, db, entries...)
	if got := len(dump(t, db)["dedup_time"]); got != n {
		t.Fatalf("dedup records = %d, want %d", got, n)
	}

	late := t0 + int64(24*time.Hour)
	applyOne(t, db, txAt(n+1, late, time.Hour, n+1, "", put("b", "1")))
	if got, want := len(dump(t, db)["dedup_time"]), n-maxPrunePerEntry+1; got != want {
		t.Fatalf("dedup records after one entry = %d, want %d", got, want)
	}
	if known(t, db, maxPrunePerEntry, "") || !known(t, db, maxPrunePerEntry+1, "") {
		t.Fatalf("pruning did not go oldest first")
	}
	applyOne(t, db, txAt(n+2, late, time.Hour, n+2, "", put("b", "2")))
	d := dump(t, db)
	for _, bucket := range []string{"dedup_time", "txs"} {
		if got := len(d[bucket]); got != 2 {
			t.Fatalf("%s records after two entries = %d, want 2", bucket, got)
		}
	}
}

// TestPruneBoundedInBatch is TestPruneBounded with the two late entries in one
// Apply: the second entry goes on where the first stopped.
func TestPruneBoundedInBatch(t *testing.T) {
	db := openTest(t)
	const n = maxPrunePerEntry + 500
	entries := make([]Entry, n)
	for i := range entries {
		entries[i] = txAt(uint64(i+1), t0+int64(i), time.Hour, txid.ID(i+1), "", put("a", "1"))
	}
	applyOK(t, db, entries...)
	late := t0 + int64(24*time.Hour)
	applyOK(t, db,
		txAt(n+1, late, time.Hour, n+1, "", put("b", "1")),
		txAt(n+2, late, time.Hour, n+2, "", put("b", "2")),
		txAt(n+3, late+int64(2*time.Hour), time.Hour, n+3, "", put("b", "3")), // prunes n+1, n+2
	)
	d := dump(t, db)
	for _, bucket := range []string{"dedup_time", "txs"} {
		if got := len(d[bucket]); got != 1 {
			t.Fatalf("%s records after the late entries = %d, want 1", bucket, got)
		}
	}
}

// TestPruneReusedKey checks that pruning an old record does not drop an
// idempotency key that a newer transaction has recorded since.
func TestPruneReusedKey(t *testing.T) {
	db := openTest(t)
	hour := int64(time.Hour)
	applyOne(t, db, txAt(1, t0, time.Hour, 1, "k", put("a", "1")))
	// Both the key and the tx 1 record are past the window; entry 2 prunes tx 1
	// first and then records tx 2 under the same key.
	res := applyOne(t, db, txAt(2, t0+2*hour, time.Hour, 2, "k", put("a", "2")))
	if res.Duplicate {
		t.Fatalf("key reuse after the window = duplicate, want a new outcome")
	}
	o, err := db.Reads().TxByIdempotencyKey("k")
	if err != nil || o.TxID != 2 {
		t.Fatalf("TxByIdempotencyKey(k) = %+v, %v; want tx 2", o, err)
	}
}
