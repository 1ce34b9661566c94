// Command txlogdprof is txlogd with net/http/pprof, for profiling a loaded
// cluster (tools/profile.sh). It takes txlogd's flags plus:
//
//	--pprof-addr HOST:PORT   where /debug/pprof/ listens (default 127.0.0.1:0);
//	                         the bound address goes to <data-dir>/pprof.addr
//	--block-rate NS          runtime.SetBlockProfileRate (default 10000: one
//	                         sample per 10µs blocked)
//	--mutex-fraction N       runtime.SetMutexProfileFraction (default 10)
//
// Everything else is cmd/txlogd's main: node.ParseConfig, node.Open, Run.
// Not for production: the profile endpoints are unauthenticated.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // registers /debug/pprof on http.DefaultServeMux
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/txlog/txlog/node"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "txlogdprof:", err)
		os.Exit(1)
	}
}

// profFlags are the flags txlogdprof adds to txlogd's.
type profFlags struct {
	addr          string
	blockRate     int
	mutexFraction int
}

// splitArgs takes txlogdprof's own flags (--name=value or --name value) out of
// args and returns them and the rest, for node.ParseConfig.
func splitArgs(args []string) (profFlags, []string, error) {
	p := profFlags{addr: "127.0.0.1:0", blockRate: 10000, mutexFraction: 10}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "pprof-addr" && name != "block-rate" && name != "mutex-fraction") {
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return p, nil, fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			value = args[i]
		}
		var err error
		switch name {
		case "pprof-addr":
			p.addr = value
		case "block-rate":
			p.blockRate, err = strconv.Atoi(value)
		case "mutex-fraction":
			p.mutexFraction, err = strconv.Atoi(value)
		}
		if err != nil {
			return p, nil, fmt.Errorf("--%s %q: %w", name, value, err)
		}
	}
	return p, rest, nil
}

func run(args []string) error {
	pf, args, err := splitArgs(args)
	if err != nil {
		return err
	}
	cfg, err := node.ParseConfig(args, os.LookupEnv)
	if err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.Level()})).With("node", cfg.ID)
	runtime.SetBlockProfileRate(pf.blockRate)
	runtime.SetMutexProfileFraction(pf.mutexFraction)

	l, err := net.Listen("tcp", pf.addr)
	if err != nil {
		return fmt.Errorf("pprof listen: %w", err)
	}
	defer l.Close()
	dataDir := cfg.DataDir
	if dataDir == "" {
		dataDir = filepath.Join("data", cfg.ID) // node's default
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dataDir, "pprof.addr"), []byte(l.Addr().String()+"\n"), 0o644); err != nil {
		return err
	}
	go http.Serve(l, http.DefaultServeMux)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n, err := node.Open(cfg)
	if err != nil {
		return err
	}
	return n.Run(ctx)
}
