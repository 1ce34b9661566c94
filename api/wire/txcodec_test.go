package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/txlog/txlog/txid"
)

// TestTxCodecFields fails when TxRequest, Op or TxResult gain a field: the
// hand codecs of txcodec.go must learn it.
func TestTxCodecFields(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{{TxRequest{}, 4}, {Op{}, 8}, {Fence{}, 2}, {Notify{}, 1}, {TxResult{}, 11}} {
		if n := reflect.TypeOf(c.v).NumField(); n != c.want {
			t.Errorf("%T has %d fields, txcodec.go knows %d: teach AppendTxRequestJSON and DecodeTxResultJSON the new ones", c.v, n, c.want)
		}
	}
}

func u64(v uint64) *uint64 { return &v }

var txRequestCases = []TxRequest{
	{},
	{Ops: []Op{}},
	{IdempotencyKey: "k", Ops: []Op{{Op: OpPut, Key: "bench/00000001", Value: json.RawMessage(`"abc"`)}}},
	{Ops: []Op{{Op: OpPut, Key: "a", Value: json.RawMessage(`{"x": [1, 2]}`)}, {Op: OpDelete, Key: "b", IfVersion: u64(0)}}},
	{Ops: []Op{{Op: "commit_offset", Group: "g", Offset: 7, Reset: true}}, Fence: &Fence{Lease: "l<>&", Token: 3}, Notify: &Notify{URL: "http://x/?a=1&b=2"}},
	{Ops: []Op{{Op: OpPut, Key: "k\u2028\xff\"\n", Value: json.RawMessage(`12`), Raw: "text"}}},
	{Ops: []Op{{Op: OpPut, Key: "k", Value: json.RawMessage(` "spaced" `)}}},
	{Ops: []Op{{Op: OpPut, Key: "k", Value: json.RawMessage(`"esc\"aped"`)}}},
	{Ops: []Op{{Op: OpPut, Key: "k", Value: json.RawMessage(`-1.5e3`)}}},
	{Ops: []Op{{Op: OpPut, Key: "k", Value: json.RawMessage(`01`)}}},        // invalid JSON
	{Ops: []Op{{Op: OpPut, Key: "k", Value: json.RawMessage(`"open`)}}},     // invalid JSON
	{Ops: []Op{{Op: OpPut, Key: "k", Value: json.RawMessage(`"a"` + `1`)}}}, // two values
	{Ops: []Op{{Op: OpPut, Key: "k", Value: json.RawMessage("\"<\xff>\"")}}},
}

// checkTxRequestJSON fails t when AppendTxRequestJSON disagrees with
// MarshalJSON on tx, in bytes or in whether it is an error.
func checkTxRequestJSON(t *testing.T, tx TxRequest) {
	t.Helper()
	want, werr := MarshalJSON(tx)
	got, gerr := AppendTxRequestJSON([]byte("prefix"), &tx)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%+v: error %v, MarshalJSON's %v", tx, gerr, werr)
	}
	if werr != nil {
		if string(got) != "prefix" {
			t.Fatalf("%+v: after an error b = %q, want the prefix alone", tx, got)
		}
		return
	}
	if !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("%+v:\n got %s\nwant prefix%s", tx, got, want)
	}
}

func TestTxRequestJSON(t *testing.T) {
	for _, tx := range txRequestCases {
		checkTxRequestJSON(t, tx)
	}
	// The bad values are errors, as encoding/json has them.
	if _, err := AppendTxRequestJSON(nil, &txRequestCases[9]); err == nil {
		t.Fatal("AppendTxRequestJSON(value 01) = nil error")
	}
}

// FuzzTxRequestJSON compares AppendTxRequestJSON with MarshalJSON on
// arbitrary strings, values and numbers.
func FuzzTxRequestJSON(f *testing.F) {
	for _, tx := range txRequestCases {
		var op, key, value string
		if len(tx.Ops) > 0 {
			op, key, value = tx.Ops[0].Op, tx.Ops[0].Key, string(tx.Ops[0].Value)
		}
		f.Add(tx.IdempotencyKey, op, key, value, uint64(len(tx.Ops)), uint8(0))
	}
	f.Fuzz(func(t *testing.T, idem, op, key, value string, n uint64, shape uint8) {
		o := Op{Op: op, Key: key, Value: json.RawMessage(value)}
		if shape&1 != 0 {
			o.IfVersion = u64(n)
		}
		if shape&2 != 0 {
			o.Group, o.Offset, o.Reset, o.Raw = key, n, n%2 == 0, op
		}
		tx := TxRequest{IdempotencyKey: idem}
		if shape&4 == 0 {
			tx.Ops = []Op{o, {Op: OpDelete, Key: value}}
		}
		if shape&8 != 0 {
			tx.Fence = &Fence{Lease: op, Token: n}
		}
		if shape&16 != 0 {
			tx.Notify = &Notify{URL: key}
		}
		checkTxRequestJSON(t, tx)
	})
}

var txResultAnswers = []string{
	`{"txid":"` + txid.ID(123456789).String() + `","status":"committed","idempotency_key":"k-1","index":12,"term":3,"versions":{"a":1,"b":2},"durability":"quorum"}` + "\n",
	`{"status":"pending","idempotency_key":"k","durability":"accepted"}`,
	`{"txid":"` + txid.ID(1).String() + `","status":"committed","index":1,"term":1,"versions":{},"duplicate":true}`,
	`{"status":"héllo"}`,
}

func TestDecodeTxResultJSON(t *testing.T) {
	// Every canonical answer the server writes without escapes is accepted.
	for _, r := range jsonCases {
		b := AppendTxResultJSON(nil, &r)
		if r.Conflict != nil || r.Error != nil || len(r.HeldBy) > 0 || bytes.IndexByte(b, '\\') >= 0 {
			checkDecode(t, b)
			continue
		}
		var got TxResult
		if !DecodeTxResultJSON(append(b, '\n'), &got) {
			t.Errorf("DecodeTxResultJSON(%s) declined the server's own answer", b)
			continue
		}
		checkDecode(t, append(b, '\n'))
	}
	for _, s := range txResultAnswers {
		var got TxResult
		if !DecodeTxResultJSON([]byte(s), &got) {
			t.Errorf("DecodeTxResultJSON(%s) declined", s)
		}
		checkDecode(t, []byte(s))
	}
	// What it must decline: encoding/json decides those.
	for _, s := range []string{
		``, `{}`, `null`, `{"status":"a"} `, `{"status":"a"}x`, `{"status":"a"}` + "\n\n",
		`{"status":"a\"b"}`, `{"status":"a\u0041"}`, "{\"status\":\"\xff\"}", "{\"status\":\"a\tb\"}",
		`{"Status":"a"}`, `{"status":"a","status":"b"}`, `{"index":1,"status":"a"}`,
		`{"status":"a","index":01}`, `{"status":"a","index":-1}`, `{"status":"a","index":1.0}`,
		`{"status":"a","index":18446744073709551616}`, `{"status":"a","duplicate":false}`,
		`{"status":"a","versions":{"b":1,"a":2}}`, `{"status":"a","versions":{"a":1,"a":2}}`,
		`{"status":"a","versions":{"a":1,}}`, `{"status":"a","versions":null}`,
		`{"txid":"","status":"a"}`, `{"txid":"nope","status":"a"}`, `{"txid":1,"status":"a"}`,
		`{"status":"rejected","conflict":{"key":"k","expected":1,"actual":2}}`,
		`{"status":"pending","held_by":["wal"]}`, `{"status":"a","unknown":1}`, `{"status":"a",}`,
		`{"status":"a"`, `{"status":`, `{ "status":"a"}`,
	} {
		var got TxResult
		got.Status = "untouched"
		if DecodeTxResultJSON([]byte(s), &got) {
			t.Errorf("DecodeTxResultJSON(%q) accepted %+v, want declined", s, got)
		} else if got.Status != "untouched" {
			t.Errorf("DecodeTxResultJSON(%q) declined but changed r", s)
		}
	}
}

// checkDecode fails t when DecodeTxResultJSON accepts b with another result
// than json.Unmarshal gives.
func checkDecode(t *testing.T, b []byte) {
	t.Helper()
	var got TxResult
	if !DecodeTxResultJSON(b, &got) {
		return
	}
	var want TxResult
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("DecodeTxResultJSON(%q) accepted what json.Unmarshal refuses: %v", b, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodeTxResultJSON(%q) = %+v, json.Unmarshal %+v", b, got, want)
	}
}

// FuzzDecodeTxResultJSON checks that whenever DecodeTxResultJSON accepts
// bytes, its result is encoding/json's.
func FuzzDecodeTxResultJSON(f *testing.F) {
	for _, s := range txResultAnswers {
		f.Add([]byte(s))
	}
	for _, r := range jsonCases {
		f.Add(AppendTxResultJSON(nil, &r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, b)
	})
}
