package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// testConfig keeps the limits small so that tests can cross them cheaply.
var testConfig = Config{
	MaxBodyBytes:         4096,
	MaxInternalBodyBytes: 8192,
	MaxKeyBytes:          16,
	MaxOpsPerTx:          3,
	MaxBatchTxs:          2,
	MaxTimeout:           time.Minute,
}

// serve sends one request to a Server over b and returns the answer.
func serve(t *testing.T, cfg Config, b Backend, method, target, body string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for k, vs := range header {
		req.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	srv := NewServer(cfg, b)
	if strings.HasPrefix(target, "/v1/internal/") {
		srv.PeerHandler().ServeHTTP(rec, req) // the peer link's routes
	} else {
		srv.ServeHTTP(rec, req)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type = %q, want application/json", method, target, ct)
	}
	return rec
}

// errorOf decodes the error object of an answer.
func errorOf(t *testing.T, rec *httptest.ResponseRecorder) wire.ErrorBody {
	t.Helper()
	var a struct {
		Error *wire.ErrorBody `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil || a.Error == nil {
		t.Fatalf("answer %d %q: no error object (%v)", rec.Code, rec.Body.String(), err)
	}
	return *a.Error
}

const okTx = `{"ops":[{"op":"put","key":"k","value":1}]}`

func TestBadRequests(t *testing.T) {
	longKey := strings.Repeat("k", 17)
	longIdem := strings.Repeat("i", MaxIdempotencyKeyBytes+1)
	tests := []struct {
		name    string
		method  string
		target  string
		body    string
		header  http.Header
		status  int
		code    string
		message string // a part of the message
	}{
		// Bodies of POST /v1/tx.
		{"bad json", "POST", "/v1/tx", `{"ops":[`, nil, 400, wire.CodeInvalidJSON, "truncated"},
		{"bad json syntax", "POST", "/v1/tx", `{"ops":[}`, nil, 400, wire.CodeInvalidJSON, "invalid JSON at offset"},
		{"empty body", "POST", "/v1/tx", ``, nil, 400, wire.CodeInvalidJSON, "body: empty"},
		{"trailing data", "POST", "/v1/tx", okTx + ` x`, nil, 400, wire.CodeInvalidJSON, "data after the JSON value"},
		{"two objects", "POST", "/v1/tx", okTx + okTx, nil, 400, wire.CodeInvalidJSON, "data after the JSON value"},
		{"invalid utf8 in body", "POST", "/v1/tx", "{\"ops\":[{\"op\":\"put\",\"key\":\"k\xff\",\"value\":1}]}", nil, 400, wire.CodeInvalidUTF8, "body: not valid UTF-8"},
		{"invalid utf8 in value", "POST", "/v1/tx", "{\"ops\":[{\"op\":\"put\",\"key\":\"k\",\"value\":\"\xc3\x28\"}]}", nil, 400, wire.CodeInvalidUTF8, "body"},
		{"lone surrogate in key", "POST", "/v1/tx", `{"ops":[{"op":"put","key":"a\udc00","value":1}]}`, nil, 400, wire.CodeInvalidUTF8, "ops[0].key: contains U+FFFD"},
		{"replacement char in key", "POST", "/v1/tx", `{"ops":[{"op":"put","key":"a` + "\uFFFD" + `","value":1}]}`, nil, 400, wire.CodeInvalidUTF8, "ops[0].key"},
		{"lone surrogate in idempotency key", "POST", "/v1/tx", `{"idempotency_key":"\ud800","ops":[{"op":"put","key":"k","value":1}]}`, nil, 400, wire.CodeInvalidUTF8, "idempotency_key"},
		{"body is array", "POST", "/v1/tx", `[]`, nil, 400, wire.CodeInvalidTx, "body: want object, got array"},
		{"body is null", "POST", "/v1/tx", `null`, nil, 400, wire.CodeInvalidTx, "body: want object, got null"},
		{"unknown op", "POST", "/v1/tx", `{"ops":[{"op":"upsert","key":"k","value":1}]}`, nil, 400, wire.CodeInvalidTx, `ops[0].op: unknown "upsert"`},
		{"missing op", "POST", "/v1/tx", `{"ops":[{"key":"k","value":1}]}`, nil, 400, wire.CodeInvalidTx, "ops[0].op: missing"},
		{"empty ops", "POST", "/v1/tx", `{"ops":[]}`, nil, 400, wire.CodeInvalidTx, "ops: empty"},
		{"null ops", "POST", "/v1/tx", `{"ops":null}`, nil, 400, wire.CodeInvalidTx, "ops: want array, got null"},
		{"missing ops", "POST", "/v1/tx", `{}`, nil, 400, wire.CodeInvalidTx, "ops: missing"},
		{"ops is object", "POST", "/v1/tx", `{"ops":{}}`, nil, 400, wire.CodeInvalidTx, "ops: want array, got object"},
		{"null op", "POST", "/v1/tx", `{"ops":[null]}`, nil, 400, wire.CodeInvalidTx, "ops[0]: want object, got null"},
		{"empty key", "POST", "/v1/tx", `{"ops":[{"op":"put","key":"k","value":1},{"op":"put","key":"","value":1}]}`, nil, 400, wire.CodeInvalidTx, "ops[1].key: empty"},
		{"missing key", "POST", "/v1/tx", `{"ops":[{"op":"delete"}]}`, nil, 400, wire.CodeInvalidTx, "ops[0].key: missing"},
		{"key not string", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":7}]}`, nil, 400, wire.CodeInvalidTx, "ops[0].key: want string, got number"},
		{"key too long", "POST", "/v1/tx", `{"ops":[{"op":"put","key":"` + longKey + `","value":1}]}`, nil, 400, wire.CodeInvalidTx, "ops[0].key: 17 bytes, limit 16"},
		{"unknown field", "POST", "/v1/tx", `{"opz":[],"ops":[{"op":"delete","key":"k"}]}`, nil, 400, wire.CodeInvalidTx, "opz: unknown field"},
		{"unknown op field", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":"k","ttl":3}]}`, nil, 400, wire.CodeInvalidTx, "ops[0].ttl: unknown field"},
		{"field in other case", "POST", "/v1/tx", `{"OPS":[{"op":"delete","key":"k"}]}`, nil, 400, wire.CodeInvalidTx, "OPS: unknown field"},
		{"field twice", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":"a","key":"b"}]}`, nil, 400, wire.CodeInvalidTx, "ops[0].key: given twice"},
		{"if_version string", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":"k","if_version":"3"}]}`, nil, 400, wire.CodeInvalidTx, "ops[0].if_version: want non-negative integer, got string"},
		{"if_version negative", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":"k","if_version":-1}]}`, nil, 400, wire.CodeInvalidTx, "ops[0].if_version: negative"},
		{"if_version fraction", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":"k","if_version":1.5}]}`, nil, 400, wire.CodeInvalidTx, "want non-negative integer, got 1.5"},
		{"if_version exponent", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":"k","if_version":1e3}]}`, nil, 400, wire.CodeInvalidTx, "got 1e3"},
		{"if_version too big", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":"k","if_version":18446744073709551616}]}`, nil, 400, wire.CodeInvalidTx, "does not fit 64 bits"},
		{"if_version null", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":"k","if_version":null}]}`, nil, 400, wire.CodeInvalidTx, "got null"},
		{"put without value", "POST", "/v1/tx", `{"ops":[{"op":"put","key":"k"}]}`, nil, 400, wire.CodeInvalidTx, "ops[0].value: missing"},
		{"delete with value", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":"k","value":null}]}`, nil, 400, wire.CodeInvalidTx, "ops[0].value: not allowed on a delete"},
		{"too many ops", "POST", "/v1/tx", `{"ops":[{"op":"delete","key":"a"},{"op":"delete","key":"b"},{"op":"delete","key":"c"},{"op":"delete","key":"d"}]}`, nil, 400, wire.CodeInvalidTx, "ops: more than 3 elements"},
		{"idempotency key too long", "POST", "/v1/tx", `{"idempotency_key":"` + longIdem + `","ops":[{"op":"delete","key":"k"}]}`, nil, 400, wire.CodeInvalidTx, "idempotency_key: 129 bytes, limit 128"},
		{"idempotency key not string", "POST", "/v1/tx", `{"idempotency_key":1,"ops":[{"op":"delete","key":"k"}]}`, nil, 400, wire.CodeInvalidTx, "idempotency_key: want string, got number"},
		{"body too large", "POST", "/v1/tx", `{"ops":[{"op":"put","key":"k","value":"` + strings.Repeat("x", 5000) + `"}]}`, nil, 413, wire.CodePayloadTooLarge, "more than 4096 bytes"},

		// The Idempotency-Key header.
		{"idempotency header differs", "POST", "/v1/tx", `{"idempotency_key":"a","ops":[{"op":"delete","key":"k"}]}`, http.Header{"Idempotency-Key": {"b"}}, 400, wire.CodeInvalidParam, "differs"},
		{"idempotency header too long", "POST", "/v1/tx", okTx, http.Header{"Idempotency-Key": {longIdem}}, 400, wire.CodeInvalidParam, "129 bytes"},
		{"idempotency header twice", "POST", "/v1/tx", okTx, http.Header{"Idempotency-Key": {"a", "a"}}, 400, wire.CodeInvalidParam, "given 2 times"},
		{"idempotency header invalid utf8", "POST", "/v1/tx", okTx, http.Header{"Idempotency-Key": {"a\xff"}}, 400, wire.CodeInvalidUTF8, "not valid UTF-8"},
		{"idempotency header on batch", "POST", "/v1/tx/batch", `{"txs":[` + okTx + `]}`, http.Header{"Idempotency-Key": {"a"}}, 400, wire.CodeInvalidParam, "not allowed on a batch"},

		// Query parameters of writes.
		{"timeout unparsable", "POST", "/v1/tx?timeout=soon", okTx, nil, 400, wire.CodeInvalidParam, `timeout="soon"`},
		{"timeout without unit", "POST", "/v1/tx?timeout=5", okTx, nil, 400, wire.CodeInvalidParam, "want a duration"},
		{"timeout zero", "POST", "/v1/tx?timeout=0s", okTx, nil, 400, wire.CodeInvalidParam, `parameter timeout="0s": want a positive duration`},
		{"timeout negative", "POST", "/v1/tx?timeout=-1s", okTx, nil, 400, wire.CodeInvalidParam, `parameter timeout="-1s": want a positive duration`},
		{"timeout above max", "POST", "/v1/tx?timeout=2m", okTx, nil, 400, wire.CodeInvalidParam, `parameter timeout="2m": want a duration of at most 1m0s`},
		{"ack unknown", "POST", "/v1/tx?ack=some", okTx, nil, 400, wire.CodeInvalidParam, `ack="some": want one of quorum, all, accepted`},
		{"unknown parameter", "POST", "/v1/tx?timout=1s", okTx, nil, 400, wire.CodeInvalidParam, `unknown parameter "timout"; this route takes: timeout, ack`},
		{"parameter twice", "POST", "/v1/tx?ack=all&ack=all", okTx, nil, 400, wire.CodeInvalidParam, `parameter "ack" given 2 times; give it once`},
		{"malformed query", "POST", "/v1/tx?timeout=%zz", okTx, nil, 400, wire.CodeInvalidParam, "query"},

		// Batches.
		{"batch invalid tx", "POST", "/v1/tx/batch", `{"txs":[` + okTx + `,{"ops":[{"op":"put","key":"","value":1}]}]}`, nil, 400, wire.CodeInvalidTx, "txs[1].ops[0].key: empty"},
		{"batch empty", "POST", "/v1/tx/batch", `{"txs":[]}`, nil, 400, wire.CodeInvalidTx, "txs: empty"},
		{"batch missing txs", "POST", "/v1/tx/batch", `{}`, nil, 400, wire.CodeInvalidTx, "txs: missing"},
		{"batch null tx", "POST", "/v1/tx/batch", `{"txs":[null]}`, nil, 400, wire.CodeInvalidTx, "txs[0]: want object, got null"},
		{"batch too many", "POST", "/v1/tx/batch", `{"txs":[` + okTx + `,` + okTx + `,` + okTx + `]}`, nil, 400, wire.CodeInvalidTx, "txs: more than 2 elements"},
		{"batch same idempotency key", "POST", "/v1/tx/batch", `{"txs":[{"idempotency_key":"a","ops":[{"op":"delete","key":"k"}]},{"idempotency_key":"a","ops":[{"op":"delete","key":"k"}]}]}`, nil, 400, wire.CodeInvalidTx, "txs[1].idempotency_key: same as txs[0]"},
		{"batch unknown field", "POST", "/v1/tx/batch", `{"txs":[` + okTx + `],"atomic":true}`, nil, 400, wire.CodeInvalidTx, "atomic: unknown field"},
		{"batch bad timeout", "POST", "/v1/tx/batch?timeout=x", `{"txs":[` + okTx + `]}`, nil, 400, wire.CodeInvalidParam, "timeout"},

		// Transaction lookups.
		{"bad txid", "GET", "/v1/tx/nope", "", nil, 400, wire.CodeInvalidParam, "txid"},
		{"zero txid", "GET", "/v1/tx/0000000000000", "", nil, 400, wire.CodeInvalidParam, "zero"},
		{"txid bad char", "GET", "/v1/tx/01ARZ3NDEKTSU", "", nil, 400, wire.CodeInvalidParam, "bad character"},
		{"wait unparsable", "GET", "/v1/tx/01ARZ3NDEKTSV?wait=long", "", nil, 400, wire.CodeInvalidParam, "wait"},
		{"wait negative", "GET", "/v1/tx/01ARZ3NDEKTSV?wait=-1s", "", nil, 400, wire.CodeInvalidParam, `parameter wait="-1s": want a duration of 0 or more`},
		{"wait above max", "GET", "/v1/tx/01ARZ3NDEKTSV?wait=1h", "", nil, 400, wire.CodeInvalidParam, `parameter wait="1h": want a duration of at most 1m0s`},
		{"idempotency_key missing", "GET", "/v1/tx", "", nil, 400, wire.CodeInvalidParam, `parameter "idempotency_key" missing`},
		{"idempotency_key empty", "GET", "/v1/tx?idempotency_key=", "", nil, 400, wire.CodeInvalidParam, `parameter "idempotency_key" missing`},
		{"idempotency_key too long", "GET", "/v1/tx?idempotency_key=" + longIdem, "", nil, 400, wire.CodeInvalidParam, "129 bytes"},

		// Reads.
		{"consistency unknown", "GET", "/v1/kv/k?consistency=eventual", "", nil, 400, wire.CodeInvalidParam, "consistency"},
		{"kv key too long", "GET", "/v1/kv/" + longKey, "", nil, 400, wire.CodeInvalidParam, "key: 17 bytes, limit 16"},
		{"kv key invalid utf8", "GET", "/v1/kv/a%FF", "", nil, 400, wire.CodeInvalidUTF8, "key: not valid UTF-8"},
		{"kv forwarded header bad", "GET", "/v1/kv/k", "", http.Header{"X-Txlog-Forwarded": {"yes"}}, 400, wire.CodeInvalidParam, "X-Txlog-Forwarded"},
		{"kv empty key", "GET", "/v1/kv/", "", nil, 404, wire.CodeNotFound, "no route"},
		{"log from zero", "GET", "/v1/log?from=0", "", nil, 400, wire.CodeInvalidParam, "from"},
		{"log from unparsable", "GET", "/v1/log?from=first", "", nil, 400, wire.CodeInvalidParam, "from"},
		{"log from negative", "GET", "/v1/log?from=-1", "", nil, 400, wire.CodeInvalidParam, "from"},
		{"log limit zero", "GET", "/v1/log?limit=0", "", nil, 400, wire.CodeInvalidParam, "limit"},
		{"log limit too big", "GET", "/v1/log?limit=1001", "", nil, 400, wire.CodeInvalidParam, "from 1 to 1000"},
		{"log limit unparsable", "GET", "/v1/log?limit=ten", "", nil, 400, wire.CodeInvalidParam, "limit"},

		// Cluster administration.
		{"join missing id", "POST", "/v1/cluster/join", `{"raft_addr":"127.0.0.1:7000"}`, nil, 400, wire.CodeBadRequest, "id: missing"},
		{"join missing raft_addr", "POST", "/v1/cluster/join", `{"id":"n2"}`, nil, 400, wire.CodeBadRequest, "raft_addr: missing"},
		{"join raft_addr not host:port", "POST", "/v1/cluster/join", `{"id":"n4","raft_addr":"not an address"}`, nil, 400, wire.CodeBadRequest, `raft_addr: "not an address": want host:port`},
		{"join raft_addr unspecified", "POST", "/v1/cluster/join", `{"id":"n4","raft_addr":"0.0.0.0:7000"}`, nil, 400, wire.CodeBadRequest, "raft_addr: \"0.0.0.0:7000\": want a host other nodes can dial"},
		{"join raft_addr no host", "POST", "/v1/cluster/join", `{"id":"n4","raft_addr":":7000"}`, nil, 400, wire.CodeBadRequest, "want a host other nodes can dial"},
		{"join raft_addr port 0", "POST", "/v1/cluster/join", `{"id":"n4","raft_addr":"10.0.0.4:0"}`, nil, 400, wire.CodeBadRequest, "want a port in 1..65535"},
		{"join raft_addr port name", "POST", "/v1/cluster/join", `{"id":"n4","raft_addr":"10.0.0.4:raft"}`, nil, 400, wire.CodeBadRequest, "want a port in 1..65535"},
		{"join unknown field", "POST", "/v1/cluster/join", `{"id":"n2","raft_addr":"a:1","role":"x"}`, nil, 400, wire.CodeBadRequest, "role: unknown field"},
		{"join voter not bool", "POST", "/v1/cluster/join", `{"id":"n2","raft_addr":"a:1","voter":"yes"}`, nil, 400, wire.CodeBadRequest, "voter: want boolean"},
		{"join replace not bool", "POST", "/v1/cluster/join", `{"id":"n2","raft_addr":"a:1","replace":1}`, nil, 400, wire.CodeBadRequest, "replace: want boolean"},
		{"join bad json", "POST", "/v1/cluster/join", `{"id":`, nil, 400, wire.CodeInvalidJSON, "body"},
		{"transfer unknown field", "POST", "/v1/cluster/transfer-leadership", `{"to":"n2"}`, nil, 400, wire.CodeBadRequest, "to: unknown field"},
		{"cluster unknown parameter", "GET", "/v1/cluster?verbose=1", "", nil, 400, wire.CodeInvalidParam, "verbose"},

		// Internal proposals.
		{"propose truncated frame", "POST", "/v1/internal/propose", "\x05abc", nil, 400, wire.CodeBadRequest, "only 3 bytes left"},
		{"propose no frames", "POST", "/v1/internal/propose", "", nil, 400, wire.CodeBadRequest, "no frames"},
		{"propose empty frame", "POST", "/v1/internal/propose", "\x01a\x00", nil, 400, wire.CodeBadRequest, "frame 1: empty"},
		{"propose too many frames", "POST", "/v1/internal/propose", "\x01a\x01b\x01c", nil, 400, wire.CodeBadRequest, "more than 2 frames"},
		{"propose too large", "POST", "/v1/internal/propose", strings.Repeat("\x00", 9000), nil, 413, wire.CodePayloadTooLarge, "more than 8192 bytes"},
		{"propose bad ack", "POST", "/v1/internal/propose?ack=one", "\x01a", nil, 400, wire.CodeInvalidParam, "ack"},
		{"propose from empty", "POST", "/v1/internal/propose?from=", "\x01a", nil, 400, wire.CodeInvalidParam, `parameter from="": empty`},
		{"propose from too long", "POST", "/v1/internal/propose?from=" + strings.Repeat("n", 65), "\x01a", nil, 400, wire.CodeInvalidParam, ": 65 bytes, limit 64"},
		{"propose from invalid utf8", "POST", "/v1/internal/propose?from=n%FF", "\x01a", nil, 400, wire.CodeInvalidUTF8, "from: not valid UTF-8"},
		{"propose bad handoff", "POST", "/v1/internal/propose?handoff=1", "\x01a", nil, 400, wire.CodeInvalidParam, "handoff"},

		// Routing.
		{"unknown route", "GET", "/v2/tx", "", nil, 404, wire.CodeNotFound, "no route GET /v2/tx"},
		{"wrong method", "PUT", "/v1/tx", okTx, nil, 405, wire.CodeMethodNotAllowed, "PUT"},
		{"wrong method on kv", "DELETE", "/v1/kv/k", "", nil, 405, wire.CodeMethodNotAllowed, "DELETE"},
		{"wrong method on healthz", "POST", "/healthz", "", nil, 405, wire.CodeMethodNotAllowed, "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The fake has no methods: a request that reaches it gets a 500.
			rec := serve(t, testConfig, &fakeBackend{}, tt.method, tt.target, tt.body, tt.header)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.status, rec.Body)
			}
			e := errorOf(t, rec)
			if e.Code != tt.code {
				t.Errorf("code = %q, want %q (message %q)", e.Code, tt.code, e.Message)
			}
			if !strings.Contains(e.Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", e.Message, tt.message)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("Config{}.Validate() = %v, want nil", err)
	}
	err := Config{MaxBodyBytes: -1, MaxOpsPerTx: -2, DefaultTimeout: time.Hour, BodyTimeout: -3}.Validate()
	for _, want := range []string{"MaxBodyBytes: -1", "MaxOpsPerTx: -2", "DefaultTimeout: 1h0m0s, want <= MaxTimeout", "BodyTimeout: -3"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %q", err, want)
		}
	}
}

func TestRequestLog(t *testing.T) {
	var buf strings.Builder
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		return wire.TxResult{}, errors.New("disk on fire")
	}}
	rec := serve(t, Config{Logger: logger}, b, "POST", "/v1/tx", okTx, nil)
	if rec.Code != 500 {
		t.Fatalf("status = %d, want 500", rec.Code)
	}
	out := buf.String()
	for _, want := range []string{`"msg":"internal error"`, `"level":"WARN"`, `"msg":"request"`, `"component":"api"`, `"status":500`, `"path":"/v1/tx"`, `"err":"disk on fire"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log %s: want %s", out, want)
		}
	}
}

// TestReadBody reads bodies whose Content-Length is unknown, right, or over the
// limit, and one that claims more than it has.
func TestReadBody(t *testing.T) {
	body := strings.Repeat("b", 3000)
	cases := []struct {
		name   string
		length int64 // the request's ContentLength
		body   string
		limit  int64
		want   string
		code   string
	}{
		{"chunked", -1, body, 4096, body, ""},
		{"exact", int64(len(body)), body, 4096, body, ""},
		{"empty", 0, "", 4096, "", ""},
		{"over the limit", int64(len(body)), body, 1000, "", wire.CodePayloadTooLarge},
		{"chunked over the limit", -1, body, 1000, "", wire.CodePayloadTooLarge},
		{"claims over the prealloc bound", preallocBodyBytes * 4, body, preallocBodyBytes * 8, body, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/tx", strings.NewReader(c.body))
			r.ContentLength = c.length
			got, err := readBody(httptest.NewRecorder(), r, c.limit, time.Second)
			if c.code != "" {
				if e, ok := errors.AsType[*wire.Error](err); !ok || e.Code != c.code {
					t.Fatalf("readBody() = %d bytes, %v; want code %s", len(got), err, c.code)
				}
				return
			}
			if err != nil || string(got) != c.want {
				t.Fatalf("readBody() = %d bytes, %v; want %d bytes", len(got), err, len(c.want))
			}
			// What a client declares but does not send costs at most about the
			// bound (allocations round up to a size class).
			if max := 2 * preallocBodyBytes; cap(got) > max {
				t.Fatalf("readBody() buffer of %d bytes for %d, more than %d", cap(got), len(got), max)
			}
		})
	}
}

// TestSlowBody sends the headers of a write and part of its body, then
// nothing: the node answers 408 request_timeout once the body timeout has
// passed, instead of holding the handler for as long as the client keeps the
// connection, and goes on serving other clients.
func TestSlowBody(t *testing.T) {
	b := &fakeBackend{}
	srv := httptest.NewServer(NewServer(Config{BodyTimeout: 300 * time.Millisecond}, b))
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"ops\":")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a slow body: %v", err)
	}
	defer resp.Body.Close()
	var eb struct{ Error wire.ErrorBody }
	if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); resp.StatusCode != http.StatusRequestTimeout || eb.Error.Code != wire.CodeRequestTimeout || took > 5*time.Second {
		t.Fatalf("slow body: %d %+v after %v; want 408 %s after about 300ms", resp.StatusCode, eb.Error, took, wire.CodeRequestTimeout)
	}
	// Another client is served as before.
	r, err := http.Get(srv.URL + "/healthz")
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("GET /healthz after a slow body = %v, %v", r, err)
	}
	r.Body.Close()
}
