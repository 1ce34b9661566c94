package node

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlog/txlog/internal/certgen"
)

// TestJoinClient: the join presents the token of --join-token-file and the
// peer certificate to an https:// member it verifies with --join-ca-file,
// and refuses to start with a token file it cannot use.
func TestJoinClient(t *testing.T) {
	dir := t.TempDir()
	ca, err := certgen.NewCA("join-ca")
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := ca.WriteFile(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	issue := func(cn string, o certgen.Options) certgen.Files {
		o.CommonName = cn
		l, err := ca.Issue(o)
		if err != nil {
			t.Fatal(err)
		}
		f, err := l.WriteFiles(dir, cn)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	srvFiles := issue("member", certgen.Options{Hosts: []string{"127.0.0.1"}, Server: true})
	peer := issue("n4", certgen.Options{})
	port := issue("n4-port", certgen.Options{})
	srvCert, err := tls.LoadX509KeyPair(srvFiles.Cert, srvFiles.Key)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ auth, cn string }
	got := make(chan seen, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- seen{r.Header.Get("Authorization"), r.TLS.PeerCertificates[0].Subject.CommonName}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"n1","cluster_id":"6f1c0e9a4b3d2c1e0f9a8b7c6d5e4f30"}`))
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{srvCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	srv.StartTLS()
	defer srv.Close()

	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("  txlog_secret \n# not read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := Config{Join: srv.URL, JoinTokenFile: tokenFile, JoinCAFile: caFile, TLSCertFile: port.Cert, TLSKeyFile: port.Key}
	for _, tc := range []struct {
		name   string
		cfg    func(Config) Config
		wantCN string
	}{
		{"the peer certificate", func(c Config) Config {
			c.PeerTLSCertFile, c.PeerTLSKeyFile = peer.Cert, peer.Key
			return c
		}, "n4"},
		{"without peer TLS, the client port's", func(c Config) Config { return c }, "n4-port"},
		{"the peer CA when no join CA", func(c Config) Config {
			c.JoinCAFile, c.PeerTLSCAFile, c.PeerTLSCertFile, c.PeerTLSKeyFile = "", caFile, peer.Cert, peer.Key
			return c
		}, "n4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := joinClient(tc.cfg(base))
			if err != nil {
				t.Fatal(err)
			}
			st, err := c.ClusterFrom(context.Background(), srv.URL)
			if err != nil || st.ID != "n1" {
				t.Fatalf("ClusterFrom() = %+v, %v", st, err)
			}
			if s := <-got; s.auth != "Bearer txlog_secret" || s.cn != tc.wantCN {
				t.Fatalf("the member saw Authorization %q and certificate %q; want the token and %s", s.auth, s.cn, tc.wantCN)
			}
		})
	}
	t.Run("a member the CA did not sign", func(t *testing.T) {
		other, err := certgen.NewCA("other")
		if err != nil {
			t.Fatal(err)
		}
		otherFile, err := other.WriteFile(dir, "other")
		if err != nil {
			t.Fatal(err)
		}
		cfg := base
		cfg.JoinCAFile = otherFile
		c, err := joinClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ClusterFrom(context.Background(), srv.URL); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("ClusterFrom() of a member another CA signed = %v, want a certificate error", err)
		}
	})

	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n\n"), 0o600)
	notPEM := filepath.Join(dir, "not-pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	for _, bad := range []struct {
		name string
		cfg  func(Config) Config
		want string
	}{
		{"no token file", func(c Config) Config { c.JoinTokenFile = filepath.Join(dir, "missing"); return c }, "join-token-file"},
		{"an empty token file", func(c Config) Config { c.JoinTokenFile = empty; return c }, "empty"},
		{"no CA file", func(c Config) Config { c.JoinCAFile = filepath.Join(dir, "missing"); return c }, "join-ca-file"},
		{"a CA file without PEM", func(c Config) Config { c.JoinCAFile = notPEM; return c }, "no PEM"},
		{"a client key that does not fit", func(c Config) Config { c.TLSKeyFile = peer.Key; return c }, "client certificate"},
	} {
		if _, err := joinClient(bad.cfg(base)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("joinClient with %s = %v, want an error naming %q", bad.name, err, bad.want)
		}
	}
}
