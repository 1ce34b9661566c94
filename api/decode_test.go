package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/notify"
)

var fuzzLimits = limits{maxKeyBytes: 64, maxOps: 8, maxTxs: 4, notify: testAllow}

// testAllow is the --webhook-allow of the decoder tests.
var testAllow = func() *notify.AllowList {
	l, err := notify.ParseAllowList("127.0.0.1:*,hooks.example.com")
	if err != nil {
		panic(err)
	}
	return l
}()

// FuzzDecodeTxRequest checks the body decoder of POST /v1/tx: it never
// panics, it refuses with an *Error whose code maps to a 4xx, and what it
// accepts obeys the rules and survives encoding and decoding again unchanged.
func FuzzDecodeTxRequest(f *testing.F) {
	for _, s := range []string{
		okTx,
		`{"idempotency_key":"k1","ops":[{"op":"put","key":"a","value":{"x":[1,2,{"y":null}]},"if_version":0},{"op":"delete","key":"b","if_version":3}]}`,
		`{"ops":[{"op":"put","key":"n","value":null}]}`,
		`{"ops":[{"op":"put","key":"<&>","value":"<b>\u2028"}]}`,
		`{"ops":[{"op":"put","key":"a\udc00","value":1}]}`,
		`{"ops":[{"op":"delete","key":"k","if_version":-1}]}`,
		`{"ops":[]}`,
		`{"ops":[null]}`,
		`{"ops":{}}`,
		`{"ops":[{"op":"put","key":"k","value":1}]} {}`,
		"{\"ops\":[{\"op\":\"put\",\"key\":\"\xff\",\"value\":1}]}",
		`{"ops":[{"op":"put","key":"k","key":"j","value":1}]}`,
		` { "ops" : [ { "value" : [ 1 , 2 ] , "key" : "k" , "op" : "put" } ] } `,
		`{"fence":{"lease":"consumer/billing","token":12},"ops":[{"op":"delete","key":"k"}]}`,
		`{"fence":{"lease":"l","token":0},"ops":[{"op":"delete","key":"k"}]}`,
		`{"ops":[{"op":"commit_offset","group":"billing","offset":17},{"op":"put","key":"k","value":1}]}`,
		`{"ops":[{"op":"commit_offset","group":"g","reset":true}]}`,
		`{"ops":[{"op":"commit_offset","group":"g","offset":0}]}`,
		`{"notify":{"url":"http://127.0.0.1:9/h"},"ops":[{"op":"delete","key":"k"}]}`,
		`{"ops":[{"op":"delete","key":"k"}],"notify":{"url":"ftp://127.0.0.1/h"}}`,
		`{"notify":{"url":"http://10.0.0.1/h"},"ops":[{"op":"delete","key":"k"}]}`,
		`{"notify":{"url":"http:///h","url":"x"},"ops":[{"op":"delete","key":"k"}]}`,
		`{"notify":{},"ops":[{"op":"delete","key":"k"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tx, err := decodeTxBody(data, fuzzLimits)
		if err != nil {
			var e *wire.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			status, ok := wire.Status(e.Code)
			if !ok || status/100 != 4 {
				t.Fatalf("error code %q: not a 4xx code of the table", e.Code)
			}
			return
		}
		checkTx(t, tx)
		again, err := decodeTxBody(encode(t, tx), fuzzLimits)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", encode(t, tx), err)
		}
		if !reflect.DeepEqual(again, tx) {
			t.Fatalf("round trip changed %+v into %+v", tx, again)
		}
	})
}

// checkTx checks the rules an accepted transaction obeys.
func checkTx(t *testing.T, tx wire.TxRequest) {
	t.Helper()
	if len(tx.IdempotencyKey) > MaxIdempotencyKeyBytes || !utf8.ValidString(tx.IdempotencyKey) || strings.ContainsRune(tx.IdempotencyKey, utf8.RuneError) {
		t.Fatalf("accepted idempotency key %q", tx.IdempotencyKey)
	}
	if len(tx.Ops) == 0 || len(tx.Ops) > fuzzLimits.maxOps {
		t.Fatalf("accepted %d ops", len(tx.Ops))
	}
	for i, op := range tx.Ops {
		if op.Op == wire.OpCommitOffset {
			if op.Key != "" || op.Value != nil || op.IfVersion != nil || op.Offset == 0 && !op.Reset ||
				op.Group == "" || len(op.Group) > fuzzLimits.maxKeyBytes || !utf8.ValidString(op.Group) || strings.ContainsRune(op.Group, utf8.RuneError) {
				t.Fatalf("ops[%d]: accepted commit_offset %+v", i, op)
			}
			continue
		}
		if op.Group != "" || op.Offset != 0 || op.Reset {
			t.Fatalf("ops[%d]: accepted %s with commit_offset fields %+v", i, op.Op, op)
		}
		if op.Key == "" || len(op.Key) > fuzzLimits.maxKeyBytes || !utf8.ValidString(op.Key) || strings.ContainsRune(op.Key, utf8.RuneError) {
			t.Fatalf("ops[%d]: accepted key %q", i, op.Key)
		}
		switch op.Op {
		case wire.OpPut:
			if !json.Valid(op.Value) {
				t.Fatalf("ops[%d]: accepted put with value %q", i, op.Value)
			}
			var buf bytes.Buffer
			if json.Compact(&buf, op.Value); !bytes.Equal(buf.Bytes(), op.Value) {
				t.Fatalf("ops[%d]: value %q not compact", i, op.Value)
			}
		case wire.OpDelete:
			if op.Value != nil {
				t.Fatalf("ops[%d]: accepted delete with value %q", i, op.Value)
			}
		default:
			t.Fatalf("ops[%d]: accepted op %q", i, op.Op)
		}
	}
}

// encode encodes v the way the Client does.
func encode(t *testing.T, v any) []byte {
	t.Helper()
	b, err := wire.MarshalJSON(v)
	if err != nil {
		t.Fatalf("encode %+v: %v", v, err)
	}
	return b
}

func TestDecodeTxBodyValues(t *testing.T) {
	tests := []struct {
		name string
		body string
		want wire.TxRequest
	}{
		{"compacts value", `{"ops":[{"op":"put","key":"k","value": [ 1 , {"a" : "b c"} ] }]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: "k", Value: json.RawMessage(`[1,{"a":"b c"}]`)}}}},
		{"null value", `{"ops":[{"op":"put","key":"k","value":null}]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: "k", Value: json.RawMessage(`null`)}}}},
		{"value escapes kept", `{"ops":[{"op":"put","key":"k","value":"\u003c\ud800"}]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: "k", Value: json.RawMessage(`"\u003c\ud800"`)}}}},
		{"escaped names and key", `{"\u006fps":[{"op":"p\u0075t","key":"\u00e9/x","value":1}]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: "é/x", Value: json.RawMessage(`1`)}}}},
		{"if_version zero", `{"ops":[{"op":"delete","key":"k","if_version":0}]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpDelete, Key: "k", IfVersion: new(uint64(0))}}}},
		{"max if_version", `{"ops":[{"op":"delete","key":"k","if_version":18446744073709551615}]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpDelete, Key: "k", IfVersion: new(uint64(1<<64 - 1))}}}},
		{"empty idempotency key is none", `{"idempotency_key":"","ops":[{"op":"delete","key":"k"}]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpDelete, Key: "k"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { mustDecodeTx(t, tt.body, tt.want) })
	}
}

// mustDecodeTx checks that decodeTxBody accepts body as want.
func mustDecodeTx(t *testing.T, body string, want wire.TxRequest) {
	t.Helper()
	got, err := decodeTxBody([]byte(body), fuzzLimits)
	if err != nil {
		t.Fatalf("decodeTxBody() error = %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decodeTxBody() = %+v, want %+v", got, want)
	}
}
