package launcher

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/auth/token"
)

// TestSecureCluster starts a secured cluster of fake nodes that serve HTTPS,
// require the cluster's client certificate and check the auth file: the
// launcher's own polls get through, a client without the certificate or
// without a token does not, and a token added to the auth file works.
func TestSecureCluster(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	c := startFakeCluster(t, ctx, ClusterConfig{Secure: &SecureConfig{MutualTLS: true}})
	if _, err := c.Leader(ctx); err != nil {
		failWithLogs(t, c, "Leader() = %v", err)
	}
	if err := c.WaitReady(ctx); err != nil {
		failWithLogs(t, c, "WaitReady() = %v", err)
	}
	sec := c.Security()
	if sec == nil {
		t.Fatal("Security() = nil for a secured cluster")
	}
	for _, u := range c.HTTPAddrs() {
		if !strings.HasPrefix(u, "https://") {
			t.Errorf("HTTPAddrs() has %s, want https URLs", u)
		}
	}
	for _, f := range []string{sec.CAFile, sec.ClientCertFile, sec.ClientKeyFile, sec.AuthFile} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("file of the secured cluster: %v", err)
		}
	}
	b, err := os.ReadFile(sec.AuthFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), sec.AdminToken) || !strings.Contains(string(b), token.Hash(sec.AdminToken)) {
		t.Errorf("auth file:\n%s\nwant the admin token's hash, never the token", b)
	}
	if p := c.Node("n1"); !strings.Contains(strings.Join(p.Args(), " "), "--tls-client-ca-file="+sec.CAFile) {
		t.Errorf("n1's args %q: want --tls-client-ca-file (MutualTLS)", p.Args())
	}

	get := func(cfg *tls.Config, token string) (int, error) {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL("n1")+"/v1/cluster", nil)
		if err != nil {
			return 0, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	noCert := sec.TLSConfig()
	noCert.Certificates = nil
	extra, err := sec.AddToken("read", "reader", "app/")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		cfg   *tls.Config
		token string
		want  int // 0: no answer
	}{
		{"client cert and admin token", sec.TLSConfig(), sec.AdminToken, http.StatusOK},
		{"client cert and an added token", sec.TLSConfig(), extra, http.StatusOK},
		{"client cert, no token", sec.TLSConfig(), "", http.StatusUnauthorized},
		{"client cert, wrong token", sec.TLSConfig(), "nope", http.StatusUnauthorized},
		{"no client cert", noCert, sec.AdminToken, 0},
		{"the system's roots", nil, sec.AdminToken, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := get(tc.cfg, tc.token)
			if got != tc.want {
				t.Errorf("GET /v1/cluster = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	if !strings.Contains(mustRead(t, sec.AuthFile), "sha256:"+token.Hash(extra)+" read reader prefix=app/") {
		t.Errorf("auth file after AddToken:\n%s", mustRead(t, sec.AuthFile))
	}
	if err := sec.AddAuthLine("two\nlines"); err == nil {
		t.Error("AddAuthLine(two lines) = nil, want an error")
	}
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSecureNodeArgs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        SecureConfig
		want, not  []string
		wantScheme bool // https
	}{
		{"everything", SecureConfig{}, []string{"--auth-file=", "--tls-cert-file=", "--tls-key-file=", "--peer-tls-cert-file=", "--peer-tls-ca-file="}, []string{"--tls-client-ca-file="}, true},
		{"mutual", SecureConfig{MutualTLS: true}, []string{"--tls-client-ca-file=", "--peer-tls-cert-file="}, nil, true},
		{"tokens over plain HTTP", SecureConfig{NoClientTLS: true, NoPeerTLS: true, MutualTLS: true}, []string{"--auth-file="}, []string{"--tls-cert-file=", "--tls-client-ca-file=", "--peer-tls-cert-file="}, false},
		{"no peer TLS", SecureConfig{NoPeerTLS: true}, []string{"--tls-cert-file="}, []string{"--peer-tls-cert-file="}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newSecurity(t.TempDir(), []string{"n1"}, []string{"127.0.0.1"}, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			args := strings.Join(s.nodeArgs("n1"), " ")
			for _, w := range tc.want {
				if !strings.Contains(args, w) {
					t.Errorf("nodeArgs() = %s, want %s", args, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(args, n) {
					t.Errorf("nodeArgs() = %s, want no %s", args, n)
				}
			}
			if s.ClientTLS != tc.wantScheme {
				t.Errorf("ClientTLS = %v, want %v", s.ClientTLS, tc.wantScheme)
			}
		})
	}
}
