package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/txid"
)

func TestTxRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		tx   Tx
	}{
		{"no ops", Tx{ID: 1}},
		{"one put", Tx{ID: 42, Ops: []Op{put("a", `{"x":1}`)}}},
		{"idempotency key", Tx{ID: 7, IdempotencyKey: "order-17", Ops: []Op{put("a", "1")}}},
		{"delete", Tx{ID: 7, Ops: []Op{del("a")}}},
		{"empty value", Tx{ID: 7, Ops: []Op{put("a", "")}}},
		{"if_version 0", Tx{ID: 7, Ops: []Op{ifv(put("a", "1"), 0)}}},
		{"if_version max", Tx{ID: math.MaxUint64, Ops: []Op{ifv(del("a"), math.MaxUint64)}}},
		{"mixed", Tx{ID: 99, IdempotencyKey: "k", Ops: []Op{put("a", "1"), ifv(del("b"), 3), ifv(put("a", "2"), 1)}}},
		{"limits", Tx{
			ID:             1,
			IdempotencyKey: strings.Repeat("i", MaxIdempotencyKeyBytes),
			Ops:            []Op{put(strings.Repeat("k", MaxKeyBytes), "1")},
		}},
		{"max ops", Tx{ID: 1, Ops: manyOps(MaxOps)}},
		{"commit_offset", Tx{ID: 5, Ops: []Op{put("a", "1"), offset("billing", 1<<40), del("b")}}},
		{"commit_offset reset to 0", Tx{ID: 5, Fence: &Fence{Lease: "consumer/billing", Token: 9}, Ops: []Op{reset("billing", 0)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := EncodeTx(tt.tx)
			got, err := DecodeTx(b)
			if err != nil {
				t.Fatalf("DecodeTx() = %v", err)
			}
			if !reflect.DeepEqual(normalizeTx(got), normalizeTx(tt.tx)) {
				t.Fatalf("DecodeTx(EncodeTx(tx)) = %+v, want %+v", got, tt.tx)
			}
			if again := EncodeTx(got); !bytes.Equal(again, b) {
				t.Fatalf("EncodeTx(DecodeTx(b)) = %x, want %x", again, b)
			}
		})
	}
}

// TestTxLayout pins the byte layout drawn above EncodeTx.
func TestTxLayout(t *testing.T) {
	tx := Tx{ID: 0x0102030405060708, IdempotencyKey: "ik", Ops: []Op{ifv(put("k", "v"), 5), del("d")}}
	want := []byte{
		1,                                      // version
		1, 2, 3, 4, 5, 6, 7, 8, 2, 'i', 'k', 2, // txid, idem key, op count
		1, 1, 1, 'k', 5, 1, 'v', // put, if_version 5
		2, 0, 1, 'd', // delete
	}
	if got := EncodeTx(tx); !bytes.Equal(got, want) {
		t.Fatalf("EncodeTx() = %v, want %v", got, want)
	}
}

// TestTxLayoutCommitOffset pins the layout of an OpCommitOffset.
func TestTxLayoutCommitOffset(t *testing.T) {
	tx := Tx{ID: 0x0102030405060708, Ops: []Op{offset("g", 300), reset("h", 0)}}
	want := []byte{
		1,                            // version
		1, 2, 3, 4, 5, 6, 7, 8, 0, 2, // txid, no idem key, op count
		3, 0, 1, 'g', 0xac, 0x02, // commit_offset g 300
		3, 2, 1, 'h', 0, // commit_offset h 0 with reset
	}
	if got := EncodeTx(tx); !bytes.Equal(got, want) {
		t.Fatalf("EncodeTx() = %v, want %v", got, want)
	}
}

// normalizeTx makes nil and empty values equal for comparison: the encoding does
// not tell them apart.
func normalizeTx(tx Tx) Tx {
	ops := make([]Op, len(tx.Ops))
	for i, op := range tx.Ops {
		if op.Kind == OpPut && op.Value == nil {
			op.Value = []byte{}
		}
		ops[i] = op
	}
	tx.Ops = ops
	return tx
}

func manyOps(n int) []Op {
	ops := make([]Op, n)
	for i := range ops {
		ops[i] = put("k", "1")
	}
	return ops
}

func TestDecodeTxRejects(t *testing.T) {
	valid := EncodeTx(Tx{ID: 1, Ops: []Op{put("a", "1")}})
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"unknown version", append([]byte{3}, valid[1:]...)},
		{"truncated txid", valid[:5]},
		{"zero txid", EncodeTx(Tx{ID: 0, Ops: []Op{put("a", "1")}})},
		{"truncated", valid[:len(valid)-1]},
		{"trailing byte", append(bytes.Clone(valid), 0)},
		{"unknown op kind", EncodeTx(Tx{ID: 1, Ops: []Op{{Kind: 4, Key: "a"}}})},
		{"commit_offset 0 without reset", EncodeTx(Tx{ID: 1, Ops: []Op{offset("g", 0)}})},
		{"commit_offset empty group", EncodeTx(Tx{ID: 1, Ops: []Op{offset("", 1)}})},
		{"commit_offset with if_version", EncodeTx(Tx{ID: 1, Ops: []Op{ifv(offset("g", 1), 1)}})},
		{"commit_offset group too long", EncodeTx(Tx{ID: 1, Ops: []Op{offset(strings.Repeat("g", MaxKeyBytes+1), 1)}})},
		{"reset flag on a put", EncodeTx(Tx{ID: 1, Ops: []Op{{Kind: OpPut, Key: "a", Reset: true}}})},
		{"commit_offset truncated", EncodeTx(Tx{ID: 1, Ops: []Op{offset("g", 1)}})[:15]},
		{"op kind 0", EncodeTx(Tx{ID: 1, Ops: []Op{{Kind: 0, Key: "a"}}})},
		{"unknown flag", []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 2, 2, 1, 'a'}},
		{"empty key", EncodeTx(Tx{ID: 1, Ops: []Op{put("", "1")}})},
		{"key too long", EncodeTx(Tx{ID: 1, Ops: []Op{put(strings.Repeat("k", MaxKeyBytes+1), "1")}})},
		{"idem key too long", EncodeTx(Tx{ID: 1, IdempotencyKey: strings.Repeat("i", MaxIdempotencyKeyBytes+1)})},
		{"too many ops", EncodeTx(Tx{ID: 1, Ops: manyOps(MaxOps + 1)})},
		{"op count beyond input", []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 100, 1, 0, 1, 'a'}},
		{"op count over MaxOps", []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0xff, 0xff, 0x03}},
		{"huge value length", []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 1, 'a', 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"overlong varint", []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0x80, 0x00, 0}},
		{"varint overflow", []byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, err := DecodeTx(tt.b)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeTx(%x) = %+v, %v; want ErrCorrupt", tt.b, tx, err)
			}
			if id, cerr := CheckTx(tt.b); cerr == nil || cerr.Error() != err.Error() {
				t.Fatalf("CheckTx(%x) = %v, %v; want DecodeTx's %v", tt.b, id, cerr, err)
			}
		})
	}
}

// TestCheckTx checks that CheckTx accepts what DecodeTx does, gives its
// txid, and allocates nothing, with and without a fence.
func TestCheckTx(t *testing.T) {
	for _, tx := range []Tx{
		{ID: 1},
		{ID: 42, IdempotencyKey: "order-1", Ops: []Op{put("a", `{"n":1}`), ifv(del("b"), 2)}},
		{ID: 7, IdempotencyKey: "run-1", Fence: &Fence{Lease: "consumer/billing", Token: 1 << 33}, Ops: []Op{put("a", "1")}},
		{ID: 8, Ops: []Op{offset("billing", 3), reset("other", 0)}},
	} {
		b := EncodeTx(tx)
		id, err := CheckTx(b)
		if err != nil || id != tx.ID {
			t.Fatalf("CheckTx(%+v) = %v, %v; want %v", tx, id, err, tx.ID)
		}
		if allocs := testing.AllocsPerRun(100, func() { _, _ = CheckTx(b) }); allocs != 0 {
			t.Fatalf("CheckTx(%+v) allocates %v times, want 0", tx, allocs)
		}
	}
}

func TestDecodeTxDoesNotAlias(t *testing.T) {
	b := EncodeTx(Tx{ID: 1, Ops: []Op{put("a", "value")}})
	tx, err := DecodeTx(b)
	if err != nil {
		t.Fatal(err)
	}
	clear(b)
	if string(tx.Ops[0].Value) != "value" {
		t.Fatalf("value after clearing input = %q, want %q", tx.Ops[0].Value, "value")
	}
}

func TestNodeRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		n    NodeInfo
	}{
		{"full", NodeInfo{ID: "n1", HTTPAddr: "127.0.0.1:8080", RaftAddr: "127.0.0.1:9090", TxIDNode: 3}},
		{"id only", NodeInfo{ID: "n"}},
		{"max node", NodeInfo{ID: "n", TxIDNode: txid.MaxNode}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeNode(EncodeNode(tt.n))
			if err != nil {
				t.Fatalf("DecodeNode() = %v", err)
			}
			if got != tt.n {
				t.Fatalf("DecodeNode(EncodeNode(n)) = %+v, want %+v", got, tt.n)
			}
		})
	}
}

func TestDecodeNodeRejects(t *testing.T) {
	valid := EncodeNode(NodeInfo{ID: "n1", HTTPAddr: "h", RaftAddr: "r", TxIDNode: 1})
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"unknown version", append([]byte{0}, valid[1:]...)},
		{"empty id", EncodeNode(NodeInfo{HTTPAddr: "h"})},
		{"long id", EncodeNode(NodeInfo{ID: strings.Repeat("n", maxNodeFieldBytes+1)})},
		{"txid node too large", EncodeNode(NodeInfo{ID: "n", TxIDNode: txid.MaxNode + 1})},
		{"truncated", valid[:len(valid)-1]},
		{"trailing byte", append(bytes.Clone(valid), 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n, err := DecodeNode(tt.b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeNode(%x) = %+v, %v; want ErrCorrupt", tt.b, n, err)
			}
		})
	}
}

func TestCommandRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		c    Command
	}{
		{"tx", Command{Kind: KindTx, Time: t0, DedupWindow: time.Hour, Payload: EncodeTx(Tx{ID: 1})}},
		{"node", Command{Kind: KindRegisterNode, Time: 1, Payload: EncodeNode(NodeInfo{ID: "n"})}},
		{"negative time and window", Command{Kind: KindTx, Time: math.MinInt64, DedupWindow: -1, Payload: []byte{}}},
		{"max window", Command{Kind: KindTx, Time: math.MaxInt64, DedupWindow: math.MaxInt64, Payload: []byte("x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := EncodeCommand(tt.c)
			got, err := DecodeCommand(b)
			if err != nil {
				t.Fatalf("DecodeCommand() = %v", err)
			}
			if !reflect.DeepEqual(got, tt.c) {
				t.Fatalf("DecodeCommand(EncodeCommand(c)) = %+v, want %+v", got, tt.c)
			}
		})
	}
}

// TestCommandPayloadUnchanged checks that EncodeCommand appends the payload
// bytes as they are, and DecodeCommand returns them without copying.
func TestCommandPayloadUnchanged(t *testing.T) {
	payload := EncodeTx(Tx{ID: 5, Ops: []Op{put("a", "1")}})
	b := EncodeCommand(Command{Kind: KindTx, Time: t0, DedupWindow: time.Minute, Payload: payload})
	if !bytes.HasSuffix(b, payload) {
		t.Fatalf("EncodeCommand() = %x, want suffix %x", b, payload)
	}
	header := 1 + 1 + 8 + binary.PutVarint(make([]byte, binary.MaxVarintLen64), int64(time.Minute))
	if len(b) != header+len(payload) {
		t.Fatalf("len(EncodeCommand()) = %d, want header %d + payload %d", len(b), header, len(payload))
	}
	c, err := DecodeCommand(b)
	if err != nil {
		t.Fatal(err)
	}
	if &c.Payload[0] != &b[header] {
		t.Fatalf("DecodeCommand payload does not alias its input")
	}
}

func TestDecodeCommandRejects(t *testing.T) {
	valid := EncodeCommand(Command{Kind: KindTx, Time: t0, Payload: []byte("p")})
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"unknown version", append([]byte{9}, valid[1:]...)},
		{"unknown kind", EncodeCommand(Command{Kind: 200})},
		{"kind 0", EncodeCommand(Command{Kind: 0})},
		{"truncated time", valid[:6]},
		{"no window", valid[:10]},
		{"overlong window", []byte{1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, err := DecodeCommand(tt.b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeCommand(%x) = %+v, %v; want ErrCorrupt", tt.b, c, err)
			}
		})
	}
}

// TestSameTx: equal EncodeTx bytes but for the txid, and nothing else, are the
// same transaction.
func TestSameTx(t *testing.T) {
	base := Tx{ID: 1, IdempotencyKey: "k", Ops: []Op{{Kind: OpPut, Key: "a", Value: []byte(`1`)}}}
	enc := func(f func(*Tx)) []byte {
		tx := base
		tx.Ops = append([]Op(nil), base.Ops...)
		f(&tx)
		return EncodeTx(tx)
	}
	a := EncodeTx(base)
	tests := []struct {
		name string
		b    []byte
		want bool
	}{
		{"other txid", enc(func(tx *Tx) { tx.ID = 2 }), true},
		{"itself", a, true},
		{"other key", enc(func(tx *Tx) { tx.IdempotencyKey = "j" }), false},
		{"no key", enc(func(tx *Tx) { tx.IdempotencyKey = "" }), false},
		{"other value", enc(func(tx *Tx) { tx.Ops[0].Value = []byte(`2`) }), false},
		{"if_version", enc(func(tx *Tx) { tx.Ops[0].HasIfVersion = true }), false},
		{"delete", enc(func(tx *Tx) { tx.Ops[0] = Op{Kind: OpDelete, Key: "a"} }), false},
		{"truncated", a[:5], false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SameTx(a, tt.b); got != tt.want {
				t.Fatalf("SameTx(%x, %x) = %v, want %v", a, tt.b, got, tt.want)
			}
			if got := SameTx(tt.b, a); got != tt.want {
				t.Fatalf("SameTx(%x, %x) = %v, want %v", tt.b, a, got, tt.want)
			}
		})
	}
}

func TestWithTxID(t *testing.T) {
	tx := Tx{ID: 7, IdempotencyKey: "k", Ops: []Op{put("a", "1")}, Notify: "http://127.0.0.1:1/x"}
	b := EncodeTx(tx)
	got := WithTxID(b, 9)
	if !SameTx(b, got) {
		t.Fatalf("SameTx(b, WithTxID(b, 9)) = false, want true")
	}
	tx.ID = 9
	if want := EncodeTx(tx); !bytes.Equal(got, want) {
		t.Fatalf("WithTxID(b, 9) = %x, want %x", got, want)
	}
	if id, err := CheckTx(b); err != nil || id != 7 {
		t.Fatalf("CheckTx(b) = %v, %v after WithTxID; want 7: b was changed", id, err)
	}
}
