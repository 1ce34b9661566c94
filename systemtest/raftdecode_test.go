package systemtest

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/peerlink"
)

// Raft's RPC types on a KindRaft connection (hashicorp/raft's
// net_transport.go): the first byte of each request.
const (
	raftAppendEntries byte = 0
	raftRequestVote   byte = 1
)

// mpMapOf returns a msgpack map of one field, name, whose value is v.
func mpMapOf(name string, v []byte) []byte {
	return append(append([]byte{0x81, 0xa0 | byte(len(name))}, name...), v...)
}

// mpStr32Of returns a msgpack str32 that declares n bytes, with tail after it.
func mpStr32Of(n uint32, tail string) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0xdb}, n), tail...)
}

// TestRaftDeclaredLengths: Raft connections on the leader's peer link whose
// AppendEntries or RequestVote declares a huge value and sends ten bytes of
// it cost the leader about what arrived, not what was declared (before the
// patch group 04-bounded-decode, 1 GiB each for an entry); one over the
// decoder's bounds is closed at once. The cluster serves on, and its logs
// agree and hold every acknowledged write.
func TestRaftDeclaredLengths(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := startCluster(t)
	leader := mustLeaderID(ctx, t, c)
	raftAddr := c.RaftAddr(leader)
	var results []ack
	cl := client.NewClient(client.ClientConfig{Endpoints: c.HTTPAddrs()})
	for i := range 20 {
		results = append(results, blindPut(ctx, cl, int64(i)))
	}

	st, err := cl.ClusterFrom(ctx, c.URL(leader))
	if err != nil {
		t.Fatal(err)
	}
	metricsURL := c.URL(leader) + "/metrics"
	metric := func(name string) float64 {
		v, ok := scrapeMetrics(ctx, t, metricsURL).value(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		return v
	}
	// send writes msg on a new Raft connection, half-closes it and waits
	// until the leader, having read the few bytes and then the end, closes
	// it.
	send := func(what string, msg []byte) {
		t.Helper()
		conn, err := peerDial(ctx, t, raftAddr, st.ClusterID, "intruder", peerlink.KindRaft)
		if err != nil {
			t.Fatalf("open a Raft connection on the peer link: %v", err)
		}
		defer conn.Close()
		if _, err := conn.Write(msg); err != nil {
			t.Fatal(err)
		}
		conn.(*net.TCPConn).CloseWrite()
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		if n, err := io.Copy(io.Discard, conn); err != nil || n != 0 {
			t.Fatalf("%s: %d bytes, %v; want the leader to close the connection unanswered", what, n, err)
		}
	}

	hugeEntry := append([]byte{raftAppendEntries}, mpMapOf("Entries", append([]byte{0x91}, mpMapOf("Data", mpStr32Of(1<<30, "0123456789"))...))...)
	manyEntries := append([]byte{raftAppendEntries}, mpMapOf("Entries", append(binary.BigEndian.AppendUint32([]byte{0xdd}, 1<<16), mpMapOf("Index", []byte{7})...))...)
	hugeVote := append([]byte{raftRequestVote}, mpMapOf("Candidate", mpStr32Of(1<<32-1, "0123456789"))...)
	before := metric("go_memstats_alloc_bytes_total")
	const conns = 10
	for range conns {
		send("an AppendEntries declaring a 1 GiB entry", hugeEntry)
		send("an AppendEntries declaring 65536 entries", manyEntries)
		send("a RequestVote declaring a 4 GiB candidate", hugeVote)
	}
	after := metric("go_memstats_alloc_bytes_total")
	heap := metric("go_memstats_heap_inuse_bytes")
	// Each connection costs raft's buffers (a 256 KiB reader) and at most
	// 256 KiB for what it declared: under 20 MiB for the 30, with the
	// leader's own work meanwhile. Before the patch: 10 GiB.
	if got := after - before; got > 48<<20 {
		t.Fatalf("%d Raft connections declaring huge values made the leader allocate %.0f MiB, want a few", 3*conns, got/(1<<20))
	}
	t.Logf("%d Raft connections declaring huge values: the leader allocated %.1f MiB (with its own work meanwhile); heap in use after: %.1f MiB",
		3*conns, (after-before)/(1<<20), heap/(1<<20))
	if heap > 256<<20 {
		t.Errorf("the leader's heap in use is %.0f MiB after the hostile connections, want it small", heap/(1<<20))
	}

	// Over the decoder's bound (an entry of 4 GiB): closed at once.
	send("an AppendEntries declaring a 4 GiB entry",
		append([]byte{raftAppendEntries}, mpMapOf("Entries", append([]byte{0x91}, mpMapOf("Data", mpStr32Of(1<<32-1, ""))...))...))

	for i := 20; i < 40; i++ {
		results = append(results, blindPut(ctx, cl, int64(i)))
	}
	checkSettled(ctx, t, c, results)
}
