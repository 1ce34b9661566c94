package tlsfiles

import (
	"bytes"
	"encoding/pem"
	"testing"
)

// FuzzParseBundle feeds parseBundle any bytes: it never panics, and what it
// accepts is PEM CERTIFICATE blocks and white space alone, at least one, each
// block a certificate that parses (the pool holds one per block).
func FuzzParseBundle(f *testing.F) {
	f.Add([]byte(""))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nMIIB"))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		pool, err := parseBundle(b)
		if err != nil {
			if pool != nil {
				t.Fatal("parseBundle returned a pool with an error")
			}
			return
		}
		rest, n := b, 0
		for {
			var blk *pem.Block
			blk, rest = pem.Decode(rest)
			if blk == nil {
				break
			}
			if blk.Type != "CERTIFICATE" {
				t.Fatalf("accepted a %q block", blk.Type)
			}
			n++
		}
		if n == 0 || len(bytes.TrimSpace(rest)) != 0 {
			t.Fatalf("accepted %q: %d blocks, %d bytes after them", b, n, len(bytes.TrimSpace(rest)))
		}
	})
}
