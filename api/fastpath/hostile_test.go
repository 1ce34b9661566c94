package fastpath

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
)

// keyRecorder is a backend that commits every transaction and remembers the
// keys it was asked to write.
type keyRecorder struct {
	mu   sync.Mutex
	keys map[string]int
}

func (k *keyRecorder) backend() *fakeBackend {
	b := okBackend()
	ok := b.SubmitFunc
	b.SubmitFunc = func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		k.mu.Lock()
		if k.keys == nil {
			k.keys = map[string]int{}
		}
		for _, op := range tx.Ops {
			k.keys[op.Key]++
		}
		k.mu.Unlock()
		return ok(ctx, tx, opts)
	}
	return b
}

func (k *keyRecorder) count(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys[key]
}

// smuggled is a write hidden behind a request's framing: it must never run.
var smuggled = post("/v1/tx", "", `{"ops":[{"op":"put","key":"smuggled","value":1}]}`)

// A request hidden in the body of another, behind a framing that two parsers
// could read differently, never runs, through the fast path or net/http
// alone: each such request is refused or read one way, and its connection is
// closed after the answer.
func TestFastPathSmuggling(t *testing.T) {
	var rec keyRecorder
	p := newFastPair(t, testConfig, FastConfig{}, rec.backend())
	hex := itoaHex(len(smuggled))
	for _, c := range []struct {
		name string
		raw  string
	}{
		{"a length of -0", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: -0\r\n\r\n" + smuggled},
		{"a length of +0", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: +0\r\n\r\n" + smuggled},
		{"two lengths", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: " + itoa(len(smuggled)) + "\r\n\r\n" + smuggled},
		{"a length folded", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len(smuggled)) + "\r\n 0\r\n\r\n" + smuggled},
		{"a length and chunked (CL.TE)", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len("0\r\n\r\n")+len(smuggled)) + "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled},
		{"chunked and a length (TE.CL)", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n" + hex + "\r\n" + smuggled + "\r\n0\r\n\r\n"},
		{"chunked folded", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding:\r\n chunked\r\n\r\n" + hex + "\r\n" + smuggled + "\r\n0\r\n\r\n"},
		{"chunked with a space before the colon", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding : chunked\r\n\r\n" + smuggled},
		{"HTTP/1.0 keep-alive, chunked and a length", "POST /v1/tx HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: " + itoa(len(goodTx)) + "\r\n\r\n" + goodTx + smuggled},
		{"a NUL in the length", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 0\x00" + itoa(len(smuggled)) + "\r\n\r\n" + smuggled},
		{"a space in the target", "POST /v1/tx?a HTTP/1.1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" + smuggled},
	} {
		for _, addr := range []string{p.plain, p.fast} {
			t.Run(c.name+"/"+p.name(addr), func(t *testing.T) {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				conn.SetDeadline(time.Now().Add(5 * time.Second))
				io.WriteString(conn, c.raw)
				got, err := io.ReadAll(conn)
				if err != nil {
					t.Fatalf("%v, want the connection closed after the answer; got %q", err, got)
				}
				if _, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil); err != nil {
					t.Fatalf("no answer before the close: %v (%q)", err, got)
				}
				if n := rec.count("smuggled"); n != 0 {
					t.Fatalf("the hidden request ran %d times", n)
				}
			})
		}
	}
}

// splitListener's connections return their first at bytes from one read, and
// the rest from the next ones: a request split at every byte on its way in.
type splitListener struct {
	net.Listener
	at int
}

func (l *splitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &splitConn{Conn: c, left: l.at}, nil
}

type splitConn struct {
	net.Conn
	left int // bytes until the split; then -1
}

func (c *splitConn) Read(b []byte) (int, error) {
	if c.left > 0 {
		n, err := io.ReadFull(c.Conn, b[:min(len(b), c.left)])
		c.left -= n
		return n, err
	}
	return c.Conn.Read(b)
}

// Pipelined requests are answered the same, in order, wherever the bytes
// are split on their way in: inside the request line, the header, the body,
// between two requests, before the one the fast path hands over.
func TestFastPathPipelinedSplit(t *testing.T) {
	var rec keyRecorder
	s := api.NewServer(testConfig, rec.backend())
	put := func(key string) string {
		return post("/v1/tx", "", `{"ops":[{"op":"put","key":"`+key+`","value":1}]}`)
	}
	raw := put("a") + post("/v1/tx/batch", "", `{"txs":[`+goodTx+`]}`) + "GET /v1/kv/k HTTP/1.1\r\nHost: x\r\n\r\n" + put("b")
	for at := 1; at < len(raw); at++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		fl := NewFastListener(s, &splitListener{Listener: ln, at: at}, FastConfig{})
		srv := &http.Server{Handler: s}
		go srv.Serve(fl)
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, raw)
		br := bufio.NewReader(c)
		for i, want := range []string{`"committed"`, `"results"`, `"version":3`, `"committed"`} {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("split at %d: answer %d: %v", at, i, err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
				t.Fatalf("split at %d: answer %d: %d %s, want 200 with %s", at, i, resp.StatusCode, body, want)
			}
		}
		c.Close()
		srv.Close()
		fl.CloseAll()
	}
	if a, b := rec.count("a"), rec.count("b"); a != len(raw)-1 || b != len(raw)-1 {
		t.Errorf("key a written %d times, b %d, want %d each", a, b, len(raw)-1)
	}
}

// The parser reads the same header however its bytes arrive, one at a time
// included, and stops waiting at the first byte that rules the fast path
// out.
func TestParseFastRequestByteByByte(t *testing.T) {
	for _, c := range []struct {
		name string
		head string
		ok   bool
	}{
		{"plain", post("/v1/tx?ack=quorum", "X-A: 1\r\n", ""), true},
		{"a bare LF", "POST /v1/tx HTTP/1.1\r\nHost: x\n", false},
		{"a read", "GET /v1/kv/k HTTP/1.1\r\n", false},
		{"another path", "POST /v2", false},
		{"a leading CRLF", "\r\nPOST /v1/tx HTTP/1.1\r\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The bytes, then a reader that fails the test if the parser
			// waits for more of a header it should have given up on.
			r := io.MultiReader(iotest.OneByteReader(strings.NewReader(c.head)), iotest.ErrReader(errWaited))
			req, n, ok := parseFastRequest(bufio.NewReaderSize(r, fastBufSize), 1<<20, nil)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v", ok, c.ok)
			}
			if ok && (n != len(c.head) || req.URL.RawQuery != "ack=quorum" || req.Header.Get("X-A") != "1") {
				t.Fatalf("read %d of %d bytes: %s %v", n, len(c.head), req.URL, req.Header)
			}
		})
	}
}

var errWaited = errors.New("the parser waited for more bytes")

// A declared body allocates with the bytes that arrive, not with the length
// declared: many connections that declare the largest body and send a few
// bytes of it pin a few KiB each.
func TestFastPathStalledBodiesMemory(t *testing.T) {
	cfg := testConfig
	cfg.MaxBodyBytes = 4 << 20
	p := newFastPair(t, cfg, FastConfig{}, okBackend())
	const conns = 50
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	before := heap()
	var cs []net.Conn
	for range conns {
		c, err := net.Dial("tcp", p.fast)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: "+itoa(int(cfg.MaxBodyBytes))+"\r\n\r\n{\"ops\":")
		cs = append(cs, c)
	}
	// Every connection is on the fast path, its body read under way.
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.fl.mu.Lock()
		n := len(p.fl.conns)
		p.fl.mu.Unlock()
		if n == conns {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections on the fast path, want %d", n, conns)
		}
		time.Sleep(time.Millisecond) // polls a condition
	}
	grown := int64(heap()) - int64(before)
	t.Logf("heap in use: %d KiB before, %+d KiB with %d stalled bodies of %d MiB declared", before>>10, grown>>10, conns, cfg.MaxBodyBytes>>20)
	if limit := int64(conns) * 64 << 10; grown > limit {
		t.Errorf("heap grew %d KiB with %d stalled bodies, want at most %d KiB (64 KiB each)", grown>>10, conns, limit>>10)
	}
	for _, c := range cs {
		c.Close()
	}
}

// A body that arrives in pieces, the largest allowed, is read whole.
func TestReadFastBody(t *testing.T) {
	for _, n := range []int64{0, 1, fastBufSize - 1, fastBufSize, fastBufSize + 1, 3*fastBufSize + 7, 1 << 20} {
		body := bytes.Repeat([]byte("x"), int(n))
		got, err := readFastBody(bufio.NewReaderSize(iotest.HalfReader(bytes.NewReader(body)), fastBufSize), n)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("%d bytes: read %d, %v", n, len(got), err)
		}
		if int64(cap(got)) > max(2*n, fastBufSize) {
			t.Errorf("%d bytes: a buffer of %d", n, cap(got))
		}
		if n > 0 {
			if _, err := readFastBody(bufio.NewReaderSize(bytes.NewReader(body[:n-1]), fastBufSize), n); err != io.ErrUnexpectedEOF {
				t.Errorf("%d bytes, one missing: %v, want %v", n, err, io.ErrUnexpectedEOF)
			}
		}
	}
}
