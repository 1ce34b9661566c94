package api

import (
	"bytes"
	"reflect"
	"testing"
)

// diffLimits are the limits FuzzDecodeDiff decodes with: the small ones of
// the other fuzz test, so that the fuzzer reaches them, and the defaults.
var diffLimits = []limits{
	fuzzLimits,
	{maxKeyBytes: 3, maxOps: 1, maxTxs: 2},
	{maxKeyBytes: DefaultMaxKeyBytes, maxOps: DefaultMaxOpsPerTx, maxTxs: DefaultMaxBatchTxs},
}

// FuzzDecodeDiff checks the fast path of the tx and batch body decoders
// against the slow path on the same input: what the fast path accepts, the
// slow path accepts with the same result; what the slow path accepts, the
// fast path accepts too unless the body has an escape or deep nesting; and
// decodeTxBody and decodeBatchBody answer as the slow path does, errors
// included. Each input is tried as a transaction, as a batch, and as the one
// transaction of a batch.
func FuzzDecodeDiff(f *testing.F) {
	for _, s := range []string{
		okTx,
		string(benchBody(1)),
		string(benchBody(3)),
		`{"idempotency_key":"k1","ops":[{"op":"put","key":"a","value":{"x":[1,2,{"y":null}]},"if_version":0},{"op":"delete","key":"b","if_version":3}]}`,
		`{"txs":[{"idempotency_key":"a","ops":[{"op":"delete","key":"k"}]},{"idempotency_key":"a","ops":[{"op":"delete","key":"k"}]}]}`,
		`{"txs":[{"ops":[{"op":"delete","key":"k"}]},{"ops":[{"op":"delete","key":"k"}]}],"txs":[]}`,
		`{"ops":[{"op":"put","key":"k","value":{ "a" : [ 1 , 2.5e-3 , -0 , true , false , null , "\"\\\/\b\f\n\r\t\u00e9" ] } }]}`,
		`{"ops":[{"op":"p\u0075t","key":"\u00e9\ud83d\ude00","value":"x"}],"idempotency_key":"\u0041"}`,
		`{"ops":[{"op":"put","key":"k","value":1,"value":2}]}`,
		`{"ops":[{"op":"delete","key":"k","if_version":18446744073709551616}]}`,
		`{"ops":[{"op":"delete","key":"k","if_version":1e3}]}`,
		`{"ops":[{"op":"delete","key":"k","if_version":-0}]}`,
		`{"ops":[{"op":"delete","key":"k","if_version":007}]}`,
		`{"ops":[{"op":"put","key":"k","value":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}]}`,
		`{"ops":[{"op":"put","key":"k","value":"` + "\u2028\ufffd" + `"}]}`,
		`{"ops":[{"op":"put","key":"` + "\ufffd" + `","value":1}]}`,
		"{\"ops\":[{\"op\":\"put\",\"key\":\"k\",\"value\":\"\t\"}]}",
		`{"ops":[{"op":"put","key":"k","value":tru}]}`,
		`{"ops":[{"op":"put","key":"k","value":1.}]}`,
		`{"fence":{"lease":"consumer/billing","token":12},"ops":[{"op":"delete","key":"k"}]}`,
		`{"ops":[{"op":"delete","key":"k"}],"fence":{"token":1,"lease":"l"},"idempotency_key":"p"}`,
		`{"fence":{"lease":"l","token":0},"ops":[{"op":"delete","key":"k"}]}`,
		`{"fence":{"lease":"l","lease":"m","token":1},"ops":[{"op":"delete","key":"k"}]}`,
		`{"fence":{},"ops":[{"op":"delete","key":"k"}]}`,
		`{"ops":[{"op":"commit_offset","group":"billing","offset":17},{"op":"put","key":"k","value":1}]}`,
		`{"ops":[{"op":"commit_offset","group":"g","reset":true,"offset":0}]}`,
		`{"ops":[{"op":"commit_offset","group":"g","reset":false,"offset":0}]}`,
		`{"ops":[{"op":"commit_offset","group":"g","offset":1},{"op":"commit_offset","group":"g","offset":2}]}`,
		`{"ops":[{"op":"commit_offset","group":"g","offset":1,"offset":2}]}`,
		`{"ops":[{"op":"commit_offset","key":"k","group":"g","offset":1}]}`,
		`{"ops":[{"op":"put","key":"k","value":1,"reset":true}]}`,
		`{"ops":[{"op":"commit_offset","group":"g","reset":tru}]}`,
		`{"notify":{"url":"http://127.0.0.1:9/h"},"ops":[{"op":"delete","key":"k"}]}`,
		`{"ops":[{"op":"delete","key":"k"}],"notify":{"url":"ftp://127.0.0.1/h"}}`,
		`{"notify":{"url":"http://10.0.0.1/h"},"ops":[{"op":"delete","key":"k"}]}`,
		`{"notify":{"url":"http:///h","url":"x"},"ops":[{"op":"delete","key":"k"}]}`,
		`{"notify":{},"ops":[{"op":"delete","key":"k"}]}`,
		// Pieces for diffTemplates.
		`"\u00e9\n"`, `{"a":[1,null,true]}`, `-1.5E+3`, `18446744073709551615`, `put`, `k\u0041`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		inBatch := append(append([]byte(`{"txs":[`), data...), "]}"...)
		for _, lim := range diffLimits {
			diffTx(t, data, lim)
			diffBatch(t, data, lim)
			diffBatch(t, inBatch, lim)
		}
		for _, tmpl := range diffTemplates {
			diffTx(t, bytes.ReplaceAll([]byte(tmpl), []byte("@"), data), fuzzLimits)
		}
	})
}

// diffTemplates are bodies with a hole, @, where FuzzDecodeDiff puts its
// input too, so that the fuzzer need not find the envelope to reach the
// grammar of strings, values and numbers.
var diffTemplates = []string{
	`{"ops":[{"op":"put","key":"k","value":@}]}`, // [0]: any value
	`{"ops":[{"op":"put","key":"@","value":1}]}`,
	`{"idempotency_key":"@","ops":[{"op":"delete","key":"k"}]}`,
	`{"ops":[{"op":"@","key":"k"}]}`,
	`{"ops":[{"op":"delete","key":"k","if_version":@}]}`, // [4]: a number
	`{"fence":{"lease":"@","token":1},"ops":[{"op":"delete","key":"k"}]}`,
	`{"fence":{"lease":"l","token":@},"ops":[{"op":"delete","key":"k"}]}`,
	`{"ops":[{"op":"commit_offset","group":"@","offset":1}]}`,
	`{"ops":[{"op":"commit_offset","group":"g","offset":@}]}`,
	`{"ops":[{"op":"commit_offset","group":"g","reset":@}]}`,
}

func diffTx(t *testing.T, body []byte, lim limits) {
	t.Helper()
	want, wantErr := slowTxBody(bytes.Clone(body), lim)
	fast, ok := fastTxBody(bytes.Clone(body), lim)
	got, err := decodeTxBody(bytes.Clone(body), lim)
	switch {
	case ok && wantErr != nil:
		t.Fatalf("fastTxBody(%q, %+v) accepted %+v; slowTxBody: %v", body, lim, fast, wantErr)
	case ok && !reflect.DeepEqual(fast, want):
		t.Fatalf("fastTxBody(%q, %+v) = %+v; slowTxBody = %+v", body, lim, fast, want)
	case !ok && wantErr == nil && !slowOnly(body):
		t.Fatalf("fastTxBody(%q, %+v) refused; slowTxBody = %+v", body, lim, want)
	case !reflect.DeepEqual(err, wantErr) || !reflect.DeepEqual(got, want):
		t.Fatalf("decodeTxBody(%q, %+v) = %+v, %v; slowTxBody = %+v, %v", body, lim, got, err, want, wantErr)
	}
}

func diffBatch(t *testing.T, body []byte, lim limits) {
	t.Helper()
	want, wantErr := slowBatchBody(bytes.Clone(body), lim)
	fast, ok := fastBatchBody(bytes.Clone(body), lim)
	got, err := decodeBatchBody(bytes.Clone(body), lim)
	switch {
	case ok && wantErr != nil:
		t.Fatalf("fastBatchBody(%q, %+v) accepted %+v; slowBatchBody: %v", body, lim, fast, wantErr)
	case ok && !reflect.DeepEqual(fast, want):
		t.Fatalf("fastBatchBody(%q, %+v) = %+v; slowBatchBody = %+v", body, lim, fast, want)
	case !ok && wantErr == nil && !slowOnly(body):
		t.Fatalf("fastBatchBody(%q, %+v) refused; slowBatchBody = %+v", body, lim, want)
	case !reflect.DeepEqual(err, wantErr) || !reflect.DeepEqual(got, want):
		t.Fatalf("decodeBatchBody(%q, %+v) = %+v, %v; slowBatchBody = %+v, %v", body, lim, got, err, want, wantErr)
	}
}

// slowOnly reports whether a valid body may be left to the slow path: it has
// an escape (perhaps in a member name) or may nest deeper than maxFastDepth.
func slowOnly(body []byte) bool {
	return bytes.IndexByte(body, '\\') >= 0 || bytes.Count(body, []byte("{"))+bytes.Count(body, []byte("[")) > maxFastDepth
}

// TestFastPathTaken checks that the bodies clients send take the fast path,
// so that BenchmarkDecode measures it.
func TestFastPathTaken(t *testing.T) {
	if _, ok := fastTxBody(benchBody(1), benchLimits); !ok {
		t.Errorf("fastTxBody(benchBody(1)) refused")
	}
	if _, ok := fastBatchBody(benchBody(100), benchLimits); !ok {
		t.Errorf("fastBatchBody(benchBody(100)) refused")
	}
	if _, ok := fastTxBody([]byte(okTx), fuzzLimits); !ok {
		t.Errorf("fastTxBody(okTx) refused")
	}
}

// TestFastValueAliasing checks that a value kept as a slice of the body
// cannot be appended to over the rest of the body.
func TestFastValueAliasing(t *testing.T) {
	body := []byte(`{"ops":[{"op":"put","key":"a","value":[1]},{"op":"put","key":"b","value":[2]}]}`)
	tx, err := decodeTxBody(body, fuzzLimits)
	if err != nil {
		t.Fatalf("decodeTxBody() error = %v", err)
	}
	_ = append(tx.Ops[0].Value, "xxxxxxxxxxxxxxxx"...)
	if got := string(tx.Ops[1].Value); got != "[2]" {
		t.Errorf("after an append to ops[0].value, ops[1].value = %s, want [2]", got)
	}
}

// TestDecodeDiffGrammar runs the checks of FuzzDecodeDiff on every small
// change to an escape, a literal and a number, which random mutation reaches
// only rarely: each byte of `"\u00e9"`, `"\n"`, `true`, `false` and `null`
// replaced by every byte value, and every number of up to four bytes from
// "0123-+.eE", as a value and as an if_version.
func TestDecodeDiffGrammar(t *testing.T) {
	var pieces [][]byte
	for _, s := range []string{`"\u00e9"`, `"\n"`, `true`, `false`, `null`} {
		for i := range len(s) {
			for c := range 256 {
				p := []byte(s)
				p[i] = byte(c)
				pieces = append(pieces, p)
			}
		}
	}
	const alphabet = "0123-+.eE"
	var numbers func(prefix []byte)
	numbers = func(prefix []byte) {
		if len(prefix) > 0 {
			pieces = append(pieces, prefix)
			diffTx(t, bytes.ReplaceAll([]byte(diffTemplates[4]), []byte("@"), prefix), fuzzLimits)
		}
		if len(prefix) == 4 {
			return
		}
		for i := range len(alphabet) {
			numbers(append(bytes.Clone(prefix), alphabet[i]))
		}
	}
	numbers(nil)
	for _, p := range pieces {
		diffTx(t, bytes.ReplaceAll([]byte(diffTemplates[0]), []byte("@"), p), fuzzLimits)
	}
}
