package api

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
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// The client stream (wire/txstream.go; docs/api.md, "Client stream"): GET
// /v1/tx/stream upgrades a connection of the client port, and each request
// read from it then runs through the steps of handleSubmit, the handler of
// POST /v1/tx (submitMessage, handlers.go), on the message's query text and
// payload: the same query and body checks, the same key scope, the same
// Backend.Submit (so forwarding to the leader, parking and deduplication are
// the same), the same answer bytes; without an http.Request or a copy of the
// payload.
//
// One stream is three kinds of goroutines: the handler's, which reads the
// messages (bufio, the length bounded before anything is allocated), answers
// pings and refusals itself and hands each request to a goroutine that waits
// for work, else to a new one; those, which stay for the stream's next
// requests, so that a request pays neither for a new goroutine nor for
// growing its stack (docs/performance.md, "The client stream's server
// side"), never more than the most requests in flight at once (at most
// Config.ClientStreamInflight);
// and one writer, which takes the answers off a bounded queue, frames all
// that are queued into one buffer and writes it in one Write. The reader stops reading while the queue is
// full. A goaway (a bad message, a credential gone, the node shutting down)
// cancels the requests in flight, which go unanswered, and is the writer's
// last message before it closes the connection.
//
// The propose streams between nodes (node/peer/streamserver.go) share the
// envelope (wire/stream.go) but not this loop: they answer from each
// request's goroutine, have no bound, no goaway and no credential.

// DefaultClientStreamInflight is the default of Config.ClientStreamInflight.
const DefaultClientStreamInflight = 1024

// txStreamWriteTimeout bounds one write of answers; a client that reads
// nothing for that long loses its stream. goawayWriteTimeout bounds the
// write of a goaway.
const (
	txStreamWriteTimeout = 10 * time.Second
	goawayWriteTimeout   = time.Second
)

// txStreamBufBytes is the size of a stream's read buffer.
const txStreamBufBytes = 64 << 10

// TxStreamBackend is what a Backend may add for the client stream: this
// node's ID and the leader's client address (wire.ClusterStatus's
// LeaderHTTPAddr, "" when no leader is known), without the membership
// Cluster reads. Without it the stream asks Cluster.
type TxStreamBackend interface {
	TxStreamLeader() (node, leaderHTTPAddr string)
}

// txStreams are the client streams a Server serves, and their metrics.
type txStreams struct {
	s        *Server
	inflight int           // Config.ClientStreamInflight, with its default
	idle     time.Duration // Config.ClientStreamIdleTimeout; 0: none
	// writeTimeout is txStreamWriteTimeout; tests shorten it before the
	// first stream opens.
	writeTimeout time.Duration

	open    prometheus.Gauge
	results *prometheus.CounterVec
	// counts are the results' counters by label, looked up once.
	counts map[string]prometheus.Counter

	mu     sync.Mutex
	conns  map[*txStream]struct{}
	closed bool
	wg     sync.WaitGroup // the streams being served
}

// newTxStreams returns the client streams of s, their metrics registered
// with s's Config.Metrics if set.
func newTxStreams(s *Server) *txStreams {
	ts := &txStreams{
		s:            s,
		writeTimeout: txStreamWriteTimeout,
		inflight:     s.cfg.ClientStreamInflight,
		idle:         s.cfg.ClientStreamIdleTimeout,
		conns:        map[*txStream]struct{}{},
		counts:       map[string]prometheus.Counter{},
		open: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "txlog_client_streams",
			Help: "Client streams (GET /v1/tx/stream) open on this node.",
		}),
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "txlog_client_stream_requests_total",
			Help: "Requests of client streams, by result: committed (200), pending (202), conflict (409), stream_full (429), refused (other 4xx), unavailable (503), error (other 5xx), unanswered (in flight at a goaway).",
		}, []string{"result"}),
	}
	if ts.inflight <= 0 {
		ts.inflight = DefaultClientStreamInflight
	}
	for _, r := range []string{"committed", "pending", "conflict", "stream_full", "refused", "unavailable", "error", "unanswered"} {
		ts.counts[r] = ts.results.WithLabelValues(r)
	}
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.MustRegister(ts.open, ts.results)
	}
	return ts
}

// resultLabel is the result label of an answer's status.
func resultLabel(status int) string {
	switch {
	case status == http.StatusOK:
		return "committed"
	case status == http.StatusAccepted:
		return "pending"
	case status == http.StatusConflict:
		return "conflict"
	case status == http.StatusTooManyRequests:
		return "stream_full"
	case status == http.StatusServiceUnavailable:
		return "unavailable"
	case status >= 400 && status < 500:
		return "refused"
	}
	return "error"
}

// txStreamRoute returns the handler of GET /v1/tx/stream: on the peer
// router (internal), none.
func (s *Server) txStreamRoute(internal bool) http.HandlerFunc {
	if internal {
		return s.handleNotFound
	}
	if s.txs == nil {
		s.txs = newTxStreams(s)
	}
	return s.txs.handle
}

// txStream is one client stream.
type txStream struct {
	ts   *txStreams
	conn net.Conn
	up   *http.Request // the upgrade request: its credential, asked again per request
	// ctx is the context of the requests in flight: cancelled at a goaway
	// or when the stream ends.
	ctx    context.Context
	cancel context.CancelFunc

	out    chan streamOut // answers to the writer; bounded
	goaway chan streamOut // the last message; at most one
	done   chan struct{}  // closed when the writer has stopped

	mu      sync.Mutex          // guards ids, ended and the read deadline
	ids     map[uint64]struct{} // the requests in flight
	ended   bool                // a goaway was sent: nothing more is read or answered
	running sync.WaitGroup      // the requests' goroutines, which end when read does

	// The credential's last check (credentialHolds), by the reading
	// goroutine only: it held under the Authenticator's generation heldGen.
	held    bool
	heldGen uint64
}

// generations is what an Authenticator may add so that a client stream
// checks its credential again only after a reload: *auth.File's
// Generation, which changes whenever other credentials come into force.
type generations interface {
	Generation() uint64
}

// handle serves GET /v1/tx/stream: the checks of the upgrade, 101, and the
// stream until it ends.
func (ts *txStreams) handle(w http.ResponseWriter, r *http.Request) {
	s := ts.s
	if _, err := parseQuery(r); err != nil {
		s.writeError(w, err)
		return
	}
	if s.cfg.Auth != nil {
		// Authenticate takes Basic credentials on a GET; this GET writes.
		if scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " "); strings.EqualFold(scheme, "Basic") {
			s.writeUnauthenticated(w, r, fmt.Errorf("%w: Basic credentials only for reads: send Authorization: Bearer <token>", auth.ErrUnauthenticated))
			return
		}
	}
	if err := checkUpgrade(r); err != nil {
		s.writeError(w, err)
		return
	}
	ts.mu.Lock()
	closing := ts.closed
	ts.mu.Unlock()
	if closing {
		s.writeError(w, wire.ErrShuttingDown)
		return
	}
	node, leader := ts.leader(r.Context())
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.writeError(w, fmt.Errorf("client stream: hijack: %w", err))
		return
	}
	if rec, ok := w.(*recorder); ok {
		rec.status = http.StatusSwitchingProtocols
	}
	st := &txStream{ts: ts, conn: conn, up: r, ids: map[uint64]struct{}{},
		out: make(chan streamOut, ts.inflight), goaway: make(chan streamOut, 1), done: make(chan struct{})}
	// net/http cancels r's context when it reads the client's EOF before
	// the hijack; the stream still answers what came before it.
	st.ctx, st.cancel = context.WithCancel(context.WithoutCancel(r.Context()))
	defer st.closeConn()
	_ = conn.SetDeadline(time.Time{}) // the server's read and write timeouts were for the request
	var hdr bytes.Buffer
	hdr.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: " + wire.TxStreamProtocol + "\r\n")
	hdr.WriteString(wire.HeaderNode + ": " + headerSafe(node) + "\r\n" + wire.HeaderLeader + ": " + headerSafe(leader) + "\r\n\r\n")
	_ = conn.SetWriteDeadline(time.Now().Add(txStreamWriteTimeout))
	if _, err := conn.Write(hdr.Bytes()); err != nil {
		st.cancel()
		return
	}
	ts.mu.Lock()
	closing = ts.closed
	if !closing {
		ts.conns[st] = struct{}{}
		ts.wg.Add(1)
	}
	ts.mu.Unlock()
	if closing { // CloseTxStreams ran since the check above
		st.goAway(wire.ErrShuttingDown)
	} else {
		defer func() {
			ts.mu.Lock()
			delete(ts.conns, st)
			ts.mu.Unlock()
			ts.wg.Done()
		}()
	}
	ts.open.Inc()
	defer ts.open.Dec()
	go st.write()
	st.read(bufio.NewReaderSize(brw.Reader, txStreamBufBytes))
	st.cancel()
	st.running.Wait()
	<-st.done
}

// headerSafe returns v without the bytes that would end a header line.
func headerSafe(v string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, v)
}

// checkUpgrade checks the headers that ask for a client stream.
func checkUpgrade(r *http.Request) error {
	if r.ProtoMajor != 1 || !r.ProtoAtLeast(1, 1) {
		return &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("%s: a client stream needs HTTP/1.1, not %s", wire.TxStreamPath, r.Proto)}
	}
	if !headerHasToken(r.Header, "Connection", "upgrade") {
		return &wire.Error{Code: wire.CodeInvalidParam, Message: "Connection header: want Upgrade"}
	}
	if up := r.Header.Values("Upgrade"); len(up) != 1 || !strings.EqualFold(strings.TrimSpace(up[0]), wire.TxStreamProtocol) {
		return &wire.Error{Code: wire.CodeInvalidParam, Message: fmt.Sprintf("Upgrade header: %q, want %s", strings.Join(up, ","), wire.TxStreamProtocol)}
	}
	return nil
}

// headerHasToken reports whether header name's comma-separated values hold
// token, case-insensitively.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// leader returns this node's ID and the leader's client address.
func (ts *txStreams) leader(ctx context.Context) (string, string) {
	if b, ok := ts.s.tx.b.(TxStreamBackend); ok {
		return b.TxStreamLeader()
	}
	ctx, cancel := context.WithTimeout(ctx, ts.s.cfg.DefaultTimeout)
	defer cancel()
	cs, _ := ts.s.tx.b.Cluster(ctx, wire.ReadOptions{Consistency: wire.ConsistencyStale}) // this node's own view, leader or not
	return cs.ID, cs.LeaderHTTPAddr
}

// streamRequest is one request read from a client stream.
type streamRequest struct {
	id      uint64
	q       string
	payload []byte
}

// read reads st's messages until the client closes the stream, a message is
// bad (goaway) or the stream ends.
func (st *txStream) read(br *bufio.Reader) {
	limit := wire.TxStreamLimit(st.ts.s.cfg.MaxBodyBytes)
	work := make(chan streamRequest) // unbuffered: taken only by a waiting goroutine
	defer close(work)
	for {
		st.armIdle()
		msg, err := wire.ReadStreamMessage(br, limit)
		if err != nil {
			switch {
			case st.isEnded(), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded):
				// The client closed, the stream ended or sat idle.
			case errors.Is(err, wire.ErrStreamMessage):
				st.goAway(&wire.Error{Code: wire.CodeBadRequest, Message: "client stream: " + err.Error()})
			case errors.Is(err, io.ErrUnexpectedEOF):
				st.goAway(&wire.Error{Code: wire.CodeBadRequest, Message: "client stream: truncated message"})
			}
			return
		}
		id, q, payload, err := wire.DecodeTxStreamRequest(msg)
		if err != nil {
			st.goAway(&wire.Error{Code: wire.CodeBadRequest, Message: "client stream: " + err.Error()})
			return
		}
		if id == wire.PingID {
			node, leader := st.ts.leader(st.ctx)
			b, _ := json.Marshal(wire.TxStreamPing{Node: node, Leader: leader})
			st.send(streamOut{wire.PingID, http.StatusOK, b})
			continue
		}
		if err := st.credentialHolds(); err != nil {
			st.goAway(err)
			return
		}
		st.mu.Lock()
		_, dup := st.ids[id]
		full := len(st.ids) >= st.ts.inflight
		if !dup && !full {
			st.ids[id] = struct{}{}
		}
		st.mu.Unlock()
		switch {
		case dup:
			st.goAway(&wire.Error{Code: wire.CodeBadRequest, Message: fmt.Sprintf("client stream: request id %d already in flight", id)})
			return
		case full:
			status, body := st.ts.s.errorAnswer(&wire.Error{Code: wire.CodeStreamFull, Message: fmt.Sprintf("%d requests in flight on this stream, the most it takes (--client-stream-inflight): retry once an answer came back", st.ts.inflight)})
			st.ts.counts[resultLabel(status)].Inc()
			st.send(streamOut{id, status, append(body, '\n')})
			continue
		}
		r := streamRequest{id: id, q: q, payload: payload}
		select {
		case work <- r:
		default:
			st.running.Go(func() {
				st.serve(r)
				for next := range work {
					st.serve(next)
				}
			})
		}
	}
}

// armIdle sets the read deadline of the next message: the idle timeout while
// no request is in flight, none while one is.
func (st *txStream) armIdle() {
	if st.ts.idle <= 0 {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return
	}
	if len(st.ids) == 0 {
		_ = st.conn.SetReadDeadline(time.Now().Add(st.ts.idle))
	} else {
		_ = st.conn.SetReadDeadline(time.Time{})
	}
}

func (st *txStream) isEnded() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ended
}

// credentialHolds checks the stream's credential against the credentials
// in force now (the auth file may have been re-read since the upgrade): it
// must still be known (else 401), have role write (else 403) and the same
// key prefixes (else 401: the credential changed). With an Authenticator
// that counts its generations, a credential that held is not checked again
// until the generation changes (a reload): a stream's request then costs no
// hash of the token. Called by the reading goroutine only.
func (st *txStream) credentialHolds() error {
	s := st.ts.s
	if s.cfg.Auth == nil {
		return nil
	}
	g, counted := s.cfg.Auth.(generations)
	var gen uint64
	if counted {
		gen = g.Generation() // before Authenticate: a reload after it moves it on
		if st.held && gen == st.heldGen {
			return nil
		}
	}
	was := auth.FromContext(st.up.Context())
	if was == nil {
		return nil
	}
	now, err := s.cfg.Auth.Authenticate(st.up)
	switch {
	case err != nil || now == nil:
		return &wire.Error{Code: wire.CodeUnauthenticated, Message: "client stream: the credential no longer holds (the auth file was re-read): open a new stream"}
	case !now.Can(auth.RoleWrite):
		return &wire.Error{Code: wire.CodeForbidden, Message: fmt.Sprintf("client stream: credential %q has role %s now, needs %s", now.Name, now.Role, auth.RoleWrite)}
	case !slices.Equal(now.Prefixes, was.Prefixes):
		return &wire.Error{Code: wire.CodeUnauthenticated, Message: "client stream: the credential's key prefixes changed (the auth file was re-read): open a new stream"}
	}
	st.held, st.heldGen = counted, gen
	return nil
}

// serve runs one request as POST /v1/tx would (submitMessage) and queues its
// answer.
func (st *txStream) serve(r streamRequest) {
	h := st.ts.s.tx
	sub := h.submitMessage(st.ctx, r.q, r.payload)
	id := r.id
	st.mu.Lock()
	delete(st.ids, id)
	if len(st.ids) == 0 && st.ts.idle > 0 && !st.ended {
		_ = st.conn.SetReadDeadline(time.Now().Add(st.ts.idle))
	}
	st.mu.Unlock()
	if st.ctx.Err() != nil {
		st.ts.counts["unanswered"].Inc()
		return
	}
	status, body := h.submittedBody(sub)
	st.ts.counts[resultLabel(status)].Inc()
	st.send(streamOut{id, status, body})
}

// streamOut is an answer for the writer to frame (wire.AppendTxStreamAnswer):
// the request's id, the status and the JSON body.
type streamOut struct {
	id     uint64
	status int
	body   []byte
}

// send queues msg for the writer, or drops it once the stream has ended.
func (st *txStream) send(msg streamOut) {
	select {
	case st.out <- msg:
	case <-st.ctx.Done():
	}
}

// goAway ends the stream with err's answer as its last message: the
// requests in flight are cancelled and go unanswered.
func (st *txStream) goAway(err error) {
	st.mu.Lock()
	if st.ended {
		st.mu.Unlock()
		return
	}
	st.ended = true
	st.mu.Unlock()
	status, body := st.ts.s.errorAnswer(err)
	// Queued before the cancel, so that a writer that sees the cancel finds it.
	st.goaway <- streamOut{wire.PingID, status, append(body, '\n')}
	st.cancel()
}

// write is the stream's writer: it writes every answer queued at once in one
// Write, and the goaway last; after a failed write it closes the
// connection, which ends the reading.
func (st *txStream) write() {
	defer close(st.done)
	buf := make([]byte, 0, 16<<10)
	for {
		select {
		case msg := <-st.goaway:
			st.writeGoaway(msg)
			return
		case <-st.ctx.Done():
			select {
			case msg := <-st.goaway:
				st.writeGoaway(msg)
			default:
			}
			return
		case msg := <-st.out:
			buf = wire.AppendTxStreamAnswer(buf[:0], msg.id, msg.status, msg.body)
		drain:
			for len(buf) < 1<<20 {
				select {
				case msg := <-st.out:
					buf = wire.AppendTxStreamAnswer(buf, msg.id, msg.status, msg.body)
				default:
					break drain
				}
			}
			_ = st.conn.SetWriteDeadline(time.Now().Add(st.ts.writeTimeout))
			if _, err := st.conn.Write(buf); err != nil {
				st.mu.Lock()
				st.ended = true
				st.mu.Unlock()
				st.cancel()
				st.closeConn()
				return
			}
			if cap(buf) > 1<<20 {
				buf = make([]byte, 0, 16<<10)
			}
		}
	}
}

// writeGoaway writes the stream's last message and closes the connection.
func (st *txStream) writeGoaway(msg streamOut) {
	_ = st.conn.SetWriteDeadline(time.Now().Add(goawayWriteTimeout))
	_, _ = st.conn.Write(wire.AppendTxStreamAnswer(nil, msg.id, msg.status, msg.body))
	st.closeConn()
}

// closeConn closes the connection for reading and writing: a TLS connection
// without its close_notify wait.
func (st *txStream) closeConn() {
	if c, ok := st.conn.(interface{ NetConn() net.Conn }); ok {
		_ = c.NetConn().Close()
		return
	}
	_ = st.conn.Close()
}

// CloseTxStreams ends the client streams with a goaway 503 shutting_down:
// their requests in flight are cancelled and go unanswered. It waits for them
// to end until ctx does, then closes what is left. Streams that open later
// are refused 503. The node calls it as it shuts down: a hijacked
// connection is not the HTTP server's any more.
func (s *Server) CloseTxStreams(ctx context.Context) error {
	ts := s.txs
	if ts == nil {
		return nil
	}
	ts.mu.Lock()
	ts.closed = true
	var open []*txStream
	for st := range ts.conns {
		open = append(open, st)
	}
	ts.mu.Unlock()
	for _, st := range open {
		st.goAway(wire.ErrShuttingDown)
	}
	done := make(chan struct{})
	go func() { ts.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	ts.mu.Lock()
	for st := range ts.conns {
		st.closeConn()
	}
	ts.mu.Unlock()
	<-done
	return fmt.Errorf("close client streams: %w", ctx.Err())
}
