package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Item is one pending delivery as the Deliverer sees it.
type Item struct {
	Index   uint64    // the Raft index of the transaction's entry: what Done removes
	ID      string    // the X-Txlog-Delivery header: stable across retries and leaders
	URL     string    // where to POST
	Body    []byte    // the JSON body
	Decided time.Time // when the transaction was decided (the leader's time)
}

// Config configures a Deliverer. Pending and Done are required.
type Config struct {
	// Pending returns up to max pending items with an index above after, in
	// index order: the deliverer pages through them with it.
	Pending func(after uint64, max int) ([]Item, error)
	// Done removes the items of indexes from the replicated state (a Raft
	// command); an error leaves them pending, to be done again later.
	Done func(ctx context.Context, indexes []uint64) error
	// Secret keys the X-Txlog-Signature of each body.
	Secret []byte
	// Allow is checked when an item is read; a url it refuses is logged and
	// dropped (Done), since this node's --webhook-allow may differ from the
	// one that accepted it. Each connection is checked as well (CheckConn).
	Allow *AllowList
	// AllowPrivate is --webhook-allow-private: a name a pattern matches may
	// resolve to a Private address. Default false.
	AllowPrivate bool
	// Timeout bounds one attempt: connecting, sending, the answer. Default 10s.
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the exponential backoff with jitter
	// between attempts at one delivery, and at one destination after a
	// failure. Defaults 1s and 5 minutes.
	MinBackoff, MaxBackoff time.Duration
	// Horizon is how long after its decision a delivery is retried before it
	// is logged and dropped. Default 24 hours.
	Horizon time.Duration
	// Concurrency bounds the POSTs in flight. Default 64.
	Concurrency int
	// DestConcurrency bounds the POSTs in flight to one destination (host and
	// port) while its last attempt succeeded; after a failure, until the
	// next success, it gets one at a time. Default 16: what one receiver got
	// before there were several, while 48 slots stay for the others.
	DestConcurrency int
	// Poll is how often the pending items are read again. Default 200ms.
	Poll time.Duration
	// Logger receives a Warn record per dropped delivery and per connection
	// CheckConn refuses, Debug per failure.
	Logger *slog.Logger

	// mem is the deliverer's memory bounds; tests set them.
	mem bounds
}

// bounds are the memory bounds of the deliverer; zero fields mean
// DefaultPage, DefaultDestQueue and DefaultMaxQueued.
type bounds struct {
	page      int // items per read of Pending
	destQueue int // items of one destination held
	maxQueued int // items held in all
}

// Defaults of Config, and the memory bounds of the deliverer.
const (
	DefaultTimeout         = 10 * time.Second
	DefaultMinBackoff      = time.Second
	DefaultMaxBackoff      = 5 * time.Minute
	DefaultHorizon         = 24 * time.Hour
	DefaultConcurrency     = 64
	DefaultDestConcurrency = 16
	DefaultPoll            = 200 * time.Millisecond
	// DefaultPage is the items one read of Pending asks for.
	DefaultPage = 1000
	// DefaultDestQueue bounds the items of one destination held in memory.
	DefaultDestQueue = 1000
	// DefaultMaxQueued bounds the items held in memory.
	DefaultMaxQueued = 10000
	// newPages bounds the pages of new items read per poll.
	newPages = 10
)

func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	c.MaxBackoff = max(c.MaxBackoff, c.MinBackoff)
	if c.Horizon <= 0 {
		c.Horizon = DefaultHorizon
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.DestConcurrency <= 0 {
		c.DestConcurrency = DefaultDestConcurrency
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.mem.page <= 0 {
		c.mem.page = DefaultPage
	}
	if c.mem.destQueue <= 0 {
		c.mem.destQueue = DefaultDestQueue
	}
	if c.mem.maxQueued <= 0 {
		c.mem.maxQueued = DefaultMaxQueued
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Run delivers pending items until ctx is done (leadership lost or the node
// stopping), then waits for its POSTs to end and returns ctx's error. Each
// item is POSTed until a 2xx answers, then Done removes it: at least once,
// and again after a leader change that came between the 2xx and the Done.
//
// Fairness: items are grouped by destination (the url's host and port), and
// the free POST slots go round-robin across the destinations with an item
// due, one at a time; a destination gets at most DestConcurrency at once,
// and after a failed attempt one at a time, no sooner than its own backoff
// allows. So a destination that refuses or times out holds at most
// DestConcurrency slots for a Timeout, and then one, while the others are
// served; while it fails, its items past the horizon are dropped without
// waiting for their turn. The deliverer reads every new item as it arrives (after the
// highest index it has read) and holds at most DefaultDestQueue items of a
// destination and DefaultMaxQueued in all; the items it had no room for are
// read again by a rescan of the pending items, a page a poll, from the
// lowest index up, until a whole pass finds room for every one.
func Run(ctx context.Context, cfg Config) error {
	d := &deliverer{
		cfg:     cfg.withDefaults(),
		entries: make(map[uint64]*entry),
		dests:   make(map[string]*dest),
	}
	d.results = make(chan attempt, d.cfg.Concurrency)
	d.client = newClient(d.cfg.Allow, d.cfg.AllowPrivate, d.cfg.Timeout)
	defer d.client.CloseIdleConnections()
	defer d.wg.Wait()
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	for {
		d.read()
		d.prune()
		d.finish(ctx)
		d.schedule(ctx)
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case r := <-d.results:
				d.settle(r)
				d.schedule(ctx)
			case <-tick.C:
				waiting = false
			}
		}
	}
}

// deliverer is the state of one Run; only Run's goroutine touches it.
type deliverer struct {
	cfg     Config
	client  *http.Client
	results chan attempt
	wg      sync.WaitGroup

	entries  map[uint64]*entry // every item held: queued, in flight or finished
	dests    map[string]*dest  // by destination, each with an item queued or in flight
	ring     []*dest           // dests in the order the slots go round
	rr       int               // where the next round starts in ring
	finished []*entry          // delivered or dropped, for Done
	inFlight int

	tail    uint64 // every pending item up to tail has been read once
	scan    uint64 // the rescan reads next after scan
	behind  bool   // an item up to tail was left out for want of room: rescan
	skipped bool   // the rescan pass under way left an item out
}

// entry is the deliverer's memory of one item; a new leader starts afresh.
type entry struct {
	Item
	dest     *dest // nil once finished
	b        *backoff.ExponentialBackOff
	next     time.Time // no attempt before
	inFlight bool
	attempts int
}

// dest is one destination, "host:port".
type dest struct {
	key      string
	queue    []*entry // queued or in flight, not finished; rotated as attempts start
	b        *backoff.ExponentialBackOff
	next     time.Time // no attempt before, after a failure
	failing  bool      // the last attempt failed: one at a time
	inFlight int
}

type attempt struct {
	e     *entry
	probe bool // started while its destination was failing
	err   error
}

func (d *deliverer) newBackoff() *backoff.ExponentialBackOff {
	b := &backoff.ExponentialBackOff{InitialInterval: d.cfg.MinBackoff, RandomizationFactor: 0.3, Multiplier: 2, MaxInterval: d.cfg.MaxBackoff}
	b.Reset()
	return b
}

// read admits the items that arrived since the last read, and, while
// behind, one page of the rescan.
func (d *deliverer) read() {
	for range newPages {
		items, err := d.cfg.Pending(d.tail, d.cfg.mem.page)
		if err != nil {
			d.cfg.Logger.Warn("notify: reading pending deliveries", "err", err)
			return
		}
		for _, it := range items {
			if !d.admit(it) {
				d.behind = true
			}
			d.tail = max(d.tail, it.Index)
		}
		if len(items) < d.cfg.mem.page {
			break
		}
	}
	if !d.behind {
		return
	}
	items, err := d.cfg.Pending(d.scan, d.cfg.mem.page)
	if err != nil {
		d.cfg.Logger.Warn("notify: reading pending deliveries", "err", err)
		return
	}
	for _, it := range items {
		if !d.admit(it) {
			d.skipped = true
		}
		d.scan = it.Index
	}
	if len(items) < d.cfg.mem.page || d.scan >= d.tail {
		d.scan, d.behind, d.skipped = 0, d.skipped, false
	}
}

// admit holds it, unless it is held already; it reports false if there was
// no room for it (its destination's queue or the whole memory is full).
func (d *deliverer) admit(it Item) bool {
	if _, ok := d.entries[it.Index]; ok {
		return true
	}
	key, err := d.cfg.Allow.check(it.URL)
	if err != nil {
		d.cfg.Logger.Warn("notify: delivery dropped", "delivery", it.ID, "url", it.URL, "err", err)
		e := &entry{Item: it}
		d.entries[it.Index] = e
		d.finished = append(d.finished, e)
		return true
	}
	ds := d.dests[key]
	if len(d.entries) >= d.cfg.mem.maxQueued || ds != nil && len(ds.queue) >= d.cfg.mem.destQueue {
		return false
	}
	if ds == nil {
		ds = &dest{key: key, b: d.newBackoff()}
		d.dests[key] = ds
		d.ring = append(d.ring, ds)
	}
	e := &entry{Item: it, dest: ds, b: d.newBackoff()}
	ds.queue = append(ds.queue, e)
	d.entries[it.Index] = e
	return true
}

// finish proposes Done for the finished entries, and forgets them once it
// is done; on an error they wait for the next poll.
func (d *deliverer) finish(ctx context.Context) {
	for len(d.finished) > 0 {
		n := min(len(d.finished), DefaultPage)
		idx := make([]uint64, n)
		for i, e := range d.finished[:n] {
			idx[i] = e.Index
		}
		if err := d.cfg.Done(ctx, idx); err != nil {
			if ctx.Err() == nil {
				d.cfg.Logger.Warn("notify: proposing done", "count", n, "err", err)
			}
			return
		}
		for _, i := range idx {
			delete(d.entries, i)
		}
		d.finished = d.finished[n:]
	}
}

// prune drops the items of a failing destination that are past the horizon
// (the destination is down and they are too old to retry: without this,
// each would wait for its turn among the destination's items, one attempt
// per backoff), and forgets the destinations with nothing queued or in
// flight.
func (d *deliverer) prune() {
	now := time.Now()
	ring := d.ring[:0]
	for _, ds := range d.ring {
		if ds.failing {
			q := ds.queue[:0]
			for _, e := range ds.queue {
				if e.inFlight || now.Sub(e.Decided) <= d.cfg.Horizon {
					q = append(q, e)
					continue
				}
				d.cfg.Logger.Warn("notify: delivery dropped after the horizon", "delivery", e.ID, "url", e.URL, "attempts", e.attempts, "horizon", d.cfg.Horizon, "err", "its destination is failing")
				e.dest = nil
				d.finished = append(d.finished, e)
			}
			clear(ds.queue[len(q):])
			ds.queue = q
		}
		if len(ds.queue) == 0 && ds.inFlight == 0 {
			delete(d.dests, ds.key)
			continue
		}
		ring = append(ring, ds)
	}
	clear(d.ring[len(ring):])
	d.ring = ring
	if d.rr >= len(ring) {
		d.rr = 0
	}
}

// schedule starts attempts while there are free slots and due items, one
// destination after another round the ring.
func (d *deliverer) schedule(ctx context.Context) {
	now := time.Now()
	for d.inFlight < d.cfg.Concurrency && len(d.ring) > 0 {
		started := false
		n := len(d.ring)
		for i := 0; i < n && d.inFlight < d.cfg.Concurrency; i++ {
			if e := d.ring[(d.rr+i)%n].take(now, d.cfg.DestConcurrency); e != nil {
				d.start(ctx, e)
				started = true
			}
		}
		d.rr = (d.rr + 1) % n
		if !started {
			return
		}
	}
}

// take returns the destination's next due entry, moved to the back of its
// queue, or nil if the destination or every entry must wait.
func (ds *dest) take(now time.Time, limit int) *entry {
	if ds.failing {
		limit = 1
	}
	if ds.inFlight >= limit || now.Before(ds.next) {
		return nil
	}
	for i, e := range ds.queue {
		if !e.inFlight && !now.Before(e.next) {
			copy(ds.queue[i:], ds.queue[i+1:])
			ds.queue[len(ds.queue)-1] = e
			return e
		}
	}
	return nil
}

func (d *deliverer) start(ctx context.Context, e *entry) {
	e.inFlight, e.attempts = true, e.attempts+1
	e.dest.inFlight++
	d.inFlight++
	probe := e.dest.failing
	d.wg.Go(func() {
		d.results <- attempt{e: e, probe: probe, err: d.post(ctx, e.Item)}
	})
}

// settle takes in the outcome of an attempt.
func (d *deliverer) settle(r attempt) {
	e, ds := r.e, r.e.dest
	e.inFlight = false
	ds.inFlight--
	d.inFlight--
	now := time.Now()
	if r.err == nil {
		ds.failing, ds.next = false, time.Time{}
		ds.b.Reset()
		d.retire(e)
		return
	}
	if !ds.failing || r.probe {
		// The first failure, or a probe's: the destination backs off one
		// step (the other attempts of a wave that fails count once).
		ds.failing, ds.next = true, now.Add(ds.b.NextBackOff())
	}
	if now.Sub(e.Decided) > d.cfg.Horizon {
		d.cfg.Logger.Warn("notify: delivery dropped after the horizon", "delivery", e.ID, "url", e.URL, "attempts", e.attempts, "horizon", d.cfg.Horizon, "err", r.err)
		d.retire(e)
		return
	}
	e.next = now.Add(e.b.NextBackOff())
	if errors.Is(r.err, ErrNotAllowed) {
		d.cfg.Logger.Warn("notify: connection refused by --webhook-allow", "delivery", e.ID, "url", e.URL, "retry_at", e.next, "err", r.err)
		return
	}
	d.cfg.Logger.Debug("notify: delivery failed", "index", e.Index, "attempts", e.attempts, "retry_at", e.next, "err", r.err)
}

// retire takes e out of its destination's queue and adds it to the
// finished, for Done.
func (d *deliverer) retire(e *entry) {
	ds := e.dest
	if i := slices.Index(ds.queue, e); i >= 0 {
		ds.queue = slices.Delete(ds.queue, i, i+1)
	}
	e.dest = nil
	d.finished = append(d.finished, e)
}

// errStatus is a delivery answered with a status other than 2xx.
var errStatus = errors.New("callback answered")

// post makes one attempt at it; nil if a 2xx answered.
func (d *deliverer) post(ctx context.Context, it Item) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, it.URL, bytes.NewReader(it.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "txlog-notify")
	req.Header.Set(HeaderSignature, Sign(d.cfg.Secret, it.Body))
	req.Header.Set(HeaderDelivery, it.ID)
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("%w %d", errStatus, resp.StatusCode)
	}
	return nil
}
