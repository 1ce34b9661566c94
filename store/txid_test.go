package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestTxIDConflict checks that a txid names one transaction: an entry under a
// recorded txid with other bytes is refused (Result.TxIDConflict), never
// committed nor a duplicate, in one batch and across batches, after a reopen
// and after a snapshot restore, while the same bytes stay a duplicate.
func TestTxIDConflict(t *testing.T) {
	orig := []Op{put("a", "1")}
	others := []struct {
		name string
		idem string
		ops  []Op
	}{
		{"other value", "", []Op{put("a", "2")}},
		{"other key", "", []Op{put("b", "1")}},
		{"extra op", "", []Op{put("a", "1"), del("c")}},
		{"with an idempotency key", "k", orig},
		{"precondition added", "", []Op{ifv(put("a", "1"), 0)}},
	}
	type via int
	const (
		separate via = iota
		batched
		reopened
		restored
	)
	for _, tt := range others {
		for _, how := range []via{separate, batched, reopened, restored} {
			name := fmt.Sprintf("%s/%v", tt.name, []string{"separate", "batched", "reopened", "restored"}[how])
			t.Run(name, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "state.db")
				db := openAt(t, path)
				first := txEntry(1, 7, "", orig...)
				other := txEntry(2, 7, tt.idem, tt.ops...)
				same := txEntry(3, 7, "", orig...)
				var res []Result
				switch how {
				case batched:
					res = applyOK(t, db, first, other, same)
				case separate:
					res = append(applyOK(t, db, first), applyOne(t, db, other), applyOne(t, db, same))
				case reopened, restored:
					res = applyOK(t, db, first)
					if how == reopened {
						if err := db.Close(); err != nil {
							t.Fatal(err)
						}
						db = openAt(t, path)
					} else {
						var buf bytes.Buffer
						writeSnapshot(t, db, &buf)
						db = openTest(t)
						if err := db.Restore(&buf); err != nil {
							t.Fatalf("Restore() = %v", err)
						}
					}
					res = append(res, applyOne(t, db, other), applyOne(t, db, same))
				}
				if r := res[0]; r.TxIDConflict || r.Duplicate || r.Outcome.Status != StatusCommitted {
					t.Fatalf("original = %+v, want a new committed outcome", r)
				}
				if r := res[1]; !r.TxIDConflict || r.Duplicate || r.Reused || r.Err != nil || r.Kind != KindTx ||
					!reflect.DeepEqual(r.Outcome, res[0].Outcome) {
					t.Fatalf("other bytes under the txid = %+v, want TxIDConflict with the original outcome %+v", r, res[0].Outcome)
				}
				if r := res[2]; r.TxIDConflict || !r.Duplicate || !reflect.DeepEqual(r.Outcome, res[0].Outcome) {
					t.Fatalf("same bytes under the txid = %+v, want a duplicate", r)
				}
				if got := testutil.ToFloat64(db.txidConflicts); got != 1 {
					t.Fatalf("txlog_txid_conflicts_total = %v, want 1", got)
				}
				// Nothing of the refused entry is recorded: compared with a
				// store that never saw it, only the applied index differs.
				ref := openTest(t)
				applyOK(t, ref, first, same)
				got, want := dump(t, db), dump(t, ref)
				delete(got, "meta")
				delete(want, "meta")
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("state after the refused entry:\n got %v\nwant %v", got, want)
				}
				otherTx := EncodeTx(Tx{ID: 7, IdempotencyKey: tt.idem, Ops: tt.ops})
				if _, err := db.Reads().TxFor(7, otherTx); !errors.Is(err, ErrTxIDConflict) {
					t.Fatalf("TxFor(7, other) = %v, want ErrTxIDConflict", err)
				}
				for _, p := range [][]byte{nil, EncodeTx(Tx{ID: 7, Ops: orig})} {
					if o, err := db.Reads().TxFor(7, p); err != nil || o.Index != 1 {
						t.Fatalf("TxFor(7, %x) = %+v, %v; want the record at index 1", p, o, err)
					}
				}
			})
		}
	}
}

// TestTxIDConflictAlias checks the txid of a resubmission under an
// idempotency key (an alias of the original's record): the same transaction
// under it is a duplicate, another is refused.
func TestTxIDConflictAlias(t *testing.T) {
	db := openTest(t)
	res := applyOK(t, db,
		txEntry(1, 1, "k", put("a", "1")),
		txEntry(2, 2, "k", put("a", "1")), // an alias: txid 2 names txid 1's transaction
		txEntry(3, 2, "k", put("a", "1")),
		txEntry(4, 2, "", put("a", "1")),
	)
	if r := res[1]; !r.Duplicate || r.Outcome.TxID != 1 {
		t.Fatalf("resubmission under the key = %+v, want a duplicate of txid 1", r)
	}
	if r := res[2]; !r.Duplicate || r.TxIDConflict {
		t.Fatalf("the alias's txid, same transaction = %+v, want a duplicate", r)
	}
	if r := res[3]; !r.TxIDConflict || r.Duplicate || r.Outcome.TxID != 1 {
		t.Fatalf("the alias's txid, other bytes (no key) = %+v, want TxIDConflict naming txid 1", r)
	}
	if _, err := db.Reads().TxFor(2, EncodeTx(Tx{ID: 2, IdempotencyKey: "k", Ops: []Op{put("a", "1")}})); err != nil {
		t.Fatalf("TxFor(alias, same) = %v, want the original", err)
	}
}
