// Command projector keeps a per-account balance table inside txlog from a
// stream of transfer transactions, exactly once: the exactly-once recipe of
// docs/consuming.md.
//
// A transfer is a transaction with a put of "transfers/<id>" whose value is
// {"from":"alice","to":"bob","amount":5}. The projector follows the log as
// one consumer of its group (consumer.Consumer, under the lease
// "consumer/<group>"); for each batch it reads the balances the batch
// touches ("balances/<account>", an integer), and returns puts of the new
// balances, each with if_version of the version it read. consumer.ExactlyOnce
// submits them with the commit of the batch's offset as one transaction
// fenced by the lease's token, so that
//
//   - a projector killed after computing a batch and before its commit
//     applied leaves neither the balances nor the offset moved, and the next
//     holder computes the batch again;
//   - one killed after the commit applied leaves both moved, and the next
//     holder starts past the batch;
//   - one paused past its lease's TTL, whose lease another instance took,
//     has its late commit refused by the fence, balances and all.
//
// Run several instances: one projects, the others stand by for the lease.
//
// Usage:
//
//	projector --targets http://127.0.0.1:8081,http://127.0.0.1:8082 \
//	    --group projector --ttl 5s --id proj-1
//
// Against a secured cluster (txlog local --tls), the environment txlog local
// prints (TXLOG_TARGETS, TXLOG_CACERT, TXLOG_TOKEN, and TXLOG_CERT and
// TXLOG_KEY with --mtls) is all it needs; or give --targets https://...,
// --cacert, --token, --cert and --key.
//
// --work pauses between computing a batch and committing it (a stand-in for
// slow work; the process tests kill it there). It logs JSON records to
// stderr: "consuming" when it holds the lease, "batch" per batch computed,
// "lease lost", and "stopped". SIGTERM or SIGINT stops it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/txlog/txlog/api/wire"
	"github.com/txlog/txlog/client"
	"github.com/txlog/txlog/consumer"
	"github.com/txlog/txlog/lease"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// Key prefixes of the transfers and of the balance table.
const (
	TransferPrefix = "transfers/"
	BalancePrefix  = "balances/"
)

// Transfer is the value of a transfer's put.
type Transfer struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Amount int64  `json:"amount"`
}

type config struct {
	targets []string
	group   string
	ttl     time.Duration
	batch   int
	work    time.Duration
	id      string
	// Credentials of a secured cluster (txlog local --tls).
	token, caCert, cert, key string
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("projector", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	defTargets := "http://127.0.0.1:8081,http://127.0.0.1:8082,http://127.0.0.1:8083" // what txlog local starts
	if v := os.Getenv("TXLOG_TARGETS"); v != "" {
		defTargets = v
	}
	targets := fs.String("targets", defTargets, "comma-separated base URLs of the txlog nodes (env TXLOG_TARGETS)")
	fs.StringVar(&c.group, "group", "projector", "the consumer group")
	fs.DurationVar(&c.ttl, "ttl", 5*time.Second, "the group lease's time to live")
	fs.IntVar(&c.batch, "batch", consumer.DefaultBatch, "the most log entries per batch")
	fs.DurationVar(&c.work, "work", 0, "a pause between computing a batch and committing it")
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
	if len(c.targets) == 0 {
		return c, errors.New("--targets: want at least one URL")
	}
	return c, nil
}

func run(args []string, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "projector:", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil)).With("node", cfg.id)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	tlsCfg, err := client.TLSConfig(cfg.caCert, cfg.cert, cfg.key)
	if err != nil {
		fmt.Fprintln(stderr, "projector:", err)
		return 2
	}
	ccfg := client.ClientConfig{Endpoints: cfg.targets}
	ccfg.Token, ccfg.TLS = cfg.token, tlsCfg
	cl := client.NewClient(ccfg)
	c, err := consumer.New(consumer.Config{Client: cl, Group: cfg.group, Lease: lease.Config{Holder: cfg.id, TTL: cfg.ttl}, Batch: cfg.batch, Logger: log})
	if err != nil {
		fmt.Fprintln(stderr, "projector:", err)
		return 2
	}
	p := &projector{client: cl, work: cfg.work, log: log}
	for ctx.Err() == nil {
		if err := c.Run(ctx, consumer.ExactlyOnce(p.effects)); ctx.Err() == nil {
			log.Warn("lease lost", "err", err)
		}
	}
	log.Info("stopped", "batches", p.batches)
	return 0
}

// Getter reads a key; *client.Client implements it.
type Getter interface {
	Get(ctx context.Context, key string, opts wire.ReadOptions) (wire.KV, error)
}

type projector struct {
	client  Getter
	work    time.Duration
	log     *slog.Logger
	batches int
}

// effects is the Effects of a batch: the new balances of the accounts its
// transfers touch, each conditioned on the version read.
func (p *projector) effects(ctx context.Context, entries []wire.LogEntry) ([]wire.Op, error) {
	deltas := Deltas(entries)
	ops := make([]wire.Op, 0, len(deltas))
	for _, acct := range slices.Sorted(maps.Keys(deltas)) {
		var balance int64
		var version uint64
		kv, err := p.client.Get(ctx, BalancePrefix+acct, wire.ReadOptions{})
		switch {
		case errors.Is(err, wire.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			if balance, err = strconv.ParseInt(string(kv.Value), 10, 64); err != nil {
				return nil, fmt.Errorf("balance of %s: %w", acct, err)
			}
			version = kv.Version
		}
		v := version
		ops = append(ops, wire.Op{Op: wire.OpPut, Key: BalancePrefix + acct, Value: json.RawMessage(strconv.FormatInt(balance+deltas[acct], 10)), IfVersion: &v})
	}
	p.batches++
	p.log.Info("batch", "from", entries[0].Index, "to", entries[len(entries)-1].Index, "accounts", len(ops))
	if p.work > 0 {
		t := time.NewTimer(p.work)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-t.C:
		}
	}
	return ops, nil
}

// Deltas sums the committed transfers of entries per account. A transfer
// whose value does not decode is skipped.
func Deltas(entries []wire.LogEntry) map[string]int64 {
	d := map[string]int64{}
	for _, e := range entries {
		if e.Status != wire.StatusCommitted {
			continue
		}
		for _, op := range e.Ops {
			if op.Op != wire.OpPut || !strings.HasPrefix(op.Key, TransferPrefix) {
				continue
			}
			var t Transfer
			if json.Unmarshal(op.Value, &t) != nil || t.From == "" || t.To == "" {
				continue
			}
			d[t.From] -= t.Amount
			d[t.To] += t.Amount
		}
	}
	return d
}
