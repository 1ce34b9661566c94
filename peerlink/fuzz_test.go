package peerlink

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func headerSeeds(f *testing.F) {
	for _, h := range []Header{
		{Kind: KindRaft, Cluster: ClusterID{1, 2, 3}, Node: "n1"},
		{Kind: KindStream, Node: "node-with-a-long-name"},
		{Kind: KindHTTP, Cluster: ClusterID{0xff}},
		{Kind: KindBootstrap, Node: "n2"},
	} {
		f.Add(h.Append(nil))
	}
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte("TXLP\x01X"))
	f.Add(append([]byte("TXLP\x01R"), make([]byte, 17)...))
	f.Add(append(append([]byte("TXLP\x01R"), make([]byte, 16)...), 200))
}

// FuzzReadHeader: any bytes give a header that encodes back to the bytes it
// read, or an error; never a panic.
func FuzzReadHeader(f *testing.F) {
	headerSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		h, err := ReadHeader(r)
		if err != nil {
			if !errors.Is(err, ErrBadHeader) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("ReadHeader() = %v, want ErrBadHeader or io.ErrUnexpectedEOF", err)
			}
			return
		}
		used := len(b) - r.Len()
		if got := h.Append(nil); !bytes.Equal(got, b[:used]) {
			t.Fatalf("Append(ReadHeader(%x)) = %x", b[:used], got)
		}
	})
}

// FuzzMux feeds a link's acceptor any first bytes: it answers a valid header
// of a served kind with OK and hands the connection over, anything else with
// a refusal or nothing, and never panics.
func FuzzMux(f *testing.F) {
	headerSeeds(f)
	f.Add(append(Header{Kind: KindStream, Cluster: ClusterID{1}, Node: "n2"}.Append(nil), "trailing bytes"...))
	l := New(&idleListener{done: make(chan struct{})}, Config{
		NodeID:        "n1",
		ClusterID:     func() ClusterID { return ClusterID{1} },
		Bootstrap:     func(string) []byte { return []byte("{}") },
		HeaderTimeout: 100 * time.Millisecond,
	})
	defer l.Close()
	for _, k := range []byte{KindRaft, KindStream} {
		ln := l.Listener(k)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		client, server := net.Pipe()
		defer client.Close()
		go func() {
			client.SetDeadline(time.Now().Add(2 * time.Second))
			client.Write(b)
		}()
		done := make(chan struct{})
		go func() { l.serve(server); close(done) }()
		client.SetReadDeadline(time.Now().Add(2 * time.Second))
		answer, _ := io.ReadAll(client)
		client.Close()
		<-done
		h, err := ReadHeader(bytes.NewReader(b))
		switch {
		case err != nil && errors.Is(err, ErrBadHeader):
			if len(answer) != answerBytes || answer[0] != StatusBadHeader {
				t.Fatalf("answer to %x = %x, want status %d", b, answer, StatusBadHeader)
			}
		case err != nil: // cut short: closed at the header timeout, no answer
			if len(answer) != 0 {
				t.Fatalf("answer to a short header %x = %x, want none", b, answer)
			}
		case len(answer) < answerBytes:
			t.Fatalf("answer to %x = %x, want at least %d bytes", b, answer, answerBytes)
		case conflict(ClusterID{1}, h.Cluster):
			if answer[0] != StatusOtherCluster {
				t.Fatalf("answer to %x = %x, want status %d", b, answer, StatusOtherCluster)
			}
		case h.Kind == KindHTTP || (h.Kind != KindBootstrap && h.Cluster == ClusterID{}):
			if answer[0] != StatusRefused {
				t.Fatalf("answer to %x = %x, want status %d", b, answer, StatusRefused)
			}
		default:
			if answer[0] != StatusOK {
				t.Fatalf("answer to %x = %x, want status %d", b, answer, StatusOK)
			}
		}
	})
}

// idleListener accepts nothing until closed: FuzzMux hands the link its
// connections itself.
type idleListener struct{ done chan struct{} }

func (l *idleListener) Accept() (net.Conn, error) { <-l.done; return nil, net.ErrClosed }
func (l *idleListener) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}
func (l *idleListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// fuzzSecret is the shared secret of the fuzz tests' links.
var fuzzSecret = []byte("fuzz-secret-0123456789")

// FuzzChallenge feeds an acceptor with a shared secret a valid header and
// then any bytes as the answer to its challenge: it never panics, never
// answers OK (no bytes prove the secret without it), and either closes or
// answers status 5 with no cluster ID.
func FuzzChallenge(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, 10))
	f.Add(make([]byte, NonceBytes+macBytes))
	f.Add(bytes.Repeat([]byte{0xff}, 2*(NonceBytes+macBytes)))
	l := New(&idleListener{done: make(chan struct{})}, Config{
		NodeID:        "n1",
		ClusterID:     func() ClusterID { return ClusterID{1} },
		Secrets:       func() [][]byte { return [][]byte{fuzzSecret} },
		HeaderTimeout: 100 * time.Millisecond,
	})
	defer l.Close()
	l.Listener(KindRaft)
	header := Header{Kind: KindRaft, Cluster: ClusterID{1}, Node: "n2"}.Append(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		client, server := net.Pipe()
		defer client.Close()
		go func() {
			client.SetDeadline(time.Now().Add(2 * time.Second))
			client.Write(append(append([]byte(nil), header...), b...))
		}()
		done := make(chan struct{})
		go func() { l.serve(server); close(done) }()
		client.SetReadDeadline(time.Now().Add(2 * time.Second))
		answer, _ := io.ReadAll(client)
		client.Close()
		<-done
		if len(answer) < 1+NonceBytes || answer[0] != StatusChallenge {
			t.Fatalf("first answer %x, want a challenge", answer)
		}
		rest := answer[1+NonceBytes:]
		want := appendAnswer(nil, StatusUnauthenticated, ClusterID{})
		if len(rest) != 0 && !bytes.Equal(rest, want) {
			t.Fatalf("answer to the proof %x = %x, want none or %x", b, rest, want)
		}
		if len(b) >= NonceBytes+macBytes && len(rest) == 0 {
			t.Fatalf("answer to a whole proof %x: none, want %x", b, want)
		}
	})
}

// FuzzDialAnswer feeds a dialer with a shared secret any answer from its
// peer: it never panics, and never takes the connection (no bytes prove
// the secret without it).
func FuzzDialAnswer(f *testing.F) {
	ok := appendAnswer(nil, StatusOK, ClusterID{1})
	f.Add(ok)
	f.Add(append(append([]byte{StatusChallenge}, make([]byte, NonceBytes)...), ok...))
	f.Add(append(append(append([]byte{StatusChallenge}, make([]byte, NonceBytes)...), ok...), make([]byte, macBytes)...))
	f.Add([]byte{StatusChallenge, 1, 2})
	f.Add(appendAnswer(nil, StatusUnauthenticated, ClusterID{}))
	f.Add(appendAnswer(nil, StatusTLSRequired, ClusterID{}))
	f.Add([]byte{0x15, 3, 3, 0, 2, 2, 40}) // a TLS alert
	l := New(&idleListener{done: make(chan struct{})}, Config{
		NodeID:        "n2",
		ClusterID:     func() ClusterID { return ClusterID{1} },
		Secrets:       func() [][]byte { return [][]byte{fuzzSecret} },
		HeaderTimeout: 100 * time.Millisecond,
	})
	defer l.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		client, server := net.Pipe()
		defer server.Close()
		go func() {
			server.SetDeadline(time.Now().Add(2 * time.Second))
			go io.Copy(io.Discard, server)
			server.Write(b)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := l.handshake(ctx, client, "fuzz", KindRaft); err == nil {
			t.Fatalf("handshake() with the answer %x = nil, want an error", b)
		}
		client.Close()
	})
}

// FuzzMuxTLS feeds an acceptor in TLS mode any first bytes: a first byte
// other than a TLS handshake record gets status 6 (TLS required) and
// nothing else; one that is goes to the TLS handshake, which these bytes
// never complete: no answer of the link follows. Never a panic.
func FuzzMuxTLS(f *testing.F) {
	headerSeeds(f)
	f.Add([]byte{tlsRecordHandshake})
	f.Add([]byte{tlsRecordHandshake, 3, 1, 0, 5, 1, 0, 0, 1, 0})
	f.Add([]byte{tlsRecordHandshake, 3, 3, 0xff, 0xff})
	p := newPKI(f, "fuzz", "n1")
	l := New(&idleListener{done: make(chan struct{})}, p.tlsConfig(f, Config{
		NodeID:        "n1",
		ClusterID:     func() ClusterID { return ClusterID{1} },
		HeaderTimeout: 100 * time.Millisecond,
	}, TLSOn, "n1", nil))
	defer l.Close()
	l.Listener(KindRaft)
	f.Fuzz(func(t *testing.T, b []byte) {
		client, server := net.Pipe()
		defer client.Close()
		go func() {
			client.SetDeadline(time.Now().Add(2 * time.Second))
			client.Write(b)
		}()
		done := make(chan struct{})
		go func() { l.serve(server); close(done) }()
		client.SetReadDeadline(time.Now().Add(2 * time.Second))
		answer, _ := io.ReadAll(client)
		client.Close()
		<-done
		switch {
		case len(b) == 0:
			if len(answer) != 0 {
				t.Fatalf("answer to nothing = %x, want none", answer)
			}
		case b[0] != tlsRecordHandshake:
			if want := appendAnswer(nil, StatusTLSRequired, ClusterID{}); !bytes.Equal(answer, want) {
				t.Fatalf("answer to plain %x = %x, want %x", b, answer, want)
			}
		default:
			// TLS records only (an alert at most), never the link's answer.
			if len(answer) > 0 && answer[0] != 0x15 && answer[0] != 0x16 {
				t.Fatalf("answer to a TLS start %x = %x, want TLS records or none", b, answer)
			}
		}
	})
}
