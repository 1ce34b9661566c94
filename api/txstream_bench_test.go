package api

import (
	"net/http"
	"testing"

	"github.com/txlog/txlog/api/wire"
)

// BenchmarkTxStream: requests of one client stream, 256 in flight, against
// a backend that commits at once: the server's cost per request (reading,
// the POST /v1/tx handler, the answer's coalesced write) and the client's
// reading of the answers.
func BenchmarkTxStream(b *testing.B) {
	sb := newStreamBackend()
	ts, _ := startStreamServer(b, Config{}, sb)
	c := dialStream(b, ts, http.Header{})
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
