package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/peerlink"
)

// Streams sends internal proposals over propose streams (wire/stream.go), one
// persistent connection per node, opened on the peer link (peerlink.KindStream)
// on first use and opened again after it fails. Safe for concurrent use.
type Streams struct {
	dialer Dialer

	mu     sync.Mutex
	conns  map[string]*clientStream // by peer address
	closed bool
}

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

// NewStreams returns Streams whose connections d opens.
func NewStreams(d Dialer) *Streams {
	return &Streams{dialer: d, conns: map[string]*clientStream{}}
}

// Propose sends payloads to the node at addr (its peer address) as one
// request of a propose stream and returns one result per payload: what
// POST /v1/internal/propose would answer. Errors are a code's sentinel for an
// error answer (AnswerError), or a *TransportError when no answer came (the
// proposal may still have been carried out).
func (p *Streams) Propose(ctx context.Context, addr string, payloads [][]byte, opts wire.SubmitOptions) ([]wire.TxResult, error) {
	q, ok := ProposeQuery(ctx, opts)
	if !ok {
		return nil, fmt.Errorf("propose: %w", ErrNoTimeLeft)
	}
	cs, err := p.stream(ctx, addr)
	if err != nil {
		return nil, err
	}
	id := cs.nextID()
	a, err := cs.call(ctx, id, wire.EncodeStreamRequest(id, q.Encode(), wire.EncodeFrames(payloads)))
	if err != nil {
		return nil, err
	}
	if a.status/100 != 2 {
		return nil, AnswerError(a.status, a.body)
	}
	results, err := wire.DecodeResults(a.body)
	if err != nil {
		return nil, fmt.Errorf("propose answer: %w", err)
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

// stream returns the open stream to addr, opening it if there is none. The
// first caller opens it; the others wait for that.
func (p *Streams) stream(ctx context.Context, addr string) (*clientStream, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("propose to " + addr + ": streams closed")
	}
	cs := p.conns[addr]
	if cs != nil && cs.stale() {
		// The peer closes a stream that sends nothing for its idle timeout;
		// one quiet for half of it is closed here first, so that no call
		// meets the peer's close.
		delete(p.conns, addr)
		p.mu.Unlock()
		cs.fail(errors.New("quiet too long"))
		p.mu.Lock()
		cs = p.conns[addr]
	}
	if cs != nil {
		p.mu.Unlock()
		select {
		case <-cs.ready:
		case <-ctx.Done():
			return nil, &TransportError{Addr: addr, Err: fmt.Errorf("open propose stream: %w", ctx.Err())}
		}
		if cs.openErr != nil {
			return nil, cs.openErr
		}
		return cs, nil
	}
	cs = &clientStream{base: addr, ready: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1), pending: map[uint64]chan streamReply{},
		pingAfter: streamPingAfter, deadAfter: streamDeadAfter, lastRead: time.Now()}
	cs.drop = func() { p.drop(cs) }
	p.conns[addr] = cs
	p.mu.Unlock()

	conn, err := p.dialer.Dial(ctx, addr, peerlink.KindStream)
	if err != nil {
		cs.openErr = &TransportError{Addr: addr, Err: fmt.Errorf("open propose stream: %w", err)}
		p.mu.Lock()
		if p.conns[addr] == cs {
			delete(p.conns, addr)
		}
		p.mu.Unlock()
		close(cs.ready)
		return nil, cs.openErr
	}
	cs.conn, cs.br = conn, bufio.NewReaderSize(conn, 64<<10)
	close(cs.ready)
	go cs.read()
	go cs.watch()
	return cs, nil
}

// streamStaleAfter is how long a stream may stay quiet before it is opened
// anew: half the peer's idle timeout (peerlink.Config.IdleTimeout).
const streamStaleAfter = peerlink.DefaultIdleTimeout / 2

// stale reports whether cs is open, has no call waiting, and has sent and
// received nothing for streamStaleAfter.
func (cs *clientStream) stale() bool {
	select {
	case <-cs.ready:
	default:
		return false
	}
	if cs.openErr != nil {
		return false
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.pending) == 0 && time.Since(cs.lastRead) > streamStaleAfter && time.Since(cs.lastWrite) > streamStaleAfter
}

// drop forgets cs if it is still its address's stream.
func (p *Streams) drop(cs *clientStream) {
	p.mu.Lock()
	if p.conns[cs.base] == cs {
		delete(p.conns, cs.base)
	}
	p.mu.Unlock()
}

// clientStream is one open propose stream.
type clientStream struct {
	base    string        // the peer address
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
	lastWrite time.Time // when the last request went out
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
		return answer{}, &TransportError{Addr: cs.base, Err: fmt.Errorf("propose stream: %w", err)} // not sent
	}
	ch := make(chan streamReply, 1)
	cs.mu.Lock()
	if cs.err != nil {
		err := cs.err
		cs.mu.Unlock()
		return answer{}, &TransportError{Addr: cs.base, Err: err}
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
	cs.mu.Lock()
	cs.lastWrite = time.Now()
	cs.mu.Unlock()
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
	return answer{}, &TransportError{Addr: cs.base, Err: fmt.Errorf("propose stream: %w", ctx.Err()), Sent: true}
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
		msg, err := wire.ReadStreamMessage(cs.br, MaxAnswerBytes)
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
		ch <- streamReply{err: &TransportError{Addr: cs.base, Err: fmt.Errorf("propose stream: %w", err), Sent: true}}
	}
}
