package fastpath

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkFastSubmit is one keep-alive connection's POST /v1/tx through the
// fast path, with a 256-byte value and a backend that answers at once: the
// API's own cost per write (the client's reading of each answer included).
func BenchmarkFastSubmit(b *testing.B) {
	p := newFastPair(b, testConfig, FastConfig{}, okBackend())
	c, err := net.Dial("tcp", p.fast)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte(post("/v1/tx", "", `{"idempotency_key":"order-42","ops":[{"op":"put","key":"acct/alice","value":"`+strings.Repeat("x", 256)+`"}]}`))
	br := bufio.NewReader(c)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkSubmitTLS is BenchmarkFastSubmit over mutual TLS, through the
// fast path and through net/http alone: what each costs with TLS.
func BenchmarkSubmitTLS(b *testing.B) {
	p := newTLSPair(b, FastConfig{})
	for _, c := range []struct{ name, addr string }{{"fast path", p.fast}, {"net/http", p.plain}} {
		b.Run(c.name, func(b *testing.B) {
			conn, err := tls.Dial("tcp", c.addr, p.client)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			req := []byte(post("/v1/tx", "", `{"idempotency_key":"order-42","ops":[{"op":"put","key":"acct/alice","value":"`+strings.Repeat("x", 256)+`"}]}`))
			br := bufio.NewReader(conn)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
