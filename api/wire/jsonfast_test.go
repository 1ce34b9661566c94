package wire

import (
	"bytes"
	"testing"

	"github.com/txlog/txlog/txid"
)

// jsonCases are results whose strings need every kind of escaping.
var jsonCases = append(append([]TxResult(nil), sampleResults...),
	TxResult{Status: "a\"b\\c\n\r\t\b\f\x00\x1f\x7f<>&", IdempotencyKey: "ü\u2028\u2029\xff\xfe€\U0001F600",
		Versions: map[string]uint64{"\x01": 0, "k\"": 1<<64 - 1}, Durability: "\u2027\u202a"},
	TxResult{TxID: txid.ID(1<<64 - 1), Status: StatusCommitted, Versions: map[string]uint64{}},
	TxResult{Status: StatusPending, Conflict: &Conflict{}, Error: &ErrorBody{Message: "\xed\xa0\x80 half a surrogate"}},
	TxResult{Status: StatusRejected, Conflict: &Conflict{Key: "k", Fence: "f\"<", Expected: 1, Actual: 2}},
	TxResult{Status: StatusRejected, Conflict: &Conflict{Group: "billing", Expected: 3, Actual: 5}},
	TxResult{Status: StatusRejected, Conflict: &Conflict{Key: "k", Fence: "f", Group: "g\"", Expected: 3, Actual: 5}},
)

// TestTxResultJSON: the hand encoder writes what MarshalJSON writes, for a
// result alone and for a batch (empty and nil included).
func TestTxResultJSON(t *testing.T) {
	for i, r := range jsonCases {
		want, err := MarshalJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendTxResultJSON(nil, &r); !bytes.Equal(got, want) {
			t.Errorf("result %d:\n got %s\nwant %s", i, got, want)
		}
	}
	for _, rs := range [][]TxResult{jsonCases, {}, nil} {
		want, err := MarshalJSON(BatchResponse{Results: rs})
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendBatchJSON(nil, rs); !bytes.Equal(got, want) {
			t.Errorf("batch of %d:\n got %s\nwant %s", len(rs), got, want)
		}
	}
}

// FuzzTxResultJSON compares the hand encoder with MarshalJSON on arbitrary
// strings and numbers.
func FuzzTxResultJSON(f *testing.F) {
	for _, r := range jsonCases {
		var code, msg, key string
		if r.Error != nil {
			code, msg = r.Error.Code, r.Error.Message
		}
		for k := range r.Versions {
			key = k
		}
		f.Add(uint64(r.TxID), r.Status, r.IdempotencyKey, r.Index, key, r.Duplicate, code, msg)
	}
	f.Fuzz(func(t *testing.T, id uint64, status, idem string, n uint64, key string, dup bool, code, msg string) {
		r := TxResult{TxID: txid.ID(id), Status: status, IdempotencyKey: idem, Index: n, Term: n >> 3,
			Duplicate: dup, Durability: msg}
		if key != "" {
			r.Versions = map[string]uint64{key: n, key + "\x00": id, "": 0}
		}
		if n%3 == 0 {
			r.Conflict = &Conflict{Key: key, Expected: n, Actual: id}
		}
		if n%5 == 1 {
			r.Conflict = &Conflict{Fence: msg, Key: code, Expected: n, Actual: id}
		}
		if code != "" {
			r.Error = &ErrorBody{Code: code, Message: msg, TxID: txid.ID(n)}
		}
		want, err := MarshalJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendTxResultJSON(nil, &r); !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

func BenchmarkTxResultJSON(b *testing.B) {
	r := sampleResults[0]
	b.Run("marshalJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := MarshalJSON(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			AppendTxResultJSON(make([]byte, 0, 256), &r)
		}
	})
}
