package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/peerlink"
)

// streamWriteTimeout bounds one write of answers to a stream; a peer that reads
// nothing for that long loses the stream.
const streamWriteTimeout = 10 * time.Second

// AnswerFunc answers one request of a propose stream: its status and body,
// as POST /v1/internal/propose would answer the same query and frames. ctx
// carries the proposing node's ID (peerlink.RemoteNode).
type AnswerFunc func(ctx context.Context, rawQuery string, frames []byte) (status int, body []byte)

// StreamServer serves propose streams (wire/stream.go) on the peer link's
// KindStream connections: node gives it their listener (Serve) with the
// function that answers one request as POST /v1/internal/propose would.
// Safe for concurrent use.
type StreamServer struct {
	log     *slog.Logger
	streams streamSet
}

// NewStreamServer returns a StreamServer that logs to log (nil: discard).
func NewStreamServer(log *slog.Logger) *StreamServer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &StreamServer{log: log.With("component", "peer")}
}

// streamSet is the propose streams a StreamServer serves, so that
// CloseStreams can end them.
type streamSet struct {
	mu     sync.Mutex
	conns  map[*serverStream]struct{}
	closed bool
	wg     sync.WaitGroup
}

// serverStream is one propose stream a StreamServer serves.
type serverStream struct {
	conn   net.Conn
	ctx    context.Context // ends when the stream fails or CloseStreams gives up waiting
	cancel context.CancelFunc

	wmu    sync.Mutex // serializes answers
	failed bool       // a write failed; guarded by wmu
}

// Serve serves the propose streams of ln's connections until ln is closed,
// each request answered with answer, a request's frames at most limit bytes.
// A connection's remote node (peerlink.Conn) rides in its requests' context.
func (srv *StreamServer) Serve(ln net.Listener, limit int64, answer AnswerFunc) error {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept propose stream: %w", err)
		}
		remote := ""
		if pc, ok := conn.(*peerlink.Conn); ok {
			remote = pc.RemoteNode()
		}
		go srv.ServeConn(conn, remote, limit, answer)
	}
}

// ServeConn serves one propose stream on conn, opened by node remote, until
// the peer closes it or CloseStreams runs; it closes conn.
func (srv *StreamServer) ServeConn(conn net.Conn, remote string, limit int64, answer AnswerFunc) {
	defer conn.Close()
	ctx, cancel := context.WithCancel(peerlink.WithRemoteNode(context.Background(), remote))
	st := &serverStream{conn: conn, ctx: ctx, cancel: cancel}
	ss := &srv.streams
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		cancel()
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
	srv.serveStream(st, bufio.NewReaderSize(conn, 64<<10), limit, answer)
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
func (srv *StreamServer) serveStream(st *serverStream, br *bufio.Reader, limit int64, answer AnswerFunc) {
	var inflight sync.WaitGroup
	work := make(chan streamRequest) // unbuffered: taken only by a waiting goroutine
	serve := func(r streamRequest) {
		status, body := answer(st.ctx, r.query, r.frames)
		st.write(wire.EncodeStreamAnswer(r.id, status, body))
	}
	var err error
	for {
		var msg []byte
		if msg, err = wire.ReadStreamMessage(br, limit+wire.MaxStreamHeadBytes); err != nil {
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
				serve(r)
				for next := range work {
					serve(next)
				}
			})
		}
	}
	close(work)
	srv.streams.mu.Lock()
	closing := srv.streams.closed
	srv.streams.mu.Unlock()
	if !closing {
		if errors.Is(err, wire.ErrStreamMessage) {
			srv.log.Warn("propose stream: bad message, closing", "remote", st.conn.RemoteAddr(), "err", err)
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

// CloseStreams ends the propose streams: they stop reading requests, and the
// requests in flight finish and are answered, until ctx ends; then what is
// left is cancelled. Streams that open later are closed at once.
func (srv *StreamServer) CloseStreams(ctx context.Context) error {
	ss := &srv.streams
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
