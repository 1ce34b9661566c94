package node

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestEveryStopsAtClose runs a background loop whose every round reports a
// full batch, as a replay with a long backlog does, and ends the node's life:
// the loop must return at once, not go on draining the backlog (or, with a
// pending tick, start another round) while Close waits for it.
func TestEveryStopsAtClose(t *testing.T) {
	n := &Node{}
	n.life, n.endLife = context.WithCancel(context.Background())
	var rounds atomic.Int64
	started := make(chan struct{})
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		every(n.life, time.Millisecond, nil, func() bool {
			if rounds.Add(1) == 1 {
				close(started)
			}
			time.Sleep(100 * time.Microsecond)
			return true // a full batch: go on at once
		})
	}()
	<-started
	n.endLife()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatalf("every still running 5s after the node's life ended (%d rounds)", rounds.Load())
	}
	after := rounds.Load()
	time.Sleep(20 * time.Millisecond)
	if got := rounds.Load(); got != after {
		t.Fatalf("%d rounds after every returned", got-after)
	}
}

// TestCloseWithoutRun: a node opened and closed without Run frees its HTTP
// port (and its Raft port and data dir lock): the same config opens again.
func TestCloseWithoutRun(t *testing.T) {
	addrs := freeAddrs(t, 2)
	cfg := Config{
		ID:       "n1",
		DataDir:  t.TempDir(),
		HTTPAddr: addrs[0],
		RaftAddr: addrs[1],
		Cluster:  []Peer{{ID: "n1", RaftAddr: addrs[1]}},
	}
	for i := range 2 {
		n, err := Open(context.Background(), cfg)
		if err != nil {
			t.Fatalf("open %d: %v", i+1, err)
		}
		if err := n.Close(); err != nil {
			t.Fatalf("close %d: %v", i+1, err)
		}
	}
	ln, err := net.Listen("tcp", addrs[0])
	if err != nil {
		t.Fatalf("the HTTP port is still held after Close: %v", err)
	}
	ln.Close()
}
