// Command scheduler runs a periodic settlement job on whichever of several
// instances holds a txlog lease: the batch-scheduler case of docs/leases.md.
//
// Every instance campaigns for the same lease with a lease.Elector. The one
// that holds it runs the job once per period: period n covers
// [n*period, (n+1)*period) of Unix time, and its run is one transaction
// with
//
//   - idempotency key "settle/<n>": a period already run (by this instance
//     or by an earlier holder) answers its recorded outcome instead of
//     running again, so a period runs at most once;
//   - fence {"lease": <lease>, "token": <the lease's token>}: txlog applies it
//     only while the lease is held with exactly that token, so a holder that
//     stalled past its TTL (a GC pause, a frozen VM) and wakes up still
//     believing it leads has its late run refused (409, a fence conflict).
//
// A fenced transaction names its token, so another holder's run of a period
// already recorded is answered 422 idempotency_key_reused, logged as "run
// duplicate" with the recorded outcome.
//
// A holder runs every period from the one in which it gained the lease on;
// periods whose start fell between the old holder's last run and the new
// holder's grant are skipped (docs/leases.md, "The scheduler example", gives
// the bound). Each run first does its work (--work, a stand-in for the
// settlement's computation) and then writes its result. The write is sent
// even when the lease was lost meanwhile: checking the context first would
// narrow the window in which a stale write goes out but never close it — the
// pause can fall between the check and the write — and the fence closes it.
//
// Usage:
//
//	scheduler --targets http://127.0.0.1:8081,http://127.0.0.1:8082 \
//	    --lease jobs/settlement --ttl 5s --period 2s --id sched-1
//
// Against a secured cluster (txlog local --tls), the environment txlog local
// prints (TXLOG_TARGETS, TXLOG_CACERT, TXLOG_TOKEN, and TXLOG_CERT and
// TXLOG_KEY with --mtls) is all it needs; or give --targets https://...,
// --cacert, --token, --cert and --key.
//
// It logs JSON records to stderr: "lease gained", "lease lost", "run started",
// "run committed", "run duplicate", "run rejected" and "run failed", and at
// the end "stopped" with the counts. SIGTERM or SIGINT stops it; while it
// leads it resigns the lease first, so that a standby takes over at once.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/lease"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// config is what the flags say.
type config struct {
	targets []string
	lease   string
	ttl     time.Duration
	period  time.Duration
	work    time.Duration
	id      string
	// Credentials of a secured cluster (txlog local --tls).
	token, caCert, cert, key string
}

// parseFlags reads the command line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	defTargets := "http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083" // what txlog local starts
	if v := os.Getenv("TXLOG_TARGETS"); v != "" {
		defTargets = v
	}
	targets := fs.String("targets", defTargets, "comma-separated base URLs of the txlog nodes (env TXLOG_TARGETS)")
	fs.StringVar(&c.lease, "lease", "jobs/settlement", "the lease's name")
	fs.DurationVar(&c.ttl, "ttl", lease.DefaultTTL, "the lease's time to live")
	fs.DurationVar(&c.period, "period", 2*time.Second, "the time between two runs of the job")
	fs.DurationVar(&c.work, "work", 100*time.Millisecond, "how long one run works before it writes its result")
	host, _ := os.Hostname()
	fs.StringVar(&c.id, "id", fmt.Sprintf("%s-%d", host, os.Getpid()), "this instance's name, the lease's holder")
	fs.StringVar(&c.token, "token", os.Getenv("TXLOG_TOKEN"), "bearer token of a secured cluster (env TXLOG_TOKEN)")
	fs.StringVar(&c.caCert, "cacert", os.Getenv("TXLOG_CACERT"), "PEM CA of the nodes' certificates, for https targets (env TXLOG_CACERT)")
	fs.StringVar(&c.cert, "cert", os.Getenv("TXLOG_CERT"), "PEM client certificate, for mutual TLS (env TXLOG_CERT)")
	fs.StringVar(&c.key, "key", os.Getenv("TXLOG_KEY"), "PEM key of the client certificate (env TXLOG_KEY)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	for _, t := range strings.Split(*targets, ",") {
		if t = strings.TrimSpace(t); t != "" {
			c.targets = append(c.targets, t)
		}
	}
	var errs []error
	if len(c.targets) == 0 {
		errs = append(errs, errors.New("--targets: want at least one URL"))
	}
	if c.period <= 0 {
		errs = append(errs, fmt.Errorf("--period %v: want > 0", c.period))
	}
	if c.work < 0 || c.work >= c.period {
		errs = append(errs, fmt.Errorf("--work %v: want 0 to below --period %v", c.work, c.period))
	}
	return c, errors.Join(errs...)
}

// run is main without the exit.
func run(args []string, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "scheduler:", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil)).With("node", cfg.id)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	tlsCfg, err := client.TLSConfig(cfg.caCert, cfg.cert, cfg.key)
	if err != nil {
		fmt.Fprintln(stderr, "scheduler:", err)
		return 2
	}
	ccfg := client.ClientConfig{Endpoints: cfg.targets, Timeout: cfg.ttl}
	ccfg.Token, ccfg.TLS = cfg.token, tlsCfg
	cl := client.NewClient(ccfg)
	el, err := lease.New(lease.Config{Client: cl, Name: cfg.lease, Holder: cfg.id, TTL: cfg.ttl, Logger: log})
	if err != nil {
		fmt.Fprintln(stderr, "scheduler:", err)
		return 2
	}
	s := &scheduler{cfg: cfg, client: cl, log: log}
	for ctx.Err() == nil {
		err := el.Run(ctx, s.lead)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, lease.ErrLost), errors.Is(err, errFenced):
			log.Warn("lease lost", "lease", cfg.lease, "err", err)
		case err != nil:
			log.Warn("campaign", "lease", cfg.lease, "err", err)
			sleep(ctx, time.Second)
		}
	}
	log.Info("stopped", "committed", s.committed, "duplicate", s.duplicate, "rejected", s.rejected, "failed", s.failed)
	return 0
}

// errFenced ends a holder's turn when txlog refused one of its runs for a
// fence conflict: the lease has moved on.
var errFenced = errors.New("run refused: the lease has a newer token")

// scheduler runs the job while its instance leads. Its fields are used by
// one goroutine at a time (Run's function, then main after Run returned).
type scheduler struct {
	cfg    config
	client *client.Client
	log    *slog.Logger

	committed, duplicate, rejected, failed int
}

// periodOf is the number of the period that t falls in.
func (s *scheduler) periodOf(t time.Time) int64 { return t.UnixNano() / int64(s.cfg.period) }

// startOf is the time period n starts.
func (s *scheduler) startOf(n int64) time.Time { return time.Unix(0, n*int64(s.cfg.period)) }

// lead is the Elector's function: it runs every period from the current one
// on, each once, until ctx ends (the lease lost or the program stopping) or
// a run is refused for its fence.
func (s *scheduler) lead(ctx context.Context, token uint64) error {
	s.log.Info("lease gained", "lease", s.cfg.lease, "token", token)
	next := s.periodOf(time.Now())
	for {
		for now := s.periodOf(time.Now()); next <= now && ctx.Err() == nil; next++ {
			if err := s.settle(ctx, token, next); err != nil {
				return err
			}
		}
		if !sleep(ctx, time.Until(s.startOf(next))) {
			return nil
		}
	}
}

// settle runs period n under token: it works, then writes the run's result
// as a fenced transaction keyed by the period.
func (s *scheduler) settle(ctx context.Context, token uint64, n int64) error {
	s.log.Info("run started", "period", n, "token", token)
	time.Sleep(s.cfg.work) // the settlement's computation; a pause may fall here
	value, _ := json.Marshal(map[string]any{"period": n, "instance": s.cfg.id, "token": token})
	tx := wire.TxRequest{
		IdempotencyKey: "settle/" + strconv.FormatInt(n, 10),
		Fence:          &wire.Fence{Lease: s.cfg.lease, Token: token},
		Ops:            []wire.Op{{Op: wire.OpPut, Key: "settlements/" + strconv.FormatInt(n, 10), Value: value}},
	}
	// Not ctx: the write goes out even if the lease was lost during the
	// work, and the fence decides (see the package doc). An unknown outcome
	// is asked again, under the same key, while the lease lasts.
	wctx := context.WithoutCancel(ctx)
	for {
		res, err := s.submit(wctx, tx)
		switch {
		case err == nil && res.Status == wire.StatusCommitted && res.Duplicate:
			s.duplicate++
			s.log.Info("run duplicate", "period", n, "token", token, "index", res.Index)
			return nil
		case err == nil && res.Status == wire.StatusCommitted:
			s.committed++
			s.log.Info("run committed", "period", n, "token", token, "index", res.Index)
			return nil
		case err == nil && res.Status == wire.StatusRejected && res.Conflict != nil && res.Conflict.Fence != "":
			s.rejected++
			s.log.Warn("run rejected", "period", n, "token", token, "fence", res.Conflict.Fence,
				"expected", res.Conflict.Expected, "actual", res.Conflict.Actual, "duplicate", res.Duplicate)
			return fmt.Errorf("period %d token %d: %w", n, token, errFenced)
		case err == nil:
			s.failed++
			s.log.Warn("run failed", "period", n, "token", token, "status", res.Status)
			return nil
		case errors.Is(err, wire.ErrIdempotencyKeyReused):
			// Another token's run of this period is recorded under the
			// key (a fenced transaction names its token): the period has
			// had its one run, or a refused stale one took its key.
			s.duplicate++
			rec, lerr := s.client.TxByIdempotencyKey(wctx, tx.IdempotencyKey, 0)
			s.log.Info("run duplicate", "period", n, "token", token, "recorded", rec.Status, "index", rec.Index, "err", lerr)
			return nil
		case permanent(err), ctx.Err() != nil:
			s.failed++
			s.log.Warn("run failed", "period", n, "token", token, "err", err)
			return nil
		}
		s.log.Warn("run retried", "period", n, "token", token, "err", err)
	}
}

// permanent reports whether err is bad input, which no retry mends.
func permanent(err error) bool {
	ae, ok := errors.AsType[*wire.Error](err)
	if !ok {
		return false
	}
	switch ae.Code {
	case wire.CodeBadRequest, wire.CodeInvalidJSON, wire.CodeInvalidTx, wire.CodeInvalidParam, wire.CodePayloadTooLarge:
		return true
	}
	return false
}

// submit sends tx once, with a deadline of one TTL.
func (s *scheduler) submit(ctx context.Context, tx wire.TxRequest) (wire.TxResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ttl)
	defer cancel()
	return s.client.Submit(ctx, tx, wire.SubmitOptions{})
}

// sleep waits d or until ctx ends, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
