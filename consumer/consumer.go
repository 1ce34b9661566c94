package consumer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/lease"
)

// Client is what a Consumer needs of txlog; *client.Client implements it.
type Client interface {
	lease.Client
	Submit(ctx context.Context, tx wire.TxRequest, opts wire.SubmitOptions) (wire.TxResult, error)
	LogWait(ctx context.Context, from uint64, limit int, prefix string, wait time.Duration) (wire.LogPage, error)
}

var _ Client = (*client.Client)(nil)

// Defaults of Config.
const (
	DefaultBatch      = 100
	DefaultWait       = 10 * time.Second
	DefaultRetryEvery = 100 * time.Millisecond
)

// maxBatch is the most entries GET /v1/log answers at once.
const maxBatch = 1000

// ErrFenced is returned by Run when a commit was refused by the fence: the
// lease was taken over by another consumer of the group.
var ErrFenced = errors.New("consumer: fenced out")

// Config holds the settings of a Consumer.
type Config struct {
	// Client talks to txlog. Required.
	Client Client
	// Group is the consumer group. Required.
	Group string
	// Lease is the group's lease: Holder names this consumer to the other
	// consumers of the group (required), and TTL, RenewEvery, Margin,
	// PollWait and RetryPause are the Elector's, with lease.Config's
	// defaults (TTL lease.DefaultTTL). Leave Client, Name and Logger zero:
	// New sets them to Client, LeaseName(Group) and Logger.
	Lease lease.Config
	// Batch is the most entries handed to the Handler at once. Default
	// DefaultBatch (100).
	Batch int
	// Wait is how long one read of the log waits for an entry past the
	// offset (GET /v1/log?wait=): a new entry is handed over as soon as the
	// node applies it. Default DefaultWait (10s); the server bounds it at 60s.
	Wait time.Duration
	// RetryEvery is the pause after a failed read of the log or a failed
	// offset probe. Default DefaultRetryEvery (100ms).
	RetryEvery time.Duration
	// Logger receives the Consumer's records; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Wait == 0 {
		c.Wait = DefaultWait
	}
	if c.RetryEvery == 0 {
		c.RetryEvery = DefaultRetryEvery
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// LeaseName is the name of group's lease.
func LeaseName(group string) string { return "consumer/" + group }

// Batch is the entries handed to a Handler at once: the next transactions of
// the log past the group's offset, in index order (of any status: a Handler
// that projects writes skips the rejected ones). Their indexes have gaps:
// raft's own entries and lease commands are not transactions.
type Batch struct {
	Group   string
	Token   uint64 // the lease's token, which fences the commit
	Entries []wire.LogEntry
	ops     []wire.Op
}

// Last is the index of the batch's last entry: the offset its commit sets.
func (b *Batch) Last() uint64 { return b.Entries[len(b.Entries)-1].Index }

// AddOps adds ops to the transaction that commits the batch's offset: they
// are applied if and only if the offset moves past the batch.
func (b *Batch) AddOps(ops ...wire.Op) { b.ops = append(b.ops, ops...) }

// Handler processes one batch. Its context ends when the lease is lost. An
// error ends Run with it, and the batch's offset is not committed.
type Handler func(ctx context.Context, b *Batch) error

// Effects returns the ops of a batch's effects on txlog's own keys.
type Effects func(ctx context.Context, entries []wire.LogEntry) ([]wire.Op, error)

// ExactlyOnce is the Handler that commits the ops f returns and the batch's
// offset as one fenced transaction: each entry's effects are applied exactly
// once, whatever crashes, pauses and takeovers happen.
func ExactlyOnce(f Effects) Handler {
	return func(ctx context.Context, b *Batch) error {
		ops, err := f(ctx, b.Entries)
		if err != nil {
			return err
		}
		b.AddOps(ops...)
		return nil
	}
}

// Consumer follows the log as one consumer of a group.
type Consumer struct {
	cfg   Config
	log   *slog.Logger
	elect *lease.Elector
}

// New returns a Consumer for cfg.
func New(cfg Config) (*Consumer, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("consumer: Client is required"))
	}
	if cfg.Group == "" {
		errs = append(errs, errors.New("consumer: Group is required"))
	}
	if cfg.Batch < 0 || cfg.Batch > maxBatch {
		errs = append(errs, fmt.Errorf("consumer: Batch %d: want 0 to %d", cfg.Batch, maxBatch))
	}
	if cfg.Wait < 0 {
		errs = append(errs, fmt.Errorf("consumer: Wait %v is negative", cfg.Wait))
	}
	if cfg.RetryEvery < 0 {
		errs = append(errs, fmt.Errorf("consumer: RetryEvery %v is negative", cfg.RetryEvery))
	}
	if cfg.Lease.Client != nil || cfg.Lease.Name != "" || cfg.Lease.Logger != nil {
		errs = append(errs, errors.New("consumer: Lease.Client, Lease.Name and Lease.Logger are set by New: leave them zero"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	lc := cfg.Lease
	lc.Client, lc.Name, lc.Logger = cfg.Client, LeaseName(cfg.Group), cfg.Logger
	e, err := lease.New(lc)
	if err != nil {
		return nil, err
	}
	return &Consumer{cfg: cfg, log: cfg.Logger.With("component", "consumer", "group", cfg.Group, "holder", lc.Holder), elect: e}, nil
}

// Run campaigns for the group's lease and, while it holds it, hands batches
// to h and commits their offsets, until ctx ends, h fails or the lease is
// lost. It returns h's error, ErrFenced or lease.ErrLost (wrapped) after a
// loss, or ctx's error. Run again to campaign again.
func (c *Consumer) Run(ctx context.Context, h Handler) error {
	return c.elect.Run(ctx, func(ctx context.Context, token uint64) error {
		return c.term(ctx, token, h)
	})
}

// term is one holding of the lease.
func (c *Consumer) term(ctx context.Context, token uint64, h Handler) error {
	fence := &wire.Fence{Lease: LeaseName(c.cfg.Group), Token: token}
	offset, err := c.probe(ctx, fence)
	if err != nil {
		return err
	}
	c.log.Info("consuming", "token", token, "offset", offset)
	for ctx.Err() == nil {
		page, err := c.cfg.Client.LogWait(ctx, offset+1, c.cfg.Batch, "", c.cfg.Wait)
		if err != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			c.log.Warn("log read failed", "from", offset+1, "err", err)
			if err := c.pause(ctx); err != nil {
				return err
			}
			continue
		}
		b := &Batch{Group: c.cfg.Group, Token: token}
		for _, e := range page.Entries {
			if e.Index > offset {
				b.Entries = append(b.Entries, e)
			}
		}
		if len(b.Entries) == 0 {
			continue // the wait ended with no new entry: wait again
		}
		if c.ownCommits(b.Entries) {
			// The group's own bookkeeping: not handed on, and not committed
			// by itself, or each commit would be a batch of its own. The
			// next batch's commit moves the offset past these too.
			offset = b.Last()
			continue
		}
		if err := h(ctx, b); err != nil {
			return err
		}
		ops := append(b.ops, wire.Op{Op: wire.OpCommitOffset, Group: c.cfg.Group, Offset: b.Last()})
		res, err := c.cfg.Client.Submit(ctx, wire.TxRequest{Fence: fence, Ops: ops}, wire.SubmitOptions{})
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			c.log.Warn("commit outcome unknown", "offset", b.Last(), "err", err)
		case res.Status == wire.StatusCommitted:
			offset = b.Last()
			continue
		case res.Conflict != nil && res.Conflict.Fence != "":
			return fmt.Errorf("%w: commit of offset %d", ErrFenced, b.Last())
		default:
			// A Handler's if_version that no longer holds: the batch is
			// processed again against what is there now.
			c.log.Info("commit rejected", "offset", b.Last(), "conflict", res.Conflict)
		}
		if offset, err = c.probe(ctx, fence); err != nil {
			return err
		}
	}
	return context.Cause(ctx)
}

// ownCommits tells whether entries hold nothing but commit_offset ops of the
// group: its own commits and probes.
func (c *Consumer) ownCommits(entries []wire.LogEntry) bool {
	for _, e := range entries {
		for _, op := range e.Ops {
			if op.Op != wire.OpCommitOffset || op.Group != c.cfg.Group {
				return false
			}
		}
	}
	return true
}

// probeOffset is the offset a probe commits: log index 1 is raft's bootstrap
// configuration, never a transaction, so that moving a new group from 0 to 1
// skips nothing.
const probeOffset = 1

// probe learns the group's offset in log order: see the package doc.
func (c *Consumer) probe(ctx context.Context, fence *wire.Fence) (uint64, error) {
	for {
		res, err := c.cfg.Client.Submit(ctx, wire.TxRequest{Fence: fence, Ops: []wire.Op{{Op: wire.OpCommitOffset, Group: c.cfg.Group, Offset: probeOffset}}}, wire.SubmitOptions{})
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return 0, context.Cause(ctx)
			}
			c.log.Warn("offset probe failed", "err", err)
		case res.Conflict != nil && res.Conflict.Fence != "":
			return 0, fmt.Errorf("%w: offset probe", ErrFenced)
		case res.Status == wire.StatusCommitted:
			return probeOffset, nil
		case res.Conflict != nil && res.Conflict.Group == c.cfg.Group:
			return res.Conflict.Actual, nil
		default:
			return 0, fmt.Errorf("consumer: offset probe of group %q answered %s %+v", c.cfg.Group, res.Status, res.Conflict)
		}
		if err := c.pause(ctx); err != nil {
			return 0, err
		}
	}
}

func (c *Consumer) pause(ctx context.Context) error {
	t := time.NewTimer(c.cfg.RetryEvery)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
