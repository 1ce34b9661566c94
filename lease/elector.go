package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
)

// Client is what an Elector needs of txlog; *client.Client implements it.
type Client interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (wire.LeaseResult, error)
	RenewLease(ctx context.Context, name, holder string, token uint64, ttl time.Duration) (wire.LeaseResult, error)
	ReleaseLease(ctx context.Context, name, holder string, token uint64) error
	Lease(ctx context.Context, name string, wait time.Duration, afterToken uint64) (wire.Lease, error)
}

var _ Client = (*client.Client)(nil)

// Defaults of Config.
const (
	DefaultTTL        = 5 * time.Second
	DefaultPollWait   = 30 * time.Second
	DefaultRetryPause = 100 * time.Millisecond
)

// ErrLost is the cause of the function's context when the lease was lost (or
// could not be renewed in time), and what Run returns then.
var ErrLost = errors.New("lease lost")

// Config holds the settings of an Elector.
type Config struct {
	// Client talks to txlog. Required.
	Client Client
	// Name is the lease's name. Required.
	Name string
	// Holder names this process to the others (1 to 128 bytes). Required.
	Holder string
	// TTL is the lease's time to live. Default DefaultTTL (5s).
	TTL time.Duration
	// RenewEvery is the time between renewals. Default TTL/3.
	RenewEvery time.Duration
	// Margin is how long before the holder's own deadline (see the package
	// doc) the function's context is cancelled when renewals fail: more than
	// the leaders' clock skew (500 ms) and than the time the function takes
	// to stop. Default TTL/5.
	Margin time.Duration
	// PollWait bounds one long poll of a campaign waiting for the lease.
	// Default DefaultPollWait (30s).
	PollWait time.Duration
	// RetryPause is the pause between two attempts that failed for want of a
	// leader or a node, and the least time between two acquires of a
	// campaign. Default DefaultRetryPause (100ms).
	RetryPause time.Duration
	// Logger receives the Elector's records; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = c.TTL / 3
	}
	if c.Margin == 0 {
		c.Margin = c.TTL / 5
	}
	if c.PollWait == 0 {
		c.PollWait = DefaultPollWait
	}
	if c.RetryPause == 0 {
		c.RetryPause = DefaultRetryPause
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every missing or inconsistent field.
func (c Config) Validate() error {
	var errs []error
	if c.Client == nil {
		errs = append(errs, errors.New("lease: Client is required"))
	}
	if c.Name == "" {
		errs = append(errs, errors.New("lease: Name is required"))
	}
	if c.Holder == "" || len(c.Holder) > wire.MaxLeaseHolderBytes {
		errs = append(errs, fmt.Errorf("lease: Holder %q: want 1 to %d bytes", c.Holder, wire.MaxLeaseHolderBytes))
	}
	for name, d := range map[string]time.Duration{"TTL": c.TTL, "RenewEvery": c.RenewEvery, "Margin": c.Margin, "PollWait": c.PollWait, "RetryPause": c.RetryPause} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("lease: %s %v is negative", name, d))
		}
	}
	d := c.withDefaults()
	if d.TTL < wire.MinLeaseTTL || d.TTL > wire.MaxLeaseTTL {
		errs = append(errs, fmt.Errorf("lease: TTL %v: want %v to %v", d.TTL, wire.MinLeaseTTL, wire.MaxLeaseTTL))
	}
	if d.RenewEvery+d.Margin >= d.TTL {
		errs = append(errs, fmt.Errorf("lease: RenewEvery %v + Margin %v must be below TTL %v, or no renewal fits", d.RenewEvery, d.Margin, d.TTL))
	}
	return errors.Join(errs...)
}

// Elector campaigns for one lease and runs a function while it holds it.
type Elector struct {
	cfg Config
	log *slog.Logger

	// token is the held lease's token, 0 when none; deadline is the
	// holder's own view of when it runs out (see the package doc). Used by
	// one goroutine at a time.
	token    uint64
	deadline time.Time
}

// New returns an Elector for cfg.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Elector{cfg: cfg, log: cfg.Logger.With("component", "lease", "lease", cfg.Name, "holder", cfg.Holder)}, nil
}

// Token returns the token of the lease held, 0 when none.
func (e *Elector) Token() uint64 { return e.token }

// Campaign blocks until this Elector holds the lease, or ctx ends, and
// returns the token, which fences the holder's writes. While another holder
// has the lease it long-polls until that one's lease is released or expires.
func (e *Elector) Campaign(ctx context.Context) (uint64, error) {
	for {
		sent := time.Now()
		res, err := e.cfg.Client.AcquireLease(ctx, e.cfg.Name, e.cfg.Holder, e.cfg.TTL)
		if err == nil {
			e.token, e.deadline = res.Token, sent.Add(e.cfg.TTL)
			e.log.Info("lease acquired", "token", res.Token)
			return res.Token, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		le, held := errors.AsType[*wire.LeaseError](err)
		switch {
		case held && le.Code == wire.CodeLeaseHeld:
			// Wait for the holder's lease to end: a release or an expiry
			// answers the poll; the grant may still wait out the skew.
			wait := min(e.cfg.PollWait, le.Lease.Remaining()+time.Second)
			if _, err := e.cfg.Client.Lease(ctx, e.cfg.Name, wait, le.Lease.Token); err != nil && ctx.Err() != nil {
				return 0, ctx.Err()
			}
		case isPermanent(err):
			return 0, fmt.Errorf("campaign for lease %q: %w", e.cfg.Name, err)
		default:
			e.log.Warn("campaign", "err", err)
		}
		if err := pause(ctx, e.cfg.RetryPause-time.Since(sent)); err != nil {
			return 0, err
		}
	}
}

// isPermanent reports whether err will not go away by trying again: bad
// input, a credential refused, or a failed TLS handshake, refused by every
// node alike.
func isPermanent(err error) bool {
	if _, ok := errors.AsType[*client.HandshakeError](err); ok {
		return true
	}
	ae, ok := errors.AsType[*wire.Error](err)
	if !ok {
		return false
	}
	switch ae.Code {
	case wire.CodeBadRequest, wire.CodeInvalidParam, wire.CodeInvalidUTF8, wire.CodeInvalidJSON, wire.CodePayloadTooLarge, wire.CodeMethodNotAllowed,
		wire.CodeUnauthenticated, wire.CodeForbidden:
		return true
	}
	return false
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Run campaigns, then runs fn with the token while it holds the lease,
// renewing it every RenewEvery. fn's context is cancelled when ctx ends (a
// SIGTERM, say), when a renewal is refused as fenced, and at the holder's
// deadline minus Margin when renewals fail until then; its cause is then
// ErrLost. Renewals go on until fn returns, and once it has, Run resigns
// (releases the lease, so that a standby takes over at once) unless the
// lease was lost. It returns fn's error, ErrLost (wrapped) after a loss, or
// ctx's error if ctx ended first.
func (e *Elector) Run(ctx context.Context, fn func(ctx context.Context, token uint64) error) error {
	token, err := e.Campaign(ctx)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() { done <- fn(fctx, token) }()

	// Renewals outlive ctx: the lease must hold until fn has stopped.
	rctx := context.WithoutCancel(ctx)
	renew := time.NewTimer(e.cfg.RenewEvery)
	defer renew.Stop()
	expire := time.NewTimer(time.Until(e.deadline.Add(-e.cfg.Margin)))
	defer expire.Stop()
	ctxDone := ctx.Done()
	lost := false
	loseIt := func(why string, attrs ...any) {
		if !lost {
			lost = true
			e.log.Warn(why, attrs...)
			cancel(ErrLost)
		}
	}
	for {
		select {
		case ferr := <-done:
			if lost {
				e.token = 0
				return fmt.Errorf("lease %q token %d: %w", e.cfg.Name, token, ErrLost)
			}
			rerr := e.Resign(rctx)
			if ferr == nil {
				ferr = ctx.Err()
			}
			return errors.Join(ferr, rerr)
		case <-ctxDone:
			ctxDone = nil
			cancel(context.Cause(ctx))
		case <-expire.C:
			loseIt("lease not renewed in time", "token", token, "deadline", e.deadline)
		case <-renew.C:
			if lost {
				continue
			}
			sent := time.Now()
			actx, acancel := context.WithDeadline(rctx, e.deadline.Add(-e.cfg.Margin))
			_, err := e.cfg.Client.RenewLease(actx, e.cfg.Name, e.cfg.Holder, token, e.cfg.TTL)
			acancel()
			switch {
			case err == nil:
				e.deadline = sent.Add(e.cfg.TTL)
				expire.Reset(time.Until(e.deadline.Add(-e.cfg.Margin)))
				renew.Reset(e.cfg.RenewEvery)
			case errors.Is(err, wire.ErrFenced):
				loseIt("lease fenced", "token", token, "err", err)
			default:
				e.log.Warn("renew lease", "token", token, "err", err)
				renew.Reset(e.cfg.RetryPause)
			}
		}
	}
}

// Resign releases the lease this Elector holds, if any, so that a standby
// takes over without waiting out the TTL. A lease that moved on already is
// left alone (nil).
func (e *Elector) Resign(ctx context.Context) error {
	if e.token == 0 {
		return nil
	}
	token := e.token
	err := e.cfg.Client.ReleaseLease(ctx, e.cfg.Name, e.cfg.Holder, token)
	if errors.Is(err, wire.ErrFenced) {
		err = nil // someone else's now: nothing of ours to release
	}
	if err != nil {
		return fmt.Errorf("resign lease %q token %d: %w", e.cfg.Name, token, err)
	}
	e.token = 0
	e.log.Info("lease released", "token", token)
	return nil
}

// Observe sends the lease as it changes hands: each new holder's lease, and
// a Lease with Token 0 when it becomes free, starting with the state now. The
// channel is closed when ctx ends.
func (e *Elector) Observe(ctx context.Context) <-chan wire.Lease {
	ch := make(chan wire.Lease)
	go func() {
		defer close(ch)
		var after uint64
		sentAny := false
		for ctx.Err() == nil {
			wait := e.cfg.PollWait
			if !sentAny {
				wait = 0 // the state now first
			}
			l, err := e.cfg.Client.Lease(ctx, e.cfg.Name, wait, after)
			switch {
			case errors.Is(err, wire.ErrNotFound):
				l = wire.Lease{Name: e.cfg.Name, ExpiresIn: "0s"}
			case err != nil:
				if pause(ctx, e.cfg.RetryPause) != nil {
					return
				}
				continue
			}
			if !sentAny || l.Token != after {
				select {
				case ch <- l:
				case <-ctx.Done():
					return
				}
				sentAny = true
			}
			after = l.Token
		}
	}()
	return ch
}
