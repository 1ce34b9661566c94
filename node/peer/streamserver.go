package peer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// StreamServer serves propose streams (wire/stream.go): node gives it to its
// api.Server (api.Config.Streams), which hands it each GET
// /v1/internal/stream with the function that answers one request as
// POST /v1/internal/propose would. Safe for concurrent use.
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

// ServeStream serves GET /v1/internal/stream: it upgrades the connection to a
// propose stream and serves it until the peer closes it or CloseStreams runs,
// each request answered with answer (its status and body; the query and frames
// are a POST /v1/internal/propose's), a request's frames at most limit bytes.
// Before the upgrade it returns the error to answer r with instead.
func (srv *StreamServer) ServeStream(w http.ResponseWriter, r *http.Request, limit int64, answer func(ctx context.Context, rawQuery string, frames []byte) (status int, body []byte)) error {
	if !hasToken(r.Header, "Connection", "upgrade") || r.Header.Get("Upgrade") != wire.StreamProtocol {
		return &wire.Error{Code: wire.CodeBadRequest, Message: fmt.Sprintf("want headers Connection: Upgrade and Upgrade: %s", wire.StreamProtocol)}
	}
	ctx, cancel := context.WithCancel(context.Background())
	st := &serverStream{ctx: ctx, cancel: cancel}
	ss := &srv.streams
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		cancel()
		return fmt.Errorf("propose stream: %w", wire.ErrShuttingDown)
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
		return fmt.Errorf("propose stream: hijack: %w", err)
	}
	defer conn.Close()
	ss.mu.Lock()
	st.conn = conn
	closed := ss.closed
	ss.mu.Unlock()
	if closed {
		return nil
	}
	_ = conn.SetDeadline(time.Now().Add(streamWriteTimeout))
	if _, err := io.WriteString(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+wire.StreamProtocol+"\r\n\r\n"); err != nil {
		return nil
	}
	if err := rw.Flush(); err != nil {
		return nil
	}
	_ = conn.SetDeadline(time.Time{})
	srv.serveStream(st, rw.Reader, limit, answer)
	return nil
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
func (srv *StreamServer) serveStream(st *serverStream, br *bufio.Reader, limit int64, answer func(ctx context.Context, rawQuery string, frames []byte) (int, []byte)) {
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
// left is cancelled. Streams that try to open later are refused. Call it after
// http.Server.Shutdown, which does not know about upgraded connections.
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
