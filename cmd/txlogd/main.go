// Command txlogd runs one txlog node. Every flag may also be given as an
// environment variable: --http-addr as TXLOG_HTTP_ADDR, and so on, and a
// key of the YAML file --config FILE (TXLOG_CONFIG) names: http-addr: ...
// (node/configfile.go, docs/deploy.md); flags win over variables, both over
// the file. Run
// `txlogd -h` for the flags, grouped (it exits 0). SIGTERM and SIGINT stop it
// gracefully; SIGHUP re-reads its TLS files (docs/operations.md).
//
// Two modes run instead of a node:
//
//	txlogd --version          the version and VCS revision (version.go)
//	txlogd --healthcheck URL  exit 0 if URL answers 200 (healthcheck.go)
//
// Under systemd with Type=notify (NOTIFY_SOCKET set) it sends READY=1 once
// the node is open and STOPPING=1 when a signal stops it (sdnotify.go;
// deploy/systemd/txlogd.service).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/txlog/txlog/node"

	"github.com/txlog/txlog/internal/buildinfo"
)

func main() {
	os.Exit(report(run(os.Args[1:]), os.Stdout, os.Stderr))
}

// report prints err and returns the exit status for it: 0 for nil and for a
// help request (-h, -help-testing), whose listing it prints to stdout; 1 for
// anything else, printed to stderr.
func report(err error, stdout, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		_, listing, _ := strings.Cut(err.Error(), "\n") // below "parse flags: flag: help requested"
		fmt.Fprint(stdout, listing+modesUsage)
		return 0
	}
	fmt.Fprintln(stderr, "txlogd:", err)
	return 1
}

// modesUsage ends the listing of -h: the modes that run instead of a node.
const modesUsage = `
instead of a node:
  txlogd --version
    	print the version, the VCS revision, the Go version and the platform
  txlogd --healthcheck URL
    	GET URL (e.g. http://127.0.0.1:8080/healthz); exit 0 if it answers 200 within 3s, else 1
`

// isVersionFlag reports whether a is --version, which makes txlogd print
// buildinfo.Running and exit wherever it appears among the arguments.
func isVersionFlag(a string) bool { return a == "-version" || a == "--version" }

// healthcheckURL returns the URL of `txlogd --healthcheck URL` (or
// --healthcheck=URL) when args start with that flag; ok is false when they
// do not. It takes no other argument.
func healthcheckURL(args []string) (u string, ok bool, err error) {
	if len(args) == 0 {
		return "", false, nil
	}
	name, _, _ := strings.Cut(strings.TrimLeft(args[0], "-"), "=")
	if name != "healthcheck" || !strings.HasPrefix(args[0], "-") {
		return "", false, nil
	}
	fs := flag.NewFlagSet("txlogd --healthcheck", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&u, "healthcheck", "", "URL")
	if err := fs.Parse(args); err != nil {
		return "", true, fmt.Errorf("healthcheck: %w (usage: txlogd --healthcheck URL)", err)
	}
	if fs.NArg() > 0 || u == "" {
		return "", true, fmt.Errorf("healthcheck: usage: txlogd --healthcheck URL, and no other argument")
	}
	return u, true, nil
}

// gcPercent is the GC target txlogd runs with unless GOGC is set: its heap is
// small and short-lived garbage per request is large, so trading some memory for
// fewer collections pays (about 12% more throughput at 16 clients, see
// docs/performance.md).
const gcPercent = 400

// memoryLimit is the soft limit of the Go runtime's memory txlogd runs with
// unless GOMEMLIMIT is set: GOGC=400 lets the heap grow to five times what is
// live, which a large dedup window (an in-memory index entry per transaction)
// would turn into hundreds of MiB. Near the limit the GC runs more often; a
// node whose live heap needs more should set GOMEMLIMIT (docs/performance.md).
const memoryLimit = 160 << 20

// With --debug-addr, txlogd samples blocking and mutex contention, so that the
// block and mutex profiles of /debug/pprof/ have something in them: one sample
// per 10µs a goroutine blocked, one contention event in 10. Without the flag
// both stay off, as the runtime leaves them.
const (
	debugBlockRate     = 10_000 // runtime.SetBlockProfileRate, ns
	debugMutexFraction = 10     // runtime.SetMutexProfileFraction
)

func run(args []string) error {
	if slices.ContainsFunc(args, isVersionFlag) {
		fmt.Println(buildinfo.Running("txlogd"))
		return nil
	}
	if u, ok, err := healthcheckURL(args); ok {
		if err != nil {
			return err
		}
		return healthcheck(context.Background(), u)
	}
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(gcPercent)
	}
	if _, ok := os.LookupEnv("GOMEMLIMIT"); !ok {
		debug.SetMemoryLimit(memoryLimit)
	}
	cfg, err := node.ParseConfig(args, os.LookupEnv)
	if err != nil {
		return err
	}
	if cfg.DebugAddr != "" {
		runtime.SetBlockProfileRate(debugBlockRate)
		runtime.SetMutexProfileFraction(debugMutexFraction)
	}
	if !cfg.NoMetrics {
		reg, err := newRegistry()
		if err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		cfg.Metrics = reg
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.Level()})).With("node", cfg.ID)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	// SIGHUP re-reads the node's files (Node.Reload). It is caught from the
	// start, so that one sent while the node opens does not end the process
	// (its default); one that arrives then is acted on once the node is open.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	n, err := node.Open(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil // stopped while it waited for its --cluster peers
		}
		return err
	}
	// The node is open: its listeners are bound (a client that connects now
	// is served as soon as Run starts serving) and Raft runs. Tell systemd.
	socket := os.Getenv("NOTIFY_SOCKET")
	notify := func(state string) {
		if err := sdNotify(socket, state); err != nil {
			cfg.Logger.Warn("sd_notify failed", "state", state, "err", err)
		}
	}
	notify("READY=1")
	context.AfterFunc(ctx, func() { notify("STOPPING=1") })
	go reloadOnHUP(ctx, hup, n)
	return n.Run(ctx)
}

// reloadOnHUP calls n.Reload for each SIGHUP until ctx ends. Reload logs its
// outcome; a failed one leaves the node serving with what it had.
func reloadOnHUP(ctx context.Context, hup <-chan os.Signal, n *node.Node) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			n.Reload()
		}
	}
}
