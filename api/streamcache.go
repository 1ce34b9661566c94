package api

import (
	"context"
	"sync"
)

// streamCachePages is how many encoded pages the stream cache keeps: the
// streams that follow the tail read the same few pages, one after another.
// A page is at most logStreamPage events, so the cache holds a few MB at most.
const streamCachePages = 64

// streamCache shares the events of GET /v1/log/stream among the streams of
// one node: a page of the log from an index, read and encoded to SSE events
// once, is written as the same bytes to every stream without a prefix that
// reads from that index and sees what the cache's streams see (a node keeps
// one cache for the readers that see every entry, one for those that see all
// but the reserved and unreadable ones: logHandlers). Without it, each of 100 subscribers at the tail read
// and encoded every entry for itself (docs/consuming.md, "Measurements").
//
// A page that an entry applied later would have made longer is still right
// for a later reader: it ends at its next, and the reader reads on from
// there. An empty page is never kept, so a reader at the tail always reads
// again once something is applied.
type streamCache struct {
	mu    sync.Mutex
	pages map[uint64]*streamPage // by the index the page starts at
	order [streamCachePages]uint64
	n     int // pages added, to evict the oldest from order
}

// streamPage is one page as its events: ready is closed once events, next
// and err are set by the stream that reads it; the others wait for it.
type streamPage struct {
	ready  chan struct{}
	events []byte // the SSE events of the page's entries, in order
	count  int    // how many entries
	next   uint64 // the index after the page
	err    error
}

func newStreamCache() *streamCache {
	return &streamCache{pages: make(map[uint64]*streamPage, streamCachePages)}
}

// get returns the page from index from, reading and encoding it with read
// when no stream has, or is reading, it. The events are shared: the caller
// must not change them. An error is not kept: the next get reads again.
func (c *streamCache) get(ctx context.Context, from uint64, read func() ([]byte, int, uint64, error)) ([]byte, int, uint64, error) {
	c.mu.Lock()
	p, ok := c.pages[from]
	if !ok {
		p = &streamPage{ready: make(chan struct{})}
		c.add(from, p)
	}
	c.mu.Unlock()
	if ok {
		select {
		case <-p.ready:
		case <-ctx.Done():
			return nil, 0, 0, ctx.Err()
		}
		if p.err == nil && p.count > 0 {
			return p.events, p.count, p.next, nil
		}
		// The reader failed, or found nothing: it may have read before an
		// entry that this stream was woken for, so read for this stream.
		return read()
	}
	p.events, p.count, p.next, p.err = read()
	if p.err != nil || p.count == 0 {
		c.mu.Lock()
		if c.pages[from] == p {
			delete(c.pages, from)
		}
		c.mu.Unlock()
	}
	close(p.ready)
	return p.events, p.count, p.next, p.err
}

// add puts p in the cache at from, evicting the oldest page when full. The
// caller holds mu.
func (c *streamCache) add(from uint64, p *streamPage) {
	slot := c.n % streamCachePages
	if c.n >= streamCachePages {
		old := c.order[slot]
		if q, ok := c.pages[old]; ok && q != p {
			delete(c.pages, old)
		}
	}
	c.order[slot] = from
	c.pages[from] = p
	c.n++
}
