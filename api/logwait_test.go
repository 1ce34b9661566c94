package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// memLog is a Backend and LogFollower over a log in memory: append applies
// an entry, trim removes the entries below an index.
type memLog struct {
	fakeBackend
	mu      sync.Mutex
	entries []wire.LogEntry // in index order
	first   uint64
	changed chan struct{}
	waits   int // calls of Applied
}

var _ LogFollower = (*memLog)(nil)

func newMemLog() *memLog {
	m := &memLog{first: 1, changed: make(chan struct{})}
	m.LogFunc = m.log
	return m
}

func (m *memLog) log(_ context.Context, from uint64, limit int) (wire.LogPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	page := wire.LogPage{Next: from}
	for _, e := range m.entries {
		if e.Index >= from && len(page.Entries) < limit {
			page.Entries = append(page.Entries, e)
			page.Next = e.Index + 1
		}
	}
	return page, nil
}

// append applies an entry at index touching key.
func (m *memLog) append(index uint64, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries = append(m.entries, wire.LogEntry{Index: index, Term: 1, Status: wire.StatusCommitted, Ops: []wire.Op{{Op: "put", Key: key, Value: json.RawMessage("1")}}})
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memLog) trim(before uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.entries) > 0 && m.entries[0].Index < before {
		m.entries = m.entries[1:]
	}
	m.first = before
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memLog) FirstIndex() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.first
}

func (m *memLog) Applied() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waits++
	return m.changed
}

// waitedFor polls until Applied was called n times.
func (m *memLog) waitedFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.mu.Lock()
		w := m.waits
		m.mu.Unlock()
		if w >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Applied called %d times, want %d", w, n)
		}
		time.Sleep(time.Millisecond) // polls a condition
	}
}

// getPage answers GET target with a log page.
func getPage(t *testing.T, b Backend, target string) wire.LogPage {
	t.Helper()
	rec := serve(t, testConfig, b, "GET", target, "", nil)
	if rec.Code != 200 {
		t.Fatalf("GET %s = %d %s", target, rec.Code, rec.Body)
	}
	var page wire.LogPage
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
		t.Fatal(err)
	}
	return page
}

// indexes lists the indexes of a page.
func indexes(page wire.LogPage) []uint64 {
	var out []uint64
	for _, e := range page.Entries {
		out = append(out, e.Index)
	}
	return out
}

func samePage(t *testing.T, what string, page wire.LogPage, want []uint64, next uint64) {
	t.Helper()
	got := indexes(page)
	if len(got) != len(want) || page.Next != next {
		t.Fatalf("%s: entries %v, next %d; want %v, next %d", what, got, page.Next, want, next)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: entries %v, next %d; want %v, next %d", what, got, page.Next, want, next)
		}
	}
}

func TestLogWaitAnswersOnApply(t *testing.T) {
	m := newMemLog()
	m.append(1, "a")
	start := time.Now()
	done := make(chan wire.LogPage)
	go func() { done <- getPage(t, m, "/v1/log?from=2&wait=30s") }()
	m.waitedFor(t, 1)
	m.append(3, "b") // index 2 was not a transaction
	page := <-done
	samePage(t, "wait from 2", page, []uint64{3}, 4)
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("answered after %s, want as soon as entry 3 was applied", d)
	}
	// An entry already there answers at once, however long the wait.
	samePage(t, "wait from 1", getPage(t, m, "/v1/log?from=1&wait=60s"), []uint64{1, 3}, 4)
}

func TestLogWaitTimesOut(t *testing.T) {
	m := newMemLog()
	m.append(1, "a")
	start := time.Now()
	samePage(t, "wait from 2", getPage(t, m, "/v1/log?from=2&wait=50ms"), nil, 2)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("answered after %s, before the wait of 50ms", d)
	}
	// An applied entry of no interest (another prefix) wakes the wait, which
	// then waits on: the answer is empty and next is past it.
	go func() {
		m.waitedFor(t, 2)
		m.append(2, "other/x")
	}()
	samePage(t, "wait with prefix", getPage(t, m, "/v1/log?from=2&wait=300ms&prefix=acct/"), nil, 3)
}

func TestLogPrefix(t *testing.T) {
	m := newMemLog()
	for i, k := range []string{"acct/a", "other", "acct/b", "x", "accx"} {
		m.append(uint64(i+1), k)
	}
	samePage(t, "limit 1", getPage(t, m, "/v1/log?prefix=acct/&limit=1"), []uint64{1}, 2)
	samePage(t, "from 2", getPage(t, m, "/v1/log?prefix=acct/&from=2"), []uint64{3}, 6)
	samePage(t, "from 4", getPage(t, m, "/v1/log?prefix=acct/&from=4"), nil, 6)
	samePage(t, "no prefix", getPage(t, m, "/v1/log?from=4"), []uint64{4, 5}, 6)
	// A waiting prefix read answers with the first entry that matches.
	go func() {
		m.waitedFor(t, 1)
		m.append(6, "nope")
		m.append(7, "acct/c")
	}()
	samePage(t, "wait", getPage(t, m, "/v1/log?prefix=acct/&from=6&wait=30s"), []uint64{7}, 8)
}

func TestLogBadParams(t *testing.T) {
	m := newMemLog()
	for _, target := range []string{
		"/v1/log?wait=61s", "/v1/log?wait=soon", "/v1/log?wait=-1s", "/v1/log?prefix=",
		"/v1/log?prefix=" + strings.Repeat("p", 17), "/v1/log?prefix=%ff",
		"/v1/log/stream?limit=5", "/v1/log/stream?wait=1s", "/v1/log/stream?from=0",
	} {
		rec := serve(t, testConfig, m, "GET", target, "", nil)
		if rec.Code != 400 {
			t.Errorf("GET %s = %d %s, want 400", target, rec.Code, rec.Body)
		}
	}
	rec := serve(t, testConfig, m, "GET", "/v1/log/stream", "", lastEventID("x"))
	if rec.Code != 400 || errorOf(t, rec).Code != wire.CodeInvalidParam {
		t.Errorf("bad Last-Event-ID = %d %s, want 400 invalid_parameter", rec.Code, rec.Body)
	}
}

func TestLogCompacted(t *testing.T) {
	m := newMemLog()
	for i := uint64(1); i <= 5; i++ {
		m.append(i, "k")
	}
	m.trim(3)
	for _, target := range []string{"/v1/log?from=2", "/v1/log", "/v1/log?from=1&wait=1s&prefix=k", "/v1/log/stream?from=2"} {
		rec := serve(t, testConfig, m, "GET", target, "", nil)
		var a wire.CompactedAnswer
		if err := json.Unmarshal(rec.Body.Bytes(), &a); rec.Code != http.StatusGone || err != nil || a.Error.Code != wire.CodeCompacted || a.FirstIndex != 3 {
			t.Errorf("GET %s = %d %s, want 410 compacted with first_index 3", target, rec.Code, rec.Body)
		}
	}
	samePage(t, "from the first index", getPage(t, m, "/v1/log?from=3"), []uint64{3, 4, 5}, 6)
	rec := serve(t, testConfig, m, "GET", "/v1/log/stream", "", lastEventID("1"))
	if rec.Code != http.StatusGone {
		t.Errorf("stream after Last-Event-ID 1 = %d %s, want 410", rec.Code, rec.Body)
	}
}

// sseLines reads the lines of a stream, one by one.
type sseLines struct {
	t  *testing.T
	ch chan string
}

func openStream(t *testing.T, srv *httptest.Server, target string, header http.Header) (*http.Response, *sseLines) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+target, nil)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	l := &sseLines{t: t, ch: make(chan string, 100)}
	go func() {
		defer close(l.ch)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			l.ch <- sc.Text()
		}
	}()
	return resp, l
}

// next returns the next line; the stream must not end first.
func (l *sseLines) next() string {
	l.t.Helper()
	select {
	case s, ok := <-l.ch:
		if !ok {
			l.t.Fatal("stream ended")
		}
		return s
	case <-time.After(10 * time.Second):
		l.t.Fatal("no line within 10s")
	}
	return ""
}

// event reads one event's lines and checks them against the entry at index.
func (l *sseLines) event(index uint64, key string) {
	l.t.Helper()
	if s := l.next(); s != "id: "+itoa(index) {
		l.t.Fatalf("line %q, want id: %d", s, index)
	}
	if s := l.next(); s != "event: entry" {
		l.t.Fatalf("line %q, want event: entry", s)
	}
	s := l.next()
	var e wire.LogEntry
	if data, ok := strings.CutPrefix(s, "data: "); !ok || json.Unmarshal([]byte(data), &e) != nil || e.Index != index || e.Ops[0].Key != key {
		l.t.Fatalf("line %q, want data: the entry %d of key %s", s, index, key)
	}
	if s := l.next(); s != "" {
		l.t.Fatalf("line %q, want the blank line that ends an event", s)
	}
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }

func TestLogStreamFraming(t *testing.T) {
	m := newMemLog()
	for i, k := range []string{"acct/a", "b", "acct/c"} {
		m.append(uint64(i+1), k)
	}
	cfg := testConfig
	cfg.logHeartbeat = 20 * time.Millisecond
	srv := httptest.NewServer(NewServer(cfg, m))
	defer srv.Close()
	resp, l := openStream(t, srv, "/v1/log/stream?from=2", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q; want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if s := l.next(); !strings.HasPrefix(s, ":") {
		t.Fatalf("first line %q, want a comment", s)
	}
	l.next() // its blank line
	l.event(2, "b")
	l.event(3, "acct/c")
	m.append(5, "d")
	l.event(5, "d")
	// Idle: heartbeat comments, nothing else.
	for range 2 {
		if s := l.next(); s != ": heartbeat" {
			t.Fatalf("idle line %q, want : heartbeat", s)
		}
		if s := l.next(); s != "" {
			t.Fatalf("line %q after the heartbeat, want blank", s)
		}
	}

	// Last-Event-ID takes precedence over from; prefix filters.
	_, l2 := openStream(t, srv, "/v1/log/stream?from=1&prefix=acct/", lastEventID("1"))
	l2.next()
	l2.next()
	l2.event(3, "acct/c")
	m.append(6, "x")
	m.append(7, "acct/z")
	l2.event(7, "acct/z")
	l.event(6, "x")
	l.event(7, "acct/z")

	// A compaction past the reader ends its stream; reconnecting gets the 410.
	_, l3 := openStream(t, srv, "/v1/log/stream?from=8", nil)
	l3.next()
	l3.next()
	m.trim(9)
	for s := range l3.ch {
		if strings.HasPrefix(s, "id:") {
			t.Fatalf("event %q after the compaction", s)
		}
	}
}

// lastEventID is the header of a reader that resumes after id.
func lastEventID(id string) http.Header {
	h := http.Header{}
	h.Set(wire.HeaderLastEventID, id)
	return h
}

// FuzzParseLogRead checks that any query and Last-Event-ID either give a read
// within the limits or an invalid_parameter (invalid_utf8) error, never a
// panic or a read out of bounds.
func FuzzParseLogRead(f *testing.F) {
	for _, s := range [][2]string{
		{"from=1&limit=10&wait=30s&prefix=acct/", ""}, {"wait=61s", ""}, {"from=0", ""},
		{"prefix=%ff", ""}, {"from=5", "9"}, {"", "18446744073709551615"}, {"limit=1001", "x"},
		{"wait=0&prefix=a%2Fb", "9223372036854775806"},
	} {
		f.Add(s[0], s[1], false)
		f.Add(s[0], s[1], true)
	}
	f.Fuzz(func(t *testing.T, raw, lastID string, stream bool) {
		allowed := []string{"from", "limit", "wait", "prefix"}
		if stream {
			allowed = []string{"from", "prefix"}
		}
		q, err := parseRawQuery(raw, allowed...)
		if err != nil {
			return
		}
		rd, err := parseLogRead(q, 16, stream, lastID)
		if err != nil {
			var we *wire.Error
			if !errors.As(err, &we) || (we.Code != wire.CodeInvalidParam && we.Code != wire.CodeInvalidUTF8) {
				t.Fatalf("parseLogRead(%q, %q) = %v, want invalid_parameter", raw, lastID, err)
			}
			return
		}
		if rd.from < 1 || rd.from >= 1<<63 || rd.limit < 1 || rd.limit > MaxLogLimit || rd.wait < 0 || rd.wait > MaxLogWait || len(rd.prefix) > 16 || (stream && rd.wait != 0) {
			t.Fatalf("parseLogRead(%q, %q) = %+v: out of bounds", raw, lastID, rd)
		}
		if p, ok := q.get("prefix"); ok && p != rd.prefix {
			t.Fatalf("parseLogRead(%q) prefix %q, want %q", raw, rd.prefix, p)
		}
	})
}
