package api

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
)

// Streams sends internal proposals over propose streams (stream.go), one
// persistent connection per node, opened on first use and opened again after
// it fails. A node that does not serve streams (it answers the upgrade with
// 404 or 405: an older version) gets POST /v1/internal/propose through the
// Client instead, and is asked again after streamRefusalTTL. Safe for
// concurrent use.
type Streams struct {
	client *Client
	dialer net.Dialer

	mu      sync.Mutex
	conns   map[string]*clientStream // by base URL
	refused map[string]time.Time     // base URLs without streams, until when
	closed  bool
}

// streamRefusalTTL is how long a node that refused a stream is not asked again.
const streamRefusalTTL = time.Minute

// streamStallAfter is how long a call must have waited, with nothing at all
// arriving on its stream meanwhile, before its timeout closes the stream as
// stalled. A call with a shorter deadline that times out leaves the stream
// alone: a slow commit is not a dead peer. A variable so that tests can
// shorten it.
var streamStallAfter = time.Second

// errNoStream marks a node that does not serve propose streams.
var errNoStream = errors.New("no propose stream")

// NewStreams returns Streams that fall back to c.
func NewStreams(c *Client) *Streams {
	return &Streams{client: c, conns: map[string]*clientStream{}, refused: map[string]time.Time{}}
}

// Propose is Client.ProposeTo over a stream: it sends payloads to the node at
// baseURL and returns one result per payload. Errors are those of ProposeTo: a
// code's sentinel for an error answer, or a transport error when no answer
// came (the proposal may still have been carried out).
func (p *Streams) Propose(ctx context.Context, baseURL string, payloads [][]byte, opts SubmitOptions) ([]TxResult, error) {
	q, _, ok := proposeQuery(ctx, opts)
	if !ok {
		return nil, fmt.Errorf("propose to %s: %w", baseURL, errNoTimeLeft)
	}
	cs, err := p.stream(ctx, baseURL)
	if errors.Is(err, errNoStream) {
		return p.client.ProposeTo(ctx, baseURL, payloads, opts)
	}
	if err != nil {
		return nil, err
	}
	id := cs.nextID()
	a, err := cs.call(ctx, id, encodeStreamRequest(id, q.Encode(), EncodeFrames(payloads)))
	if err != nil {
		return nil, err
	}
	if a.status/100 != 2 {
		_, aerr := classify(a)
		return nil, aerr
	}
	results, err := decodeResults(a.body)
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
			return nil, &transportError{endpoint: base, err: fmt.Errorf("open propose stream: %w", ctx.Err())}
		}
		if cs.openErr != nil {
			return nil, cs.openErr
		}
		return cs, nil
	}
	cs = &clientStream{base: base, ready: make(chan struct{}), pending: map[uint64]chan streamReply{}}
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
	b, err := normalizeBaseURL(cs.base)
	if err != nil {
		return fmt.Errorf("api client: base URL: %w", err)
	}
	u, _ := url.Parse(b)
	if u.Scheme != "http" || u.Path != "" {
		return errNoStream // streams are plain TCP on the node's own port
	}
	conn, err := p.dialer.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return &transportError{endpoint: cs.base, err: err}
	}
	dl, ok := ctx.Deadline()
	if !ok {
		dl = time.Now().Add(DefaultTimeout)
	}
	_ = conn.SetDeadline(dl)
	req := "GET " + StreamPath + " HTTP/1.1\r\nHost: " + u.Host + "\r\nConnection: Upgrade\r\nUpgrade: " + StreamProtocol + "\r\n\r\n"
	br := bufio.NewReaderSize(conn, 64<<10)
	var resp *http.Response
	if _, err = io.WriteString(conn, req); err == nil {
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		conn.Close()
		return &transportError{endpoint: cs.base, err: fmt.Errorf("open propose stream: %w", err), sent: true}
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Upgrade") != StreamProtocol {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
			return fmt.Errorf("%s: %w (status %d)", cs.base, errNoStream, resp.StatusCode)
		}
		_, aerr := classify(answer{status: resp.StatusCode, body: body})
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
	drop    func() // removes the stream from its Streams

	wmu sync.Mutex // serializes writes

	mu       sync.Mutex
	err      error // set once the stream failed
	id       uint64
	pending  map[uint64]chan streamReply
	lastRead time.Time // when the last answer arrived
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

// call sends the message of request id and waits for its answer. When ctx ends
// first, at least streamStallAfter after the request went out, and nothing at
// all came back on the stream since, the stream is taken for stalled (a paused
// or cut-off peer) and closed, so that the next call opens a new one.
func (cs *clientStream) call(ctx context.Context, id uint64, msg []byte) (answer, error) {
	ch := make(chan streamReply, 1)
	cs.mu.Lock()
	if cs.err != nil {
		err := cs.err
		cs.mu.Unlock()
		return answer{}, &transportError{endpoint: cs.base, err: err}
	}
	cs.pending[id] = ch
	cs.mu.Unlock()
	sent := time.Now()

	cs.wmu.Lock()
	dl, ok := ctx.Deadline()
	if !ok {
		dl = sent.Add(DefaultTimeout)
	}
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
	stalled := cs.lastRead.Before(sent) && time.Since(sent) >= streamStallAfter
	cs.mu.Unlock()
	if stalled {
		cs.fail(errors.New("no answer on the stream before the deadline"))
	}
	return answer{}, &transportError{endpoint: cs.base, err: fmt.Errorf("propose stream: %w", ctx.Err()), sent: true}
}

// read delivers answers to their calls until the stream fails.
func (cs *clientStream) read() {
	for {
		msg, err := readStreamMessage(cs.br, maxAnswerBytes)
		if err != nil {
			cs.fail(fmt.Errorf("read: %w", err))
			return
		}
		id, status, body, err := decodeStreamAnswer(msg)
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
	cs.drop()
	cs.conn.Close()
	for _, ch := range pending {
		ch <- streamReply{err: &transportError{endpoint: cs.base, err: fmt.Errorf("propose stream: %w", err), sent: true}}
	}
}
