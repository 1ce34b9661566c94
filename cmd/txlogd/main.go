// Command txlogd runs one txlog node. Every flag may also be given as an
// environment variable: --http-addr as TXLOG_HTTP_ADDR, and so on. Run
// `txlogd --help` for the flags. SIGTERM and SIGINT stop it gracefully;
// SIGHUP re-reads its TLS files (docs/operations.md).
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/txlog/txlog/node"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "txlogd:", err)
		os.Exit(1)
	}
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
