package systemtest

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/txlog/txlog/internal/certgen"
	"github.com/txlog/txlog/launcher"
)

// tlsCluster is a cluster whose client ports serve mutual TLS from files the
// test rotates: one server certificate for every node (its SAN the cluster's
// loopback address), and a client CA bundle.
type tlsCluster struct {
	c                         *launcher.Cluster
	host                      string
	certFile, keyFile, caFile string
	ca                        *certgen.CA // signs the first server and client certificates
	clientCert                tls.Certificate
	addrs                     []string // host:port of each node's client port, in ID order
	tls                       bool     // false: a plain client port (startClientCluster)
}

func (tc *tlsCluster) scheme() string {
	if tc.tls {
		return "https://"
	}
	return "http://"
}

// startTLSCluster starts nodes txlogd processes with client TLS and a client
// CA, plus args, and waits until every node answers /readyz over TLS.
func startTLSCluster(t testing.TB, nodes int, args ...string) *tlsCluster {
	return startClientCluster(t, true, nodes, args...)
}

// startClientCluster is startTLSCluster, or without tlsOn the same cluster
// with a plain client port (for the benchmark's baseline).
func startClientCluster(t testing.TB, tlsOn bool, nodes int, args ...string) *tlsCluster {
	t.Helper()
	tc := &tlsCluster{host: launcher.PrivateLoopback()}
	dir := t.TempDir()
	tc.ca = newTestCA(t, "client-port-ca")
	tc.clientCert = tlsCert(t, issueLeaf(t, tc.ca, certgen.Options{CommonName: "client", Client: true}))
	tc.certFile, tc.keyFile, tc.caFile = writeServerCert(t, tc.ca, tc.host, dir)

	cfg := launcher.ClusterConfig{Nodes: nodes, Host: tc.host, ExtraArgs: args}
	if tlsOn {
		cfg.ExtraArgs = append([]string{"--tls-cert-file=" + tc.certFile, "--tls-key-file=" + tc.keyFile,
			"--tls-client-ca-file=" + tc.caFile}, args...)
	}
	tc.c = launchCluster(t, cfg)
	tc.addrs = hostPorts(t, tc.c)
	tc.tls = tlsOn
	hc := tc.client(tc.ca.Pool(), func() *tls.Certificate { return &tc.clientCert }, false)
	for _, addr := range tc.addrs {
		var last string
		ready := func() bool {
			resp, err := hc.Get(tc.scheme() + addr + "/readyz")
			if err != nil {
				last = err.Error()
				return false
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
			return resp.StatusCode == http.StatusOK
		}
		start := time.Now()
		for !ready() {
			if time.Since(start) > 45*time.Second {
				t.Fatalf("%s not ready over tls after 45s: %s", addr, last)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return tc
}

// client returns an HTTPS client trusting roots and offering cert() at each
// handshake (nil: none). With noKeepAlive every request is a new connection,
// so a new handshake.
func (tc *tlsCluster) client(roots *x509.CertPool, cert func() *tls.Certificate, noKeepAlive bool) *http.Client {
	cfg := &tls.Config{RootCAs: roots}
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert(), nil }
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: cfg, DisableKeepAlives: noKeepAlive, MaxIdleConnsPerHost: 16,
	}}
}

func newTestCA(t testing.TB, name string) *certgen.CA {
	t.Helper()
	ca, err := certgen.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func issueLeaf(t testing.TB, ca *certgen.CA, o certgen.Options) *certgen.Leaf {
	t.Helper()
	l, err := ca.Issue(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func tlsCert(t testing.TB, l *certgen.Leaf) tls.Certificate {
	t.Helper()
	c, err := l.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// writeServerCert writes into dir a client port's certificate and key (CN
// txlogd, for host, signed by ca) and ca's certificate, and returns the three
// files.
func writeServerCert(t testing.TB, ca *certgen.CA, host, dir string) (certFile, keyFile, caFile string) {
	t.Helper()
	server := issueLeaf(t, ca, certgen.Options{CommonName: "txlogd", Hosts: []string{host}, Server: true})
	certFile, keyFile, caFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "ca.pem")
	replaceFile(t, certFile, server.CertPEM)
	replaceFile(t, keyFile, server.KeyPEM)
	replaceFile(t, caFile, ca.CertPEM)
	return certFile, keyFile, caFile
}

// replaceFile replaces path as rotation tools do: a new file renamed over it.
func replaceFile(t testing.TB, path string, b []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func waitTLS(t testing.TB, limit time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not after %v", what, limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// bundle concatenates CA certificates into a PEM bundle.
func bundle(cas ...*certgen.CA) []byte {
	var b []byte
	for _, ca := range cas {
		b = append(b, ca.CertPEM...)
	}
	return b
}

// write commits one put through addr and returns the error, or the status
// when it is not 200.
func tlsWrite(hc *http.Client, addr, key, value string) error {
	body := fmt.Sprintf(`{"ops":[{"op":"put","key":%q,"value":%q}]}`, key, value)
	// 30 s: a slow fsync on a loaded machine must not park the write (202).
	resp, err := hc.Post("https://"+addr+"/v1/tx?timeout=30s", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /v1/tx on %s: %d %s", addr, resp.StatusCode, b)
	}
	return nil
}

// handshake dials addr with cfg and returns the server's certificate, or the
// error of the handshake or of the first read (a TLS 1.3 server refuses a
// client certificate after the client's side of the handshake is done).
func handshake(addr string, cfg *tls.Config) (*x509.Certificate, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	// A request proves the server accepted us.
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return c.ConnectionState().PeerCertificates[0], nil
}

// metric returns the value of the sample whose line starts with series in
// addr's /metrics, 0 if there is none.
func metric(t *testing.T, hc *http.Client, addr, series string) float64 {
	t.Helper()
	resp, err := hc.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return v
		}
	}
	return 0
}

// noAnswer sends a plain HTTP request to addr and returns what came back,
// failing the test if it reads as an HTTP success or JSON.
func noAnswer(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(15 * time.Second))
	io.WriteString(c, "POST /v1/tx HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n\r\n"+`{"ops":[{"op":"put","key":"p","value":"x"}]}`[:40])
	b, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("plain client read: %v, want the connection closed", err)
	}
	if bytes.Contains(b, []byte(" 200 ")) || bytes.Contains(b, []byte("{")) {
		t.Errorf("plain client read %q: want no 200 and no JSON", b)
	}
	return string(b)
}

// silentClosed connects to addr, sends nothing, and returns how long the
// node took to close the connection.
func silentClosed(addr string) (time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	c.SetDeadline(start.Add(30 * time.Second))
	_, err = io.ReadAll(c)
	return time.Since(start), err
}

// TestTLSClientPort runs a 3-node cluster whose client ports serve mutual
// TLS, and tries it with the right client, with none, with a certificate of
// another CA, in plain HTTP, and with a client that never handshakes.
func TestTLSClientPort(t *testing.T) {
	tc := startTLSCluster(t, 3)
	// The slowest case first, beside the others: a connection that sends
	// nothing is closed after the handshake timeout (10 s).
	type silent struct {
		took time.Duration
		err  error
	}
	silentDone := make(chan silent, 1)
	go func() {
		took, err := silentClosed(tc.addrs[0])
		silentDone <- silent{took, err}
	}()

	good := tc.client(tc.ca.Pool(), func() *tls.Certificate { return &tc.clientCert }, false)
	t.Run("writes and reads over mutual TLS", func(t *testing.T) {
		for i, addr := range tc.addrs {
			if err := tlsWrite(good, addr, "tls/k"+strconv.Itoa(i), "v"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range tc.addrs {
			addr := tc.addrs[(i+1)%len(tc.addrs)] // another node than the writer
			resp, err := good.Get("https://" + addr + "/v1/kv/tls/k" + strconv.Itoa(i))
			if err != nil {
				t.Fatal(err)
			}
			var kv struct{ Value json.RawMessage }
			json.NewDecoder(resp.Body).Decode(&kv)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(kv.Value) != strconv.Quote("v"+strconv.Itoa(i)) {
				t.Fatalf("GET tls/k%d on %s: %d %s", i, addr, resp.StatusCode, kv.Value)
			}
		}
	})
	t.Run("no client certificate", func(t *testing.T) {
		_, err := handshake(tc.addrs[1], &tls.Config{RootCAs: tc.ca.Pool()})
		if err == nil || !strings.Contains(err.Error(), "certificate required") {
			t.Fatalf("handshake without a client certificate = %v, want the server's alert (certificate required)", err)
		}
	})
	t.Run("a client certificate of another CA", func(t *testing.T) {
		rogue := newTestCA(t, "rogue")
		cert := tlsCert(t, issueLeaf(t, rogue, certgen.Options{CommonName: "client", Client: true}))
		// GetClientCertificate, not Certificates: Go's client would not offer
		// a certificate the server's list of acceptable CAs does not name.
		_, err := handshake(tc.addrs[1], &tls.Config{RootCAs: tc.ca.Pool(),
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }})
		if err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
			t.Fatalf("handshake with a rogue CA's certificate = %v, want the server's alert (unknown certificate authority)", err)
		}
	})
	t.Run("a server the client does not trust", func(t *testing.T) {
		_, err := handshake(tc.addrs[2], &tls.Config{RootCAs: newTestCA(t, "other").Pool(), Certificates: []tls.Certificate{tc.clientCert}})
		var uae x509.UnknownAuthorityError
		if !errors.As(err, &uae) {
			t.Fatalf("handshake trusting another CA = %v, want x509.UnknownAuthorityError", err)
		}
	})
	t.Run("plain HTTP gets no answer", func(t *testing.T) {
		got := noAnswer(t, tc.addrs[2])
		t.Logf("a plain client read %q", got)
		if _, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + tc.addrs[2] + "/v1/kv/tls/k0"); err == nil {
			t.Fatal("plain GET succeeded, want an error")
		}
	})
	t.Run("SIGHUP reloads", func(t *testing.T) {
		p := tc.c.Nodes()[1]
		series := `txlog_tls_reloads_total{name="client",result="ok"}`
		before := metric(t, good, tc.addrs[1], series)
		if err := syscall.Kill(p.PID(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitTLS(t, 10*time.Second, "reload counted", func() bool { return metric(t, good, tc.addrs[1], series) > before })
		if !p.Running() {
			t.Fatal("the node exited on SIGHUP")
		}
		if v := metric(t, good, tc.addrs[1], `txlog_tls_cert_expiry_seconds{name="client"}`); v < float64(time.Now().Unix()) {
			t.Fatalf("txlog_tls_cert_expiry_seconds = %v, want a time to come", v)
		}
	})
	s := <-silentDone
	t.Logf("a connection that sent nothing was closed after %v (%v)", s.took.Round(time.Millisecond), s.err)
	if s.err != nil || s.took < 9*time.Second || s.took > 20*time.Second {
		t.Fatalf("silent connection: closed after %v with %v, want EOF after about 10s", s.took, s.err)
	}
}

// TestTLSNetHTTPOnly serves client TLS from net/http alone
// (--http-fast-path=false): the same handshake rules hold.
func TestTLSNetHTTPOnly(t *testing.T) {
	tc := startTLSCluster(t, 1, "--http-fast-path=false")
	good := tc.client(tc.ca.Pool(), func() *tls.Certificate { return &tc.clientCert }, false)
	if err := tlsWrite(good, tc.addrs[0], "tls/plainhttp", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(tc.addrs[0], &tls.Config{RootCAs: tc.ca.Pool()}); err == nil {
		t.Fatal("handshake without a client certificate succeeded")
	}
	// net/http answers a plain request on a TLS port with a plain-text 400
	// that names the mistake; no data, no JSON.
	t.Logf("a plain client read %q", noAnswer(t, tc.addrs[0]))
	took, err := silentClosed(tc.addrs[0])
	if err != nil || took < 9*time.Second || took > 20*time.Second {
		t.Fatalf("silent connection: closed after %v with %v, want EOF after about 10s", took, err)
	}
}

// TestTLSServerOnly serves TLS without a client CA (the flag given empty,
// after the cluster's own): any client that trusts the server writes, with
// or without a certificate; plain HTTP still gets no answer.
func TestTLSServerOnly(t *testing.T) {
	tc := startTLSCluster(t, 1, "--tls-client-ca-file=")
	anon := tc.client(tc.ca.Pool(), nil, false)
	if err := tlsWrite(anon, tc.addrs[0], "tls/server-only", "x"); err != nil {
		t.Fatalf("write without a client certificate: %v", err)
	}
	withCert := tc.client(tc.ca.Pool(), func() *tls.Certificate { return &tc.clientCert }, false)
	if err := tlsWrite(withCert, tc.addrs[0], "tls/server-only", "y"); err != nil {
		t.Fatalf("write with a client certificate: %v", err)
	}
	if got := noAnswer(t, tc.addrs[0]); got != "" {
		t.Fatalf("a plain client read %q, want nothing", got)
	}
}

// TestTLSRotationUnderLoad moves the client port to a new CA while writes
// run, on new and kept-alive connections, and sees none fail: the client CA
// bundle gains the new CA, clients switch to certificates it signs, the
// servers' certificate and key switch to one it signs, and the old CA is
// dropped. A half-written certificate on the way keeps the old one. It
// reports how long a file change took to reach a handshake.
func TestTLSRotationUnderLoad(t *testing.T) {
	tc := startTLSCluster(t, 3)
	caNew := newTestCA(t, "client-port-ca-2")
	roots := x509.NewCertPool() // the clients trust both CAs for the move
	roots.AddCert(tc.ca.Cert)
	roots.AddCert(caNew.Cert)
	oldClient := tc.clientCert
	newClient := tlsCert(t, issueLeaf(t, caNew, certgen.Options{CommonName: "client", Client: true}))
	var cur atomic.Pointer[tls.Certificate]
	cur.Store(&oldClient)

	// The load: two workers on kept-alive connections, two on a new
	// connection (a new handshake) per write, every node in turn.
	var ok, failed atomic.Int64
	var firstErrs sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var stopOnce sync.Once
	stopLoad := func() { stopOnce.Do(func() { close(stop) }); wg.Wait() }
	defer stopLoad()
	for w := range 4 {
		hc := tc.client(roots, cur.Load, w%2 == 1)
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := tlsWrite(hc, tc.addrs[i%len(tc.addrs)], fmt.Sprintf("rot/%d/%d", w, i), "x"); err != nil {
					if failed.Add(1) <= 5 {
						firstErrs.Store(err.Error(), true)
					}
					continue
				}
				ok.Add(1)
			}
		})
	}
	waitTLS(t, 10*time.Second, "load running", func() bool { return ok.Load() > 50 })

	probe := func(addr string, cert tls.Certificate) (*x509.Certificate, error) {
		return handshake(addr, &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}})
	}
	// untilAll polls every node until cond holds for each, and returns the
	// time each took from start.
	untilAll := func(what string, start time.Time, cond func(addr string) bool) []time.Duration {
		var took []time.Duration
		for _, addr := range tc.addrs {
			waitTLS(t, 10*time.Second, what+" on "+addr, func() bool { return cond(addr) })
			took = append(took, time.Since(start))
		}
		return took
	}
	// Each node polls the files on its own: the time to the first node is
	// the one a single node shows; the later ones include the probes of the
	// nodes before.
	report := func(step string, took []time.Duration) {
		t.Logf("%s: first handshake with it after %v (first node), %v (all %d nodes)", step,
			took[0].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), len(took))
	}

	// 1. The bundle gains the new CA: a client of the new CA is let in.
	start := time.Now()
	replaceFile(t, tc.caFile, bundle(tc.ca, caNew))
	report("CA bundle old+new", untilAll("client of the new CA accepted", start, func(addr string) bool {
		_, err := probe(addr, newClient)
		return err == nil
	}))
	// 2. The clients move to certificates of the new CA.
	cur.Store(&newClient)

	// 3. A half-written certificate: every node keeps the old one.
	serverNew := issueLeaf(t, caNew, certgen.Options{CommonName: "txlogd-2", Hosts: []string{tc.host}, Server: true})
	errSeries := `txlog_tls_reloads_total{name="client",result="error"}`
	good := tc.client(roots, cur.Load, false)
	var errsBefore []float64
	for _, addr := range tc.addrs {
		errsBefore = append(errsBefore, metric(t, good, addr, errSeries))
	}
	if err := os.WriteFile(tc.certFile, serverNew.CertPEM[:len(serverNew.CertPEM)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	for i, addr := range tc.addrs {
		waitTLS(t, 10*time.Second, "failed reload counted on "+addr, func() bool { return metric(t, good, addr, errSeries) > errsBefore[i] })
		if peer, err := probe(addr, newClient); err != nil || peer.Subject.CommonName != "txlogd" {
			t.Fatalf("handshake with %s after a half-written certificate: %v, %v; want the old certificate", addr, peer, err)
		}
	}

	// 4. The servers' key, then certificate, signed by the new CA.
	replaceFile(t, tc.keyFile, serverNew.KeyPEM)
	start = time.Now()
	replaceFile(t, tc.certFile, serverNew.CertPEM)
	report("server certificate", untilAll("new server certificate presented", start, func(addr string) bool {
		peer, err := probe(addr, newClient)
		return err == nil && peer.Subject.CommonName == "txlogd-2"
	}))

	// 5. The old CA leaves the bundle: its clients are refused.
	start = time.Now()
	replaceFile(t, tc.caFile, bundle(caNew))
	report("CA bundle new only", untilAll("client of the old CA refused", start, func(addr string) bool {
		_, err := probe(addr, oldClient)
		return err != nil
	}))

	// Writes on after the move, then the count.
	n := ok.Load()
	waitTLS(t, 10*time.Second, "writes after the move", func() bool { return ok.Load() > n+50 })
	stopLoad()
	t.Logf("writes during the rotation: %d ok, %d failed", ok.Load(), failed.Load())
	if failed.Load() != 0 {
		firstErrs.Range(func(k, _ any) bool { t.Errorf("failed write: %s", k); return true })
		t.Fatalf("%d writes failed during the rotation, want 0", failed.Load())
	}
}

// BenchmarkClientPortTLS measures writes through a one-node cluster's client
// port: plain, mutual TLS through the fast path, and mutual TLS through
// net/http alone (--http-fast-path=false), at 1 and 64 clients on kept-alive
// connections, made before the clock starts. ns/op is the wall time per write (1/throughput); p50 and p99
// are each write's latency. Run it with a fixed count, as
//
//	go test -run '^$' -bench ClientPortTLS -benchtime 4000x ./systemtest
//
// Each mode's cluster starts once and serves both client counts.
func BenchmarkClientPortTLS(b *testing.B) {
	modes := []struct {
		name  string
		tlsOn bool
		args  []string
	}{
		{"plain", false, nil},
		{"mtls-fastpath", true, nil},
		{"mtls-nethttp", true, []string{"--http-fast-path=false"}},
	}
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) { // a parent: run once, its cluster shared by its runs
			tc := startClientCluster(b, m.tlsOn, 1, m.args...)
			for _, clients := range []int{1, 64} {
				b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { benchWrites(b, tc, clients) })
			}
		})
	}
}

func benchWrites(b *testing.B, tc *tlsCluster, clients int) {
	url := tc.scheme() + tc.addrs[0] + "/v1/tx"
	body := `{"ops":[{"op":"put","key":"bench/k","value":"` + strings.Repeat("x", 256) + `"}]}`
	lat := make([][]time.Duration, clients)
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	// Each client's connection is made (its handshake done) before the
	// clock starts: the benchmark measures kept-alive writes.
	hcs := make([]*http.Client, clients)
	for w := range hcs {
		hcs[w] = tc.client(tc.ca.Pool(), func() *tls.Certificate { return &tc.clientCert }, false)
		wg.Go(func() {
			resp, err := hcs[w].Post(url, "application/json", strings.NewReader(body))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	b.ResetTimer()
	start := time.Now()
	for w, hc := range hcs {
		wg.Go(func() {
			defer hc.CloseIdleConnections()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				resp, err := hc.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	elapsed := time.Since(start)
	if failed.Load() > 0 {
		b.Fatalf("%d writes failed", failed.Load())
	}
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
}
