package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// gateConn is a net.Conn whose writes and write deadlines are recorded, and
// whose first write closes entered, then waits for release; with fail set,
// every write fails.
type gateConn struct {
	net.Conn
	entered, release chan struct{}
	fail             bool

	mu        sync.Mutex
	writes    [][]byte
	deadlines []time.Time
}

func newGateConn(c net.Conn) *gateConn {
	return &gateConn{Conn: c, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gateConn) SetWriteDeadline(t time.Time) error {
	g.mu.Lock()
	g.deadlines = append(g.deadlines, t)
	g.mu.Unlock()
	return g.Conn.SetWriteDeadline(t)
}

func (g *gateConn) Write(b []byte) (int, error) {
	g.mu.Lock()
	first := len(g.writes) == 0
	g.writes = append(g.writes, bytes.Clone(b))
	g.mu.Unlock()
	if first {
		close(g.entered)
		<-g.release
	}
	if g.fail {
		return 0, errors.New("gate: broken")
	}
	return g.Conn.Write(b)
}

// testMsgs returns n distinct messages of various lengths.
func testMsgs(n int) [][]byte {
	var out [][]byte
	for i := range n {
		out = append(out, appendStreamMessage(nil, fmt.Appendf(nil, "message %d ", i), bytes.Repeat([]byte{byte('a' + i%26)}, i*37)))
	}
	return out
}

// TestMsgWriterCoalesces: messages handed over during a write return at once
// and go out together in one more write, whole and in order.
func TestMsgWriterCoalesces(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	g := newGateConn(a)
	w := &msgWriter{conn: g}
	msgs := testMsgs(11)

	got := make(chan []byte)
	go func() {
		all, _ := io.ReadAll(b)
		got <- all
	}()

	first := make(chan error)
	go func() { first <- w.write(msgs[0], time.Now().Add(time.Minute)) }()
	<-g.entered
	base := time.Now()
	handed := make(chan error)
	go func() {
		for i, m := range msgs[1:] {
			// In order, each returns without waiting for the write in progress.
			if err := w.write(m, base.Add(time.Duration(i%3+1)*time.Hour)); err != nil {
				handed <- fmt.Errorf("message %d handed over: %w", i+1, err)
				return
			}
		}
		handed <- nil
	}()
	select {
	case err := <-handed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("writes during a write in progress waited for it")
	}
	if ok, err := w.tryWrite([]byte("ping"), base); ok || err != nil {
		t.Fatalf("tryWrite during a write: wrote %v, err %v; want false, nil", ok, err)
	}
	close(g.release)
	if err := <-first; err != nil {
		t.Fatalf("first write: %v", err)
	}
	a.Close()
	if want := slices.Concat(msgs...); !bytes.Equal(<-got, want) {
		t.Fatal("the peer did not read every message whole, in order")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.writes) != 2 {
		t.Fatalf("%d writes, want 2: the first message, then the other ten together", len(g.writes))
	}
	if !bytes.Equal(g.writes[1], slices.Concat(msgs[1:]...)) {
		t.Fatal("the second write is not the ten handed-over messages")
	}
	if want := base.Add(3 * time.Hour); !g.deadlines[1].Equal(want) {
		t.Fatalf("second write's deadline %v, want the latest asked for, %v", g.deadlines[1], want)
	}
}

// TestMsgWriterAlone: with no write in progress each message is written at
// once, by its own caller, and tryWrite writes too.
func TestMsgWriterAlone(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	g := newGateConn(a)
	close(g.release)
	w := &msgWriter{conn: g}
	msgs := testMsgs(3)
	got := make(chan []byte)
	go func() {
		all, _ := io.ReadAll(b)
		got <- all
	}()
	for _, m := range msgs[:2] {
		if err := w.write(m, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := w.tryWrite(msgs[2], time.Now().Add(time.Minute)); !ok || err != nil {
		t.Fatalf("tryWrite with no write in progress: wrote %v, err %v", ok, err)
	}
	a.Close()
	if !bytes.Equal(<-got, slices.Concat(msgs...)) {
		t.Fatal("the peer did not read the three messages")
	}
	if len(g.writes) != 3 {
		t.Fatalf("%d writes, want 3", len(g.writes))
	}
}

// TestMsgWriterFails: the failed write's caller gets the error, the messages
// handed over to it are dropped, and later writes fail without writing.
func TestMsgWriterFails(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	g := newGateConn(a)
	g.fail = true
	w := &msgWriter{conn: g}
	msgs := testMsgs(3)
	first := make(chan error)
	go func() { first <- w.write(msgs[0], time.Now().Add(time.Minute)) }()
	<-g.entered
	if err := w.write(msgs[1], time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("handed over: %v", err)
	}
	close(g.release)
	err := <-first
	if err == nil {
		t.Fatal("the failed write returned nil")
	}
	if err2 := w.write(msgs[2], time.Now().Add(time.Minute)); !errors.Is(err2, err) {
		t.Fatalf("write after the failure: %v, want %v", err2, err)
	}
	if ok, err2 := w.tryWrite(msgs[2], time.Now()); ok || !errors.Is(err2, err) {
		t.Fatalf("tryWrite after the failure: %v, %v", ok, err2)
	}
	if len(g.writes) != 1 {
		t.Fatalf("%d writes, want 1: nothing after the failure", len(g.writes))
	}
}

// TestMsgWriterConcurrent: many goroutines writing at once; every message
// arrives exactly once and whole.
func TestMsgWriterConcurrent(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	g := newGateConn(a)
	close(g.release)
	w := &msgWriter{conn: g}
	msgs := testMsgs(200)
	got := make(chan []byte)
	go func() {
		all, _ := io.ReadAll(b)
		got <- all
	}()
	var wg sync.WaitGroup
	for _, m := range msgs {
		wg.Go(func() {
			if err := w.write(m, time.Now().Add(time.Minute)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	a.Close()
	all := <-got
	seen := map[string]int{}
	for len(all) > 0 {
		n, k := uvarint(all)
		if k <= 0 || uint64(len(all)-k) < n {
			t.Fatalf("a torn message at %d bytes from the end", len(all))
		}
		seen[string(all[k:k+int(n)])]++
		all = all[k+int(n):]
	}
	for i, m := range msgs {
		n, k := uvarint(m)
		if c := seen[string(m[k:k+int(n)])]; c != 1 {
			t.Fatalf("message %d arrived %d times", i, c)
		}
	}
	t.Logf("%d messages in %d writes", len(msgs), len(g.writes))
}
