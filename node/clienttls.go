package node

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/txlog/txlog/api/fastpath"
	"github.com/txlog/txlog/tlsfiles"
)

// The client port's TLS (--tls-cert-file, --tls-key-file and
// --tls-client-ca-file; docs/operations.md, TLS). With a certificate, the
// client listener serves TLS alone: it is wrapped in a tls.Listener whose
// config takes the current certificate and client CA bundle at each
// handshake (tlsfiles), so rotating either takes effect on the next
// connection. With a client CA bundle, a client certificate it signs is
// required (mutual TLS).
//
// Both servers of the port run the handshake in the connection's own
// goroutine, never in Accept, under a timeout of httpReadHeaderTimeout (10 s):
// the fast path under FastConfig.HandshakeTimeout, net/http (with
// --http-fast-path=false, and the waiting server of a node that waits for its
// peers) under its own, the least of its read timeouts. A connection that
// sends nothing, or no TLS, is closed.
//
// Every request the api sees over TLS has r.TLS: net/http sets it on a
// *tls.Conn, the fast path on the requests it serves; the connections the
// fast path hands to net/http are not *tls.Conn to net/http, so
// withClientTLSState sets it from the connection that ConnContext kept.

// clientHandshakeTimeout bounds a client connection's TLS handshake.
const clientHandshakeTimeout = httpReadHeaderTimeout

// listenClientTLS returns ln wrapped in TLS when Config.TLSCertFile is set,
// and opens n.clientTLS; ln itself otherwise, or on an error (the caller
// still owns it then).
func (n *Node) listenClientTLS(ln net.Listener) (net.Listener, error) {
	if n.cfg.TLSCertFile == "" {
		return ln, nil
	}
	f, err := tlsfiles.Open(tlsfiles.Config{
		CertFile: n.cfg.TLSCertFile,
		KeyFile:  n.cfg.TLSKeyFile,
		CAFile:   n.cfg.TLSClientCAFile,
		Name:     "client",
		Logger:   n.cfg.Logger,
		Metrics:  n.cfg.Metrics,
	})
	if err != nil {
		return ln, fmt.Errorf("client tls: %w", err)
	}
	n.clientTLS = f
	n.log.Info("client port serves tls", "cert_file", n.cfg.TLSCertFile, "mutual", n.cfg.TLSClientCAFile != "")
	return &tlsListener{Listener: ln, cfg: f.ServerConfig()}, nil
}

// tlsListener is tls.NewListener's listener that also passes SetDeadline to
// the TCP listener under it: the waiting server of a node that waits for its
// peers (waiting.go) interrupts its Accept with an accept deadline when it
// hands the listener over.
type tlsListener struct {
	net.Listener // a *net.TCPListener
	cfg          *tls.Config
}

// Accept returns the next connection as a *tls.Conn whose handshake has not
// started: its server runs it, in the connection's goroutine.
func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return tls.Server(c, l.cfg), nil
}

// SetDeadline sets the TCP listener's accept deadline.
func (l *tlsListener) SetDeadline(t time.Time) error {
	d, ok := l.Listener.(interface{ SetDeadline(time.Time) error })
	if !ok {
		return errors.New("client tls: listener has no deadline")
	}
	return d.SetDeadline(t)
}

// serveClientTLS makes srv, the client port's server, set r.TLS on the
// requests of the connections the fast path hands over. Without TLS it does
// nothing.
func (n *Node) serveClientTLS(srv *http.Server) {
	if n.clientTLS == nil {
		return
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, clientConnKey{}, c)
	}
	srv.Handler = withClientTLSState(srv.Handler)
}

// clientConnKey keys the client connection in a request's context.
type clientConnKey struct{}

// withClientTLSState sets r.TLS, when net/http left it nil, from the
// connection the request came on.
func withClientTLSState(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			if c, ok := r.Context().Value(clientConnKey{}).(net.Conn); ok {
				r.TLS = fastpath.ConnectionState(c)
			}
		}
		h.ServeHTTP(w, r)
	})
}

// reloadClientTLS re-reads the client port's certificate, key and CA bundle
// (Reload); on an error the old ones stay in use.
func (n *Node) reloadClientTLS() error {
	if n.clientTLS == nil {
		return nil
	}
	return n.clientTLS.Reload()
}

// closeClientTLS stops the watch of the client port's TLS files.
func (n *Node) closeClientTLS() {
	if n.clientTLS != nil {
		n.clientTLS.Close()
	}
}
