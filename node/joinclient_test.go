package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlog/txlog/internal/certgen"
)

func TestJoinClientConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca, err := certgen.NewCA("join-ca")
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := ca.WriteFile(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(certgen.Options{CommonName: "n4", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := leaf.WriteFiles(dir, "n4")
	if err != nil {
		t.Fatal(err)
	}

	cc, err := joinClientConfig(Config{Join: "https://127.0.0.1:1", JoinTokenFile: write("tok", "txlog_abc\n"),
		PeerTLSCertFile: files.Cert, PeerTLSKeyFile: files.Key, PeerTLSCAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	if cc.Token != "txlog_abc" || cc.TLS == nil || cc.TLS.RootCAs == nil || len(cc.TLS.Certificates) != 1 {
		t.Fatalf("config = token %q, TLS %+v", cc.Token, cc.TLS)
	}
	plain, err := joinClientConfig(Config{Join: "http://127.0.0.1:1"})
	if err != nil || plain.Token != "" || plain.TLS != nil {
		t.Fatalf("plain join: %+v, %v", plain, err)
	}

	for name, c := range map[string]Config{
		"missing token file": {Join: "http://x:1", JoinTokenFile: filepath.Join(dir, "nope")},
		"empty token file":   {Join: "http://x:1", JoinTokenFile: write("empty", "\n")},
		"two tokens":         {Join: "http://x:1", JoinTokenFile: write("two", "a b\n")},
		"CA not PEM":         {Join: "https://x:1", JoinCAFile: write("bad.crt", "not pem")},
	} {
		if _, err := joinClientConfig(c); err == nil || !strings.Contains(err.Error(), "join") {
			t.Errorf("%s: err = %v, want a join error", name, err)
		}
	}
}
