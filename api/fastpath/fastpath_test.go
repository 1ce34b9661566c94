package fastpath

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
)

// fastPair serves one Server twice: through net/http alone, and through a
// FastListener in front of net/http, as a node does.
type fastPair struct {
	plain, fast string // addresses
	fl          *FastListener
}

func newFastPair(t testing.TB, cfg api.Config, fcfg FastConfig, b api.Backend) *fastPair {
	t.Helper()
	s := api.NewServer(cfg, b)
	plainLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fastLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := NewFastListener(s, fastLn, fcfg)
	// Both servers with the FastListener's timeouts, as the node has them.
	newServer := func() *http.Server {
		return &http.Server{Handler: s, ReadHeaderTimeout: fl.cfg.ReadHeaderTimeout, IdleTimeout: fl.cfg.IdleTimeout}
	}
	plain, fast := newServer(), newServer()
	go plain.Serve(plainLn)
	go fast.Serve(fl)
	t.Cleanup(func() {
		plain.Close()
		fast.Close()
		fl.CloseAll()
	})
	return &fastPair{plain: plainLn.Addr().String(), fast: fastLn.Addr().String(), fl: fl}
}

// name names the server at addr in a subtest's name.
func (p *fastPair) name(addr string) string {
	if addr == p.fast {
		return "fast path"
	}
	return "net/http"
}

// exchange writes raw to a new connection to addr and reads the answers to
// n requests; closed reports whether the server then closed the connection.
func exchange(t *testing.T, addr, raw string, n int) (answers []*http.Response, bodies []string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i := 0; i < n; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d of %q: %v", i, raw, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		answers, bodies = append(answers, resp), append(bodies, string(body))
	}
	c.SetReadDeadline(time.Now().Add(150 * time.Millisecond))
	_, err = br.ReadByte()
	return answers, bodies, err == io.EOF
}

func okBackend() *fakeBackend {
	return &fakeBackend{
		SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
			return wire.TxResult{TxID: 12345, Status: "committed", Index: 7, Term: 2, Versions: map[string]uint64{tx.Ops[0].Key: 1}}, nil
		},
		SubmitBatchFunc: func(ctx context.Context, txs []wire.TxRequest, opts wire.SubmitOptions) ([]wire.TxResult, error) {
			out := make([]wire.TxResult, len(txs))
			for i := range out {
				out[i] = wire.TxResult{TxID: 12345, Status: "committed", Index: uint64(7 + i), Term: 2}
			}
			return out, nil
		},
		GetFunc: func(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error) {
			return wire.KV{Key: key, Value: []byte(`"v"`), Version: 3, Index: 9}, nil
		},
	}
}

func post(target, headers, body string) string {
	return "POST " + target + " HTTP/1.1\r\nHost: x\r\n" + headers + "Content-Length: " + itoa(len(body)) + "\r\n\r\n" + body
}

func itoa(n int) string { return strconv.Itoa(n) }

const goodTx = `{"ops":[{"op":"put","key":"k","value":"x"}]}`

// The fast path answers what net/http answers, and leaves to net/http what it
// does not handle, with the bytes it had read.
func TestFastPathSameAnswers(t *testing.T) {
	p := newFastPair(t, testConfig, FastConfig{}, okBackend())
	chunkedTx := itoaHex(len(goodTx)) + "\r\n" + goodTx + "\r\n0\r\n\r\n"
	for _, c := range []struct {
		name   string
		raw    string
		fast   bool // answered by the fast path
		closes bool // the connection must close after the answer
	}{
		{"a transaction", post("/v1/tx", "Content-Type: application/json\r\n", goodTx), true, false},
		{"a query", post("/v1/tx?ack=quorum&timeout=2s", "", goodTx), true, false},
		{"a bad parameter", post("/v1/tx?ack=bogus", "", goodTx), true, false},
		{"bad JSON", post("/v1/tx", "", `{"ops":[`), true, false},
		{"no ops", post("/v1/tx", "", `{"ops":[]}`), true, false},
		{"a batch", post("/v1/tx/batch", "", `{"txs":[`+goodTx+`,`+goodTx+`]}`), true, false},
		{"a batch too large", post("/v1/tx/batch", "", `{"txs":[`+goodTx+`,`+goodTx+`,`+goodTx+`]}`), true, false},
		{"Connection: close", post("/v1/tx", "Connection: close\r\n", goodTx), true, false},
		{"headers in other cases", "POST /v1/tx HTTP/1.1\r\nhOsT: x\r\ncontent-length: " + itoa(len(goodTx)) + "\r\nX-Other:  a b \r\n\r\n" + goodTx, true, false},
		{"a body over the limit", post("/v1/tx", "", strings.Repeat(" ", 5000)), false, false},
		{"a read", "GET /v1/kv/k HTTP/1.1\r\nHost: x\r\n\r\n", false, false},
		{"another path", post("/v1/txx", "", goodTx), false, false},
		{"chunked", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + itoaHex(len(goodTx)) + "\r\n" + goodTx + "\r\n0\r\n\r\n", false, false},
		{"chunked, with a Content-Length", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + itoaHex(len(goodTx)) + "\r\n" + goodTx + "\r\n0\r\n\r\n", false, false},
		{"HTTP/1.0", "POST /v1/tx HTTP/1.0\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, false},
		{"no Host", "POST /v1/tx HTTP/1.1\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, false},
		{"two Content-Lengths", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n{}  ", false, false},
		{"a folded header", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, false},
		{"a bad header name", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nX A: b\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, false},
		{"a signed length", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n{}", false, false},
		{"Connection: upgrade", post("/v1/tx", "Connection: upgrade\r\n", goodTx), false, false},
		{"a header over 4 KiB", post("/v1/tx", "X-Big: "+strings.Repeat("a", 5000)+"\r\n", goodTx), false, false},
		{"a request line over 4 KiB", post("/v1/tx?"+strings.Repeat("a", 5000)+"=1", "", goodTx), false, false},

		// Framing: what net/http's server reads differently, or refuses,
		// the fast path leaves to it.
		{"a length of -0", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: -0\r\n\r\n", false, true},
		{"a length of +5", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: +2\r\n\r\n{}", false, true},
		{"a length of 0x2", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 0x2\r\n\r\n{}", false, true},
		{"a length of 2,2", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 2,2\r\n\r\n{}", false, true},
		{"an empty length", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n{}", false, true},
		{"a length with spaces around", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: \t " + itoa(len(goodTx)) + " \r\n\r\n" + goodTx, true, false},
		{"a length with leading zeros", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 000" + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, true, false},
		{"two equal lengths", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len(goodTx)) + "\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, false},
		{"a space before the colon", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length : 2\r\n\r\n{}", false, true},
		{"a length folded", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n 0\r\n\r\n{}", false, true},
		{"a length, then chunked", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedTx, false, true},
		{"chunked, then a length", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n" + chunkedTx, false, true},
		{"chunked twice", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedTx, false, true},
		{"chunked in other cases", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ChUnKeD\r\n\r\n" + chunkedTx, false, true},
		{"gzip, chunked", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + chunkedTx, false, true},
		{"HTTP/1.0, keep-alive, chunked and a length", "POST /v1/tx HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, true},
		{"a header folded", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nX-A: b\r\n\tc\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, false},
		{"a first header line folded", "POST /v1/tx HTTP/1.1\r\n Host: x\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, true},
		{"bare LF line ends", "POST /v1/tx HTTP/1.1\nHost: x\nContent-Length: " + itoa(len(goodTx)) + "\n\n" + goodTx, false, false},
		{"a bare LF in the header", "POST /v1/tx HTTP/1.1\r\nHost: x\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, false},
		{"a bare CR in a value", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, true},
		{"a NUL in a value", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, true},
		{"a NUL in the target", post("/v1/tx?a=\x00", "", goodTx), false, true},
		{"a NUL in the method", "POST\x00/v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", false, true},
		{"a space in the target", post("/v1/tx?a b", "", goodTx), false, true},
		{"a space in the path", post("/v1/tx /x", "", goodTx), false, true},
		{"a tab in the target", post("/v1/tx?a\tb", "", goodTx), false, true},
		{"two spaces after the method", post(" /v1/tx", "", goodTx), false, true},
		{"HTTP/1.1 in other cases", "POST /v1/tx http/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", false, true},
		{"a Host with a space", "POST /v1/tx HTTP/1.1\r\nHost: a b\r\nContent-Length: 2\r\n\r\n{}", false, true},
		{"a Host with a slash", "POST /v1/tx HTTP/1.1\r\nHost: a/b\r\nContent-Length: 2\r\n\r\n{}", false, true},
		{"two Hosts", "POST /v1/tx HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Length: 2\r\n\r\n{}", false, true},
		{"an absolute target", "POST http://x/v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx, false, false},
		{"Expect: 100-continue", post("/v1/tx", "Expect: 100-continue\r\n", goodTx), false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := p.fl.Served()
			want, wantBodies, wantClosed := exchange(t, p.plain, c.raw, 1)
			got, gotBodies, gotClosed := exchange(t, p.fast, c.raw, 1)
			if got[0].StatusCode != want[0].StatusCode || gotBodies[0] != wantBodies[0] {
				t.Errorf("fast path: %d %s\nnet/http: %d %s", got[0].StatusCode, gotBodies[0], want[0].StatusCode, wantBodies[0])
			}
			if got[0].Close != want[0].Close {
				t.Errorf("Connection: close in the answer: %v, net/http %v", got[0].Close, want[0].Close)
			}
			for _, h := range []string{"Content-Type", "X-Content-Type-Options", "Content-Length"} {
				if g, w := got[0].Header.Get(h), want[0].Header.Get(h); g != w {
					t.Errorf("%s: %q, net/http %q", h, g, w)
				}
			}
			if c.fast && got[0].Header.Get("Date") == "" {
				t.Error("no Date")
			}
			if gotClosed != wantClosed {
				t.Errorf("connection closed after the answer: %v, net/http %v", gotClosed, wantClosed)
			}
			if c.closes && !gotClosed {
				t.Error("the connection stays open after an ambiguous or refused request (RFC 9112, 6.1)")
			}
			wantServed := int64(0)
			if c.fast {
				wantServed = 1
			}
			if served := p.fl.Served() - before; served != wantServed {
				t.Errorf("the fast path served %d requests, want %d", served, wantServed)
			}
		})
	}
}

func itoaHex(n int) string { return strconv.FormatInt(int64(n), 16) }

// Requests sent together are answered in order; a connection goes to
// net/http at the first request the fast path leaves, with what follows it.
func TestFastPathKeepAliveAndHandoff(t *testing.T) {
	p := newFastPair(t, testConfig, FastConfig{}, okBackend())
	raw := post("/v1/tx", "", goodTx) + post("/v1/tx?ack=quorum", "", goodTx) + post("/v1/tx/batch", "", `{"txs":[`+goodTx+`]}`) +
		"GET /v1/kv/k HTTP/1.1\r\nHost: x\r\n\r\n" + post("/v1/tx", "", goodTx)
	answers, bodies, _ := exchange(t, p.fast, raw, 5)
	for i, r := range answers {
		if r.StatusCode != http.StatusOK {
			t.Errorf("answer %d: %d %s", i, r.StatusCode, bodies[i])
		}
	}
	if !strings.Contains(bodies[2], `"results"`) || !strings.Contains(bodies[3], `"version":3`) || !strings.Contains(bodies[4], `"committed"`) {
		t.Errorf("answers out of order: %q", bodies)
	}
	if n := p.fl.Served(); n != 3 {
		t.Errorf("the fast path served %d requests, want the 3 before the read", n)
	}
}

// A fast connection reuses its answer writer: an answer carries nothing of
// the one before it on the same connection (a 503's Retry-After, a status, a
// longer body), and each is what net/http answers on a new connection.
func TestFastPathReusedWriter(t *testing.T) {
	b := okBackend()
	ok := b.SubmitFunc
	b.SubmitFunc = func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		if tx.Ops[0].Key == "busy" {
			return wire.TxResult{}, wire.ErrNoLeader
		}
		return ok(ctx, tx, opts)
	}
	p := newFastPair(t, testConfig, FastConfig{}, b)
	busy := `{"ops":[{"op":"put","key":"busy","value":"x"}]}`
	reqs := []string{
		post("/v1/tx", "", busy),
		post("/v1/tx", "", goodTx),
		post("/v1/tx/batch", "", `{"txs":[`+goodTx+`,`+goodTx+`]}`),
		post("/v1/tx?ack=bogus", "", goodTx),
		post("/v1/tx", "", goodTx),
		post("/v1/tx", "", busy),
	}
	got, gotBodies, _ := exchange(t, p.fast, strings.Join(reqs, ""), len(reqs))
	if served := p.fl.Served(); served != int64(len(reqs)) {
		t.Fatalf("the fast path served %d requests, want %d", served, len(reqs))
	}
	for i, raw := range reqs {
		want, wantBodies, _ := exchange(t, p.plain, raw, 1)
		if got[i].StatusCode != want[0].StatusCode || gotBodies[i] != wantBodies[0] {
			t.Errorf("answer %d: %d %s, net/http %d %s", i, got[i].StatusCode, gotBodies[i], want[0].StatusCode, wantBodies[0])
		}
		var gotKeys, wantKeys []string
		for k := range got[i].Header {
			gotKeys = append(gotKeys, k)
		}
		for k := range want[0].Header {
			wantKeys = append(wantKeys, k)
		}
		slices.Sort(gotKeys)
		slices.Sort(wantKeys)
		if !slices.Equal(gotKeys, wantKeys) {
			t.Errorf("answer %d: headers %v, net/http %v", i, gotKeys, wantKeys)
		}
		for _, h := range []string{"Content-Type", "X-Content-Type-Options", "Content-Length", "Retry-After"} {
			if g, w := got[i].Header.Get(h), want[0].Header.Get(h); g != w {
				t.Errorf("answer %d: %s %q, net/http %q", i, h, g, w)
			}
		}
	}
	if got[0].Header.Get("Retry-After") == "" || got[1].Header.Get("Retry-After") != "" {
		t.Errorf("Retry-After %q then %q: want it on the 503 only", got[0].Header.Get("Retry-After"), got[1].Header.Get("Retry-After"))
	}
}

// Shutdown closes idle connections at once, and waits for a request in
// progress to be answered.
func TestFastPathShutdown(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	b := okBackend()
	b.SubmitFunc = func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		started <- struct{}{}
		<-release
		return wire.TxResult{TxID: 12345, Status: "committed", Index: 1, Term: 1}, nil
	}
	p := newFastPair(t, testConfig, FastConfig{}, b)
	idle, err := net.Dial("tcp", p.fast)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	busy, err := net.Dial("tcp", p.fast)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	io.WriteString(busy, post("/v1/tx", "", goodTx))
	<-started
	for deadline := time.Now().Add(5 * time.Second); ; {
		p.fl.mu.Lock()
		n := len(p.fl.conns)
		p.fl.mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- p.fl.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the idle connection: %v, want it closed", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a request in progress", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the request in progress: %v, %v", resp, err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", p.fast, time.Second); err == nil {
		c.SetReadDeadline(time.Now().Add(time.Second))
		io.WriteString(c, post("/v1/tx", "", goodTx))
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("a connection after Shutdown was served")
		}
		c.Close()
	}
}

// A handler that panics costs its connection, as with net/http, not the
// server.
func TestFastPathPanic(t *testing.T) {
	var calls atomic.Int32
	b := okBackend()
	b.SubmitFunc = func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		if calls.Add(1) == 1 {
			panic("boom")
		}
		return wire.TxResult{TxID: 12345, Status: "committed", Index: 1, Term: 1}, nil
	}
	p := newFastPair(t, testConfig, FastConfig{}, b)
	c, err := net.Dial("tcp", p.fast)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(c, post("/v1/tx", "", goodTx))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("an answer after a panic")
	}
	answers, _, _ := exchange(t, p.fast, post("/v1/tx", "", goodTx), 1)
	if answers[0].StatusCode != http.StatusOK {
		t.Fatalf("after the panic: %d", answers[0].StatusCode)
	}
}

// closedAfter writes each of parts to a new connection to addr, pausing
// pause before every part but the first, and returns how long after the dial
// the server closed the connection, and what it answered before.
func closedAfter(t *testing.T, addr string, pause time.Duration, parts ...string) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, part := range parts {
		if i > 0 {
			time.Sleep(pause) // the client is slow on purpose
		}
		io.WriteString(c, part)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%q: %v, want the connection closed", parts, err)
	}
	return time.Since(start), string(got)
}

// The timeouts are net/http's, whichever parser holds the connection: a new
// connection that sends nothing, or a header that stops, is closed
// ReadHeaderTimeout after the dial, even when the fast path hands the header
// to net/http halfway; an idle connection closes after IdleTimeout; a body
// that does not arrive in BodyTimeout is answered 408.
func TestFastPathTimeouts(t *testing.T) {
	cfg := testConfig
	cfg.BodyTimeout = 200 * time.Millisecond
	const header = 2 * time.Second
	p := newFastPair(t, cfg, FastConfig{IdleTimeout: 300 * time.Millisecond, ReadHeaderTimeout: header}, okBackend())
	for _, c := range []struct {
		name  string
		parts []string
		min   time.Duration // the earliest close
		max   time.Duration // the latest close
		reply string        // the start of the answer before the close
	}{
		{"nothing sent", nil, header, header * 3 / 2, ""},
		{"a header that stops", []string{"POST /v1/tx HTTP/1.1\r\nHost: x\r\n"}, header, header * 3 / 2, ""},
		{"a header handed over partway", []string{"POST /v1/tx HTTP/1.1\r\n", "Host: x\n"}, header, header * 3 / 2, ""},
		{"a read that stops", []string{"GET /v1/kv/k HTTP/1.1\r\n"}, header, header * 3 / 2, ""},
		// net/http answers 400 to a line cut by the deadline.
		{"a header line that stops", []string{"POST /v1/tx HTTP/1.1\r\n", "Ho"}, header, header * 3 / 2, "HTTP/1.1 400"},
		{"a read's header line that stops", []string{"GET /v1/kv/k HTTP/1.1\r\n", "Ho"}, header, header * 3 / 2, "HTTP/1.1 400"},
		{"idle after a request", []string{post("/v1/tx", "", goodTx)}, 300 * time.Millisecond, header * 3 / 4, "HTTP/1.1 200 OK"},
	} {
		for _, addr := range []string{p.plain, p.fast} {
			t.Run(c.name+"/"+p.name(addr), func(t *testing.T) {
				t.Parallel()
				// A second part comes 3/4 of the header's time after the first:
				// a deadline started again at the handover would close after
				// 7/4 of it.
				d, got := closedAfter(t, addr, header*3/4, c.parts...)
				if d < c.min || d > c.max {
					t.Errorf("%s: closed after %v, want %v to %v", addr, d, c.min, c.max)
				}
				if !strings.HasPrefix(got, c.reply) || c.reply == "" && got != "" {
					t.Errorf("%s: answered %q, want %q", addr, got, c.reply)
				}
			})
		}
	}
	t.Run("a body that stops", func(t *testing.T) {
		for _, addr := range []string{p.plain, p.fast} {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(c, "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{\"ops\"")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !bytes.Contains(body, []byte(wire.CodeRequestTimeout)) {
				t.Errorf("%s: %d %s, want 408 %s", addr, resp.StatusCode, body, wire.CodeRequestTimeout)
			}
			c.Close()
		}
	})
}

// FuzzParseFastRequest feeds request headers to the fast path's parser: it
// must not panic, and what it takes net/http's server must read the same way
// (the request line, the Host, every header, the body's length and where it
// starts, keep-alive) and pass to its handler, not refuse.
func FuzzParseFastRequest(f *testing.F) {
	f.Add([]byte(post("/v1/tx", "Content-Type: application/json\r\n", "")))
	f.Add([]byte(post("/v1/tx/batch?ack=all", "Connection: keep-alive, close\r\nX-A: \t b\r\n", "")))
	f.Add([]byte("POST /v1/tx HTTP/1.1\r\nhost: h\r\ncontent-length: 0012\r\n\r\n"))
	f.Add([]byte("POST /v1/tx?%zz HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\n"))
	f.Add([]byte("GET /v1/tx HTTP/1.1\r\nHost: h\r\n\r\n"))
	f.Add([]byte(post("/v1/tx", "X-A: 1\r\nx-b: 2\r\nX-A:3\r\nX-B:  4 \r\n", "")))
	// The framings of the hostile-input table (TestFastPathSmuggling).
	f.Add([]byte("POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: -0\r\n\r\n"))
	f.Add([]byte("POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: +5\r\n\r\n"))
	f.Add([]byte("POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"))
	f.Add([]byte("POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"))
	f.Add([]byte("POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n 0\r\n\r\n"))
	f.Add([]byte("POST /v1/tx HTTP/1.1\nHost: x\nContent-Length: 5\n\n"))
	f.Add([]byte("POST /v1/tx HTTP/1.1\r\nHost: x\r\nX-A: \x00\r\nContent-Length: 5\r\n\r\n"))
	f.Add([]byte("POST /v1/tx?a b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"))
	f.Add([]byte("POST /v1/tx HTTP/1.1\r\nHost: a b\r\nContent-Length: 5\r\n\r\n"))
	f.Add([]byte("POST /v1/tx HTTP/1.1\r\nHost: [::1]:80\r\nContent-Length: 5\r\n\r\n"))
	const maxBody = 64
	got := make(chan *http.Request, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		got <- r
	})}
	go srv.Serve(ln)
	f.Cleanup(func() { srv.Close() })
	f.Fuzz(func(t *testing.T, head []byte) {
		req, n, ok := parseFastRequest(bufio.NewReaderSize(bytes.NewReader(head), fastBufSize), maxBody, nil)
		if !ok {
			return
		}
		if n > len(head) {
			t.Fatalf("header length %d of %d bytes", n, len(head))
		}
		// net/http's server, given the header and the body it declares.
		body := bytes.Repeat([]byte("b"), int(req.ContentLength))
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write(append(append(slices.Clip(head[:n]), body...), "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"...))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("net/http's server: %v", err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("net/http's server refuses what the fast path takes: %d", resp.StatusCode)
		}
		want := <-got
		wantBody, _ := io.ReadAll(want.Body)
		if want.Method != req.Method || want.RequestURI != req.RequestURI || want.Host != req.Host ||
			want.ContentLength != req.ContentLength || want.Close != req.Close || want.URL.String() != req.URL.String() ||
			!bytes.Equal(wantBody, body) {
			t.Fatalf("fast path %s %s host %q length %d close %v, net/http %s %s host %q length %d close %v body %q",
				req.Method, req.RequestURI, req.Host, req.ContentLength, req.Close,
				want.Method, want.RequestURI, want.Host, want.ContentLength, want.Close, wantBody)
		}
		for k, v := range want.Header {
			if strings.Join(req.Header[k], ",") != strings.Join(v, ",") {
				t.Fatalf("header %s: %q, net/http %q", k, req.Header[k], v)
			}
		}
		if len(req.Header) != len(want.Header) {
			t.Fatalf("headers %v, net/http %v", req.Header, want.Header)
		}
		if !req.Close {
			// The next request starts where the fast path says the body ends.
			io.Copy(io.Discard, resp.Body)
			if _, err := http.ReadResponse(br, nil); err != nil {
				t.Fatalf("the request after it: %v", err)
			}
			if next := <-got; next.URL.Path != "/next" {
				t.Fatalf("the request after it is %s, want /next", next.URL)
			}
		}
	})
}

// The node drains the FastListener beside its http.Server's Shutdown: the
// idle fast connection closes, Serve returns ErrServerClosed, and closing the
// listener again fails nothing.
func TestFastPathShutdownBesideServer(t *testing.T) {
	s := api.NewServer(testConfig, okBackend())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := NewFastListener(s, ln, FastConfig{})
	srv := &http.Server{Handler: s}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(fl) }()
	exchange(t, ln.Addr().String(), post("/v1/tx", "", goodTx), 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// As the node does: the fast connections drain beside the server's
	// Shutdown, which closes the listener.
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, post("/v1/tx", "", goodTx))
	if _, err := http.ReadResponse(bufio.NewReader(idle), nil); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	go func() { drained <- fl.Drain(ctx) }()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("http.Server.Shutdown: %v", err)
	}
	if err := <-drained; err != nil {
		t.Errorf("FastListener.Drain: %v", err)
	}
	// Closing again, as FastListener.Shutdown would, is no failure.
	if err := fl.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
}

// A request's header costs a fixed number of allocations, however many
// header lines it has: one string for the whole header, one array for the
// values, where each header line used to cost two.
func TestParseFastRequestAllocs(t *testing.T) {
	count := func(headers string) float64 {
		raw := []byte(post("/v1/tx?ack=quorum", headers, ""))
		return testing.AllocsPerRun(200, func() {
			if _, _, ok := parseFastRequest(bufio.NewReaderSize(bytes.NewReader(raw), fastBufSize), 1<<20, nil); !ok {
				t.Fatal("not parsed")
			}
		})
	}
	few := count("Content-Type: application/json\r\n")
	many := count("Content-Type: application/json\r\nUser-Agent: x\r\nAccept: */*\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\n")
	t.Logf("allocations: %v with 3 header lines, %v with 8", few, many)
	if many > few+1 { // the header map may grow once past its hint of 4
		t.Errorf("%v allocations with 8 header lines against %v with 3: a header line allocates", many, few)
	}
}
