// Command txlogd runs one txlog node. Every flag may also be given as an
// environment variable: --http-addr as TXLOG_HTTP_ADDR, and so on. Run
// `txlogd --help` for the flags.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/txlog/txlog/node"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "txlogd:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cfg, err := node.ParseConfig(args, os.LookupEnv)
	if err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: cfg.Level()})).With("node", cfg.ID)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	n, err := node.Open(cfg)
	if err != nil {
		return err
	}
	return n.Run(ctx)
}
