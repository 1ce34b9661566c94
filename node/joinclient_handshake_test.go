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

	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/internal/certgen"
)

// TestJoinClientHandshake: over a real mutual TLS handshake, the join
// presents the token of --join-token-file and the peer certificate to an
// https:// member it verifies with --join-ca-file (else the peer CA), and
// refuses a member another CA signed.
func TestJoinClientHandshake(t *testing.T) {
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
	if err := os.WriteFile(tokenFile, []byte("  txlog_secret \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := Config{Join: srv.URL, JoinTokenFile: tokenFile, JoinCAFile: caFile, PeerTLSCertFile: peer.Cert, PeerTLSKeyFile: peer.Key}
	for _, tc := range []struct {
		name   string
		cfg    func(Config) Config
		wantCN string
	}{
		{"the join CA", func(c Config) Config { return c }, "n4"},
		{"the peer CA when no join CA", func(c Config) Config {
			c.JoinCAFile, c.PeerTLSCAFile = "", caFile
			return c
		}, "n4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc, err := joinClientConfig(tc.cfg(base))
			if err != nil {
				t.Fatal(err)
			}
			c := client.NewClient(cc)
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
		cc, err := joinClientConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c := client.NewClient(cc)
		if _, err := c.ClusterFrom(context.Background(), srv.URL); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("ClusterFrom() of a member another CA signed = %v, want a certificate error", err)
		}
	})
}
