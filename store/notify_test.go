package store

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/txlog/txlog/txid"
	bolt "go.etcd.io/bbolt"
)

func notifyEntry(index uint64, id txid.ID, idem, url string, ops ...Op) Entry {
	return entryAt(index, KindTx, t0, 0, EncodeTx(Tx{ID: id, IdempotencyKey: idem, Notify: url, Ops: ops}))
}

func deliveries(t *testing.T, db *DB) []Delivery {
	t.Helper()
	d, err := db.Reads().Deliveries(0, 0)
	if err != nil {
		t.Fatalf("Deliveries() = %v", err)
	}
	return d
}

// TestNotifyTxLayout pins the version 3 layout drawn above EncodeTx, with
// and without a fence, and that a transaction without notify keeps its bytes.
func TestNotifyTxLayout(t *testing.T) {
	tx := Tx{ID: 0x0102030405060708, IdempotencyKey: "ik", Notify: "u", Ops: []Op{del("d")}}
	want := []byte{
		3,                                   // version
		1, 2, 3, 4, 5, 6, 7, 8, 2, 'i', 'k', // txid, idem key
		2,      // flags: notify
		1, 'u', // url
		1,            // op count
		2, 0, 1, 'd', // delete
	}
	if b := EncodeTx(tx); !bytes.Equal(b, want) {
		t.Fatalf("EncodeTx() = %v, want %v", b, want)
	}
	tx.Fence = &Fence{Lease: "l", Token: 300}
	want = []byte{3, 1, 2, 3, 4, 5, 6, 7, 8, 2, 'i', 'k', 3, 1, 'l', 0xac, 0x02, 1, 'u', 1, 2, 0, 1, 'd'}
	b := EncodeTx(tx)
	if !bytes.Equal(b, want) {
		t.Fatalf("EncodeTx() with a fence = %v, want %v", b, want)
	}
	if got, err := DecodeTx(b); err != nil || !reflect.DeepEqual(got, tx) {
		t.Fatalf("DecodeTx() = %+v, %v; want %+v", got, err, tx)
	}
	plain := Tx{ID: 0x0102030405060708, IdempotencyKey: "ik", Ops: []Op{del("d")}}
	if b := EncodeTx(plain); !bytes.Equal(b, []byte{1, 1, 2, 3, 4, 5, 6, 7, 8, 2, 'i', 'k', 1, 2, 0, 1, 'd'}) {
		t.Fatalf("EncodeTx() without notify = %v; want version 1 bytes", b)
	}
	for name, bad := range map[string][]byte{
		"no notify flag": {3, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 1, 2, 0, 1, 'd'},
		"unknown flag":   {3, 1, 2, 3, 4, 5, 6, 7, 8, 0, 6, 1, 'u', 1, 2, 0, 1, 'd'},
		"empty url":      {3, 1, 2, 3, 4, 5, 6, 7, 8, 0, 2, 0, 1, 2, 0, 1, 'd'},
	} {
		if _, err := DecodeTx(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeTx(%s) = %v, want ErrCorrupt", name, err)
		}
		if _, err := CheckTx(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("CheckTx(%s) = %v, want ErrCorrupt", name, err)
		}
	}
	a := EncodeTx(Tx{ID: 1, IdempotencyKey: "k", Notify: "http://a/", Ops: []Op{del("d")}})
	c := EncodeTx(Tx{ID: 2, IdempotencyKey: "k", Notify: "http://a/", Ops: []Op{del("d")}})
	if !SameTx(a, c) {
		t.Fatal("SameTx of the same tx with the same notify under two txids = false")
	}
}

// TestNotifyDeliveries: a committed and a rejected transaction with a url each
// add a delivery, a duplicate adds none, a plain transaction never creates
// the bucket, KindNotifyDone removes them, and reopen, snapshot and restore
// keep the pending ones.
func TestNotifyDeliveries(t *testing.T) {
	db := openTest(t)
	applyOK(t, db, txEntry(1, 1, "", put("a", "1")))
	if err := db.viewApplied(func(tx *bolt.Tx) (bool, error) {
		if tx.Bucket(bucketNotify) != nil {
			t.Error("a plain transaction created the notify bucket")
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	res := applyOK(t, db,
		notifyEntry(2, 2, "k2", "http://127.0.0.1:1/a", put("b", "1")),
		notifyEntry(3, 3, "", "http://127.0.0.1:1/b", ifv(put("a", "2"), 7)), // rejected
		notifyEntry(4, 4, "k2", "http://127.0.0.1:1/a", put("b", "1")),       // duplicate
		notifyEntry(5, 2, "k2", "http://127.0.0.1:1/a", put("b", "1")),       // duplicate txid
		txEntry(6, 6, "", put("c", "1")),
	)
	if !res[2].Duplicate || !res[3].Duplicate {
		t.Fatalf("resubmissions not duplicates: %+v", res)
	}
	got := deliveries(t, db)
	want := []Delivery{
		{URL: "http://127.0.0.1:1/a", Outcome: Outcome{TxID: 2, IdempotencyKey: "k2", Index: 2, Time: t0, Status: StatusCommitted}},
		{URL: "http://127.0.0.1:1/b", Outcome: Outcome{TxID: 3, Index: 3, Time: t0, Status: StatusRejected, Conflict: &Conflict{Key: "a", Expected: 7, Actual: 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Deliveries() = %+v\nwant %+v", got, want)
	}
	if d, err := db.Reads().Deliveries(2, 1); err != nil || len(d) != 1 || d[0].Outcome.Index != 3 {
		t.Fatalf("Deliveries(2, 1) = %+v, %v; want the one at 3", d, err)
	}

	// Snapshot with both pending, then finish the first.
	var snap bytes.Buffer
	writeSnapshot(t, db, &snap)
	applyOK(t, db, entryAt(7, KindNotifyDone, t0, 0, EncodeNotifyDone([]uint64{2, 99})))
	if got := deliveries(t, db); len(got) != 1 || got[0].Outcome.Index != 3 {
		t.Fatalf("after done(2): %+v; want the one at 3", got)
	}
	path := db.path
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := deliveries(t, openAt(t, path)); len(got) != 1 || got[0].Outcome.Index != 3 {
		t.Fatalf("after reopen: %+v; want the one at 3", got)
	}
	restored := openTest(t)
	if err := restored.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	if got := deliveries(t, restored); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restore: %+v\nwant %+v", got, want)
	}
}

func TestNotifyDoneCodec(t *testing.T) {
	in := []uint64{1, 300, 1 << 40}
	if got, err := DecodeNotifyDone(EncodeNotifyDone(in)); err != nil || !reflect.DeepEqual(got, in) {
		t.Fatalf("DecodeNotifyDone(EncodeNotifyDone()) = %v, %v", got, err)
	}
	for _, bad := range [][]byte{{}, {2, 0}, {1, 2, 1}, {1, 1, 1, 0}, {1, 0xff, 0xff, 0xff, 0xff, 0x0f}} {
		if _, err := DecodeNotifyDone(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeNotifyDone(%v) = %v, want ErrCorrupt", bad, err)
		}
	}
	emptyFence := append([]byte{1}, make([]byte, 16)...)
	if _, err := decodeDelivery(1, append(emptyFence, 0, 2, 2, 0, 0, 0, 1, 'u')); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decodeDelivery(empty fence conflict) = %v, want ErrCorrupt", err)
	}
	dl := []byte(encodeDelivery("u", Outcome{TxID: 1, Status: 9}))
	if _, err := decodeDelivery(1, dl); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decodeDelivery(status 9) = %v, want ErrCorrupt", err)
	}
}

// FuzzDecodeNotify checks the decoders of KindNotifyDone payloads and of
// delivery records: they never panic, refuse with ErrCorrupt, and what they
// accept encodes back to the same bytes.
func FuzzDecodeNotify(f *testing.F) {
	f.Add(EncodeNotifyDone([]uint64{3, 9}))
	f.Add(encodeDelivery("http://127.0.0.1/", Outcome{TxID: 1, Status: StatusRejected, Conflict: &Conflict{Fence: "l", Expected: 2, Actual: 3}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if idx, err := DecodeNotifyDone(b); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeNotifyDone() = %v, want ErrCorrupt", err)
			}
		} else if enc := EncodeNotifyDone(idx); !bytes.Equal(enc, b) {
			t.Fatalf("EncodeNotifyDone(DecodeNotifyDone(b)) = %x, want %x", enc, b)
		}
		if d, err := decodeDelivery(7, b); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeDelivery() = %v, want ErrCorrupt", err)
			}
		} else if enc := encodeDelivery(d.URL, d.Outcome); !bytes.Equal(enc, b) {
			t.Fatalf("encodeDelivery(decodeDelivery(b)) = %x, want %x", enc, b)
		}
	})
}
