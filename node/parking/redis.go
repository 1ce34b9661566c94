package parking

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Errors returned by Redis's methods. Check them with errors.Is.
var (
	// ErrUnavailable means Redis cannot be used now: the breaker is open (the
	// call returned at once, without touching the network), or the call failed
	// or timed out. The error of a failed call wraps the cause as well. The
	// caller falls back to WAL-only parking.
	ErrUnavailable = errors.New("parking unavailable")
	// ErrClosed means Close was called.
	ErrClosed = errors.New("parking closed")
)

// Stream entry fields. See docs/parking.md for the stream layout.
const (
	fieldTxID    = "txid"    // decimal uint64
	fieldPayload = "payload" // the encoded transaction, binary safe
)

// Entry is a parked transaction, as returned by Claim.
type Entry struct {
	// StreamID is the entry's Redis stream ID: pass it to Ack.
	StreamID string
	// TxID is the transaction's ID, as given to Park.
	TxID uint64
	// Payload is the encoded transaction, as given to Park. The caller owns it.
	Payload []byte
}

// Redis parks transactions in a Redis stream and hands them to the leader
// through a consumer group. It is safe for concurrent use. Every method is
// bounded by Config.OpTimeout and guarded by a circuit breaker.
type Redis struct {
	cfg     Config // defaults filled in
	log     *slog.Logger
	client  *redis.Client
	breaker *breaker

	hasGroup atomic.Bool // the consumer group is known to exist
	closed   atomic.Bool
}

// Open returns a Redis for cfg. It does not fail when Redis is down: it tries
// once, within OpTimeout, to create the consumer group, and if that fails it
// logs a warning and leaves it to a later Claim. It fails only on an invalid
// cfg.
func Open(ctx context.Context, cfg Config) (*Redis, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger.With("component", "parking")
	redisLogOnce.Do(func() { redis.SetLogger(redisLogger{log}) })
	r := &Redis{
		cfg: cfg,
		log: log,
		client: redis.NewClient(&redis.Options{
			Addr: cfg.Addr,
			// Fail fast and let the breaker decide: no retries of commands or
			// dials, and every socket operation bounded by OpTimeout as well
			// as by the ctx each method derives.
			MaxRetries:            -1,
			DialerRetries:         1,
			DialTimeout:           cfg.OpTimeout,
			ReadTimeout:           cfg.OpTimeout,
			WriteTimeout:          cfg.OpTimeout,
			PoolTimeout:           cfg.OpTimeout,
			ContextTimeoutEnabled: true,
			DisableIdentity:       true,
			MaintNotificationsConfig: &maintnotifications.Config{
				Mode: maintnotifications.ModeDisabled,
			},
		}),
		breaker: newBreaker(cfg.Breaker, log),
	}
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Register(r.breakerGauge()); err != nil {
			r.client.Close()
			return nil, fmt.Errorf("parking: register metrics: %w", err)
		}
	}
	if err := r.do(ctx, r.createGroup); err != nil {
		log.Warn("consumer group not created at open, will retry", "addr", cfg.Addr, "err", err)
	}
	return r, nil
}

// breakerGauge is txlog_redis_breaker_state, read when scraped.
func (r *Redis) breakerGauge() prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "txlog_redis_breaker_state",
		Help: "The circuit breaker in front of Redis: 0 closed, 1 half-open, 2 open.",
	}, func() float64 {
		switch r.breaker.State() {
		case BreakerHalfOpen:
			return 1
		case BreakerOpen:
			return 2
		}
		return 0
	})
}

// redisLogOnce routes go-redis's internal log lines (dial failures and the
// like, which reach us as errors anyway) to the first Open's logger at Debug,
// instead of stderr. go-redis has one logger per process.
var redisLogOnce sync.Once

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "go-redis", "line", fmt.Sprintf(format, v...))
}

// Close closes the connections to Redis. Calls after Close return ErrClosed.
// Close may be called more than once.
func (r *Redis) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	if err := r.client.Close(); err != nil {
		return fmt.Errorf("close redis client: %w", err)
	}
	return nil
}

// State returns the state of the breaker in front of Redis.
func (r *Redis) State() BreakerState { return r.breaker.State() }

// Park appends a transaction to the stream (XADD). A nil error means Redis
// has the entry: with appendfsync always, on its disk (see docs/parking.md).
// An error does not mean Redis lacks it: a command that timed out may still
// run, so the entry can come back from Claim although Park failed (dedup by
// txid makes that harmless). Park does not need the consumer group.
func (r *Redis) Park(ctx context.Context, id uint64, payload []byte) error {
	err := r.do(ctx, func(ctx context.Context) error {
		return r.client.XAdd(ctx, &redis.XAddArgs{
			Stream: r.cfg.Stream,
			Values: []any{fieldTxID, strconv.FormatUint(id, 10), fieldPayload, payload},
		}).Err()
	})
	if err != nil {
		return fmt.Errorf("park txid %d: %w", id, err)
	}
	return nil
}

// Claim hands up to max parked entries to this node, the leader, oldest
// first. It first takes over entries that another consumer (a leader that
// died mid-drain), or this one, claimed more than ClaimIdle ago and never
// acknowledged (XAUTOCLAIM), then reads entries never delivered (XREADGROUP
// with ">"), without blocking. It returns no entries and a nil error when there
// is nothing to drain. An entry stays in Redis until Ack: one claimed and never
// acknowledged is delivered again after ClaimIdle, so the caller must apply
// entries idempotently (dedup by txid).
//
// If Redis lost the consumer group (it restarted empty), Claim creates it
// again and goes on. Entries whose fields Park did not write are logged,
// deleted and skipped.
func (r *Redis) Claim(ctx context.Context, max int) ([]Entry, error) {
	if max <= 0 {
		return nil, nil
	}
	var entries []Entry
	err := r.do(ctx, func(ctx context.Context) error {
		var err error
		entries, err = r.claim(ctx, max)
		if replyCode(err) == "NOGROUP" {
			r.hasGroup.Store(false)
			r.log.Warn("consumer group missing, recreating it",
				"stream", r.cfg.Stream, "group", r.cfg.Group)
			entries, err = r.claim(ctx, max)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim up to %d entries: %w", max, err)
	}
	return entries, nil
}

// claim runs one Claim attempt: the group, XAUTOCLAIM, then XREADGROUP.
func (r *Redis) claim(ctx context.Context, max int) ([]Entry, error) {
	if !r.hasGroup.Load() {
		if err := r.createGroup(ctx); err != nil {
			return nil, err
		}
	}
	var msgs []redis.XMessage
	// XAUTOCLAIM scans the pending entries list in pages; follow its cursor
	// until it wraps to 0-0 or we have enough.
	for start := "0-0"; len(msgs) < max; {
		claimed, next, err := r.client.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream:   r.cfg.Stream,
			Group:    r.cfg.Group,
			Consumer: r.cfg.Consumer,
			MinIdle:  r.cfg.ClaimIdle,
			Start:    start,
			Count:    int64(max - len(msgs)),
		}).Result()
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, claimed...)
		if next == "0-0" {
			break
		}
		start = next
	}
	if len(msgs) < max {
		streams, err := r.client.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group:    r.cfg.Group,
			Consumer: r.cfg.Consumer,
			Streams:  []string{r.cfg.Stream, ">"},
			Count:    int64(max - len(msgs)),
			Block:    -1, // go-redis: Block 0 would block forever
		}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		for _, s := range streams {
			msgs = append(msgs, s.Messages...)
		}
	}
	return r.entries(ctx, msgs)
}

// entries decodes msgs. It deletes and skips the ones Park did not write,
// which no Claim could ever decode.
func (r *Redis) entries(ctx context.Context, msgs []redis.XMessage) ([]Entry, error) {
	entries := make([]Entry, 0, len(msgs))
	var bad []string
	for _, m := range msgs {
		e, err := decode(m)
		if err != nil {
			r.log.Warn("malformed parked entry deleted", "stream_id", m.ID, "err", err)
			bad = append(bad, m.ID)
			continue
		}
		entries = append(entries, e)
	}
	if len(bad) > 0 {
		if err := r.ack(ctx, bad); err != nil {
			return nil, err
		}
	}
	return entries, nil
}

// decode turns a stream message into an Entry.
func decode(m redis.XMessage) (Entry, error) {
	id, ok := m.Values[fieldTxID].(string)
	if !ok {
		return Entry{}, fmt.Errorf("entry %s: no %q field", m.ID, fieldTxID)
	}
	txid, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return Entry{}, fmt.Errorf("entry %s: field %q: %w", m.ID, fieldTxID, err)
	}
	payload, ok := m.Values[fieldPayload].(string)
	if !ok {
		return Entry{}, fmt.Errorf("entry %s: no %q field", m.ID, fieldPayload)
	}
	return Entry{StreamID: m.ID, TxID: txid, Payload: []byte(payload)}, nil
}

// Ack removes entries from Redis (XACK and XDEL in one MULTI). Call it only
// once each entry's transaction is committed, or rejected, by Raft. Acking
// an entry that is already gone is not an error.
func (r *Redis) Ack(ctx context.Context, streamIDs ...string) error {
	if len(streamIDs) == 0 {
		return nil
	}
	if err := r.do(ctx, func(ctx context.Context) error { return r.ack(ctx, streamIDs) }); err != nil {
		return fmt.Errorf("ack %d entries from %s: %w", len(streamIDs), streamIDs[0], err)
	}
	return nil
}

func (r *Redis) ack(ctx context.Context, ids []string) error {
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, r.cfg.Stream, r.cfg.Group, ids...)
		p.XDel(ctx, r.cfg.Stream, ids...)
		return nil
	})
	return err
}

// Pending returns how many entries the stream holds (XLEN): parked and not
// yet acknowledged, whether claimed or not.
func (r *Redis) Pending(ctx context.Context) (int64, error) {
	var n int64
	err := r.do(ctx, func(ctx context.Context) error {
		var err error
		n, err = r.client.XLen(ctx, r.cfg.Stream).Result()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pending entries: %w", err)
	}
	return n, nil
}

// createGroup creates the consumer group, and the stream if needed, reading
// from the stream's first entry so that entries parked before the group
// existed are drained too. A group that exists already is fine.
func (r *Redis) createGroup(ctx context.Context) error {
	err := r.client.XGroupCreateMkStream(ctx, r.cfg.Stream, r.cfg.Group, "0").Err()
	if err != nil && replyCode(err) != "BUSYGROUP" {
		return fmt.Errorf("create group %s on %s: %w", r.cfg.Group, r.cfg.Stream, err)
	}
	if !r.hasGroup.Swap(true) {
		r.log.Info("consumer group ready", "stream", r.cfg.Stream, "group", r.cfg.Group)
	}
	return nil
}

// do runs fn through the breaker with a deadline of OpTimeout. It returns
// ErrUnavailable at once if the breaker is open, and wraps ErrUnavailable
// around errors that count as Redis failing.
func (r *Redis) do(ctx context.Context, fn func(ctx context.Context) error) error {
	if r.closed.Load() {
		return ErrClosed
	}
	t, ok := r.breaker.allow()
	if !ok {
		return ErrUnavailable
	}
	opCtx, cancel := context.WithTimeout(ctx, r.cfg.OpTimeout)
	err := fn(opCtx)
	cancel()
	o := classify(ctx, err)
	r.breaker.done(t, o, err)
	if o == failure {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// classify says what err tells the breaker about Redis. parent is the
// caller's ctx: if it ended, the caller gave up and Redis is not to blame.
func classify(parent context.Context, err error) outcome {
	if err == nil || errors.Is(err, redis.Nil) {
		return success
	}
	if parent.Err() != nil {
		return ignored
	}
	switch replyCode(err) {
	case "":
		return failure // no reply: network, timeout, closed pool
	case "LOADING", "BUSY", "MISCONF", "OOM", "READONLY", "MASTERDOWN":
		return failure // a running Redis that cannot serve us now
	default:
		return success // Redis answered; the error is about the request
	}
}

// replyCode returns the code of a Redis error reply: its first word, which
// Redis documents as the machine-readable part ("NOGROUP", "BUSYGROUP"). It
// returns "" if err is not an error reply.
func replyCode(err error) string {
	var reply redis.Error
	if !errors.As(err, &reply) || errors.Is(err, redis.Nil) {
		return ""
	}
	code, _, _ := strings.Cut(reply.Error(), " ")
	return code
}
