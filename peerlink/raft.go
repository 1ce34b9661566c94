package peerlink

import (
	"context"
	"net"
	"sync"
	"time"
)

// RaftLayer is the link's kind KindRaft as replication wants it: a listener
// of Raft's connections and a dialer. replication adapts it to hashicorp/raft's
// StreamLayer.
type RaftLayer struct {
	net.Listener
	l *Link
}

// Raft returns the RaftLayer of the link.
func (l *Link) Raft() *RaftLayer {
	return &RaftLayer{Listener: l.Listener(KindRaft), l: l}
}

// Dial opens a Raft connection to the link at addr within timeout.
//
// hashicorp/raft keeps connections in a pool, where one may sit unused for
// longer than the peer's Config.IdleTimeout, which then closes it: the next
// RPC on it would fail, and a vote lost that way costs an election. So a
// connection that has been quiet for half the idle timeout is dialled again,
// transparently, before its next write: between two RPCs raft's connection
// carries nothing, so the new one continues where the old one stopped.
func (rl *RaftLayer) Dial(addr string, timeout time.Duration) (net.Conn, error) {
	dial := func() (net.Conn, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return rl.l.Dial(ctx, addr, KindRaft)
	}
	c, err := dial()
	if err != nil {
		return nil, err
	}
	return &raftConn{Conn: c, dial: dial, staleAfter: rl.l.cfg.IdleTimeout / 2, used: time.Now()}, nil
}

// raftConn is a dialled Raft connection that is dialled again when it has
// been quiet too long (RaftLayer.Dial). hashicorp/raft uses one from one
// goroutine at a time; its deadlines are kept for the new connection.
type raftConn struct {
	net.Conn
	dial       func() (net.Conn, error)
	staleAfter time.Duration

	mu     sync.Mutex
	used   time.Time // end of the last read or write
	rd, wd time.Time // deadlines set
}

func (c *raftConn) conn() net.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Conn
}

func (c *raftConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if time.Since(c.used) > c.staleAfter {
		if nc, err := c.dial(); err == nil {
			c.Conn.Close()
			c.Conn = nc
			_ = nc.SetReadDeadline(c.rd)
			_ = nc.SetWriteDeadline(c.wd)
		}
	}
	conn := c.Conn
	c.mu.Unlock()
	n, err := conn.Write(p)
	c.touch()
	return n, err
}

func (c *raftConn) Read(p []byte) (int, error) {
	n, err := c.conn().Read(p)
	c.touch()
	return n, err
}

func (c *raftConn) touch() {
	c.mu.Lock()
	c.used = time.Now()
	c.mu.Unlock()
}

func (c *raftConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.rd, c.wd = t, t
	conn := c.Conn
	c.mu.Unlock()
	return conn.SetDeadline(t)
}

func (c *raftConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rd = t
	conn := c.Conn
	c.mu.Unlock()
	return conn.SetReadDeadline(t)
}

func (c *raftConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wd = t
	conn := c.Conn
	c.mu.Unlock()
	return conn.SetWriteDeadline(t)
}

func (c *raftConn) Close() error { return c.conn().Close() }
