package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"time"
)

// debugAddrFile is the file in the data directory that holds the debug
// listener's bound address while the node serves it (Config.DebugAddr).
const debugAddrFile = "debug.addr"

// debugServer serves net/http/pprof on a listener of its own (--debug-addr),
// never the API's: the profiles are unauthenticated, and the API listener
// must answer 404 for /debug/pprof/. Its handlers are on a ServeMux of its
// own. (Importing net/http/pprof also registers them on http.DefaultServeMux,
// in its init; txlogd serves that mux on no listener, and must not.)
type debugServer struct {
	ln  net.Listener
	srv *http.Server
}

// openDebug binds cfg.DebugAddr; it does not serve yet (serveDebug). With no
// DebugAddr it returns nil.
func openDebug(cfg Config) (*debugServer, error) {
	if cfg.DebugAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.DebugAddr)
	if err != nil {
		return nil, fmt.Errorf("listen debug %s: %w", cfg.DebugAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index) // also heap, allocs, goroutine, block, mutex, threadcreate
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &debugServer{
		ln: ln,
		// No WriteTimeout: a CPU profile or a trace answers after ?seconds=N.
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
	}, nil
}

// serveDebug serves the debug listener, when there is one, and writes its
// bound address to <DataDir>/debug.addr as Run writes http.addr; without one,
// it removes a debug.addr an earlier run left, so that no tool profiles a
// stale address.
func (n *Node) serveDebug() error {
	path := filepath.Join(n.cfg.DataDir, debugAddrFile)
	if n.debug == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale %s: %w", path, err)
		}
		return nil
	}
	d := n.debug
	n.wg.Go(func() {
		if err := d.srv.Serve(d.ln); !errors.Is(err, http.ErrServerClosed) {
			n.log.Warn("debug server failed", "err", err)
		}
	})
	if err := writeFileAtomic(path, []byte(d.ln.Addr().String()+"\n")); err != nil {
		return err
	}
	n.log.Info("debug listening", "addr", d.ln.Addr().String())
	return nil
}

// closeDebug stops the debug server, letting profiles in flight finish until
// ctx is done.
func (n *Node) closeDebug(ctx context.Context) {
	if n.debug == nil {
		return
	}
	if err := n.debug.srv.Shutdown(ctx); err != nil {
		n.log.Warn("debug shutdown", "err", err)
		n.debug.srv.Close()
	}
}
