package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/internal/certgen"
)

// testPKI is a CA, a server certificate for 127.0.0.1 and a client
// certificate, written to a test directory.
type testPKI struct {
	ca           *certgen.CA
	caFile       string
	server       *certgen.Leaf
	clientFiles  certgen.Files
	rogueCAFile  string
	rogueClient  certgen.Files
	serverConfig func(mutual bool) *tls.Config
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	ca, err := certgen.NewCA("test ca")
	if err != nil {
		t.Fatal(err)
	}
	rogue, err := certgen.NewCA("rogue ca")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue(certgen.Options{CommonName: "n1", Hosts: []string{"127.0.0.1", "localhost"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.Issue(certgen.Options{CommonName: "alice", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	rcli, err := rogue.Issue(certgen.Options{CommonName: "alice", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{ca: ca, server: srv}
	if p.caFile, err = ca.WriteFile(dir, "ca"); err != nil {
		t.Fatal(err)
	}
	if p.rogueCAFile, err = rogue.WriteFile(dir, "rogue"); err != nil {
		t.Fatal(err)
	}
	if p.clientFiles, err = cli.WriteFiles(dir, "client"); err != nil {
		t.Fatal(err)
	}
	if p.rogueClient, err = rcli.WriteFiles(dir, "rogue-client"); err != nil {
		t.Fatal(err)
	}
	cert, err := srv.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	p.serverConfig = func(mutual bool) *tls.Config {
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if mutual {
			cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool()
		}
		return cfg
	}
	return p
}

// tlsNode serves h over TLS (mutual when asked) until the test ends.
func tlsNode(t *testing.T, p *testPKI, mutual bool, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = p.serverConfig(mutual)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestTLSConfig(t *testing.T) {
	p := newTestPKI(t)
	for _, tc := range []struct {
		name          string
		ca, cert, key string
		wantNil       bool
		wantErr       bool
	}{
		{name: "none", wantNil: true},
		{name: "ca only", ca: p.caFile},
		{name: "ca and client cert", ca: p.caFile, cert: p.clientFiles.Cert, key: p.clientFiles.Key},
		{name: "cert without key", cert: p.clientFiles.Cert, wantErr: true},
		{name: "key without cert", key: p.clientFiles.Key, wantErr: true},
		{name: "missing ca file", ca: p.caFile + ".missing", wantErr: true},
		{name: "ca file not PEM", ca: p.clientFiles.Key + "x", wantErr: true},
		{name: "key is not the cert's", cert: p.clientFiles.Cert, key: p.rogueClient.Key, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := TLSConfig(tc.ca, tc.cert, tc.key)
			if (err != nil) != tc.wantErr {
				t.Fatalf("TLSConfig() error = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && (cfg == nil) != tc.wantNil {
				t.Fatalf("TLSConfig() = %v, want nil %v", cfg, tc.wantNil)
			}
		})
	}
}

func TestClientMutualTLS(t *testing.T) {
	p := newTestPKI(t)
	b := &fakeBackend{SubmitFunc: func(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error) {
		return wire.TxResult{TxID: testID, Status: wire.StatusCommitted}, nil
	}}
	srv := tlsNode(t, p, true, api.NewServer(api.Config{}, b))
	for _, tc := range []struct {
		name          string
		ca, cert, key string
		wantOK        bool
	}{
		{name: "our CA and a client cert", ca: p.caFile, cert: p.clientFiles.Cert, key: p.clientFiles.Key, wantOK: true},
		{name: "no client cert", ca: p.caFile},
		{name: "client cert of a rogue CA", ca: p.caFile, cert: p.rogueClient.Cert, key: p.rogueClient.Key},
		{name: "server cert not trusted", ca: p.rogueCAFile, cert: p.clientFiles.Cert, key: p.clientFiles.Key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := TLSConfig(tc.ca, tc.cert, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			c := NewClient(ClientConfig{Endpoints: []string{srv.URL}, TLS: cfg, Timeout: 30 * time.Second, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
			res, err := c.Submit(t.Context(), putK, wire.SubmitOptions{})
			if tc.wantOK && (err != nil || res.Status != wire.StatusCommitted) {
				t.Fatalf("Submit() = %+v, %v; want committed", res, err)
			}
			if _, ok := errors.AsType[*HandshakeError](err); !tc.wantOK && !ok {
				t.Fatalf("Submit() = %+v, %v; want a *HandshakeError at once", res, err)
			}
		})
	}
}

// authLog records the Authorization header of every request.
type authLog struct {
	mu   sync.Mutex
	seen []string // "METHOD PATH AUTH"
}

func (l *authLog) add(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
}

func (l *authLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.seen
	l.seen = nil
	return s
}

// TestClientTokenOnEveryRequest sends every kind of request to two TLS nodes
// that refuse them all: each must carry the token, come back as a *wire.Error
// with the code, and not be retried on the other node.
func TestClientTokenOnEveryRequest(t *testing.T) {
	p := newTestPKI(t)
	tlsCfg, err := TLSConfig(p.caFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		status int
		body   string
		code   string
	}{
		{"forbidden", http.StatusForbidden, `{"error":{"code":"forbidden","message":"role read may not write"}}`, wire.CodeForbidden},
		{"unauthenticated", http.StatusUnauthorized, `{"error":{"code":"unauthenticated","message":"no credential"}}`, wire.CodeUnauthenticated},
		{"401 without a JSON body", http.StatusUnauthorized, "go away", wire.CodeUnauthenticated},
		{"403 without a JSON body", http.StatusForbidden, "", wire.CodeForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log authLog
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				log.add(r)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			})
			a, b := tlsNode(t, p, false, h), tlsNode(t, p, false, h)
			c := NewClient(ClientConfig{Endpoints: []string{a.URL, b.URL}, TLS: tlsCfg, Token: "s3cret", Timeout: 2 * time.Second, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
			ctx := t.Context()
			calls := map[string]func() error{
				"Submit":             func() error { _, err := c.Submit(ctx, putK, wire.SubmitOptions{}); return err },
				"SubmitBatch":        func() error { _, err := c.SubmitBatch(ctx, []wire.TxRequest{putK}, wire.SubmitOptions{}); return err },
				"Get":                func() error { _, err := c.Get(ctx, "k", wire.ReadOptions{}); return err },
				"GetFrom":            func() error { _, err := c.GetFrom(ctx, a.URL, "k", wire.ReadOptions{}); return err },
				"Tx":                 func() error { _, err := c.Tx(ctx, testID, 0); return err },
				"TxByIdempotencyKey": func() error { _, err := c.TxByIdempotencyKey(ctx, "key", 0); return err },
				"Log":                func() error { _, err := c.Log(ctx, 1, 10); return err },
				"LogWait":            func() error { _, err := c.LogWait(ctx, 1, 10, "", time.Second); return err },
				"Follow":             func() error { return c.Follow(ctx, 1, "", func(wire.LogEntry) error { return nil }) },
				"AcquireLease":       func() error { _, err := c.AcquireLease(ctx, "l", "h", time.Second); return err },
				"ReleaseLease":       func() error { return c.ReleaseLease(ctx, "l", "h", 1) },
				"Lease":              func() error { _, err := c.Lease(ctx, "l", 0, 0); return err },
				"Leases":             func() error { _, err := c.Leases(ctx); return err },
				"CommitOffset":       func() error { _, err := c.CommitOffset(ctx, "g", 1, nil); return err },
				"Consumer":           func() error { _, err := c.Consumer(ctx, "g"); return err },
				"Consumers":          func() error { _, err := c.Consumers(ctx); return err },
				"Cluster":            func() error { _, err := c.Cluster(ctx); return err },
				"ClusterFrom":        func() error { _, err := c.ClusterFrom(ctx, a.URL); return err },
				"Join":               func() error { _, err := c.Join(ctx, wire.JoinRequest{ID: "n4", RaftAddr: "127.0.0.1:1"}); return err },
				"Remove":             func() error { return c.Remove(ctx, "n3") },
				"TransferLeadership": func() error { _, err := c.TransferLeadership(ctx, wire.TransferRequest{}); return err },
			}
			for name, call := range calls {
				err := call()
				var we *wire.Error
				if !errors.As(err, &we) || we.Code != tc.code {
					t.Errorf("%s() = %v, want a *wire.Error with code %s", name, err, tc.code)
				}
				seen := log.take()
				if len(seen) != 1 {
					t.Errorf("%s: requests %q, want exactly one (no retry)", name, seen)
				}
				for _, s := range seen {
					if want := "Bearer s3cret"; len(s) < len(want) || s[len(s)-len(want):] != want {
						t.Errorf("%s: request %q, want Authorization %q", name, s, want)
					}
				}
			}
		})
	}
}
