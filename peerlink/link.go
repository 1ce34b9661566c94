package peerlink

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Config.
const (
	DefaultHeaderTimeout = 5 * time.Second
	DefaultIdleTimeout   = 2 * time.Minute
	// DefaultHTTPIdleTimeout is the idle deadline of KindHTTP's
	// connections: past the longest request (a write or a wait of 5
	// minutes, api.DefaultMaxTimeout), during which net/http's server
	// waits on the connection with no deadline of its own.
	DefaultHTTPIdleTimeout = 10 * time.Minute
	DefaultDialTimeout     = 5 * time.Second
	// DefaultMaxPending bounds the connections whose header is being read.
	DefaultMaxPending = 1024
)

// Errors of Dial and Probe.
var (
	// ErrOtherCluster: the peer belongs to another cluster (its ID, or ours
	// as it read it, differs).
	ErrOtherCluster = errors.New("peer of another cluster")
	// ErrRefused: the peer refused the connection (its Accept policy, or no
	// handler for the kind yet).
	ErrRefused = errors.New("peer refused the connection")
	// ErrPeerBadHeader: the peer could not read our header.
	ErrPeerBadHeader = errors.New("peer refused our header")
	// ErrClosed: the link is closed.
	ErrClosed = errors.New("peer link closed")
)

// Config holds the settings of a Link. Zero fields mean their defaults.
type Config struct {
	// NodeID is this node's ID, sent in every header. At most MaxNodeIDBytes.
	NodeID string
	// ClusterID returns this node's cluster ID, all zero while it has none.
	// Called on every connection, from the goroutine that opens or accepts it.
	// Default: always zero.
	ClusterID func() ClusterID
	// Accept decides whether to serve a connection of kind from remoteNode
	// of remoteCluster, once the header was read and the cluster IDs do not
	// conflict (two non-zero IDs that differ are refused before Accept).
	// A non-nil error refuses it (status 3) and is logged at Warn. Default
	// (nil): DefaultAccept(ClusterID).
	Accept func(kind byte, remoteCluster ClusterID, remoteNode string) error
	// Bootstrap answers a bootstrap probe (KindBootstrap) from remoteNode
	// with at most MaxProbeBytes (JSON, by convention). Default: none, and
	// probes are refused.
	Bootstrap func(remoteNode string) []byte
	// HeaderTimeout bounds the reading of a header and the writing of its
	// answer, on both sides. Default DefaultHeaderTimeout (5s).
	HeaderTimeout time.Duration
	// IdleTimeout bounds every read of an accepted connection after its
	// header: a connection that sends nothing for that long is closed. A
	// deadline the connection's user sets that is earlier wins. Default
	// DefaultIdleTimeout (2 min).
	IdleTimeout time.Duration
	// HTTPIdleTimeout is IdleTimeout for KindHTTP's connections, whose
	// server sets its own, shorter, deadlines between requests and for a
	// request's header: this one bounds the wait while a handler runs.
	// Default DefaultHTTPIdleTimeout (10 min).
	HTTPIdleTimeout time.Duration
	// DialTimeout bounds a dial and its header exchange when the caller's
	// context has no earlier deadline. Default DefaultDialTimeout (5s).
	DialTimeout time.Duration
	// MaxPending bounds the connections whose header is still being read
	// (each for at most HeaderTimeout): one more is closed at once, unread.
	// Default DefaultMaxPending (1024).
	MaxPending int
	// TLSMode is how the link uses TLS (tls.go): TLSOff (the default, "")
	// plain alone; TLSOn TLS alone, both ways: a plain connection is
	// refused; TLSBoth accepts either and dials TLS first, plain when the
	// peer does not speak TLS: for the rolling move from plain to TLS only.
	TLSMode string
	// ServerTLS returns the TLS config of one accepted connection, called
	// for each (from its own goroutine): it must require and verify a
	// client certificate, or the connection is refused. Required with
	// TLSMode TLSOn or TLSBoth.
	ServerTLS func() *tls.Config
	// ClientTLS returns the TLS config of one dial to addr (the peer
	// address dialled), called for each: it names the server and presents
	// this node's certificate. Required with TLSMode TLSOn or TLSBoth.
	ClientTLS func(addr string) *tls.Config
	// Secrets returns the shared secrets (secret.go), called on every
	// connection: the first is the one this node proves when it dials, any
	// is accepted from a dialer. Nil or empty: none; an acceptor then never
	// challenges, and a dialer fails against one that does.
	Secrets func() [][]byte
	// Logger receives the link's logs. Default: discard.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = DefaultHeaderTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.HTTPIdleTimeout <= 0 {
		c.HTTPIdleTimeout = DefaultHTTPIdleTimeout
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.ClusterID == nil {
		c.ClusterID = func() ClusterID { return ClusterID{} }
	}
	if c.Accept == nil {
		c.Accept = DefaultAccept(c.ClusterID)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.TLSMode == "" {
		c.TLSMode = TLSOff
	}
	return c
}

// Validate reports every setting out of bounds.
func (c Config) Validate() error {
	var errs []error
	if len(c.NodeID) > MaxNodeIDBytes {
		errs = append(errs, fmt.Errorf("NodeID: %d bytes, want at most %d", len(c.NodeID), MaxNodeIDBytes))
	} else if !validNodeID([]byte(c.NodeID)) {
		errs = append(errs, fmt.Errorf("NodeID %q: want printable UTF-8 without spaces", c.NodeID))
	}
	switch c.TLSMode {
	case "", TLSOff:
	case TLSOn, TLSBoth:
		if c.ServerTLS == nil || c.ClientTLS == nil {
			errs = append(errs, fmt.Errorf("TLSMode %s: needs ServerTLS and ClientTLS", c.TLSMode))
		}
	default:
		errs = append(errs, fmt.Errorf("TLSMode %q: want %s, %s or %s", c.TLSMode, TLSOff, TLSOn, TLSBoth))
	}
	return errors.Join(errs...)
}

// ErrNoClusterID is DefaultAccept's answer to a connection without two
// cluster IDs.
var ErrNoClusterID = errors.New("no cluster ID on both sides")

// DefaultAccept returns the default policy of a node whose cluster ID own
// returns: a bootstrap probe is accepted whatever the IDs; every other kind
// needs both IDs non-zero (and equal, which the link checked before).
func DefaultAccept(own func() ClusterID) func(kind byte, remote ClusterID, remoteNode string) error {
	return func(kind byte, remote ClusterID, _ string) error {
		if kind == KindBootstrap {
			return nil
		}
		if remote == (ClusterID{}) || own() == (ClusterID{}) {
			return ErrNoClusterID
		}
		return nil
	}
}

// Link is one node's end of the peer link: the listener at the peer address,
// whose connections it splits by kind, and the dialer of connections to
// other nodes. Safe for concurrent use.
type Link struct {
	cfg Config
	ln  net.Listener
	log *slog.Logger

	// refusals logs the refused connections, at most one record a second.
	refusals limitedLog

	done      chan struct{} // closed by Close
	wg        sync.WaitGroup
	closeOnce sync.Once

	mu      sync.Mutex             // guards the fields below
	kinds   map[byte]*kindListener // the kinds served
	pending map[net.Conn]struct{}  // connections whose header is being read
}

// Listen listens on addr and serves the link; see New.
func Listen(addr string, cfg Config) (*Link, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("peer link config: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for peers on %s: %w", addr, err)
	}
	return New(ln, cfg), nil
}

// New serves the link on ln, which it owns from then on. Connections of a kind
// nobody listens for yet (Listener) are refused with status 3.
func New(ln net.Listener, cfg Config) *Link {
	cfg = cfg.withDefaults()
	l := &Link{
		cfg:     cfg,
		ln:      ln,
		log:     cfg.Logger.With("component", "peerlink"),
		done:    make(chan struct{}),
		kinds:   map[byte]*kindListener{},
		pending: map[net.Conn]struct{}{},
	}
	l.refusals.log = l.log
	l.wg.Go(l.accept)
	return l
}

// Addr returns the address the link listens on.
func (l *Link) Addr() net.Addr { return l.ln.Addr() }

// NodeID returns this node's ID, as the link sends it.
func (l *Link) NodeID() string { return l.cfg.NodeID }

// Close stops accepting, closes every kind's listener and the connections
// whose header is still being read, and waits for the link's goroutines.
// Connections handed to a kind's listener are their user's to close. Safe to
// call twice.
func (l *Link) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.ln.Close()
		l.mu.Lock()
		for c := range l.pending {
			c.Close()
		}
		for _, kl := range l.kinds {
			kl.close()
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return err
}

// Listener returns the listener of the connections of kind (KindRaft,
// KindStream or KindHTTP), their header read and answered; their Read has
// Config.IdleTimeout as its deadline, and RemoteNode on a context from
// ConnContext names the node that dialled. Closing it refuses that kind
// again. One listener per kind: a second call returns the same.
func (l *Link) Listener(kind byte) net.Listener {
	l.mu.Lock()
	defer l.mu.Unlock()
	if kl := l.kinds[kind]; kl != nil {
		return kl
	}
	kl := &kindListener{l: l, kind: kind, conns: make(chan *Conn), done: make(chan struct{})}
	select {
	case <-l.done:
		kl.close()
	default:
	}
	l.kinds[kind] = kl
	return kl
}

// accept accepts connections until the listener closes.
func (l *Link) accept() {
	backoff := 5 * time.Millisecond
	for {
		c, err := l.ln.Accept()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			l.log.Warn("accept failed", "err", err)
			select {
			case <-l.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		l.mu.Lock()
		full := len(l.pending) >= l.cfg.MaxPending
		if !full {
			l.pending[c] = struct{}{}
		}
		l.mu.Unlock()
		if full {
			l.refusals.add(slog.LevelWarn, "too many peer connections without a header; closing one", "remote", c.RemoteAddr().String(), "max", l.cfg.MaxPending)
			c.Close()
			continue
		}
		l.wg.Go(func() { l.serve(c) })
	}
}

// serve reads c's header, answers it, and hands c to its kind. With
// TLSMode set it first sorts c by its first byte and runs the TLS handshake
// (tls.go); with secrets, the challenge (secret.go). All of it runs under
// the header deadline, in this connection's goroutine, counted in pending.
func (l *Link) serve(c net.Conn) {
	handed := false
	conn := c // c, or the TLS connection over it
	defer func() {
		l.mu.Lock()
		delete(l.pending, c)
		l.mu.Unlock()
		if !handed {
			conn.Close()
		}
	}()
	_ = c.SetDeadline(time.Now().Add(l.cfg.HeaderTimeout))
	remote := c.RemoteAddr().String()
	if l.cfg.TLSMode != TLSOff {
		tc, err := l.acceptTLS(c)
		if err != nil {
			return
		}
		conn = tc
	}
	secrets := l.secrets()
	own := l.cfg.ClusterID()
	h, err := ReadHeader(conn)
	if err != nil {
		if errors.Is(err, ErrBadHeader) {
			told := own
			if len(secrets) > 0 { // a stranger learns nothing of the cluster
				told = ClusterID{}
			}
			refuse(conn, appendAnswer(nil, StatusBadHeader, told))
		}
		l.refusals.add(slog.LevelWarn, "peer header refused", "remote", remote, "err", err)
		return
	}
	answer := func(status byte, cluster ClusterID) []byte { return appendAnswer(nil, status, cluster) }
	if len(secrets) > 0 {
		x, key, err := challenge(conn, h, secrets)
		if err != nil {
			l.refusals.add(slog.LevelWarn, "peer shared secret refused", "remote", remote, "peer", h.Node, "kind", string(h.Kind), "err", err)
			if errors.Is(err, ErrUnauthenticated) {
				refuse(conn, appendAnswer(nil, StatusUnauthenticated, ClusterID{}))
			}
			return
		}
		answer = func(status byte, cluster ClusterID) []byte {
			return append(appendAnswer(nil, status, cluster), x.acceptMAC(key, status, cluster)...)
		}
	}
	if conflict(own, h.Cluster) {
		l.refusals.add(slog.LevelError, "peer of another cluster", "remote", remote, "peer", h.Node,
			"cluster_id", hex.EncodeToString(own[:]), "peer_cluster_id", hex.EncodeToString(h.Cluster[:]), "kind", string(h.Kind))
		refuse(conn, answer(StatusOtherCluster, own))
		return
	}
	if err := l.cfg.Accept(h.Kind, h.Cluster, h.Node); err != nil {
		l.refusals.add(slog.LevelWarn, "peer connection refused", "remote", remote, "peer", h.Node, "kind", string(h.Kind), "err", err)
		refuse(conn, answer(StatusRefused, own))
		return
	}
	if h.Kind == KindBootstrap {
		l.answerProbe(conn, h, answer(StatusOK, own), answer(StatusRefused, own))
		return
	}
	l.mu.Lock()
	kl := l.kinds[h.Kind]
	l.mu.Unlock()
	if kl == nil || kl.isClosed() {
		l.log.Debug("peer connection of a kind not served", "remote", remote, "peer", h.Node, "kind", string(h.Kind))
		refuse(conn, answer(StatusRefused, own))
		return
	}
	if _, err := conn.Write(answer(StatusOK, own)); err != nil {
		return
	}
	_ = conn.SetDeadline(time.Time{})
	idle := l.cfg.IdleTimeout
	if h.Kind == KindHTTP {
		idle = l.cfg.HTTPIdleTimeout
	}
	pc := &Conn{Conn: conn, remote: h, idle: idle}
	select {
	case kl.conns <- pc:
		handed = true
	case <-kl.done:
	case <-l.done:
	}
}

// answerProbe answers a bootstrap probe (ok, then the body; or refused)
// and closes.
func (l *Link) answerProbe(c net.Conn, h Header, ok, refused []byte) {
	if l.cfg.Bootstrap == nil {
		_, _ = c.Write(refused)
		return
	}
	body := l.cfg.Bootstrap(h.Node)
	if len(body) > MaxProbeBytes {
		l.log.Error("bootstrap answer too long, not sent", "bytes", len(body), "max", MaxProbeBytes)
		_, _ = c.Write(refused)
		return
	}
	_, _ = c.Write(append(ok, body...))
}

// refuseDrainBytes bounds what refuse reads after its answer.
const refuseDrainBytes = 64 << 10

// refuse writes answer and ends c's writing; it reads (and drops) what else
// the dialer sent, at most refuseDrainBytes until c's header deadline, so
// that closing does not reset the connection before the answer is read.
func refuse(c net.Conn, answer []byte) {
	if _, err := c.Write(answer); err != nil {
		return
	}
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
		_, _ = io.CopyN(io.Discard, c, refuseDrainBytes)
	}
}

// conflict reports whether two cluster IDs name different clusters.
func conflict(a, b ClusterID) bool {
	return a != (ClusterID{}) && b != (ClusterID{}) && a != b
}

// Dial opens a connection of kind to the peer link at addr, writes the header
// and reads the answer, within ctx and Config.DialTimeout. The connection it
// returns carries kind's bytes from then on and has no deadline set. With
// TLSMode TLSOn it is a TLS connection; with TLSBoth too, unless the peer
// answered the TLS handshake with something that is not TLS (a plain
// acceptor's refusal of the bytes it could not read as a header): then it
// is dialled again, plain.
func (l *Link) Dial(ctx context.Context, addr string, kind byte) (net.Conn, error) {
	select {
	case <-l.done:
		return nil, fmt.Errorf("dial %s: %w", addr, ErrClosed)
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.DialTimeout)
	defer cancel()
	useTLS := l.cfg.TLSMode != TLSOff
	c, err := l.dial(ctx, addr, kind, useTLS)
	if err != nil && l.cfg.TLSMode == TLSBoth && errors.Is(err, ErrPeerNotTLS) {
		l.log.Debug("peer does not speak TLS; dialling plain", "addr", addr, "kind", string(kind))
		c, err = l.dial(ctx, addr, kind, false)
	}
	return c, err
}

// dial is one attempt of Dial, TLS or plain.
func (l *Link) dial(ctx context.Context, addr string, kind byte, useTLS bool) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if useTLS {
		tc, err := l.dialTLS(ctx, c, addr)
		if err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	if err := l.handshake(ctx, c, addr, kind); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// handshake writes the header of kind on c and reads the answer, proving
// the shared secret when the peer challenges (secret.go).
func (l *Link) handshake(ctx context.Context, c net.Conn, addr string, kind byte) error {
	dl, _ := ctx.Deadline()
	if hdl := time.Now().Add(l.cfg.HeaderTimeout); dl.IsZero() || hdl.Before(dl) {
		dl = hdl
	}
	_ = c.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	own := l.cfg.ClusterID()
	secrets := l.secrets()
	header := Header{Kind: kind, Cluster: own, Node: l.cfg.NodeID}.Append(nil)
	if _, err := c.Write(header); err != nil {
		return fmt.Errorf("peer link to %s: write header: %w", addr, err)
	}
	status, theirs, nonce, err := readAnswer(c)
	if err != nil {
		return fmt.Errorf("peer link to %s: read answer: %w", addr, err)
	}
	if status == StatusChallenge {
		if len(secrets) == 0 {
			return fmt.Errorf("peer link to %s: %w", addr, ErrSecretRequired)
		}
		x, err := respond(c, header, nonce, secrets[0])
		if err != nil {
			return fmt.Errorf("peer link to %s: %w", addr, err)
		}
		if status, theirs, _, err = readAnswer(c); err != nil {
			return fmt.Errorf("peer link to %s: read answer: %w", addr, err)
		}
		if status == StatusUnauthenticated {
			return fmt.Errorf("peer link to %s: %w", addr, ErrUnauthenticated)
		}
		if status == StatusChallenge { // a second challenge: not an answer
			return fmt.Errorf("peer link to %s: %w: challenged twice", addr, ErrPeerUnproven)
		}
		if err := checkAccept(c, x, secrets[0], status, theirs); err != nil {
			return fmt.Errorf("peer link to %s: %w", addr, err)
		}
	} else if len(secrets) > 0 && status == StatusOK {
		return fmt.Errorf("peer link to %s: %w: it did not challenge", addr, ErrPeerUnproven)
	}
	if status == StatusOtherCluster || (status == StatusOK && conflict(own, theirs)) {
		l.refusals.add(slog.LevelError, "peer of another cluster", "addr", addr, "cluster_id", hex.EncodeToString(own[:]), "peer_cluster_id", hex.EncodeToString(theirs[:]), "kind", string(kind))
		return fmt.Errorf("peer link to %s: %w", addr, ErrOtherCluster)
	}
	switch status {
	case StatusOK:
	case StatusBadHeader:
		return fmt.Errorf("peer link to %s: %w", addr, ErrPeerBadHeader)
	case StatusRefused:
		return fmt.Errorf("peer link to %s: %w", addr, ErrRefused)
	case StatusUnauthenticated:
		return fmt.Errorf("peer link to %s: %w", addr, ErrUnauthenticated)
	case StatusTLSRequired:
		return fmt.Errorf("peer link to %s: %w", addr, ErrTLSRequired)
	default:
		return fmt.Errorf("peer link to %s: %w: status %d", addr, ErrPeerBadHeader, status)
	}
	if !stop() {
		return fmt.Errorf("peer link to %s: %w", addr, ctx.Err())
	}
	_ = c.SetDeadline(time.Time{})
	return nil
}

// Probe asks the node at addr for its bootstrap answer (KindBootstrap):
// at most MaxProbeBytes, read within ctx and Config.DialTimeout.
func (l *Link) Probe(ctx context.Context, addr string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.DialTimeout)
	defer cancel()
	c, err := l.Dial(ctx, addr, KindBootstrap)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetReadDeadline(dl)
	stop := context.AfterFunc(ctx, func() { _ = c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	b, err := io.ReadAll(io.LimitReader(c, MaxProbeBytes+1))
	if err != nil {
		return nil, fmt.Errorf("probe %s: %w", addr, err)
	}
	if len(b) > MaxProbeBytes {
		return nil, fmt.Errorf("probe %s: answer longer than %d bytes", addr, MaxProbeBytes)
	}
	return b, nil
}

// kindListener is the net.Listener of one kind's connections.
type kindListener struct {
	l     *Link
	kind  byte
	conns chan *Conn
	done  chan struct{}
	once  sync.Once
}

var _ net.Listener = (*kindListener)(nil)

// Accept returns the next connection of the kind, its header read.
func (kl *kindListener) Accept() (net.Conn, error) {
	select {
	case c := <-kl.conns:
		if kl.isClosed() { // both were ready: closed wins
			c.Close()
			return nil, net.ErrClosed
		}
		return c, nil
	case <-kl.done:
		return nil, net.ErrClosed
	}
}

// Close stops the kind's connections: later ones are refused.
func (kl *kindListener) Close() error {
	kl.close()
	return nil
}

func (kl *kindListener) close() { kl.once.Do(func() { close(kl.done) }) }

func (kl *kindListener) isClosed() bool {
	select {
	case <-kl.done:
		return true
	default:
		return false
	}
}

// Addr returns the link's address.
func (kl *kindListener) Addr() net.Addr { return kl.l.Addr() }

// limitedLog logs at most one record a second, so that a flood of refused
// connections does not flood the log; a record says how many it dropped
// before it ("dropped").
type limitedLog struct {
	log     *slog.Logger
	last    atomic.Int64 // unix nanoseconds of the last record
	dropped atomic.Int64
}

func (g *limitedLog) add(level slog.Level, msg string, attrs ...any) {
	now := time.Now().UnixNano()
	last := g.last.Load()
	if now-last < int64(time.Second) || !g.last.CompareAndSwap(last, now) {
		g.dropped.Add(1)
		return
	}
	if d := g.dropped.Swap(0); d > 0 {
		attrs = append(attrs, "dropped", d)
	}
	g.log.Log(context.Background(), level, msg, attrs...)
}
