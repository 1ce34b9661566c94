package node

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/node/peer"
	"github.com/txlog/txlog/replication"
	"github.com/txlog/txlog/store"
)

// peers is how this node finds and reaches the others: the node registry
// (id → HTTP address, txid node number) that nodes publish through the log,
// cached so forwarding does not read bbolt on every request; every other
// node's peer address, from the Raft configuration; and the
// clients of the peer link every part uses to talk to other nodes (the
// internal requests, node/peer.Client, and the propose streams). A node
// reaches the others on their peer address only: their HTTP address is for
// clients (redirects, /v1/cluster).
type peers struct {
	self string // this node's ID
	db   *store.DB
	raft *replication.Raft

	client  *peer.Client
	streams *peer.Streams
	// joinCfg is the --join client's settings (joinclient.go).
	joinCfg client.ClientConfig

	mu      sync.Mutex // guards the fields below
	nodes   map[string]store.NodeInfo
	fetched time.Time
	addrs   map[string]string // id → peer address, from the Raft configuration
	addrsAt time.Time
}

// peerTTL bounds how stale the caches may be. A node that restarts on another
// HTTP port is found again within this time (and at once on a cache miss).
const peerTTL = 500 * time.Millisecond

// newPeers returns the peers of node self, reached over link. raft may be
// nil (a node that refused to start Raft asks no leader).
//
// A peer is dialled at the address the Raft configuration gives it, for every
// kind but Raft's own connections, which --raft-dial may send elsewhere (a
// fault-injecting proxy in the tests): so a network fault made that way cuts
// Raft, as it always did, and not the other node-to-node calls.
func newPeers(self string, db *store.DB, raft *replication.Raft, link peer.Dialer) *peers {
	return &peers{self: self, db: db, raft: raft, client: peer.NewClient(link), streams: peer.NewStreams(link)}
}

// addr returns the peer address of node id, the one in this node's latest
// Raft configuration.
func (p *peers) addr(id string) (string, bool) {
	p.mu.Lock()
	a, ok := p.addrs[id]
	fresh := time.Since(p.addrsAt) < peerTTL
	p.mu.Unlock()
	if ok && fresh {
		return a, true
	}
	m := p.refreshAddrs()
	if a, ok2 := m[id]; ok2 {
		return a, true
	}
	return a, ok
}

// refreshAddrs reads the Raft configuration's addresses into the cache.
func (p *peers) refreshAddrs() map[string]string {
	if p.raft == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	members, err := p.raft.Members(ctx)
	if err != nil {
		return nil
	}
	m := make(map[string]string, len(members))
	for _, mb := range members {
		m[mb.ID] = mb.Addr
	}
	p.mu.Lock()
	p.addrs, p.addrsAt = m, time.Now()
	p.mu.Unlock()
	return m
}

// leaderAddr returns the peer address of node id, the leader: the one Raft
// knows the leader by.
func (p *peers) leaderAddr(id string) (string, bool) {
	if lid, addr := p.raft.Leader(); lid == id && addr != "" {
		return addr, true
	}
	return p.addr(id)
}

// joinClient returns a client of the public API of the cluster behind url
// (--join), which follows its redirects to the leader: a node that is not a
// member yet joins as any client would, on the client port.
func (p *peers) joinClient(url string) *client.Client {
	cc := p.joinCfg
	cc.Endpoints = []string{url}
	return client.NewClient(cc)
}

// lookup returns the registered info of node id.
func (p *peers) lookup(id string) (store.NodeInfo, bool) {
	p.mu.Lock()
	info, ok := p.nodes[id]
	fresh := time.Since(p.fetched) < peerTTL
	p.mu.Unlock()
	if ok && fresh {
		return info, true
	}
	all, err := p.refresh()
	if err != nil {
		return info, ok
	}
	info, ok = all[id]
	return info, ok
}

// all returns every registered node.
func (p *peers) all() map[string]store.NodeInfo {
	m, err := p.refresh()
	if err != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.nodes
	}
	return m
}

func (p *peers) refresh() (map[string]store.NodeInfo, error) {
	nodes, err := p.db.Reads().Nodes()
	if err != nil {
		return nil, err
	}
	m := make(map[string]store.NodeInfo, len(nodes))
	for _, n := range nodes {
		m[n.ID] = n
	}
	p.mu.Lock()
	p.nodes, p.fetched = m, time.Now()
	p.mu.Unlock()
	return m, nil
}

// viaLeader runs local on the leader, or remote against the leader's peer
// address, retrying across leader changes until ctx ends. A request forwarded
// to this node is never forwarded again.
func (p *peers) viaLeader(ctx context.Context, forwarded bool, local func(context.Context) error, remote func(context.Context, string) error) error {
	backoff := minBackoff
	for {
		leader, _ := p.raft.Leader()
		var err error
		switch {
		case leader == p.self:
			err = local(ctx)
		case forwarded:
			return wire.ErrNotLeader
		case leader == "":
			err = wire.ErrNoLeader
		default:
			if addr, ok := p.leaderAddr(leader); !ok {
				err = wire.ErrNoLeader
			} else {
				err = remote(ctx, addr)
			}
		}
		if !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// askLeader asks the other nodes for the leader, within ctx, following their
// leader hints, and reports the leader's peer address and whether its
// configuration lacks this node. It asks the members of this node's Raft
// configuration and the registered nodes, at their peer addresses. It
// reports "", false when no leader answered, or only one whose commit index
// is below this node's.
func (p *peers) askLeader(ctx context.Context) (addr string, removed bool) {
	seen := map[string]bool{}
	var queue []string
	add := func(id, a string) {
		if id != p.self && a != "" && !seen[a] {
			seen[a] = true
			queue = append(queue, a)
		}
	}
	for id, a := range p.refreshAddrs() {
		add(id, a)
	}
	for id, info := range p.all() {
		add(id, info.RaftAddr)
	}
	slices.Sort(queue)
	asked := map[string]bool{}
	for len(queue) > 0 && ctx.Err() == nil {
		a := queue[0]
		queue = queue[1:]
		if asked[a] {
			continue
		}
		asked[a] = true
		actx, cancel := context.WithTimeout(ctx, askTimeout)
		st, err := p.client.Cluster(actx, a)
		cancel()
		if err != nil {
			continue
		}
		if st.State == "leader" && st.ID == st.LeaderID {
			// A leader behind what this node knows is committed is a deposed
			// one that has not noticed yet: its configuration may be old.
			if st.CommitIndex < p.raft.Status().CommitIndex {
				continue
			}
			return a, !slices.ContainsFunc(st.Members, func(m wire.Member) bool { return m.ID == p.self })
		}
		for _, m := range st.Members {
			if m.ID == st.LeaderID && m.ID != p.self {
				if hint := m.RaftAddr; hint != "" && !asked[hint] {
					queue = append([]string{hint}, queue...)
				}
			}
		}
	}
	return "", false
}

// retryable reports whether an error may go away once a leader is found.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	var ae *wire.Error
	if errors.As(err, &ae) || errors.Is(err, wire.ErrNotFound) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return true
}
