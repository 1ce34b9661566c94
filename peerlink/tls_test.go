package peerlink

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/internal/certgen"
)

// pki is a CA and the certificates the tests present.
type pki struct {
	ca    *certgen.CA
	leafs map[string]*certgen.Leaf // by CN
}

func newPKI(t testing.TB, name string, cns ...string) *pki {
	t.Helper()
	ca, err := certgen.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{ca: ca, leafs: map[string]*certgen.Leaf{}}
	for _, cn := range cns {
		leaf, err := ca.Issue(certgen.Options{CommonName: cn, Hosts: []string{"127.0.0.1", "localhost"}})
		if err != nil {
			t.Fatal(err)
		}
		p.leafs[cn] = leaf
	}
	return p
}

// cnCheck refuses a peer certificate whose CN is not in allowed (none: any),
// as tlsfiles' VerifyConnection does.
func cnCheck(allowed []string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(allowed) == 0 || len(cs.PeerCertificates) == 0 {
			return nil
		}
		if cn := cs.PeerCertificates[0].Subject.CommonName; !slices.Contains(allowed, cn) {
			return fmt.Errorf("peer certificate CN %q not allowed", cn)
		}
		return nil
	}
}

// tlsConfig sets cfg up for TLS mode with cn's certificate of p, trusting
// the CA of trust (p when nil).
func (p *pki) tlsConfig(t testing.TB, cfg Config, mode, cn string, trust *pki, allowed ...string) Config {
	t.Helper()
	if trust == nil {
		trust = p
	}
	cert, err := p.leafs[cn].TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	pool := trust.ca.Pool()
	cfg.TLSMode = mode
	cfg.ServerTLS = func() *tls.Config {
		return &tls.Config{
			MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
			VerifyConnection: cnCheck(allowed),
		}
	}
	cfg.ClientTLS = func(addr string) *tls.Config {
		return &tls.Config{
			MinVersion: tls.VersionTLS12,
			// Always present the certificate, whatever CAs the server
			// names: a server of another CA then refuses it as unknown.
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil },
			RootCAs:              pool, ServerName: ServerName(addr),
			VerifyConnection: cnCheck(allowed),
		}
	}
	return cfg
}

// logBuffer is a logger's output, safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// waitLog polls the log for want.
func waitLog(t *testing.T, b *logBuffer, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := b.String()
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(s, w)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %q, want it to contain %q", s, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// acceptOne accepts one connection of kind on l and returns it.
func acceptOne(l *Link, kind byte) <-chan net.Conn {
	ch := make(chan net.Conn, 1)
	ln := l.Listener(kind) // before returning: a dial that comes first is refused
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(ch)
			return
		}
		ch <- c
	}()
	return ch
}

func TestTLSModes(t *testing.T) {
	p := newPKI(t, "peers", "n1", "n2")
	for _, tc := range []struct {
		name           string
		accMode, dMode string
		wantErr        error
		wantTLS        bool
	}{
		{"tls to tls", TLSOn, TLSOn, nil, true},
		{"both to both", TLSBoth, TLSBoth, nil, true},
		{"tls to both", TLSBoth, TLSOn, nil, true},
		{"both to tls", TLSOn, TLSBoth, nil, true},
		{"plain to both", TLSBoth, TLSOff, nil, false},
		{"both to plain: falls back", TLSOff, TLSBoth, nil, false},
		{"plain to tls: refused", TLSOn, TLSOff, ErrTLSRequired, false},
		{"tls to plain: no fallback", TLSOff, TLSOn, ErrPeerNotTLS, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			acc := newLink(t, p.tlsConfig(t, Config{NodeID: "n1", ClusterID: cluster(1), Logger: logs.logger()}, tc.accMode, "n1", nil))
			got := acceptOne(acc, KindStream)
			dial := newLink(t, p.tlsConfig(t, Config{NodeID: "n2", ClusterID: cluster(1)}, tc.dMode, "n2", nil))
			c, err := dial.Dial(context.Background(), acc.Addr().String(), KindStream)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Dial() = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if tc.wantErr == ErrTLSRequired {
					waitLog(t, &logs, "plain peer connection refused", "remote=127.0.0.1")
				}
				return
			}
			defer c.Close()
			if _, isTLS := c.(*tls.Conn); isTLS != tc.wantTLS {
				t.Fatalf("dialled %T, want TLS %v", c, tc.wantTLS)
			}
			sc := <-got
			if sc == nil {
				t.Fatal("Accept() failed")
			}
			defer sc.Close()
			pc := sc.(*Conn)
			if _, isTLS := pc.Conn.(*tls.Conn); isTLS != tc.wantTLS {
				t.Fatalf("accepted %T, want TLS %v", pc.Conn, tc.wantTLS)
			}
			if pc.RemoteNode() != "n2" {
				t.Fatalf("RemoteNode() = %q, want n2", pc.RemoteNode())
			}
			// Bytes both ways.
			if _, err := c.Write([]byte("ping")); err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 4)
			if _, err := io.ReadFull(sc, b); err != nil || string(b) != "ping" {
				t.Fatalf("read %q, %v; want ping", b, err)
			}
		})
	}
}

// TestTLSRefusals: a peer whose certificate another CA signed, whose CN is
// not allowed, or that presents none, is refused and logged with its
// address and the reason, whichever side it is on.
func TestTLSRefusals(t *testing.T) {
	p := newPKI(t, "peers", "n1", "n2", "n3")
	rogue := newPKI(t, "rogue", "n2", "n1")
	noCert := func(cfg Config) Config {
		cfg.ClientTLS = func(addr string) *tls.Config {
			return &tls.Config{RootCAs: p.ca.Pool(), ServerName: ServerName(addr)}
		}
		return cfg
	}
	noClientAuth := func(cfg Config) Config {
		server := cfg.ServerTLS
		cfg.ServerTLS = func() *tls.Config {
			c := server()
			c.ClientAuth = tls.NoClientCert
			return c
		}
		return cfg
	}
	for _, tc := range []struct {
		name    string
		acc     Config
		dial    Config
		wantLog []string // on the acceptor
	}{
		{"dialer of another CA", p.tlsConfig(t, Config{NodeID: "n1"}, TLSOn, "n1", nil),
			rogue.tlsConfig(t, Config{NodeID: "n2"}, TLSOn, "n2", p),
			[]string{"peer TLS handshake refused", "unknown authority", "remote=127.0.0.1"}},
		{"dialer of another CA, acceptor in both", p.tlsConfig(t, Config{NodeID: "n1"}, TLSBoth, "n1", nil),
			rogue.tlsConfig(t, Config{NodeID: "n2"}, TLSBoth, "n2", p),
			[]string{"peer TLS handshake refused", "unknown authority"}},
		{"acceptor of another CA", rogue.tlsConfig(t, Config{NodeID: "n1"}, TLSOn, "n1", p),
			p.tlsConfig(t, Config{NodeID: "n2"}, TLSOn, "n2", nil),
			[]string{"peer TLS handshake refused"}},
		{"dialer CN not allowed", p.tlsConfig(t, Config{NodeID: "n1"}, TLSOn, "n1", nil, "n1", "n2"),
			p.tlsConfig(t, Config{NodeID: "n3"}, TLSOn, "n3", nil),
			[]string{"peer TLS handshake refused", `CN \"n3\" not allowed`}},
		{"acceptor CN not allowed", p.tlsConfig(t, Config{NodeID: "n3"}, TLSOn, "n3", nil),
			p.tlsConfig(t, Config{NodeID: "n2"}, TLSOn, "n2", nil, "n1", "n2"),
			[]string{"peer TLS handshake refused"}},
		{"acceptor that asks no certificate", noClientAuth(p.tlsConfig(t, Config{NodeID: "n1"}, TLSOn, "n1", nil)),
			p.tlsConfig(t, Config{NodeID: "n2"}, TLSOn, "n2", nil),
			[]string{"peer TLS handshake refused", "no verified certificate"}},
		{"dialer without a certificate", p.tlsConfig(t, Config{NodeID: "n1"}, TLSOn, "n1", nil),
			noCert(p.tlsConfig(t, Config{NodeID: "n2"}, TLSOn, "n2", nil)),
			[]string{"peer TLS handshake refused", "certificate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			tc.acc.ClusterID, tc.acc.Logger = cluster(1), logs.logger()
			tc.dial.ClusterID = cluster(1)
			acc := newLink(t, tc.acc)
			acc.Listener(KindRaft)
			dial := newLink(t, tc.dial)
			c, err := dial.Dial(context.Background(), acc.Addr().String(), KindRaft)
			if err == nil {
				c.Close()
				t.Fatal("Dial() = nil, want a refusal")
			}
			if errors.Is(err, ErrPeerNotTLS) {
				t.Fatalf("Dial() = %v: taken for a plain peer", err)
			}
			waitLog(t, &logs, tc.wantLog...)
		})
	}
}

// TestKindsOverTLS: Raft, HTTP (with the remote node on the request) and
// bootstrap probes work over TLS with a shared secret.
func TestKindsOverTLS(t *testing.T) {
	p := newPKI(t, "peers", "n1", "n2")
	secret := func() [][]byte { return [][]byte{[]byte("0123456789abcdef")} }
	acc := newLink(t, p.tlsConfig(t, Config{NodeID: "n1", ClusterID: cluster(1), Secrets: secret,
		Bootstrap: func(string) []byte { return []byte("{}") }}, TLSOn, "n1", nil))
	dial := newLink(t, p.tlsConfig(t, Config{NodeID: "n2", ClusterID: cluster(1), Secrets: secret}, TLSOn, "n2", nil))
	addr := acc.Addr().String()

	srv := &http.Server{
		Handler:     http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, RemoteNode(r.Context())) }),
		ConnContext: ConnContext,
	}
	go srv.Serve(acc.Listener(KindHTTP))
	t.Cleanup(func() { srv.Close() })
	resp, err := dial.HTTPClient().Get("http://" + addr + "/x")
	if err != nil {
		t.Fatalf("GET = %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "n2" {
		t.Fatalf("RemoteNode() = %q, want n2", b)
	}

	if b, err := dial.Probe(context.Background(), addr); err != nil || string(b) != "{}" {
		t.Fatalf("Probe() = %q, %v; want {}", b, err)
	}

	rl := acc.Raft()
	go func() {
		c, err := rl.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
	c, err := dial.Raft().Dial(addr, time.Second)
	if err != nil {
		t.Fatalf("Raft().Dial() = %v", err)
	}
	defer c.Close()
	c.Write([]byte("rpc"))
	got := make([]byte, 3)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "rpc" {
		t.Fatalf("echo = %q, %v", got, err)
	}
}

func TestSecrets(t *testing.T) {
	p := newPKI(t, "peers", "n1", "n2")
	sec := func(s ...string) func() [][]byte {
		return func() [][]byte {
			var out [][]byte
			for _, v := range s {
				out = append(out, []byte(v))
			}
			return out
		}
	}
	for _, tc := range []struct {
		name      string
		acc, dial func() [][]byte
		tls       bool
		wantErr   error
		wantLog   string
	}{
		{"same", sec("s1-0123456789abcdef"), sec("s1-0123456789abcdef"), false, nil, ""},
		{"same, over TLS", sec("s1-0123456789abcdef"), sec("s1-0123456789abcdef"), true, nil, ""},
		{"the acceptor's second", sec("old-0123456789abcdef", "new-0123456789abcdef"), sec("new-0123456789abcdef", "x"), false, nil, ""},
		{"wrong", sec("s1-0123456789abcdef"), sec("s2-0123456789abcdef"), false, ErrUnauthenticated, "peer shared secret refused"},
		{"wrong, over TLS", sec("s1-0123456789abcdef"), sec("s2-0123456789abcdef"), true, ErrUnauthenticated, "peer shared secret refused"},
		{"dialer without", sec("s1-0123456789abcdef"), nil, false, ErrSecretRequired, "peer shared secret refused"},
		{"dialer with empty list", sec("s1-0123456789abcdef"), sec(), false, ErrSecretRequired, "peer shared secret refused"},
		{"acceptor without", nil, sec("s1-0123456789abcdef"), false, ErrPeerUnproven, ""},
		{"neither", nil, nil, false, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			accCfg := Config{NodeID: "n1", ClusterID: cluster(1), Secrets: tc.acc, Logger: logs.logger()}
			dialCfg := Config{NodeID: "n2", ClusterID: cluster(1), Secrets: tc.dial}
			if tc.tls {
				accCfg = p.tlsConfig(t, accCfg, TLSOn, "n1", nil)
				dialCfg = p.tlsConfig(t, dialCfg, TLSOn, "n2", nil)
			}
			acc := newLink(t, accCfg)
			got := acceptOne(acc, KindStream)
			dial := newLink(t, dialCfg)
			c, err := dial.Dial(context.Background(), acc.Addr().String(), KindStream)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Dial() = %v, want %v", err, tc.wantErr)
			}
			if tc.wantLog != "" {
				waitLog(t, &logs, tc.wantLog, "remote=127.0.0.1", "peer=n2")
			}
			if err != nil {
				return
			}
			defer c.Close()
			if tc.wantErr == nil && tc.acc != nil {
				sc := <-got
				if sc == nil || sc.(*Conn).RemoteNode() != "n2" {
					t.Fatalf("Accept() = %v, want n2's connection", sc)
				}
				sc.Close()
			}
		})
	}
}

// TestHostileChallengeAnswers: a dialer that answers the challenge with
// too few bytes or garbage is refused, and learns no cluster ID.
func TestHostileChallengeAnswers(t *testing.T) {
	secret := func() [][]byte { return [][]byte{[]byte("s1-0123456789abcdef")} }
	acc := newLink(t, Config{NodeID: "n1", ClusterID: cluster(1), Secrets: secret, HeaderTimeout: 300 * time.Millisecond})
	acc.Listener(KindRaft)
	header := Header{Kind: KindRaft, Cluster: cluster(1)(), Node: "n2"}.Append(nil)
	for _, tc := range []struct {
		name string
		resp []byte
		want []byte // after the challenge
	}{
		{"nothing", nil, nil},
		{"truncated", make([]byte, 40), nil},
		{"garbage", bytes.Repeat([]byte{0xa5}, NonceBytes+macBytes), appendAnswer(nil, StatusUnauthenticated, ClusterID{})},
		{"garbage and more", bytes.Repeat([]byte{0x5a}, 200), appendAnswer(nil, StatusUnauthenticated, ClusterID{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", acc.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(3 * time.Second))
			c.Write(header)
			ch := make([]byte, 1+NonceBytes)
			if _, err := io.ReadFull(c, ch); err != nil || ch[0] != StatusChallenge {
				t.Fatalf("challenge = %x, %v", ch, err)
			}
			c.Write(tc.resp)
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("read = %v, want the acceptor to close", err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("after the challenge got %x, want %x", got, tc.want)
			}
		})
	}
}

// TestHostileAcceptorAnswers: a dialer with a secret refuses an acceptor
// that does not prove it, however it answers.
func TestHostileAcceptorAnswers(t *testing.T) {
	nonce := bytes.Repeat([]byte{7}, NonceBytes)
	okAnswer := appendAnswer(nil, StatusOK, cluster(1)())
	for _, tc := range []struct {
		name    string
		answer  func(header, resp []byte) []byte // resp: the dialer's proof, when asked
		wantErr error
	}{
		{"ok without a challenge", func(h, r []byte) []byte { return okAnswer }, ErrPeerUnproven},
		{"truncated challenge", func(h, r []byte) []byte { return []byte{StatusChallenge, 1, 2, 3} }, io.ErrUnexpectedEOF},
		{"ok without a proof", func(h, r []byte) []byte { return append([]byte{StatusChallenge}, append(nonce, okAnswer...)...) }, ErrPeerUnproven},
		{"ok with a wrong proof", func(h, r []byte) []byte {
			return append(append([]byte{StatusChallenge}, nonce...), append(okAnswer, make([]byte, macBytes)...)...)
		}, ErrPeerUnproven},
		{"ok with the dialer's own proof", func(h, r []byte) []byte {
			if r == nil {
				r = make([]byte, NonceBytes+macBytes)
			}
			return append(append([]byte{StatusChallenge}, nonce...), append(okAnswer, r[NonceBytes:]...)...)
		}, ErrPeerUnproven},
		{"challenged twice", func(h, r []byte) []byte {
			return append(append([]byte{StatusChallenge}, nonce...), append([]byte{StatusChallenge}, nonce...)...)
		}, ErrPeerUnproven},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(3 * time.Second))
				h, err := ReadHeader(c)
				if err != nil {
					return
				}
				a := tc.answer(h.Append(nil), nil)
				if a[0] == StatusChallenge && len(a) > 1+NonceBytes {
					c.Write(a[:1+NonceBytes])
					r := make([]byte, NonceBytes+macBytes)
					if _, err := io.ReadFull(c, r); err != nil {
						return
					}
					a = tc.answer(h.Append(nil), r)[1+NonceBytes:]
				}
				c.Write(a)
			}()
			dial := newLink(t, Config{NodeID: "n2", ClusterID: cluster(1), Secrets: func() [][]byte { return [][]byte{[]byte("s1-0123456789abcdef")} }})
			c, err := dial.Dial(context.Background(), ln.Addr().String(), KindRaft)
			if err == nil {
				c.Close()
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Dial() = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// TestTLSHandshakeCountsAsPending: connections in their TLS handshake are
// pending ones, and a stalled handshake is cut at the header timeout.
func TestTLSHandshakeCountsAsPending(t *testing.T) {
	p := newPKI(t, "peers", "n1")
	acc := newLink(t, p.tlsConfig(t, Config{NodeID: "n1", MaxPending: 1, HeaderTimeout: 300 * time.Millisecond}, TLSOn, "n1", nil))
	first, err := net.Dial("tcp", acc.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	first.Write([]byte{tlsRecordHandshake, 3, 1}) // a handshake that stalls
	waitPending := func(want int) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Second)
		for {
			acc.mu.Lock()
			n := len(acc.pending)
			acc.mu.Unlock()
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pending = %d, want %d", n, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitPending(1)
	start := time.Now()
	first.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := io.ReadAll(first); err != nil {
		t.Fatalf("ReadAll() = %v, want the link to close the stalled handshake", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("stalled handshake closed after %v, want about the header timeout", took)
	}
	waitPending(0)
}
