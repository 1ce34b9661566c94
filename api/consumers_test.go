package api

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

func TestDecodeCommitOffsetOp(t *testing.T) {
	tests := []struct {
		name string
		body string
		want wire.TxRequest
	}{
		{"with a put", `{"ops":[{"op":"put","key":"k","value":1},{"op":"commit_offset","group":"billing","offset":17}]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: "k", Value: json.RawMessage(`1`)}, {Op: wire.OpCommitOffset, Group: "billing", Offset: 17}}}},
		{"reset without offset", `{"ops":[{"op":"commit_offset","group":"g","reset":true}]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpCommitOffset, Group: "g", Reset: true}}}},
		{"empty key as encoding/json writes it", `{"ops":[{"op":"commit_offset","key":"","group":"g","offset":2}]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpCommitOffset, Group: "g", Offset: 2}}}},
		{"reset false", `{"ops":[{"reset":false,"offset":3,"group":"a/b","op":"commit_offset"}]}`,
			wire.TxRequest{Ops: []wire.Op{{Op: wire.OpCommitOffset, Group: "a/b", Offset: 3}}}},
		{"two groups", `{"fence":{"lease":"consumer/g","token":4},"ops":[{"op":"commit_offset","group":"g","offset":1},{"op":"commit_offset","group":"h","offset":1}]}`,
			wire.TxRequest{Fence: &wire.Fence{Lease: "consumer/g", Token: 4}, Ops: []wire.Op{{Op: wire.OpCommitOffset, Group: "g", Offset: 1}, {Op: wire.OpCommitOffset, Group: "h", Offset: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustDecodeTx(t, tt.body, tt.want)
			if fast, ok := fastTxBody([]byte(tt.body), fuzzLimits); !ok || !reflect.DeepEqual(fast, tt.want) {
				t.Errorf("fastTxBody() = %+v, %v; want %+v", fast, ok, tt.want)
			}
		})
	}
}

func TestDecodeCommitOffsetOpBad(t *testing.T) {
	long := strings.Repeat("g", fuzzLimits.maxKeyBytes+1)
	tests := []struct{ name, body, code, message string }{
		{"no group", `{"ops":[{"op":"commit_offset","offset":1}]}`, wire.CodeInvalidTx, "ops[0].group: missing"},
		{"empty group", `{"ops":[{"op":"commit_offset","group":"","offset":1}]}`, wire.CodeInvalidTx, "ops[0].group: empty"},
		{"long group", `{"ops":[{"op":"commit_offset","group":"` + long + `","offset":1}]}`, wire.CodeInvalidTx, "ops[0].group: 65 bytes, limit 64"},
		{"group lone surrogate", `{"ops":[{"op":"commit_offset","group":"\udc00","offset":1}]}`, wire.CodeInvalidUTF8, "ops[0].group"},
		{"no offset", `{"ops":[{"op":"commit_offset","group":"g"}]}`, wire.CodeInvalidTx, "ops[0].offset: missing"},
		{"offset 0", `{"ops":[{"op":"commit_offset","group":"g","offset":0}]}`, wire.CodeInvalidTx, "ops[0].offset: must be positive"},
		{"offset negative", `{"ops":[{"op":"commit_offset","group":"g","offset":-1}]}`, wire.CodeInvalidTx, "ops[0].offset: negative"},
		{"offset text", `{"ops":[{"op":"commit_offset","group":"g","offset":"1"}]}`, wire.CodeInvalidTx, "ops[0].offset: want non-negative integer"},
		{"reset not boolean", `{"ops":[{"op":"commit_offset","group":"g","reset":1}]}`, wire.CodeInvalidTx, "ops[0].reset: want boolean, got number"},
		{"group a number", `{"ops":[{"op":"commit_offset","group":1,"offset":1}]}`, wire.CodeInvalidTx, "ops[0].group: want string"},
		{"with key", `{"ops":[{"op":"commit_offset","key":"k","group":"g","offset":1}]}`, wire.CodeInvalidTx, "ops[0].key: not allowed on a commit_offset"},
		{"with value", `{"ops":[{"op":"commit_offset","group":"g","offset":1,"value":1}]}`, wire.CodeInvalidTx, "ops[0].value: not allowed"},
		{"with if_version", `{"ops":[{"op":"commit_offset","group":"g","offset":1,"if_version":0}]}`, wire.CodeInvalidTx, "ops[0].if_version: not allowed"},
		{"group twice in a tx", `{"ops":[{"op":"commit_offset","group":"g","offset":1},{"op":"put","key":"k","value":1},{"op":"commit_offset","group":"g","offset":2}]}`, wire.CodeInvalidTx, `ops[2].group: "g" committed twice (also ops[0])`},
		{"offset field twice", `{"ops":[{"op":"commit_offset","group":"g","offset":1,"offset":2}]}`, wire.CodeInvalidTx, "ops[0].offset: given twice"},
		{"group on a put", `{"ops":[{"op":"put","key":"k","value":1,"group":"g"}]}`, wire.CodeInvalidTx, "ops[0].group: only on a commit_offset"},
		{"offset on a delete", `{"ops":[{"op":"delete","key":"k","offset":3}]}`, wire.CodeInvalidTx, "ops[0].offset: only on a commit_offset"},
		{"unknown op", `{"ops":[{"op":"commit","group":"g","offset":1}]}`, wire.CodeInvalidTx, `want "put", "delete" or "commit_offset"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tx, ok := fastTxBody([]byte(tt.body), fuzzLimits); ok {
				t.Fatalf("fastTxBody() accepted %+v", tx)
			}
			_, err := decodeTxBody([]byte(tt.body), fuzzLimits)
			e, ok := err.(*wire.Error)
			if !ok || e.Code != tt.code || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("decodeTxBody() = %v, want %s with %q", err, tt.code, tt.message)
			}
		})
	}
}

// TestConsumerRoutes: POST /v1/consumers/{group}/offset submits the one-op
// transaction and answers as POST /v1/tx; the reads answer the backend's
// groups, 404 for an unknown one; bad input reaches no backend.
func TestConsumerRoutes(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var got []wire.TxRequest
	b := &fakeConsumers{
		Backend: fakeBackend{SubmitFunc: func(_ context.Context, tx wire.TxRequest, _ wire.SubmitOptions) (wire.TxResult, error) {
			got = append(got, tx)
			if tx.Ops[0].Offset == 1 {
				return wire.TxResult{TxID: 5, Status: wire.StatusRejected, Conflict: &wire.Conflict{Group: tx.Ops[0].Group, Expected: 1, Actual: 4}}, nil
			}
			return wire.TxResult{TxID: 6, Status: wire.StatusCommitted, Index: 9}, nil
		}},
		ConsumerFunc: func(_ context.Context, group string) (wire.ConsumerGroup, error) {
			if group != "consumer/billing" {
				return wire.ConsumerGroup{}, &wire.Error{Code: wire.CodeNotFound, Message: "no committed offset"}
			}
			return wire.ConsumerGroup{Group: group, Offset: 7, UpdatedAt: at, Lag: 3}, nil
		},
		ConsumersFunc: func(context.Context) ([]wire.ConsumerGroup, error) {
			return []wire.ConsumerGroup{{Group: "a", Offset: 1, UpdatedAt: at, Lag: 9}}, nil
		},
	}
	rec := serve(t, testConfig, b, "POST", "/v1/consumers/consumer/billing/offset", `{"offset":7,"fence":{"lease":"consumer/billing","token":3}}`, nil)
	want := wire.TxRequest{Fence: &wire.Fence{Lease: "consumer/billing", Token: 3}, Ops: []wire.Op{{Op: wire.OpCommitOffset, Group: "consumer/billing", Offset: 7}}}
	if rec.Code != http.StatusOK || len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("POST offset = %d %s, submitted %+v; want 200 with %+v", rec.Code, rec.Body, got, want)
	}
	rec = serve(t, testConfig, b, "POST", "/v1/consumers/g/offset", `{"offset":1}`, nil)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), `"conflict":{"group":"g","expected":1,"actual":4}`) {
		t.Fatalf("POST backward offset = %d %s, want 409 with the group's conflict", rec.Code, rec.Body)
	}
	rec = serve(t, testConfig, b, "POST", "/v1/consumers/g/offset", `{"reset":true}`, map[string][]string{HeaderIdempotencyKey: {"r1"}})
	if rec.Code != http.StatusOK || !reflect.DeepEqual(got[2], wire.TxRequest{IdempotencyKey: "r1", Ops: []wire.Op{{Op: wire.OpCommitOffset, Group: "g", Reset: true}}}) {
		t.Fatalf("POST reset = %d %s, submitted %+v", rec.Code, rec.Body, got[2])
	}

	rec = serve(t, testConfig, b, "GET", "/v1/consumers/consumer/billing", "", nil)
	var c wire.ConsumerGroup
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &c) != nil || c != (wire.ConsumerGroup{Group: "consumer/billing", Offset: 7, UpdatedAt: at, Lag: 3}) {
		t.Fatalf("GET group = %d %s", rec.Code, rec.Body)
	}
	rec = serve(t, testConfig, b, "GET", "/v1/consumers/other", "", nil)
	if e := errorOf(t, rec); rec.Code != http.StatusNotFound || e.Code != wire.CodeNotFound {
		t.Fatalf("GET unknown group = %d %+v, want 404 not_found", rec.Code, e)
	}
	rec = serve(t, testConfig, b, "GET", "/v1/consumers", "", nil)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"consumers":[{"group":"a","offset":1,"updated_at":"2026-01-02T03:04:05Z","lag":9}]`) {
		t.Fatalf("GET list = %d %s", rec.Code, rec.Body)
	}

	n := len(got)
	for _, tt := range []struct{ name, method, target, body, code, message string }{
		{"offset 0", "POST", "/v1/consumers/g/offset", `{"offset":0}`, wire.CodeInvalidTx, "offset: must be positive"},
		{"offset missing", "POST", "/v1/consumers/g/offset", `{}`, wire.CodeInvalidTx, "offset: missing"},
		{"group field", "POST", "/v1/consumers/g/offset", `{"offset":1,"group":"h"}`, wire.CodeInvalidTx, "group: unknown field"},
		{"bad fence", "POST", "/v1/consumers/g/offset", `{"offset":1,"fence":{"lease":"l","token":0}}`, wire.CodeInvalidTx, "fence.token: must be positive"},
		{"bad json", "POST", "/v1/consumers/g/offset", `{"offset":`, wire.CodeInvalidJSON, ""},
		{"group too long", "POST", "/v1/consumers/" + strings.Repeat("g", 17) + "/offset", `{"offset":1}`, wire.CodeInvalidParam, "group: 17 bytes, limit 16"},
		{"get group bad utf8", "GET", "/v1/consumers/a%EF%BF%BD", "", wire.CodeInvalidUTF8, "group"},
		{"list with param", "GET", "/v1/consumers?wait=1s", "", wire.CodeInvalidParam, `unknown parameter "wait"; this route takes: consistency`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, testConfig, b, tt.method, tt.target, tt.body, nil)
			if e := errorOf(t, rec); rec.Code/100 != 4 || e.Code != tt.code || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("%s %s = %d %+v, want 4xx %s with %q", tt.method, tt.target, rec.Code, e, tt.code, tt.message)
			}
		})
	}
	if len(got) != n {
		t.Fatalf("bad requests reached the backend: %+v", got[n:])
	}
	// A backend without consumer groups answers the reads 404.
	if rec := serve(t, testConfig, &fakeBackend{}, "GET", "/v1/consumers", "", nil); rec.Code != http.StatusNotFound {
		t.Fatalf("GET /v1/consumers without a ConsumerBackend = %d", rec.Code)
	}
}
