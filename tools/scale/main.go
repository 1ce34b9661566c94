// Command scale measures how txlog behaves as its log grows (issue 5): it
// starts a fresh three-node cluster of txlogd processes and, at every
// checkpoint of log size from 0 to --total in steps of --step, measures
//
//   - throughput and latency: --repeats closed-loop `txlog bench` runs of
//     --clients single-transaction clients over all three nodes, each for
//     --measure; the table shows the run with the median throughput, and the
//     lowest and highest throughput of the runs;
//   - with --reference (the default), past the empty log, the same runs on a
//     fresh empty cluster started for the checkpoint, alternating with the
//     grown cluster's, and the ratio of the two medians: the machine's load
//     then weighs on both alike, where the empty log's own checkpoint was
//     measured minutes earlier;
//   - the nodes' CPU over those runs, from /proc/PID/stat;
//   - each node's resident memory (VmRSS, and its peak VmHWM) after it;
//   - each node's data dir, by entry: the store (state.db), the Raft log
//     (raft/raft.db or raft/wal), the snapshots (raft/snapshots) and the
//     intake WAL (wal);
//   - the leader's commit index, which is the log size: one Raft entry per
//     transaction, plus a few configuration and no-op entries.
//
// Between checkpoints it grows the log with batched `txlog bench --n` runs,
// counting what is in the log (the commit index), not what it asked for. At
// --total it restarts nodes and times how long each takes to catch up: a
// follower stopped with SIGTERM, a follower killed with SIGKILL, and the
// leader killed with SIGKILL (also timing how soon a new leader answers).
//
// Usage:
//
//	scale --txlogd BIN --txlog BIN [--total 1000000] [--step 100000]
//	      [--measure 10s] [--json FILE] [--svg FILE] [-- TXLOGD-FLAGS...]
//
// The table goes to stdout as the run goes; --json writes every sample (after
// each checkpoint, so an interrupted run keeps what it measured) and --svg a
// plot of throughput, p99 and RSS against log size. scripts/scale.sh builds
// the binaries and runs it; by hand, build it with (cd tools/scale && go build)
// (a module of its own, see go.mod). Without --txlogd or --txlog it builds
// them with the go command, which needs the txlog source tree as working
// directory.
//
// It reads /proc, so it runs on Linux only. The load generator shares the
// machine with the nodes; see docs/performance.md for what that means.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/txlog/txlog/tools/internal/command"
)

// A second Ctrl-C ends scale at once (its nodes die with it, see chaos).
func main() { command.MainOnce("scale", run) }

// config is what the command line asks for.
type config struct {
	txlogd, txlog  string
	dir            string  // "" makes a temporary one
	keep           bool    // keep a temporary dir
	total, step    int64   // log sizes, in transactions
	clients        int     // clients of a measurement run
	repeats        int     // measurement runs per checkpoint
	reference      bool    // measure a fresh empty cluster beside each checkpoint
	maxSteal       float64 // a measurement run with more steal (percent) is run again
	retries        int     // how many times at most, per run
	measure        time.Duration
	warmup         time.Duration
	fillClients    int
	fillBatch      int
	restartLoad    int           // clients of background load during restarts; 0 none
	catchUpTimeout time.Duration // bound on each wait for catching up or a leader
	jsonPath       string
	svgPath        string
	plotFrom       string // a --json file to plot into --svg, without a run
	txlogdArgs     []string
}

// parseFlags parses the command line; txlogd flags follow "--".
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.txlogd, "txlogd", "", "txlogd binary (default: built with go into the run's directory)")
	fs.StringVar(&c.txlog, "txlog", "", "txlog binary, for txlog bench (default: built like --txlogd)")
	fs.StringVar(&c.dir, "dir", "", "directory for the cluster, which must be empty or missing, and is kept (default: a new temporary one, removed at the end)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory")
	fs.Int64Var(&c.total, "total", 1_000_000, "log size to grow to, in transactions")
	fs.Int64Var(&c.step, "step", 100_000, "transactions between checkpoints")
	fs.IntVar(&c.clients, "clients", 64, "clients of each measurement run")
	fs.IntVar(&c.repeats, "repeats", 3, "measurement runs per checkpoint; the table shows the median run")
	fs.BoolVar(&c.reference, "reference", true, "at each checkpoint past the empty log, also measure a fresh empty cluster, alternating runs with the grown one, and compare with it (its data is removed after the checkpoint unless --keep)")
	fs.Float64Var(&c.maxSteal, "max-steal", 5, "a measurement run during which the host stole more than this percent of the machine's CPU time is run again, up to --retries times (the last is kept); 100 keeps every run")
	fs.IntVar(&c.retries, "retries", 2, "how many times at most a measurement run is run again for --max-steal")
	fs.DurationVar(&c.measure, "measure", 10*time.Second, "measured time of each measurement run")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "warm-up of each measurement run")
	fs.IntVar(&c.fillClients, "fill-clients", 16, "clients of the runs that grow the log")
	fs.IntVar(&c.fillBatch, "fill-batch", 100, "transactions per request of the runs that grow the log")
	fs.IntVar(&c.restartLoad, "restart-load", 0, "clients of light load on the other nodes during each restart; 0 for none")
	fs.DurationVar(&c.catchUpTimeout, "catch-up-timeout", 5*time.Minute, "bound on each wait for a node to catch up or for a leader")
	fs.StringVar(&c.jsonPath, "json", "", "write every sample as JSON to this file")
	fs.StringVar(&c.svgPath, "svg", "", "write a plot of throughput, p99 and RSS against log size to this SVG file")
	fs.StringVar(&c.plotFrom, "plot", "", "plot the --json file of an earlier run into --svg, and do nothing else")
	own := args
	if i := slices.Index(args, "--"); i >= 0 {
		own, c.txlogdArgs = args[:i], args[i+1:]
	}
	if err := fs.Parse(own); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q (txlogd flags go after --)", fs.Args())
	}
	if c.plotFrom != "" && c.svgPath == "" {
		return c, errors.New("--plot needs --svg")
	}
	return c, c.validate()
}

// validate reports every flag that is out of range.
func (c config) validate() error {
	var errs []error
	if c.total < 0 {
		errs = append(errs, fmt.Errorf("--total %d: must not be negative", c.total))
	}
	if c.step < 1 {
		errs = append(errs, fmt.Errorf("--step %d: want at least 1", c.step))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"clients", c.clients}, {"repeats", c.repeats}, {"fill-clients", c.fillClients}, {"fill-batch", c.fillBatch}} {
		if f.v < 1 {
			errs = append(errs, fmt.Errorf("--%s %d: want at least 1", f.name, f.v))
		}
	}
	if c.retries < 0 {
		errs = append(errs, fmt.Errorf("--retries %d: must not be negative", c.retries))
	}
	if c.restartLoad < 0 {
		errs = append(errs, fmt.Errorf("--restart-load %d: must not be negative", c.restartLoad))
	}
	if c.measure <= 0 {
		errs = append(errs, fmt.Errorf("--measure %v: want more than 0", c.measure))
	}
	if c.warmup < 0 {
		errs = append(errs, fmt.Errorf("--warmup %v: must not be negative", c.warmup))
	}
	if c.catchUpTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--catch-up-timeout %v: want more than 0", c.catchUpTimeout))
	}
	return errors.Join(errs...)
}

// checkpointTargets returns the log sizes to measure at: 0, step, 2·step, ...
// and total, which ends the list even when step does not divide it.
func checkpointTargets(total, step int64) []int64 {
	var ts []int64
	for t := int64(0); t < total; t += step {
		ts = append(ts, t)
	}
	return append(ts, total)
}

// loadAvg returns the first three fields of /proc/loadavg, or "".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.plotFrom != "" {
		return plot(cfg.plotFrom, cfg.svgPath)
	}
	dir, cleanup, err := workDir(cfg.dir, cfg.keep, stderr)
	if err != nil {
		return err
	}
	defer cleanup()
	if cfg.txlogd, cfg.txlog, err = binaries(ctx, cfg.txlogd, cfg.txlog, dir, stderr); err != nil {
		return err
	}

	s, err := startScaler(ctx, cfg, dir, "cluster", stdout, stderr)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, s.close(ctx)) }()

	rep := &report{
		Started: time.Now().UTC(),
		Settings: settings{
			Total: cfg.total, Step: cfg.step, Clients: cfg.clients, Repeats: cfg.repeats, Reference: cfg.reference,
			Measure: cfg.measure.String(), Warmup: cfg.warmup.String(),
			FillClients: cfg.fillClients, FillBatch: cfg.fillBatch, RestartLoad: cfg.restartLoad,
			TxlogdArgs: cfg.txlogdArgs, Cores: runtime.NumCPU(), LoadAvgStart: loadAvg(),
		},
	}
	save := func() error {
		rep.Settings.LoadAvgEnd = loadAvg()
		if cfg.jsonPath != "" {
			if err := writeJSON(cfg.jsonPath, rep); err != nil {
				return err
			}
		}
		if cfg.svgPath != "" {
			f, err := os.Create(cfg.svgPath)
			if err != nil {
				return err
			}
			err = writeSVG(f, rep.Checkpoints)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("write %s: %w", cfg.svgPath, err)
			}
		}
		return nil
	}

	if err := s.checkpoints(ctx, rep, save); err != nil {
		return errors.Join(err, save())
	}
	rep.Restarts = s.restarts(ctx)
	fmt.Fprintln(stdout)
	printRestarts(stdout, rep.Restarts)
	fmt.Fprintln(stdout)
	printVerdict(stdout, rep)
	return save()
}

// workDir returns the directory of the run and a function that removes it
// when it is a temporary one that is not to be kept.
func workDir(dir string, keep bool, stderr io.Writer) (string, func(), error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, err
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return "", nil, err
		}
		if len(ents) > 0 {
			return "", nil, fmt.Errorf("--dir %s: not empty; the run needs a fresh cluster", dir)
		}
		return dir, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "txlog-scale-")
	if err != nil {
		return "", nil, err
	}
	if keep {
		return dir, func() { fmt.Fprintf(stderr, "scale: kept %s\n", dir) }, nil
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// plot writes the plot of the report in the JSON file from to the SVG file to.
func plot(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	var svg bytes.Buffer
	if err := writeSVG(&svg, r.Checkpoints); err != nil {
		return err
	}
	return writeFileAtomic(to, svg.Bytes())
}
