package api

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// A propose stream carries internal proposals from one node to another over
// one persistent connection, instead of one POST /v1/internal/propose each.
// The proposing node opens it on the other node's HTTP port:
//
//	GET /v1/internal/stream HTTP/1.1
//	Connection: Upgrade
//	Upgrade: txlog-propose/1
//
// and the other node answers 101 Switching Protocols with the same Upgrade
// header. After that the connection carries messages in both directions, each
// the length of its body as an unsigned varint, then the body:
//
//	request: uvarint id | uvarint len(q) | q | frames
//	answer:  uvarint id | uvarint status | body
//
// A request is POST /v1/internal/propose in a message: q is its query text
// (timeout, ack, fresh), frames its body (frames.go). The answer with the same id is
// what that POST would answer: the HTTP status, and for 200 the results in
// binary (streamresults.go), otherwise the JSON error object. Requests are served
// concurrently and answered in the order they finish. A request whose envelope
// cannot be read ends the stream; everything else (a bad query, bad frames, a
// refused proposal) is an answer with a 4xx or 5xx status.
//
// Request id 0 is a ping: the reading goroutine answers it at once with status
// 200 and no body, whatever it carries, ahead of the requests in flight. The
// proposing node pings a stream that has kept it waiting (streamclient.go), to
// tell a slow commit from a paused or cut-off peer. A node from before pings
// answers such a request too (400, no frames), which serves the same purpose.
const (
	StreamPath     = "/v1/internal/stream"
	StreamProtocol = "txlog-propose/1"
)

// pingID is the id of a ping: request ids start at 1.
const pingID = 0

// maxStreamHeadBytes bounds what a request adds to its frames: its id and query.
const maxStreamHeadBytes = 4 << 10

// streamWriteTimeout bounds one write of answers to a stream; a peer that reads
// nothing for that long loses the stream.
const streamWriteTimeout = 10 * time.Second

var errStreamMessage = errors.New("bad stream message")

// appendStreamMessage appends the message of a body made of head then rest.
func appendStreamMessage(b, head, rest []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(head)+len(rest)))
	b = append(b, head...)
	return append(b, rest...)
}

// encodeStreamRequest returns the message of request id.
func encodeStreamRequest(id uint64, q string, frames []byte) []byte {
	head := binary.AppendUvarint(make([]byte, 0, 2*binary.MaxVarintLen64+len(q)), id)
	head = binary.AppendUvarint(head, uint64(len(q)))
	head = append(head, q...)
	return appendStreamMessage(make([]byte, 0, binary.MaxVarintLen64+len(head)+len(frames)), head, frames)
}

// uvarint reads the unsigned varint at the start of b, in minimal form (so
// that a message decodes from one encoding only), and returns its length; 0
// when b starts with none.
func uvarint(b []byte) (uint64, int) {
	v, n := binary.Uvarint(b)
	if n <= 0 || (n > 1 && b[n-1] == 0) {
		return 0, 0
	}
	return v, n
}

// decodeStreamRequest splits the body of a request message. frames aliases body.
func decodeStreamRequest(body []byte) (id uint64, q string, frames []byte, err error) {
	id, n := uvarint(body)
	if n == 0 {
		return 0, "", nil, fmt.Errorf("%w: request id", errStreamMessage)
	}
	body = body[n:]
	l, n := uvarint(body)
	if n == 0 || l > uint64(len(body)-n) || l > maxStreamHeadBytes {
		return 0, "", nil, fmt.Errorf("%w: request %d: query length", errStreamMessage, id)
	}
	body = body[n:]
	return id, string(body[:l]), body[l:], nil
}

// encodeStreamAnswer returns the message answering request id.
func encodeStreamAnswer(id uint64, status int, body []byte) []byte {
	head := binary.AppendUvarint(make([]byte, 0, 2*binary.MaxVarintLen64), id)
	head = binary.AppendUvarint(head, uint64(status))
	return appendStreamMessage(make([]byte, 0, binary.MaxVarintLen64+len(head)+len(body)), head, body)
}

// decodeStreamAnswer splits the body of an answer message. rest aliases body.
func decodeStreamAnswer(body []byte) (id uint64, status int, rest []byte, err error) {
	id, n := uvarint(body)
	if n == 0 {
		return 0, 0, nil, fmt.Errorf("%w: answer id", errStreamMessage)
	}
	body = body[n:]
	st, n := uvarint(body)
	if n == 0 || st < 100 || st > 599 {
		return 0, 0, nil, fmt.Errorf("%w: answer %d: status", errStreamMessage, id)
	}
	return id, int(st), body[n:], nil
}

// readStreamMessage reads one message and returns its body, refusing a body
// longer than limit bytes.
func readStreamMessage(r *bufio.Reader, limit int64) ([]byte, error) {
	l, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if l > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", errStreamMessage, l, limit)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("read %d-byte message: %w", l, io.ErrUnexpectedEOF)
	}
	return b, nil
}

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
	if !hasToken(r.Header, "Connection", "upgrade") || r.Header.Get("Upgrade") != StreamProtocol {
		s.writeError(w, &Error{Code: CodeBadRequest, Message: fmt.Sprintf("want headers Connection: Upgrade and Upgrade: %s", StreamProtocol)})
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	st := &serverStream{ctx: ctx, cancel: cancel}
	ss := &s.streams
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		cancel()
		s.writeError(w, fmt.Errorf("propose stream: %w", ErrShuttingDown))
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
	if _, err := io.WriteString(rw, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+StreamProtocol+"\r\n\r\n"); err != nil {
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
		if msg, err = readStreamMessage(br, s.cfg.MaxInternalBodyBytes+maxStreamHeadBytes); err != nil {
			break
		}
		id, q, frames, derr := decodeStreamRequest(msg)
		if derr != nil {
			err = derr
			break
		}
		if id == pingID {
			st.write(encodeStreamAnswer(pingID, http.StatusOK, nil))
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
		if errors.Is(err, errStreamMessage) {
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
	var results []TxResult
	if err == nil {
		results, err = s.propose(ctx, q, frames)
	}
	if err == nil {
		body = appendResults(nil, results)
	} else {
		status, body = s.errorAnswer(err)
	}
	return encodeStreamAnswer(id, status, body)
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
