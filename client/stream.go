package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// The write stream (api/wire/txstream.go, the client stream): Submit sends its
// transactions to a node over one persistent connection per node, opened on
// first use by GET /v1/tx/stream with "Upgrade: txlog-tx/1" through the
// Client's own http.Client (its TLS, proxies and token), and opened again
// after it fails. Many goroutines share a stream: a request is appended to the
// stream's queue and one writer goroutine sends everything queued in one
// Write; a reader goroutine hands each answer, which comes back in the order
// requests finish, to its caller by request id. Messages are those of
// api/wire/txstream.go:
//
//	request: uvarint id | uvarint len(q) | q | the JSON body of POST /v1/tx
//	answer:  uvarint id | uvarint status | what POST /v1/tx would answer
//
// id 0 is a ping, answered at once with status 200 and
// {"node":…,"leader":…}, or, with a status of 400 or more, the node's goaway:
// its last message before it closes the stream.
//
// What Submit's retries rely on is kept: a request whose stream fails before
// its answer (a broken connection, a goaway, no answer to a ping) is a
// TransportError that was sent, so Submit looks the transaction up by txid or
// idempotency key before it submits it again; one still queued when the
// stream failed is a TransportError that was not sent. An answer 429
// stream_full (the node's bound on requests in flight per stream) was not
// carried out: the request is sent again after a pause. A node that refuses
// the upgrade with anything but 401, 403 or 503 (a node from before the
// stream) gets its writes over plain HTTP for streamRefusedFor.

// Timings of the streams; ClientConfig's unexported fields override them in
// tests.
const (
	// A stream with calls waiting that has received nothing for
	// defaultStreamPingAfter gets a ping, which the node answers from its
	// reading goroutine, ahead of any commit. When nothing at all arrives for
	// defaultStreamDeadAfter after a ping, the node is taken for paused or
	// cut off: the stream fails and its calls get a TransportError. A slow
	// commit keeps its stream: the pings are answered meanwhile.
	defaultStreamPingAfter = 500 * time.Millisecond
	defaultStreamDeadAfter = 2 * time.Second
	// streamStaleAfter is how long a stream may stay quiet, with no call
	// waiting, before the Client closes it: half the node's idle timeout
	// (2 minutes), so that no call meets the node's own close.
	streamStaleAfter = time.Minute
	// defaultStreamLeaderRefresh is how often a stream with calls waiting is
	// pinged anyway, to learn a changed leader from the answer.
	defaultStreamLeaderRefresh = time.Second
	// streamRefusedFor is how long a node that refused the upgrade gets its
	// writes over plain HTTP before the Client tries the stream again.
	streamRefusedFor = time.Minute
	// maxSpareBytes bounds the write buffer a stream keeps between writes.
	maxSpareBytes = 1 << 20
)

// GoawayError is a node's goaway on a write stream: the error it names (a
// *wire.Error of the code table, such as unauthenticated or
// shutting_down) and its status. The requests in flight on the stream got
// no answer: Submit resolves them as any lost answer.
type GoawayError struct {
	Endpoint string
	Status   int
	Err      error
}

func (e *GoawayError) Error() string {
	return fmt.Sprintf("%s: write stream closed by the node (%d): %v", e.Endpoint, e.Status, e.Err)
}

func (e *GoawayError) Unwrap() error { return e.Err }

// streams are a Client's write streams, one per node. Safe for concurrent use.
type streams struct {
	c                             *conn
	pingAfter, deadAfter, refresh time.Duration

	writes atomic.Int64 // Writes on every stream, for tests

	mu      sync.Mutex
	conns   map[string]*txStream // by base URL
	refused map[string]time.Time // base URL → until when writes go over HTTP
	leader  string               // base URL of the leader last named; "" if none
	closed  bool
}

func newStreams(c *conn) *streams {
	s := &streams{c: c, conns: map[string]*txStream{}, refused: map[string]time.Time{},
		pingAfter: c.cfg.streamPingAfter, deadAfter: c.cfg.streamDeadAfter, refresh: c.cfg.streamLeaderRefresh}
	if s.pingAfter <= 0 {
		s.pingAfter = defaultStreamPingAfter
	}
	if s.deadAfter <= 0 {
		s.deadAfter = defaultStreamDeadAfter
	}
	if s.refresh <= 0 {
		s.refresh = defaultStreamLeaderRefresh
	}
	return s
}

// writeTrip sends the write req to base once, over base's stream unless the
// Client writes over HTTP or base refused the stream, and returns its answer.
func (c *conn) writeTrip(ctx context.Context, base string, req request) (answer, error) {
	if c.streams != nil {
		if a, err, ok := c.streams.roundTrip(ctx, base, req); ok {
			return a, err
		}
	}
	return c.roundTrip(ctx, base, req)
}

// firstWrite returns the endpoint a write tries first: the leader a stream
// named, unless it is down, else the first endpoint.
func (c *conn) firstWrite() (string, error) {
	if c.streams != nil {
		c.streams.mu.Lock()
		l := c.streams.leader
		c.streams.mu.Unlock()
		if l != "" && !c.isDown(l) {
			return l, nil
		}
	}
	return c.first()
}

// setLeader records addr, the leader's client address as a node at from named
// it ("" for none known), as the endpoint writes go to first.
func (s *streams) setLeader(from, addr string) {
	u, ok := leaderURL(from, addr)
	if !ok {
		u = ""
	}
	s.mu.Lock()
	s.leader = u
	s.mu.Unlock()
}

// roundTrip sends req over base's stream and waits for its answer. ok is
// false when base does not take streams: send req over HTTP.
func (s *streams) roundTrip(ctx context.Context, base string, req request) (a answer, err error, ok bool) {
	parent := ctx
	q := req.queryText()
	tryDL := time.Now().Add(s.c.cfg.AttemptTimeout + req.serverTime)
	first := 0
	if t := s.open(base); t != nil {
		// The stream is open: the attempt's bound is a timer in call, not
		// a context of its own.
		a, err := t.call(ctx, tryDL, q, req.body)
		if a, err, again := s.took(parent, tryDL, base, a, err); !again {
			return a, err, true
		}
		first = 1
	}
	ctx, cancel := context.WithDeadline(ctx, tryDL)
	defer cancel()
	for attempt := first; ; attempt++ {
		if attempt > 0 {
			if err := s.c.pause(ctx, attempt); err != nil {
				return answer{}, &TransportError{endpoint: base, err: fmt.Errorf("write stream: %w", err)}, true
			}
		}
		t, a, err := s.stream(ctx, base)
		switch {
		case err != nil || a.status != 0:
			return a, err, true
		case t == nil:
			return answer{}, nil, false
		}
		a, err = t.call(ctx, tryDL, q, req.body)
		if a, err, again := s.took(parent, tryDL, base, a, err); !again {
			return a, err, true
		}
	}
}

// took notes what an attempt on base's stream got (the answer a or the
// error err), within the caller's parent and by the attempt's deadline
// tryDL: a node that lost a request sent is down, one that answered is up.
// again is true for an answer 429 stream_full, which was not carried out:
// send it again after a pause.
func (s *streams) took(parent context.Context, tryDL time.Time, base string, a answer, err error) (answer, error, bool) {
	if err != nil {
		if te, ok := errors.AsType[*TransportError](err); ok && te.sent && parent.Err() == nil && time.Now().Before(tryDL) {
			s.c.setDown(base, true)
		}
		return answer{}, err, false
	}
	s.c.setDown(base, false)
	if a.status == http.StatusTooManyRequests {
		if code, _ := classify(a); code == wire.CodeStreamFull {
			return a, nil, true
		}
	}
	return a, nil, false
}

// stream returns base's open stream, opening it if there is none (the first
// caller opens it, the others wait). It returns a nil stream and no error when
// base does not take streams, and the answer of a refused upgrade (401, 403,
// 503) for Submit to classify.
func (s *streams) stream(ctx context.Context, base string) (*txStream, answer, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, answer{}, nil // over HTTP
	}
	if until, ok := s.refused[base]; ok {
		if time.Now().Before(until) {
			s.mu.Unlock()
			return nil, answer{}, nil
		}
		delete(s.refused, base)
	}
	t := s.conns[base]
	if t != nil && t.stale(time.Now()) {
		delete(s.conns, base)
		s.mu.Unlock()
		t.fail(errors.New("quiet too long"), false)
		s.mu.Lock()
		t = s.conns[base]
	}
	if t != nil {
		s.mu.Unlock()
		select {
		case <-t.ready:
		case <-ctx.Done():
			return nil, answer{}, &TransportError{endpoint: base, err: fmt.Errorf("open write stream: %w", ctx.Err())}
		}
		if t.openErr != nil || t.refusal.status != 0 {
			return nil, t.refusal, t.openErr
		}
		if t.rwc == nil {
			return nil, answer{}, nil
		}
		return t, answer{}, nil
	}
	t = &txStream{s: s, base: base, ready: make(chan struct{}), done: make(chan struct{}),
		kick: make(chan struct{}, 1), wake: make(chan struct{}, 1), pending: map[uint64]*streamCall{}}
	s.conns[base] = t
	s.mu.Unlock()

	err := t.open(ctx)
	if err != nil || t.rwc == nil {
		t.openErr = err
		s.mu.Lock()
		if s.conns[base] == t {
			delete(s.conns, base)
		}
		if err == nil && t.refusal.status == 0 {
			s.refused[base] = time.Now().Add(streamRefusedFor)
		}
		s.mu.Unlock()
		close(t.ready)
		if err != nil || t.refusal.status != 0 {
			return nil, t.refusal, err
		}
		return nil, answer{}, nil
	}
	close(t.ready)
	go t.read()
	go t.write()
	go t.watch()
	return t, answer{}, nil
}

// open returns base's stream when it is open and working already, else nil:
// it opens nothing and waits for nothing.
func (s *streams) open(base string) *txStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	t := s.conns[base]
	if t == nil {
		return nil
	}
	select {
	case <-t.ready:
	default:
		return nil
	}
	if t.rwc == nil || t.stale(time.Now()) {
		return nil
	}
	return t
}

// drop forgets t if it is still its node's stream.
func (s *streams) drop(t *txStream) {
	s.mu.Lock()
	if s.conns[t.base] == t {
		delete(s.conns, t.base)
	}
	s.mu.Unlock()
}

// close fails every stream; later writes go over HTTP.
func (s *streams) close() {
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = map[string]*txStream{}
	s.mu.Unlock()
	for _, t := range conns {
		<-t.ready
		if t.rwc != nil {
			t.fail(errors.New("client closed"), false)
			t.wg.Wait()
		}
	}
}

// txStream is one write stream to a node.
type txStream struct {
	s     *streams
	base  string
	ready chan struct{} // closed once open has ended; then rwc, openErr or refusal is set
	// openErr is an open that got no answer; refusal an upgrade refused with
	// 401, 403 or 503; neither with rwc nil: base does not take streams.
	openErr error
	refusal answer
	rwc     io.ReadWriteCloser
	br      *bufio.Reader
	done    chan struct{} // closed when the stream fails
	kick    chan struct{} // capacity 1: the queue has messages, for write
	wake    chan struct{} // capacity 1: calls are waiting again, for watch
	wg      sync.WaitGroup

	mu      sync.Mutex
	err     error // set once the stream failed
	id      uint64
	pending map[uint64]*streamCall
	// queue holds the messages not written yet, queued their calls; spare is
	// the buffer of the last Write, reused as the next queue.
	queue, spare []byte
	queued       []*streamCall
	lastRead     time.Time // when the last message arrived (at first, when the stream was opened)
	lastWrite    time.Time // when the last Write ended
	busySince    time.Time // when pending last went from empty to not
	pinged       time.Time // when the ping not answered yet was queued; zero if none
	refreshed    time.Time // when the last ping went out, for the leader
}

// streamCall is one request waiting for its answer: on ch, or, for
// SubmitAsync, by a call of fn (in the reading goroutine: it must not block).
type streamCall struct {
	ch      chan streamReply // capacity 1
	fn      func(streamReply)
	written bool // under txStream.mu: its message went to a Write
}

// deliver hands r to the call.
func (c *streamCall) deliver(r streamReply) {
	if c.fn != nil {
		c.fn(r)
		return
	}
	c.ch <- r
}

type streamReply struct {
	a   answer
	err error
}

// open sends the upgrade request and takes the connection over.
func (t *txStream) open(ctx context.Context) error {
	c := t.s.c
	// The connection outlives ctx: only the exchange of the upgrade is bound.
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.AttemptTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	hr, err := http.NewRequestWithContext(octx, http.MethodGet, t.base+wire.TxStreamPath, nil)
	if err != nil {
		return fmt.Errorf("open write stream: %w", err)
	}
	hr.Header.Set("Connection", "Upgrade")
	hr.Header.Set("Upgrade", wire.TxStreamProtocol)
	hr.Header.Set("Accept", "application/json")
	c.authorize(hr)
	resp, err := c.hc.Do(hr)
	if err != nil {
		err = transportError(t.base, err)
		if _, ok := errors.AsType[*TransportError](err); ok && ctx.Err() == nil {
			c.setDown(t.base, true)
		}
		return err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if err != nil {
			return &TransportError{endpoint: t.base, err: fmt.Errorf("open write stream: read answer: %w", err)}
		}
		c.setDown(t.base, false)
		switch resp.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusServiceUnavailable:
			t.refusal = answer{status: resp.StatusCode, body: b}
		}
		return nil
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok || !strings.EqualFold(resp.Header.Get("Upgrade"), wire.TxStreamProtocol) {
		// Not the stream this client speaks: writes go over HTTP.
		resp.Body.Close()
		return nil
	}
	c.setDown(t.base, false)
	t.s.setLeader(t.base, resp.Header.Get(wire.HeaderLeader))
	t.rwc, t.br = rwc, bufio.NewReaderSize(rwc, 64<<10)
	t.lastRead = time.Now()
	t.wg.Add(3)
	return nil
}

// stale reports whether t has no call waiting and has sent and received
// nothing for streamStaleAfter. Called under streams.mu.
func (t *txStream) stale(now time.Time) bool {
	select {
	case <-t.ready:
	default:
		return false
	}
	if t.rwc == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending) == 0 && now.Sub(t.lastRead) > streamStaleAfter && now.Sub(t.lastWrite) > streamStaleAfter
}

// call queues the request of query q and body and waits for its answer, for
// ctx or for the deadline dl. A call that ends with ctx or dl leaves the
// stream open: whether the node is still there is watch's to tell.
func (t *txStream) call(ctx context.Context, dl time.Time, q string, body []byte) (answer, error) {
	if err := ctx.Err(); err != nil {
		return answer{}, &TransportError{endpoint: t.base, err: fmt.Errorf("write stream: %w", err)}
	}
	c := &streamCall{ch: make(chan streamReply, 1)}
	id, err := t.enqueue(q, body, c)
	if err != nil {
		return answer{}, &TransportError{endpoint: t.base, err: fmt.Errorf("write stream: %w", err)}
	}
	var expired <-chan time.Time
	if cdl, ok := ctx.Deadline(); !ok || dl.Before(cdl) {
		timer := time.NewTimer(time.Until(dl))
		defer timer.Stop()
		expired = timer.C
	}
	cause := context.DeadlineExceeded
	select {
	case r := <-c.ch:
		return r.a, r.err
	case <-ctx.Done():
		cause = ctx.Err()
	case <-expired:
	}
	t.mu.Lock()
	delete(t.pending, id)
	t.mu.Unlock()
	// Queued or written, the message goes out: the node may carry it out.
	return answer{}, &TransportError{endpoint: t.base, err: fmt.Errorf("write stream: %w", cause), sent: true}
}

// enqueue queues the request of query q and body for c and returns its id;
// the error of the stream if it failed.
func (t *txStream) enqueue(q string, body []byte, c *streamCall) (uint64, error) {
	t.mu.Lock()
	if t.err != nil {
		err := t.err
		t.mu.Unlock()
		return 0, err
	}
	t.id++
	id := t.id
	if len(t.pending) == 0 {
		t.busySince = time.Now()
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
	t.pending[id] = c
	t.queue = wire.AppendTxStreamRequest(t.queue, id, q, body)
	t.queued = append(t.queued, c)
	t.mu.Unlock()
	select {
	case t.kick <- struct{}{}:
	default:
	}
	return id, nil
}

// forget removes the call of id from those waiting; false when its answer
// (or the stream's failure) took it first.
func (t *txStream) forget(id uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.pending[id]
	delete(t.pending, id)
	return ok
}

// write sends everything queued in one Write, until the stream fails. A
// Write blocked by a node that reads nothing ends when watch fails the stream
// and closes the connection.
func (t *txStream) write() {
	defer t.wg.Done()
	for {
		select {
		case <-t.done:
			return
		case <-t.kick:
		}
		t.mu.Lock()
		buf := t.queue
		t.queue, t.spare = t.spare[:0], nil
		for _, c := range t.queued {
			c.written = true
		}
		clear(t.queued)
		t.queued = t.queued[:0]
		t.mu.Unlock()
		if len(buf) == 0 {
			continue
		}
		_, err := t.rwc.Write(buf)
		t.s.writes.Add(1)
		t.mu.Lock()
		t.lastWrite = time.Now()
		if cap(buf) <= maxSpareBytes {
			t.spare = buf[:0]
		}
		t.mu.Unlock()
		if err != nil {
			// A Write cut short leaves the stream mid-message: nothing more
			// can go on it.
			t.fail(fmt.Errorf("write: %w", err), true)
			return
		}
	}
}

// read hands answers to their calls until the stream fails.
func (t *txStream) read() {
	defer t.wg.Done()
	for {
		msg, err := wire.ReadStreamMessage(t.br, MaxAnswerBytes)
		if err != nil {
			t.fail(fmt.Errorf("read: %w", err), true)
			return
		}
		id, status, body, err := wire.DecodeStreamAnswer(msg)
		if err != nil {
			t.fail(err, true)
			return
		}
		t.mu.Lock()
		t.lastRead = time.Now()
		c := t.pending[id]
		delete(t.pending, id)
		t.mu.Unlock()
		switch {
		case wire.IsGoaway(id, status):
			_, aerr := classify(answer{status: status, body: body})
			t.fail(&GoawayError{Endpoint: t.base, Status: status, Err: aerr}, status == http.StatusServiceUnavailable)
			return
		case id == wire.PingID:
			var p wire.TxStreamPing
			if json.Unmarshal(body, &p) == nil {
				t.s.setLeader(t.base, p.Leader)
			}
		case c != nil:
			c.deliver(streamReply{a: answer{status: status, body: body}})
		}
	}
}

// watch pings the stream when calls have waited pingAfter with nothing
// arriving, fails it when a ping gets nothing back for deadAfter, and closes
// it when it has been quiet for streamStaleAfter. It ends with the stream.
func (t *txStream) watch() {
	defer t.wg.Done()
	fast, slow := min(t.s.pingAfter, t.s.refresh)/4, streamStaleAfter/4
	tick := time.NewTicker(slow)
	defer tick.Stop()
	for {
		var now time.Time
		select {
		case <-t.done:
			return
		case <-t.wake:
			tick.Reset(fast)
			continue
		case now = <-tick.C:
		}
		t.mu.Lock()
		if !t.pinged.IsZero() && !t.lastRead.Before(t.pinged) {
			t.pinged = time.Time{} // answered, or something else came
		}
		waiting := len(t.pending) > 0
		quiet := now.Sub(t.lastRead)
		if busy := now.Sub(t.busySince); busy < quiet {
			quiet = busy
		}
		dead := waiting && !t.pinged.IsZero() && now.Sub(t.pinged) >= t.s.deadAfter
		ping := waiting && t.pinged.IsZero() && quiet >= t.s.pingAfter
		stale := !waiting && now.Sub(t.lastRead) > streamStaleAfter && now.Sub(t.lastWrite) > streamStaleAfter
		if ping {
			t.pinged = now
		}
		refresh := waiting && now.Sub(t.refreshed) >= t.s.refresh
		if ping || refresh {
			// A busy stream gets answers, never a ping for liveness: it is
			// pinged now and then to learn a changed leader.
			t.refreshed = now
			t.queue = wire.AppendTxStreamRequest(t.queue, wire.PingID, "", nil)
			ping = true
		}
		if !waiting {
			t.pinged = time.Time{}
			tick.Reset(slow)
		}
		t.mu.Unlock()
		switch {
		case dead:
			t.fail(fmt.Errorf("no answer to a ping for %v", t.s.deadAfter), true)
			return
		case stale:
			t.fail(errors.New("quiet too long"), false)
			return
		case ping:
			select {
			case t.kick <- struct{}{}:
			default:
			}
		}
	}
}

// fail closes the stream for good: the calls waiting get a TransportError,
// sent when their message went to a Write. down marks the node down.
func (t *txStream) fail(err error, down bool) {
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		return
	}
	t.err = err
	pending := t.pending
	t.pending = nil
	written := make(map[*streamCall]bool, len(pending))
	for _, c := range pending {
		written[c] = c.written
	}
	t.mu.Unlock()
	close(t.done)
	t.s.drop(t)
	t.rwc.Close()
	if down {
		t.s.c.setDown(t.base, true)
	}
	for _, c := range pending {
		c.deliver(streamReply{err: &TransportError{endpoint: t.base, err: fmt.Errorf("write stream: %w", err), sent: written[c]}})
	}
}
