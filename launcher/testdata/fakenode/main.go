// Command fakenode stands in for txlogd in the launcher's tests. It takes txlogd's
// flags, listens on --raft-addr and --http-addr, writes <data-dir>/http.addr the way
// txlogd does, and serves /v1/cluster, /readyz and /healthz.
//
// Its "leader" is the first member of --cluster whose Raft port accepts a
// connection, so killing a node moves leadership the way tests expect. Its term is
// the number of times it started on its data dir, which shows that a restart kept
// the dir.
//
// With --tls-cert-file and --tls-key-file it serves HTTPS (requiring a client
// certificate signed by --tls-client-ca-file when given); with --auth-file,
// GET /v1/cluster wants "Authorization: Bearer <token>" whose SHA-256 is on a
// "sha256:" line of the file (401 otherwise). The peer TLS flags are taken and
// ignored.
//
// Environment switches for tests:
//
//	FAKENODE_EXIT=N           log a line and exit with status N at once
//	FAKENODE_IGNORE_TERM=1    log and ignore SIGTERM (only SIGKILL ends it)
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
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
	var sec security
	fs.StringVar(&sec.certFile, "tls-cert-file", "", "HTTPS certificate")
	fs.StringVar(&sec.keyFile, "tls-key-file", "", "HTTPS key")
	fs.StringVar(&sec.clientCAFile, "tls-client-ca-file", "", "CA of the client certificates")
	fs.StringVar(&sec.authFile, "auth-file", "", "auth file")
	for _, name := range []string{"peer-tls-cert-file", "peer-tls-key-file", "peer-tls-ca-file"} {
		fs.String(name, "", "ignored")
	}
	fs.Parse(os.Args[1:])

	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("node", *id)
	if s := os.Getenv("FAKENODE_EXIT"); s != "" {
		code, _ := strconv.Atoi(s)
		log.Error("exiting on request", "code", code)
		os.Exit(code)
	}
	if err := run(log, *id, *dataDir, *httpAddr, *raftAddr, *cluster, sec); err != nil {
		log.Error("fatal", "err", err)
		os.Exit(1)
	}
}

// security are the client TLS and auth flags.
type security struct {
	certFile, keyFile, clientCAFile, authFile string
}

// authorized reports whether r's bearer token is in the auth file.
func (s security) authorized(r *http.Request) bool {
	if s.authFile == "" {
		return true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	b, err := os.ReadFile(s.authFile)
	if !ok || err != nil {
		return false
	}
	sum := sha256.Sum256([]byte(tok))
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "sha256:"+hex.EncodeToString(sum[:]) {
			return true
		}
	}
	return false
}

// tlsConfig is the HTTPS configuration, nil for plain HTTP.
func (s security) tlsConfig() (*tls.Config, error) {
	if s.certFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if s.clientCAFile != "" {
		b, err := os.ReadFile(s.clientCAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(b)
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

func run(log *slog.Logger, id, dataDir, httpAddr, raftAddr, cluster string, sec security) error {
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
	tlsCfg, err := sec.tlsConfig()
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	if tlsCfg != nil {
		hl = tls.NewListener(hl, tlsCfg)
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
		if !sec.authorized(r) {
			http.Error(w, `{"error":{"code":"unauthenticated","message":"no valid token"}}`, http.StatusUnauthorized)
			return
		}
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
