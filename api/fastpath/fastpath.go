package fastpath

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
)

// The fast path serves the two write endpoints, POST /v1/tx and POST
// /v1/tx/batch, on keep-alive HTTP/1.1 connections without net/http's server,
// whose own work per request (its parsing and header map, a context per
// request, the response writer's layers, and the background read it starts on
// each connection once a body is read) was about a tenth of a node's CPU at 64
// clients (docs/performance.md, "The fast path for writes"). The handlers and
// answers are the Server's, unchanged; the two routes are picked without the
// router (Server.FastHandler), and a connection keeps its answer writer and remote
// address from one request to the next, so that a request allocates neither.
//
// FastListener reads each connection's requests itself as long as they are
// plain: the request line "POST /v1/tx[/batch][?query] HTTP/1.1" with a target
// of visible ASCII characters, a Host of a host name's characters, one
// Content-Length of decimal digits within MaxBodyBytes, no Transfer-Encoding,
// TE, Trailer, Expect or Upgrade, every line ending in CRLF, no folded or
// malformed header line, and the whole header in its 4 KiB buffer. The first
// request that is anything else, and the rest of its connection, goes to
// net/http with the bytes already read: Accept returns such connections, so
// an http.Server serving the FastListener answers them as it answers any
// other. The parser is a strict subset of net/http's: every header it takes
// net/http's server reads the same way (FuzzParseFastRequest checks it), and
// it hands a request over as soon as the bytes it has cannot start one it
// takes (another method or path, a bare LF), not when its header is complete.
// What the fast path answers is what net/http would write for the same
// handler output, but for the order of the headers.
//
// Deadlines are net/http's, whichever of the two holds the connection: a new
// connection's first header must have arrived ReadHeaderTimeout after it was
// accepted, a later one's ReadHeaderTimeout after its first byte, and
// IdleTimeout bounds the wait for that byte. A connection handed over keeps the
// header deadline the fast path started (prefixConn): the time spent on the
// fast path is not given again. A body must arrive within the Server's
// BodyTimeout once the header has, as readBody bounds it on net/http's path,
// and its buffer grows with the bytes that arrive, never to more than
// twice them or 4 KiB: a declared length allocates nothing by itself.
//
// Over TLS (the FastListener given a tls.Listener), the handshake comes first,
// in the connection's goroutine, under HandshakeTimeout from the accept; the
// first header's ReadHeaderTimeout starts at its end. A handshake that fails
// or times out closes the connection without an answer.

// fastBufSize is the size of a fast connection's read and write buffers: a
// request's header must fit in the read buffer.
const fastBufSize = 4 << 10

// FastConfig sets a FastListener's timeouts; the zero value takes the
// defaults, which are those the node's http.Server has.
type FastConfig struct {
	// IdleTimeout bounds the wait for the next request. Default 2 minutes.
	IdleTimeout time.Duration
	// ReadHeaderTimeout bounds the reading of a request's header: from the
	// connection's accept for its first request, from its first byte for a
	// later one. Default 10 s.
	ReadHeaderTimeout time.Duration
	// HandshakeTimeout bounds a TLS connection's handshake, from its accept;
	// the first header's ReadHeaderTimeout starts when the handshake ends,
	// as net/http's server has it. Default 10 s.
	HandshakeTimeout time.Duration

	// seen, if set, sees each fast-path request before its handler (tests).
	seen func(*http.Request)
}

// FastListener is a net.Listener for an http.Server that serves the fast path
// itself and hands the server only the connections it leaves (see above).
// Close stops accepting; Shutdown also waits for the requests in progress.
type FastListener struct {
	ln       net.Listener
	s        *api.Server
	scfg     api.Config // s's, with its defaults
	cfg      FastConfig
	handoff  chan net.Conn
	done     chan struct{} // closed by Close
	errOnce  sync.Once
	err      error // the accept error, set before done is closed
	start    sync.Once
	closed   sync.Once
	closeErr error // the listener's Close, the first time

	mu      sync.Mutex
	conns   map[*fastConn]struct{} // the connections on the fast path
	closing atomic.Bool            // Shutdown started: idle connections close
	served  atomic.Int64           // requests served on the fast path
}

type fastConn struct {
	c    net.Conn
	idle atomic.Bool // waiting for a request
}

// NewFastListener returns a FastListener on ln whose fast path runs s.
func NewFastListener(s *api.Server, ln net.Listener, cfg FastConfig) *FastListener {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = 10 * time.Second
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = 10 * time.Second
	}
	l := &FastListener{ln: ln, s: s, scfg: s.Config(), cfg: cfg, handoff: make(chan net.Conn),
		done: make(chan struct{}), conns: map[*fastConn]struct{}{}}
	return l
}

func (l *FastListener) acceptLoop() {
	var tempDelay time.Duration
	for {
		c, err := l.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// As net/http's Serve does for temporary errors (EMFILE).
				tempDelay = min(max(2*tempDelay, 5*time.Millisecond), time.Second)
				time.Sleep(tempDelay)
				continue
			}
			l.fail(err)
			return
		}
		tempDelay = 0
		fc := &fastConn{c: c}
		l.mu.Lock()
		if l.closing.Load() {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.conns[fc] = struct{}{}
		l.mu.Unlock()
		go l.serve(fc)
	}
}

func (l *FastListener) fail(err error) {
	l.errOnce.Do(func() {
		l.err = err
		close(l.done)
	})
}

// Accept returns the next connection handed to net/http. The first call
// starts accepting connections: none is served before the http.Server runs.
func (l *FastListener) Accept() (net.Conn, error) {
	l.start.Do(func() { go l.acceptLoop() })
	select {
	case c := <-l.handoff:
		return c, nil
	case <-l.done:
		return nil, l.err
	}
}

// Close stops accepting connections; those on the fast path go on until
// Shutdown or CloseAll. Every call returns what the first did: Shutdown and
// the http.Server's own Shutdown both close the listener, and the second
// must not read as a failure.
func (l *FastListener) Close() error {
	l.closed.Do(func() {
		l.closeErr = l.ln.Close()
		l.fail(net.ErrClosed)
	})
	return l.closeErr
}

// Addr returns the listener's address.
func (l *FastListener) Addr() net.Addr { return l.ln.Addr() }

// Served returns the number of requests the fast path has answered.
func (l *FastListener) Served() int64 { return l.served.Load() }

// Shutdown closes the listener and the idle fast connections, and waits for
// the requests in progress to be answered, until ctx ends: then it closes the
// rest and returns ctx's error. Like http.Server.Shutdown, which the caller
// runs for the connections handed to net/http.
func (l *FastListener) Shutdown(ctx context.Context) error {
	l.Close()
	return l.Drain(ctx)
}

// Drain is Shutdown without closing the listener: beside an http.Server's
// Shutdown, which closes it (so that its Serve returns ErrServerClosed).
// Connections accepted from now on are closed at once.
func (l *FastListener) Drain(ctx context.Context) error {
	l.closing.Store(true)
	l.mu.Lock()
	for fc := range l.conns {
		if fc.idle.Load() {
			fc.c.Close()
		}
	}
	l.mu.Unlock()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		l.mu.Lock()
		n := len(l.conns)
		l.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			l.CloseAll()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// CloseAll closes the listener and every fast connection at once.
func (l *FastListener) CloseAll() {
	l.Close()
	l.closing.Store(true)
	l.mu.Lock()
	for fc := range l.conns {
		fc.c.Close()
	}
	l.mu.Unlock()
}

// setIdle marks fc idle or busy and reports whether it may go on: a
// connection that Shutdown has started closing may not start a request.
// Shutdown sets closing before it looks for idle connections, and a
// connection marks itself before it looks at closing, so each request is
// either served whole or not started.
func (l *FastListener) setIdle(fc *fastConn, idle bool) bool {
	fc.idle.Store(idle)
	return !l.closing.Load()
}

func (l *FastListener) forget(fc *fastConn) {
	l.mu.Lock()
	delete(l.conns, fc)
	l.mu.Unlock()
}

// prefixConn is a connection handed to net/http with the bytes the fast path
// had read and not used, and the deadline of the header it had started
// reading: net/http's first read deadline, its own header timeout, is cut
// to it, so that a header gets ReadHeaderTimeout in all, not that again.
type prefixConn struct {
	net.Conn
	r           *bufio.Reader
	hdrDeadline time.Time
	first       atomic.Bool          // net/http has set its first read deadline
	tls         *tls.ConnectionState // the TLS connection's, after its handshake; nil on plain TCP
}

// ConnectionState returns the TLS state of a connection a FastListener
// handed to net/http, or of a *tls.Conn, once its handshake is done; nil for
// anything else. net/http sets a request's TLS only for a *tls.Conn, which a
// handed-over connection is not: the server's ConnContext keeps the
// connection so that the handler can set r.TLS from this.
func ConnectionState(c net.Conn) *tls.ConnectionState {
	switch c := c.(type) {
	case *prefixConn:
		return c.tls
	case *tls.Conn:
		if st := c.ConnectionState(); st.HandshakeComplete {
			return &st
		}
	}
	return nil
}

// SetReadDeadline sets t, or for net/http's first call, its header deadline,
// no later than the one the fast path started.
func (p *prefixConn) SetReadDeadline(t time.Time) error {
	if !p.first.Swap(true) && (t.IsZero() || t.After(p.hdrDeadline)) {
		t = p.hdrDeadline
	}
	return p.Conn.SetReadDeadline(t)
}

// CloseWrite half-closes a TCP connection, which net/http does before it
// closes one after an error, so that the client reads the answer before the
// reset.
func (p *prefixConn) CloseWrite() error {
	if cw, ok := p.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (p *prefixConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// serve runs the fast path on one connection until it closes, or hands it to
// net/http.
func (l *FastListener) serve(fc *fastConn) {
	c := fc.c
	br := bufio.NewReaderSize(c, fastBufSize)
	bw := bufio.NewWriterSize(c, fastBufSize)
	handedOff := false
	remote := c.RemoteAddr().String()
	w := newFastWriter() // reset for each request: no handler keeps it
	defer func() {
		l.forget(fc)
		if !handedOff {
			c.Close()
		}
	}()
	// A TLS connection's handshake runs here, in the connection's goroutine,
	// under HandshakeTimeout; a client that sends nothing, or no TLS, is
	// closed without an answer.
	var tlsState *tls.ConnectionState
	if tc, ok := c.(*tls.Conn); ok {
		if !l.setIdle(fc, true) { // Shutdown closes a connection still in its handshake
			return
		}
		if tlsState = l.handshake(tc); tlsState == nil {
			return
		}
	}
	// The first request's header is due ReadHeaderTimeout after the accept
	// (the handshake's end on TLS), as net/http's server has it: a
	// connection that sends nothing is not kept for IdleTimeout.
	start := time.Now()
	c.SetReadDeadline(start.Add(l.cfg.ReadHeaderTimeout))
	for first := true; ; first = false {
		if !l.setIdle(fc, true) {
			return
		}
		if !first {
			// One deadline per request as a rule: the header and the body
			// usually arrive with the first byte, and a deadline left set
			// stops nothing while no read is waiting.
			c.SetReadDeadline(time.Now().Add(l.cfg.IdleTimeout))
		}
		if _, err := br.Peek(1); err != nil {
			return // closed, idle too long, or closed by Shutdown
		}
		if !l.setIdle(fc, false) {
			return
		}
		if !first {
			start = time.Now()
			// As net/http's server after a POST: up to 4 CR or LF bytes
			// before a request line are dropped (RFC 9112, 2.2).
			if b, _ := br.Peek(1); b[0] == '\r' || b[0] == '\n' {
				c.SetReadDeadline(start.Add(l.cfg.ReadHeaderTimeout))
				peek, _ := br.Peek(4)
				br.Discard(leadingCRorLF(peek))
			}
		}
		hdrDeadline := start.Add(l.cfg.ReadHeaderTimeout)
		req, n, ok := parseFastRequest(br, l.scfg.MaxBodyBytes, func() {
			c.SetReadDeadline(hdrDeadline)
		})
		if !ok {
			c.SetReadDeadline(time.Time{}) // net/http's server sets its own, cut to hdrDeadline
			select {
			case l.handoff <- &prefixConn{Conn: c, r: br, hdrDeadline: hdrDeadline, tls: tlsState}:
				handedOff = true
			case <-l.done:
			}
			return
		}
		br.Discard(n)
		if int64(br.Buffered()) < req.ContentLength {
			c.SetReadDeadline(time.Now().Add(l.scfg.BodyTimeout))
		}
		body, err := readFastBody(br, req.ContentLength)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// As readBody answers a body that takes too long.
				w := newFastWriter()
				l.s.WriteError(w, &wire.Error{Code: wire.CodeRequestTimeout, Message: fmt.Sprintf("body: not all of it within %v", l.scfg.BodyTimeout)})
				w.closeAfter = true
				w.writeTo(bw)
				bw.Flush()
			}
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.RemoteAddr = remote
		req.TLS = tlsState // shared by the connection's requests, as net/http's server does
		w.reset()
		w.closeAfter = req.Close
		if !l.call(w, req) {
			return
		}
		l.served.Add(1) // before the answer leaves, so that whoever reads it sees the count
		w.writeTo(bw)
		err = bw.Flush()
		if err != nil || w.closeAfter {
			return
		}
	}
}

// handshake runs tc's TLS handshake under HandshakeTimeout and returns its
// state, or nil if it failed (logged at Debug: a port scan or a plain HTTP
// client is no news).
func (l *FastListener) handshake(tc *tls.Conn) *tls.ConnectionState {
	tc.SetDeadline(time.Now().Add(l.cfg.HandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		l.s.Logger().Debug("tls handshake", "remote", tc.RemoteAddr().String(), "err", err)
		return nil
	}
	tc.SetDeadline(time.Time{})
	st := tc.ConnectionState()
	return &st
}

// leadingCRorLF returns the number of CR or LF bytes b starts with.
func leadingCRorLF(b []byte) int {
	n := 0
	for _, c := range b {
		if c != '\r' && c != '\n' {
			break
		}
		n++
	}
	return n
}

// readFastBody reads a body of n bytes from br. Its buffer starts at what br
// holds (at least fastBufSize, at most n) and doubles as more arrives, up to
// n: a client that declares a body and sends little of it costs what it
// sent, not what it declared.
func readFastBody(br *bufio.Reader, n int64) ([]byte, error) {
	b := make([]byte, 0, min(n, int64(max(br.Buffered(), fastBufSize))))
	for int64(len(b)) < n {
		if len(b) == cap(b) {
			b = slices.Grow(b, int(min(n, 2*int64(cap(b))))-len(b))
		}
		m, err := br.Read(b[len(b):min(int64(cap(b)), n)])
		b = b[:len(b)+m]
		if err != nil && int64(len(b)) < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return b, nil
}

// call runs the handler, and reports false if it panicked, which net/http
// would log and answer by closing the connection, as this does.
func (l *FastListener) call(w *fastWriter, req *http.Request) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			l.s.Logger().Error("http: panic serving", "remote", req.RemoteAddr, "panic", v, "stack", string(debug.Stack()))
			ok = false
		}
	}()
	if l.cfg.seen != nil {
		l.cfg.seen(req)
	}
	l.s.Serve(w, req, l.s.FastHandler(req.URL.Path))
	return true
}

// parseFastRequest parses the header of the next request in br without
// consuming it. It returns the request (without its body) and the header's
// length, or ok false for anything the fast path leaves to net/http. Before it
// first waits for more of the header than br holds, it calls wait (if not nil).
func parseFastRequest(br *bufio.Reader, maxBody int64, wait func()) (req *http.Request, n int, ok bool) {
	end, err := headerEnd(br, wait)
	if err != nil || end < 0 {
		return nil, 0, false
	}
	head, _ := br.Peek(end)
	head = head[:end-2] // every line ends in CRLF; the last, empty one is dropped
	line, _, _ := bytes.Cut(head, []byte("\r\n"))
	target, found := bytes.CutPrefix(line, []byte("POST "))
	if !found {
		return nil, 0, false
	}
	target, found = bytes.CutSuffix(target, []byte(" HTTP/1.1"))
	if !found || !visibleASCII(target) || !fastTarget(target) {
		return nil, 0, false
	}
	// One string for the whole header: the target, the header names and their
	// values are parts of it, and the values' slices parts of one array, so
	// that a header costs no allocation of its own (each was two: 17% of a
	// follower's heap objects at 64 clients).
	hs := string(head)
	_, rest, _ := strings.Cut(hs, "\r\n")
	uri := hs[len("POST ") : len("POST ")+len(target)]
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, 0, false
	}
	h := make(http.Header, 4)
	vals := make([]string, 0, strings.Count(rest, "\r\n")+1)
	contentLength := int64(-1)
	closeAfter := false
	for len(rest) > 0 {
		var line string
		line, rest, _ = strings.Cut(rest, "\r\n")
		name, value, found := strings.Cut(line, ":")
		if !found || len(name) == 0 || !validHeaderName(name) || !validHeaderValue(value) {
			return nil, 0, false // folded lines start with a space, which no name holds
		}
		value = strings.Trim(value, " \t")
		key := textproto.CanonicalMIMEHeaderKey(name)
		switch key {
		case "Content-Length":
			// Digits only: ParseInt takes a sign ("-0", "+5"), net/http's
			// server refuses one.
			if contentLength >= 0 || len(value) == 0 || len(value) > 18 || !digits(value) {
				return nil, 0, false
			}
			v, err := strconv.ParseInt(value, 10, 64)
			if err != nil || v > maxBody {
				return nil, 0, false
			}
			contentLength = v
		case "Transfer-Encoding", "Expect", "Upgrade", "Te", "Trailer":
			return nil, 0, false
		case "Host":
			if len(h["Host"]) > 0 || !hostChars(value) {
				return nil, 0, false
			}
		case "Connection":
			for tok := range strings.SplitSeq(value, ",") {
				switch tok = strings.Trim(tok, " \t"); {
				case strings.EqualFold(tok, "close"):
					closeAfter = true
				case strings.EqualFold(tok, "keep-alive"), len(tok) == 0:
				default:
					return nil, 0, false
				}
			}
		}
		if prev := h[key]; prev != nil {
			h[key] = append(prev, value) // past its capacity: a new array
		} else {
			vals = append(vals, value)
			i := len(vals)
			h[key] = vals[i-1 : i : i] // capacity cut: an append never reaches the next one's
		}
	}
	host := h.Get("Host")
	if contentLength < 0 || host == "" {
		return nil, 0, false
	}
	delete(h, "Host") // net/http keeps it in Request.Host only
	req = &http.Request{
		Method: http.MethodPost, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, ContentLength: contentLength, Host: host, RequestURI: uri,
		Close: closeAfter,
	}
	return req, end, true
}

// fastTarget reports whether target is one of the fast path's: /v1/tx or
// /v1/tx/batch, with a query or without.
func fastTarget(target []byte) bool {
	path, _, _ := bytes.Cut(target, []byte("?"))
	return string(path) == "/v1/tx" || string(path) == "/v1/tx/batch"
}

// headerEnd returns the length of the header at the start of br's buffer,
// reading more as needed, or -1 as soon as the bytes it has cannot start a
// header the fast path takes: a start other than "POST /v1/tx", a line that
// ends in a bare LF, or no end within the buffer. wait, if not nil, is called
// once, before the first read.
func headerEnd(br *bufio.Reader, wait func()) (int, error) {
	scanned := 0 // buf[:scanned] holds no bare LF and no end of the header
	for {
		buf, _ := br.Peek(br.Buffered())
		if k := min(len(buf), len(fastStart)); string(buf[:k]) != fastStart[:k] {
			return -1, nil
		}
		for scanned < len(buf) {
			i := bytes.IndexByte(buf[scanned:], '\n')
			if i < 0 {
				scanned = len(buf)
				break
			}
			i += scanned
			if i == 0 || buf[i-1] != '\r' {
				return -1, nil // net/http takes a bare LF as a line's end; the fast path leaves it
			}
			if i >= 3 && buf[i-2] == '\n' && buf[i-3] == '\r' {
				return i + 1, nil
			}
			scanned = i + 1
		}
		if len(buf) == br.Size() {
			return -1, nil
		}
		if wait != nil {
			wait()
			wait = nil
		}
		if _, err := br.Peek(len(buf) + 1); err != nil {
			return -1, err
		}
	}
}

// fastStart is how every request the fast path takes starts.
const fastStart = "POST /v1/tx"

// visibleASCII reports whether b is non-empty and all of it visible ASCII
// characters (no space, control or non-ASCII byte): net/http cuts the request
// line at spaces, and a target with one is not what the fast path would read.
func visibleASCII(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return len(b) > 0
}

// digits reports whether s is all ASCII digits.
func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// hostChars reports whether a Host value holds only the characters of a host
// name, an IPv4 or IPv6 address and a port: a strict subset of what net/http's
// server takes (httpguts.ValidHostHeader), so that the fast path never
// serves a Host it would refuse.
func hostChars(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_':
		default:
			return false
		}
	}
	return true
}

func validHeaderName(name string) bool {
	for _, c := range []byte(name) {
		if c >= 0x80 || !isTokenChar[c] {
			return false
		}
	}
	return true
}

func validHeaderValue(v string) bool {
	for _, c := range []byte(v) {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// isTokenChar holds the characters of an HTTP token (RFC 9110, 5.6.2).
var isTokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

// fastWriter collects an answer: the fast path writes it once the handler is
// done, with its length.
type fastWriter struct {
	h          http.Header
	status     int
	body       bytes.Buffer
	closeAfter bool
}

func newFastWriter() *fastWriter { return &fastWriter{h: make(http.Header, 4)} }

// reset makes w as newFastWriter made it, keeping its map and buffer. A body
// buffer that grew past maxKeptFastBody is let go.
func (w *fastWriter) reset() {
	clear(w.h)
	w.status, w.closeAfter = 0, false
	if w.body.Cap() > maxKeptFastBody {
		w.body = bytes.Buffer{}
	}
	w.body.Reset()
}

// maxKeptFastBody is the largest answer buffer a fast connection keeps for
// its next request.
const maxKeptFastBody = 64 << 10

func (w *fastWriter) Header() http.Header { return w.h }

// SetReadDeadline is for http.ResponseController: the fast path has read the
// whole body before the handler runs, under its own deadline (BodyTimeout), so
// there is nothing left for a read deadline to bound. Without it the
// controller builds an error for every readBody.
func (w *fastWriter) SetReadDeadline(time.Time) error { return nil }

func (w *fastWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *fastWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// writeTo writes the answer as net/http would for the same calls: the status
// line, the handler's headers, Content-Length and Date, and Connection: close
// when the connection closes after it.
func (w *fastWriter) writeTo(bw *bufio.Writer) {
	w.WriteHeader(http.StatusOK)
	bodyAllowed := w.status >= 200 && w.status != http.StatusNoContent && w.status != http.StatusNotModified
	if bodyAllowed && w.h.Get("Content-Type") == "" && w.body.Len() > 0 {
		w.h.Set("Content-Type", http.DetectContentType(w.body.Bytes()))
	}
	text := http.StatusText(w.status)
	if text == "" {
		text = "status code " + strconv.Itoa(w.status)
	}
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(w.status))
	bw.WriteString(" ")
	bw.WriteString(text)
	bw.WriteString("\r\n")
	var kbuf [8]string
	keys := kbuf[:0]
	for k := range w.h {
		if k != "Content-Length" && k != "Date" && k != "Connection" && k != "Transfer-Encoding" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range w.h[k] {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	if bodyAllowed {
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.Itoa(w.body.Len()))
		bw.WriteString("\r\n")
	}
	if w.closeAfter {
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("Date: ")
	bw.WriteString(fastDate())
	bw.WriteString("\r\n\r\n")
	if bodyAllowed {
		bw.Write(w.body.Bytes())
	}
}

// fastDate returns the Date header's value, formatted once a second.
func fastDate() string {
	now := time.Now().Unix()
	if d := dateCache.Load(); d != nil && d.unix == now {
		return d.text
	}
	d := &cachedDate{unix: now, text: time.Unix(now, 0).UTC().Format(http.TimeFormat)}
	dateCache.Store(d)
	return d.text
}

type cachedDate struct {
	unix int64
	text string
}

var dateCache atomic.Pointer[cachedDate]
