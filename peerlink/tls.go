package peerlink

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
)

// TLS modes (Config.TLSMode).
const (
	// TLSOff: plain connections alone, both ways.
	TLSOff = "off"
	// TLSOn: TLS alone, both ways, each side's certificate verified by the
	// other; a plain connection is refused (StatusTLSRequired).
	TLSOn = "tls"
	// TLSBoth: accept TLS and plain connections, dial TLS first and plain
	// when the peer does not speak TLS. For the rolling move from plain to
	// TLS only: while it lasts, whoever can answer a dial in place of the
	// peer can make it plain.
	TLSBoth = "both"
)

// tlsRecordHandshake is the first byte of a TLS client's first record; a
// plain header starts with Magic's 'T'.
const tlsRecordHandshake = 0x16

// Errors of TLS.
var (
	// ErrPeerNotTLS: the peer answered the TLS handshake with bytes that
	// are not TLS (a plain acceptor). Dial in TLSBoth dials plain then.
	ErrPeerNotTLS = errors.New("peer does not speak TLS")
	// ErrTLSRequired: the peer takes TLS connections alone and this one
	// was plain.
	ErrTLSRequired = errors.New("peer requires TLS")
	// ErrNoVerifiedCert: an accepted TLS connection presented no client
	// certificate verified against the CA (ServerTLS does not require one).
	ErrNoVerifiedCert = errors.New("peer presented no verified certificate")
)

// acceptTLS sorts the accepted connection c by its first byte, read under
// c's header deadline: a TLS handshake record is served TLS (the handshake
// runs here, in c's goroutine); a plain one is served plain in TLSBoth and
// refused in TLSOn. It returns the connection to read the header from, or
// an error once it refused and logged.
func (l *Link) acceptTLS(c net.Conn) (net.Conn, error) {
	remote := c.RemoteAddr().String()
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		l.refusals.add(slog.LevelWarn, "peer header refused", "remote", remote, "err", fmt.Errorf("read first byte: %w", err))
		return nil, err
	}
	pc := &peekedConn{Conn: c, first: first[:]}
	if first[0] != tlsRecordHandshake {
		if l.cfg.TLSMode == TLSBoth {
			return pc, nil
		}
		l.refusals.add(slog.LevelWarn, "plain peer connection refused: TLS required", "remote", remote)
		refuse(pc, appendAnswer(nil, StatusTLSRequired, ClusterID{}))
		return nil, ErrTLSRequired
	}
	cfg := l.cfg.ServerTLS()
	if cfg == nil {
		l.log.Error("no TLS config for an accepted peer connection; refused", "remote", remote)
		return nil, errors.New("no server TLS config")
	}
	tc := tls.Server(pc, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.HeaderTimeout)
	defer cancel()
	err := tc.HandshakeContext(ctx)
	if err == nil && len(tc.ConnectionState().VerifiedChains) == 0 {
		err = ErrNoVerifiedCert
	}
	if err != nil {
		l.refusals.add(slog.LevelWarn, "peer TLS handshake refused", "remote", remote, "err", err)
		return nil, err
	}
	return tc, nil
}

// dialTLS runs the client's TLS handshake on c, within ctx and
// Config.HeaderTimeout. ErrPeerNotTLS when the peer's answer is not TLS.
func (l *Link) dialTLS(ctx context.Context, c net.Conn, addr string) (net.Conn, error) {
	cfg := l.cfg.ClientTLS(addr)
	if cfg == nil {
		return nil, fmt.Errorf("peer link to %s: no client TLS config", addr)
	}
	ctx, cancel := context.WithTimeout(ctx, l.cfg.HeaderTimeout)
	defer cancel()
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) {
			return nil, fmt.Errorf("peer link to %s: %w: %w", addr, ErrPeerNotTLS, err)
		}
		return nil, fmt.Errorf("peer link to %s: TLS handshake: %w", addr, err)
	}
	return tc, nil
}

// ServerName returns the host of addr (host:port), what ClientTLS names
// as the server it dials.
func ServerName(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}

// peekedConn is a connection whose first bytes were read already: Read
// returns them first.
type peekedConn struct {
	net.Conn
	first []byte
}

func (c *peekedConn) Read(p []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(p, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite ends the writing of the connection beneath, when it can.
func (c *peekedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

var _ net.Conn = (*peekedConn)(nil)
