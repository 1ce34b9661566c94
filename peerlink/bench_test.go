package peerlink

import (
	"context"
	"io"
	"testing"
)

// BenchmarkDial measures one Dial and its acceptance: the header exchange
// alone, with a shared secret, with TLS, and with both. Compare the ratios:
// connections are long-lived (raft's pool, the propose streams, the HTTP
// client's idle ones), so this is the cost of a reconnect.
func BenchmarkDial(b *testing.B) {
	p := newPKI(b, "peers", "n1", "n2")
	secret := func() [][]byte { return [][]byte{[]byte("bench-secret-0123456789")} }
	for _, bc := range []struct {
		name    string
		tls     bool
		secrets func() [][]byte
	}{
		{"plain", false, nil},
		{"secret", false, secret},
		{"tls", true, nil},
		{"tls+secret", true, secret},
	} {
		b.Run(bc.name, func(b *testing.B) {
			acc := Config{NodeID: "n1", ClusterID: cluster(1), Secrets: bc.secrets}
			dial := Config{NodeID: "n2", ClusterID: cluster(1), Secrets: bc.secrets}
			if bc.tls {
				acc = p.tlsConfig(b, acc, TLSOn, "n1", nil)
				dial = p.tlsConfig(b, dial, TLSOn, "n2", nil)
			}
			al, err := Listen("127.0.0.1:0", acc)
			if err != nil {
				b.Fatal(err)
			}
			defer al.Close()
			ln := al.Listener(KindStream)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go func() { io.Copy(io.Discard, c); c.Close() }()
				}
			}()
			dl, err := Listen("127.0.0.1:0", dial)
			if err != nil {
				b.Fatal(err)
			}
			defer dl.Close()
			addr := al.Addr().String()
			b.ResetTimer()
			for b.Loop() {
				c, err := dl.Dial(context.Background(), addr, KindStream)
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}
