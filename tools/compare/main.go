// Command compare measures txlog against NATS JetStream and etcd with one
// load generator, so that the numbers compare (scripts/compare.sh;
// docs/performance.md, "Against JetStream and etcd").
//
// A run drives one system: unless --targets names a running cluster, it
// starts a fresh three-node cluster of that system in a new directory under
// --dir (loopback ports chosen at run time), runs --clients goroutines in a
// closed loop of single 256-byte writes for --warmup and then --duration,
// stops the servers it started by their PIDs, removes the directory, and
// prints one JSON object: tx/s, p50 and p99 latency of the writes that
// started and ended inside the measured window, errors by kind, and the
// server CPU per transaction (the sum over the three server processes of
// utime+stime from /proc/PID/stat, end of the window less its start, divided
// by the window's transactions; --pids names them for a running cluster),
// and the load generator's own CPU per transaction (its utime+stime from
// getrusage over the window, divided the same way). --cpuprofile writes a
// CPU profile of the load generator over the measured window, to see where
// a system's client spends it.
//
// Systems (--system):
//
//	nats          JetStream 2.15, R3 file stream, sync_interval: always;
//	              js.Publish, every client on one shared connection
//	nats-async    the same; js.PublishAsync on one shared connection with
//	              --inflight (64) publishes in flight in all, each client
//	              keeping its share and waiting for its oldest
//	etcd          clientv3 Put, one client over the three members shared
//	txlog-stream  client.Client.Submit, one Client shared (writes over its
//	              client streams, to the leader)
//	txlog-async   the same Client's SubmitAsync with --inflight (64) writes
//	              in flight in all, as nats-async
//	txlog-http    POST /v1/tx with Go's net/http, each client going round
//	              the nodes
//
// Usage:
//
//	compare run --system S [--clients 16] [--duration 10s] [--warmup 2s]
//	            [--value-size 256] [--keys 100000] [--timeout 5s] [--inflight 64]
//	            [--dir DIR] [--nats-server BIN] [--etcd BIN] [--txlogd BIN]
//	            [--cpuprofile FILE]
//	            [--targets URL,... [--pids PID,...]]
//	compare table RESULTS.jsonl...
//
// table reads the JSON lines of many runs and prints a markdown table of the
// medians by system and client count, with each system's throughput as a
// ratio of JetStream's best (the higher of nats and nats-async) at that
// client count.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/txlog/txlog/tools/internal/command"
)

// The systems of --system.
const (
	systemNATS        = "nats"
	systemNATSAsync   = "nats-async"
	systemEtcd        = "etcd"
	systemTxlogStream = "txlog-stream"
	systemTxlogHTTP   = "txlog-http"
	systemTxlogAsync  = "txlog-async"
)

// systems lists them in the order of the table.
var systems = []string{systemTxlogStream, systemTxlogAsync, systemTxlogHTTP, systemNATS, systemNATSAsync, systemEtcd}

// config is what the command line of run asks for.
type config struct {
	system     string
	clients    int
	duration   time.Duration
	warmup     time.Duration
	valueSize  int
	keys       int
	timeout    time.Duration
	inflight   int
	dir        string
	natsServer string
	etcd       string
	txlogd     string
	targets    []string
	pids       []int
	cpuProfile string
}

func main() { command.Main("compare", dispatch) }

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("want a command: run or table")
	}
	switch args[0] {
	case "run":
		return run(ctx, args[1:], stdout, stderr)
	case "table":
		return table(args[1:], stdout)
	}
	return fmt.Errorf("unknown command %q: want run or table", args[0])
}

func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("compare run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.StringVar(&c.system, "system", "", "nats, nats-async, etcd, txlog-stream, txlog-async or txlog-http")
	fs.IntVar(&c.clients, "clients", 16, "concurrent clients")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to measure, after --warmup")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "how long to run before measuring")
	fs.IntVar(&c.valueSize, "value-size", 256, "bytes of each written value")
	fs.IntVar(&c.keys, "keys", 100_000, "distinct keys (etcd, txlog)")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Second, "timeout of each write")
	fs.IntVar(&c.inflight, "inflight", 64, "nats-async, txlog-async: writes in flight in all")
	fs.StringVar(&c.dir, "dir", "", "where the cluster's directory goes (default: the system's temporary directory)")
	fs.StringVar(&c.natsServer, "nats-server", "nats-server", "the nats-server binary")
	fs.StringVar(&c.etcd, "etcd", "etcd", "the etcd binary")
	fs.StringVar(&c.txlogd, "txlogd", "txlogd", "the txlogd binary")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the load generator over the measured window to this file")
	targets := fs.String("targets", "", "client URLs of a running cluster (then no cluster is started)")
	pids := fs.String("pids", "", "with --targets: the PIDs of its server processes, for the CPU per transaction")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var errs []error
	if fs.NArg() > 0 {
		errs = append(errs, fmt.Errorf("no arguments expected, got %q", fs.Args()))
	}
	if !slices.Contains(systems, c.system) {
		errs = append(errs, fmt.Errorf("--system %q: want one of %s", c.system, strings.Join(systems, ", ")))
	}
	if c.clients < 1 {
		errs = append(errs, fmt.Errorf("--clients %d: want at least 1", c.clients))
	}
	if c.duration <= 0 || c.warmup < 0 || c.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--duration %v, --warmup %v, --timeout %v: want positive (warmup: not negative)", c.duration, c.warmup, c.timeout))
	}
	if c.valueSize < 1 || c.keys < 1 || c.inflight < 1 {
		errs = append(errs, fmt.Errorf("--value-size %d, --keys %d, --inflight %d: want at least 1", c.valueSize, c.keys, c.inflight))
	}
	for _, t := range strings.Split(*targets, ",") {
		if t = strings.TrimSpace(t); t != "" {
			c.targets = append(c.targets, t)
		}
	}
	for _, p := range strings.Split(*pids, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("--pids: %q is not a process ID", p))
			continue
		}
		c.pids = append(c.pids, n)
	}
	if len(c.pids) > 0 && len(c.targets) == 0 {
		errs = append(errs, errors.New("--pids: only with --targets"))
	}
	return c, errors.Join(errs...)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parse(args, stderr)
	if err != nil {
		return err
	}
	targets, pids := cfg.targets, cfg.pids
	if len(targets) == 0 {
		cl, err := startCluster(ctx, cfg)
		if err != nil {
			return err
		}
		defer cl.close()
		targets, pids = cl.targets, cl.pids
	}
	l, err := newLoader(cfg, targets)
	if err != nil {
		return fmt.Errorf("%s: connect: %w", cfg.system, err)
	}
	res, err := runLoad(ctx, cfg, l, pids)
	l.close()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}
