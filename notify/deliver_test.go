package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memStore is an in-memory Pending and Done, paged by index as the store's
// notify bucket is.
type memStore struct {
	mu    sync.Mutex
	items map[uint64]Item
	done  chan uint64
}

func newMemStore(items ...Item) *memStore {
	m := &memStore{items: map[uint64]Item{}, done: make(chan uint64, len(items)+1)}
	for _, it := range items {
		m.items[it.Index] = it
	}
	return m
}

func (m *memStore) pending(after uint64, max int) ([]Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	idx := make([]uint64, 0, len(m.items))
	for i := range m.items {
		if i > after {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	var out []Item
	for _, i := range idx {
		if len(out) == max {
			break
		}
		out = append(out, m.items[i])
	}
	return out, nil
}

func (m *memStore) finish(_ context.Context, idx []uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, i := range idx {
		if _, ok := m.items[i]; ok {
			delete(m.items, i)
			m.done <- i
		}
	}
	return nil
}

// run starts Run over m and returns a function that stops it and checks
// that it returned context.Canceled.
func (m *memStore) run(t *testing.T, cfg Config) func() {
	t.Helper()
	cfg.Pending, cfg.Done = m.pending, m.finish
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- Run(ctx, cfg) }()
	stop := func() {
		cancel()
		if err := <-ran; err != context.Canceled {
			t.Errorf("Run() = %v; want context.Canceled", err)
		}
	}
	t.Cleanup(func() { cancel() })
	return stop
}

// waitDone waits for n indexes to be done, each once, and returns them.
func (m *memStore) waitDone(t *testing.T, n int, within time.Duration) map[uint64]bool {
	t.Helper()
	got := map[uint64]bool{}
	deadline := time.After(within)
	for len(got) < n {
		select {
		case i := <-m.done:
			if got[i] {
				t.Fatalf("index %d done twice", i)
			}
			got[i] = true
		case <-deadline:
			t.Fatalf("done %d of %d after %s: %v", len(got), n, within, got)
		}
	}
	return got
}

// hostPort is u's "host:port", for an allow-list that names it exactly.
func hostPort(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Host
}

func mustAllow(t *testing.T, s string) *AllowList {
	t.Helper()
	l, err := ParseAllowList(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// counter is a receiver that counts the attempts per delivery id and
// answers what answer says.
type counter struct {
	mu     sync.Mutex
	calls  map[string]int
	answer func(id string, n int, w http.ResponseWriter)
	srv    *httptest.Server
	secret []byte // if set, a request signed otherwise counts in bad
	bad    int
	hit    chan struct{} // a value per request, dropped when full
}

func newCounter(t *testing.T, answer func(id string, n int, w http.ResponseWriter)) *counter {
	c := &counter{calls: map[string]int{}, answer: answer, hit: make(chan struct{}, 1)}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := r.Header.Get(HeaderDelivery)
		c.mu.Lock()
		if c.secret != nil && (!Verify(c.secret, body, r.Header.Get(HeaderSignature)) || r.Header.Get("Content-Type") != "application/json") {
			c.bad++
		}
		c.calls[id]++
		n := c.calls[id]
		c.mu.Unlock()
		c.answer(id, n, w)
		select {
		case c.hit <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *counter) count(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[id]
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

// TestDeliverer: a receiver that fails twice then answers 200 gets each body
// signed and with its delivery id; a url the list refuses and one past the
// horizon are dropped; each ends in Done exactly once.
func TestDeliverer(t *testing.T) {
	secret := []byte("s")
	rcv := newCounter(t, func(id string, n int, w http.ResponseWriter) {
		if id == "always-500" || n < 3 {
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	rcv.secret = secret
	now := time.Now()
	m := newMemStore(
		Item{Index: 1, ID: "a", URL: rcv.srv.URL + "/a", Body: []byte(`{"n":1}`), Decided: now},
		Item{Index: 2, ID: "b", URL: rcv.srv.URL + "/b", Body: []byte(`{"n":2}`), Decided: now},
		Item{Index: 3, ID: "refused", URL: "http://localhost:1/", Body: []byte(`{}`), Decided: now},
		Item{Index: 4, ID: "always-500", URL: rcv.srv.URL, Body: []byte(`{}`), Decided: now.Add(-time.Hour)},
	)
	stop := m.run(t, Config{Secret: secret, Allow: mustAllow(t, hostPort(t, rcv.srv.URL)),
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Horizon: time.Minute, Poll: time.Millisecond})
	m.waitDone(t, 4, 10*time.Second)
	stop()
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if rcv.calls["a"] != 3 || rcv.calls["b"] != 3 || rcv.calls["refused"] != 0 || rcv.calls["always-500"] != 1 {
		t.Fatalf("calls = %v; want a and b 3, refused 0, always-500 1", rcv.calls)
	}
	if rcv.bad != 0 {
		t.Fatalf("%d requests with a bad signature or content type", rcv.bad)
	}
}

// TestDelivererNoRedirect: a receiver that answers 302 to another allowed
// receiver has failed the attempt; the second receiver is never called. The
// delivery is retried (backoff), and dropped at the horizon.
func TestDelivererNoRedirect(t *testing.T) {
	target := newCounter(t, func(string, int, http.ResponseWriter) {})
	redirect := newCounter(t, func(_ string, _ int, w http.ResponseWriter) {
		w.Header().Set("Location", target.srv.URL+"/elsewhere")
		w.WriteHeader(http.StatusFound)
	})
	allow := mustAllow(t, hostPort(t, redirect.srv.URL)+","+hostPort(t, target.srv.URL))
	now := time.Now()
	m := newMemStore(
		Item{Index: 1, ID: "old", URL: redirect.srv.URL + "/a", Body: []byte(`{}`), Decided: now.Add(-time.Hour)},
		Item{Index: 2, ID: "new", URL: redirect.srv.URL + "/b", Body: []byte(`{}`), Decided: now},
	)
	stop := m.run(t, Config{Allow: allow, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Horizon: time.Minute, Poll: time.Millisecond})
	if got := m.waitDone(t, 1, 10*time.Second); !got[1] {
		t.Fatalf("done %v; want the delivery past the horizon (1)", got)
	}
	deadline := time.After(10 * time.Second)
	for redirect.count("new") < 3 {
		select {
		case <-redirect.hit:
		case <-deadline:
			t.Fatalf("the redirected delivery was attempted %d times in 10s; want retries", redirect.count("new"))
		}
	}
	stop()
	if n := target.total(); n != 0 {
		t.Fatalf("the redirect's target was called %d times; want 0 (redirects are not followed)", n)
	}
	if n := redirect.count("old"); n != 1 {
		t.Fatalf("the delivery past the horizon was attempted %d times; want 1", n)
	}
	select {
	case i := <-m.done:
		t.Fatalf("index %d done; a redirect is not a delivery", i)
	default:
	}
}

// TestDelivererDialCheck: the address connected to is checked. A name that
// resolves to loopback ("localhost") is refused unless a pattern names the
// IP; an IP-literal pattern is accepted.
func TestDelivererDialCheck(t *testing.T) {
	rcv := newCounter(t, func(string, int, http.ResponseWriter) {})
	_, port, err := net.SplitHostPort(hostPort(t, rcv.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, list, url string
		private         bool
		delivered       bool
	}{
		{"localhost, the name alone", "localhost:" + port, "http://localhost:" + port + "/x", false, false},
		{"localhost, the name alone, private opt-in", "localhost:" + port, "http://localhost:" + port + "/x", true, false},
		{"localhost, its IP named", "localhost:" + port + ",127.0.0.1:" + port, "http://localhost:" + port + "/x", false, true},
		{"localhost, another port of its IP named", "localhost:" + port + ",127.0.0.1:1", "http://localhost:" + port + "/x", false, false},
		{"IP literal", "127.0.0.1:" + port, "http://127.0.0.1:" + port + "/x", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := c.name
			m := newMemStore(Item{Index: 1, ID: id, URL: c.url, Body: []byte(`{}`), Decided: time.Now().Add(-time.Hour)})
			stop := m.run(t, Config{Allow: mustAllow(t, c.list), AllowPrivate: c.private, Horizon: time.Minute, Poll: time.Millisecond})
			m.waitDone(t, 1, 10*time.Second) // delivered, or dropped past the horizon after one attempt
			stop()
			if got := rcv.count(id) == 1; got != c.delivered {
				t.Fatalf("list %q, url %s: receiver called %d times; want delivered=%v", c.list, c.url, rcv.count(id), c.delivered)
			}
		})
	}
	// The client itself, to see the error.
	cl := newClient(mustAllow(t, "localhost:"+port), false, 5*time.Second)
	defer cl.CloseIdleConnections()
	resp, err := cl.Post("http://localhost:"+port+"/x", "application/json", nil)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("POST to localhost named only by name = %s; want a refused connection", resp.Status)
	}
	if !errors.Is(err, ErrNotAllowed) {
		t.Fatalf("POST to localhost named only by name: %v; want ErrNotAllowed", err)
	}
}

// failingDest returns the url of a destination that fails every attempt:
// "refusing" closes its port, so connections are refused; "timing out"
// accepts connections and never answers. accepted gets a value per
// connection accepted, dropped when full.
func failingDest(t *testing.T, kind string) (url string, accepted <-chan struct{}) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	acc := make(chan struct{}, 1)
	switch kind {
	case "refusing":
		ln.Close()
	case "timing out":
		var mu sync.Mutex
		var conns []net.Conn
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
				select {
				case acc <- struct{}{}:
				default:
				}
			}
		}()
		t.Cleanup(func() {
			ln.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				c.Close()
			}
		})
	}
	return "http://" + addr, acc
}

func (m *memStore) add(it Item) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items[it.Index] = it
}

// TestDelivererFair: 1,000 deliveries to a failing destination, then one to
// a good one: the good one is delivered within 2s, whether the failing one
// refuses connections or accepts them and never answers (the attempt's
// timeout is the default 10s), and whether the good one is pending from the
// start or comes once the failing one's attempts are under way. Reading only
// the oldest 1,000 pending, the good one is never read; without the bound
// per destination, the timing-out one takes every slot for 10s before the
// good one comes; with neither the bound nor the round-robin, also when both
// are pending from the start.
func TestDelivererFair(t *testing.T) {
	for _, c := range []struct {
		kind  string
		after bool // the good one comes after the failing one's first attempt
	}{
		{"refusing", false},
		{"timing out", false},
		{"timing out", true},
	} {
		t.Run(fmt.Sprintf("%s, later %v", c.kind, c.after), func(t *testing.T) {
			bad, accepted := failingDest(t, c.kind)
			good := newCounter(t, func(string, int, http.ResponseWriter) {})
			now := time.Now()
			var items []Item
			for i := uint64(1); i <= 1000; i++ {
				items = append(items, Item{Index: i, ID: fmt.Sprint("bad-", i), URL: bad + "/cb", Body: []byte(`{}`), Decided: now})
			}
			goodItem := Item{Index: 1001, ID: "good", URL: good.srv.URL + "/cb", Body: []byte(`{}`), Decided: now}
			if !c.after {
				items = append(items, goodItem)
			}
			m := newMemStore(items...)
			allow := mustAllow(t, hostPort(t, bad)+","+hostPort(t, good.srv.URL))
			start := time.Now()
			stop := m.run(t, Config{Allow: allow})
			if c.after {
				select {
				case <-accepted:
				case <-time.After(10 * time.Second):
					t.Fatal("no attempt at the failing destination in 10s")
				}
				start = time.Now()
				m.add(goodItem)
			}
			got := m.waitDone(t, 1, 10*time.Second)
			took := time.Since(start)
			stop()
			if !got[1001] {
				t.Fatalf("done %v; want only the good delivery (1001)", got)
			}
			if took > 2*time.Second {
				t.Fatalf("the good delivery took %s behind 1,000 failing ones; want at most 2s", took)
			}
		})
	}
}

// TestDelivererBounded: with room for few items per destination and in all,
// deliveries to a good destination behind and among many to a failing one
// are all delivered, as is a good destination's backlog larger than its
// queue: the rescan reads what the bounds left out.
func TestDelivererBounded(t *testing.T) {
	bad, _ := failingDest(t, "timing out")
	good := newCounter(t, func(string, int, http.ResponseWriter) {})
	now := time.Now()
	var items []Item
	wantGood := 0
	for i := uint64(1); i <= 600; i++ {
		it := Item{Index: i, ID: fmt.Sprint("bad-", i), URL: bad + "/cb", Body: []byte(`{}`), Decided: now}
		if i%7 == 0 || i > 500 {
			it.ID, it.URL = fmt.Sprint("good-", i), good.srv.URL+"/cb"
			wantGood++
		}
		items = append(items, it)
	}
	m := newMemStore(items...)
	allow := mustAllow(t, hostPort(t, bad)+","+hostPort(t, good.srv.URL))
	stop := m.run(t, Config{Allow: allow, Poll: 5 * time.Millisecond, mem: bounds{page: 10, destQueue: 8, maxQueued: 30}})
	got := m.waitDone(t, wantGood, 30*time.Second)
	stop()
	for i := range got {
		if items[i-1].URL != good.srv.URL+"/cb" {
			t.Fatalf("index %d done; it goes to the failing destination", i)
		}
	}
}

// TestDelivererReadBounds: read holds at most destQueue items of one
// destination and maxQueued in all, and, as items are finished, its rescan
// reads every item the bounds left out: none is left unread.
func TestDelivererReadBounds(t *testing.T) {
	var items []Item
	for i := uint64(1); i <= 105; i++ {
		u := "http://10.0.0.1:1/"
		if i > 100 || i%10 == 0 {
			u = "http://10.0.0.2:2/"
		}
		items = append(items, Item{Index: i, ID: fmt.Sprint(i), URL: u, Decided: time.Now()})
	}
	m := newMemStore(items...)
	cfg := Config{Pending: m.pending, Done: m.finish, Allow: mustAllow(t, "10.0.0.1:1,10.0.0.2:2"),
		mem: bounds{page: 10, destQueue: 8, maxQueued: 12}}.withDefaults()
	d := &deliverer{cfg: cfg, entries: map[uint64]*entry{}, dests: map[string]*dest{}}
	seen := map[uint64]bool{}
	for step := 0; len(seen) < len(items); step++ {
		if step == 500 {
			t.Fatalf("after %d reads %d of %d items were read", step, len(seen), len(items))
		}
		d.read()
		if len(d.entries) > cfg.mem.maxQueued {
			t.Fatalf("read %d: %d items held; want at most %d", step, len(d.entries), cfg.mem.maxQueued)
		}
		for _, ds := range d.dests {
			if len(ds.queue) > cfg.mem.destQueue {
				t.Fatalf("read %d: %d items of %s held; want at most %d", step, len(ds.queue), ds.key, cfg.mem.destQueue)
			}
			// Deliver two of each destination a read.
			for _, e := range slices.Clone(ds.queue[:min(2, len(ds.queue))]) {
				seen[e.Index] = true
				d.retire(e)
			}
		}
		d.finish(context.Background())
		d.prune()
	}
}

// FuzzCheck: Check never panics, and a url it allows has a host and port
// that one pattern of the list names, by an independent reading.
func FuzzCheck(f *testing.F) {
	const list = "127.0.0.1:8080,hooks.example.com,*.svc.example:8443,[::1]:9000"
	l, err := ParseAllowList(list)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if l.Check(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatalf("Check(%q) allowed a url url.Parse refuses: %v", raw, err)
		}
		def := map[string]int{"http": 80, "https": 443}[u.Scheme]
		if def == 0 || u.User != nil {
			t.Fatalf("Check(%q) allowed scheme %q or user info", raw, u.Scheme)
		}
		port := def
		if s := u.Port(); s != "" {
			if port, err = strconv.Atoi(s); err != nil {
				t.Fatalf("Check(%q) allowed port %q", raw, s)
			}
		}
		host := strings.ToLower(u.Hostname())
		ip, ipErr := netip.ParseAddr(host)
		ip = ip.Unmap()
		sub, inSvc := strings.CutSuffix(host, ".svc.example")
		switch {
		case ipErr == nil && ip == netip.MustParseAddr("127.0.0.1") && port == 8080:
		case ipErr == nil && ip == netip.MustParseAddr("::1") && port == 9000:
		case host == "hooks.example.com" && port == def:
		case inSvc && sub != "" && !strings.Contains(sub, ".") && port == 8443:
		default:
			t.Fatalf("Check(%q) allowed host %q port %d; no pattern of %q names them", raw, host, port, list)
		}
	})
}

// TestDelivererHostileReceiver: a receiver's answer decides an attempt,
// within bounds: headers past 64 KiB, no answer within the timeout, or an
// answer after it fail the attempt; a 2xx with a large body is a delivery
// (the body is read up to 64 KiB). Each delivery is past the horizon, so a
// failed attempt is its last: it is dropped and logged.
func TestDelivererHostileReceiver(t *testing.T) {
	for _, c := range []struct {
		name      string
		answer    func(w http.ResponseWriter, r *http.Request)
		delivered bool
	}{
		{"headers past 64 KiB", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("X-Big", strings.Repeat("a", 100<<10))
		}, false},
		{"no answer", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, false},
		{"200 after the timeout", func(w http.ResponseWriter, r *http.Request) { time.Sleep(time.Second) }, false},
		{"a 2xx with a 1 MiB body", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write(make([]byte, 1<<20))
		}, true},
		{"500", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				_, _ = io.ReadAll(r.Body) // so that the server sees the client go, and ends r's context
				c.answer(w, r)
			}))
			defer srv.Close()
			var logs syncBuffer
			m := newMemStore(Item{Index: 1, ID: "x", URL: srv.URL + "/cb", Body: []byte(`{}`), Decided: time.Now().Add(-time.Hour)})
			stop := m.run(t, Config{Allow: mustAllow(t, hostPort(t, srv.URL)), Timeout: 300 * time.Millisecond, Horizon: time.Minute,
				Poll: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			m.waitDone(t, 1, 10*time.Second)
			stop()
			dropped := strings.Contains(logs.String(), "notify: delivery dropped after the horizon")
			if dropped == c.delivered || calls.Load() != 1 {
				t.Fatalf("calls %d, dropped %v; want 1 call, delivered=%v; log:\n%s", calls.Load(), dropped, c.delivered, logs.String())
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test together.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDelivererHorizonOfFailingDest: once a destination fails, its items past
// the horizon are dropped without waiting for their turn (the backoff here
// is a minute, so an attempt at each would take minutes); a fresh item of
// the same destination stays.
func TestDelivererHorizonOfFailingDest(t *testing.T) {
	bad, _ := failingDest(t, "refusing")
	old := time.Now().Add(-time.Hour)
	var items []Item
	for i := uint64(1); i <= 20; i++ {
		items = append(items, Item{Index: i, ID: fmt.Sprint(i), URL: bad + "/cb", Body: []byte(`{}`), Decided: old})
	}
	items = append(items, Item{Index: 21, ID: "fresh", URL: bad + "/cb", Body: []byte(`{}`), Decided: time.Now()})
	m := newMemStore(items...)
	stop := m.run(t, Config{Allow: mustAllow(t, hostPort(t, bad)), Horizon: time.Minute, MinBackoff: time.Minute, Poll: 10 * time.Millisecond})
	got := m.waitDone(t, 20, 10*time.Second)
	stop()
	if got[21] {
		t.Fatalf("done %v; the fresh item (21) is within the horizon", got)
	}
}

// TestDestBackoffSteps: the failures of a wave of attempts started while a
// destination was healthy back it off one step, not one per attempt; each
// failed probe after that backs it off one more.
func TestDestBackoffSteps(t *testing.T) {
	const minB = time.Hour // the jitter is ±30%: step 1 is at most 1.3h, step 2 at least 1.4h
	d := &deliverer{cfg: Config{MinBackoff: minB, MaxBackoff: 100 * minB, Horizon: 1000 * time.Hour}.withDefaults(),
		entries: map[uint64]*entry{}, dests: map[string]*dest{}}
	ds := &dest{key: "h:80", b: d.newBackoff()}
	var wave []*entry
	for i := range 5 {
		e := &entry{Item: Item{Index: uint64(i + 1), Decided: time.Now()}, dest: ds, b: d.newBackoff()}
		ds.queue = append(ds.queue, e)
		wave = append(wave, e)
	}
	for _, e := range wave {
		e.inFlight = true
		ds.inFlight++
		d.inFlight++
	}
	for _, e := range wave {
		d.settle(attempt{e: e, probe: false, err: errStatus})
	}
	if wait := time.Until(ds.next); !ds.failing || wait > 13*minB/10 {
		t.Fatalf("after a wave of 5 failures: failing %v, next in %s; want failing, at most 1.3 × %s (one step)", ds.failing, wait, minB)
	}
	e := wave[0]
	e.inFlight = true
	ds.inFlight++
	d.inFlight++
	d.settle(attempt{e: e, probe: true, err: errStatus})
	if wait := time.Until(ds.next); wait < 14*minB/10 {
		t.Fatalf("after a failed probe: next in %s; want at least 1.4 × %s (a second step)", wait, minB)
	}
}
