package node

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/api/apitest"
	"github.com/txlog/txlog/api/fastpath"
	"github.com/txlog/txlog/internal/certgen"
)

// clientTLSNode is a Node with only what the client port's TLS needs, on
// files of a CA it returns with a client configuration that the node accepts.
func clientTLSNode(t *testing.T) (*Node, *tls.Config) {
	t.Helper()
	ca, err := certgen.NewCA("ca")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Issue(certgen.Options{CommonName: "n1", Hosts: []string{"127.0.0.1"}, Server: true})
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.Issue(certgen.Options{CommonName: "client", Client: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := srv.WriteFiles(dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := ca.WriteFile(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{cfg: Config{TLSCertFile: files.Cert, TLSKeyFile: files.Key, TLSClientCAFile: caFile},
		log: slog.New(slog.DiscardHandler)}
	t.Cleanup(n.closeClientTLS)
	cert, _ := cli.TLSCertificate()
	return n, &tls.Config{RootCAs: ca.Pool(), Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"}
}

// TestClientTLSHandedOverRequests: a request the fast path hands to net/http
// reaches the handler with r.TLS set, the client's chain verified.
func TestClientTLSHandedOverRequests(t *testing.T) {
	n, client := clientTLSNode(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := n.listenClientTLS(tcp)
	if err != nil {
		t.Fatal(err)
	}
	var withTLS, without atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && r.TLS.VerifiedChains[0][0].Subject.CommonName == "client" {
			withTLS.Add(1)
		} else {
			without.Add(1)
		}
		io.WriteString(w, "ok")
	}), ReadHeaderTimeout: time.Second}
	n.serveClientTLS(srv)
	fl := fastpath.NewFastListener(api.NewServer(api.Config{}, &apitest.Backend{}), ln, fastpath.FastConfig{})
	go srv.Serve(fl)
	defer func() { srv.Close(); fl.CloseAll() }()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: client}}
	for range 2 {
		res, err := hc.Get("https://" + tcp.Addr().String() + "/v1/kv/k")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	if withTLS.Load() != 2 || without.Load() != 0 {
		t.Fatalf("requests with r.TLS: %d, without: %d; want 2 and 0", withTLS.Load(), without.Load())
	}
}

// TestClientTLSWaitingHandOff: the waiting server of a node that waits for
// its peers serves TLS on the client listener, and hands it over.
func TestClientTLSWaitingHandOff(t *testing.T) {
	n, client := clientTLSNode(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	ln, err := n.listenClientTLS(tcp)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: client, DisableKeepAlives: true}}
	url := "https://" + tcp.Addr().String() + "/readyz"
	ws := serveWaiting(ln, func() string { return "waiting" })
	res, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET while waiting = %d, want 503", res.StatusCode)
	}
	handed := make(chan struct{})
	go func() { ws.handOff(); close(handed) }()
	select {
	case <-handed:
	case <-time.After(5 * time.Second):
		t.Fatal("handOff() did not return within 5s")
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	go srv.Serve(ln)
	defer srv.Close()
	res, err = hc.Get(url)
	if err != nil {
		t.Fatalf("GET after the hand-off: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET after the hand-off = %d, want 200", res.StatusCode)
	}
}

// TestReloadKeepsOldOnBadFile: Reload (SIGHUP) of a half-written certificate
// fails and the node goes on with the certificate it had; without client TLS
// Reload has nothing to do.
func TestReloadKeepsOldOnBadFile(t *testing.T) {
	if err := (&Node{log: slog.New(slog.DiscardHandler)}).Reload(); err != nil {
		t.Fatalf("Reload() without client TLS = %v, want nil", err)
	}
	n, _ := clientTLSNode(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	if _, err := n.listenClientTLS(tcp); err != nil {
		t.Fatal(err)
	}
	if err := n.Reload(); err != nil {
		t.Fatalf("Reload() of good files = %v", err)
	}
	before := n.clientTLS.Certificate()
	b, err := os.ReadFile(n.cfg.TLSCertFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n.cfg.TLSCertFile, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := n.Reload(); err == nil {
		t.Fatal("Reload() of a half-written certificate = nil, want an error")
	}
	if n.clientTLS.Certificate() != before {
		t.Fatal("the certificate in use changed after a failed reload")
	}
}
