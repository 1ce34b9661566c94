package api

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
)

// BenchmarkTxStream: requests of one client stream, 256 in flight, against
// a backend that commits at once: the server's cost per request (reading,
// the POST /v1/tx handler, the answer's coalesced write) and the client's
// reading of the answers.
func BenchmarkTxStream(b *testing.B) {
	benchTxStream(b, Config{}, http.Header{})
}

// BenchmarkTxStreamAuth is BenchmarkTxStream with auth on: an auth file of
// 16 token lines, the stream's credential the last. Each request checks
// that the credential still holds (credentialHolds).
func BenchmarkTxStreamAuth(b *testing.B) {
	var lines []string
	for i := range 16 {
		lines = append(lines, auth.Line(auth.HashToken(fmt.Sprintf("tok%d", i)), auth.RoleWrite, fmt.Sprintf("w%d", i), nil))
	}
	path := filepath.Join(b.TempDir(), "auth")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := auth.Open(auth.Config{File: path})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	benchTxStream(b, Config{Auth: f}, http.Header{"Authorization": {"Bearer tok15"}})
}

func benchTxStream(b *testing.B, cfg Config, hdr http.Header) {
	sb := newStreamBackend()
	ts, _ := startStreamServer(b, cfg, sb)
	c := dialStream(b, ts, hdr)
	if c.resp.StatusCode != http.StatusSwitchingProtocols {
		b.Fatalf("upgrade = %d", c.resp.StatusCode)
	}
	body := txBody("k")
	const window = 256
	var out []byte
	b.ReportAllocs()
	b.ResetTimer()
	sent, got := 0, 0
	for got < b.N {
		out = out[:0]
		for sent < b.N && sent-got < window {
			sent++
			out = wire.AppendTxStreamRequest(out, uint64(sent), "", body)
		}
		if len(out) > 0 {
			c.send(out)
		}
		for sent-got >= window || (sent == b.N && got < b.N) {
			if a := c.mustRead(); a.status != http.StatusOK {
				b.Fatalf("answer %d = %d %s", a.id, a.status, a.body)
			}
			got++
			if sent < b.N && sent-got < window/2 {
				break
			}
		}
	}
}
