package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
)

// streamWriteTimeout bounds one write of answers to a stream; a peer that reads
// nothing for that long loses the stream.
const streamWriteTimeout = 10 * time.Second

// hasToken reports whether the comma-separated header field name of h holds
// token, compared without regard to case.
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// streamSet is the propose streams a Server serves, so that CloseStreams can
// end them.
type streamSet struct {
	mu     sync.Mutex
	conns  map[*serverStream]struct{}
	closed bool
	wg     sync.WaitGroup
}

// serverStream is one propose stream a Server serves.
type serverStream struct {
	conn   net.Conn
	ctx    context.Context // ends when the stream fails or CloseStreams gives up waiting
	cancel context.CancelFunc

	wmu    sync.Mutex // serializes answers
	failed bool       // a write failed; guarded by wmu
}

// handleStream serves GET /v1/internal/stream: it upgrades the connection to a
// propose stream and serves it until the peer closes it or CloseStreams runs.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	if _, err := parseQuery(r); err != nil {
		s.writeError(w, err)
		return
	}
	if !hasToken(r.Header, "Connection", "upgrade") || r.Header.Get("Upgrade") != wire.StreamProtocol {
		s.writeError(w, &wire.Error{Code: wire.CodeBadRequest, Message: fmt.Sprintf("want headers Connection: Upgrade and Upgrade: %s", wire.StreamProtocol)})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	st := &serverStream{ctx: ctx, cancel: cancel}
	ss := &s.streams
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		cancel()
		s.writeError(w, fmt.Errorf("propose stream: %w", wire.ErrShuttingDown))
		return
	}
	if ss.conns == nil {
		ss.conns = map[*serverStream]struct{}{}
	}
	ss.conns[st] = struct{}{}
	ss.wg.Add(1)
	ss.mu.Unlock()
	defer func() {
		cancel()
		ss.mu.Lock()
		delete(ss.conns, st)
		ss.mu.Unlock()
		ss.wg.Done()
	}()

	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.writeError(w, fmt.Errorf("propose stream: hijack: %w", err))
		return
	}
	defer conn.Close()
	ss.mu.Lock()
	st.conn = conn
	closed := ss.closed
	ss.mu.Unlock()
	if closed {
		return
	}
	_ = conn.SetDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := io.WriteString(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+wire.StreamProtocol+"\r\n\r\n"); err != nil {
		return
	}
	if err := rw.Flush(); err != nil {
		return
	}
	_ = conn.SetDeadline(time.Time{})
	s.serveStream(st, rw.Reader)
}

// streamRequest is one request read from a propose stream.
type streamRequest struct {
	id     uint64
	query  string
	frames []byte
}

// serveStream reads st's requests and answers each from a goroutine of its
// own, which writes its answer itself (no hand-off to a writer: at one request
// in flight that hand-off is a goroutine wake-up on the answer's path). The
// goroutines stay for the stream's next requests: a request goes to one that
// waits for work, else to a new one, so that a request does not pay for a new
// goroutine and for growing its stack (1.4–2.7% of a leader's CPU at 64
// clients; docs/performance.md, "Fewer objects per transaction"). There are
// never more than the most requests the stream had in flight at once. When
// reading ends because the peer went away, the requests in flight are
// cancelled; when it ends because CloseStreams stopped it, they finish and
// their answers go out first.
func (s *Server) serveStream(st *serverStream, br *bufio.Reader) {
	var inflight sync.WaitGroup
	work := make(chan streamRequest) // unbuffered: taken only by a waiting goroutine
	answer := func(r streamRequest) { st.write(s.streamAnswer(st.ctx, r.id, r.query, r.frames)) }
	var err error
	for {
		var msg []byte
		if msg, err = wire.ReadStreamMessage(br, s.cfg.MaxInternalBodyBytes+wire.MaxStreamHeadBytes); err != nil {
			break
		}
		id, q, frames, derr := wire.DecodeStreamRequest(msg)
		if derr != nil {
			err = derr
			break
		}
		if id == wire.PingID {
			st.write(wire.EncodeStreamAnswer(wire.PingID, http.StatusOK, nil))
			continue
		}
		r := streamRequest{id: id, query: q, frames: frames}
		select {
		case work <- r:
		default:
			inflight.Go(func() {
				answer(r)
				for next := range work {
					answer(next)
				}
			})
		}
	}
	close(work)
	s.streams.mu.Lock()
	closing := s.streams.closed
	s.streams.mu.Unlock()
	if !closing {
		if errors.Is(err, wire.ErrStreamMessage) {
			s.log.Warn("propose stream: bad message, closing", "remote", st.conn.RemoteAddr(), "err", err)
		}
		st.cancel()
	}
	inflight.Wait()
}

// write writes one answer message to st. After a failed write (a peer that
// reads nothing for streamWriteTimeout, or a broken connection) it closes the
// connection, which ends the reading, and drops what follows.
func (st *serverStream) write(msg []byte) {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	if st.failed {
		return
	}
	_ = st.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := st.conn.Write(msg); err != nil {
		st.failed = true
		st.cancel()
		st.conn.Close()
	}
}

// streamAnswer runs one stream request and returns its answer message.
func (s *Server) streamAnswer(ctx context.Context, id uint64, rawQuery string, frames []byte) []byte {
	status, body := http.StatusOK, []byte(nil)
	q, err := parseRawQuery(rawQuery, proposeParams...)
	var results []wire.TxResult
	if err == nil {
		results, err = s.propose(ctx, q, frames)
	}
	if err == nil {
		body = wire.AppendResults(nil, results)
	} else {
		status, body = s.errorAnswer(err)
	}
	return wire.EncodeStreamAnswer(id, status, body)
}

// CloseStreams ends the propose streams: they stop reading requests, and the
// requests in flight finish and are answered, until ctx ends; then what is
// left is cancelled. Streams that try to open later are refused. Call it after
// http.Server.Shutdown, which does not know about upgraded connections.
func (s *Server) CloseStreams(ctx context.Context) error {
	ss := &s.streams
	ss.mu.Lock()
	ss.closed = true
	for st := range ss.conns {
		if st.conn != nil {
			_ = st.conn.SetReadDeadline(time.Now())
		}
	}
	ss.mu.Unlock()
	done := make(chan struct{})
	go func() { ss.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	ss.mu.Lock()
	for st := range ss.conns {
		st.cancel()
		if st.conn != nil {
			st.conn.Close()
		}
	}
	ss.mu.Unlock()
	<-done
	return fmt.Errorf("close propose streams: %w", ctx.Err())
}
