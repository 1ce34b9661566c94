package fastpath

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/internal/certgen"
)

// tlsPair is fastPair over mutual TLS: net/http alone on a tls.Listener (it
// runs the handshake itself), and a FastListener on one (the fast path runs
// it), with the ConnContext a node sets so that handed-over requests get
// r.TLS.
type tlsPair struct {
	plain, fast string
	fl          *FastListener
	client      *tls.Config  // trusts the server, offers a client certificate
	fastTLS     atomic.Int64 // fast-path requests that had r.TLS with a verified client chain
	httpTLS     atomic.Int64 // net/http requests (either server) that had it
	httpNoTLS   atomic.Int64 // net/http requests without it
}

type connKey struct{}

func newTLSPair(t testing.TB, fcfg FastConfig) *tlsPair {
	t.Helper()
	ca, err := certgen.NewCA("test ca")
	if err != nil {
		t.Fatal(err)
	}
	srvLeaf, err := ca.Issue(certgen.Options{CommonName: "server", Hosts: []string{"127.0.0.1"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cliLeaf, err := ca.Issue(certgen.Options{CommonName: "client", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	srvCert, _ := srvLeaf.TLSCertificate()
	cliCert, _ := cliLeaf.TLSCertificate()
	scfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{srvCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	p := &tlsPair{client: &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cliCert}, ServerName: "127.0.0.1"}}
	verified := func(st *tls.ConnectionState) bool {
		return st != nil && len(st.VerifiedChains) > 0 && st.VerifiedChains[0][0].Subject.CommonName == "client"
	}
	fcfg.seen = func(r *http.Request) {
		if verified(r.TLS) {
			p.fastTLS.Add(1)
		}
	}
	s := api.NewServer(testConfig, okBackend())
	plainLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fastLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.fl = NewFastListener(s, tls.NewListener(fastLn, scfg), fcfg)
	newServer := func() *http.Server {
		return &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.TLS == nil {
					r.TLS = ConnectionState(r.Context().Value(connKey{}).(net.Conn))
				}
				if verified(r.TLS) {
					p.httpTLS.Add(1)
				} else {
					p.httpNoTLS.Add(1)
				}
				s.ServeHTTP(w, r)
			}),
			ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
			ReadHeaderTimeout: p.fl.cfg.ReadHeaderTimeout, IdleTimeout: p.fl.cfg.IdleTimeout,
		}
	}
	plain, fast := newServer(), newServer()
	go plain.Serve(tls.NewListener(plainLn, scfg))
	go fast.Serve(p.fl)
	t.Cleanup(func() {
		plain.Close()
		fast.Close()
		p.fl.CloseAll()
	})
	p.plain, p.fast = plainLn.Addr().String(), fastLn.Addr().String()
	return p
}

// TestTLSBothPaths sends a write (the fast path's) and a read (handed to
// net/http) on one TLS connection to each server: both answer, and every
// request the api sees has r.TLS with the client's verified chain.
func TestTLSBothPaths(t *testing.T) {
	p := newTLSPair(t, FastConfig{})
	for _, addr := range []string{p.fast, p.plain} {
		c, err := tls.Dial("tcp", addr, p.client)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		for _, raw := range []string{post("/v1/tx", "", goodTx), post("/v1/tx", "", goodTx), "GET /v1/kv/k HTTP/1.1\r\nHost: x\r\n\r\n"} {
			if _, err := io.WriteString(c, raw); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%s: %v", addr, err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %q: status %d", addr, raw[:12], resp.StatusCode)
			}
		}
		c.Close()
	}
	if got := p.fastTLS.Load(); got != 2 || p.fl.Served() != 2 {
		t.Errorf("fast-path requests with r.TLS = %d (served %d), want 2", got, p.fl.Served())
	}
	if got, bad := p.httpTLS.Load(), p.httpNoTLS.Load(); got != 4 || bad != 0 {
		t.Errorf("net/http requests with r.TLS = %d, without = %d; want 4 and 0", got, bad)
	}
}

// TestTLSHostile: what is not a good TLS client gets no HTTP answer from the
// fast path's port, and nothing reaches the api.
func TestTLSHostile(t *testing.T) {
	p := newTLSPair(t, FastConfig{HandshakeTimeout: 200 * time.Millisecond})
	noCert := p.client.Clone()
	noCert.Certificates = nil
	otherCA, _ := certgen.NewCA("other")
	rogueLeaf, _ := otherCA.Issue(certgen.Options{CommonName: "client", Client: true})
	rogueCert, _ := rogueLeaf.TLSCertificate()
	rogue := p.client.Clone()
	rogue.Certificates = []tls.Certificate{rogueCert}

	for _, c := range []struct {
		name string
		run  func(t *testing.T, c net.Conn) []byte // what the client read
	}{
		{"plain HTTP", func(t *testing.T, c net.Conn) []byte {
			io.WriteString(c, post("/v1/tx", "", goodTx))
			b, _ := io.ReadAll(c)
			return b
		}},
		{"silent after connect", func(t *testing.T, c net.Conn) []byte {
			start := time.Now()
			b, err := io.ReadAll(c) // the server closes it after HandshakeTimeout
			if err != nil || time.Since(start) > 5*time.Second {
				t.Errorf("read: %v after %v, want EOF after about 200ms", err, time.Since(start))
			}
			return b
		}},
		{"no client certificate", func(t *testing.T, c net.Conn) []byte { return tlsTry(t, c, noCert) }},
		{"a client certificate of another CA", func(t *testing.T, c net.Conn) []byte { return tlsTry(t, c, rogue) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", p.fast)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			b := c.run(t, conn)
			if strings.Contains(string(b), "HTTP/") || strings.Contains(string(b), "{") {
				t.Fatalf("the client read %q, want no HTTP answer", b)
			}
		})
	}
	if p.fl.Served() != 0 || p.httpTLS.Load()+p.httpNoTLS.Load() != 0 {
		t.Fatalf("requests served: fast %d, net/http %d; want none", p.fl.Served(), p.httpTLS.Load()+p.httpNoTLS.Load())
	}
}

// tlsTry handshakes as cfg over c and sends a write; it returns what it read
// in plain text (nothing, when the server refused the handshake).
func tlsTry(t *testing.T, c net.Conn, cfg *tls.Config) []byte {
	tc := tls.Client(c, cfg)
	if err := tc.Handshake(); err != nil {
		return nil // TLS 1.2 would refuse here
	}
	io.WriteString(tc, post("/v1/tx", "", goodTx))
	b, err := io.ReadAll(tc)
	if err == nil {
		t.Errorf("read: nil error, want the server's alert")
	}
	return b
}

// TestTLSDrainDuringHandshake: Shutdown does not wait for a connection still
// in its handshake.
func TestTLSDrainDuringHandshake(t *testing.T) {
	p := newTLSPair(t, FastConfig{})
	c, err := net.Dial("tcp", p.fast)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The connection is accepted (and in its handshake) once it is counted.
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.fl.mu.Lock()
		n := len(p.fl.conns)
		p.fl.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("connection not accepted after 5s")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := p.fl.Drain(ctx); err != nil {
		t.Fatalf("Drain() = %v after %v, want nil at once", err, time.Since(start))
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after Drain = %v, want EOF", err)
	}
}
