package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/txid"
)

// ledger is a backend that commits each idempotency key once, as a node does,
// and counts how often each key was carried out.
type ledger struct {
	mu      sync.Mutex
	next    txid.ID
	byKey   map[string]wire.TxResult
	applied map[string]int
}

func newLedger() *ledger {
	return &ledger{next: 1, byKey: map[string]wire.TxResult{}, applied: map[string]int{}}
}

func (l *ledger) submit(tx wire.TxRequest) wire.TxResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.byKey[tx.IdempotencyKey]; ok {
		return r
	}
	r := wire.TxResult{TxID: l.next, Status: wire.StatusCommitted, IdempotencyKey: tx.IdempotencyKey}
	l.next++
	l.byKey[tx.IdempotencyKey] = r
	l.applied[tx.IdempotencyKey]++
	return r
}

func (l *ledger) count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applied[key]
}

// wantOnce fails t unless each of keys was carried out exactly once.
func (l *ledger) wantOnce(t *testing.T, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if got := l.count(k); got != 1 {
			t.Errorf("transaction %s carried out %d times, want once", k, got)
		}
	}
}

func (l *ledger) backend() *fakeBackend {
	return &fakeBackend{
		SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
			return l.submit(tx), nil
		},
		TxByIdempotencyKeyFunc: func(ctx context.Context, key string, wait time.Duration) (wire.TxResult, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if r, ok := l.byKey[key]; ok {
				return r, nil
			}
			return wire.TxResult{}, wire.ErrNotFound
		},
		TxFunc: func(ctx context.Context, id txid.ID, wait time.Duration) (wire.TxResult, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, r := range l.byKey {
				if r.TxID == id {
					return r, nil
				}
			}
			return wire.TxResult{}, wire.ErrNotFound
		},
	}
}

// streamNode is an in-process node that serves the write stream (the
// contract of docs/api.md) in front of an api.Server, which answers each
// stream request as it answers POST /v1/tx, and every other request.
type streamNode struct {
	t        *testing.T
	srv      *httptest.Server
	api      http.Handler
	leaderMu sync.Mutex
	leader   string // X-Txlog-Leader and the pings' leader

	// onRequest, when set, runs in the goroutine of the n-th request (from
	// 1) before it is served, and says what to do instead.
	onRequest func(n int, id uint64, tx wire.TxRequest) action
	// refuse, when set and returning a status, answers the upgrade with its
	// status and body.
	refuse func() (int, string)
	// paused makes the stream read and answer nothing more, pings included.
	paused atomic.Bool

	requests atomic.Int64 // stream requests, pings not counted
	posts    atomic.Int64 // POST /v1/tx
	opened   atomic.Int64 // streams opened
}

func newStreamNode(t *testing.T, b api.Backend) *streamNode {
	n := &streamNode{t: t, api: api.NewServer(api.Config{}, b)}
	n.srv = httptest.NewServer(n)
	t.Cleanup(n.srv.Close)
	return n
}

func (n *streamNode) hostPort() string { return strings.TrimPrefix(n.srv.URL, "http://") }

// setLeader makes n name leader (a host:port) as the leader from now on.
func (n *streamNode) setLeader(leader string) {
	n.leaderMu.Lock()
	n.leader = leader
	n.leaderMu.Unlock()
}

func (n *streamNode) leaderAddr() string {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	return n.leader
}

func (n *streamNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/v1/tx" && r.Method == http.MethodPost {
		n.posts.Add(1)
	}
	if r.URL.Path != wire.TxStreamPath {
		n.api.ServeHTTP(w, r)
		return
	}
	if n.refuse != nil {
		if st, body := n.refuse(); st != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(st)
			w.Write([]byte(body))
			return
		}
	}
	if r.Header.Get("Upgrade") != wire.TxStreamProtocol {
		http.Error(w, "want Upgrade", http.StatusBadRequest)
		return
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		n.t.Errorf("hijack: %v", err)
		return
	}
	n.opened.Add(1)
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: %s\r\n%s: %s\r\n\r\n", wire.TxStreamProtocol, wire.HeaderLeader, n.leaderAddr())
	brw.Flush()
	go n.serveStream(conn, brw.Reader)
}

func (n *streamNode) serveStream(conn net.Conn, br *bufio.Reader) {
	defer conn.Close()
	var wmu sync.Mutex
	answer := func(id uint64, status int, body []byte) {
		wmu.Lock()
		defer wmu.Unlock()
		conn.Write(wire.EncodeStreamAnswer(id, status, body))
	}
	var seq atomic.Int64
	for {
		msg, err := wire.ReadStreamMessage(br, 1<<20)
		if err != nil {
			return
		}
		if n.paused.Load() {
			continue // read, so that the client's writes do not block, and drop
		}
		id, q, payload, err := wire.DecodeStreamRequest(msg)
		if err != nil {
			n.t.Errorf("decode stream request: %v", err)
			return
		}
		if id == wire.PingID {
			answer(0, 200, fmt.Appendf(nil, `{"node":"n","leader":%q}`, n.leaderAddr()))
			continue
		}
		k := int(seq.Add(1))
		n.requests.Add(1)
		go func() {
			var tx wire.TxRequest
			if err := wireUnmarshal(payload, &tx); err != nil {
				n.t.Errorf("request %d: %v", id, err)
			}
			if n.onRequest != nil {
				a := n.onRequest(k, id, tx)
				if a.raw != nil {
					wmu.Lock()
					conn.Write(a.raw)
					wmu.Unlock()
					if a.drop {
						conn.Close()
						return
					}
					a = action{}
				}
				switch {
				case a.drop:
					conn.Close()
					return
				case a.goaway:
					answer(wire.PingID, a.status, []byte(a.body))
					conn.Close()
					return
				case a.status != 0:
					answer(id, a.status, []byte(a.body))
					return
				}
			}
			hr := httptest.NewRequest(http.MethodPost, "/v1/tx?"+q, bytes.NewReader(payload))
			hr.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			n.api.ServeHTTP(rec, hr)
			if n.paused.Load() {
				return
			}
			answer(id, rec.Code, rec.Body.Bytes())
		}()
	}
}

// action is what a streamNode does with a request instead of serving it:
// answer status and body, close the connection (drop), or send a goaway of
// status and body and close the connection.
type action struct {
	status int
	body   string
	drop   bool
	goaway bool
	// raw is written first, as it is; then the request is served, or with
	// drop the connection closed.
	raw []byte
}

// streamFull is the answer of a node whose stream holds too many requests.
var streamFull = action{status: http.StatusTooManyRequests, body: `{"error":{"code":"stream_full","message":"1024 requests in flight"}}`}

// gate holds the goroutines that wait on it until n of them have arrived, so
// that n requests are in flight at once.
type gate struct {
	n       int64
	arrived atomic.Int64
	all     chan struct{}
}

func newGate(n int) *gate { return &gate{n: int64(n), all: make(chan struct{})} }

// wait blocks until n callers have called it. The n-th runs last, when it is
// not nil, before it lets them all go.
func (g *gate) wait(last func()) {
	if g.arrived.Add(1) == g.n {
		if last != nil {
			last()
		}
		close(g.all)
	}
	<-g.all
}

// loseAnswers is an onRequest for a stream that dies with n requests in
// flight: the requests first to first+n-1 are carried out on l and, once all
// n have arrived, their answers dropped with the connection. The others are
// served.
func loseAnswers(l *ledger, first, n int) func(int, uint64, wire.TxRequest) action {
	g := newGate(n)
	return func(k int, id uint64, tx wire.TxRequest) action {
		if k < first || k >= first+n {
			return action{}
		}
		l.submit(tx) // carried out, but the answer is lost
		g.wait(nil)
		return action{drop: true}
	}
}

func wireUnmarshal(b []byte, tx *wire.TxRequest) error {
	return json.Unmarshal(b, tx)
}

// streamClient returns a Client with fast retries and fast stream pings.
func streamClient(endpoints ...string) *Client {
	return NewClient(ClientConfig{
		Endpoints:       endpoints,
		Timeout:         10 * time.Second,
		MinBackoff:      time.Millisecond,
		MaxBackoff:      5 * time.Millisecond,
		LookupWait:      10 * time.Millisecond,
		streamPingAfter: 50 * time.Millisecond,
		streamDeadAfter: 2 * time.Second, // slack for a loaded machine
	})
}

func put(key string) wire.TxRequest {
	return wire.TxRequest{Ops: []wire.Op{{Op: wire.OpPut, Key: key, Value: []byte(`1`)}}}
}

func TestStreamAnswersOutOfOrder(t *testing.T) {
	release := make(chan struct{})
	b := &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		if tx.Ops[0].Key == "slow" {
			<-release
		}
		return wire.TxResult{TxID: testID, Status: wire.StatusCommitted, IdempotencyKey: tx.IdempotencyKey}, nil
	}}
	n := newStreamNode(t, b)
	c := streamClient(n.srv.URL)
	defer c.Close()
	slow := make(chan error, 1)
	go func() {
		_, err := c.Submit(t.Context(), put("slow"), wire.SubmitOptions{})
		slow <- err
	}()
	for n.requests.Load() < 1 { // the slow one is in flight first
		waitABit(t)
	}
	res, err := c.Submit(t.Context(), put("fast"), wire.SubmitOptions{})
	if err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("Submit(fast) = %+v, %v; want committed while slow waits", res, err)
	}
	select {
	case err := <-slow:
		t.Fatalf("slow Submit ended before its answer: %v", err)
	default:
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatalf("Submit(slow) = %v", err)
	}
	if got := n.posts.Load(); got != 0 {
		t.Errorf("POST /v1/tx requests = %d, want 0: writes go over the stream", got)
	}
	if got := n.opened.Load(); got != 1 {
		t.Errorf("streams opened = %d, want 1", got)
	}
}

// waitABit yields for a moment in a polling loop that has its own deadline
// (the test's).
func waitABit(t *testing.T) {
	t.Helper()
	select {
	case <-t.Context().Done():
		t.Fatal("test ended while waiting")
	case <-time.After(time.Millisecond):
	}
}

func TestStreamCoalescesWrites(t *testing.T) {
	const writers = 256
	g := newGate(writers)
	b := &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		g.wait(nil) // every request is in flight at once
		return wire.TxResult{TxID: testID, Status: wire.StatusCommitted}, nil
	}}
	n := newStreamNode(t, b)
	c := streamClient(n.srv.URL)
	defer c.Close()
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			if _, err := c.Submit(t.Context(), put(fmt.Sprint("k", i)), wire.SubmitOptions{}); err != nil {
				t.Errorf("Submit() = %v", err)
			}
		})
	}
	wg.Wait()
	writes := c.conn.streams.writes.Load()
	t.Logf("%d requests in %d writes", writers, writes)
	if writes >= writers {
		t.Errorf("writes = %d for %d requests, want fewer: queued requests share a Write", writes, writers)
	}
	if got := n.opened.Load(); got != 1 {
		t.Errorf("streams opened = %d, want 1 shared by every goroutine", got)
	}
}

func TestStreamDiesWithRequestsInFlight(t *testing.T) {
	const writers = 32
	l := newLedger()
	n := newStreamNode(t, l.backend())
	n.onRequest = loseAnswers(l, 1, writers) // then the new stream's: served
	c := streamClient(n.srv.URL)
	defer c.Close()
	var wg sync.WaitGroup
	keys := make([]string, writers)
	for i := range writers {
		keys[i] = fmt.Sprint("key-", i)
		wg.Go(func() {
			tx := put("k")
			tx.IdempotencyKey = keys[i]
			res, err := c.Submit(t.Context(), tx, wire.SubmitOptions{})
			if err != nil || res.Status != wire.StatusCommitted {
				t.Errorf("Submit(%s) = %+v, %v; want committed, resolved by a lookup", keys[i], res, err)
			}
		})
	}
	wg.Wait()
	l.wantOnce(t, keys...)
}

func TestStreamFullIsRetried(t *testing.T) {
	l := newLedger()
	n := newStreamNode(t, l.backend())
	n.onRequest = func(k int, id uint64, tx wire.TxRequest) action {
		if k <= 3 {
			return streamFull
		}
		return action{}
	}
	c := streamClient(n.srv.URL)
	defer c.Close()
	tx := put("k")
	tx.IdempotencyKey = "full-1"
	res, err := c.Submit(t.Context(), tx, wire.SubmitOptions{})
	if err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("Submit() = %+v, %v; want committed after the 429s", res, err)
	}
	if got := n.requests.Load(); got != 4 {
		t.Errorf("stream requests = %d, want 4 (three refused, one served)", got)
	}
	l.wantOnce(t, "full-1")
}

func TestStreamGoaway(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		code   string
	}{
		{"unauthenticated", http.StatusUnauthorized, wire.CodeUnauthenticated},
		{"forbidden", http.StatusForbidden, wire.CodeForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger()
			n := newStreamNode(t, l.backend())
			body := fmt.Sprintf(`{"error":{"code":%q,"message":"credential revoked"}}`, tc.code)
			var revoked atomic.Bool
			// The credential is revoked when the first write arrives: the
			// node sends a goaway instead of serving it, and refuses the
			// credential from then on, on the stream and over HTTP.
			n.onRequest = func(k int, id uint64, tx wire.TxRequest) action {
				revoked.Store(true)
				return action{goaway: true, status: tc.status, body: body}
			}
			n.refuse = func() (int, string) {
				if revoked.Load() {
					return tc.status, body
				}
				return 0, ""
			}
			inner := n.api
			n.api = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if revoked.Load() {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(tc.status)
					w.Write([]byte(body))
					return
				}
				inner.ServeHTTP(w, r)
			})
			c := streamClient(n.srv.URL)
			defer c.Close()
			_, err := c.Submit(t.Context(), put("k"), wire.SubmitOptions{})
			if !isCode(err, tc.code) {
				t.Fatalf("Submit() = %v, want the error %s", err, tc.code)
			}
			// A new stream is refused with the same error, at once.
			_, err = c.Submit(t.Context(), put("k2"), wire.SubmitOptions{})
			if !isCode(err, tc.code) {
				t.Fatalf("second Submit() = %v, want the error %s", err, tc.code)
			}
			if len(l.applied) != 0 {
				t.Errorf("carried out %v, want nothing", l.applied)
			}
		})
	}
}

func TestStreamPausedNodeFailsOver(t *testing.T) {
	l := newLedger()
	paused := newStreamNode(t, l.backend())
	up := newStreamNode(t, l.backend())
	// The paused node carries the write out, then answers nothing more, not
	// even pings, as a SIGSTOPped process: the client must take it for dead,
	// look the write up on the other node and find it done.
	paused.onRequest = func(k int, id uint64, tx wire.TxRequest) action {
		l.submit(tx)
		paused.paused.Store(true)
		return action{}
	}
	c := streamClient(paused.srv.URL, up.srv.URL)
	defer c.Close()
	tx := put("k")
	tx.IdempotencyKey = "paused-1"
	res, err := c.Submit(t.Context(), tx, wire.SubmitOptions{})
	if err != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("Submit() = %+v, %v; want committed", res, err)
	}
	if got := l.count("paused-1"); got != 1 {
		t.Errorf("carried out %d times, want once", got)
	}
	if down := c.Down(); !slices.Contains(down, paused.srv.URL) {
		t.Errorf("Down() = %v, want the paused node in it", down)
	}
}

func TestStreamWritesGoToTheLeader(t *testing.T) {
	l := newLedger()
	follower := newStreamNode(t, l.backend())
	leader := newStreamNode(t, l.backend())
	follower.setLeader(leader.hostPort())
	leader.setLeader(leader.hostPort())
	c := streamClient(follower.srv.URL, leader.srv.URL)
	defer c.Close()
	for i := range 10 {
		if _, err := c.Submit(t.Context(), put(fmt.Sprint("k", i)), wire.SubmitOptions{}); err != nil {
			t.Fatalf("Submit() = %v", err)
		}
	}
	// The first write went to the follower, whose upgrade named the leader;
	// the others go straight to the leader.
	if got, want := follower.requests.Load(), int64(1); got != want {
		t.Errorf("follower served %d writes, want %d", got, want)
	}
	if got, want := leader.requests.Load(), int64(9); got != want {
		t.Errorf("leader served %d writes, want %d", got, want)
	}
}

func TestStreamRefusedFallsBackToHTTP(t *testing.T) {
	l := newLedger()
	n := newStreamNode(t, l.backend())
	n.refuse = func() (int, string) {
		return http.StatusNotFound, `{"error":{"code":"not_found","message":"no route"}}`
	}
	c := streamClient(n.srv.URL)
	defer c.Close()
	for i := range 3 {
		if _, err := c.Submit(t.Context(), put(fmt.Sprint("k", i)), wire.SubmitOptions{}); err != nil {
			t.Fatalf("Submit() = %v", err)
		}
	}
	if got := n.posts.Load(); got != 3 {
		t.Errorf("POST /v1/tx = %d, want 3: a node without the stream gets writes over HTTP", got)
	}
}

func TestStreamOtherProtocolFallsBackToHTTP(t *testing.T) {
	l := newLedger()
	n := newStreamNode(t, l.backend())
	inner := n.api
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.TxStreamPath {
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			defer conn.Close()
			brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
			brw.Flush()
			return
		}
		if r.URL.Path == "/v1/tx" && r.Method == http.MethodPost {
			n.posts.Add(1)
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	c := streamClient(srv.URL)
	defer c.Close()
	if _, err := c.Submit(t.Context(), put("k"), wire.SubmitOptions{}); err != nil {
		t.Fatalf("Submit() = %v", err)
	}
	if got := n.posts.Load(); got != 1 {
		t.Errorf("POST /v1/tx = %d, want 1: a 101 to another protocol is not a write stream", got)
	}
}

func TestHTTPWrites(t *testing.T) {
	l := newLedger()
	n := newStreamNode(t, l.backend())
	c := NewClient(ClientConfig{Endpoints: []string{n.srv.URL}, HTTPWrites: true})
	if _, err := c.Submit(t.Context(), put("k"), wire.SubmitOptions{}); err != nil {
		t.Fatalf("Submit() = %v", err)
	}
	if n.opened.Load() != 0 || n.posts.Load() != 1 {
		t.Errorf("streams opened %d, POSTs %d; want 0 and 1 with HTTPWrites", n.opened.Load(), n.posts.Load())
	}
}

func TestSubmitAsyncBound(t *testing.T) {
	release := make(chan struct{})
	b := &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		<-release
		return wire.TxResult{TxID: testID, Status: wire.StatusCommitted}, nil
	}}
	n := newStreamNode(t, b)
	c := NewClient(ClientConfig{Endpoints: []string{n.srv.URL}, MaxAsyncPending: 2})
	defer c.Close()
	f1 := c.SubmitAsync(t.Context(), put("a"), wire.SubmitOptions{})
	f2 := c.SubmitAsync(t.Context(), put("b"), wire.SubmitOptions{})
	if got := c.AsyncPending(); got != 2 {
		t.Errorf("AsyncPending() = %d, want 2", got)
	}
	// The bound is reached: a third blocks until its ctx ends.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	f3 := c.SubmitAsync(ctx, put("c"), wire.SubmitOptions{})
	cancel()
	select {
	case <-f3.Done():
	default:
		t.Fatal("SubmitAsync past the bound returned a future not done")
	}
	if _, err := f3.Result(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Result() past the bound = %v, want the ctx's deadline", err)
	}
	select {
	case <-f1.Done():
		t.Fatal("future done before its answer")
	default:
	}
	close(release)
	for _, f := range []*Future{f1, f2} {
		if res, err := f.Result(); err != nil || res.Status != wire.StatusCommitted {
			t.Errorf("Result() = %+v, %v; want committed", res, err)
		}
	}
	if got := c.AsyncPending(); got != 0 {
		t.Errorf("AsyncPending() after the results = %d, want 0", got)
	}
	f4 := c.SubmitAsync(t.Context(), put("d"), wire.SubmitOptions{})
	if _, err := f4.Result(); err != nil {
		t.Errorf("Result() after the bound freed = %v", err)
	}
}

func TestStream4xxAtOnce(t *testing.T) {
	b := &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		return wire.TxResult{}, &wire.Error{Code: wire.CodeInvalidParam, Message: "ack=all: not available"}
	}}
	n := newStreamNode(t, b)
	other := newStreamNode(t, &fakeBackend{}) // would answer 500 to anything
	c := streamClient(n.srv.URL, other.srv.URL)
	defer c.Close()
	for _, tc := range []struct {
		name string
		tx   wire.TxRequest
		opts wire.SubmitOptions
		code string
	}{
		{"invalid transaction", wire.TxRequest{}, wire.SubmitOptions{}, wire.CodeInvalidTx},
		{"bad parameter from backend", put("k"), wire.SubmitOptions{}, wire.CodeInvalidParam},
		{"bad ack", put("k"), wire.SubmitOptions{Ack: "most"}, wire.CodeInvalidParam},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := n.requests.Load()
			_, err := c.Submit(t.Context(), tc.tx, tc.opts)
			if !isCode(err, tc.code) {
				t.Errorf("Submit() = %v, want the error %s", err, tc.code)
			}
			if got := n.requests.Load() - before; got != 1 {
				t.Errorf("sent %d stream requests, want 1", got)
			}
			if got := other.requests.Load() + other.posts.Load(); got != 0 {
				t.Errorf("the other node got %d writes, want none", got)
			}
		})
	}
}

func TestStreamAgainstAPIServer(t *testing.T) {
	// api.Server's own stream (as a node serves it): writes from many
	// goroutines over one stream, and TLS with a token through the same
	// http.Client as the other calls.
	l := newLedger()
	p := newTestPKI(t)
	var upgrades atomic.Int64
	h := api.NewServer(api.Config{}, l.backend())
	srv := tlsNode(t, p, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.TxStreamPath {
			upgrades.Add(1)
			if r.Header.Get("Authorization") != "Bearer tok" {
				t.Errorf("upgrade without the token: %q", r.Header.Get("Authorization"))
			}
		} else if r.URL.Path == "/v1/tx" && r.Method == http.MethodPost {
			t.Errorf("POST /v1/tx: want writes over the stream")
		}
		h.ServeHTTP(w, r)
	}))
	cfg, err := TLSConfig(p.caFile, p.clientFiles.Cert, p.clientFiles.Key)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(ClientConfig{Endpoints: []string{srv.URL}, TLS: cfg, Token: "tok"})
	defer c.Close()
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			tx := put(fmt.Sprint("k", i))
			tx.IdempotencyKey = fmt.Sprint("api-", i)
			if res, err := c.Submit(t.Context(), tx, wire.SubmitOptions{}); err != nil || res.Status != wire.StatusCommitted {
				t.Errorf("Submit() = %+v, %v; want committed", res, err)
			}
		})
	}
	wg.Wait()
	if got := upgrades.Load(); got != 1 {
		t.Errorf("upgrades = %d, want 1 stream shared by the goroutines", got)
	}
	for i := range 64 {
		if got := l.count(fmt.Sprint("api-", i)); got != 1 {
			t.Errorf("api-%d carried out %d times, want once", i, got)
		}
	}
}

func TestStreamLearnsANewLeaderFromPings(t *testing.T) {
	l := newLedger()
	old := newStreamNode(t, l.backend())
	next := newStreamNode(t, l.backend())
	old.setLeader(old.hostPort())
	// No pings for liveness: only those for the leader move the writes.
	c := NewClient(ClientConfig{Endpoints: []string{old.srv.URL, next.srv.URL},
		streamPingAfter: time.Hour, streamDeadAfter: time.Hour, streamLeaderRefresh: 20 * time.Millisecond})
	defer c.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for i := range 8 { // a busy stream: it never waits long for an answer
		wg.Go(func() {
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Submit(t.Context(), put(fmt.Sprint("k", i, "-", k)), wire.SubmitOptions{}); err != nil {
					t.Errorf("Submit() = %v", err)
					return
				}
			}
		})
	}
	for old.requests.Load() < 50 {
		waitABit(t)
	}
	// Leadership moves without the old leader failing: its pings name the
	// new one, and the writes follow.
	old.setLeader(next.hostPort())
	deadline := time.Now().Add(10 * time.Second)
	for next.requests.Load() < 50 {
		if time.Now().After(deadline) {
			t.Fatalf("the new leader got %d writes in 10s, want 50: the pings' leader was not followed", next.requests.Load())
		}
		waitABit(t)
	}
}

func TestStreamBadAnswers(t *testing.T) {
	committed := []byte(`{"txid":"0AP81P6ZW0800","status":"committed"}`)
	for _, tc := range []struct {
		name string
		raw  func(id uint64) []byte
		drop bool
	}{
		{"answer to an id never sent", func(id uint64) []byte { return wire.EncodeStreamAnswer(id+1000, 200, committed) }, false},
		{"truncated answer", func(id uint64) []byte { return wire.EncodeStreamAnswer(id, 200, committed)[:10] }, true},
		{"length past MaxAnswerBytes", func(id uint64) []byte { return binary.AppendUvarint(nil, 1<<40) }, false},
		{"length not in minimal form", func(id uint64) []byte { return []byte{0x80, 0x00} }, false},
		{"status out of range", func(id uint64) []byte {
			return wire.AppendStreamMessage(nil, binary.AppendUvarint(binary.AppendUvarint(nil, id), 999), committed)
		}, false},
		{"empty message", func(id uint64) []byte { return []byte{0} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger()
			n := newStreamNode(t, l.backend())
			n.onRequest = func(k int, id uint64, tx wire.TxRequest) action {
				if k == 1 {
					l.submit(tx) // carried out; what comes back is garbage
					return action{raw: tc.raw(id), drop: tc.drop}
				}
				return action{}
			}
			c := streamClient(n.srv.URL)
			defer c.Close()
			tx := put("k")
			tx.IdempotencyKey = "bad-answer"
			res, err := c.Submit(t.Context(), tx, wire.SubmitOptions{})
			if err != nil || res.Status != wire.StatusCommitted {
				t.Fatalf("Submit() = %+v, %v; want committed", res, err)
			}
			if got := l.count("bad-answer"); got != 1 {
				t.Errorf("carried out %d times, want once", got)
			}
		})
	}
}
