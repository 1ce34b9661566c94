package store

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The fuzz targets check that a decoder either rejects its input with ErrCorrupt
// or accepts it, and then that the encoder gives back exactly the input (every
// value has one encoding) and that decoding that again gives the same value.
// Seeds are here and under testdata/fuzz/<FuzzName>/.

func FuzzDecodeTx(f *testing.F) {
	for _, tx := range []Tx{
		{ID: 1},
		{ID: 42, IdempotencyKey: "order-1", Ops: []Op{put("a", `{"n":1}`), ifv(del("b"), 2)}},
		{ID: 1 << 40, Ops: []Op{ifv(put("k", ""), 0), put("k", "[]")}},
		{ID: 7, IdempotencyKey: "run-1", Fence: &Fence{Lease: "consumer/billing", Token: 1 << 33}, Ops: []Op{put("a", "1")}},
		{ID: 8, Fence: &Fence{Lease: "l", Token: 1}},
		{ID: 9, Fence: &Fence{Lease: "consumer/billing", Token: 4}, Ops: []Op{put("a", "1"), offset("billing", 17)}},
		{ID: 10, Ops: []Op{reset("billing", 0)}},
		{ID: 11, Notify: "http://127.0.0.1:8080/cb", Ops: []Op{del("a")}},
		{ID: 12, IdempotencyKey: "n", Fence: &Fence{Lease: "l", Token: 2}, Notify: "https://hooks.example.com/x"},
	} {
		f.Add(EncodeTx(tx))
	}
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0xff, 0xff, 0x03})
	f.Fuzz(func(t *testing.T, b []byte) {
		tx, err := DecodeTx(b)
		// CheckTx agrees with DecodeTx: the same error, or the same txid.
		if id, cerr := CheckTx(b); (cerr == nil) != (err == nil) || cerr != nil && cerr.Error() != err.Error() || err == nil && id != tx.ID {
			t.Fatalf("CheckTx() = %v, %v; DecodeTx() = %v, %v", id, cerr, tx.ID, err)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeTx() = %v, want ErrCorrupt", err)
			}
			return
		}
		enc := EncodeTx(tx)
		if !bytes.Equal(enc, b) {
			t.Fatalf("EncodeTx(DecodeTx(b)) = %x, want %x", enc, b)
		}
		again, err := DecodeTx(enc)
		if err != nil {
			t.Fatalf("DecodeTx(EncodeTx(tx)) = %v", err)
		}
		if !reflect.DeepEqual(again, tx) {
			t.Fatalf("DecodeTx(EncodeTx(tx)) = %+v, want %+v", again, tx)
		}
	})
}

func FuzzDecodeCommand(f *testing.F) {
	f.Add(EncodeCommand(Command{Kind: KindTx, Time: t0, DedupWindow: time.Hour, Payload: EncodeTx(Tx{ID: 9})}))
	f.Add(EncodeCommand(Command{Kind: KindRegisterNode, Time: -1, Payload: EncodeNode(NodeInfo{ID: "n1"})}))
	f.Add([]byte{1, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(EncodeCommand(Command{Kind: KindLease, Time: t0, Payload: EncodeLeaseCommand(acquire("l", "h", time.Second))}))
	f.Add(EncodeCommand(Command{Kind: KindTx, Time: t0, Payload: EncodeTx(Tx{ID: 9, Fence: &Fence{Lease: "l", Token: 3}, Ops: []Op{del("a")}})}))
	f.Add([]byte{1, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(EncodeCommand(Command{Kind: KindNotifyDone, Time: t0, Payload: EncodeNotifyDone([]uint64{3, 9})}))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeCommand() = %v, want ErrCorrupt", err)
			}
			return
		}
		enc := EncodeCommand(c)
		if !bytes.Equal(enc, b) {
			t.Fatalf("EncodeCommand(DecodeCommand(b)) = %x, want %x", enc, b)
		}
		again, err := DecodeCommand(enc)
		if err != nil {
			t.Fatalf("DecodeCommand(EncodeCommand(c)) = %v", err)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("DecodeCommand(EncodeCommand(c)) = %+v, want %+v", again, c)
		}
		// The payload is decoded at apply time; that must not panic either.
		switch c.Kind {
		case KindTx:
			DecodeTx(c.Payload)
		case KindRegisterNode:
			DecodeNode(c.Payload)
		case KindLease:
			DecodeLeaseCommand(c.Payload)
		case KindNotifyDone:
			DecodeNotifyDone(c.Payload)
		}
	})
}

func FuzzDecodeNode(f *testing.F) {
	f.Add(EncodeNode(NodeInfo{ID: "n1", HTTPAddr: "127.0.0.1:8080", RaftAddr: "127.0.0.1:9090", TxIDNode: 1}))
	f.Add(EncodeNode(NodeInfo{ID: "x"}))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := DecodeNode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeNode() = %v, want ErrCorrupt", err)
			}
			return
		}
		enc := EncodeNode(n)
		if !bytes.Equal(enc, b) {
			t.Fatalf("EncodeNode(DecodeNode(b)) = %x, want %x", enc, b)
		}
		again, err := DecodeNode(enc)
		if err != nil || again != n {
			t.Fatalf("DecodeNode(EncodeNode(n)) = %+v, %v; want %+v", again, err, n)
		}
	})
}

// FuzzApply applies fuzzed entry data after a few valid entries and checks that
// Apply never fails or panics on it and always moves the applied index.
func FuzzApply(f *testing.F) {
	f.Add(EncodeCommand(Command{Kind: KindTx, Time: t0, Payload: EncodeTx(Tx{ID: 1, Ops: []Op{put("a", "1")}})}))
	f.Add(EncodeCommand(Command{Kind: KindTx, Time: t0, Payload: EncodeTx(Tx{ID: 2, IdempotencyKey: "ik", Ops: []Op{ifv(del("a"), 1)}})}))
	f.Add(EncodeCommand(Command{Kind: KindRegisterNode, Time: t0, Payload: EncodeNode(NodeInfo{ID: "n"})}))
	f.Add([]byte{1, 1})
	f.Add(EncodeCommand(Command{Kind: KindLease, Time: t0, Payload: EncodeLeaseCommand(acquire("l", "h", time.Second))}))
	f.Add(EncodeCommand(Command{Kind: KindLease, Time: t0, Payload: EncodeLeaseCommand(release("l", "h", 1))}))
	f.Add(EncodeCommand(Command{Kind: KindTx, Time: t0, Payload: EncodeTx(Tx{ID: 3, Fence: &Fence{Lease: "l", Token: 1}, Ops: []Op{put("a", "2")}})}))
	f.Add(EncodeCommand(Command{Kind: KindTx, Time: t0, Payload: EncodeTx(Tx{ID: 4, Ops: []Op{offset("g", 2), put("g", "1")}})}))
	f.Add(EncodeCommand(Command{Kind: KindTx, Time: t0, Payload: EncodeTx(Tx{ID: 5, Notify: "http://127.0.0.1/", Ops: []Op{put("a", "3")}})}))
	f.Add(EncodeCommand(Command{Kind: KindNotifyDone, Time: t0, Payload: EncodeNotifyDone([]uint64{1})}))
	db := openTest(f)
	var index uint64
	f.Fuzz(func(t *testing.T, data []byte) {
		index++
		if _, err := db.Apply([]Entry{{Index: index, Term: 1, Data: data}}); err != nil {
			t.Fatalf("Apply() = %v", err)
		}
		if got := db.AppliedIndex(); got != index {
			t.Fatalf("AppliedIndex() = %d, want %d", got, index)
		}
	})
}

func FuzzDecodeLeaseCommand(f *testing.F) {
	f.Add(EncodeLeaseCommand(acquire("consumer/billing", "host-1", 5*time.Second)))
	f.Add(EncodeLeaseCommand(LeaseCommand{Op: LeaseRenew, Name: "l", Holder: "h", TTL: time.Hour, Token: 1 << 40, Skew: time.Second}))
	f.Add(EncodeLeaseCommand(release("l", "h", 1)))
	f.Add([]byte{1, 3, 1, 'l', 1, 'h', 0x80, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeLeaseCommand(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeLeaseCommand() = %v, want ErrCorrupt", err)
			}
			return
		}
		if enc := EncodeLeaseCommand(c); !bytes.Equal(enc, b) {
			t.Fatalf("EncodeLeaseCommand(DecodeLeaseCommand(b)) = %x, want %x", enc, b)
		}
	})
}

func FuzzDecodeKV(f *testing.F) {
	f.Add(encodeKV(1, 1))
	f.Add(encodeKV(1<<40, 1<<62))
	f.Add(encodeKVInline(3, 17, []byte(`{"n":[1,2]}`)))
	f.Add(encodeKVInline(1, 1, nil))
	f.Add([]byte{})
	f.Add([]byte{kvByRef, 0x80})
	f.Add([]byte{kvByRef, 1, 1, 0})
	f.Add([]byte{3, 1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		kv, byRef, err := decodeKV("k", b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeKV() = %v, want ErrCorrupt", err)
			}
			return
		}
		enc := encodeKVInline(kv.Version, kv.ModIndex, kv.Value)
		if byRef {
			if kv.Value != nil {
				t.Fatalf("decodeKV() = %+v with a value in format 2", kv)
			}
			enc = encodeKV(kv.Version, kv.ModIndex)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("encoding decodeKV(b) = %x, want %x", enc, b)
		}
	})
}

// FuzzTxIDConflict applies a transaction and then another under the same
// txid: the second is a duplicate when it is the same transaction (SameTx),
// and refused with TxIDConflict otherwise, never applied.
func FuzzTxIDConflict(f *testing.F) {
	a := EncodeTx(Tx{ID: 1, Ops: []Op{put("a", "1")}})
	f.Add(a, a)
	f.Add(a, EncodeTx(Tx{ID: 1, Ops: []Op{put("a", "2")}}))
	f.Add(a, EncodeTx(Tx{ID: 1, IdempotencyKey: "k", Ops: []Op{put("a", "1")}}))
	k := EncodeTx(Tx{ID: 1, IdempotencyKey: "k", Fence: &Fence{Lease: "l", Token: 1}, Ops: []Op{ifv(put("a", "1"), 0)}})
	f.Add(k, k)
	f.Add(k, EncodeTx(Tx{ID: 1, IdempotencyKey: "k", Ops: []Op{ifv(put("a", "1"), 0)}}))
	f.Add(a, []byte{1})
	f.Fuzz(func(t *testing.T, first, second []byte) {
		if len(first) < txHeaderBytes || len(second) < txHeaderBytes {
			return
		}
		first, second = WithTxID(first, 7), WithTxID(second, 7)
		if _, err := DecodeTx(first); err != nil {
			return
		}
		db := openTest(t)
		entry := func(index uint64, payload []byte) Entry {
			return entryAt(index, KindTx, t0, 0, payload)
		}
		res := applyOK(t, db, entry(1, first), entry(2, second))
		if res[0].Err != nil || res[0].Duplicate || res[0].TxIDConflict {
			t.Fatalf("first = %+v, want a new outcome", res[0])
		}
		before := dump(t, db)
		r := res[1]
		if _, err := DecodeTx(second); err != nil {
			if r.Err == nil {
				t.Fatalf("second (undecodable) = %+v, want Err", r)
			}
			return
		}
		same := SameTx(first, second)
		if r.Duplicate != same || r.TxIDConflict == same || r.Reused || r.Outcome.Index != 1 {
			t.Fatalf("second (SameTx %v) = %+v, want duplicate %v, TxIDConflict %v, naming index 1", same, r, same, !same)
		}
		// Neither wrote anything: applied once more, the state is the same.
		applyOK(t, db, entry(3, second))
		after := dump(t, db)
		delete(before, "meta")
		delete(after, "meta")
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("state changed by a resubmission under the txid:\nbefore %v\nafter  %v", before, after)
		}
	})
}

// FuzzDecodeLogRecord checks the decoder of the log bucket's records, which
// the reads run on whatever the file holds: bad bytes are a clean
// ErrCorrupt (which Reader.Log answers as LogRecord.Unreadable), never a
// panic, and a record that decodes, encoded again, decodes to the same.
func FuzzDecodeLogRecord(f *testing.F) {
	tx := EncodeTx(Tx{ID: 3, IdempotencyKey: "k", Ops: []Op{put("a", `"A"`), put("b", "not json")}})
	committed := Outcome{Term: 2, Time: t0, Status: StatusCommitted}
	f.Add(appendLogValue(nil, committed, []pending{{key: "a", version: 1}, {key: "b", version: 4}}, tx))
	f.Add(appendLogValue(nil, Outcome{Term: 1, Time: -1, Status: StatusRejected, Conflict: &Conflict{Key: "a", Expected: 1, Actual: 2}}, nil, tx))
	f.Add(appendLogValue(nil, Outcome{Term: 1, Status: StatusRejected, Conflict: &Conflict{Fence: "l", Expected: 5}}, nil, tx))
	f.Add(appendLogValue(nil, Outcome{Term: 1, Status: StatusRejected, Conflict: &Conflict{Group: "g", Expected: 5, Actual: 9}}, nil, tx))
	f.Add([]byte{0xff, 0x00, 'x'})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, txBytes, err := decodeLogRecord(9, b, true)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("decodeLogRecord() = %v, want ErrCorrupt", err)
			}
			return
		}
		if r.Index != 9 {
			t.Fatalf("decodeLogRecord() index = %d, want 9", r.Index)
		}
		var writes []pending
		for k, v := range r.Versions {
			writes = append(writes, pending{key: k, version: v})
		}
		slices.SortFunc(writes, func(x, y pending) int { return strings.Compare(x.key, y.key) })
		o := r.Outcome
		if o.Status == StatusRejected && o.Conflict == nil {
			t.Fatalf("decodeLogRecord() = rejected without a conflict: %+v", r)
		}
		// Encoded again (versions in key order), it decodes to the same.
		enc := appendLogValue(nil, o, writes, txBytes)
		again, _, err := decodeLogRecord(9, enc, true)
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("decodeLogRecord(appendLogValue(decodeLogRecord(b))) = %+v, %v; want %+v", again, err, r)
		}
	})
}
