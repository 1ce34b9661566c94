package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// TestBodyErrorsFromTable: the errors of bad bodies and headers are the
// wordings of wire's messages table, the field's path before a field's,
// with the code of the body (a transaction's invalid_transaction) or the
// table's own, byte for byte as before the table held them.
func TestBodyErrorsFromTable(t *testing.T) {
	tx := func(b string) error { _, err := decodeTxBody([]byte(b), fuzzLimits); return err }
	batch := func(b string) error { _, err := decodeBatchBody([]byte(b), fuzzLimits); return err }
	join := func(b string) error { _, err := decodeJoinBody([]byte(b)); return err }
	lease := func(b string) error { _, err := decodeLeaseBody([]byte(b)); return err }
	for _, tc := range []struct {
		name     string
		err      error
		code     string
		wantText string // the message as a client reads it
		m        wire.Msg
		path     string // "": not a field's wording
		parts    []any
	}{
		{"empty key", tx(`{"ops":[{"op":"put","key":"","value":1}]}`), wire.CodeInvalidTx, `ops[0].key: empty`, wire.MsgFieldEmpty, "ops[0].key", nil},
		{"unknown field", tx(`{"ops":[],"nope":1}`), wire.CodeInvalidTx, `nope: unknown field`, wire.MsgFieldUnknown, "nope", nil},
		{"no ops", tx(`{"ops":[]}`), wire.CodeInvalidTx, `ops: empty`, wire.MsgFieldEmpty, "ops", nil},
		{"kind", tx(`[]`), wire.CodeInvalidTx, `body: want object, got array`, wire.MsgFieldKind, "body", []any{"object", "array"}},
		{"op", tx(`{"ops":[{"op":"nope","key":"k"}]}`), wire.CodeInvalidTx, `ops[0].op: unknown "nope", want "put", "delete" or "commit_offset"`, wire.MsgFieldOpUnknown, "ops[0].op", []any{"nope", wire.OpPut, wire.OpDelete, wire.OpCommitOffset}},
		{"value on delete", tx(`{"ops":[{"op":"delete","key":"k","value":1}]}`), wire.CodeInvalidTx, `ops[0].value: not allowed on a delete`, wire.MsgFieldNotAllowedOn, "ops[0].value", []any{wire.OpDelete}},
		{"twice", tx(`{"ops":[],"ops":[]}`), wire.CodeInvalidTx, `ops: given twice`, wire.MsgFieldTwice, "ops", nil},
		{"negative", tx(`{"ops":[{"op":"put","key":"k","value":1,"if_version":-1}]}`), wire.CodeInvalidTx, `ops[0].if_version: negative (-1)`, wire.MsgFieldNegative, "ops[0].if_version", []any{"-1"}},
		{"batch empty", batch(`{"txs":[]}`), wire.CodeInvalidTx, `txs: empty`, wire.MsgFieldEmpty, "txs", nil},
		{"join port", join(`{"id":"n4","raft_addr":"127.0.0.1:0"}`), wire.CodeBadRequest, `raft_addr: "127.0.0.1:0": want a port in 1..65535`, wire.MsgFieldAddrPort, "raft_addr", []any{"127.0.0.1:0"}},
		{"lease holder", lease(`{"ttl":"5s"}`), wire.CodeBadRequest, `holder: missing`, wire.MsgFieldMissing, "holder", nil},
		{"empty body", tx(``), wire.CodeInvalidJSON, `body: empty`, wire.MsgBodyEmpty, "", nil},
		{"truncated", tx(`{"ops":`), wire.CodeInvalidJSON, `body: truncated JSON`, wire.MsgBodyTruncated, "", nil},
		{"trailing", tx(`{} {}`), wire.CodeInvalidJSON, `body: data after the JSON value at offset 2`, wire.MsgBodyTrailing, "", []any{2}},
		{"utf8", tx("{\"ops\":[{\"op\":\"put\",\"key\":\"\xff\",\"value\":1}]}"), wire.CodeInvalidUTF8, `body: not valid UTF-8`, wire.MsgNotUTF8, "", []any{"body"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, body := wire.ErrorStatus(tc.err)
			want := wire.Text(tc.m, tc.parts...)
			if tc.path != "" {
				want = tc.path + ": " + want
			} else if wire.MsgCode(tc.m) != tc.code {
				t.Errorf("the table's code of %d is %q, want %q", tc.m, wire.MsgCode(tc.m), tc.code)
			}
			if body.Code != tc.code || body.Message != want || body.Message != tc.wantText {
				t.Fatalf("error %v = %s %q, want %s %q (the table's), as the client read it before: %q", tc.err, body.Code, body.Message, tc.code, want, tc.wantText)
			}
		})
	}
}

// TestHeaderErrorsFromTable: the Idempotency-Key header's errors are the
// table's, naming the header.
func TestHeaderErrorsFromTable(t *testing.T) {
	srv := NewServer(Config{}, &fakeBackend{})
	for _, tc := range []struct {
		name   string
		path   string
		values []string
		want   *wire.Error
	}{
		{"twice", "/v1/tx", []string{"a", "b"}, wire.New(wire.MsgHeaderRepeated, HeaderIdempotencyKey, 2)},
		{"empty", "/v1/tx", []string{""}, wire.New(wire.MsgHeaderEmpty, HeaderIdempotencyKey)},
		{"differs", "/v1/tx", []string{"a"}, wire.New(wire.MsgHeaderDiffers, HeaderIdempotencyKey, "a", "b")},
		{"on a batch", "/v1/tx/batch", []string{"a"}, wire.New(wire.MsgHeaderOnBatch, HeaderIdempotencyKey)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"ops":[{"op":"put","key":"k","value":1}],"idempotency_key":"b"}`
			if strings.HasSuffix(tc.path, "batch") {
				body = `{"txs":[{"ops":[{"op":"put","key":"k","value":1}]}]}`
			}
			r := httptest.NewRequest("POST", tc.path, strings.NewReader(body))
			r.Header[HeaderIdempotencyKey] = tc.values
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			var ans struct{ Error wire.ErrorBody }
			if err := json.Unmarshal(w.Body.Bytes(), &ans); err != nil {
				t.Fatalf("POST %s: %v in %s", tc.path, err, w.Body)
			}
			got := ans.Error.Err()
			var e *wire.Error
			if w.Code != http.StatusBadRequest || !errors.As(got, &e) || *e != *tc.want {
				t.Fatalf("POST %s with %s %q = %d %s, want 400 %v", tc.path, HeaderIdempotencyKey, tc.values, w.Code, w.Body, tc.want)
			}
		})
	}
}
