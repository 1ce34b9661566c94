package peerlink

import (
	"context"
	"net"
	"sync"
	"time"
)

// Conn is an accepted connection of the link, its header read. Every Read
// has a deadline at most Config.IdleTimeout away, or the earlier one its user
// set: a peer that sends nothing for that long loses the connection.
type Conn struct {
	net.Conn
	remote Header
	idle   time.Duration

	mu   sync.Mutex // orders the deadlines Read sets with its user's
	user time.Time  // the read deadline the user set; zero: none
}

// RemoteNode returns the node ID the dialer sent in its header.
func (c *Conn) RemoteNode() string { return c.remote.Node }

// RemoteCluster returns the cluster ID the dialer sent in its header.
func (c *Conn) RemoteCluster() ClusterID { return c.remote.Cluster }

// Read reads with the idle deadline.
func (c *Conn) Read(p []byte) (int, error) {
	c.mu.Lock()
	dl := time.Now().Add(c.idle)
	if !c.user.IsZero() && c.user.Before(dl) {
		dl = c.user
	}
	_ = c.Conn.SetReadDeadline(dl)
	c.mu.Unlock()
	return c.Conn.Read(p)
}

// SetReadDeadline sets the user's read deadline: a Read blocked now ends by
// it, and later Reads end by it or their idle deadline, whichever is first.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.user = t
	if t.IsZero() {
		t = time.Now().Add(c.idle)
	}
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets the read deadline as SetReadDeadline does, and the write
// deadline.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetWriteDeadline(t)
}

type remoteKey struct{}

// ConnContext returns ctx carrying the remote node of c, when c is a Conn of
// the link: for http.Server.ConnContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if pc, ok := c.(*Conn); ok {
		return WithRemoteNode(ctx, pc.RemoteNode())
	}
	return ctx
}

// WithRemoteNode returns ctx carrying node as the remote node.
func WithRemoteNode(ctx context.Context, node string) context.Context {
	return context.WithValue(ctx, remoteKey{}, node)
}

// RemoteNode returns the node ID of the peer that sent the request or
// stream ctx belongs to (ConnContext, WithRemoteNode); "" when none did: a
// request on the client port, or a proposal made on this node.
func RemoteNode(ctx context.Context) string {
	s, _ := ctx.Value(remoteKey{}).(string)
	return s
}
