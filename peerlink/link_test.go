package peerlink

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newLink starts a link on a loopback port; it closes with the test.
func newLink(t *testing.T, cfg Config) *Link {
	t.Helper()
	l, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatalf("Listen() = %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func cluster(b byte) func() ClusterID {
	return func() ClusterID { return ClusterID{b, 1, 2, 3} }
}

// rawAnswer writes raw bytes to the link at addr and returns everything it
// answers until it closes (or 2 s pass).
func rawAnswer(t *testing.T, addr string, raw []byte) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(raw); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return b
}

func TestBadHeaders(t *testing.T) {
	l := newLink(t, Config{NodeID: "n1", ClusterID: cluster(1)})
	l.Listener(KindRaft)
	good := Header{Kind: KindRaft, Cluster: cluster(1)(), Node: "n2"}.Append(nil)
	longID := Header{Kind: KindRaft, Cluster: cluster(1)()}.Append(nil)
	longID[len(longID)-1] = MaxNodeIDBytes + 1
	longID = append(longID, bytes.Repeat([]byte("x"), MaxNodeIDBytes+1)...)
	for _, tc := range []struct {
		name string
		raw  []byte
	}{
		{"bad magic", append([]byte("GET "), good[4:]...)},
		{"http request", []byte("GET /v1/internal/stream HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"bad version", append(append([]byte(Magic), 2), good[5:]...)},
		{"bad kind", append(append([]byte(Magic), Version, 'X'), good[6:]...)},
		{"node ID too long", longID},
		{"node ID with a newline", Header{Kind: KindRaft, Cluster: cluster(1)(), Node: "n\n2"}.Append(nil)},
		{"node ID not UTF-8", Header{Kind: KindRaft, Cluster: cluster(1)(), Node: "n\xff"}.Append(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rawAnswer(t, l.Addr().String(), tc.raw)
			if len(got) != answerBytes || got[0] != StatusBadHeader {
				t.Fatalf("answer = %x, want status %d and the cluster ID, then close", got, StatusBadHeader)
			}
		})
	}
}

func TestSlowHeaderIsCut(t *testing.T) {
	l := newLink(t, Config{NodeID: "n1", HeaderTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("TXL")); err != nil { // then nothing
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("ReadAll() = %v, want the link to close the connection", err)
	}
	if len(b) != 0 {
		t.Fatalf("answer = %x, want none", b)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("closed after %v, want about the header timeout", took)
	}
}

func TestIdleConnectionIsCut(t *testing.T) {
	acc := newLink(t, Config{NodeID: "n1", ClusterID: cluster(1), IdleTimeout: 200 * time.Millisecond})
	ln := acc.Listener(KindStream)
	dial := newLink(t, Config{NodeID: "n2", ClusterID: cluster(1)})
	c, err := dial.Dial(context.Background(), acc.Addr().String(), KindStream)
	if err != nil {
		t.Fatalf("Dial() = %v", err)
	}
	defer c.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if got := sc.(*Conn).RemoteNode(); got != "n2" {
		t.Fatalf("RemoteNode() = %q, want n2", got)
	}
	start := time.Now()
	_, err = sc.Read(make([]byte, 1))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Read() of a quiet connection = %v, want a timeout", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Read() ended after %v, want about the idle timeout", took)
	}
}

func TestClusterIDs(t *testing.T) {
	probe := func(string) []byte { return []byte(`{"state":"empty"}`) }
	for _, tc := range []struct {
		name       string
		acc, dial  func() ClusterID
		kind       byte
		wantErr    error
		wantAnswer string // for KindBootstrap
	}{
		{"same cluster", cluster(1), cluster(1), KindRaft, nil, ""},
		{"another cluster", cluster(1), cluster(2), KindRaft, ErrOtherCluster, ""},
		{"another cluster, the other way", cluster(2), cluster(1), KindHTTP, ErrOtherCluster, ""},
		{"another cluster, bootstrap", cluster(1), cluster(2), KindBootstrap, ErrOtherCluster, ""},
		{"dialer without an ID", cluster(1), nil, KindRaft, ErrRefused, ""},
		{"acceptor without an ID", nil, cluster(1), KindRaft, ErrRefused, ""},
		{"zero IDs, raft", nil, nil, KindRaft, ErrRefused, ""},
		{"zero IDs, bootstrap", nil, nil, KindBootstrap, nil, `{"state":"empty"}`},
		{"dialer without an ID, bootstrap", cluster(1), nil, KindBootstrap, nil, `{"state":"empty"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acc := newLink(t, Config{NodeID: "n1", ClusterID: tc.acc, Bootstrap: probe})
			acc.Listener(KindRaft)
			acc.Listener(KindHTTP)
			dial := newLink(t, Config{NodeID: "n2", ClusterID: tc.dial})
			if tc.kind == KindBootstrap {
				b, err := dial.Probe(context.Background(), acc.Addr().String())
				if !errors.Is(err, tc.wantErr) || string(b) != tc.wantAnswer {
					t.Fatalf("Probe() = %q, %v; want %q, %v", b, err, tc.wantAnswer, tc.wantErr)
				}
				return
			}
			c, err := dial.Dial(context.Background(), acc.Addr().String(), tc.kind)
			if c != nil {
				c.Close()
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Dial() = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// TestDialerRefusesOtherCluster: a peer that answers OK with another
// cluster's ID (one that does not check) is refused by the dialer.
func TestDialerRefusesOtherCluster(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := ReadHeader(c); err == nil {
			c.Write(appendAnswer(nil, StatusOK, cluster(9)()))
			io.Copy(io.Discard, c)
		}
	}()
	dial := newLink(t, Config{NodeID: "n2", ClusterID: cluster(1)})
	if _, err := dial.Dial(context.Background(), ln.Addr().String(), KindRaft); !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("Dial() = %v, want ErrOtherCluster", err)
	}
}

func TestKindNotServed(t *testing.T) {
	acc := newLink(t, Config{NodeID: "n1", ClusterID: cluster(1)})
	dial := newLink(t, Config{NodeID: "n2", ClusterID: cluster(1)})
	if _, err := dial.Dial(context.Background(), acc.Addr().String(), KindStream); !errors.Is(err, ErrRefused) {
		t.Fatalf("Dial() of a kind not served = %v, want ErrRefused", err)
	}
	if _, err := dial.Probe(context.Background(), acc.Addr().String()); !errors.Is(err, ErrRefused) {
		t.Fatalf("Probe() without Config.Bootstrap = %v, want ErrRefused", err)
	}
	acc.Listener(KindStream).Close()
	if _, err := dial.Dial(context.Background(), acc.Addr().String(), KindStream); !errors.Is(err, ErrRefused) {
		t.Fatalf("Dial() of a closed kind = %v, want ErrRefused", err)
	}
}

func TestAcceptHook(t *testing.T) {
	refuse := errors.New("not a member")
	var got []string
	acc := newLink(t, Config{NodeID: "n1", ClusterID: cluster(1), Accept: func(kind byte, c ClusterID, node string) error {
		got = append(got, string(kind)+":"+node)
		if node == "n3" {
			return refuse
		}
		return nil
	}})
	acc.Listener(KindRaft)
	ok := newLink(t, Config{NodeID: "n2", ClusterID: cluster(1)})
	bad := newLink(t, Config{NodeID: "n3", ClusterID: cluster(1)})
	c, err := ok.Dial(context.Background(), acc.Addr().String(), KindRaft)
	if err != nil {
		t.Fatalf("Dial() from n2 = %v", err)
	}
	c.Close()
	if _, err := bad.Dial(context.Background(), acc.Addr().String(), KindRaft); !errors.Is(err, ErrRefused) {
		t.Fatalf("Dial() from n3 = %v, want ErrRefused", err)
	}
	if strings.Join(got, ",") != "R:n2,R:n3" {
		t.Fatalf("Accept saw %v, want R:n2 then R:n3", got)
	}
}

func TestProbeAnswerTooLong(t *testing.T) {
	acc := newLink(t, Config{NodeID: "n1", Bootstrap: func(string) []byte { return make([]byte, MaxProbeBytes+1) }})
	dial := newLink(t, Config{NodeID: "n2"})
	if _, err := dial.Probe(context.Background(), acc.Addr().String()); !errors.Is(err, ErrRefused) {
		t.Fatalf("Probe() = %v, want ErrRefused", err)
	}
}

// TestHTTPRemoteNode: a request over KindHTTP carries the dialer's node ID.
func TestHTTPRemoteNode(t *testing.T) {
	acc := newLink(t, Config{NodeID: "n1", ClusterID: cluster(1)})
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, RemoteNode(r.Context()))
		}),
		ConnContext: ConnContext,
	}
	go srv.Serve(acc.Listener(KindHTTP))
	t.Cleanup(func() { srv.Close() })
	dial := newLink(t, Config{NodeID: "n2", ClusterID: cluster(1)})
	c := dial.HTTPClient()
	resp, err := c.Get("http://" + acc.Addr().String() + "/x")
	if err != nil {
		t.Fatalf("GET = %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "n2" {
		t.Fatalf("RemoteNode() = %q, want n2", b)
	}
}

// TestRaftConnRedials: a Raft connection quiet for longer than the peer's
// idle timeout, which the peer closed, still carries the next RPC.
func TestRaftConnRedials(t *testing.T) {
	acc := newLink(t, Config{NodeID: "n1", ClusterID: cluster(1), IdleTimeout: 200 * time.Millisecond})
	rl := acc.Raft()
	go func() {
		for {
			c, err := rl.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }() // echo
		}
	}()
	dial := newLink(t, Config{NodeID: "n2", ClusterID: cluster(1), IdleTimeout: 200 * time.Millisecond})
	c, err := dial.Raft().Dial(acc.Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo := func(msg string) {
		t.Helper()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatalf("Write() = %v", err)
		}
		b := make([]byte, len(msg))
		if _, err := io.ReadFull(c, b); err != nil || string(b) != msg {
			t.Fatalf("echo = %q, %v; want %q", b, err, msg)
		}
	}
	echo("first")
	// Wait until the acceptor has closed the quiet connection.
	old := c.(*raftConn).conn()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_ = old.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := old.Read(make([]byte, 1))
		if errors.Is(err, io.EOF) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acceptor did not close the idle connection: %v", err)
		}
	}
	echo("second")
}

// TestMaxPending: past Config.MaxPending connections without a header, the
// next is closed at once; one that sends its header afterwards is served.
func TestMaxPending(t *testing.T) {
	acc := newLink(t, Config{NodeID: "n1", ClusterID: cluster(1), MaxPending: 2, HeaderTimeout: 10 * time.Second})
	acc.Listener(KindRaft)
	var silent []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", acc.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		acc.mu.Lock()
		n := len(acc.pending)
		acc.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections pending, want 2", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	extra, err := net.Dial("tcp", acc.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("a third connection without a header: Read() = %v, want it closed", err)
	}
	for _, c := range silent {
		c.Close()
	}
	dial := newLink(t, Config{NodeID: "n2", ClusterID: cluster(1)})
	deadline = time.Now().Add(5 * time.Second)
	for {
		c, err := dial.Dial(context.Background(), acc.Addr().String(), KindRaft)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Dial() once the silent ones left = %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// TestHTTPSlowHandlerKeepsItsRequest: a KindHTTP request whose handler runs
// longer than IdleTimeout is not cancelled: net/http's server waits on the
// connection meanwhile, under HTTPIdleTimeout.
func TestHTTPSlowHandlerKeepsItsRequest(t *testing.T) {
	acc := newLink(t, Config{NodeID: "n1", ClusterID: cluster(1), IdleTimeout: 100 * time.Millisecond})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(500 * time.Millisecond): // a slow commit
			io.WriteString(w, "done")
		case <-r.Context().Done():
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go srv.Serve(acc.Listener(KindHTTP))
	t.Cleanup(func() { srv.Close() })
	dial := newLink(t, Config{NodeID: "n2", ClusterID: cluster(1)})
	resp, err := dial.HTTPClient().Get("http://" + acc.Addr().String() + "/slow")
	if err != nil {
		t.Fatalf("GET = %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "done" {
		t.Fatalf("slow handler answered %d %q, want done: its request was cancelled", resp.StatusCode, b)
	}
}
