package node

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/txlog/txlog/internal/certgen"
	"github.com/txlog/txlog/peerlink"
)

func TestParseSecrets(t *testing.T) {
	long := strings.Repeat("s", minSecretBytes)
	for _, tc := range []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{"one", long + "\n", []string{long}, ""},
		{"trimmed, empty lines ignored", "\n  " + long + "a\t\r\n\n" + long + "b\n", []string{long + "a", long + "b"}, ""},
		{"no newline at the end", long, []string{long}, ""},
		{"empty", "", nil, "no secret"},
		{"blank lines only", "\n \n\t\n", nil, "no secret"},
		{"too short", long + "\nshort\n", nil, "line 2"},
		{"too long a file", strings.Repeat(long+"\n", maxSecretFileBytes/len(long)+1), nil, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseSecrets([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseSecrets() = %q, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("parseSecrets() = %q, %v; want %q", got, err, tc.want)
			}
			for i := range got {
				if string(got[i]) != tc.want[i] {
					t.Fatalf("parseSecrets()[%d] = %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// FuzzParseSecrets: any file parses to secrets of at least minSecretBytes
// each, without surrounding space, or to an error; never a panic.
func FuzzParseSecrets(f *testing.F) {
	f.Add([]byte("0123456789abcdef\n"))
	f.Add([]byte("\n  0123456789abcdefg \r\nnew-secret-0123456789\n"))
	f.Add([]byte("short\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseSecrets(b)
		if err != nil {
			return
		}
		if len(got) == 0 {
			t.Fatalf("parseSecrets(%q) = none, nil", b)
		}
		for _, s := range got {
			if len(s) < minSecretBytes || !bytes.Equal(s, bytes.TrimSpace(s)) || bytes.Contains(s, []byte("\n")) {
				t.Fatalf("parseSecrets(%q) gave %q", b, s)
			}
		}
	})
}

// TestSecretFileReloads: a change is picked up by the poll, a broken file
// keeps the secrets in use, and reload reports it.
func TestSecretFileReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peer.secret")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("first-secret-0123456789\n")
	s, err := openSecretFile(path, 10*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	wait := func(want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for string(s.secrets()[0]) != want {
			if time.Now().After(deadline) {
				t.Fatalf("secrets()[0] = %q, want %q", s.secrets()[0], want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	wait("first-secret-0123456789")
	write("second-secret-0123456789\nfirst-secret-0123456789\n")
	wait("second-secret-0123456789")
	write("short\n")
	if err := s.reload(); err == nil {
		t.Fatal("reload() of a broken file = nil, want an error")
	}
	if got := string(s.secrets()[0]); got != "second-secret-0123456789" {
		t.Fatalf("after a broken file secrets()[0] = %q, want the old one", got)
	}
	if _, err := openSecretFile(path, 0, nil); err == nil {
		t.Fatal("openSecretFile() of a broken file = nil, want an error")
	}
	s.close()
	s.close()
}

// TestPeerSecurity: the config's files reach the link's config, and
// reloadPeer reports a file that does not load while the link keeps what it
// had.
func TestPeerSecurity(t *testing.T) {
	dir := t.TempDir()
	ca, err := certgen.NewCA("peers")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue(certgen.Options{CommonName: "n1", Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := leaf.WriteFiles(dir, "n1")
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := ca.WriteFile(dir, "ca")
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "peer.secret")
	if err := os.WriteFile(secret, []byte("a-secret-of-enough-bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ps, err := openPeerSecurity(Config{}); ps != nil || err != nil {
		t.Fatalf("openPeerSecurity(no files) = %v, %v; want nil, nil", ps, err)
	}
	if err := (*peerSecurity)(nil).reloadPeer(); err != nil {
		t.Fatalf("nil reloadPeer() = %v", err)
	}
	ps, err := openPeerSecurity(Config{PeerTLSCertFile: files.Cert, PeerTLSKeyFile: files.Key, PeerTLSCAFile: caFile,
		PeerTLSMode: PeerTLSBoth, PeerSecretFile: secret})
	if err != nil {
		t.Fatalf("openPeerSecurity() = %v", err)
	}
	defer ps.close()
	var lc peerlink.Config
	ps.linkConfig(&lc)
	if lc.TLSMode != peerlink.TLSBoth || lc.ServerTLS == nil || lc.ClientTLS == nil || lc.Secrets == nil {
		t.Fatalf("linkConfig() = %+v, want mode both, TLS and secrets", lc)
	}
	if got := lc.ClientTLS("127.0.0.1:7000").ServerName; got != "127.0.0.1" {
		t.Fatalf("ClientTLS().ServerName = %q, want the host dialled", got)
	}
	if err := ps.reloadPeer(); err != nil {
		t.Fatalf("reloadPeer() = %v", err)
	}
	if err := os.WriteFile(secret, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ps.reloadPeer(); err == nil {
		t.Fatal("reloadPeer() with a broken secret file = nil, want an error")
	}
	if got := string(lc.Secrets()[0]); got != "a-secret-of-enough-bytes" {
		t.Fatalf("Secrets()[0] after a broken reload = %q, want the old one", got)
	}
	if err := os.WriteFile(secret, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openPeerSecurity(Config{PeerSecretFile: secret}); err == nil {
		t.Fatal("openPeerSecurity() with a short secret = nil, want an error: the node refuses to start")
	}
	if err := ps.close(); err != nil {
		t.Fatalf("close() = %v", err)
	}
	ps.close()
}
