package main

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/internal/certgen"
)

// tlsFiles are a CA file and a client certificate's files, and the TLS
// configuration of a server that requires that client certificate.
type tlsFiles struct {
	ca, cert, key string
	server        *tls.Config
}

func newTLSFiles(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	ca, err := certgen.NewCA("cli test ca")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue(certgen.Options{CommonName: "n1", Hosts: []string{"127.0.0.1"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.Issue(certgen.Options{CommonName: "cli", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	var f tlsFiles
	if f.ca, err = ca.WriteFile(dir, "ca"); err != nil {
		t.Fatal(err)
	}
	files, err := cli.WriteFiles(dir, "client")
	if err != nil {
		t.Fatal(err)
	}
	f.cert, f.key = files.Cert, files.Key
	cert, err := srv.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	f.server = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	return f
}

// TestCommandsSendCredentials runs every command that talks to nodes against
// a mutual-TLS server that wants a token: with the credentials from the
// environment or the flags each request carries the token, and a wrong token
// makes the command fail with the server's "unauthenticated".
func TestCommandsSendCredentials(t *testing.T) {
	f := newTLSFiles(t)
	var mu sync.Mutex
	var seen []string
	inner := api.NewServer(api.Config{}, logBackend(new(int), new(sync.Mutex)))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"unauthenticated","message":"no valid credential"}}`))
			return
		}
		inner.ServeHTTP(w, r)
	})
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = f.server
	srv.StartTLS()
	t.Cleanup(srv.Close)
	hostPort := strings.TrimPrefix(srv.URL, "https://")

	commands := [][]string{
		{"submit", "k", "v"},
		{"get", "k"},
		{"status"},
		{"log", "--limit", "1"},
		{"lease", "list"},
		{"consumers"},
		{"exclusive", "--lease", "l", "--ttl", "5s", "--", "true"},
	}
	for _, args := range commands {
		t.Run(args[0], func(t *testing.T) {
			env := map[string]string{targetsEnv: hostPort, tokenEnv: "wrong", caCertEnv: f.ca, certEnv: f.cert, keyEnv: f.key}
			mu.Lock()
			seen = nil
			mu.Unlock()
			r := runCLI(t, testCtx(t), env, args...)
			if r.code != 1 || !strings.Contains(r.stderr+r.stdout, "unauthenticated") { // status prints each node's error
				t.Errorf("%v with a wrong token: exit %d, stderr %q; want 1 and unauthenticated", args, r.code, r.stderr)
			}
			// The flags win over the environment.
			flags := append([]string{args[0], "--token", "good", "--cacert", f.ca}, args[1:]...)
			// The fake has no leases: exclusive retries until this context ends.
			ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Second)
			defer cancel()
			r = runCLI(t, ctx, env, flags...)
			if strings.Contains(r.stderr+r.stdout, "unauthenticated") || strings.Contains(r.stderr, "TLS") {
				t.Errorf("%v with the right token: exit %d, stderr %q; want no credential error", flags, r.code, r.stderr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 {
				t.Fatalf("%v: the server saw no request", args)
			}
			for _, s := range seen {
				if !strings.HasSuffix(s, "Bearer wrong") && !strings.HasSuffix(s, "Bearer good") {
					t.Errorf("%v: request %q without the token", args, s)
				}
			}
		})
	}
}

func TestCredentialFlagsBad(t *testing.T) {
	f := newTLSFiles(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"cert without key", []string{"get", "--targets", "https://127.0.0.1:1", "--cert", f.cert, "k"}},
		{"missing CA file", []string{"get", "--targets", "https://127.0.0.1:1", "--cacert", f.ca + ".missing", "k"}},
		{"token with a space", []string{"get", "--targets", "https://127.0.0.1:1", "--token", "a b", "k"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, testCtx(t), nil, tc.args...)
			if r.code != 2 {
				t.Errorf("%v: exit %d, stderr %q; want 2 (a bad command line)", tc.args, r.code, r.stderr)
			}
		})
	}
}
