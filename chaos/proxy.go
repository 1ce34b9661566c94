package chaos

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
)

// Network is a set of in-process TCP proxies, one per direction of each Raft
// link: the link from→to carries the connections that node from dials to reach
// node to. Each node is started with --raft-dial pointing at its own links, so
// the Network sees every Raft byte and can hold it back.
//
// A cut direction of a link stalls: the proxy stops reading from that side and
// holds what it already read, so the sender's writes pile up in kernel buffers
// and then block, as with packets dropped by a partition. Nothing is lost or
// reordered inside a connection. Heal reopens every direction and closes the
// connections that were cut, as TCP would after retransmissions gave up; Raft
// dials again. Connections made during a cut are accepted and stall.
//
// The proxies live in this process, so they vanish with it: a crashed run leaves
// no rules behind. They only see Raft traffic; HTTP between nodes (forwarded
// writes and reads) and to Redis is not cut.
type Network struct {
	log *slog.Logger

	mu    sync.Mutex
	links map[[2]string]*link // by {from, to}
}

// NewNetwork returns an empty Network; Listen adds links.
func NewNetwork(log *slog.Logger) *Network {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Network{log: log.With("component", "chaos-net"), links: map[[2]string]*link{}}
}

// Listen adds the link from→to, listening on a free loopback port and
// forwarding to upstream (to's Raft address), and returns the address from must
// dial.
func (n *Network) Listen(from, to, upstream string) (string, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", "0"))
	if err != nil {
		return "", fmt.Errorf("listen for link %s→%s: %w", from, to, err)
	}
	l := &link{from: from, to: to, upstream: upstream, ln: ln, log: n.log, changed: make(chan struct{}), conns: map[*pipe]struct{}{}}
	n.mu.Lock()
	if old := n.links[[2]string{from, to}]; old != nil {
		old.close()
	}
	n.links[[2]string{from, to}] = l
	n.mu.Unlock()
	go l.serve()
	return ln.Addr().String(), nil
}

// DialArgs adds a link from id to each of the other nodes of raftAddrs and
// returns the --raft-dial flag that sends id's Raft connections through them
// (and names id's own address, which Raft looks up too). It fits
// ClusterConfig.NodeArgs.
func (n *Network) DialArgs(id string, raftAddrs map[string]string) ([]string, error) {
	peers := make([]string, 0, len(raftAddrs))
	for p := range raftAddrs {
		if p != id {
			peers = append(peers, p)
		}
	}
	sort.Strings(peers)
	dial := make([]string, 0, len(peers)+1)
	if addr, ok := raftAddrs[id]; ok {
		dial = append(dial, id+"="+addr)
	}
	for _, p := range peers {
		addr, err := n.Listen(id, p, raftAddrs[p])
		if err != nil {
			return nil, err
		}
		dial = append(dial, p+"="+addr)
	}
	return []string{"--raft-dial=" + strings.Join(dial, ",")}, nil
}

// Isolate cuts both directions of every link to and from id: a full partition
// of id from the rest.
func (n *Network) Isolate(id string) {
	n.each(func(l *link) {
		if l.from == id || l.to == id {
			l.set(true, true)
		}
	})
}

// CutInbound makes id deaf: what id sends reaches its peers, but nothing its
// peers send reaches id (neither their requests nor their replies).
func (n *Network) CutInbound(id string) {
	n.each(func(l *link) {
		switch {
		case l.from == id:
			l.set(false, true) // id's requests go out, the replies stall
		case l.to == id:
			l.set(true, false) // the peers' requests to id stall
		}
	})
}

// Heal reopens every link and closes the connections that were cut.
func (n *Network) Heal() {
	n.each(func(l *link) { l.set(false, false) })
}

// Close stops every proxy and closes its connections. The Network cannot be
// used afterwards.
func (n *Network) Close() {
	n.mu.Lock()
	links := n.links
	n.links = map[[2]string]*link{}
	n.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

func (n *Network) each(f func(*link)) {
	n.mu.Lock()
	links := make([]*link, 0, len(n.links))
	for _, l := range n.links {
		links = append(links, l)
	}
	n.mu.Unlock()
	for _, l := range links {
		f(l)
	}
}

// link is the proxy of one direction of one Raft link.
type link struct {
	from, to, upstream string
	ln                 net.Listener
	log                *slog.Logger

	mu sync.Mutex
	// cutFwd stalls bytes from the dialer (from) to the listener (to); cutBack
	// the replies. changed is closed and replaced on every change of them.
	cutFwd, cutBack bool
	changed         chan struct{}
	conns           map[*pipe]struct{}
	closed          bool
}

// pipe is one proxied connection.
type pipe struct {
	down, up net.Conn // the dialer's side and the upstream side
	wasCut   bool     // guarded by link.mu: a direction was cut while it lived
	once     sync.Once
}

func (p *pipe) close() {
	p.once.Do(func() {
		p.down.Close()
		p.up.Close()
	})
}

func (l *link) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return // closed
		}
		go l.handle(c)
	}
}

func (l *link) handle(down net.Conn) {
	up, err := net.DialTimeout("tcp", l.upstream, requestTimeout)
	if err != nil {
		down.Close() // the peer is down: the dialer sees its connection reset
		return
	}
	p := &pipe{down: down, up: up}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		p.close()
		return
	}
	l.conns[p] = struct{}{}
	p.wasCut = l.cutFwd || l.cutBack
	l.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() { l.copy(p, up, down, true) })
	wg.Go(func() { l.copy(p, down, up, false) })
	wg.Wait()
	p.close()
	l.mu.Lock()
	delete(l.conns, p)
	l.mu.Unlock()
}

// copy moves bytes from src to dst, holding them while the direction is cut.
func (l *link) copy(p *pipe, dst, src net.Conn, fwd bool) {
	defer p.close()
	buf := make([]byte, 32<<10)
	for {
		if !l.waitOpen(fwd) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !l.waitOpen(fwd) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
					return
				}
			}
			return
		}
	}
}

// waitOpen blocks while direction fwd of l is cut; false once l is closed.
func (l *link) waitOpen(fwd bool) bool {
	for {
		l.mu.Lock()
		cut := l.cutBack
		if fwd {
			cut = l.cutFwd
		}
		closed, changed := l.closed, l.changed
		l.mu.Unlock()
		if closed {
			return false
		}
		if !cut {
			return true
		}
		<-changed
	}
}

// set cuts or opens the two directions. Opening both closes the connections
// that lived through a cut, before the copiers holding their bytes wake up: a
// held byte must not get through on a connection the heal resets.
func (l *link) set(cutFwd, cutBack bool) {
	l.mu.Lock()
	if l.cutFwd == cutFwd && l.cutBack == cutBack {
		l.mu.Unlock()
		return
	}
	l.cutFwd, l.cutBack = cutFwd, cutBack
	stale := 0
	for p := range l.conns {
		if cutFwd || cutBack {
			p.wasCut = true
		} else if p.wasCut {
			p.close()
			stale++
		}
	}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	l.log.Debug("link changed", "from", l.from, "to", l.to, "cut_fwd", cutFwd, "cut_back", cutBack, "reset", stale)
}

func (l *link) close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	close(l.changed)
	l.changed = make(chan struct{})
	conns := make([]*pipe, 0, len(l.conns))
	for p := range l.conns {
		conns = append(conns, p)
	}
	l.mu.Unlock()
	l.ln.Close()
	for _, p := range conns {
		p.close()
	}
}
