package api

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// TestLeaseBadRequests: bad input is a 4xx JSON error and reaches no backend.
func TestLeaseBadRequests(t *testing.T) {
	fail := func(...any) { t.Error("the backend was called") }
	b := &fakeLeases{
		AcquireFunc: func(context.Context, wire.LeaseRequest, bool) (wire.LeaseResult, error) {
			fail()
			return wire.LeaseResult{}, nil
		},
		ReleaseFunc: func(context.Context, string, string, uint64, bool) error { fail(); return nil },
		LeaseFunc: func(context.Context, string, time.Duration, uint64) (wire.Lease, error) {
			fail()
			return wire.Lease{}, nil
		},
		LeasesFunc: func(context.Context) ([]wire.Lease, error) { fail(); return nil, nil },
	}
	longHolder := strings.Repeat("h", wire.MaxLeaseHolderBytes+1)
	tests := []struct {
		name, method, target, body string
		status                     int
		code                       string
		message                    string
	}{
		{"ttl too short", "PUT", "/v1/leases/l", `{"holder":"a","ttl":"999ms"}`, 400, wire.CodeBadRequest, "ttl: 999ms: want 1s to 1h0m0s"},
		{"ttl too long", "PUT", "/v1/leases/l", `{"holder":"a","ttl":"1h0m1s"}`, 400, wire.CodeBadRequest, "want 1s to 1h0m0s"},
		{"ttl without unit", "PUT", "/v1/leases/l", `{"holder":"a","ttl":"5"}`, 400, wire.CodeBadRequest, "want a duration"},
		{"ttl a number", "PUT", "/v1/leases/l", `{"holder":"a","ttl":5}`, 400, wire.CodeBadRequest, "ttl: want string, got number"},
		{"ttl missing", "PUT", "/v1/leases/l", `{"holder":"a"}`, 400, wire.CodeBadRequest, "ttl: missing"},
		{"holder missing", "PUT", "/v1/leases/l", `{"ttl":"5s"}`, 400, wire.CodeBadRequest, "holder: missing"},
		{"holder empty", "PUT", "/v1/leases/l", `{"holder":"","ttl":"5s"}`, 400, wire.CodeBadRequest, "holder: empty"},
		{"holder too long", "PUT", "/v1/leases/l", `{"holder":"` + longHolder + `","ttl":"5s"}`, 400, wire.CodeBadRequest, "holder: 129 bytes, limit 128"},
		{"holder lone surrogate", "PUT", "/v1/leases/l", `{"holder":"\udc00","ttl":"5s"}`, 400, wire.CodeInvalidUTF8, "holder"},
		{"token zero", "PUT", "/v1/leases/l", `{"holder":"a","ttl":"5s","token":0}`, 400, wire.CodeBadRequest, "token: must be positive"},
		{"token negative", "PUT", "/v1/leases/l", `{"holder":"a","ttl":"5s","token":-1}`, 400, wire.CodeBadRequest, "token: negative"},
		{"unknown field", "PUT", "/v1/leases/l", `{"holder":"a","ttl":"5s","owner":"b"}`, 400, wire.CodeBadRequest, "owner: unknown field"},
		{"field twice", "PUT", "/v1/leases/l", `{"holder":"a","holder":"b","ttl":"5s"}`, 400, wire.CodeBadRequest, "holder: given twice"},
		{"bad json", "PUT", "/v1/leases/l", `{"holder":`, 400, wire.CodeInvalidJSON, ""},
		{"body array", "PUT", "/v1/leases/l", `[]`, 400, wire.CodeBadRequest, "want object"},
		{"query on put", "PUT", "/v1/leases/l?ttl=5s", `{"holder":"a","ttl":"5s"}`, 400, wire.CodeInvalidParam, `unknown parameter "ttl"; this route takes no parameters`},
		{"name too long", "PUT", "/v1/leases/" + strings.Repeat("n", 17), `{"holder":"a","ttl":"5s"}`, 400, wire.CodeInvalidParam, "name: 17 bytes, limit 16"},
		{"name replacement char", "GET", "/v1/leases/a%EF%BF%BD", ``, 400, wire.CodeInvalidUTF8, "name"},
		{"no name", "PUT", "/v1/leases/", `{"holder":"a","ttl":"5s"}`, 404, wire.CodeNotFound, "no route"},
		{"release without holder", "DELETE", "/v1/leases/l?token=3", ``, 400, wire.CodeInvalidParam, `parameter "holder" missing`},
		{"release without token", "DELETE", "/v1/leases/l?holder=a", ``, 400, wire.CodeInvalidParam, `parameter "token" missing`},
		{"release token zero", "DELETE", "/v1/leases/l?holder=a&token=0", ``, 400, wire.CodeInvalidParam, "want a positive integer"},
		{"release token text", "DELETE", "/v1/leases/l?holder=a&token=x", ``, 400, wire.CodeInvalidParam, "want a positive integer"},
		{"release empty holder", "DELETE", "/v1/leases/l?holder=&token=1", ``, 400, wire.CodeInvalidParam, `parameter holder="": empty`},
		{"get wait bad", "GET", "/v1/leases/l?wait=soon", ``, 400, wire.CodeInvalidParam, `wait="soon"`},
		{"get wait over max", "GET", "/v1/leases/l?wait=2m", ``, 400, wire.CodeInvalidParam, `parameter wait="2m": want a duration of at most 1m0s`},
		{"get after_token bad", "GET", "/v1/leases/l?wait=1s&after_token=-1", ``, 400, wire.CodeInvalidParam, "after_token"},
		{"get unknown param", "GET", "/v1/leases/l?holder=a", ``, 400, wire.CodeInvalidParam, `unknown parameter "holder"; this route takes: wait, after_token`},
		{"list with param", "GET", "/v1/leases?wait=1s", ``, 400, wire.CodeInvalidParam, `unknown parameter "wait"; this route takes: consistency`},
		{"post", "POST", "/v1/leases/l", `{}`, 405, wire.CodeMethodNotAllowed, ""},
		{"forwarded header bad", "PUT", "/v1/leases/l", `{"holder":"a","ttl":"5s"}`, 400, wire.CodeInvalidParam, wire.HeaderForwarded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h http.Header
			if tt.name == "forwarded header bad" {
				h = http.Header{wire.HeaderForwarded: {"yes"}}
			}
			rec := serve(t, testConfig, b, tt.method, tt.target, tt.body, h)
			e := errorOf(t, rec)
			if rec.Code != tt.status || e.Code != tt.code || !strings.Contains(e.Message, tt.message) {
				t.Fatalf("%s %s = %d %+v, want %d %s with %q", tt.method, tt.target, rec.Code, e, tt.status, tt.code, tt.message)
			}
		})
	}
}

// TestLeaseRoutes: what each lease path passes to the backend and answers.
func TestLeaseRoutes(t *testing.T) {
	held := wire.Lease{Name: "consumer/billing", Holder: "b", Token: 9, TTL: "5s", ExpiresIn: "3.5s"}
	var gotReq wire.LeaseRequest
	var gotForwarded bool
	b := &fakeLeases{
		AcquireFunc: func(_ context.Context, req wire.LeaseRequest, fwd bool) (wire.LeaseResult, error) {
			gotReq, gotForwarded = req, fwd
			switch req.Holder {
			case "b":
				return wire.LeaseResult{}, &wire.LeaseError{Code: wire.CodeLeaseHeld, Message: "held", Lease: held}
			case "stale":
				return wire.LeaseResult{}, &wire.LeaseError{Code: wire.CodeFenced, Message: "fenced", Lease: held}
			}
			return wire.LeaseResult{Lease: wire.Lease{Name: req.Name, Holder: req.Holder, Token: 7, TTL: req.TTL.String(), ExpiresIn: req.TTL.String()}, Acquired: req.Token == 0}, nil
		},
		ReleaseFunc: func(_ context.Context, name, holder string, token uint64, _ bool) error {
			if token != 7 {
				return &wire.LeaseError{Code: wire.CodeFenced, Message: "fenced", Lease: held}
			}
			return nil
		},
		LeaseFunc: func(_ context.Context, name string, wait time.Duration, after uint64) (wire.Lease, error) {
			if name == "free" {
				return wire.Lease{}, wire.ErrNotFound
			}
			if wait != 30*time.Second || after != 8 {
				t.Errorf("Lease(%q, %v, %d), want wait 30s after 8", name, wait, after)
			}
			return held, nil
		},
		LeasesFunc: func(context.Context) ([]wire.Lease, error) { return []wire.Lease{held}, nil },
	}

	rec := serve(t, Config{}, b, "PUT", "/v1/leases/consumer/billing", `{"holder":"a","ttl":"5s"}`, nil)
	if rec.Code != 200 || gotReq != (wire.LeaseRequest{Name: "consumer/billing", Holder: "a", TTL: 5 * time.Second}) || gotForwarded {
		t.Fatalf("acquire: %d %s, backend got %+v forwarded %v", rec.Code, rec.Body, gotReq, gotForwarded)
	}
	if want := `{"name":"consumer/billing","holder":"a","token":7,"ttl":"5s","expires_in":"5s","acquired":true}`; strings.TrimSpace(rec.Body.String()) != want {
		t.Fatalf("acquire answer %s, want %s", rec.Body, want)
	}
	rec = serve(t, Config{}, b, "PUT", "/v1/leases/l", `{"holder":"a","ttl":"1m","token":7}`, http.Header{wire.HeaderForwarded: {"1"}})
	if rec.Code != 200 || gotReq.Token != 7 || !gotForwarded || decodeAs[wire.LeaseResult](t, rec.Body.Bytes()).Acquired {
		t.Fatalf("renew: %d %s, backend got %+v", rec.Code, rec.Body, gotReq)
	}
	for holder, code := range map[string]string{"b": wire.CodeLeaseHeld, "stale": wire.CodeFenced} {
		rec = serve(t, Config{}, b, "PUT", "/v1/leases/l", `{"holder":"`+holder+`","ttl":"5s"}`, nil)
		a := decodeAs[wire.LeaseErrorAnswer](t, rec.Body.Bytes())
		if rec.Code != 409 || a.Error.Code != code || a.Lease == nil || *a.Lease != held {
			t.Fatalf("holder %s: %d %s, want 409 %s with the lease", holder, rec.Code, rec.Body, code)
		}
	}
	rec = serve(t, Config{}, b, "DELETE", "/v1/leases/l?holder=a&token=7", ``, nil)
	if rec.Code != 200 || decodeAs[wire.LeaseReleased](t, rec.Body.Bytes()) != (wire.LeaseReleased{Name: "l", Released: true}) {
		t.Fatalf("release: %d %s", rec.Code, rec.Body)
	}
	rec = serve(t, Config{}, b, "DELETE", "/v1/leases/l?holder=a&token=6", ``, nil)
	if a := decodeAs[wire.LeaseErrorAnswer](t, rec.Body.Bytes()); rec.Code != 409 || a.Error.Code != wire.CodeFenced || a.Lease == nil {
		t.Fatalf("stale release: %d %s", rec.Code, rec.Body)
	}
	rec = serve(t, Config{}, b, "GET", "/v1/leases/consumer%2Fbilling?wait=30s&after_token=8", ``, nil)
	if rec.Code != 200 || decodeAs[wire.Lease](t, rec.Body.Bytes()) != held {
		t.Fatalf("get: %d %s", rec.Code, rec.Body)
	}
	rec = serve(t, Config{}, b, "GET", "/v1/leases/free", ``, nil)
	if rec.Code != 404 || errorOf(t, rec).Code != wire.CodeNotFound {
		t.Fatalf("get free: %d %s", rec.Code, rec.Body)
	}
	rec = serve(t, Config{}, b, "GET", "/v1/leases", ``, nil)
	if rec.Code != 200 || !reflect.DeepEqual(decodeAs[wire.LeaseList](t, rec.Body.Bytes()).Leases, []wire.Lease{held}) {
		t.Fatalf("list: %d %s", rec.Code, rec.Body)
	}
	// A Backend without leases answers their paths 404.
	rec = serve(t, Config{}, &fakeBackend{}, "GET", "/v1/leases", ``, nil)
	if rec.Code != 404 {
		t.Fatalf("list without a LeaseBackend: %d %s", rec.Code, rec.Body)
	}
}

// TestFenceDecode: a fence on POST /v1/tx and in a batch reaches the
// backend, on the fast and the slow decoding paths alike; a bad one is 400.
func TestFenceDecode(t *testing.T) {
	want := &wire.Fence{Lease: "consumer/billing", Token: 12}
	var got []wire.TxRequest
	b := &fakeBackend{
		SubmitFunc: func(_ context.Context, tx wire.TxRequest, _ wire.SubmitOptions) (wire.TxResult, error) {
			got = append(got, tx)
			return wire.TxResult{TxID: testID, Status: wire.StatusRejected, Conflict: &wire.Conflict{Fence: tx.Fence.Lease, Expected: tx.Fence.Token, Actual: 13}}, nil
		},
		SubmitBatchFunc: func(_ context.Context, txs []wire.TxRequest, _ wire.SubmitOptions) ([]wire.TxResult, error) {
			got = append(got, txs...)
			return make([]wire.TxResult, len(txs)), nil
		},
	}
	for _, body := range []string{
		`{"fence":{"lease":"consumer/billing","token":12},"ops":[{"op":"delete","key":"k"}]}`,
		`{"ops":[{"op":"delete","key":"k"}],"fence":{"token":12,"lease":"consumer\/billing"}}`, // an escape: the slow path
	} {
		got = nil
		rec := serve(t, Config{}, b, "POST", "/v1/tx", body, nil)
		if rec.Code != 409 || len(got) != 1 || !reflect.DeepEqual(got[0].Fence, want) {
			t.Fatalf("POST %s = %d %s, backend got %+v", body, rec.Code, rec.Body, got)
		}
		if w := `"conflict":{"fence":"consumer/billing","expected":12,"actual":13}`; !strings.Contains(rec.Body.String(), w) {
			t.Fatalf("answer %s lacks %s", rec.Body, w)
		}
	}
	lim := limits{maxKeyBytes: DefaultMaxKeyBytes, maxOps: 10, maxTxs: 10}
	if tx, ok := fastTxBody([]byte(`{"fence":{"lease":"consumer/billing","token":12},"ops":[{"op":"delete","key":"k"}]}`), lim); !ok || !reflect.DeepEqual(tx.Fence, want) {
		t.Fatalf("fastTxBody() = %+v, %v; want the fence on the fast path", tx, ok)
	}
	got = nil
	rec := serve(t, Config{}, b, "POST", "/v1/tx/batch", `{"txs":[{"ops":[{"op":"delete","key":"k"}]},{"fence":{"lease":"consumer/billing","token":12},"ops":[{"op":"delete","key":"k"}]}]}`, nil)
	if rec.Code != 200 || len(got) != 2 || got[0].Fence != nil || !reflect.DeepEqual(got[1].Fence, want) {
		t.Fatalf("batch = %d %s, backend got %+v", rec.Code, rec.Body, got)
	}
	for body, msg := range map[string]string{
		`{"fence":{"lease":"l","token":0},"ops":[{"op":"delete","key":"k"}]}`:              "fence.token: must be positive",
		`{"fence":{"lease":"l"},"ops":[{"op":"delete","key":"k"}]}`:                        "fence.token: missing",
		`{"fence":{"token":1},"ops":[{"op":"delete","key":"k"}]}`:                          "fence.lease: missing",
		`{"fence":{"lease":"","token":1},"ops":[{"op":"delete","key":"k"}]}`:               "fence.lease: empty",
		`{"fence":{"lease":"l","token":1,"holder":"a"},"ops":[{"op":"delete","key":"k"}]}`: "fence.holder: unknown field",
		`{"fence":null,"ops":[{"op":"delete","key":"k"}]}`:                                 "fence: want object, got null",
		`{"fence":{"lease":"l","token":"1"},"ops":[{"op":"delete","key":"k"}]}`:            "fence.token: want non-negative integer",
		`{"txs":[{"fence":{"lease":"l","token":-1},"ops":[{"op":"delete","key":"k"}]}]}`:   "txs[0].fence.token: negative",
	} {
		target := "/v1/tx"
		if strings.HasPrefix(body, `{"txs"`) {
			target = "/v1/tx/batch"
		}
		rec := serve(t, testConfig, b, "POST", target, body, nil)
		if e := errorOf(t, rec); rec.Code != 400 || e.Code != wire.CodeInvalidTx || !strings.Contains(e.Message, msg) {
			t.Errorf("POST %s = %d %+v, want 400 %s with %q", body, rec.Code, e, wire.CodeInvalidTx, msg)
		}
	}
	long := `{"fence":{"lease":"` + strings.Repeat("n", 17) + `","token":1},"ops":[{"op":"delete","key":"k"}]}`
	if rec := serve(t, testConfig, b, "POST", "/v1/tx", long, nil); rec.Code != 400 || !strings.Contains(errorOf(t, rec).Message, "fence.lease: 17 bytes") {
		t.Errorf("long fence lease: %d %s", rec.Code, rec.Body)
	}
}
