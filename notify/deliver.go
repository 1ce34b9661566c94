package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
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
	// Pending returns up to max pending items in index order.
	Pending func(max int) ([]Item, error)
	// Done removes the items of indexes from the replicated state (a Raft
	// command); an error leaves them pending, to be done again later.
	Done func(ctx context.Context, indexes []uint64) error
	// Secret keys the X-Txlog-Signature of each body.
	Secret []byte
	// Allow is checked again before each POST; a url it refuses is logged and
	// dropped (Done), since this node's --webhook-allow may differ from the
	// one that accepted it.
	Allow *AllowList
	// Client sends the POSTs. Default: a client with a 10s timeout that
	// follows no redirect (a 3xx is a failure, so a receiver cannot send the
	// cluster on to a host the list does not allow).
	Client *http.Client
	// MinBackoff and MaxBackoff bound the exponential backoff with jitter
	// between attempts at one delivery. Defaults 1s and 5 minutes.
	MinBackoff, MaxBackoff time.Duration
	// Horizon is how long after its decision a delivery is retried before it
	// is logged and dropped. Default 24 hours.
	Horizon time.Duration
	// Concurrency bounds the POSTs in flight. Default 16.
	Concurrency int
	// Poll is how often the pending items are read again. Default 200ms.
	Poll time.Duration
	// MaxPending bounds the items read per poll. Default 1000.
	MaxPending int
	// Logger receives a Warn record per dropped delivery, Debug per failure.
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	DefaultHorizon     = 24 * time.Hour
	DefaultConcurrency = 16
	DefaultPoll        = 200 * time.Millisecond
	DefaultMaxPending  = 1000
)

func (c Config) withDefaults() Config {
	if c.Client == nil {
		c.Client = &http.Client{
			Timeout:       10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
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
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// state is the Deliverer's memory of one item; a new leader starts afresh.
type state struct {
	b        *backoff.ExponentialBackOff
	next     time.Time // no attempt before
	inFlight bool
	finished bool // delivered or dropped: waiting for Done
	attempts int
}

type attempt struct {
	index uint64
	err   error
}

// Run delivers pending items until ctx is done (leadership lost or the node
// stopping), then waits for its POSTs to end and returns ctx's error. Each
// item is POSTed until a 2xx answers, then Done removes it: at least once,
// and again after a leader change that came between the 2xx and the Done.
func Run(ctx context.Context, cfg Config) error {
	cfg = cfg.withDefaults()
	log := cfg.Logger
	states := make(map[uint64]*state)
	results := make(chan attempt, cfg.Concurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	inFlight := 0
	tick := time.NewTicker(cfg.Poll)
	defer tick.Stop()
	for {
		items, err := cfg.Pending(cfg.MaxPending)
		if err != nil {
			log.Warn("notify: reading pending deliveries", "err", err)
		}
		now := time.Now()
		seen := make(map[uint64]bool, len(items))
		var done []uint64
		for _, it := range items {
			seen[it.Index] = true
			st := states[it.Index]
			if st == nil {
				b := &backoff.ExponentialBackOff{InitialInterval: cfg.MinBackoff, RandomizationFactor: 0.3, Multiplier: 2, MaxInterval: cfg.MaxBackoff}
				b.Reset()
				st = &state{b: b}
				states[it.Index] = st
			}
			switch {
			case st.finished:
				done = append(done, it.Index)
			case st.inFlight || now.Before(st.next) || inFlight >= cfg.Concurrency:
			default:
				if err := cfg.Allow.Check(it.URL); err != nil {
					log.Warn("notify: delivery dropped", "delivery", it.ID, "url", it.URL, "err", err)
					st.finished = true
					done = append(done, it.Index)
					continue
				}
				st.inFlight, st.attempts = true, st.attempts+1
				inFlight++
				wg.Go(func() {
					results <- attempt{index: it.Index, err: post(ctx, cfg, it)}
				})
			}
		}
		for i, st := range states {
			if !seen[i] && !st.inFlight && len(items) < cfg.MaxPending {
				delete(states, i) // done, here or by another leader
			}
		}
		if len(done) > 0 {
			if err := cfg.Done(ctx, done); err != nil && ctx.Err() == nil {
				log.Warn("notify: proposing done", "count", len(done), "err", err)
			}
		}
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case r := <-results:
				inFlight--
				st := states[r.index]
				st.inFlight = false
				if r.err == nil {
					st.finished = true
					continue
				}
				it := findItem(items, r.index)
				if it != nil && time.Since(it.Decided) > cfg.Horizon {
					log.Warn("notify: delivery dropped after the horizon", "delivery", it.ID, "url", it.URL, "attempts", st.attempts, "horizon", cfg.Horizon, "err", r.err)
					st.finished = true
					continue
				}
				st.next = time.Now().Add(st.b.NextBackOff())
				log.Debug("notify: delivery failed", "index", r.index, "attempts", st.attempts, "retry_at", st.next, "err", r.err)
			case <-tick.C:
				waiting = false
			}
		}
	}
}

func findItem(items []Item, index uint64) *Item {
	for i := range items {
		if items[i].Index == index {
			return &items[i]
		}
	}
	return nil
}

// errStatus is a delivery answered with a status other than 2xx.
var errStatus = errors.New("callback answered")

// post makes one attempt at it; nil if a 2xx answered.
func post(ctx context.Context, cfg Config, it Item) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, it.URL, bytes.NewReader(it.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "txlog-notify")
	req.Header.Set(HeaderSignature, Sign(cfg.Secret, it.Body))
	req.Header.Set(HeaderDelivery, it.ID)
	resp, err := cfg.Client.Do(req)
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
