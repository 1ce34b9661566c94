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
// cached so forwarding does not read bbolt on every request; the one place
// that turns a node's HTTP address into its base URL; and the HTTP clients
// every part uses to talk to other nodes. TLS and tokens, when they come, go
// in URL and newPeers alone.
type peers struct {
	self string // this node's ID
	db   *store.DB
	raft *replication.Raft

	// client is shared by every request to another node whose base URL the
	// caller gives (the ...From, ...Via and ProposeTo calls), over persistent
	// connections; streams forwards proposals over propose streams.
	client  *client.Client
	streams *peer.Streams
	byURL   sync.Map // base URL → *client.Client bound to that node (clientFor)

	mu      sync.Mutex // guards nodes and fetched
	nodes   map[string]store.NodeInfo
	fetched time.Time
}

// peerTTL bounds how stale the cache may be. A node that restarts on another HTTP
// port is found again within this time (and at once on a cache miss).
const peerTTL = 500 * time.Millisecond

// newPeers returns the peers of node self, with its HTTP clients. raft may be
// nil (a node that refused to start Raft asks no leader).
func newPeers(self string, db *store.DB, raft *replication.Raft) *peers {
	c := client.NewClient(client.ClientConfig{})
	return &peers{self: self, db: db, raft: raft, client: c, streams: peer.NewStreams(c)}
}

// URL returns the base URL of the node at HTTP address addr (host:port).
func (p *peers) URL(addr string) string { return "http://" + addr }

// clientFor returns a client bound to the node at base, cached: the one
// ack=all's checks and the lookups on other nodes use.
func (p *peers) clientFor(base string) *client.Client {
	if c, ok := p.byURL.Load(base); ok {
		return c.(*client.Client)
	}
	c, _ := p.byURL.LoadOrStore(base, client.NewClient(client.ClientConfig{Endpoints: []string{base}, MaxBackoff: 50 * time.Millisecond}))
	return c.(*client.Client)
}

// joinClient returns a client for the cluster behind url (--join), which
// follows its redirects to the leader.
func (p *peers) joinClient(url string) *client.Client {
	return client.NewClient(client.ClientConfig{Endpoints: []string{url}})
}

// leaderURL returns the base URL of node id, the leader, when the registry
// knows its HTTP address.
func (p *peers) leaderURL(id string) (string, bool) {
	info, ok := p.lookup(id)
	if !ok || info.HTTPAddr == "" {
		return "", false
	}
	return p.URL(info.HTTPAddr), true
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

// viaLeader runs local on the leader, or remote against the leader's HTTP base
// URL, retrying across leader changes until ctx ends. A request forwarded to this
// node is never forwarded again.
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
			if base, ok := p.leaderURL(leader); !ok {
				err = wire.ErrNoLeader
			} else {
				err = remote(ctx, base)
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

// askLeader asks the registered nodes for the leader, within ctx, following their leader
// hints, and reports the leader's HTTP base URL and whether its configuration
// lacks this node. It reports "", false when no leader answered, or only one
// whose commit index is below this node's.
func (p *peers) askLeader(ctx context.Context, selfAddr string) (base string, removed bool) {
	var queue []string
	for id, info := range p.all() {
		if id != p.self && info.HTTPAddr != "" {
			queue = append(queue, info.HTTPAddr)
		}
	}
	slices.Sort(queue)
	asked := map[string]bool{}
	for len(queue) > 0 && ctx.Err() == nil {
		addr := queue[0]
		queue = queue[1:]
		if asked[addr] || addr == selfAddr {
			continue
		}
		asked[addr] = true
		actx, cancel := context.WithTimeout(ctx, askTimeout)
		st, err := p.client.ClusterFrom(actx, p.URL(addr))
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
			return p.URL(addr), !slices.ContainsFunc(st.Members, func(m wire.Member) bool { return m.ID == p.self })
		}
		if st.LeaderHTTPAddr != "" {
			queue = append([]string{st.LeaderHTTPAddr}, queue...)
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
