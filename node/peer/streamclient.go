package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

// Streams sends internal proposals over propose streams (wire/stream.go), one
// persistent connection per node, opened on first use and opened again after
// it fails. A node that does not serve streams (it answers the upgrade with
// 404 or 405: an older version) gets POST /v1/internal/propose through the
// Client instead, and is asked again after streamRefusalTTL. Safe for
// concurrent use.
type Streams struct {
	client *client.Client
	dialer net.Dialer

	mu      sync.Mutex
	conns   map[string]*clientStream // by base URL
	refused map[string]time.Time     // base URLs without streams, until when
	closed  bool
}

// streamRefusalTTL is how long a node that refused a stream is not asked again.
const streamRefusalTTL = time.Minute

// A stream with calls waiting that has received nothing for streamPingAfter
// gets a ping (request id 0, stream.go), which the peer answers from its
// reading goroutine, ahead of any commit. When nothing at all arrives for
// streamDeadAfter after a ping, the peer is taken for paused or cut off: the
// stream fails, its calls get a transport error (node tries their writes
// again, with the same txids, through the leader of the moment), and the next
// call opens a new stream. A slow commit keeps its stream: the pings are
// answered meanwhile. Variables so that tests can shorten them.
var (
	streamPingAfter = 250 * time.Millisecond
	streamDeadAfter = time.Second
)

// errNoStream marks a node that does not serve propose streams.
var errNoStream = errors.New("no propose stream")

// NewStreams returns Streams that fall back to c.
func NewStreams(c *client.Client) *Streams {
	return &Streams{client: c, conns: map[string]*clientStream{}, refused: map[string]time.Time{}}
}

// Propose is Client.ProposeTo over a stream: it sends payloads to the node at
// baseURL and returns one result per payload. Errors are those of ProposeTo: a
// code's sentinel for an error answer, or a transport error when no answer
// came (the proposal may still have been carried out).
func (p *Streams) Propose(ctx context.Context, baseURL string, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	q, _, ok := client.ProposeQuery(ctx, opts)
	if !ok {
		return nil, fmt.Errorf("propose to %s: %w", baseURL, client.ErrNoTimeLeft)
	}
	cs, err := p.stream(ctx, baseURL)
	if errors.Is(err, errNoStream) {
		return p.client.ProposeTo(ctx, baseURL, payloads, opts)
	}
	if err != nil {
		return nil, err
	}
	id := cs.nextID()
	a, err := cs.call(ctx, id, wire.EncodeStreamRequest(id, q.Encode(), wire.EncodeFrames(payloads)))
	if err != nil {
		return nil, err
	}
	if a.status/100 != 2 {
		aerr := client.AnswerError(a.status, a.body)
		return nil, aerr
	}
	results, err := wire.DecodeResults(a.body)
	if err != nil {
		return nil, fmt.Errorf("propose answer from %s: %w", baseURL, err)
	}
	if len(results) != len(payloads) {
		return nil, fmt.Errorf("propose answer: %d results for %d payloads", len(results), len(payloads))
	}
	return results, nil
}

// Close closes every stream; calls in flight fail. Later calls fail too.
func (p *Streams) Close() error {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[string]*clientStream{}
	p.mu.Unlock()
	for _, cs := range conns {
		<-cs.ready
		if cs.openErr == nil {
			cs.fail(errors.New("streams closed"))
		}
	}
	return nil
}

// stream returns the open stream to base, opening it if there is none. The
// first caller opens it; the others wait for that.
func (p *Streams) stream(ctx context.Context, base string) (*clientStream, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("propose to " + base + ": streams closed")
	}
	if until, ok := p.refused[base]; ok {
		if time.Now().Before(until) {
			p.mu.Unlock()
			return nil, errNoStream
		}
		delete(p.refused, base)
	}
	cs := p.conns[base]
	if cs != nil {
		p.mu.Unlock()
		select {
		case <-cs.ready:
		case <-ctx.Done():
			return nil, client.NewTransportError(base, fmt.Errorf("open propose stream: %w", ctx.Err()), false)
		}
		if cs.openErr != nil {
			return nil, cs.openErr
		}
		return cs, nil
	}
	cs = &clientStream{base: base, ready: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1), pending: map[uint64]chan streamReply{},
		pingAfter: streamPingAfter, deadAfter: streamDeadAfter, lastRead: time.Now()}
	cs.drop = func() { p.drop(cs) }
	p.conns[base] = cs
	p.mu.Unlock()

	err := p.open(ctx, cs)
	if err != nil {
		cs.openErr = err
		p.mu.Lock()
		if p.conns[base] == cs {
			delete(p.conns, base)
		}
		if errors.Is(err, errNoStream) {
			p.refused[base] = time.Now().Add(streamRefusalTTL)
		}
		p.mu.Unlock()
	}
	close(cs.ready)
	if err != nil {
		return nil, err
	}
	go cs.read()
	go cs.watch()
	return cs, nil
}

// drop forgets cs if it is still base's stream.
func (p *Streams) drop(cs *clientStream) {
	p.mu.Lock()
	if p.conns[cs.base] == cs {
		delete(p.conns, cs.base)
	}
	p.mu.Unlock()
}

// open dials cs.base and upgrades the connection to a propose stream.
func (p *Streams) open(ctx context.Context, cs *clientStream) error {
	b, err := client.NormalizeBaseURL(cs.base)
	if err != nil {
		return fmt.Errorf("api client: base URL: %w", err)
	}
	u, _ := url.Parse(b)
	if u.Scheme != "http" || u.Path != "" {
		return errNoStream // streams are plain TCP on the node's own port
	}
	conn, err := p.dialer.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return client.NewTransportError(cs.base, err, false)
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(wire.DefaultTimeout)
	}
	_ = conn.SetDeadline(dl)
	req := "GET " + wire.StreamPath + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: Upgrade\r\nUpgrade: " + wire.StreamProtocol + "\r\n\r\n"
	br := bufio.NewReaderSize(conn, 64<<10)
	var resp *http.Response
	if _, err = io.WriteString(conn, req); err == nil {
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		conn.Close()
		return client.NewTransportError(cs.base, fmt.Errorf("open propose stream: %w", err), true)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != wire.StreamProtocol {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return fmt.Errorf("%s: %w (status %d)", cs.base, errNoStream, resp.StatusCode)
		}
		aerr := client.AnswerError(resp.StatusCode, body)
		return fmt.Errorf("open propose stream to %s: %w", cs.base, aerr)
	}
	_ = conn.SetDeadline(time.Time{})
	cs.conn, cs.br = conn, br
	return nil
}

// clientStream is one open propose stream.
type clientStream struct {
	base    string
	ready   chan struct{} // closed once open has ended; then conn or openErr is set
	openErr error
	conn    net.Conn
	br      *bufio.Reader
	drop    func()        // removes the stream from its Streams
	done    chan struct{} // closed when the stream fails
	wake    chan struct{} // capacity 1: calls are waiting again, for watch

	pingAfter, deadAfter time.Duration // streamPingAfter and streamDeadAfter

	wmu sync.Mutex // serializes writes

	mu        sync.Mutex
	err       error // set once the stream failed
	id        uint64
	pending   map[uint64]chan streamReply
	lastRead  time.Time // when the last answer arrived (at first, when the stream was made)
	busySince time.Time // when pending last went from empty to not
	pinged    time.Time // when the ping not answered yet went out; zero if none
}

// answer is the status and body of an answer on a stream.
type answer struct {
	status int
	body   []byte
}

type streamReply struct {
	a   answer
	err error
}

func (cs *clientStream) nextID() uint64 {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.id++
	return cs.id
}

// call sends the message of request id and waits for its answer, or for ctx.
// A call that ends with ctx leaves the stream open: whether the peer is still
// there is watch's to tell.
func (cs *clientStream) call(ctx context.Context, id uint64, msg []byte) (answer, error) {
	if err := ctx.Err(); err != nil {
		return answer{}, client.NewTransportError(cs.base, fmt.Errorf("propose stream: %w", err), false) // not sent
	}
	ch := make(chan streamReply, 1)
	cs.mu.Lock()
	if cs.err != nil {
		err := cs.err
		cs.mu.Unlock()
		return answer{}, client.NewTransportError(cs.base, err, false)
	}
	if len(cs.pending) == 0 {
		cs.busySince = time.Now()
		select {
		case cs.wake <- struct{}{}:
		default:
		}
	}
	cs.pending[id] = ch
	cs.mu.Unlock()

	// The write gets at least deadAfter, whatever is left of the call's own
	// time: a write cut short fails the stream and every call on it, and a peer
	// that reads nothing is given that long anyway (watch).
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(wire.DefaultTimeout)
	}
	if least := time.Now().Add(cs.deadAfter); dl.Before(least) {
		dl = least
	}
	cs.wmu.Lock()
	_ = cs.conn.SetWriteDeadline(dl)
	_, err := cs.conn.Write(msg)
	cs.wmu.Unlock()
	if err != nil {
		// A write cut short leaves the stream mid-message: nothing more can go
		// on it.
		cs.fail(fmt.Errorf("write: %w", err))
	}

	select {
	case r := <-ch:
		return r.a, r.err
	case <-ctx.Done():
	}
	cs.mu.Lock()
	delete(cs.pending, id)
	cs.mu.Unlock()
	return answer{}, client.NewTransportError(cs.base, fmt.Errorf("propose stream: %w", ctx.Err()), true)
}

// watch pings the stream when calls have waited streamPingAfter with nothing
// arriving, and fails it when a ping gets nothing back for streamDeadAfter.
// It ticks only while calls wait, and ends with the stream.
func (cs *clientStream) watch() {
	tick := cs.pingAfter / 4
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		var now time.Time
		select {
		case <-cs.done:
			return
		case <-cs.wake:
			t.Reset(tick)
			continue
		case now = <-t.C:
		}
		cs.mu.Lock()
		if !cs.pinged.IsZero() && !cs.lastRead.Before(cs.pinged) {
			cs.pinged = time.Time{} // answered, or something else came
		}
		waiting := len(cs.pending) > 0
		quiet := now.Sub(cs.lastRead)
		if busy := now.Sub(cs.busySince); busy < quiet {
			quiet = busy
		}
		dead := waiting && !cs.pinged.IsZero() && now.Sub(cs.pinged) >= cs.deadAfter
		ping := waiting && cs.pinged.IsZero() && quiet >= cs.pingAfter
		if ping {
			cs.pinged = now
		}
		if !waiting {
			cs.pinged = time.Time{}
			t.Stop() // until call sends on wake
		}
		cs.mu.Unlock()
		switch {
		case dead:
			cs.fail(fmt.Errorf("no answer to a ping for %v", cs.deadAfter))
			return
		case ping:
			// A write in progress holds the lock: it either ends, and the next tick
			// pings, or it times out and fails the stream.
			if cs.wmu.TryLock() {
				_ = cs.conn.SetWriteDeadline(now.Add(cs.deadAfter))
				_, err := cs.conn.Write(wire.EncodeStreamRequest(wire.PingID, "", nil))
				cs.wmu.Unlock()
				if err != nil {
					cs.fail(fmt.Errorf("write ping: %w", err))
					return
				}
			} else {
				cs.mu.Lock()
				cs.pinged = time.Time{}
				cs.mu.Unlock()
			}
		}
	}
}

// read delivers answers to their calls until the stream fails.
func (cs *clientStream) read() {
	for {
		msg, err := wire.ReadStreamMessage(cs.br, client.MaxAnswerBytes)
		if err != nil {
			cs.fail(fmt.Errorf("read: %w", err))
			return
		}
		id, status, body, err := wire.DecodeStreamAnswer(msg)
		if err != nil {
			cs.fail(err)
			return
		}
		cs.mu.Lock()
		cs.lastRead = time.Now()
		ch := cs.pending[id]
		delete(cs.pending, id)
		cs.mu.Unlock()
		if ch != nil {
			ch <- streamReply{a: answer{status: status, body: body}}
		}
	}
}

// fail closes the stream for good: the calls waiting get a transport error.
func (cs *clientStream) fail(err error) {
	cs.mu.Lock()
	if cs.err != nil {
		cs.mu.Unlock()
		return
	}
	cs.err = err
	pending := cs.pending
	cs.pending = nil
	cs.mu.Unlock()
	close(cs.done)
	cs.drop()
	cs.conn.Close()
	for _, ch := range pending {
		ch <- streamReply{err: client.NewTransportError(cs.base, fmt.Errorf("propose stream: %w", err), true)}
	}
}
