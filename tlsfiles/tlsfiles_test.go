package tlsfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/txlog/txlog/internal/certgen"
)

func newCA(t *testing.T, name string) *certgen.CA {
	t.Helper()
	ca, err := certgen.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issue(t *testing.T, ca *certgen.CA, cn string) *certgen.Leaf {
	t.Helper()
	l, err := ca.Issue(certgen.Options{CommonName: cn, Hosts: []string{"127.0.0.1", "localhost"}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// writeAtomic replaces path as rotation tools do: a temporary file renamed
// over it.
func writeAtomic(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// files writes leaf and the CA bundle (nil: none) under dir and returns the
// Config naming them.
func files(t *testing.T, dir string, leaf *certgen.Leaf, cas ...*certgen.CA) Config {
	t.Helper()
	cfg := Config{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"),
		Interval: 10 * time.Millisecond, Name: "test"}
	writeAtomic(t, cfg.CertFile, leaf.CertPEM)
	writeAtomic(t, cfg.KeyFile, leaf.KeyPEM)
	if len(cas) > 0 {
		cfg.CAFile = filepath.Join(dir, "ca.pem")
		writeAtomic(t, cfg.CAFile, bundle(cas...))
	}
	return cfg
}

func bundle(cas ...*certgen.CA) []byte {
	var b []byte
	for _, ca := range cas {
		b = append(b, ca.CertPEM...)
	}
	return b
}

func open(t *testing.T, cfg Config) *Files {
	t.Helper()
	f, err := Open(cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// serve listens on loopback with cfg and returns the listener; each accepted
// connection's handshake result goes to the returned channel.
func serve(t *testing.T, cfg *tls.Config) (string, <-chan result) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan result, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				tc := c.(*tls.Conn)
				tc.SetDeadline(time.Now().Add(5 * time.Second))
				err := tc.Handshake()
				if err == nil {
					_, err = tc.Write([]byte{1})
				}
				ch <- result{state: tc.ConnectionState(), err: err}
			}()
		}
	}()
	return ln.Addr().String(), ch
}

type result struct {
	state tls.ConnectionState
	err   error
}

// dial handshakes with addr and reads the byte the server writes once its side
// of the handshake succeeded (TLS 1.3 clients finish before the server has
// checked their certificate). It returns the client's error, the server's
// result, and the certificate the server presented.
func dial(t *testing.T, addr string, cfg *tls.Config, srv <-chan result) (clientErr error, server result, peer *x509.Certificate) {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err == nil {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		peer = c.ConnectionState().PeerCertificates[0]
		_, err = c.Read(make([]byte, 1))
		c.Close()
	}
	select {
	case server = <-srv:
	case <-time.After(5 * time.Second):
		t.Fatal("server handshake result: none after 5s")
	}
	return err, server, peer
}

// clientFor is a client config trusting ca and offering leaf (nil: none).
func clientFor(ca *certgen.CA, leaf *certgen.Leaf) *tls.Config {
	c := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	if leaf != nil {
		cert, _ := leaf.TLSCertificate()
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}

// eventually polls cond every few milliseconds until it holds or 5s pass.
func eventually(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%s: not after 5s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

func TestOpenRefusesUnusableFiles(t *testing.T) {
	ca := newCA(t, "ca")
	other := issue(t, ca, "other")
	cases := []struct {
		name   string
		mutate func(cfg *Config)
		want   string
	}{
		{"no cert file", func(c *Config) { c.CertFile = "" }, "CertFile required"},
		{"no key file", func(c *Config) { c.KeyFile = "" }, "KeyFile required"},
		{"allowed CN without CA", func(c *Config) { c.CAFile = ""; c.AllowedCN = []string{"x"} }, "AllowedCN needs CAFile"},
		{"negative interval", func(c *Config) { c.Interval = -1 }, "Interval"},
		{"missing cert", func(c *Config) { c.CertFile += ".missing" }, "read cert"},
		{"key of another cert", func(c *Config) { writeAtomic(t, c.KeyFile, other.KeyPEM) }, "with key"},
		{"truncated cert", func(c *Config) { b, _ := os.ReadFile(c.CertFile); writeAtomic(t, c.CertFile, b[:len(b)/2]) }, "truncated"},
		{"truncated CA bundle", func(c *Config) { writeAtomic(t, c.CAFile, ca.CertPEM[:len(ca.CertPEM)-40]) }, "CA bundle"},
		{"empty CA bundle", func(c *Config) { writeAtomic(t, c.CAFile, nil) }, "no PEM block"},
		{"key in CA bundle", func(c *Config) { writeAtomic(t, c.CAFile, other.KeyPEM) }, "want CERTIFICATE"},
		{"garbage after CA", func(c *Config) { writeAtomic(t, c.CAFile, append(bytes.Clone(ca.CertPEM), "junk"...)) }, "after the last"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := files(t, t.TempDir(), issue(t, ca, "n1"), ca)
			tc.mutate(&cfg)
			f, err := Open(cfg)
			if err == nil {
				f.Close()
				t.Fatalf("Open() = nil error, want one containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open() = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestServerRotation rotates the server's certificate and key (by two
// renames, the key second), and sees the next handshakes use them.
func TestServerRotation(t *testing.T) {
	ca := newCA(t, "ca")
	old := issue(t, ca, "old")
	cfg := files(t, t.TempDir(), old)
	reg := prometheus.NewRegistry()
	cfg.Metrics = reg
	f := open(t, cfg)
	addr, srv := serve(t, f.ServerConfig())
	if _, s, peer := dial(t, addr, clientFor(ca, nil), srv); s.err != nil || peer.Subject.CommonName != "old" {
		t.Fatalf("first handshake: server err %v, peer %v, want old", s.err, peer)
	}
	next := issue(t, ca, "new")
	writeAtomic(t, cfg.CertFile, next.CertPEM)
	writeAtomic(t, cfg.KeyFile, next.KeyPEM)
	eventually(t, "new certificate in use", func() bool {
		_, s, peer := dial(t, addr, clientFor(ca, nil), srv)
		return s.err == nil && peer.Subject.CommonName == "new"
	})
	if got := testutil.ToFloat64(f.expiry.WithLabelValues("test")); got != float64(next.Cert.NotAfter.Unix()) {
		t.Errorf("expiry gauge = %v, want %v", got, next.Cert.NotAfter.Unix())
	}
	if got := testutil.ToFloat64(f.reloads.WithLabelValues("test", "ok")); got < 1 {
		t.Errorf("reloads{ok} = %v, want >= 1", got)
	}
}

// TestSymlinkSwap rotates as a Kubernetes volume does: the paths are
// symlinks into a directory, and a symlink is swapped to a new directory.
func TestSymlinkSwap(t *testing.T) {
	ca := newCA(t, "ca")
	root := t.TempDir()
	v1, v2 := filepath.Join(root, "v1"), filepath.Join(root, "v2")
	for _, d := range []string{v1, v2} {
		os.Mkdir(d, 0o700)
	}
	files(t, v1, issue(t, ca, "v1"))
	files(t, v2, issue(t, ca, "v2"))
	data := filepath.Join(root, "data")
	if err := os.Symlink("v1", data); err != nil {
		t.Fatal(err)
	}
	cfg := Config{CertFile: filepath.Join(data, "cert.pem"), KeyFile: filepath.Join(data, "key.pem"), Interval: 10 * time.Millisecond}
	f := open(t, cfg)
	if cn := f.Certificate().Leaf.Subject.CommonName; cn != "v1" {
		t.Fatalf("CN = %q, want v1", cn)
	}
	if err := os.Symlink("v2", data+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(data+".new", data); err != nil {
		t.Fatal(err)
	}
	eventually(t, "v2 in use", func() bool { return f.Certificate().Leaf.Subject.CommonName == "v2" })
}

// TestBadFileKeepsOld writes broken files — by the watcher and by Reload — and
// sees the old material stay in use, the failure counted.
func TestBadFileKeepsOld(t *testing.T) {
	ca := newCA(t, "ca")
	cfg := files(t, t.TempDir(), issue(t, ca, "old"), ca)
	cfg.Metrics = prometheus.NewRegistry()
	f := open(t, cfg)
	addr, srv := serve(t, f.ServerConfig())
	client := clientFor(ca, issue(t, ca, "client"))
	failed := func() float64 { return testutil.ToFloat64(f.reloads.WithLabelValues("test", "error")) }

	next := issue(t, ca, "new")
	writeAtomic(t, cfg.CertFile, next.CertPEM[:len(next.CertPEM)/2]) // half written
	eventually(t, "the watcher's failed reload", func() bool { return failed() >= 1 })
	if err := f.Reload(); err == nil {
		t.Fatal("Reload() of a half-written cert = nil, want an error")
	}
	writeAtomic(t, cfg.CertFile, next.CertPEM) // whole, but the old key
	if err := f.Reload(); err == nil {
		t.Fatal("Reload() of a cert with another's key = nil, want an error")
	}
	writeAtomic(t, cfg.CAFile, []byte("-----BEGIN CERTIFICATE-----\nAAAA"))
	if err := f.Reload(); err == nil {
		t.Fatal("Reload() of a broken CA bundle = nil, want an error")
	}
	if _, s, peer := dial(t, addr, client, srv); s.err != nil || peer.Subject.CommonName != "old" {
		t.Fatalf("handshake after bad files: server err %v, peer %v, want the old cert", s.err, peer.Subject.CommonName)
	}
	writeAtomic(t, cfg.KeyFile, next.KeyPEM)
	writeAtomic(t, cfg.CAFile, ca.CertPEM)
	if err := f.Reload(); err != nil {
		t.Fatalf("Reload() of good files = %v", err)
	}
	if _, s, peer := dial(t, addr, client, srv); s.err != nil || peer.Subject.CommonName != "new" {
		t.Fatalf("handshake after the fix: server err %v, peer %v, want new", s.err, peer)
	}
}

// TestClientCARotation moves the client CA from A to B as an operator
// would: bundle A+B, then B alone. A client of a CA not in the bundle is
// refused at each step, and no step needs a restart.
func TestClientCARotation(t *testing.T) {
	caA, caB, rogue := newCA(t, "A"), newCA(t, "B"), newCA(t, "rogue")
	cfg := files(t, t.TempDir(), issue(t, caA, "server"), caA)
	f := open(t, cfg)
	addr, srv := serve(t, f.ServerConfig())
	clientA := clientFor(caA, issue(t, caA, "a"))
	clientB := clientFor(caA, issue(t, caB, "b"))
	clientRogue := clientFor(caA, issue(t, rogue, "a"))
	clientNone := clientFor(caA, nil)
	ok := func(c *tls.Config) bool { _, s, _ := dial(t, addr, c, srv); return s.err == nil }

	if !ok(clientA) {
		t.Fatal("client of A refused by a server trusting A")
	}
	for name, c := range map[string]*tls.Config{"B": clientB, "rogue": clientRogue, "no cert": clientNone} {
		if ok(c) {
			t.Fatalf("client %s accepted by a server trusting A alone", name)
		}
	}
	writeAtomic(t, cfg.CAFile, bundle(caA, caB))
	eventually(t, "client of B accepted", func() bool { return ok(clientB) })
	if !ok(clientA) || ok(clientRogue) {
		t.Fatal("bundle A+B: want A accepted, rogue refused")
	}
	writeAtomic(t, cfg.CAFile, bundle(caB))
	eventually(t, "client of A refused", func() bool { return !ok(clientA) })
	if !ok(clientB) || ok(clientRogue) {
		t.Fatal("bundle B: want B accepted, rogue refused")
	}
}

// TestClientSide rotates a client's certificate and CA pool: the next
// handshake offers the new certificate, and the next ClientConfig verifies
// the server against the new pool.
func TestClientSide(t *testing.T) {
	caA, caB := newCA(t, "A"), newCA(t, "B")
	serverA := mustCert(t, issue(t, caA, "server"))
	srvCfg := &tls.Config{Certificates: []tls.Certificate{serverA}, ClientAuth: tls.RequireAndVerifyClientCert,
		ClientCAs: caA.Pool()}
	srvCfg.ClientCAs.AddCert(caB.Cert)
	addr, srv := serve(t, srvCfg)

	cfg := files(t, t.TempDir(), issue(t, caA, "c1"), caA)
	f := open(t, cfg)
	cc := f.ClientConfig("127.0.0.1")
	if _, s, _ := dial(t, addr, cc, srv); s.err != nil || s.state.PeerCertificates[0].Subject.CommonName != "c1" {
		t.Fatalf("first handshake: server err %v", s.err)
	}
	next := issue(t, caB, "c2")
	writeAtomic(t, cfg.KeyFile, next.KeyPEM)
	writeAtomic(t, cfg.CertFile, next.CertPEM)
	eventually(t, "c2 offered", func() bool {
		_, s, _ := dial(t, addr, cc, srv) // the same config: the certificate is picked per handshake
		return s.err == nil && s.state.PeerCertificates[0].Subject.CommonName == "c2"
	})
	// A pool that does not hold the server's CA refuses it.
	writeAtomic(t, cfg.CAFile, bundle(caB))
	eventually(t, "server of A refused", func() bool {
		err, _, _ := dial(t, addr, f.ClientConfig("127.0.0.1"), srv)
		var uae x509.UnknownAuthorityError
		return errors.As(err, &uae)
	})
}

func mustCert(t *testing.T, l *certgen.Leaf) tls.Certificate {
	t.Helper()
	c, err := l.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAllowedCN refuses a verified peer whose CN is not listed, on both
// sides, and names the CN.
func TestAllowedCN(t *testing.T) {
	ca := newCA(t, "ca")
	cfg := files(t, t.TempDir(), issue(t, ca, "n1"), ca)
	cfg.AllowedCN = []string{"n1", "n2"}
	f := open(t, cfg)
	addr, srv := serve(t, f.ServerConfig())
	if _, s, _ := dial(t, addr, clientFor(ca, issue(t, ca, "n2")), srv); s.err != nil {
		t.Fatalf("n2 refused: %v", s.err)
	}
	_, s, _ := dial(t, addr, clientFor(ca, issue(t, ca, "intruder")), srv)
	var cnErr *CNError
	if !errors.As(s.err, &cnErr) || cnErr.CN != "intruder" || !strings.Contains(s.err.Error(), `"intruder"`) {
		t.Fatalf("server error = %v, want a CNError naming intruder", s.err)
	}

	// Client side: a server whose CN is not listed is refused.
	other := mustCert(t, issue(t, ca, "n9"))
	addr2, srv2 := serve(t, &tls.Config{Certificates: []tls.Certificate{other}})
	err, _, _ := dial(t, addr2, f.ClientConfig("127.0.0.1"), srv2)
	if !errors.As(err, &cnErr) || cnErr.CN != "n9" {
		t.Fatalf("client error = %v, want a CNError naming n9", err)
	}
}

// TestServerMinVersion refuses TLS 1.1.
func TestServerMinVersion(t *testing.T) {
	ca := newCA(t, "ca")
	f := open(t, files(t, t.TempDir(), issue(t, ca, "n1")))
	addr, srv := serve(t, f.ServerConfig())
	c := clientFor(ca, nil)
	c.MinVersion, c.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if _, s, _ := dial(t, addr, c, srv); s.err == nil {
		t.Fatal("TLS 1.1 handshake accepted, want refused")
	}
}

// TestSharedMetrics opens two Files on one registerer, as a node does for
// its client and peer material.
func TestSharedMetrics(t *testing.T) {
	ca := newCA(t, "ca")
	reg := prometheus.NewRegistry()
	for _, name := range []string{"client", "peer"} {
		cfg := files(t, t.TempDir(), issue(t, ca, name))
		cfg.Name, cfg.Metrics = name, reg
		open(t, cfg)
	}
	n, err := testutil.GatherAndCount(reg, "txlog_tls_cert_expiry_seconds")
	if err != nil || n != 2 {
		t.Fatalf("expiry series = %d, %v; want 2", n, err)
	}
}

// TestExpiredClientRefused: a client certificate of the right CA whose
// validity has ended is refused.
func TestExpiredClientRefused(t *testing.T) {
	ca := newCA(t, "ca")
	f := open(t, files(t, t.TempDir(), issue(t, ca, "server"), ca))
	addr, srv := serve(t, f.ServerConfig())
	expired, err := ca.Issue(certgen.Options{CommonName: "old", Client: true,
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	cert := mustCert(t, expired)
	c := clientFor(ca, nil)
	c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	if _, s, _ := dial(t, addr, c, srv); s.err == nil || !strings.Contains(s.err.Error(), "expired") {
		t.Fatalf("server error = %v, want the expired certificate refused", s.err)
	}
}
