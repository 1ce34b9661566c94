package node

import (
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/txlog/txlog/api"
	"github.com/txlog/txlog/auth"
)

// openAuth opens the --auth-file (package auth): its credentials, watched
// for changes. It returns nil, and no error, without one: auth is off. The
// caller closes the File (File.Close takes a nil File) and calls its
// Reload on SIGHUP.
func openAuth(cfg Config, reg prometheus.Registerer, log *slog.Logger) (*auth.File, error) {
	if cfg.AuthFile == "" {
		return nil, nil
	}
	f, err := auth.Open(auth.Config{File: cfg.AuthFile, Logger: log, Metrics: reg})
	if err != nil {
		return nil, fmt.Errorf("--auth-file: %w", err)
	}
	return f, nil
}

// authenticator returns f as the API's Authenticator: nil (auth off) when
// f is nil, never an interface holding a nil *auth.File.
func authenticator(f *auth.File) api.Authenticator {
	if f == nil {
		return nil
	}
	return f
}

var _ api.Authenticator = (*auth.File)(nil)

// reloadAuth re-reads the auth file (Reload, on SIGHUP); nil without one.
func (n *Node) reloadAuth() error {
	if n.authFile == nil {
		return nil
	}
	return n.authFile.Reload()
}

// hostOf returns the host of a host:port address, or addr when it has no port.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}
