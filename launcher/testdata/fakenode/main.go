// Command fakenode stands in for txlogd in the launcher's tests. It takes txlogd's
// flags, listens on --raft-addr and --http-addr, writes <data-dir>/http.addr the way
// txlogd does, and serves /v1/cluster, /readyz and /healthz.
//
// Its "leader" is the first member of --cluster whose Raft port accepts a
// connection, so killing a node moves leadership the way tests expect. Its term is
// the number of times it started on its data dir, which shows that a restart kept
// the dir.
//
// Environment switches for tests:
//
//	FAKENODE_EXIT=N           log a line and exit with status N at once
//	FAKENODE_IGNORE_TERM=1    log and ignore SIGTERM (only SIGKILL ends it)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/txlog/txlog/api/wire"
)

type member struct{ id, raftAddr string }

func main() {
	fs := flag.NewFlagSet("fakenode", flag.ExitOnError)
	id := fs.String("id", "", "node ID")
	dataDir := fs.String("data-dir", "", "data dir")
	httpAddr := fs.String("http-addr", "127.0.0.1:8080", "HTTP address")
	raftAddr := fs.String("raft-addr", "127.0.0.1:7101", "Raft address")
	cluster := fs.String("cluster", "", "id=addr,...")
	fs.String("log-level", "info", "ignored")
	fs.String("raft-dial", "", "ignored")
	fs.String("redis-addr", "", "ignored")
	fs.Parse(os.Args[1:])

	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("node", *id)
	if s := os.Getenv("FAKENODE_EXIT"); s != "" {
		code, _ := strconv.Atoi(s)
		log.Error("exiting on request", "code", code)
		os.Exit(code)
	}
	if err := run(log, *id, *dataDir, *httpAddr, *raftAddr, *cluster); err != nil {
		log.Error("fatal", "err", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger, id, dataDir, httpAddr, raftAddr, cluster string) error {
	if id == "" || dataDir == "" {
		return errors.New("--id and --data-dir are required")
	}
	var members []member
	for _, kv := range strings.Split(cluster, ",") {
		if mid, addr, ok := strings.Cut(kv, "="); ok {
			members = append(members, member{mid, addr})
		}
	}
	// Handle signals before http.addr tells the launcher we are up.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	starts, err := countStart(filepath.Join(dataDir, "starts"))
	if err != nil {
		return err
	}

	rl, err := net.Listen("tcp", raftAddr)
	if err != nil {
		return fmt.Errorf("raft listen: %w", err)
	}
	go func() {
		for {
			c, err := rl.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	hl, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return fmt.Errorf("http listen: %w", err)
	}
	addr := hl.Addr().String()
	tmp := filepath.Join(dataDir, "http.addr.tmp")
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dataDir, "http.addr")); err != nil {
		return err
	}
	log.Info("http listening", "addr", addr)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /v1/cluster", func(w http.ResponseWriter, r *http.Request) {
		s := wire.ClusterStatus{ID: id, State: "follower", Term: starts}
		for _, m := range members {
			if s.LeaderID == "" && (m.id == id || reachable(m.raftAddr)) {
				s.LeaderID = m.id
			}
			s.Members = append(s.Members, wire.Member{ID: m.id, RaftAddr: m.raftAddr, Suffrage: "voter", Leader: m.id == s.LeaderID})
		}
		if s.LeaderID == id {
			s.State = "leader"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(s)
	})
	srv := &http.Server{Handler: mux}
	go srv.Serve(hl)

	for sig := range sigs {
		if os.Getenv("FAKENODE_IGNORE_TERM") != "" {
			log.Info("ignoring signal", "signal", sig.String())
			continue
		}
		log.Info("shutting down", "signal", sig.String())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}
	return nil
}

func reachable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// countStart adds one to the counter in path and returns the new value.
func countStart(path string) (uint64, error) {
	var n uint64
	if b, err := os.ReadFile(path); err == nil {
		n, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	n++
	return n, os.WriteFile(path, []byte(strconv.FormatUint(n, 10)), 0o644)
}
