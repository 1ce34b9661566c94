package systemtest

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/internal/certgen"
	"github.com/txlog/txlog/launcher"
	"github.com/txlog/txlog/peerlink"
)

// peerPKI is a CA and a peer certificate per node, in files.
type peerPKI struct {
	ca    *certgen.CA
	caPEM string                   // the CA's file
	files map[string]certgen.Files // by node ID
	leafs map[string]*certgen.Leaf
}

// newPeerPKI writes a CA named name and a certificate (CN and SAN of the
// node, 127.0.0.1) for each of ids under dir.
func newPeerPKI(t *testing.T, dir, name string, ids ...string) *peerPKI {
	t.Helper()
	ca, err := certgen.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	p := &peerPKI{ca: ca, files: map[string]certgen.Files{}, leafs: map[string]*certgen.Leaf{}}
	if p.caPEM, err = ca.WriteFile(dir, name+"-ca"); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		leaf, err := ca.Issue(certgen.Options{CommonName: id, Hosts: []string{"127.0.0.1", "localhost"}})
		if err != nil {
			t.Fatal(err)
		}
		p.leafs[id] = leaf
		if p.files[id], err = leaf.WriteFiles(dir, name+"-"+id); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// args are the peer TLS flags of node id in mode.
func (p *peerPKI) args(id, mode string) []string {
	return []string{"--peer-tls-cert-file=" + p.files[id].Cert, "--peer-tls-key-file=" + p.files[id].Key,
		"--peer-tls-ca-file=" + p.caPEM, "--peer-tls-mode=" + mode}
}

// dialAs dials the peer link at addr as node id of the cluster with ID
// cluster (hex), presenting id's certificate and trusting the CA of trust
// (an intruder knows the cluster's CA certificate: it is no secret). It
// returns nil when the connection was taken.
func (p *peerPKI) dialAs(ctx context.Context, t *testing.T, trust *peerPKI, addr, cluster, id string, kind byte) error {
	t.Helper()
	var cid peerlink.ClusterID
	if b, err := hex.DecodeString(cluster); err != nil || len(b) != len(cid) {
		t.Fatalf("cluster id %q: want %d bytes in hex", cluster, len(cid))
	} else {
		copy(cid[:], b)
	}
	cert, err := p.leafs[id].TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	l := peerlink.New(&noListener{done: make(chan struct{})}, peerlink.Config{
		NodeID: id, ClusterID: func() peerlink.ClusterID { return cid }, TLSMode: peerlink.TLSOn,
		ServerTLS: func() *tls.Config { return nil },
		ClientTLS: func(addr string) *tls.Config {
			return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: trust.ca.Pool(), ServerName: peerlink.ServerName(addr),
				GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }}
		},
	})
	defer l.Close()
	c, err := l.Dial(ctx, addr, kind)
	if err == nil {
		// A TLS 1.3 server refuses a client certificate after the client's
		// handshake ended: the refusal shows on the first read.
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = c.Read(make([]byte, 1))
		c.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil // the connection stayed up: accepted
		}
	}
	return err
}

// peerNode is one txlogd of a peerCluster, restarted with other flags by
// replacing its Process.
type peerNode struct {
	id, httpAddr, raftAddr, dataDir string
	base                            []string // the flags of every run
	p                               *launcher.Process
}

func (n *peerNode) url() string { return "http://" + n.httpAddr }

// peerCluster is a cluster of txlogd processes on fixed loopback ports whose
// nodes restart with new flags (the rolling move).
type peerCluster struct {
	t      *testing.T
	logDir string
	nodes  []*peerNode
}

// startPeerCluster starts a cluster of the nodes ids, each with base flags
// and extra(id), and waits until a leader takes writes.
func startPeerCluster(ctx context.Context, t *testing.T, ids []string, extra func(id string) []string) *peerCluster {
	t.Helper()
	dir := t.TempDir()
	ports, err := launcher.FreePorts("127.0.0.1", 2*len(ids))
	if err != nil {
		t.Fatal(err)
	}
	tc := &peerCluster{t: t, logDir: dir}
	var members []string
	for i, id := range ids {
		n := &peerNode{id: id, dataDir: filepath.Join(dir, id),
			httpAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*i])),
			raftAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[2*i+1]))}
		tc.nodes = append(tc.nodes, n)
		members = append(members, id+"="+n.raftAddr)
	}
	for _, n := range tc.nodes {
		n.base = []string{"--id=" + n.id, "--data-dir=" + n.dataDir, "--http-addr=" + n.httpAddr,
			"--raft-addr=" + n.raftAddr, "--cluster=" + strings.Join(members, ","), "--shutdown-timeout=5s"}
	}
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			if n.p == nil {
				continue
			}
			n.p.Kill()
			if t.Failed() {
				t.Logf("--- %s log tail:\n%s", n.id, n.p.LogTail(40))
			}
		}
	})
	for _, n := range tc.nodes {
		tc.start(n, extra(n.id))
	}
	for _, n := range tc.nodes {
		if _, err := n.p.HTTPAddr(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tc.waitWrites(ctx)
	return tc
}

// start starts n with its base flags and extra.
func (tc *peerCluster) start(n *peerNode, extra []string) {
	tc.t.Helper()
	p, err := launcher.NewProcess(launcher.ProcessConfig{ID: n.id, Bin: txlogdBin, Args: append(append([]string(nil), n.base...), extra...),
		DataDir: n.dataDir, LogDir: tc.logDir})
	if err != nil {
		tc.t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		tc.t.Fatal(err)
	}
	n.p = p
}

// restart stops n gracefully and starts it with extra, and waits until it
// serves HTTP.
func (tc *peerCluster) restart(ctx context.Context, n *peerNode, extra []string) {
	tc.t.Helper()
	if err := n.p.Stop(ctx); err != nil {
		tc.t.Fatalf("stop %s: %v", n.id, err)
	}
	tc.start(n, extra)
	if _, err := n.p.HTTPAddr(ctx); err != nil {
		tc.t.Fatal(err)
	}
}

func (tc *peerCluster) urls() []string {
	var out []string
	for _, n := range tc.nodes {
		out = append(out, n.url())
	}
	return out
}

// logs returns the logs of every node (all their runs).
func (tc *peerCluster) logs() map[string]string {
	out := map[string]string{}
	for _, n := range tc.nodes {
		b, _ := os.ReadFile(n.p.LogPath())
		out[n.id] = string(b)
	}
	return out
}

// waitWrites waits until a write through any node commits.
func (tc *peerCluster) waitWrites(ctx context.Context) {
	tc.t.Helper()
	cl := client.NewClient(client.ClientConfig{Endpoints: tc.urls(), Timeout: 5 * time.Second})
	waitUntil(ctx, tc.t, "a write commits", func() bool {
		res, err := cl.Submit(ctx, wire.TxRequest{Ops: []wire.Op{{Op: "put", Key: "probe", Value: json.RawMessage(`1`)}}}, wire.SubmitOptions{})
		return err == nil && res.Status == wire.StatusCommitted
	})
}

// caughtUp waits until node n's stale read of key gives want.
func caughtUp(ctx context.Context, t *testing.T, n *peerNode, key, want string) {
	t.Helper()
	cl := client.NewClient(client.ClientConfig{Timeout: 2 * time.Second})
	waitUntil(ctx, t, n.id+" has "+key, func() bool {
		kv, err := cl.GetFrom(ctx, n.url(), key, wire.ReadOptions{Consistency: wire.ConsistencyStale})
		return err == nil && string(kv.Value) == want
	})
}

// putOne writes key=value through urls and fails unless it commits within
// waitUntil's bound (a pending answer is asked again, with the same
// idempotency key, until it is final).
func putOne(ctx context.Context, t *testing.T, urls []string, key, value string) {
	t.Helper()
	cl := client.NewClient(client.ClientConfig{Endpoints: urls, Timeout: 10 * time.Second})
	var res wire.TxResult
	var err error
	waitUntil(ctx, t, "put "+key+" commits", func() bool {
		res, err = cl.Submit(ctx, wire.TxRequest{IdempotencyKey: "one-" + key, Ops: []wire.Op{{Op: "put", Key: key, Value: json.RawMessage(value)}}}, wire.SubmitOptions{})
		if err == nil && final(res.Status) && res.Status != wire.StatusCommitted {
			t.Fatalf("put %s = %+v, want committed", key, res)
		}
		return err == nil && res.Status == wire.StatusCommitted
	})
}

// clusterID returns the cluster's ID as GET /v1/cluster tells it.
func (tc *peerCluster) clusterID(ctx context.Context) string {
	tc.t.Helper()
	st, err := client.NewClient(client.ClientConfig{}).ClusterFrom(ctx, tc.nodes[0].url())
	if err != nil {
		tc.t.Fatal(err)
	}
	return st.ClusterID
}

// TestPeerTLS: a cluster with mutual TLS on the peer link (the client port
// plain) commits writes; a plain connection to its peer port is refused; a
// node whose certificate another CA signed cannot send Raft traffic or get
// the cluster's data, and the members log the refusal with its reason.
func TestPeerTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ids := []string{"n1", "n2", "n3"}
	pki := newPeerPKI(t, dir, "peers", ids...)
	tc := startPeerCluster(ctx, t, ids, func(id string) []string { return pki.args(id, "tls") })
	for i := range 20 {
		putOne(ctx, t, tc.urls(), "tls/"+strconv.Itoa(i), strconv.Itoa(i))
	}
	for _, n := range tc.nodes {
		caughtUp(ctx, t, n, "tls/19", "19")
	}
	cid := tc.clusterID(ctx)

	// A plain dialer, even of the right cluster, is refused.
	for _, n := range tc.nodes {
		c, err := peerDial(ctx, t, n.raftAddr, cid, "n9", peerlink.KindRaft)
		if err == nil {
			c.Close()
		}
		if !errors.Is(err, peerlink.ErrTLSRequired) {
			t.Fatalf("plain Raft dial to %s = %v, want ErrTLSRequired", n.id, err)
		}
	}
	// A node of the same ID with the right CA's certificate is taken (the
	// check below fails for the CA alone).
	if err := pki.dialAs(ctx, t, pki, tc.nodes[0].raftAddr, cid, "n2", peerlink.KindRaft); err != nil {
		t.Fatalf("Raft dial with n2's certificate = %v, want accepted", err)
	}

	// A rogue node: a certificate from another CA. Its Raft connections
	// are refused, and every member logs why.
	rogue := newPeerPKI(t, dir, "rogue", "n4")
	waitUntil(ctx, t, "the members log the refused certificate", func() bool {
		refused := 0
		for _, n := range tc.nodes {
			if err := rogue.dialAs(ctx, t, pki, n.raftAddr, cid, "n4", peerlink.KindRaft); err == nil {
				t.Fatalf("Raft dial to %s with another CA's certificate accepted", n.id)
			}
		}
		for _, log := range tc.logs() {
			if strings.Contains(log, "peer TLS handshake refused") && strings.Contains(log, "unknown authority") {
				refused++
			}
		}
		return refused == len(tc.nodes)
	})
	// It asks to join through n1 (the client port is open): the leader
	// probes its peer link first, which fails TLS, and refuses it.
	ports, err := launcher.FreePorts("127.0.0.1", 1)
	if err != nil {
		t.Fatal(err)
	}
	n4dir := filepath.Join(dir, "n4")
	n4 := &peerNode{id: "n4", dataDir: n4dir, raftAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	p4 := startProcess(t, launcher.ProcessConfig{ID: "n4", DataDir: n4dir, LogDir: dir,
		Args: append([]string{"--id=n4", "--data-dir=" + n4dir, "--http-addr=127.0.0.1:0", "--raft-addr=" + n4.raftAddr,
			"--join=" + tc.nodes[0].url(), "--shutdown-timeout=3s"}, rogue.args("n4", "tls")...)})
	if n4.httpAddr, err = p4.HTTPAddr(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(ctx, t, "the leader refuses the join, and the rogue hears why", func() bool {
		refused := false
		for _, log := range tc.logs() {
			refused = refused || (strings.Contains(log, "join refused") && strings.Contains(log, "unknown authority"))
		}
		b, _ := os.ReadFile(p4.LogPath())
		return refused && strings.Contains(string(b), "join failed") && strings.Contains(string(b), "forbidden")
	})
	putOne(ctx, t, tc.urls(), "after-rogue", "1")
	for _, n := range tc.nodes {
		caughtUp(ctx, t, n, "after-rogue", "1")
	}
	cl := client.NewClient(client.ClientConfig{Timeout: 2 * time.Second})
	st, err := cl.ClusterFrom(ctx, tc.nodes[0].url())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Members) != 3 {
		t.Fatalf("members = %+v, want n1, n2, n3 alone", st.Members)
	}
	if kv, err := cl.GetFrom(ctx, n4.url(), "after-rogue", wire.ReadOptions{Consistency: wire.ConsistencyStale}); err == nil {
		t.Fatalf("the rogue node has after-rogue = %s", kv.Value)
	}
}

// rollLoad writes unique keys through every node until stopped, and keeps
// every acknowledged (committed) write.
type rollLoad struct {
	halt  atomic.Bool
	next  atomic.Int64
	mu    sync.Mutex
	acked map[string]string // key → value
	fails atomic.Int64
	wg    sync.WaitGroup
}

func startRollLoad(ctx context.Context, urls []string, clients int) *rollLoad {
	l := &rollLoad{acked: map[string]string{}}
	for w := range clients {
		eps := append(append([]string(nil), urls[w%len(urls):]...), urls[:w%len(urls)]...)
		cl := client.NewClient(client.ClientConfig{Endpoints: eps, Timeout: 20 * time.Second})
		l.wg.Go(func() {
			for !l.halt.Load() && ctx.Err() == nil {
				n := l.next.Add(1)
				key, val := fmt.Sprintf("roll/%d", n), strconv.FormatInt(n, 10)
				a := submit(ctx, cl, wire.TxRequest{IdempotencyKey: key, Ops: []wire.Op{{Op: "put", Key: key, Value: json.RawMessage(val)}}})
				if a.err != nil || a.res.Status != wire.StatusCommitted {
					l.fails.Add(1)
					continue
				}
				l.mu.Lock()
				l.acked[key] = val
				l.mu.Unlock()
			}
		})
	}
	return l
}

// committed returns how many writes were acknowledged so far.
func (l *rollLoad) committed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked)
}

// waitMore waits until n more writes are acknowledged.
func (l *rollLoad) waitMore(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	from := l.committed()
	waitUntil(ctx, t, "writes under load", func() bool { return l.committed() >= from+n })
}

func (l *rollLoad) stop() map[string]string {
	l.halt.Store(true)
	l.wg.Wait()
	return l.acked
}

// TestPeerTLSRollingMove: a plain cluster under a write load moves to peer
// TLS one node at a time without a stop: each node restarts with
// --peer-tls-mode=both and its certificate, then each with
// --peer-tls-mode=tls. Every acknowledged write is read back at the end.
func TestPeerTLSRollingMove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ids := []string{"n1", "n2", "n3"}
	pki := newPeerPKI(t, dir, "peers", ids...)
	tc := startPeerCluster(ctx, t, ids, func(string) []string { return nil })
	load := startRollLoad(ctx, tc.urls(), 4)
	load.waitMore(ctx, t, 50)
	for _, mode := range []string{"both", "tls"} {
		for _, n := range tc.nodes {
			tc.restart(ctx, n, pki.args(n.id, mode))
			load.waitMore(ctx, t, 50) // the cluster takes writes again
			// A write through the restarted node alone: it reaches the
			// others (forwarding to the leader, or replicating as the
			// leader) in its new mode, whatever theirs.
			putOne(ctx, t, []string{n.url()}, "via/"+n.id+"/"+mode, "1")
			t.Logf("%s restarted with --peer-tls-mode=%s; %d writes acknowledged", n.id, mode, load.committed())
		}
	}
	acked := load.stop()
	t.Logf("%d writes acknowledged, %d not", len(acked), load.fails.Load())
	// Plain is refused now.
	cid := tc.clusterID(ctx)
	if c, err := peerDial(ctx, t, tc.nodes[0].raftAddr, cid, "n9", peerlink.KindRaft); !errors.Is(err, peerlink.ErrTLSRequired) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("plain dial after the move = %v, want ErrTLSRequired", err)
	}
	cl := client.NewClient(client.ClientConfig{Endpoints: tc.urls(), Timeout: 20 * time.Second})
	for key, val := range acked {
		kv, err := cl.Get(ctx, key, wire.ReadOptions{Consistency: wire.ConsistencyLinearizable})
		if err != nil || string(kv.Value) != val {
			t.Fatalf("acknowledged %s=%s read back as %+v, %v", key, val, kv, err)
		}
	}
	for _, n := range tc.nodes {
		caughtUp(ctx, t, n, "roll/1", acked["roll/1"])
	}
}

// TestPeerSecret: a cluster whose peers share a secret commits writes; a
// node restarted with another secret is refused by both others (they log
// it) and gets no entry; when its file is fixed, it is re-read and the node
// catches up.
func TestPeerSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	secretFile := func(name, secret string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := secretFile("good.secret", "the-cluster-secret-0123456789")
	tc := startPeerCluster(ctx, t, []string{"n1", "n2", "n3"}, func(string) []string { return []string{"--peer-secret-file=" + good} })
	putOne(ctx, t, tc.urls(), "s/1", "1")
	n3 := tc.nodes[2]
	caughtUp(ctx, t, n3, "s/1", "1")

	wrong := secretFile("n3.secret", "another-secret-0123456789")
	tc.restart(ctx, n3, []string{"--peer-secret-file=" + wrong})
	putOne(ctx, t, tc.urls()[:2], "s/2", "2")
	waitUntil(ctx, t, "n1 and n2 log the refused secret", func() bool {
		logs := tc.logs()
		return strings.Contains(logs["n1"], "peer shared secret refused") && strings.Contains(logs["n2"], "peer shared secret refused")
	})
	cl := client.NewClient(client.ClientConfig{Timeout: 2 * time.Second})
	if kv, err := cl.GetFrom(ctx, n3.url(), "s/2", wire.ReadOptions{Consistency: wire.ConsistencyStale}); err == nil {
		t.Fatalf("n3 with the wrong secret has s/2 = %s", kv.Value)
	}

	// The file fixed: re-read without a restart.
	secretFile("n3.secret", "the-cluster-secret-0123456789")
	caughtUp(ctx, t, n3, "s/2", "2")
}

// TestPeerCertAllowedCN: with --peer-cert-allowed-cn, a certificate the
// cluster's own CA signed for another name is refused, and logged.
func TestPeerCertAllowedCN(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ids := []string{"n1", "n2", "n3"}
	pki := newPeerPKI(t, dir, "peers", append(ids, "intruder")...)
	tc := startPeerCluster(ctx, t, ids, func(id string) []string {
		return append(pki.args(id, "tls"), "--peer-cert-allowed-cn=n1,n2,n3")
	})
	putOne(ctx, t, tc.urls(), "cn/1", "1")
	cid := tc.clusterID(ctx)
	if err := pki.dialAs(ctx, t, pki, tc.nodes[0].raftAddr, cid, "n2", peerlink.KindRaft); err != nil {
		t.Fatalf("Raft dial with n2's certificate = %v, want accepted", err)
	}
	waitUntil(ctx, t, "the members log the CN not allowed", func() bool {
		for _, n := range tc.nodes {
			if err := pki.dialAs(ctx, t, pki, n.raftAddr, cid, "intruder", peerlink.KindRaft); err == nil {
				t.Fatalf("Raft dial to %s with the CN intruder accepted", n.id)
			}
		}
		refused := 0
		for _, log := range tc.logs() {
			if strings.Contains(log, "peer TLS handshake refused") && strings.Contains(log, `\"intruder\" is not allowed`) {
				refused++
			}
		}
		return refused == len(tc.nodes)
	})
}

// TestPeerTLSRotation: under a write load, the peer CA is rotated without a
// restart: the new CA is added to every node's bundle, every node's
// certificate is replaced by one the new CA signed, and the old CA is
// dropped. Each step is seen on the next handshake; every acknowledged
// write is read back, and a certificate of the old CA is refused at the end.
func TestPeerTLSRotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ids := []string{"n1", "n2", "n3"}
	old := newPeerPKI(t, dir, "old", ids...)
	bundle := filepath.Join(dir, "bundle.crt")
	replaceFile(t, bundle, old.ca.CertPEM)
	cur := &peerPKI{caPEM: bundle, files: map[string]certgen.Files{}}
	for _, id := range ids { // the files every node reads, rewritten below
		cur.files[id] = certgen.Files{Cert: filepath.Join(dir, id+".crt"), Key: filepath.Join(dir, id+".key")}
		replaceFile(t, cur.files[id].Cert, old.leafs[id].CertPEM)
		replaceFile(t, cur.files[id].Key, old.leafs[id].KeyPEM)
	}
	tc := startPeerCluster(ctx, t, ids, func(id string) []string { return cur.args(id, "tls") })
	cid := tc.clusterID(ctx)
	load := startRollLoad(ctx, tc.urls(), 4)
	load.waitMore(ctx, t, 50)

	next := newPeerPKI(t, dir, "next", append(ids, "probe")...)
	replaceFile(t, bundle, append(append([]byte(nil), old.ca.CertPEM...), next.ca.CertPEM...))
	for _, id := range ids {
		replaceFile(t, cur.files[id].Key, next.leafs[id].KeyPEM)
		replaceFile(t, cur.files[id].Cert, next.leafs[id].CertPEM)
	}
	// Each node presents the new certificate and takes one of the new CA.
	for _, n := range tc.nodes {
		waitUntil(ctx, t, n.id+" presents the new certificate", func() bool {
			return next.dialAs(ctx, t, next, n.raftAddr, cid, "probe", peerlink.KindRaft) == nil
		})
	}
	load.waitMore(ctx, t, 50)
	replaceFile(t, bundle, next.ca.CertPEM)
	for _, n := range tc.nodes {
		waitUntil(ctx, t, n.id+" refuses the old CA", func() bool {
			return old.dialAs(ctx, t, next, n.raftAddr, cid, "n1", peerlink.KindRaft) != nil
		})
	}
	// New connections everywhere: a restart of each node in turn.
	for _, n := range tc.nodes {
		tc.restart(ctx, n, cur.args(n.id, "tls"))
		load.waitMore(ctx, t, 50)
		putOne(ctx, t, []string{n.url()}, "rotated/"+n.id, "1")
	}
	acked := load.stop()
	t.Logf("%d writes acknowledged, %d not", len(acked), load.fails.Load())
	cl := client.NewClient(client.ClientConfig{Endpoints: tc.urls(), Timeout: 20 * time.Second})
	for key, val := range acked {
		kv, err := cl.Get(ctx, key, wire.ReadOptions{Consistency: wire.ConsistencyLinearizable})
		if err != nil || string(kv.Value) != val {
			t.Fatalf("acknowledged %s=%s read back as %+v, %v", key, val, kv, err)
		}
	}
}
