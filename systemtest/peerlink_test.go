package systemtest

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/peerlink"
)

// peerDial opens a connection of kind on the peer link of the node at addr,
// as a node named id of the cluster with ID cluster (hex, as GET /v1/cluster
// answers it) would: the one place the tests speak the peer link's header.
func peerDial(ctx context.Context, t *testing.T, addr, cluster, id string, kind byte) (net.Conn, error) {
	t.Helper()
	var cid peerlink.ClusterID
	if b, err := hex.DecodeString(cluster); err != nil || len(b) != len(cid) {
		t.Fatalf("cluster id %q: want %d bytes in hex", cluster, len(cid))
	} else {
		copy(cid[:], b)
	}
	l := peerlink.New(&noListener{done: make(chan struct{})}, peerlink.Config{NodeID: id, ClusterID: func() peerlink.ClusterID { return cid }})
	defer l.Close()
	return l.Dial(ctx, addr, kind)
}

// noListener accepts nothing: a link that only dials.
type noListener struct{ done chan struct{} }

func (l *noListener) Accept() (net.Conn, error) { <-l.done; return nil, net.ErrClosed }
func (l *noListener) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}
func (l *noListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// TestPeerLinkDeclaredFrames: propose streams opened on the leader's peer
// link that each declare a 64 MiB message and send a few bytes of it cost
// the leader about what arrived, not what was declared; a message over the
// limit, a bad header and an HTTP request on the peer port are refused; the
// client port serves no internal route. The cluster serves on, and its logs
// agree and hold every acknowledged write.
func TestPeerLinkDeclaredFrames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	leader := mustLeaderID(ctx, t, c)
	raftAddr := c.RaftAddr(leader)
	var results []ack
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	st, err := cl.ClusterFrom(ctx, c.URL(leader))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		results = append(results, blindPut(ctx, cl, int64(i)))
	}

	// The client port has no internal route.
	for _, path := range []string{"/v1/internal/propose", "/v1/internal/stream"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.URL(leader)+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("POST %s on the client port = %d, want 404", path, resp.StatusCode)
		}
	}

	metricsURL := c.URL(leader) + "/metrics"
	allocated := func() float64 {
		v, ok := scrapeMetrics(ctx, t, metricsURL).value("go_memstats_alloc_bytes_total")
		if !ok {
			t.Fatal("no go_memstats_alloc_bytes_total")
		}
		return v
	}
	before := allocated()
	const streams = 10
	for range streams {
		conn, err := peerDial(ctx, t, raftAddr, st.ClusterID, "intruder", peerlink.KindStream)
		if err != nil {
			t.Fatalf("open a propose stream on the peer link: %v", err)
		}
		msg := append(binary.AppendUvarint(nil, 64<<20), "a few bytes"...)
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
		// Half-closed: the leader reads the few bytes, then the end, and
		// closes; the EOF here says it is done with the stream.
		conn.(*net.TCPConn).CloseWrite()
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.Copy(io.Discard, conn); err != nil {
			t.Fatalf("stream after a cut-short message: %v, want the leader to close it", err)
		}
		conn.Close()
	}
	// The same through the internal router (kind H): a POST that declares
	// a 64 MiB body and sends a few bytes of it.
	for range streams {
		conn, err := peerDial(ctx, t, raftAddr, st.ClusterID, "intruder", peerlink.KindHTTP)
		if err != nil {
			t.Fatalf("open an internal request on the peer link: %v", err)
		}
		fmt.Fprintf(conn, "POST /v1/internal/propose HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\na few bytes", 64<<20)
		conn.(*net.TCPConn).CloseWrite()
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("a POST whose body was cut short: %v, want an answer", err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a POST whose body was cut short = %d, want 400", resp.StatusCode)
		}
	}
	after := allocated()
	if got := after - before; got > 48<<20 {
		t.Fatalf("%d streams and %d requests declaring 64 MiB each made the leader allocate %.0f MiB, want a few", streams, streams, got/(1<<20))
	}
	t.Logf("%d streams and %d requests declaring 64 MiB each: the leader allocated %.1f MiB (with its own work meanwhile)", streams, streams, (after-before)/(1<<20))

	// Over the limit: the stream ends at once.
	conn, err := peerDial(ctx, t, raftAddr, st.ClusterID, "intruder", peerlink.KindStream)
	if err != nil {
		t.Fatal(err)
	}
	conn.Write(binary.AppendUvarint(nil, 1<<40))
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.Copy(io.Discard, conn); err != nil || n != 0 {
		t.Errorf("a stream declaring 1 TiB: %d bytes, %v; want closed with no answer", n, err)
	}
	conn.Close()

	// Not the link's header: refused.
	raw, err := net.Dial("tcp", raftAddr)
	if err != nil {
		t.Fatal(err)
	}
	raw.Write([]byte("GET /v1/internal/stream HTTP/1.1\r\nHost: x\r\n\r\n"))
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer, _ := io.ReadAll(raw)
	raw.Close()
	if len(answer) == 0 || answer[0] != peerlink.StatusBadHeader {
		t.Errorf("an HTTP request on the peer port was answered %q, want status %d", answer, peerlink.StatusBadHeader)
	}

	for i := 20; i < 40; i++ {
		results = append(results, blindPut(ctx, cl, int64(i)))
	}
	checkSettled(ctx, t, c, results)
}
