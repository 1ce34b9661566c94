package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/consumer"
	"github.com/txlog/txlog/lease"
)

// errCaughtUp ends a reader once it has read the last entry.
var errCaughtUp = errors.New("caught up")

// catchup writes -catchup-n transactions and then times each reader over the
// whole log, on a follower.
func (b *bench) catchup(ctx context.Context) error {
	n, batch := b.cfg.catchupN, b.cfg.catchupBatch
	fmt.Fprintf(b.out, "== catchup: %d transactions (single puts of %d keys, %d-byte values) written in batches of %d, %d in flight; then read from offset 0 on follower %s\n",
		n, b.cfg.keys, b.cfg.valueBytes, batch, b.cfg.catchupWriters, b.followers[0])
	value := jsonString(b.cfg.valueBytes)
	var next atomic.Int64 // the next transaction to claim
	var last atomic.Uint64
	errs := make([]error, b.cfg.catchupWriters)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range b.cfg.catchupWriters {
		c := b.client(b.leader)
		wg.Go(func() {
			txs := make([]wire.TxRequest, 0, batch)
			for {
				first := int(next.Add(int64(batch))) - batch
				if first >= n || ctx.Err() != nil {
					return
				}
				txs = txs[:0]
				for i := first; i < min(first+batch, n); i++ {
					txs = append(txs, put(fmt.Sprintf("streambench/%06d", i%b.cfg.keys), value))
				}
				res, err := c.SubmitBatch(ctx, txs, wire.SubmitOptions{Ack: wire.AckQuorum, Timeout: 30 * time.Second})
				if err != nil {
					errs[w] = fmt.Errorf("batch at %d: %w", first, err)
					return
				}
				for _, r := range res {
					if r.Status != wire.StatusCommitted {
						errs[w] = fmt.Errorf("batch at %d: a transaction answered %s %+v", first, r.Status, r.Error)
						return
					}
					for old := last.Load(); r.Index > old && !last.CompareAndSwap(old, r.Index); old = last.Load() {
					}
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	top := last.Load()
	d := time.Since(start)
	fmt.Fprintf(b.out, "wrote %d transactions in %v (%.0f tx/s); the last is at index %d\n", n, d.Round(time.Millisecond), float64(n)/d.Seconds(), top)

	// Every node applied the last one, so that the readers time reading, not
	// the follower's apply.
	for _, u := range append([]string{b.leader}, b.followers...) {
		c := b.client(u)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		for {
			p, err := c.LogWait(wctx, top, 1, "", 10*time.Second)
			if err == nil && len(p.Entries) > 0 {
				break
			}
			if wctx.Err() != nil {
				cancel()
				return fmt.Errorf("%s never applied index %d: %v", u, top, err)
			}
		}
		cancel()
	}

	fmt.Fprintf(b.out, "%-10s %10s %10s %12s  %s\n", "reader", "entries", "seconds", "entries/s", "how")
	for _, r := range b.cfg.readers {
		var got int
		var how string
		start := time.Now()
		var err error
		switch r {
		case "consumer":
			got, err = b.readConsumer(ctx, top)
			how = "consumer.Consumer, batches of 1000, an offset commit per batch"
		case "stream":
			got, err = b.readStream(ctx, top)
			how = "client.Follow over GET /v1/log/stream, every entry decoded"
		case "log":
			got, err = b.readPages(ctx, top)
			how = "client.LogWait, GET /v1/log?limit=1000 page by page"
		}
		d := time.Since(start)
		if err != nil {
			return fmt.Errorf("reader %s: %w", r, err)
		}
		fmt.Fprintf(b.out, "%-10s %10d %10.2f %12.0f  %s\n", r, got, d.Seconds(), float64(got)/d.Seconds(), how)
	}
	return nil
}

// readStream reads the stream from index 1 to top and returns the entries.
func (b *bench) readStream(ctx context.Context, top uint64) (int, error) {
	c := b.client(b.followers[0])
	got := 0
	err := c.Follow(ctx, 1, "", func(e wire.LogEntry) error {
		got++
		if e.Index >= top {
			return errCaughtUp
		}
		return nil
	})
	if errors.Is(err, errCaughtUp) {
		err = nil
	}
	return got, err
}

// readPages reads GET /v1/log from index 1 to top and returns the entries.
func (b *bench) readPages(ctx context.Context, top uint64) (int, error) {
	c := b.client(b.followers[0])
	got := 0
	for from := uint64(1); from <= top; {
		p, err := c.LogWait(ctx, from, 1000, "", 0)
		if err != nil {
			return got, err
		}
		if p.Next <= from {
			return got, fmt.Errorf("the log page at %d moved nowhere (next %d)", from, p.Next)
		}
		for _, e := range p.Entries {
			if e.Index <= top {
				got++
			}
		}
		from = p.Next
	}
	return got, nil
}

// readConsumer runs a consumer of a new group from offset 0 until it has
// handled the entry at top, and returns the entries it handled.
func (b *bench) readConsumer(ctx context.Context, top uint64) (int, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cons, err := consumer.New(consumer.Config{Client: b.client(b.followers[0]), Group: "streambench", Lease: lease.Config{Holder: "streambench"}, Batch: 1000})
	if err != nil {
		return 0, err
	}
	got := 0
	done := false
	err = cons.Run(cctx, func(ctx context.Context, bt *consumer.Batch) error {
		for _, e := range bt.Entries {
			if e.Index <= top {
				got++
			}
		}
		if bt.Last() >= top {
			done = true
			cancel()
		}
		return nil
	})
	if done {
		// Run ends with the cancelled context, before or after the last
		// batch's commit: what was read is what counts.
		err = nil
	}
	return got, err
}
