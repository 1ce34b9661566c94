package systemtest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/auth"
	"github.com/txlog/txlog/internal/certgen"
	"github.com/txlog/txlog/launcher"
)

// secCluster is a cluster secured as the issue asks: client ports and the
// peer link serving mutual TLS, an auth file with a token per role (and scoped ones), and
// client certificates, some named in the file and one not.
type secCluster struct {
	c     *launcher.Cluster
	host  string
	dir   string // the certificates and the auth file
	ca    *certgen.CA
	addrs []string // host:port of each node's client port, in ID order
	// The node's files, for nodes started by the test (a joiner).
	certFile, keyFile, caFile, authFile string
	authLines                           map[string]string // credential name -> its line
	tokens                              map[string]string // credential name -> token

	mu      sync.Mutex
	clients map[string]*http.Client // by the CN of the client certificate offered
}

// The credentials of a secCluster's auth file.
const (
	credAdmin    = "admin"
	credWriter   = "writer"
	credWriter2  = "writer2" // a second writer, for revocation
	credReader   = "reader"
	credAReader  = "a-reader" // read, prefix=a/
	credAWriter  = "a-writer" // write, prefix=a/
	cnReaderCert = "reader-cert"
	cnBrowser    = "browser-cert" // write, as a browser would present it
	cnStranger   = "stranger"     // signed by the cluster's CA, named in no line
)

// cred is how a request presents itself: a client certificate (every
// request has one: the client ports require mutual TLS), and a token or
// Basic credentials on top.
type cred struct {
	cert  string // CN of the client certificate; "" is cnStranger
	token string // Bearer token
	basic string // token sent as the password of Basic credentials
}

func (sc *secCluster) tok(name string) cred { return cred{token: sc.tokens[name]} }

// startSecureCluster starts nodes txlogd processes with client mutual TLS,
// peer mutual TLS and the auth file of the constants above, plus args, and
// waits until each answers /readyz and has a leader.
func startSecureCluster(t *testing.T, nodes int, args ...string) *secCluster {
	t.Helper()
	sc := &secCluster{host: launcher.PrivateLoopback(), dir: t.TempDir(), authLines: map[string]string{},
		tokens: map[string]string{}, clients: map[string]*http.Client{}}
	sc.ca = newTestCA(t, "secure-ca")
	// The client ports' certificate; each node's peer certificate is
	// peerArgs'.
	sc.certFile, sc.keyFile, sc.caFile = writeServerCert(t, sc.ca, sc.host, sc.dir)
	sc.authFile = filepath.Join(sc.dir, "auth")
	for _, c := range []struct {
		name     string
		role     auth.Role
		prefixes []string
	}{
		{credAdmin, auth.RoleAdmin, nil},
		{credWriter, auth.RoleWrite, nil},
		{credWriter2, auth.RoleWrite, nil},
		{credReader, auth.RoleRead, nil},
		{credAReader, auth.RoleRead, []string{"a/"}},
		{credAWriter, auth.RoleWrite, []string{"a/"}},
	} {
		tok, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		sc.tokens[c.name] = tok
		sc.authLines[c.name] = auth.Line(auth.HashToken(tok), c.role, c.name, c.prefixes)
	}
	sc.authLines[cnReaderCert] = "cert:" + cnReaderCert + " read " + cnReaderCert
	sc.authLines[cnBrowser] = "cert:" + cnBrowser + " write " + cnBrowser
	sc.writeAuthFile(t)

	peerArgs := map[string][]string{}
	for i := range nodes {
		id := "n" + strconv.Itoa(i+1)
		peerArgs[id] = sc.peerArgs(t, id)
	}
	sc.c = launchCluster(t, launcher.ClusterConfig{
		Nodes: nodes, Host: sc.host,
		ExtraArgs: append(sc.secureArgs(), args...),
		NodeArgs:  func(id string, _ map[string]string) ([]string, error) { return peerArgs[id], nil },
	})
	sc.addrs = hostPorts(t, sc.c)
	for i := range sc.addrs {
		sc.waitReady(t, i)
	}
	sc.leader(t)
	return sc
}

// secureArgs are the flags of a secured node's client port (peerArgs has
// those of its peer link).
func (sc *secCluster) secureArgs() []string {
	return []string{"--tls-cert-file=" + sc.certFile, "--tls-key-file=" + sc.keyFile,
		"--tls-client-ca-file=" + sc.caFile, "--auth-file=" + sc.authFile}
}

// peerArgs issues node id's peer certificate (CN the ID, signed by the
// cluster's one CA, which the client ports trust too: a joining node
// presents it there) and returns its peer TLS flags: mutual TLS on the peer
// link, only the CNs of the nodes the tests start.
func (sc *secCluster) peerArgs(t *testing.T, id string) []string {
	t.Helper()
	leaf := issueLeaf(t, sc.ca, certgen.Options{CommonName: id, Hosts: []string{sc.host}})
	f, err := leaf.WriteFiles(sc.dir, "peer-"+id)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--peer-tls-cert-file=" + f.Cert, "--peer-tls-key-file=" + f.Key, "--peer-tls-ca-file=" + sc.caFile,
		"--peer-tls-mode=tls", "--peer-cert-allowed-cn=n1,n2,n3,n4,n5"}
}

// writeAuthFile writes the auth file of sc.authLines, sorted, as a new file
// renamed over the old one.
func (sc *secCluster) writeAuthFile(t *testing.T) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# written by the test\n")
	for _, name := range slices.Sorted(maps.Keys(sc.authLines)) {
		b.WriteString(sc.authLines[name] + "\n")
	}
	replaceFile(t, sc.authFile, []byte(b.String()))
}

// client returns the HTTPS client that offers a certificate with CN cn
// (made on first use, signed by the cluster's CA).
func (sc *secCluster) client(t *testing.T, cn string) *http.Client {
	t.Helper()
	if cn == "" {
		cn = cnStranger
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if hc := sc.clients[cn]; hc != nil {
		return hc
	}
	cert := tlsCert(t, issueLeaf(t, sc.ca, certgen.Options{CommonName: cn, Client: true}))
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: sc.ca.Pool(), Certificates: []tls.Certificate{cert}},
		MaxIdleConnsPerHost: 16,
	}}
	sc.clients[cn] = hc
	return hc
}

// answer is a node's answer to one request.
type answer struct {
	status int
	code   string // the error's code, for an error
	body   []byte
}

func (a answer) String() string {
	return fmt.Sprintf("%d %s", a.status, bytes.TrimSpace(a.body))
}

// req is one request of a test.
type req struct {
	method, path, body string
	header             map[string]string
	host               string // the Host header, "" for the address dialed
	stream             bool   // an event stream: read until an event or the deadline
}

// do sends r to node i with c and returns the answer; a transport error
// fails the test.
func (sc *secCluster) do(t *testing.T, i int, c cred, r req) answer {
	t.Helper()
	a, err := sc.try(t, i, c, r)
	if err != nil {
		t.Fatalf("%s %s on node %d: %v", r.method, r.path, i+1, err)
	}
	return a
}

// try is do returning the transport error.
func (sc *secCluster) try(t *testing.T, i int, c cred, r req) (answer, error) {
	t.Helper()
	timeout := 20 * time.Second
	if r.stream {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequestWithContext(ctx, r.method, "https://"+sc.addrs[i]+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if r.body != "" {
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	if r.host != "" {
		hr.Host = r.host
	}
	switch {
	case c.token != "":
		hr.Header.Set("Authorization", "Bearer "+c.token)
	case c.basic != "":
		hr.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("user:"+c.basic)))
	}
	resp, err := sc.client(t, c.cert).Do(hr)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	a := answer{status: resp.StatusCode}
	if r.stream && resp.StatusCode == http.StatusOK {
		a.body = readSSE(resp.Body, nil)
		return a, nil
	}
	a.body, err = io.ReadAll(resp.Body)
	if err != nil {
		return a, err
	}
	var e struct {
		Error wire.ErrorBody `json:"error"`
	}
	_ = json.Unmarshal(a.body, &e)
	a.code = e.Error.Code
	return a, nil
}

// readSSE reads an event stream until until returns true for an event's
// data (nil: after the first event), or the stream ends (its deadline), and
// returns all it read.
func readSSE(r io.Reader, until func(data []byte) bool) []byte {
	var all bytes.Buffer
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		all.Write(sc.Bytes())
		all.WriteByte('\n')
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
			if until == nil || until(data) {
				break
			}
		}
	}
	return all.Bytes()
}

// waitReady polls node i's /readyz until 200.
func (sc *secCluster) waitReady(t *testing.T, i int) {
	t.Helper()
	var last string
	deadline := time.Now().Add(45 * time.Second)
	for {
		a, err := sc.try(t, i, cred{}, req{method: http.MethodGet, path: "/readyz"})
		if err == nil && a.status == http.StatusOK {
			return
		}
		if last = a.String(); err != nil {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 45s: %s", sc.addrs[i], last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leader returns the index of the node all running nodes agree leads.
func (sc *secCluster) leader(t *testing.T) int {
	t.Helper()
	leader := -1
	waitTLS(t, 30*time.Second, "a leader", func() bool {
		a, err := sc.try(t, 0, sc.tok(credAdmin), req{method: http.MethodGet, path: "/v1/cluster"})
		if err != nil || a.status != http.StatusOK {
			return false
		}
		var st wire.ClusterStatus
		if json.Unmarshal(a.body, &st) != nil || st.LeaderID == "" {
			return false
		}
		for i, p := range sc.c.Nodes() {
			if p.ID() == st.LeaderID {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

// submit commits one transaction through node i as c and returns its result.
func (sc *secCluster) submit(t *testing.T, i int, c cred, body string) wire.TxResult {
	t.Helper()
	// 30 s: a slow fsync on a loaded machine must not park the write (202).
	a := sc.do(t, i, c, req{method: http.MethodPost, path: "/v1/tx?timeout=30s", body: body})
	var res wire.TxResult
	if a.status != http.StatusOK || json.Unmarshal(a.body, &res) != nil || res.Status != wire.StatusCommitted {
		t.Fatalf("POST /v1/tx %s on node %d: %s, want 200 committed", body, i+1, a)
	}
	return res
}

// putBody is the body of a transaction that puts each key (value 1), with
// idempotency key idem ("" none).
func putBody(idem string, keys ...string) string {
	var ops []string
	for _, k := range keys {
		ops = append(ops, fmt.Sprintf(`{"op":"put","key":%q,"value":1}`, k))
	}
	b := `{"ops":[` + strings.Join(ops, ",") + `]`
	if idem != "" {
		b += `,"idempotency_key":` + strconv.Quote(idem)
	}
	return b + "}"
}

// startJoiner starts a txlogd that joins the cluster through node via with
// the cluster's security flags and the token file tokenFile, and kills it
// when the test ends. It returns the process and its client port's address.
func (sc *secCluster) startJoiner(t *testing.T, id string, via int, tokenFile string) (*launcher.Process, string) {
	t.Helper()
	ports, err := launcher.FreePorts(sc.host, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	args := append([]string{"--id=" + id, "--data-dir=" + filepath.Join(dir, id),
		"--http-addr=" + net.JoinHostPort(sc.host, "0"),
		"--raft-addr=" + net.JoinHostPort(sc.host, strconv.Itoa(ports[0])),
		"--join=https://" + sc.addrs[via], "--join-token-file=" + tokenFile,
		"--join-ca-file=" + sc.caFile, "--shutdown-timeout=2s"}, sc.secureArgs()...)
	args = append(args, sc.peerArgs(t, id)...)
	p := startProcess(t, launcher.ProcessConfig{ID: id, Args: args, DataDir: filepath.Join(dir, id), LogDir: dir})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, err := p.HTTPAddr(ctx)
	if err != nil {
		t.Fatalf("%s: %v", id, err)
	}
	return p, addr
}

// leaks returns each of forbidden that body contains: the names and txids a
// scoped credential must not see.
func leaks(body []byte, forbidden []string) []string {
	var found []string
	for _, f := range forbidden {
		if bytes.Contains(body, []byte(f)) {
			found = append(found, f)
		}
	}
	return found
}
