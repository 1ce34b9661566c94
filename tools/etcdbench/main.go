// Command etcdbench drives an etcd cluster with the workload of `txlog bench`
// and prints the same summary, so that the two can be compared side by side
// (scripts/compare-etcd.sh). It is a closed loop: --clients clients, each with
// one Put (a Txn of puts with --ops-per-tx > 1) in flight, send to the
// --targets in turn, client i starting at target i, through one etcd client
// (one gRPC connection) per target.
//
// With --local it starts a fresh three-member etcd cluster (the --etcd binary,
// default settings, fsync on) in a new directory under --local-dir, runs
// against it, and removes it.
//
// Usage:
//
//	etcdbench [--targets URL,...] [--clients 16] [--duration 10s] [--warmup 0]
//	          [--n N] [--value-size 256] [--ops-per-tx 1] [--keys 100000]
//	          [--timeout 5s] [--progress 1s] [--json]
//	          [--local [--etcd etcd] [--local-dir DIR]]
//
// Keep the flags and the JSON summary in step with cmd/txlog/bench.go.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/txlog/txlog/tools/internal/command"
)

// defaultTargets are the client URLs of an etcd cluster started by hand on the
// usual ports.
const defaultTargets = "http://127.0.0.1:2379,http://127.0.0.1:22379,http://127.0.0.1:32379"

// config is what the command line asks for.
type config struct {
	targets   []string
	clients   int
	duration  time.Duration
	warmup    time.Duration
	n         int64
	valueSize int
	opsPerTx  int
	keys      int
	timeout   time.Duration
	progress  time.Duration
	json      bool
	local     bool
	localDir  string
	etcd      string
}

func main() { command.Main("etcdbench", run) }

func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("etcdbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	targets := fs.String("targets", defaultTargets, "comma-separated client URLs of the members")
	fs.IntVar(&c.clients, "clients", 16, "concurrent clients, each with one request in flight")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to measure (after --warmup)")
	fs.DurationVar(&c.warmup, "warmup", 0, "how long to run before measuring")
	fs.Int64Var(&c.n, "n", 0, "stop after this many transactions instead of after --duration")
	fs.IntVar(&c.valueSize, "value-size", 256, "bytes of each value")
	fs.IntVar(&c.opsPerTx, "ops-per-tx", 1, "puts per transaction (more than 1: one Txn)")
	fs.IntVar(&c.keys, "keys", 100_000, "number of distinct keys")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "timeout of each request")
	fs.DurationVar(&c.progress, "progress", time.Second, "interval of progress lines on stderr; 0 turns them off")
	fs.BoolVar(&c.json, "json", false, "print the summary as one JSON object")
	fs.BoolVar(&c.local, "local", false, "start a fresh three-member etcd cluster for the run and remove it after")
	fs.StringVar(&c.localDir, "local-dir", "", "--local: where the cluster's directory goes (default: the system's temporary directory)")
	fs.StringVar(&c.etcd, "etcd", "etcd", "--local: the etcd binary")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("no arguments expected, got %q", fs.Args())
	}
	var errs []error
	if !c.local {
		for _, t := range strings.Split(*targets, ",") {
			if t = strings.TrimSpace(t); t != "" {
				c.targets = append(c.targets, t)
			}
		}
		if len(c.targets) == 0 {
			errs = append(errs, errors.New("--targets: no URLs"))
		}
	}
	if c.clients < 1 {
		errs = append(errs, fmt.Errorf("--clients %d: want at least 1", c.clients))
	}
	if c.n < 0 || c.n == 0 && c.duration <= 0 {
		errs = append(errs, fmt.Errorf("--n %d, --duration %v: want a positive one", c.n, c.duration))
	}
	if c.warmup < 0 || c.timeout <= 0 || c.progress < 0 {
		errs = append(errs, fmt.Errorf("--warmup %v, --timeout %v, --progress %v: out of range", c.warmup, c.timeout, c.progress))
	}
	if c.valueSize < 0 || c.opsPerTx < 1 || c.keys < 1 {
		errs = append(errs, fmt.Errorf("--value-size %d, --ops-per-tx %d, --keys %d: out of range", c.valueSize, c.opsPerTx, c.keys))
	}
	return c, errors.Join(errs...)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parse(args, stderr)
	if err != nil {
		return err
	}
	var pids func() []int
	if cfg.local {
		cl, err := startCluster(ctx, cfg.etcd, cfg.localDir)
		if err != nil {
			return err
		}
		defer cl.Close()
		cfg.targets = cl.clientURLs
		pids = cl.PIDs
	}
	var progress io.Writer
	if cfg.progress > 0 {
		progress = stderr
	}
	res, err := runBench(ctx, cfg, progress, pids)
	if err != nil {
		return err
	}
	if cfg.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.print(stdout)
}
