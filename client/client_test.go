package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// testNode serves b over HTTP until the test ends.
func testNode(t *testing.T, b api.Backend) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(api.NewServer(api.Config{}, b))
	t.Cleanup(srv.Close)
	return srv
}

// testClient returns a Client with fast retries.
func testClient(endpoints ...string) *Client {
	return NewClient(ClientConfig{
		Endpoints:  endpoints,
		Timeout:    5 * time.Second,
		MinBackoff: time.Millisecond,
		MaxBackoff: 5 * time.Millisecond,
		LookupWait: 10 * time.Millisecond,
	})
}

// testHTTPClient is testClient writing over HTTP (ClientConfig.HTTPWrites),
// for the tests of POST /v1/tx's exchanges.
func testHTTPClient(endpoints ...string) *Client {
	c := testClient(endpoints...)
	c.conn.cfg.HTTPWrites, c.conn.streams = true, nil
	return c
}

// keyLog records the idempotency keys a fake backend saw.
type keyLog struct {
	mu   sync.Mutex
	keys []string
}

func (l *keyLog) add(k string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keys = append(l.keys, k)
}

func (l *keyLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.keys...)
}

var putK = wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: "k", Value: []byte(`"<v>"`)}}}

func TestClientFailsOverOn503WithTheSameKey(t *testing.T) {
	var seen keyLog
	down := testNode(t, &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		seen.add(tx.IdempotencyKey)
		return wire.TxResult{}, wire.ErrNoLeader
	}})
	up := testNode(t, &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		seen.add(tx.IdempotencyKey)
		if string(tx.Ops[0].Value) != `"<v>"` {
			t.Errorf("value = %s, want it as sent", tx.Ops[0].Value)
		}
		return wire.TxResult{TxID: testID, Status: wire.StatusCommitted}, nil
	}})
	c := testClient(down.URL, up.URL)
	res, err := c.Submit(t.Context(), putK, wire.SubmitOptions{})
	if err != nil || res.Status != wire.StatusCommitted || res.TxID != testID {
		t.Fatalf("Submit() = %+v, %v; want committed", res, err)
	}
	keys := seen.all()
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("idempotency keys seen = %q, want the same generated key twice", keys)
	}
	if eps := c.Endpoints(); eps[0] != up.URL {
		t.Errorf("Endpoints() = %q, want %s first", eps, up.URL)
	}
}

func TestClientSkipsDeadEndpoint(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	var calls atomic.Int32
	up := testNode(t, &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		calls.Add(1)
		return wire.TxResult{TxID: testID, Status: wire.StatusCommitted}, nil
	}})
	// A refused connection never carried the request, so the client submits
	// without looking anything up (the fake has no lookup methods).
	res, err := testClient(dead.URL, up.URL).Submit(t.Context(), putK, wire.SubmitOptions{Timeout: time.Second, Ack: wire.AckAll})
	if err != nil || res.Status != wire.StatusCommitted || calls.Load() != 1 {
		t.Fatalf("Submit() = %+v, %v after %d calls; want committed after 1", res, err, calls.Load())
	}
}

func TestClientReturns4xxAtOnce(t *testing.T) {
	var requests atomic.Int32
	b := &fakeBackend{
		SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
			if tx.Ops[0].Key == "bad" {
				return wire.TxResult{}, &wire.Error{Code: wire.CodeInvalidParam, Message: "ack=all: not available"}
			}
			return wire.TxResult{TxID: testID, Status: wire.StatusRejected, Conflict: &wire.Conflict{Key: "k", Expected: 0, Actual: 4}}, nil
		},
		GetFunc: func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
			return wire.KV{}, wire.ErrNotFound
		},
		TxFunc: func(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error) {
			return wire.TxResult{}, wire.ErrNotFound
		},
		RemoveFunc: func(ctx context.Context, id string) error { return wire.ErrNotFound },
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		api.NewServer(api.Config{}, b).ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	other := testNode(t, &fakeBackend{})    // would answer 500 to anything
	c := testHTTPClient(srv.URL, other.URL) // TestStream4xxAtOnce: the same over the stream
	ctx := t.Context()

	tests := []struct {
		name     string
		call     func() error
		sentinel error  // nil: want *Error
		code     string // of the *Error
	}{
		{"invalid transaction", func() error {
			_, err := c.Submit(ctx, wire.TxRequest{}, wire.SubmitOptions{})
			return err
		}, nil, wire.CodeInvalidTx},
		{"bad key", func() error {
			_, err := c.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: wire.OpDelete, Key: strings.Repeat("k", 2000)}}}, wire.SubmitOptions{})
			return err
		}, nil, wire.CodeInvalidTx},
		{"bad parameter from backend", func() error {
			_, err := c.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: wire.OpDelete, Key: "bad"}}}, wire.SubmitOptions{})
			return err
		}, nil, wire.CodeInvalidParam},
		{"bad ack", func() error {
			_, err := c.Submit(ctx, putK, wire.SubmitOptions{Ack: "most"})
			return err
		}, nil, wire.CodeInvalidParam},
		{"get not found", func() error {
			_, err := c.Get(ctx, "k", wire.ReadOptions{})
			return err
		}, wire.ErrNotFound, ""},
		{"tx not found", func() error {
			_, err := c.Tx(ctx, testID, 0)
			return err
		}, wire.ErrNotFound, ""},
		{"remove not found", func() error { return c.Remove(ctx, "n9") }, wire.ErrNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := requests.Load()
			err := tt.call()
			if n := requests.Load() - before; n != 1 {
				t.Errorf("sent %d requests, want 1", n)
			}
			if tt.sentinel != nil {
				if !errors.Is(err, tt.sentinel) {
					t.Errorf("error = %v, want %v", err, tt.sentinel)
				}
				return
			}
			e, ok := errors.AsType[*wire.Error](err)
			if !ok || e.Code != tt.code {
				t.Errorf("error = %v (%T), want *Error with code %s", err, err, tt.code)
			}
		})
	}

	t.Run("rejected is not an error", func(t *testing.T) {
		res, err := c.Submit(ctx, putK, wire.SubmitOptions{})
		if err != nil || res.Status != wire.StatusRejected || res.Conflict == nil || res.Conflict.Actual != 4 {
			t.Errorf("Submit() = %+v, %v; want rejected with conflict", res, err)
		}
	})
}

func TestClientResolvesUnknownOutcome(t *testing.T) {
	var submits atomic.Int32
	var looked atomic.Value
	b := &fakeBackend{
		SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
			submits.Add(1)
			return wire.TxResult{TxID: testID}, wire.ErrUnknownOutcome
		},
		TxFunc: func(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error) {
			looked.Store(id)
			return wire.TxResult{TxID: id, Status: wire.StatusCommitted, Index: 12}, nil
		},
	}
	res, err := testClient(testNode(t, b).URL).Submit(t.Context(), putK, wire.SubmitOptions{})
	if err != nil || res.Status != wire.StatusCommitted || res.Index != 12 {
		t.Fatalf("Submit() = %+v, %v; want committed", res, err)
	}
	if submits.Load() != 1 || looked.Load() != testID {
		t.Errorf("submitted %d times and looked up %v; want once and %s", submits.Load(), looked.Load(), testID)
	}
}

func TestClientResubmitsWhenUnknownTxIsNotFound(t *testing.T) {
	var seen keyLog
	var submits atomic.Int32
	b := &fakeBackend{
		SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
			seen.add(tx.IdempotencyKey)
			if submits.Add(1) == 1 {
				return wire.TxResult{TxID: testID}, wire.ErrUnknownOutcome
			}
			return wire.TxResult{TxID: testID + 1, Status: wire.StatusCommitted}, nil
		},
		TxFunc: func(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error) {
			return wire.TxResult{}, wire.ErrNotFound
		},
	}
	res, err := testClient(testNode(t, b).URL).Submit(t.Context(), wire.TxRequest{IdempotencyKey: "mine", Ops: putK.Ops}, wire.SubmitOptions{})
	if err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("Submit() = %+v, %v; want committed", res, err)
	}
	if keys := seen.all(); len(keys) != 2 || keys[0] != "mine" || keys[1] != "mine" {
		t.Errorf("idempotency keys = %q, want [mine mine]", keys)
	}
}

func TestClientLooksUpAfterLostConnection(t *testing.T) {
	var seen, lookedUp keyLog
	b := &fakeBackend{
		SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
			seen.add(tx.IdempotencyKey)
			return wire.TxResult{TxID: testID, Status: wire.StatusCommitted}, nil
		},
		TxByIdempotencyKeyFunc: func(ctx context.Context, key string, wait time.Duration) (wire.TxResult, error) {
			lookedUp.add(key)
			return wire.TxResult{}, wire.ErrNotFound
		},
	}
	api := api.NewServer(api.Config{}, b)
	var dropped atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/tx" && r.Method == http.MethodPost && dropped.CompareAndSwap(false, true) {
			// The request arrived; the connection dies before the answer.
			body, _ := io.ReadAll(r.Body)
			seen.add("dropped:" + string(body))
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			conn.Close()
			return
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	// TestStreamDiesWithRequestsInFlight: the same over the stream.
	res, err := testHTTPClient(srv.URL).Submit(t.Context(), putK, wire.SubmitOptions{})
	if err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("Submit() = %+v, %v; want committed", res, err)
	}
	keys, looked := seen.all(), lookedUp.all()
	if len(keys) != 2 || len(looked) != 1 {
		t.Fatalf("requests %q, lookups %q; want a dropped request, a lookup and a resubmission", keys, looked)
	}
	if !strings.Contains(keys[0], `"idempotency_key":"`+looked[0]+`"`) || keys[1] != looked[0] {
		t.Errorf("dropped request %q, lookup %q, resubmission %q: want one key", keys[0], looked[0], keys[1])
	}
}

func TestClientGivesUpWithUnknownOutcome(t *testing.T) {
	b := &fakeBackend{
		SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
			return wire.TxResult{TxID: testID}, wire.ErrUnknownOutcome
		},
		TxFunc: func(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error) {
			return wire.TxResult{TxID: id, Status: wire.StatusPending}, nil
		},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	res, err := testClient(testNode(t, b).URL).Submit(ctx, wire.TxRequest{IdempotencyKey: "k7", Ops: putK.Ops}, wire.SubmitOptions{})
	if !errors.Is(err, wire.ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Submit() error = %v, want ErrUnknownOutcome and the deadline", err)
	}
	if res.Status != wire.StatusUnknown || res.TxID != testID || res.IdempotencyKey != "k7" {
		t.Errorf("Submit() = %+v, want status unknown with txid and key", res)
	}
}

func TestClientGivesUpWithoutLeader(t *testing.T) {
	b := &fakeBackend{
		// Like a node, wait for a leader until the request's time is up.
		SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
			<-ctx.Done()
			return wire.TxResult{}, wire.ErrNoLeader
		},
		GetFunc: func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
			return wire.KV{}, wire.ErrNoLeader
		},
	}
	c := testClient(testNode(t, b).URL, testNode(t, b).URL)
	// The client asks the server for a timeout that ends before its own
	// deadline, so the last answer ("no leader") arrives and the outcome is
	// known: nothing was done.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := c.Submit(ctx, putK, wire.SubmitOptions{}); !errors.Is(err, wire.ErrNoLeader) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, wire.ErrUnknownOutcome) {
		t.Errorf("Submit() error = %v, want ErrNoLeader and the deadline", err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Get(ctx, "k", wire.ReadOptions{}); !errors.Is(err, wire.ErrNoLeader) {
		t.Errorf("Get() error = %v, want ErrNoLeader", err)
	}
}

func TestClientLearnsLeader(t *testing.T) {
	leader := testNode(t, &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		return wire.TxResult{TxID: testID, Status: wire.StatusCommitted}, nil
	}})
	follower := testNode(t, &fakeBackend{
		SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
			return wire.TxResult{}, wire.ErrNotLeader
		},
		ClusterFunc: func(ctx context.Context) (wire.ClusterStatus, error) {
			return wire.ClusterStatus{ID: "n2", LeaderID: "n1", LeaderHTTPAddr: strings.TrimPrefix(leader.URL, "http://")}, nil
		},
	})
	c := testClient(follower.URL)
	res, err := c.Submit(t.Context(), putK, wire.SubmitOptions{})
	if err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("Submit() = %+v, %v; want committed", res, err)
	}
	if eps := c.Endpoints(); len(eps) != 2 || eps[0] != leader.URL {
		t.Errorf("Endpoints() = %q, want the leader %s first", eps, leader.URL)
	}
}

func TestClientSubmitBatch(t *testing.T) {
	var seen keyLog
	down := testNode(t, &fakeBackend{SubmitBatchFunc: func(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
		for _, tx := range txs {
			seen.add(tx.IdempotencyKey)
		}
		return nil, wire.ErrShuttingDown
	}})
	up := testNode(t, &fakeBackend{SubmitBatchFunc: func(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
		res := make([]wire.TxResult, len(txs))
		for i, tx := range txs {
			seen.add(tx.IdempotencyKey)
			res[i] = wire.TxResult{TxID: testID + txid.ID(i), Status: wire.StatusCommitted}
		}
		return res, nil
	}})
	txs := []wire.TxRequest{putK, {IdempotencyKey: "given", Ops: putK.Ops}}
	res, err := testClient(down.URL, up.URL).SubmitBatch(t.Context(), txs, wire.SubmitOptions{})
	if err != nil || len(res) != 2 || res[1].Status != wire.StatusCommitted {
		t.Fatalf("SubmitBatch() = %+v, %v", res, err)
	}
	keys := seen.all()
	if len(keys) != 4 || keys[0] == "" || keys[0] != keys[2] || keys[1] != "given" || keys[3] != "given" {
		t.Errorf("idempotency keys = %q, want a generated key and \"given\", twice", keys)
	}
	if txs[0].IdempotencyKey != "" {
		t.Errorf("SubmitBatch changed the caller's slice")
	}
}

func TestClientReadsAndAdmin(t *testing.T) {
	var mu sync.Mutex
	var gotKey string
	var gotOpts wire.ReadOptions
	b := &fakeBackend{
		GetFunc: func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
			mu.Lock()
			defer mu.Unlock()
			gotKey, gotOpts = key, opts
			return wire.KV{Key: key, Value: []byte(`[1]`), Version: 2}, nil
		},
		TxByIdempotencyKeyFunc: func(ctx context.Context, key string, wait time.Duration) (wire.TxResult, error) {
			return wire.TxResult{TxID: testID, Status: wire.StatusCommitted, IdempotencyKey: key}, nil
		},
		LogFunc: func(ctx context.Context, from uint64, limit int) (wire.LogPage, error) {
			return wire.LogPage{Entries: []wire.LogEntry{{Index: from, TxID: testID, Status: wire.StatusCommitted}}, Next: from + 1}, nil
		},
		ClusterFunc: func(ctx context.Context) (wire.ClusterStatus, error) { return wire.ClusterStatus{ID: "n1"}, nil },
		JoinFunc: func(ctx context.Context, req wire.JoinRequest) (wire.JoinResult, error) {
			return wire.JoinResult{NodeNumber: 7}, nil
		},
		RemoveFunc: func(ctx context.Context, id string) error { return nil },
		TransferLeadershipFunc: func(ctx context.Context, req wire.TransferRequest) (wire.TransferResult, error) {
			return wire.TransferResult{LeaderID: req.ID}, nil
		},
		ReadyFunc: func(ctx context.Context) error { return &wire.Error{Code: wire.CodeNotReady, Message: "catching up"} },
	}
	srv := testNode(t, b)
	c := testClient(srv.URL)
	ctx := t.Context()

	key := "dir/a b%c?d#e"
	if kv, err := c.Get(ctx, key, wire.ReadOptions{Consistency: wire.ConsistencyStale}); err != nil || kv.Key != key || gotKey != key || gotOpts.Forwarded {
		t.Errorf("Get(%q) = %+v, %v; backend got %q %+v", key, kv, err, gotKey, gotOpts)
	}
	if _, err := c.GetFrom(ctx, srv.URL+"/", "k", wire.ReadOptions{Consistency: wire.ConsistencyLeader}); err != nil || gotOpts != (wire.ReadOptions{Consistency: wire.ConsistencyLeader, Forwarded: true}) {
		t.Errorf("GetFrom() error %v; backend got %+v, want forwarded", err, gotOpts)
	}
	if res, err := c.TxByIdempotencyKey(ctx, "a&b=c", time.Second); err != nil || res.IdempotencyKey != "a&b=c" {
		t.Errorf("TxByIdempotencyKey() = %+v, %v", res, err)
	}
	if page, err := c.Log(ctx, 5, 10); err != nil || len(page.Entries) != 1 || page.Entries[0].Index != 5 || page.Next != 6 {
		t.Errorf("Log() = %+v, %v", page, err)
	}
	if st, err := c.Cluster(ctx); err != nil || st.ID != "n1" {
		t.Errorf("Cluster() = %+v, %v", st, err)
	}
	if st, err := c.ClusterFrom(ctx, srv.URL); err != nil || st.ID != "n1" {
		t.Errorf("ClusterFrom() = %+v, %v", st, err)
	}
	if res, err := c.Join(ctx, wire.JoinRequest{ID: "n2", RaftAddr: "h:1"}); err != nil || res.NodeNumber != 7 {
		t.Errorf("Join() = %+v, %v, want node number 7", res, err)
	}
	if _, err := c.JoinVia(ctx, srv.URL, wire.JoinRequest{ID: "n2"}); !isCode(err, wire.CodeBadRequest) {
		t.Errorf("JoinVia() without raft_addr = %v, want bad_request", err)
	}
	if err := c.RemoveVia(ctx, srv.URL, "n2"); err != nil {
		t.Errorf("RemoveVia() = %v", err)
	}
	if res, err := c.TransferLeadership(ctx, wire.TransferRequest{ID: "n3"}); err != nil || res.LeaderID != "n3" {
		t.Errorf("TransferLeadership() = %+v, %v", res, err)
	}
	if res, err := c.TransferLeadershipVia(ctx, srv.URL, wire.TransferRequest{}); err != nil || res.LeaderID != "" {
		t.Errorf("TransferLeadershipVia() = %+v, %v", res, err)
	}
	if err := c.Health(ctx, srv.URL); err != nil {
		t.Errorf("Health() = %v", err)
	}
	if err := c.Ready(ctx, srv.URL); !isCode(err, wire.CodeNotReady) || !strings.Contains(err.Error(), "catching up") {
		t.Errorf("Ready() = %v, want not_ready", err)
	}
	if err := c.Health(ctx, "localhost:1"); err == nil {
		t.Errorf("Health() of a base URL without scheme = nil, want an error")
	}
	if _, err := NewClient(ClientConfig{}).Cluster(ctx); err == nil {
		t.Errorf("Cluster() without endpoints = nil error")
	}
}

func isCode(err error, code string) bool {
	e, ok := errors.AsType[*wire.Error](err)
	return ok && e.Code == code
}

func TestLeaderURL(t *testing.T) {
	tests := []struct {
		from, addr, want string
		ok               bool
	}{
		{"http://10.0.0.1:8080", "10.0.0.2:8080", "http://10.0.0.2:8080", true},
		{"https://a.example:443", "b.example:443", "https://b.example:443", true},
		{"http://10.0.0.1:8080", "http://10.0.0.3:8080/", "http://10.0.0.3:8080", true},
		{"http://10.0.0.1:8080", "", "", false},
		{"http://10.0.0.1:8080", ":8080", "", false},
		{"http://10.0.0.1:8080", "0.0.0.0:8080", "", false},
		{"http://10.0.0.1:8080", "[::]:8080", "", false},
		{"http://10.0.0.1:8080", "no-port", "", false},
	}
	for _, tt := range tests {
		got, ok := leaderURL(tt.from, tt.addr)
		if got != tt.want || ok != tt.ok {
			t.Errorf("leaderURL(%q, %q) = %q, %v; want %q, %v", tt.from, tt.addr, got, ok, tt.want, tt.ok)
		}
	}
}

func TestClientConfigValidate(t *testing.T) {
	err := ClientConfig{Endpoints: []string{"http://a:1", "a:1", "ftp://b", "http://c/?x=1"}, MaxBackoff: -1}.Validate()
	for _, want := range []string{"Endpoints[1]", "Endpoints[2]", "Endpoints[3]", "MaxBackoff"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "Endpoints[0]") {
		t.Errorf("Validate() = %v, want Endpoints[0] accepted", err)
	}
}
