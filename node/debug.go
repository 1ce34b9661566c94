package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sync"
)

// debugAddrFile and metricsAddrFile are the files in the data directory that
// hold the bound address of the debug listener (Config.DebugAddr) and of the
// metrics listener (Config.MetricsAddr) while the node serves them.
const (
	debugAddrFile   = "debug.addr"
	metricsAddrFile = "metrics.addr"
)

// debugServer serves net/http/pprof on a listener of its own (--debug-addr),
// never the API's: the profiles are unauthenticated, and the API listener
// must answer 404 for /debug/pprof/. Its handlers are on a ServeMux of its
// own. (Importing net/http/pprof also registers them on http.DefaultServeMux,
// in its init; txlogd serves that mux on no listener, and must not.)
//
// The metrics listener (--metrics-addr) is a debugServer too, with GET
// /metrics alone on its mux, for a scraper kept off the API's port.
type debugServer struct {
	ln   net.Listener
	srv  *http.Server
	file string // debugAddrFile or metricsAddrFile
}

// openSide binds addr for the server of h called name (in the error when addr
// cannot be bound: "listen debug HOST:PORT: ..."); it does not serve yet
// (sideServers.serve). With no addr it returns nil.
func openSide(name, addr, file string, h http.Handler) (*debugServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s %s: %w", name, addr, err)
	}
	// The client listener's read deadlines and header limit (node.go). No
	// WriteTimeout: a CPU profile or a trace answers after ?seconds=N.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: httpReadHeaderTimeout, ReadTimeout: httpReadTimeout,
		IdleTimeout: httpIdleTimeout, MaxHeaderBytes: httpMaxHeaderBytes}
	return &debugServer{ln: ln, file: file, srv: srv}, nil
}

// openMetrics binds cfg.MetricsAddr, serving GET /metrics from h; nil
// without a MetricsAddr or a handler.
func openMetrics(cfg Config, h http.Handler) (*debugServer, error) {
	if h == nil {
		return nil, nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return openSide("metrics", cfg.MetricsAddr, metricsAddrFile, mux)
}

// openDebug binds cfg.DebugAddr; nil without one.
func openDebug(cfg Config) (*debugServer, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also heap, allocs, goroutine, block, mutex, threadcreate
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return openSide("debug", cfg.DebugAddr, debugAddrFile, mux)
}

// sideServers are the debug and metrics listeners of a node (either nil
// when not configured): opened by Open, served by Run, closed by Close.
type sideServers struct {
	debug   *debugServer // nil without Config.DebugAddr
	metrics *debugServer // nil without Config.MetricsAddr
	dataDir string
	log     *slog.Logger
	wg      *sync.WaitGroup // the node's: Close waits for the servers
}

// serve serves the debug and metrics listeners, when there are, and
// writes their bound addresses to <DataDir>/debug.addr and metrics.addr as
// Run writes http.addr; without one, it removes the file an earlier run
// left, so that no tool reads a stale address.
func (s *sideServers) serve() error {
	if err := s.serveOne(s.debug, debugAddrFile); err != nil {
		return err
	}
	return s.serveOne(s.metrics, metricsAddrFile)
}

func (s *sideServers) serveOne(d *debugServer, file string) error {
	path := filepath.Join(s.dataDir, file)
	if d == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale %s: %w", path, err)
		}
		return nil
	}
	s.wg.Go(func() {
		if err := d.srv.Serve(d.ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("side server failed", "file", file, "err", err)
		}
	})
	if err := writeFileAtomic(path, []byte(d.ln.Addr().String()+"\n")); err != nil {
		return err
	}
	s.log.Info("side listener serving", "file", file, "addr", d.ln.Addr().String())
	return nil
}

// shutdown stops the debug and metrics servers, letting requests in
// flight finish until ctx is done.
func (s *sideServers) shutdown(ctx context.Context) {
	for _, d := range []*debugServer{s.debug, s.metrics} {
		if d == nil {
			continue
		}
		if err := d.srv.Shutdown(ctx); err != nil {
			s.log.Warn("side server shutdown", "file", d.file, "err", err)
			d.srv.Close()
		}
	}
}

// closeListeners closes the listeners: Shutdown closed them if Run served
// them; a node closed without Run (or whose Open failed) still holds them.
func (s *sideServers) closeListeners() error {
	var errs []error
	for _, d := range []*debugServer{s.debug, s.metrics} {
		if d == nil {
			continue
		}
		if err := d.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
