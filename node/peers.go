package node

import (
	"sync"
	"time"

	"github.com/txlog/txlog/store"
)

// peerBook caches the node registry (id → HTTP address) that nodes publish through
// the log, so forwarding does not read bbolt on every request.
type peerBook struct {
	db *store.DB

	mu      sync.Mutex
	nodes   map[string]store.NodeInfo
	fetched time.Time
}

// peerTTL bounds how stale the cache may be. A node that restarts on another HTTP
// port is found again within this time (and at once on a cache miss).
const peerTTL = 500 * time.Millisecond

func newPeerBook(db *store.DB) *peerBook { return &peerBook{db: db} }

// lookup returns the registered info of node id.
func (p *peerBook) lookup(id string) (store.NodeInfo, bool) {
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
func (p *peerBook) all() map[string]store.NodeInfo {
	m, err := p.refresh()
	if err != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.nodes
	}
	return m
}

func (p *peerBook) refresh() (map[string]store.NodeInfo, error) {
	nodes, err := p.db.Nodes()
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
