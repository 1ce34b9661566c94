package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/chaos"
)

// rawAnswer is one HTTP answer read off a raw connection.
type rawAnswer struct {
	status int
	code   string // the JSON error's code, if any
	header http.Header
	body   string
}

// rawExchange dials addr, writes the parts of a request (pausing pause
// between them), and reads what comes back until the node closes the
// connection or readFor has passed. It returns the answers and whether the
// node closed the connection.
func rawExchange(t *testing.T, addr string, pause, readFor time.Duration, parts ...string) ([]rawAnswer, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, p := range parts {
		if i > 0 {
			time.Sleep(pause) // the client is slow on purpose
		}
		if _, err := io.WriteString(c, p); err != nil {
			break // the node closed first: what it answered is read below
		}
	}
	c.SetReadDeadline(time.Now().Add(readFor))
	got, err := io.ReadAll(c)
	closed := err == nil || !errors.Is(err, os.ErrDeadlineExceeded)
	br := bufio.NewReader(bytes.NewReader(got))
	var out []rawAnswer
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		out = append(out, answerOf(resp))
	}
	return out, closed
}

// answerOf reads resp whole into a rawAnswer.
func answerOf(resp *http.Response) rawAnswer {
	b, _ := io.ReadAll(resp.Body)
	a := rawAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
	var e struct{ Error wire.ErrorBody }
	if js := strings.TrimSpace(a.body); strings.HasPrefix(js, "{") {
		_ = json.Unmarshal([]byte(js), &e)
		a.code = e.Error.Code
	}
	return a
}

// rawAnswers sends raw to addr, reads n answers (within 20 s: a write
// forwarded and committed on a loaded machine may take seconds), and then
// whether the node closes the connection within 300 ms.
func rawAnswers(t *testing.T, addr, raw string, n int) ([]rawAnswer, bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	var out []rawAnswer
	for range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out, true
		}
		out = append(out, answerOf(resp))
	}
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = br.ReadByte()
	return out, !errors.Is(err, os.ErrDeadlineExceeded)
}

// hostPort is the host:port of a base URL.
func hostPort(base string) string { return strings.TrimPrefix(base, "http://") }

// rawPost is a raw POST of body to target, with extra header lines.
func rawPost(target, headers, body string) string {
	return "POST " + target + " HTTP/1.1\r\nHost: x\r\n" + headers + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// rawPut is a raw POST of target (/v1/tx and its query) that puts key, with
// extra header lines.
func rawPut(target, headers, key string) string {
	return rawPost(target, headers, `{"ops":[{"op":"put","key":"`+key+`","value":1}]}`)
}

// heapInUse reads go_memstats_heap_inuse_bytes from a node's /metrics.
func heapInUse(ctx context.Context, t *testing.T, base string) float64 {
	t.Helper()
	return scrapeMetrics(ctx, t, base+"/metrics").must(t, "go_memstats_heap_inuse_bytes")
}

// TestHostileHTTP is the hostile-input table on the client port of a real
// three-node cluster: request smuggling against the fast path and net/http
// together, malformed lines, pipelining split at every byte, slow and idle
// connections, bodies at and over the limit, stalled declared bodies with
// the heap measured, and --max-streams. Each case is a raw TCP exchange whose
// exact answer (status, or a closed connection) is checked; after each the
// node still serves, no request hidden in a body ran (no key smuggled/...
// is in any log), and at the end every node's log is the same. The requests
// name the host x, which --allowed-hosts lets through the Host check
// (TestBrowserCSRFAndHost tries that check).
func TestHostileHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := startClusterWith(t, "--max-streams", "4", "--allowed-hosts", "x")
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := c.Nodes()
	target := c.URL(nodes[0].ID())
	addr := hostPort(target)
	// 30 s: a slow fsync on a loaded machine must not park the write (202);
	// long is the target of every write here that must answer 200.
	const long = "/v1/tx?timeout=30s"
	serves := func(t *testing.T, key string) {
		t.Helper()
		answers, _ := rawExchange(t, addr, 0, 10*time.Second, rawPut(long, "Connection: close\r\n", key))
		if len(answers) != 1 || answers[0].status != http.StatusOK {
			t.Fatalf("after the case, a write: %+v, want 200", answers)
		}
	}

	// hidden is a write behind another request's framing: it must never run.
	hidden := rawPut("/v1/tx", "", "smuggled/1")
	hex := strconv.FormatInt(int64(len(hidden)), 16)
	goodTx := `{"ops":[{"op":"put","key":"framing/ok","value":1}]}`
	bigValue := func(n int) string { // a transaction body of exactly n bytes
		pre, post := `{"ops":[{"op":"put","key":"limit/ok","value":"`, `"}]}`
		return pre + strings.Repeat("x", n-len(pre)-len(post)) + post
	}
	const maxBody = 1 << 20 // the node's default --max-body-bytes
	for _, tc := range []struct {
		name   string
		raw    string
		status []int // the answers, in order
		code   string
		closed bool // the node closes the connection after them
	}{
		{"Content-Length -0", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: -0\r\n\r\n" + hidden, []int{400}, "", true},
		{"Content-Length +0", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: +0\r\n\r\n" + hidden, []int{400}, "", true},
		{"Content-Length with a space inside", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 0 " + strconv.Itoa(len(hidden)) + "\r\n\r\n" + hidden, []int{400}, "", true},
		{"two Content-Lengths", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nContent-Length: " + strconv.Itoa(len(hidden)) + "\r\n\r\n" + hidden, []int{400}, "", true},
		{"Content-Length folded (obs-fold)", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(len(hidden)) + "\r\n 0\r\n\r\n" + hidden, []int{400}, "", true},
		{"CL.TE", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(5+len(hidden)) + "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden, []int{400}, wire.CodeInvalidJSON, true},
		{"TE.CL", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n" + hex + "\r\n" + hidden + "\r\n0\r\n\r\n", []int{400}, wire.CodeInvalidJSON, true},
		{"TE folded", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding:\r\n chunked\r\n\r\n" + hex + "\r\n" + hidden + "\r\n0\r\n\r\n", []int{400}, wire.CodeInvalidJSON, true},
		{"TE with a space before the colon", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nTransfer-Encoding : chunked\r\n\r\n" + hidden, []int{400}, "", true},
		{"TE gzip, chunked", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + hex + "\r\n" + hidden + "\r\n0\r\n\r\n", []int{501}, "", true},
		{"HTTP/1.0 keep-alive with TE and CL", "POST " + long + " HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: " + strconv.Itoa(len(goodTx)) + "\r\n\r\n" + goodTx + hidden, []int{200}, "", true},
		{"a NUL in Content-Length", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 0\x00" + strconv.Itoa(len(hidden)) + "\r\n\r\n" + hidden, []int{400}, "", true},
		{"a NUL in a header", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\nContent-Length: 0\r\n\r\n" + hidden, []int{400}, "", true},
		{"a NUL in the target", "POST /v1/tx?a=\x00 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" + hidden, []int{400}, "", true},
		{"a space in the target", "POST /v1/tx?a HTTP/1.1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" + hidden, []int{400}, "", true},
		{"a Host with a space", "POST /v1/tx HTTP/1.1\r\nHost: a b\r\nContent-Length: 0\r\n\r\n" + hidden, []int{400}, "", true},
		{"a first header line folded", "POST /v1/tx HTTP/1.1\r\n Host: x\r\nContent-Length: 0\r\n\r\n" + hidden, []int{400}, "", true},
		{"a header line over 64 KiB", "POST /v1/tx HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 70<<10) + "\r\nContent-Length: 0\r\n\r\n" + hidden, []int{431}, "", true},
		{"a request line over 64 KiB", "POST /v1/tx?a=" + strings.Repeat("a", 70<<10) + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" + hidden, []int{431}, "", true},
		// Read the same by both parsers: answered, the connection kept.
		{"bare LF line ends", "POST " + long + " HTTP/1.1\nHost: x\nContent-Length: " + strconv.Itoa(len(goodTx)) + "\n\n" + goodTx, []int{200}, "", false},
		{"a header folded (obs-fold)", rawPost(long, "X-A: b\r\n c\r\n", goodTx), []int{200}, "", false},
		{"a header line over 4 KiB", rawPost(long, "X-Big: "+strings.Repeat("a", 5000)+"\r\n", goodTx), []int{200}, "", false},
		{"a leading CRLF between requests", rawPost(long, "", goodTx) + "\r\n" + rawPost(long, "", goodTx), []int{200, 200}, "", false},
		{"pipelined: fast path, net/http, fast path", rawPost(long, "", goodTx) + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + rawPost(long, "", goodTx), []int{200, 200, 200}, "", false},
		// Bodies at and over the limits.
		{"a body of max-body-bytes", rawPost(long, "", bigValue(maxBody)), []int{200}, "", false},
		// Refused after reading the limit and one byte; net/http reads the few
		// bytes left (up to 256 KiB), so the connection stays in step.
		{"a body of max-body-bytes + 1", rawPost("/v1/tx", "", bigValue(maxBody+1)), []int{413}, wire.CodePayloadTooLarge, false},
		{"a batch over the limit", rawPost("/v1/tx/batch", "", `{"txs":[`+bigValue(maxBody)+`]}`), []int{413}, wire.CodePayloadTooLarge, false},
		{"a body far over the limit", rawPost("/v1/tx", "", bigValue(2*maxBody)), []int{413}, wire.CodePayloadTooLarge, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			readFor := 10 * time.Second // until the close
			var answers []rawAnswer
			var closed bool
			if tc.closed {
				answers, closed = rawExchange(t, addr, 0, readFor, tc.raw)
			} else {
				readFor = 21 * time.Second // the answers, then the connection still open
				answers, closed = rawAnswers(t, addr, tc.raw, len(tc.status))
			}
			var got []int
			for _, a := range answers {
				got = append(got, a.status)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.status) {
				t.Errorf("answers %v, want %v (%+v)", got, tc.status, answers)
			}
			if tc.code != "" && (len(answers) == 0 || answers[0].code != tc.code) {
				t.Errorf("answer %+v, want code %s", answers, tc.code)
			}
			if closed != tc.closed {
				t.Errorf("connection closed: %v, want %v", closed, tc.closed)
			}
			if d := time.Since(start); d > readFor+time.Second {
				t.Errorf("answered after %v", d)
			}
			serves(t, "after/"+tc.name)
		})
	}

	t.Run("pipelining split at every byte", func(t *testing.T) {
		raw := rawPut(long, "", "split/a") + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" + rawPut(long, "", "split/b")
		for at := 1; at < len(raw); at++ {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, raw[:at])
			time.Sleep(time.Millisecond) // the two parts arrive apart
			io.WriteString(c, raw[at:])
			br := bufio.NewReader(c)
			for i := range 3 {
				resp, err := http.ReadResponse(br, nil)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("split at %d: answer %d: %v %v", at, i, resp, err)
				}
				io.Copy(io.Discard, resp.Body)
			}
			c.Close()
		}
	})

	// The slow cases take the node's timeouts (10 s for a header, 30 s for a
	// body): they run side by side.
	t.Run("slow", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			parts  []string
			pause  time.Duration
			min    time.Duration // the earliest close
			max    time.Duration // the latest
			status int           // the answer before the close; 0: none
		}{
			{"a connection that sends nothing", nil, 0, 9 * time.Second, 15 * time.Second, 0},
			{"a header that stops", []string{"POST /v1/tx HTTP/1.1\r\nHost: x\r\n"}, 0, 9 * time.Second, 15 * time.Second, 0},
			{"a header handed to net/http halfway", []string{"POST /v1/tx HTTP/1.1\r\n", "Host: x\n"}, 5 * time.Second, 9 * time.Second, 15 * time.Second, 0},
			{"a read header that stops", []string{"GET /v1/kv/k HTTP/1.1\r\nHost: x\r\n"}, 0, 9 * time.Second, 15 * time.Second, 0},
			{"a header a byte every 2 s", []string{"POST /v1/tx HTTP/1.1\r\n", "H", "o", "s", "t", ":", " ", "x", "\r", "\n"}, 2 * time.Second, 9 * time.Second, 17 * time.Second, http.StatusBadRequest}, // net/http answers a line cut by the deadline
			{"a body that stops (fast path)", []string{rawPut("/v1/tx", "", "slow/body")[:len(rawPut("/v1/tx", "", "slow/body"))-5]}, 0, 29 * time.Second, 40 * time.Second, http.StatusRequestTimeout},
			{"a body that stops (net/http)", []string{"PUT /v1/leases/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n{\"holder\""}, 0, 29 * time.Second, 40 * time.Second, http.StatusRequestTimeout},
			{"a declared body over the limit, not sent", []string{"POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(maxBody+1) + "\r\n\r\n"}, 0, 29 * time.Second, 40 * time.Second, http.StatusRequestTimeout},
			{"a body no handler reads", []string{"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"}, 0, 30 * time.Second, 50 * time.Second, http.StatusOK},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				answers, closed := rawExchange(t, addr, tc.pause, time.Minute, tc.parts...)
				d := time.Since(start)
				if !closed || d < tc.min || d > tc.max {
					t.Errorf("closed %v after %v, want closed after %v to %v", closed, d, tc.min, tc.max)
				}
				if tc.status == 0 && len(answers) > 0 || tc.status != 0 && (len(answers) != 1 || answers[0].status != tc.status) {
					t.Errorf("answers %+v, want status %d", answers, tc.status)
				}
			})
		}
		t.Run("stalled declared bodies", func(t *testing.T) {
			t.Parallel()
			const conns = 300
			before := heapInUse(ctx, t, target)
			var cs []net.Conn
			for i := range conns {
				cn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer cn.Close()
				head := "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(maxBody) + "\r\n\r\n{\"ops\":"
				if i%2 == 1 { // through net/http
					head = "PUT /v1/leases/stalled HTTP/1.1\r\nHost: x\r\nContent-Length: " + strconv.Itoa(maxBody) + "\r\n\r\n{\"holder\":"
				}
				io.WriteString(cn, head)
				cs = append(cs, cn)
			}
			// The largest heap in use over 3 s while the bodies are awaited.
			var during float64
			for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
				during = max(during, heapInUse(ctx, t, target))
				time.Sleep(200 * time.Millisecond) // a sample every 200 ms
			}
			t.Logf("heap in use on %s: %.1f MiB before, %.1f MiB with %d stalled bodies of %d MiB declared (%+.1f MiB)",
				nodes[0].ID(), before/(1<<20), during/(1<<20), conns, maxBody>>20, (during-before)/(1<<20))
			if during-before > 64<<20 {
				t.Errorf("the heap grew %.1f MiB with %d stalled bodies, want at most 64 MiB", (during-before)/(1<<20), conns)
			}
			// Each is answered 408 when its time is up, and closed.
			var wg sync.WaitGroup
			var mu sync.Mutex
			statuses := map[int]int{}
			for _, cn := range cs {
				wg.Go(func() {
					cn.SetReadDeadline(time.Now().Add(time.Minute))
					resp, err := http.ReadResponse(bufio.NewReader(cn), nil)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						statuses[0]++
						return
					}
					statuses[resp.StatusCode]++
				})
			}
			wg.Wait()
			if statuses[http.StatusRequestTimeout] != conns {
				t.Errorf("answers by status %v, want %d of 408", statuses, conns)
			}
		})
	})

	t.Run("max-streams", func(t *testing.T) {
		var open []net.Conn
		defer func() {
			for _, cn := range open {
				cn.Close()
			}
		}()
		stream := func() (net.Conn, int, string) {
			cn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			cn.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(cn, "GET /v1/log/stream?from=1 HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(cn), nil)
			if err != nil {
				t.Fatal(err)
			}
			return cn, resp.StatusCode, resp.Header.Get("Retry-After")
		}
		for range 4 {
			cn, status, _ := stream()
			if status != http.StatusOK {
				t.Fatalf("a stream under the cap: %d", status)
			}
			cn.SetDeadline(time.Time{})
			open = append(open, cn)
		}
		cn, status, retry := stream()
		cn.Close()
		if status != http.StatusServiceUnavailable || retry == "" {
			t.Fatalf("the fifth stream: %d, Retry-After %q; want 503 with a Retry-After", status, retry)
		}
		answers, _ := rawExchange(t, addr, 0, 5*time.Second, "GET /v1/log?from=1&wait=1s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if len(answers) != 1 || answers[0].status != http.StatusServiceUnavailable || answers[0].code != wire.CodeTooManyStreams {
			t.Fatalf("a waiting read past the cap: %+v, want 503 %s", answers, wire.CodeTooManyStreams)
		}
		// A stream that ends gives its slot back.
		open[0].Close()
		open = open[1:]
		if err := pollUntil(ctx, func() error {
			cn, status, _ := stream()
			if status != http.StatusOK {
				cn.Close()
				return fmt.Errorf("a stream after one ended: %d", status)
			}
			open = append(open, cn)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})

	// Every node's log is the same, and holds no hidden write.
	last := lastIndex(ctx, t, c)
	logs := map[string][]wire.LogEntry{}
	for _, p := range nodes {
		logs[p.ID()] = readLog(ctx, t, c.URL(p.ID()), last)
		for _, e := range logs[p.ID()] {
			for _, op := range e.Ops {
				if strings.HasPrefix(op.Key, "smuggled/") {
					t.Errorf("%s: the hidden write %s ran (index %d)", p.ID(), op.Key, e.Index)
				}
			}
		}
	}
	if r := chaos.CheckLogsIdentical(logs); !r.Pass {
		t.Errorf("%s: %s:\n  %s", r.Name, r.Summary, strings.Join(r.Evidence, "\n  "))
	}
	for _, p := range nodes {
		if code, body := get(ctx, t, c.URL(p.ID())+"/v1/kv/smuggled%2F1"); code != http.StatusNotFound {
			t.Errorf("%s: GET /v1/kv/smuggled/1 = %d %s, want 404", p.ID(), code, body)
		}
	}
}

// pollUntil calls f every 50 ms until it returns nil or 10 s have passed.
func pollUntil(ctx context.Context, f func() error) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}
