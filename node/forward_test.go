package node

import (
	"testing"
	"time"

	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/node/peer"
)

// forwardNode returns a follower that forwards in mode (ForwardStream or
// ForwardHTTP). The forwarding itself is node/peer's, and tested there.
func forwardNode(t *testing.T, mode string) *Node {
	c := client.NewClient(client.ClientConfig{MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond})
	n := &Node{cfg: Config{Forward: mode}, client: c, streams: peer.NewStreams(c)}
	n.fwd = newForwarder(n.cfg, c, n.streams)
	t.Cleanup(func() { n.streams.Close() })
	return n
}
