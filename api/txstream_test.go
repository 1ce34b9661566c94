package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
	"github.com/txlog/txlog/txid"
)

// streamClient is the client side of a client stream, by hand.
type streamClient struct {
	t    testing.TB
	conn net.Conn
	br   *bufio.Reader
	resp *http.Response
}

// dialStream asks ts for a client stream with the headers hdr (Connection
// and Upgrade are added unless hdr sets them) and returns the answer; the
// stream when it is 101.
func dialStream(t testing.TB, ts *httptest.Server, hdr http.Header) *streamClient {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\n", wire.TxStreamPath, ts.Listener.Addr())
	if hdr.Get("Connection") == "" {
		b.WriteString("Connection: Upgrade\r\n")
	}
	if hdr.Get("Upgrade") == "" {
		b.WriteString("Upgrade: " + wire.TxStreamProtocol + "\r\n")
	}
	for k, vs := range hdr {
		for _, v := range vs {
			if v != "-" {
				fmt.Fprintf(&b, "%s: %s\r\n", k, v)
			}
		}
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(conn, b.String()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read the upgrade's answer: %v", err)
	}
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	return &streamClient{t: t, conn: conn, br: br, resp: resp}
}

func (c *streamClient) send(msgs ...[]byte) {
	c.t.Helper()
	if _, err := c.conn.Write(bytes.Join(msgs, nil)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// answer is one answer message.
type answer struct {
	id     uint64
	status int
	body   []byte
}

func (c *streamClient) read() (answer, error) {
	msg, err := wire.ReadStreamMessage(c.br, 1<<24)
	if err != nil {
		return answer{}, err
	}
	id, status, body, err := wire.DecodeTxStreamAnswer(msg)
	return answer{id, status, body}, err
}

func (c *streamClient) mustRead() answer {
	c.t.Helper()
	a, err := c.read()
	if err != nil {
		c.t.Fatalf("read an answer: %v", err)
	}
	return a
}

// mustGoaway reads the stream's goaway, checks its status and code, and that
// the connection closes after it.
func (c *streamClient) mustGoaway(status int, code string) {
	c.t.Helper()
	var a answer
	for {
		a = c.mustRead()
		if a.id == wire.PingID {
			break
		}
	}
	var e errorAnswer
	if err := json.Unmarshal(a.body, &e); err != nil || !wire.IsGoaway(a.id, a.status) || a.status != status || e.Error.Code != code {
		c.t.Fatalf("goaway = %d %d %s, want id 0, %d %s", a.id, a.status, a.body, status, code)
	}
	if b, err := c.read(); err == nil {
		c.t.Fatalf("after the goaway: %+v, want the connection closed", b)
	}
}

// streamBackend is a Backend whose Submit commits, except for keys that
// say otherwise: "conflict" is rejected, "hold" waits for release, and
// every write counts.
type streamBackend struct {
	fakeBackend
	release chan struct{}
	submits atomic.Int64
}

func newStreamBackend() *streamBackend {
	b := &streamBackend{release: make(chan struct{})}
	b.SubmitFunc = func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		b.submits.Add(1)
		res := wire.TxResult{TxID: txid.ID(1000 + b.submits.Load()), Index: 7, Status: wire.StatusCommitted, IdempotencyKey: tx.IdempotencyKey}
		switch tx.Ops[0].Key {
		case "conflict":
			res.Status = wire.StatusRejected
		case "pending":
			res.Status = wire.StatusPending
		case "unknown":
			res.Status = wire.StatusUnknown
			return res, wire.ErrUnknownOutcome
		case "no-leader":
			return wire.TxResult{}, wire.ErrNoLeader
		case "hold":
			select {
			case <-b.release:
			case <-ctx.Done():
				return wire.TxResult{}, ctx.Err()
			}
		}
		return res, nil
	}
	b.ClusterFunc = func(context.Context) (wire.ClusterStatus, error) {
		return wire.ClusterStatus{ID: "n1", LeaderHTTPAddr: "127.0.0.1:9"}, nil
	}
	return b
}

func txBody(key string) []byte {
	return []byte(`{"ops":[{"op":"put","key":"` + key + `","value":1}],"idempotency_key":"` + key + `-k"}`)
}

func startStreamServer(t testing.TB, cfg Config, b Backend) (*httptest.Server, *Server) {
	t.Helper()
	srv := NewServer(cfg, b)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { srv.CloseTxStreams(context.Background()) })
	return ts, srv
}

// TestTxStreamManyRequests: many requests sent at once are all answered,
// each id once, out of order: the first waits until others came back.
func TestTxStreamManyRequests(t *testing.T) {
	b := newStreamBackend()
	ts, _ := startStreamServer(t, Config{}, b)
	c := dialStream(t, ts, http.Header{})
	if c.resp.StatusCode != http.StatusSwitchingProtocols || c.resp.Header.Get("Upgrade") != wire.TxStreamProtocol ||
		c.resp.Header.Get(wire.HeaderNode) != "n1" || c.resp.Header.Get(wire.HeaderLeader) != "127.0.0.1:9" {
		t.Fatalf("upgrade answer = %d %v", c.resp.StatusCode, c.resp.Header)
	}
	const n = 300
	var msgs [][]byte
	msgs = append(msgs, wire.EncodeTxStreamRequest(1, "", txBody("hold")))
	for id := uint64(2); id <= n; id++ {
		msgs = append(msgs, wire.EncodeTxStreamRequest(id, "timeout=10s", txBody(fmt.Sprintf("k%d", id))))
	}
	c.send(msgs...)
	seen := map[uint64]bool{}
	for i := 0; i < n; i++ {
		a := c.mustRead()
		if i == 0 && a.id == 1 {
			t.Fatalf("answer 0 is id 1, which waits for the others")
		}
		if seen[a.id] || a.id < 1 || a.id > n {
			t.Fatalf("answer with id %d: seen %v, want each of 1..%d once", a.id, seen[a.id], n)
		}
		seen[a.id] = true
		if a.status != http.StatusOK {
			t.Fatalf("answer %d = %d %s, want 200", a.id, a.status, a.body)
		}
		if i == n/2 {
			close(b.release)
		}
	}
}

// TestTxStreamSameAnswers: the stream answers each request with the status
// and bytes POST /v1/tx answers the same one with.
func TestTxStreamSameAnswers(t *testing.T) {
	cfg := Config{Auth: testAuth}
	b := newStreamBackend()
	ts, _ := startStreamServer(t, cfg, b)
	cases := []struct {
		name, token, q string
		body           []byte
		want           int
	}{
		{"committed", "write", "", txBody("k1"), 200},
		{"committed with ack", "write", "timeout=2s&ack=all", txBody("k2"), 200},
		{"conflict", "write", "", txBody("conflict"), 409},
		{"pending", "write", "ack=accepted", txBody("pending"), 202},
		{"unknown outcome", "write", "", txBody("unknown"), 503},
		{"no leader", "write", "", txBody("no-leader"), 503},
		{"bad body", "write", "", []byte(`{"ops":[]}`), 400},
		{"not json", "write", "", []byte(`nope`), 400},
		{"internal parameter", "write", "fresh=true", txBody("k3"), 400},
		{"unknown parameter", "write", "timout=1s", txBody("k3"), 400},
		{"outside the scope", "wal", "", txBody("bee/x"), 403},
		{"inside the scope", "wal", "", txBody("al/x"), 200},
		{"too large", "write", "", bytes.Repeat([]byte(" "), DefaultMaxBodyBytes+1), 413},
	}
	streams := map[string]*streamClient{}
	for _, tok := range []string{"write", "wal"} {
		c := dialStream(t, ts, http.Header{"Authorization": {"Bearer " + tok}})
		if c.resp.StatusCode != 101 {
			t.Fatalf("upgrade = %d", c.resp.StatusCode)
		}
		streams[tok] = c
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := streams[tc.token]
			c.t = t
			c.send(wire.EncodeTxStreamRequest(uint64(i+1), tc.q, tc.body))
			a := c.mustRead()

			req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/tx?"+tc.q, bytes.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+tc.token)
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The backend numbers its txids: the stream's came first.
			want = bytes.Replace(want, []byte(txid.ID(1000+b.submits.Load()).String()), []byte(txid.ID(1000+b.submits.Load()-1).String()), -1)
			if a.id != uint64(i+1) || a.status != resp.StatusCode || a.status != tc.want || !bytes.Equal(a.body, want) {
				t.Fatalf("stream answered %d %d %q; POST /v1/tx %d %q; want %d", a.id, a.status, a.body, resp.StatusCode, want, tc.want)
			}
		})
	}
}

// TestTxStreamBadMessages: a message the stream cannot read gets a goaway
// 400 bad_request and the connection closes; a message after it is not
// answered.
func TestTxStreamBadMessages(t *testing.T) {
	b := newStreamBackend()
	ts, _ := startStreamServer(t, Config{}, b)
	limit := wire.TxStreamLimit(DefaultMaxBodyBytes)
	cases := []struct {
		name     string
		msg      []byte
		closeOut bool // the client closes its side after msg
	}{
		{"truncated message", append(binary.AppendUvarint(nil, 100), "only a few"...), true},
		{"truncated varint", []byte{0x80}, true},
		{"oversized", binary.AppendUvarint(nil, uint64(limit+1)), false},
		{"huge length", binary.AppendUvarint(nil, 1<<62), false},
		{"length not minimal", []byte{0x85, 0x00, 1, 0, 0, 0, 0}, false},
		{"length over 64 bits", bytes.Repeat([]byte{0xff}, 11), false},
		{"id not minimal", wire.AppendStreamMessage(nil, []byte{0x81, 0x00, 0}, txBody("k")), false},
		{"query length past the body", wire.AppendStreamMessage(nil, []byte{1, 50}, []byte("x")), false},
		{"duplicate id in flight", append(wire.EncodeTxStreamRequest(5, "", txBody("hold")), wire.EncodeTxStreamRequest(5, "", txBody("k"))...), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialStream(t, ts, http.Header{})
			c.send(tc.msg)
			if tc.closeOut {
				c.conn.(*net.TCPConn).CloseWrite()
			}
			c.mustGoaway(http.StatusBadRequest, wire.CodeBadRequest)
			// A message after the goaway: never answered.
			c.conn.Write(wire.EncodeTxStreamRequest(9, "", txBody("k")))
			if a, err := c.read(); err == nil {
				t.Fatalf("a request after the goaway was answered: %+v", a)
			}
		})
	}
}

// TestTxStreamDeclaredLengthNotAllocated: a message that declares nearly the
// limit with a few bytes behind it costs about what arrived.
func TestTxStreamDeclaredLengthNotAllocated(t *testing.T) {
	b := newStreamBackend()
	ts, _ := startStreamServer(t, Config{MaxBodyBytes: 1 << 30}, b)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 4 {
		c := dialStream(t, ts, http.Header{})
		c.send(append(binary.AppendUvarint(nil, 1<<30), "a few bytes"...))
		c.conn.(*net.TCPConn).CloseWrite()
		c.mustGoaway(http.StatusBadRequest, wire.CodeBadRequest)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Fatalf("4 messages declaring 1 GiB with 11 bytes behind them allocated %d bytes, want well under 64 MiB", got)
	}
}

// TestTxStreamFlowControl: past the bound on requests in flight, requests
// are answered 429 stream_full at once and the stream stays; those within it
// commit.
func TestTxStreamFlowControl(t *testing.T) {
	const bound, over = 8, 5
	b := newStreamBackend()
	ts, _ := startStreamServer(t, Config{ClientStreamInflight: bound}, b)
	c := dialStream(t, ts, http.Header{})
	var msgs [][]byte
	for id := uint64(1); id <= bound+over; id++ {
		msgs = append(msgs, wire.EncodeTxStreamRequest(id, "", txBody("hold")))
	}
	c.send(msgs...)
	for i := 0; i < over; i++ {
		a := c.mustRead()
		var e errorAnswer
		if err := json.Unmarshal(a.body, &e); err != nil || a.id <= bound || a.status != http.StatusTooManyRequests || e.Error.Code != wire.CodeStreamFull {
			t.Fatalf("answer %d = %d %s, want one past the bound, 429 stream_full", a.id, a.status, a.body)
		}
	}
	close(b.release)
	for i := 0; i < bound; i++ {
		if a := c.mustRead(); a.id > bound || a.status != http.StatusOK {
			t.Fatalf("answer %d = %d %s, want one within the bound, 200", a.id, a.status, a.body)
		}
	}
	// The stream stayed: the next one commits.
	c.send(wire.EncodeTxStreamRequest(100, "", txBody("k")))
	if a := c.mustRead(); a.id != 100 || a.status != http.StatusOK {
		t.Fatalf("after the bound: %d %d %s", a.id, a.status, a.body)
	}
}

// TestTxStreamPing: a ping is answered at once, ahead of the requests in
// flight, with the node and the leader.
func TestTxStreamPing(t *testing.T) {
	b := newStreamBackend()
	ts, _ := startStreamServer(t, Config{}, b)
	c := dialStream(t, ts, http.Header{})
	c.send(wire.EncodeTxStreamRequest(1, "", txBody("hold")), wire.EncodeTxStreamRequest(wire.PingID, "whatever", []byte("ignored")))
	a := c.mustRead()
	var p wire.TxStreamPing
	if err := json.Unmarshal(a.body, &p); err != nil || a.id != wire.PingID || a.status != 200 || p.Node != "n1" || p.Leader != "127.0.0.1:9" {
		t.Fatalf("ping answer = %d %d %s", a.id, a.status, a.body)
	}
	close(b.release)
	if a := c.mustRead(); a.id != 1 || a.status != 200 {
		t.Fatalf("answer = %d %d %s", a.id, a.status, a.body)
	}
}

// reloadableAuth is an Authenticator whose credentials can change, as the
// auth file's do when it is re-read.
type reloadableAuth struct {
	mu sync.Mutex
	m  fakeAuth
}

func (a *reloadableAuth) Authenticate(r *http.Request) (*auth.Principal, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m.Authenticate(r)
}

func (a *reloadableAuth) set(tok string, p *auth.Principal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p == nil {
		delete(a.m, tok)
	} else {
		a.m[tok] = p
	}
}

// TestTxStreamUpgradeRefused: the upgrade's own checks, and the credential's.
func TestTxStreamUpgradeRefused(t *testing.T) {
	ts, _ := startStreamServer(t, Config{Auth: testAuth}, newStreamBackend())
	bearer := func(tok string) []string { return []string{"Bearer " + tok} }
	cases := []struct {
		name string
		hdr  http.Header
		want int
		code string
	}{
		{"no credential", http.Header{}, 401, wire.CodeUnauthenticated},
		{"unknown token", http.Header{"Authorization": bearer("bogus")}, 401, wire.CodeUnauthenticated},
		{"basic credentials", http.Header{"Authorization": {"Basic " + "d3JpdGU6d3JpdGU="}}, 401, wire.CodeUnauthenticated},
		{"read role", http.Header{"Authorization": bearer("read")}, 403, wire.CodeForbidden},
		{"no upgrade", http.Header{"Authorization": bearer("write"), "Upgrade": {"-"}}, 400, wire.CodeInvalidParam},
		{"other protocol", http.Header{"Authorization": bearer("write"), "Upgrade": {"websocket"}}, 400, wire.CodeInvalidParam},
		{"no connection upgrade", http.Header{"Authorization": bearer("write"), "Connection": {"keep-alive"}}, 400, wire.CodeInvalidParam},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialStream(t, ts, tc.hdr)
			body, _ := io.ReadAll(io.LimitReader(c.resp.Body, 4096))
			var e errorAnswer
			if err := json.Unmarshal(body, &e); err != nil || c.resp.StatusCode != tc.want || e.Error.Code != tc.code {
				t.Fatalf("upgrade = %d %s, want %d %s", c.resp.StatusCode, body, tc.want, tc.code)
			}
		})
	}
}

// TestTxStreamCredentialGone: after the credential is removed (an auth file
// re-read), the next request gets a goaway 401 and the connection closes;
// a role lowered to read gets 403.
func TestTxStreamCredentialGone(t *testing.T) {
	for _, tc := range credentialChanges {
		t.Run(tc.name, func(t *testing.T) {
			ra := &reloadableAuth{m: fakeAuth{"tok": {Name: "w", Role: auth.RoleWrite}}}
			b := newStreamBackend()
			ts, _ := startStreamServer(t, Config{Auth: ra}, b)
			c := dialStream(t, ts, http.Header{"Authorization": {"Bearer tok"}})
			c.send(wire.EncodeTxStreamRequest(1, "", txBody("k")))
			if a := c.mustRead(); a.status != 200 {
				t.Fatalf("answer = %d %s", a.status, a.body)
			}
			ra.set("tok", tc.now)
			c.mustEndAfterChange(tc, 2, b)
		})
	}
}

// credentialChange is a re-read of the auth file that changes the write
// credential "w" (token "tok") of a client stream, and the goaway that ends
// the stream at its next request.
type credentialChange struct {
	name string
	now  *auth.Principal // nil: removed
	want int
	code string
}

// credentialChanges are the changes that end a client stream: the
// credential removed, its role lowered, its key prefixes changed.
var credentialChanges = []credentialChange{
	{"removed", nil, 401, wire.CodeUnauthenticated},
	{"role lowered", &auth.Principal{Name: "w", Role: auth.RoleRead}, 403, wire.CodeForbidden},
	{"prefixes changed", &auth.Principal{Name: "w", Role: auth.RoleWrite, Prefixes: []string{"al/"}}, 401, wire.CodeUnauthenticated},
}

// mustEndAfterChange sends request id after change cc and checks that the
// stream ends with cc's goaway and that b was not asked.
func (c *streamClient) mustEndAfterChange(cc credentialChange, id uint64, b *streamBackend) {
	c.t.Helper()
	before := b.submits.Load()
	c.send(wire.EncodeTxStreamRequest(id, "", txBody("k")))
	c.mustGoaway(cc.want, cc.code)
	if got := b.submits.Load(); got != before {
		c.t.Fatalf("the backend was asked %d times after the credential changed", got-before)
	}
}

// TestTxStreamClose: CloseTxStreams ends the streams with a goaway 503
// shutting_down, leaves the requests in flight unanswered, and refuses new
// streams.
func TestTxStreamClose(t *testing.T) {
	b := newStreamBackend()
	ts, srv := startStreamServer(t, Config{}, b)
	c := dialStream(t, ts, http.Header{})
	c.send(wire.EncodeTxStreamRequest(1, "", txBody("hold")))
	deadline := time.Now().Add(30 * time.Second)
	for b.submits.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the backend")
		}
		runtime.Gosched()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.CloseTxStreams(ctx) }()
	c.mustGoaway(http.StatusServiceUnavailable, wire.CodeShuttingDown)
	if err := <-done; err != nil {
		t.Fatalf("CloseTxStreams() = %v", err)
	}
	c2 := dialStream(t, ts, http.Header{})
	if c2.resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("upgrade after CloseTxStreams = %d, want 503", c2.resp.StatusCode)
	}
}

// TestTxStreamIdle: a stream with nothing in flight that sends nothing for
// the idle timeout is closed; one with a request in flight is not.
func TestTxStreamIdle(t *testing.T) {
	b := newStreamBackend()
	ts, _ := startStreamServer(t, Config{ClientStreamIdleTimeout: 300 * time.Millisecond}, b)
	c := dialStream(t, ts, http.Header{})
	c.send(wire.EncodeTxStreamRequest(1, "", txBody("hold")))
	time.Sleep(time.Second) // longer than the idle timeout, with a request in flight
	close(b.release)
	if a := c.mustRead(); a.id != 1 || a.status != 200 {
		t.Fatalf("answer = %d %d %s", a.id, a.status, a.body)
	}
	if a, err := c.read(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the idle timeout: %+v, %v, want EOF", a, err)
	}
}

// TestTxStreamMetrics: txlog_client_streams counts the open streams and
// txlog_client_stream_requests_total their requests by result.
func TestTxStreamMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := newStreamBackend()
	ts, _ := startStreamServer(t, Config{Metrics: reg, ClientStreamInflight: 1}, b)
	c := dialStream(t, ts, http.Header{})
	c.send(wire.EncodeTxStreamRequest(1, "", txBody("hold")), wire.EncodeTxStreamRequest(2, "", txBody("k")))
	if a := c.mustRead(); a.id != 2 || a.status != http.StatusTooManyRequests {
		t.Fatalf("answer = %d %d %s, want 2 429", a.id, a.status, a.body)
	}
	close(b.release)
	c.mustRead()
	c.send(wire.EncodeTxStreamRequest(3, "", txBody("conflict")))
	c.mustRead()
	if got := gaugeOf(t, reg, "txlog_client_streams"); got != 1 {
		t.Fatalf("txlog_client_streams = %v, want 1", got)
	}
	for result, want := range map[string]float64{"committed": 1, "stream_full": 1, "conflict": 1, "refused": 0} {
		if got := counterOf(t, reg, "txlog_client_stream_requests_total", result); got != want {
			t.Errorf("txlog_client_stream_requests_total{result=%q} = %v, want %v", result, got, want)
		}
	}
	c.conn.Close()
	deadline := time.Now().Add(30 * time.Second)
	for gaugeOf(t, reg, "txlog_client_streams") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("txlog_client_streams stayed at 1 after the client closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gaugeOf returns the value of the gauge name.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("%s not gathered", name)
	return 0
}

// counterOf returns the value of counter name with label result.
func counterOf(t *testing.T, reg *prometheus.Registry, name, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("%s{result=%q} not gathered", name, result)
	return 0
}

// TestTxStreamClientReadsNothing: a client that sends and never reads its
// answers loses its stream once a write of answers has waited the write
// timeout: the node keeps a bounded queue and stops reading meanwhile,
// rather than buffering without end.
func TestTxStreamClientReadsNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	b := newStreamBackend()
	ts, srv := startStreamServer(t, Config{Metrics: reg, ClientStreamInflight: 64}, b)
	srv.txs.writeTimeout = 300 * time.Millisecond
	c := dialStream(t, ts, http.Header{})
	key := strings.Repeat("i", MaxIdempotencyKeyBytes-2) // long answers fill the socket buffers sooner
	body := []byte(`{"ops":[{"op":"put","key":"k","value":1}],"idempotency_key":"` + key + `"}`)
	go func() {
		var out []byte
		for id := uint64(1); ; id++ {
			out = wire.AppendTxStreamRequest(out[:0], id, "", body)
			if _, err := c.conn.Write(out); err != nil {
				return // the node closed the stream
			}
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for gaugeOf(t, reg, "txlog_client_streams") != 0 || b.submits.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the stream of a client that reads nothing is still open after 60s (%d requests run)", b.submits.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTxStreamConfigValidate: the client stream's settings are never negative.
func TestTxStreamConfigValidate(t *testing.T) {
	err := Config{ClientStreamInflight: -1, ClientStreamIdleTimeout: -2}.Validate()
	for _, want := range []string{"ClientStreamInflight: -1", "ClientStreamIdleTimeout: -2"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %q", err, want)
		}
	}
}
