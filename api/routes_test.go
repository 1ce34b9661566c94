package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

const testID = txid.ID(0x0123456789ABCDEF)

// decodeAs decodes the body of an answer into a value of type T.
func decodeAs[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}

func TestSubmit(t *testing.T) {
	tests := []struct {
		name   string
		res    wire.TxResult
		err    error
		status int
		code   string // of the error object, if any
	}{
		{"committed", wire.TxResult{TxID: testID, Status: wire.StatusCommitted, Index: 7, Versions: map[string]uint64{"k": 1}}, nil, 200, ""},
		{"rejected", wire.TxResult{TxID: testID, Status: wire.StatusRejected, Conflict: &wire.Conflict{Key: "k", Expected: 1, Actual: 2}}, nil, 409, ""},
		{"pending", wire.TxResult{TxID: testID, Status: wire.StatusPending}, nil, 202, ""},
		{"unknown outcome", wire.TxResult{TxID: testID}, fmt.Errorf("apply: %w", wire.ErrUnknownOutcome), 503, wire.CodeUnknownOutcome},
		{"unknown status without error", wire.TxResult{TxID: testID, Status: wire.StatusUnknown}, nil, 503, wire.CodeUnknownOutcome},
		{"no leader", wire.TxResult{}, wire.ErrNoLeader, 503, wire.CodeNoLeader},
		{"shutting down", wire.TxResult{}, wire.ErrShuttingDown, 503, wire.CodeShuttingDown},
		{"timeout", wire.TxResult{}, context.DeadlineExceeded, 504, wire.CodeTimeout},
		{"invalid from backend", wire.TxResult{}, &wire.Error{Code: wire.CodeInvalidParam, Message: "ack=all: not available"}, 400, wire.CodeInvalidParam},
		{"internal", wire.TxResult{}, errors.New("disk on fire"), 500, wire.CodeInternal},
		{"bad status from backend", wire.TxResult{TxID: testID, Status: "weird"}, nil, 500, wire.CodeInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got wire.TxRequest
			var gotOpts wire.SubmitOptions
			b := &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
				if _, ok := ctx.Deadline(); !ok {
					t.Error("Submit ctx has no deadline")
				}
				got, gotOpts = tx, opts
				return tt.res, tt.err
			}}
			rec := serve(t, Config{}, b, "POST", "/v1/tx", `{"idempotency_key":"ik","ops":[{"op":"put","key":"k","value": { "a" : [1, 2] }}]}`, nil)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.status, rec.Body)
			}
			want := wire.TxRequest{IdempotencyKey: "ik", Ops: []wire.Op{{Op: wire.OpPut, Key: "k", Value: json.RawMessage(`{"a":[1,2]}`)}}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("backend got %+v, want %+v", got, want)
			}
			if gotOpts != (wire.SubmitOptions{Timeout: wire.DefaultTimeout, Ack: wire.AckQuorum}) {
				t.Errorf("backend got options %+v, want the defaults", gotOpts)
			}
			if tt.status == 503 && rec.Header().Get("Retry-After") != "1" {
				t.Errorf("Retry-After = %q, want 1", rec.Header().Get("Retry-After"))
			}
			res := decodeAs[wire.TxResult](t, rec.Body.Bytes())
			if tt.code != "" {
				e := errorOf(t, rec)
				if e.Code != tt.code {
					t.Errorf("code = %q, want %q", e.Code, tt.code)
				}
			}
			if tt.code == wire.CodeUnknownOutcome {
				if res.TxID != testID || res.Status != wire.StatusUnknown || res.IdempotencyKey != "ik" {
					t.Errorf("unknown outcome answer %s: want txid, status unknown and idempotency key", rec.Body)
				}
				return
			}
			if tt.code == "" && !reflect.DeepEqual(res, withKey(tt.res, "ik")) {
				t.Errorf("answer = %+v, want %+v", res, withKey(tt.res, "ik"))
			}
		})
	}
}

func withKey(r wire.TxResult, key string) wire.TxResult {
	r.IdempotencyKey = key
	return r
}

func TestSubmitOptionsAndHeader(t *testing.T) {
	var got wire.TxRequest
	var gotOpts wire.SubmitOptions
	b := &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		got, gotOpts = tx, opts
		return wire.TxResult{TxID: testID, Status: wire.StatusCommitted}, nil
	}}
	tests := []struct {
		name     string
		body     string
		header   http.Header
		wantKey  string
		wantNull bool
	}{
		{"key from header", `{"ops":[{"op":"put","key":"k","value":null}]}`, http.Header{"Idempotency-Key": {"from-header"}}, "from-header", true},
		{"same key in both", `{"idempotency_key":"same","ops":[{"op":"put","key":"k","value":null}]}`, http.Header{"Idempotency-Key": {"same"}}, "same", true},
		{"no key", `{"ops":[{"op":"put","key":"k","value":null}]}`, nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, Config{}, b, "POST", "/v1/tx?timeout=250ms&ack=all", tt.body, tt.header)
			if rec.Code != 200 {
				t.Fatalf("status = %d; body %s", rec.Code, rec.Body)
			}
			if got.IdempotencyKey != tt.wantKey {
				t.Errorf("idempotency key = %q, want %q", got.IdempotencyKey, tt.wantKey)
			}
			if string(got.Ops[0].Value) != "null" {
				t.Errorf("value = %q, want null (a put of null is stored as null)", got.Ops[0].Value)
			}
			if gotOpts != (wire.SubmitOptions{Timeout: 250 * time.Millisecond, Ack: wire.AckAll}) {
				t.Errorf("options = %+v", gotOpts)
			}
		})
	}
}

func TestSubmitBatch(t *testing.T) {
	b := &fakeBackend{SubmitBatchFunc: func(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
		if len(txs) != 2 || txs[1].Ops[0].IfVersion == nil || *txs[1].Ops[0].IfVersion != 0 {
			t.Errorf("backend got %+v", txs)
		}
		return []wire.TxResult{
			{TxID: testID, Status: wire.StatusCommitted},
			{Error: &wire.ErrorBody{Code: wire.CodeNoLeader, Message: "no leader"}},
		}, nil
	}}
	rec := serve(t, Config{}, b, "POST", "/v1/tx/batch?ack=accepted", `{"txs":[{"idempotency_key":"a","ops":[{"op":"delete","key":"x"}]},{"ops":[{"op":"put","key":"y","value":"v","if_version":0}]}]}`, nil)
	if rec.Code != 200 {
		t.Fatalf("status = %d; body %s", rec.Code, rec.Body)
	}
	br := decodeAs[wire.BatchResponse](t, rec.Body.Bytes())
	if len(br.Results) != 2 || br.Results[0].Status != wire.StatusCommitted || br.Results[0].IdempotencyKey != "a" || br.Results[1].Error.Code != wire.CodeNoLeader {
		t.Errorf("answer = %s", rec.Body)
	}

	b.SubmitBatchFunc = func(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
		return nil, wire.ErrNoLeader
	}
	rec = serve(t, Config{}, b, "POST", "/v1/tx/batch", `{"txs":[`+okTx+`]}`, nil)
	if rec.Code != 503 || errorOf(t, rec).Code != wire.CodeNoLeader {
		t.Errorf("no leader: %d %s", rec.Code, rec.Body)
	}
}

func TestPropose(t *testing.T) {
	var got [][]byte
	var gotOpts wire.SubmitOptions
	b := &fakeBackend{ProposeFunc: func(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
		got, gotOpts = payloads, opts
		res := make([]wire.TxResult, len(payloads))
		for i := range res {
			res[i] = wire.TxResult{TxID: testID + txid.ID(i), Status: wire.StatusCommitted}
		}
		return res, nil
	}}
	payloads := [][]byte{[]byte("one"), {0, 1, 2}, make([]byte, 300)}
	rec := serve(t, Config{}, b, "POST", "/v1/internal/propose?timeout=2s", string(wire.EncodeFrames(payloads)), nil)
	if rec.Code != 200 {
		t.Fatalf("status = %d; body %s", rec.Code, rec.Body)
	}
	if !reflect.DeepEqual(got, payloads) {
		t.Errorf("backend got %q, want %q", got, payloads)
	}
	if br := decodeAs[wire.BatchResponse](t, rec.Body.Bytes()); len(br.Results) != 3 {
		t.Errorf("answer = %s", rec.Body)
	}
	if gotOpts.From != "" || gotOpts.HandOff {
		t.Errorf("options without from and handoff = %+v", gotOpts)
	}
	rec = serve(t, Config{}, b, "POST", "/v1/internal/propose?from=n2&handoff=true&fresh=true", string(wire.EncodeFrames(payloads)), nil)
	if rec.Code != 200 || gotOpts.From != "n2" || !gotOpts.HandOff || !gotOpts.Fresh {
		t.Errorf("from=n2&handoff=true&fresh=true: %d, options %+v", rec.Code, gotOpts)
	}

	b.ProposeFunc = func(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
		return nil, wire.ErrNotLeader
	}
	rec = serve(t, Config{}, b, "POST", "/v1/internal/propose", string(wire.EncodeFrames(payloads)), nil)
	if rec.Code != 503 || errorOf(t, rec).Code != wire.CodeNotLeader {
		t.Errorf("not leader: %d %s", rec.Code, rec.Body)
	}
}

func TestTxLookup(t *testing.T) {
	b := &fakeBackend{
		TxFunc: func(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error) {
			switch id {
			case testID:
				return wire.TxResult{TxID: id, Status: wire.StatusRejected, IdempotencyKey: fmt.Sprint(wait)}, nil
			case testID + 1:
				return wire.TxResult{TxID: id, Status: wire.StatusPending}, nil
			}
			return wire.TxResult{}, fmt.Errorf("tx %s: %w", id, wire.ErrNotFound)
		},
		TxByIdempotencyKeyFunc: func(ctx context.Context, key string, wait time.Duration) (wire.TxResult, error) {
			if key == "a b/c" {
				return wire.TxResult{TxID: testID, Status: wire.StatusCommitted, IdempotencyKey: key}, nil
			}
			return wire.TxResult{}, wire.ErrNotFound
		},
	}
	tests := []struct {
		name   string
		target string
		status int
		want   wire.TxResult
	}{
		{"rejected with wait", "/v1/tx/" + testID.String() + "?wait=1500ms", 200, wire.TxResult{TxID: testID, Status: wire.StatusRejected, IdempotencyKey: "1.5s"}},
		{"lower case txid", "/v1/tx/" + lower(testID.String()), 200, wire.TxResult{TxID: testID, Status: wire.StatusRejected, IdempotencyKey: "0s"}},
		{"pending", "/v1/tx/" + (testID + 1).String(), 200, wire.TxResult{TxID: testID + 1, Status: wire.StatusPending}},
		{"not found", "/v1/tx/" + (testID + 2).String(), 404, wire.TxResult{}},
		{"by key", "/v1/tx?idempotency_key=a+b%2Fc&wait=1s", 200, wire.TxResult{TxID: testID, Status: wire.StatusCommitted, IdempotencyKey: "a b/c"}},
		{"by key not found", "/v1/tx?idempotency_key=zzz", 404, wire.TxResult{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, Config{}, b, "GET", tt.target, "", nil)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.status, rec.Body)
			}
			if tt.status == 404 {
				if e := errorOf(t, rec); e.Code != wire.CodeNotFound {
					t.Errorf("code = %q, want not_found", e.Code)
				}
				return
			}
			if got := decodeAs[wire.TxResult](t, rec.Body.Bytes()); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("answer = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func TestGet(t *testing.T) {
	var gotKey string
	var gotOpts wire.ReadOptions
	b := &fakeBackend{GetFunc: func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
		gotKey, gotOpts = key, opts
		if key == "missing" {
			return wire.KV{}, wire.ErrNotFound
		}
		return wire.KV{Key: key, Value: json.RawMessage(`{"n":1}`), Version: 3, Index: 9}, nil
	}}
	tests := []struct {
		name     string
		target   string
		header   http.Header
		wantKey  string
		wantOpts wire.ReadOptions
		status   int
	}{
		{"plain", "/v1/kv/k", nil, "k", wire.ReadOptions{Consistency: wire.ConsistencyLinearizable}, 200},
		{"slashes", "/v1/kv/dir/sub//leaf", nil, "dir/sub//leaf", wire.ReadOptions{Consistency: wire.ConsistencyLinearizable}, 200},
		{"escaped slash and percent", "/v1/kv/a%2Fb%25c", nil, "a/b%c", wire.ReadOptions{Consistency: wire.ConsistencyLinearizable}, 200},
		{"dot segments", "/v1/kv/a/../b", nil, "a/../b", wire.ReadOptions{Consistency: wire.ConsistencyLinearizable}, 200},
		{"escaped query chars", "/v1/kv/what%3F%23%20now", nil, "what?# now", wire.ReadOptions{Consistency: wire.ConsistencyLinearizable}, 200},
		{"unicode", "/v1/kv/%E2%82%AC", nil, "€", wire.ReadOptions{Consistency: wire.ConsistencyLinearizable}, 200},
		{"stale", "/v1/kv/k?consistency=stale", nil, "k", wire.ReadOptions{Consistency: wire.ConsistencyStale}, 200},
		{"leader forwarded", "/v1/kv/k?consistency=leader", http.Header{"X-Txlog-Forwarded": {"1"}}, "k", wire.ReadOptions{Consistency: wire.ConsistencyLeader, Forwarded: true}, 200},
		{"missing", "/v1/kv/missing", nil, "missing", wire.ReadOptions{Consistency: wire.ConsistencyLinearizable}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, Config{}, b, "GET", tt.target, "", tt.header)
			if rec.Code != tt.status {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.status, rec.Body)
			}
			if gotKey != tt.wantKey || gotOpts != tt.wantOpts {
				t.Errorf("backend got %q %+v, want %q %+v", gotKey, gotOpts, tt.wantKey, tt.wantOpts)
			}
			if tt.status == 200 {
				kv := decodeAs[wire.KV](t, rec.Body.Bytes())
				if kv.Key != tt.wantKey || string(kv.Value) != `{"n":1}` || kv.Version != 3 {
					t.Errorf("answer = %s", rec.Body)
				}
			} else if e := errorOf(t, rec); e.Code != wire.CodeNotFound {
				t.Errorf("code = %q, want not_found", e.Code)
			}
		})
	}
}

func TestLog(t *testing.T) {
	var gotFrom uint64
	var gotLimit int
	b := &fakeBackend{LogFunc: func(ctx context.Context, from uint64, limit int) (wire.LogPage, error) {
		gotFrom, gotLimit = from, limit
		return wire.LogPage{Next: from}, nil
	}}
	for _, tt := range []struct {
		target   string
		from     uint64
		limit    int
		wantPart string
	}{
		{"/v1/log", 1, DefaultLogLimit, `"entries":[]`},
		{"/v1/log?from=42&limit=1000", 42, 1000, `"next":42`},
	} {
		rec := serve(t, Config{}, b, "GET", tt.target, "", nil)
		if rec.Code != 200 || gotFrom != tt.from || gotLimit != tt.limit {
			t.Errorf("%s: status %d, backend got from=%d limit=%d, want %d %d", tt.target, rec.Code, gotFrom, gotLimit, tt.from, tt.limit)
		}
		if !strings.Contains(rec.Body.String(), tt.wantPart) {
			t.Errorf("%s: answer %s, want %s", tt.target, rec.Body, tt.wantPart)
		}
	}
}

func TestClusterRoutes(t *testing.T) {
	var joined wire.JoinRequest
	var removed string
	var transfer wire.TransferRequest
	b := &fakeBackend{
		ClusterFunc: func(ctx context.Context) (wire.ClusterStatus, error) {
			return wire.ClusterStatus{ID: "n1", State: "leader", LeaderID: "n1", Members: []wire.Member{{ID: "n1", Suffrage: "voter", Leader: true}}}, nil
		},
		JoinFunc: func(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error) {
			joined = req
			return wire.JoinResult{NodeNumber: 4}, nil
		},
		RemoveFunc: func(ctx context.Context, id string) error {
			removed = id
			if id == "ghost" {
				return wire.ErrNotFound
			}
			return nil
		},
		TransferLeadershipFunc: func(ctx context.Context, req wire.TransferRequest) (wire.TransferResult, error) {
			transfer = req
			return wire.TransferResult{LeaderID: "n2"}, nil
		},
	}
	rec := serve(t, Config{}, b, "GET", "/v1/cluster", "", nil)
	if st := decodeAs[wire.ClusterStatus](t, rec.Body.Bytes()); rec.Code != 200 || st.ID != "n1" || len(st.Members) != 1 {
		t.Errorf("cluster: %d %s", rec.Code, rec.Body)
	}

	rec = serve(t, Config{}, b, "POST", "/v1/cluster/join", `{"id":"n2","raft_addr":"10.0.0.2:7000","http_addr":"10.0.0.2:8080","voter":false}`, nil)
	if rec.Code != 200 || joined.ID != "n2" || joined.RaftAddr != "10.0.0.2:7000" || joined.Voter == nil || *joined.Voter {
		t.Errorf("join: %d %s, backend got %+v", rec.Code, rec.Body, joined)
	}
	if res := decodeAs[wire.JoinResult](t, rec.Body.Bytes()); res.Status != "ok" || res.NodeNumber != 4 {
		t.Errorf("join answer %s: want status ok, node_number 4", rec.Body)
	}
	rec = serve(t, Config{}, b, "POST", "/v1/cluster/join", `{"id":"n5","raft_addr":"10.0.0.5:7000","node_number":9}`, nil)
	if rec.Code != 200 || joined.NodeNumber != 9 {
		t.Errorf("join with node_number: %d %s, backend got %+v", rec.Code, rec.Body, joined)
	}
	for _, body := range []string{
		`{"id":"n5","raft_addr":"h:1","node_number":0}`,
		`{"id":"n5","raft_addr":"h:1","node_number":1024}`,
		`{"id":"n5","raft_addr":"h:1","node_number":-1}`,
		`{"id":"n5","raft_addr":"h:1","node_number":"3"}`,
	} {
		rec = serve(t, Config{}, b, "POST", "/v1/cluster/join", body, nil)
		if rec.Code != 400 || errorOf(t, rec).Code != wire.CodeBadRequest || !strings.Contains(rec.Body.String(), "node_number") {
			t.Errorf("join %s: %d %s, want 400 bad_request naming node_number", body, rec.Code, rec.Body)
		}
	}
	b.JoinFunc = func(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error) {
		return wire.JoinResult{}, &wire.Error{Code: wire.CodeNodeNumberTaken, Message: "node number 2 is held by member n2"}
	}
	rec = serve(t, Config{}, b, "POST", "/v1/cluster/join", `{"id":"x","raft_addr":"h:1","node_number":2}`, nil)
	if rec.Code != 409 || errorOf(t, rec).Code != wire.CodeNodeNumberTaken {
		t.Errorf("join taken number: %d %s, want 409 node_number_taken", rec.Code, rec.Body)
	}

	rec = serve(t, Config{}, b, "DELETE", "/v1/cluster/nodes/n%2F3", "", nil)
	if rec.Code != 200 || removed != "n/3" {
		t.Errorf("remove: %d %s, backend got %q", rec.Code, rec.Body, removed)
	}
	rec = serve(t, Config{}, b, "DELETE", "/v1/cluster/nodes/ghost", "", nil)
	if rec.Code != 404 || errorOf(t, rec).Code != wire.CodeNotFound {
		t.Errorf("remove unknown: %d %s", rec.Code, rec.Body)
	}

	for _, tt := range []struct{ body, want string }{{"", ""}, {"  ", ""}, {`{}`, ""}, {`{"id":"n2"}`, "n2"}} {
		rec = serve(t, Config{}, b, "POST", "/v1/cluster/transfer-leadership", tt.body, nil)
		if res := decodeAs[wire.TransferResult](t, rec.Body.Bytes()); rec.Code != 200 || res.LeaderID != "n2" || transfer.ID != tt.want {
			t.Errorf("transfer %q: %d %s, backend got %+v", tt.body, rec.Code, rec.Body, transfer)
		}
	}
}

func TestHealthAndReady(t *testing.T) {
	var ready error
	b := &fakeBackend{ReadyFunc: func(ctx context.Context) error { return ready }}
	for _, target := range []string{"/healthz", "/readyz"} {
		rec := serve(t, Config{}, b, "GET", target, "", nil)
		if rec.Code != 200 || rec.Body.String() != "{\"status\":\"ok\"}\n" {
			t.Errorf("%s: %d %q", target, rec.Code, rec.Body)
		}
	}
	for _, err := range []error{wire.ErrNoLeader, &wire.Error{Code: wire.CodeNotReady, Message: "applied index 3 behind commit index 5"}} {
		ready = err
		rec := serve(t, Config{}, b, "GET", "/readyz", "", nil)
		if e := errorOf(t, rec); rec.Code != 503 || e.Code != wire.CodeNotReady {
			t.Errorf("readyz with %v: %d %+v", err, rec.Code, e)
		}
		if rec := serve(t, Config{}, b, "GET", "/healthz", "", nil); rec.Code != 200 {
			t.Errorf("healthz while not ready: %d", rec.Code)
		}
	}
	// A node that will not become ready by waiting says why in its code.
	for err, code := range map[error]string{wire.ErrRemoved: wire.CodeRemoved, wire.ErrNodeNumberClash: wire.CodeNodeNumberClash} {
		ready = fmt.Errorf("%w: details", err)
		rec := serve(t, Config{}, b, "GET", "/readyz", "", nil)
		if e := errorOf(t, rec); rec.Code != 503 || e.Code != code {
			t.Errorf("readyz with %v: %d %+v, want 503 %s", err, rec.Code, e, code)
		}
	}
}

func TestDashboardRoutes(t *testing.T) {
	var got []string
	dash := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path)
		w.Write([]byte("{}"))
	})
	tests := []struct {
		name      string
		dashboard http.Handler
		method    string
		target    string
		status    int
		routed    bool
	}{
		{"stats", dash, "GET", "/v1/stats", 200, true},
		{"events", dash, "GET", "/v1/events", 200, true},
		{"members' stats", dash, "GET", "/v1/stats/members", 200, true},
		{"members' stats unknown parameter", dash, "GET", "/v1/stats/members?id=n2", 400, false},
		{"no dashboard members' stats", nil, "GET", "/v1/stats/members", 404, false},
		{"page", dash, "GET", "/ui/", 200, true},
		{"page file", dash, "GET", "/ui/index.html", 200, true},
		{"stats POST", dash, "POST", "/v1/stats", 405, false},
		{"stats unknown parameter", dash, "GET", "/v1/stats?x=1", 400, false},
		{"events unknown parameter", dash, "GET", "/v1/events?since=1", 400, false},
		{"no dashboard stats", nil, "GET", "/v1/stats", 404, false},
		{"no dashboard page", nil, "GET", "/ui/", 404, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			cfg := testConfig
			cfg.Dashboard = tt.dashboard
			rec := serve(t, cfg, &fakeBackend{}, tt.method, tt.target, "", nil)
			if rec.Code != tt.status || (len(got) == 1) != tt.routed {
				t.Fatalf("%s %s = %d, dashboard saw %v; want %d, routed %v", tt.method, tt.target, rec.Code, got, tt.status, tt.routed)
			}
		})
	}
}

// TestNoInternalRoutesOnClientPort: the client port's handler serves no
// /v1/internal/* route; the peer link's (PeerHandler) serves the proposal.
func TestNoInternalRoutesOnClientPort(t *testing.T) {
	b := &fakeBackend{}
	srv := NewServer(Config{}, b)
	for _, tc := range []struct{ method, target string }{
		{"POST", "/v1/internal/propose"},
		{"GET", "/v1/internal/stream"},
		{"POST", "/v1/internal/anything"},
	} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, strings.NewReader("\x01a")))
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s %s on the client port = %d, want 404", tc.method, tc.target, rec.Code)
		}
	}
	rec := httptest.NewRecorder()
	srv.PeerHandler().ServeHTTP(rec, httptest.NewRequest("POST", "/v1/internal/propose", strings.NewReader("")))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("POST /v1/internal/propose on the peer handler = %d, want 400 (no frames)", rec.Code)
	}
}
