package node

import (
	"testing"

	"github.com/txlog/txlog/peerlink"
)

// TestPeersAddr: without Raft, no peer has an address; --raft-dial is
// Raft's alone.
func TestPeersAddr(t *testing.T) {
	link, err := peerlink.Listen("127.0.0.1:0", peerlink.Config{NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	p := newPeers("n1", nil, nil, link)
	t.Cleanup(func() { p.streams.Close() })
	if got, ok := p.addr("n3"); ok {
		t.Fatalf("addr(n3) = %q, want none without Raft", got)
	}
	if p.client == nil || p.streams == nil {
		t.Fatal("newPeers built no client or streams")
	}
}
