package peer

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
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/peerlink"
)

// testCluster is the cluster ID of the links of the tests.
var testCluster = peerlink.ClusterID{7}

// newLink starts a link of testCluster on a loopback port, closed with the test.
func newLink(t *testing.T, node string) *peerlink.Link {
	t.Helper()
	l, err := peerlink.Listen("127.0.0.1:0", peerlink.Config{NodeID: node, ClusterID: func() peerlink.ClusterID { return testCluster }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// streamServer is a peer link serving an api.Server over b: its propose
// streams with a StreamServer (counting the connections made to it and
// keeping them) and its internal router.
type streamServer struct {
	URL     string // the peer address
	link    *peerlink.Link
	api     *api.Server
	streams *StreamServer
	conns   atomic.Int64
	http    *http.Server

	mu       sync.Mutex
	accepted []net.Conn
}

// countingListener counts and keeps the connections it accepts.
type countingListener struct {
	net.Listener
	s *streamServer
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.s.conns.Add(1)
		l.s.mu.Lock()
		l.s.accepted = append(l.s.accepted, c)
		l.s.mu.Unlock()
	}
	return c, err
}

func newStreamServer(t *testing.T, b api.Backend) *streamServer {
	t.Helper()
	return newStreamServerConfig(t, testConfig, b)
}

func newStreamServerConfig(t *testing.T, cfg api.Config, b api.Backend) *streamServer {
	t.Helper()
	s := &streamServer{link: newLink(t, "leader"), api: api.NewServer(cfg, b), streams: NewStreamServer(nil)}
	s.URL = s.link.Addr().String()
	s.http = &http.Server{Handler: s.api.PeerHandler(), ConnContext: peerlink.ConnContext}
	go s.http.Serve(s.link.Listener(peerlink.KindHTTP))
	go s.streams.Serve(countingListener{s.link.Listener(peerlink.KindStream), s}, s.api.Config().MaxInternalBodyBytes, s.api.ProposeAnswer)
	t.Cleanup(func() {
		s.http.Close()
		s.streams.CloseStreams(context.Background())
	})
	return s
}

// closeStreams closes the server's ends of its streams.
func (s *streamServer) closeStreams() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.accepted {
		c.Close()
	}
}

func newTestStreams(t *testing.T) *Streams {
	p := NewStreams(newLink(t, "follower"))
	t.Cleanup(func() { p.Close() })
	return p
}

// echoPropose answers each frame with a result whose idempotency key is the
// frame's text.
func echoPropose(_ context.Context, payloads [][]byte, _ wire.SubmitOptions) ([]wire.TxResult, error) {
	out := make([]wire.TxResult, len(payloads))
	for i, p := range payloads {
		out[i] = wire.TxResult{Status: wire.StatusCommitted, IdempotencyKey: string(p), Index: uint64(i + 1)}
	}
	return out, nil
}

func checkEcho(t *testing.T, payloads [][]byte, res []wire.TxResult, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("Propose: %v", err)
	}
	if len(res) != len(payloads) {
		t.Fatalf("%d results for %d payloads", len(res), len(payloads))
	}
	for i, r := range res {
		if r.IdempotencyKey != string(payloads[i]) || r.Status != wire.StatusCommitted {
			t.Errorf("result %d = %+v, want the echo of %q", i, r, payloads[i])
		}
	}
}

// TestStreamPropose: concurrent proposals go over one connection, each with
// its options, and each gets its own results.
func TestStreamPropose(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]wire.SubmitOptions{}
	s := newStreamServer(t, &fakeBackend{ProposeFunc: func(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
		mu.Lock()
		seen[string(payloads[0])] = opts
		mu.Unlock()
		return echoPropose(ctx, payloads, opts)
	}})
	p := newTestStreams(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			payloads := [][]byte{fmt.Appendf(nil, "p%d", i), []byte("x")}
			opts := wire.SubmitOptions{Ack: wire.AckAll, Fresh: i%2 == 0, Timeout: time.Duration(i+1) * 100 * time.Millisecond}
			res, err := p.Propose(ctx, s.URL, payloads, opts)
			checkEcho(t, payloads, res, err)
		})
	}
	wg.Wait()
	if got := s.conns.Load(); got != 1 {
		t.Errorf("%d connections for 50 proposals, want 1", got)
	}
	for i := range 50 {
		o := seen[fmt.Sprintf("p%d", i)]
		if o.Ack != wire.AckAll || o.Fresh != (i%2 == 0) || o.Timeout != time.Duration(i+1)*100*time.Millisecond {
			t.Errorf("proposal %d arrived with %+v", i, o)
		}
	}
}

// TestStreamErrors: an error answer on the stream is the error ProposeTo
// returns for the same answer over HTTP.
func TestStreamErrors(t *testing.T) {
	s := newStreamServer(t, &fakeBackend{ProposeFunc: func(_ context.Context, payloads [][]byte, _ wire.SubmitOptions) ([]wire.TxResult, error) {
		switch string(payloads[0]) {
		case "not-leader":
			return nil, wire.ErrNotLeader
		case "short":
			return []wire.TxResult{{Status: wire.StatusCommitted}}, nil
		}
		return nil, errors.New("boom")
	}})
	p, c := newTestStreams(t), NewClient(newLink(t, "follower2"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// codeOf is the wire code err stands for.
	codeOf := func(err error) string {
		if e, ok := errors.AsType[*wire.Error](err); ok {
			return e.Code
		}
		if errors.Is(err, wire.ErrNotLeader) {
			return wire.CodeNotLeader
		}
		return fmt.Sprint(err)
	}
	for _, tc := range []struct {
		name     string
		payloads [][]byte
		want     string
	}{
		{"not leader", [][]byte{[]byte("not-leader")}, wire.CodeNotLeader},
		{"empty frame", [][]byte{[]byte("a"), {}}, wire.CodeBadRequest},
		{"too many frames", [][]byte{[]byte("a"), []byte("b"), []byte("c")}, wire.CodeBadRequest},
		{"results missing", [][]byte{[]byte("short"), []byte("b")}, wire.CodeInternal},
		{"internal", [][]byte{[]byte("boom")}, wire.CodeInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.Propose(ctx, s.URL, tc.payloads, wire.SubmitOptions{})
			if got := codeOf(err); got != tc.want {
				t.Errorf("stream: %v (code %s), want code %s", err, got, tc.want)
			}
			_, herr := c.Propose(ctx, s.URL, tc.payloads, wire.SubmitOptions{})
			if fmt.Sprint(err) != fmt.Sprint(herr) {
				t.Errorf("stream error %q, HTTP error %q: want the same", err, herr)
			}
		})
	}
	if got := s.conns.Load(); got != 1 {
		t.Errorf("%d stream connections, want 1", got)
	}
}

// hangingPropose echoes every proposal but one whose first frame is "hang":
// that one signals entered (when not nil) and waits for release, or also for
// its context when honourCtx (a live but slow peer; without it, a paused peer
// that does not answer even at the timeout).
func hangingPropose(release <-chan struct{}, entered chan<- struct{}, honourCtx bool) func(context.Context, [][]byte, wire.SubmitOptions) ([]wire.TxResult, error) {
	return func(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
		if string(payloads[0]) != "hang" {
			return echoPropose(ctx, payloads, opts)
		}
		if entered != nil {
			entered <- struct{}{}
		}
		if honourCtx {
			select {
			case <-release:
			case <-ctx.Done():
			}
		} else {
			<-release
		}
		return nil, ctx.Err()
	}
}

// proposeHanging starts a call that hangingPropose holds, and returns once the
// server has it; the call's error arrives on the channel when it ends.
func proposeHanging(ctx context.Context, p *Streams, url string, entered <-chan struct{}) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := p.Propose(ctx, url, [][]byte{[]byte("hang")}, wire.SubmitOptions{})
		done <- err
	}()
	<-entered
	return done
}

// TestStreamReopens: when the stream's connection dies under a call, the call
// fails with a transport error, and the next call opens a new stream.
func TestStreamReopens(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := newStreamServer(t, &fakeBackend{ProposeFunc: hangingPropose(release, entered, true)})
	defer close(release)
	p := newTestStreams(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	failed := proposeHanging(ctx, p, s.URL, entered)
	s.closeStreams()
	err := <-failed
	if _, ok := errors.AsType[*TransportError](err); !ok {
		t.Fatalf("call on a dead stream: %v, want a transport error", err)
	}
	payloads := [][]byte{[]byte("after")}
	res, err := p.Propose(ctx, s.URL, payloads, wire.SubmitOptions{})
	checkEcho(t, payloads, res, err)
	if got := s.conns.Load(); got != 2 {
		t.Errorf("%d connections, want 2", got)
	}
}

// shortPings shortens the stream's ping timings for a test.
func shortPings(t *testing.T) {
	after, dead := streamPingAfter, streamDeadAfter
	streamPingAfter, streamDeadAfter = 40*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { streamPingAfter, streamDeadAfter = after, dead })
}

// TestStreamSlowCommit: a call that waits far longer than the stream's ping
// timings, on a peer that is there but slow, keeps its stream: the peer
// answers the pings. The call ends with its own deadline, and the next call
// goes over the same connection. It fails if the server does not answer pings.
func TestStreamSlowCommit(t *testing.T) {
	shortPings(t)
	release := make(chan struct{})
	s := newStreamServer(t, &fakeBackend{ProposeFunc: hangingPropose(release, nil, false)})
	defer close(release)
	p := newTestStreams(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next := func(name string) {
		t.Helper()
		payloads := [][]byte{[]byte(name)}
		res, err := p.Propose(ctx, s.URL, payloads, wire.SubmitOptions{})
		checkEcho(t, payloads, res, err)
		if got := s.conns.Load(); got != 1 {
			t.Errorf("%s: %d connections, want 1", name, got)
		}
	}
	next("first")
	for _, wait := range []time.Duration{150 * time.Millisecond, time.Second} {
		short, cancelShort := context.WithTimeout(ctx, wait)
		start := time.Now()
		_, err := p.Propose(short, s.URL, [][]byte{[]byte("hang")}, wire.SubmitOptions{})
		cancelShort()
		if err == nil {
			t.Fatal("a call whose answer never came succeeded")
		}
		if took := time.Since(start); took < wait-20*time.Millisecond {
			t.Fatalf("a call with a %v deadline on a slow peer ended after %v: %v", wait, took, err)
		}
		next(fmt.Sprintf("after waiting %v", wait))
	}
}

// fakePeer serves propose streams by hand on a peer link: it answers each
// request with what answer returns, or not at all when ok is false. It
// returns its peer address and the number of streams it accepted.
func fakePeer(t *testing.T, answer func(id uint64) (status int, body []byte, ok bool)) (string, *atomic.Int64) {
	t.Helper()
	link := newLink(t, "fake")
	ln := link.Listener(peerlink.KindStream)
	var conns sync.WaitGroup
	t.Cleanup(func() { ln.Close(); conns.Wait() })
	accepted := &atomic.Int64{}
	conns.Go(func() { // the accept loop counts too, so that its conns.Go never races Wait
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conns.Go(func() {
				defer conn.Close()
				go func() { <-t.Context().Done(); conn.Close() }()
				br := bufio.NewReader(conn)
				for {
					msg, err := wire.ReadStreamMessage(br, 1<<20)
					if err != nil {
						return
					}
					id, _, _, err := wire.DecodeStreamRequest(msg)
					if err != nil {
						return
					}
					if status, body, ok := answer(id); ok {
						conn.Write(wire.EncodeStreamAnswer(id, status, body))
					}
				}
			})
		}
	})
	return link.Addr().String(), accepted
}

// TestStreamDeadPeer: a peer that took the stream and then answers nothing,
// not even pings (a paused process, a cut network), fails the calls waiting on
// it within the ping timings, long before their deadlines, and the next call
// opens a new stream.
func TestStreamDeadPeer(t *testing.T) {
	shortPings(t)
	url, accepted := fakePeer(t, func(uint64) (int, []byte, bool) { return 0, nil, false })
	p := newTestStreams(t)
	for i := int64(1); i <= 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		_, err := p.Propose(ctx, url, [][]byte{[]byte("x")}, wire.SubmitOptions{})
		took := time.Since(start)
		cancel()
		if _, ok := errors.AsType[*TransportError](err); !ok {
			t.Fatalf("call %d on a dead peer: %v, want a transport error", i, err)
		}
		if took > 3*time.Second {
			t.Fatalf("call %d on a dead peer failed after %v; the pings should have found it dead in about %v", i, took, streamPingAfter+streamDeadAfter)
		}
		if got := accepted.Load(); got != i {
			t.Fatalf("after call %d: %d connections, want %d", i, got, i)
		}
	}
}

// TestStreamPingOldPeer: a peer from before pings answers a ping as the empty
// request it looks like, 400 "no frames"; that answer keeps the stream too.
func TestStreamPingOldPeer(t *testing.T) {
	shortPings(t)
	var pings atomic.Int64
	url, accepted := fakePeer(t, func(id uint64) (int, []byte, bool) {
		if id == 0 {
			pings.Add(1)
			return http.StatusBadRequest, []byte(`{"error":{"code":"bad_request","message":"body: no frames"}}`), true
		}
		return 0, nil, false // a slow commit
	})
	p := newTestStreams(t)
	ctx, cancel := context.WithTimeout(context.Background(), 800*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := p.Propose(ctx, url, [][]byte{[]byte("x")}, wire.SubmitOptions{}); err == nil {
		t.Fatal("a call whose answer never came succeeded")
	}
	if took := time.Since(start); took < 780*time.Millisecond {
		t.Fatalf("a call on a slow peer that answers pings with 400 ended after %v, before its deadline", took)
	}
	if got := accepted.Load(); got != 1 {
		t.Fatalf("%d connections, want 1", got)
	}
	if pings.Load() < 2 {
		t.Fatalf("%d pings in %v of waiting, want several", pings.Load(), 800*time.Millisecond)
	}
}

// rawStream opens a propose stream by hand on the peer link.
func rawStream(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := newLink(t, "raw").Dial(context.Background(), addr, peerlink.KindStream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	return conn, bufio.NewReader(conn)
}

// TestStreamBadInput: requests the server can parse but not serve get 4xx
// answers on the stream, which goes on; a broken envelope ends that stream
// only.
func TestStreamBadInput(t *testing.T) {
	s := newStreamServer(t, &fakeBackend{ProposeFunc: echoPropose})
	conn, br := rawStream(t, s.URL)
	send := func(msg []byte) {
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	answer := func() (uint64, int, wire.ErrorBody) {
		t.Helper()
		msg, err := wire.ReadStreamMessage(br, 1<<20)
		if err != nil {
			t.Fatalf("read answer: %v", err)
		}
		id, status, body, err := wire.DecodeStreamAnswer(msg)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Error wire.ErrorBody }
		_ = json.Unmarshal(body, &e)
		return id, status, e.Error
	}
	for _, tc := range []struct {
		q      string
		frames []byte
		status int
		code   string
	}{
		{"timout=1s", wire.EncodeFrames([][]byte{[]byte("a")}), 400, wire.CodeInvalidParam},
		{"ack=most", wire.EncodeFrames([][]byte{[]byte("a")}), 400, wire.CodeInvalidParam},
		{"fresh=yes", wire.EncodeFrames([][]byte{[]byte("a")}), 400, wire.CodeInvalidParam},
		{"timeout=2h", wire.EncodeFrames([][]byte{[]byte("a")}), 400, wire.CodeInvalidParam},
		{"%zz", wire.EncodeFrames([][]byte{[]byte("a")}), 400, wire.CodeInvalidParam},
		{"", []byte{0x05, 'a'}, 400, wire.CodeBadRequest},
		{"", nil, 400, wire.CodeBadRequest},
	} {
		send(wire.EncodeStreamRequest(7, tc.q, tc.frames))
		id, status, e := answer()
		if id != 7 || status != tc.status || e.Code != tc.code {
			t.Errorf("query %q, frames %q: answer %d %d %+v, want 7 %d %s", tc.q, tc.frames, id, status, e, tc.status, tc.code)
		}
	}
	// The stream still serves.
	send(wire.EncodeStreamRequest(8, "", wire.EncodeFrames([][]byte{[]byte("ok")})))
	if id, status, _ := answer(); id != 8 || status != 200 {
		t.Errorf("answer %d %d after bad requests, want 8 200", id, status)
	}
	// A message too long for the server, then an envelope without a query
	// length: each ends its stream.
	for _, msg := range [][]byte{
		binary.AppendUvarint(nil, uint64(testConfig.MaxInternalBodyBytes+wire.MaxStreamHeadBytes+1)),
		wire.AppendStreamMessage(nil, []byte{9}, nil),
	} {
		c, r := rawStream(t, s.URL)
		c.Write(msg)
		if _, err := wire.ReadStreamMessage(r, 1<<20); !errors.Is(err, io.EOF) {
			t.Errorf("after message %q the stream gave %v, want EOF", msg[:min(len(msg), 8)], err)
		}
	}
	// Others are not affected.
	payloads := [][]byte{[]byte("still")}
	res, err := newTestStreams(t).Propose(context.Background(), s.URL, payloads, wire.SubmitOptions{})
	checkEcho(t, payloads, res, err)
}

// TestCloseStreams: the proposals in flight when CloseStreams runs finish and
// are answered; then the streams end, and a new stream gets no answer.
func TestCloseStreams(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := newStreamServer(t, &fakeBackend{ProposeFunc: func(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
		entered <- struct{}{}
		<-release
		return echoPropose(ctx, payloads, opts)
	}})
	p := newTestStreams(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	payloads := [][]byte{[]byte("inflight")}
	got := make(chan error, 1)
	go func() {
		res, err := p.Propose(ctx, s.URL, payloads, wire.SubmitOptions{})
		if err == nil && (len(res) != 1 || res[0].IdempotencyKey != "inflight") {
			err = fmt.Errorf("results %+v", res)
		}
		got <- err
	}()
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- s.streams.CloseStreams(ctx) }()
	close(release)
	if err := <-got; err != nil {
		t.Errorf("the proposal in flight at CloseStreams: %v, want its results", err)
	}
	if err := <-closed; err != nil {
		t.Errorf("CloseStreams: %v", err)
	}
	_, err := newTestStreams(t).Propose(ctx, s.URL, payloads, wire.SubmitOptions{})
	if _, ok := errors.AsType[*TransportError](err); !ok {
		t.Errorf("a stream opened after CloseStreams: %v, want a transport error", err)
	}
}

func FuzzDecodeStream(f *testing.F) {
	for _, b := range [][]byte{
		wire.EncodeStreamRequest(1, "timeout=5s&ack=all&fresh=true", wire.EncodeFrames([][]byte{[]byte("abc"), []byte("d")})),
		wire.EncodeStreamAnswer(300, 200, []byte(`{"results":[]}`)),
		wire.EncodeStreamAnswer(2, 503, []byte(`{"error":{"code":"not_leader","message":"x"}}`)),
		{0x80}, {0x01, 0x80, 0x00}, {0x00, 0x03, 'a'}, {},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// As a stream: each message is read and decoded both ways; nothing
		// panics, and what decodes encodes back to the same bytes.
		br := bufio.NewReader(bytes.NewReader(data))
		for {
			body, err := wire.ReadStreamMessage(br, 1<<16)
			if err != nil {
				break
			}
			if id, q, frames, err := wire.DecodeStreamRequest(body); err == nil {
				if back := wire.EncodeStreamRequest(id, q, frames); !bytes.Equal(back[len(back)-len(body):], body) {
					t.Fatalf("request %q re-encodes as %q", body, back)
				}
			} else if !errors.Is(err, wire.ErrStreamMessage) {
				t.Fatalf("request error %v is not wire.ErrStreamMessage", err)
			}
			if id, status, rest, err := wire.DecodeStreamAnswer(body); err == nil {
				if back := wire.EncodeStreamAnswer(id, status, rest); !bytes.Equal(back[len(back)-len(body):], body) {
					t.Fatalf("answer %q re-encodes as %q", body, back)
				}
			} else if !errors.Is(err, wire.ErrStreamMessage) {
				t.Fatalf("answer error %v is not wire.ErrStreamMessage", err)
			}
		}
	})
}

// TestStreamShortDeadline: a call whose deadline passes before its message is
// written (a goroutine kept from running on a loaded machine) fails alone; the
// stream, and the calls in flight on it, go on.
func TestStreamShortDeadline(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := newStreamServer(t, &fakeBackend{ProposeFunc: hangingPropose(release, entered, true)})
	p := newTestStreams(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inFlight := proposeHanging(ctx, p, s.URL, entered)
	cs, err := p.stream(ctx, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	late, cancelLate := context.WithDeadline(ctx, time.Now().Add(-time.Millisecond))
	defer cancelLate()
	id := cs.nextID()
	if _, err := cs.call(late, id, wire.EncodeStreamRequest(id, "", wire.EncodeFrames([][]byte{[]byte("late")}))); err == nil {
		t.Fatal("a call past its deadline succeeded")
	}
	close(release)
	// Released, hangingPropose answers with no results: what matters is that an
	// answer comes, not a transport error.
	if err := <-inFlight; err != nil {
		if _, ok := errors.AsType[*TransportError](err); ok {
			t.Fatalf("the call in flight failed with the stream: %v", err)
		}
	}
	payloads := [][]byte{[]byte("after")}
	res, err := p.Propose(ctx, s.URL, payloads, wire.SubmitOptions{})
	checkEcho(t, payloads, res, err)
	if got := s.conns.Load(); got != 1 {
		t.Errorf("%d connections, want 1: the stream failed", got)
	}
}

// TestRemoteNodeReachesPropose: the proposing node's ID, from its peer link
// header, is in the context of Backend.Propose, over a stream and over
// POST /v1/internal/propose.
func TestRemoteNodeReachesPropose(t *testing.T) {
	got := make(chan string, 2)
	s := newStreamServer(t, &fakeBackend{ProposeFunc: func(ctx context.Context, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
		got <- peerlink.RemoteNode(ctx)
		return echoPropose(ctx, payloads, opts)
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	payloads := [][]byte{[]byte("x")}
	res, err := NewStreams(newLink(t, "n-stream")).Propose(ctx, s.URL, payloads, wire.SubmitOptions{})
	checkEcho(t, payloads, res, err)
	res, err = NewClient(newLink(t, "n-http")).Propose(ctx, s.URL, payloads, wire.SubmitOptions{})
	checkEcho(t, payloads, res, err)
	if a, b := <-got, <-got; a != "n-stream" || b != "n-http" {
		t.Fatalf("RemoteNode() = %q, %q; want n-stream, n-http", a, b)
	}
}

// TestStreamDeclaredLengthCostsLittle: ten streams that each declare a
// message of 64 MiB (within the limit) and send a few bytes of it make the
// server allocate about what arrived, not 640 MiB.
func TestStreamDeclaredLengthCostsLittle(t *testing.T) {
	s := newStreamServerConfig(t, api.Config{}, &fakeBackend{ProposeFunc: echoPropose})
	declared := uint64(api.DefaultMaxInternalBodyBytes)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		conn, _ := rawStream(t, s.URL)
		msg := binary.AppendUvarint(nil, declared)
		if _, err := conn.Write(append(msg, "a few bytes"...)); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.streams.streams.mu.Lock()
		open := len(s.streams.streams.conns)
		s.streams.streams.mu.Unlock()
		if open == 0 && s.conns.Load() == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d streams still open", open, s.conns.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 32<<20 {
		t.Fatalf("10 streams declaring %d bytes each allocated %d bytes, want well under 32 MiB", declared, got)
	}
	t.Logf("10 streams declaring %d MiB each: %d KiB allocated", declared>>20, (after.TotalAlloc-before.TotalAlloc)>>10)
}
